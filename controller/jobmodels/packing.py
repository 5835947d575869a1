"""The packing model: tasks packed into machine capacities, re-planned online.

A machine has a capacity; a task holds its *size* of it while it runs, may run only on
the machines of its placement set, at a machine-dependent processing time, after the
stages it depends on (Shafiee & Ghaderi; algorithms.md section 2). The policies are
those of :mod:`controller.compute` (``synchpack-1/2/3``, ``psrs``, ``tetris-p/np``,
``jsq-mw``, ``fifo``): each is an offline algorithm on a residual instance, run again at
every joint event by :class:`~controller.compute.online.Replanner`:

* a preemptive policy's plan is cut at each event and every unfinished task keeps the
  fraction of its work that is left; without migration a task that has run keeps its
  machine;
* a non-preemptive policy's started tasks run to their end and occupy their machine as
  background in later plans.

A piece is a segment of the plan: the task holds its size of the machine for the
segment's length. A policy with single-machine placement (``ComputePolicy.pinned``) runs
every task on its fastest machine, so that is where a shuffle's consumer is placed.

References
----------
Shafiee & Ghaderi, "Scheduling Parallel-Task Jobs Subject to Packing and Placement
Constraints", Section 7 (online extension); algorithms.md 2.8.
"""
from __future__ import annotations

import numpy as np

from controller.compute import compute_policies, get_compute_policy, is_compute_policy
from controller.compute.online import Replanner
from controller.jobmodel import JobModel, Piece, register

__all__ = ["PackingModel"]


@register
class PackingModel(JobModel):
    """Tasks packed into machine capacities; see the module docstring.

    Attributes
    ----------
    cpol : ComputePolicy
    rp : Replanner, the plan being followed and the committed work
    """

    name = "packing"
    summary = "tasks packed into machine capacities under placement and precedence"

    def __init__(self, workload, policy: str):
        super().__init__(workload, policy)
        self.cpol = get_compute_policy(policy)
        self.preemptive = self.cpol.preemptive
        self.rp = Replanner(self.arrays, self.cpol.plan, preemptive=self.cpol.preemptive,
                            keep_machine=not self.cpol.migration)
        self.tol = self.rp.tol

    @classmethod
    def policies(cls) -> list[str]:
        return list(compute_policies())

    @classmethod
    def runs(cls, policy: str) -> bool:
        """A built-in compute policy, or a ``module:Class`` compute plug-in
        (:class:`~controller.compute.ComputePlanner`)."""
        return policy in compute_policies() or (":" in policy and is_compute_policy(policy))

    @property
    def replans(self) -> int:
        return self.rp.replans

    # ------------------------------------------------------------------ hosts
    def capacity(self, machine: int) -> float:
        return float(self.arrays.capacity[machine])

    def demand(self, task: int, machine: int) -> float:
        return float(self.arrays.size[task])

    def work(self, task: int, machine: int) -> float:
        return float(self.arrays.proc[task, machine])

    # ------------------------------------------------------------------ state
    @property
    def completion(self) -> np.ndarray:
        return self.rp.comp

    def projected_completion(self) -> np.ndarray:
        return self.rp.projected_completion()

    def segments(self) -> tuple:
        return self.rp.seg

    def placement(self, task: int) -> int:
        return int(self.rp.pinned[task])

    def pin(self, task: int, machine: int) -> None:
        self.rp.pin(task, machine)

    def fixed_machine(self, task: int) -> int:
        return int(self.rp.a.fastest[task]) if self.cpol.pinned else -1

    # ------------------------------------------------------------------ steps
    def plan(self, t: float, tasks, follow: bool = True) -> tuple[Piece, ...]:
        s = self.rp.plan_at(t, tasks, follow=follow)
        a, tol = self.arrays, self.tol
        orig = s.arrays.orig_task
        tc = s.task_completion
        out = []
        for j in np.argsort(s.start, kind="stable"):
            q = int(s.task[j])
            tk, i = int(orig[q]), int(s.machine[j])
            out.append(Piece(tk, i, t + float(s.start[j]), t + float(s.end[j]),
                             float(a.size[tk]), float(a.proc[tk, i]),
                             bool(s.end[j] >= tc[q] - tol)))
        return tuple(out)

    def commit(self, t: float) -> None:
        self.rp.commit(t)

    def complete(self, tasks, times) -> None:
        rp = self.rp
        rp.done[tasks], rp.comp[tasks], rp.frac[tasks] = True, times, 0.0
