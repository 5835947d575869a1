"""SynchPack-3: LP3 job ordering + per-machine greedy list packing (preemptive), ratio 4.

Setting: single-machine placement (every task runs on one given machine; here its fastest
machine, see :meth:`~controller.compute.model.ComputeWorkload.pinned`), preemption allowed.

1. Solve LP3 (21a-21e) and order the stages (the paper's jobs) by their LP completion time
   ``C~_s``, non-decreasing (ties by index).
2. Every machine lists its tasks in that stage order.
3. At time 0 and at every completion each machine rescans its list from the top and runs
   every task that fits in its remaining capacity, preempting the others. Machines act
   independently.

Per machine the volume of the first ``j`` stages is at most ``2 c_i C~_j``, which with
``p <= C~_j`` gives ``C_j <= 4 C~_j`` per stage and the ratio 4 against LP3 <= OPT.

Extensions (ours, outside the paper's analysis): tasks wait for their release and for their
stage's predecessor stages; for multi-stage jobs each stage is ordered with its job's
weight. ``online=True`` re-plans at epochs of growing length (algorithms.md 2.8).

References
----------
Shafiee & Ghaderi, Section 5 (Theorem 5.2), Appendix E (Lemmas E.1-E.3), Appendix F;
algorithms.md 2.7.
"""
from __future__ import annotations

import numpy as np

from controller.compute.lp import lp3
from controller.compute.model import ComputeArrays, as_arrays
from controller.compute.online import replan
from controller.compute.packing import list_schedule
from controller.compute.schedule import ComputeSchedule

NAME = "synchpack-3"
__all__ = ["schedule", "plan"]


def plan(a: ComputeArrays, background=()) -> ComputeSchedule:
    """The offline algorithm on ``a`` (see the module docstring)."""
    res = lp3(a, weights=a.job_weight[a.stage_job])
    rank = np.empty(a.n_stages)
    C = res.solution.stage_completion
    rank[np.lexsort((np.arange(a.n_stages), C))] = np.arange(a.n_stages)
    tasks = np.arange(a.n_tasks)
    prio = rank[a.task_stage] * (a.n_tasks + 1) + tasks
    pk = list_schedule(a, tasks, a.fastest, a.pmin, prio, preemptive=True,
                       one_per_task=False, background=background)
    info = {"lp": res.value, "lp_seconds": res.seconds, "lp_C": C}
    return ComputeSchedule.from_segments(a, pk.segments(), NAME, info)


def schedule(instance, *, online: bool = False, tau0: float | None = None,
             growth: float = 2.0) -> ComputeSchedule:
    """Schedule ``instance`` with SynchPack-3.

    Parameters
    ----------
    instance : ComputeWorkload or ComputeArrays
        Tasks run on their fastest machine only.
    online : bool
        Re-plan at epoch boundaries ``tau_k = tau0 growth^k`` on the jobs that have
        arrived (preempting at each boundary) instead of planning once with every job.
    tau0, growth : float
        Epoch lengths (default ``tau0``: twice the mean inter-arrival time).

    Returns
    -------
    ComputeSchedule
        ``info["lp_C"]`` holds ``C~`` per stage (offline).

    References
    ----------
    Shafiee & Ghaderi, Section 5.2 (Algorithm 1), Theorem 5.2 (ratio 4).
    """
    a = as_arrays(instance)
    if online:
        return replan(a, plan, preemptive=True, tau0=tau0, growth=growth, name=NAME)
    return plan(a)
