"""FIFO packing: the plain baseline.

Non-preemptive. Tasks are taken in order of arrival (release, then job, stage and task
order); at time 0 and at every event each waiting task, in that order, starts on the
fastest machine of its placement set that has room for it now. A task that fits nowhere
waits, and later tasks may pass it (greedy packing without head-of-line blocking). Job
weights are ignored.

It decides at every event with what has arrived, so it is online by nature.

References
----------
algorithms.md 2.8 (baselines); issue 4 ("a plain fifo packing").
"""
from __future__ import annotations

import numpy as np

from controller.compute.model import ComputeArrays, as_arrays
from controller.compute.packing import Packer
from controller.compute.schedule import ComputeSchedule

NAME = "fifo"
__all__ = ["schedule", "plan"]


def plan(a: ComputeArrays, background=()) -> ComputeSchedule:
    """FIFO greedy packing of ``a``; see the module docstring."""
    order = np.lexsort((np.arange(a.n_tasks), a.task_stage, a.release))
    pos = np.empty(a.n_tasks, dtype=np.int64)
    pos[order] = np.arange(a.n_tasks)
    mach_order = [np.argsort(a.proc[t], kind="stable")[:int(a.allowed[t].sum())]
                  for t in range(a.n_tasks)]
    size, tol = a.size, 1e-9 * max(1.0, float(a.capacity.max()))

    def rule(pk: Packer):
        free = pk.free.copy()
        waiting = np.flatnonzero(pk.avail & (pk.task_running < 0))
        out = []
        for t in waiting[np.argsort(pos[waiting])]:
            for i in mach_order[t]:
                if size[t] <= free[i] + tol:
                    out.append(pk.item_on(int(t), int(i)))
                    free[i] -= size[t]
                    break
        return out

    pk = Packer(a, background).run(rule, preemptive=False)
    return ComputeSchedule.from_segments(a, pk.segments(), NAME)


def schedule(instance, *, online: bool = True) -> ComputeSchedule:
    """Schedule ``instance`` with FIFO packing (``online`` has no effect: always online)."""
    return plan(as_arrays(instance))
