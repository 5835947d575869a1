"""PSRS: preemptive Smith-ratio scheduling of parallel tasks, per machine.

Single-machine placement (every task on its fastest machine), preemptive, no migration.
Each machine builds its schedule independently, as a list schedule with non-decreasing
start times (current time ``t``, initially 0):

1. order its tasks by the modified Smith ratio ``w_j / (a_t p_t)``, largest first;
2. take the next task; let ``s`` be the first time ``>= t`` at which the machine has room
   for it for its whole length, given what is already placed;
3. a small task (``a_t <= c/2``) is placed at ``s`` non-preemptively and ``t = s``;
4. a wide task (``a_t > c/2``): if its wait ``s - t`` is at most ``wait_factor x p_t``, it
   is treated like a small one; otherwise, at time ``t`` everything placed that has not
   finished is preempted, the wide task runs alone in ``[t, t + p_t]``, and the preempted
   remainders resume after it (shifted by ``p_t``); ``t`` stays.

Online (and with multi-stage jobs): re-plan at every job arrival and whenever a stage
becomes ready, on the tasks that are ready, with their remaining work (Schwiegelshohn's
online rule, algorithms.md 2.8). Planning once with every job released at 0 is the
offline algorithm.

``wait_factor`` is the constant the paper does not give (default 1).

References
----------
Schwiegelshohn, "Preemptive weighted completion time scheduling of parallel jobs",
SIAM J. Comput. 2004 (ratio about 2.37 on one machine); Shafiee & Ghaderi, Section 7;
algorithms.md 2.8.
"""
from __future__ import annotations

import numpy as np

from controller.compute.model import ComputeArrays, as_arrays
from controller.compute.online import replan
from controller.compute.schedule import ComputeSchedule

NAME = "psrs"
__all__ = ["schedule", "plan", "machine_schedule"]


def machine_schedule(cap: float, size, proc, ratio, release=None, wait_factor: float = 1.0,
                     tol: float = 1e-9):
    """PSRS on one machine. Returns pieces ``[(k, start, end)]`` (k = position in input)."""
    n = len(size)
    release = np.zeros(n) if release is None else np.asarray(release, float)
    order = sorted(range(n), key=lambda k: (-ratio[k], k))
    pieces: list[list] = []      # [k, start, end, size]
    t = 0.0
    slack = tol * max(1.0, cap)

    def usage_ok(s, e, a):
        pts = [s] + [p[1] for p in pieces if s < p[1] < e]
        for x in pts:
            use = sum(p[3] for p in pieces if p[1] <= x + tol and p[2] > x + tol)
            if use + a > cap + slack:
                return False
        return True

    def earliest(t0, dur, a):
        for s in sorted({t0} | {p[2] for p in pieces if p[2] > t0}):
            if usage_ok(s, s + dur, a):
                return s
        return max([t0] + [p[2] for p in pieces])

    for k in order:
        a, p = float(size[k]), float(proc[k])
        t0 = max(t, float(release[k]))
        s = earliest(t0, p, a)
        if a <= cap / 2 or s - t0 <= wait_factor * p:
            pieces.append([k, s, s + p, a])
            t = s
            continue
        # wide task that would wait too long: preempt everything unfinished at t0
        new = []
        for q in pieces:
            if q[2] <= t0 + tol:
                new.append(q)
            elif q[1] < t0 - tol:
                new.append([q[0], q[1], t0, q[3]])
                new.append([q[0], t0 + p, q[2] + p, q[3]])
            else:
                new.append([q[0], q[1] + p, q[2] + p, q[3]])
        pieces = new + [[k, t0, t0 + p, a]]
        t = t0
    return [(q[0], q[1], q[2]) for q in pieces]


def plan(a: ComputeArrays, background=(), *, wait_factor: float = 1.0) -> ComputeSchedule:
    """PSRS on every machine of ``a`` (tasks on their fastest machine)."""
    seg = [[], [], [], []]
    w = a.job_weight[a.task_job]
    for i in range(a.n_machines):
        ts = np.flatnonzero(a.fastest == i)
        if not len(ts):
            continue
        p = a.pmin[ts]
        pieces = machine_schedule(float(a.capacity[i]), a.size[ts], p, w[ts] / (a.size[ts] * p),
                                  a.release[ts], wait_factor)
        for k, s, e in pieces:
            seg[0].append(int(ts[k]))
            seg[1].append(i)
            seg[2].append(s)
            seg[3].append(e)
    return ComputeSchedule.from_segments(a, tuple(np.array(x) for x in seg), NAME)


def schedule(instance, *, wait_factor: float = 1.0, online: bool = True) -> ComputeSchedule:
    """Schedule ``instance`` with PSRS, re-planning at arrivals and stage readiness.

    ``online`` has no effect: PSRS always re-plans at every arrival (with every job
    released at 0 and no precedence it plans exactly once).
    """
    a = as_arrays(instance)
    return replan(a, lambda sub, bg: plan(sub, bg, wait_factor=wait_factor), preemptive=True,
                  mode="arrivals", name=NAME)
