"""Per-flow max-min fair sharing (``fair``): what plain TCP converges to.

No coflow awareness and no knowledge of sizes: every eligible flow gets its max-min fair
share of its input and output links on its core (``Plan`` sharing ``"fair"``,
progressive filling in the engine), recomputed at every flow completion. This is
CoflowSim's ``FAIR`` baseline ("flow-level fair sharing") and the per-flow fair sharing
that Varys, Aalo and Sincronia compare against.

Cores (parallel networks only), chosen without looking at sizes:

* ``cores="balanced"`` (default): the least-loaded rule of :mod:`controller.cores` with
  every flow one unit of load (flows per port per core, in time on heterogeneous cores),
  flows taken in index order;
* ``cores="ecmp"``: a deterministic hash of (coflow, src, dst) modulo the number of cores,
  like ECMP in a plain network (ignores core rates).

References
----------
M. Chowdhury, I. Stoica. Efficient coflow scheduling without prior knowledge (Aalo),
SIGCOMM 2015, and CoflowSim's ``FlowSimulator`` (FAIR).
"""
from __future__ import annotations

import numpy as np

from controller.cores import least_loaded_cores, plan_cores
from controller.plan import Plan, State, single_core
from controller.policies.base import Policy, PolicyError, register

CORE_RULES = ("balanced", "ecmp")


def ecmp_core(arrays) -> np.ndarray:
    """A core per flow from a fixed hash of (coflow, src, dst): ECMP-like, deterministic."""
    key = (arrays.coflow.astype(np.uint64) * np.uint64(1000003)
           + arrays.src.astype(np.uint64) * np.uint64(7919) + arrays.dst.astype(np.uint64))
    h = (key * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(33)
    return (h % np.uint64(arrays.cores)).astype(np.int64)


@register
class Fair(Policy):
    name = "fair"
    summary = "per-flow max-min fair sharing (TCP-like, coflow-agnostic baseline)"

    def __init__(self, cores: str = "balanced"):
        super().__init__()
        if cores not in CORE_RULES:
            raise PolicyError(f"fair: option cores must be one of {CORE_RULES}, got {cores!r}")
        self.cores = cores

    def start(self, workload):
        super().start(workload)
        self._ecmp = ecmp_core(workload.arrays) if self.cores == "ecmp" else None
        n = workload.arrays.n_flows
        # all-zero ranks, and the unit loads of the balanced rule (several cores only),
        # shared by every plan: engines and the rule only read
        self._zero_rank = np.zeros(n)
        balanced = workload.arrays.cores > 1 and self.cores == "balanced"
        self._ones = np.ones(n) if balanced else None
        for x in (self._zero_rank, self._ones):
            if x is not None:
                x.flags.writeable = False

    def plan(self, state: State) -> Plan:
        a = state.arrays
        if a.cores == 1:
            core = single_core(a)   # (the shared zeros: validated without a pass)
        else:
            flows = state.eligible_flows()
            core = plan_cores(self, a)
            if self.cores == "ecmp":
                pin = state.core[flows]
                core[flows] = np.where(pin >= 0, pin, self._ecmp[flows])
            else:
                least_loaded_cores(a, flows, self._ones, state.core,
                                   state.workload.fabric.rates, out=core)
        # every eligible flow sends at once: at a completion the plan is this one less the
        # finished flows (the balanced rule on several cores looks at the flows left)
        return Plan(core=core, rank=self._zero_rank, sharing="fair", backfill=False,
                    keep_at_completion=a.cores == 1 or self.cores == "ecmp")
