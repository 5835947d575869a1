"""Aalo: coflow scheduling without prior knowledge, by D-CLAS (``aalo``).

Implements Discretized Coflow-Aware Least-Attained Service (D-CLAS) of Aalo (Chowdhury,
Stoica, SIGCOMM 2015, Section 4), as its reference simulator CoflowSim runs it
(``CoflowSimulatorDark``): the policy never looks at flow sizes or remaining bytes, only
at how many bytes each coflow has already *sent*.

* ``K`` priority queues (``queues``, default 10). Queue ``q`` holds the coflows that have
  sent at least ``T_q`` and less than ``T_{q+1}`` bytes, with thresholds
  ``T_0 = 0``, ``T_1 = first_threshold`` (default 10 MiB), ``T_{q+1} = factor * T_q``
  (``factor``, default 10); the last queue is unbounded. A coflow starts in queue 0 and
  moves down exactly when its sent bytes reach the next threshold: the plan's
  ``byte_limit`` asks the engine for an event at that byte count.
* Strict priority between queues (the paper also describes weighted sharing across queues;
  CoflowSim and this policy use strict priority), FIFO inside a queue: by release time,
  then coflow index. Rates follow the engine's work-conserving ``"priority"`` sharing, so
  a coflow sends on whatever ports the earlier ones leave free; inside a coflow flows are
  ranked by index.
* Parallel cores: flows take cores by the least-loaded rule of :mod:`controller.cores` with
  every flow counting as one unit of load (the number of flows per port per core, in
  time) -- the non-clairvoyant counterpart of the byte-load rule.

Not implemented: the paper's multi-stage extension (bytes of a job's earlier stages) and
its decentralised coordination; the queue of a coflow is its own sent bytes.

References
----------
M. Chowdhury, I. Stoica. Efficient coflow scheduling without prior knowledge. SIGCOMM
2015. CoflowSim, https://github.com/coflow/coflowsim (``CoflowSimulatorDark``).
"""
from __future__ import annotations

import numpy as np

from controller.plan import Plan, State
from controller.policies.base import Policy, PolicyError, register
from controller.policies.portload import coflow_priority_plan, index_for

MIB = 1048576.0

#: relative slack when deciding whether a coflow reached a threshold (looser than the
#: engine's own test, so a byte-limit event always moves the coflow to the next queue)
_REL = 1e-9


@register
class Aalo(Policy):
    name = "aalo"
    summary = "Aalo D-CLAS: queues by bytes sent, strict priority, FIFO inside (SIGCOMM'15)"

    def __init__(self, queues: int = 10, first_threshold: float = 10 * MIB,
                 factor: float = 10.0):
        super().__init__()
        if isinstance(queues, bool) or not isinstance(queues, (int, np.integer)) or queues < 1:
            raise PolicyError(f"aalo: queues must be an integer >= 1, got {queues!r}")
        if not first_threshold > 0 or not np.isfinite(first_threshold):
            raise PolicyError(f"aalo: first_threshold must be > 0 bytes, got {first_threshold!r}")
        if not factor > 1 or not np.isfinite(factor):
            raise PolicyError(f"aalo: factor must be > 1, got {factor!r}")
        self.queues = int(queues)
        self.first_threshold = float(first_threshold)
        self.factor = float(factor)
        #: thresholds T_1 .. T_{K-1} in bytes (a coflow at or above T_q is in queue >= q)
        self.thresholds = self.first_threshold * self.factor ** np.arange(self.queues - 1)

    def queue(self, sent: np.ndarray) -> np.ndarray:
        """Queue index (0 = highest priority) of coflows that have sent ``sent`` bytes."""
        return np.searchsorted(self.thresholds * (1 - _REL), np.asarray(sent, dtype=np.float64),
                               side="right")

    def start(self, workload) -> None:
        super().start(workload)
        # the unit loads of the core rule (several cores only), shared by every plan
        a = workload.arrays
        self._ones = np.ones(a.n_flows) if a.cores > 1 else None
        if self._ones is not None:
            self._ones.flags.writeable = False

    def plan(self, state: State) -> Plan:
        a = state.arrays
        active = state.active_coflows
        q = self.queue(state.sent[active])
        order = active[np.lexsort((active, a.release[active], q))]
        limit = np.full(a.n_coflows, np.inf)
        nxt = np.append(self.thresholds, np.inf)
        limit[active] = nxt[q]
        return coflow_priority_plan(state, index_for(self, a), order, core_load=self._ones,
                                    byte_limit=limit)
