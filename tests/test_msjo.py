"""MSJO (Ling et al.; algorithms.md 3): model, verifier, LPs, MarS / T-MarS / SO-MarS,
baselines, generators.

Properties checked on random small instances (hypothesis):

* every policy's schedule passes the verifier (one task per machine at a time,
  non-preemption, releases, ``S_v >= S_u + p_u + d_u``, every task once);
* every LP value is at most the cost of every verified schedule, and at most the
  brute-force optimum on tiny instances;
* ``CND <= CLS <= cost(MarS)``; with ``e = 0`` COGE ends with no violated PGC;
* MarS: ``C_j <= 3 C_j^LP`` per job when maps are shorter than reduces (Theorem 3);
* T-MarS: every task inside its block and ``C_u <= 7 C_u^LP`` (Theorem 5);
* the subset inequality (4) holds for real schedules (brute force over all subsets).

**Brute force.** On identical machines every feasible schedule is dominated, task by
task, by the strict list schedule (:func:`list_schedule`: earliest-free machine,
earliest feasible start) of its tasks sorted by start: by induction on that order each
task starts no later than in the original (the sorted machine free times and the maps'
output times are no later). Regular objectives (``sum w C``) are therefore minimised
over the list schedules of all precedence-consistent permutations, which
:func:`brute_force` enumerates (tiny instances only: at most 6 tasks).
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.msjo import LEVEL, POLICIES, get_policy
from controller.msjo.baselines import balanced_assignment
from controller.msjo.generators import perturb, synthetic
from controller.msjo.lp import (middle_order, pgc_violations, solve_cls_lp, solve_coge,
                                solve_task_lp)
from controller.msjo.mars import mars, so_mars, t_mars
from controller.msjo.model import Cluster, Job, Task, WorkloadError
from controller.msjo.schedule import (MSJOSchedule, ScheduleError, list_schedule, retime,
                                      verify)

SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])
TOL = 1e-6


# ---------------------------------------------------------------------- instances
@st.composite
def clusters(draw, max_jobs=3, max_maps=3, max_reduces=2, max_machines=3,
             map_shorter=False):
    """Small random clusters: integer-ish lengths, delays, releases and weights."""
    jobs = []
    for k in range(draw(st.integers(1, max_jobs))):
        nm = draw(st.integers(1, max_maps))
        nr = draw(st.integers(1, max_reduces))
        if map_shorter:
            pm = [draw(st.integers(1, 4)) for _ in range(nm)]
            pr = [draw(st.integers(5, 9)) for _ in range(nr)]
        else:
            pm = [draw(st.integers(1, 8)) for _ in range(nm)]
            pr = [draw(st.integers(1, 8)) for _ in range(nr)]
        maps = tuple(Task(float(p), float(draw(st.integers(0, 3))) / 2) for p in pm)
        reds = tuple(Task(float(p)) for p in pr)
        jobs.append(Job(f"j{k}", maps, reds, float(draw(st.integers(0, 6))),
                        float(draw(st.integers(1, 5)))))
    return Cluster(draw(st.integers(1, max_machines)), tuple(jobs))


def brute_force(c: Cluster) -> tuple[float, float]:
    """Optimal ``sum w_j C_j`` and ``sum w_u C_u`` (see the module docstring)."""
    a = c.arrays
    best_job = best_task = np.inf
    for perm in itertools.permutations(range(a.n_tasks)):
        pos = np.empty(a.n_tasks, dtype=np.int64)
        pos[list(perm)] = np.arange(a.n_tasks)
        last_map = np.full(a.n_jobs, -1)
        np.maximum.at(last_map, a.job[a.is_map], pos[a.is_map])
        if np.any(~a.is_map & (pos < last_map[a.job])):
            continue
        s = list_schedule(a, np.array(perm))
        best_job = min(best_job, s.job_cost)
        best_task = min(best_task, s.task_cost)
    return best_job, best_task


def run_all(a, interval=7.0):
    out = {}
    for name, f in POLICIES.items():
        out[name] = f(a, interval=interval) if name == "so-mars" else f(a)
    return out


# ---------------------------------------------------------------------- verifier
@settings(max_examples=120, **SETTINGS)
@given(clusters(), st.sampled_from([3.0, 7.0, 20.0]))
def test_every_policy_schedule_is_feasible(c, interval):
    for name, s in run_all(c.arrays, interval).items():
        verify(s)
        assert np.all(np.isfinite(s.start)), name


@settings(max_examples=30, **SETTINGS)
@given(st.integers(0, 10_000), st.sampled_from(["random", "uniform"]))
def test_every_policy_is_feasible_on_generated_clusters(seed, scenario):
    c = synthetic(2, scenario=scenario, machines=8, mean_maps=4, seed=seed)
    for s in run_all(c.arrays, 15.0).values():
        verify(s)


def _one_job():
    return Cluster(2, (Job("a", (Task(2.0, delay=1.0),), (Task(3.0),), release=1.0),))


def test_verifier_rejects_the_broken_rules():
    a = _one_job().arrays
    ok = MSJOSchedule(a, np.array([0, 1]), np.array([1.0, 4.0]))
    verify(ok)
    for machine, start, what in [
            ([0, 1], [0.0, 4.0], "release"),
            ([0, 1], [1.0, 3.5], "maps' output"),
            ([0, 0], [1.0, 2.0], "overlap"),
            ([0, 2], [1.0, 4.0], "machine"),
            ([0, 1], [1.0, np.nan], "no start")]:
        with pytest.raises(ScheduleError, match=what):
            verify(MSJOSchedule(a, np.array(machine), np.array(start)))


def test_objectives_weight_jobs_and_tasks():
    c = Cluster(1, (Job("a", (Task(1.0),), (Task(2.0, weight=5.0),), weight=3.0),))
    s = list_schedule(c.arrays, [0, 1])
    assert s.job_completion.tolist() == [3.0]
    assert s.job_cost == 9.0
    assert s.task_cost == 3.0 * 1.0 + 5.0 * 3.0


# ---------------------------------------------------------------------- LPs
@settings(max_examples=80, **SETTINGS)
@given(clusters())
def test_lp_values_are_lower_bounds_on_every_verified_schedule(c):
    a = c.arrays
    cls = solve_cls_lp(a)
    cnd = solve_coge(a)
    task = solve_task_lp(a)
    assert cls.optimal and task.optimal
    for name, s in run_all(a).items():
        verify(s)
        assert cnd.value <= cls.value * (1 + TOL) + TOL
        assert cls.value <= s.job_cost * (1 + TOL) + TOL, name
        assert task.value <= s.task_cost * (1 + TOL) + TOL, name


@settings(max_examples=40, **SETTINGS)
@given(clusters(max_jobs=2, max_maps=2, max_reduces=2, max_machines=2))
def test_lp_value_is_a_lower_bound_on_brute_force(c):
    a = c.arrays
    if a.n_tasks > 6:
        return
    opt_job, opt_task = brute_force(c)
    for r in (solve_cls_lp(a), solve_coge(a), solve_coge(a, threshold=0.0)):
        assert r.value <= opt_job * (1 + TOL) + TOL, r.lp
    assert solve_task_lp(a).value <= opt_task * (1 + TOL) + TOL
    assert mars(a).job_cost >= opt_job * (1 - TOL) - TOL


@settings(max_examples=60, **SETTINGS)
@given(clusters())
def test_cnd_le_cls_le_mars(c):
    a = c.arrays
    for e in (0.0, 0.3):
        cnd = solve_coge(a, threshold=e)
        cls = solve_cls_lp(a)
        assert cnd.value <= cls.value * (1 + TOL) + TOL
        assert cls.value <= mars(a, lp=cnd).job_cost * (1 + TOL) + TOL


@settings(max_examples=60, **SETTINGS)
@given(clusters())
def test_coge_with_zero_threshold_ends_without_violated_pgc(c):
    a = c.arrays
    r = solve_coge(a, threshold=0.0)
    assert r.optimal and r.details.stopped == "no_violation" and r.details.violated == 0
    s = r.solution.start
    viol, rhs = pgc_violations(a, s, middle_order(a, s))
    assert np.all(viol <= 1e-6 * np.maximum(1.0, np.abs(rhs)))


@settings(max_examples=40, **SETTINGS)
@given(clusters(max_jobs=2, max_maps=2, max_reduces=2))
def test_subset_inequality_holds_for_real_schedules(c):
    """(4): sum_B p S >= p(B)^2/(2|M|) - p2(B)/2 for every subset B, brute force."""
    a = c.arrays
    s = mars(a).start
    p, m = a.length, a.machines
    for k in range(1, a.n_tasks + 1):
        for B in itertools.combinations(range(a.n_tasks), k):
            B = list(B)
            assert p[B] @ s[B] >= p[B].sum() ** 2 / (2 * m) - (p[B] ** 2).sum() / 2 - TOL


# ---------------------------------------------------------------------- approximation
@settings(max_examples=80, **SETTINGS)
@given(clusters(max_jobs=4, max_maps=4, max_reduces=3, map_shorter=True))
def test_mars_is_within_three_times_the_lp_per_job(c):
    """Theorem 3: maps shorter than reduces and COGE ended without a violated PGC."""
    a = c.arrays
    lp = solve_coge(a, threshold=0.0)
    assert lp.details.violated == 0
    s = mars(a, lp=lp)
    verify(s)
    assert np.all(s.job_completion <= 3 * lp.solution.job_completion * (1 + TOL) + TOL)


@settings(max_examples=80, **SETTINGS)
@given(clusters(max_jobs=4, max_maps=4, max_reduces=3))
def test_t_mars_tasks_stay_in_their_blocks_and_within_seven_times_the_lp(c):
    a = c.arrays
    blocks = t_mars(a, compact=False)
    s = t_mars(a)
    for x in (blocks, s):
        verify(x)
        assert np.all(x.end <= 7 * x.info["lp_completion"] * (1 + TOL) + TOL)
    b = blocks.info["blocks"]
    lo, hi = b.bounds[b.block - 1], b.bounds[b.block]
    assert np.all(blocks.start >= lo - TOL) and np.all(blocks.end <= hi * (1 + TOL) + TOL)
    assert np.all(s.end <= blocks.end + TOL)          # compaction never delays a task


def test_so_mars_with_a_huge_interval_is_mars_after_the_last_release():
    c = synthetic(3, machines=6, mean_maps=4, seed=3)
    a = c.arrays
    s = so_mars(a, interval=1e6)
    verify(s)
    assert s.info["replans"] == 1
    assert np.all(s.start >= 1e6)


# ---------------------------------------------------------------------- input errors
@pytest.mark.parametrize("make, match", [
    (lambda: Job("a", (Task(-1.0),), (Task(1.0),)), r"job 'a', map task 0: length"),
    (lambda: Job("a", (Task(0.0),), (Task(1.0),)), r"length must be > 0"),
    (lambda: Job("a", (Task(1.0, delay=-2),), (Task(1.0),)), r"map task 0: delay"),
    (lambda: Job("a", (Task(1.0),), (Task(1.0, delay=1),)), r"reduce task 0: delay"),
    (lambda: Job("a", (Task(1.0),), ()), r"job 'a': reduces"),
    (lambda: Job("a", (Task(1.0),), (Task(1.0),), weight=0), r"job 'a': weight"),
    (lambda: Job("a", (Task(1.0),), (Task(1.0),), release=-1), r"job 'a': release"),
    (lambda: Job("a", (Task(1.0, release=1),), (Task(1.0),), release=2), r"before the job"),
    (lambda: Job("a", (Task(float("nan")),), (Task(1.0),)), r"finite"),
    (lambda: Job("a", Task(1.0), (Task(1.0),)), r"maps must be a list"),
    (lambda: Job("", (Task(1.0),), (Task(1.0),)), r"job id"),
    (lambda: Cluster(0, ()), r"machines"),
    (lambda: Cluster(1, (Job("a", (Task(1.0),), (Task(1.0),)),) * 2), r"duplicate"),
])
def test_bad_input_is_a_workload_error_naming_job_task_and_field(make, match):
    with pytest.raises(WorkloadError, match=match):
        make()


def test_unknown_policy_lists_the_known_ones():
    with pytest.raises(KeyError, match="mars"):
        get_policy("nope")
    assert set(LEVEL) == set(POLICIES)


# ---------------------------------------------------------------------- generators
def test_generators_follow_the_paper_scenarios():
    u = synthetic(4, scenario="uniform", seed=0)
    assert all(len(j.maps) == 30 and len(j.reduces) == 10 for j in u.jobs)
    assert set(u.arrays.length.tolist()) == {10.0, 15.0}
    assert np.allclose(u.arrays.delay[u.arrays.is_map], 1.0)
    r = synthetic(20, seed=1, task_weights=True)
    a = r.arrays
    assert all(1 <= len(j.reduces) <= len(j.maps) for j in r.jobs)
    assert np.all(a.length > 0) and np.all(a.weight > 0) and np.all(a.job_weight > 0)
    assert np.all(np.diff(a.job_release) >= 1.0)
    assert synthetic(20, seed=1).arrays.length.tolist() == \
        synthetic(20, seed=1).arrays.length.tolist()


def test_prediction_error_perturbs_lengths_and_retime_uses_the_true_ones():
    c = synthetic(3, machines=5, mean_maps=5, seed=2)
    g = perturb(c, 1.0, seed=3)
    f = g.arrays.length / c.arrays.length
    assert np.all((f >= 0.01) & (f <= 2.0)) and not np.allclose(f, 1.0)
    assert np.allclose(g.arrays.delay / g.arrays.length, c.arrays.delay / c.arrays.length,
                       equal_nan=True)
    plan = mars(g.arrays)
    s = retime(c.arrays, plan)
    verify(s)
    kept = retime(c.arrays, plan, keep_machines=True)
    verify(kept)
    assert np.array_equal(kept.machine, plan.machine)
    same = retime(g.arrays, plan)                 # on the planned lengths: a left shift
    assert np.all(same.end <= plan.end + TOL)
    assert np.array_equal(perturb(c, 0.0).arrays.length, c.arrays.length)


def test_balanced_assignment_balances_machine_work():
    a = synthetic(5, machines=7, seed=4).arrays
    load = np.bincount(balanced_assignment(a), weights=a.length, minlength=7)
    assert load.max() - load.min() <= a.length.max() + 1e-9


# ---------------------------------------------------------------------- fast CLS-LPP
@settings(max_examples=40, **SETTINGS)
@given(clusters(max_jobs=4, max_maps=4, max_reduces=3, max_machines=3))
def test_fast_cls_lp_is_the_same_lp_as_the_plain_loop(c):
    """The HUWF chain seed and the spread cuts change how CLS-LPP is reached, not what it
    is: same value, optimal, no subset of the pool violated at the returned times."""
    a = c.arrays
    fast, plain = solve_cls_lp(a, fast=True), solve_cls_lp(a, fast=False)
    assert fast.status == plain.status == "optimal"
    assert fast.value == pytest.approx(plain.value, rel=1e-7)
    assert fast.details.max_violation <= 1e-7
    # (4) for every prefix in K = S + p (m + 1) / 2m order: the most violated subset
    s = fast.solution.start
    k = s + a.length * (a.machines + 1) / (2 * a.machines)
    v, rhs = pgc_violations(a, s, np.lexsort((np.arange(a.n_tasks), k)))
    assert (v <= 1e-6 * np.maximum(1.0, np.abs(rhs))).all()


def test_fast_cls_lp_needs_fewer_rounds_on_a_generated_pool():
    a = synthetic(12, machines=20, seed=4).arrays
    fast, plain = solve_cls_lp(a, fast=True), solve_cls_lp(a, fast=False)
    assert fast.value == pytest.approx(plain.value, rel=1e-7)
    assert fast.rounds < plain.rounds


def test_a_chain_seed_holds_every_prefix_of_its_order_and_spread_cuts_are_violated():
    """CuttingPlane.seed_chain: after it the LP meets (4) for every prefix of the key order
    at every port (2 ports here); select_cuts(spread=k) adds up to k violated prefixes per
    port beside the local maxima."""
    from controller.lp.separation import CuttingPlane, PortItems, prefix_violations, \
        select_cuts
    rng = np.random.default_rng(1)
    n = 30
    size = rng.uniform(0.5, 2.0, n)
    items = PortItems.build(np.arange(n) % 2, np.arange(n), size, size * size, 2)
    key = rng.permutation(n).astype(float)
    cp = CuttingPlane(rng.uniform(1, 3, n), np.zeros(n), np.full(n, np.inf), None, items, 2)
    assert cp.seed_chain(key) == n
    x = cp.solve()[:n]
    for port in (0, 1):
        cols = np.flatnonzero(np.arange(n) % 2 == port)
        cols = cols[np.argsort(key[cols], kind="stable")]
        d = size[cols]
        lhs = np.cumsum(d * x[cols])
        rhs = (np.cumsum(d) ** 2 + np.cumsum(d * d)) / 4.0
        assert (lhs >= rhs - 1e-7 * np.maximum(1, rhs)).all()
    x0 = np.zeros(n)                            # everything violated
    base = select_cuts(items, x0, 2, cap=2)
    wide = select_cuts(items, x0, 2, cap=2, spread=5)
    assert len(base.lengths) <= 4 < len(wide.lengths) <= 4 + 10
    pv = prefix_violations(items, x0, 2)
    ends = wide.starts + wide.lengths - 1
    assert (pv.violation[ends] > 0).all()
    assert set(zip(base.starts, base.lengths)) <= set(zip(wide.starts, wide.lengths))
