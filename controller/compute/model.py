"""The compute model: machines with capacities, tasks that pack into them, stages and jobs.

A *machine* has a ``capacity``: a vector of resources (memory, cores, ...). The packing
algorithms use the first resource only (memory, the bottleneck in the paper's trace); the
others are carried for the engines and for later policies.

A *task* needs ``size`` of a machine's resources for as long as it runs (the paper's
``a_kj``; the sizes of the tasks running on a machine, its *height*, never exceed its
capacity). It may run only on the machines of its *placement set*, given as ``placement``:
machine id -> processing time in seconds on that machine (``p^i_kj``; a remote machine
typically has a penalised, longer time). A task that has run ``s`` seconds on machine
``i`` has done the fraction ``s / p^i`` of its work; it is complete when its fractions sum
to 1. It may not start before its ``release`` (seconds). Machines of the placement set
that are too small for the task are dropped, as in the paper; a task that fits on none of
them is an error.

A *stage* is a set of tasks that completes when all of them complete (the paper's
synchronisation constraint; the paper calls a stage a "job" and uses the two words
interchangeably). A *compute job* is a weighted set of stages with precedence inside the
job: ``Stage.after`` lists the stages of the same job that must complete before any task
of the stage may start (map -> reduce). The job completes with its last stage; the
objective is the weighted sum of job completion times. Its arrival is the earliest release
of its tasks.

Everything is validated on construction; errors are :class:`controller.model.WorkloadError`
naming the field. Algorithms work on :class:`ComputeArrays`, the flat numpy view built once
by :attr:`ComputeWorkload.arrays`, or on a residual sub-instance of it
(:meth:`ComputeArrays.subset`, used by the online re-planning driver).

Examples
--------
>>> m = [Machine("m0", (4.0,)), Machine("m1", (2.0,))]
>>> t = Task("t0", size=1.0, placement={"m0": 3.0, "m1": 6.0})
>>> w = ComputeWorkload(m, [ComputeJob("j0", [Stage("s0", [t])], weight=2.0)])
>>> w.arrays.proc.tolist()
[[3.0, 6.0]]

References
----------
Shafiee & Ghaderi, "Scheduling Parallel-Task Jobs Subject to Packing and Placement
Constraints", Section 2 (model); algorithms.md section 2.1.
"""
from __future__ import annotations

import copyreg
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import Iterable, Mapping

import numpy as np

from controller.model import MAX_BYTES, MAX_SECONDS, MAX_WEIGHT, WorkloadError, _check_number

__all__ = ["Machine", "Task", "Stage", "ComputeJob", "ComputeWorkload", "ComputeArrays",
           "as_arrays", "WorkloadError"]

# read-only mappings (task placements, joint workloads' output bytes) pickle as copies: the
# emulation hands workloads to the controller process as pickles
def _read_only(d: dict) -> MappingProxyType:
    return MappingProxyType(d)


copyreg.pickle(MappingProxyType, lambda m: (_read_only, (dict(m),)))


def _vector(value, where: str, name: str, *, positive_first: bool) -> tuple[float, ...]:
    vals = (value,) if isinstance(value, (int, float, np.integer, np.floating)) else value
    try:
        vals = tuple(vals)
    except TypeError:
        raise WorkloadError(f"{where}: {name} must be a number or a list of numbers, "
                            f"got {value!r}", field=name) from None
    if not vals:
        raise WorkloadError(f"{where}: {name} must list at least one resource", field=name)
    for v in vals:
        _check_number(v, where, name, minimum=0.0)
    if positive_first and not vals[0] > 0:
        raise WorkloadError(f"{where}: {name}[0] (the packed resource) must be > 0, "
                            f"got {vals[0]!r}", field=name)
    return tuple(float(v) for v in vals)


def _check_id(value, what: str):
    if not isinstance(value, str) or not value:
        raise WorkloadError(f"{what} id must be a non-empty string, got {value!r}", field="id")


@dataclass(frozen=True)
class Machine:
    """A machine with a ``capacity`` per resource (the first one is packed).

    ``speed`` (optional) is the machine's speed process under the ``redundancy`` job model
    (:mod:`controller.redundancy.speed`: ``{"model": "ap-up", ..., "seed": s}``,
    ``{"trace": FILE}`` or ``{"rate": r}``; checked by the reader); None runs at rate 1.
    Other models allow none.
    """

    id: str
    capacity: tuple[float, ...] = (1.0,)
    speed: Mapping | None = field(default=None, compare=False)

    def __post_init__(self):
        _check_id(self.id, "machine")
        object.__setattr__(self, "capacity", _vector(self.capacity, f"machine {self.id!r}",
                                                     "capacity", positive_first=True))


@dataclass(frozen=True, eq=False)
class Task:
    """A task of ``size`` that runs ``placement[machine]`` seconds on a machine of its set.

    ``moldable`` (optional) is a moldable job's table ``{q: seconds}``: the task may run
    on ``q`` machines at once for that long (the ``moldable`` job model,
    :mod:`controller.jobmodels.moldable`; other models ignore it). Validated as a
    :class:`~controller.moldable.model.MoldableJob` (integer allotments, monotone).

    ``delay`` (seconds, >= 0, default 0) is a map task's shuffle delay: no task of a
    successor stage starts before ``delay`` after this task ends (the ``msjo`` job model,
    :mod:`controller.jobmodels.msjo`; other models allow no delay).

    ``work`` (optional, > 0) is a redundancy job's work: the task may run on any machine,
    at that machine's speed, as one or more copies (the ``redundancy`` job model,
    :mod:`controller.jobmodels.redundancy`; other models allow none).

    ``checkpoint_bytes`` (bytes, >= 0, default 0) is a redundancy job's checkpoint state:
    at each checkpoint it is copied from the leading copy's machine to every machine
    that will run a copy and does not hold it, as a coflow on the fabric (0: checkpoints
    are free, the paper's model; :mod:`controller.redundancy.transfers`).
    """

    id: str
    size: tuple[float, ...]
    placement: Mapping[str, float]
    release: float = 0.0
    moldable: Mapping[int, float] | None = None
    delay: float = 0.0
    work: float | None = None
    checkpoint_bytes: float = 0.0

    def __post_init__(self):
        _check_id(self.id, "task")
        where = f"task {self.id!r}"
        object.__setattr__(self, "size", _vector(self.size, where, "size",
                                                 positive_first=True))
        if not isinstance(self.placement, Mapping):
            raise WorkloadError(f"{where}: placement must map machine id -> processing time "
                                f"(seconds), got {self.placement!r}", field="placement")
        if not self.placement:
            raise WorkloadError(f"{where}: empty placement set (list at least one machine "
                                f"with its processing time)", field="placement")
        pl = {}
        for m, p in self.placement.items():
            _check_id(m, f"{where}: placement machine")
            _check_number(p, f"{where} on machine {m!r}", "placement", minimum=0.0,
                          maximum=MAX_SECONDS)
            if not p > 0:
                raise WorkloadError(f"{where}: processing time on machine {m!r} must be > 0 "
                                    f"seconds, got {p!r}", field="placement")
            pl[m] = float(p)
        object.__setattr__(self, "placement", MappingProxyType(pl))
        _check_number(self.release, where, "release", minimum=0.0, maximum=MAX_SECONDS)
        _check_number(self.delay, where, "delay", minimum=0.0, maximum=MAX_SECONDS)
        if self.work is not None:
            _check_number(self.work, where, "work", minimum=0.0, maximum=MAX_SECONDS)
            if not self.work > 0:
                raise WorkloadError(f"{where}: work must be > 0, got {self.work!r}",
                                    field="work")
            object.__setattr__(self, "work", float(self.work))
        _check_number(self.checkpoint_bytes, where, "checkpoint_bytes", minimum=0.0,
                      maximum=MAX_BYTES)
        object.__setattr__(self, "checkpoint_bytes", float(self.checkpoint_bytes))
        if self.moldable is not None:
            from controller.jobmodels.moldable import moldable_table
            object.__setattr__(self, "moldable",
                               MappingProxyType(moldable_table(self.id, self.moldable)))


@dataclass(frozen=True, eq=False)
class Stage:
    """A set of tasks that completes when all of them do; starts after ``after``."""

    id: str
    tasks: tuple[Task, ...]
    after: tuple[str, ...] = ()

    def __post_init__(self):
        _check_id(self.id, "stage")
        object.__setattr__(self, "tasks", tuple(self.tasks))
        object.__setattr__(self, "after", tuple(self.after))
        if not self.tasks:
            raise WorkloadError(f"stage {self.id!r} has no tasks", field="tasks")
        for t in self.tasks:
            if not isinstance(t, Task):
                raise WorkloadError(f"stage {self.id!r}: tasks must be Task objects, "
                                    f"got {t!r}", field="tasks")


@dataclass(frozen=True, eq=False)
class ComputeJob:
    """A weighted set of stages (a DAG through ``Stage.after``); completes with its last.

    ``priority`` is a label (e.g. the trace's priority class) that weight schemes may use;
    it does not enter the algorithms.
    """

    id: str
    stages: tuple[Stage, ...]
    weight: float = 1.0
    priority: int = 0

    def __post_init__(self):
        _check_id(self.id, "job")
        object.__setattr__(self, "stages", tuple(self.stages))
        _check_number(self.weight, f"job {self.id!r}", "weight", minimum=0.0,
                      maximum=MAX_WEIGHT)
        if not self.weight > 0:
            raise WorkloadError(f"job {self.id!r}: weight must be > 0, got {self.weight!r}",
                                field="weight")
        if not self.stages:
            raise WorkloadError(f"job {self.id!r} has no stages", field="stages")
        ids = [s.id for s in self.stages]
        for s in self.stages:
            for a in s.after:
                if a not in ids:
                    raise WorkloadError(f"job {self.id!r}: stage {s.id!r} is after unknown "
                                        f"stage {a!r} (only stages of the same job)",
                                        field="after")
                if a == s.id:
                    raise WorkloadError(f"job {self.id!r}: stage {s.id!r} is after itself",
                                        field="after")
        if not any(s.after for s in self.stages):
            return
        import networkx as nx  # here: listing the policies need not import it
        g = nx.DiGraph()
        g.add_nodes_from(ids)
        g.add_edges_from((a, s.id) for s in self.stages for a in s.after)
        if not nx.is_directed_acyclic_graph(g):
            cyc = " -> ".join(a for a, _ in nx.find_cycle(g))
            raise WorkloadError(f"job {self.id!r}: stages form a cycle {cyc} -> ...",
                                field="after")

    @property
    def tasks(self) -> tuple[Task, ...]:
        return tuple(t for s in self.stages for t in s.tasks)

    @property
    def release(self) -> float:
        """Arrival of the job: the earliest release of its tasks (seconds)."""
        return min(t.release for t in self.tasks)


@dataclass(frozen=True, eq=False)
class ComputeWorkload:
    """Machines and compute jobs. Validated on construction (ids, placement, sizes)."""

    machines: tuple[Machine, ...]
    jobs: tuple[ComputeJob, ...]
    name: str = "compute"

    def __post_init__(self):
        object.__setattr__(self, "machines", tuple(self.machines))
        object.__setattr__(self, "jobs", tuple(self.jobs))
        if not self.machines:
            raise WorkloadError("a compute workload needs at least one machine",
                                field="machines")
        mach = {}
        for n, m in enumerate(self.machines):
            if not isinstance(m, Machine):
                raise WorkloadError(f"machines[{n}] must be a Machine, got {m!r}",
                                    field="machines")
            if m.id in mach:
                raise WorkloadError(f"duplicate machine id {m.id!r} (machines[{mach[m.id]}] "
                                    f"and machines[{n}])", field="machines")
            mach[m.id] = n
        seen = {"job": {}, "stage": {}, "task": {}}
        for j in self.jobs:
            if not isinstance(j, ComputeJob):
                raise WorkloadError(f"jobs must be ComputeJob objects, got {j!r}", field="jobs")
            for kind, obj in [("job", j)] + [("stage", s) for s in j.stages] + \
                             [("task", t) for t in j.tasks]:
                if obj.id in seen[kind]:
                    raise WorkloadError(f"duplicate {kind} id {obj.id!r} (in jobs "
                                        f"{seen[kind][obj.id]!r} and {j.id!r})", field="id")
                seen[kind][obj.id] = j.id
            for t in j.tasks:
                fits = False
                for m in t.placement:
                    if m not in mach:
                        raise WorkloadError(f"task {t.id!r}: placement names unknown machine "
                                            f"{m!r} (known: {', '.join(mach)})",
                                            field="placement")
                    cap = self.machines[mach[m]].capacity
                    if all(k < len(cap) and t.size[k] <= cap[k] + 1e-12 or
                           k >= len(cap) and t.size[k] == 0 for k in range(len(t.size))):
                        fits = True
                if not fits:
                    raise WorkloadError(
                        f"task {t.id!r} of size {list(t.size)} is bigger than every machine "
                        f"of its placement set {sorted(t.placement)} (capacities "
                        f"{[list(self.machines[mach[m]].capacity) for m in t.placement]})",
                        field="size")

    # ------------------------------------------------------------------ views
    @cached_property
    def machine_index(self) -> dict[str, int]:
        return {m.id: n for n, m in enumerate(self.machines)}

    @cached_property
    def tasks(self) -> tuple[Task, ...]:
        return tuple(t for j in self.jobs for t in j.tasks)

    @cached_property
    def arrays(self) -> "ComputeArrays":
        return ComputeArrays.from_workload(self)

    @property
    def total_weight(self) -> float:
        return float(sum(j.weight for j in self.jobs))

    def replace(self, **changes) -> "ComputeWorkload":
        f = dict(machines=self.machines, jobs=self.jobs, name=self.name)
        f.update(changes)
        return ComputeWorkload(**f)

    def with_weights(self, weights: Iterable[float]) -> "ComputeWorkload":
        """The same workload with job weights replaced (one per job, in order)."""
        weights = list(weights)
        if len(weights) != len(self.jobs):
            raise WorkloadError(f"{len(weights)} weights for {len(self.jobs)} jobs",
                                field="weight")
        return self.replace(jobs=[ComputeJob(j.id, j.stages, float(w), j.priority)
                                  for j, w in zip(self.jobs, weights)])

    def with_releases(self, releases: Iterable[float]) -> "ComputeWorkload":
        """The same workload with every task of job ``n`` released at ``releases[n]``."""
        releases = list(releases)
        if len(releases) != len(self.jobs):
            raise WorkloadError(f"{len(releases)} releases for {len(self.jobs)} jobs",
                                field="release")
        jobs = []
        for j, r in zip(self.jobs, releases):
            stages = [Stage(s.id, [Task(t.id, t.size, t.placement, float(r)) for t in s.tasks],
                            s.after) for s in j.stages]
            jobs.append(ComputeJob(j.id, stages, j.weight, j.priority))
        return self.replace(jobs=jobs)

    def pinned(self) -> "ComputeWorkload":
        """Single-machine placement: every task keeps only its fastest machine.

        Ties go to the machine listed first in the task's placement (the generators list the
        machine the trace ran the task on first). This is the setting of SynchPack-3, PSRS
        and Tetris-P (the paper's "original trace", each task on its machine).
        """
        a = self.arrays
        jobs = []
        for j in self.jobs:
            stages = []
            for s in j.stages:
                ts = []
                for t in s.tasks:
                    k = a.task_index[t.id]
                    i = int(a.fastest[k])
                    mid = self.machines[i].id
                    ts.append(Task(t.id, t.size, {mid: t.placement[mid]}, t.release))
                stages.append(Stage(s.id, ts, s.after))
            jobs.append(ComputeJob(j.id, stages, j.weight, j.priority))
        return self.replace(jobs=jobs, name=self.name + "-pinned")

    # ------------------------------------------------------------------ JSON
    def to_dict(self) -> dict:
        """Plain-JSON form: ``{"machines": [...], "jobs": [...]}``."""
        return {
            "name": self.name,
            "machines": [{"id": m.id, "capacity": list(m.capacity)} for m in self.machines],
            "jobs": [{"id": j.id, "weight": j.weight, "priority": j.priority,
                      "stages": [{"id": s.id, "after": list(s.after),
                                  "tasks": [{"id": t.id, "size": list(t.size),
                                             "placement": dict(t.placement),
                                             "release": t.release} for t in s.tasks]}
                                 for s in j.stages]} for j in self.jobs],
        }

    @classmethod
    def from_dict(cls, d: dict) -> "ComputeWorkload":
        """Inverse of :meth:`to_dict`; missing keys name the field that is missing."""
        def need(obj, key, where):
            if not isinstance(obj, dict) or key not in obj:
                raise WorkloadError(f"{where}: missing {key!r}", field=key)
            return obj[key]
        machines = [Machine(need(m, "id", f"machines[{n}]"), m.get("capacity", (1.0,)))
                    for n, m in enumerate(need(d, "machines", "workload"))]
        jobs = []
        for n, j in enumerate(need(d, "jobs", "workload")):
            stages = []
            for k, s in enumerate(need(j, "stages", f"jobs[{n}]")):
                tasks = [Task(need(t, "id", f"jobs[{n}].stages[{k}].tasks[{q}]"),
                              need(t, "size", f"task {t.get('id')!r}"),
                              need(t, "placement", f"task {t.get('id')!r}"),
                              t.get("release", 0.0))
                         for q, t in enumerate(need(s, "tasks", f"jobs[{n}].stages[{k}]"))]
                stages.append(Stage(need(s, "id", f"jobs[{n}].stages[{k}]"), tasks,
                                    tuple(s.get("after", ()))))
            jobs.append(ComputeJob(need(j, "id", f"jobs[{n}]"), stages, j.get("weight", 1.0),
                                   j.get("priority", 0)))
        return cls(machines, jobs, d.get("name", "compute"))


@dataclass(frozen=True, eq=False)
class ComputeArrays:
    """Flat numpy view of a compute workload (or of a residual part of one).

    Attributes
    ----------
    machine_ids : tuple of str, one per machine
    capacity : float array (M,), the packed (first) resource
    task_ids : tuple of str, one per task
    size : float array (n,), the packed resource of each task
    proc : float array (n, M)
        Processing time (seconds) of a task on a machine; ``inf`` outside its placement
        set (and on machines too small for it).
    release : float array (n,), seconds
    task_stage : int array (n,)
    stage_ids, job_ids : tuples of str
    stage_job : int array (S,)
    stage_tasks, stage_preds, stage_succs : lists (per stage) of int arrays
    job_weight : float array (J,)
    job_stages : list (per job) of int arrays
    orig_task, orig_stage, orig_job : int arrays
        Index of each task / stage / job in the full workload (identity unless this is a
        :meth:`subset`).
    fastest : int array (n,)
        The machine with the shortest processing time; ties go to the machine listed first
        in the task's placement.
    """

    machine_ids: tuple
    capacity: np.ndarray
    task_ids: tuple
    size: np.ndarray
    proc: np.ndarray
    release: np.ndarray
    task_stage: np.ndarray
    stage_ids: tuple
    stage_job: np.ndarray
    stage_tasks: list = field(repr=False)
    stage_preds: list = field(repr=False)
    job_ids: tuple = ()
    job_weight: np.ndarray = None
    job_stages: list = field(default=None, repr=False)
    orig_task: np.ndarray = None
    orig_stage: np.ndarray = None
    orig_job: np.ndarray = None
    fastest: np.ndarray = None

    def __post_init__(self):
        if self.fastest is None:
            f = self.proc.argmin(axis=1) if len(self.task_ids) else np.zeros(0, np.int64)
            object.__setattr__(self, "fastest", f.astype(np.int64))

    @classmethod
    def from_workload(cls, w: ComputeWorkload) -> "ComputeArrays":
        mi = w.machine_index
        cap = np.array([m.capacity[0] for m in w.machines], dtype=np.float64)
        task_ids, size, rel, tstage, proc_rows, fastest = [], [], [], [], [], []
        stage_ids, stage_job, stage_tasks, stage_preds, job_stages = [], [], [], [], []
        for jn, j in enumerate(w.jobs):
            sidx = {s.id: len(stage_ids) + k for k, s in enumerate(j.stages)}
            js = []
            for s in j.stages:
                sn = len(stage_ids)
                stage_ids.append(s.id)
                stage_job.append(jn)
                stage_preds.append(np.array(sorted(sidx[a] for a in s.after), dtype=np.int64))
                first = len(task_ids)
                for t in s.tasks:
                    row = np.full(len(w.machines), np.inf)
                    for m, p in t.placement.items():
                        c = w.machines[mi[m]].capacity
                        if all(k < len(c) and t.size[k] <= c[k] + 1e-12 or
                               k >= len(c) and t.size[k] == 0 for k in range(len(t.size))):
                            row[mi[m]] = p
                    best = min((p for m, p in t.placement.items() if np.isfinite(row[mi[m]])))
                    fastest.append(next(mi[m] for m, p in t.placement.items()
                                        if p == best and np.isfinite(row[mi[m]])))
                    task_ids.append(t.id)
                    size.append(t.size[0])
                    rel.append(t.release)
                    tstage.append(sn)
                    proc_rows.append(row)
                stage_tasks.append(np.arange(first, len(task_ids), dtype=np.int64))
                js.append(sn)
            job_stages.append(np.array(js, dtype=np.int64))
        n = len(task_ids)
        M = len(w.machines)
        return cls(
            machine_ids=tuple(m.id for m in w.machines), capacity=cap,
            task_ids=tuple(task_ids), size=np.array(size, dtype=np.float64),
            proc=np.array(proc_rows, dtype=np.float64).reshape(n, M),
            release=np.array(rel, dtype=np.float64),
            task_stage=np.array(tstage, dtype=np.int64), stage_ids=tuple(stage_ids),
            stage_job=np.array(stage_job, dtype=np.int64), stage_tasks=stage_tasks,
            stage_preds=stage_preds, job_ids=tuple(j.id for j in w.jobs),
            job_weight=np.array([j.weight for j in w.jobs], dtype=np.float64),
            job_stages=job_stages, orig_task=np.arange(n), orig_stage=np.arange(len(stage_ids)),
            orig_job=np.arange(len(w.jobs)), fastest=np.array(fastest, dtype=np.int64))

    # ------------------------------------------------------------------ sizes
    @property
    def n_tasks(self) -> int:
        return len(self.task_ids)

    @property
    def n_machines(self) -> int:
        return len(self.machine_ids)

    @property
    def n_stages(self) -> int:
        return len(self.stage_ids)

    @property
    def n_jobs(self) -> int:
        return len(self.job_ids)

    # ------------------------------------------------------------------ derived
    @cached_property
    def task_index(self) -> dict[str, int]:
        return {t: k for k, t in enumerate(self.task_ids)}

    @cached_property
    def allowed(self) -> np.ndarray:
        """(n, M) bool: machine in the task's (feasible) placement set."""
        return np.isfinite(self.proc)

    @cached_property
    def pmin(self) -> np.ndarray:
        """Shortest processing time of each task over its placement set."""
        return self.proc.min(axis=1) if self.n_tasks else np.zeros(0)

    @cached_property
    def local(self) -> np.ndarray:
        """(n, M) bool: machines on which the task runs at its shortest time (its locals)."""
        return self.proc <= self.pmin[:, None] * (1 + 1e-12)

    @cached_property
    def task_job(self) -> np.ndarray:
        return self.stage_job[self.task_stage]

    @cached_property
    def stage_succs(self) -> list:
        succ = [[] for _ in range(self.n_stages)]
        for s, preds in enumerate(self.stage_preds):
            for p in preds:
                succ[p].append(s)
        return [np.array(x, dtype=np.int64) for x in succ]

    @cached_property
    def stage_weight(self) -> np.ndarray:
        """Stage weights whose weighted sum of stage completions lower-bounds the job
        objective: a job's weight split evenly over its sink stages, 0 elsewhere."""
        w = np.zeros(self.n_stages)
        for j, stages in enumerate(self.job_stages):
            sinks = [s for s in stages if len(self.stage_succs[s]) == 0]
            for s in sinks:
                w[s] = self.job_weight[j] / len(sinks)
        return w

    @cached_property
    def job_release(self) -> np.ndarray:
        """Arrival of each job: the earliest release of its tasks."""
        r = np.full(self.n_jobs, np.inf)
        np.minimum.at(r, self.task_job, self.release)
        return r

    @cached_property
    def single_machine(self) -> bool:
        """True if every task has exactly one machine in its placement set."""
        return bool(np.all(self.allowed.sum(axis=1) == 1))

    @cached_property
    def has_precedence(self) -> bool:
        return any(len(p) for p in self.stage_preds)

    # ------------------------------------------------------------------ residuals
    def subset(self, tasks, remaining=None, t0: float = 0.0,
               extra_release=None) -> "ComputeArrays":
        """A residual instance: the given tasks with ``remaining`` fractions of their work.

        Times are shifted so that ``t0`` becomes 0: releases become ``max(0, r - t0)``
        (and at least ``extra_release[k]`` where given, in the new time frame).
        Processing times are scaled by the remaining fraction. Stages and jobs are kept if
        they have a kept task; precedence arcs between kept stages are kept. The
        ``orig_*`` indices point into the full workload.
        """
        tasks = np.asarray(tasks, dtype=np.int64)
        frac = np.ones(len(tasks)) if remaining is None else np.asarray(remaining, float)
        stages = np.unique(self.task_stage[tasks])
        snew = {int(s): k for k, s in enumerate(stages)}
        jobs = np.unique(self.stage_job[stages])
        jnew = {int(j): k for k, j in enumerate(jobs)}
        order = np.lexsort((tasks, np.array([snew[int(s)] for s in self.task_stage[tasks]])))
        tasks, frac = tasks[order], frac[order]
        rel = np.maximum(self.release[tasks] - t0, 0.0)
        if extra_release is not None:
            rel = np.maximum(rel, np.asarray(extra_release, float)[order])
        ts = np.array([snew[int(s)] for s in self.task_stage[tasks]], dtype=np.int64)
        stage_tasks = [np.flatnonzero(ts == k) for k in range(len(stages))]
        stage_preds = [np.array(sorted(snew[int(p)] for p in self.stage_preds[s]
                                       if int(p) in snew), dtype=np.int64) for s in stages]
        stage_job = np.array([jnew[int(self.stage_job[s])] for s in stages], dtype=np.int64)
        job_stages = [np.flatnonzero(stage_job == k) for k in range(len(jobs))]
        return ComputeArrays(
            machine_ids=self.machine_ids, capacity=self.capacity,
            task_ids=tuple(self.task_ids[k] for k in tasks), size=self.size[tasks],
            proc=self.proc[tasks] * frac[:, None], release=rel, task_stage=ts,
            stage_ids=tuple(self.stage_ids[s] for s in stages), stage_job=stage_job,
            stage_tasks=stage_tasks, stage_preds=stage_preds,
            job_ids=tuple(self.job_ids[j] for j in jobs), job_weight=self.job_weight[jobs],
            job_stages=job_stages, orig_task=self.orig_task[tasks],
            orig_stage=self.orig_stage[stages], orig_job=self.orig_job[jobs],
            fastest=self.fastest[tasks])


def as_arrays(instance) -> ComputeArrays:
    """The flat view of a :class:`ComputeWorkload`, or the :class:`ComputeArrays` itself."""
    if isinstance(instance, ComputeWorkload):
        return instance.arrays
    if isinstance(instance, ComputeArrays):
        return instance
    raise TypeError(f"expected a ComputeWorkload or ComputeArrays, got {type(instance).__name__}")
