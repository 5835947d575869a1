"""JSQ-MW: join-the-shortest-queue routing + MaxWeight service, with greedy packing.

Non-preemptive; job weights are ignored (the original algorithm has none).

* **Queues.** Every machine ``i`` has a local queue ``Q_i``; one remote queue ``Q_R`` is
  shared by all machines.
* **Routing (JSQ)**, when a task arrives (is released and its stage is ready): it joins the
  shortest queue among the local queues of its local machines (those where it runs at its
  shortest time) and the remote queue (if it may run elsewhere). Queue lengths are
  rate-weighted workloads, i.e. expected waiting times: ``len(Q_i) = sum a p / c_i`` over
  the queue at local processing times, ``len(Q_R) = sum a p_remote / sum_i c_i`` with
  ``p_remote`` the task's mean time on its non-local machines; the task's own load is
  added before comparing.
* **Service (MaxWeight) with greedy packing.** At every event each machine with free
  capacity compares ``|Q_i| x 1`` (local rate) with ``|Q_R(i)| x r_i`` where ``Q_R(i)`` are
  the remote-queue tasks that may run on ``i`` and ``r_i`` their mean speed on ``i``
  relative to their local speed (``1/alpha``); it serves the heavier queue first, starting
  its tasks in FIFO order whenever they fit (skipping those that do not), then the other.

It decides at every event with what has arrived, so it is online by nature.

References
----------
Wang, Zhu, Ying, Tan, Zhang, "Maptask scheduling in MapReduce with data locality:
throughput and heavy-traffic optimality", IEEE/ACM ToN 2016; Shafiee & Ghaderi, Section 7;
algorithms.md 2.8 (weights reconstructed).
"""
from __future__ import annotations

import numpy as np

from controller.compute.model import ComputeArrays, as_arrays
from controller.compute.packing import Packer
from controller.compute.schedule import ComputeSchedule

NAME = "jsq-mw"
__all__ = ["schedule", "plan"]


def plan(a: ComputeArrays, background=()) -> ComputeSchedule:
    """JSQ-MW with greedy packing on ``a``; see the module docstring."""
    M = a.n_machines
    size, cap = a.size, a.capacity
    tol = 1e-9 * max(1.0, float(cap.max()))
    remote_ok = a.allowed & ~a.local
    prem = np.where(remote_ok.any(axis=1),
                    np.where(remote_ok, a.proc, 0.0).sum(axis=1) /
                    np.maximum(remote_ok.sum(axis=1), 1), np.inf)
    total_cap = float(cap.sum())
    local_q: list[list[int]] = [[] for _ in range(M)]
    remote_q: list[int] = []
    qlen = np.zeros(M)
    rlen = [0.0]

    def route(t: int):
        best, where = np.inf, None
        for i in np.flatnonzero(a.local[t]):
            v = qlen[i] + size[t] * a.pmin[t] / cap[i]
            if v < best - 1e-12:
                best, where = v, int(i)
        if np.isfinite(prem[t]):
            v = rlen[0] + size[t] * prem[t] / total_cap
            if v < best - 1e-12:
                best, where = v, -1
        if where == -1:
            remote_q.append(t)
            rlen[0] += size[t] * prem[t] / total_cap
        else:
            local_q[where].append(t)
            qlen[where] += size[t] * a.pmin[t] / cap[where]

    def serve(pk: Packer, i: int, queue: list[int], out: list[int], remote: bool):
        kept = []
        for t in queue:
            if remote and not a.allowed[t, i]:
                kept.append(t)
                continue
            if size[t] <= pk.free[i] + tol and pk.task_running[t] < 0:
                k = pk.item_on(t, i)
                out.append(k)
                pk.free[i] -= size[t]          # tentative, restored below
                if remote:
                    rlen[0] -= size[t] * prem[t] / total_cap
                else:
                    qlen[i] -= size[t] * a.pmin[t] / cap[i]
            else:
                kept.append(t)
        queue[:] = kept

    def rule(pk: Packer):
        new = pk.new_tasks
        for t in new[np.lexsort((new, a.release[new]))] if len(new) else ():
            route(int(t))
        out: list[int] = []
        free_before = pk.free.copy()
        for i in range(M):
            if pk.free[i] <= tol:
                continue
            rem = [t for t in remote_q if a.allowed[t, i]]
            w_local = float(len(local_q[i]))
            w_remote = float(len(rem)) * (float(np.mean(a.pmin[rem] / a.proc[rem, i]))
                                          if rem else 0.0)
            if w_local >= w_remote:
                serve(pk, i, local_q[i], out, False)
                serve(pk, i, remote_q, out, True)
            else:
                serve(pk, i, remote_q, out, True)
                serve(pk, i, local_q[i], out, False)
        pk.free[:] = free_before                # the engine books the starts itself
        return out

    pk = Packer(a, background).run(rule, preemptive=False)
    return ComputeSchedule.from_segments(a, pk.segments(), NAME)


def schedule(instance, *, online: bool = True) -> ComputeSchedule:
    """Schedule ``instance`` with JSQ-MW (``online`` has no effect: always online)."""
    return plan(as_arrays(instance))
