"""The exact event simulator of the redundancy model.

Jobs arrive online with known work; ``N`` machines serve at their speed processes
(:mod:`controller.redundancy.speed`); a policy (:mod:`controller.redundancy.policies`)
decides the copies at every **checkpoint**, i.e. at every arrival and departure
(Assumption 1). Between checkpoints each copy of job ``j`` on machine ``m`` with share
``theta`` gains ``theta S_m(t0, t)``; at the next checkpoint the job's remaining work
drops by the **best** copy's gain (the most advanced copy's state is cloned to all), and
the job departs as soon as some copy has covered its remaining work, itself a checkpoint.

Exact, without time steps: the departure time of a served job is the earliest copy's
``S_m^{-1}(S_m(t0) + rem_j / theta)`` (:func:`~controller.redundancy.speed.
time_to_deliver`, the inverse of the cumulative work), so the next event is the earliest
of the next arrival and those departures; the speed change points in between need no
decision (they only bend ``S_m``) and are crossed by the cumulative work function. Each
checkpoint costs O(copies log K) plus O(n) for the active list (kept sorted by remaining
work for SRPT: the served prefix only decreases, so it is re-sorted alone and an arrival
is inserted by binary search). The whole loop is one numba kernel.

**Slotted decisions** (``slot=s``, ``srpt+r@slot=1``; the paper's simulations decide in
time slots): the events are seen, and the policy decides, only at the next multiple of
``s``. A job that arrives inside a slot waits, unserved, until the slot ends; a job whose
copy covers its remaining work inside a slot departs then (its completion is exact) and
its machines idle until the slot ends; the other copies run on through it (nothing is
re-decided, no state is cloned inside a slot). A slot boundary at which nothing happened
in the slot is not a decision (checkpoints stay at events, Assumption 1: only delayed to
the slot's end). Everything else is exact (the departures, the speed change points).

With ``record=True`` the run keeps every copy's interval between checkpoints
(:class:`Run.copies`); :meth:`Run.segments` cuts them at the speed change points into the
constant-rate segments of the records.

Examples
--------
>>> import numpy as np
>>> from controller.redundancy.speed import constant
>>> inst = Instance(np.array([0.0, 0.0]), np.array([4.0, 2.0]), constant(2))
>>> simulate(inst, "srpt+r").completion.tolist()      # n >= N: one machine each
[4.0, 2.0]
>>> simulate(Instance(np.array([0.0]), np.array([4.0]), constant(2)), "srpt+r").completion
array([4.])
"""
from __future__ import annotations

import math
import time as _time
from dataclasses import dataclass, field
from typing import Callable

import numba
import numpy as np

from controller.redundancy.policies import SRPT_ORDER, allocate, keep_machines, parse
from controller.redundancy.speed import Speed, reach

__all__ = ["Instance", "Run", "simulate", "horizon_of", "boundary"]

#: a job whose remaining work falls below this fraction of its work has departed
REL_TOL = 1e-10


@dataclass(frozen=True, eq=False)
class Instance:
    """Jobs and machines of the redundancy model.

    Attributes
    ----------
    arrival, work : float arrays per job, sorted by arrival (ties: by index)
    speed : Speed, or a function ``until -> Speed`` for processes drawn on demand (the
        AP/UP ones): the simulator draws them past its last event, and again further if a
        run goes beyond
    ids : job ids (default ``j<k>``)
    """

    arrival: np.ndarray
    work: np.ndarray
    speed: "Speed | Callable[[float], Speed]"
    ids: tuple = ()

    def __post_init__(self):
        a = np.asarray(self.arrival, dtype=np.float64)
        w = np.asarray(self.work, dtype=np.float64)
        if a.shape != w.shape or a.ndim != 1:
            raise ValueError("arrival and work must be 1-d arrays of one length")
        if np.any(np.diff(a) < 0) or np.any(a < 0) or np.any(w < 0) \
                or not (np.all(np.isfinite(a)) and np.all(np.isfinite(w))):
            raise ValueError("arrivals must be sorted, >= 0; work >= 0; all finite")
        object.__setattr__(self, "arrival", a)
        object.__setattr__(self, "work", w)
        object.__setattr__(self, "ids", tuple(self.ids) or tuple(f"j{k}" for k in
                                                                   range(len(a))))

    @property
    def n_jobs(self) -> int:
        return len(self.arrival)

    def speed_until(self, until: float) -> Speed:
        return self.speed(until) if callable(self.speed) else self.speed


@dataclass(frozen=True, eq=False)
class Run:
    """The outcome of :func:`simulate`.

    Attributes
    ----------
    instance : Instance
    policy : str, beta : float
    speed : Speed, the processes the run used (drawn far enough)
    completion : float array per job
    checkpoints : int, decisions taken (one per distinct arrival/departure time)
    crossed : int, speed change points crossed before the last departure
    wall_seconds : float
    copies : dict of arrays or None, with ``record``: per copy and checkpoint interval
        ``job``, ``copy`` (its index among the job's copies), ``machine``, ``start``,
        ``end``, ``share``
    assign : str, slot : float, the policy's options
    """

    instance: Instance
    policy: str
    beta: float
    speed: Speed
    completion: np.ndarray
    checkpoints: int
    crossed: int
    wall_seconds: float
    copies: dict | None = field(default=None)
    assign: str = "index"
    slot: float = 0.0

    @property
    def flowtime(self) -> np.ndarray:
        return self.completion - self.instance.arrival

    @property
    def mean_flowtime(self) -> float:
        return float(self.flowtime.mean()) if len(self.flowtime) else 0.0

    @property
    def total_flowtime(self) -> float:
        return float(self.flowtime.sum())

    def summary(self) -> dict:
        """How the run went, for its records: ``checkpoints``, ``speed_change_points``
        crossed, the policy's options ``beta`` (None but for LAPS), ``assign``, ``slot``
        (None: exact)."""
        return {"checkpoints": self.checkpoints, "speed_change_points": self.crossed,
                "beta": self.beta if self.policy.startswith("laps") else None,
                "assign": self.assign, "slot": self.slot or None}

    @property
    def events(self) -> int:
        """Checkpoints plus speed change points crossed."""
        return self.checkpoints + self.crossed

    def segments(self) -> dict:
        """The copies' constant-rate segments: the recorded intervals cut at their
        machine's change points, as arrays ``job, copy, machine, start, end, share,
        work`` (``work`` = share x rate x length), sorted by start then job."""
        if self.copies is None:
            raise ValueError("this run recorded no copies (simulate with record=True)")
        c, sp = self.copies, self.speed
        out = {k: [] for k in ("job", "copy", "machine", "start", "end", "share", "work")}
        for m in np.unique(c["machine"]):
            sel = np.flatnonzero(c["machine"] == m)
            t, r = sp.points(int(m))
            a, b = c["start"][sel], c["end"][sel]
            i0 = np.searchsorted(t, a, side="right") - 1
            n = np.maximum(np.searchsorted(t, b, side="left") - i0, 1)   # pieces per copy
            rep = np.repeat(np.arange(len(sel)), n)
            k = i0[rep] + np.arange(len(rep)) - np.repeat(np.cumsum(n) - n, n)
            nxt = np.append(t[1:], np.inf)
            lo, hi = np.maximum(a[rep], t[k]), np.minimum(b[rep], nxt[k])
            share = c["share"][sel][rep]
            out["job"].append(c["job"][sel][rep])
            out["copy"].append(c["copy"][sel][rep])
            out["machine"].append(np.full(len(rep), m))
            out["start"].append(lo)
            out["end"].append(hi)
            out["share"].append(share)
            out["work"].append(share * r[k] * (hi - lo))
        cat = {k: (np.concatenate(v) if v else np.zeros(0)) for k, v in out.items()}
        order = np.lexsort((cat["copy"], cat["job"], cat["start"]))
        return {k: v[order] for k, v in cat.items()}


def simulate(instance: Instance, policy: str, *, beta: float | None = None,
             record: bool = False, assign: str | None = None,
             slot: float | None = None) -> Run:
    """Run ``instance`` under ``policy`` (``srpt+r``, ``srpt``, ``fair+r``,
    ``fair-share``, ``laps+r``, ``laps``), with its options in its name or as keywords
    (:func:`~controller.redundancy.policies.parse`): ``beta`` (``laps+r@beta=0.3``),
    ``assign``: ``"index"`` (the policy's machine ``i`` is machine ``i``) or ``"sticky"``
    (a job keeps the machines it held where it can; :mod:`controller.redundancy.
    policies`), ``slot`` (module docstring: decisions only at multiples of it).

    Raises
    ------
    ValueError
        Unknown policy or option; a job that can never finish (every machine it may use
        stops for good).
    """
    ch = parse(policy, beta=beta, assign=assign, slot=slot)
    name, b = ch.name, ch.beta
    wall = _time.perf_counter()
    inst = instance
    n = inst.n_jobs
    until = horizon_of(inst)
    while True:
        sp = inst.speed_until(until)
        res = _run(inst.arrival, inst.work, ch.code, sp.n, b, sp.ptr, sp.time,
                   sp.rate, sp.cum, record, ch.assign == "sticky", ch.slot)
        comp, checkpoints, status = res[0], res[1], res[2]
        if status != 0:
            raise ValueError("a job can never finish: every machine it may use has rate 0 "
                             "for ever after its last change point")
        end = float(np.nanmax(comp)) if n else 0.0
        if not callable(inst.speed) or end <= until:
            break
        until *= 2.0
    crossed = int(np.sum((sp.time > 0) & (sp.time < end)))
    copies = None
    if record:
        k = res[3]
        copies = {"job": res[4][:k], "copy": res[5][:k], "machine": res[6][:k],
                  "start": res[7][:k], "end": res[8][:k], "share": res[9][:k]}
    return Run(inst, name, b, sp, comp, int(checkpoints), crossed,
               _time.perf_counter() - wall, copies, ch.assign, ch.slot)


def horizon_of(instance: Instance) -> float:
    """How far to draw the speed processes first: a time the jobs will not outlive
    (constant speeds: all the work on one machine at rate 1 after the last arrival;
    processes drawn on demand: a generous multiple), else a run draws further."""
    inst = instance
    if not inst.n_jobs:
        return 1.0
    if callable(inst.speed):
        return (float(inst.arrival[-1]) + 2.0 * float(inst.work.sum()) / inst.speed(1.0).n
                + 10.0 * float(inst.work.max()) + 100.0)
    return float(inst.arrival[-1]) + float(inst.work.sum()) + 1.0


# ------------------------------------------------------------------------ the kernel
@numba.njit(cache=True)
def _at(ptr, time, rate, cum, p, m, t):
    """``S_m(0, t)``, advancing machine ``m``'s segment pointer ``p[m]`` (t never
    decreases between calls)."""
    k = p[m]
    hi = ptr[m + 1]
    while k + 1 < hi and time[k + 1] <= t:
        k += 1
    p[m] = k
    return cum[k] + rate[k] * (t - time[k])


@numba.njit(cache=True)
def _deliver(ptr, time, rate, cum, p, m, t, s0, w):
    """The least ``u >= t`` with ``S_m(0, u) >= s0 + w`` (``s0 = S_m(0, t)``; searching
    from the current segment ``p[m]``)."""
    if w <= 0:
        return t
    return reach(time, rate, cum, p[m], ptr[m + 1], t, s0 + w)


@numba.njit(cache=True)
def _grow_i(a, cap):
    b = np.empty(cap, a.dtype)
    b[:len(a)] = a
    return b


@numba.njit(cache=True)
def boundary(t, slot):
    """The first decision time at or after ``t``: ``t`` itself without slots, else the
    next multiple of ``slot``."""
    if slot <= 0 or t == np.inf:
        return t
    return math.ceil(t / slot) * slot


@numba.njit(cache=True)
def _run(arrival, work, code, N, beta, ptr, time, rate, cum, record, sticky, slot):
    J = arrival.shape[0]
    owner = np.full(N, -1, np.int64)
    head = np.full(J, -1, np.int64)
    link = np.empty(N, np.int64)
    phys = np.empty(N, np.int64)
    comp = np.full(J, np.nan)
    rem = work.copy()
    act = np.empty(J, np.int64)
    n = 0
    cap = N + J + 1
    cj = np.empty(cap, np.int64)
    cm = np.empty(cap, np.int64)
    cs = np.empty(cap)
    dep = np.full(J, np.inf)
    best = np.zeros(J)
    ncopy = np.zeros(J, np.int64)
    p = ptr[:-1].copy()
    s0 = np.zeros(N)
    srpt = code == SRPT_ORDER[0] or code == SRPT_ORDER[1]
    rcap = 1024 if record else 1
    rj = np.empty(rcap, np.int64)
    rc = np.empty(rcap, np.int64)
    rm = np.empty(rcap, np.int64)
    r0 = np.empty(rcap)
    r1 = np.empty(rcap)
    rs = np.empty(rcap)
    nr = 0
    nxt = 0
    t = 0.0
    checkpoints = 0
    while nxt < J or n > 0:
        if n == 0 and arrival[nxt] > t:
            t = boundary(arrival[nxt], slot)
        while nxt < J and arrival[nxt] <= t:          # admit the arrivals
            j = nxt
            nxt += 1
            if srpt:                                  # sorted by (rem, index)
                lo, hi = 0, n
                while lo < hi:
                    mid = (lo + hi) // 2
                    o = act[mid]
                    if rem[o] < rem[j] or (rem[o] == rem[j] and o < j):
                        lo = mid + 1
                    else:
                        hi = mid
                for i in range(n, lo, -1):
                    act[i] = act[i - 1]
                act[lo] = j
            else:
                act[n] = j
            n += 1
        checkpoints += 1
        nc = allocate(code, act, n, N, beta, cj, cm, cs)
        if sticky:
            keep_machines(nc, cj, cm, N, owner, head, link, phys)
        for m in range(N):
            s0[m] = _at(ptr, time, rate, cum, p, m, t)
        tnext = arrival[nxt] if nxt < J else np.inf
        for c in range(nc):
            j = cj[c]
            u = _deliver(ptr, time, rate, cum, p, cm[c], t, s0[cm[c]], rem[j] / cs[c])
            if u < dep[j]:
                dep[j] = u
        for c in range(nc):
            if dep[cj[c]] < tnext:
                tnext = dep[cj[c]]
        if tnext == np.inf:
            return comp, checkpoints, 1, nr, rj, rc, rm, r0, r1, rs
        tnext = boundary(tnext, slot)
        for c in range(nc):
            m = cm[c]
            g = cs[c] * (_at(ptr, time, rate, cum, p, m, tnext) - s0[m])
            j = cj[c]
            if g > best[j]:
                best[j] = g
            if record:
                if nr == rj.shape[0]:
                    rj = _grow_i(rj, 2 * nr)
                    rc = _grow_i(rc, 2 * nr)
                    rm = _grow_i(rm, 2 * nr)
                    r0 = _grow_i(r0, 2 * nr)
                    r1 = _grow_i(r1, 2 * nr)
                    rs = _grow_i(rs, 2 * nr)
                rj[nr] = j
                rc[nr] = ncopy[j]
                rm[nr] = m
                r0[nr] = t
                r1[nr] = min(tnext, dep[j])
                rs[nr] = cs[c]
                nr += 1
                ncopy[j] += 1
        gone = 0
        for c in range(nc):
            j = cj[c]
            if ncopy[j] < 0:                  # this job's copies are already settled
                continue
            if dep[j] <= tnext or rem[j] - best[j] <= REL_TOL * work[j]:
                rem[j] = 0.0
                comp[j] = min(tnext, dep[j])
                gone += 1
            else:
                rem[j] -= best[j]
            best[j] = 0.0
            dep[j] = np.inf
            ncopy[j] = -1
        for c in range(nc):
            ncopy[cj[c]] = 0
        if gone:
            k = 0
            for i in range(n):
                if np.isnan(comp[act[i]]):
                    act[k] = act[i]
                    k += 1
            n = k
        if srpt:                      # the served prefix only decreased: re-sort it alone
            for i in range(1, min(n, N)):
                o = act[i]
                x = i - 1
                while x >= 0 and (rem[act[x]] > rem[o] or (rem[act[x]] == rem[o]
                                                           and act[x] > o)):
                    act[x + 1] = act[x]
                    x -= 1
                act[x + 1] = o
        t = tnext
    return comp, checkpoints, 0, nr, rj, rc, rm, r0, r1, rs
