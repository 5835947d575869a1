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

    pol = get_compute_policy("synchpack-3")
    sched = pol.schedule(workload, online=True)

References
----------
Shafiee & Ghaderi, "Scheduling Parallel-Task Jobs Subject to Packing and Placement
Constraints"; algorithms.md section 2.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Callable

from controller.compute import fifo, jsqmw, psrs, synchpack1, synchpack2, synchpack3, tetris
from controller.compute.model import (ComputeArrays, ComputeJob, ComputeWorkload, Machine,
                                      Stage, Task, WorkloadError)
from controller.compute.schedule import ComputeSchedule

__all__ = ["ComputePolicy", "compute_policies", "get_compute_policy", "ComputeArrays",
           "ComputeJob", "ComputeWorkload", "Machine", "Stage", "Task", "WorkloadError",
           "ComputeSchedule"]


class ComputePolicyError(ValueError):
    """Unknown compute policy name."""


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


_POLICIES = {p.name: p for p in [
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
]}


def compute_policies() -> dict[str, ComputePolicy]:
    """Name -> :class:`ComputePolicy` of every compute policy, sorted by name."""
    return dict(sorted(_POLICIES.items()))


def get_compute_policy(name: str) -> ComputePolicy:
    """The compute policy called ``name``."""
    try:
        return _POLICIES[name]
    except KeyError:
        raise ComputePolicyError(f"unknown compute policy {name!r}; known: "
                                 f"{', '.join(sorted(_POLICIES))}") from None
