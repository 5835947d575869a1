"""Moldable jobs (issue 15): every algorithm through an independent verifier, the bounds
against every verified schedule and an exact optimum, and the pieces one by one.

The verifier reads the instance (``MoldableArrays.time``, ``weight``, ``m``) and the
id-based records of a schedule (``MoldableSchedule.as_dicts``) and nothing else. It checks:

* every job runs exactly once, at an allowed allotment ``q``;
* it holds exactly ``q`` distinct machines among ``0..m-1``, for exactly ``p(q)`` seconds,
  in one piece (one start, one end);
* no machine runs two jobs at once, and at most ``m`` machines are busy at any time;
* the makespan and the minsum the schedule reports.

The exact optimum of a tiny instance (``m <= 4``, ``n <= 5``) is a branch-and-bound search
over list schedules: pick the next job and its allotment, start it at the earliest time
its ``q`` machines are free for its whole length given the jobs placed so far. This search
is exact: take an optimal schedule and list its jobs by start time; placing them in that
order at the earliest fit starts each no later than in the optimum (by induction, the jobs
placed before it run at any time ``t`` of its slot only if they ran at ``t`` in the
optimum, so its ``q`` machines are free), so some list schedule is optimal for both
criteria. The bound ``sum_{unplaced} w_i min_q p_i(q)`` prunes the minsum search.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.lp.result import IntervalSolution, LPResult
from controller.model import WorkloadError
from controller.moldable import algorithms, get_algorithm, schedule
from controller.moldable.bounds import makespan_bound, minsum_lp
from controller.moldable.demt import batches, compact, demt
from controller.moldable.dual import dual_approximation, work_at
from controller.moldable.generators import (FAMILIES, instance, parallelism,
                                            sequential_times, workload)
from controller.moldable.knapsack import knapsack
from controller.moldable.model import MoldableArrays, MoldableJob, MoldableWorkload

TOL = 1e-9
SETTINGS = settings(max_examples=300, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


class Infeasible(AssertionError):
    pass


# ---------------------------------------------------------------------- the verifier
def verify(a: MoldableArrays, sched) -> tuple[float, float]:
    """Check ``sched`` against ``a``; return the recomputed (makespan, minsum)."""
    recs = sched.as_dicts()
    ids = list(a.ids) if a.ids else [str(i) for i in range(a.n)]
    if sorted(r["job"] for r in recs) != sorted(ids):
        raise Infeasible("not every job runs exactly once")
    scale = max(1.0, max(r["end"] for r in recs))
    tol = TOL * scale * 10
    index = {j: i for i, j in enumerate(ids)}
    ends = np.zeros(a.n)
    events = []
    per_machine: dict[int, list] = {}
    for r in recs:
        i, q = index[r["job"]], r["allotment"]
        if not 1 <= q <= a.m or not np.isfinite(a.time[i, q - 1]):
            raise Infeasible(f"{r['job']}: allotment {q} is not allowed")
        ms = r["machines"]
        if len(ms) != q or len(set(ms)) != q or not all(0 <= k < a.m for k in ms):
            raise Infeasible(f"{r['job']}: machines {ms} are not {q} distinct machines")
        if r["start"] < -tol:
            raise Infeasible(f"{r['job']} starts before 0")
        if abs((r["end"] - r["start"]) - a.time[i, q - 1]) > tol:
            raise Infeasible(f"{r['job']} runs {r['end'] - r['start']}, not p({q}) = "
                             f"{a.time[i, q - 1]}")
        ends[i] = r["start"] + a.time[i, q - 1]
        events += [(r["start"], q), (ends[i] - tol, -q)]
        for k in ms:
            per_machine.setdefault(k, []).append((r["start"], ends[i], r["job"]))
    for k, iv in per_machine.items():
        iv.sort()
        for (s1, e1, j1), (s2, e2, j2) in zip(iv, iv[1:]):
            if s2 < e1 - tol:
                raise Infeasible(f"machine {k} runs {j1} and {j2} at once")
    busy = 0
    for _, dq in sorted(events, key=lambda e: (e[0], e[1])):
        busy += dq
        if busy > a.m:
            raise Infeasible(f"{busy} machines busy, only {a.m}")
    makespan, minsum = float(ends.max()), float(a.weight @ ends)
    assert sched.makespan == pytest.approx(makespan, rel=1e-9)
    assert sched.minsum == pytest.approx(minsum, rel=1e-9)
    return makespan, minsum


def test_verifier_rejects_broken_schedules():
    w = MoldableWorkload(2, [MoldableJob("a", {1: 2.0, 2: 1.0}), MoldableJob("b", {1: 1.0})])
    a = w.arrays
    good = schedule(a, "sequential")
    verify(a, good)
    from controller.moldable.schedule import MoldableSchedule
    two_on_one = MoldableSchedule(a, good.allotment, good.start,
                                  (np.array([0]), np.array([0])))
    with pytest.raises(Infeasible, match="at once"):
        verify(a, two_on_one)
    wrong_q = MoldableSchedule(a, np.array([2, 1]), np.array([0.0, 0.0]),
                               (np.array([0]), np.array([1])))
    with pytest.raises(Infeasible, match="distinct"):
        verify(a, wrong_q)
    too_many = MoldableSchedule(a, np.array([2, 1]), np.array([0.0, 0.5]),
                                (np.array([0, 1]), np.array([0])))
    with pytest.raises(Infeasible):
        verify(a, too_many)


# ---------------------------------------------------------------------- random instances
@st.composite
def instances(draw, max_m=8, max_n=8):
    """Monotone jobs with random allowed allotments: each step ``q' -> q`` multiplies the
    time by a factor in ``[q'/q, 1]`` (time non-increasing, work non-decreasing)."""
    m = draw(st.integers(1, max_m))
    n = draw(st.integers(1, max_n))
    jobs = []
    for i in range(n):
        qs = sorted(draw(st.sets(st.integers(1, m), min_size=1, max_size=m)))
        p = draw(st.floats(0.5, 20.0))
        tab = {qs[0]: p}
        for q0, q in zip(qs, qs[1:]):
            f = draw(st.floats(q0 / q, 1.0))
            p = p * f
            tab[q] = p
        jobs.append(MoldableJob(f"j{i}", tab, draw(st.floats(1.0, 10.0))))
    return MoldableWorkload(m, jobs).arrays


@st.composite
def generated(draw, max_m=12, max_n=12):
    fam = draw(st.sampled_from(FAMILIES))
    return instance(fam, draw(st.integers(1, max_n)), draw(st.integers(1, max_m)),
                    seed=draw(st.integers(0, 10 ** 6)),
                    x_per=draw(st.sampled_from(["job", "step"])))


def _all_schedules(a):
    out = [schedule(a, name) for name in algorithms()]
    out.append(demt(a, compaction=False))
    out.append(demt(a, shuffles=3, seed=1))
    return out


@SETTINGS
@given(a=st.one_of(instances(), generated()))
def test_every_algorithm_passes_the_verifier_and_the_bounds_hold(a):
    lp = minsum_lp(a).value
    cb = makespan_bound(a).value
    for s in _all_schedules(a):
        makespan, minsum = verify(a, s)
        assert lp <= minsum * (1 + 1e-7), s.algorithm
        assert cb <= makespan * (1 + 1e-9), s.algorithm


@settings(max_examples=60, deadline=None)
@given(a=st.one_of(instances(max_m=10, max_n=15), generated(max_m=16, max_n=30)))
def test_compaction_never_delays_a_job(a):
    plan = batches(a)
    verify(a, plan.schedule)
    c = compact(plan)
    verify(a, c)
    scale = max(1.0, plan.schedule.makespan)
    assert (c.end <= plan.schedule.end + 1e-9 * scale).all()
    assert (c.start <= plan.schedule.start + 1e-9 * scale).all()


@settings(max_examples=40, deadline=None)
@given(a=st.one_of(instances(), generated()))
def test_demt_batches_respect_the_paper_rules(a):
    plan = batches(a)
    d_K = plan.t_min * 2 ** (plan.K - 1)
    assert d_K >= plan.estimate * (1 - 1e-12)
    for b in plan.batches:
        assert b.length == pytest.approx(plan.t_min * 2 ** (min(b.index, plan.K) - 1))
        assert sum(u.allotment for u in b.units) <= a.m
        for u in b.units:
            assert u.length <= b.length * (1 + 1e-12)       # a job too long cannot enter
            if len(u.jobs) > 1:                               # a pile of small jobs
                assert u.allotment == 1
                assert (a.time[u.jobs, 0] <= b.length / 2).all()
            else:   # the smallest allotment that fits in the batch
                i = u.jobs[0]
                assert a.time[i, u.allotment - 1] <= b.length
                assert not (a.time[i, :u.allotment - 1] <= b.length).any()


# ---------------------------------------------------------------------- exact optimum
def _earliest_fit(placed, q, p, m):
    for t in sorted({0.0} | {e for _, e, _ in placed}):
        pts = [t] + [s for s, _, _ in placed if t < s < t + p]
        if all(sum(qq for s, e, qq in placed if s <= x < e) + q <= m for x in pts):
            return t
    raise AssertionError("unreachable: after every job ends all machines are free")


def optimum(a: MoldableArrays, criterion: str) -> float:
    """The exact optimum by branch and bound over list schedules (module docstring)."""
    opts = [[(q + 1, float(a.time[i, q])) for q in range(a.m) if np.isfinite(a.time[i, q])]
            for i in range(a.n)]
    best = [np.inf]

    def dfs(left, placed, value):
        if not left:
            best[0] = min(best[0], value)
            return
        rest = sum(a.weight[i] * a.pmin[i] for i in left) if criterion == "minsum" else 0
        if value + rest >= best[0] - 1e-12:
            return
        for i in left:
            for q, p in opts[i]:
                t = _earliest_fit(placed, q, p, a.m)
                v = value + a.weight[i] * (t + p) if criterion == "minsum" else \
                    max(value, t + p)
                dfs(left - {i}, placed + [(t, t + p, q)], v)

    dfs(frozenset(range(a.n)), [], 0.0)
    return best[0]


@settings(max_examples=60, deadline=None)
@given(a=instances(max_m=4, max_n=5))
def test_bounds_are_below_the_brute_force_optimum(a):
    opt_sum = optimum(a, "minsum")
    opt_max = optimum(a, "makespan")
    assert minsum_lp(a).value <= opt_sum * (1 + 1e-7)
    assert makespan_bound(a).value <= opt_max * (1 + 1e-9)
    for s in _all_schedules(a):          # and no algorithm beats the optimum
        assert s.minsum >= opt_sum * (1 - 1e-9)
        assert s.makespan >= opt_max * (1 - 1e-9)


def test_brute_force_finds_the_known_optimum():
    # two jobs, m = 2: a (w 1) 2 s on 1 machine or 1 s on 2; b (w 1) 1 s on 1 machine
    w = MoldableWorkload(2, [MoldableJob("a", {1: 2.0, 2: 1.0}), MoldableJob("b", {1: 1.0})])
    assert optimum(w.arrays, "minsum") == 3.0       # b then a on 2, or both on 1 (2 + 1)
    assert optimum(w.arrays, "makespan") == 2.0


# ---------------------------------------------------------------------- pieces
@settings(max_examples=200, deadline=None)
@given(sizes=st.lists(st.integers(1, 6), min_size=0, max_size=9),
       data=st.data(), cap=st.integers(0, 12))
def test_knapsack_dp_equals_brute_force_subset_search(sizes, data, cap):
    values = data.draw(st.lists(st.floats(0.0, 10.0), min_size=len(sizes),
                                max_size=len(sizes)))
    r = knapsack(sizes, values, cap)
    best = max(sum(values[j] for j in sub)
               for k in range(len(sizes) + 1) for sub in itertools.combinations(
                   range(len(sizes)), k) if sum(sizes[j] for j in sub) <= cap)
    assert r.value == pytest.approx(best, abs=1e-9)
    assert sum(sizes[j] for j in r.selected) == r.used <= cap
    assert sum(values[j] for j in r.selected) == pytest.approx(r.value, abs=1e-9)


@settings(max_examples=100, deadline=None)
@given(a=st.one_of(instances(), generated()))
def test_dual_approximation_returns_the_smallest_accepted_guess(a):
    d = dual_approximation(a)
    lam = d.estimate
    assert work_at(a, lam) <= a.m * lam * (1 + 1e-12)
    below = lam * (1 - 1e-9)
    assert not work_at(a, below) <= a.m * below
    assert (d.allotment == a.allotment_for(lam)).all()


def test_minsum_lp_result_is_the_project_lp_result():
    a = instance("mixed", 30, 16, seed=3)
    r = minsum_lp(a)
    assert isinstance(r, LPResult) and isinstance(r.solution, IntervalSolution)
    assert r.optimal and r.lp == "moldable-minsum" and r.rounds == 1
    x = r.solution.fractions
    assert np.allclose(x.sum(axis=1), 1.0) and (x >= -1e-9).all()
    assert r.value == pytest.approx(float(a.weight @ r.solution.job_completion), rel=1e-6)
    assert r.details.variables > 0 and r.details.rows == a.n + len(r.solution.boundaries) - 1


# ---------------------------------------------------------------------- model errors
@pytest.mark.parametrize("times, match", [
    ({1: 2.0, 2: 3.0}, "time must not grow"),
    ({1: 4.0, 2: 1.0}, "work q p\\(q\\) must not shrink"),
    ({1: 4.0, 4: 0.5}, "work"),
    ({0: 1.0}, "integer >= 1"),
    ({1: -1.0}, "must be"),
    ({}, "at least one entry"),
])
def test_non_monotone_or_bad_jobs_are_workload_errors(times, match):
    with pytest.raises(WorkloadError, match=match) as e:
        MoldableJob("bad", times)
    assert e.value.field == "times" and "'bad'" in str(e.value)


def test_workload_errors_name_the_job_and_field():
    with pytest.raises(WorkloadError, match="larger than the 2 machines") as e:
        MoldableWorkload(2, [MoldableJob("big", {4: 1.0})])
    assert e.value.field == "times"
    with pytest.raises(WorkloadError, match="weight") as e:
        MoldableJob("w", {1: 1.0}, weight=0.0)
    assert e.value.field == "weight"
    with pytest.raises(WorkloadError, match="duplicate"):
        MoldableWorkload(2, [MoldableJob("a", {1: 1.0}), MoldableJob("a", {1: 1.0})])
    with pytest.raises(WorkloadError, match="parallel_fraction") as e:
        MoldableJob.from_spec("am", {"sequential": 1.0, "model": "amdahl",
                                     "parallel_fraction": 1.5}, 4)
    assert "'am'" in str(e.value) and e.value.field == "times"
    with pytest.raises(WorkloadError, match="unknown speedup model"):
        MoldableJob.from_spec("x", {"sequential": 1.0, "model": "magic"}, 4)


def test_workload_from_dict_with_tables_and_models():
    w = MoldableWorkload.from_dict({"machines": 4, "jobs": [
        {"id": "t", "weight": 2, "times": {"1": 4.0, "2": 2.5}},
        {"id": "a", "sequential": 10.0, "model": "amdahl", "parallel_fraction": 0.9},
        {"id": "d", "sequential": 6.0, "model": "downey", "A": 3.0, "sigma": 0.5},
        {"id": "m", "sequential": 6.0, "model": "model1", "x": [1.0, 0.5, 0.0]}]})
    assert w.jobs[0].allotments == (1, 2) and w.jobs[0].weight == 2.0
    assert w.jobs[1].times[4] == pytest.approx(10.0 * (0.1 + 0.9 / 4))
    assert w.jobs[3].times[2] == pytest.approx(3.0)
    assert w.jobs[3].times[3] == pytest.approx(3.0 * 2.5 / 3)
    assert w.jobs[3].times[4] == pytest.approx(w.jobs[3].times[3])
    assert MoldableWorkload.from_dict(w.to_dict()).arrays.time.tolist() == \
        w.arrays.time.tolist()


def test_registry_names_every_algorithm():
    assert algorithms() == ["demt", "gang", "sequential", "list-shelf", "list-wlptf",
                            "list-saf"]
    with pytest.raises(KeyError, match="known: demt"):
        get_algorithm("nope")


# ---------------------------------------------------------------------- generators
def test_generators_are_deterministic_given_the_seed():
    for fam in FAMILIES:
        a, b = instance(fam, 20, 8, seed=5), instance(fam, 20, 8, seed=5)
        assert np.array_equal(a.time, b.time) and np.array_equal(a.weight, b.weight)
        assert not np.array_equal(a.time, instance(fam, 20, 8, seed=6).time)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("x_per", ["job", "step"])
def test_generated_workloads_are_monotone_and_validate(family, x_per):
    w = workload(family, 40, 32, seed=1, x_per=x_per)    # validation is the check
    a = w.arrays
    assert (a.weight >= 1).all() and (a.weight <= 10).all()
    assert (np.diff(a.time, axis=1) <= 1e-12).all()


def test_generators_distributions():
    rng = np.random.default_rng(0)
    p, large = sequential_times(20000, "uniform", rng)
    assert p.min() >= 1 and p.max() <= 10 and abs(p.mean() - 5.5) < 0.1 and not large.any()
    p, large = sequential_times(20000, "mixed", rng)
    assert (p > 0).all() and abs(large.mean() - 0.3) < 0.02
    assert abs(np.median(p[~large]) - 1.0) < 0.05 and abs(np.median(p[large]) - 10.0) < 0.3
    hi, lo = parallelism(rng, 0.9, 20000), parallelism(rng, 0.1, 20000)
    assert hi.min() >= 0 and hi.max() <= 1 and lo.min() >= 0 and lo.max() <= 1
    assert 0.75 < hi.mean() < 0.85 and 0.15 < lo.mean() < 0.25   # truncation shifts
    # model 1 with X = 1 is linear, X = 0 is no speedup
    a = instance("highly", 200, 16, seed=2)
    speedup = a.time[:, 0] / a.time[:, -1]
    assert speedup.mean() > instance("weakly", 200, 16, seed=2).time[:, 0].mean() / \
        instance("weakly", 200, 16, seed=2).time[:, -1].mean()
    mixed = instance("mixed", 400, 16, seed=3)
    s = mixed.time[:, 0] / mixed.time[:, -1]
    big = mixed.time[:, 0] > 6     # mostly the large class: highly parallel
    assert s[big].mean() > 2 * s[mixed.time[:, 0] < 1.5].mean()


@pytest.mark.parametrize("module", ["model", "speedup", "schedule", "profile", "dual",
                                    "knapsack", "demt", "baselines", "bounds", "generators"])
def test_module_examples_run(module):
    import doctest
    import importlib
    r = doctest.testmod(importlib.import_module(f"controller.moldable.{module}"))
    assert r.failed == 0 and r.attempted > 0
