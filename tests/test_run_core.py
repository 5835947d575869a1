"""The run core both engines share: the rate rule, the coflows' lifecycle, restarts.

* The controller's rates (``controller.rates.allocate``) are the simulator's: on random
  plans (priority with and without caps and backfill, fair with caps) the rates the
  simulator's rescan gives every flow are the ones ``allocate`` returns.
"""
from __future__ import annotations

import numpy as np
import pytest

from controller.model import Coflow, Flow, Workload
from controller.plan import Plan
from controller.policies import Policy
from controller.rates import allocate, byte_caps
from emulate.sim import Simulator
from topologies.fabric import Fabric


# --------------------------------------------------------------------------- rates
class RandomPlan(Policy):
    """One random plan (rank, core, caps in bits/s, sharing, backfill), every call."""

    name = "test-random-plan"

    def __init__(self, rng, n_flows, cores, sharing, caps, backfill):
        super().__init__()
        self.rank = rng.permutation(n_flows).astype(np.float64)
        self.core = rng.integers(0, cores, n_flows).astype(np.int64)
        self.cap = None
        if caps:
            self.cap = np.where(rng.random(n_flows) < 0.6, rng.uniform(0.0, 24.0, n_flows),
                                np.nan)
            self.cap[rng.random(n_flows) < 0.1] = 0.0
        self.sharing = sharing
        self.backfill = backfill

    def plan(self, state):
        return Plan(core=self.core.copy(), rank=self.rank.copy(), rate_cap=self.cap,
                    sharing=self.sharing, backfill=self.backfill)


def _random_workload(rng) -> Workload:
    ports, cores = int(rng.integers(2, 7)), int(rng.integers(1, 4))
    rates = tuple(float(x) for x in rng.choice([4.0, 8.0, 16.0, 24.0], cores))
    coflows = []
    for k in range(int(rng.integers(1, 6))):
        pairs = {(int(rng.integers(ports)), int(rng.integers(ports)))
                 for _ in range(int(rng.integers(1, 6)))}
        coflows.append(Coflow(f"c{k}", tuple(Flow(s, d, float(rng.integers(1, 50)))
                                             for s, d in sorted(pairs))))
    return Workload(Fabric(ports=ports, cores=cores, rate_bps=8.0, core_rates=rates),
                    tuple(coflows))


@pytest.mark.parametrize("sharing, caps, backfill", [
    ("priority", False, True), ("priority", True, False), ("priority", True, True),
    ("fair", False, True), ("fair", True, True)])
def test_controller_rates_are_the_simulators_rates(sharing, caps, backfill):
    rng = np.random.default_rng(11)
    for _ in range(60):
        w = _random_workload(rng)
        a = w.arrays
        policy = RandomPlan(rng, a.n_flows, a.cores, sharing, caps, backfill)
        sim = Simulator(w, policy, incremental=False)  # the rescan: the rule itself
        sim.start()
        sim.step(until=1e-6)                           # before any flow can finish
        order = np.lexsort((np.arange(a.n_flows), policy.rank))
        cap = np.full(a.n_flows, np.inf)
        if policy.cap is not None:
            byte_caps(order, policy.cap, cap)
        core_rate = np.array(w.fabric.rates) / 8.0
        want = allocate(order, a.src, a.dst, policy.core, cap, core_rate, sharing, backfill)
        assert sim.rate[order].tolist() == want.tolist()
