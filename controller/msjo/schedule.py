"""MSJO schedules: a machine and a start per task, the verifier, and two list schedulers.

A schedule of an MSJO instance (:mod:`controller.msjo.model`) gives every task one machine
and one start ``S_u``; it then runs, non-preemptively, until ``S_u + p_u``. It is
*feasible* when

* every task runs exactly once, on a machine ``0 .. |M|-1``;
* no two tasks overlap on a machine (each task occupies a whole machine);
* no task starts before its release;
* no reduce ``v`` starts before ``S_u + p_u + d_u`` for any map ``u`` of its job.

:class:`MSJOSchedule` holds the arrays and derives the completions and both objectives;
:func:`verify` checks feasibility independently of how the schedule was made (every policy
goes through it in the tests).

Two ways of turning a task order into a schedule are shared by the policies:

* :func:`list_schedule`, *strict list scheduling* (MarS's Algorithm 2): tasks are taken
  in the order given, each placed on the machine that is free earliest (or on its
  pre-assigned machine) at ``max(earliest start, machine free)``; no backfilling, so a
  later task never starts before an earlier one on the same machine.
* :func:`graham_schedule`, *Graham list scheduling* (T-MarS's blocks, STF): event-driven,
  whenever a machine is idle the first *available* task of the list starts on it (a task
  is available when released and its maps' outputs have arrived). Graham's bound holds:
  the makespan is at most the average load plus the longest chain (with delays).

References
----------
Ling et al., Algorithm 2 (MarS) and Algorithm 3 / Lemma 4 (T-MarS's Graham step);
R. L. Graham, "Bounds on multiprocessing timing anomalies", SIAM J. Appl. Math. 17 (1969).
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from controller.msjo.model import MSJOArrays

__all__ = ["MSJOSchedule", "ScheduleError", "verify", "list_schedule", "graham_schedule",
           "precedence_order", "retime"]

EPS = 1e-7


class ScheduleError(AssertionError):
    """A schedule breaks a rule of the MSJO model; the message says which and where."""


@dataclass(frozen=True, eq=False)
class MSJOSchedule:
    """A non-preemptive schedule: per task a machine and a start.

    Attributes
    ----------
    arrays : MSJOArrays
    machine : int array, per task
    start : float array, per task, ``S_u``
    policy : str, the name of the policy that made it
    info : dict, what the policy reports (LP value, rounds, seconds, ...)
    """

    arrays: MSJOArrays
    machine: np.ndarray
    start: np.ndarray
    policy: str = ""
    info: dict = field(default_factory=dict)

    @cached_property
    def end(self) -> np.ndarray:
        """Per task, ``C_u = S_u + p_u``."""
        return self.start + self.arrays.length

    @cached_property
    def job_completion(self) -> np.ndarray:
        """Per job, ``C_j``: the end of its last reduce."""
        a = self.arrays
        out = np.zeros(a.n_jobs)
        np.maximum.at(out, a.job, np.where(a.is_map, 0.0, self.end))
        return out

    @property
    def job_cost(self) -> float:
        """``sum_j w_j C_j``."""
        return float(self.arrays.job_weight @ self.job_completion)

    @property
    def task_cost(self) -> float:
        """``sum_u w_u C_u``."""
        return float(self.arrays.weight @ self.end)

    @property
    def makespan(self) -> float:
        return float(self.end.max()) if len(self.end) else 0.0


def verify(s: MSJOSchedule, tol: float = 1e-6) -> None:
    """Check that ``s`` is feasible; raise :class:`ScheduleError` naming the broken rule.

    The rules are those of the module docstring: one run per task on a valid machine, no
    overlap on a machine, releases, and ``S_v >= S_u + p_u + d_u`` for map ``u`` and
    reduce ``v`` of one job. ``tol`` is relative to the schedule's time scale.
    """
    a = s.arrays
    n = a.n_tasks
    m = np.asarray(s.machine)
    st = np.asarray(s.start, dtype=np.float64)
    if m.shape != (n,) or st.shape != (n,):
        raise ScheduleError(f"expected one machine and one start per task ({n}), got "
                            f"{m.shape} and {st.shape}")
    if n == 0:
        return
    if not np.all(np.isfinite(st)):
        raise ScheduleError(f"task {int(np.flatnonzero(~np.isfinite(st))[0])} has no start")
    scale = max(1.0, float(np.abs(st).max() + a.length.max()))
    eps = tol * scale
    bad = np.flatnonzero((m < 0) | (m >= a.machines) | (m != np.floor(m)))
    if len(bad):
        raise ScheduleError(f"task {int(bad[0])} on machine {m[bad[0]]!r}, not in "
                            f"0..{a.machines - 1}")
    bad = np.flatnonzero(st < a.release - eps)
    if len(bad):
        u = int(bad[0])
        raise ScheduleError(f"task {u} (job {a.job_ids[a.job[u]]!r}) starts at {st[u]} "
                            f"before its release {a.release[u]}")
    end = st + a.length
    order = np.lexsort((st, m))
    same = m[order][1:] == m[order][:-1]
    overlap = same & (st[order][1:] < end[order][:-1] - eps)
    if overlap.any():
        k = int(np.flatnonzero(overlap)[0])
        u, v = int(order[k]), int(order[k + 1])
        raise ScheduleError(f"tasks {u} and {v} overlap on machine {int(m[u])}: "
                            f"[{st[u]}, {end[u]}) and [{st[v]}, {end[v]})")
    ready = a.job_map_finish(st)
    red = ~a.is_map
    bad = np.flatnonzero(red & (st < ready[a.job] - eps))
    if len(bad):
        v = int(bad[0])
        raise ScheduleError(f"reduce task {v} of job {a.job_ids[a.job[v]]!r} starts at "
                            f"{st[v]} before its maps' output arrives at {ready[a.job[v]]} "
                            f"(S_v >= S_u + p_u + d_u)")


def precedence_order(a: MSJOArrays, order) -> np.ndarray:
    """``order`` with every reduce moved, if needed, just after the last map of its job
    (stable otherwise), so that a list scheduler meets every map before its reduces."""
    order = np.asarray(order, dtype=np.int64)
    pos = np.empty(a.n_tasks)
    pos[order] = np.arange(len(order), dtype=np.float64)
    last_map = np.full(a.n_jobs, -1.0)
    np.maximum.at(last_map, a.job[a.is_map], pos[a.is_map])
    key = np.where(a.is_map, pos, np.maximum(pos, last_map[a.job] + 0.5))
    return order[np.argsort(key[order], kind="stable")]


def list_schedule(a: MSJOArrays, order, *, assignment=None, machine_ready=None,
                  policy: str = "", info: dict | None = None) -> MSJOSchedule:
    """Strict list scheduling (MarS's Algorithm 2): no backfilling.

    Parameters
    ----------
    a : MSJOArrays
    order : int array, a permutation of the tasks; reduces are moved after their maps
        (:func:`precedence_order`) if they are not already.
    assignment : int array or None
        Per task a pre-assigned machine (MARES, H-MARES); None: the machine free
        earliest (lowest index on ties).
    machine_ready : float array or None
        Per machine, when it is first free (the semi-online driver's running tasks).

    Returns
    -------
    MSJOSchedule
        Task ``u`` starts at ``max(r_u, ready_u, e_m)``, where ``ready_u`` is, for a
        reduce, the latest ``S_w + p_w + d_w`` of its job's maps.
    """
    order = precedence_order(a, order)
    free = (np.zeros(a.machines) if machine_ready is None
            else np.asarray(machine_ready, dtype=np.float64).copy())
    heap = [(float(free[i]), i) for i in range(a.machines)]
    heapq.heapify(heap)
    ready = np.full(a.n_jobs, -np.inf)
    start = np.zeros(a.n_tasks)
    machine = np.zeros(a.n_tasks, dtype=np.int64)
    length, rel, ism, job = a.length, a.release, a.is_map, a.job
    rd = a.ready_delay
    for u in order.tolist():
        j = job[u]
        earliest = rel[u] if ism[u] else max(rel[u], ready[j])
        if assignment is None:
            e, mi = heapq.heappop(heap)
        else:
            mi = int(assignment[u])
            e = free[mi]
        s = max(earliest, e)
        start[u] = s
        machine[u] = mi
        free[mi] = s + length[u]
        if assignment is None:
            heapq.heappush(heap, (free[mi], mi))
        if ism[u]:
            ready[j] = max(ready[j], s + rd[u])
    return MSJOSchedule(a, machine, start, policy, dict(info or {}))


def graham_schedule(a: MSJOArrays, order, *, tasks=None, begin: float = 0.0,
                    machine_ready=None, job_ready=None, start=None, machine=None):
    """Graham list scheduling: whenever a machine is idle, start the first available
    task of ``order`` on it.

    Parameters
    ----------
    a : MSJOArrays
    order : int array, the priority list (earlier = higher priority)
    tasks : int array or None, the tasks to schedule (default: all of ``order``)
    begin : float, no task starts before it (a T-MarS block's start)
    machine_ready : float array or None, per machine, when it is free (updated in place)
    job_ready : float array or None, per job, when outputs of maps scheduled *earlier*
        have arrived (updated in place)
    start, machine : arrays to fill (per task); new ones if None

    Returns
    -------
    (start, machine) : the filled arrays. A reduce is available once every map of its
    job is scheduled and its output has arrived; maps of its job must be in ``tasks`` or
    scheduled before (their outputs counted in ``job_ready``).
    """
    order = np.asarray(order, dtype=np.int64)
    if tasks is not None:
        keep = np.zeros(a.n_tasks, dtype=bool)
        keep[np.asarray(tasks, dtype=np.int64)] = True
        order = order[keep[order]]
    start = np.full(a.n_tasks, np.nan) if start is None else start
    machine = np.full(a.n_tasks, -1, dtype=np.int64) if machine is None else machine
    free = np.zeros(a.machines) if machine_ready is None else machine_ready
    jready = np.full(a.n_jobs, -np.inf) if job_ready is None else job_ready
    rank = {int(u): k for k, u in enumerate(order)}
    maps_left = {}
    for u in order.tolist():
        if a.is_map[u]:
            maps_left[a.job[u]] = maps_left.get(a.job[u], 0) + 1
    # pending: tasks not yet available, keyed by the time they become available (None:
    # waiting for maps); avail: (rank, task) heap of available tasks
    avail, timed, waiting = [], [], {}
    for u in order.tolist():
        j = int(a.job[u])
        if a.is_map[u] or maps_left.get(j, 0) == 0:
            t = max(begin, a.release[u]) if a.is_map[u] else max(begin, a.release[u],
                                                                 jready[j])
            heapq.heappush(timed, (t, rank[u], u))
        else:
            waiting.setdefault(j, []).append(u)
    machines = [(float(free[i]), i) for i in range(a.machines)]
    heapq.heapify(machines)
    done = 0
    n = len(order)
    while done < n:
        t, mi = heapq.heappop(machines)
        while timed and timed[0][0] <= t + EPS * max(1.0, abs(t)):
            _, r, u = heapq.heappop(timed)
            heapq.heappush(avail, (r, u))
        if not avail:
            if not timed:
                raise ValueError("graham_schedule: reduces wait for maps that are neither "
                                 "in tasks nor scheduled before")
            # idle until the next task becomes available
            heapq.heappush(machines, (max(t, timed[0][0]), mi))
            continue
        _, u = heapq.heappop(avail)
        s = max(t, a.release[u], begin)
        start[u] = s
        machine[u] = mi
        free[mi] = s + a.length[u]
        heapq.heappush(machines, (free[mi], mi))
        done += 1
        if a.is_map[u]:
            j = int(a.job[u])
            jready[j] = max(jready[j], s + a.length[u] + a.delay[u])
            maps_left[j] -= 1
            if maps_left[j] == 0:
                for v in waiting.pop(j, []):
                    heapq.heappush(timed, (max(begin, a.release[v], jready[j]), rank[v], v))
    return start, machine


def retime(true: MSJOArrays, planned: MSJOSchedule, *, keep_machines: bool = False,
           policy: str | None = None) -> MSJOSchedule:
    """Run a plan made on predicted lengths with the true ones.

    The plan's tasks, in planned start order, are list-scheduled strictly
    (:func:`list_schedule`) with the true lengths: each on the machine free first (as a
    dispatcher that hands the next task of the plan to whichever machine becomes idle),
    or, with ``keep_machines``, on its planned machine. Every task starts as soon as its
    machine, its release and its maps' outputs allow, so on the true lengths themselves
    no task ends later than planned (a left shift). Used to evaluate the policies under
    prediction error, and by T-MarS to compact its block schedule.
    """
    order = np.lexsort((np.arange(true.n_tasks), planned.start))
    return list_schedule(true, order,
                         assignment=planned.machine if keep_machines else None,
                         policy=policy or planned.policy, info=planned.info)
