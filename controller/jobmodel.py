"""Job models: what the compute half of a joint run is made of, behind one interface.

A *job model* says what a task needs of a machine and how a compute policy's plans look:
tasks packed into machine capacities (``packing``, :mod:`controller.jobmodels.packing`,
Shafiee & Ghaderi), MapReduce tasks that hold a whole server with a shuffle delay,
redundant copies on machines of varying speed, moldable jobs that hold ``q`` machines at
once (algorithms.md sections 2 to 5). :class:`~controller.jobrun.JobDriver` ties the
model to the network (it settles stages, opens shuffles, places their consumers, finds
the next joint event) and both engines run it, so a model never knows which engine runs
it and an engine never knows which model it runs. They meet in model-neutral terms:

* a **piece** (:class:`Piece`): one stretch of one task on one machine, what a host's
  agent executes (holding ``demand`` of the machine's capacity from ``start`` to
  ``end``). A preemptive plan cuts a task into several pieces; a gang is several pieces
  of one task with the same start;
* a task's **completion**, committed by the model (the joint simulator takes the plan as
  what happens) or reported by the agents (the emulation), which :meth:`JobModel.complete`
  writes back into the model;
* whether the model's plans are **preemptive** (the emulation stops a running piece at a
  re-plan, and makes up what a late piece missed), and whether a task runs as a **gang**
  (its pieces with one start run together, the task completes with the last of them;
  otherwise a task runs one piece at a time);
* the **capacity** a host's agent is registered with, a task's **demand** and **work** on a
  machine.

The model is picked by the workload: :attr:`JointWorkload.model
<controller.jobs.JointWorkload.model>` names it (default ``"packing"``), and the compute
policy of ``compute+network`` is one of that model's :meth:`JobModel.policies`.

Writing a job model
-------------------
Subclass :class:`JobModel` in a module of its own (the built-in ones live in
``controller/jobmodels/``, which is loaded on first use), give it a ``name`` and decorate
it with :func:`register`. A model is one run's stateful shell around its policies' pure
functions, constructed as ``Model(workload, policy)``; it must provide:

* ``policies()`` (class method): the compute policies it runs (``runs(policy)`` says
  whether it runs a given one; override it to take plug-ins);
* ``preemptive`` and ``gang`` (bool) and ``tol`` (time tolerance) attributes,
  ``replans`` (plans followed so far, for the records);
* ``capacity(machine)``, ``demand(task, machine)``, ``work(task, machine)``: what the hosts
  are registered with, and what a piece holds and how long the whole task takes there at
  full speed;
* ``plan(t, tasks, follow)``: plan ``tasks`` (indices in ``workload.compute.arrays``) from
  time ``t`` and return the plan's :class:`Piece` objects sorted by start; with
  ``follow`` the plan is the one :meth:`~JobModel.commit` commits, without it is a
  look-ahead only (where would the tasks run);
* ``commit(t)``: the current plan is final up to ``t``;
* ``completion`` (per task: committed completion, nan while not complete),
  ``projected_completion()`` (committed, else as the current plan has it, else inf) and
  ``segments()`` (the committed pieces as task, machine, start, end lists);
* ``complete(tasks, times)``: tasks reported complete at ``times``, whatever the plan
  still counts;
* ``placement(task)``, ``pin(task, machine)``, ``fixed_machine(task)``: the machine a task
  is restricted to (-1: none), restricting it (a shuffle's consumer), and the machine its
  policy always runs it on (-1: the policy chooses);

and may override :meth:`JobModel.earliest_start` (e.g. a shuffle delay after the
predecessor tasks' reported ends) and :meth:`JobModel.check_workload` (what a workload
naming the model must hold; called when the :class:`~controller.jobs.JointWorkload` is
built, so a reader reports it with file and line). Nothing in ``emulate.sim.jobsim`` or
``controller.joint_runtime`` changes for a new model.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from controller.registry import Registry, parse_options

if TYPE_CHECKING:
    from controller.jobs import JointWorkload

__all__ = ["Piece", "JobModel", "JobModelError", "register", "job_models", "get_job_model",
           "DEFAULT_MODEL", "MODEL_FIELDS", "MACHINE_FIELDS"]

#: the model of a joint workload that names none
DEFAULT_MODEL = "packing"

#: task fields only one model reads: field -> (that model, what the field is)
MODEL_FIELDS = {"moldable": ("moldable", "is moldable"),
                "delay": ("msjo", "has a shuffle delay"),
                "work": ("redundancy", "carries redundancy work"),
                "checkpoint_bytes": ("redundancy", "has a checkpoint size")}

#: machine fields only one model reads: field -> (that model, what the field is)
MACHINE_FIELDS = {"speed": ("redundancy", "has a speed process")}


class JobModelError(ValueError):
    """Unknown job model, or a compute policy the model does not run."""


_MODELS = Registry("job models", "controller.jobmodels", JobModelError)


@dataclass(frozen=True)
class Piece:
    """One piece of a compute plan: task ``task`` on machine ``machine``.

    Attributes
    ----------
    task, machine : int, indices in ``workload.compute.arrays``
    start, end : float, planned, in workload seconds
    demand : float, what it holds of the machine's capacity while it runs
    work : float, the whole task's processing time on this machine at full speed
    last : bool, the task's last piece in its plan (the task completes when it ends)
    """

    task: int
    machine: int
    start: float
    end: float
    demand: float
    work: float
    last: bool


class JobModel(ABC):
    """The compute half of one joint run; see the module docstring.

    Parameters
    ----------
    workload : JointWorkload
    policy : str, one of :meth:`policies`

    Attributes
    ----------
    workload, arrays : the workload and its compute arrays (tasks, stages, machines)
    policy : str, as given (with its options, ``srpt+r@assign=sticky``)
    policy_name : str, without its options
    options : dict, the policy's options (``NAME@KEY=VALUE``, :func:`~controller.registry.
        parse_options`); only the keys of :attr:`option_names` are accepted
    preemptive : bool, plans may cut a task into pieces and stop a running piece
    gang : bool, a task's pieces with one start run together (else one at a time)
    tol : float, time tolerance of the run
    replans : int, plans followed so far
    """

    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    #: the options its compute policies take (``policy@KEY=VALUE``); none by default
    option_names: ClassVar[tuple[str, ...]] = ()
    preemptive: bool = False
    gang: bool = False
    tol: float = 1e-9
    replans: int = 0

    def __init__(self, workload: "JointWorkload", policy: str):
        try:
            name, options = parse_options(policy)
        except ValueError as e:
            raise JobModelError(str(e)) from None
        if not self.runs(name):
            raise JobModelError(f"job model {self.name!r} runs no compute policy {name!r}; "
                                f"known: {', '.join(self.policies())}")
        unknown = [k for k in options if k not in self.option_names]
        if unknown:
            raise JobModelError(f"compute policy {name!r} has no option {unknown[0]!r}; "
                                f"its options: {', '.join(self.option_names) or 'none'}")
        self.workload = workload
        self.arrays = workload.compute.arrays
        self.policy = policy
        self.policy_name = name
        self.options = options

    @classmethod
    @abstractmethod
    def policies(cls) -> list[str]:
        """The compute policies this model runs (built-in names)."""
        raise NotImplementedError

    @classmethod
    def runs(cls, policy: str) -> bool:
        """Whether this model runs ``policy``: one of :meth:`policies` (a model that takes
        plug-ins, ``module:Class``, says so here)."""
        return policy in cls.policies()

    @classmethod
    def check_workload(cls, workload: "JointWorkload") -> None:
        """Raise :class:`~controller.model.WorkloadError` (naming the task and the field)
        where ``workload``, which names this model, is not one it runs. Default: no task
        carries a field only another model reads (:data:`MODEL_FIELDS`: a ``moldable``
        table, a shuffle ``delay``, redundancy ``work``), no machine either
        (:data:`MACHINE_FIELDS`: a ``speed``); a model that overrides this calls it first."""
        from controller.model import WorkloadError
        for m in workload.machines:
            for fld, (owner, what) in MACHINE_FIELDS.items():
                if owner != cls.name and getattr(m, fld) is not None:
                    raise WorkloadError(
                        f"machine {m.id!r} {what} but the workload's model is "
                        f"{workload.model!r} (a machine {fld!r} belongs in a workload with "
                        f"\"model\": \"{owner}\")", field=fld)
        for s in workload.stages:
            for t in s.tasks:
                for fld, (owner, what) in MODEL_FIELDS.items():
                    if owner != cls.name and getattr(t, fld) not in (None, 0, 0.0):
                        raise WorkloadError(
                            f"task {t.id!r} {what} but the workload's model is "
                            f"{workload.model!r} (a {fld!r} task belongs in a workload with "
                            f"\"model\": \"{owner}\")", field=fld)

    # ------------------------------------------------------------------ hosts
    @abstractmethod
    def capacity(self, machine: int) -> float:
        """The capacity machine ``machine``'s agent admits pieces against."""
        raise NotImplementedError

    @abstractmethod
    def demand(self, task: int, machine: int) -> float:
        """What a piece of ``task`` holds of ``machine``'s capacity."""
        raise NotImplementedError

    @abstractmethod
    def work(self, task: int, machine: int) -> float:
        """The whole of ``task``'s processing time on ``machine`` at full speed."""
        raise NotImplementedError

    # ------------------------------------------------------------------ state
    @property
    @abstractmethod
    def completion(self) -> np.ndarray:
        """Per task: committed (or reported) completion, nan while not complete."""
        raise NotImplementedError

    @abstractmethod
    def projected_completion(self) -> np.ndarray:
        """Per task: its committed completion, else its completion in the current plan,
        else inf."""
        raise NotImplementedError

    @abstractmethod
    def segments(self) -> tuple:
        """The committed pieces: (task, machine, start, end) lists."""
        raise NotImplementedError

    @abstractmethod
    def placement(self, task: int) -> int:
        """The machine ``task`` is restricted to, -1 if none."""
        raise NotImplementedError

    @abstractmethod
    def pin(self, task: int, machine: int) -> None:
        """Restrict ``task`` to ``machine`` in every later plan."""
        raise NotImplementedError

    def fixed_machine(self, task: int) -> int:
        """The machine the policy always runs ``task`` on, -1 if it chooses per plan."""
        return -1

    # ------------------------------------------------------------------ records
    def records(self) -> dict:
        """Keys the model adds to a run's JSON record (default none; the redundancy
        model: its jobs' work and flowtimes). Read after the run."""
        return {}

    def segment_records(self) -> list[dict] | None:
        """The model's own segment lines, replacing the generic task lines ``{"task",
        "machine", "start", "end"}`` of ``--segments`` (default None: the generic ones)."""
        return None

    def earliest_start(self, task: int, task_end: np.ndarray) -> float:
        """When a piece of ``task`` may start given the reported completions ``task_end``
        (per task, nan while not complete): inf while a task of a predecessor stage is
        not complete, else -inf (at once). A model with a delay after its predecessors
        returns the time the delay ends."""
        a = self.arrays
        for p in a.stage_preds[a.task_stage[task]]:
            if np.isnan(task_end[a.stage_tasks[p]]).any():
                return np.inf
        return -np.inf

    # ------------------------------------------------------------------ steps
    @abstractmethod
    def plan(self, t: float, tasks: np.ndarray, follow: bool = True) -> tuple[Piece, ...]:
        """Plan ``tasks`` from ``t``; the plan's pieces sorted by start (module docstring)."""
        raise NotImplementedError

    @abstractmethod
    def commit(self, t: float) -> None:
        """The current plan is final up to ``t``."""
        raise NotImplementedError

    @abstractmethod
    def complete(self, tasks: np.ndarray, times: np.ndarray) -> None:
        """``tasks`` completed at ``times`` (reported), whatever the plan still counts."""
        raise NotImplementedError


def register(cls):
    """Class decorator: make a job model available by its ``name``."""
    return _MODELS.register(cls)


def job_models() -> dict[str, type]:
    """Name -> class of every registered job model (the built-in ones of
    ``controller.jobmodels`` loaded), sorted by name."""
    return _MODELS.classes()


def get_job_model(name: str) -> type:
    """The job model class called ``name``."""
    models = job_models()
    try:
        return models[name]
    except KeyError:
        raise JobModelError(f"unknown job model {name!r}; known: "
                            f"{', '.join(models)}") from None
