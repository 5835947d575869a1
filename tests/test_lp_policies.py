"""Tests of Algorithms 1-3 (controller.policies.lp_list) run in the flow-level simulator.

The properties are those of algorithms.md 1.10 / 1.12, checked on the simulated segments:

* (E) for every flow ``C_f <= a_k + d_f + B_f`` (``B_f``: size of the flows before ``f``
  in ``π`` on ``f``'s core sharing one of its ports);
* ``C_k <= (1 + β χ_k) C̄_k`` per coflow and ``Σ w C <= ratio · LP``;
* the LP value is at most the cost of every schedule of its variant;
* a feasibility check of the schedule (link rates, bytes, releases, precedence, one core
  per flow, one core per coflow for the indivisible algorithms).

Times: ``rate_bps = 8`` makes one byte one second.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from verifier import verify

from controller.lp.coflow import solve_coflow_lp, solve_flow_lp
from controller.model import Coflow, Flow, Job, Workload
from controller.plan import Plan, coflow_order_plan
from controller.policies import Policy, PolicyError, get_policy
from controller.policies.lp_list import (assign_cores_by_coflow, assign_cores_by_flow,
                                         lp_list_schedule)
from emulate.sim.flowsim import simulate
from topologies.fabric import Fabric

RATE = 8.0
TOL = 1e-6


# --------------------------------------------------------------------------- instances
def random_workload(rng, *, ports=4, cores=2, n_coflows=8, max_flows=5, max_size=6.0,
                    releases=True, arc_p=0.25, jobs=False, rate=RATE):
    coflows = []
    pairs = [(s, d) for s in range(ports) for d in range(ports)]
    for k in range(n_coflows):
        nf = int(rng.integers(1, max_flows + 1))
        pick = rng.choice(len(pairs), size=min(nf, len(pairs)), replace=False)
        flows = tuple(Flow(*pairs[p], float(rng.integers(1, int(max_size) + 1)))
                      for p in pick)
        rel = float(rng.integers(0, 6)) if releases and rng.random() < 0.6 else 0.0
        coflows.append(Coflow(f"c{k}", flows, release=rel,
                              weight=float(rng.integers(1, 6))))
    arcs = tuple((f"c{a}", f"c{b}") for a in range(n_coflows) for b in range(a + 1, n_coflows)
                 if rng.random() < arc_p)
    js = ()
    if jobs:
        js = tuple(Job(f"j{g}", tuple(f"c{k}" for k in range(g, n_coflows, 3)),
                       float(rng.integers(1, 5))) for g in range(2))
    return Workload(Fabric(ports=ports, cores=cores, rate_bps=rate), tuple(coflows), arcs, js)


def seconds(w):
    return w.arrays.size * 8.0 / w.fabric.rate_bps


class FixedPlan(Policy):
    """Applies one precomputed plan at every event (to run a given list on the engine)."""

    name = "fixed-plan-test"

    def __init__(self, plan):
        super().__init__()
        self._p = plan

    def plan(self, state):
        return self._p


class RandomOrder(Policy):
    """Baseline: coflows in a fixed random order, flows on random cores."""

    name = "random-order-test"

    def __init__(self, seed):
        super().__init__()
        self.seed = seed

    def start(self, workload):
        super().start(workload)
        rng = np.random.default_rng(self.seed)
        self.order = rng.permutation(len(workload.coflows))
        self.cores = rng.integers(0, workload.fabric.cores, workload.arrays.n_flows)

    def plan(self, state):
        core = np.where(state.core >= 0, state.core, self.cores)
        return coflow_order_plan(state, self.order, core)


# --------------------------------------------------------------------------- checks
def check_schedule(w, res, *, indivisible=False, only_core=None):
    """The independent verifier (tests/verifier.py) on a simulated run; returns its Verdict.

    The verifier checks link rates, bytes, no migration, releases, precedence and the
    reported completion times, and recomputes the completions from the segments.
    """
    v = verify(w, res, indivisible=indivisible)
    if only_core is not None:
        assert np.all(res.segments.core == only_core)
    return v


def beta(algorithm, m):
    if algorithm == "flow":
        return 4.0 if m == 1 else 5.0 - 2.0 / m
    if algorithm == "coflow":
        return 4.0 * m
    return 4.0


def run_policy(w, name, **opts):
    pol = get_policy(name, **opts)
    res = simulate(w, pol, segments=True)
    return pol, res


ALGOS = [("lp-flow", "flow"), ("lp-coflow", "coflow"), ("lp-single", "single")]


# =========================================================================== tests
@pytest.mark.parametrize("name,algorithm", ALGOS)
@pytest.mark.parametrize("seed", range(4))
def test_schedules_are_feasible(name, algorithm, seed):
    rng = np.random.default_rng(seed)
    w = random_workload(rng, cores=1 + seed % 3)
    for mode in ("offline", "online"):
        _, res = run_policy(w, name, mode=mode)
        check_schedule(w, res, indivisible=algorithm != "flow",
                       only_core=0 if algorithm == "single" else None)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2 ** 32 - 1), cores=st.integers(1, 3),
       algo=st.sampled_from(ALGOS), objective=st.sampled_from(["weighted", "jobs", "makespan"]))
def test_engine_bound_E_and_per_coflow_bound_hold(seed, cores, algo, objective):
    """(E) C_f <= a_k + d_f + B_f; and C_k <= (1 + beta chi_k) C_bar_k (algorithms.md 1.10)."""
    name, algorithm = algo
    rng = np.random.default_rng(seed)
    w = random_workload(rng, cores=cores, arc_p=0.3, jobs=objective == "jobs")
    a, p = w.arrays, seconds(w)
    pol, res = run_policy(w, name, objective=objective)
    v = check_schedule(w, res, indivisible=algorithm != "flow")
    sched = pol.schedule
    pos = np.empty(a.n_flows, dtype=np.int64)
    pos[sched.order] = np.arange(len(sched.order))
    for f in range(a.n_flows):
        before = (pos < pos[f]) & (sched.core == sched.core[f]) & (
            (a.src == a.src[f]) | (a.dst == a.dst[f]))
        bound = v.ready[a.coflow[f]] + p[f] + p[before].sum()
        assert v.flow_completion[f] <= bound + TOL
    chi_k = w.chain_lengths
    cbar = sched.lp.solution.coflow_completion
    b = beta(algorithm, 1 if algorithm == "single" else cores)
    assert np.all(v.coflow_completion <= (1 + b * chi_k) * cbar + TOL)


@pytest.mark.parametrize("name,algorithm", ALGOS)
@pytest.mark.parametrize("releases", [True, False])
@pytest.mark.parametrize("cores", [1, 2, 4])
def test_total_weighted_completion_within_the_ratio_of_the_lp(name, algorithm, releases,
                                                                cores):
    for seed in range(3):
        rng = np.random.default_rng(1000 + seed)
        w = random_workload(rng, cores=cores, n_coflows=10, releases=releases, arc_p=0.3)
        pol, res = run_policy(w, name)
        v = check_schedule(w, res, indivisible=algorithm != "flow")
        m = 1 if algorithm == "single" else cores
        b = beta(algorithm, m)
        chi = w.chi
        lp = pol.schedule.lp.value
        cost = v.objective
        assert lp <= cost + TOL
        # (6 - 2/m) chi, (4m + 1) chi, 5 chi (and 1 less with zero releases), via 1 + beta chi
        ratio = (b * chi) if not releases else (1 + b * chi)
        assert cost <= ratio * lp + TOL
        if not releases:
            assert np.all(v.coflow_completion <= b * w.chain_lengths *
                          pol.schedule.lp.solution.coflow_completion + TOL)


@pytest.mark.parametrize("seed", range(5))
def test_lp_value_is_at_most_the_cost_of_every_simulated_schedule(seed):
    rng = np.random.default_rng(2000 + seed)
    w = random_workload(rng, cores=2, n_coflows=9, arc_p=0.3, jobs=True)
    a = w.arrays
    runs = {}
    for name, algorithm in ALGOS:
        for mode in ("offline", "online"):
            runs[(name, mode)] = simulate(w, get_policy(name, mode=mode), segments=True)
            check_schedule(w, runs[(name, mode)], indivisible=algorithm != "flow")
    for s in range(3):
        runs[("random", s)] = simulate(w, RandomOrder(s), segments=True)
        check_schedule(w, runs[("random", s)])
    for obj in ("weighted", "jobs", "makespan"):
        lp1 = solve_flow_lp(a, 2, RATE, obj).value
        lp7 = solve_coflow_lp(a, 2, RATE, obj).value
        lp8 = solve_coflow_lp(a, 1, RATE, obj).value

        def cost(r):
            return {"weighted": r.total_weighted_completion,
                    "jobs": r.total_weighted_job_completion
                    + float(np.dot(a.weight[a.job_of < 0], r.coflow_completion[a.job_of < 0])),
                    "makespan": r.makespan}[obj]
        for key, r in runs.items():
            assert lp1 <= cost(r) + TOL, key          # every schedule is divisible
            if key[0] in ("lp-coflow", "lp-single"):
                assert lp7 <= cost(r) + TOL, key      # indivisible schedules
            if key[0] == "lp-single":
                assert lp8 <= cost(r) + TOL, key      # single-core schedules


@pytest.mark.parametrize("seed", range(4))
def test_single_core_algorithms_give_identical_schedules(seed):
    rng = np.random.default_rng(3000 + seed)
    w = random_workload(rng, cores=1, n_coflows=8, arc_p=0.3)
    # Algorithms 2 and 3 solve the same LP when m = 1
    _, r2 = run_policy(w, "lp-coflow")
    _, r3 = run_policy(w, "lp-single")
    assert np.array_equal(r2.coflow_completion, r3.coflow_completion)
    s2, s3 = r2.segments.sorted(), r3.segments.sorted()
    for field in ("flow", "core", "start", "end", "rate_bps"):
        assert np.array_equal(getattr(s2, field), getattr(s3, field))
    # Algorithm 1 with the same C_bar (hence the same pi) gives the same schedule as well
    lp8 = solve_coflow_lp(w.arrays, 1, RATE)
    l1 = lp_list_schedule(w, "flow", lp=lp8)
    l2 = lp_list_schedule(w, "coflow", lp=lp8)
    assert np.array_equal(l1.order, l2.order)
    r1 = simulate(w, FixedPlan(l1.plan()), segments=True)
    assert np.array_equal(r1.coflow_completion, r2.coflow_completion)
    s1 = r1.segments.sorted()
    for field in ("flow", "core", "start", "end"):
        assert np.array_equal(getattr(s1, field), getattr(s2, field))


@pytest.mark.parametrize("name", ["lp-flow", "lp-coflow", "lp-single"])
def test_scaling_sizes_and_releases_scales_completions(name):
    rng = np.random.default_rng(5)
    w = random_workload(rng, cores=2, n_coflows=8, arc_p=0.3)
    c = 2.5
    w2 = w.replace(coflows=tuple(
        Coflow(k.id, tuple(Flow(f.src, f.dst, f.bytes * c) for f in k.flows),
               release=k.release * c, weight=k.weight) for k in w.coflows))
    for mode in ("offline", "online"):
        r1 = simulate(w, get_policy(name, mode=mode))
        r2 = simulate(w2, get_policy(name, mode=mode))
        assert r2.coflow_completion == pytest.approx(c * r1.coflow_completion, rel=1e-6)


@pytest.mark.parametrize("seed", range(6))
def test_flow_core_is_the_least_loaded_at_decision_time(seed):
    rng = np.random.default_rng(4000 + seed)
    w = random_workload(rng, cores=3, n_coflows=10)
    a = w.arrays
    sched = lp_list_schedule(w, "flow")
    load_in = np.zeros((3, a.ports))
    load_out = np.zeros((3, a.ports))
    for f in sched.order:
        v = load_in[:, a.src[f]] + load_out[:, a.dst[f]]
        assert sched.core[f] == int(np.flatnonzero(v == v.min())[0])
        load_in[sched.core[f], a.src[f]] += a.size[f]
        load_out[sched.core[f], a.dst[f]] += a.size[f]
    # pi is sorted by (C_bar_f, topo rank, k, i, j)
    cbar = sched.lp.solution.flow_completion
    key = [(cbar[f], w.topo_rank[a.coflow[f]], a.coflow[f], a.src[f], a.dst[f])
           for f in sched.order]
    assert key == sorted(key)


@pytest.mark.parametrize("seed", range(6))
def test_coflow_core_minimises_its_completion_bound(seed):
    rng = np.random.default_rng(5000 + seed)
    w = random_workload(rng, cores=3, n_coflows=10)
    a = w.arrays
    sched = lp_list_schedule(w, "coflow")
    load_in = np.zeros((3, a.ports))
    load_out = np.zeros((3, a.ports))
    for k in sched.coflow_order:
        fl = np.flatnonzero(a.coflow == k)
        lin = np.bincount(a.src[fl], weights=a.size[fl], minlength=a.ports)
        lout = np.bincount(a.dst[fl], weights=a.size[fl], minlength=a.ports)
        bound = [max(load_in[h, a.src[f]] + lin[a.src[f]] + load_out[h, a.dst[f]]
                     + lout[a.dst[f]] for f in fl) for h in range(3)]
        h = sched.core[fl]
        assert np.all(h == h[0])
        assert h[0] == int(np.argmin(bound))
        load_in[h[0]] += lin
        load_out[h[0]] += lout
    # flows are listed coflow by coflow in the coflow order, (i, j) inside
    key = [(list(sched.coflow_order).index(a.coflow[f]), a.src[f], a.dst[f])
           for f in sched.order]
    assert key == sorted(key)


def test_lp_ties_are_broken_by_topological_rank_then_index():
    # three identical coflows on disjoint ports, all C_bar = 1; arcs make c2 first in topo
    flows = [(0, 1), (1, 2), (2, 0)]
    cs = tuple(Coflow(f"c{k}", (Flow(*flows[k], 1.0),)) for k in range(3))
    w = Workload(Fabric(ports=3, cores=1, rate_bps=RATE), (cs[2], cs[0], cs[1]))
    sched = lp_list_schedule(w, "coflow")
    assert np.allclose(sched.lp.solution.coflow_completion, 1.0)
    assert list(sched.coflow_order) == [0, 1, 2]      # no DAG: by index
    w2 = Workload(w.fabric, w.coflows, precedence=(("c1", "c0"),))
    sched2 = lp_list_schedule(w2, "coflow", lp=sched.lp)   # same C_bar, a DAG
    # topological order (ties by index): c2 (index 0), c1 (index 2), c0 (index 1)
    assert list(w2.topo_rank) == [0, 2, 1]
    assert list(sched2.coflow_order) == [0, 2, 1]


@pytest.mark.parametrize("name", ["lp-flow", "lp-coflow", "lp-single"])
def test_online_with_all_releases_at_zero_is_offline(name):
    rng = np.random.default_rng(6)
    w = random_workload(rng, cores=2, n_coflows=8, releases=False, arc_p=0.3)
    pol_on, r_on = run_policy(w, name, mode="online")
    _, r_off = run_policy(w, name, mode="offline")
    assert len(pol_on.solves) == 1
    assert np.array_equal(r_on.coflow_completion, r_off.coflow_completion)


@pytest.mark.parametrize("name", ["lp-flow", "lp-coflow", "lp-single"])
def test_online_policy_does_not_see_future_coflows(name):
    """Changing coflows released after T leaves the schedule before T unchanged."""
    rng = np.random.default_rng(8)
    w = random_workload(rng, cores=2, n_coflows=10, arc_p=0.0)
    T = 3.0
    late = [k for k, c in enumerate(w.coflows) if c.release > T]
    assert late
    w2 = w.replace(coflows=tuple(
        Coflow(c.id, tuple(Flow(f.src, f.dst, f.bytes * 7) for f in c.flows), c.release,
               c.weight * 3) if k in late else c for k, c in enumerate(w.coflows)))
    pol1, r1 = run_policy(w, name, mode="online")
    _, r2 = run_policy(w2, name, mode="online")
    assert len(pol1.solves) > 1
    for r in (r1, r2):
        check_schedule(r.workload, r, indivisible=name != "lp-flow")

    def before(r):
        s = r.segments.sorted()
        keep = s.start < T
        return [(int(f), int(h), float(t0), float(min(t1, T))) for f, h, t0, t1 in
                zip(s.flow[keep], s.core[keep], s.start[keep], s.end[keep])]
    assert before(r1) == before(r2)


def test_online_replans_only_when_coflows_are_released():
    rng = np.random.default_rng(9)
    w = random_workload(rng, cores=2, n_coflows=10, arc_p=0.3)
    pol, _ = run_policy(w, "lp-flow", mode="online")
    release_times = np.unique(w.arrays.release)
    solve_times = [t for t, _, n in pol.solves if n > 0]
    assert solve_times == pytest.approx(list(release_times))
    # each solve saw exactly the released, unfinished coflows (at most all released)
    for t, _, n in pol.solves:
        assert n <= int((w.arrays.release <= t + 1e-12).sum())


def test_policy_options_are_validated():
    with pytest.raises(PolicyError, match="mode"):
        get_policy("lp-flow", mode="sometimes")
    with pytest.raises(PolicyError, match="objective"):
        get_policy("lp-coflow", objective="fast")
    with pytest.raises(PolicyError):
        get_policy("lp-single", cores=2)


def test_heterogeneous_cores_are_rejected_by_the_lp_policies():
    w = Workload(Fabric(ports=2, cores=2, rate_bps=8.0, core_rates=(8.0, 16.0)),
                 (Coflow("a", (Flow(0, 1, 1.0),)),))
    for name, _ in ALGOS:
        with pytest.raises(ValueError, match="identical cores"):
            get_policy(name).start(w)


def test_pinned_flows_keep_their_core_and_count_in_the_loads():
    # flow 0 (c0) pinned on core 1 with 5 bytes left; c1's flow on the same ports must
    # then prefer core 0
    w = Workload(Fabric(ports=2, cores=2, rate_bps=RATE),
                 (Coflow("c0", (Flow(0, 1, 6.0),)), Coflow("c1", (Flow(0, 1, 1.0),))))
    rem = np.array([5.0, 1.0])
    pinned = np.array([1, -1])
    for algorithm in ("flow", "coflow"):
        s = lp_list_schedule(w, algorithm, remaining=rem, now=1.0, pinned=pinned)
        assert s.core[0] == 1
        assert s.core[1] == 0
    # the pure assignment functions agree
    assert list(assign_cores_by_flow([0, 1], [0, 0], [1, 1], [5.0, 1.0], 2, 2,
                                     pinned)) == [1, 0]
    assert list(assign_cores_by_coflow([0, 1], [np.array([0]), np.array([1])], [0, 0],
                                       [1, 1], [5.0, 1.0], 2, 2, pinned)) == [1, 0]


def test_a_partly_finished_coflow_keeps_its_core_online():
    # c0 sent flow 0 on core 1 and finished it; its unstarted flow 1 must follow to core 1
    w = Workload(Fabric(ports=3, cores=2, rate_bps=RATE),
                 (Coflow("c0", (Flow(0, 1, 1.0), Flow(2, 1, 4.0))),))
    s = lp_list_schedule(w, "coflow", remaining=np.array([0.0, 4.0]), now=1.0,
                         pinned=np.array([1, -1]))
    assert s.core[1] == 1


def test_a_plan_moves_no_started_flow_in_online_mode():
    """Plan.validate (called by the simulator at every event) rejects migrations."""
    rng = np.random.default_rng(12)
    w = random_workload(rng, cores=3, n_coflows=12, arc_p=0.2)
    for name in ("lp-flow", "lp-coflow"):
        pol, res = run_policy(w, name, mode="online")
        assert len(pol.solves) > 1
        check_schedule(w, res, indivisible=name == "lp-coflow")


def test_plan_is_a_priority_plan_with_list_ranks():
    rng = np.random.default_rng(13)
    w = random_workload(rng, cores=2)
    sched = lp_list_schedule(w, "flow")
    plan = sched.plan()
    assert isinstance(plan, Plan) and plan.sharing == "priority"
    assert np.array_equal(np.argsort(plan.rank, kind="stable"), sched.order)
    assert np.array_equal(plan.core, sched.core)
