"""The machine-usage profile and list scheduling of rigid jobs on it.

Once every job has its allotment ``q`` it is *rigid*: a rectangle of ``q`` machines by
``p(q)`` seconds. A :class:`Profile` is the number of busy machines as a step function of
time; :meth:`Profile.earliest_fit` finds the earliest time at which ``q`` machines stay
free for ``p`` seconds, and :meth:`Profile.add` books them.

:func:`list_schedule` is list scheduling in the Garey-Graham family (Garey & Graham 1975,
multiprocessor list scheduling with resource constraints), in its *conservative* form:
the jobs are taken in list order and each starts at the earliest time at which its ``q``
machines are free for its whole length, given the jobs listed before it (a later job may
fill a hole before an earlier one, but never delays it). Event-driven Garey-Graham (at
every completion, start every listed job that fits) lets a later job that fits now push an
earlier, wider one back; the conservative form does not, which is what makes DEMT's
compaction never delay a job (:mod:`controller.moldable.demt`). Both are list algorithms
over the same list; for one-machine jobs they coincide.

Which machines a job holds is decided afterwards by :func:`assign_machines`: a profile
that never exceeds ``m`` can always be realised by rectangles on distinct machines
(sweep the starts in time order, each job takes ``q`` of the machines free at its start),
because a job holds its machines for one interval.

Examples
--------
>>> list_schedule(np.array([2.0, 1.0, 1.0]), np.array([2, 1, 2]), [0, 1, 2], m=3).tolist()
[0.0, 0.0, 2.0]
"""
from __future__ import annotations

import heapq

import numpy as np

__all__ = ["Profile", "list_schedule", "assign_machines"]


class Profile:
    """Busy machines as a step function: ``usage[k]`` on ``[times[k], times[k+1])``; the
    last step runs to infinity (and stays 0).

    Parameters
    ----------
    m : int, machines
    eps : float
        Time tolerance: a job may overlap a busier step by at most ``eps`` seconds
        (floating-point sums of lengths).
    """

    def __init__(self, m: int, eps: float = 1e-9):
        self.m = int(m)
        self.eps = float(eps)
        self.times = np.zeros(1)
        self.usage = np.zeros(1, dtype=np.int64)

    def earliest_fit(self, q: int, p: float, not_before: float = 0.0) -> float:
        """Earliest ``t >= not_before`` with at most ``m - q`` busy machines on
        ``[t, t + p)``."""
        T, U = self.times, self.usage
        ok = U <= self.m - q
        bad = np.flatnonzero(~ok)
        B = len(T)
        nxt = np.append(bad, B)[np.searchsorted(bad, np.arange(B))]
        T_ext = np.append(T, np.inf)
        # a start at T[k] (or at not_before inside step k) is fine when step k is free
        # enough and the next too-busy step begins after the job's end
        starts = np.maximum(T, not_before)
        good = ok & (T_ext[nxt] >= starts + p - self.eps) & (T_ext[1:] > not_before)
        return float(starts[np.argmax(good)])

    def add(self, t: float, p: float, q: int) -> None:
        """Book ``q`` machines on ``[t, t + p)``."""
        for x in (t, t + p):
            k = np.searchsorted(self.times, x)
            if k == len(self.times) or self.times[k] != x:
                self.times = np.insert(self.times, k, x)
                self.usage = np.insert(self.usage, k, self.usage[k - 1] if k else 0)
        lo = np.searchsorted(self.times, t)
        hi = np.searchsorted(self.times, t + p)
        self.usage[lo:hi] += q


def list_schedule(length, allotment, order, m: int, eps: float | None = None) -> np.ndarray:
    """Start times of rigid jobs by conservative list scheduling (module docstring).

    Parameters
    ----------
    length : float array (n,), seconds
    allotment : int array (n,), machines, each in ``1..m``
    order : sequence of job indices, the list (every job once)
    m : int
    eps : float, optional
        Time tolerance; default ``1e-9`` times the total length.

    Returns
    -------
    float array (n,), the start of every job
    """
    length = np.asarray(length, dtype=np.float64)
    allotment = np.asarray(allotment, dtype=np.int64)
    if eps is None:
        eps = 1e-9 * max(1.0, float(length.sum()))
    prof = Profile(m, eps)
    start = np.zeros(len(length))
    for i in order:
        t = prof.earliest_fit(int(allotment[i]), float(length[i]))
        prof.add(t, float(length[i]), int(allotment[i]))
        start[i] = t
    return start


def assign_machines(start, end, allotment, m: int, eps: float = 1e-9) -> tuple:
    """The machines each job holds: a tuple of sorted int arrays, ``allotment[i]`` each.

    Jobs are swept by start time; a job takes the lowest-numbered machines that are free
    at its start (a machine is free again when its job ends, up to ``eps``).

    Raises
    ------
    ValueError
        More than ``m`` machines busy at some time (the start times are infeasible).
    """
    start = np.asarray(start, dtype=np.float64)
    end = np.asarray(end, dtype=np.float64)
    order = np.lexsort((np.arange(len(start)), start))
    free = list(range(m))
    heapq.heapify(free)
    running: list[tuple[float, int]] = []
    held: list = [None] * len(start)
    for i in order:
        while running and running[0][0] <= start[i] + eps:
            _, j = heapq.heappop(running)
            for k in held[j]:
                heapq.heappush(free, int(k))
        q = int(allotment[i])
        if q > len(free):
            raise ValueError(f"job {i} needs {q} machines at t={start[i]:g}, "
                             f"{len(free)} are free")
        held[i] = np.sort(np.array([heapq.heappop(free) for _ in range(q)], dtype=np.int64))
        heapq.heappush(running, (float(end[i]), int(i)))
    return tuple(held)
