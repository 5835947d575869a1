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
policy is called from Python only at coflow-level events, a few per coflow.

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

from controller.indexing import no_wraparound
from controller.lifecycle import CoflowLifecycle
from controller.model import Workload
from controller.plan import PlanError, State
from controller.policies.base import Policy, policy_label
from controller.rates import byte_caps, fair_rates, priority_rates
from emulate.io.records import RunResult, Segments
from emulate.sim import fairshare
from emulate.sim.capped import (CappedEngine, capped_flows, coflow_flows, heaviest_increasing,
                                relabel, spread_labels)
from emulate.sim.matching import (BYTE_LIMIT as _BYTE_LIMIT, COFLOW_DONE as _COFLOW_DONE,
                                  SEG_FULL as _SEG_FULL, STOP_TIME as _STOP_TIME,
                                  STUCK as _STUCK, advance_flow, byte_limit_dt, emit,
                                  next_event, NO_KEY, drop_passed, matching_pairs, rekey_pairs,
                                  run_matching, set_rate)

# the kernels never index with a negative number
no_wraparound(__name__)


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


#: no pair of the kept lists has a new head key (see :func:`rekey_pairs`)
_NO_CHANGE = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))


@numba.njit(cache=True)
def _same_order_cores(order, done, of_order, new_core):
    """Whether every flow ``order[i]`` not done has core ``of_order[i]`` in ``new_core``."""
    for i in range(order.shape[0]):
        f = order[i]
        if not done[f] and of_order[i] != new_core[f]:
            return False
    return True


def kept_cores(core: np.ndarray, order: np.ndarray, cores: int):
    """What a kept engine state remembers of the cores it was built with, for
    :func:`same_cores`: nothing on one core (every flow on core 0, validated), else the
    array and the cores of ``order``'s flows, O(len(order)). A policy may reuse one array
    for its plans' cores, writing each plan's in place (the least-loaded rule's buffer,
    :func:`controller.cores.least_loaded_cores`): the array itself would not tell."""
    return None if cores == 1 else (core, core[order])


def same_cores(kept, order, done, new_core) -> bool:
    """Whether every flow of ``order`` (the one :func:`kept_cores` saw) not done has the
    same core in ``new_core`` as then: the same read-only array always does (a policy
    does not hand out a read-only view of an array it writes)."""
    if kept is None:
        return True
    core, of_order = kept
    if new_core is core and not core.flags.writeable:
        return True
    return _same_order_cores(order, done, of_order, new_core)


@numba.njit(cache=True)
def _drop_done(order, done, eligible):
    """The flows of ``order`` that are done are no longer eligible."""
    for f in order:
        if done[f]:
            eligible[f] = False


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
        self._pair_of = None  # each flow's pair in the matching's pair lists
        # the matching's rank keys label[coflow] * W + (position inside the coflow), the
        # labels of the last matching plan's coflows (None: it ranks flows by position)
        self._label = None
        self._width = 1 << int(np.diff(a.coflow_ptr).max(initial=0)).bit_length()
        self._pos = np.full(nf, -1, dtype=np.int64)  # position of each flow in the order
        self._order = np.zeros(0, dtype=np.int64)  # the current plan's order
        self._left_at_order = 0  # flows left (lifecycle.left's sum) when it was set
        # the matching's pair lists kept for the next plan when it serves the same
        # coflows in the same order (see _same_order) or moves some (_reorder): (coflow
        # order, kept_cores, pairs, [matching, ports to repair (port, after key), their
        # count])
        self._kept = None
        self._rekeyed = _NO_CHANGE  # the pairs _reorder moved, and their old head keys
        # the fair-sharing kernel's state, kept likewise: (kept_cores, state)
        self._fair = None
        self._through = False  # run(): keep plans through completions if they say so
        self._every_coflow = np.ones(nc, dtype=np.bool_)
        self._with_successors = np.array([len(s) > 0 for s in a.succs], dtype=np.bool_)
        self._stops = self._every_coflow
        self._capped = None  # the capped engine (emulate.sim.capped), built on first use
        self._changed = None  # flows whose remaining changed in the last step, if known
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
        st = self.lifecycle.state(self.t, event, self.workload, self.rem, self.sent,
                                  self.done, self.pinned)
        st.changed = self._changed
        return st

    # ---------------------------------------------------------------- main loop
    def run(self) -> RunResult:
        """Simulate to the end; returns the run's record.

        Nothing watches the events in between, so a plan that holds through coflow
        completions (``Plan.keep_at_completion``) is kept through them: the policy is
        asked again when coflows become ready, at a byte limit or at the horizon, and
        after the completion of a coflow with successors."""
        self._through = True
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
        life = self.lifecycle
        stop = min(life.next_release_time, plan.horizon, until)
        if stop <= self.t:
            raise PlanError(f"plan horizon {plan.horizon} is not after now ({self.t})")
        before = int(life.done.sum())
        reason = self._advance_capped(plan, st, stop)
        if reason is None:
            reason = self._advance_other(plan, st, stop)
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

    def _advance_other(self, plan, st, stop) -> int:
        """Apply ``plan`` with every engine but the capped one until the next event."""
        a = self.arrays
        if self._capped is not None:
            self._capped.invalidate()
        self._changed = None
        matching = (plan.sharing == "priority" and plan.rate_cap is None
                    and self.incremental and not plan.rates_fixed)
        fair = (plan.sharing == "fair" and plan.rate_cap is None and plan.byte_limit is None
                and self.incremental and not plan.rates_fixed)
        kept = (self._same_order(plan) if matching else
                self._same_fair(plan) if fair else None)
        order = None
        if kept is None and matching:
            kept, order = self._reorder(plan, st)
        if kept is None:
            self._kept = self._fair = None
            order = np.ascontiguousarray(plan.flow_order(st), dtype=np.int64)
        elif order is None:
            order = self._order  # done flows stay in it (behind their pairs' heads)
        else:
            self._order = order
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
        # positions in the order; rates carry over between calls only for flows still
        # in it (only flows of the previous order can be sending)
        pos = self._pos
        if kept is None:
            prev = self._order
            running = prev[self.rate[prev] > 0]
            pos[prev] = -1
            pos[order] = np.arange(len(order))
            self._order = order
            self._left_at_order = int(life.left.sum())
            self._close_segments(np.sort(running[pos[running] < 0]))
        has_limit = bool(np.isfinite(limit).any())
        self._set_stops(plan)
        if matching:
            reason = self._advance_matching(stop, order, pos, core, limit, has_limit,
                                            plan, kept)
        elif fair and kept is not None:
            reason = self._advance_fair(stop, core)
        elif (plan.sharing == "fair" and not has_cap and not has_limit and self.incremental
              and not plan.rates_fixed):
            fair = True
            reason = self._advance_fair(stop, core, order)
        else:
            reason = self._advance_scan(stop, order, pos, core, cap, plan, has_cap, limit,
                                        has_limit)
        if not fair and not matching:
            # (the fair-sharing kernel drops its finished flows itself, the matching too)
            _drop_done(order, self.done, life.eligible)
        return reason

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
        sorted by head) are those ``matching_pairs`` would build for it: the engine keeps
        them instead of rebuilding both in O(flows). With releases at 0 this holds at
        nearly every completion under static orders (fifo, scf, ...) and often under
        sincronia's BSSI."""
        kept = self._kept
        if kept is None or plan.coflow_order is None:
            return None
        co, cores, pairs, _ = kept
        life = self.lifecycle
        new = plan.coflow_order
        old = co[~life.done[co]]
        if old.shape != new.shape or not np.array_equal(old, new):
            return None
        order = self._order
        if not self._no_new_flows():
            return None   # coflows became ready: their flows join the order
        if not same_cores(cores, order, self.done, plan.core):
            return None
        return pairs

    def _no_new_flows(self) -> bool:
        """Whether the eligible flows are the current order's flows not done (no coflow
        became ready since the order was set), counted per coflow: the order held the
        eligible flows then, and only its flows have finished since."""
        life = self.lifecycle
        live = len(self._order) - (self._left_at_order - int(life.left.sum()))
        return life.n_eligible == live

    def _set_stops(self, plan, caps_fit: bool = True) -> None:
        """The completions that end the incremental kernels' runs under ``plan``: only
        those of coflows with successors if the plan is kept through the others, which
        a plan whose caps do not fit is not (a completion frees what held a flow below
        its cap: the plan, applied again, gives it more)."""
        keep = self._through and plan.keep_at_completion and caps_fit
        self._stops = self._with_successors if keep else self._every_coflow

    def _advance_matching(self, stop, order, pos, core, limit, has_limit, plan,
                          kept) -> int:
        """Priority without caps: the incremental greedy matching (emulate.sim.matching)."""
        a = self.arrays
        life = self.lifecycle
        nport = a.cores * a.ports
        # the matching the last run left, with the ports it left to repair, goes with
        # the kept pair lists
        match = self._kept[3] if kept is not None else None
        pairs = kept if kept is not None else self._pairs(order, core, plan.coflow_order)
        if match is None:
            match = [np.full(2 * nport, -1, dtype=np.int64), np.empty(4 * nport, np.int64),
                     np.empty(4 * nport, np.int64), -1]  # (n_pend -1: build it)
        cores = self._kept[1] if kept is not None else None  # (still the plan's)
        self._kept = None
        if plan.coflow_order is not None:
            if kept is None:
                cores = kept_cores(core, order, a.cores)
            self._kept = (plan.coflow_order.copy(), cores, pairs, match)
        owner, pend_port, pend_after, n_pend = match
        changed, changed_old = self._rekeyed
        self._rekeyed = _NO_CHANGE
        head = pairs[3].copy()  # a pair's flows between these and its new head finish
        while True:
            if n_pend < 0:
                # every sending flow is in the order (_advance_other stopped the others):
                # found there, not in a pass over every flow of the workload at every plan
                prev_running = np.sort(order[self.rate[order] > 0])
            else:  # the matching's flows are the sending ones
                prev_running = np.sort(owner[:nport][owner[:nport] >= 0])
            t, reason, self.n_seg, ev, n_pend = run_matching(
                self.t, stop, pos, a.src, a.dst, a.coflow, a.size, core,
                self.core_cap, self.rem, self.rate, self.done, self.pinned,
                self.flow_completion, life.left, self.sent, limit, has_limit,
                life.completion, self._stops, self.record, self.seg_start, *self._seg,
                self.n_seg, pairs, owner, prev_running, n_pend >= 0, changed, changed_old,
                pend_port, pend_after, max(n_pend, 0))
            match[3] = n_pend
            changed, changed_old = _NO_CHANGE
            if not self._ran(t, reason, ev):
                drop_passed(head, pairs, life.eligible)
                return reason

    def _same_fair(self, plan):
        """The kept fair-sharing state if ``plan`` shares the flows of the last fair plan
        that are not done, on the same cores (no flow became eligible since); else None.

        A fair plan changes only when flows join (a release, a coflow becoming ready) or,
        on several cores, when flows not yet started move: at every coflow completion
        in between the engine goes on with its state instead of building it again."""
        if self._fair is None:
            return None
        cores, state = self._fair
        if self.lifecycle.n_eligible != fairshare.live_flows(state):
            return None
        if not same_cores(cores, self._order, self.done, plan.core):
            return None
        return state

    def _advance_fair(self, stop, core, order=None) -> int:
        """Fair sharing without caps (emulate.sim.fairshare): a state built for the flows
        of ``order`` on ``core``, or the kept one (whose flows not done ``core`` puts on
        the cores it was built with)."""
        a = self.arrays
        life = self.lifecycle
        if order is not None:
            live = order[~self.done[order]]
            while self.record and self.n_seg + len(live) + 1 > len(self._seg[0]):
                self._grow_segments()
            state, self.n_seg = fairshare.build(
                self.t, live, a.src, a.dst, a.coflow, a.size, core, a.ports, self.core_cap,
                self.rem, self.rate, self.pinned, self.record, self.seg_start, *self._seg,
                self.n_seg, a.pair_index[1], self._map())
            self._fair = (kept_cores(core, order, a.cores), state)
        state = self._fair[1]
        while True:
            t, reason, self.n_seg, ev = fairshare.run(
                state, self.t, stop, a.coflow, a.size, core, self.core_cap, self.rem,
                self.rate, self.done, self.pinned, self.flow_completion, life.left,
                self.sent, life.completion, self._stops, life.eligible, self.record,
                self.seg_start, *self._seg, self.n_seg)
            if not self._ran(t, reason, ev):
                return reason

    def _map(self) -> np.ndarray:
        """The scratch of :func:`emulate.sim.matching.pair_lists` (all -1)."""
        a = self.arrays
        if self._pair_map is None:
            self._pair_map = np.full(a.cores * len(a.pair_index[0]), -1, dtype=np.int64)
        return self._pair_map

    def _pairs(self, order, core, coflow_order):
        """:func:`emulate.sim.matching.matching_pairs` of ``order``, after setting the
        rank keys of its flows (:meth:`_rank_keys`)."""
        a = self.arrays
        self._rank_keys(order, coflow_order)
        if self._pair_of is None:
            self._pair_of = np.full(a.n_flows, -1, dtype=np.int64)
        return matching_pairs(order, self._pos, a.src, a.dst, core, a.pair_index[1],
                              a.ports, a.cores * a.ports, self._map(), self._pair_of)

    def _rank_keys(self, order, coflow_order) -> None:
        """Rank keys for the flows of ``order`` (``self._pos``, their positions until
        now): ``label[k] * W + r`` for the ``r``-th flow of coflow ``k`` in ``order``,
        the labels spread over the key space along ``coflow_order``, when ``order`` is
        that coflow order's flows coflow after coflow. Then a later plan that only moves
        some coflows moves their flows' keys alone (:meth:`_reorder`)."""
        self._label = None
        if coflow_order is None or not len(order):
            return
        a = self.arrays
        label = spread_labels(a.n_coflows, coflow_order, NO_KEY // self._width)
        c = a.coflow[order]
        starts = np.flatnonzero(np.r_[True, c[1:] != c[:-1]])
        run_label = label[c[starts]]
        if run_label[0] < 0 or np.any(np.diff(run_label) <= 0):
            return  # not coflow after coflow along coflow_order: keys stay positions
        within = np.arange(len(order)) - np.repeat(starts, np.diff(np.r_[starts, len(order)]))
        self._pos[order] = label[c] * self._width + within
        self._label = label

    def _reorder(self, plan, st):
        """``(pairs, order)``: the kept pair lists with the flows of the coflows ``plan``
        moves rekeyed, and its flow order, if ``plan`` (a matching plan) orders the same
        coflows as the last one, with the same flows left on the same cores; else
        ``(None, None)``.

        The coflows that keep their place are a heaviest (by flows left) increasing
        subsequence of the old labels; the others get labels between their kept
        neighbours (``emulate.sim.capped`` does the same for its pairs), so only their
        flows move in the pair lists: under ``aalo`` a plan moves the coflows that
        crossed a queue's threshold."""
        kept = self._kept
        if kept is None or self._label is None or plan.coflow_order is None:
            return None, None
        co, cores, pairs, _ = kept
        a = self.arrays
        life = self.lifecycle
        new = plan.coflow_order
        old = co[~life.done[co]]
        if old.shape != new.shape or not np.array_equal(np.sort(old), np.sort(new)):
            return None, None
        if not self._no_new_flows():
            return None, None  # coflows became ready: their flows join the order
        if not same_cores(cores, self._order, self.done, plan.core):
            return None, None
        label = self._label
        keep = heaviest_increasing(label[new], np.maximum(life.left[new], 1).astype(np.float64))
        if not relabel(new, keep, label, NO_KEY // self._width):
            return None, None
        moved = coflow_flows(new[~keep], a.coflow_ptr, a.coflow_flows, life.eligible)
        moved = moved[~self.done[moved]]
        pos = self._pos
        self._rekeyed = rekey_pairs(
            moved, label[a.coflow[moved]] * self._width + (pos[moved] & (self._width - 1)),
            pos, pairs)
        return pairs, self._order  # (the same flows: their order is in the keys now)

    def _advance_capped(self, plan, st, stop):
        """Priority with caps: the capped engine (emulate.sim.capped), whose pairs
        outlive the plan. None if the plan is not one (no caps, byte limits, fixed rates
        with backfill) or its caps do not fit the links and it backfills: another engine
        takes it.

        Without backfill the engine's first pass is the rule whether the caps fit or
        not, so it takes those plans in O(log flows) per completion instead of the
        rescan's pass over the flows sending. With fixed rates every capped flow sends
        at what the first pass gives it until the next plan (Sincronia's offline
        allocation on FB2010 with releases at 0: 428 s -> 48 s, docs/simulator-speed.md
        round 11); otherwise a completion on a port where a flow is held below its cap
        applies the plan again (CoflowSim's FIFO on FB2010: 519 s -> 31 s, round 12)."""
        sparse = getattr(plan, "cap_flows", None) is not None  # a SparsePlan's caps
        if (plan.sharing != "priority" or not self.incremental
                or (plan.rates_fixed and plan.backfill)
                or (not sparse and plan.rate_cap is None)
                or (plan.byte_limit is not None and np.isfinite(plan.byte_limit).any())):
            return None
        a = self.arrays
        life = self.lifecycle
        co = plan.coflow_order
        if co is not None:
            # a plan kept through completions still lists the coflows done since: they
            # have no flow left to rank
            co = co[~life.done[co]]
            active = life.ready & ~life.done
            if (len(co) != np.count_nonzero(active) or not active[co].all()
                    or len(np.unique(co)) != len(co)):
                co = None   # not every eligible flow is in it: rank flows one by one
        order = None
        if co is None:
            order = np.ascontiguousarray(plan.flow_order(st), dtype=np.int64)
        # the plan's own list of the eligible flows (the caps are on its listed flows)
        own = order is not None and order is getattr(plan, "flows", None)
        listed = co is not None or own
        groups = plan.sub_coflows() if own and plan.grouped else None
        if sparse and listed:
            cflows, caps = plan.cap_flows, plan.cap_values / 8.0
            sending = life.eligible[cflows]
            if not sending.all():   # a plan kept through completions: flows done since
                cflows, caps = cflows[sending], caps[sending]
        else:
            ranked = order if co is None else coflow_flows(co, a.coflow_ptr, a.coflow_flows,
                                                            life.eligible)
            cflows, caps = capped_flows(ranked, np.asarray(plan.rate_cap, dtype=np.float64))
        if self._capped is None:
            self._capped = CappedEngine(a, self.core_cap)
        eng = self._capped
        core = np.ascontiguousarray(plan.core, dtype=np.int64)
        if not eng.plan(self.t, order, co, core, cflows, caps, plan.backfill,
                        life.eligible, life.left, self.rate, groups, plan.rates_fixed):
            return None
        self._set_stops(plan, eng.caps_fit)
        # the other engines' bookkeeping: no order of theirs is current
        self._pos[self._order] = -1
        self._kept = self._fair = None
        reason = eng.run(self, stop)
        self._order = eng.sending()
        changed = eng.take_changed()
        life.eligible[changed[self.done[changed]]] = False
        self._changed = changed
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
        Of ``policy.instance(workload)`` (the workload itself unless the policy models a
        reference simulator's instance).
    """
    workload = policy.instance(workload)
    if progress:
        from tqdm import tqdm
        with tqdm(total=len(workload.coflows), unit="coflow", desc=policy.name or "sim",
                  leave=False, disable=None, delay=2.0) as bar:
            return Simulator(workload, policy, segments=segments, progress=bar).run()
    return Simulator(workload, policy, segments=segments).run()
