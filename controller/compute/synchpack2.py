"""SynchPack-2: LP2 + slow motion + mapping to machine-intervals + block packing, ratio 24.

Setting (C): non-preemptive (hence no migration); the schedule is also a 24-approximation
when preemption without migration is allowed (Corollary 4.2).

1. Solve LP2 (LP1 with ``eps = 1``, intervals ``d_l = u 2^{l-1}``, and ``x^i_tl = 0`` when
   ``p^i_t > d_l``).
2. **Slow motion on LP values** (eq. 15): ``x_bar^i_tl = x^i_tl / lam`` while the running
   sum stays below ``x^i_t = sum_l x^i_tl``; the first interval that would exceed it gets
   the remainder, later ones 0. Every task still sums to 1.
3. **Mapping** (Substep 3.1, Lenstra-Shmoys-Tardos style). Per machine, the tasks with a
   nonzero ``x_bar`` are sorted by volume ``v^i_t = a_t p^i_t``, non-increasing. Interval
   ``(i, l)`` gets ``ceil(sum_t x_bar^i_tl)`` copy nodes; in the sorted order each
   ``x_bar^i_tl`` is poured into the first copy of ``(i, l)`` with weight < 1, overflowing
   into the next. This is a fractional matching saturating every task (task weight 1, copy
   weight <= 1), so an integral matching on the nonzero edges saturating every task exists
   (Lemma 4.6); Hopcroft-Karp finds it. A task matched to a copy of ``(i, l)`` runs on
   machine ``i`` in block ``l``.
4. **Greedy packing per block** (Substep 3.2, block-sequential reading). On each machine
   block ``l`` starts when every task of the earlier blocks has finished; inside a block
   every not-yet-started task that fits is started at each event (list order: stage by LP
   completion, then task); nothing is preempted. Then every task is shifted left as far as
   capacity allows (never later; the paper's optional shift).
5. ``lam`` has density ``2 lam`` in the analysis; ``lam="best"`` (default) tries a grid and
   keeps the schedule with the smallest weighted completion time.

Constants (reconstructed): the volume mapped to ``(i, l)`` is <= ``2 c_i d_bar_l`` (Lemma
4.7); greedy packs it within ``4`` interval lengths (Lemmas 4.8, 4.9); ``C_t <= 6 d_bar_l``
(Lemma 4.10); ``24 = 6 x 2 x 2``.

Extensions (ours): releases and stage precedence are respected by the packing; a block
waits only for the tasks of earlier blocks that are available (released and stage-ready),
so that a successor mapped early cannot deadlock a machine.

References
----------
Shafiee & Ghaderi, Section 4 (Theorem 4.1, Lemmas 4.6-4.10), Appendices D and H;
algorithms.md 2.6.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from controller.compute.lp import lp2
from controller.compute.model import ComputeArrays, as_arrays
from controller.compute.online import replan
from controller.compute.packing import list_schedule
from controller.compute.schedule import ComputeSchedule, left_shift
from controller.lp.result import LPResult, TaskFractions

NAME = "synchpack-2"
DEFAULT_LAMS = (1.0, 0.8, 0.6, 0.4, 0.2)
__all__ = ["schedule", "plan", "slow_motion_lp", "map_to_machine_intervals", "Mapping"]


def slow_motion_lp(x: TaskFractions, lam: float) -> TaskFractions:
    """Eq. (15): stretched LP fractions ``x_bar`` (the non-zero ones, over the same
    (task, machine, interval) triples as ``x``).

    Parameters
    ----------
    x : TaskFractions of an LP2 solution (``res.solution.fractions``)
    lam : float in (0, 1]
    """
    if not 0 < lam <= 1:
        raise ValueError(f"lam must be in (0, 1], got {lam!r}")
    t, i, l, v = (np.asarray(q) for q in (x.task, x.machine, x.interval, x.value))
    order = np.lexsort((l, i, t))
    t, i, l, v = t[order], i[order], l[order], v[order]
    out = np.zeros(len(v))
    if len(v):
        cut = np.flatnonzero((np.diff(t) != 0) | (np.diff(i) != 0)) + 1
        for lo, hi in zip(np.concatenate([[0], cut]), np.concatenate([cut, [len(v)]])):
            total = v[lo:hi].sum()
            cum = np.cumsum(v[lo:hi] / lam)
            capped = np.minimum(cum, total)
            out[lo:hi] = np.diff(np.concatenate([[0.0], capped]))
    keep = out > 0
    return TaskFractions(t[keep], i[keep], l[keep], out[keep])


@dataclass(eq=False)
class Mapping:
    """Result of Substep 3.1.

    Attributes
    ----------
    machine, block : int arrays (n,), where each task was mapped (block = interval l)
    edges : (task, machine, interval, copy, weight) arrays of the fractional matching
    copy_weight : dict (machine, interval) -> float array, total weight of each copy
    matched_weight : float array (n,), weight of the edge each task was matched on
    """

    machine: np.ndarray
    block: np.ndarray
    edges: tuple
    copy_weight: dict
    matched_weight: np.ndarray


def map_to_machine_intervals(a: ComputeArrays, xbar: TaskFractions,
                             tol: float = 1e-9) -> Mapping:
    """Substep 3.1: fractional matching of tasks to interval copies, then Hopcroft-Karp.

    Raises
    ------
    RuntimeError
        If no integral matching saturates every task (cannot happen for a valid ``xbar``).
    """
    t, i, l, v = xbar.task, xbar.machine, xbar.interval, xbar.value
    n = a.n_tasks
    e_t, e_i, e_l, e_c, e_w = [], [], [], [], []
    copy_weight = {}
    for m in np.unique(i):
        on = i == m
        tm, lm, vm = t[on], l[on], v[on]
        vol = a.size[tm] * a.proc[tm, m]
        for ll in np.unique(lm):
            need = vm[lm == ll].sum()
            copy_weight[(int(m), int(ll))] = np.zeros(max(1, int(np.ceil(need - tol))))
        ptr = {key: 0 for key in copy_weight if key[0] == m}
        order = np.lexsort((lm, tm, -vol))     # volume non-increasing, task, interval
        for k in order:
            key = (int(m), int(lm[k]))
            w = copy_weight[key]
            rest = float(vm[k])
            while rest > 0:
                c = ptr[key]
                while c < len(w) and w[c] >= 1 - tol:
                    c += 1
                if c == len(w):               # rounding: one more copy
                    w = np.concatenate([w, [0.0]])
                    copy_weight[key] = w
                ptr[key] = c
                put = min(rest, 1.0 - w[c])
                if put <= 0:
                    put = rest
                w[c] += put
                rest -= put
                if rest <= tol * 1e-3:
                    rest = 0.0
                e_t.append(int(tm[k]))
                e_i.append(int(m))
                e_l.append(int(lm[k]))
                e_c.append(c)
                e_w.append(put)
    import networkx as nx  # here: listing the policies need not import it
    # integer nodes (task k is k, copy j is n + j): networkx's matching iterates over sets
    # of nodes, and string labels would make it depend on PYTHONHASHSEED
    g = nx.Graph()
    g.add_nodes_from(range(n), bipartite=0)
    copies: dict[tuple, int] = {}
    for tk, m, ll, c, w in zip(e_t, e_i, e_l, e_c, e_w):
        if w > 0:
            node = copies.setdefault((m, ll, c), n + len(copies))
            g.add_edge(tk, node, weight=w)
    copy_of = {node: key for key, node in copies.items()}
    match = nx.bipartite.hopcroft_karp_matching(g, top_nodes=range(n))
    machine = np.full(n, -1, dtype=np.int64)
    block = np.full(n, -1, dtype=np.int64)
    mw = np.zeros(n)
    for k in range(n):
        node = match.get(k)
        if node is None:
            raise RuntimeError(f"task {a.task_ids[k]!r} is not matched: the fractional "
                               f"matching does not saturate it")
        machine[k], block[k] = copy_of[node][:2]
        mw[k] = g.edges[k, node]["weight"]
    edges = (np.array(e_t, dtype=np.int64), np.array(e_i, dtype=np.int64),
             np.array(e_l, dtype=np.int64), np.array(e_c, dtype=np.int64), np.array(e_w))
    return Mapping(machine, block, edges, copy_weight, mw)


def _pack(a: ComputeArrays, res: LPResult, lam: float, background, shift: bool):
    xbar = slow_motion_lp(res.solution.fractions, lam)
    mp = map_to_machine_intervals(a, xbar)
    rank = np.empty(a.n_stages)
    C = res.solution.stage_completion
    rank[np.lexsort((np.arange(a.n_stages), C))] = np.arange(a.n_stages)
    tasks = np.arange(a.n_tasks)
    work = a.proc[tasks, mp.machine]
    prio = mp.block * (a.n_tasks + 1) ** 2 + rank[a.task_stage] * (a.n_tasks + 1) + tasks
    pk = list_schedule(a, tasks, mp.machine, work, prio, preemptive=False,
                       one_per_task=False, block=mp.block, background=background)
    segs = pk.segments()
    if shift:
        segs = left_shift(a, segs, background)
    return ComputeSchedule.from_segments(a, segs, NAME), mp


def plan(a: ComputeArrays, background=(), *, lam="best", lams=DEFAULT_LAMS,
         shift: bool = True, seed: int | None = None) -> ComputeSchedule:
    """The offline algorithm on ``a`` (see the module docstring)."""
    res = lp2(a, weights=a.job_weight[a.stage_job])
    if lam == "best":
        cand = [float(x) for x in lams]
    elif lam == "random":
        cand = [float(np.sqrt(1.0 - np.random.default_rng(seed).random()))]
    else:
        cand = [float(lam)]
    best = None
    for lv in cand:
        s, mp = _pack(a, res, lv, background, shift)
        if best is None or s.weighted_completion < best[0].weighted_completion - 1e-9:
            best = (s, mp, lv)
    s, mp, lv = best
    s.info.update({"lp": res.value, "lp_seconds": res.seconds, "lam": lv,
                   "lp_C": res.solution.stage_completion,
                   "block": mp.block})
    return s


def schedule(instance, *, lam="best", lams=DEFAULT_LAMS, shift: bool = True,
             seed: int | None = None, online: bool = False, tau0: float | None = None,
             growth: float = 2.0) -> ComputeSchedule:
    """Schedule ``instance`` with SynchPack-2 (non-preemptive).

    Parameters
    ----------
    instance : ComputeWorkload or ComputeArrays
    lam : "best", "random" or float in (0, 1]
        Slow-motion parameter; "best" tries ``lams`` and keeps the best schedule.
    shift : bool
        Shift tasks left after the block packing (never makes a task later).
    online : bool
        Re-plan at epochs ``tau_k = tau0 growth^k``; running tasks finish.

    References
    ----------
    Shafiee & Ghaderi, Section 4.2, Theorem 4.1 (ratio 24).
    """
    a = as_arrays(instance)
    kw = dict(lam=lam, lams=lams, shift=shift, seed=seed)
    if online:
        return replan(a, lambda sub, bg: plan(sub, bg, **kw), preemptive=False, tau0=tau0,
                      growth=growth, name=NAME)
    return plan(a, **kw)
