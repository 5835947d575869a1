"""Tetris with weights: packing-score greedy, preemptive (Tetris-P) or not (Tetris-NP).

At time 0 and at every event (a task completes or arrives) Tetris scores every pair
(waiting task ``t`` of job ``j``, machine ``i`` of its placement set that has room)::

    score = a_t (c_i - h_i(t)) + eps_T w_j / R_j(t)

where ``h_i(t)`` is the machine's current height, ``R_j(t)`` the remaining volume of the
job (``sum a p`` over its unfinished tasks, at their shortest processing time and
remaining fraction): the first term is Tetris's alignment (best fit: prefer large tasks
that fit), the second its shortest-remaining-work term, weighted by the job weight as the
paper generalises it. ``eps_T`` balances the two terms: the mean of the first over the mean
of the second over the candidate pairs of the event. A pair on a machine that is not one
of the task's local (fastest) machines has its score multiplied by the remote penalty
(0.9, Tetris's 10 %). The best pair is started, heights are updated, and so on while
anything fits.

* **Tetris-NP** never preempts: running tasks keep running, waiting tasks are scored.
* **Tetris-P** re-plans from scratch at every event: every unfinished available task is a
  candidate again, and whatever is not chosen is preempted. A task that has run stays on
  its machine (no migration).

It decides at every event with what has arrived, so it is online by nature.

References
----------
Grandl et al., "Multi-resource packing for cluster schedulers", SIGCOMM 2014; Shafiee &
Ghaderi, Section 7 (baselines); algorithms.md 2.8 (score and penalty reconstructed).
"""
from __future__ import annotations

import numpy as np

from controller.compute.model import ComputeArrays, as_arrays
from controller.compute.packing import Packer
from controller.compute.schedule import ComputeSchedule

__all__ = ["schedule", "plan", "tetris_p", "tetris_np"]


def plan(a: ComputeArrays, background=(), *, preemptive: bool,
         remote_penalty: float = 0.9) -> ComputeSchedule:
    """Tetris on ``a``; see the module docstring."""
    size, cap, w = a.size, a.capacity, a.job_weight
    vol_full = a.size * a.pmin
    tol = 1e-9 * max(1.0, float(cap.max()))
    bg_until = sorted(background, key=lambda b: b[2])

    def rule(pk: Packer):
        if preemptive:
            free = cap.astype(np.float64).copy()
            for i, s, u in bg_until:
                if u > pk.time + pk.tol:
                    free[int(i)] -= s
            cand = np.flatnonzero(pk.avail)
        else:
            free = pk.free.copy()
            cand = np.flatnonzero(pk.avail & (pk.task_running < 0))
        if not len(cand):
            return []
        R = np.zeros(a.n_jobs)
        unfinished = ~pk.done
        np.add.at(R, a.task_job[unfinished], (vol_full * pk.frac_left)[unfinished])
        pt, pm = [], []
        for t in cand:
            pin = pk.pinned_machine(int(t))
            if pin >= 0:
                pt.append(t)
                pm.append(pin)
            else:
                ms = np.flatnonzero(a.allowed[t])
                pt.extend([t] * len(ms))
                pm.extend(ms.tolist())
        pt = np.array(pt, dtype=np.int64)
        pm = np.array(pm, dtype=np.int64)
        term2 = w[a.task_job[pt]] / np.maximum(R[a.task_job[pt]], 1e-300)
        term1 = size[pt] * free[pm]
        eps_t = term1.mean() / term2.mean() if term2.mean() > 0 else 0.0
        pen = np.where(a.local[pt, pm], 1.0, remote_penalty)
        alive = np.ones(len(pt), dtype=bool)
        out = []
        while True:
            fits = alive & (size[pt] <= free[pm] + tol)
            if not fits.any():
                break
            score = np.where(fits, (size[pt] * free[pm] + eps_t * term2) * pen, -np.inf)
            k = int(np.argmax(score))
            t, i = int(pt[k]), int(pm[k])
            out.append(pk.item_on(t, i))
            free[i] -= size[t]
            alive &= pt != t
        return out

    pk = Packer(a, background).run(rule, preemptive=preemptive)
    return ComputeSchedule.from_segments(a, pk.segments(),
                                         "tetris-p" if preemptive else "tetris-np")


def schedule(instance, *, preemptive: bool, remote_penalty: float = 0.9,
             online: bool = True) -> ComputeSchedule:
    """Schedule ``instance`` with weighted Tetris (``online`` has no effect)."""
    return plan(as_arrays(instance), preemptive=preemptive, remote_penalty=remote_penalty)


def tetris_p(instance, *, remote_penalty: float = 0.9, online: bool = True) -> ComputeSchedule:
    """Tetris-P: preemptive (no migration), re-planned at every event."""
    return schedule(instance, preemptive=True, remote_penalty=remote_penalty)


def tetris_np(instance, *, remote_penalty: float = 0.9, online: bool = True) -> ComputeSchedule:
    """Tetris-NP: non-preemptive."""
    return schedule(instance, preemptive=False, remote_penalty=remote_penalty)
