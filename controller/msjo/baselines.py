"""The baselines Ling et al. compare MarS and T-MarS with (Section 5.1.3, 5.2).

Job level:

* :func:`mares` -- MARES (Chen, Kodialam, Lakshman, "Joint scheduling of processing and
  shuffle phases in MapReduce systems", INFOCOM 2012), with the paper's
  *workload-balanced pre-assignment*: tasks are assigned to machines in advance so that
  every machine gets about the same total processing time, then the Chen-Kodialam-
  Lakshman LP for that assignment (CLS-LPP with (4) per machine, ``|M| = 1``) is solved
  with stop threshold 0.3, and every machine runs its tasks in LP completion order, each
  as soon as its machine and its maps' outputs allow.
* :func:`huwf` -- highest unit weight first: unit weight ``w_j / sum_{u in j} p_u``;
  tasks in descending unit weight of their job (maps before reduces), each on the
  machine where it can start earliest.
* :func:`hjwf` -- highest job weight first, otherwise as HUWF.

Task level:

* :func:`h_mares` -- H-MARES: the pre-assignment of MARES, the task-level LP for it
  ((13) per machine), tasks in LP completion order on their machines, waiting only for
  their machine and predecessors.
* :func:`stf` -- shortest task first: whenever a machine is idle, the shortest
  available task (released, its maps' outputs arrived) starts on it.
* :func:`htwf` -- highest task weight first, otherwise as HJWF.

Our readings (the paper gives the baselines in one sentence each):

* the pre-assignment takes the jobs in release order, each job's maps then reduces,
  every task to the machine with the least assigned work so far (ties: lowest index);
  this balances the machines' totals and spreads each job's tasks;
* MARES's "stop threshold 0.3" is the relative violation tolerance of the cutting-plane
  loop (a subset inequality counts as violated only when short by more than 30 % of its
  right-hand side); MARES's own rounding (Chen et al. list by LP ``alpha``-points) is
  replaced by LP completion order, as the paper describes for H-MARES;
* HUWF / HJWF / HTWF are strict list schedulers (the paper: "assign it to a machine
  where it can start as early as possible"), STF is event-driven ("when a machine is
  idle ... assign the shortest available task").
"""
from __future__ import annotations

import numpy as np

from controller.msjo.lp import solve_cls_lp, solve_task_lp
from controller.msjo.model import MSJOArrays
from controller.msjo.schedule import MSJOSchedule, graham_schedule, list_schedule

__all__ = ["balanced_assignment", "mares", "h_mares", "huwf", "hjwf", "stf", "htwf"]

MARES_THRESHOLD = 0.3


def balanced_assignment(a: MSJOArrays) -> np.ndarray:
    """Workload-balanced pre-assignment: per task a machine (see the module docstring)."""
    load = np.zeros(a.machines)
    out = np.zeros(a.n_tasks, dtype=np.int64)
    for j in np.lexsort((np.arange(a.n_jobs), a.job_release)).tolist():
        for u in range(int(a.job_start[j]), int(a.job_start[j + 1])):
            m = int(np.argmin(load))
            out[u] = m
            load[m] += a.length[u]
    return out


def _lp_order(a: MSJOArrays, completion) -> np.ndarray:
    return np.lexsort((np.arange(a.n_tasks), ~a.is_map, completion))


def mares(a: MSJOArrays, *, threshold: float = MARES_THRESHOLD) -> MSJOSchedule:
    """MARES with workload-balanced pre-assignment (job level)."""
    asg = balanced_assignment(a)
    lp = solve_cls_lp(a, assignment=asg, tol=threshold)
    return list_schedule(a, _lp_order(a, lp.solution.completion), assignment=asg,
                         policy="mares", info={"lp_seconds": lp.seconds})


def h_mares(a: MSJOArrays, *, threshold: float = MARES_THRESHOLD) -> MSJOSchedule:
    """H-MARES: MARES's pre-assignment and the task-level LP for it (task level)."""
    asg = balanced_assignment(a)
    lp = solve_task_lp(a, assignment=asg, tol=threshold)
    return list_schedule(a, _lp_order(a, lp.solution.completion), assignment=asg,
                         policy="h-mares", info={"lp_seconds": lp.seconds})


def _by_job_key(a: MSJOArrays, key) -> np.ndarray:
    """Tasks by descending job ``key`` (ties: job index), each job's maps first."""
    idx = np.arange(a.n_tasks)
    return np.lexsort((idx, ~a.is_map, a.job, -np.asarray(key)[a.job]))


def huwf(a: MSJOArrays) -> MSJOSchedule:
    """Highest unit weight (``w_j / p(j)``) first."""
    work = np.bincount(a.job, weights=a.length, minlength=a.n_jobs)
    return list_schedule(a, _by_job_key(a, a.job_weight / work), policy="huwf")


def hjwf(a: MSJOArrays) -> MSJOSchedule:
    """Highest job weight first."""
    return list_schedule(a, _by_job_key(a, a.job_weight), policy="hjwf")


def htwf(a: MSJOArrays) -> MSJOSchedule:
    """Highest task weight first (reduces moved after their job's maps)."""
    order = np.lexsort((np.arange(a.n_tasks), ~a.is_map, -a.weight))
    return list_schedule(a, order, policy="htwf")


def stf(a: MSJOArrays) -> MSJOSchedule:
    """Shortest available task first, whenever a machine is idle."""
    order = np.lexsort((np.arange(a.n_tasks), a.length))
    start, machine = graham_schedule(a, order)
    return MSJOSchedule(a, machine, start, "stf")
