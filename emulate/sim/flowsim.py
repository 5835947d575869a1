"""The event-driven flow-level simulator of an identical parallel network.

Each core is a non-blocking switch: the only constraints are the links. Flow ``f`` on core
``h`` uses the uplink of server ``src`` and the downlink of server ``dst`` of that core,
each of ``rate_bps[h]`` bits/s; the sum of the rates on a link never exceeds its rate. A
flow stays on the core it first sent on (no migration). There is no time step: between
two events every flow sends at a constant rate, and the next event is the earliest of

* a flow completing (its remaining bytes / its rate),
* a coflow's release,
* a coflow crossing a byte threshold the plan asked about (``Plan.byte_limit``),
* the plan's ``horizon``.

At a flow completion the rates are recomputed from the *same* plan (its sharing rule: see
``controller.plan``; the rule itself is ``controller.rates``, which the controller applies
too). At the other events, and whenever a coflow completes or becomes
ready (released and all its predecessors complete), the policy is asked for a new plan.
Release times and precedence are enforced here, whatever the policy says: only flows of
ready coflows are eligible (``controller.lifecycle``, which the controller uses too).

The inner loop (allocate rates, find the next event, advance) runs compiled by numba; the
policy is called from Python only at coflow-level events, a few per coflow. The advance
of a flow that does not finish in a step is written out in ``_run`` as
in :func:`emulate.sim.matching.run_matching`, on purpose: a kernel call with array
arguments costs atomic reference counts per array at every flow and event (see
:mod:`emulate.sim.matching`).

Examples
--------
>>> from controller.model import Coflow, Flow, Workload
>>> from topologies import Fabric
>>> from controller.policies import get_policy
>>> w = Workload(Fabric(ports=2, cores=1, rate_bps=8.0),
...              [Coflow("a", [Flow(0, 1, 2.0)]), Coflow("b", [Flow(0, 1, 1.0)])])
>>> simulate(w, get_policy("fifo")).coflow_completion.tolist()
[2.0, 3.0]
"""
from __future__ import annotations

import time as _time
from dataclasses import dataclass

import numba
import numpy as np

from controller.lifecycle import CoflowLifecycle
from controller.model import Workload
from controller.plan import PlanError, State
from controller.policies.base import Policy, policy_label
from controller.rates import byte_caps, fair_rates, priority_rates
from emulate.io.records import RunResult, Segments
from emulate.sim.capped import first_pass, run_capped
from emulate.sim.matching import (BYTE_LIMIT as _BYTE_LIMIT, COFLOW_DONE as _COFLOW_DONE,
                                  EPS_BYTES, SEG_FULL as _SEG_FULL, STOP_TIME as _STOP_TIME,
                                  STUCK as _STUCK, _less, advance_flow, byte_limit_dt, emit,
                                  next_event, pair_lists, run_matching, set_rate)


@numba.njit(cache=True)
def _run(t, stop_time, order, pos, src, dst, coflow, size, core, cap, fair, backfill,
         has_cap, core_cap, rem, rate, done, pinned, flow_completion, left, sent, byte_limit,
         has_limit, coflow_completion, record, seg_start, seg_flow, seg_core, seg_t0,
         seg_t1, seg_rate, n_seg, tot_in, tot_out, nz, running, n_running, head_ref,
         fixed):
    """Advance the fabric from ``t`` until a coflow completes, a byte limit is crossed,
    or ``stop_time``. Returns (t, reason, n_seg, n_running, inner_events).

    With ``fixed`` the rates are allocated once and kept until the function returns (a
    finished flow's capacity idles until the next plan)."""
    cores, ports = tot_in.shape
    res_in = np.empty((cores, ports))
    res_out = np.empty((cores, ports))
    a_in = np.empty((cores, ports), dtype=np.int64)
    a_out = np.empty((cores, ports), dtype=np.int64)
    c_in = np.empty((cores, ports), dtype=np.bool_)
    c_out = np.empty((cores, ports), dtype=np.bool_)
    newr = np.zeros(order.shape[0])
    frozen = np.zeros(order.shape[0], dtype=np.bool_)
    ctot = np.zeros(byte_limit.shape[0])
    nxt = np.empty(order.shape[0], dtype=np.int64)
    events = 0
    seg_cap = seg_flow.shape[0]
    head = head_ref[0]
    realloc = True
    while True:
        if not realloc:
            # fixed rates: keep them; only the flows still sending matter
            k_run = 0
            for m in range(n_running):
                if rate[running[m]] > 0.0:
                    running[k_run] = running[m]
                    k_run += 1
            n_running = k_run
        while head < order.shape[0] and done[order[head]]:
            head += 1
        head_ref[0] = head
        if record and n_seg + 2 * (order.shape[0] - head) + 1 > seg_cap:
            return t, _SEG_FULL, n_seg, n_running, events
        end = -1
        if realloc and fair:
            end = fair_rates(order, head, src, dst, core, cap, done, core_cap, newr, frozen)
        elif realloc:
            end = priority_rates(order, head, src, dst, core, cap, done, core_cap,
                                 backfill, has_cap, newr, res_in, res_out, tot_in, tot_out,
                                 nz, a_in, a_out, c_in, c_out)
        realloc = not fixed
        # flows running before but beyond the scan stop
        for m in range(n_running if end >= 0 else 0):
            f = running[m]
            if pos[f] > end and rate[f] > 0.0:
                n_seg = emit(record, f, core[f], seg_start[f], t, rate[f], seg_flow,
                              seg_core, seg_t0, seg_t1, seg_rate, n_seg)
                rate[f] = 0.0
                seg_start[f] = t
        k_run = 0 if end >= 0 else n_running
        for n in range(head, end + 1):
            f = order[n]
            r = newr[n]
            if r != rate[f]:
                n_seg = set_rate(f, r, t, rate, core, seg_start, record, seg_flow, seg_core,
                                 seg_t0, seg_t1, seg_rate, n_seg)
            if r > 0.0:
                nxt[k_run] = f
                k_run += 1
                if pinned[f] < 0:
                    pinned[f] = core[f]
        if end >= 0:
            n_running = k_run
            running[:n_running] = nxt[:n_running]
        # next event
        dt = stop_time - t
        for m in range(n_running):
            f = running[m]
            d = rem[f] / rate[f]
            if d < dt:
                dt = d
        if has_limit:
            dt = byte_limit_dt(running, n_running, rate, coflow, byte_limit, sent, ctot, dt)
        if dt == np.inf:
            return t, _STUCK, n_seg, n_running, events
        events += 1
        t_new, dt = next_event(t, dt, stop_time, core_cap)
        coflow_done = False
        limit_hit = False
        for m in range(n_running):
            f = running[m]
            moved = rate[f] * dt
            if moved > rem[f]:
                moved = rem[f]
            if rem[f] - moved > EPS_BYTES + 1e-12 * size[f]:
                # not finishing: what advance_flow does, without its call (whose array
                # arguments cost atomic reference counts)
                rem[f] = _less(rem[f], moved, size[f])
                sent[coflow[f]] += moved
                continue
            n_seg, finished, cdone = advance_flow(
                f, dt, t_new, rem, size, sent, coflow, done, flow_completion, left,
                coflow_completion, rate, core, seg_start, record, seg_flow, seg_core,
                seg_t0, seg_t1, seg_rate, n_seg)
            if finished:
                h = core[f]
                tot_in[h, src[f]] -= 1
                if tot_in[h, src[f]] == 0:
                    nz[0] -= 1
                tot_out[h, dst[f]] -= 1
                if tot_out[h, dst[f]] == 0:
                    nz[1] -= 1
                coflow_done = coflow_done or cdone
        if has_limit:
            for m in range(n_running):
                k = coflow[running[m]]
                if byte_limit[k] < np.inf and sent[k] >= byte_limit[k] * (1 - 1e-12):
                    limit_hit = True
        t = t_new
        if coflow_done:
            return t, _COFLOW_DONE, n_seg, n_running, events
        if limit_hit:
            return t, _BYTE_LIMIT, n_seg, n_running, events
        if t >= stop_time:
            return t, _STOP_TIME, n_seg, n_running, events


@numba.njit(cache=True)
def _count_live(order, done):
    """How many flows of ``order`` are not done."""
    n = 0
    for f in order:
        if not done[f]:
            n += 1
    return n


@numba.njit(cache=True)
def _same_cores(order, done, core, new_core):
    """Whether every flow of ``order`` not done has the same core in both."""
    for f in order:
        if not done[f] and core[f] != new_core[f]:
            return False
    return True


@numba.njit(cache=True)
def _drop_done(order, done, eligible):
    """The flows of ``order`` that are done are no longer eligible."""
    for f in order:
        if done[f]:
            eligible[f] = False


@numba.njit(cache=True)
def _sort_pair_flows(pptr, pflow, key):
    """Sort each pair's positions ``pflow[pptr[e]:pptr[e+1]]`` by ``key`` (stable)."""
    for e in range(pptr.shape[0] - 1):
        lo, hi = pptr[e], pptr[e + 1]
        if hi - lo <= 32:
            for a in range(lo + 1, hi):
                v = pflow[a]
                b = a
                while b > lo and key[pflow[b - 1]] > key[v]:
                    pflow[b] = pflow[b - 1]
                    b -= 1
                pflow[b] = v
        else:
            idx = np.argsort(key[pflow[lo:hi]], kind="mergesort")
            pflow[lo:hi] = pflow[lo:hi][idx]


@numba.njit(cache=True)
def _run_fair(t, stop_time, order, src, dst, coflow, size, core, core_cap, rem, rate, done,
              pinned, flow_completion, left, sent, coflow_completion, record, seg_start,
              seg_flow, seg_core, seg_t0, seg_t1, seg_rate, n_seg, pairs):
    """Max-min fair sharing without caps, by (core, src, dst) *pair*: every flow of a pair
    meets the same two links, so all get the same max-min rate, and the progressive
    filling runs over pairs weighted by their number of flows (O(pairs) per event, not
    O(flows)). A pair's flows are kept sorted by remaining bytes: they finish in that
    order, and only the pair's bytes sent per flow since the call (``served``) is
    advanced at each event. Returns (t, reason, n_seg, inner_events); ``rem``, ``rate``
    and ``sent`` are brought up to date on return.
    """
    pair, pptr, pflow, phead, pin, pout, qptr, qpair, qkey, qlen = pairs
    npairs = pin.shape[0]
    nport2 = qlen.shape[0]
    cores = core_cap.shape[0]
    P = nport2 // 2 // cores
    n = order.shape[0]
    rem0 = np.empty(n)
    for m in range(n):
        rem0[m] = rem[order[m]]
    _sort_pair_flows(pptr, pflow, rem0)
    cnt = np.zeros(npairs, dtype=np.int64)
    for e in range(npairs):
        cnt[e] = pptr[e + 1] - pptr[e]
    served = np.zeros(npairs)
    x = np.zeros(npairs)
    newx = np.zeros(npairs)
    pcnt = np.zeros(nport2, dtype=np.int64)
    used = np.zeros(nport2)
    lev = np.empty(nport2)
    frozen = np.zeros(npairs, dtype=np.bool_)
    lp = np.arange(npairs)  # the pairs with flows left: lp[:n_lp]
    n_lp = npairs
    seg_cap = seg_flow.shape[0]
    events = 0
    first = True
    reason = _STOP_TIME
    # per pair: its first flow's bytes left at the call and finishing slack
    hrem = np.empty(npairs)
    hthr = np.empty(npairs)
    for e in range(npairs):
        m = pflow[phead[e]]
        hrem[e] = rem0[m]
        hthr[e] = EPS_BYTES + 1e-12 * size[order[m]]
    # per entry of a port's pair list, the pair's other port
    qother = np.empty(qpair.shape[0], dtype=np.int64)
    for p in range(nport2):
        for a in range(qptr[p], qptr[p + 1]):
            qother[a] = pout[qpair[a]] if p < nport2 // 2 else pin[qpair[a]]
    # ports' flow counts of the pairs to fill (kept by the advance loop below)
    for u in range(n_lp):
        e = lp[u]
        pcnt[pin[e]] += cnt[e]
        pcnt[pout[e]] += cnt[e]
    while True:
        if record and n_seg + 2 * n + 1 > seg_cap:
            reason = _SEG_FULL
            break
        # progressive filling over pairs: ports saturate in order of their level
        # (capacity left / flows not frozen); a scan over the few ports beats a heap
        # fed once per frozen pair
        n_act = 0
        for p in range(nport2):
            used[p] = 0.0
            if pcnt[p] > 0:
                n_act += 1
                lev[p] = core_cap[(p % (nport2 // 2)) // P] / pcnt[p]
            else:
                lev[p] = np.inf
        while n_act > 0:
            p = 0
            for q in range(1, nport2):
                if lev[q] < lev[p]:
                    p = q
            key = lev[p]
            lev[p] = np.inf
            n_act -= 1
            h = (p % (nport2 // 2)) // P
            level = key if key > 0.0 else 0.0
            for a in range(qptr[p], qptr[p + 1]):
                e = qpair[a]
                c = cnt[e]
                if frozen[e] or c == 0:
                    continue
                frozen[e] = True
                newx[e] = level
                q = qother[a]
                used[q] += c * level
                pcnt[q] -= c
                if pcnt[q] > 0:
                    lev[q] = (core_cap[h] - used[q]) / pcnt[q]
                elif lev[q] < np.inf:
                    lev[q] = np.inf  # nothing left on it
                    n_act -= 1
            pcnt[p] = 0
        # rate changes; next event
        dt = stop_time - t
        if first:   # every flow is live: set the rates in the order's positions
            for m in range(n):
                f = order[m]
                r = newx[pair[m]]
                if rate[f] != r:
                    if rate[f] > 0.0:
                        n_seg = emit(record, f, core[f], seg_start[f], t, rate[f],
                                     seg_flow, seg_core, seg_t0, seg_t1, seg_rate, n_seg)
                    seg_start[f] = t
                rate[f] = r
                if r > 0.0 and pinned[f] < 0:
                    pinned[f] = core[f]
        for u in range(n_lp):
            e = lp[u]
            if not first and record and newx[e] != x[e]:
                for a in range(phead[e], pptr[e + 1]):
                    f = order[pflow[a]]
                    if x[e] > 0.0:
                        n_seg = emit(record, f, core[f], seg_start[f], t, x[e],
                                     seg_flow, seg_core, seg_t0, seg_t1, seg_rate, n_seg)
                    seg_start[f] = t
            x[e] = newx[e]
            if x[e] > 0.0:
                d = (hrem[e] - served[e]) / x[e]
                if d < dt:
                    dt = d
        first = False
        if dt == np.inf:
            reason = _STUCK
            break
        events += 1
        t_new, dt = next_event(t, dt, stop_time, core_cap)
        coflow_done = False
        k_lp = 0
        for u in range(n_lp):
            e = lp[u]
            frozen[e] = False
            if x[e] > 0.0:
                served[e] += x[e] * dt
                while hrem[e] - served[e] <= hthr[e]:
                    m = pflow[phead[e]]
                    f = order[m]
                    phead[e] += 1
                    cnt[e] -= 1
                    k = coflow[f]
                    sent[k] += rem[f]
                    rem[f] = 0.0
                    done[f] = True
                    flow_completion[f] = t_new
                    n_seg = emit(record, f, core[f], seg_start[f], t_new, x[e], seg_flow,
                                 seg_core, seg_t0, seg_t1, seg_rate, n_seg)
                    rate[f] = 0.0
                    left[k] -= 1
                    if left[k] == 0:
                        coflow_completion[k] = t_new
                        coflow_done = True
                    if cnt[e] == 0:
                        break
                    m = pflow[phead[e]]
                    hrem[e] = rem0[m]
                    hthr[e] = EPS_BYTES + 1e-12 * size[order[m]]
            if cnt[e] > 0:
                lp[k_lp] = e
                k_lp += 1
                pcnt[pin[e]] += cnt[e]
                pcnt[pout[e]] += cnt[e]
        n_lp = k_lp
        t = t_new
        if coflow_done:
            reason = _COFLOW_DONE
            break
        if t >= stop_time:
            reason = _STOP_TIME
            break
    # bring rem, rate and sent of the flows still sending up to date (in the order's
    # positions: flow indices ascend, the accesses stream)
    for m in range(n):
        f = order[m]
        if not done[f]:
            e = pair[m]
            r = rem0[m] - served[e]
            if r < 0.0:
                r = 0.0
            if served[e] > 0.0 and r == rem[f] and r == size[f]:
                r = np.nextafter(rem[f], 0.0)
            sent[coflow[f]] += rem[f] - r
            rem[f] = r
            rate[f] = x[e]
    return t, reason, n_seg, events


@dataclass(frozen=True)
class StartPoint:
    """Where a run starts when it does not start at time 0 with nothing sent: a network
    restarted mid-run on what is left of it (the joint simulator's residual network,
    ``emulate.sim.jobsim``).

    Attributes
    ----------
    time : float
        The clock at the start; coflows released by then are released at the start.
    remaining : float array per flow, optional
        Bytes each flow still has to send, each in (0, its size] (default: its size).
    sent : float array per coflow, optional
        Bytes each coflow sent before the start (default: none); the State and the plan's
        byte limits count them.
    pinned : int array per flow, optional
        The core each flow has sent on, -1 if none (default: none); no flow migrates.
    """

    time: float = 0.0
    remaining: np.ndarray | None = None
    sent: np.ndarray | None = None
    pinned: np.ndarray | None = None


class Simulator:
    """One simulation run: a workload, a policy and the evolving state.

    Use :func:`simulate` unless you need to step through the run: :meth:`start`, then
    :meth:`step` (optionally ``until`` a time) while not :attr:`finished`, then
    :meth:`result`. Coflows listed in ``gated`` are not released until :meth:`open` is
    called for them (a shuffle whose producing compute stage has not finished): this is
    how an outer loop (compute tasks, multi-stage jobs) drives the network. A run starts
    at time 0 with nothing sent unless ``start_point`` (:class:`StartPoint`) says
    otherwise. Releases, readiness and completions of coflows are
    :attr:`lifecycle` (:class:`controller.lifecycle.CoflowLifecycle`).
    """

    def __init__(self, workload: Workload, policy: Policy, *, segments: bool = False,
                 progress=None, incremental: bool = True, gated=None,
                 start_point: StartPoint | None = None):
        self.workload = workload
        self.policy = policy
        self.record = segments
        self.incremental = incremental  # False: always rescan (a cross-check of matching)
        self.progress = progress
        a = self.arrays = workload.arrays
        nf, nc = a.n_flows, a.n_coflows
        self.core_cap = np.array(workload.fabric.rates, dtype=np.float64) / 8.0
        self.lifecycle = CoflowLifecycle(a, gated)
        self.rem = a.size.copy()
        self.rate = np.zeros(nf)
        self.done = np.zeros(nf, dtype=np.bool_)
        self.pinned = np.full(nf, -1, dtype=np.int64)
        self.flow_completion = np.full(nf, np.nan)
        self.sent = np.zeros(nc)
        self.seg_start = np.zeros(nf)
        cap = max(1024, 4 * nf)
        self._seg = [np.zeros(cap, dtype=np.int64), np.zeros(cap, dtype=np.int64),
                     np.zeros(cap), np.zeros(cap), np.zeros(cap)]
        self.n_seg = 0
        self.t = 0.0
        self.events = 0
        self.policy_calls = 0
        self._pair_map = None  # scratch of emulate.sim.matching.pair_lists
        self._pos = np.full(nf, -1, dtype=np.int64)  # position of each flow in the order
        self._order = np.zeros(0, dtype=np.int64)  # the current plan's order
        # the matching's pair lists kept for the next plan when it serves the same
        # coflows in the same order (see _same_order): (coflow order, cores, pairs)
        self._kept = None
        self._fit = None  # first_pass of the order _caps_fit last checked
        self._no_cap = None
        self._cap = None  # bytes/s caps of the current order's flows (others stale)
        if start_point is not None:
            self._start_from(start_point)

    def _start_from(self, p: StartPoint) -> None:
        a = self.arrays
        self.t = float(p.time)
        for name, value, into, n in (("remaining", p.remaining, self.rem, a.n_flows),
                                     ("sent", p.sent, self.sent, a.n_coflows),
                                     ("pinned", p.pinned, self.pinned, a.n_flows)):
            if value is None:
                continue
            value = np.asarray(value)
            if value.shape != (n,):
                raise ValueError(f"StartPoint.{name} has shape {value.shape}; the workload "
                                 f"has {n} {'coflows' if name == 'sent' else 'flows'}")
            into[:] = value
        if not np.all((self.rem > 0) & (self.rem <= a.size)):
            bad = int(np.flatnonzero(~((self.rem > 0) & (self.rem <= a.size)))[0])
            raise ValueError(f"StartPoint.remaining[{bad}] = {self.rem[bad]!r}: must be in "
                             f"(0, {a.size[bad]!r}], the flow's size")

    # ---------------------------------------------------------------- bookkeeping
    def _make_ready(self) -> bool:
        """Release what is due; mark ready coflows; complete empty ones. True if any."""
        life = self.lifecycle
        life.release_due(self.t)
        return life.make_ready(self.t, self.done)

    def state(self, event: str) -> State:
        return self.lifecycle.state(self.t, event, self.workload, self.rem, self.sent,
                                    self.done, self.pinned)

    # ---------------------------------------------------------------- main loop
    def run(self) -> RunResult:
        """Simulate to the end; returns the run's record."""
        self.start()
        while not self.finished:
            self.step()
        return self.result()

    @property
    def finished(self) -> bool:
        return self.lifecycle.finished

    def start(self) -> None:
        """The start (time 0, or the :class:`StartPoint`'s): the policy's ``start``,
        releases due by then."""
        self._wall = _time.perf_counter()
        self.policy.start(self.workload)
        self._make_ready()
        self._event = "start"

    def open(self, k: int) -> None:
        """Release gated coflow ``k`` now (or at its release time if that is later)."""
        if self.lifecycle.open(k) and self._make_ready():
            self._event = "ready"

    def step(self, until: float = np.inf) -> str:
        """Ask the policy for a plan and apply it until the next event or ``until``.

        Returns the event that ended the step (``"completion"``, ``"ready"``,
        ``"byte_limit"``, ``"horizon"``, or ``"until"``).
        """
        a = self.arrays
        st = self.state(self._event)
        plan = self.policy.plan(st)
        self.policy_calls += 1
        plan.validate(st)
        matching = (plan.sharing == "priority" and plan.rate_cap is None
                    and self.incremental and not plan.rates_fixed)
        kept = self._same_order(plan) if matching else None
        if kept is None:
            self._kept = None
            order = np.ascontiguousarray(plan.flow_order(st), dtype=np.int64)
        else:
            order = self._order  # done flows stay in it, behind their pairs' heads
        has_cap = False
        if plan.rate_cap is None:
            if self._no_cap is None:
                self._no_cap = np.full(a.n_flows, np.inf)
            cap = self._no_cap
        else:
            if self._cap is None:
                self._cap = np.empty(a.n_flows)
            cap = self._cap
            has_cap = byte_caps(order, np.asarray(plan.rate_cap, dtype=np.float64), cap)
        limit = (np.full(a.n_coflows, np.inf) if plan.byte_limit is None
                 else plan.byte_limit.astype(np.float64))
        core = np.ascontiguousarray(plan.core, dtype=np.int64)
        life = self.lifecycle
        stop = min(life.next_release_time, plan.horizon, until)
        if stop <= self.t:
            raise PlanError(f"plan horizon {plan.horizon} is not after now ({self.t})")
        # positions in the order; rates carry over between calls only for flows still
        # in it (only flows of the previous order can be sending)
        pos = self._pos
        if kept is None:
            prev = self._order
            running = prev[self.rate[prev] > 0]
            pos[prev] = -1
            pos[order] = np.arange(len(order))
            self._order = order
            self._close_segments(np.sort(running[pos[running] < 0]))
        has_limit = bool(np.isfinite(limit).any())
        before = int(life.done.sum())
        if matching:
            reason = self._advance_matching(stop, order, pos, core, limit, has_limit,
                                            plan, kept)
        elif (plan.sharing == "fair" and not has_cap and not has_limit and self.incremental
              and not plan.rates_fixed):
            reason = self._advance_fair(stop, order, core)
        elif (plan.sharing == "priority" and not has_limit and self.incremental
              and not plan.rates_fixed and self._caps_fit(order, core, cap)):
            reason = self._advance_capped(stop, order, core, cap, plan.backfill)
        else:
            reason = self._advance_scan(stop, order, pos, core, cap, plan, has_cap, limit,
                                        has_limit)
        _drop_done(order, self.done, life.eligible)
        if reason == _STUCK:
            stuck = [self.workload.coflows[k].id for k in np.flatnonzero(~life.done)][:5]
            raise PlanError(
                f"policy {self.policy.name!r} lets nothing send at t={self.t:g} while "
                f"coflows {stuck} are unfinished and no event is pending")
        for k in np.flatnonzero((life.left == 0) & ~life.done & life.ready):
            life.complete(k, self.t)
        event = {_COFLOW_DONE: "completion", _BYTE_LIMIT: "byte_limit",
                 _STOP_TIME: "until" if self.t >= until else "horizon"}[reason]
        released = int(life.released.sum())
        if self._make_ready():
            event = "ready"
        elif int(life.released.sum()) > released:
            event = "release"  # released, but waiting for predecessors
        if self.progress is not None:
            self.progress.update(int(life.done.sum()) - before)
        self._event = event
        return event

    def result(self) -> RunResult:
        """The run's record (call when :attr:`finished`)."""
        self._close_segments(np.flatnonzero(self.rate > 0))
        segs = None
        if self.record:
            n = self.n_seg
            f, h, t0, t1, r = (s[:n] for s in self._seg)
            segs = Segments(f.copy(), h.copy(), t0.copy(), t1.copy(), r * 8.0)
        return RunResult(workload=self.workload, policy=policy_label(self.policy),
                         engine="sim",
                         flow_completion=self.flow_completion,
                         coflow_completion=self.lifecycle.completion, segments=segs,
                         wall_seconds=_time.perf_counter() - self._wall, events=self.events,
                         extra={"policy_calls": self.policy_calls})

    def _grow_segments(self) -> None:
        self._seg = [np.concatenate([s, np.zeros_like(s)]) for s in self._seg]

    def _ran(self, t, reason, events) -> bool:
        """Take a compiled run's return; True if it stopped only because the segment
        record was full (it is grown now: run again)."""
        self.t = t
        self.events += events
        if reason != _SEG_FULL:
            return False
        self._grow_segments()
        return True

    def _same_order(self, plan):
        """The kept pair lists if ``plan`` (a matching plan) serves exactly the flows of
        the last matching plan that are not done, in the same order, on the same cores;
        else None.

        Then the flow order is the last one without its done flows, and the pair lists
        the matching left (each pair's head is its first flow not done, each port's pairs
        sorted by head) are those ``pair_lists`` would build for it: the engine keeps
        them instead of rebuilding both in O(flows). With releases at 0 this holds at
        nearly every completion under static orders (fifo, scf, ...) and often under
        sincronia's BSSI."""
        kept = self._kept
        if kept is None or plan.coflow_order is None:
            return None
        co, core, pairs = kept
        life = self.lifecycle
        new = np.asarray(plan.coflow_order)
        old = co[~life.done[co]]
        if old.shape != new.shape or not np.array_equal(old, new):
            return None
        order = self._order
        if np.count_nonzero(life.eligible) != _count_live(order, self.done):
            return None   # coflows became ready: their flows join the order
        if (self.arrays.cores > 1 and core is not plan.core  # one core: all 0 (validated)
                and not _same_cores(order, self.done, core, plan.core)):
            return None
        return pairs

    def _advance_matching(self, stop, order, pos, core, limit, has_limit, plan,
                          kept) -> int:
        """Priority without caps: the incremental greedy matching (emulate.sim.matching)."""
        a = self.arrays
        life = self.lifecycle
        nport = a.cores * a.ports
        pairs = kept if kept is not None else self._pairs(order, core)
        if plan.coflow_order is not None:
            keep_core = core if core is plan.core and not core.flags.writeable else core.copy()
            self._kept = (np.array(plan.coflow_order, dtype=np.int64), keep_core, pairs)
        owner = np.full(2 * nport, -1, dtype=np.int64)
        while True:
            # (every sending flow is in the order: step stopped the others)
            prev_running = np.flatnonzero(self.rate > 0)
            t, reason, self.n_seg, ev = run_matching(
                self.t, stop, order, pos, a.src, a.dst, a.coflow, a.size, core,
                self.core_cap, self.rem, self.rate, self.done, self.pinned,
                self.flow_completion, life.left, self.sent, limit, has_limit,
                life.completion, self.record, self.seg_start, *self._seg, self.n_seg,
                pairs, owner, prev_running)
            if not self._ran(t, reason, ev):
                return reason

    def _advance_fair(self, stop, order, core) -> int:
        """Fair sharing without caps: progressive filling over (core, src, dst) pairs."""
        a = self.arrays
        life = self.lifecycle
        while True:
            live = order[~self.done[order]]
            pairs = self._pairs(live, core)
            t, reason, self.n_seg, ev = _run_fair(
                self.t, stop, live, a.src, a.dst, a.coflow, a.size, core, self.core_cap,
                self.rem, self.rate, self.done, self.pinned, self.flow_completion, life.left,
                self.sent, life.completion, self.record, self.seg_start, *self._seg,
                self.n_seg, pairs)
            if not self._ran(t, reason, ev):
                return reason

    def _pairs(self, order, core):
        """:func:`emulate.sim.matching.pair_lists` of ``order``."""
        a = self.arrays
        nport = a.cores * a.ports
        if self._pair_map is None:
            self._pair_map = np.full(nport * a.ports, -1, dtype=np.int64)
        return pair_lists(order, a.src, a.dst, core, a.ports, nport, self._pair_map)

    def _caps_fit(self, order, core, cap) -> bool:
        """Whether the plan's caps fit the links (see emulate.sim.capped)."""
        a = self.arrays
        c, R, fits = first_pass(order, a.src, a.dst, core, cap, self.core_cap, a.ports)
        self._fit = (c, R) if fits else None  # _advance_capped starts from it
        return bool(fits)

    def _advance_capped(self, stop, order, core, cap, backfill) -> int:
        """Priority with caps that fit: the first pass fixed, the backfill repaired."""
        a = self.arrays
        life = self.lifecycle
        fit, self._fit = self._fit, None
        while True:
            live = order[~self.done[order]]
            if fit is not None and len(live) == len(order):  # _caps_fit's, of this order
                c, R = fit
            else:
                c, R, _ = first_pass(live, a.src, a.dst, core, cap, self.core_cap, a.ports)
            fit = None
            pairs = self._pairs(live, core)
            t, reason, self.n_seg, ev = run_capped(
                self.t, stop, live, a.src, a.dst, a.coflow, a.size, core, c, R, backfill,
                self.core_cap, self.rem, self.rate, self.done, self.pinned,
                self.flow_completion, life.left, self.sent, life.completion,
                self.record, self.seg_start, *self._seg, self.n_seg, pairs)
            if not self._ran(t, reason, ev):
                return reason

    def _advance_scan(self, stop, order, pos, core, cap, plan, has_cap, limit,
                      has_limit) -> int:
        """Fair sharing or rate caps: rates recomputed by a scan at every flow completion."""
        a = self.arrays
        life = self.lifecycle
        running = np.sort(order[self.rate[order] > 0])
        n_running = len(running)
        running = np.concatenate([running, np.zeros(len(order), dtype=np.int64)])
        nport = a.cores * a.ports
        tot_in = np.bincount(core[order] * a.ports + a.src[order],
                             minlength=nport).reshape(a.cores, a.ports)
        tot_out = np.bincount(core[order] * a.ports + a.dst[order],
                              minlength=nport).reshape(a.cores, a.ports)
        nz = np.array([np.count_nonzero(tot_in), np.count_nonzero(tot_out)])
        head = np.zeros(1, dtype=np.int64)
        while True:
            t, reason, self.n_seg, n_running, ev = _run(
                self.t, stop, order, pos, a.src, a.dst, a.coflow, a.size, core, cap,
                plan.sharing == "fair", plan.backfill, has_cap, self.core_cap, self.rem,
                self.rate, self.done, self.pinned, self.flow_completion, life.left,
                self.sent, limit, has_limit, life.completion, self.record,
                self.seg_start, *self._seg, self.n_seg, tot_in, tot_out, nz, running,
                n_running, head, plan.rates_fixed)
            if not self._ran(t, reason, ev):
                return reason

    def _close_segments(self, idx: np.ndarray) -> None:
        """End the current segments of flows ``idx`` now (they stop sending)."""
        if not idx.size:
            return
        if self.record:
            need = self.n_seg + idx.size
            while need > len(self._seg[0]):
                self._grow_segments()
            sl = slice(self.n_seg, need)
            self._seg[0][sl] = idx
            self._seg[1][sl] = self.pinned[idx]
            self._seg[2][sl] = self.seg_start[idx]
            self._seg[3][sl] = self.t
            self._seg[4][sl] = self.rate[idx]
            self.n_seg = need
        self.rate[idx] = 0.0
        self.seg_start[idx] = self.t


def simulate(workload: Workload, policy: Policy, *, segments: bool = False,
             progress: bool = False) -> RunResult:
    """Run ``workload`` under ``policy`` in the flow-level simulator.

    Parameters
    ----------
    workload : Workload
    policy : Policy
        A fresh policy instance (``controller.policies.get_policy(name)``).
    segments : bool
        Record every constant-rate interval of every flow (needed by ``--segments``, the
        verifier and the Gantt chart; costs memory on big traces).
    progress : bool
        Show a progress bar (coflows completed).

    Returns
    -------
    RunResult
    """
    if progress:
        from tqdm import tqdm
        with tqdm(total=len(workload.coflows), unit="coflow", desc=policy.name or "sim",
                  leave=False, disable=None, delay=2.0) as bar:
            return Simulator(workload, policy, segments=segments, progress=bar).run()
    return Simulator(workload, policy, segments=segments).run()
