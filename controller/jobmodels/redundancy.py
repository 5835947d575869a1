"""The redundancy model: jobs with known work, redundant copies, machines of varying speed.

A joint workload with ``"model": "redundancy"`` is an instance of the redundancy paper
(:mod:`controller.redundancy`, algorithms.md section 4): every job is one stage of one
task carrying ``"work": W`` (no placement table: it may run on any machine, at that
machine's speed, as one or more copies), its release is its arrival; a machine may carry
a ``speed`` (:mod:`controller.redundancy.speed`: ``{"model": "ap-up", ..., "seed": s}``,
``{"trace": FILE}`` relative to the workload file, ``{"rate": r}``), without one it runs
at rate 1. No coflows, no arcs: the jobs are independent.

The policies are :data:`controller.redundancy.POLICIES` (``srpt+r``, ``srpt``,
``fair+r``, ``fair-share``, ``laps+r``, ``laps``; their options in the name:
``laps+r@beta=0.3``, ``srpt+r@assign=sticky``, ``srpt+r@slot=1``). The model is
a thin shell: the exact event simulator (:func:`controller.redundancy.simulate`) runs the
policy once, on construction (its decisions at each arrival and departure depend only on
the past, so simulating the whole online run at once gives what re-deciding at each
event would), and every plan is that run's remainder: one
:class:`~controller.jobmodel.Piece` per copy and checkpoint interval, its ``demand`` the
copy's share of the machine, its ``work`` the job's work. A job's copies run together
(``gang``) and a re-plan at an arrival cuts nothing (arrivals are checkpoints: the run's
pieces already end there).

A job may declare ``checkpoint_bytes`` (its state's size): its checkpoints then move the
state over the fabric as coflows (:mod:`controller.redundancy.transfers`), and such a
workload runs in :mod:`emulate.sim.redundancy` (``simulate_joint`` sends it there), not
through this model's plan; this model remains its free-checkpoint counterpart.

The run's records add, per job, ``arrival``, ``work``, ``completion`` and ``flowtime``,
and ``mean_flowtime`` / ``total_flowtime``; its segment lines are the copies'
constant-rate intervals ``{"job", "copy", "machine", "start", "end", "share", "work"}``
and the speed process's ``{"machine", "start", "end", "rate"}`` up to the last departure.

References
----------
Xu, de Veciana, Lau, Zhou; algorithms.md section 4; docs/redundancy.md.
"""
from __future__ import annotations

from bisect import bisect_left
from operator import attrgetter

import numpy as np

from controller.jobmodel import JobModel, JobModelError, Piece, register
from controller.model import WorkloadError
from controller.redundancy.policies import OPTIONS, POLICIES, parse
from controller.redundancy.simulator import Instance, Run, simulate
from controller.redundancy.speed import speed_of

__all__ = ["RedundancyModel", "redundancy_instance", "checkpoint_sizes", "has_transfers",
           "joint_from_redundancy", "job_records", "segment_lines"]


def redundancy_instance(workload) -> tuple[Instance, np.ndarray]:
    """The :class:`~controller.redundancy.Instance` of a joint redundancy workload, and per
    job of the instance (sorted by arrival) its task's index in ``workload.compute.arrays``.
    AP/UP machines are drawn as far as a run needs."""
    a = workload.compute.arrays
    tasks = {t.id: t for s in workload.stages for t in s.tasks}
    work = np.array([tasks[tid].work for tid in a.task_ids], dtype=np.float64)
    order = np.lexsort((np.arange(a.n_tasks), a.release))
    specs = [m.speed for m in workload.machines]
    speed = (lambda until: speed_of(specs, until)) if any(
        s is not None and "model" in s for s in specs) else speed_of(specs, 0.0)
    return (Instance(a.release[order], work[order], speed,
                     tuple(a.task_ids[k] for k in order)), order)


def checkpoint_sizes(workload, order: np.ndarray) -> np.ndarray:
    """Per job of :func:`redundancy_instance` (``order``: its tasks), its task's
    ``checkpoint_bytes`` (0: free checkpoints)."""
    tasks = {t.id: t for s in workload.stages for t in s.tasks}
    ids = workload.compute.arrays.task_ids
    return np.array([tasks[ids[q]].checkpoint_bytes for q in order], dtype=np.float64)


def has_transfers(workload) -> bool:
    """Whether ``workload`` is a redundancy workload some of whose jobs move their
    checkpoints (``checkpoint_bytes`` > 0): it runs in :mod:`emulate.sim.redundancy`."""
    return getattr(workload, "model", None) == RedundancyModel.name and any(
        t.checkpoint_bytes > 0 for s in workload.stages for t in s.tasks)


def job_records(workload, instance: Instance, order: np.ndarray, completion) -> list[dict]:
    """Per joint job (in ``workload.jobs`` order) ``id``, ``weight``, ``release``,
    ``arrival``, ``work``, ``completion`` and ``flowtime``; ``completion`` per job of
    ``instance`` (whose tasks are ``order``)."""
    a = workload.compute.arrays
    pos = np.empty(a.n_tasks, dtype=np.int64)
    pos[order] = np.arange(len(order))
    out = []
    for s in workload.stages:
        j = int(pos[a.task_index[s.tasks[0].id]])
        arrival, end = float(instance.arrival[j]), float(completion[j])
        out.append({"id": workload.job_of(s.id), "release": arrival, "arrival": arrival,
                    "work": float(instance.work[j]), "completion": end,
                    "flowtime": end - arrival})
    weight = {j.id: j.weight for j in workload.jobs}
    by_id = {r["id"]: r for r in out}
    return [{"id": j.id, "weight": weight[j.id], **{k: v for k, v in by_id[j.id].items()
                                                     if k != "id"}} for j in workload.jobs]


def segment_lines(run: Run, ids, machine_ids, until: float | None = None) -> list[dict]:
    """The segment lines of a run: every copy's constant-rate segments ``{"job", "copy",
    "machine", "start", "end", "share", "work"}`` (:meth:`Run.segments
    <controller.redundancy.simulator.Run.segments>`) and the speed process's ``{"machine",
    "start", "end", "rate"}`` up to ``until`` (default: the last departure or the last
    copy's end)."""
    s = run.segments()
    out = [{"job": ids[j], "copy": int(c), "machine": machine_ids[m], "start": float(a),
            "end": float(b), "share": float(sh), "work": float(w)}
           for j, c, m, a, b, sh, w in zip(s["job"], s["copy"], s["machine"], s["start"],
                                           s["end"], s["share"], s["work"])]
    if until is None:
        until = max([float(np.nanmax(run.completion)) if len(run.completion) else 0.0] +
                    [float(x) for x in s["end"]])
    out += [dict(d, machine=machine_ids[d["machine"]]) for d in run.speed.segments(until)]
    return out


def joint_from_redundancy(instance: Instance, fabric, *, specs=None, name: str = "redundancy",
                          checkpoint_bytes=None):
    """An :class:`~controller.redundancy.Instance` as a joint workload of the
    ``redundancy`` model: machine ``i`` on port ``i`` with ``specs[i]`` as its speed (None:
    rate 1), job ``x`` the joint job ``x`` of one stage ``x.s`` of one task ``x``
    (``checkpoint_bytes``: per job, or one size for all; default 0, free)."""
    from controller.compute.model import Machine, Stage, Task
    from controller.jobs import JointJob, JointWorkload
    specs = list(specs) if specs is not None else [None] * fabric.ports
    machines = [Machine(f"m{i}", 1.0, s) for i, s in enumerate(specs)]
    nbytes = np.broadcast_to(np.asarray(0.0 if checkpoint_bytes is None else checkpoint_bytes,
                                        dtype=np.float64), (instance.n_jobs,))
    stages, jobs = [], []
    for jid, r, w, b in zip(instance.ids, instance.arrival, instance.work, nbytes):
        stages.append(Stage(f"{jid}.s", [Task(jid, 1.0, {m.id: float(w) for m in machines},
                                              float(r), work=float(w),
                                              checkpoint_bytes=float(b))]))
        jobs.append(JointJob(jid, (stages[-1].id,)))
    return JointWorkload(fabric, machines, stages, (), jobs, name=name,
                         model=RedundancyModel.name)


@register
class RedundancyModel(JobModel):
    """Redundant copies on machines of varying speed, one exact event simulation; see the
    module docstring.

    Attributes
    ----------
    instance : Instance, the jobs sorted by arrival
    order : int array, per job of ``instance``, its task in the compute arrays
    run : Run, the policy's run (copies recorded)
    """

    name = "redundancy"
    summary = "jobs with known work as redundant copies on machines of varying speed " \
              "(SRPT+R, Fair+R, LAPS+R and the same without redundancy)"
    option_names = OPTIONS
    preemptive = True
    gang = True

    def __init__(self, workload, policy: str):
        super().__init__(workload, policy)
        self.check_policy(policy)
        self.instance, self.order = redundancy_instance(workload)
        try:
            self.run: Run = simulate(self.instance, policy, record=True)
        except ValueError as e:                  # a machine that stops for good
            raise WorkloadError(f"workload {workload.name!r} under {policy}: {e}",
                                field="speed") from None
        n = self.arrays.n_tasks
        self.work_of = np.empty(n)
        self.work_of[self.order] = self.instance.work
        self.end = np.empty(n)
        self.end[self.order] = self.run.completion
        c = self.run.copies
        self.by_task: list[list[Piece]] = [[] for _ in range(n)]
        for j, m, s, e, sh in zip(c["job"].tolist(), c["machine"].tolist(),
                                  c["start"].tolist(), c["end"].tolist(),
                                  c["share"].tolist()):     # recorded in time order
            q = int(self.order[j])
            self.by_task[q].append(Piece(q, m, s, e, sh, float(self.work_of[q]),
                                         bool(e >= self.end[q])))
        self.starts = [[pc.start for pc in ps] for ps in self.by_task]
        self.comp = np.full(n, np.nan)
        self.planned = np.zeros(n, dtype=bool)
        self.pinned = np.full(n, -1, dtype=np.int64)
        self.replans = 0

    @classmethod
    def policies(cls) -> list[str]:
        return list(POLICIES)

    @classmethod
    def check_policy(cls, policy: str) -> None:
        """Raise :class:`~controller.jobmodel.JobModelError` for a policy this model does not
        run, an unknown option or a bad value (``laps+r@beta=2``)."""
        try:
            parse(policy)
        except ValueError as e:
            raise JobModelError(str(e)) from None


    @classmethod
    def check_workload(cls, workload) -> None:
        """Every job one stage of one task with ``work``, independent (no arcs, no
        coflows); no other model's field."""
        super().check_workload(workload)
        if workload.coflows:
            raise WorkloadError(f"redundancy jobs move no data; got coflow "
                                f"{workload.coflows[0].id!r}", field="coflows")
        for s in workload.stages:
            for t in s.tasks:
                if t.work is None:
                    raise WorkloadError(
                        f"task {t.id!r} has no work; in a workload with \"model\": "
                        f"\"redundancy\" every task gives \"work\": W", field="work")
        for j in workload.jobs:
            if len(j.stages) != 1 or len(workload.stages[workload.stage_index[j.stages[0]]]
                                         .tasks) != 1:
                raise WorkloadError(f"job {j.id!r}: a redundancy job is one stage of one "
                                    f"task", field="stages")

    # ------------------------------------------------------------------ hosts
    def capacity(self, machine: int) -> float:
        return 1.0

    def demand(self, task: int, machine: int) -> float:
        """At most the whole machine (a piece's own ``demand`` is its share)."""
        return 1.0

    def work(self, task: int, machine: int) -> float:
        return float(self.work_of[task])

    # ------------------------------------------------------------------ state
    @property
    def completion(self) -> np.ndarray:
        return self.comp

    def projected_completion(self) -> np.ndarray:
        out = np.where(self.planned, self.end, np.inf)
        done = ~np.isnan(self.comp)
        out[done] = self.comp[done]
        return out

    def segments(self) -> tuple:
        """The committed copies (task, machine, start, end), complete jobs only."""
        cols = [[], [], [], []]
        for q in np.flatnonzero(~np.isnan(self.comp)):
            for pc in self.by_task[q]:
                for col, v in zip(cols, (pc.task, pc.machine, pc.start, pc.end)):
                    col.append(v)
        return cols

    def placement(self, task: int) -> int:
        return int(self.pinned[task])

    def pin(self, task: int, machine: int) -> None:
        self.pinned[task] = machine

    # ------------------------------------------------------------------ steps
    def plan(self, t: float, tasks, follow: bool = True) -> tuple[Piece, ...]:
        """The run's pieces of ``tasks`` from ``t`` on."""
        pieces = [pc for q in tasks for pc in
                  self.by_task[q][bisect_left(self.starts[q], t - self.tol):]]
        pieces.sort(key=attrgetter("start", "task", "machine"))
        if follow:
            self.planned[np.asarray(tasks, dtype=np.int64)] = True
            self.replans += 1
        return tuple(pieces)

    def commit(self, t: float) -> None:
        done = self.planned & np.isnan(self.comp) & (self.end <= t + self.tol)
        self.comp[done] = self.end[done]

    def complete(self, tasks, times) -> None:
        self.comp[tasks] = times

    # ------------------------------------------------------------------ records
    def records(self) -> dict:
        """Per job ``arrival``, ``work``, ``completion``, ``flowtime`` (beside the joint
        record's ``id``, ``weight``, ``release``), ``mean_flowtime``, ``total_flowtime``,
        and how the run went (:meth:`Run.summary
        <controller.redundancy.simulator.Run.summary>`)."""
        run = self.run
        jobs = job_records(self.workload, self.instance, self.order, run.completion)
        return {"jobs": jobs, "mean_flowtime": run.mean_flowtime,
                "total_flowtime": run.total_flowtime, **run.summary()}

    def segment_records(self) -> list[dict]:
        """The copies' constant-rate segments and the speed process's (module docstring)."""
        return segment_lines(self.run, self.instance.ids, self.arrays.machine_ids)
