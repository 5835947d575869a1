"""The paper's baselines: gang, sequential, and list scheduling of the dual allotments.

Every baseline fixes an allotment per job and a list, then runs the same conservative
list scheduling as DEMT's compaction (:func:`~controller.moldable.profile.list_schedule`):

``gang``
    Every job on all ``m`` machines (its largest allowed allotment, if ``m`` is not
    allowed), in Smith's order (``w / p`` decreasing): optimal for linear speedups.
``sequential``
    Every job on one machine (its smallest allowed allotment), longest processing time
    first (LPTF).
``list-shelf``, ``list-wlptf``, ``list-saf``
    The allotments ``q_i(lambda*)`` of the dual approximation
    (:mod:`controller.moldable.dual`), listed (a) in shelf order: large shelf, small
    shelf, small jobs, each by decreasing time (the paper's "order of [7]"); (b) by
    "weighted LPTF", which the paper says actually sorts by ``w / p`` (decreasing);
    (c) smallest area ``q p`` first (SAF).

Ties are broken by job index, so every baseline is deterministic.

Examples
--------
>>> from controller.moldable.model import MoldableJob, MoldableWorkload
>>> w = MoldableWorkload(2, [MoldableJob("a", {1: 4.0, 2: 2.0}), MoldableJob("b", {1: 1.0})])
>>> gang(w.arrays).start.tolist(), sequential(w.arrays).start.tolist()
([1.0, 0.0], [0.0, 0.0])

References
----------
Dutot, Eyraud, Mounié, Trystram, Section 4.1; algorithms.md 5.4.
"""
from __future__ import annotations

import numpy as np

from controller.moldable.dual import dual_approximation, shelves
from controller.moldable.model import MoldableArrays
from controller.moldable.profile import list_schedule
from controller.moldable.schedule import MoldableSchedule

__all__ = ["gang", "sequential", "list_shelf", "list_wlptf", "list_saf", "list_rigid"]


def list_rigid(arrays: MoldableArrays, allotment, keys, name: str,
               info: dict | None = None) -> MoldableSchedule:
    """List scheduling of the jobs at ``allotment`` in the order of the sort ``keys``
    (``numpy.lexsort`` convention: the last key is the primary one; job index breaks
    ties)."""
    q = np.asarray(allotment, dtype=np.int64)
    order = np.lexsort((np.arange(arrays.n),) + tuple(keys))
    start = list_schedule(arrays.p(q), q, order, arrays.m)
    return MoldableSchedule.build(arrays, q, start, name, info)


def gang(arrays: MoldableArrays) -> MoldableSchedule:
    """Every job on all machines, Smith's order."""
    q = arrays.qmax
    return list_rigid(arrays, q, (-arrays.weight / arrays.p(q),), "gang")


def sequential(arrays: MoldableArrays) -> MoldableSchedule:
    """Every job on one machine, LPTF."""
    q = arrays.qmin
    return list_rigid(arrays, q, (-arrays.p(q),), "sequential")


def _dual(arrays):
    d = dual_approximation(arrays)
    return d, {"estimate": d.estimate}


def list_shelf(arrays: MoldableArrays) -> MoldableSchedule:
    """Dual allotments; large shelf, small shelf, small jobs, each longest first."""
    d, info = _dual(arrays)
    sh = shelves(arrays, d.estimate, d.allotment)
    return list_rigid(arrays, d.allotment, (-arrays.p(d.allotment), sh), "list-shelf", info)


def list_wlptf(arrays: MoldableArrays) -> MoldableSchedule:
    """Dual allotments; "weighted LPTF", i.e. ``w / p`` decreasing."""
    d, info = _dual(arrays)
    return list_rigid(arrays, d.allotment, (-arrays.weight / arrays.p(d.allotment),),
                      "list-wlptf", info)


def list_saf(arrays: MoldableArrays) -> MoldableSchedule:
    """Dual allotments; smallest area ``q p`` first."""
    d, info = _dual(arrays)
    q = d.allotment
    return list_rigid(arrays, q, (q * arrays.p(q),), "list-saf", info)
