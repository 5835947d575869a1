"""DEMT: batches of doubling length, filled by a knapsack, compacted by list scheduling.

The bi-criteria algorithm of Dutot, Eyraud, Mounié and Trystram (Section 3.2; secondary
sources call it DEMT) aims at a small makespan *and* a small weighted minsum
``sum_i w_i C_i`` for moldable jobs. It has **no worst-case guarantee**; the paper reports
average ratios to lower bounds (:mod:`controller.moldable.bounds`). Steps:

1. **Makespan estimate** ``Ĉ`` by dual approximation. We use the binary-search substitute
   of algorithms.md 5.2 step 1 (:func:`~controller.moldable.dual.dual_approximation`), not
   the 3/2 algorithm of Mounié-Rapine-Trystram; its ``Ĉ`` is a lower bound on the optimal
   makespan, where the paper's is at most 3/2 of it.
2. **Batches** ``k = 1..K`` of lengths ``d_1 = t_min = min_i min_q p_i(q)``,
   ``d_{k+1} = 2 d_k``, ``K = ceil(log2(Ĉ / t_min)) + 1`` (so ``d_K >= Ĉ`` and every job fits
   in batch ``K``); batch ``k`` occupies ``[t_k, t_k + d_k)``, ``t_k = sum_{k'<k} d_k'``.
   Further batches of length ``d_K`` follow until every job is placed (reconstructed).
3. **Filling** batch ``k``:

   * *candidates*: the unplaced jobs that fit, ``min_q p_i(q) <= d_k``, with the smallest
     allotment that fits, ``q_i = min{q : p_i(q) <= d_k}`` (a job too long for the batch
     cannot enter it);
   * *piles* (reconstructed): candidates with ``q_i = 1`` and ``p_i(1) <= d_k / 2``, in
     decreasing weight, go next-fit into one-machine piles of total length ``<= d_k``; a
     pile is one candidate with ``q = 1`` and the summed weight;
   * *selection*: the knapsack of :mod:`controller.moldable.knapsack` (weight, capacity
     exactly ``m``) picks the candidates;
   * the chosen ones start at ``t_k`` on disjoint machines, a pile's jobs back to back.

4. **Compaction** (the paper's "further improvement"): conservative list scheduling of
   the now rigid jobs (:func:`~controller.moldable.profile.list_schedule`), the list being
   the batch order, then inside a batch a local order: Smith's ratio ``w / p``
   (decreasing; a pile counts with its summed weight and length). A pile stays one
   rectangle (its jobs back to back on one machine). Machine sets may change.
   Compaction never delays a job: at its batch start the jobs listed before it (earlier
   batches, which end by then, and its own batch's, which share the ``m`` machines with
   it) leave its ``q`` machines free for its whole length, so the earliest fit is no
   later. (Event-driven Garey-Graham would not guarantee this.)
5. **Shuffle** (optional, ``shuffles > 0``): the batch order is shuffled ``shuffles``
   times (seeded) and the best compacted schedule kept, by minsum and then makespan
   (reconstructed); the unshuffled order is always among the tried ones.

Examples
--------
>>> from controller.moldable.model import MoldableJob, MoldableWorkload
>>> w = MoldableWorkload(2, [MoldableJob("long", {1: 4.0, 2: 2.0}, 1.0),
...                          MoldableJob("short", {1: 1.0}, 5.0)])
>>> s = demt(w.arrays)          # batch 1 (length 1): short; batch 2 (length 2): long on 2
>>> s.start.tolist(), s.allotment.tolist(), s.makespan, s.minsum
([1.0, 0.0], [2, 1], 3.0, 8.0)

References
----------
Dutot, Eyraud, Mounié, Trystram, "Bi-criteria Algorithm for Scheduling Jobs on Cluster
Platforms", Section 3.2 (algorithm), Section 4 (experiments); algorithms.md 5.2 and 5.5.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from controller.moldable.dual import dual_approximation
from controller.moldable.knapsack import knapsack
from controller.moldable.model import MoldableArrays
from controller.moldable.profile import list_schedule
from controller.moldable.schedule import MoldableSchedule

__all__ = ["Unit", "Batch", "BatchPlan", "batches", "compact", "demt"]


@dataclass(frozen=True, eq=False)
class Unit:
    """What the knapsack picks: one job, or a pile of one-machine jobs run back to back.

    Attributes
    ----------
    jobs : int array, the jobs in run order
    allotment : int, machines (1 for a pile)
    offsets : float array, each job's start relative to the unit's
    length : float, seconds
    weight : float, summed weight
    """

    jobs: np.ndarray
    allotment: int
    offsets: np.ndarray
    length: float
    weight: float


@dataclass(frozen=True, eq=False)
class Batch:
    """Batch ``index`` (1-based) on ``[start, start + length)`` and the units it runs."""

    index: int
    start: float
    length: float
    units: tuple[Unit, ...]


@dataclass(frozen=True, eq=False)
class BatchPlan:
    """The batches before compaction, and the schedule they give as they stand.

    Attributes
    ----------
    arrays : MoldableArrays
    estimate : float, ``Ĉ``
    t_min : float, ``d_1``
    K : int, the number of doubling batches
    batches : tuple of Batch, in time order (extra batches of length ``d_K`` included)
    schedule : MoldableSchedule, every unit at its batch start (the uncompacted schedule)
    """

    arrays: MoldableArrays
    estimate: float
    t_min: float
    K: int
    batches: tuple[Batch, ...]
    schedule: MoldableSchedule


def _units(a: MoldableArrays, cand: np.ndarray, d: float) -> list[Unit]:
    q = a.allotment_for(d)
    idx = np.flatnonzero(cand)
    p = a.p(np.maximum(q, 1))
    small = idx[(q[idx] == 1) & (p[idx] <= d / 2)]
    units = []
    pile: list[int] = []
    used = 0.0
    # small jobs by decreasing weight (ties: index), next fit into piles of length <= d
    for i in small[np.lexsort((small, -a.weight[small]))]:
        if pile and used + p[i] > d:
            units.append(_pile(a, pile, p))
            pile, used = [], 0.0
        pile.append(int(i))
        used += p[i]
    if pile:
        units.append(_pile(a, pile, p))
    smallset = set(small.tolist())
    for i in idx:
        if int(i) not in smallset:
            units.append(Unit(np.array([i]), int(q[i]), np.zeros(1), float(p[i]),
                              float(a.weight[i])))
    return units


def _pile(a, jobs, p) -> Unit:
    lens = p[jobs]
    off = np.concatenate([[0.0], np.cumsum(lens)[:-1]])
    return Unit(np.array(jobs), 1, off, float(lens.sum()), float(a.weight[jobs].sum()))


def batches(arrays: MoldableArrays) -> BatchPlan:
    """Steps 1-3 of DEMT: the estimate, the batches and the knapsack selections."""
    a = arrays
    est = dual_approximation(a).estimate
    t_min = float(a.pmin.min())
    K = max(1, math.ceil(math.log2(est / t_min) - 1e-12) + 1)
    left = np.ones(a.n, dtype=bool)
    out = []
    t = 0.0
    k = 1
    start = np.zeros(a.n)
    allot = np.zeros(a.n, dtype=np.int64)
    while left.any():
        d = t_min * 2.0 ** (min(k, K) - 1)
        units = _units(a, left & (a.pmin <= d), d)
        chosen = knapsack([u.allotment for u in units], [u.weight for u in units], a.m)
        sel = tuple(units[j] for j in chosen.selected)
        for u in sel:
            left[u.jobs] = False
            start[u.jobs] = t + u.offsets
            allot[u.jobs] = u.allotment
        out.append(Batch(k, t, d, sel))
        t += d
        k += 1
    sched = MoldableSchedule.build(a, allot, start, "demt/batches",
                                   {"estimate": est, "K": K, "batches": len(out)})
    return BatchPlan(a, est, t_min, K, tuple(out), sched)


def compact(plan: BatchPlan, order=None) -> MoldableSchedule:
    """Step 4: conservative list scheduling of the units, batch by batch in ``order``
    (default: time order), Smith's ratio inside a batch."""
    a = plan.arrays
    order = range(len(plan.batches)) if order is None else order
    units = []
    for b in order:
        us = plan.batches[b].units
        local = sorted(range(len(us)), key=lambda j: -us[j].weight / us[j].length)
        units.extend(us[j] for j in local)
    ustart = list_schedule(np.array([u.length for u in units]),
                           np.array([u.allotment for u in units]), range(len(units)), a.m)
    start = np.zeros(a.n)
    allot = np.zeros(a.n, dtype=np.int64)
    for u, s in zip(units, ustart):
        start[u.jobs] = s + u.offsets
        allot[u.jobs] = u.allotment
    return MoldableSchedule.build(a, allot, start, "demt")


def demt(arrays: MoldableArrays, *, shuffles: int = 0, seed=0,
         compaction: bool = True) -> MoldableSchedule:
    """Schedule moldable jobs with DEMT (module docstring).

    Parameters
    ----------
    arrays : MoldableArrays (or a MoldableWorkload's ``.arrays``)
    shuffles : int, extra random batch orders to try (step 5); 0 for none
    seed : int or numpy Generator, for the shuffles
    compaction : bool, False returns the uncompacted batch schedule

    Returns
    -------
    MoldableSchedule
        ``info``: ``estimate`` (``Ĉ``), ``K``, ``batches``, ``t_min``, ``shuffles``,
        ``batch_minsum`` / ``batch_makespan`` (before compaction), ``seconds``.
    """
    t0 = time.perf_counter()
    plan = batches(arrays)
    info = {"estimate": plan.estimate, "K": plan.K, "batches": len(plan.batches),
            "t_min": plan.t_min, "shuffles": int(shuffles),
            "batch_minsum": plan.schedule.minsum, "batch_makespan": plan.schedule.makespan}
    if not compaction:
        best = plan.schedule
    else:
        best = compact(plan)
        rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
        for _ in range(int(shuffles)):
            s = compact(plan, rng.permutation(len(plan.batches)))
            if (s.minsum, s.makespan) < (best.minsum, best.makespan):
                best = s
    info["seconds"] = time.perf_counter() - t0
    return MoldableSchedule(best.arrays, best.allotment, best.start, best.machines,
                            "demt", info)
