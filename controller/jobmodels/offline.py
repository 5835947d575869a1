"""Offline job models: one schedule made on construction, every plan a part of it.

A model whose policies are offline algorithms (the moldable model's DEMT and baselines,
the MSJO model's MarS family) computes its policy's schedule once and answers every
:meth:`~controller.jobmodel.JobModel.plan` with that schedule's pieces of the tasks asked
for. :class:`OfflineModel` is the shared stateful shell (completions, committed segments,
pins, the current plan); a subclass says only how the schedule is made and cut into
:class:`~controller.jobmodel.Piece` objects (:meth:`OfflineModel.pieces`).
Non-preemptive: a piece that has started is committed with its planned end, and a task
completes with its pieces (a gang's share one start and one end). Every piece holds a
whole machine: the hosts are registered with capacity 1 and a piece demands 1 (a model
whose pieces share machines overrides :meth:`OfflineModel.capacity` and
:meth:`OfflineModel.demand`).
"""
from __future__ import annotations

from abc import abstractmethod

import numpy as np

from controller.jobmodel import JobModel, Piece

__all__ = ["OfflineModel"]


class OfflineModel(JobModel):
    """The shell of a job model that follows one offline schedule; see the module
    docstring. A subclass computes its schedule in ``__init__`` (after calling this one)
    and provides :meth:`pieces`."""

    preemptive = False

    def __init__(self, workload, policy: str):
        super().__init__(workload, policy)
        n = self.arrays.n_tasks
        self.comp = np.full(n, np.nan)
        self.pinned = np.full(n, -1, dtype=np.int64)
        self.seg: list[list] = [[], [], [], []]
        self.current: tuple[Piece, ...] = ()
        self.replans = 0

    @abstractmethod
    def pieces(self, tasks: list[int]) -> list[Piece]:
        """The schedule's pieces of ``tasks`` (indices in ``workload.compute.arrays``)."""
        raise NotImplementedError

    def pieces_at(self, t: float, tasks: list[int]) -> list[Piece]:
        """The pieces of ``tasks`` in a plan made at ``t``: the schedule's
        (:meth:`pieces`); a model that times its schedule's order at run time (the msjo
        model with shuffle coflows) overrides this."""
        return self.pieces(tasks)

    # ------------------------------------------------------------------ hosts
    def capacity(self, machine: int) -> float:
        return 1.0

    def demand(self, task: int, machine: int) -> float:
        return 1.0

    # ------------------------------------------------------------------ state
    @property
    def completion(self) -> np.ndarray:
        return self.comp

    def projected_completion(self) -> np.ndarray:
        out = np.where(np.isnan(self.comp), np.inf, self.comp)
        for pc in self.current:
            if np.isnan(self.comp[pc.task]):
                out[pc.task] = pc.end
        return out

    def segments(self) -> tuple:
        return self.seg

    def placement(self, task: int) -> int:
        return int(self.pinned[task])

    def pin(self, task: int, machine: int) -> None:
        self.pinned[task] = machine

    # ------------------------------------------------------------------ steps
    def plan(self, t: float, tasks, follow: bool = True) -> tuple[Piece, ...]:
        """The schedule's pieces of ``tasks`` (it was made offline, at 0;
        :meth:`pieces_at`)."""
        pieces = self.pieces_at(t, sorted(int(x) for x in tasks))
        pieces.sort(key=lambda pc: (pc.start, pc.task, pc.machine))
        if follow:
            self.current = tuple(pieces)
            self.replans += 1
        return tuple(pieces)

    def commit(self, t: float) -> None:
        started = [pc for pc in self.current
                   if pc.start < t - self.tol and np.isnan(self.comp[pc.task])]
        for pc in started:          # a gang's pieces share start and end
            for col, v in zip(self.seg, (pc.task, pc.machine, pc.start, pc.end)):
                col.append(v)
        for pc in started:
            self.comp[pc.task] = pc.end
        self.current = tuple(pc for pc in self.current if pc.start >= t - self.tol)

    def complete(self, tasks, times) -> None:
        self.comp[tasks] = times
