"""FIFO: coflows served in order of release (CoflowSim's FIFO baseline).

The earliest-released ready coflow has the highest priority; ties by position in the
workload. Rates follow the engine's work-conserving strict priority (``Plan`` sharing
``"priority"``): a later coflow sends only on ports the earlier ones leave free. Cores are
chosen by the least-loaded-ports rule of ``controller.cores``.

``allocation="coflowsim"`` is instead CoflowSim's FIFO, to compare with figures published
from that simulator (:mod:`controller.policies.coflowsim_fifo`: its instance of the
workload, admission by 10.24 s epochs, MADD in FIFO order with the rest by deadline, rates
fixed between coflow events, 8 ms quanta; one core).

References
----------
M. Chowdhury, I. Stoica. Efficient coflow scheduling without prior knowledge (Aalo),
SIGCOMM 2015 and its CoflowSim simulator (FIFO baseline).
"""
from __future__ import annotations

import numpy as np

from controller.plan import Plan, State
from controller.policies.base import Policy, PolicyError, one_of, register
from controller.policies.coflowsim_fifo import CoflowSimAllocation, coflowsim_instance
from controller.policies.portload import coflow_priority_plan, index_for

#: ``Fifo(allocation=...)``: strict work-conserving priority (the default) or CoflowSim's
ALLOCATIONS = ("strict", "coflowsim")


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
        return coflow_priority_plan(
            state, index_for(self, state.arrays), order,
            keep_at_completion=self.static_keys and state.arrays.cores == 1)


@register
class Fifo(CoflowOrderPolicy):
    name = "fifo"
    summary = "first in, first out: coflows by release time (CoflowSim baseline)"
    static_keys = True

    def __init__(self, allocation: str = "strict", **options):
        super().__init__(**options)
        self.allocation = one_of("fifo", "allocation", allocation, ALLOCATIONS)
        self._coflowsim = CoflowSimAllocation() if allocation == "coflowsim" else None

    def instance(self, workload):
        """CoflowSim's instance of ``workload`` with ``allocation="coflowsim"``
        (:func:`~controller.policies.coflowsim_fifo.coflowsim_instance`), else itself."""
        if self._coflowsim is None:
            return workload
        try:
            return coflowsim_instance(workload)[0]
        except ValueError as e:
            raise PolicyError(f"fifo: {e}") from None

    def start(self, workload):
        super().start(workload)
        if self._coflowsim is not None:
            try:
                self._coflowsim.start(workload)
            except ValueError as e:
                raise PolicyError(f"fifo: {e}") from None

    def plan(self, state):
        if self._coflowsim is not None:
            return self._coflowsim.plan(state, self)
        return super().plan(state)

    def reference_completions(self, completion: np.ndarray) -> np.ndarray:
        """The completions as CoflowSim records them (``allocation="coflowsim"``): the
        end of the 8 ms quantum in which its own byte count of the coflow ran out
        (:class:`~controller.policies.coflowsim_fifo.CoflowSimAllocation`)."""
        return self._coflowsim.reference_completions(completion)

    def key(self, state, coflows):
        return state.arrays.release[coflows]
