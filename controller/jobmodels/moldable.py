"""The moldable model: jobs that hold ``q`` identical machines at once, planned offline.

A joint workload with ``"model": "moldable"`` is an instance of the bi-criteria paper
(:mod:`controller.moldable`): ``m`` identical machines (the workload's machines, each of
capacity 1 for this model whatever the file says), every job one stage of one task, the
task a *moldable job*: its ``moldable`` table ``{q: seconds}``
(:attr:`Task.moldable <controller.compute.model.Task.moldable>`, monotone, every ``q`` at
most ``m``) and its job's weight. All jobs are available at time 0 and nothing precedes a
moldable task (offline).

The policies are the algorithms of :data:`controller.moldable.ALGORITHMS` (``demt``,
``gang``, ``sequential``, ``list-shelf``, ``list-wlptf``, ``list-saf``, default options).
The model is a thin shell: the algorithm's :class:`~controller.moldable.MoldableSchedule`
is computed once, on construction, and every plan is that schedule. A job of allotment
``q`` is a **gang** of ``q`` :class:`~controller.jobmodel.Piece` objects with one start
and one end, one per machine of its set, each holding the whole machine (demand 1 of
capacity 1) for ``p(q)`` seconds (its ``work``). Non-preemptive: a piece that has started
is committed with its planned end.

References
----------
Dutot, Eyraud, Mounié, Trystram, "Bi-criteria Algorithm for Scheduling Jobs on Cluster
Platforms"; algorithms.md section 5; docs/moldable.md.
"""
from __future__ import annotations

from typing import Mapping

from controller.jobmodel import Piece, register
from controller.jobmodels.offline import OfflineModel
from controller.model import WorkloadError
from controller.moldable import algorithms, schedule
from controller.moldable.model import MoldableArrays, MoldableJob, MoldableWorkload

__all__ = ["MoldableModel", "moldable_table", "packing_view", "moldable_instance",
           "joint_from_moldable"]


def moldable_table(task: str, spec: Mapping, machines: int | None = None) -> dict[int, float]:
    """The validated table ``{q: seconds}`` of task ``task``'s ``moldable`` entry.

    ``spec`` is a table (keys may be digit strings, as in JSON) or, given ``machines``, a
    speedup model (``{"sequential": 10.0, "model": "amdahl", ...}``, expanded for
    ``q = 1..machines`` by :meth:`MoldableJob.from_spec
    <controller.moldable.model.MoldableJob.from_spec>`).

    Raises
    ------
    WorkloadError
        Field ``moldable``, naming the task: not a mapping, a bad allotment or time, not
        monotone, an unknown speedup model.
    """
    try:
        if not isinstance(spec, Mapping):
            raise WorkloadError(f"job {task!r}: must map allotment (machines) -> seconds or "
                                f"give a speedup \"model\", got {spec!r}")
        if machines is None or "model" not in spec:
            job = MoldableJob(task, spec)
        else:
            job = MoldableJob.from_spec(task, spec, machines)
    except WorkloadError as e:
        msg, prefix = e.message, f"job {task!r}"
        rest = msg[len(prefix):] if msg.startswith(prefix) else f": {msg}"
        raise WorkloadError(f"task {task!r} moldable{rest}", field="moldable") from None
    return dict(job.times)


def packing_view(table: Mapping[int, float], machines) -> tuple[float, dict[str, float]]:
    """The ``size`` and ``placement`` a moldable task has where none is given (what the
    compute arrays need; the model reads the table): the smallest machine's capacity, and
    every machine at the time of the smallest allotment."""
    return (min(m.capacity[0] for m in machines),
            {m.id: float(table[min(table)]) for m in machines})


def moldable_instance(workload) -> MoldableArrays:
    """The moldable instance of a joint workload: one job per task of
    ``workload.compute.arrays`` (same order), its job's weight, ``m`` its machines."""
    a = workload.compute.arrays
    tasks = {t.id: t for s in workload.stages for t in s.tasks}
    jobs = [MoldableJob(tid, dict(tasks[tid].moldable), float(a.job_weight[a.task_job[k]]))
            for k, tid in enumerate(a.task_ids)]
    return MoldableWorkload(a.n_machines, jobs, workload.name).arrays


def joint_from_moldable(mw: MoldableWorkload, fabric, *, name: str | None = None):
    """A :class:`MoldableWorkload` as a joint workload of the ``moldable`` model: machine
    ``i`` (capacity 1) on port ``i``, moldable job ``x`` the joint job ``x`` of one stage
    ``x.s`` of one task ``x`` (the inverse of :func:`moldable_instance`)."""
    from controller.compute.model import Machine, Stage, Task
    from controller.jobs import JointJob, JointWorkload
    machines = [Machine(f"m{i}", 1.0) for i in range(mw.machines)]
    stages, jobs = [], []
    for j in mw.jobs:
        table = dict(j.times)
        size, placement = packing_view(table, machines)
        stages.append(Stage(f"{j.id}.s", [Task(j.id, size, placement, 0.0, table)]))
        jobs.append(JointJob(j.id, (stages[-1].id,), (), (), j.weight))
    return JointWorkload(fabric, machines, stages, (), jobs, name=name or mw.name,
                         model=MoldableModel.name)


@register
class MoldableModel(OfflineModel):
    """Moldable jobs on identical machines, one offline schedule; see the module docstring.

    Attributes
    ----------
    instance : MoldableArrays, one job per task
    schedule : MoldableSchedule, the policy's schedule of ``instance``
    """

    name = "moldable"
    summary = "moldable jobs holding q identical machines at once (DEMT and baselines)"
    gang = True

    def __init__(self, workload, policy: str):
        super().__init__(workload, policy)
        self.instance = moldable_instance(workload)
        self.schedule = schedule(self.instance, policy)

    @classmethod
    def policies(cls) -> list[str]:
        return algorithms()

    @classmethod
    def check_workload(cls, workload) -> None:
        """Every task moldable with allotments at most the machines, released at 0; every
        job one stage of one task that nothing precedes; no other model's field."""
        super().check_workload(workload)
        m = len(workload.machines)
        for s in workload.stages:
            for t in s.tasks:
                if t.moldable is None:
                    raise WorkloadError(
                        f"task {t.id!r} is not moldable; in a workload with \"model\": "
                        f"\"moldable\" every task gives \"moldable\": {{q: seconds}} or a "
                        f"speedup model", field="moldable")
                big = [q for q in t.moldable if q > m]
                if big:
                    raise WorkloadError(f"task {t.id!r} moldable: allotment {big[0]} is "
                                        f"larger than the {m} machines", field="moldable")
                if t.release != 0:
                    raise WorkloadError(f"task {t.id!r}: moldable jobs are all available at "
                                        f"0 (offline), got release {t.release!r}",
                                        field="release")
        for j in workload.jobs:
            if len(j.stages) != 1 or len(workload.stages[workload.stage_index[j.stages[0]]]
                                         .tasks) != 1:
                raise WorkloadError(f"job {j.id!r}: a moldable job is one stage of one task",
                                    field="stages")
            preds = list(workload.dag.predecessors(j.stages[0]))
            if preds:
                raise WorkloadError(f"job {j.id!r}: {preds[0]!r} precedes its moldable task "
                                    f"(moldable jobs are independent)", field="arcs")

    # ------------------------------------------------------------------ hosts
    def work(self, task: int, machine: int) -> float:
        return float(self.schedule.length[task])

    # ------------------------------------------------------------------ steps
    def pieces(self, tasks: list[int]) -> list[Piece]:
        """The schedule's gangs of ``tasks``: one piece per machine of a job's set."""
        s = self.schedule
        return [Piece(q, int(i), float(s.start[q]), float(s.end[q]), 1.0,
                      float(s.length[q]), True) for q in tasks for i in s.machines[q]]
