"""Greedy packing: the event loop every compute policy schedules with.

The paper's algorithms and baselines all share one mechanism: at time 0 and at every event
(a task piece completes, a task is released, a stage becomes ready because its predecessors
completed, a background task leaves), a *rule* looks at the machines' free capacity and the
waiting work and decides what runs until the next event. They differ only in the rule
(CoflowSim's design: one engine, one ordering hook per heuristic).

The engine works on *items*: an item is a piece of work of one task on one machine, with a
duration in seconds on that machine (``work``) and the task's size. A SynchPack-1 item is a
task fraction ``x^i_kjl p^i_kj``; for the other policies an item is "the rest of the task on
this machine" and is created when the rule first places the task there
(:meth:`Packer.item_on`). Running an item for ``dt`` seconds on machine ``i`` does
``dt / p^i`` of its task's work; the task completes when its work reaches 1.

The engine enforces, and raises :class:`PackingError` if a rule breaks them:

* packing: the sizes of the running items (plus background) never exceed the capacity;
* placement: an item runs only on a machine of its task's placement set;
* one piece per task at a time (never two machines, never rate above 1);
* releases and stage precedence: a task runs only once released and once every
  predecessor stage of its stage is complete;
* non-preemptive mode: a started item runs to its end (the rule only adds items).

Rules are callables ``rule(packer) -> iterable of item ids``: in preemptive mode the set of
items to run until the next event (every other running item is preempted), in
non-preemptive mode the items to start now. ``packer.dirty`` holds the machines where
something changed since the last call (capacity freed, tasks became available), so rules
whose machines act independently need only revisit those.

:func:`list_schedule` is the list-packing rule of the paper (scan a priority list from the
top, start whatever fits), with the options SynchPack-1/2/3 need.

References
----------
Shafiee & Ghaderi, Sections 3.2 (greedy list packing of task fractions), 4.2 Substep 3.2
(greedy packing per machine-interval), 5.2 (per-machine list scheduling);
algorithms.md 2.5-2.7.
"""
from __future__ import annotations

from typing import Callable, Iterable

import numpy as np

from controller.compute.model import ComputeArrays

__all__ = ["Packer", "PackingError", "list_schedule"]


class PackingError(RuntimeError):
    """A rule asked for something infeasible, or no remaining task can ever run."""


class Packer:
    """Event-driven state of machines and tasks while a rule packs them.

    Parameters
    ----------
    arrays : ComputeArrays
    background : iterable of (machine, size, until)
        Capacity already held on a machine from time 0 until ``until`` (tasks still running
        from an earlier plan, in the online re-planning of non-preemptive policies).

    Attributes a rule may read
    --------------------------
    time : float, seconds
    free : float array (M,), capacity not held by running items or background
    avail : bool array (n,), task released, stage ready and not complete
    done : bool array (n,)
    frac_left : float array (n,), fraction of the task's work still to do
    running : dict item -> start of its current segment
    task_running : int array (n,), running item of each task or -1
    dirty : set of machines changed since the rule was last called
    new_tasks : int array, tasks that became available at this event
    item_task, item_machine, item_left, item_end : lists, per item (``item_end``: time
        the item finished, nan before)
    """

    def __init__(self, arrays: ComputeArrays, background: Iterable = ()):
        a = arrays
        self.a = a
        n, M, S = a.n_tasks, a.n_machines, a.n_stages
        finite = a.proc[np.isfinite(a.proc)]
        scale = max(1.0, float(finite.max()) if finite.size else 1.0,
                    float(a.release.max()) if n else 1.0)
        self.tol = 1e-9 * scale
        self.time = 0.0
        self.frac_left = np.ones(n)
        self.done = np.zeros(n, dtype=bool)
        self.completion = np.full(n, np.nan)
        self.avail = np.zeros(n, dtype=bool)
        self.stage_left = np.array([len(t) for t in a.stage_tasks], dtype=np.int64)
        self.stage_completion = np.full(S, np.nan)
        self.preds_left = np.array([len(p) for p in a.stage_preds], dtype=np.int64)
        self.stage_ready = self.preds_left == 0
        self.item_task: list[int] = []
        self.item_machine: list[int] = []
        self.item_left: list[float] = []
        self.item_work: list[float] = []
        self.item_end: list[float] = []
        self.task_items: list[list[int]] = [[] for _ in range(n)]
        self.running: dict[int, float] = {}
        self.task_running = np.full(n, -1, dtype=np.int64)
        self.free = a.capacity.astype(np.float64).copy()
        self.bg = sorted((float(u), int(i), float(s)) for i, s, u in background if u > 0)
        for u, i, s in self.bg:
            self.free[i] -= s
        if np.any(self.free < -self.tol):
            raise PackingError("background occupancy exceeds a machine's capacity")
        self.bg_pos = 0
        self.seg_t: list[int] = []
        self.seg_m: list[int] = []
        self.seg_s: list[float] = []
        self.seg_e: list[float] = []
        self.dirty: set[int] = set(range(M))
        self.new_tasks = np.zeros(0, dtype=np.int64)
        self.events = 0
        self._refresh()

    # ------------------------------------------------------------------ items
    def add_item(self, task: int, machine: int, work: float | None = None) -> int:
        """A new item of ``task`` on ``machine`` (default work: the rest of the task)."""
        p = self.a.proc[task, machine]
        if not np.isfinite(p):
            raise PackingError(f"task {self.a.task_ids[task]!r} cannot run on machine "
                               f"{self.a.machine_ids[machine]!r} (not in its placement set)")
        if work is None:
            work = self.frac_left[task] * p
        k = len(self.item_task)
        self.item_task.append(int(task))
        self.item_machine.append(int(machine))
        self.item_left.append(float(work))
        self.item_work.append(float(work))
        self.item_end.append(np.nan)
        self.task_items[task].append(k)
        return k

    def item_on(self, task: int, machine: int) -> int:
        """The task's unfinished item on ``machine``, created (rest of the task) if none."""
        for k in self.task_items[task]:
            if self.item_machine[k] == machine and self.item_left[k] > self.tol:
                return k
        return self.add_item(task, machine)

    def started(self, task: int) -> bool:
        """True once the task has run (some of its work is done)."""
        return self.frac_left[task] < 1.0 - 1e-12 or self.task_running[task] >= 0

    def pinned_machine(self, task: int) -> int:
        """Machine the task has run on, or -1 (for policies without migration)."""
        for k in self.task_items[task]:
            if self.item_left[k] < self.item_work[k] or k in self.running:
                return self.item_machine[k]
        return -1

    # ------------------------------------------------------------------ loop
    def run(self, rule: Callable, preemptive: bool, max_events: int | None = None):
        """Call ``rule`` at every event until every task is complete."""
        a = self.a
        limit = max_events or 50 * (a.n_tasks + len(self.item_task) + 10) ** 2
        while not self.done.all():
            chosen = rule(self)
            self._apply(chosen, preemptive)
            self.dirty = set()
            self.new_tasks = np.zeros(0, dtype=np.int64)
            t_next = np.inf
            if self.running:
                t_next = self.time + min(self.item_left[k] for k in self.running)
            t_next = min(t_next, self._next_release())
            if self.bg_pos < len(self.bg):
                t_next = min(t_next, self.bg[self.bg_pos][0])
            wake = getattr(rule, "wakeup", None)
            if wake is not None and wake > self.time + self.tol:
                t_next = min(t_next, wake)
            if not np.isfinite(t_next):
                left = [a.task_ids[t] for t in np.flatnonzero(~self.done)[:5]]
                raise PackingError(f"no event left but tasks {left} are not complete "
                                   f"(the rule never starts them)")
            self._advance(max(t_next, self.time))
            self._refresh()
            self.events += 1
            if self.events > limit:
                raise PackingError("too many events: the rule does not make progress")
        return self

    def _apply(self, chosen, preemptive: bool):
        a = self.a
        chosen = list(dict.fromkeys(int(k) for k in chosen))
        if preemptive:
            keep = set(chosen)
            for k in [k for k in self.running if k not in keep]:
                self._stop(k)
        for k in chosen:
            if k in self.running:
                continue
            t, i = self.item_task[k], self.item_machine[k]
            if self.item_left[k] <= self.tol:
                raise PackingError(f"item {k} of task {a.task_ids[t]!r} is already finished")
            if not self.avail[t]:
                raise PackingError(f"task {a.task_ids[t]!r} is not available at "
                                   f"{self.time:g} s (release, precedence or done)")
            if self.task_running[t] >= 0:
                raise PackingError(f"task {a.task_ids[t]!r} would run twice at once")
            if a.size[t] > self.free[i] + self.tol * max(1.0, a.capacity[i]):
                raise PackingError(f"task {a.task_ids[t]!r} does not fit on machine "
                                   f"{a.machine_ids[i]!r} at {self.time:g} s")
            self.running[k] = self.time
            self.task_running[t] = k
            self.free[i] -= a.size[t]

    def _stop(self, k: int, at: float | None = None):
        t, i = self.item_task[k], self.item_machine[k]
        s = self.running.pop(k)
        e = self.time if at is None else at
        if e > s:
            self.seg_t.append(t)
            self.seg_m.append(i)
            self.seg_s.append(s)
            self.seg_e.append(e)
        self.task_running[t] = -1
        self.free[i] += self.a.size[t]
        self.dirty.add(i)

    def _next_release(self) -> float:
        a = self.a
        cand = ~self.avail & ~self.done & self.stage_ready[a.task_stage] & \
            (a.release > self.time + self.tol)
        return float(a.release[cand].min()) if cand.any() else np.inf

    def _advance(self, t_next: float):
        a = self.a
        dt = t_next - self.time
        finished_tasks = []
        for k in list(self.running):
            t, i = self.item_task[k], self.item_machine[k]
            self.item_left[k] -= dt
            self.frac_left[t] -= dt / a.proc[t, i]
            if self.item_left[k] <= self.tol:
                self.item_left[k] = 0.0
                self.item_end[k] = t_next
                self._stop(k, at=t_next)
                finished_tasks.append(t)
        self.time = t_next
        for t in finished_tasks:
            if self.frac_left[t] <= 1e-7 and not self.done[t]:
                self._complete(t)
        while self.bg_pos < len(self.bg) and self.bg[self.bg_pos][0] <= self.time + self.tol:
            _, i, s = self.bg[self.bg_pos]
            self.free[i] += s
            self.dirty.add(i)
            self.bg_pos += 1

    def _complete(self, t: int):
        a = self.a
        self.done[t] = True
        self.avail[t] = False
        self.frac_left[t] = 0.0
        self.completion[t] = self.time
        for k in self.task_items[t]:
            if k in self.running:
                self._stop(k)
            if self.item_left[k] > 0 or np.isnan(self.item_end[k]):
                self.item_end[k] = self.time
            self.item_left[k] = 0.0
        s = a.task_stage[t]
        self.stage_left[s] -= 1
        if self.stage_left[s] == 0:
            self.stage_completion[s] = self.time
            for q in a.stage_succs[s]:
                self.preds_left[q] -= 1
                if self.preds_left[q] == 0:
                    self.stage_ready[q] = True

    def _refresh(self):
        a = self.a
        new = ~self.avail & ~self.done & self.stage_ready[a.task_stage] & \
            (a.release <= self.time + self.tol)
        if new.any():
            idx = np.flatnonzero(new)
            self.avail[idx] = True
            self.new_tasks = idx
            self.dirty.update(np.flatnonzero(a.allowed[idx].any(axis=0)).tolist())

    # ------------------------------------------------------------------ output
    def segments(self):
        """(task, machine, start, end) arrays of every segment so far."""
        return (np.array(self.seg_t, dtype=np.int64), np.array(self.seg_m, dtype=np.int64),
                np.array(self.seg_s, dtype=np.float64), np.array(self.seg_e, dtype=np.float64))


def list_schedule(arrays: ComputeArrays, item_task, item_machine, item_work, priority, *,
                  preemptive: bool, one_per_task: bool = True, block=None,
                  background: Iterable = ()) -> Packer:
    """Greedy list packing of pre-made items; returns the finished :class:`Packer`.

    At every event the list is scanned from the top (lowest ``priority`` first) and every
    available item that fits on its machine is run (preemptive) or started (non-preemptive),
    skipping items whose task already has a piece running.

    Parameters
    ----------
    arrays : ComputeArrays
    item_task, item_machine : int sequences
    item_work : float sequence, seconds of processing on the item's machine
    priority : float sequence, position in the list (ties by item index)
    preemptive : bool
        Rescan and preempt at every event (SynchPack-1, SynchPack-3) or only add
        (SynchPack-2's per-block packing).
    one_per_task : bool
        Enforced anyway by the engine; with items of one task on several machines the
        scan must be global (machines are not independent), which this flag selects.
    block : int sequence, optional
        Block index per item (SynchPack-2): on each machine only items of the lowest block
        that still has an unfinished available item may start (block-sequential packing).
    background : iterable of (machine, size, until)
    """
    pk = Packer(arrays, background)
    n_items = len(item_task)
    for t, i, w in zip(item_task, item_machine, item_work):
        pk.add_item(int(t), int(i), float(w))
    order = np.lexsort((np.arange(n_items), np.asarray(priority, dtype=np.float64)))
    M = arrays.n_machines
    per_machine = [[] for _ in range(M)]
    for k in order:
        per_machine[pk.item_machine[k]].append(int(k))
    blk = None if block is None else np.asarray(block, dtype=np.int64)
    coupled = one_per_task and any(
        len({pk.item_machine[k] for k in items}) > 1 or len(items) > 1
        for items in pk.task_items)
    size = arrays.size
    cap = arrays.capacity
    tol = pk.tol
    cache: dict[int, list[int]] = {}

    def scan_machine(i, busy):
        """Items to run on machine i (preemptive) or to start (non-preemptive)."""
        items = per_machine[i]
        if preemptive:
            free = cap[i] - (sum(s for u, m, s in pk.bg[pk.bg_pos:] if m == i))
        else:
            free = pk.free[i]
        cur_block = None
        if blk is not None:
            for k in items:
                if pk.item_left[k] > tol and pk.avail[pk.item_task[k]]:
                    cur_block = blk[k]
                    break
        out = []
        for k in items:
            if pk.item_left[k] <= tol:
                continue
            t = pk.item_task[k]
            if not pk.avail[t]:
                continue
            if blk is not None and blk[k] != cur_block:
                continue
            if not preemptive and k in pk.running:
                continue
            if t in busy or (not preemptive and pk.task_running[t] >= 0):
                continue
            if size[t] <= free + tol * max(1.0, cap[i]):
                out.append(k)
                free -= size[t]
                busy.add(t)
        return out

    def rule(p: Packer):
        if coupled:
            # machines are coupled through one piece per task: one global pass in list order
            return _global_scan(set())
        if not preemptive:
            # running items stay; only machines where something changed can start more
            busy: set[int] = set()
            return [k for i in sorted(p.dirty) for k in scan_machine(i, busy)]
        # preemptive, machines independent: rescan the changed machines, keep the others
        for i in p.dirty:
            cache[i] = scan_machine(i, set())
        return [k for i in range(M) for k in cache.get(i, ())]

    def _global_scan(busy):
        if preemptive:
            free = cap.astype(np.float64).copy()
            for u, m, s in pk.bg[pk.bg_pos:]:
                free[m] -= s
        else:
            free = pk.free.copy()
            for t in np.flatnonzero(pk.task_running >= 0):
                busy.add(int(t))
        cur_block = {}
        if blk is not None:
            for i in range(M):
                for k in per_machine[i]:
                    if pk.item_left[k] > tol and pk.avail[pk.item_task[k]]:
                        cur_block[i] = blk[k]
                        break
        out = []
        for k in order:
            k = int(k)
            if pk.item_left[k] <= tol:
                continue
            t = pk.item_task[k]
            if not pk.avail[t] or t in busy:
                continue
            i = pk.item_machine[k]
            if blk is not None and blk[k] != cur_block.get(i):
                continue
            if size[t] <= free[i] + tol * max(1.0, cap[i]):
                out.append(k)
                free[i] -= size[t]
                busy.add(t)
        return out

    pk.run(rule, preemptive)
    return pk
