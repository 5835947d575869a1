"""The agent's pacer (emulate/mininet/pacer.py) on a simulated clock: rates held, rate
changes taking effect at the next write (the sebf outlier was a kernel pacing rate that
did not), late writers catching up only so far."""
from __future__ import annotations

import pytest

from emulate.mininet.pacer import Pacer


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def drive(p: Pacer, clock: Clock, until: float, want: int = 16384) -> list[tuple[float, int]]:
    """A writer whose socket takes every grant at once; (time, bytes) of each write."""
    out = []
    while clock.t < until:
        n, wait = p.grant(want)
        if n:
            out.append((clock.t, n))
        else:
            assert wait > 0
            clock.t = min(clock.t + wait, until)   # (stop at until: the next phase starts there)
    return out


def sent_between(writes, lo, hi) -> int:
    return sum(n for t, n in writes if lo <= t < hi)


def test_a_steady_rate_is_held_in_quanta_of_about_2_ms():
    c = Clock()
    p = Pacer(2.5e6, clock=c)                      # 20 Mbit/s of payload
    w = drive(p, c, 1.0)
    assert sent_between(w, 0.0, 1.0) == pytest.approx(2.5e6, rel=0.01)
    assert {n for _, n in w} == {5000}             # 2 ms of 2.5 MB/s
    slow = Pacer(1000.0, clock=(c2 := Clock()))
    ws = drive(slow, c2, 10.0)
    assert {n for _, n in ws} == {1448}            # one MSS at least, every 1.448 s
    assert sent_between(ws, 0.0, 10.0) == pytest.approx(10_000, abs=1448)


def test_a_raised_rate_holds_from_the_next_write():
    """6 kbit/s, then 20 Mbit/s: the second second carries 2.5 MB, not 750 B."""
    c = Clock()
    p = Pacer(750.0, clock=c)
    w = drive(p, c, 1.0)
    assert sent_between(w, 0.0, 1.0) == 1448       # one MSS, then 1.9 s owed ...
    p.set_rate(2.5e6)                              # ... rescaled to 0.6 ms
    w = drive(p, c, 2.0)
    assert w[0][0] < 1.001
    assert sent_between(w, 1.0, 2.0) == pytest.approx(2.5e6, rel=0.01)


def test_a_lowered_rate_holds_from_the_next_write():
    c = Clock()
    p = Pacer(2.5e6, clock=c)
    drive(p, c, 0.5)
    p.set_rate(0.25e6)
    w = drive(p, c, 1.5)
    assert sent_between(w, 0.5, 1.5) == pytest.approx(0.25e6, rel=0.01)


def test_a_late_writer_catches_up_by_at_most_catch_up_seconds():
    c = Clock()
    p = Pacer(1e6, clock=c, catch_up=0.01, quantum_s=0.001, min_write=1)
    drive(p, c, 0.1)
    c.t += 0.5                                     # asleep for half a second
    burst = 0
    while True:
        n, wait = p.grant(1 << 20)
        if not n:
            break
        burst += n
    assert burst == pytest.approx(0.01 * 1e6, abs=1000)   # 10 ms of the rate, not 0.5 s


def test_no_rate_is_no_pacing_and_bad_rates_are_refused():
    p = Pacer(None)
    assert p.grant(12345) == (12345, 0.0)
    for bad in (0.0, -1.0, float("nan")):
        with pytest.raises(ValueError, match="pacing rate"):
            Pacer(bad)
        with pytest.raises(ValueError, match="pacing rate"):
            p.set_rate(bad)


def test_bytes_the_socket_did_not_take_are_refunded():
    c = Clock()
    p = Pacer(1000.0, clock=c, catch_up=0.0, quantum_s=1.0, min_write=1)
    assert p.grant(10_000) == (1000, 0.0)
    p.refund(600)                                  # the socket took 400 of them
    assert p.grant(10_000) == (0, pytest.approx(0.4))
