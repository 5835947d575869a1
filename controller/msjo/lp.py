"""The MSJO LP relaxations: CLS-LPP, COGE's CND-LPP, and the task-level LP (11)-(13).

All three bound the cost of every feasible schedule from below and give the LP times the
policies order tasks by. Each returns the project's :class:`~controller.lp.result.LPResult`
(``lp`` = ``"CLS-LPP"``, ``"CND-LPP"`` or ``"TASK-LP"``) whose ``solution`` is an
:class:`MSJOSolution` (LP start and completion per task, completion per job).

CLS-LPP, job level (Ling et al. Section 3.2; algorithms.md 3.2) -- :func:`solve_cls_lp`
    Variables ``S_u`` per task and ``C_j`` per job; ``min sum_j w_j C_j`` subject to::

        (1) S_u >= r_u                                     every task
        (2) S_v >= S_u + p_u + d_u                         map u, reduce v of one job
        (3) C_j >= S_v + p_v                               reduce v of job j
        (4) sum_{u in B} p_u S_u >= p(B)^2 / (2|M|) - p2(B) / 2      every B subset of T

    (2) is written through one column ``F_j`` per job (``F_j >= S_u + p_u + d_u`` per
    map, ``S_v >= F_j`` per reduce): the same LP projected, with ``|maps| + |reduces|``
    rows instead of their product. (4) is the Hall-Schulz-Shmoys-Wein parallel-machine
    inequality ``sum p C >= p(B)^2/(2m) + p2(B)/2``, the *strong* form. In the shifted
    variable ``K_u = S_u + p_u (m + 1) / (2m)`` it reads ``sum_B p_u K_u >= (p(B)^2 +
    p2(B)) / (2m)``, exactly the (weak) subset inequality that
    :mod:`controller.lp.separation` separates exactly (the most violated ``B`` is a prefix
    in ``K`` order). So the LP is posed in ``K`` columns and solved by its
    :class:`~controller.lp.separation.CuttingPlane` loop, as the coflow LPs are, until no
    subset inequality at all is violated.

COGE / CND-LPP (Section 3.3, Algorithm 1; algorithms.md 3.3) -- :func:`solve_coge`
    Start from (1)-(3); repeat: solve, order the tasks by *middle finish time* ``M_u =
    S_u + p_u/2`` (ties: map first, then index) into ``pi``, check every *prefix
    guarantee constraint* ``PGC(pi, i)``: (4) for ``B`` = the first ``i`` tasks of ``pi``;
    add violated ones; build ``S_NV``, a solution that satisfies every PGC of ``pi``
    (walk ``pi``, and where the prefix ending at ``pi(k)`` is violated, delay ``pi(k)``
    and every later task by ``(R - sum p S_NV) / p_pi(k)``: the reconstructed
    ViolationOffset, which keeps (2) since maps precede their reduces in ``pi``); stop when
    no PGC is violated, or when ``sum w C_LP >= (1 - e) sum w C_NV`` (``e`` > 0 only:
    with ``e = 0`` COGE ends only without violated PGCs, as Theorem 3 needs).
    CND-LPP holds a subset of CLS-LPP's rows, so ``CND <= CLS``: still a lower bound.

    Our reading where the text is lost: PGCs are checked for every prefix length ``1 ..
    |T|`` (the paper's ``i = 2..|T|`` plus the whole set; all are rows of (4)); of the
    violated ones, only the local maxima of the violation along ``pi``, at most ``cap``
    per round, most violated first, become rows (adding all of them makes each round
    quadratic in ``|T|``); ``details.violated`` counts all violated PGCs of the last
    round (the paper's ``vn``).

Task-level LP (Section 4, (11)-(13); algorithms.md 3.5) -- :func:`solve_task_lp`
    ``min sum_u w_u C_u`` subject to ``C_u >= r_u + p_u`` (11), ``C_v >= C_u + d_u + p_v``
    for map ``u`` and reduce ``v`` of one job (12, with the shuffle delay: our reading,
    valid because every feasible schedule meets it, and needed for T-MarS's chain bound),
    and ``sum_B p_u C_u >= (p2(B) + p(B)^2) / (2|M|)`` (13) for every ``B``, separated
    exactly by the same cutting-plane loop.

Times are scaled so that the longest task has length 1 inside the LP (algorithms.md
conventions) and scaled back in the result.

References
----------
Ling et al., Sections 3.2-3.3 (CLS-LPP, PGC, COGE), Section 4 (task-level LP);
L. A. Hall, A. S. Schulz, D. B. Shmoys, J. Wein, Math. Oper. Res. 22 (1997).
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from controller.lp.result import CuttingPlaneDetails, LPResult
from controller.lp.separation import CuttingPlane, PortItems
from controller.msjo.model import MSJOArrays

__all__ = ["MSJOSolution", "ConstraintGenerationDetails", "solve_cls_lp", "solve_coge",
           "solve_task_lp", "middle_order", "pgc_violations"]


@dataclass(frozen=True, eq=False)
class MSJOSolution:
    """Optimal times of an MSJO LP.

    Attributes
    ----------
    start : float array, per task, ``S_u^LP`` (``C_u^LP - p_u`` for the task-level LP)
    completion : float array, per task, ``C_u^LP = S_u^LP + p_u``
    job_completion : float array, per job, ``C_j^LP`` (job-level LPs: the column
        ``C_j``; task-level LP: the largest ``C_v^LP`` of its reduces)
    """

    start: np.ndarray
    completion: np.ndarray
    job_completion: np.ndarray


@dataclass(frozen=True)
class ConstraintGenerationDetails:
    """How COGE went (Algorithm 1).

    Attributes
    ----------
    threshold : float, the stop threshold ``e``
    pgcs : int, PGC rows added in all rounds
    violated : int, PGCs of the final order violated by the returned solution (``vn``)
    stopped : str, ``"no_violation"``, ``"threshold"`` or ``"round_limit"``
    nv_value : float, ``sum w C_NV`` of the last round's repaired solution
    """

    threshold: float
    pgcs: int
    violated: int
    stopped: str
    nv_value: float


# ---------------------------------------------------------------------- helpers
def _diff_rows(plus, minus, lower):
    """Rows ``x[plus] - x[minus] >= lower`` in compressed row form."""
    plus = np.asarray(plus, dtype=np.int64)
    minus = np.asarray(minus, dtype=np.int64)
    n = len(plus)
    start = np.arange(0, 2 * n + 1, 2, dtype=np.int64)
    index = np.stack((plus, minus), axis=1).ravel()
    value = np.tile([1.0, -1.0], n)
    lower = np.asarray(lower, dtype=np.float64)
    return start, index, value, lower, np.full(n, np.inf)


def _scale(a: MSJOArrays) -> float:
    return float(a.length.max()) if a.n_tasks else 1.0


def _subset_items(a: MSJOArrays, p, assignment):
    """Items of the subset inequalities and their ``m``: one pool of ``|M|`` machines, or
    (``assignment`` given) one single machine per machine (the fixed-assignment LP)."""
    n = a.n_tasks
    if assignment is None:
        return PortItems.build(np.zeros(n), np.arange(n), p, p * p, 1), a.machines
    return PortItems.build(np.asarray(assignment), np.arange(n), p, p * p, a.machines), 1


def _job_lp(a: MSJOArrays, sc: float, tol: float, cap: int,
            assignment=None, spread: int = 0) -> tuple[CuttingPlane, np.ndarray]:
    """CLS-LPP's rows (1)-(3) in ``K`` columns, with the subset items of (4).

    Columns: ``K_u`` (0..n-1), ``F_j`` (n..n+J-1), ``C_j`` (n+J..n+2J-1). Returns the
    cutting plane and the shifts ``kappa_u`` (scaled).
    """
    n, J = a.n_tasks, a.n_jobs
    p = a.length / sc
    d = a.delay / sc
    r = a.release / sc
    items, m = _subset_items(a, p, assignment)
    kappa = p * (m + 1) / (2.0 * m)
    F = n + a.job
    C = n + J + a.job
    maps = np.flatnonzero(a.is_map)
    reds = np.flatnonzero(~a.is_map)
    r1 = _diff_rows(F[maps], maps, p[maps] + d[maps] - kappa[maps])      # F_j >= C_u + d_u
    r2 = _diff_rows(reds, F[reds], kappa[reds])                           # S_v >= F_j
    r3 = _diff_rows(C[reds], reds, p[reds] - kappa[reds])                 # C_j >= C_v
    rows = _concat_rows(r1, r2, r3)
    cost = np.concatenate((np.zeros(n + J), a.job_weight))
    lower = np.concatenate((r + kappa, np.zeros(2 * J)))
    cp = CuttingPlane(cost, lower, np.full(n + 2 * J, np.inf), rows, items, m, tol=tol,
                      cap=cap, spread=spread)
    return cp, kappa


def _concat_rows(*parts):
    start = [np.zeros(1, dtype=np.int64)]
    off = 0
    for s, *_ in parts:
        start.append(s[1:] + off)
        off += s[-1]
    return (np.concatenate(start), np.concatenate([x[1] for x in parts]),
            np.concatenate([x[2] for x in parts]), np.concatenate([x[3] for x in parts]),
            np.concatenate([x[4] for x in parts]))


def _job_solution(a: MSJOArrays, x: np.ndarray, kappa: np.ndarray, sc: float) -> MSJOSolution:
    n, J = a.n_tasks, a.n_jobs
    s = (x[:n] - kappa) * sc
    cj = x[n + J:n + 2 * J] * sc
    return MSJOSolution(start=s, completion=s + a.length, job_completion=cj)


def middle_order(a: MSJOArrays, start) -> np.ndarray:
    """Tasks by middle finish time ``M_u = S_u + p_u / 2``; ties: map first, then index."""
    mid = np.asarray(start) + a.length / 2.0
    return np.lexsort((np.arange(a.n_tasks), ~a.is_map, mid))


def pgc_violations(a: MSJOArrays, start, order) -> tuple[np.ndarray, np.ndarray]:
    """Every prefix guarantee constraint of ``order`` at ``start``.

    Returns ``(violation, rhs)``: entry ``k`` is for the prefix of length ``k + 1``,
    ``violation = R - sum p S`` with ``R = p(B)^2 / (2|M|) - p2(B) / 2`` (positive =
    violated).
    """
    p = a.length[order]
    lhs = np.cumsum(p * np.asarray(start)[order])
    b = np.cumsum(p)
    rhs = b * b / (2.0 * a.machines) - np.cumsum(p * p) / 2.0
    return rhs - lhs, rhs


def _solve_cuts(cp: CuttingPlane, n: int, max_rounds: int, assignment):
    """:meth:`CuttingPlane.run`: exact prefix separation and re-solves until no subset
    inequality is violated. (Adding every violated prefix of a round instead, directly
    or through a running-sum chain of auxiliary columns, was tried and was slower on the
    task-level LP: 14 s and 100 s against 9 s for 500 tasks.)"""
    res = cp.run(max_rounds=max_rounds)
    return res.x, res.rounds, res.cuts, res.converged, res.max_violation


def _result(lp, value, status, sol, rounds, t0, details) -> LPResult:
    return LPResult(lp=lp, value=float(value), status=status, solution=sol, rounds=rounds,
                    seconds=time.perf_counter() - t0, details=details)


# ---------------------------------------------------------------------- CLS-LPP
#: violated prefixes of the pool added per round besides the most violated (fast CLS-LPP)
SPREAD = 20
#: tasks from which solve_cls_lp uses the fast loop by default (measured break-even)
FAST_FROM = 1000

def solve_cls_lp(a: MSJOArrays, *, tol: float = 1e-7, cap: int = 5,
                 max_rounds: int = 500, seed: bool = True, assignment=None,
                 fast: bool | None = None) -> LPResult:
    """CLS-LPP with every subset constraint (4), by exact separation.

    Parameters
    ----------
    a : MSJOArrays
    tol : float, relative violation tolerance of the cutting-plane loop
    cap : int, subset rows added per round (:class:`CuttingPlane`'s ``cap``)
    max_rounds : int
    seed : bool, seed subset rows before the first solve: with ``fast`` (and no
        ``assignment``) *every* prefix of HUWF's schedule order, as a sparse running-sum
        chain (:meth:`CuttingPlane.seed_chain`: that order is close to the LP's final
        one); otherwise the geometric prefixes in ``release + length`` order
    fast : bool or None
        The pool LP (no ``assignment``): the HUWF chain seed and, per round, up to
        ``SPREAD`` violated prefixes evenly spaced besides the most violated ones
        (:func:`~controller.lp.separation.select_cuts`): 3-6x fewer rounds than the plain
        loop (``fast=False``), the same LP, 2.8x faster at 50 jobs but 10-20 % slower
        below ~1,000 tasks (``benchmarks/msjo.py``). None: fast from ``FAST_FROM``
        tasks on
    assignment : int array or None
        Per task a fixed machine: then (4) holds per machine with ``|M| = 1`` (the LP of
        Chen, Kodialam and Lakshman for a given assignment, used by MARES) instead of
        over the pool. Not a lower bound on schedules with other assignments.

    Returns
    -------
    LPResult
        ``lp="CLS-LPP"``; ``value`` = ``sum w_j C_j^LP``, a lower bound on ``sum w_j C_j``
        of every feasible schedule; ``details`` a ``CuttingPlaneDetails``; status
        ``"round_limit"`` if the loop did not converge (the value is still a bound).

    Examples
    --------
    >>> from controller.msjo.model import Cluster, Job, Task
    >>> c = Cluster(1, (Job("a", (Task(1.0),), (Task(1.0),)),))
    >>> round(solve_cls_lp(c.arrays).value, 6)
    2.0
    """
    t0 = time.perf_counter()
    sc = _scale(a)
    if fast is None:
        fast = a.n_tasks >= FAST_FROM
    fast = fast and assignment is None
    cp, kappa = _job_lp(a, sc, tol, cap, assignment, SPREAD if fast else 0)
    seeded = 0
    if seed and a.n_tasks and fast:
        from controller.msjo.baselines import huwf     # baselines use this module
        key = np.zeros(cp.n_col)
        key[:a.n_tasks] = huwf(a).end
        seeded = cp.seed_chain(key)
    elif seed and a.n_tasks:
        seeded = cp.seed(a.release / sc + a.length / sc)
    x, rounds, cuts, converged, maxv = _solve_cuts(cp, a.n_tasks, max_rounds, assignment)
    sol = _job_solution(a, x, kappa, sc)
    value = float(a.job_weight @ sol.job_completion)
    return _result("CLS-LPP", value, "optimal" if converged else "round_limit", sol,
                   rounds, t0, CuttingPlaneDetails(
                       objective="jobs", cores=cp.cores, cuts=cuts, seed_cuts=seeded,
                       max_violation=maxv))


# ---------------------------------------------------------------------- COGE
def solve_coge(a: MSJOArrays, *, threshold: float = 0.3, cap: int = 20,
               max_rounds: int = 200, tol: float = 1e-7) -> LPResult:
    """COGE (Algorithm 1): constraint generation of PGCs, ending with CND-LPP.

    Parameters
    ----------
    a : MSJOArrays
    threshold : float in [0, 1), the stop threshold ``e`` (paper: 0.3). With 0, COGE
        stops only when no PGC of the final order is violated.
    cap : int, PGC rows added per round (local maxima of the violation, most violated
        first; see the module docstring)
    max_rounds : int
    tol : float, relative violation tolerance of a PGC

    Returns
    -------
    LPResult
        ``lp="CND-LPP"``, ``rounds`` = LP solves (COGE's iterations); ``details`` a
        :class:`ConstraintGenerationDetails`; status ``"round_limit"`` if
        ``max_rounds`` were not enough (the value is still a lower bound).
    """
    if not 0.0 <= threshold < 1.0:
        raise ValueError(f"threshold must be in [0, 1), got {threshold!r}")
    t0 = time.perf_counter()
    sc = _scale(a)
    cp, kappa = _job_lp(a, sc, tol, cap)
    pgcs = rounds = 0
    stopped = "round_limit"
    vn = 0
    nv_value = np.nan
    while rounds < max_rounds:
        x = cp.solve()
        rounds += 1
        s = (x[:a.n_tasks] - kappa) * sc          # seconds, as in the returned solution
        cj = x[a.n_tasks + a.n_jobs:] * sc
        pi = middle_order(a, s)
        viol, rhs = pgc_violations(a, s, pi)
        bad = viol > tol * np.maximum(1.0, np.abs(rhs))
        vn = int(bad.sum())
        # S_NV: delay the suffix from pi(k) where the prefix ending at pi(k) is violated
        start_nv = np.empty(a.n_tasks)
        start_nv[pi] = _no_violation_starts(a.length[pi], s[pi], a.machines, tol)
        cnv = np.zeros(a.n_jobs)
        red = ~a.is_map
        np.maximum.at(cnv, a.job[red], start_nv[red] + a.length[red])
        lp_value = float(a.job_weight @ cj)
        nv_value = float(a.job_weight @ cnv)
        if vn == 0:
            stopped = "no_violation"
            break
        if threshold > 0 and lp_value >= (1.0 - threshold) * nv_value:
            stopped = "threshold"
            break
        # violated local maxima along pi, most violated first
        prev = np.concatenate(([-np.inf], viol[:-1]))
        nxt = np.concatenate((viol[1:], [-np.inf]))
        cand = np.flatnonzero(bad & (viol >= prev) & (viol >= nxt))
        cand = cand[np.argsort(-viol[cand], kind="stable")][:cap]
        pgcs += cp.add_prefix_cuts(pi, np.zeros(len(cand), dtype=np.int64), cand + 1)
    sol = _job_solution(a, cp.x, kappa, sc)
    value = float(a.job_weight @ sol.job_completion)
    status = "round_limit" if stopped == "round_limit" else "optimal"
    return _result("CND-LPP", value, status, sol, rounds, t0, ConstraintGenerationDetails(
        threshold=float(threshold), pgcs=pgcs, violated=vn, stopped=stopped,
        nv_value=nv_value))


def _no_violation_starts(p, s, machines: int, tol: float) -> np.ndarray:
    """COGE's ``S_NV`` in ``pi`` order: starts that satisfy every PGC of ``pi``.

    Walk the order keeping ``sum p S_NV`` of the prefix; where the prefix ending at task
    ``k`` is violated, delay task ``k`` and every later one by ``(R - sum p S_NV) / p_k``
    (the reconstructed ViolationOffset), which makes that PGC tight.
    """
    out = np.empty(len(p))
    shift = lhs = b = q = 0.0
    for k in range(len(p)):
        sk = s[k] + shift
        lhs += p[k] * sk
        b += p[k]
        q += p[k] * p[k]
        rhs = b * b / (2.0 * machines) - q / 2.0
        if rhs - lhs > tol * max(1.0, abs(rhs)):
            off = (rhs - lhs) / p[k]
            shift += off
            sk += off
            lhs = rhs
        out[k] = sk
    return out


# ---------------------------------------------------------------------- task level
def solve_task_lp(a: MSJOArrays, *, tol: float = 1e-7, cap: int = 5,
                  max_rounds: int = 500, seed: bool = True, assignment=None) -> LPResult:
    """The task-level LP (11)-(13) of T-MarS, with every subset constraint (13).

    Parameters are those of :func:`solve_cls_lp` (``assignment``: (13) per machine with
    ``|M| = 1``, H-MARES's LP).

    Returns
    -------
    LPResult
        ``lp="TASK-LP"``; ``value`` = ``sum w_u C_u^LP``, a lower bound on
        ``sum w_u C_u`` of every feasible schedule; ``details`` a ``CuttingPlaneDetails``.

    Examples
    --------
    >>> from controller.msjo.model import Cluster, Job, Task
    >>> c = Cluster(2, (Job("a", (Task(1.0), Task(1.0)), (Task(2.0),)),))
    >>> round(solve_task_lp(c.arrays).value, 6)   # 1 + 1 + 3
    5.0
    """
    t0 = time.perf_counter()
    n, J = a.n_tasks, a.n_jobs
    sc = _scale(a)
    p, d, r = a.length / sc, a.delay / sc, a.release / sc
    F = n + a.job
    maps = np.flatnonzero(a.is_map)
    reds = np.flatnonzero(~a.is_map)
    rows = _concat_rows(_diff_rows(F[maps], maps, d[maps]),     # F_j >= C_u + d_u
                        _diff_rows(reds, F[reds], p[reds]))      # C_v >= F_j + p_v
    items, m = _subset_items(a, p, assignment)
    cp = CuttingPlane(np.concatenate((a.weight, np.zeros(J))),
                      np.concatenate((r + p, np.zeros(J))), np.full(n + J, np.inf),
                      rows, items, m, tol=tol, cap=cap)
    seeded = cp.seed(r + p) if seed and n else 0
    x, rounds, cuts, converged, maxv = _solve_cuts(cp, n, max_rounds, assignment)
    c = x[:n] * sc
    cj = np.zeros(J)
    np.maximum.at(cj, a.job[reds], c[reds])
    sol = MSJOSolution(start=c - a.length, completion=c, job_completion=cj)
    return _result("TASK-LP", float(a.weight @ c), "optimal" if converged
                   else "round_limit", sol, rounds, t0, CuttingPlaneDetails(
                       objective="tasks", cores=cp.cores, cuts=cuts, seed_cuts=seeded,
                       max_violation=maxv))
