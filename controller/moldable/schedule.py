"""A schedule of moldable jobs: per job its allotment, start, end and machines.

Every algorithm of :mod:`controller.moldable` returns a :class:`MoldableSchedule`: job
``i`` runs on the ``allotment[i]`` distinct machines ``machines[i]`` from ``start[i]`` to
``end[i] = start[i] + p_i(allotment[i])``, in one piece. From it follow the two criteria
of the paper, the makespan ``max_i C_i`` and the minsum ``sum_i w_i C_i``.

Examples
--------
>>> from controller.moldable.model import MoldableJob, MoldableWorkload
>>> w = MoldableWorkload(2, [MoldableJob("a", {1: 2.0, 2: 1.0}, 3.0),
...                          MoldableJob("b", {1: 1.0})])
>>> s = MoldableSchedule.build(w.arrays, [2, 1], [0.0, 1.0], "by hand")
>>> s.makespan, s.minsum, [m.tolist() for m in s.machines]
(2.0, 5.0, [[0, 1], [0]])
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from controller.moldable.model import MoldableArrays
from controller.moldable.profile import assign_machines

__all__ = ["MoldableSchedule"]


@dataclass(frozen=True, eq=False)
class MoldableSchedule:
    """Allotments, start times and machine sets of every job of ``arrays``.

    Attributes
    ----------
    arrays : MoldableArrays, the instance
    allotment : int array (n,), machines per job
    start : float array (n,), seconds
    machines : tuple of n int arrays, the machines each job holds (sorted, distinct)
    algorithm : str, the name of the algorithm that built it
    info : dict, what the algorithm reports (estimate, batches, seconds, ...)
    """

    arrays: MoldableArrays
    allotment: np.ndarray
    start: np.ndarray
    machines: tuple
    algorithm: str = ""
    info: dict = field(default_factory=dict)

    @classmethod
    def build(cls, arrays: MoldableArrays, allotment, start, algorithm: str = "",
              info: dict | None = None, machines: tuple | None = None) -> "MoldableSchedule":
        """A schedule from allotments and starts; machines assigned by
        :func:`~controller.moldable.profile.assign_machines` unless given."""
        q = np.asarray(allotment, dtype=np.int64)
        s = np.asarray(start, dtype=np.float64)
        if machines is None:
            e = s + arrays.p(q)
            machines = assign_machines(s, e, q, arrays.m, eps=1e-9 * max(1.0, float(e.max())))
        return cls(arrays, q, s, tuple(machines), algorithm, dict(info or {}))

    @cached_property
    def length(self) -> np.ndarray:
        """(n,) ``p_i(allotment_i)``."""
        return self.arrays.p(self.allotment)

    @cached_property
    def end(self) -> np.ndarray:
        """(n,) completion times ``C_i``."""
        return self.start + self.length

    @property
    def makespan(self) -> float:
        return float(self.end.max())

    @property
    def minsum(self) -> float:
        """``sum_i w_i C_i``."""
        return float(self.arrays.weight @ self.end)

    def as_dicts(self) -> list[dict]:
        """Id-based records ``{"job", "allotment", "start", "end", "machines"}``."""
        ids = self.arrays.ids or tuple(str(i) for i in range(self.arrays.n))
        return [{"job": ids[i], "allotment": int(self.allotment[i]),
                 "start": float(self.start[i]), "end": float(self.end[i]),
                 "machines": self.machines[i].tolist()} for i in range(self.arrays.n)]
