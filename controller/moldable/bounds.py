"""Lower bounds for both criteria: the makespan bound and the minsum interval LP.

The paper measures its algorithm by the ratio to lower bounds (Section 3.3), the optimum
being out of reach (the problem is strongly NP-hard).

**Makespan** (:func:`makespan_bound`): the maximum of

* the dual approximation's largest rejected guess ``lambda*``
  (:mod:`controller.moldable.dual`; every smaller guess is proved below the optimum);
* ``max_i min_q p_i(q)`` (no job is faster than its fastest allotment);
* ``sum_i min_q q p_i(q) / m`` (no job does less work than its least work).

``lambda*`` dominates the other two; all three are reported.

**Minsum** (:func:`minsum_lp`): the relaxed ILP over intervals
``I_k = (T_{k-1}, T_k]``, ``T_0 = 0``, ``T_k = t_min 2^{k-1}`` (doubling, ``t_min`` the
shortest time of any job, before which no job ends), ``k = 1..K`` with ``K`` the first
boundary past the horizon ``H = sum_i min_q p_i(q)`` (the length of running the jobs one
after another, each at its fastest), plus a final unbounded interval
``I_{K+1} = (T_K, inf)`` with no area row, so the LP stays a relaxation of schedules that
run longer (reconstructed, algorithms.md 5.3). ``x_ik`` is "job ``i`` ends in ``I_k``";
``S_ik = min{q p_i(q) : p_i(q) <= T_k}`` is the least area of job ``i`` if it ends by
``T_k`` (no such ``q``: ``x_ik = 0``)::

    min  sum_i w_i sum_k c_ik x_ik
    s.t. sum_k x_ik = 1                                   every job
         sum_i sum_{k' <= k} S_ik' x_ik' <= m T_k          k = 1..K
         0 <= x <= 1

with ``c_ik = max(T_{k-1}, min_q p_i(q))``. The paper credits ``T_{k-1}``; the maximum with
the job's shortest time is our strengthening, valid because no job ends before its
shortest time (it matters for the first interval, where ``T_0 = 0``). Every schedule gives
a feasible 0/1 point (``x_ik = 1`` for the interval holding ``C_i``; the jobs that end by
``T_k`` occupy at least ``S_ik'`` each of the area ``m T_k`` before it) whose cost is at
most ``sum_i w_i C_i``, so the LP optimum is a lower bound on the minsum. ``= 1`` instead
of the paper's ``>= 1`` does not change the optimum (costs are non-negative).

Solved with ``scipy.optimize.linprog(method="highs")`` on sparse matrices, times in units
of ``T_K``, weights in units of the largest weight. Returns the project's one LP result
type, :class:`~controller.lp.result.LPResult` (``lp = "moldable-minsum"``), with an
:class:`~controller.lp.result.IntervalSolution` and a
:class:`~controller.lp.result.ModelDetails`.

Examples
--------
>>> from controller.moldable.model import MoldableJob, MoldableWorkload
>>> w = MoldableWorkload(2, [MoldableJob("a", {1: 2.0, 2: 1.0}), MoldableJob("b", {1: 1.0})])
>>> makespan_bound(w.arrays).value
1.5
>>> r = minsum_lp(w.arrays)
>>> r.lp, r.status, r.value <= 1.0 + 2.0     # b at 1, a on 2 machines from 1 to 2
('moldable-minsum', 'optimal', True)

References
----------
Dutot, Eyraud, Mounié, Trystram, Section 3.3; algorithms.md 5.3.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from controller.lp.result import IntervalSolution, LPResult, ModelDetails
from controller.lp.solver import solve_linprog
from controller.moldable.dual import dual_approximation
from controller.moldable.model import MoldableArrays

__all__ = ["MakespanBound", "makespan_bound", "boundaries", "minsum_lp"]


@dataclass(frozen=True)
class MakespanBound:
    """A lower bound on the optimal makespan and its parts (seconds).

    Attributes
    ----------
    value : float, the largest of the three
    dual : float, the dual approximation's largest rejected guess ``lambda*``
    longest : float, ``max_i min_q p_i(q)``
    area : float, ``sum_i min_q q p_i(q) / m``
    """

    value: float
    dual: float
    longest: float
    area: float


def makespan_bound(arrays: MoldableArrays) -> MakespanBound:
    """The makespan lower bound of the module docstring."""
    dual = dual_approximation(arrays).estimate
    longest = float(arrays.pmin.max())
    area = float(arrays.min_work.sum()) / arrays.m
    return MakespanBound(max(dual, longest, area), dual, longest, area)


def boundaries(arrays: MoldableArrays, horizon: float | None = None) -> np.ndarray:
    """``T_0 = 0, T_k = t_min 2^{k-1}`` up to the first ``T_K >= horizon`` (default
    ``sum_i min_q p_i(q)``)."""
    t_min = float(arrays.pmin.min())
    H = float(arrays.pmin.sum()) if horizon is None else float(horizon)
    K = max(1, math.ceil(math.log2(max(H / t_min, 1.0)) - 1e-12) + 1)
    return np.concatenate([[0.0], t_min * 2.0 ** np.arange(K)])


def minsum_lp(arrays: MoldableArrays, *, horizon: float | None = None) -> LPResult:
    """Solve the minsum interval LP (module docstring).

    Parameters
    ----------
    arrays : MoldableArrays
    horizon : float, optional
        Where the doubling boundaries stop (default ``sum_i min_q p_i(q)``); any value
        gives a valid bound, a larger one more intervals.

    Returns
    -------
    LPResult
        ``value`` is a lower bound on ``sum_i w_i C_i`` of every schedule.

    Raises
    ------
    controller.lp.solver.LPError
        HiGHS did not find the optimum.
    """
    import scipy.sparse as sp               # here: scipy takes 0.3 s to import
    a = arrays
    t_build = time.perf_counter()
    T = boundaries(a, horizon)
    K = len(T) - 1
    scale = float(T[-1])
    wscale = float(a.weight.max())
    n = a.n
    rows_i = np.arange(n)
    # S[i, k-1] for k = 1..K: least area ending by T_k (inf: cannot)
    S = np.full((n, K), np.inf)
    for k in range(1, K + 1):
        q = a.allotment_for(T[k])
        ok = q > 0
        S[ok, k - 1] = a.work[rows_i[ok], q[ok] - 1]
    valid = np.concatenate([np.isfinite(S), np.ones((n, 1), dtype=bool)], axis=1)
    vi, vk = np.nonzero(valid)              # vk is 0-based: interval k = vk + 1
    nvar = len(vi)
    left = np.maximum(T[vk], a.pmin[vi])    # T[vk] = T_{k-1}
    c = (a.weight[vi] / wscale) * (left / scale)
    A_eq = sp.csr_matrix((np.ones(nvar), (vi, np.arange(nvar))), shape=(n, nvar))
    # area rows: variable (i, k') enters every row k >= k' (finite intervals only)
    fin = np.flatnonzero(vk < K)
    reps = K - vk[fin]
    cols = np.repeat(fin, reps)
    rows = np.concatenate([np.arange(vk[j], K) for j in fin]) if len(fin) else \
        np.zeros(0, np.int64)
    vals = np.repeat(S[vi[fin], vk[fin]] / scale, reps)
    A_ub = sp.csr_matrix((vals, (rows, cols)), shape=(K, nvar))
    b_ub = a.m * T[1:] / scale
    build = time.perf_counter() - t_build
    res, secs = solve_linprog(c, A_ub, b_ub, A_eq, np.ones(n), (0.0, 1.0),
                              "moldable minsum LP")
    x = np.zeros((n, K + 1))
    x[vi, vk] = res.x
    credit = np.zeros((n, K + 1))
    credit[vi, vk] = left
    sol = IntervalSolution(T, x, (credit * x).sum(axis=1))
    details = ModelDetails(nvar, n + K, int(A_eq.nnz + A_ub.nnz), build, None, a.weight)
    return LPResult("moldable-minsum", float(res.fun) * scale * wscale, "optimal", sol, 1,
                    secs, details)
