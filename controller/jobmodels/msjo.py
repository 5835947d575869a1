"""The MSJO model: MapReduce jobs whose tasks hold a whole server, with shuffle delays.

A joint workload with ``"model": "msjo"`` is an instance of the MapReduce server-job
organisation paper (:mod:`controller.msjo`, algorithms.md section 3): ``m`` identical
machines (the workload's machines, each of capacity 1 for this model whatever the file
says), every job a **map stage** and a **reduce stage** (its two stages, the job arc
``[map, reduce]``, no coflows: the shuffle is the delay), every task a whole machine
for the same time on every machine (its ``placement`` lists every machine at one time).
A map task may carry a shuffle ``delay`` ``d_u`` (:attr:`Task.delay
<controller.compute.model.Task.delay>`): no reduce task of its job starts before ``d_u``
after it ends, ``S_v >= S_u + p_u + d_u``. A job arrives with its tasks' earliest
release and has its joint job's weight.

The policies are those of :data:`controller.msjo.POLICIES` (``mars``, ``t-mars``,
``so-mars``, ``mares``, ``huwf``, ``hjwf``, ``h-mares``, ``stf``, ``htwf``, default
options; SO-MarS with its default batch interval). The model is a thin shell
(:class:`~controller.jobmodels.offline.OfflineModel`): the policy's
:class:`~controller.msjo.schedule.MSJOSchedule` is computed once, on construction (at
time 0, offline: the releases are known), and every plan is that schedule, one
non-preemptive :class:`~controller.jobmodel.Piece` per task. On the emulation the
controller holds a reduce piece until the delay after its maps' *reported* ends
(:meth:`MSJOModel.earliest_start`).

References
----------
Ling et al., joint scheduling of MapReduce jobs with servers (MarS, T-MarS, SO-MarS);
algorithms.md section 3; docs/msjo.md.
"""
from __future__ import annotations

import numpy as np

from controller.jobmodel import Piece, register
from controller.jobmodels.offline import OfflineModel
from controller.model import WorkloadError
from controller.msjo import POLICIES, get_policy
from controller.msjo.model import Cluster, Job, Task as MSJOTask

__all__ = ["MSJOModel", "msjo_cluster", "joint_from_msjo"]


def _stages_of(workload, job) -> tuple:
    """The (map, reduce) stages of joint job ``job``, checked: two stages, the arc
    ``[map, reduce]``, no coflows (:class:`WorkloadError` naming the job otherwise)."""
    where = f"job {job.id!r}"
    if job.coflows:
        raise WorkloadError(f"{where}: an msjo job has no coflows (its shuffle is the map "
                            f"tasks' \"delay\"), got {list(job.coflows)}", field="coflows")
    if len(job.stages) != 2 or len(job.arcs) != 1 or tuple(job.arcs[0]) != \
            tuple(job.stages):
        raise WorkloadError(f"{where}: an msjo job is a map stage then a reduce stage: "
                            f"\"stages\": [map, reduce], \"arcs\": [[map, reduce]]; got "
                            f"stages {list(job.stages)} and arcs "
                            f"{[list(a) for a in job.arcs]}", field="arcs")
    return tuple(workload.stages[workload.stage_index[s]] for s in job.stages)


def msjo_cluster(workload) -> tuple[Cluster, np.ndarray]:
    """The :class:`~controller.msjo.model.Cluster` of a joint msjo workload, and per task
    of the cluster's arrays (job by job, maps first) its index in
    ``workload.compute.arrays`` (the inverse of :func:`joint_from_msjo`)."""
    a = workload.compute.arrays
    tidx = {t: k for k, t in enumerate(a.task_ids)}
    by_id = {j.id: j for j in workload.jobs}
    jobs, order = [], []
    for jid in a.job_ids:
        mp, rd = _stages_of(workload, by_id[jid])
        release = min(t.release for t in mp.tasks + rd.tasks)

        def task(t):
            p = next(iter(t.placement.values()))
            return MSJOTask(p, t.delay, None, None if t.release == release else t.release)
        jobs.append(Job(jid, tuple(task(t) for t in mp.tasks),
                        tuple(task(t) for t in rd.tasks), release, by_id[jid].weight))
        order += [tidx[t.id] for t in mp.tasks + rd.tasks]
    return Cluster(len(workload.machines), tuple(jobs)), np.asarray(order, dtype=np.int64)


def joint_from_msjo(cluster: Cluster, fabric, *, name: str = "msjo"):
    """A :class:`~controller.msjo.model.Cluster` as a joint workload of the ``msjo`` model:
    machine ``i`` (capacity 1) on port ``i``; job ``j`` the stages ``j.map`` (tasks
    ``j.m0``, ...) and ``j.reduce`` (``j.r0``, ...), the arc between them, its weight;
    every task size 1, its length on every machine, its release and delay."""
    from controller.compute.model import Machine, Stage, Task
    from controller.jobs import JointJob, JointWorkload
    machines = [Machine(f"m{i}", 1.0) for i in range(cluster.machines)]
    stages, jobs = [], []
    for j in cluster.jobs:
        ids = []
        for suffix, short, tasks in (("map", "m", j.maps), ("reduce", "r", j.reduces)):
            ts = [Task(f"{j.id}.{short}{i}", 1.0, {m.id: t.length for m in machines},
                       j.release if t.release is None else t.release, delay=t.delay)
                  for i, t in enumerate(tasks)]
            stages.append(Stage(f"{j.id}.{suffix}", ts))
            ids.append(stages[-1].id)
        jobs.append(JointJob(j.id, tuple(ids), (), (tuple(ids),), j.weight))
    return JointWorkload(fabric, machines, stages, (), jobs, name=name,
                         model=MSJOModel.name)


@register
class MSJOModel(OfflineModel):
    """MapReduce jobs of whole-server tasks with shuffle delays, one offline schedule; see
    the module docstring.

    Attributes
    ----------
    cluster : Cluster, the instance
    order : int array, per task of ``cluster.arrays``, its index in the compute arrays
    schedule : MSJOSchedule, the policy's schedule of ``cluster.arrays``
    start, machine : per task of the compute arrays, the schedule's start and machine
    """

    name = "msjo"
    summary = "MapReduce jobs of whole-server tasks with shuffle delays (MarS and baselines)"
    gang = False

    def __init__(self, workload, policy: str):
        super().__init__(workload, policy)
        self.cluster, self.order = msjo_cluster(workload)
        self.schedule = get_policy(policy)(self.cluster.arrays)
        n = self.arrays.n_tasks
        self.start, self.machine = np.zeros(n), np.zeros(n, dtype=np.int64)
        self.start[self.order] = self.schedule.start
        self.machine[self.order] = self.schedule.machine
        self.length = np.zeros(n)
        self.length[self.order] = self.cluster.arrays.length
        tasks = {t.id: t for s in workload.stages for t in s.tasks}
        self.delay = np.array([tasks[tid].delay for tid in self.arrays.task_ids])

    @classmethod
    def policies(cls) -> list[str]:
        return sorted(POLICIES)

    @classmethod
    def check_workload(cls, workload) -> None:
        """Every job a map stage then a reduce stage, no coflows, no precedence between
        jobs; every task on every machine at one time; a delay on map tasks only."""
        super().check_workload(workload)
        if workload.precedence:
            raise WorkloadError(f"msjo jobs are independent; got precedence "
                                f"{list(workload.precedence[0])}", field="precedence")
        machines = {m.id for m in workload.machines}
        for j in workload.jobs:
            mp, rd = _stages_of(workload, j)
            for t in mp.tasks + rd.tasks:
                where = f"task {t.id!r} of job {j.id!r}"
                if set(t.placement) != machines:
                    miss = sorted(machines - set(t.placement))
                    raise WorkloadError(f"{where}: an msjo task runs on every machine; "
                                        f"placement lacks {miss[0]!r}" if miss else
                                        f"{where}: placement names an unknown machine",
                                        field="placement")
                if len(set(t.placement.values())) != 1:
                    raise WorkloadError(f"{where}: an msjo task takes the same time on "
                                        f"every machine, got {dict(t.placement)}",
                                        field="placement")
            for t in rd.tasks:
                if t.delay:
                    raise WorkloadError(f"task {t.id!r} of job {j.id!r}: a reduce task has no "
                                        f"delay (the shuffle delay follows a map task), got "
                                        f"{t.delay!r}", field="delay")

    # ------------------------------------------------------------------ hosts
    def work(self, task: int, machine: int) -> float:
        return float(self.length[task])

    def fixed_machine(self, task: int) -> int:
        return int(self.machine[task])

    def earliest_start(self, task: int, task_end: np.ndarray) -> float:
        """A reduce task: the shuffle delay after its maps' reported ends,
        ``max_u (end_u + d_u)`` (inf while a map is not complete); a map task: at once."""
        a = self.arrays
        preds = [q for s in a.stage_preds[a.task_stage[task]] for q in a.stage_tasks[s]]
        if not preds:
            return -np.inf
        ends = task_end[preds]
        if np.isnan(ends).any():
            return np.inf
        return float(np.max(ends + self.delay[preds]))

    # ------------------------------------------------------------------ steps
    def pieces(self, tasks: list[int]) -> list[Piece]:
        """One piece per task: its machine, start and end in the schedule."""
        return [Piece(q, int(self.machine[q]), float(self.start[q]),
                      float(self.start[q] + self.length[q]), 1.0, float(self.length[q]), True)
                for q in tasks]
