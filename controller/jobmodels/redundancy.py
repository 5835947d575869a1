"""The redundancy model: jobs with known work, redundant copies, machines of varying speed.

A joint workload with ``"model": "redundancy"`` is an instance of the redundancy paper
(:mod:`controller.redundancy`, algorithms.md section 4): every job is one stage of one
task carrying ``"work": W`` (no placement table: it may run on any machine, at that
machine's speed, as one or more copies), its release is its arrival; a machine may carry
a ``speed`` (:mod:`controller.redundancy.speed`: ``{"model": "ap-up", ..., "seed": s}``,
``{"trace": FILE}`` relative to the workload file, ``{"rate": r}``), without one it runs
at rate 1. No coflows, no arcs: the jobs are independent.

The policies are :data:`controller.redundancy.POLICIES` (``srpt+r``, ``srpt``,
``fair+r``, ``fair-share``, ``laps+r``, ``laps``; ``laps+r:0.3`` sets beta). The model is
a thin shell: the exact event simulator (:func:`controller.redundancy.simulate`) runs the
policy once, on construction (its decisions at each arrival and departure depend only on
the past, so simulating the whole online run at once gives what re-deciding at each
event would), and every plan is that run's remainder: one
:class:`~controller.jobmodel.Piece` per copy and checkpoint interval, its ``demand`` the
copy's share of the machine, its ``work`` the job's work. A job's copies run together
(``gang``) and a re-plan at an arrival cuts nothing (arrivals are checkpoints: the run's
pieces already end there).

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
from controller.redundancy.policies import POLICIES, parse
from controller.redundancy.simulator import Instance, Run, simulate
from controller.redundancy.speed import speed_of

__all__ = ["RedundancyModel", "redundancy_instance", "joint_from_redundancy"]


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


def joint_from_redundancy(instance: Instance, fabric, *, specs=None, name: str = "redundancy"):
    """An :class:`~controller.redundancy.Instance` as a joint workload of the
    ``redundancy`` model: machine ``i`` on port ``i`` with ``specs[i]`` as its speed (None:
    rate 1), job ``x`` the joint job ``x`` of one stage ``x.s`` of one task ``x``."""
    from controller.compute.model import Machine, Stage, Task
    from controller.jobs import JointJob, JointWorkload
    specs = list(specs) if specs is not None else [None] * fabric.ports
    machines = [Machine(f"m{i}", 1.0, s) for i, s in enumerate(specs)]
    stages, jobs = [], []
    for jid, r, w in zip(instance.ids, instance.arrival, instance.work):
        stages.append(Stage(f"{jid}.s", [Task(jid, 1.0, {m.id: float(w) for m in machines},
                                              float(r), work=float(w))]))
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
    preemptive = True
    gang = True

    def __init__(self, workload, policy: str):
        super().__init__(workload, policy)
        try:
            parse(policy)
        except ValueError as e:
            raise JobModelError(str(e)) from None
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
    def runs(cls, policy: str) -> bool:
        """A policy of :data:`~controller.redundancy.POLICIES`, ``laps``/``laps+r`` also
        with a beta (``laps+r:0.3``; a bad beta is reported when the run starts)."""
        return policy.partition(":")[0] in POLICIES

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
        and how the run went (``checkpoints``, ``speed_change_points`` crossed)."""
        run, a, jw = self.run, self.arrays, self.workload
        task_of_job = {jw.job_of(s.id): a.task_index[s.tasks[0].id] for s in jw.stages}
        jobs = []
        for j in jw.jobs:
            q = task_of_job[j.id]
            arrival, end = float(a.release[q]), float(self.end[q])
            jobs.append({"id": j.id, "weight": j.weight, "release": arrival,
                         "arrival": arrival, "work": float(self.work_of[q]),
                         "completion": end, "flowtime": end - arrival})
        return {"jobs": jobs, "mean_flowtime": run.mean_flowtime,
                "total_flowtime": run.total_flowtime, "checkpoints": run.checkpoints,
                "speed_change_points": run.crossed, "beta": run.beta
                if run.policy.startswith("laps") else None}

    def segment_records(self) -> list[dict]:
        """The copies' constant-rate segments and the speed process's (module docstring)."""
        s = self.run.segments()
        ids, mids = self.instance.ids, self.arrays.machine_ids
        out = [{"job": ids[j], "copy": int(c), "machine": mids[m], "start": float(a),
                "end": float(b), "share": float(sh), "work": float(w)}
               for j, c, m, a, b, sh, w in zip(s["job"], s["copy"], s["machine"], s["start"],
                                               s["end"], s["share"], s["work"])]
        until = float(np.max(self.run.completion)) if len(self.run.completion) else 0.0
        out += [dict(d, machine=mids[d["machine"]]) for d in self.run.speed.segments(until)]
        return out
