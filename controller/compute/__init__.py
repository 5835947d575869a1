"""Compute scheduling: tasks packed into machine capacities, and the policies that do it.

Modules (one per concept):

* :mod:`~controller.compute.model`: machines, tasks, stages, compute jobs, workloads.
* :mod:`~controller.compute.schedule`: explicit schedules (task segments) and completions.
* :mod:`~controller.compute.packing`: the greedy-packing event loop every policy uses.
* :mod:`~controller.compute.lp`: LP1, LP2, LP3 (lower bounds and orderings).
* :mod:`~controller.compute.online`: re-planning at epochs / arrivals.
* one module per policy: ``synchpack1``, ``synchpack2``, ``synchpack3``, ``psrs``,
  ``tetris``, ``jsqmw``, ``fifo``.
* :mod:`~controller.compute.generators`: Google-cluster-like and MapReduce-like workloads.

Every policy is a pure function ``schedule(instance, **options) -> ComputeSchedule``;
the registry below names them::

    pol = get_compute_policy("synchpack-3")     # or "mypkg.mod:MyCompute"
    sched = pol.schedule(workload, online=True)

**Your own compute policy** is a class with a ``plan(arrays, background)`` method (the
offline algorithm on a residual instance, see :class:`ComputePolicy`) and class attributes
saying what its schedules may do: subclass :class:`ComputePlanner`. Name it
``package.module:Class`` wherever a compute policy name goes (``--policy
mymod:MyCompute+sebf``): the module is imported as ``python -m`` would, from the current
directory, like a network plug-in (:func:`controller.policies.get_policy`), and the class
becomes a :class:`ComputePolicy` (:func:`compute_policy_of`) whose ``schedule`` re-plans
at every arrival and stage readiness (:func:`~controller.compute.online.replan`).
:func:`register_compute_policy` makes a policy available by name.

References
----------
Shafiee & Ghaderi, "Scheduling Parallel-Task Jobs Subject to Packing and Placement
Constraints"; algorithms.md section 2.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Callable, ClassVar

from controller.compute import fifo, jsqmw, psrs, synchpack1, synchpack2, synchpack3, tetris
from controller.compute.model import (ComputeArrays, ComputeJob, ComputeWorkload, Machine,
                                      Stage, Task, WorkloadError, as_arrays)
from controller.compute.online import replan
from controller.compute.schedule import ComputeSchedule
from controller.policies.base import PolicyError, load_class

__all__ = ["ComputePolicy", "ComputePlanner", "ComputePolicyError", "compute_policies",
           "compute_policy_of", "get_compute_policy", "is_compute_policy",
           "register_compute_policy", "ComputeArrays", "ComputeJob", "ComputeWorkload",
           "Machine", "Stage", "Task", "WorkloadError", "ComputeSchedule"]

#: the LPs a compute policy's schedules can be bounded by (``ComputePolicy.lower_bound``)
LOWER_BOUNDS = ("lp1", "lp2", "lp3")


class ComputePolicyError(PolicyError):
    """Unknown compute policy name, or a ``module:Class`` that is not a compute policy."""


@dataclass(frozen=True)
class ComputePolicy:
    """A named compute policy and the class of schedules it produces.

    Attributes
    ----------
    name : str
    schedule : callable ``(instance, **options) -> ComputeSchedule``
    preemptive : bool, tasks may be interrupted
    migration : bool, a task may run on several machines
    pinned : bool, every task runs on its fastest machine (single-machine placement)
    lower_bound : str, the LP that bounds its schedules from below ("lp1", "lp2", "lp3")
    ratio : str, proven approximation ratio against that LP ("" for heuristics)
    summary : str
    plan : callable ``(sub: ComputeArrays, background) -> ComputeSchedule``
        The offline algorithm on a residual instance (times from 0, ``background``
        occupancy ``(machine, size, until)``): what online re-planning
        (:class:`~controller.compute.online.Replanner`) and the joint simulator call.
    """

    name: str
    schedule: Callable[..., ComputeSchedule]
    preemptive: bool
    migration: bool
    pinned: bool
    lower_bound: str
    ratio: str
    summary: str
    plan: Callable[..., ComputeSchedule] = None

class ComputePlanner:
    """Base class of a compute policy written as a class (a plug-in).

    Override :meth:`plan`; set the class attributes that describe its schedules (they
    choose the LP that bounds them, and how the joint engines treat running tasks).

    Attributes
    ----------
    summary : str, one line for ``coflowemu policies`` (default: the docstring's first line)
    preemptive : bool, tasks may be interrupted (default False)
    migration : bool, a task may run on several machines (default False)
    pinned : bool, every task runs on its fastest machine (default False)
    lower_bound : str, ``"lp1"``, ``"lp2"`` or ``"lp3"``; default ``"lp3"`` when
        ``pinned``, ``"lp1"`` with ``migration``, else ``"lp2"``

    Examples
    --------
    >>> import numpy as np
    >>> from controller.compute.packing import list_schedule
    >>> class ShortestFirst(ComputePlanner):
    ...     "Shortest task first, each on its fastest machine."
    ...     preemptive, pinned = True, True
    ...     def plan(self, a, background=()):
    ...         t = np.arange(a.n_tasks)
    ...         pk = list_schedule(a, t, a.fastest, a.pmin, a.pmin, preemptive=True,
    ...                            background=background)
    ...         return ComputeSchedule.from_segments(a, pk.segments(), "shortest-first")
    >>> from controller.jobs import mapreduce_jobs
    >>> pol = compute_policy_of(ShortestFirst, "doc:ShortestFirst")
    >>> pol.lower_bound, pol.summary
    ('lp3', 'Shortest task first, each on its fastest machine.')
    >>> bool(pol.schedule(mapreduce_jobs(0, n_jobs=2).compute).weighted_completion > 0)
    True
    """

    summary: ClassVar[str] = ""
    preemptive: ClassVar[bool] = False
    migration: ClassVar[bool] = False
    pinned: ClassVar[bool] = False
    lower_bound: ClassVar[str] = ""

    def plan(self, arrays: ComputeArrays, background=()) -> ComputeSchedule:
        """The schedule of the residual instance ``arrays`` (times from 0), around the
        ``background`` occupancy ``(machine, size, until)`` of tasks still running."""
        raise NotImplementedError


def compute_policy_of(cls: type, name: str) -> ComputePolicy:
    """The :class:`ComputePolicy` of a :class:`ComputePlanner` class, called ``name``.

    Raises
    ------
    ComputePolicyError
        ``cls`` is not a class with a ``plan`` method, or names an unknown lower bound.
    """
    if not isinstance(cls, type) or not callable(getattr(cls, "plan", None)):
        raise ComputePolicyError(f"{name!r} is not a compute policy: expected a class with "
                                 f"plan(arrays, background) (subclass "
                                 f"controller.compute.ComputePlanner)")
    if getattr(cls, "plan", None) is ComputePlanner.plan:
        raise ComputePolicyError(f"{name!r} does not implement plan(arrays, background) (a "
                                 f"compute policy overrides ComputePlanner.plan)")
    pinned = bool(getattr(cls, "pinned", False))
    migration = bool(getattr(cls, "migration", False))
    preemptive = bool(getattr(cls, "preemptive", False))
    bound = getattr(cls, "lower_bound", "") or ("lp3" if pinned else
                                                "lp1" if migration else "lp2")
    if bound not in LOWER_BOUNDS:
        raise ComputePolicyError(f"compute policy {name!r}: lower_bound must be one of "
                                 f"{', '.join(LOWER_BOUNDS)}, got {bound!r}")
    summary = getattr(cls, "summary", "") or (cls.__doc__ or "").strip().split("\n")[0]
    planner = cls()

    def schedule(instance, *, online: bool = True) -> ComputeSchedule:
        return replan(as_arrays(instance), planner.plan, preemptive=preemptive,
                      mode="arrivals", name=name)

    return ComputePolicy(name, schedule, preemptive, migration, pinned, bound, "", summary,
                         planner.plan)


_POLICIES: dict[str, ComputePolicy] = {}


def register_compute_policy(policy: ComputePolicy) -> ComputePolicy:
    """Make ``policy`` available by its ``name``; returns it.

    Raises
    ------
    ComputePolicyError
        Another policy already has that name.
    """
    if policy.name in _POLICIES and _POLICIES[policy.name] is not policy:
        raise ComputePolicyError(f"two compute policies are named {policy.name!r}")
    _POLICIES[policy.name] = policy
    return policy


for _p in [
    ComputePolicy("synchpack-1", synchpack1.schedule, True, True, False, "lp1", "6+eps",
                  "LP1 + greedy packing of task fractions + slow motion (preemptive, "
                  "migration)", synchpack1.plan),
    ComputePolicy("synchpack-2", synchpack2.schedule, False, False, False, "lp2", "24",
                  "LP2 + slow motion + machine-interval mapping + block packing "
                  "(non-preemptive)", synchpack2.plan),
    ComputePolicy("synchpack-3", synchpack3.schedule, True, False, True, "lp3", "4",
                  "LP3 ordering + per-machine greedy list packing (preemptive, single "
                  "machine)", synchpack3.plan),
    ComputePolicy("psrs", psrs.schedule, True, False, True, "lp3", "",
                  "preemptive Smith-ratio scheduling per machine", psrs.plan),
    ComputePolicy("tetris-p", tetris.tetris_p, True, False, False, "lp2", "",
                  "weighted Tetris packing score, re-planned with preemption at every event",
                  partial(tetris.plan, preemptive=True)),
    ComputePolicy("tetris-np", tetris.tetris_np, False, False, False, "lp2", "",
                  "weighted Tetris packing score, non-preemptive",
                  partial(tetris.plan, preemptive=False)),
    ComputePolicy("jsq-mw", jsqmw.schedule, False, False, False, "lp2", "",
                  "join-shortest-queue routing + MaxWeight service with greedy packing",
                  jsqmw.plan),
    ComputePolicy("fifo", fifo.schedule, False, False, False, "lp2", "",
                  "arrival order, fastest machine with room, non-preemptive", fifo.plan),
]:
    register_compute_policy(_p)


def compute_policies() -> dict[str, ComputePolicy]:
    """Name -> :class:`ComputePolicy` of every registered compute policy, sorted by name."""
    return dict(sorted(_POLICIES.items()))


def is_compute_policy(spec: str) -> bool:
    """Whether ``spec`` names a compute policy: a registered name, or a ``module:Class``
    whose class subclasses :class:`ComputePlanner`.

    Raises
    ------
    PolicyError
        A ``module:Class`` that cannot be loaded.
    """
    if ":" in spec:
        cls = load_class(spec)
        return isinstance(cls, type) and issubclass(cls, ComputePlanner)
    return spec in _POLICIES


def get_compute_policy(name: str) -> ComputePolicy:
    """The compute policy called ``name``, or loaded from ``package.module:Class``.

    Raises
    ------
    ComputePolicyError
        Unknown name; a module or class that cannot be loaded; a class that is not a
        compute policy (see :func:`compute_policy_of`).
    """
    if ":" in name:
        try:
            cls = load_class(name, "compute policy")
        except PolicyError as e:
            raise ComputePolicyError(str(e)) from None
        return compute_policy_of(cls, name)
    try:
        return _POLICIES[name]
    except KeyError:
        raise ComputePolicyError(f"unknown compute policy {name!r}; known: "
                                 f"{', '.join(sorted(_POLICIES))}") from None
