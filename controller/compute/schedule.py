"""Explicit compute schedules: task segments and the completion times they imply.

Every compute policy returns a :class:`ComputeSchedule`: a list of *segments*
``(task, machine, start, end)`` (seconds), each meaning "the task runs on that machine,
holding its size of the machine's capacity, from ``start`` to ``end``". A task that has run
``s`` seconds on machine ``i`` has done ``s / p^i`` of its work. A preempted task has several
segments; a migrated task has segments on several machines; a non-preemptive task has one.

From the segments follow the completion time of every task (its last segment end), stage
(its last task), job (its last stage), and the objectives: the weighted completion time
``sum_j w_j C_j`` (offline) and the weighted delay ``sum_j w_j (C_j - arrival_j)``
(online). ``info`` carries what the policy wants to report (the LP value it solved, the
slow-motion parameter, solve times).

Schedules are index-based over a :class:`~controller.compute.model.ComputeArrays`;
:meth:`ComputeSchedule.segments_as_dicts` gives the id-based form
``{"task", "machine", "start", "end"}`` that engines and JSON output use.

Also here: :func:`left_shift`, which moves every task of a non-preemptive schedule to its
earliest feasible start (in order of the old starts; no task ends later), and
:func:`merge_segments`, which joins back-to-back segments of a task on one machine.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from controller.compute.model import ComputeArrays

__all__ = ["ComputeSchedule", "merge_segments", "left_shift", "concat_segments"]


def merge_segments(task, machine, start, end, tol: float = 1e-9):
    """Sort segments by (task, start) and join back-to-back pieces on the same machine.

    Returns four arrays. Zero-length segments are dropped.
    """
    task = np.asarray(task, dtype=np.int64)
    machine = np.asarray(machine, dtype=np.int64)
    start = np.asarray(start, dtype=np.float64)
    end = np.asarray(end, dtype=np.float64)
    keep = end - start > tol
    task, machine, start, end = task[keep], machine[keep], start[keep], end[keep]
    order = np.lexsort((start, task))
    task, machine, start, end = task[order], machine[order], start[order], end[order]
    if len(task) < 2:
        return task, machine, start, end
    out_t, out_m, out_s, out_e = [int(task[0])], [int(machine[0])], [start[0]], [end[0]]
    for k in range(1, len(task)):
        if (task[k] == out_t[-1] and machine[k] == out_m[-1]
                and abs(start[k] - out_e[-1]) <= tol * max(1.0, abs(start[k]))):
            out_e[-1] = max(out_e[-1], end[k])
        else:
            out_t.append(int(task[k]))
            out_m.append(int(machine[k]))
            out_s.append(start[k])
            out_e.append(end[k])
    return (np.array(out_t, dtype=np.int64), np.array(out_m, dtype=np.int64),
            np.array(out_s), np.array(out_e))


def concat_segments(parts):
    """Concatenate ``(task, machine, start, end)`` tuples of arrays."""
    parts = [p for p in parts if len(p[0])]
    if not parts:
        return (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0), np.zeros(0))
    return tuple(np.concatenate([p[k] for p in parts]) for k in range(4))


@dataclass(eq=False)
class ComputeSchedule:
    """Segments of a schedule over ``arrays`` and the completion times they imply.

    Attributes
    ----------
    arrays : ComputeArrays
        The instance (task, machine, stage and job indices refer to it).
    task, machine : int arrays, one entry per segment
    start, end : float arrays, seconds
    policy : str
        Name of the policy that produced it.
    info : dict
        Extra results of the policy (``lp`` value, ``lam``, ``lp_seconds``, ...).
    """

    arrays: ComputeArrays
    task: np.ndarray
    machine: np.ndarray
    start: np.ndarray
    end: np.ndarray
    policy: str = ""
    info: dict = field(default_factory=dict)

    @classmethod
    def from_segments(cls, arrays: ComputeArrays, segments, policy: str = "",
                      info: dict | None = None, merge: bool = True) -> "ComputeSchedule":
        t, m, s, e = segments
        if merge:
            t, m, s, e = merge_segments(t, m, s, e)
        return cls(arrays, np.asarray(t, np.int64), np.asarray(m, np.int64),
                   np.asarray(s, float), np.asarray(e, float), policy, dict(info or {}))

    # ------------------------------------------------------------------ completions
    @cached_property
    def task_completion(self) -> np.ndarray:
        """Completion time of every task (its last segment end); nan if it never ran."""
        c = np.full(self.arrays.n_tasks, -np.inf)
        np.maximum.at(c, self.task, self.end)
        c[~np.isfinite(c)] = np.nan
        return c

    @cached_property
    def task_start(self) -> np.ndarray:
        s = np.full(self.arrays.n_tasks, np.inf)
        np.minimum.at(s, self.task, self.start)
        s[~np.isfinite(s)] = np.nan
        return s

    @cached_property
    def stage_completion(self) -> np.ndarray:
        a = self.arrays
        return np.array([self.task_completion[ts].max() for ts in a.stage_tasks])

    @cached_property
    def job_completion(self) -> np.ndarray:
        a = self.arrays
        return np.array([self.stage_completion[ss].max() for ss in a.job_stages])

    @property
    def weighted_completion(self) -> float:
        """``sum_j w_j C_j`` over jobs (seconds x weight)."""
        return float(np.dot(self.arrays.job_weight, self.job_completion))

    @property
    def weighted_delay(self) -> float:
        """``sum_j w_j (C_j - arrival_j)``: the online metric."""
        a = self.arrays
        return float(np.dot(a.job_weight, self.job_completion - a.job_release))

    @property
    def makespan(self) -> float:
        return float(self.end.max()) if len(self.end) else 0.0

    @cached_property
    def preemptions(self) -> np.ndarray:
        """Per task: number of segments minus one."""
        n = np.bincount(self.task, minlength=self.arrays.n_tasks)
        return np.maximum(n - 1, 0)

    @cached_property
    def work_done(self) -> np.ndarray:
        """Per task: sum over segments of length / processing time (1 when complete)."""
        w = np.zeros(self.arrays.n_tasks)
        np.add.at(w, self.task, (self.end - self.start) / self.arrays.proc[self.task,
                                                                           self.machine])
        return w

    # ------------------------------------------------------------------ output
    def segments_as_dicts(self) -> list[dict]:
        """``[{"task", "machine", "start", "end"}]`` with ids, sorted by start."""
        a = self.arrays
        order = np.lexsort((self.task, self.start))
        return [{"task": a.task_ids[self.task[k]], "machine": a.machine_ids[self.machine[k]],
                 "start": float(self.start[k]), "end": float(self.end[k])} for k in order]

    def summary(self) -> dict:
        return {"policy": self.policy, "weighted_completion": self.weighted_completion,
                "weighted_delay": self.weighted_delay, "makespan": self.makespan,
                "segments": int(len(self.task)),
                "preemptions": int(self.preemptions.sum()), **{
                    k: v for k, v in self.info.items() if isinstance(v, (int, float, str))}}


def left_shift(arrays: ComputeArrays, segments, background=(), tol: float = 1e-9):
    """Start every task of a non-preemptive schedule as early as it can.

    Tasks are taken in order of their old start; each moves to the earliest time, not before
    its release nor before its predecessor stages complete (in the new schedule), at which
    its machine has room for its size for its whole duration, given the tasks already
    placed and the ``background`` occupancy ``(machine, size, until)``. No task ends later
    than before: at its old start, the tasks placed before it occupy at most what they
    occupied in the old schedule.

    Parameters
    ----------
    arrays : ComputeArrays
    segments : tuple of arrays (task, machine, start, end), one segment per task
    background : iterable of (machine, size, until)

    Returns
    -------
    tuple of arrays (task, machine, start, end)
    """
    task, mach, start, end = (np.asarray(x) for x in segments)
    order = np.argsort(start, kind="stable")
    M = arrays.n_machines
    placed = [[] for _ in range(M)]  # per machine: list of (start, end, size)
    for i, size, until in background:
        placed[int(i)].append((0.0, float(until), float(size)))
    stage_left = np.array([len(t) for t in arrays.stage_tasks])
    stage_done = np.zeros(arrays.n_stages)
    # stage completion in the new schedule is only known once all its tasks are placed;
    # since tasks are placed in old-start order and a successor started after all its
    # predecessors ended (old schedule), the predecessors are placed first.
    new_s = np.empty(len(task))
    new_e = np.empty(len(task))
    for k in order:
        t, i = int(task[k]), int(mach[k])
        dur = float(end[k] - start[k])
        st = arrays.task_stage[t]
        ready = float(arrays.release[t])
        for p in arrays.stage_preds[st]:
            ready = max(ready, stage_done[p])
        s = _earliest_fit(placed[i], arrays.capacity[i], float(arrays.size[t]), ready, dur,
                          float(start[k]), tol)
        new_s[k], new_e[k] = s, s + dur
        placed[i].append((s, s + dur, float(arrays.size[t])))
        stage_left[st] -= 1
        stage_done[st] = max(stage_done[st], s + dur)
    return task, mach, new_s, new_e


def _earliest_fit(placed, cap, size, ready, dur, latest, tol):
    """Earliest start >= ready (<= latest, which is known to fit) with room for dur."""
    cands = sorted({ready} | {e for _, e, _ in placed if ready < e < latest})
    slack = tol * max(1.0, cap)
    for s in cands + [latest]:
        if s > latest:
            break
        e = s + dur
        # peak usage over [s, e): check at s and at every start inside (s, e)
        pts = [s] + [ps for ps, _, _ in placed if s < ps < e]
        ok = True
        for x in pts:
            use = sum(sz for ps, pe, sz in placed if ps <= x + tol and pe > x + tol)
            if use + size > cap + slack:
                ok = False
                break
        if ok:
            return s
    return latest
