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
``controller.plan``). At the other events, and whenever a coflow completes or becomes
ready (released and all its predecessors complete), the policy is asked for a new plan.
Release times and precedence are enforced here, whatever the policy says: only flows of
ready coflows are eligible.

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

import numba
import numpy as np

from controller.model import Workload
from controller.plan import Plan, PlanError, State
from controller.policies.base import Policy
from emulate.records import RunResult, Segments

#: bytes below which a flow counts as finished (absorbs floating-point residue)
EPS_BYTES = 1e-6

# reasons the compiled loop returns
_STOP_TIME, _COFLOW_DONE, _BYTE_LIMIT, _SEG_FULL, _STUCK = 0, 1, 2, 3, 4


@numba.njit(cache=True)
def _allocate_priority(order, src, dst, core, cap, done, core_cap, backfill, rate,
                       res_in, res_out):
    for h in range(res_in.shape[0]):
        res_in[h, :] = core_cap[h]
        res_out[h, :] = core_cap[h]
    for n in range(order.shape[0]):
        f = order[n]
        if done[f]:
            rate[f] = 0.0
            continue
        h = core[f]
        r = min(cap[f], res_in[h, src[f]], res_out[h, dst[f]])
        if r < 0.0:
            r = 0.0
        rate[f] = r
        res_in[h, src[f]] -= r
        res_out[h, dst[f]] -= r
    if backfill:
        for n in range(order.shape[0]):
            f = order[n]
            if done[f]:
                continue
            h = core[f]
            r = min(res_in[h, src[f]], res_out[h, dst[f]])
            if r > 0.0:
                rate[f] += r
                res_in[h, src[f]] -= r
                res_out[h, dst[f]] -= r


@numba.njit(cache=True)
def _allocate_fair(order, src, dst, core, cap, done, core_cap, rate, res_in, res_out,
                   cnt_in, cnt_out, frozen):
    """Max-min fair rates (progressive filling), each flow at most its cap."""
    for h in range(res_in.shape[0]):
        res_in[h, :] = core_cap[h]
        res_out[h, :] = core_cap[h]
        cnt_in[h, :] = 0
        cnt_out[h, :] = 0
    live = 0
    for n in range(order.shape[0]):
        f = order[n]
        rate[f] = 0.0
        if done[f] or cap[f] <= 0.0:
            frozen[n] = True
            continue
        frozen[n] = False
        cnt_in[core[f], src[f]] += 1
        cnt_out[core[f], dst[f]] += 1
        live += 1
    while live > 0:
        inc = np.inf
        for n in range(order.shape[0]):
            if frozen[n]:
                continue
            f = order[n]
            h = core[f]
            a = res_in[h, src[f]] / cnt_in[h, src[f]]
            b = res_out[h, dst[f]] / cnt_out[h, dst[f]]
            c = cap[f] - rate[f]
            m = min(a, b, c)
            if m < inc:
                inc = m
        if inc < 0.0:
            inc = 0.0
        for n in range(order.shape[0]):
            if not frozen[n]:
                f = order[n]
                rate[f] += inc
                res_in[core[f], src[f]] -= inc
                res_out[core[f], dst[f]] -= inc
        for n in range(order.shape[0]):
            if frozen[n]:
                continue
            f = order[n]
            h = core[f]
            tol = 1e-12 * core_cap[h]
            if (res_in[h, src[f]] <= tol or res_out[h, dst[f]] <= tol
                    or rate[f] >= cap[f] - 1e-12 * (cap[f] if cap[f] < np.inf else 1.0)):
                frozen[n] = True
                live -= 1
                cnt_in[h, src[f]] -= 1
                cnt_out[h, dst[f]] -= 1


@numba.njit(cache=True)
def _run(t, stop_time, order, src, dst, coflow, size, core, cap, fair, backfill, core_cap,
         rem, rate, done, pinned, flow_completion, left, sent, byte_limit,
         coflow_completion, record, seg_start, seg_flow, seg_core, seg_t0, seg_t1, seg_rate,
         n_seg, res_in, res_out, cnt_in, cnt_out, frozen, old, has_limit, ctot):
    """Advance the fabric from ``t`` until a coflow completes, a byte limit is crossed,
    or ``stop_time``. Returns (t, reason, n_seg, inner_events)."""
    events = 0
    seg_cap = seg_flow.shape[0]
    while True:
        if record and n_seg + order.shape[0] > seg_cap:
            return t, _SEG_FULL, n_seg, events
        for n in range(order.shape[0]):
            old[n] = rate[order[n]]
        if fair:
            _allocate_fair(order, src, dst, core, cap, done, core_cap, rate, res_in,
                           res_out, cnt_in, cnt_out, frozen)
        else:
            _allocate_priority(order, src, dst, core, cap, done, core_cap, backfill, rate,
                               res_in, res_out)
        for n in range(order.shape[0]):
            f = order[n]
            if rate[f] != old[n]:
                if record and old[n] > 0.0:
                    seg_flow[n_seg] = f
                    seg_core[n_seg] = core[f]
                    seg_t0[n_seg] = seg_start[f]
                    seg_t1[n_seg] = t
                    seg_rate[n_seg] = old[n]
                    n_seg += 1
                seg_start[f] = t
            if rate[f] > 0.0 and pinned[f] < 0:
                pinned[f] = core[f]
        # next event
        dt = stop_time - t
        for n in range(order.shape[0]):
            f = order[n]
            if rate[f] > 0.0:
                d = rem[f] / rate[f]
                if d < dt:
                    dt = d
        # coflow byte thresholds: the aggregate rate of each coflow with a limit
        if has_limit:
            for n in range(order.shape[0]):
                f = order[n]
                if byte_limit[coflow[f]] < np.inf:
                    ctot[coflow[f]] += rate[f]
            for n in range(order.shape[0]):
                k = coflow[order[n]]
                if ctot[k] > 0.0:
                    d = (byte_limit[k] - sent[k]) / ctot[k]
                    if d < 0.0:
                        d = 0.0
                    if d < dt:
                        dt = d
                    ctot[k] = 0.0
        if dt == np.inf:
            return t, _STUCK, n_seg, events
        events += 1
        t_new = stop_time if dt >= stop_time - t else t + dt
        coflow_done = False
        limit_hit = False
        for n in range(order.shape[0]):
            f = order[n]
            r = rate[f]
            if r > 0.0:
                moved = r * dt
                if moved > rem[f]:
                    moved = rem[f]
                rem[f] -= moved
                k = coflow[f]
                sent[k] += moved
                if rem[f] <= EPS_BYTES + 1e-12 * size[f]:
                    sent[k] += rem[f]
                    rem[f] = 0.0
                    done[f] = True
                    flow_completion[f] = t_new
                    if record:
                        seg_flow[n_seg] = f
                        seg_core[n_seg] = core[f]
                        seg_t0[n_seg] = seg_start[f]
                        seg_t1[n_seg] = t_new
                        seg_rate[n_seg] = r
                        n_seg += 1
                    rate[f] = 0.0
                    left[k] -= 1
                    if left[k] == 0:
                        coflow_completion[k] = t_new
                        coflow_done = True
        if has_limit:
            for n in range(order.shape[0]):
                k = coflow[order[n]]
                if byte_limit[k] < np.inf and sent[k] >= byte_limit[k] * (1 - 1e-12):
                    limit_hit = True
        t = t_new
        if coflow_done:
            return t, _COFLOW_DONE, n_seg, events
        if limit_hit:
            return t, _BYTE_LIMIT, n_seg, events
        if t >= stop_time:
            return t, _STOP_TIME, n_seg, events


class Simulator:
    """One simulation run: a workload, a policy and the evolving state.

    Use :func:`simulate` unless you need to step through the run.
    """

    def __init__(self, workload: Workload, policy: Policy, *, segments: bool = False,
                 progress=None):
        self.workload = workload
        self.policy = policy
        self.record = segments
        self.progress = progress
        a = self.arrays = workload.arrays
        nf, nc = a.n_flows, a.n_coflows
        self.core_cap = np.array(workload.fabric.rates, dtype=np.float64) / 8.0
        self.rem = a.size.copy()
        self.rate = np.zeros(nf)
        self.done = np.zeros(nf, dtype=np.bool_)
        self.pinned = np.full(nf, -1, dtype=np.int64)
        self.flow_completion = np.full(nf, np.nan)
        self.left = np.bincount(a.coflow, minlength=nc).astype(np.int64)
        self.sent = np.zeros(nc)
        self.coflow_completion = np.full(nc, np.nan)
        self.released = np.zeros(nc, dtype=np.bool_)
        self.ready = np.zeros(nc, dtype=np.bool_)
        self.cdone = np.zeros(nc, dtype=np.bool_)
        self.preds_left = np.array([len(p) for p in a.preds], dtype=np.int64)
        self.seg_start = np.zeros(nf)
        cap = max(1024, 4 * nf)
        self._seg = [np.zeros(cap, dtype=np.int64), np.zeros(cap, dtype=np.int64),
                     np.zeros(cap), np.zeros(cap), np.zeros(cap)]
        self.n_seg = 0
        p = a.ports
        self._scratch = (np.zeros((a.cores, p)), np.zeros((a.cores, p)),
                         np.zeros((a.cores, p), dtype=np.int64),
                         np.zeros((a.cores, p), dtype=np.int64))
        self.release_order = np.argsort(a.release, kind="stable")
        self.next_release = 0
        self.t = 0.0
        self.events = 0
        self.policy_calls = 0
        self.flows_of = np.split(np.argsort(a.coflow, kind="stable"),
                                 np.cumsum(np.bincount(a.coflow, minlength=nc))[:-1])

    # ---------------------------------------------------------------- bookkeeping
    def _make_ready(self) -> bool:
        """Release what is due; mark ready coflows; complete empty ones. True if any."""
        a = self.arrays
        changed = False
        ro = self.release_order
        while self.next_release < len(ro) and a.release[ro[self.next_release]] <= self.t:
            self.released[ro[self.next_release]] = True
            self.next_release += 1
        frontier = np.flatnonzero(self.released & ~self.ready & (self.preds_left == 0))
        while frontier.size:
            nxt = []
            for k in frontier:
                self.ready[k] = True
                changed = True
                if self.left[k] == 0:
                    nxt.extend(self._complete(k))
            frontier = np.array([k for k in nxt if self.released[k] and not self.ready[k]
                                 and self.preds_left[k] == 0], dtype=np.int64)
        return changed

    def _complete(self, k) -> list:
        if not self.cdone[k]:
            self.cdone[k] = True
            if np.isnan(self.coflow_completion[k]):
                self.coflow_completion[k] = self.t
        succ = self.arrays.succs[k]
        self.preds_left[succ] -= 1
        return list(succ)

    def state(self, event: str) -> State:
        a = self.arrays
        elig = self.ready[a.coflow] & ~self.done
        return State(time=self.t, event=event, workload=self.workload, arrays=a,
                     remaining=self.rem, sent=self.sent, flow_done=self.done,
                     released=self.released, ready=self.ready, done=self.cdone,
                     completion=self.coflow_completion, eligible=elig, core=self.pinned)

    # ---------------------------------------------------------------- main loop
    def run(self) -> RunResult:
        a = self.arrays
        wall = _time.perf_counter()
        self.policy.start(self.workload)
        self._make_ready()
        event = "start"
        bar = self.progress
        while not self.cdone.all():
            st = self.state(event)
            plan = self.policy.plan(st)
            self.policy_calls += 1
            plan.validate(st)
            elig = np.flatnonzero(st.eligible)
            order = elig[np.lexsort((elig, plan.rank[elig]))]
            cap = (np.full(a.n_flows, np.inf) if plan.rate_cap is None
                   else np.where(np.isnan(plan.rate_cap), np.inf, plan.rate_cap / 8.0))
            limit = (np.full(a.n_coflows, np.inf) if plan.byte_limit is None
                     else plan.byte_limit.astype(np.float64))
            core = plan.core.astype(np.int64)
            nr = (a.release[self.release_order[self.next_release]]
                  if self.next_release < a.n_coflows else np.inf)
            stop = min(nr, plan.horizon)
            if stop <= self.t:
                raise PlanError(f"plan horizon {plan.horizon} is not after now ({self.t})")
            # rates carry over between calls only for flows still in the order
            keep = np.zeros(a.n_flows, dtype=np.bool_)
            keep[order] = True
            self._close_segments(~keep & (self.rate > 0))
            before = int(self.cdone.sum())
            while True:
                t, reason, self.n_seg, ev = _run(
                    self.t, stop, order, a.src, a.dst, a.coflow, a.size, core, cap,
                    plan.sharing == "fair", plan.backfill, self.core_cap, self.rem,
                    self.rate, self.done, self.pinned, self.flow_completion, self.left,
                    self.sent, limit, self.coflow_completion, self.record, self.seg_start,
                    *self._seg, self.n_seg, *self._scratch,
                    np.zeros(len(order), dtype=np.bool_), np.zeros(len(order)),
                    bool(np.isfinite(limit).any()), np.zeros(a.n_coflows))
                self.t = t
                self.events += ev
                if reason == _SEG_FULL:
                    self._seg = [np.concatenate([s, np.zeros_like(s)]) for s in self._seg]
                    continue
                break
            if reason == _STUCK:
                stuck = [self.workload.coflows[k].id for k in np.flatnonzero(~self.cdone)][:5]
                raise PlanError(
                    f"policy {self.policy.name!r} lets nothing send at t={self.t:g} while "
                    f"coflows {stuck} are unfinished and no event is pending")
            for k in np.flatnonzero((self.left == 0) & ~self.cdone):
                self._complete(k)
            event = {_COFLOW_DONE: "completion", _BYTE_LIMIT: "byte_limit",
                     _STOP_TIME: "horizon"}[reason]
            if self._make_ready():
                event = "ready"
            if bar is not None:
                bar.update(int(self.cdone.sum()) - before)
        self._close_segments(self.rate > 0)
        segs = None
        if self.record:
            n = self.n_seg
            f, h, t0, t1, r = (s[:n] for s in self._seg)
            segs = Segments(f.copy(), h.copy(), t0.copy(), t1.copy(), r * 8.0)
        return RunResult(workload=self.workload, policy=self.policy.name or
                         type(self.policy).__name__, engine="sim",
                         flow_completion=self.flow_completion,
                         coflow_completion=self.coflow_completion, segments=segs,
                         wall_seconds=_time.perf_counter() - wall, events=self.events,
                         extra={"policy_calls": self.policy_calls})

    def _close_segments(self, mask: np.ndarray) -> None:
        idx = np.flatnonzero(mask)
        if not idx.size:
            return
        if self.record:
            need = self.n_seg + idx.size
            while need > len(self._seg[0]):
                self._seg = [np.concatenate([s, np.zeros_like(s)]) for s in self._seg]
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
                  leave=False) as bar:
            return Simulator(workload, policy, segments=segments, progress=bar).run()
    return Simulator(workload, policy, segments=segments).run()
