"""The pacer: the rate at which an agent hands one flow's bytes to its socket.

A flow the plan caps (MADD rates of ``sebf`` and ``weaver``, fair shares) must send at
the planned rate, and that rate changes while the flow sends (a coflow arrives or
completes, a flow of the same coflow finishes and its capacity is backfilled). The agent
paces in user space, before the socket: each write of a *quantum* (about 2 ms of the
rate, one MSS at least, one chunk at most) is allowed at the pacer's *virtual finish
time* ``t_free`` (when every byte written so far would have left at the current rate),
which then moves on by ``quantum / rate``.

Why not the kernel's ``SO_MAX_PACING_RATE``: it paces every packet by the rate in force
when the packet left, and raising the cap takes effect only once the socket recomputes
its rate at the next ACK. A flow capped to a few kbit/s (MADD gives tiny rates to the
small flows of a coflow with a long bottleneck) that is then raised to the full link
waited seconds per packet; on 4 hosts x 2 cores a 2 MB flow raised from 6 kbit/s to
20 Mbit/s took 18-19 s instead of 0.8 s (``tests/test_emulation_policies.py``, a flow
paced tiny, paused, then alone). Here a rate change takes effect at the next write:
the time still owed at the old rate is rescaled to the new one.

A writer that wakes late may catch up by ``catch_up`` seconds' worth of bytes (a
short burst, which the shaped link smooths), so the average rate holds on a busy
machine; a flow that was paused or idle longer gets no more credit than that.

Examples
--------
>>> t = [0.0]
>>> p = Pacer(1000.0, clock=lambda: t[0], catch_up=0.0, quantum_s=0.5, min_write=1)
>>> p.grant(10_000)              # 0.5 s worth at 1000 B/s, now
(500, 0.0)
>>> p.grant(10_000)              # the next one when those 500 B have left
(0, 0.5)
>>> p.set_rate(4000.0)           # 4x faster: what is still owed takes a quarter
>>> p.grant(10_000)
(0, 0.125)
"""
from __future__ import annotations

import threading
import time

__all__ = ["Pacer"]


class Pacer:
    """Paces one flow's writes at ``rate`` bytes/s (``None``: as fast as the socket takes).

    Parameters
    ----------
    rate : float or None
        Bytes per second, > 0; ``None`` for no pacing.
    clock : callable
        Seconds, monotonic (``time.monotonic``).
    catch_up : float
        Seconds of bytes a late writer may send at once to catch up.
    quantum_s : float
        A write is this many seconds of the rate ...
    min_write : int
        ... at least this many bytes (one MSS: smaller writes only add packets).

    Thread-safe: the agent's control thread changes the rate while the flow's connection
    thread writes.
    """

    def __init__(self, rate: float | None, *, clock=time.monotonic, catch_up: float = 0.01,
                 quantum_s: float = 0.002, min_write: int = 1448):
        self.clock = clock
        self.catch_up = float(catch_up)
        self.quantum_s = float(quantum_s)
        self.min_write = int(min_write)
        self._lock = threading.Lock()
        self.rate: float | None = None
        self.t_free = float("-inf")
        self.set_rate(rate)

    def set_rate(self, rate: float | None) -> None:
        """Change the rate now; the time still owed at the old rate is rescaled."""
        if rate is not None and not rate > 0:
            raise ValueError(f"pacing rate must be > 0 bytes/s or None, got {rate!r}")
        with self._lock:
            now = self.clock()
            if rate is not None and self.rate is not None and self.t_free > now:
                self.t_free = now + (self.t_free - now) * self.rate / rate
            self.rate = None if rate is None else float(rate)

    def grant(self, want: int) -> tuple[int, float]:
        """``(n, 0.0)``: write ``n`` (1 <= n <= want) bytes now; ``(0, wait)``: ask
        again in ``wait`` seconds (earlier if the rate changes)."""
        with self._lock:
            if self.rate is None:
                return want, 0.0
            now = self.clock()
            if self.t_free > now:
                return 0, self.t_free - now
            n = int(min(want, max(self.min_write, self.rate * self.quantum_s)))
            n = max(n, 1)
            self.t_free = max(self.t_free, now - self.catch_up) + n / self.rate
            return n, 0.0

    def refund(self, n: int) -> None:
        """``n`` granted bytes were not written (the socket took fewer)."""
        with self._lock:
            if self.rate is not None and n > 0:
                self.t_free -= n / self.rate
