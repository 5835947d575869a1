"""FIFO: coflows served in order of release (CoflowSim's FIFO baseline).

The earliest-released ready coflow has the highest priority; ties by position in the
workload. Rates follow the engine's work-conserving strict priority (``Plan`` sharing
``"priority"``): a later coflow sends only on ports the earlier ones leave free. Cores are
chosen by the least-loaded-ports rule of ``controller.cores``.

References
----------
M. Chowdhury, I. Stoica. Efficient coflow scheduling without prior knowledge (Aalo),
SIGCOMM 2015 and its CoflowSim simulator (FIFO baseline).
"""
from __future__ import annotations

import numpy as np

from controller.cores import least_loaded_cores
from controller.plan import Plan, State, coflow_order_plan
from controller.policies.base import Policy, register


class CoflowOrderPolicy(Policy):
    """A policy that orders coflows by a key and assigns cores by least-loaded ports.

    Subclasses override :meth:`key` (per coflow, smaller first); the order is recomputed
    at every event over the ready coflows. With ``static_keys`` (keys that do not change
    as bytes are sent) and one core, the plan at a coflow completion is the last one less
    that coflow (``Plan.keep_at_completion``); on several cores the least-loaded rule
    moves flows not yet started as loads drop.
    """

    static_keys = False

    def key(self, state: State, coflows: np.ndarray) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    def plan(self, state: State) -> Plan:
        active = state.active_coflows
        keys = self.key(state, active)
        order = active[np.lexsort((active, keys))]
        plan = coflow_order_plan(state, order,
                                 keep_at_completion=self.static_keys and state.arrays.cores == 1)
        if state.arrays.cores > 1:
            flows = plan.flow_order(state)
            plan.core = least_loaded_cores(state.arrays, flows, state.remaining, state.core,
                                           state.workload.fabric.rates)
            plan.core[plan.core < 0] = 0
        return plan


@register
class Fifo(CoflowOrderPolicy):
    name = "fifo"
    summary = "first in, first out: coflows by release time (CoflowSim baseline)"
    static_keys = True

    def key(self, state, coflows):
        return state.arrays.release[coflows]
