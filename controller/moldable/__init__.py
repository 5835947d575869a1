"""Moldable jobs: bi-criteria scheduling on identical machines (issue 15, algorithmic core).

Modules (one per concept):

* :mod:`~controller.moldable.model`: moldable jobs (a time per allowed allotment,
  monotone), workloads, the numpy view :class:`MoldableArrays`.
* :mod:`~controller.moldable.speedup`: speedup models that expand a sequential time into
  a table (linear, Amdahl, the paper's model 1, Downey).
* :mod:`~controller.moldable.schedule`: :class:`MoldableSchedule`, per job allotment,
  start, end and machines; makespan and minsum.
* :mod:`~controller.moldable.profile`: the machine-usage profile, conservative list
  scheduling of rigid jobs, machine assignment.
* :mod:`~controller.moldable.dual`: the dual approximation (makespan estimate,
  allotments, shelves).
* :mod:`~controller.moldable.knapsack`: the batch knapsack (weight, exactly ``m``).
* :mod:`~controller.moldable.demt`: DEMT, the paper's algorithm.
* :mod:`~controller.moldable.baselines`: gang, sequential, list-shelf / wlptf / saf.
* :mod:`~controller.moldable.bounds`: makespan lower bound, the minsum interval LP.
* :mod:`~controller.moldable.generators`: the paper's workload families.

Every algorithm is a pure function ``MoldableArrays -> MoldableSchedule``; the registry
below names them::

    sched = schedule(workload, "demt", shuffles=4)
    sched.makespan, sched.minsum

The job model ``moldable`` (:mod:`controller.jobmodels.moldable`) runs these schedules on
the simulator and the emulation (a workload with ``"model": "moldable"``).

References
----------
Dutot, Eyraud, Mounié, Trystram, "Bi-criteria Algorithm for Scheduling Jobs on Cluster
Platforms"; algorithms.md section 5.
"""
from __future__ import annotations

from typing import Callable

from controller.moldable.baselines import gang, list_saf, list_shelf, list_wlptf, sequential
from controller.moldable.demt import demt
from controller.moldable.model import MoldableArrays, MoldableJob, MoldableWorkload
from controller.moldable.schedule import MoldableSchedule

__all__ = ["ALGORITHMS", "algorithms", "get_algorithm", "schedule", "MoldableJob",
           "MoldableWorkload", "MoldableArrays", "MoldableSchedule"]

#: name -> function ``(arrays, **options) -> MoldableSchedule``
ALGORITHMS: dict[str, Callable[..., MoldableSchedule]] = {
    "demt": demt,
    "gang": gang,
    "sequential": sequential,
    "list-shelf": list_shelf,
    "list-wlptf": list_wlptf,
    "list-saf": list_saf,
}


def algorithms() -> list[str]:
    """The registered algorithm names."""
    return list(ALGORITHMS)


def get_algorithm(name: str) -> Callable[..., MoldableSchedule]:
    """The algorithm registered as ``name``.

    Raises
    ------
    KeyError
        Unknown name; the message lists the known ones.
    """
    try:
        return ALGORITHMS[name]
    except KeyError:
        raise KeyError(f"unknown moldable algorithm {name!r}; known: "
                       f"{', '.join(ALGORITHMS)}") from None


def schedule(instance, algorithm: str = "demt", **options) -> MoldableSchedule:
    """Run ``algorithm`` on a :class:`MoldableWorkload` or :class:`MoldableArrays`."""
    arrays = instance.arrays if isinstance(instance, MoldableWorkload) else instance
    return get_algorithm(algorithm)(arrays, **options)
