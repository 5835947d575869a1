"""The coflow LP relaxations of Chen's identical-parallel-network algorithms.

Each LP is a lower bound on the cost of every schedule of its variant, and its optimal
completion times ``C̄`` give the order in which Algorithms 1-3 list flows
(:mod:`controller.policies.lp_list`). Time is in seconds, sizes in bytes: a core link of
rate ``R`` bits/s moves ``R/8`` bytes/s, so a flow of ``d`` bytes needs ``8 d / R``
seconds (its *processing time*). All cores must have the same rate.

LP (1), divisible / flow-level (algorithms.md 1.3) -- :func:`solve_flow_lp`
    Variables ``C_f`` per flow and ``C_k`` per coflow::

        (1a) C_k >= C_f                       f in F_k
        (1b) C_f >= r_k + d_f
        (1c) C_f >= C_k' + d_f                (k', k) in E, f in F_k
        (1d) sum_{f in S} d_f C_f >= (d(S)^2 + d2(S)) / (2m)   S subset of F_i^in
        (1e) the same for every output port

    **Exact reduction used by default** (``formulation="coflow-vars"``). Every
    constraint except (1a) has non-negative coefficients on ``C_f`` in a ``>=`` row, and
    ``C_f`` is not in the objective, so raising every ``C_f`` to its coflow's ``C_k``
    keeps a solution feasible at the same cost. Hence LP (1) has an optimal solution with
    ``C_f = C_k`` for all ``f``, and LP (1) is equivalent to the LP in ``C_k`` alone::

        C_k >= r_k + max_{f in F_k} d_f
        C_k >= C_k' + max_{f in F_k} d_f                      (k', k) in E
        sum_{k in T} L_pk C_k >= ((sum_{k in T} L_pk)^2 + sum_{k in T} Q_pk) / (2m)
                                                    for every port p, coflow set T

    with ``L_pk`` the load of coflow ``k`` at port ``p`` and ``Q_pk`` the sum of its
    squared flow sizes there. (Flow subsets that split a coflow at a port need no row:
    at ``C_f = C_k`` the most violated subset of a port is a union of whole ``C``-tie
    groups, see :mod:`controller.lp.separation`.) This LP has one column per coflow, so
    LP (1) on the 706k-flow Facebook trace solves as fast as LP (7). The literal
    flow-variable formulation (``formulation="flow-vars"``) is kept for cross-checks;
    both have the same optimum. The returned ``solution.flow_completion`` is
    ``C̄_f = C̄_k``.

LP (7), indivisible / coflow-level (algorithms.md 1.7) -- :func:`solve_coflow_lp`
    Variables ``C_k``; rows ``C_k >= r_k + L^in_ik``, ``C_k >= r_k + L^out_jk``,
    ``C_k >= C_k' + L^in_ik`` / ``L^out_jk`` for arcs, and per port
    ``sum_{k in S} L_pk C_k >= ((sum_S L_pk)^2 + sum_S L_pk^2) / (2m)``.

LP (8), single core (algorithms.md 1.8) -- :func:`solve_single_core_lp`
    LP (7) with ``m = 1``.

Objectives (algorithms.md 1.9), the same for all three LPs:

* ``"weighted"``: ``min sum_k w_k C_k``.
* ``"jobs"`` (LP (13)): one variable ``C_g >= C_k`` per job ``g`` and its coflows ``k``;
  ``min sum_g omega_g C_g``. **A coflow in no job counts as a job of its own with its
  coflow weight** ``w_k``, so a workload without jobs gives the ``"weighted"`` LP.
* ``"makespan"`` (LP (14)): ``C_max >= C_k``; solved lexicographically, because ``min
  C_max`` alone leaves the ``C̄_k`` of non-critical coflows arbitrary: first
  ``T* = min C_max``, then ``min sum_k C_k`` subject to ``C_max <= T* (1 + 1e-9)``.
  The reported value is ``T*``.

Exponentially many subset rows are added lazily by exact separation (sort by the current
``C``, check every prefix of every port) in a cutting-plane loop that keeps the HiGHS
basis between rounds (:class:`~controller.lp.separation.CuttingPlane`). The loop ends
only when no prefix of any port is violated (relative tolerance ``tol``), so the result
is optimal for the full LP. Times inside the LP are scaled so that the largest item size
is 1.

Online re-planning (``remaining``, ``now``): the LP is written for the *residual*
instance -- only flows with bytes left and the chosen coflows, sizes = remaining bytes,
releases ``max(r_k, now)`` -- with its time origin at ``now`` (nothing of the residual
instance can run before ``now``), and the results are reported in absolute seconds.
Arcs whose predecessor is not in the LP (finished, or not known yet) are dropped.

Examples
--------
>>> from topologies.fabric import Fabric
>>> from controller.model import Workload, Coflow, Flow
>>> w = Workload(Fabric(ports=2, cores=1, rate_bps=8.0),
...              (Coflow("a", (Flow(0, 1, 2.0),)), Coflow("b", (Flow(0, 1, 1.0),))))
>>> r = solve_coflow_lp(w.arrays, cores=1, rate_bps=8.0)
>>> round(r.value, 6), r.solution.coflow_completion.tolist()   # SPT: b at 1, a at 3
(4.0, [3.0, 1.0])

References
----------
C.-Y. Chen, "Scheduling Coflows with Precedence Constraints for Minimizing the Total
Weighted Completion Time in Identical Parallel Networks": LP (1), LP (7), LP (8), LP (13),
LP (14); algorithms.md 1.3, 1.4, 1.7, 1.8, 1.9.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from controller.lp.result import CoflowSolution, CuttingPlaneDetails, LPResult
from controller.lp.separation import CuttingPlane, PortItems
from controller.model import FlowArrays

__all__ = ["OBJECTIVES", "FORMULATIONS", "solve_flow_lp", "solve_coflow_lp",
           "solve_single_core_lp", "identical_rate"]

OBJECTIVES = ("weighted", "jobs", "makespan")
FORMULATIONS = ("coflow-vars", "flow-vars")

#: Relative slack on ``C_max`` in the second (tie-breaking) stage of LP (14).
MAKESPAN_SLACK = 1e-9


def identical_rate(rate_bps) -> float:
    """The common core rate in bits/s; ``ValueError`` if the cores differ.

    Parameters
    ----------
    rate_bps : float, sequence of floats, or a :class:`~topologies.fabric.Fabric`
    """
    if hasattr(rate_bps, "rates"):
        rates = tuple(rate_bps.rates)
    elif np.ndim(rate_bps) == 0:
        rates = (float(rate_bps),)
    else:
        rates = tuple(float(r) for r in rate_bps)
    if not rates or any(not (r > 0 and np.isfinite(r)) for r in rates):
        raise ValueError(f"core rate must be a positive number of bits/s, got {rates}")
    if len(set(rates)) != 1:
        raise ValueError(
            f"the coflow LPs assume identical cores (one rate for every core); got core "
            f"rates {rates} bits/s. Use a fabric without core_rates, or a policy that "
            f"handles heterogeneous cores.")
    return rates[0]


# ---------------------------------------------------------------------- the residual instance
@dataclass(frozen=True, eq=False)
class _Instance:
    """The (residual) instance in scaled LP time units, origin at ``now``."""

    coflows: np.ndarray      # coflow indices in the LP (sorted)
    col_of: np.ndarray       # coflow index -> column (-1 if not in the LP)
    flows: np.ndarray        # flow indices in the LP
    p: np.ndarray            # processing time of each LP flow (scaled)
    release: np.ndarray      # per LP coflow (scaled, relative to now)
    arcs: np.ndarray         # (E, 2) column pairs (pred, succ)
    scale: float             # seconds per LP time unit
    now: float


def _instance(arrays: FlowArrays, rate_bps, remaining, now, coflows) -> _Instance:
    rate = identical_rate(rate_bps)
    n = arrays.n_coflows
    if remaining is None:
        left = arrays.size
    else:
        left = np.asarray(remaining, dtype=np.float64)
        if left.shape != (arrays.n_flows,):
            raise ValueError(f"remaining must have one entry per flow ({arrays.n_flows}), "
                             f"got shape {left.shape}")
    if coflows is None:
        if remaining is None:
            sel = np.ones(n, dtype=bool)
        else:   # coflows with something left, plus coflows without flows
            sel = np.zeros(n, dtype=bool)
            sel[arrays.coflow[left > 0]] = True
            has_flows = np.zeros(n, dtype=bool)
            has_flows[arrays.coflow] = True
            sel |= ~has_flows
    else:
        c = np.asarray(coflows)
        if c.dtype == bool:
            if c.shape != (n,):
                raise ValueError(f"coflows mask must have {n} entries, got shape {c.shape}")
            sel = c.copy()
        else:
            sel = np.zeros(n, dtype=bool)
            sel[c.astype(np.int64)] = True
    cof = np.flatnonzero(sel)
    col_of = np.full(n, -1, dtype=np.int64)
    col_of[cof] = np.arange(len(cof))
    flows = np.flatnonzero(sel[arrays.coflow] & (left > 0))
    seconds = left[flows] * 8.0 / rate
    now = float(now)
    rel_sec = np.maximum(arrays.release[cof], now) - now
    scale = float(seconds.max()) if len(seconds) else 1.0
    if not scale > 0:
        scale = 1.0
    arcs = arrays.arcs
    if len(arcs):
        ok = sel[arcs[:, 0]] & sel[arcs[:, 1]]
        arcs = col_of[arcs[ok]]
    else:
        arcs = np.zeros((0, 2), dtype=np.int64)
    return _Instance(coflows=cof, col_of=col_of, flows=flows, p=seconds / scale,
                     release=rel_sec / scale, arcs=arcs.reshape(-1, 2), scale=scale, now=now)


def _port_loads(arrays: FlowArrays, inst: _Instance):
    """Per (port, LP coflow) load ``L`` and sum of squared flow sizes ``Q``.

    Input port ``i`` is port ``i``, output port ``j`` is port ``ports + j``.
    """
    P = arrays.ports
    nk = max(1, len(inst.coflows))
    kc = inst.col_of[arrays.coflow[inst.flows]]
    key = np.concatenate((arrays.src[inst.flows], P + arrays.dst[inst.flows])) * nk
    key += np.concatenate((kc, kc))
    p = np.concatenate((inst.p, inst.p))
    if 2 * P * nk <= 50_000_000:     # dense (port, coflow) grid: a bincount, no sort
        L = np.bincount(key, weights=p, minlength=2 * P * nk)
        Q = np.bincount(key, weights=p * p, minlength=2 * P * nk)
        uniq = np.flatnonzero(L > 0)
        L, Q = L[uniq], Q[uniq]
    else:
        uniq, inv = np.unique(key, return_inverse=True)
        L = np.bincount(inv, weights=p, minlength=len(uniq))
        Q = np.bincount(inv, weights=p * p, minlength=len(uniq))
    port = uniq // nk
    col = uniq % nk
    return port, col, L, Q


# ---------------------------------------------------------------------- LP assembly
class _Rows:
    """Accumulates ``>=`` rows in compressed row form."""

    def __init__(self):
        self.idx, self.val, self.lo, self.nnz = [], [], [], [0]

    def add(self, index, value, lower):
        """Add rows ``sum_t value[r, t] x[index[r, t]] >= lower[r]`` (same length each)."""
        if len(lower) == 0:
            return
        index = np.asarray(index, dtype=np.int64).reshape(len(lower), -1)
        value = np.asarray(value, dtype=np.float64).reshape(len(lower), -1)
        self.idx.append(index.ravel())
        self.val.append(value.ravel())
        self.lo.append(np.asarray(lower, dtype=np.float64))
        self.nnz.append(index.shape[1])

    def compressed(self):
        if not self.lo:
            return None
        lo = np.concatenate(self.lo)
        lens = np.concatenate([np.full(len(l), k) for l, k in zip(self.lo, self.nnz[1:])])
        start = np.concatenate(([0], np.cumsum(lens))).astype(np.int64)
        return (start, np.concatenate(self.idx), np.concatenate(self.val), lo,
                np.full(len(lo), np.inf))


def _objective_columns(arrays: FlowArrays, inst: _Instance, objective: str, n_base: int,
                       rows: _Rows):
    """Objective of LP (13)/(14) or the weighted sum; appends the rows it needs to ``rows``.

    Returns ``(cost_k, cost_x, lower_x, extra)``: costs of the coflow columns, costs and
    lower bounds of the extra columns appended after the ``n_base`` others (one ``C_g``
    per job, or one ``C_max``), and ``extra`` = ``None``, ``("jobs", job_ids)`` or
    ``("makespan", col)``.
    """
    nk = len(inst.coflows)
    cost_k = np.zeros(nk)
    if objective == "weighted":
        cost_k = arrays.weight[inst.coflows].astype(np.float64)
        return cost_k, np.zeros(0), np.zeros(0), None
    if objective == "jobs":
        job = arrays.job_of[inst.coflows]
        alone = job < 0
        cost_k = np.where(alone, arrays.weight[inst.coflows], 0.0)
        jobs = np.unique(job[~alone])
        jcol = {g: n_base + t for t, g in enumerate(jobs)}
        members = np.flatnonzero(~alone)
        if len(members):
            gcols = np.array([jcol[g] for g in job[members]], dtype=np.int64)
            rows.add(np.stack((gcols, members), axis=1),
                     np.tile([1.0, -1.0], (len(members), 1)), np.zeros(len(members)))
        return cost_k, arrays.job_weight[jobs].astype(np.float64), np.zeros(len(jobs)), \
            ("jobs", jobs)
    if objective == "makespan":
        tcol = n_base
        if nk:
            rows.add(np.stack((np.full(nk, tcol), np.arange(nk)), axis=1),
                     np.tile([1.0, -1.0], (nk, 1)), np.zeros(nk))
        return cost_k, np.ones(1), np.zeros(1), ("makespan", tcol)
    raise ValueError(f"objective must be one of {OBJECTIVES}, got {objective!r}")


def _solve(arrays: FlowArrays, cores: int, rate_bps, objective: str, *, level: str,
           formulation: str, remaining, now, coflows, tol, max_rounds, cap, seed,
           time_limit) -> LPResult:
    t0 = time.perf_counter()
    deadline = None if time_limit is None else t0 + float(time_limit)
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {OBJECTIVES}, got {objective!r}")
    if formulation not in FORMULATIONS:
        raise ValueError(f"formulation must be one of {FORMULATIONS}, got {formulation!r}")
    if not isinstance(cores, (int, np.integer)) or cores < 1:
        raise ValueError(f"cores must be a positive integer, got {cores!r}")
    m = int(cores)
    inst = _instance(arrays, rate_bps, remaining, now, coflows)
    nk = len(inst.coflows)
    P2 = 2 * arrays.ports
    kc_flow = inst.col_of[arrays.coflow[inst.flows]]
    port, pcol, L, Q = _port_loads(arrays, inst)
    rows = _Rows()

    # e_k: the size term of the release and precedence rows.
    e = np.zeros(nk)
    flow_vars = level == "flow" and formulation == "flow-vars"
    if level == "flow":
        np.maximum.at(e, kc_flow, inst.p)               # max_f d_f   (1b)/(1c)
    else:
        np.maximum.at(e, pcol, L)                        # max_p L_pk  (7a)-(7d)

    n_base = nk + (len(inst.flows) if flow_vars else 0)
    lower = np.concatenate((inst.release + (0.0 if flow_vars else e),
                            inst.release[kc_flow] + inst.p if flow_vars else np.zeros(0)))
    a = inst.arcs
    if flow_vars:
        fcol = nk + np.arange(len(inst.flows))
        # (1a) C_k - C_f >= 0
        rows.add(np.stack((kc_flow, fcol), axis=1), np.tile([1.0, -1.0], (len(fcol), 1)),
                 np.zeros(len(fcol)))
        # (1c) C_f - C_k' >= d_f for every arc (k', k) and f in F_k
        if len(a):
            by_cof = np.argsort(kc_flow, kind="stable")
            fstart = np.searchsorted(kc_flow[by_cof], np.arange(nk + 1))
            idx, lo = [], []
            for kp, k in a:
                fs = by_cof[fstart[k]:fstart[k + 1]]
                idx.append(np.stack((fcol[fs], np.full(len(fs), kp)), axis=1))
                lo.append(inst.p[fs])
            if idx:
                idx = np.concatenate(idx)
                rows.add(idx, np.tile([1.0, -1.0], (len(idx), 1)), np.concatenate(lo))
            # a coflow without flows in the LP is complete when ready: C_k >= C_k'
            empty = np.bincount(kc_flow, minlength=nk) == 0
            ea = a[empty[a[:, 1]]]
            if len(ea):
                rows.add(ea[:, ::-1], np.tile([1.0, -1.0], (len(ea), 1)), np.zeros(len(ea)))
        items = PortItems.build(
            np.concatenate((arrays.src[inst.flows], arrays.ports + arrays.dst[inst.flows])),
            np.concatenate((fcol, fcol)), np.concatenate((inst.p, inst.p)),
            np.concatenate((inst.p ** 2, inst.p ** 2)), P2)
    else:
        if len(a):   # C_k - C_k' >= e_k  ((1c) reduced, (7c)/(7d))
            rows.add(a[:, ::-1], np.tile([1.0, -1.0], (len(a), 1)), e[a[:, 1]])
        q = Q if level == "flow" else L * L
        items = PortItems.build(port, pcol, L, q, P2)

    cost_k, cost_x, lower_x, extra = _objective_columns(arrays, inst, objective, n_base, rows)
    cost = np.concatenate((cost_k, np.zeros(n_base - nk), cost_x))
    lower = np.concatenate((lower, lower_x))
    upper = np.full(len(cost), np.inf)

    cp = CuttingPlane(cost, lower, upper, rows.compressed(), items, m, tol=tol, cap=cap)
    seed_cuts = 0
    if seed and items.n_items:
        # per port, prefixes in (release + size) order of the items
        col_release = np.concatenate((inst.release,
                                      inst.release[kc_flow] if flow_vars else np.zeros(0)))
        seed_cuts = cp.seed(col_release[items.col] + items.size)
    res = cp.run(max_rounds=max_rounds, deadline=deadline)
    rounds, cuts, converged, maxv = res.rounds, res.cuts, res.converged, res.max_violation
    x = res.x
    value_scaled = res.objective
    if extra is not None and extra[0] == "makespan":
        tcol = extra[1]
        t_star = float(x[tcol])
        value_scaled = t_star
        if converged:
            cp.set_upper(tcol, t_star * (1.0 + MAKESPAN_SLACK) + 1e-12)
            c2 = np.zeros(len(cost))
            c2[:nk] = 1.0
            cp.set_costs(c2)
            res2 = cp.run(max_rounds=max_rounds, deadline=deadline)
            x = res2.x
            rounds += res2.rounds
            cuts += res2.cuts
            converged, maxv = res2.converged, res2.max_violation

    sc, now_ = inst.scale, inst.now
    ck = np.full(arrays.n_coflows, np.nan)
    ck[inst.coflows] = x[:nk] * sc + now_
    cf = np.full(arrays.n_flows, np.nan)
    if flow_vars:
        cf[inst.flows] = x[nk:n_base] * sc + now_
    else:
        cf[inst.flows] = ck[arrays.coflow[inst.flows]]
    ng = len(arrays.job_weight)
    cg = np.full(ng, np.nan)
    if ng:
        jo = arrays.job_of[inst.coflows]
        inj = jo >= 0
        if inj.any():
            tmp = np.full(ng, -np.inf)
            np.maximum.at(tmp, jo[inj], ck[inst.coflows[inj]])
            cg = np.where(np.isfinite(tmp), tmp, np.nan)
    # value in absolute seconds: shift every completion by `now`
    if objective == "makespan":
        value = value_scaled * sc + now_ if nk else 0.0
    elif objective == "weighted":
        value = float(np.dot(arrays.weight[inst.coflows], ck[inst.coflows])) if nk else 0.0
    else:
        job = arrays.job_of[inst.coflows]
        alone = job < 0
        value = float(np.dot(arrays.weight[inst.coflows][alone], ck[inst.coflows][alone]))
        jobs = extra[1]
        if len(jobs):
            value += float(np.dot(arrays.job_weight[jobs], cg[jobs]))
    name = "LP1" if level == "flow" else ("LP8" if m == 1 else "LP7")
    if converged:
        status = "optimal"
    elif deadline is not None and time.perf_counter() >= deadline:
        status = "time_limit"
    else:
        status = "round_limit"
    return LPResult(lp=name, value=float(value), status=status,
                    solution=CoflowSolution(flow_completion=cf, coflow_completion=ck,
                                            job_completion=cg),
                    rounds=rounds, seconds=time.perf_counter() - t0,
                    details=CuttingPlaneDetails(objective=objective, cores=m, cuts=cuts,
                                                seed_cuts=seed_cuts, max_violation=maxv))


# ---------------------------------------------------------------------- public API
def solve_flow_lp(arrays: FlowArrays, cores: int, rate_bps, objective: str = "weighted", *,
                  remaining=None, now: float = 0.0, coflows=None, tol: float = 1e-7,
                  max_rounds: int = 200, cap: int = 5, seed: bool = True,
                  formulation: str = "coflow-vars",
                  time_limit: float | None = None) -> LPResult:
    """LP (1): the divisible (flow-level) relaxation, solved to separation optimality.

    Parameters
    ----------
    arrays : FlowArrays
        The workload's flat view (``workload.arrays``).
    cores : int
        ``m``, the number of identical network cores.
    rate_bps : float or Fabric
        The common core link rate in bits/s (a fabric or a sequence of per-core rates is
        accepted if all rates are equal).
    objective : {"weighted", "jobs", "makespan"}
        ``sum w_k C_k``; LP (13) ``sum_g omega_g C_g`` (a coflow in no job is its own job
        with weight ``w_k``); LP (14) ``C_max`` (solved lexicographically, see the module
        docstring).
    remaining : float array, optional
        Bytes left per flow (online re-planning); flows with nothing left are not in the
        LP. Default: the full sizes.
    now : float
        Current time in seconds; releases become ``max(r_k, now)`` and the residual LP is
        written with its time origin at ``now``.
    coflows : int array or bool mask, optional
        Coflows in the LP. Default: every coflow (with ``remaining``: every coflow with
        bytes left, and coflows without flows).
    tol : float
        Relative tolerance of the subset inequalities at the returned solution.
    max_rounds : int
        Cap on the LP solves of the cutting-plane loop.
    cap : int
        Cuts added per port per round.
    seed : bool
        Start with per-port prefix cuts in (release + size) order.
    formulation : {"coflow-vars", "flow-vars"}
        ``"coflow-vars"`` (default) solves the exact reduction to coflow variables
        described in the module docstring; ``"flow-vars"`` the literal LP (1) with one
        column per flow (same optimum; for cross-checks, much slower on large traces).
    time_limit : float, optional
        Wall seconds. When reached (after the first LP solve), the loop stops and returns
        the optimum of the last relaxation solved: still a lower bound, but some subset
        inequalities may be violated; ``status`` is ``"time_limit"``.

    Returns
    -------
    LPResult
        ``solution`` is a :class:`~controller.lp.result.CoflowSolution`, ``details`` a
        :class:`~controller.lp.result.CuttingPlaneDetails`.

    Raises
    ------
    ValueError
        Unknown objective, heterogeneous core rates, bad ``remaining`` or ``coflows``.
    LPSolveError
        HiGHS failed (should not happen: the LP is always feasible and bounded).

    References
    ----------
    Chen, LP (1) (1a)-(1e), LP (13), LP (14); algorithms.md 1.3, 1.4, 1.9.
    """
    return _solve(arrays, cores, rate_bps, objective, level="flow", formulation=formulation,
                  remaining=remaining, now=now, coflows=coflows, tol=tol,
                  max_rounds=max_rounds, cap=cap, seed=seed, time_limit=time_limit)


def solve_coflow_lp(arrays: FlowArrays, cores: int, rate_bps, objective: str = "weighted", *,
                    remaining=None, now: float = 0.0, coflows=None, tol: float = 1e-7,
                    max_rounds: int = 200, cap: int = 5, seed: bool = True,
                    time_limit: float | None = None) -> LPResult:
    """LP (7): the indivisible (coflow-level) relaxation; LP (8) when ``cores == 1``.

    Parameters are those of :func:`solve_flow_lp` (without ``formulation``: LP (7) has only
    coflow variables).

    Returns
    -------
    LPResult
        ``solution.flow_completion`` holds each flow's coflow ``C̄_k``.

    References
    ----------
    Chen, LP (7) (7a)-(7f), LP (8), LP (13), LP (14); algorithms.md 1.7, 1.8, 1.9.
    """
    return _solve(arrays, cores, rate_bps, objective, level="coflow",
                  formulation="coflow-vars", remaining=remaining, now=now, coflows=coflows,
                  tol=tol, max_rounds=max_rounds, cap=cap, seed=seed, time_limit=time_limit)


def solve_single_core_lp(arrays: FlowArrays, rate_bps, objective: str = "weighted",
                         **kw) -> LPResult:
    """LP (8): the single-core relaxation, i.e. :func:`solve_coflow_lp` with ``m = 1``.

    References
    ----------
    Chen, LP (8) (8a)-(8f); algorithms.md 1.8.
    """
    return solve_coflow_lp(arrays, 1, rate_bps, objective, **kw)
