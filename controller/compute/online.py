"""Online re-planning: run an offline compute policy again on what is left.

The paper makes its offline algorithms online by cutting time into epochs of growing length
``tau_k = tau_0 growth^k`` (boundaries ``b_0 = 0``, ``b_{k+1} = b_k + tau_k``). At every
boundary the offline algorithm is run again on the jobs that have arrived and are not
finished (a job arrives at the earliest release of its tasks; jobs arriving inside an
epoch wait for the next boundary):

* preemptive policies preempt everything at the boundary, and re-plan every unfinished task
  with the fraction of its work that is left (processing times scaled down);
* non-preemptive policies let the tasks that have started finish (they keep their machine's
  capacity, passed to the new plan as *background* occupancy) and re-plan the others.

Between boundaries the plan is followed as computed. ``mode="arrivals"`` re-plans instead at
every job arrival and whenever a stage becomes ready (PSRS's online rule); in that mode only
stages whose predecessors are complete are planned, for policies that cannot handle stage
precedence themselves.

The driver is engine-independent: it only calls ``plan(sub_instance, background)`` and
stitches the returned schedules into one :class:`~controller.compute.schedule.ComputeSchedule`.

References
----------
Shafiee & Ghaderi, Section 7 ("A natural extension of our algorithms to online setting");
algorithms.md 2.8.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from controller.compute.model import ComputeArrays
from controller.compute.schedule import ComputeSchedule

__all__ = ["replan", "epoch_boundaries", "default_tau0"]


def default_tau0(a: ComputeArrays, factor: float = 2.0) -> float:
    """``factor`` times the mean inter-arrival time of jobs (mean shortest processing
    time if every job arrives at once)."""
    arr = np.unique(a.job_release)
    if len(arr) >= 2:
        return float(factor * (arr[-1] - arr[0]) / (len(arr) - 1))
    return float(factor * a.pmin.mean()) if a.n_tasks else 1.0


def epoch_boundaries(tau0: float, growth: float, until: float) -> np.ndarray:
    """``b_0 = 0, b_{k+1} = b_k + tau0 growth^k`` up to the first boundary > ``until``."""
    if not tau0 > 0 or not growth >= 1:
        raise ValueError(f"need tau0 > 0 and growth >= 1, got {tau0!r}, {growth!r}")
    b = [0.0]
    k = 0
    while b[-1] <= until:
        b.append(b[-1] + tau0 * growth ** k)
        k += 1
    return np.array(b)


def replan(a: ComputeArrays, plan: Callable[[ComputeArrays, list], ComputeSchedule], *,
           preemptive: bool, mode: str = "epochs", tau0: float | None = None,
           growth: float = 2.0, name: str = "", max_rounds: int = 1_000_000) -> ComputeSchedule:
    """Run ``plan`` repeatedly on the residual instance; see the module docstring.

    Parameters
    ----------
    a : ComputeArrays
        The full instance (``a.orig_task`` must be the identity).
    plan : callable ``(sub: ComputeArrays, background: list) -> ComputeSchedule``
        The offline policy. ``sub`` has times relative to the re-planning time; its tasks
        have the remaining processing times; ``background`` lists ``(machine, size, until)``
        for non-preemptive tasks still running.
    preemptive : bool
    mode : "epochs" or "arrivals"
    tau0, growth : epoch lengths ``tau_k = tau0 growth^k`` (mode "epochs"); default
        ``tau0`` is :func:`default_tau0`.

    Returns
    -------
    ComputeSchedule with ``info["replans"]`` the number of plans computed.
    """
    if mode not in ("epochs", "arrivals"):
        raise ValueError(f"mode must be 'epochs' or 'arrivals', got {mode!r}")
    n = a.n_tasks
    tol = 1e-9 * max(1.0, float(a.proc[a.allowed].max()) if n else 1.0)
    tau0 = default_tau0(a) if tau0 is None else float(tau0)
    if mode == "epochs" and not tau0 > 0:
        raise ValueError(f"tau0 must be > 0, got {tau0!r}")
    frac = np.ones(n)
    done = np.zeros(n, dtype=bool)          # complete, or committed to complete (NP)
    comp = np.full(n, np.nan)
    seg = [[], [], [], []]
    arrivals = np.unique(a.job_release)
    job_known_at = a.job_release[a.task_job]
    stage_sizes = np.array([len(t) for t in a.stage_tasks])
    t = 0.0
    k = 0                                   # epoch index: current boundary b_k = t
    epoch_len = tau0
    rounds = 0
    replans = 0
    lp_total = 0.0

    def stage_done_at():
        """Per stage: completion time if all its tasks are complete/committed, else inf."""
        out = np.full(a.n_stages, np.inf)
        for s, ts in enumerate(a.stage_tasks):
            if done[ts].all():
                out[s] = comp[ts].max()
        return out

    while not done.all():
        rounds += 1
        if rounds > max_rounds:
            raise RuntimeError("online re-planning does not progress")
        sdone = stage_done_at()
        cand = ~done & (job_known_at <= t + tol)
        if mode == "arrivals":
            ready = np.array([all(sdone[p] <= t + tol for p in a.stage_preds[s])
                              for s in range(a.n_stages)], dtype=bool)
            cand &= ready[a.task_stage]
        idx = np.flatnonzero(cand)
        if mode == "epochs":
            t_next = t + epoch_len
        else:
            later = arrivals[arrivals > t + tol]
            t_next = float(later[0]) if len(later) else np.inf
        if len(idx):
            in_sub = np.zeros(a.n_stages, dtype=bool)
            in_sub[a.task_stage[idx]] = True
            # a predecessor stage's tasks that are already committed (complete, or running
            # non-preemptively) hold back the successors until they end
            committed = np.full(a.n_stages, -np.inf)
            np.maximum.at(committed, a.task_stage[done], comp[done])
            extra = np.zeros(len(idx))
            for q, tk in enumerate(idx):
                for p in a.stage_preds[a.task_stage[tk]]:
                    extra[q] = max(extra[q], committed[p] - t)
            sub = a.subset(idx, frac[idx], t0=t, extra_release=extra)
            bg = [(int(seg[1][j]), float(a.size[seg[0][j]]), seg[3][j] - t)
                  for j in range(len(seg[0])) if seg[3][j] > t + tol] if not preemptive else []
            s = plan(sub, bg)
            replans += 1
            lp_total += float(s.info.get("lp_seconds", 0.0))
            orig = sub.orig_task
            if mode == "arrivals":
                # also re-plan when a stage with successors outside the plan completes
                sc = s.stage_completion + t
                for sq in range(sub.n_stages):
                    so = int(sub.orig_stage[sq])
                    if any(not in_sub[q] for q in a.stage_succs[so]):
                        if sc[sq] > t + tol:
                            t_next = min(t_next, float(sc[sq]))
            tc = s.task_completion + t
            for j in range(len(s.task)):
                tk = int(orig[s.task[j]])
                i = int(s.machine[j])
                st, en = float(s.start[j] + t), float(s.end[j] + t)
                if st >= t_next - tol:
                    continue
                if preemptive:
                    en = min(en, t_next)
                seg[0].append(tk)
                seg[1].append(i)
                seg[2].append(st)
                seg[3].append(en)
                if preemptive:
                    frac[tk] -= (en - st) / a.proc[tk, i]
            for q in range(sub.n_tasks):
                tk = int(orig[q])
                if preemptive:
                    if tc[q] <= t_next + tol:
                        done[tk], comp[tk], frac[tk] = True, tc[q], 0.0
                    else:
                        frac[tk] = max(frac[tk], 1e-12)
                else:
                    started = s.task_start[q] + t < t_next - tol
                    if started:
                        done[tk], comp[tk] = True, tc[q]
        else:
            # nothing to plan now: jump to the next moment something can be planned
            nxt = [float(x) for x in arrivals if x > t + tol]
            if mode == "arrivals":
                pend = sdone[np.isfinite(sdone) & (sdone > t + tol)]
                nxt += [float(pend.min())] if len(pend) else []
            if not nxt:
                raise RuntimeError("unfinished tasks but nothing can ever be planned")
            target = min(nxt)
            if mode == "arrivals":
                t_next = target
            else:
                while t_next < target - tol:
                    t = t_next
                    k += 1
                    epoch_len *= growth
                    t_next = t + epoch_len
        if mode == "epochs":
            k += 1
            epoch_len *= growth
        if not np.isfinite(t_next):
            if not done.all():
                raise RuntimeError("online re-planning left tasks unfinished")
            break
        t = t_next
    info = {"replans": replans, "lp_seconds": lp_total, "tau0": tau0, "growth": growth,
            "mode": mode}
    return ComputeSchedule.from_segments(a, tuple(np.array(x) for x in seg), name, info)
