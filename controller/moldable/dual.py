"""Dual approximation of the makespan: a guess ``lambda`` is accepted or rejected.

The dual-approximation scheme (Hochbaum & Shmoys; for moldable jobs Mounié, Rapine &
Trystram, cited by the paper as [7]) takes a guess ``lambda`` of the optimal makespan and
either builds a schedule of length ``rho lambda`` or proves ``lambda < C*max``. DEMT uses
it for its makespan estimate ``Ĉ`` (Section 3.2), the lower bound uses it for ``Cmax``
(Section 3.3), and the list-scheduling baselines for their allotments (Section 4.1).

**What is implemented here is the simpler substitute of algorithms.md 5.2 step 1, not the
3/2 algorithm of Mounié-Rapine-Trystram** (reconstructed). For a guess ``lambda`` every job
gets its smallest allotment that fits, ``q_i(lambda) = min{q : p_i(q) <= lambda}``, and
``lambda`` is *rejected* when some job fits in no allotment or when the total work
``W(lambda) = sum_i q_i p_i(q_i)`` exceeds ``m lambda``.

Why a rejection proves ``lambda < C*max``: if ``lambda >= C*max``, every job of an optimal
schedule runs ``p_i(q*_i) <= lambda``, so ``q_i(lambda) <= q*_i`` and, the work being
non-decreasing, ``W(lambda) <= sum_i q*_i p_i(q*_i) <= m C*max <= m lambda``: accepted.
``W`` is non-increasing in ``lambda``, so the accepted guesses form an interval
``[lambda*, inf)``.

The search is a **binary search** over the breakpoints ``p_i(q)`` (``W`` is constant
between two of them), followed by one exact step inside the last interval
(``lambda* = max(v, W(v) / m)``), so it returns the smallest accepted guess exactly, in
``O(n m log(n m))``. The largest rejected guess is then ``lambda*`` itself (as a supremum),
a lower bound on the optimal makespan; ``lambda*`` is *not* the length of a schedule.

The *shelves* of a guess (used by the ``list-shelf`` baseline's order, reconstructed from
the paper's "large shelf, small shelf, small jobs"): *small jobs* are one-machine jobs
with ``p_i(1) <= lambda/2``; the *large shelf* holds the other jobs with
``p_i(q_i) > lambda/2``; the *small shelf* the rest.

Examples
--------
>>> from controller.moldable.model import MoldableJob, MoldableWorkload
>>> w = MoldableWorkload(2, [MoldableJob("a", {1: 4.0, 2: 2.0}),
...                          MoldableJob("b", {1: 1.0})])
>>> d = dual_approximation(w.arrays)
>>> d.estimate, d.allotment.tolist()
(2.5, [2, 1])

References
----------
Dutot, Eyraud, Mounié, Trystram, Sections 3.2-3.3; G. Mounié, C. Rapine, D. Trystram,
"Efficient approximation algorithms for scheduling malleable tasks" (SPAA 1999);
algorithms.md 5.2 step 1 and 5.3.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from controller.moldable.model import MoldableArrays

__all__ = ["DualApproximation", "dual_approximation", "work_at", "shelves"]


@dataclass(frozen=True, eq=False)
class DualApproximation:
    """The smallest accepted guess and the allotments it gives.

    Attributes
    ----------
    estimate : float
        ``lambda*``, the smallest accepted guess; every smaller guess is rejected, so it is
        a lower bound on the optimal makespan.
    allotment : int array (n,), ``q_i(lambda*)``
    probes : int, guesses tested by the binary search
    """

    estimate: float
    allotment: np.ndarray
    probes: int


def work_at(arrays: MoldableArrays, lam: float) -> float:
    """``W(lambda)``: total work of the smallest fitting allotments; ``inf`` if a job fits
    in none."""
    q = arrays.allotment_for(lam)
    if (q == 0).any():
        return np.inf
    return float(arrays.work[np.arange(arrays.n), q - 1].sum())


def dual_approximation(arrays: MoldableArrays) -> DualApproximation:
    """The smallest accepted guess ``lambda*`` (module docstring), exactly."""
    a = arrays
    values = np.unique(a.time[a.allowed])
    top = max(float(values[-1]), float(a.min_work.sum()) / a.m)
    values = np.append(values, top) if top > values[-1] else values
    probes = 0

    def accepted(k):
        nonlocal probes
        probes += 1
        return work_at(a, values[k]) <= a.m * values[k]

    lo, hi = 0, len(values) - 1          # values[hi] is accepted
    if accepted(0):
        hi = 0
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if accepted(mid):
            hi = mid
        else:
            lo = mid
    lam = float(values[hi])
    if hi > 0:   # W is constant on [values[hi-1], values[hi]): maybe accepted inside
        v = float(values[hi - 1])
        inside = max(v, work_at(a, v) / a.m)
        if inside < lam:
            lam = inside
    return DualApproximation(lam, a.allotment_for(lam), probes)


def shelves(arrays: MoldableArrays, lam: float, allotment: np.ndarray) -> np.ndarray:
    """Shelf of every job for the guess ``lam``: 0 large shelf, 1 small shelf, 2 small
    jobs (module docstring)."""
    p = arrays.p(allotment)
    small_job = (allotment == 1) & (p <= lam / 2)
    large = ~small_job & (p > lam / 2)
    return np.where(small_job, 2, np.where(large, 0, 1))
