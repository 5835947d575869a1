"""The agent's copies of the redundancy model (emulate/mininet/copies.py): the speed path
against the simulator's numba functions, a copy's progress and finish in real time."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.redundancy.speed import from_points
from emulate.mininet.copies import Copies, SpeedPath


@st.composite
def paths(draw):
    n = draw(st.integers(1, 6))
    gaps = draw(st.lists(st.floats(0.1, 5.0), min_size=n - 1, max_size=n - 1))
    t = np.concatenate([[0.0], np.cumsum(gaps)])
    r = draw(st.lists(st.floats(0.0, 2.0), min_size=n, max_size=n))
    r[-1] = max(r[-1], 0.1)                      # the last rate holds for ever
    return t, np.array(r)


@settings(max_examples=60, deadline=None)
@given(paths(), st.floats(0.0, 30.0), st.floats(0.0, 20.0))
def test_speed_path_matches_the_simulator(path, tau, w):
    """``work`` and ``until`` agree with Speed.work / Speed.deliver (the simulator's)."""
    t, r = path
    sp, mine = from_points([(t, r)]), SpeedPath(t.tolist(), r.tolist())
    assert mine.work(tau) == pytest.approx(sp.work(0, 0.0, tau), rel=1e-12, abs=1e-12)
    assert mine.until(w) == pytest.approx(sp.deliver(0, 0.0, w), rel=1e-9, abs=1e-12)
    assert mine.work(mine.until(w)) == pytest.approx(w, rel=1e-9, abs=1e-12)


def test_speed_path_rejects_bad_points():
    for t, r in (([1.0], [1.0]), ([0.0, 0.0], [1.0, 1.0]), ([0.0], [-1.0]), ([], [])):
        with pytest.raises(ValueError):
            SpeedPath(t, r)


def test_a_copy_finishes_when_it_covered_its_work():
    """Rate 2 for 0.1 s of workload time, then 0.5: half a share covers 0.15 at
    tau = 0.1 + (0.15 - 0.1) / 0.25 = 0.3 (scale 1: wall seconds)."""
    done, ev = [], threading.Event()
    c = Copies(SpeedPath([0.0, 0.1], [2.0, 0.5]), lambda *a: (done.append(a), ev.set()))
    t0 = time.time()
    start = c.run(1, 0.5, 0.15, t0, 1.0)
    assert ev.wait(5.0)
    seg, t, progress, late = done[0]
    assert (seg, progress) == (1, 0.15)
    # the finish instant is computed from the real start
    expect = t0 + SpeedPath([0.0, 0.1], [2.0, 0.5]).until(
        SpeedPath([0.0, 0.1], [2.0, 0.5]).work(start - t0) + 0.3)
    assert t == pytest.approx(expect, abs=1e-9)
    assert late >= 0 and late < 0.5
    assert c.stop(1) == (t, 0.15, True)          # a stop after it finished says so
    assert c.load == 0.0 and c.peak == 0.5


def test_stop_gives_the_progress_so_far():
    c = Copies(SpeedPath([0.0], [1.0]), lambda *a: pytest.fail("must not finish"))
    t0 = time.time()
    start = c.run(7, 0.25, 100.0, t0, 0.01)       # 1 wall s = 100 workload units
    time.sleep(0.05)
    t, progress, finished = c.stop(7)
    assert not finished
    assert progress == pytest.approx(0.25 * (t - start) / 0.01, rel=1e-9)
    assert 0 < progress < 100.0
    with pytest.raises(ValueError, match="never given"):
        c.stop(8)
    with pytest.raises(ValueError, match="share"):
        c.run(9, 1.5, 1.0, t0, 1.0)
