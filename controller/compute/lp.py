"""The relaxed linear programs LP1, LP2 and LP3: lower bounds and orderings.

**Intervals** (algorithms.md 2.3). The horizon is cut into geometric intervals
``(d_{l-1}, d_l]`` with ``d_0 = 0`` and ``d_l = u (1+eps)^{l-1}`` for ``l = 1..L``, where
``u`` is the time unit (the shortest processing time of the instance, so that no task is
shorter than one unit, as the paper assumes) and ``L`` is the smallest integer with
``d_L >= T``, ``T = max release + sum_tasks max_i p^i`` (every job can be done by ``T``).

**LP1** (9a-9h). ``x^i_tl``: fraction of task ``t`` done on machine ``i`` in interval ``l``;
``z_sl``: relaxed "stage ``s`` completes in interval ``l``" (a stage is the paper's job)::

    min  sum_s w_s C_s,        C_s = sum_l e_l z_sl                        (9a, 9g)
    sum_{i,l} x^i_tl = 1                                    every task      (9b)
    sum_{l'<=l} sum_i p^i_t x^i_tl' <= d_l - r_t            every task, l   (9c)
    sum_{l'<=l} sum_t a_t p^i_t x^i_tl' <= c_i d_l          every machine, l (9d)
    sum_{l'<=l} z_sl' <= sum_{l'<=l} sum_i x^i_tl'          t in s, every l (9f)
    sum_l z_sl = 1,  x, z >= 0                                              (9e, 9h)

**LP2** (13a-13c) is LP1 with ``eps = 1`` (``d_l = u 2^{l-1}``) and ``x^i_tl = 0`` whenever
``p^i_t > d_l - r_t`` (13b): a task mapped to an interval fits in it whole.

**LP3** (21a-21e), single-machine placement (each task on its fastest machine; the
paper's setting for SynchPack-3). ``delta_{s's}``: relaxed "stage ``s'`` completes before
``s``", one variable per pair of stages sharing a machine (21d substitutes the other)::

    min  sum_s w_s C_s
    c_i C_s >= v_si + sum_{s' != s on i} v_s'i delta_{s's}   every s, i in M_s   (21b)
    C_s >= r_t + p_t                                          every task t of s  (21c)
    delta_{s's} + delta_{ss'} = 1,  0 <= delta <= 1                          (21d, 21e)

where ``v_si`` is the total volume ``sum a_t p_t`` of the tasks of ``s`` on ``i`` (the
paper's Remark 1 for several tasks of a job on one machine).

Implementation notes and our deviations, all of which keep the LPs valid lower bounds:

* *Left point of the first interval.* With ``d_0 = 0`` as reconstructed, a stage all of
  whose tasks fit in ``(0, u]`` gets ``C~ = 0`` and no ratio can hold (one task of length
  ``u``: LP = 0, OPT = ``u``). We use ``e_1 = d_1 / (1+eps)`` (valid: no task finishes
  before ``u``) and ``e_l = d_{l-1}`` for ``l >= 2``; ``first_left=0.0`` restores the
  reconstruction as written.
* *Releases* (online re-planning, our extension): ``x^i_tl = 0`` if ``d_l <= r_t``, and the
  right side of (9c) is ``d_l - r_t``; LP3 gets ``C_s >= r_t + p_t``.
* *Stage precedence* (multi-stage jobs, our extension): for an arc ``s -> s'`` and every
  task ``t'`` of ``s'``: ``sum_{l'<=l} sum_i x^i_t'l' <= sum_{l'<=l} z_sl'`` (nothing of
  ``s'`` runs before ``s`` is complete); LP3 gets ``C_s' >= C_s + max_{t in s'} p_t``.
* *Stage weights*: by default a job's weight sits on its sink stages (split evenly), so
  the LP value bounds ``sum_jobs w_j C_j`` from below; the algorithms pass
  ``weights=`` the job weight on every stage to order stages.
* *Compact form*: the cumulative sums are carried by auxiliary variables ``F_tl`` (fraction
  done by ``d_l``), ``P_tl`` (processing time), ``V_il`` (volume / ``c_i``) and ``Z_sl``
  (cumulative ``z``), so the constraint matrix has ``O(#x)`` non-zeros instead of
  ``O(#x L)``. The feasible sets of ``x, z`` are the same.

Solved with ``scipy.optimize.linprog(method="highs")`` on sparse matrices, times in units
of ``u`` (LP1/LP2) or of the longest processing time (LP3). Each solver returns the
project's one LP result type, :class:`~controller.lp.result.LPResult`, with a
:class:`~controller.lp.result.StageSolution` and :class:`~controller.lp.result.ModelDetails`.

References
----------
Shafiee & Ghaderi, Sections 3.1 (LP1, eq. 9), 4.1 (LP2, eq. 13), 5.1 (LP3, eq. 21),
Lemmas 3.2, 4.3, E.2 (each LP is a lower bound); algorithms.md 2.3, 2.4, 2.6, 2.7.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from controller.compute.model import ComputeArrays, ComputeWorkload
from controller.lp.result import LPResult, ModelDetails, StageOrder, StageSolution, TaskFractions
from controller.lp.solver import solve_linprog

__all__ = ["Intervals", "intervals", "lp1", "lp2", "lp3"]


@dataclass(frozen=True)
class Intervals:
    """Geometric intervals ``(d[l-1], d[l]]``, ``l = 1..L`` (seconds).

    Attributes
    ----------
    eps : float
    unit : float, seconds (``d[1]``)
    d : float array (L+1,), end points, ``d[0] = 0``
    left : float array (L,), the completion time LP credits to a stage completing in
        interval ``l`` (``left[l-1]``): ``d[l-1]``, and ``d[1]/(1+eps)`` for ``l = 1``.
    """

    eps: float
    unit: float
    d: np.ndarray
    left: np.ndarray

    @property
    def L(self) -> int:
        return len(self.d) - 1


def intervals(arrays: ComputeArrays, eps: float, first_left: float | None = None) -> Intervals:
    """The intervals of algorithms.md 2.3 for ``arrays`` (see the module docstring)."""
    if not eps > 0:
        raise ValueError(f"eps must be > 0, got {eps!r}")
    fin = np.where(arrays.allowed, arrays.proc, 0.0)
    unit = float(arrays.proc[arrays.allowed].min())
    T = float(fin.max(axis=1).sum() + (arrays.release.max() if arrays.n_tasks else 0.0))
    L = 1
    while unit * (1 + eps) ** (L - 1) < T * (1 - 1e-12):
        L += 1
    d = np.concatenate([[0.0], unit * (1 + eps) ** np.arange(L)])
    left = d[:-1].copy()
    left[0] = d[1] / (1 + eps) if first_left is None else float(first_left)
    return Intervals(float(eps), unit, d, left)


def _arrays(instance) -> ComputeArrays:
    return instance.arrays if isinstance(instance, ComputeWorkload) else instance


def _weights(a: ComputeArrays, weights) -> np.ndarray:
    if weights is None:
        return a.stage_weight
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (a.n_stages,):
        raise ValueError(f"weights must have one entry per stage ({a.n_stages})")
    return w


def lp1(instance, eps: float = 0.25, *, weights=None, first_left: float | None = None,
        _lp2: bool = False) -> LPResult:
    """Solve LP1 (9a-9h) over geometric intervals ``(1+eps)``.

    Parameters
    ----------
    instance : ComputeWorkload or ComputeArrays
    eps : float
        Interval growth; the LP has ``L ~ log_{1+eps} T`` intervals (keep 0.1-0.5).
    weights : float array per stage, optional
        Default: job weights on sink stages (the LP value is then a lower bound on
        ``sum_j w_j C_j``).
    first_left : float, optional
        Completion credited to the first interval (seconds); default ``d_1/(1+eps)``.

    Returns
    -------
    LPResult
        ``solution`` is a :class:`~controller.lp.result.StageSolution` with the task
        ``fractions``; ``details`` a :class:`~controller.lp.result.ModelDetails`. HiGHS
        solves it once: ``status`` is ``"optimal"``, ``rounds`` 1.

    Raises
    ------
    controller.lp.solver.LPError
        HiGHS did not find the optimum.

    References
    ----------
    Shafiee & Ghaderi, Section 3.1, eq. (9); Lemma 3.2 (LP1 <= OPT).
    """
    import scipy.sparse as sp  # here, not at import: commands that list policies start fast
    a = _arrays(instance)
    t_build = time.perf_counter()
    iv = intervals(a, 1.0 if _lp2 else eps, first_left)
    w = _weights(a, weights)
    n, M, S, L = a.n_tasks, a.n_machines, a.n_stages, iv.L
    u = iv.unit
    dU = iv.d / u                         # end points in units, dU[0] = 0
    rU = a.release / u
    tt, ii = np.nonzero(a.allowed)
    pU = a.proc[tt, ii] / u
    xt = np.repeat(tt, L)
    xi = np.repeat(ii, L)
    xp = np.repeat(pU, L)
    xl = np.tile(np.arange(1, L + 1), len(tt))
    ok = dU[xl] > rU[xt] + 1e-12
    if _lp2:
        ok &= xp <= dU[xl] - rU[xt] + 1e-9
    xt, xi, xp, xl = xt[ok], xi[ok], xp[ok], xl[ok]
    nx = len(xt)
    F0 = nx
    P0 = F0 + n * L
    V0 = P0 + n * L
    Z0 = V0 + M * L
    nvar = Z0 + S * L

    def F(t, l):
        return F0 + t * L + (l - 1)

    def P(t, l):
        return P0 + t * L + (l - 1)

    def V(i, l):
        return V0 + i * L + (l - 1)

    def Z(s, l):
        return Z0 + s * L + (l - 1)

    xid = np.arange(nx)
    # ---- equalities: F, P, V definitions (cumulative sums)
    rows, cols, vals = [], [], []
    tl = np.arange(n * L)
    t_of, l_of = tl // L, tl % L + 1
    # F rows 0..nL-1
    rows += [tl, tl[l_of > 1], (xt * L + xl - 1)]
    cols += [F(t_of, l_of), F(t_of[l_of > 1], l_of[l_of > 1] - 1), xid]
    vals += [np.ones(n * L), -np.ones(int((l_of > 1).sum())), -np.ones(nx)]
    # P rows nL..2nL-1
    rows += [n * L + tl, n * L + tl[l_of > 1], n * L + (xt * L + xl - 1)]
    cols += [P(t_of, l_of), P(t_of[l_of > 1], l_of[l_of > 1] - 1), xid]
    vals += [np.ones(n * L), -np.ones(int((l_of > 1).sum())), -xp]
    # V rows 2nL..2nL+ML-1
    il = np.arange(M * L)
    i_of, li_of = il // L, il % L + 1
    rows += [2 * n * L + il, 2 * n * L + il[li_of > 1], 2 * n * L + (xi * L + xl - 1)]
    cols += [V(i_of, li_of), V(i_of[li_of > 1], li_of[li_of > 1] - 1), xid]
    vals += [np.ones(M * L), -np.ones(int((li_of > 1).sum())),
             -(a.size[xt] / a.capacity[xi]) * xp]
    n_eq = 2 * n * L + M * L
    A_eq = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                         shape=(n_eq, nvar))
    b_eq = np.zeros(n_eq)
    # ---- inequalities
    rows, cols, vals = [], [], []
    r = 0
    if L > 1:
        sl = np.arange(S * (L - 1))
        s_of, l2 = sl // (L - 1), sl % (L - 1) + 2
        rows += [sl, sl]
        cols += [Z(s_of, l2 - 1), Z(s_of, l2)]
        vals += [np.ones(len(sl)), -np.ones(len(sl))]
        r = len(sl)
        # Z_sl <= F_tl for t in s, l < L
        tl2 = np.arange(n * (L - 1))
        t2, l3 = tl2 // (L - 1), tl2 % (L - 1) + 1
        rows += [r + tl2, r + tl2]
        cols += [Z(a.task_stage[t2], l3), F(t2, l3)]
        vals += [np.ones(len(tl2)), -np.ones(len(tl2))]
        r += len(tl2)
        # precedence: F_t'l <= Z_sl for arcs s -> s'
        for s2 in range(S):
            for s1 in a.stage_preds[s2]:
                ts = a.stage_tasks[s2]
                k = np.arange(len(ts) * (L - 1))
                tq, lq = ts[k // (L - 1)], k % (L - 1) + 1
                rows += [r + k, r + k]
                cols += [F(tq, lq), Z(int(s1), lq)]
                vals += [np.ones(len(k)), -np.ones(len(k))]
                r += len(k)
    A_ub = sp.csr_matrix((np.concatenate(vals) if vals else np.zeros(0),
                          (np.concatenate(rows) if rows else np.zeros(0, int),
                           np.concatenate(cols) if cols else np.zeros(0, int))),
                         shape=(r, nvar)) if r else None
    b_ub = np.zeros(r) if r else None
    # ---- bounds
    lb = np.zeros(nvar)
    ub = np.full(nvar, np.inf)
    ub[:nx] = 1.0
    Fi = F0 + np.arange(n * L)
    ub[Fi] = 1.0
    lb[F(np.arange(n), L)] = 1.0
    Pcap = np.maximum(dU[l_of] - rU[t_of], 0.0)
    ub[P0 + np.arange(n * L)] = Pcap + 1e-9
    ub[V0 + np.arange(M * L)] = dU[li_of]
    ub[Z0 + np.arange(S * L)] = 1.0
    lb[Z(np.arange(S), L)] = 1.0
    # ---- objective: sum_s w_s sum_l e_l (Z_sl - Z_s,l-1)
    eU = iv.left / u
    c = np.zeros(nvar)
    const = float(w.sum() * eU[L - 1])
    if L > 1:
        for l in range(1, L):
            c[Z(np.arange(S), l)] = w * (eU[l - 1] - eU[l])
    build = time.perf_counter() - t_build
    nnz = A_eq.nnz + (A_ub.nnz if A_ub is not None else 0)
    res, secs = solve_linprog(c, A_ub, b_ub, A_eq, b_eq, np.column_stack([lb, ub]),
                       "LP2" if _lp2 else "LP1")
    sol = res.x
    xv = np.maximum(sol[:nx], 0.0)
    xv[xv < 1e-7] = 0.0                    # solver noise: fractions below 1e-7 are zero
    tot = np.zeros(n)
    np.add.at(tot, xt, xv)
    xv = xv / tot[xt]
    keep = xv > 0
    Zv = sol[Z0:].reshape(S, L)
    zv = np.diff(np.concatenate([np.zeros((S, 1)), Zv], axis=1), axis=1)
    zv = np.maximum(zv, 0.0)
    C = zv @ iv.left
    value = float(res.fun * u + const * u)
    return LPResult(
        lp="LP2" if _lp2 else "LP1", value=value, status="optimal",
        solution=StageSolution(C, _job_max(a, C), fractions=TaskFractions(
            xt[keep], xi[keep], xl[keep], xv[keep])),
        rounds=1, seconds=secs,
        details=ModelDetails(variables=nvar, rows=n_eq + r, nonzeros=int(nnz),
                             build_seconds=build, intervals=iv, weights=w))


def lp2(instance, *, weights=None, first_left: float | None = None) -> LPResult:
    """Solve LP2 (13a-13c): LP1 with ``eps = 1`` and ``x^i_tl = 0`` when ``p^i_t > d_l``.

    A lower bound for schedules without migration (preemptive or not).

    References
    ----------
    Shafiee & Ghaderi, Section 4.1, eq. (13); Lemma 4.3.
    """
    return lp1(instance, 1.0, weights=weights, first_left=first_left, _lp2=True)


def lp3(instance, *, weights=None) -> LPResult:
    """Solve LP3 (21a-21e) with every task on its fastest machine.

    A lower bound for schedules that run every task on its fastest machine only
    (single-machine placement; use :meth:`ComputeWorkload.pinned`). The result's
    ``solution.order`` holds the ``delta`` of every pair of stages sharing a machine.

    References
    ----------
    Shafiee & Ghaderi, Section 5.1, eq. (21); Lemma E.2.
    """
    import scipy.sparse as sp  # here, not at import: commands that list policies start fast
    a = _arrays(instance)
    t_build = time.perf_counter()
    w = _weights(a, weights)
    n, M, S = a.n_tasks, a.n_machines, a.n_stages
    mach = a.fastest
    p = a.pmin
    u = float(p.max()) if n else 1.0
    # v_si (in units of u, divided by capacity) and lower bounds on C_s
    vol = np.zeros((S, M))
    np.add.at(vol, (a.task_stage, mach), a.size * p / a.capacity[mach] / u)
    lbC = np.zeros(S)
    np.maximum.at(lbC, a.task_stage, (a.release + p) / u)
    on = [np.flatnonzero(vol[:, i] > 0) for i in range(M)]
    lo_all, hi_all = [], []
    for st in on:
        if len(st) > 1:
            A_, B_ = np.triu_indices(len(st), 1)
            lo_all.append(st[A_])
            hi_all.append(st[B_])
    if lo_all:
        key = np.unique(np.concatenate(lo_all) * S + np.concatenate(hi_all))
    else:
        key = np.zeros(0, dtype=np.int64)
    P_lo, P_hi = key // S, key % S
    npair = len(key)
    nvar = S + npair
    rows, cols, vals, b = [], [], [], []
    r = 0
    for i, st in enumerate(on):
        m = len(st)
        if m == 0:
            continue
        v = vol[st, i]
        # row for each s in st: -C_s + sum_{s'<s} v_s' y(s',s) - sum_{s'>s} v_s' y(s,s')
        #                        <= -v_s - sum_{s'>s} v_s'
        rr = r + np.arange(m)
        rows.append(rr)
        cols.append(st)
        vals.append(-np.ones(m))
        suffix = np.concatenate([np.cumsum(v[::-1])[::-1][1:], [0.0]])
        b.append(-v - suffix)
        if m > 1:
            A_, B_ = np.meshgrid(np.arange(m), np.arange(m), indexing="ij")  # A_ row, B_ other
            mask = A_ != B_
            A_, B_ = A_[mask], B_[mask]
            s_row, s_oth = st[A_], st[B_]
            lo = np.minimum(s_row, s_oth)
            hi = np.maximum(s_row, s_oth)
            pid = np.searchsorted(key, lo * S + hi)
            rows.append(r + A_)
            cols.append(S + pid)
            vals.append(np.where(s_oth < s_row, v[B_], -v[B_]))
        r += m
    # precedence C_s >= C_pred + max p of s
    maxp = np.zeros(S)
    np.maximum.at(maxp, a.task_stage, p / u)
    for s2 in range(S):
        for s1 in a.stage_preds[s2]:
            rows.append(np.array([r, r]))
            cols.append(np.array([int(s1), s2]))
            vals.append(np.array([1.0, -1.0]))
            b.append(np.array([-maxp[s2]]))
            r += 1
    A_ub = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                         shape=(r, nvar))
    b_ub = np.concatenate(b)
    lb = np.concatenate([lbC, np.zeros(npair)])
    ub = np.concatenate([np.full(S, np.inf), np.ones(npair)])
    c = np.concatenate([w, np.zeros(npair)])
    build = time.perf_counter() - t_build
    res, secs = solve_linprog(c, A_ub, b_ub, None, None, np.column_stack([lb, ub]), "LP3")
    C = res.x[:S] * u
    return LPResult(
        lp="LP3", value=float(res.fun * u), status="optimal",
        solution=StageSolution(C, _job_max(a, C), order=StageOrder(P_lo, P_hi, res.x[S:])),
        rounds=1, seconds=secs,
        details=ModelDetails(variables=nvar, rows=r, nonzeros=int(A_ub.nnz),
                             build_seconds=build, weights=w))


def _job_max(a: ComputeArrays, C: np.ndarray) -> np.ndarray:
    return np.array([C[s].max() for s in a.job_stages])
