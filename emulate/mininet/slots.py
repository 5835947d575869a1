"""The compute capacity of one emulated host: tasks admitted, held and released.

An emulated machine has a capacity (one resource, e.g. memory units). The controller
sends the host's agent one *segment* of a task at a time: ``run`` (the task's demand and
how many wall seconds it runs: its processing time on this machine times the run's time
scale) and possibly ``stop`` (a preemptive policy interrupts it). :class:`Slots`

* **admits** a segment only when its demand fits in what the running segments leave
  (``used + demand <= capacity``): the capacity is never exceeded. A segment that does
  not fit yet waits, in arrival order, and starts as soon as running ones release enough
  (first fit over the waiting ones);
* **holds** the demand for exactly the segment's duration from its real start (a timer:
  the task occupies its slot, it does not burn the CPU the switches need), or, for a
  piece of a preemptive plan given an ``until``, up to that wall-clock time at most (a
  piece that started late ends on time; the controller has what it missed run later);
* reports ``started(seg, t)`` and ``done(seg, t, ran, stopped)`` with wall-clock times.

A segment whose demand exceeds the whole capacity can never run: :meth:`run` raises
``ValueError`` (the controller's plans never ask for it; a report says why if one does).
Standard library only, like the agent.
"""
from __future__ import annotations

import threading
import time
from collections import OrderedDict

TOL = 1e-9


class Slots:
    """Admission and timing of task segments on one host; see the module docstring.

    Parameters
    ----------
    capacity : float
    started : callable ``(seg, t)``
    done : callable ``(seg, t, ran, stopped)``: ``ran`` wall seconds it held its slot
    """

    def __init__(self, capacity: float, started, done):
        self.capacity = float(capacity)
        self.started, self.done = started, done
        self.used = 0.0
        self.lock = threading.Lock()
        self.waiting: OrderedDict[int, tuple[float, float]] = OrderedDict()
        self.running: dict[int, tuple[float, float, threading.Event]] = {}
        self.peak = 0.0

    def run(self, seg: int, demand: float, seconds: float, until: float | None = None) -> None:
        """Queue segment ``seg``; it starts as soon as ``demand`` fits and holds it for
        ``seconds``, or until the wall-clock time ``until`` if that comes first."""
        if demand > self.capacity * (1 + TOL):
            raise ValueError(f"segment {seg} needs {demand:g}, the host has {self.capacity:g}")
        with self.lock:
            if seg in self.waiting or seg in self.running:
                raise ValueError(f"segment {seg} already given")
            self.waiting[seg] = (float(demand), float(seconds), until)
        self._admit()

    def stop(self, seg: int) -> None:
        """Interrupt ``seg`` (a waiting one is dropped and reported as having run 0 s)."""
        with self.lock:
            if seg in self.waiting:
                del self.waiting[seg]
                dropped = True
            else:
                dropped = False
                entry = self.running.get(seg)
                if entry is not None:
                    entry[2].set()
        if dropped:
            self.done(seg, time.time(), 0.0, True)

    def _admit(self) -> None:
        go = []
        with self.lock:
            for seg, (demand, seconds, until) in list(self.waiting.items()):
                if self.used + demand <= self.capacity * (1 + TOL):
                    del self.waiting[seg]
                    self.used += demand
                    self.peak = max(self.peak, self.used)
                    ev = threading.Event()
                    self.running[seg] = (demand, seconds, ev)
                    go.append((seg, seconds, until, ev))
        for seg, seconds, until, ev in go:
            t = time.time()
            if until is not None:
                seconds = max(0.0, min(seconds, until - t))
            self.started(seg, t)
            threading.Thread(target=self._hold, args=(seg, t, seconds, ev), daemon=True,
                             name=f"task{seg}").start()

    def _hold(self, seg: int, t0: float, seconds: float, ev: threading.Event) -> None:
        stopped = ev.wait(max(0.0, t0 + seconds - time.time()))
        with self.lock:
            demand = self.running.pop(seg)[0]
            self.used = max(0.0, self.used - demand)
            t = time.time()
        self.done(seg, t, t - t0, stopped)
        self._admit()
