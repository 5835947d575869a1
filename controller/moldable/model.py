"""Moldable jobs on identical machines: the model of the bi-criteria paper.

A platform of ``m`` identical machines runs ``n`` independent *moldable* jobs, all
available at time 0 (offline). Job ``i`` has a weight ``w_i > 0`` and a processing time
``p_i(q)`` for every *allowed allotment* ``q`` (a number of machines). The scheduler
chooses ``q`` once, before the job starts; the job then holds exactly ``q`` distinct
machines for ``p_i(q)`` seconds, in one piece (no preemption, no change of ``q``, no
migration). Allotments not listed are not allowed (a job that needs at least 4 machines,
or runs on powers of two only, lists just those).

Jobs are *monotone* (Section 2 of the paper): over the allowed allotments, sorted, the
time ``p_i(q)`` is non-increasing and the work ``q p_i(q)`` non-decreasing (more machines
never slow a job down, and never make it cheaper). A job that breaks this is an error
(:class:`~controller.model.WorkloadError` naming the job and the field), as is an
allotment larger than ``m``.

The two criteria are the makespan ``Cmax = max_i C_i`` and the *minsum*
``sum_i w_i C_i``.

A job is given by a table ``{q: seconds}`` or by a speedup model
(:mod:`controller.moldable.speedup`), e.g. ``{"sequential": 10.0, "model": "amdahl",
"parallel_fraction": 0.9}``, expanded for ``q = 1..m``. Objects are frozen and validated
on construction; the algorithms work on :class:`MoldableArrays`, the numpy view built once
by :attr:`MoldableWorkload.arrays`.

Examples
--------
>>> w = MoldableWorkload(4, [MoldableJob("a", {1: 4.0, 2: 2.5, 4: 1.5}, weight=2.0),
...                          MoldableJob.from_spec("b", {"sequential": 3.0,
...                                                      "model": "linear"}, 4)])
>>> w.arrays.time.tolist()
[[4.0, 2.5, inf, 1.5], [3.0, 1.5, 1.0, 0.75]]
>>> w.arrays.allotment_for(2.0).tolist()     # smallest allotment that fits in 2 s
[4, 2]

References
----------
Dutot, Eyraud, Mounié, Trystram, "Bi-criteria Algorithm for Scheduling Jobs on Cluster
Platforms", Section 2; algorithms.md 5.1.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from types import MappingProxyType
from typing import Iterable, Mapping

import numpy as np

from controller.model import WorkloadError, _check_number, check_jobs
from controller.moldable import speedup

__all__ = ["MoldableJob", "MoldableWorkload", "MoldableArrays", "WorkloadError",
           "MONOTONE_RTOL"]

#: relative slack of the monotonicity checks (speedup models computed in floating point)
MONOTONE_RTOL = 1e-9


def _check_id(value):
    if not isinstance(value, str) or not value:
        raise WorkloadError(f"job id must be a non-empty string, got {value!r}", field="id")


def _allotment(q, where: str) -> int:
    if isinstance(q, str) and q.strip().isdigit():
        q = int(q)
    if isinstance(q, bool) or not isinstance(q, (int, np.integer)) or q < 1:
        raise WorkloadError(f"{where}: allotment {q!r} must be an integer >= 1 (machines)",
                            field="times")
    return int(q)


@dataclass(frozen=True, eq=False)
class MoldableJob:
    """A moldable job: ``times[q]`` seconds on ``q`` machines, for each allowed ``q``.

    Attributes
    ----------
    id : str
    times : mapping int -> float
        The allowed allotments and their processing times (seconds, > 0); monotone.
    weight : float, > 0
    """

    id: str
    times: Mapping[int, float]
    weight: float = 1.0

    def __post_init__(self):
        _check_id(self.id)
        where = f"job {self.id!r}"
        _check_number(self.weight, where, "weight", minimum=0.0)
        if not self.weight > 0:
            raise WorkloadError(f"{where}: weight must be > 0, got {self.weight!r}",
                                field="weight")
        if not isinstance(self.times, Mapping) or not self.times:
            raise WorkloadError(f"{where}: times must map allotment (machines) -> seconds, "
                                f"with at least one entry, got {self.times!r}", field="times")
        tab = {}
        for q, p in self.times.items():
            q = _allotment(q, where)
            _check_number(p, f"{where} on {q} machines", "times", minimum=0.0)
            if not p > 0:
                raise WorkloadError(f"{where}: time on {q} machines must be > 0 seconds, "
                                    f"got {p!r}", field="times")
            tab[q] = float(p)
        qs = sorted(tab)
        for a, b in zip(qs, qs[1:]):
            if tab[b] > tab[a] * (1 + MONOTONE_RTOL):
                raise WorkloadError(
                    f"{where}: not monotone: p({b}) = {tab[b]:g} s > p({a}) = {tab[a]:g} s "
                    f"(the time must not grow with the allotment)", field="times")
            if b * tab[b] < a * tab[a] * (1 - MONOTONE_RTOL):
                raise WorkloadError(
                    f"{where}: not monotone: work {b} x p({b}) = {b * tab[b]:g} < "
                    f"{a} x p({a}) = {a * tab[a]:g} (the work q p(q) must not shrink with "
                    f"the allotment)", field="times")
        object.__setattr__(self, "times", MappingProxyType({q: tab[q] for q in qs}))
        object.__setattr__(self, "weight", float(self.weight))

    @classmethod
    def from_spec(cls, id: str, spec: Mapping, m: int, weight: float = 1.0) -> "MoldableJob":
        """A job from a table ``{q: seconds}`` or a speedup-model dict (``"model"`` key)
        expanded for ``q = 1..m``; see :mod:`controller.moldable.speedup`."""
        if isinstance(spec, Mapping) and "model" in spec:
            try:
                tab = speedup.table(spec, m)
            except ValueError as e:
                raise WorkloadError(f"job {id!r}: {e}", field="times") from None
            return cls(id, tab, weight)
        return cls(id, spec, weight)

    @property
    def allotments(self) -> tuple[int, ...]:
        return tuple(self.times)

    def to_dict(self) -> dict:
        return {"id": self.id, "weight": self.weight,
                "times": {str(q): p for q, p in self.times.items()}}


@dataclass(frozen=True, eq=False)
class MoldableWorkload:
    """``machines`` identical machines and the moldable jobs to run on them.

    Attributes
    ----------
    machines : int, ``m >= 1``
    jobs : tuple of MoldableJob, unique ids, every allotment at most ``m``
    name : str
    """

    machines: int
    jobs: tuple[MoldableJob, ...]
    name: str = ""

    def __post_init__(self):
        m = self.machines
        if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or m < 1:
            raise WorkloadError(f"machines must be an integer >= 1, got {m!r}",
                                field="machines")
        object.__setattr__(self, "machines", int(m))
        object.__setattr__(self, "jobs", tuple(self.jobs))
        if not self.jobs:
            raise WorkloadError("a moldable workload needs at least one job", field="jobs")
        check_jobs(self.jobs, MoldableJob)
        for j in self.jobs:
            big = [q for q in j.times if q > m]
            if big:
                raise WorkloadError(f"job {j.id!r}: allotment {big[0]} is larger than the "
                                    f"{m} machines", field="times")

    @classmethod
    def from_dict(cls, d: Mapping) -> "MoldableWorkload":
        """From ``{"machines": m, "jobs": [{"id", "weight", "times" | model keys}]}``.

        A job gives either ``"times"`` (a table ``{q: seconds}``) or a speedup model at
        its top level (``"sequential"``, ``"model"`` and the model's parameters).
        """
        if not isinstance(d, Mapping) or "machines" not in d or "jobs" not in d:
            raise WorkloadError("a moldable workload is {\"machines\": m, \"jobs\": [...]}",
                                field="machines" if isinstance(d, Mapping) else None)
        m = d["machines"]
        MoldableWorkload(m, [MoldableJob("probe", {1: 1.0})])  # validates m first
        jobs = []
        for k, jd in enumerate(d["jobs"]):
            if not isinstance(jd, Mapping):
                raise WorkloadError(f"jobs[{k}] must be an object, got {jd!r}", field="jobs")
            jid = jd.get("id", f"j{k}")
            weight = jd.get("weight", 1.0)
            if "times" in jd:
                spec = jd["times"]
            else:
                spec = {key: v for key, v in jd.items() if key not in ("id", "weight")}
                if "model" not in spec:
                    raise WorkloadError(f"job {jid!r}: give \"times\" ({{q: seconds}}) or a "
                                        f"speedup \"model\" with \"sequential\"",
                                        field="times")
            jobs.append(MoldableJob.from_spec(jid, spec, m, weight))
        return cls(m, jobs, d.get("name", ""))

    def to_dict(self) -> dict:
        return {"machines": self.machines, "name": self.name,
                "jobs": [j.to_dict() for j in self.jobs]}

    @cached_property
    def arrays(self) -> "MoldableArrays":
        return MoldableArrays.of(self)

    @property
    def total_weight(self) -> float:
        return float(sum(j.weight for j in self.jobs))

    def with_weights(self, weights: Iterable[float]) -> "MoldableWorkload":
        ws = list(weights)
        if len(ws) != len(self.jobs):
            raise ValueError(f"need {len(self.jobs)} weights, got {len(ws)}")
        return MoldableWorkload(self.machines, [MoldableJob(j.id, dict(j.times), float(w))
                                                for j, w in zip(self.jobs, ws)], self.name)


@dataclass(frozen=True, eq=False)
class MoldableArrays:
    """The numpy view of a moldable workload the algorithms run on.

    Attributes
    ----------
    m : int, machines
    weight : float array (n,)
    time : float array (n, m)
        ``time[i, q - 1] = p_i(q)``; ``inf`` where ``q`` is not an allowed allotment.
    ids : tuple of str
    """

    m: int
    weight: np.ndarray
    time: np.ndarray
    ids: tuple[str, ...] = ()

    @classmethod
    def of(cls, w: MoldableWorkload) -> "MoldableArrays":
        t = np.full((len(w.jobs), w.machines), np.inf)
        for i, j in enumerate(w.jobs):
            for q, p in j.times.items():
                t[i, q - 1] = p
        return cls(w.machines, np.array([j.weight for j in w.jobs]), t,
                   tuple(j.id for j in w.jobs))

    @property
    def n(self) -> int:
        return len(self.weight)

    @cached_property
    def allowed(self) -> np.ndarray:
        """bool (n, m), ``q`` allowed for job ``i``."""
        return np.isfinite(self.time)

    @cached_property
    def work(self) -> np.ndarray:
        """(n, m) ``q p_i(q)``, ``inf`` where not allowed."""
        return self.time * np.arange(1, self.m + 1)

    @cached_property
    def pmin(self) -> np.ndarray:
        """(n,) ``min_q p_i(q)``, the job's shortest time (at its largest allotment)."""
        return self.time.min(axis=1)

    @cached_property
    def qmin(self) -> np.ndarray:
        """(n,) smallest allowed allotment."""
        return np.argmax(self.allowed, axis=1) + 1

    @cached_property
    def qmax(self) -> np.ndarray:
        """(n,) largest allowed allotment."""
        return self.m - np.argmax(self.allowed[:, ::-1], axis=1)

    @cached_property
    def min_work(self) -> np.ndarray:
        """(n,) ``min_q q p_i(q)``, the work at the smallest allowed allotment."""
        return self.work.min(axis=1)

    def p(self, allotment) -> np.ndarray:
        """Times of every job at ``allotment`` (int array (n,), 1-based)."""
        q = np.asarray(allotment, dtype=np.int64)
        return self.time[np.arange(self.n), q - 1]

    def allotment_for(self, d: float) -> np.ndarray:
        """(n,) smallest allowed ``q`` with ``p_i(q) <= d``; 0 where none fits.

        Monotone times make "the smallest that fits" also the cheapest in work.
        """
        fits = self.time <= d
        return np.where(fits.any(axis=1), np.argmax(fits, axis=1) + 1, 0)
