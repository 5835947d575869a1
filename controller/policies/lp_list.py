"""LP-based list scheduling on identical parallel networks: Chen's Algorithms 1, 2 and 3.

All three solve a coflow LP relaxation (:mod:`controller.lp.coflow`), list the flows in
the order of the LP completion times ``C̄`` (ties by topological rank of the coflow in the
precedence DAG, then coflow index, then ``(src, dst)``), give every flow a core, and let
the shared transmission engine run them: a preemptive priority-greedy matching,
recomputed at every event, on every core at once (algorithms.md 1.5). Here that engine is
a ``sharing="priority"`` :class:`~controller.plan.Plan` whose ``rank`` is the list
position; the simulator and the SDN controller both apply it.

``lp-flow`` -- Algorithm 1, flow-driven list scheduling (divisible), algorithms.md 1.6
    LP (1); ``π`` = flows by ``(C̄_f, topo rank, k, i, j)``; in ``π`` order each flow
    ``f = (i, j, k)`` takes the core ``h`` minimising ``loadIn[h][i] + loadOut[h][j]``
    (smallest ``h`` on ties) and adds ``d_f`` to both. Ratio ``(6 - 2/m) χ`` with
    arbitrary releases, ``(5 - 2/m) χ`` with zero releases (``m >= 2``; ``5 χ`` / ``4 χ``
    for ``m = 1``).

``lp-coflow`` -- Algorithm 2, coflow-driven list scheduling (indivisible), 1.7
    LP (7); coflows by ``(C̄_k, topo rank, k)``; each coflow in turn goes, whole, to the
    core minimising ``max_{(i,j) in k} (loadIn[h][i] + L^in_ik + loadOut[h][j] +
    L^out_jk)``, its completion bound; flows listed coflow by coflow, ``(i, j)`` inside.
    Ratio ``(4m + 1) χ``, ``4m χ`` with zero releases.

``lp-single`` -- Algorithm 3, single-network-core list scheduling, 1.8
    LP (8) (= LP (7) with ``m = 1``); the coflow order of Algorithm 2, every flow on core
    0 (on a fabric with more cores the others stay unused). Ratio ``5 χ``, ``4 χ`` with
    zero releases.

Options (all three):

* ``objective``: ``"weighted"`` (``sum w_k C_k``), ``"jobs"`` (LP (13), weighted job
  completion) or ``"makespan"`` (LP (14), lexicographic); only the LP and hence the order
  change.
* ``mode="offline"`` (default): one LP over the whole workload, future releases included,
  solved in :meth:`~LPListPolicy.start`; the plan never changes.
  ``mode="online"``: whenever coflows have been released since the last solve, the LP is
  re-solved over the released, unfinished coflows only (remaining bytes, releases
  ``max(r_k, now)``, time origin ``now``); flows that have already sent keep their core
  (no migration) and their remaining bytes count in the core loads at their list
  position. Between releases the plan is kept. The ratios are proven for the offline
  algorithms only.

:func:`lp_list_schedule` is the pure function behind the policies: workload (and, online,
the residual state) in, ``π`` and the core map out. The SDN controller and the tests use it
without an engine.

References
----------
C.-Y. Chen, "Scheduling Coflows with Precedence Constraints for Minimizing the Total
Weighted Completion Time in Identical Parallel Networks": Algorithms 1-3, Theorems for
LP (1), (7), (8), (13), (14); algorithms.md 1.5-1.10.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import ClassVar

import numba
import numpy as np

from controller.indexing import no_wraparound
from controller.lp.coflow import OBJECTIVES, identical_rate, solve_coflow_lp, solve_flow_lp
from controller.lp.result import LPResult
from controller.model import Workload
from controller.plan import Plan, State
from controller.policies.base import Policy, PolicyError, register

# the kernels never index with a negative number
no_wraparound(__name__)

__all__ = ["ALGORITHMS", "MODES", "ListSchedule", "lp_list_schedule", "flow_list_order",
           "coflow_list_order", "assign_cores_by_flow", "assign_cores_by_coflow",
           "LPFlowPolicy", "LPCoflowPolicy", "LPSinglePolicy"]

ALGORITHMS = ("flow", "coflow", "single")
MODES = ("offline", "online")


@dataclass(frozen=True, eq=False)
class ListSchedule:
    """The output of Algorithms 1-3 before transmission.

    Attributes
    ----------
    order : int64 array
        ``π``: the listed flows (those in the LP), highest priority first.
    rank : float64 array, one per flow of the workload
        Position in ``π``; flows not listed come after, by index.
    core : int64 array, one per flow
        Assigned core; ``-1`` for flows not listed.
    coflow_order : int64 array
        The listed coflows by ``(C̄_k, topo rank, k)``.
    lp : LPResult
        The LP the order comes from.
    algorithm : str
        ``"flow"``, ``"coflow"`` or ``"single"``.
    """

    order: np.ndarray
    rank: np.ndarray
    core: np.ndarray
    coflow_order: np.ndarray
    lp: LPResult
    algorithm: str

    def plan(self, pinned: np.ndarray | None = None) -> Plan:
        """The priority plan that runs this list on the shared engine (algorithms.md 1.5).

        Unlisted flows get their pinned core, else core 0 (they are not eligible).
        """
        core = self.core.copy()
        free = core < 0
        if pinned is not None:
            core[free] = np.where(pinned[free] >= 0, pinned[free], 0)
        else:
            core[free] = 0
        return Plan(core=core, rank=self.rank.copy(), sharing="priority", backfill=True)


# ------------------------------------------------------------------------------- orders
def coflow_list_order(coflow_completion, topo_rank, coflows) -> np.ndarray:
    """Coflows sorted by ``(C̄_k, topological rank, k)`` (algorithms.md 1.7, 1.8, 1.12).

    Parameters
    ----------
    coflow_completion : float array per coflow
    topo_rank : int array per coflow (``Workload.topo_rank``)
    coflows : int array
        The coflows to order.
    """
    coflows = np.asarray(coflows, dtype=np.int64)
    c = np.asarray(coflow_completion, dtype=np.float64)[coflows]
    return coflows[np.lexsort((coflows, np.asarray(topo_rank)[coflows], c))]


def _tie_key(topo_rank, k, src, dst, ports, n_coflows):
    """One int64 per flow ordering like ``(topo rank of k, k, i, j)``."""
    topo = np.asarray(topo_rank, dtype=np.int64)[k]
    return ((topo * n_coflows + k) * ports + src) * ports + dst


def flow_list_order(flow_completion, topo_rank, flows, coflow, src, dst) -> np.ndarray:
    """Flows sorted by ``(C̄_f, topo rank of k(f), k, i, j)`` (algorithms.md 1.6, step 2)."""
    flows = np.asarray(flows, dtype=np.int64)
    k = coflow[flows]
    ports = int(max(src.max(initial=0), dst.max(initial=0))) + 1
    tie = _tie_key(topo_rank, k, src[flows], dst[flows], ports, len(topo_rank))
    return flows[np.lexsort((tie, np.asarray(flow_completion, dtype=np.float64)[flows]))]


# ------------------------------------------------------------------------------- cores
@numba.njit(cache=True)
def _assign_by_flow(order, src, dst, load, pinned, cores, ports):
    load_in = np.zeros((cores, ports))
    load_out = np.zeros((cores, ports))
    out = np.empty(order.shape[0], dtype=np.int64)
    for n in range(order.shape[0]):
        f = order[n]
        i = src[f]
        j = dst[f]
        h = pinned[f]
        if h < 0:
            best = np.inf
            for g in range(cores):
                v = load_in[g, i] + load_out[g, j]
                if v < best:
                    best = v
                    h = g
        out[n] = h
        load_in[h, i] += load[f]
        load_out[h, j] += load[f]
    return out


def assign_cores_by_flow(order, src, dst, load, cores: int, ports: int,
                         pinned=None) -> np.ndarray:
    """Algorithm 1, lines 5-9: in ``π`` order, ``h* = argmin_h loadIn[h][i] + loadOut[h][j]``.

    Parameters
    ----------
    order : int array
        ``π`` (flow indices).
    src, dst : int arrays per flow
    load : float array per flow
        Bytes the flow will send (its size, or its remaining bytes online).
    cores, ports : int
    pinned : int array per flow, optional
        A flow with ``pinned >= 0`` keeps that core (it has already sent); its load still
        counts on that core at its list position.

    Returns
    -------
    int64 array
        The core of ``order[n]`` at position ``n``.

    References
    ----------
    algorithms.md 1.6 step 3 (smallest ``h`` on ties; ``sum``, not ``max``: the argmin is
    at most the average over cores, which gives the ``1/m`` in the ratio).
    """
    order = np.asarray(order, dtype=np.int64)
    if pinned is None:
        pinned = np.full(len(src), -1, dtype=np.int64)
    return _assign_by_flow(order, np.asarray(src, np.int64), np.asarray(dst, np.int64),
                           np.asarray(load, np.float64), np.asarray(pinned, np.int64),
                           int(cores), int(ports))


@numba.njit(cache=True)
def _assign_by_coflow(corder, fstart, fidx, src, dst, load, pinned, cpinned, cores, ports):
    load_in = np.zeros((cores, ports))
    load_out = np.zeros((cores, ports))
    lin = np.zeros(ports)
    lout = np.zeros(ports)
    out = np.empty(corder.shape[0], dtype=np.int64)
    for n in range(corder.shape[0]):
        a, b = fstart[n], fstart[n + 1]
        h = cpinned[n]
        for t in range(a, b):
            f = fidx[t]
            lin[src[f]] += load[f]
            lout[dst[f]] += load[f]
            if h < 0 and pinned[f] >= 0:
                h = pinned[f]
        if h < 0:
            best = np.inf
            for g in range(cores):
                worst = 0.0
                for t in range(a, b):
                    f = fidx[t]
                    v = load_in[g, src[f]] + lin[src[f]] + load_out[g, dst[f]] + lout[dst[f]]
                    if v > worst:
                        worst = v
                if worst < best:
                    best = worst
                    h = g
            if h < 0:
                h = 0
        out[n] = h
        for t in range(a, b):
            f = fidx[t]
            hf = pinned[f] if pinned[f] >= 0 else h
            load_in[hf, src[f]] += load[f]
            load_out[hf, dst[f]] += load[f]
            lin[src[f]] = 0.0
            lout[dst[f]] = 0.0
    return out


def assign_cores_by_coflow(coflow_order, flows_of, src, dst, load, cores: int, ports: int,
                           pinned=None, coflow_pinned=None) -> np.ndarray:
    """Algorithm 2, step 2: each coflow, in order, to the core minimising its bound.

    ``h* = argmin_h max_{(i,j): d_ijk > 0} (loadIn[h][i] + L^in_ik + loadOut[h][j] +
    L^out_jk)`` (smallest ``h`` on ties), then the coflow's loads are added to ``h*``.

    Parameters
    ----------
    coflow_order : int array
    flows_of : list of int arrays
        ``flows_of[n]``: the listed flows of ``coflow_order[n]``.
    src, dst, load : arrays per flow
    cores, ports : int
    pinned : int array per flow, optional
        A coflow with a pinned (already started) flow stays on that flow's core.
    coflow_pinned : int array, optional
        ``coflow_pinned[n] >= 0``: ``coflow_order[n]`` already sent on that core (maybe
        with flows that have finished since) and stays there.

    Returns
    -------
    int64 array
        Core of ``coflow_order[n]`` at position ``n``.

    References
    ----------
    algorithms.md 1.7, Algorithm 2 step 2 (reconstructed rule; any rule keeps the ratio).
    """
    corder = np.asarray(coflow_order, dtype=np.int64)
    sizes = np.array([len(x) for x in flows_of], dtype=np.int64)
    fstart = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    fidx = (np.concatenate(flows_of).astype(np.int64) if len(flows_of)
            else np.zeros(0, np.int64))
    if pinned is None:
        pinned = np.full(len(src), -1, dtype=np.int64)
    if coflow_pinned is None:
        coflow_pinned = np.full(len(corder), -1, dtype=np.int64)
    return _assign_by_coflow(corder, fstart, fidx, np.asarray(src, np.int64),
                             np.asarray(dst, np.int64), np.asarray(load, np.float64),
                             np.asarray(pinned, np.int64),
                             np.asarray(coflow_pinned, np.int64), int(cores), int(ports))


# ------------------------------------------------------------------------------- pure API
def lp_list_schedule(workload: Workload, algorithm: str = "flow",
                     objective: str = "weighted", *, remaining=None, now: float = 0.0,
                     coflows=None, pinned=None, lp: LPResult | None = None) -> ListSchedule:
    """Algorithms 1-3 up to transmission: solve the LP, list the flows, assign cores.

    Parameters
    ----------
    workload : Workload
        Its fabric gives ``m`` and the (identical) core rate.
    algorithm : {"flow", "coflow", "single"}
        Algorithm 1 (LP (1)), 2 (LP (7)) or 3 (LP (8), core 0).
    objective : {"weighted", "jobs", "makespan"}
    remaining : float array per flow, optional
        Bytes left (online); flows with none left are not listed.
    now : float
        Current time (online): releases ``max(r_k, now)``.
    coflows : int array or bool mask, optional
        Coflows to schedule (online: the released, unfinished ones). Default: all (with
        ``remaining``: all with bytes left).
    pinned : int array per flow, optional
        Core of every flow that has already sent (``-1`` otherwise); kept as is.
    lp : LPResult, optional
        Use this LP solution instead of solving (e.g. to give several algorithms the same
        ``C̄``).

    Returns
    -------
    ListSchedule

    Raises
    ------
    ValueError
        Unknown algorithm/objective, or a fabric with heterogeneous core rates.

    References
    ----------
    algorithms.md 1.6 (Algorithm 1), 1.7 (Algorithm 2), 1.8 (Algorithm 3).
    """
    if algorithm not in ALGORITHMS:
        raise ValueError(f"algorithm must be one of {ALGORITHMS}, got {algorithm!r}")
    a = workload.arrays
    fab = workload.fabric
    rate = identical_rate(fab)
    m = 1 if algorithm == "single" else fab.cores
    if lp is None:
        solve = solve_flow_lp if algorithm == "flow" else solve_coflow_lp
        lp = solve(a, m, rate, objective, remaining=remaining, now=now, coflows=coflows)
    load = a.size if remaining is None else np.asarray(remaining, dtype=np.float64)
    pin = (np.full(a.n_flows, -1, dtype=np.int64) if pinned is None
           else np.asarray(pinned, dtype=np.int64))
    listed = np.flatnonzero(~np.isnan(lp.solution.flow_completion) & (load > 0))
    in_lp = np.flatnonzero(~np.isnan(lp.solution.coflow_completion))
    topo = workload.topo_rank
    corder = coflow_list_order(lp.solution.coflow_completion, topo, in_lp)
    core = np.full(a.n_flows, -1, dtype=np.int64)
    if algorithm == "flow":
        order = flow_list_order(lp.solution.flow_completion, topo, listed, a.coflow, a.src,
                                a.dst)
        core[order] = assign_cores_by_flow(order, a.src, a.dst, load, fab.cores, a.ports,
                                           pin)
    else:
        # coflow by coflow in the coflow order, (i, j) inside
        pos = np.empty(a.n_coflows, dtype=np.int64)
        pos[corder] = np.arange(len(corder))
        lf = listed
        key = (pos[a.coflow[lf]] * a.ports + a.src[lf]) * a.ports + a.dst[lf]
        order = lf[np.argsort(key, kind="stable")]
        counts = np.bincount(pos[a.coflow[order]], minlength=len(corder))
        flows_of = np.split(order, np.cumsum(counts)[:-1]) if len(corder) else []
        if algorithm == "single":
            core[order] = np.where(pin[order] >= 0, pin[order], 0)
        else:
            # a coflow that has sent on a core stays there, even if the flows that sent
            # have finished (indivisible: one core per coflow for its whole life)
            cpin = np.full(a.n_coflows, -1, dtype=np.int64)
            started = np.flatnonzero(pin >= 0)
            cpin[a.coflow[started]] = pin[started]
            ch = assign_cores_by_coflow(corder, flows_of, a.src, a.dst, load, fab.cores,
                                        a.ports, pin, cpin[corder])
            core[order] = np.repeat(ch, counts)
            p = pin[order]
            core[order] = np.where(p >= 0, p, core[order])
    # unlisted flows after the list, by index
    rank = len(order) + np.arange(a.n_flows, dtype=np.float64)
    rank[order] = np.arange(len(order), dtype=np.float64)
    return ListSchedule(order=order, rank=rank, core=core, coflow_order=corder, lp=lp,
                        algorithm=algorithm)


# ------------------------------------------------------------------------------- policies
class LPListPolicy(Policy):
    """Shared shell of Algorithms 1-3: when to solve, and the plan from the list.

    Attributes (after a run)
    ------------------------
    schedule : ListSchedule
        The current list.
    solves : list of (time, seconds, coflows in the LP)
        One entry per LP solve (one offline; one per release online).
    """

    algorithm: ClassVar[str] = ""

    def __init__(self, mode: str = "offline", objective: str = "weighted", **unknown):
        if unknown:
            raise PolicyError(f"policy {self.name!r} takes the options mode= and objective=, "
                              f"not {sorted(unknown)}")
        super().__init__()
        if mode not in MODES:
            raise PolicyError(f"policy {self.name!r}: mode must be one of {MODES}, got {mode!r}")
        if objective not in OBJECTIVES:
            raise PolicyError(f"policy {self.name!r}: objective must be one of {OBJECTIVES}, "
                              f"got {objective!r}")
        self.mode = mode
        self.objective = objective

    def start(self, workload: Workload) -> None:
        super().start(workload)
        try:
            identical_rate(workload.fabric)
        except ValueError as e:
            raise PolicyError(f"policy {self.name!r}: {e}") from None
        self.solves = []
        self.schedule = None
        self._plan = None
        self._known = None
        if self.mode == "offline":
            t0 = time.perf_counter()
            self.schedule = lp_list_schedule(workload, self.algorithm, self.objective)
            self.solves.append((0.0, time.perf_counter() - t0, len(workload.coflows)))
            self._plan = self.schedule.plan()

    def plan(self, state: State) -> Plan:
        if self.mode == "offline":
            return self._plan
        known = state.released & ~state.done
        new = state.released if self._known is None else state.released & ~self._known
        if self._plan is None or new.any():
            t0 = time.perf_counter()
            self.schedule = lp_list_schedule(
                self.workload, self.algorithm, self.objective, remaining=state.remaining,
                now=state.time, coflows=known, pinned=state.core)
            self.solves.append((state.time, time.perf_counter() - t0, int(known.sum())))
            self._plan = self.schedule.plan(pinned=state.core)
            self._known = state.released.copy()
        return self._plan


@register
class LPFlowPolicy(LPListPolicy):
    """Algorithm 1: LP (1) flow order, per-flow least-loaded core ((6 - 2/m) χ)."""

    name = "lp-flow"
    summary = "Chen Alg. 1: LP (1) flow order, argmin loadIn+loadOut core (divisible)"
    algorithm = "flow"


@register
class LPCoflowPolicy(LPListPolicy):
    """Algorithm 2: LP (7) coflow order, one core per coflow ((4m + 1) χ)."""

    name = "lp-coflow"
    summary = "Chen Alg. 2: LP (7) coflow order, one core per coflow (indivisible)"
    algorithm = "coflow"


@register
class LPSinglePolicy(LPListPolicy):
    """Algorithm 3: LP (8) coflow order on core 0 (5 χ)."""

    name = "lp-single"
    summary = "Chen Alg. 3: LP (8) coflow order on a single core"
    algorithm = "single"
