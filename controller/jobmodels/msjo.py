"""The MSJO model: MapReduce jobs whose tasks hold a whole server, with shuffle delays.

A joint workload with ``"model": "msjo"`` is an instance of the MapReduce server-job
organisation paper (:mod:`controller.msjo`, algorithms.md section 3): ``m`` identical
machines (the workload's machines, each of capacity 1 for this model whatever the file
says), every job a **map stage** and a **reduce stage**, every task a whole machine for
the same time on every machine (its ``placement`` lists every machine at one time). A
job arrives with its tasks' earliest release and has its joint job's weight. The shuffle
between the stages is one of two things, the same for every job of a workload:

* **a delay** (the paper's model): the job arc ``[map, reduce]``, no coflows; a map task
  may carry a shuffle ``delay`` ``d_u`` (:attr:`Task.delay
  <controller.compute.model.Task.delay>`): no reduce task of its job starts before
  ``d_u`` after it ends, ``S_v >= S_u + p_u + d_u``;
* **a real shuffle coflow** (the network decides the delay): the arcs ``[map, S]`` and
  ``[S, reduce]`` with ``S`` one of the workload's ``shuffles`` (flows made at run time
  from where the maps finished to where the reduces run, ``output_bytes`` per map:
  :mod:`controller.jobs`), no ``delay`` on any task.

The policies are those of :data:`controller.msjo.POLICIES` (``mars``, ``t-mars``,
``so-mars``, ``mares``, ``huwf``, ``hjwf``, ``h-mares``, ``stf``, ``htwf``, default
options; SO-MarS with its default batch interval); with shuffle coflows a network policy
runs beside them (``mars+sebf``). The model is a thin shell
(:class:`~controller.jobmodels.offline.OfflineModel`): the policy's
:class:`~controller.msjo.schedule.MSJOSchedule` is computed once, on construction (at
time 0, offline: the releases are known).

* With delays every plan is that schedule, one non-preemptive
  :class:`~controller.jobmodel.Piece` per task. On the emulation the controller holds a
  reduce piece until the delay after its maps' *reported* ends
  (:meth:`MSJOModel.earliest_start`).
* With shuffle coflows the policy plans on an *estimated* delay per map,
  :func:`estimated_delay` (its output bytes over its host's uplinks, as if alone), and
  the run keeps the schedule's **assignment and per-machine order** but not its times:
  each machine runs its sequence in order, a task starting as soon as the machine is
  free and the task may start (its job has arrived; a reduce: its shuffle coflow has
  completed, which the engines' plannable set says). A machine whose next task may not
  start yet waits for it (it does not run later tasks of its sequence first); the
  schedule's order is consistent with its precedence, so this never deadlocks. A reduce
  is pinned to its machine in the schedule, so the shuffle's flows go there.

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

__all__ = ["MSJOModel", "msjo_cluster", "joint_from_msjo", "estimated_delay"]


def _stages_of(workload, job) -> tuple:
    """The (map, reduce) stages of joint job ``job`` and its shuffle coflow id (None for
    a job whose shuffle is the maps' delay), checked: two stages, the arc ``[map,
    reduce]`` or the arcs ``[map, S]``, ``[S, reduce]`` through one run-time shuffle ``S``
    (:class:`WorkloadError` naming the job otherwise)."""
    where = f"job {job.id!r}"
    shape = (f"{where}: an msjo job is a map stage then a reduce stage: \"stages\": [map, "
             f"reduce] and either \"arcs\": [[map, reduce]] (shuffle delays) or one "
             f"shuffle coflow S with \"arcs\": [[map, S], [S, reduce]]; got stages "
             f"{list(job.stages)}, coflows {list(job.coflows)} and arcs "
             f"{[list(a) for a in job.arcs]}")
    if len(job.stages) != 2 or len(job.coflows) > 1:
        raise WorkloadError(shape, field="arcs" if len(job.stages) != 2 else "coflows")
    mp, rd = job.stages
    shuffle = job.coflows[0] if job.coflows else None
    want = {(mp, rd)} if shuffle is None else {(mp, shuffle), (shuffle, rd)}
    if len(job.arcs) != len(want) or set(map(tuple, job.arcs)) != want:
        raise WorkloadError(shape, field="arcs")
    if shuffle is not None and shuffle not in workload.shuffles:
        raise WorkloadError(f"{where}: coflow {shuffle!r} between the map and reduce "
                            f"stages must be a shuffle (listed in \"shuffles\": its flows "
                            f"go from where the maps ran to where the reduces run)",
                            field="shuffles")
    return (*(workload.stages[workload.stage_index[s]] for s in job.stages), shuffle)


def estimated_delay(workload, task_id: str) -> float:
    """The shuffle delay a policy plans with for map ``task_id`` of a workload with
    shuffle coflows: its ``output_bytes`` over its host's uplinks (every core), as if it
    sent alone, ``8 b / sum_h R_h`` seconds. A plan only: the run's delay is the
    network's."""
    return 8.0 * workload.output_bytes.get(task_id, 0.0) / float(sum(workload.fabric.rates))


def msjo_cluster(workload) -> tuple[Cluster, np.ndarray]:
    """The :class:`~controller.msjo.model.Cluster` of a joint msjo workload, and per task
    of the cluster's arrays (job by job, maps first) its index in
    ``workload.compute.arrays`` (the inverse of :func:`joint_from_msjo`). A map of a job
    with a shuffle coflow has its :func:`estimated_delay`."""
    a = workload.compute.arrays
    tidx = {t: k for k, t in enumerate(a.task_ids)}
    by_id = {j.id: j for j in workload.jobs}
    jobs, order = [], []
    for jid in a.job_ids:
        mp, rd, shuffle = _stages_of(workload, by_id[jid])
        release = min(t.release for t in mp.tasks + rd.tasks)

        def task(t, is_map):
            p = next(iter(t.placement.values()))
            d = estimated_delay(workload, t.id) if shuffle and is_map else t.delay
            return MSJOTask(p, d, None, None if t.release == release else t.release)
        jobs.append(Job(jid, tuple(task(t, True) for t in mp.tasks),
                        tuple(task(t, False) for t in rd.tasks), release, by_id[jid].weight))
        order += [tidx[t.id] for t in mp.tasks + rd.tasks]
    return Cluster(len(workload.machines), tuple(jobs)), np.asarray(order, dtype=np.int64)


def joint_from_msjo(cluster: Cluster, fabric, *, name: str = "msjo",
                    output_bytes=None):
    """A :class:`~controller.msjo.model.Cluster` as a joint workload of the ``msjo`` model:
    machine ``i`` (capacity 1) on port ``i``; job ``j`` the stages ``j.map`` (tasks
    ``j.m0``, ...) and ``j.reduce`` (``j.r0``, ...), its weight; every task size 1, its
    length on every machine, its release.

    ``output_bytes`` None: the arc ``[j.map, j.reduce]`` and the maps' delays. Else, per
    task of ``cluster.arrays`` (reduces' entries ignored), the bytes each map writes: job
    ``j`` gets the shuffle coflow ``j.shuffle`` (weight the job's) between its stages and
    no delays (the network decides them)."""
    from controller.compute.model import Machine, Stage, Task
    from controller.jobs import JointJob, JointWorkload
    from controller.model import Coflow
    machines = [Machine(f"m{i}", 1.0) for i in range(cluster.machines)]
    shuffled = output_bytes is not None
    if shuffled:
        output_bytes = np.asarray(output_bytes, dtype=np.float64)
        if output_bytes.shape != (cluster.arrays.n_tasks,):
            raise ValueError(f"output_bytes: one entry per task "
                             f"({cluster.arrays.n_tasks}), got {output_bytes.shape}")
    stages, coflows, jobs, out = [], [], [], {}
    k = 0
    for j in cluster.jobs:
        ids = []
        for suffix, short, tasks in (("map", "m", j.maps), ("reduce", "r", j.reduces)):
            ts = []
            for i, t in enumerate(tasks):
                tid = f"{j.id}.{short}{i}"
                ts.append(Task(tid, 1.0, {m.id: t.length for m in machines},
                               j.release if t.release is None else t.release,
                               delay=0.0 if shuffled else t.delay))
                if shuffled and short == "m":
                    out[tid] = float(output_bytes[k])
                k += 1
            stages.append(Stage(f"{j.id}.{suffix}", ts))
            ids.append(stages[-1].id)
        if shuffled:
            sid = f"{j.id}.shuffle"
            coflows.append(Coflow(sid, (), release=j.release, weight=j.weight))
            jobs.append(JointJob(j.id, tuple(ids), (sid,), ((ids[0], sid), (sid, ids[1])),
                                 j.weight))
        else:
            jobs.append(JointJob(j.id, tuple(ids), (), (tuple(ids),), j.weight))
    return JointWorkload(fabric, machines, stages, coflows, jobs,
                         shuffles={c.id for c in coflows}, output_bytes=out, name=name,
                         model=MSJOModel.name)


@register
class MSJOModel(OfflineModel):
    """MapReduce jobs of whole-server tasks with shuffle delays or shuffle coflows, one
    offline schedule; see the module docstring.

    Attributes
    ----------
    cluster : Cluster, the instance (with shuffle coflows: the estimated delays)
    order : int array, per task of ``cluster.arrays``, its index in the compute arrays
    schedule : MSJOSchedule, the policy's schedule of ``cluster.arrays``
    start, machine : per task of the compute arrays, the schedule's start and machine
    shuffled : bool, the jobs' shuffles are coflows (the run times the schedule's order)
    sequence : per machine, its tasks in the schedule's order (compute-array indices)
    """

    name = "msjo"
    summary = ("MapReduce jobs of whole-server tasks with shuffle delays or shuffle coflows "
               "(MarS and baselines)")
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
        self.release = np.array([tasks[tid].release for tid in self.arrays.task_ids])
        self.shuffled = bool(workload.coflows)
        by_start = np.lexsort((np.arange(n), self.start))
        self.sequence = [[int(q) for q in by_start if self.machine[q] == i]
                         for i in range(len(workload.machines))]

    @classmethod
    def policies(cls) -> list[str]:
        return sorted(POLICIES)

    @classmethod
    def check_workload(cls, workload) -> None:
        """Every job a map stage then a reduce stage, joined by the arc between them or by
        a shuffle coflow (every job alike), no precedence between jobs; every task on
        every machine at one time; a delay on map tasks of jobs without a shuffle coflow
        only."""
        super().check_workload(workload)
        if workload.precedence:
            raise WorkloadError(f"msjo jobs are independent; got precedence "
                                f"{list(workload.precedence[0])}", field="precedence")
        machines = {m.id for m in workload.machines}
        kinds = {}
        for j in workload.jobs:
            mp, rd, shuffle = _stages_of(workload, j)
            kinds.setdefault(shuffle is None, j.id)
            if len(kinds) > 1:
                a, b = kinds[False], kinds[True]
                raise WorkloadError(f"job {b!r} has no shuffle coflow but job {a!r} has "
                                    f"one: in an msjo workload every job's shuffle is a "
                                    f"coflow, or every job's is its maps' delay",
                                    field="coflows")
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
            if shuffle is not None:
                for t in mp.tasks:
                    if t.delay:
                        raise WorkloadError(
                            f"task {t.id!r} of job {j.id!r}: a map whose output goes by the "
                            f"shuffle coflow {shuffle!r} has no delay (the network decides "
                            f"it), got {t.delay!r}", field="delay")

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

    def pieces_at(self, t: float, tasks: list[int]) -> list[Piece]:
        """With delays, the schedule's pieces (:meth:`pieces`). With shuffle coflows, the
        schedule's order timed from ``t``: each machine runs its :attr:`sequence` after
        its committed tasks end, every task from ``tasks`` (those that may start: arrived,
        shuffle complete) at once when the machine frees (not before its release), up to
        the first task not in ``tasks``, where the machine waits (module docstring)."""
        if not self.shuffled:
            return self.pieces(tasks)
        ready = set(tasks)
        out = []
        for i, seq in enumerate(self.sequence):
            free = t
            for q in seq:
                if not np.isnan(self.comp[q]):
                    free = max(free, float(self.comp[q]))
                    continue
                if q not in ready:
                    break
                s = max(free, float(self.release[q]))
                out.append(Piece(q, i, s, s + float(self.length[q]), 1.0,
                                 float(self.length[q]), True))
                free = s + float(self.length[q])
        return out
