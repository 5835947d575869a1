"""The MSJO model: MapReduce jobs of unit-size tasks on identical machines.

*MapReduce server-job organisation* (MSJO, Ling et al. Section 3; algorithms.md 3.1).
A cluster has ``|M|`` identical *machines*. A *job* ``j`` has a release ``r_j``, a weight
``w_j``, a *map stage* ``T_j^M`` and a *reduce stage* ``T_j^R`` of *tasks*. Every task is
unit-size: it occupies a whole machine while it runs, for the same length ``p_u`` on every
machine, and it is non-preemptive (once started it runs to its end on one machine). Jobs
interleave freely.

A map task ``u`` carries a *shuffle delay* ``d_u``: its output reaches the reducers ``d_u``
after it finishes, so no reduce task ``v`` of its job starts before ``S_u + p_u + d_u``
(the paper's ``d_uv``; here ``d_uv = d_u`` for every reduce ``v``, as in its synthetic
workloads where the delay is proportional to the map's length). No task starts before its
release: the job's ``r_j`` unless the task has its own (the task-level model of Section 4
gives every task a release ``r_u``; a residual instance of the semi-online driver uses one
for reduces whose maps already ran).

A job completes with its last reduce, ``C_j = max_v C_v``; the objective is ``sum_j w_j
C_j`` (job level, MarS) or ``sum_u w_u C_u`` (task level, T-MarS), where a task's weight
is its job's unless the task gives one. The problem is NP-hard (it contains
``P || sum w_j C_j``).

Everything is validated on construction: a bad value is a
:class:`controller.model.WorkloadError` naming the job, the task and the field.
Algorithms work on :class:`MSJOArrays`, the flat numpy view :attr:`Cluster.arrays`: tasks
numbered job by job, each job's maps first, then its reduces.

Examples
--------
>>> from controller.msjo.model import Cluster, Job, Task
>>> c = Cluster(machines=2, jobs=(
...     Job("a", maps=(Task(1.0, delay=0.5), Task(2.0)), reduces=(Task(3.0),), weight=2.0),))
>>> a = c.arrays
>>> a.n_tasks, a.is_map.tolist(), a.ready_delay.tolist()
(3, [True, True, False], [1.5, 2.0, 0.0])

References
----------
Z. Ling, X. Yuan, J. Wang, X. Liu, J. Yang, "Joint scheduling of MapReduce jobs with
servers: performance bounds and experiments", Section 3 (model), Section 4 (task level).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from controller.model import WorkloadError, check_jobs

__all__ = ["Task", "Job", "Cluster", "MSJOArrays", "WorkloadError"]


def _number(value, *, where: str, name: str, positive: bool = False,
            allow_none: bool = False) -> float | None:
    if value is None and allow_none:
        return None
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise WorkloadError(f"{where}: {name} must be a number, got {value!r}",
                            field=name) from None
    if not math.isfinite(x):
        raise WorkloadError(f"{where}: {name} must be finite, got {value!r}", field=name)
    if positive and x <= 0:
        raise WorkloadError(f"{where}: {name} must be > 0, got {value!r}", field=name)
    if not positive and x < 0:
        raise WorkloadError(f"{where}: {name} must be >= 0, got {value!r}", field=name)
    return x


@dataclass(frozen=True)
class Task:
    """One map or reduce task.

    Attributes
    ----------
    length : float > 0
        ``p_u``, its processing time on any machine.
    delay : float >= 0
        ``d_u``, the shuffle delay after a *map* task (ignored, and must be 0, on a reduce).
    weight : float > 0 or None
        ``w_u`` of the task-level objective; None: the job's weight.
    release : float >= 0 or None
        ``r_u``; None: the job's release. A task's release is at least its job's.
    """

    length: float
    delay: float = 0.0
    weight: float | None = None
    release: float | None = None

    def checked(self, where: str) -> "Task":
        return Task(_number(self.length, where=where, name="length", positive=True),
                    _number(self.delay, where=where, name="delay"),
                    _number(self.weight, where=where, name="weight", positive=True,
                            allow_none=True),
                    _number(self.release, where=where, name="release", allow_none=True))


@dataclass(frozen=True)
class Job:
    """A MapReduce job: a map stage, then a reduce stage after the shuffle delays.

    Attributes
    ----------
    id : str
    maps, reduces : tuple of Task
        At least one reduce (the job completes with its last reduce). A job may have no
        map left (a residual job of the semi-online driver); the generators always give
        at least one.
    release : float >= 0
        ``r_j``.
    weight : float > 0
        ``w_j``.
    """

    id: str
    maps: tuple
    reduces: tuple
    release: float = 0.0
    weight: float = 1.0

    def __post_init__(self):
        if not isinstance(self.id, str) or not self.id:
            raise WorkloadError(f"job id must be a non-empty string, got {self.id!r}",
                                field="id")
        where = f"job {self.id!r}"
        object.__setattr__(self, "release", _number(self.release, where=where,
                                                    name="release"))
        object.__setattr__(self, "weight", _number(self.weight, where=where, name="weight",
                                                   positive=True))
        for stage in ("maps", "reduces"):
            tasks = getattr(self, stage)
            if isinstance(tasks, Task) or not isinstance(tasks, (tuple, list)):
                raise WorkloadError(f"{where}: {stage} must be a list of Task, got "
                                    f"{type(tasks).__name__}", field=stage)
            out = []
            for i, t in enumerate(tasks):
                tw = f"{where}, {stage[:-1]} task {i}"
                if not isinstance(t, Task):
                    raise WorkloadError(f"{tw}: expected a Task, got {type(t).__name__}",
                                        field=stage)
                t = t.checked(tw)
                if stage == "reduces" and t.delay != 0:
                    raise WorkloadError(f"{tw}: delay is the shuffle delay after a map "
                                        f"task; a reduce task must have delay 0, got "
                                        f"{t.delay!r}", field="delay")
                if t.release is not None and t.release < self.release:
                    raise WorkloadError(f"{tw}: release {t.release!r} is before the "
                                        f"job's release {self.release!r}", field="release")
                out.append(t)
            object.__setattr__(self, stage, tuple(out))
        if not self.reduces:
            raise WorkloadError(f"{where}: reduces must hold at least one task (a job "
                                f"completes with its last reduce)", field="reduces")

    @property
    def tasks(self) -> tuple:
        return self.maps + self.reduces


@dataclass(frozen=True)
class Cluster:
    """An MSJO instance: ``machines`` identical machines and the jobs to run on them.

    Attributes
    ----------
    machines : int >= 1
        ``|M|``.
    jobs : tuple of Job
        Unique ids.
    """

    machines: int
    jobs: tuple

    def __post_init__(self):
        if (isinstance(self.machines, bool) or not isinstance(self.machines, (int, np.integer))
                or self.machines < 1):
            raise WorkloadError(f"machines must be an integer >= 1, got {self.machines!r}",
                                field="machines")
        object.__setattr__(self, "machines", int(self.machines))
        jobs = tuple(self.jobs)
        check_jobs(jobs, Job)
        object.__setattr__(self, "jobs", jobs)

    @cached_property
    def arrays(self) -> "MSJOArrays":
        return MSJOArrays.from_cluster(self)

    def with_lengths(self, lengths) -> "Cluster":
        """The same cluster with task ``i`` (in :class:`MSJOArrays` order) of length
        ``lengths[i]`` and its delay scaled with it (the delay is a property of the map's
        output, proportional to its length in the paper's workloads)."""
        lengths = np.asarray(lengths, dtype=np.float64)
        old = self.arrays.length
        k = 0
        jobs = []
        for j in self.jobs:
            stages = []
            for tasks in (j.maps, j.reduces):
                new = []
                for t in tasks:
                    f = lengths[k] / old[k]
                    new.append(Task(float(lengths[k]), t.delay * f, t.weight, t.release))
                    k += 1
                stages.append(tuple(new))
            jobs.append(Job(j.id, stages[0], stages[1], j.release, j.weight))
        return Cluster(self.machines, tuple(jobs))


@dataclass(frozen=True, eq=False)
class MSJOArrays:
    """Flat numpy view of a :class:`Cluster`: tasks numbered job by job, maps first.

    Attributes
    ----------
    machines : int
    job_ids : tuple of str
    job_release, job_weight : float arrays, per job
    job_start, job_reduce_start : int arrays, per job, plus a final entry for
        ``job_start``: the tasks of job ``j`` are ``job_start[j]:job_start[j+1]``, its
        reduces from ``job_reduce_start[j]``.
    job : int array, per task, its job
    is_map : bool array, per task
    length, delay, weight, release : float arrays, per task (``weight`` and ``release``
        already defaulted to the job's)
    """

    machines: int
    job_ids: tuple
    job_release: np.ndarray
    job_weight: np.ndarray
    job_start: np.ndarray
    job_reduce_start: np.ndarray
    job: np.ndarray
    is_map: np.ndarray
    length: np.ndarray
    delay: np.ndarray
    weight: np.ndarray
    release: np.ndarray

    @classmethod
    def from_cluster(cls, c: Cluster) -> "MSJOArrays":
        job, is_map, length, delay, weight, release = [], [], [], [], [], []
        starts, rstarts = [0], []
        for k, j in enumerate(c.jobs):
            rstarts.append(starts[-1] + len(j.maps))
            for t, m in [(t, True) for t in j.maps] + [(t, False) for t in j.reduces]:
                job.append(k)
                is_map.append(m)
                length.append(t.length)
                delay.append(t.delay)
                weight.append(j.weight if t.weight is None else t.weight)
                release.append(j.release if t.release is None else t.release)
            starts.append(starts[-1] + len(j.tasks))
        f = lambda v: np.asarray(v, dtype=np.float64)
        return cls(machines=c.machines, job_ids=tuple(j.id for j in c.jobs),
                   job_release=f([j.release for j in c.jobs]),
                   job_weight=f([j.weight for j in c.jobs]),
                   job_start=np.asarray(starts, dtype=np.int64),
                   job_reduce_start=np.asarray(rstarts, dtype=np.int64),
                   job=np.asarray(job, dtype=np.int64), is_map=np.asarray(is_map, dtype=bool),
                   length=f(length), delay=f(delay), weight=f(weight), release=f(release))

    @property
    def n_tasks(self) -> int:
        return len(self.length)

    @property
    def n_jobs(self) -> int:
        return len(self.job_ids)

    @property
    def ready_delay(self) -> np.ndarray:
        """Per task, ``p_u + d_u`` for a map (how long after its start its output is at
        the reducers), ``0`` for a reduce."""
        return np.where(self.is_map, self.length + self.delay, 0.0)

    def maps_of(self, j: int) -> range:
        return range(int(self.job_start[j]), int(self.job_reduce_start[j]))

    def reduces_of(self, j: int) -> range:
        return range(int(self.job_reduce_start[j]), int(self.job_start[j + 1]))

    def job_map_finish(self, start) -> np.ndarray:
        """Per job, ``max_u S_u + p_u + d_u`` over its maps (``-inf`` if it has none)."""
        out = np.full(self.n_jobs, -np.inf)
        m = self.is_map
        np.maximum.at(out, self.job[m], np.asarray(start)[m] + self.ready_delay[m])
        return out
