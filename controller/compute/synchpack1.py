"""SynchPack-1: LP1 + greedy packing of task fractions + slow motion, ratio 6 + eps.

Setting (A): preemption and migration among the machines of a task's placement set.

1. Solve LP1 over ``(1+eps)``-geometric intervals: ``x~^i_tl``, ``C~_s``.
2. **Greedy list packing of task fractions -> schedule S.** A fraction ``(t, i, l)`` has the
   task's size and lasts ``x~^i_tl p^i_t`` on machine ``i``. The list is ordered by
   interval ``l`` (within an interval by ``C~`` of the stage, then task, then machine). At
   time 0 and at every fraction completion the list is scanned from the top and a fraction
   starts if no other fraction of its task is running (on any machine: one fraction per
   task, so a task never runs at rate above 1) and it fits. Fractions of later intervals
   are thereby preempted.
3. **Slow motion -> schedule S'.** Stretch S by ``1/lam``: what S ran in ``[t1, t2]`` runs in
   ``[t1/lam, t2/lam]``, but on machine ``i`` task ``t`` stops once it has received
   ``x~^i_t p^i_t`` (``x~^i_t = sum_l x~^i_tl``); the machine idles for the rest.
4. **Derandomisation (Appendix C).** ``tau_j(lam)``: first time in S at which every task
   of job ``j`` has received at least ``lam x~^i_t p^i_t`` on every machine ``i``; then
   ``C_j(S') <= tau_j(lam)/lam``. ``sum_j w_j tau_j(lam)/lam`` is non-increasing between
   consecutive breakpoints (the values ``processed/(x~ p)`` at segment ends of S) and
   left-continuous, so its minimum over ``(0, 1]`` is at a breakpoint or at 1; we keep the
   minimiser (``lam="best"``). ``lam="random"`` draws from the density ``2 lam``.

The constants behind 6 + eps (reconstructed): all fractions of intervals <= l finish in S
by ``3 d_l`` (Lemma 3.3), ``int_0^1 tau_j = 3(1+eps) C~_j``, ``E[C_j(S')] <= 2 int tau_j``.

Extensions (ours): releases and stage precedence are respected by the packing (a fraction
waits for its task's release and its stage's predecessors; stretching keeps both).

References
----------
Shafiee & Ghaderi, Section 3 (Theorem 3.1, Lemmas 3.3-3.6), Appendix C (derandomisation),
Appendix G (Algorithm 2); Schulz & Skutella 1997 (slow motion); algorithms.md 2.5.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from controller.compute.lp import lp1
from controller.compute.model import ComputeArrays, as_arrays
from controller.compute.online import replan
from controller.compute.packing import list_schedule
from controller.compute.schedule import ComputeSchedule
from controller.lp.result import LPResult

NAME = "synchpack-1"
__all__ = ["schedule", "plan", "fraction_schedule", "slow_motion", "tau", "best_lambda",
           "LambdaChoice", "FractionSchedule"]


@dataclass(eq=False)
class FractionSchedule:
    """Schedule S of step 2 and what slow motion needs.

    Attributes
    ----------
    arrays : ComputeArrays
    segments : (task, machine, start, end) arrays of S
    target : float array (n, M), ``x~^i_t p^i_t``: seconds task ``t`` gets on machine ``i``
    lp : LPResult, the LP1 solution
    fraction_interval, fraction_end : arrays, per packed fraction, its LP interval ``l``
        and the time it finished in S (Lemma 3.3 bounds the latter by ``3 d_l``)
    """

    arrays: ComputeArrays
    segments: tuple
    target: np.ndarray
    lp: LPResult
    fraction_interval: np.ndarray = None
    fraction_end: np.ndarray = None


def fraction_schedule(a: ComputeArrays, eps: float = 0.25, background=()) -> FractionSchedule:
    """Steps 1-2: solve LP1 and pack its task fractions greedily (schedule S)."""
    res = lp1(a, eps, weights=a.job_weight[a.stage_job])
    x = res.solution.fractions
    xt, xi, xl, xv = x.task, x.machine, x.interval, x.value
    work = xv * a.proc[xt, xi]
    # fractions shorter than the engine's time tolerance are dropped and the task's other
    # fractions scaled up to sum to 1 again
    tiny = work <= 1e-8 * max(1.0, float(a.proc[a.allowed].max()))
    if tiny.any():
        xv = np.where(tiny, 0.0, xv)
        tot = np.zeros(a.n_tasks)
        np.add.at(tot, xt, xv)
        xv = xv / tot[xt]
        work = xv * a.proc[xt, xi]
    rank = np.empty(a.n_stages)
    C = res.solution.stage_completion
    rank[np.lexsort((np.arange(a.n_stages), C))] = np.arange(a.n_stages)
    order = np.lexsort((xi, xt, rank[a.task_stage[xt]], xl))
    prio = np.empty(len(xt))
    prio[order] = np.arange(len(xt))
    keep = work > 0
    pk = list_schedule(a, xt[keep], xi[keep], work[keep], prio[keep], preemptive=True,
                       one_per_task=True, background=background)
    target = np.zeros((a.n_tasks, a.n_machines))
    np.add.at(target, (xt[keep], xi[keep]), work[keep])
    return FractionSchedule(a, pk.segments(), target, res, xl[keep],
                            np.array(pk.item_end[:int(keep.sum())]))


def _per_pair(fs: FractionSchedule):
    """Segments of S grouped by (task, machine), sorted by start."""
    t, m, s, e = fs.segments
    order = np.lexsort((s, m, t))
    t, m, s, e = t[order], m[order], s[order], e[order]
    groups = {}
    if len(t):
        cut = np.flatnonzero((np.diff(t) != 0) | (np.diff(m) != 0)) + 1
        for lo, hi in zip(np.concatenate([[0], cut]), np.concatenate([cut, [len(t)]])):
            groups[(int(t[lo]), int(m[lo]))] = (s[lo:hi], e[lo:hi])
    return groups


def slow_motion(fs: FractionSchedule, lam: float):
    """Step 3: schedule S' = S stretched by ``1/lam``, each (task, machine) capped at its
    LP share ``x~^i_t p^i_t``. Returns (task, machine, start, end) arrays."""
    if not 0 < lam <= 1:
        raise ValueError(f"lam must be in (0, 1], got {lam!r}")
    out = [[], [], [], []]
    for (t, i), (s, e) in _per_pair(fs).items():
        left = fs.target[t, i]
        for a_, b_ in zip(s / lam, e / lam):
            if left <= 1e-12 * max(1.0, fs.target[t, i]):
                break
            end = min(b_, a_ + left)
            out[0].append(t)
            out[1].append(i)
            out[2].append(a_)
            out[3].append(end)
            left -= end - a_
    return (np.array(out[0], dtype=np.int64), np.array(out[1], dtype=np.int64),
            np.array(out[2]), np.array(out[3]))


def tau(fs: FractionSchedule, lams) -> np.ndarray:
    """``tau_j(lam)`` per job (rows) and per ``lam`` (columns): the first time in S at which
    every task of the job has received ``lam x~^i_t p^i_t`` on every machine ``i``."""
    a = fs.arrays
    lams = np.atleast_1d(np.asarray(lams, dtype=np.float64))
    out = np.zeros((a.n_jobs, len(lams)))
    for (t, i), (s, e) in _per_pair(fs).items():
        X = fs.target[t, i]
        if X <= 0:
            continue
        ln = e - s
        cum_after = np.cumsum(ln)
        cum_before = cum_after - ln
        need = lams * X * (1 - 1e-12)
        k = np.minimum(np.searchsorted(cum_after, need, side="left"), len(s) - 1)
        tt = s[k] + np.maximum(need - cum_before[k], 0.0)
        j = a.task_job[t]
        out[j] = np.maximum(out[j], tt)
    return out


@dataclass(frozen=True)
class LambdaChoice:
    """The stretch of step 3 chosen by :func:`best_lambda`.

    Attributes
    ----------
    lam : float in (0, 1], the stretch factor
    bound : float, ``sum_j w_j tau_j(lam) / lam`` at ``lam``: the weighted completion
        of the stretched schedule S' is at most this
    """

    lam: float
    bound: float


def best_lambda(fs: FractionSchedule, max_candidates: int = 5000) -> LambdaChoice:
    """The ``lam`` in (0, 1] minimising ``sum_j w_j tau_j(lam)/lam``, with that minimum.

    Candidates are the breakpoints (received / target at every segment end of S) and 1;
    above ``max_candidates`` breakpoints an evenly spaced subset is used.
    """
    cands = [1.0]
    for (t, i), (s, e) in _per_pair(fs).items():
        X = fs.target[t, i]
        if X > 0:
            cands.extend(np.cumsum(e - s) / X)
    c = np.unique(np.clip(np.array(cands), 1e-9, 1.0))
    if len(c) > max_candidates:
        c = np.unique(np.concatenate([c[np.linspace(0, len(c) - 1, max_candidates)
                                        .astype(int)], [1.0]]))
    vals = fs.arrays.job_weight @ (tau(fs, c) / c)
    k = int(np.argmin(vals))
    return LambdaChoice(lam=float(c[k]), bound=float(vals[k]))


def plan(a: ComputeArrays, background=(), *, eps: float = 0.25, lam="best",
         seed: int | None = None) -> ComputeSchedule:
    """The offline algorithm on ``a``: steps 1-4 of the module docstring."""
    fs = fraction_schedule(a, eps, background)
    bound = None
    if lam == "best":
        choice = best_lambda(fs)
        lam_v, bound = choice.lam, choice.bound
    elif lam == "random":
        lam_v = float(np.sqrt(1.0 - np.random.default_rng(seed).random()))  # density 2 lam
    else:
        lam_v = float(lam)
    segs = slow_motion(fs, lam_v)
    info = {"lp": fs.lp.value, "lp_seconds": fs.lp.seconds, "lam": lam_v, "eps": eps,
            "lp_C": fs.lp.solution.stage_completion}
    if bound is not None:
        info["tau_bound"] = bound
    return ComputeSchedule.from_segments(a, segs, NAME, info)


def schedule(instance, *, eps: float = 0.25, lam="best", seed: int | None = None,
             online: bool = False, tau0: float | None = None,
             growth: float = 2.0) -> ComputeSchedule:
    """Schedule ``instance`` with SynchPack-1 (preemptive, with migration).

    Parameters
    ----------
    instance : ComputeWorkload or ComputeArrays
    eps : float
        Interval growth of LP1 (the ratio is ``6(1+eps)``).
    lam : "best", "random" or float in (0, 1]
        Slow-motion parameter: the deterministic minimiser of Appendix C, a draw from the
        density ``2 lam``, or a given value.
    online : bool
        Re-plan at epochs ``tau_k = tau0 growth^k`` (preempting at each boundary).

    Returns
    -------
    ComputeSchedule (``info``: ``lp``, ``lam``, ``tau_bound`` = ``sum_j w_j tau_j/lam``)

    References
    ----------
    Shafiee & Ghaderi, Section 3.2, Theorem 3.1 (ratio 6 + eps), Appendix C.
    """
    a = as_arrays(instance)
    if online:
        return replan(a, lambda sub, bg: plan(sub, bg, eps=eps, lam=lam, seed=seed),
                      preemptive=True, tau0=tau0, growth=growth, name=NAME)
    return plan(a, eps=eps, lam=lam, seed=seed)
