"""Per-coflow port loads, coflow-ordered priority plans and Varys's MADD, for the baselines.

A coflow's *load* on a port is the bytes its flows still have to move through that port.
Its *bottleneck* (Varys's effective bottleneck ``Γ``) is the longest time any of its ports
needs at the capacity it is given: ``Γ = max over ports of load / capacity``. The
clairvoyant baselines (SEBF, Sincronia's BSSI, Weaver) order coflows by functions of these
loads at every event, so this module computes them in compiled loops over the eligible
flows only, grouped by coflow through a :class:`FlowIndex` built once per workload: no
per-event sort over flows and no Python loop over flows.

:func:`madd_rates` is MADD (Minimum-Allocation-for-Desired-Duration, Varys, SIGCOMM 2014,
Section 5.3): groups of flows (coflows, or Weaver's per-core sub-coflows) are taken in
priority order; each gets, from the capacity earlier groups left on each (core, port), the
smallest rates that finish all its flows together, at its bottleneck time.

Port numbering in dense load matrices: a fabric of ``P`` servers has ``2P`` columns,
inputs (uplinks) ``0..P-1`` then outputs (downlinks) ``P..2P-1``.
"""
from __future__ import annotations

import numba
import numpy as np

from controller.cores import least_loaded_cores, plan_cores
from controller.indexing import no_wraparound
from controller.plan import CoflowPlan, State, coflow_order_plan, single_core

# the kernels never index with a negative number
no_wraparound(__name__)


# ----------------------------------------------------------------------------- kernels
@numba.njit(cache=True)
def _gather(perm, start, coflows, eligible, out, bounds):
    n = 0
    for g in range(coflows.shape[0]):
        bounds[g] = n
        c = coflows[g]
        for q in range(start[c], start[c + 1]):
            f = perm[q]
            if eligible[f]:
                out[n] = f
                n += 1
    bounds[coflows.shape[0]] = n
    return n


@numba.njit(cache=True)
def _bottleneck(flows, bounds, src, dst, core, load, cap, ports):
    """Per (group, core): max over the core's ports of the group's load / capacity."""
    m = cap.shape[0]
    groups = bounds.shape[0] - 1
    out = np.zeros((groups, m))
    lin = np.zeros((m, ports))
    lout = np.zeros((m, ports))
    for g in range(groups):
        for q in range(bounds[g], bounds[g + 1]):
            f = flows[q]
            lin[core[f], src[f]] += load[f]
            lout[core[f], dst[f]] += load[f]
        for q in range(bounds[g], bounds[g + 1]):
            f = flows[q]
            h = core[f]
            v = max(lin[h, src[f]], lout[h, dst[f]]) / cap[h]
            if v > out[g, h]:
                out[g, h] = v
        for q in range(bounds[g], bounds[g + 1]):
            f = flows[q]
            lin[core[f], src[f]] = 0.0
            lout[core[f], dst[f]] = 0.0
    return out


@numba.njit(cache=True)
def _dense(flows, bounds, src, dst, load, ports):
    groups = bounds.shape[0] - 1
    out = np.zeros((groups, 2 * ports))
    for g in range(groups):
        for q in range(bounds[g], bounds[g + 1]):
            f = flows[q]
            out[g, src[f]] += load[f]
            out[g, ports + dst[f]] += load[f]
    return out


@numba.njit(cache=True)
def _madd(order, group, src, dst, core, rem, core_cap, ports, cap):
    """MADD (:func:`madd_rates`): ``cap[q]`` the rate of flow ``order[q]``, bytes/s."""
    cores = core_cap.shape[0]
    res_in = np.empty((cores, ports))
    res_out = np.empty((cores, ports))
    for h in range(cores):
        res_in[h, :] = core_cap[h]
        res_out[h, :] = core_cap[h]
    load_in = np.zeros((cores, ports))
    load_out = np.zeros((cores, ports))
    n = order.shape[0]
    i = 0
    while i < n:
        j = i
        while j < n and group[j] == group[i]:
            j += 1
        for q in range(i, j):
            f = order[q]
            load_in[core[f], src[f]] += rem[f]
            load_out[core[f], dst[f]] += rem[f]
        gamma = 0.0
        blocked = False
        for q in range(i, j):
            f = order[q]
            h = core[f]
            tol = 1e-9 * core_cap[h]
            a = load_in[h, src[f]]
            b = load_out[h, dst[f]]
            if (a > 0.0 and res_in[h, src[f]] <= tol) or (b > 0.0 and res_out[h, dst[f]] <= tol):
                blocked = True
                break
            if a > 0.0 and a / res_in[h, src[f]] > gamma:
                gamma = a / res_in[h, src[f]]
            if b > 0.0 and b / res_out[h, dst[f]] > gamma:
                gamma = b / res_out[h, dst[f]]
        for q in range(i, j):
            f = order[q]
            if blocked or gamma <= 0.0:
                cap[q] = 0.0
                continue
            r = rem[f] / gamma
            cap[q] = r
            h = core[f]
            res_in[h, src[f]] = max(0.0, res_in[h, src[f]] - r)
            res_out[h, dst[f]] = max(0.0, res_out[h, dst[f]] - r)
        for q in range(i, j):
            f = order[q]
            load_in[core[f], src[f]] = 0.0
            load_out[core[f], dst[f]] = 0.0
        i = j


# ----------------------------------------------------------------------------- index
class FlowIndex:
    """Flows grouped by coflow, by flow index inside: built once per workload.

    Inside a coflow flows are ranked by index, the convention of
    :func:`controller.plan.coflow_order_plan` (trace readers list a coflow's flows by
    (src, dst)).

    Attributes
    ----------
    perm : int array, every flow, sorted by (coflow, flow index)
    start : int array (n_coflows + 1), the flows of coflow ``k`` are ``perm[start[k]:start[k+1]]``
    tie : float array per flow in [0, 1), the rank of a flow inside its coflow
    zero_core : read-only int array per flow, all 0 (the cores of a single-core plan)
    """

    def __init__(self, arrays):
        self.arrays = arrays
        self.perm = np.argsort(arrays.coflow, kind="stable").astype(np.int64)
        self.start = np.searchsorted(arrays.coflow[self.perm],
                                     np.arange(arrays.n_coflows + 1)).astype(np.int64)
        self.tie = np.arange(arrays.n_flows) / float(arrays.n_flows + 1)
        self.zero_core = single_core(arrays)  # shared by every single-core plan

    def gather(self, coflows: np.ndarray, eligible: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The eligible flows of ``coflows``, coflow after coflow in the given order.

        Returns ``(flows, bounds)``: the flows of ``coflows[g]`` are
        ``flows[bounds[g]:bounds[g+1]]``, by flow index.
        """
        coflows = np.asarray(coflows, dtype=np.int64)
        out, bounds = self.gather_empty(coflows)
        n = _gather(self.perm, self.start, coflows, eligible, out, bounds)
        return out[:n], bounds

    def gather_empty(self, coflows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Room for :meth:`gather` of ``coflows`` (int64): every flow of theirs, and
        their bounds."""
        total = int(np.sum(self.start[coflows + 1] - self.start[coflows]))
        return np.empty(total, dtype=np.int64), np.empty(len(coflows) + 1, dtype=np.int64)

    def bottleneck(self, flows, bounds, load, core=None, core_rates=None) -> np.ndarray:
        """Per group (and core): the bottleneck time of ``load`` on the given capacities.

        Without ``core``, every server port is one port of capacity ``sum(core_rates)``
        (the ``m`` links together) and the result is one value per group; with ``core``
        (per flow) the result is ``(groups, m)``, the bottleneck on each core at its rate.
        ``core_rates`` in bits/s.
        """
        a = self.arrays
        rates = np.asarray(core_rates, dtype=np.float64) / 8.0
        if core is None:
            out = _bottleneck(flows, bounds, a.src, a.dst, self.zero_core,
                              np.asarray(load, dtype=np.float64),
                              np.array([rates.sum()]), a.ports)
            return out[:, 0]
        return _bottleneck(flows, bounds, a.src, a.dst, np.asarray(core, dtype=np.int64),
                           np.asarray(load, dtype=np.float64), rates, a.ports)

    def dense_loads(self, flows, bounds, load) -> np.ndarray:
        """``(groups, 2P)`` bytes per group and port (inputs then outputs)."""
        a = self.arrays
        return _dense(flows, bounds, a.src, a.dst, np.asarray(load, dtype=np.float64), a.ports)


#: bottlenecks this close (relative) are a tie, broken by coflow index: remaining bytes
#: reach the policy through different roundings in the two engines (one long step, or
#: several short ones), and a tie in exact arithmetic must not be decided by the last bit
TIE_REL = 1e-9


def tie_groups(values: np.ndarray, rel: float = TIE_REL) -> np.ndarray:
    """A sort key for ``values`` in which values within ``rel`` of the next smaller one
    are equal (a chain of near-ties is one group)."""
    v = np.asarray(values, dtype=np.float64).ravel()
    key = np.zeros(v.shape, dtype=np.int64)
    if v.size < 2:
        return key.reshape(np.shape(values))
    o = np.argsort(v, kind="stable")
    s = v[o]
    new = np.zeros(v.shape, dtype=np.int64)
    new[1:] = s[1:] - s[:-1] > rel * np.abs(s[1:])
    key[o] = np.cumsum(new)
    return key.reshape(np.shape(values))


def index_for(policy, arrays) -> FlowIndex:
    """The policy's cached :class:`FlowIndex` for ``arrays`` (built on first use)."""
    idx = getattr(policy, "_flow_index", None)
    if idx is None or idx.arrays is not arrays:
        idx = FlowIndex(arrays)
        policy._flow_index = idx
    return idx


# ----------------------------------------------------------------------------- loads
@numba.njit(cache=True)
def _segment_sums(segs, sptr, sflow, rem, eligible, L):
    """``L[s]``: the remaining bytes of the eligible flows of segment ``s``, summed by
    flow index (as :func:`_bottleneck` sums a coflow's load on a port)."""
    for s in segs:
        v = 0.0
        for q in range(sptr[s], sptr[s + 1]):
            f = sflow[q]
            if eligible[f]:
                v += rem[f]
        L[s] = v


@numba.njit(cache=True)
def _segment_max(coflows, cptr, L, out):
    """``out[k]``: the largest of coflow ``k``'s port loads, for ``k`` in ``coflows``."""
    for k in coflows:
        v = 0.0
        for s in range(cptr[k], cptr[k + 1]):
            if L[s] > v:
                v = L[s]
        out[k] = v


@numba.njit(cache=True)
def _madd_one_core(order, cptr, seg_port, L, ptr, flows, eligible, rem, src, dst, cap,
                   ports):
    """:func:`_madd` on one core with every coflow a group, from the coflows' port loads
    ``L``: a coflow that needs a saturated port is skipped (its flows' caps are 0) in
    O(its ports), and once every port is saturated the rest are. Returns the capped
    flows (rank order) and their caps, bytes/s."""
    res = np.full(2 * ports, cap)
    tol = 1e-9 * cap
    open_ports = 2 * ports
    n = 0
    for k in order:
        n += ptr[k + 1] - ptr[k]
    out_f = np.empty(n, dtype=np.int64)
    out_c = np.empty(n)
    n = 0
    for k in order:
        if open_ports == 0:
            break
        gamma = 0.0
        blocked = False
        for s in range(cptr[k], cptr[k + 1]):
            if L[s] > 0.0:
                p = seg_port[s]
                if res[p] <= tol:
                    blocked = True
                    break
                if L[s] / res[p] > gamma:
                    gamma = L[s] / res[p]
        if blocked or gamma <= 0.0:
            continue
        for q in range(ptr[k], ptr[k + 1]):
            f = flows[q]
            if not eligible[f]:
                continue
            r = rem[f] / gamma
            out_f[n] = f
            out_c[n] = r
            n += 1
            for p in (src[f], ports + dst[f]):
                was = res[p] > tol
                res[p] = max(0.0, res[p] - r)
                if was and res[p] <= tol:
                    open_ports -= 1
    return out_f[:n], out_c[:n]


class CoflowLoads:
    """Each coflow's load on each of its ports, kept up to date from plan to plan.

    A coflow's load on a port is a *segment*: its flows through that port (inputs then
    outputs, by flow index), whose remaining bytes are summed exactly as
    :func:`_bottleneck` sums them. At each plan only the segments of the flows whose
    remaining bytes changed since the last one (``State.changed``) and of the coflows
    that became ready are summed again, so a plan costs O(flows that sent) instead of
    O(eligible flows); without the hint (or for another run) every segment is.

    Servers' ports are their links to every core together (capacity the sum of the core
    rates), as in SEBF's effective bottleneck; :meth:`madd` is MADD on one core.
    """

    def __init__(self, arrays):
        a = arrays
        self.arrays = a
        n, P = a.n_flows, a.ports
        f = np.arange(n, dtype=np.int64)
        key = np.concatenate([a.coflow * 2 * P + a.src, a.coflow * 2 * P + P + a.dst])
        idx = np.argsort(key, kind="stable")
        skey = key[idx]
        new = np.ones(len(skey), dtype=np.bool_)
        new[1:] = skey[1:] != skey[:-1]
        seg = np.cumsum(new) - 1
        self.sflow = np.concatenate([f, f])[idx]
        self.sptr = np.concatenate([np.flatnonzero(new), [len(skey)]]).astype(np.int64)
        first = skey[new]
        self.seg_port = (first % (2 * P)).astype(np.int64)
        self.cptr = np.searchsorted(first // (2 * P), np.arange(a.n_coflows + 1)).astype(
            np.int64)
        where = np.empty(2 * n, dtype=np.int64)
        where[idx] = seg
        self.seg_in, self.seg_out = where[:n], where[n:]
        self.L = np.zeros(len(first))
        self.peak = np.zeros(a.n_coflows)   # largest segment load per coflow
        self._known = np.zeros(a.n_coflows, dtype=np.bool_)
        self._rem = None

    def update(self, state: State) -> None:
        """Bring the loads of the active coflows up to ``state``."""
        active = state.active_coflows
        if state.changed is None or state.remaining is not self._rem:
            self._known[:] = False
            self._rem = state.remaining
            stale = np.zeros(0, dtype=np.int64)
        else:
            ch = state.changed
            stale = np.unique(np.concatenate([self.seg_in[ch], self.seg_out[ch]]))
        fresh = active[~self._known[active]]
        segs = np.concatenate([stale] + [np.arange(self.cptr[k], self.cptr[k + 1])
                                         for k in fresh]) if len(fresh) else stale
        _segment_sums(segs, self.sptr, self.sflow, state.remaining, state.eligible, self.L)
        self._known[fresh] = True
        coflows = np.unique(np.searchsorted(self.cptr, segs, side="right") - 1)
        _segment_max(coflows, self.cptr, self.L, self.peak)

    def bottleneck(self, coflows: np.ndarray, core_rates) -> np.ndarray:
        """Γ (seconds) of each of ``coflows`` (active, :meth:`update` d), alone in the
        fabric: :meth:`FlowIndex.bottleneck` without ``core``."""
        return self.peak[coflows] / (np.sum(np.asarray(core_rates, dtype=np.float64) / 8.0))

    def madd(self, state: State, order: np.ndarray, core_rate: float):
        """MADD on one core (``core_rate`` bits/s) for the coflows ``order``: the capped
        flows in rank order and their caps in bytes/s (the others' are 0)."""
        a = self.arrays
        return _madd_one_core(np.asarray(order, dtype=np.int64), self.cptr, self.seg_port,
                              self.L, a.coflow_ptr, a.coflow_flows, state.eligible,
                              np.asarray(state.remaining, dtype=np.float64), a.src, a.dst,
                              core_rate / 8.0, a.ports)


# ----------------------------------------------------------------------------- plans
def coflow_priority_plan(state: State, index: FlowIndex, order: np.ndarray, *,
                         core_load: np.ndarray | None = None, **kw) -> CoflowPlan:
    """A ``"priority"`` plan serving the ready coflows in ``order`` (first = highest).

    Flows of a coflow are ranked by index. With several cores the unpinned flows take
    cores in priority order by :func:`controller.cores.least_loaded_cores` with per-flow
    load ``core_load`` (default: the remaining bytes); single core: core 0. Either way the
    plan is a :class:`~controller.plan.CoflowPlan`, whose ranks and caps are built only if
    read (engines read the order): past the cores, a plan costs O(eligible flows), not a
    pass over every flow of the workload.
    """
    if state.arrays.cores == 1:
        return coflow_order_plan(state, np.asarray(order, dtype=np.int64), **kw)
    return ordered_plan(state, index, order, core_load=core_load, **kw)[0]


def ordered_plan(state: State, index: FlowIndex, order: np.ndarray, *,
                 core_load: np.ndarray | None = None,
                 **kw) -> tuple[CoflowPlan, np.ndarray, np.ndarray]:
    """:func:`coflow_priority_plan`, with the eligible flows in priority order and the
    boundaries of each coflow's run in it (as :meth:`FlowIndex.gather`): ``(plan, flows,
    bounds)``."""
    a = state.arrays
    order = np.asarray(order, dtype=np.int64)
    flows, bounds = index.gather(order, state.eligible)
    if a.cores == 1:
        return coflow_order_plan(state, order, **kw), flows, bounds
    load = state.remaining if core_load is None else core_load
    core = least_loaded_cores(a, flows, load, state.core, state.workload.fabric.rates,
                              out=plan_cores(index, a))
    return CoflowPlan(state, order, core, **kw), flows, bounds


def madd_rates(arrays, order: np.ndarray, group: np.ndarray, core: np.ndarray,
               remaining: np.ndarray, core_rates) -> np.ndarray:
    """MADD's rate (bits/s) of each flow of ``order``, in the same order: O(len(order)),
    no per-flow array of the workload.

    Parameters
    ----------
    arrays : FlowArrays
    order : int array
        Flows in priority order; the flows of one group must be contiguous.
    group : int array, one entry per position of ``order``
        Group id (equal for the flows allocated together: one coflow, or one sub-coflow).
    core : int array per flow
        The core each flow uses.
    remaining : float array per flow (bytes)
    core_rates : sequence of float (bits/s per core)

    Returns
    -------
    float array per position of ``order``: ``remaining / Γ`` in bits/s, where ``Γ`` is the
    group's bottleneck time on the capacity left by the groups before it; ``0`` for a group
    that needs a port earlier groups have saturated (Varys gives it nothing and leaves it
    to backfilling).
    """
    order = np.asarray(order, dtype=np.int64)
    out = np.empty(len(order))
    if order.size:
        _madd(order, np.asarray(group, dtype=np.int64), arrays.src, arrays.dst,
              np.asarray(core, dtype=np.int64), np.asarray(remaining, dtype=np.float64),
              np.asarray(core_rates, dtype=np.float64) / 8.0, arrays.ports, out)
        out *= 8.0
    return out


def madd_cap_flows(arrays, order: np.ndarray, group: np.ndarray, core: np.ndarray,
                   remaining: np.ndarray, core_rates) -> tuple[np.ndarray, np.ndarray]:
    """:func:`madd_rates` as a plan's sparse caps (``cap_flows``, ``cap_values`` of a
    :class:`~controller.plan.SparsePlan` listing ``order``): the flows MADD gives a rate
    above 0, in order, and their rates (bits/s); the others are capped at 0 (they take
    only what backfilling leaves)."""
    order = np.asarray(order, dtype=np.int64)
    rates = madd_rates(arrays, order, group, core, remaining, core_rates)
    sending = rates > 0.0
    return order[sending], rates[sending]
