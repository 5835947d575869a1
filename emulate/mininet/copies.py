"""Redundant copies on one emulated machine whose speed varies (the redundancy model).

A machine of a ``"model": "redundancy"`` workload serves at a piecewise-constant rate
``r(t)`` (its *speed process*, :mod:`controller.redundancy.speed`), given to the host's
agent at registration as change points ``(times, rates)`` in workload time (the last rate
holds beyond the last point). The controller sends ``run`` (copy ``seg`` of a job with
share ``theta`` of the machine and ``work`` left to do) and ``stop`` (a checkpoint).
:class:`Copies` runs each copy in real time against that capacity:

* a copy's **progress** at wall time ``t`` is ``theta x integral of r`` over the workload
  time it has run, from its real start (when the ``run`` arrived) to ``t``, with workload
  time ``tau = (t - t0) / scale`` (the run's origin and time scale come with ``run``);
* it **finishes** at the wall time ``t*`` its progress reaches ``work``: the agent
  computes ``t*`` by inverting the cumulative rate, sleeps until then and reports
  ``done(seg, t*, progress, late)`` (``late``: how far after ``t*`` it woke up). The
  report's time is the instant the work was covered, exact; the wake-up's lateness is
  reported apart;
* ``stop`` ends a copy at once and returns its progress at that instant (or, when it had
  already covered its work, the finish instant and its whole work).

Shares on one machine are the controller's business (the policies give at most 1 in
total); :meth:`Copies.run` rejects a share outside (0, 1] and tracks the peak load.
Standard library only, like the agent.
"""
from __future__ import annotations

import bisect
import math
import threading
import time

TOL = 1e-9


class SpeedPath:
    """A piecewise-constant rate: change points ``times`` (the first 0, increasing) and
    the ``rates`` from each to the next (the last one for ever)."""

    def __init__(self, times, rates):
        self.t = [float(x) for x in times]
        self.r = [float(x) for x in rates]
        if not self.t or len(self.t) != len(self.r) or self.t[0] != 0.0 or \
                any(b <= a for a, b in zip(self.t, self.t[1:])) or \
                any(not (x >= 0.0 and math.isfinite(x)) for x in self.r):
            raise ValueError("speed change points must start at 0, increase, and have "
                             "finite rates >= 0")
        self.cum = [0.0]
        for k in range(1, len(self.t)):
            self.cum.append(self.cum[-1] + self.r[k - 1] * (self.t[k] - self.t[k - 1]))

    def work(self, tau: float) -> float:
        """Work delivered from 0 to workload time ``tau`` (0 before 0)."""
        if tau <= 0.0:
            return 0.0
        k = bisect.bisect_right(self.t, tau) - 1
        return self.cum[k] + self.r[k] * (tau - self.t[k])

    def until(self, w: float) -> float:
        """The earliest workload time at which the delivered work reaches ``w`` (inf:
        never)."""
        if w <= 0.0:
            return 0.0
        k = bisect.bisect_left(self.cum, w)              # the first point with cum >= w
        if k < len(self.cum) and self.cum[k] == w:
            return self.t[k]
        k -= 1                                           # cum[k] < w (< cum[k+1])
        if self.r[k] <= 0.0:
            return math.inf                              # only the last rate can be 0 here
        return self.t[k] + (w - self.cum[k]) / self.r[k]


class Copies:
    """The copies running on one machine; see the module docstring.

    Parameters
    ----------
    speed : SpeedPath, the machine's rate in workload time
    done : callable ``(seg, t, progress, late)``, called when a copy covers its work
    """

    def __init__(self, speed: SpeedPath, done):
        self.speed = speed
        self.done = done
        self.lock = threading.Lock()
        # seg -> [share, work, t0, scale, tau_start, finish (wall), stopped Event, done flag]
        self.live: dict[int, list] = {}
        self.ended: dict[int, tuple[float, float, bool]] = {}   # seg -> what stop gives
        self.load = 0.0
        self.peak = 0.0

    def _tau(self, c, t):
        return (t - c[2]) / c[3]

    def progress(self, c, t: float) -> float:
        """Copy ``c``'s progress at wall time ``t``: share x the work its machine delivered
        since it started."""
        return c[0] * (self.speed.work(self._tau(c, t)) - self.speed.work(c[4]))

    def run(self, seg: int, share: float, work: float, t0: float, scale: float) -> float:
        """Start copy ``seg`` now; returns its real start (wall time)."""
        if not 0.0 < share <= 1.0 + TOL:
            raise ValueError(f"copy {seg}: share {share:g} outside (0, 1]")
        if not scale > 0:
            raise ValueError(f"copy {seg}: time scale {scale:g} must be > 0")
        t = time.time()
        with self.lock:
            if seg in self.live:
                raise ValueError(f"copy {seg} already given")
            tau = (t - t0) / scale
            c = [float(share), float(work), float(t0), float(scale), tau, math.inf,
                 threading.Event(), False]
            w0 = self.speed.work(tau)
            fin = self.speed.until(w0 + work / share)
            c[5] = t0 + fin * scale if math.isfinite(fin) else math.inf
            self.live[seg] = c
            self.load += share
            self.peak = max(self.peak, self.load)
        threading.Thread(target=self._hold, args=(seg, c), daemon=True,
                         name=f"copy{seg}").start()
        return t

    def _hold(self, seg: int, c: list) -> None:
        wait = c[5] - time.time()
        stopped = c[6].wait(None if math.isinf(wait) else max(0.0, wait))
        with self.lock:
            if stopped or c[7] or seg not in self.live:
                return
            c[7] = True
            self._release(seg, c)
            self.ended[seg] = (c[5], c[1], True)
        late = max(0.0, time.time() - c[5])
        self.done(seg, c[5], c[1], late)

    def _release(self, seg: int, c: list) -> None:
        del self.live[seg]
        self.load = max(0.0, self.load - c[0])

    def stop(self, seg: int) -> tuple[float, float, bool]:
        """End copy ``seg`` now: ``(t, progress, finished)``; a copy that had already
        covered its work gives its finish instant, its work and True."""
        t = time.time()
        with self.lock:
            if seg in self.ended:      # finished (its report may still be on its way)
                return self.ended[seg]
            c = self.live.get(seg)
            if c is None:
                raise ValueError(f"copy {seg} was never given")
            c[6].set()
            self._release(seg, c)
            if t >= c[5]:              # covered its work before the stop came
                c[7] = True
                out = (c[5], c[1], True)
            else:
                out = (t, min(self.progress(c, t), c[1]), False)
            self.ended[seg] = out
        return out
