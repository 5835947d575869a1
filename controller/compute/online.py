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

import dataclasses
from typing import Callable

import numpy as np

from controller.compute.model import ComputeArrays
from controller.compute.schedule import ComputeSchedule

__all__ = ["replan", "Replanner", "epoch_boundaries", "default_tau0"]


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


class Replanner:
    """The state of online re-planning: committed work, and the plan being followed.

    An outer loop alternates :meth:`plan_at` (run the offline policy on the residual
    instance of some tasks at time ``t``) and :meth:`commit` (make the part of the current
    plan before ``t_next`` final). :func:`replan` drives it at epochs or arrivals; the
    joint compute-and-network simulator (``emulate.sim.jobsim``) drives it at the events of
    both sides.

    What a commit keeps:

    * preemptive policies: the plan's segments up to ``t_next`` (cut there); a task is
      complete if the plan completes it by ``t_next``, otherwise its remaining fraction is
      re-planned next time;
    * non-preemptive policies: every task the plan starts before ``t_next`` is committed
      whole (it runs to its end, possibly past ``t_next``, and later plans see it as
      *background* occupancy of its machine).

    Parameters
    ----------
    a : ComputeArrays
        The full instance (``a.orig_task`` must be the identity).
    plan : callable ``(sub: ComputeArrays, background: list) -> ComputeSchedule``
    preemptive : bool
    keep_machine : bool
        Preemptive policies without migration: a task that has run on a machine is
        restricted to that machine in later plans (:meth:`pin`).

    Attributes
    ----------
    frac : float array (n,), fraction of each task's work not yet committed
    done : bool array (n,), complete, or committed to complete (non-preemptive)
    comp : float array (n,), completion time of the tasks in ``done``
    seg : four lists (task, machine, start, end), the committed segments
    current : (t, sub, schedule) or None, the plan being followed (``sub`` time 0 = ``t``)
    replans : int, plans computed by :meth:`plan_at` with ``follow=True``
    """

    def __init__(self, a: ComputeArrays, plan: Callable[[ComputeArrays, list], ComputeSchedule],
                 *, preemptive: bool, keep_machine: bool = False):
        n = a.n_tasks
        self.arrays = a            # the instance as given (schedules refer to it)
        self.a = a                 # the planning instance (pins applied)
        self.plan = plan
        self.preemptive = preemptive
        self.keep_machine = keep_machine and preemptive
        self.tol = 1e-9 * max(1.0, float(a.proc[a.allowed].max()) if n else 1.0)
        self.frac = np.ones(n)
        self.done = np.zeros(n, dtype=bool)
        self.comp = np.full(n, np.nan)
        self.seg = [[], [], [], []]
        self.current = None
        self.replans = 0
        self.lp_seconds = 0.0
        self.pinned = np.full(n, -1, dtype=np.int64)

    # ------------------------------------------------------------------ state
    def stage_done_at(self) -> np.ndarray:
        """Per stage: completion time if all its tasks are complete/committed, else inf."""
        a = self.a
        out = np.full(a.n_stages, np.inf)
        for s, ts in enumerate(a.stage_tasks):
            if self.done[ts].all():
                out[s] = self.comp[ts].max()
        return out

    def background(self, t: float) -> list:
        """``(machine, size, until - t)`` of committed segments still running at ``t``
        (non-preemptive policies; empty for preemptive ones)."""
        if self.preemptive:
            return []
        seg, a, tol = self.seg, self.a, self.tol
        return [(int(seg[1][j]), float(a.size[seg[0][j]]), seg[3][j] - t)
                for j in range(len(seg[0])) if seg[3][j] > t + tol]

    def projected_completion(self) -> np.ndarray:
        """Per task: its committed completion, else its completion in the current plan,
        else inf (not in the plan)."""
        out = np.where(self.done, self.comp, np.inf)
        if self.current is not None:
            t, sub, s = self.current
            orig = sub.orig_task
            keep = ~self.done[orig]
            out[orig[keep]] = s.task_completion[keep] + t
        return out

    def pin(self, task: int, machine: int) -> None:
        """Restrict ``task`` to ``machine`` in every later plan (it must be allowed there)."""
        task, machine = int(task), int(machine)
        if self.pinned[task] == machine:
            return
        if not np.isfinite(self.a.proc[task, machine]):
            raise ValueError(f"task {self.a.task_ids[task]!r} cannot run on machine "
                             f"{self.a.machine_ids[machine]!r}")
        proc = self.a.proc.copy()
        p = proc[task, machine]
        proc[task, :] = np.inf
        proc[task, machine] = p
        fastest = self.a.fastest.copy()
        fastest[task] = machine
        self.a = dataclasses.replace(self.a, proc=proc, fastest=fastest)
        self.pinned[task] = machine

    # ------------------------------------------------------------------ steps
    def residual(self, t: float, tasks) -> ComputeArrays:
        """The residual instance of ``tasks`` at time ``t`` (time 0 = ``t``).

        Remaining fractions scale the processing times; a task whose predecessor stage is
        committed but still running is released when that stage ends.
        """
        a, done, comp = self.a, self.done, self.comp
        idx = np.asarray(tasks, dtype=np.int64)
        committed = np.full(a.n_stages, -np.inf)
        np.maximum.at(committed, a.task_stage[done], comp[done])
        extra = np.zeros(len(idx))
        for q, tk in enumerate(idx):
            for p in a.stage_preds[a.task_stage[tk]]:
                extra[q] = max(extra[q], committed[p] - t)
        return a.subset(idx, self.frac[idx], t0=t, extra_release=extra)

    def plan_at(self, t: float, tasks, *, follow: bool = True) -> ComputeSchedule:
        """Run the policy on the residual instance of ``tasks`` at ``t``.

        With ``follow`` the plan becomes the current one (committed by :meth:`commit`);
        without, it is only returned (a look-ahead, e.g. where a task would be placed).
        The schedule's ``arrays`` is the residual instance (``orig_task`` maps back).
        """
        sub = self.residual(t, tasks)
        s = self.plan(sub, self.background(t))
        if follow:
            self.replans += 1
            self.lp_seconds += float(s.info.get("lp_seconds", 0.0))
            self.current = (t, sub, s)
        return s

    def commit(self, t_next: float) -> None:
        """Make the current plan final up to ``t_next`` (see the class docstring)."""
        if self.current is None:
            return
        t, sub, s = self.current
        self.current = None
        a, tol, seg, frac, done, comp = self.a, self.tol, self.seg, self.frac, self.done, \
            self.comp
        preemptive = self.preemptive
        orig = sub.orig_task
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
                if self.keep_machine:
                    self.pin(tk, i)
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

    def schedule(self, name: str = "", info: dict | None = None) -> ComputeSchedule:
        """The committed segments as a schedule over the instance as given."""
        return ComputeSchedule.from_segments(self.arrays, tuple(np.array(x) for x in self.seg),
                                             name, info)


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
    rp = Replanner(a, plan, preemptive=preemptive)
    tol = rp.tol
    done = rp.done
    tau0 = default_tau0(a) if tau0 is None else float(tau0)
    if mode == "epochs" and not tau0 > 0:
        raise ValueError(f"tau0 must be > 0, got {tau0!r}")
    arrivals = np.unique(a.job_release)
    job_known_at = a.job_release[a.task_job]
    stage_sizes = np.array([len(t) for t in a.stage_tasks])
    t = 0.0
    k = 0                                   # epoch index: current boundary b_k = t
    epoch_len = tau0
    rounds = 0

    while not done.all():
        rounds += 1
        if rounds > max_rounds:
            raise RuntimeError("online re-planning does not progress")
        sdone = rp.stage_done_at()
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
            s = rp.plan_at(t, idx)
            sub = rp.current[1]
            if mode == "arrivals":
                # also re-plan when a stage with successors outside the plan completes
                sc = s.stage_completion + t
                for sq in range(sub.n_stages):
                    so = int(sub.orig_stage[sq])
                    if any(not in_sub[q] for q in a.stage_succs[so]):
                        if sc[sq] > t + tol:
                            t_next = min(t_next, float(sc[sq]))
            rp.commit(t_next)
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
    info = {"replans": rp.replans, "lp_seconds": rp.lp_seconds, "tau0": tau0,
            "growth": growth, "mode": mode}
    return rp.schedule(name, info)
