"""Exact separation of the parallel-machine subset inequalities, and the cutting-plane loop.

The coflow LPs (algorithms.md 1.3, 1.7, 1.8) bound the completion times at every port by
the Hall-Schulz-Shmoys-Wein inequalities for ``m`` parallel unit links: for a port ``p``
holding *items* (flows, or coflows with their port load) of sizes ``d`` and completion
variables ``C``, and for **every** subset ``S`` of them,

.. math::

    \\sum_{f \\in S} d_f C_f \\ \\ge\\ \\frac{1}{2m}\\Big(d(S)^2 + q(S)\\Big),

where ``d(S)`` is the total size and ``q(S)`` the sum of squares of the sizes (or, for the
flow-level LP aggregated per coflow, the sum of the squared flow sizes; see
:mod:`controller.lp.coflow`). There are exponentially many, but separation is exact and
cheap (algorithms.md 1.4): multiplied by ``m`` the inequality is Queyranne's
single-machine inequality in the variable ``mC``, and for those the most violated subset
is always a *prefix* of the items sorted by their current ``C``. Proof sketch: the
violation of ``S`` is ``v(S) = (d(S)^2 + q(S))/(2m) - sum_S d C``; removing ``j`` from a
maximiser cannot increase ``v``, so ``C_j <= d(S)/m`` for ``j in S``; adding ``i`` cannot
increase it, so ``C_i >= (d(S) + d_i)/m > d(S)/m`` for ``i not in S``. Hence every
maximiser is exactly a set ``{C <= threshold}``: a prefix in ``C`` order, whole tie
groups in or out. Scanning the prefixes of every port with running sums finds the most
violated cut of each port in ``O(n log n)``.

:class:`PortItems` is the static part (which variable each item at each port refers to,
its size and squared size), :func:`prefix_violations` the exact separation of all ports at
once (vectorised), and :class:`CuttingPlane` the loop: an LP held in HiGHS, violated
prefixes added with ``addRows`` and the LP re-solved from the previous basis (dual
simplex warm start), until no prefix of any port is violated by more than ``tol`` relative
to its right-hand side. At that point the solution is optimal for the LP with *all* subset
constraints.

References
----------
C.-Y. Chen, "Scheduling Coflows with Precedence Constraints for Minimizing the Total
Weighted Completion Time in Identical Parallel Networks", LP (1) (1d)/(1e), LP (7)
(7e)/(7f), LP (8) (8e)/(8f); algorithms.md 1.3-1.4.

M. Queyranne, "Structure of a simple scheduling polyhedron", Math. Programming 58 (1993).

L. A. Hall, A. S. Schulz, D. B. Shmoys, J. Wein, "Scheduling to minimize average
completion time: off-line and on-line approximation algorithms", Math. Oper. Res. 22
(1997).
"""
from __future__ import annotations

from dataclasses import dataclass

import time

import highspy
import numpy as np

from controller.lp.solver import new_highs

__all__ = ["PortItems", "PrefixViolations", "prefix_violations", "subset_rhs",
           "CutSelection", "select_cuts", "CuttingPlane", "CutLoopResult", "LPSolveError"]


class LPSolveError(RuntimeError):
    """HiGHS did not return an optimal solution for a (relaxed) coflow LP."""


def subset_rhs(size, sq, cores: int) -> float:
    """Right-hand side ``(d(S)^2 + q(S)) / (2m)`` of the subset inequality for one set.

    Parameters
    ----------
    size, sq : array_like
        Sizes ``d`` of the items of ``S`` and their squared-size terms ``q``.
    cores : int
        ``m``, the number of parallel links (network cores) at the port.
    """
    size = np.asarray(size, dtype=np.float64)
    return float((size.sum() ** 2 + np.asarray(sq, dtype=np.float64).sum()) / (2.0 * cores))


@dataclass(frozen=True, eq=False)
class PortItems:
    """The items of every port: which LP column each refers to, and its sizes.

    Items are stored grouped by port (``port`` is non-decreasing).

    Attributes
    ----------
    port : int64 array
        Port of each item (input ports and output ports numbered in one range).
    col : int64 array
        LP column (completion-time variable) of the item.
    size : float64 array
        ``d``: the item's processing time at the port (scaled LP time units).
    sq : float64 array
        ``q``: the item's squared-size term (``d^2`` for a single flow or a coflow-level
        load; the sum of its flows' squared sizes for an aggregated flow-level item).
    start : int64 array
        ``start[p]:start[p+1]`` are the items of port ``p``; length ``n_ports + 1``.
    """

    port: np.ndarray
    col: np.ndarray
    size: np.ndarray
    sq: np.ndarray
    start: np.ndarray

    @classmethod
    def build(cls, port, col, size, sq, n_ports: int) -> "PortItems":
        """Group items by port, dropping items of zero size (they add nothing to any cut)."""
        port = np.asarray(port, dtype=np.int64)
        col = np.asarray(col, dtype=np.int64)
        size = np.asarray(size, dtype=np.float64)
        sq = np.asarray(sq, dtype=np.float64)
        keep = size > 0
        port, col, size, sq = port[keep], col[keep], size[keep], sq[keep]
        order = np.lexsort((col, port))
        port, col, size, sq = port[order], col[order], size[order], sq[order]
        start = np.searchsorted(port, np.arange(n_ports + 1), side="left").astype(np.int64)
        return cls(port=port, col=col, size=size, sq=sq, start=start)

    @property
    def n_items(self) -> int:
        return len(self.port)

    @property
    def n_ports(self) -> int:
        return len(self.start) - 1


@dataclass(frozen=True, eq=False)
class PrefixViolations:
    """Every prefix of every port in current-``C`` order, with its violation.

    Attributes
    ----------
    order : int64 array
        Item indices (into :class:`PortItems`) sorted by (port, C, col).
    violation : float64 array
        ``violation[t]`` is ``rhs - lhs`` of the prefix of its port that ends at sorted
        position ``t`` (positive = violated).
    rhs : float64 array
        Right-hand side of that prefix.
    """

    order: np.ndarray
    violation: np.ndarray
    rhs: np.ndarray


def prefix_violations(items: PortItems, x: np.ndarray, cores: int) -> PrefixViolations:
    """Exact separation: the violation of every prefix of every port (algorithms.md 1.4).

    Parameters
    ----------
    items : PortItems
    x : float array
        Current LP solution (indexed by column).
    cores : int
        ``m``.

    Returns
    -------
    PrefixViolations
        The most violated subset of a port is the prefix with the largest violation.

    References
    ----------
    algorithms.md 1.4 (sort by ``C``, scan prefixes keeping ``A = sum d C``,
    ``B = d(S)``, ``Q = q(S)``; violation ``(B^2 + Q)/(2m) - A``).
    """
    c = x[items.col]
    order = np.lexsort((items.col, c, items.port))
    d = items.size[order]
    q = items.sq[order]
    cs = c[order]
    start = items.start
    counts = np.diff(start)
    # Running sums restarted at every port: global cumsum minus the value before the port.
    def seg_cumsum(v):
        s = np.cumsum(v)
        base = np.concatenate(([0.0], s))[start[:-1]]
        return s - np.repeat(base, counts)
    a = seg_cumsum(d * cs)
    b = seg_cumsum(d)
    qq = seg_cumsum(q)
    rhs = (b * b + qq) / (2.0 * cores)
    return PrefixViolations(order=order, violation=rhs - a, rhs=rhs)


@dataclass(frozen=True, eq=False)
class CutSelection:
    """Violated prefixes chosen to become rows.

    Attributes
    ----------
    order : int64 array
        Items sorted by (port, C, col), as in :class:`PrefixViolations`.
    starts, lengths : int64 arrays
        Cut ``r`` is the set ``order[starts[r] : starts[r] + lengths[r]]`` (one port).
    max_violation : float
        Largest relative violation over all prefixes of all ports.
    """

    order: np.ndarray
    starts: np.ndarray
    lengths: np.ndarray
    max_violation: float


def select_cuts(items: PortItems, x: np.ndarray, cores: int, *, tol: float = 1e-7,
                cap: int = 5, spread: int = 0) -> CutSelection:
    """Pick the violated prefixes to add: per port, up to ``cap``, most violated first.

    A prefix is violated when ``rhs - lhs > tol * max(1, rhs)``. Only local maxima of the
    violation along a port's prefix scan are candidates, so the cuts of one port are not
    near-duplicates of each other (neighbouring prefixes differ by one item).

    ``spread`` > 0 adds, per port, up to ``spread`` more violated prefixes evenly spaced
    over its violated ones: where one port holds thousands of items and a round has a
    single wide hump of violated prefixes (the MSJO machine pool), it cuts the whole hump
    at once instead of its top only, for fewer rounds.
    """
    pv = prefix_violations(items, x, cores)
    rel = pv.violation / np.maximum(1.0, pv.rhs)
    max_rel = float(rel.max()) if len(rel) else 0.0
    viol = rel > tol
    empty = np.zeros(0, np.int64)
    if not viol.any():
        return CutSelection(pv.order, empty, empty, max_rel)
    v = pv.violation
    port_sorted = items.port[pv.order]
    prev_same = np.concatenate(([False], port_sorted[1:] == port_sorted[:-1]))
    next_same = np.concatenate((port_sorted[:-1] == port_sorted[1:], [False]))
    vprev = np.where(prev_same, np.concatenate(([-np.inf], v[:-1])), -np.inf)
    vnext = np.where(next_same, np.concatenate((v[1:], [-np.inf])), -np.inf)
    cand = np.flatnonzero(viol & (v >= vprev) & (v >= vnext))
    cport = port_sorted[cand]
    o = np.lexsort((-rel[cand], cport))
    cand, cport = cand[o], cport[o]
    first = np.searchsorted(cport, cport, side="left")
    keep = (np.arange(len(cand)) - first) < cap
    cand, cport = cand[keep], cport[keep]
    if spread > 0:
        vpos = np.flatnonzero(viol)
        vport = port_sorted[vpos]
        extra = []
        for p in np.unique(vport):
            at = vpos[vport == p]
            extra.append(at[np.unique(np.linspace(0, len(at) - 1, min(spread, len(at)))
                                      .round().astype(np.int64))])
        cand = np.union1d(cand, np.concatenate(extra))
        cport = port_sorted[cand]
    starts = items.start[cport]
    return CutSelection(pv.order, starts, cand - starts + 1, max_rel)


@dataclass(frozen=True)
class CutLoopResult:
    """Outcome of :meth:`CuttingPlane.run`.

    Attributes
    ----------
    x : float array
        The final LP solution (columns, scaled units).
    objective : float
        Objective value of the final LP (scaled units).
    rounds : int
        LP solves in this call.
    cuts : int
        Subset rows added in this call (seed cuts excluded).
    converged : bool
        No prefix of any port is violated (beyond tolerance) at ``x``.
    max_violation : float
        Largest relative violation left (``<= tol`` when converged).
    """

    x: np.ndarray
    objective: float
    rounds: int
    cuts: int
    converged: bool
    max_violation: float


class CuttingPlane:
    """An LP over completion-time columns, with subset inequalities added lazily.

    The base LP (columns with costs and bounds, plus explicit rows) is passed to HiGHS
    once; :meth:`run` alternates exact separation (:func:`prefix_violations`) and dual
    simplex re-solves from the previous basis, adding at most ``cap`` violated prefixes
    per port per round (the most violated first, only local maxima of the violation along
    the prefix scan, so that the rows added for one port are not near-duplicates).

    Parameters
    ----------
    cost, lower, upper : float arrays
        Column costs and bounds.
    rows : tuple (start, index, value, lower, upper) or None
        Base rows in compressed row form (``start`` has one entry per row plus one).
    items : PortItems
        Items of every port, for the subset inequalities.
    cores : int
        ``m`` in ``1/(2m)``.
    tol : float
        Relative violation tolerance: a prefix is violated when
        ``rhs - lhs > tol * max(1, rhs)``.
    cap : int
        Maximum number of cuts added per port per round.
    drop_slack : bool
        Every few rounds, delete subset rows that are not binding (basic slack). They can
        be re-added later if violated again; the loop still ends only when no prefix at
        all is violated.
    spread : int
        Also add up to this many violated prefixes per port per round, evenly spaced
        (:func:`select_cuts`); 0 (default): local maxima only.
    """

    def __init__(self, cost, lower, upper, rows, items: PortItems, cores: int, *,
                 tol: float = 1e-7, cap: int = 5, drop_slack: bool = True, spread: int = 0):
        self.items = items
        self.cores = int(cores)
        self.tol = float(tol)
        self.cap = int(cap)
        self.spread = int(spread)
        self.drop_slack = drop_slack
        self.n_col = len(cost)
        h = new_highs()
        h.setOptionValue("presolve", "off")
        h.setOptionValue("solver", "simplex")
        # rows must hold well inside the separation tolerance, or a cut already in the LP
        # could look violated again and be re-added forever
        h.setOptionValue("primal_feasibility_tolerance", min(1e-9, self.tol * 1e-2))
        lp = highspy.HighsLp()
        lp.num_col_ = self.n_col
        lp.col_cost_ = np.asarray(cost, dtype=np.float64)
        lp.col_lower_ = np.asarray(lower, dtype=np.float64)
        lp.col_upper_ = np.asarray(upper, dtype=np.float64)
        lp.sense_ = highspy.ObjSense.kMinimize
        if rows is None:
            rows = (np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int64),
                    np.zeros(0), np.zeros(0), np.zeros(0))
        start, index, value, rlo, rup = rows
        lp.num_row_ = len(rlo)
        lp.row_lower_ = np.asarray(rlo, dtype=np.float64)
        lp.row_upper_ = np.asarray(rup, dtype=np.float64)
        lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
        lp.a_matrix_.num_col_ = self.n_col
        lp.a_matrix_.num_row_ = len(rlo)
        lp.a_matrix_.start_ = np.asarray(start, dtype=np.int32)
        lp.a_matrix_.index_ = np.asarray(index, dtype=np.int32)
        lp.a_matrix_.value_ = np.asarray(value, dtype=np.float64)
        self._check(h.passModel(lp), "passModel")
        self.h = h
        self.n_base_rows = len(rlo)
        self.n_cut_rows = 0
        self.cuts_added = 0
        self.solves = 0
        self.x = None

    # ----------------------------------------------------------------- HiGHS plumbing
    @staticmethod
    def _check(status, what):
        if status == highspy.HighsStatus.kError:
            raise LPSolveError(f"HiGHS {what} failed")

    def solve(self, time_limit: float | None = None) -> np.ndarray | None:
        """Re-solve from the current basis; return the column values.

        With ``time_limit`` (seconds), returns None if HiGHS stops at the limit.
        """
        # HiGHS compares its time_limit with its cumulative run time over all runs
        limit = np.inf if time_limit is None else self.h.getRunTime() + max(time_limit, 1e-3)
        self.h.setOptionValue("time_limit", float(limit))
        self._check(self.h.run(), "run")
        self.solves += 1
        status = self.h.getModelStatus()
        if status == highspy.HighsModelStatus.kTimeLimit and time_limit is not None:
            return None
        if status == highspy.HighsModelStatus.kModelEmpty and self.n_col == 0:
            self.x = np.zeros(0)
            return self.x
        if status != highspy.HighsModelStatus.kOptimal:
            raise LPSolveError(
                f"HiGHS returned {self.h.modelStatusToString(status)!r} for the coflow LP "
                f"({self.n_col} columns, {self.h.getNumRow()} rows)")
        self.x = np.asarray(self.h.getSolution().col_value, dtype=np.float64)
        return self.x

    @property
    def objective(self) -> float:
        if self.n_col == 0:
            return 0.0
        return float(self.h.getInfo().objective_function_value)

    def add_rows_geq(self, starts, index, value, lower) -> None:
        """Add rows ``sum value * x[index] >= lower`` (compressed row form)."""
        n = len(lower)
        if n == 0:
            return
        self._check(self.h.addRows(
            n, np.asarray(lower, dtype=np.float64), np.full(n, highspy.kHighsInf),
            len(index), np.asarray(starts, dtype=np.int32), np.asarray(index, dtype=np.int32),
            np.asarray(value, dtype=np.float64)), "addRows")

    def set_costs(self, cost) -> None:
        cost = np.asarray(cost, dtype=np.float64)
        self._check(self.h.changeColsCost(len(cost), np.arange(len(cost), dtype=np.int32),
                                          cost), "changeColsCost")

    def set_upper(self, col: int, upper: float) -> None:
        lo = self.h.getLp().col_lower_[col]
        self._check(self.h.changeColBounds(int(col), float(lo), float(upper)),
                    "changeColBounds")

    # ----------------------------------------------------------------- cuts
    def add_prefix_cuts(self, port_sorted_items: np.ndarray, port_start: np.ndarray,
                        lengths: np.ndarray) -> int:
        """Add, for each ``(start, length)``, the prefix cut over ``port_sorted_items``.

        ``port_sorted_items[start:start+length]`` are item indices (one port) forming the
        set ``S``.
        """
        lengths = np.asarray(lengths, dtype=np.int64)
        port_start = np.asarray(port_start, dtype=np.int64)
        if len(lengths) == 0:
            return 0
        starts = np.concatenate(([0], np.cumsum(lengths)))
        total = int(starts[-1])
        # positions port_start[r] + 0..length[r]-1 for each row r
        offs = np.arange(total, dtype=np.int64) - np.repeat(starts[:-1], lengths)
        pos = np.repeat(port_start, lengths) + offs
        it = port_sorted_items[pos]
        d = self.items.size[it]
        q = self.items.sq[it]
        row_of = np.repeat(np.arange(len(lengths)), lengths)
        b = np.bincount(row_of, weights=d, minlength=len(lengths))
        qq = np.bincount(row_of, weights=q, minlength=len(lengths))
        rhs = (b * b + qq) / (2.0 * self.cores)
        self.add_rows_geq(starts, self.items.col[it], d, rhs)
        self.n_cut_rows += len(lengths)
        return len(lengths)

    def seed(self, key: np.ndarray, geometric: bool = True) -> int:
        """Seed cuts: per port, prefixes in ``key`` order (release + size, algorithms.md 1.4).

        With ``geometric`` only the prefixes of length 1, 2, 4, ... and the full set are
        added (a full seed is quadratic in the items of a port); otherwise every prefix.
        """
        it = self.items
        order = np.lexsort((it.col, key, it.port))
        counts = np.diff(it.start)
        ps, ls = [], []
        for p in np.flatnonzero(counts):
            n = int(counts[p])
            if geometric:
                lens = sorted(set([1 << e for e in range(int(np.log2(n)) + 1)] + [n]))
            else:
                lens = range(1, n + 1)
            for ln in lens:
                ps.append(it.start[p])
                ls.append(ln)
        return self.add_prefix_cuts(order, np.array(ps, dtype=np.int64),
                                    np.array(ls, dtype=np.int64))

    def seed_chain(self, key: np.ndarray) -> int:
        """Seed *every* prefix of every port in ``key`` order (per column), sparsely.

        Per port with items ``i_1, i_2, ...`` in ``key`` order, running-sum columns
        ``z_k`` with lower bound the prefix's right-hand side and rows ``z_{k-1} + d_k
        C_{i_k} - z_k >= 0`` (``z_0 = 0``): so ``sum_{t <= k} d_t C_{i_t} >= z_k >= rhs_k``
        for every ``k``, the whole family in ``O(items)`` nonzeros instead of the
        quadratically many of :meth:`seed` with ``geometric=False``. Worth it when
        ``key`` is close to the LP's final order (a good schedule's). The columns come
        after the model's (solutions are longer by the number of items; their cost is 0)
        and the rows join the base rows (never dropped). Returns the prefixes seeded.
        """
        it = self.items
        order = np.lexsort((it.col, np.asarray(key)[it.col], it.port))
        d, q, col, port = it.size[order], it.sq[order], it.col[order], it.port[order]
        n = len(order)
        if n == 0:
            return 0
        first = np.concatenate(([True], port[1:] != port[:-1]))
        # running sums restarted at every port
        grp = np.cumsum(first) - 1
        base_d = np.concatenate(([0.0], np.cumsum(d)))[np.flatnonzero(first)][grp]
        base_q = np.concatenate(([0.0], np.cumsum(q)))[np.flatnonzero(first)][grp]
        b = np.cumsum(d) - base_d
        qq = np.cumsum(q) - base_q
        rhs = (b * b + qq) / (2.0 * self.cores)
        z = self.n_col + np.arange(n)
        self._check(self.h.addVars(n, rhs, np.full(n, highspy.kHighsInf)), "addVars")
        self.n_col += n
        k = ~first                                   # rows with a z_{k-1} term
        counts = np.where(k, 3, 2)
        starts = np.concatenate(([0], np.cumsum(counts)))
        index = np.empty(int(starts[-1]), dtype=np.int64)
        value = np.empty(int(starts[-1]))
        s0 = starts[:-1]
        prev = np.flatnonzero(k)
        index[s0[prev]], value[s0[prev]] = z[prev] - 1, 1.0
        at = s0 + k                                  # after the optional z_{k-1}
        index[at], value[at] = col, d
        index[at + 1], value[at + 1] = z, -1.0
        self.add_rows_geq(starts, index, value, np.zeros(n))
        self.n_base_rows = self.h.getNumRow()
        return n

    def separate(self, x: np.ndarray) -> CutSelection:
        """The violated prefixes to add at ``x`` (see :func:`select_cuts`)."""
        return select_cuts(self.items, x, self.cores, tol=self.tol, cap=self.cap,
                           spread=self.spread)

    def drop_slack_cuts(self) -> int:
        """Delete subset rows whose slack is basic (not binding); keeps the basis valid."""
        basis = self.h.getBasis()
        rs = basis.row_status
        n_rows = self.h.getNumRow()
        cut_rows = np.arange(self.n_base_rows, n_rows)
        if len(cut_rows) == 0:
            return 0
        status = np.array([rs[r] == highspy.HighsBasisStatus.kBasic for r in cut_rows])
        drop = cut_rows[status]
        if len(drop) == 0:
            return 0
        self._check(self.h.deleteRows(len(drop), drop.astype(np.int32)), "deleteRows")
        self.n_cut_rows -= len(drop)
        return len(drop)

    def run(self, max_rounds: int = 200, drop_every: int = 5, drop_until: int = 50,
            deadline: float | None = None) -> CutLoopResult:
        """Solve, separate, add cuts, re-solve ... until no prefix is violated.

        Slack subset rows are dropped every ``drop_every`` rounds during the first
        ``drop_until`` rounds only: after that rows are only added, so the loop cannot
        cycle and ends after finitely many rounds (there are finitely many prefixes).

        Parameters
        ----------
        max_rounds : int
        drop_every, drop_until : int
        deadline : float, optional
            A ``time.perf_counter()`` instant. After the first solve, the loop stops when
            it is reached and returns the last *completed* solve: the optimum of a
            relaxation with fewer cuts, still a valid lower bound, but ``converged`` is
            False.

        Returns
        -------
        CutLoopResult
            ``converged`` is False if ``max_rounds`` solves or the deadline were not
            enough.
        """
        rounds = 0
        added = 0
        converged = False
        max_rel = np.inf
        x, obj = None, 0.0
        while rounds < max_rounds:
            left = None
            if deadline is not None and x is not None:
                left = deadline - time.perf_counter()
                if left <= 0:
                    break
            xn = self.solve(left)
            if xn is None:          # time limit inside this solve: keep the last optimum
                break
            x, obj = xn, self.objective
            rounds += 1
            sel = self.separate(x)
            max_rel = sel.max_violation
            if len(sel.lengths) == 0:
                converged = True
                break
            if (self.drop_slack and drop_every and rounds % drop_every == 0
                    and rounds <= drop_until):
                self.drop_slack_cuts()
            added += self.add_prefix_cuts(sel.order, sel.starts, sel.lengths)
        self.cuts_added += added
        return CutLoopResult(x=x, objective=obj, rounds=rounds, cuts=added,
                             converged=converged, max_violation=max(0.0, max_rel))
