"""Weaver: coflow scheduling in heterogeneous parallel networks (``weaver``).

Implements Weaver (X. S. Huang, Y. Xia, T. S. E. Ng, IPDPS 2020) in the configuration of the
authors' simulator (``SchedulerWeaver`` with its defaults, children running Varys): a
flow-to-core assignment made once per coflow, then Varys's SEBF + MADD on every core.

**Flow-to-core assignment**, when a coflow becomes ready (its arrival, for the engine).
Cores are considered in decreasing rate order (ties by index). The coflow's flows are
taken largest first (ties by flow index); keeping, per core ``h``, the bytes of *this*
coflow already put on each input and output port of ``h`` and their maximum ``B_h`` (the
coflow's bottleneck on ``h``), each flow of ``d`` bytes from ``i`` to ``j``:

* goes to the core minimising ``max(B_h, in_h[i] + d, out_h[j] + d) / rate_h``, the
  coflow's completion time on ``h`` after adding it (first core on ties) -- when placing
  it raises the bottleneck of at least one core (a *critical* flow);
* otherwise (it fits under the bottleneck on every core) goes to the core minimising
  ``(d + max(in_h[i], out_h[j])) / rate_h``, which balances the ports' loads
  (the simulator's default ``NON_CRITICAL_RATIO_LB``).

So a coflow's bytes are spread over the cores in proportion to their rates, and its
bottleneck is balanced across cores. Other coflows' traffic is not considered; the
assignment never changes (flows do not migrate).

**Ordering between coflows and rates.** The flows a coflow puts on core ``h`` form a
*sub-coflow* that core ``h``'s own Varys scheduler handles: at every event, on every core,
sub-coflows in increasing order of their effective bottleneck on that core (remaining
bytes over the core's rate, ``Γ``; ties by coflow index), MADD rates (each sub-coflow's
flows finish together at its bottleneck on the capacity left by the sub-coflows before it
on that core), then backfilling. Cores are independent, so one global order by ``Γ``
gives every core its own SEBF order: the plan is a
:class:`~controller.plan.FlowOrderPlan`, the eligible flows sub-coflow after sub-coflow,
with MADD's caps on the flows that get one. On one core this is exactly ``sebf``, and
the plan is sebf's (:func:`controller.policies.sebf.one_core_plan`: loads kept from plan
to plan, a coflow order the capped engine keeps its pairs under).

References
----------
X. S. Huang, Y. Xia, T. S. E. Ng. Weaver: efficient coflow scheduling in heterogeneous
parallel networks. IPDPS 2020. Authors' simulator https://github.com/sunnyxhuang/weaver
(``src/schedulerWeaver.cc``).
"""
from __future__ import annotations

import numba
import numpy as np

from controller.indexing import no_wraparound
from controller.plan import FlowOrderPlan, Plan, State
from controller.policies.base import Policy, register
from controller.policies.portload import index_for, madd_cap_flows, tie_groups
from controller.policies.sebf import one_core_plan

# the kernels never index with a negative number
no_wraparound(__name__)


@numba.njit(cache=True)
def _assign(flows, starts, src, dst, size, rate, core_order, ports, out):
    """Weaver's assignment for the coflows whose flows are ``flows[starts[c]:starts[c+1]]``
    (each group sorted largest first); writes the core of every flow into ``out``."""
    m = rate.shape[0]
    lin = np.zeros((m, ports))
    lout = np.zeros((m, ports))
    bott = np.zeros(m)
    for c in range(starts.shape[0] - 1):
        for q in range(starts[c], starts[c + 1]):
            f = flows[q]
            d = size[f]
            i = src[f]
            j = dst[f]
            best = -1
            best_t = np.inf
            critical = False
            for n in range(m):
                h = core_order[n]
                s = max(bott[h], lin[h, i] + d, lout[h, j] + d)
                if s > bott[h]:
                    critical = True
                t = s / rate[h]
                if best < 0 or t < best_t:
                    best_t = t
                    best = h
            if not critical:
                best = -1
                for n in range(m):
                    h = core_order[n]
                    t = (d + max(lin[h, i], lout[h, j])) / rate[h]
                    if best < 0 or t < best_t:
                        best_t = t
                        best = h
            out[f] = best
            lin[best, i] += d
            lout[best, j] += d
            if lin[best, i] > bott[best]:
                bott[best] = lin[best, i]
            if lout[best, j] > bott[best]:
                bott[best] = lout[best, j]
        for q in range(starts[c], starts[c + 1]):
            f = flows[q]
            for h in range(m):
                lin[h, src[f]] = 0.0
                lout[h, dst[f]] = 0.0
        bott[:] = 0.0


def weaver_assignment(arrays, coflows: np.ndarray, size: np.ndarray, core_rates,
                      out: np.ndarray | None = None) -> np.ndarray:
    """Weaver's core for every flow of ``coflows``; see the module docstring.

    Parameters
    ----------
    arrays : FlowArrays
    coflows : int array of coflow indices to assign
    size : float array per flow, the bytes to place (the sizes, at a coflow's arrival)
    core_rates : sequence of float, bits/s per core
    out : int array per flow, optional
        Written at the flows of ``coflows`` only (default: a new array, ``-1`` elsewhere):
        the work is in proportion to those flows, not to the workload's.
    """
    rate = np.asarray(core_rates, dtype=np.float64)
    if out is None:
        out = np.full(arrays.n_flows, -1, dtype=np.int64)
    ptr, members = arrays.coflow_ptr, arrays.coflow_flows
    flows = np.concatenate([members[ptr[k]:ptr[k + 1]]
                            for k in np.asarray(coflows, dtype=np.int64)] or [members[:0]])
    if not flows.size:
        return out
    # group by coflow, largest first inside a coflow, ties by flow index
    flows = flows[np.lexsort((flows, -size[flows], arrays.coflow[flows]))]
    k = arrays.coflow[flows]
    starts = np.concatenate(([0], np.flatnonzero(np.diff(k)) + 1, [len(flows)]))
    core_order = np.argsort(-rate, kind="stable").astype(np.int64)
    _assign(flows, starts.astype(np.int64), arrays.src, arrays.dst,
            np.asarray(size, dtype=np.float64), rate, core_order, arrays.ports, out)
    return out


@numba.njit(cache=True)
def _by_sub(flows, bounds, core, sub_group, sub_core, out, sizes):
    """The flows of each sub-coflow ``(sub_group[s], sub_core[s])``, sub-coflow after
    sub-coflow; ``sizes[s]`` gets the number of flows of sub-coflow ``s``."""
    n = 0
    for s in range(sub_group.shape[0]):
        g = sub_group[s]
        h = sub_core[s]
        before = n
        for q in range(bounds[g], bounds[g + 1]):
            f = flows[q]
            if core[f] == h:
                out[n] = f
                n += 1
        sizes[s] = n - before


@register
class Weaver(Policy):
    name = "weaver"
    summary = "Weaver: bottleneck-balancing flow-to-core assignment + per-core Varys (IPDPS'20)"

    def start(self, workload):
        super().start(workload)
        self._assigned = np.zeros(workload.arrays.n_coflows, dtype=np.bool_)
        # the plans' cores: the assignment (a flow that sent before its coflow was
        # assigned keeps its core), core 0 for the flows of coflows not ready yet
        self._plan_core = np.zeros(workload.arrays.n_flows, dtype=np.int64)

    def plan(self, state: State) -> Plan:
        a = state.arrays
        m = a.cores
        if m == 1:   # sebf's plan (see the module docstring), from loads kept
            return one_core_plan(self, state)
        rates = np.asarray(state.workload.fabric.rates, dtype=np.float64)
        idx = index_for(self, a)
        active = state.active_coflows
        new = active[~self._assigned[active]]
        if new.size:
            weaver_assignment(a, new, state.remaining, rates, out=self._plan_core)
            self._assigned[new] = True
            ptr, members = a.coflow_ptr, a.coflow_flows
            fl = np.concatenate([members[ptr[k]:ptr[k + 1]] for k in new])
            pinned = fl[state.core[fl] >= 0]
            self._plan_core[pinned] = state.core[pinned]
        # (a flow that sends afterwards is pinned to its plan's core: flows do not
        # migrate, Plan.validate says so, so the kept cores stay the flows' pins)
        core = self._plan_core  # (the engines allow a plan's cores written in place)
        # sub-coflows (coflow, core), each ordered by its bottleneck on its own core
        flows, bounds = idx.gather(active, state.eligible)
        gamma = idx.bottleneck(flows, bounds, state.remaining, core=core, core_rates=rates)
        g_of = np.repeat(np.arange(len(active)), np.diff(bounds))
        present = np.bincount(g_of * m + core[flows], minlength=len(active) * m) > 0
        subs = np.flatnonzero(present)
        sg, sh = subs // m, subs % m
        order = np.lexsort((sh, active[sg], tie_groups(gamma[sg, sh])))
        sg, sh = sg[order], sh[order]
        out = np.empty(len(flows), dtype=np.int64)
        sizes = np.empty(len(sg), dtype=np.int64)
        _by_sub(flows, bounds, core, sg, sh, out, sizes)
        # the flows sub-coflow after sub-coflow are the plan's order; MADD caps the
        # flows of each sub-coflow that is not blocked (the others backfill only)
        pos = np.repeat(np.arange(len(sg)), sizes)
        cap_flows, cap_values = madd_cap_flows(a, out, pos, core, state.remaining, rates)
        return FlowOrderPlan(state, out, core, grouped=True, cap_flows=cap_flows,
                             cap_values=cap_values, backfill=True)
