"""Varys: Smallest-Effective-Bottleneck-First ordering with MADD rates (``sebf``).

Implements the clairvoyant inter-coflow scheduler of Varys (Chowdhury, Zhong, Stoica,
SIGCOMM 2014, Section 5, Pseudocode 1), online, recomputed at every event the engine
reports (a coflow becomes ready, a coflow completes):

1. **SEBF ordering.** Every ready coflow's effective bottleneck on the *remaining* bytes,
   ``Γ_k = max over ports p of (bytes of k still to cross p) / capacity of p``, computed on
   the whole fabric as if the coflow were alone; smallest ``Γ`` first (ties, within a
   relative ``1e-9``, by coflow index). With ``m`` parallel cores a server's port is its
   ``m`` links together, of capacity ``sum of the core rates``.
2. **Cores** (parallel networks only). Flows take cores in that order by the least-loaded
   rule of :mod:`controller.cores` (input plus output load of the core, in time); started
   flows stay where they are.
3. **MADD** (Minimum Allocation for Desired Duration). Coflows in SEBF order; each gets
   per-flow rate ``remaining bytes / Γ'_k``, where ``Γ'_k`` is its bottleneck on the
   capacity the earlier coflows left on each (core, port), so all its flows would finish
   together at ``Γ'_k``. A coflow that needs a saturated port gets nothing in this pass.
   (:func:`~controller.policies.portload.madd_cap_flows`.)
4. **Backfilling** (work conservation): leftover capacity goes to flows in SEBF order
   regardless of their MADD rate (``Plan.backfill``; Varys backfills in arrival order, the
   only difference).

``allocation="sincronia-offline"`` is instead the allocation of Sincronia's offline
simulator, to compare with its published figures (:mod:`controller.policies.offline_madd`:
one SEBF order at time 0, MADD without re-allocation at flow completions, rates fixed
until the earliest MADD completion; one core).

The plan is a ``"priority"`` plan whose rate caps are the MADD rates; the order and the
caps change at coflow arrivals and departures (as in Varys), and the engine re-applies them
at every flow completion, so the capacity of a flow that finishes before its coflow is
backfilled at once. (Keeping the rates fixed until the next coflow event,
``Plan.rates_fixed``, leaves that capacity idle: on FB2010 it doubles the average CCT,
21.6 s -> 48.4 s.) Weights are ignored (Varys minimises the average CCT).

References
----------
M. Chowdhury, Y. Zhong, I. Stoica. Efficient coflow scheduling with Varys. SIGCOMM 2014.
"""
from __future__ import annotations

import numpy as np

from controller.plan import CoflowPlan, Plan, State, single_core
from controller.policies.base import Policy, PolicyError, one_of, register
from controller.policies.offline_madd import BW_EPS, SIZE_EPS_BYTES, offline_madd
from controller.policies.portload import (CoflowLoads, FlowIndex, coflow_priority_plan,
                                         index_for, madd_cap_flows, ordered_plan,
                                         tie_groups)

#: ``Sebf(allocation=...)``: Varys's (the default) or Sincronia's offline simulator's
ALLOCATIONS = ("varys", "sincronia-offline")


def effective_bottleneck(state: State, coflows: np.ndarray, index=None) -> np.ndarray:
    """``Γ`` (seconds) of each of ``coflows`` on its remaining bytes, alone in the fabric.

    A server's port capacity is the sum of the core rates (its links to all cores).
    """
    idx = index or FlowIndex(state.arrays)
    flows, bounds = idx.gather(coflows, state.eligible)
    return idx.bottleneck(flows, bounds, state.remaining,
                          core_rates=state.workload.fabric.rates)


@register
class Sebf(Policy):
    name = "sebf"
    summary = "Varys: smallest effective bottleneck first + MADD rates + backfill (SIGCOMM'14)"

    def __init__(self, allocation: str = "varys", **options):
        super().__init__(**options)
        self.allocation = one_of("sebf", "allocation", allocation, ALLOCATIONS)

    def start(self, workload) -> None:
        super().start(workload)
        if self.allocation == "varys":
            return
        fab = workload.fabric
        if fab.cores != 1:
            raise PolicyError("sebf: allocation='sincronia-offline' simulates one switch "
                              f"(one core); the fabric has {fab.cores}")
        a = workload.arrays
        idx = index_for(self, a)
        every = np.arange(a.n_coflows)
        flows, bounds = idx.gather(every, np.ones(a.n_flows, dtype=np.bool_))
        gamma = idx.bottleneck(flows, bounds, a.size, core_rates=fab.rates)
        self.static_order = every[np.lexsort((every, tie_groups(gamma)))]
        self._dead = np.zeros(a.n_flows, dtype=np.bool_)
        self._kept: Plan | None = None
        #: the reference's event times (each allocation's start, and the last one's end)
        self.event_times: list[float] = []

    def plan(self, state: State) -> Plan:
        if self.allocation != "varys":
            return self._offline_plan(state)
        if state.arrays.cores == 1:
            return self._one_core_plan(state)
        return self._any_core_plan(state)

    def _any_core_plan(self, state: State) -> Plan:
        """Varys's plan on any number of cores, from the eligible flows' remaining
        bytes: O(eligible flows)."""
        a = state.arrays
        rates = state.workload.fabric.rates
        idx = index_for(self, a)
        active = state.active_coflows
        gamma = effective_bottleneck(state, active, idx)
        order = active[np.lexsort((active, tie_groups(gamma)))]
        plan, flows, bounds = ordered_plan(state, idx, order, backfill=True)
        group = np.repeat(np.arange(len(order)), np.diff(bounds))
        plan.cap_flows, plan.cap_values = madd_cap_flows(a, flows, group, plan.core,
                                                         state.remaining, rates)
        return plan

    def _one_core_plan(self, state: State) -> Plan:
        """:meth:`_any_core_plan` on one core: :func:`one_core_plan`."""
        return one_core_plan(self, state)

    def _offline_plan(self, state: State) -> Plan:
        """The reference's allocation, kept until its next event (a coflow completing
        in between does not change it). The reference releases everything at 0; a
        coflow that becomes ready later is an event here."""
        kept = self._kept
        if kept is not None and state.event == "completion" and state.time < kept.horizon:
            return kept
        a = state.arrays
        idx = index_for(self, a)
        live = state.ready[self.static_order] & ~state.done[self.static_order]
        order = self.static_order[live]
        flows, bounds = idx.gather(order, state.eligible)
        port = state.workload.fabric.rate_bps / 8.0
        rate, dt = offline_madd(flows, bounds, a.src, a.dst,
                                np.asarray(state.remaining, dtype=np.float64), port,
                                a.ports, self._dead, SIZE_EPS_BYTES, BW_EPS)
        plan = coflow_priority_plan(state, idx, order, backfill=False)
        cap = np.zeros(a.n_flows)
        cap[flows] = rate * 8.0
        plan.rate_cap = cap
        plan.rates_fixed = True
        plan.keep_at_completion = True   # (a completion before the horizon keeps it)
        plan.horizon = state.time + dt
        if self.event_times and self.event_times[-1] >= state.time:
            self.event_times.pop()   # the last allocation's end: this one's start
        self.event_times += [state.time, plan.horizon]
        self._kept = plan
        return plan

    def reference_completions(self, completion: np.ndarray) -> np.ndarray:
        """``completion`` (per coflow, exact) as the reference records it: at the first
        of its events at or after the last byte (``allocation="sincronia-offline"``)."""
        ev = np.asarray(self.event_times)
        ev = ev[np.isfinite(ev)]
        i = np.searchsorted(ev, np.asarray(completion) * (1 - 1e-9), side="left")
        return np.where(i < len(ev), ev[np.minimum(i, len(ev) - 1)], completion)


def one_core_plan(policy: Policy, state: State) -> Plan:
    """Varys's plan (:meth:`Sebf._any_core_plan`) on one core, from coflow port loads kept
    on ``policy`` from plan to plan (:class:`~controller.policies.portload.CoflowLoads`):
    O(flows that sent since the last plan, and capped flows) instead of O(eligible
    flows). Weaver on one core is this plan too."""
    a = state.arrays
    loads = getattr(policy, "_loads", None)
    if loads is None or loads.arrays is not a:
        loads = policy._loads = CoflowLoads(a)
    loads.update(state)
    active = state.active_coflows
    gamma = loads.bottleneck(active, state.workload.fabric.rates)
    order = active[np.lexsort((active, tie_groups(gamma)))]
    flows, caps = loads.madd(state, order, state.workload.fabric.rates[0])
    return CoflowPlan(state, order, single_core(a), cap_flows=flows,
                      cap_values=caps * 8.0, backfill=True)
