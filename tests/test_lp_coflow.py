"""Tests of the coflow LP relaxations (controller.lp.coflow), independent of the solver code.

The references here are written from algorithms.md 1.3-1.12 alone:

* a brute-force check of every subset inequality (every subset of every port);
* the same LPs written out with *all* subset rows and solved by ``scipy.optimize.linprog``
  (no separation, no reduction to coflow variables);
* an exhaustive unit-slot dynamic program over (remaining sizes, core assignment) that
  finds the best schedule with integer slots; the LP value must not exceed it.

Units: with ``rate_bps = 8`` a byte takes one second, so sizes are processing times.
"""
from __future__ import annotations

import functools
import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from controller.lp.coflow import (OBJECTIVES, solve_coflow_lp, solve_flow_lp,
                                  solve_single_core_lp)
from controller.model import Coflow, Flow, Job, Workload
from topologies.fabric import Fabric

RATE = 8.0   # bits/s: one byte per second


# --------------------------------------------------------------------------- instances
def make_workload(ports, cores, coflows, arcs=(), jobs=(), rate=RATE):
    """coflows: list of (release, weight, [(src, dst, bytes), ...])."""
    cs = tuple(Coflow(f"c{k}", tuple(Flow(s, d, float(b)) for s, d, b in flows),
                      release=float(r), weight=float(w))
               for k, (r, w, flows) in enumerate(coflows))
    return Workload(Fabric(ports=ports, cores=cores, rate_bps=rate), cs,
                    precedence=tuple((f"c{a}", f"c{b}") for a, b in arcs),
                    jobs=tuple(Job(f"j{g}", tuple(f"c{k}" for k in ks), float(wt))
                               for g, (wt, ks) in enumerate(jobs)))


def random_workload(rng, *, ports=3, cores=2, n_coflows=5, max_flows=4, max_size=5.0,
                    max_release=4.0, arc_p=0.3, integer=False, job_p=0.0):
    coflows = []
    for _ in range(n_coflows):
        pairs = [(s, d) for s in range(ports) for d in range(ports)]
        nf = int(rng.integers(1, max_flows + 1))
        pick = rng.choice(len(pairs), size=min(nf, len(pairs)), replace=False)
        if integer:
            sizes = rng.integers(1, int(max_size) + 1, size=len(pick)).astype(float)
            rel = float(rng.integers(0, int(max_release) + 1))
            wt = float(rng.integers(0, 5))
        else:
            sizes = rng.uniform(0.1, max_size, size=len(pick))
            rel = float(rng.uniform(0, max_release)) if rng.random() < 0.7 else 0.0
            wt = float(rng.uniform(0, 4))
        coflows.append((rel, wt, [(*pairs[p], s) for p, s in zip(pick, sizes)]))
    arcs = [(a, b) for a in range(n_coflows) for b in range(a + 1, n_coflows)
            if rng.random() < arc_p]
    jobs = []
    if job_p:
        members = [k for k in range(n_coflows) if rng.random() < job_p]
        while members:
            size = int(rng.integers(1, len(members) + 1))
            jobs.append((float(rng.integers(1, 5)), members[:size]))
            members = members[size:]
    return make_workload(ports, cores, coflows, arcs, jobs)


@st.composite
def tiny_workloads(draw, max_flows=5, max_cores=2):
    """<= 5 flows, integer sizes <= 3, integer releases, a random DAG and jobs."""
    ports = draw(st.integers(2, 3))
    cores = draw(st.integers(1, max_cores))
    n_coflows = draw(st.integers(1, 4))
    pairs = [(s, d) for s in range(ports) for d in range(ports)]
    coflows, total = [], 0
    for k in range(n_coflows):
        room = max_flows - total - (n_coflows - k - 1)
        nf = draw(st.integers(1, max(1, min(2, room))))
        chosen = draw(st.lists(st.sampled_from(pairs), min_size=nf, max_size=nf, unique=True))
        flows = [(s, d, draw(st.integers(1, 3))) for s, d in chosen]
        total += nf
        coflows.append((draw(st.integers(0, 3)), draw(st.integers(0, 4)), flows))
    arcs = [(a, b) for a in range(n_coflows) for b in range(a + 1, n_coflows)
            if draw(st.booleans())]
    jobs = []
    if draw(st.booleans()):
        ks = draw(st.lists(st.integers(0, n_coflows - 1), unique=True, max_size=n_coflows))
        if ks:
            cut = draw(st.integers(1, len(ks)))
            jobs = [(draw(st.integers(1, 4)), ks[:cut])]
            if ks[cut:]:
                jobs.append((draw(st.integers(1, 4)), ks[cut:]))
    return make_workload(ports, cores, coflows, arcs, jobs)


def seconds(w):
    """Processing time of every flow of ``w.arrays`` in seconds."""
    return w.arrays.size * 8.0 / w.fabric.rate_bps


def port_groups(a):
    """Input port i -> flows, output port j -> flows."""
    for i in range(a.ports):
        yield np.flatnonzero(a.src == i)
    for j in range(a.ports):
        yield np.flatnonzero(a.dst == j)


# --------------------------------------------------------------------------- brute force
def subset_violations(d, q, c, m):
    """Largest relative violation over *every* non-empty subset of the items."""
    n = len(d)
    if n == 0:
        return 0.0
    assert n <= 14
    masks = ((np.arange(1, 2 ** n)[:, None] >> np.arange(n)) & 1).astype(float)
    lhs = masks @ (d * c)
    rhs = ((masks @ d) ** 2 + masks @ q) / (2 * m)
    return float(np.max((rhs - lhs) / np.maximum(1.0, rhs)))


def flow_level_violation(w, res, m):
    a, p = w.arrays, seconds(w)
    worst = 0.0
    for fl in port_groups(a):
        worst = max(worst, subset_violations(p[fl], p[fl] ** 2,
                                             res.solution.flow_completion[fl], m))
    return worst


def coflow_level_loads(w):
    """Per port (inputs then outputs): array of coflow loads in seconds."""
    a, p = w.arrays, seconds(w)
    out = []
    for fl in port_groups(a):
        out.append(np.bincount(a.coflow[fl], weights=p[fl], minlength=a.n_coflows))
    return out


def coflow_level_violation(w, res, m):
    worst = 0.0
    for L in coflow_level_loads(w):
        ks = np.flatnonzero(L > 0)
        worst = max(worst, subset_violations(L[ks], L[ks] ** 2,
                                             res.solution.coflow_completion[ks], m))
    return worst


# --------------------------------------------------------------------------- full LP
def reference_lp(w, level, m, objective="weighted"):
    """LP (1) / (7) with every subset row written out, solved by linprog.

    Returns (value, C_k array, sum_k C_k) -- the last is the second-stage optimum for
    the lexicographic makespan LP.
    """
    a, p = w.arrays, seconds(w)
    nk, nf = a.n_coflows, a.n_flows
    r = a.release
    A, b = [], []
    lb = []
    if level == "flow":
        nvar = nf + nk
        ck = lambda k: nf + k   # noqa: E731
        lb = list(r[a.coflow] + p) + list(r)
        for f in range(nf):                      # (1a)  C_f - C_k <= 0
            row = np.zeros(nvar); row[f] = 1; row[ck(a.coflow[f])] = -1; A.append(row); b.append(0)
        for kp, k in a.arcs:                     # (1c)  C_k' - C_f <= -d_f
            fs = np.flatnonzero(a.coflow == k)
            for f in fs:
                row = np.zeros(nvar); row[ck(kp)] = 1; row[f] = -1; A.append(row); b.append(-p[f])
            if len(fs) == 0:
                row = np.zeros(nvar); row[ck(kp)] = 1; row[ck(k)] = -1; A.append(row); b.append(0)
        for fl in port_groups(a):                # (1d)/(1e): every subset
            for size in range(1, len(fl) + 1):
                for S in itertools.combinations(fl, size):
                    S = list(S)
                    row = np.zeros(nvar); row[S] = -p[S]; A.append(row)
                    b.append(-(p[S].sum() ** 2 + (p[S] ** 2).sum()) / (2 * m))
    else:
        nvar = nk
        ck = lambda k: k   # noqa: E731
        loads = coflow_level_loads(w)
        lb = list(r)
        for L in loads:                          # (7a)/(7b)
            lb = list(np.maximum(lb, r + L))
        for kp, k in a.arcs:                     # (7c)/(7d)
            for L in loads:
                row = np.zeros(nvar); row[kp] = 1; row[k] = -1; A.append(row); b.append(-L[k])
        for L in loads:                          # (7e)/(7f)
            ks = np.flatnonzero(L > 0)
            for size in range(1, len(ks) + 1):
                for S in itertools.combinations(ks, size):
                    S = list(S)
                    row = np.zeros(nvar); row[S] = -L[S]; A.append(row)
                    b.append(-(L[S].sum() ** 2 + (L[S] ** 2).sum()) / (2 * m))
    cost = np.zeros(nvar)
    if objective == "weighted":
        cost[[ck(k) for k in range(nk)]] = a.weight
    elif objective == "jobs":
        ng = len(a.job_weight)
        A = [np.concatenate((row, np.zeros(ng))) for row in A]
        cost = np.concatenate((cost, a.job_weight))
        for k in range(nk):
            if a.job_of[k] < 0:
                cost[ck(k)] = a.weight[k]
            else:
                row = np.zeros(nvar + ng); row[ck(k)] = 1; row[nvar + a.job_of[k]] = -1
                A.append(row); b.append(0)
        lb = list(lb) + [0.0] * ng
        nvar += ng
    else:
        A = [np.concatenate((row, [0.0])) for row in A]
        for k in range(nk):
            row = np.zeros(nvar + 1); row[ck(k)] = 1; row[nvar] = -1; A.append(row); b.append(0)
        cost = np.zeros(nvar + 1); cost[nvar] = 1
        lb = list(lb) + [0.0]
        nvar += 1
    bounds = [(x, None) for x in lb]
    res = linprog(cost, A_ub=np.array(A) if A else None, b_ub=np.array(b) if b else None,
                  bounds=bounds, method="highs")
    assert res.status == 0, res.message
    x = res.x
    if objective == "makespan":
        t = res.fun
        c2 = np.zeros(nvar); c2[[ck(k) for k in range(nk)]] = 1
        bounds[-1] = (0, t * (1 + 1e-9) + 1e-12)
        res2 = linprog(c2, A_ub=np.array(A), b_ub=np.array(b), bounds=bounds, method="highs")
        assert res2.status == 0
        x = res2.x
        return t, x[[ck(k) for k in range(nk)]], res2.fun
    ckv = x[[ck(k) for k in range(nk)]]
    return res.fun, ckv, ckv.sum()


# --------------------------------------------------------------------------- unit-slot DP
def unit_slot_optimum(w, variant, objective="weighted"):
    """Best cost over schedules in unit slots (integer sizes and releases, 1 byte/s).

    ``variant``: "divisible" (each flow keeps one core), "indivisible" (each coflow keeps
    one core), "single" (core 0 only). Every slot, each core serves a matching. The
    optimum over slot schedules is >= the true optimum, hence >= every valid LP bound.
    """
    a = w.arrays
    p = seconds(w)
    assert np.allclose(p, np.round(p)) and np.allclose(a.release, np.round(a.release))
    p = np.round(p).astype(int)
    nf, nk = a.n_flows, a.n_coflows
    assert np.bincount(a.coflow, minlength=nk).min() > 0, "DP needs flows in every coflow"
    m = 1 if variant == "single" else w.fabric.cores
    rel = np.round(a.release).astype(int)
    horizon = int(rel.max() + p.sum())
    fk = a.coflow
    owner = (lambda f: f) if variant == "divisible" else (lambda f: fk[f])
    n_owner = nf if variant == "divisible" else nk
    preds = [list(x) for x in a.preds]
    flows_of = [np.flatnonzero(fk == k) for k in range(nk)]
    job_members = {g: [k for k in range(nk) if a.job_of[k] == g] for g in range(len(a.job_weight))}

    def canon(assign):
        relabel, out = {}, []
        for h in assign:
            if h < 0:
                out.append(-1)
            else:
                relabel.setdefault(h, len(relabel))
                out.append(relabel[h])
        return tuple(out)

    def cost_of(done_before, done_after, t):
        new = [k for k in range(nk) if done_after[k] and not done_before[k]]
        if not new:
            return 0.0
        if objective == "makespan":
            return float(t) if all(done_after) else 0.0
        c = 0.0
        for k in new:
            g = a.job_of[k]
            if objective == "weighted" or g < 0:
                c += a.weight[k] * t
            elif all(done_after[j] for j in job_members[g]):
                c += a.job_weight[g] * t
        return c

    @functools.lru_cache(maxsize=None)
    def V(t, rem, assign):
        done = [all(rem[f] == 0 for f in flows_of[k]) for k in range(nk)]
        if all(done):
            return 0.0
        if t >= horizon:
            return np.inf
        elig = [f for f in range(nf) if rem[f] > 0 and rel[fk[f]] <= t
                and all(done[q] for q in preds[fk[f]])]
        if not elig:
            nxt = min(rel[k] for k in range(nk) if not done[k] and rel[k] > t)
            return V(int(nxt), rem, assign)
        options = []
        for f in elig:
            h = assign[owner(f)]
            options.append([-1, h] if h >= 0 else [-1] + list(range(m)))
        best = np.inf
        for choice in itertools.product(*options):
            used = set()
            new_assign = list(assign)
            ok = True
            for f, h in zip(elig, choice):
                if h < 0:
                    continue
                if (h, "i", a.src[f]) in used or (h, "o", a.dst[f]) in used:
                    ok = False
                    break
                used.add((h, "i", a.src[f]))
                used.add((h, "o", a.dst[f]))
                o = owner(f)
                if new_assign[o] >= 0 and new_assign[o] != h:
                    ok = False
                    break
                new_assign[o] = h
            if not ok:
                continue
            # dominance: a flow already bound to a core with both ports free there sends
            if any(h < 0 and assign[owner(f)] >= 0
                   and (assign[owner(f)], "i", a.src[f]) not in used
                   and (assign[owner(f)], "o", a.dst[f]) not in used
                   for f, h in zip(elig, choice)):
                continue
            new_rem = list(rem)
            for f, h in zip(elig, choice):
                if h >= 0:
                    new_rem[f] -= 1
            done_after = [all(new_rem[f] == 0 for f in flows_of[k]) for k in range(nk)]
            c = cost_of(done, done_after, t + 1)
            best = min(best, c + V(t + 1, tuple(new_rem), canon(new_assign)))
        return best

    start_assign = tuple([0] * n_owner) if variant == "single" else tuple([-1] * n_owner)
    return V(0, tuple(int(x) for x in p), start_assign)


# =========================================================================== tests
def test_unit_slot_dp_finds_known_optima():
    # two unit flows 0->1: two cores send both at once; one core serialises them
    w = make_workload(2, 2, [(0, 1, [(0, 1, 1)]), (0, 2, [(0, 1, 1)])])
    assert unit_slot_optimum(w, "divisible") == 1 + 2
    assert unit_slot_optimum(w, "single") == 2 * 1 + 1 * 2
    # one coflow of two flows from port 0: divisible splits over the cores, indivisible not
    w = make_workload(3, 2, [(0, 1, [(0, 1, 2), (0, 2, 2)])])
    assert unit_slot_optimum(w, "divisible") == 2
    assert unit_slot_optimum(w, "indivisible") == 4
    # release and precedence: c1 released at 1, c0 -> c1
    w = make_workload(2, 1, [(0, 1, [(0, 1, 2)]), (1, 1, [(1, 0, 1)])], arcs=[(0, 1)])
    assert unit_slot_optimum(w, "single") == 2 + 3
    assert unit_slot_optimum(w, "single", "makespan") == 3
    # jobs: c0 and c1 in one job of weight 3, c2 alone with weight 1, one port pair
    w = make_workload(2, 1, [(0, 1, [(0, 1, 1)]), (0, 1, [(0, 1, 1)]), (0, 1, [(0, 1, 1)])],
                      jobs=[(3, [0, 1])])
    assert unit_slot_optimum(w, "single", "jobs") == 3 * 2 + 1 * 3


def test_single_port_lp_value_matches_hand_computation():
    # one port, m = 1: (8e) for {a, b}: 2 C_a + C_b >= (9 + 5) / 2; optimum C_b = 1, C_a = 3
    w = make_workload(2, 1, [(0, 1, [(0, 1, 2)]), (0, 1, [(0, 1, 1)])])
    for solve in (solve_single_core_lp, lambda a, r, o: solve_flow_lp(a, 1, r, o)):
        res = solve(w.arrays, RATE, "weighted")
        assert res.value == pytest.approx(4.0, rel=1e-9)
        assert res.solution.coflow_completion == pytest.approx([3.0, 1.0], rel=1e-9)
        assert res.status == "optimal"


def test_two_cores_halve_the_subset_bound_on_one_port():
    # three unit flows on one port pair, m = 2: (1d) for all three gives sum C >= 12/4 = 3
    w = make_workload(2, 2, [(0, 1, [(0, 1, 1)]) for _ in range(3)])
    res = solve_coflow_lp(w.arrays, 2, RATE)
    # singletons: C >= 1 each (also (1/4)(1+1) = 0.5); pairs: C_a + C_b >= (4+2)/4 = 1.5
    assert res.value == pytest.approx(3.0, rel=1e-9)


def test_rate_converts_bytes_to_seconds():
    w = make_workload(2, 1, [(0, 1, [(0, 1, 2e6)]), (0, 1, [(0, 1, 1e6)])], rate=1e9)
    res = solve_coflow_lp(w.arrays, 1, 1e9)
    # 1 MB at 1 Gbit/s = 8 ms
    assert res.solution.coflow_completion == pytest.approx([0.024, 0.008], rel=1e-9)
    assert res.value == pytest.approx(0.032, rel=1e-9)


@pytest.mark.parametrize("seed", range(12))
def test_cut_loop_leaves_no_violated_subset_at_any_port(seed):
    rng = np.random.default_rng(seed)
    w = random_workload(rng, ports=3, cores=1 + seed % 3, n_coflows=6, max_flows=5,
                        arc_p=0.25)
    a, m = w.arrays, w.fabric.cores
    for g in port_groups(a):
        assert len(g) <= 12
    r1 = solve_flow_lp(a, m, RATE)
    r1v = solve_flow_lp(a, m, RATE, formulation="flow-vars")
    r7 = solve_coflow_lp(a, m, RATE)
    for r in (r1, r1v, r7):
        assert r.status == "optimal"
    assert flow_level_violation(w, r1, m) <= 1e-6
    assert flow_level_violation(w, r1v, m) <= 1e-6
    assert coflow_level_violation(w, r7, m) <= 1e-6


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("objective", OBJECTIVES)
def test_cutting_plane_optimum_equals_the_lp_with_every_subset_row(seed, objective):
    rng = np.random.default_rng(100 + seed)
    w = random_workload(rng, ports=3, cores=1 + seed % 2, n_coflows=4, max_flows=3,
                        arc_p=0.3, job_p=0.6)
    a, m = w.arrays, w.fabric.cores
    for level, solve in (("flow", solve_flow_lp), ("coflow", solve_coflow_lp)):
        ref_value, ref_c, ref_sum = reference_lp(w, level, m, objective)
        res = solve(a, m, RATE, objective)
        assert res.value == pytest.approx(ref_value, rel=1e-6, abs=1e-7)
        if objective == "makespan":   # second stage: min sum C_k at C_max = T*
            assert np.nansum(res.solution.coflow_completion) == pytest.approx(ref_sum, rel=1e-6)
            assert res.solution.coflow_completion.max() <= res.value * (1 + 1e-6)
    vres = solve_flow_lp(a, m, RATE, objective, formulation="flow-vars")
    assert vres.value == pytest.approx(reference_lp(w, "flow", m, objective)[0], rel=1e-6,
                                       abs=1e-7)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(w=tiny_workloads(), objective=st.sampled_from(OBJECTIVES))
def test_lp_value_is_a_lower_bound_on_brute_force(w, objective):
    a, m = w.arrays, w.fabric.cores
    div = unit_slot_optimum(w, "divisible", objective)
    lp1 = solve_flow_lp(a, m, RATE, objective)
    assert lp1.value <= div + 1e-6
    indiv = unit_slot_optimum(w, "indivisible", objective) if m > 1 else div
    lp7 = solve_coflow_lp(a, m, RATE, objective)
    assert lp7.value <= indiv + 1e-6
    single = unit_slot_optimum(w, "single", objective) if m > 1 else div
    lp8 = solve_single_core_lp(a, RATE, objective)
    assert lp8.value <= single + 1e-6
    # a relaxation with more cores can only be smaller
    assert lp7.value <= lp8.value + 1e-6
    assert lp1.value <= lp7.value + 1e-6


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2 ** 32 - 1), cores=st.integers(1, 4))
def test_prefix_lemma_holds_at_every_port(seed, cores):
    """d(P(f)) <= 2m C_f, and per port the load of coflows with C_k' <= C_k is <= 2m C_k."""
    rng = np.random.default_rng(seed)
    w = random_workload(rng, ports=4, cores=cores, n_coflows=7, max_flows=6, arc_p=0.2)
    a, m, p = w.arrays, cores, seconds(w)
    r1 = solve_flow_lp(a, m, RATE)
    cf = r1.solution.flow_completion
    for fl in port_groups(a):
        for f in fl:
            prefix = fl[cf[fl] <= cf[f]]
            assert p[prefix].sum() <= 2 * m * cf[f] * (1 + 1e-6) + 1e-6
    r7 = solve_coflow_lp(a, m, RATE)
    ck = r7.solution.coflow_completion
    for L in coflow_level_loads(w):
        for k in np.flatnonzero(L > 0):
            assert L[ck <= ck[k]].sum() <= 2 * m * ck[k] * (1 + 1e-6) + 1e-6


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 2 ** 32 - 1), cores=st.integers(1, 3),
       objective=st.sampled_from(OBJECTIVES))
def test_release_and_precedence_rows_hold(seed, cores, objective):
    rng = np.random.default_rng(seed)
    w = random_workload(rng, ports=3, cores=cores, n_coflows=6, arc_p=0.4, job_p=0.5)
    a, p = w.arrays, seconds(w)
    r1 = solve_flow_lp(a, cores, RATE, objective)
    r7 = solve_coflow_lp(a, cores, RATE, objective)
    dmax = np.zeros(a.n_coflows)
    np.maximum.at(dmax, a.coflow, p)
    lmax = np.max(coflow_level_loads(w), axis=0)
    tol = 1e-6 * (1 + np.nanmax(r7.solution.coflow_completion))
    # (1b), (7a)/(7b)
    assert np.all(r1.solution.flow_completion >= a.release[a.coflow] + p - tol)
    assert np.all(r7.solution.coflow_completion >= a.release + lmax - tol)
    # (1a)
    assert np.all(r1.solution.coflow_completion[a.coflow] >= r1.solution.flow_completion - tol)
    for kp, k in a.arcs:
        # (1c), (7c)/(7d)
        fs = a.coflow == k
        assert np.all(r1.solution.flow_completion[fs]
                      >= r1.solution.coflow_completion[kp] + p[fs] - tol)
        assert r7.solution.coflow_completion[k] >= r7.solution.coflow_completion[kp] + lmax[k] - tol
    # job completions are the max over the job's coflows
    for g in range(len(a.job_weight)):
        assert r7.solution.job_completion[g] == pytest.approx(
            np.max(r7.solution.coflow_completion[a.job_of == g]))


def test_jobs_objective_without_jobs_is_the_weighted_lp():
    rng = np.random.default_rng(7)
    w = random_workload(rng, ports=4, cores=2, n_coflows=8, arc_p=0.2)
    assert not w.jobs
    for solve in (solve_flow_lp, solve_coflow_lp):
        assert solve(w.arrays, 2, RATE, "jobs").value == pytest.approx(
            solve(w.arrays, 2, RATE, "weighted").value, rel=1e-7)


def test_a_coflow_outside_every_job_counts_with_its_own_weight():
    # c0 (weight 5, no job), c1 + c2 in job j0 (weight 2); all on one port pair, m = 1
    w = make_workload(2, 1, [(0, 5, [(0, 1, 1)]), (0, 1, [(0, 1, 1)]), (0, 1, [(0, 1, 1)])],
                      jobs=[(2, [1, 2])])
    res = solve_coflow_lp(w.arrays, 1, RATE, "jobs")
    ref = reference_lp(w, "coflow", 1, "jobs")[0]
    assert res.value == pytest.approx(ref, rel=1e-7)
    # value = 5 C_0 + 2 max(C_1, C_2) and the job's C_g is reported
    c = res.solution.coflow_completion
    assert res.value == pytest.approx(5 * c[0] + 2 * max(c[1], c[2]), rel=1e-7)
    assert res.solution.job_completion[0] == pytest.approx(max(c[1], c[2]))


def test_makespan_is_solved_lexicographically():
    # c0 is long and critical; c1, c2 small: min C_max alone leaves them arbitrary
    w = make_workload(3, 1, [(0, 1, [(0, 1, 4)]), (0, 1, [(2, 2, 1)]), (0, 1, [(2, 2, 1)])])
    res = solve_coflow_lp(w.arrays, 1, RATE, "makespan")
    assert res.value == pytest.approx(4.0)
    # second stage pushes the small coflows to their earliest LP times: 1 and 2
    assert sorted(res.solution.coflow_completion[1:]) == pytest.approx([1.0, 2.0])


def test_scaling_sizes_and_releases_scales_the_lp():
    rng = np.random.default_rng(3)
    w = random_workload(rng, ports=4, cores=2, n_coflows=8, arc_p=0.2)
    c = 3.5
    w2 = w.replace(coflows=tuple(
        Coflow(k.id, tuple(Flow(f.src, f.dst, f.bytes * c) for f in k.flows),
               release=k.release * c, weight=k.weight) for k in w.coflows))
    for solve in (solve_flow_lp, solve_coflow_lp):
        r1, r2 = solve(w.arrays, 2, RATE), solve(w2.arrays, 2, RATE)
        assert r2.value == pytest.approx(c * r1.value, rel=1e-6)
        # doubling the rate and halving the releases halves every time
        w3 = w.replace(coflows=tuple(
            Coflow(k.id, k.flows, release=k.release / 2, weight=k.weight) for k in w.coflows))
        r3 = solve(w3.arrays, 2, 2 * RATE)
        assert r3.value == pytest.approx(r1.value / 2, rel=1e-6)
        assert r3.solution.coflow_completion == pytest.approx(
            r1.solution.coflow_completion / 2, rel=1e-6)


def test_residual_lp_is_the_lp_of_the_shifted_remaining_instance():
    rng = np.random.default_rng(11)
    w = random_workload(rng, ports=4, cores=2, n_coflows=8, arc_p=0.25)
    a = w.arrays
    now = 2.0
    remaining = a.size * rng.uniform(0, 1, a.n_flows)
    remaining[rng.random(a.n_flows) < 0.3] = 0.0
    known = np.flatnonzero(a.release <= 3.0)
    # the same instance built by hand: known coflows, remaining bytes, releases - now
    keep = set(known.tolist()) & set(a.coflow[remaining > 0].tolist())
    keep = sorted(keep)
    new = []
    for k in keep:
        fl = np.flatnonzero((a.coflow == k) & (remaining > 0))
        new.append((max(a.release[k], now) - now, a.weight[k],
                    [(a.src[f], a.dst[f], remaining[f]) for f in fl]))
    arcs = [(keep.index(x), keep.index(y)) for x, y in a.arcs if x in keep and y in keep]
    w2 = make_workload(a.ports, 2, new, arcs)
    for solve in (solve_flow_lp, solve_coflow_lp):
        online = solve(a, 2, RATE, remaining=remaining, now=now,
                       coflows=np.intersect1d(known, keep))
        offline = solve(w2.arrays, 2, RATE)
        gone = np.setdiff1d(np.arange(a.n_coflows), keep)
        assert np.isnan(online.solution.coflow_completion[gone]).all()
        assert online.solution.coflow_completion[keep] == pytest.approx(
            offline.solution.coflow_completion + now, rel=1e-6)
        assert online.value == pytest.approx(offline.value + now * a.weight[keep].sum(),
                                             rel=1e-6)
        assert np.isnan(online.solution.flow_completion[remaining == 0]).all()


def test_a_coflow_without_flows_is_bounded_by_release_and_predecessors():
    w = make_workload(2, 1, [(0, 1, [(0, 1, 3)]), (1, 1, [(0, 1, 0)])], arcs=[(0, 1)])
    for solve in (solve_flow_lp, solve_coflow_lp):
        res = solve(w.arrays, 1, RATE)
        assert res.solution.coflow_completion == pytest.approx([3.0, 3.0])
    res = solve_flow_lp(w.arrays, 1, RATE, formulation="flow-vars")
    assert res.solution.coflow_completion == pytest.approx([3.0, 3.0])


def test_heterogeneous_core_rates_are_rejected():
    w = make_workload(2, 2, [(0, 1, [(0, 1, 1)])])
    with pytest.raises(ValueError, match="identical cores"):
        solve_coflow_lp(w.arrays, 2, (1e9, 4e8))
    fab = Fabric(ports=2, cores=2, rate_bps=1e9, core_rates=(1e9, 4e8))
    with pytest.raises(ValueError, match="identical cores"):
        solve_flow_lp(w.arrays, 2, fab)


def test_time_limit_returns_the_last_relaxation_as_a_lower_bound():
    # four unit coflows on one port pair, no seed cuts: the first LP (bounds only) is
    # violated, so a zero time limit stops after one solve
    w = make_workload(2, 1, [(0, 1, [(0, 1, 1)]) for _ in range(4)])
    full = solve_coflow_lp(w.arrays, 1, RATE, seed=False)
    early = solve_coflow_lp(w.arrays, 1, RATE, seed=False, time_limit=0.0)
    assert full.status == "optimal" and full.value == pytest.approx(10.0)
    assert early.status == "time_limit" and early.rounds == 1
    assert early.value == pytest.approx(4.0)      # every C_k at its bound 1
    assert early.value <= full.value


def test_unknown_objective_is_rejected():
    w = make_workload(2, 1, [(0, 1, [(0, 1, 1)])])
    with pytest.raises(ValueError, match="objective"):
        solve_coflow_lp(w.arrays, 1, RATE, "sum")
