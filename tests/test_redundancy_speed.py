"""Speed processes of the redundancy model: change points, cumulative work and its
inverse, the AP/UP normalisation and the speedup bound h(d) <= min(d, peak)."""
import numpy as np
import pytest

from controller.model import WorkloadError
from controller.redundancy.speed import (ApUp, ap_up, check_spec, constant, from_points,
                                         read_trace, speed_of, speedup)


def brute_work(t, r, a, b, steps=200_000):
    """S(a, b) by a Riemann sum of the piecewise-constant rate."""
    x = np.linspace(a, b, steps + 1)
    mid = (x[:-1] + x[1:]) / 2
    return float(np.sum(r[np.searchsorted(t, mid, side="right") - 1]) * (b - a) / steps)


def test_cumulative_work_matches_a_riemann_sum_and_its_inverse_returns_the_time():
    sp = from_points([(np.array([0.0, 1.0, 2.5, 4.0]), np.array([1.0, 0.0, 2.0, 0.5]))])
    t, r = sp.points(0)
    for a, b in [(0.0, 3.0), (0.5, 1.7), (1.2, 2.2), (2.0, 9.0), (3.9, 4.1)]:
        assert sp.work(0, a, b) == pytest.approx(brute_work(t, r, a, b), abs=1e-4)
        if sp.work(0, a, b) > 0:
            u = sp.deliver(0, a, sp.work(0, a, b))
            assert sp.work(0, a, u) == pytest.approx(sp.work(0, a, b), abs=1e-12)
            assert u <= b + 1e-12          # the least such time (a zero-rate stretch)
    assert sp.deliver(0, 1.0, 0.5) == pytest.approx(2.75)     # 1.5 idle, then rate 2
    assert sp.deliver(0, 0.3, 0.0) == 0.3


def test_a_machine_that_stops_for_good_never_delivers():
    sp = from_points([(np.array([0.0, 2.0]), np.array([1.0, 0.0]))])
    assert sp.deliver(0, 0.0, 2.0) == pytest.approx(2.0)
    assert sp.deliver(0, 0.0, 2.5) == np.inf


def test_ap_up_defaults_are_normalised_to_mean_rate_one():
    p = ApUp()
    assert p.raw_mean_rate == pytest.approx(0.85)
    assert p.mean_rate == pytest.approx(1.0)
    assert p.peak == pytest.approx(1.5 / 0.85)
    sp = ap_up(range(40), 50_000.0)
    means = [sp.work(m, 0.0, 50_000.0) / 50_000.0 for m in range(sp.n)]
    assert np.mean(means) == pytest.approx(1.0, abs=0.05)
    assert sp.rate.max() <= p.peak + 1e-12


def test_an_ap_up_path_does_not_depend_on_how_far_it_is_drawn():
    p = ApUp()
    t1, r1 = p.path(7, 500.0)
    t2, r2 = p.path(7, 20_000.0)
    assert t1[-1] > 500.0
    assert np.array_equal(t1, t2[:len(t1)]) and np.array_equal(r1, r2[:len(r1)])


@pytest.mark.parametrize("tau", [1.0, 20.0])
def test_monte_carlo_speedup_is_at_most_min_d_and_the_peak(tau):
    sp = ap_up(range(16), 20_000.0)
    rng = np.random.default_rng(0)
    last = 0.0
    for d in (1, 2, 4, 8):
        h, se = speedup(sp, d, tau, 600, rng, 20_000.0)
        assert h <= min(d, sp.peak) + 4 * se
        assert h >= last - 4 * se              # more copies never hurt (Lemma 1's order)
        last = h
    h1, se1 = speedup(sp, 1, tau, 2000, rng, 20_000.0)
    assert h1 == pytest.approx(1.0, abs=4 * se1 + 0.03)


def test_trace_files_are_read_and_bad_lines_are_located(tmp_path):
    f = tmp_path / "m0.txt"
    f.write_text("# time rate\n0 1.0\n5 0.2   # slow\n9 1.5\n")
    t, r = read_trace(str(f))
    assert t.tolist() == [0, 5, 9] and r.tolist() == [1.0, 0.2, 1.5]
    f.write_text("0 1\n5 2\n4 1\n")
    with pytest.raises(WorkloadError, match=r"m0.txt:3: time: .*increase"):
        read_trace(str(f))
    f.write_text("0 1\n5 -2\n")
    with pytest.raises(WorkloadError, match=r"m0.txt:2: rate: "):
        read_trace(str(f))
    f.write_text("3 1\n")
    with pytest.raises(WorkloadError, match=r"m0.txt:1: time: .*start at 0"):
        read_trace(str(f))


def test_specs_are_checked_and_resolve_relative_traces(tmp_path):
    (tmp_path / "s.txt").write_text("0 2\n")
    spec = check_spec({"trace": "s.txt"}, "m0", str(tmp_path))
    assert spec["trace"] == str(tmp_path / "s.txt")
    sp = speed_of([spec, None, {"rate": 0.5}, {"model": "ap-up", "seed": 3}], 100.0)
    assert sp.work(0, 0, 1) == 2.0 and sp.work(1, 0, 1) == 1.0 and sp.work(2, 0, 1) == 0.5
    assert sp.points(3)[0][-1] > 100.0
    for bad, msg in [({"model": "ap-up"}, "seed"), ({"model": "onoff", "seed": 1}, "unknown"),
                     ({"model": "ap-up", "seed": 1, "ap_rate": [2, 1]}, "ap_rate"),
                     ({"model": "ap-up", "seed": 1, "speed": 1}, "unknown key"),
                     ({"trace": "s.txt", "rate": 1}, "exactly one"), (3, "object"),
                     ({"rate": 0}, "> 0")]:
        with pytest.raises(WorkloadError, match=msg):
            check_spec(bad, "m0", str(tmp_path))
    assert constant(3).constant and not sp.constant
