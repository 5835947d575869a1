"""LP1, LP2, LP3: lower bounds on every verified schedule and on a brute-force optimum.

Independent references written here from the formulas of algorithms.md 2.3-2.7:

* a *dense* LP1/LP2 with the cumulative sums written out (no auxiliary variables) and a
  dense LP3 with both ``delta_{jj'}`` and ``delta_{j'j}`` and the equality (21d), to check
  the compact formulations of ``controller.compute.lp``;
* a unit-slot dynamic program over all schedules of a tiny instance (2 machines, at most 4
  tasks, integer times): with migration, without migration, pinned, and non-preemptive.
  With integer data a non-preemptive optimum starts every task at an integer time, so
  the non-preemptive DP value is the true optimum; the others are optima over unit-slot
  schedules, hence upper bounds on the true optima.
"""
from __future__ import annotations

import heapq
import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from controller.compute import compute_policies, get_compute_policy
from controller.compute.lp import lp1, lp2, lp3
from controller.compute.model import ComputeJob, ComputeWorkload, Machine, Stage, Task
from test_compute_verifier import SETTINGS, instances, verify_policy

ALL = sorted(compute_policies())


# ---------------------------------------------------------------------- dense references
def _placement(w, t):
    """The task's placement set without the machines too small for it."""
    return {m: p for m, p in t.placement.items()
            if t.size[0] <= w.machines[w.machine_index[m]].capacity[0]}


def _intervals(w, eps):
    ps = [p for t in w.tasks for p in _placement(w, t).values()]
    unit = min(ps)
    T = sum(max(_placement(w, t).values()) for t in w.tasks) + \
        max(t.release for t in w.tasks)
    L = 1
    while unit * (1 + eps) ** (L - 1) < T * (1 - 1e-12):
        L += 1
    d = [0.0] + [unit * (1 + eps) ** (l - 1) for l in range(1, L + 1)]
    left = [d[1] / (1 + eps)] + d[1:L]
    return d, left


def dense_lp1(w, eps, lp2_mode=False):
    """(9a)-(9h) (+ (13b)) written out literally, single-stage jobs, no releases."""
    d, left = _intervals(w, 1.0 if lp2_mode else eps)
    L = len(d) - 1
    mi = w.machine_index
    tasks = [(j, t) for j, job in enumerate(w.jobs) for t in job.tasks]
    xs = [(k, mi[m], l) for k, (j, t) in enumerate(tasks) for m in _placement(w, t)
          for l in range(1, L + 1) if not (lp2_mode and t.placement[m] > d[l] + 1e-9)]
    J = len(w.jobs)
    nz = J * L
    nv = len(xs) + nz
    zc = lambda j, l: len(xs) + j * L + (l - 1)  # noqa: E731
    c = np.zeros(nv)
    for j, job in enumerate(w.jobs):
        for l in range(1, L + 1):
            c[zc(j, l)] = job.weight * left[l - 1]
    A_eq, b_eq, A_ub, b_ub = [], [], [], []
    for k in range(len(tasks)):                                     # (9b)
        row = np.zeros(nv)
        for q, (kk, i, l) in enumerate(xs):
            if kk == k:
                row[q] = 1
        A_eq.append(row)
        b_eq.append(1)
    for k, (j, t) in enumerate(tasks):                              # (9c)
        for l in range(1, L + 1):
            row = np.zeros(nv)
            for q, (kk, i, ll) in enumerate(xs):
                if kk == k and ll <= l:
                    row[q] = t.placement[w.machines[i].id]
            A_ub.append(row)
            b_ub.append(d[l])
    for i, m in enumerate(w.machines):                              # (9d)
        for l in range(1, L + 1):
            row = np.zeros(nv)
            for q, (kk, ii, ll) in enumerate(xs):
                if ii == i and ll <= l:
                    t = tasks[kk][1]
                    row[q] = t.size[0] * t.placement[m.id]
            A_ub.append(row)
            b_ub.append(m.capacity[0] * d[l])
    for k, (j, t) in enumerate(tasks):                              # (9f)
        for l in range(1, L + 1):
            row = np.zeros(nv)
            for ll in range(1, l + 1):
                row[zc(j, ll)] = 1
            for q, (kk, i, ll) in enumerate(xs):
                if kk == k and ll <= l:
                    row[q] = -1
            A_ub.append(row)
            b_ub.append(0)
    for j in range(J):                                              # (9h)
        row = np.zeros(nv)
        for l in range(1, L + 1):
            row[zc(j, l)] = 1
        A_eq.append(row)
        b_eq.append(1)
    res = linprog(c, A_ub=np.array(A_ub), b_ub=b_ub, A_eq=np.array(A_eq), b_eq=b_eq,
                  bounds=(0, None), method="highs")
    assert res.status == 0
    return res.fun


def dense_lp3(w):
    """(21a)-(21e) with both ordering variables per pair and (21d) as an equality."""
    J = len(w.jobs)
    mi = w.machine_index
    M = len(w.machines)
    vol = np.zeros((J, M))
    lbC = np.zeros(J)
    for j, job in enumerate(w.jobs):
        for t in job.tasks:
            pl = _placement(w, t)
            m = min(pl, key=lambda x: (pl[x], list(pl).index(x)))
            vol[j, mi[m]] += t.size[0] * t.placement[m]
            lbC[j] = max(lbC[j], t.placement[m])
    pairs = [(a, b) for a in range(J) for b in range(J) if a != b]
    nv = J + len(pairs)
    dl = {p: J + q for q, p in enumerate(pairs)}
    c = np.concatenate([[j.weight for j in w.jobs], np.zeros(len(pairs))])
    A_ub, b_ub, A_eq, b_eq = [], [], [], []
    for j in range(J):
        for i in range(M):
            if vol[j, i] <= 0:
                continue
            row = np.zeros(nv)
            row[j] = -w.machines[i].capacity[0]
            for j2 in range(J):
                if j2 != j and vol[j2, i] > 0:
                    row[dl[(j2, j)]] = vol[j2, i]
            A_ub.append(row)
            b_ub.append(-vol[j, i])
    for a, b in pairs:
        if a < b:
            row = np.zeros(nv)
            row[dl[(a, b)]] = 1
            row[dl[(b, a)]] = 1
            A_eq.append(row)
            b_eq.append(1)
    bounds = [(lbC[j], None) for j in range(J)] + [(0, 1)] * len(pairs)
    res = linprog(c, A_ub=np.array(A_ub) if A_ub else None, b_ub=b_ub or None,
                  A_eq=np.array(A_eq) if A_eq else None, b_eq=b_eq or None,
                  bounds=bounds, method="highs")
    assert res.status == 0
    return res.fun


# ---------------------------------------------------------------------- brute force
def brute_force(w, mode):
    """Optimal ``sum w_j C_j`` over unit-slot schedules of ``w`` (single stages, r = 0).

    mode: "migration", "nomigration", "pinned" (nomigration on the fastest machine) or
    "nonpreemptive".
    """
    mi = w.machine_index
    caps = [m.capacity[0] for m in w.machines]
    tasks = []
    for j, job in enumerate(w.jobs):
        for t in job.tasks:
            pl = {mi[m]: int(p) for m, p in t.placement.items() if t.size[0] <= caps[mi[m]]}
            if mode == "pinned":
                m = min(pl, key=lambda x: (pl[x], list(pl).index(x)))
                pl = {m: pl[m]}
            tasks.append((t.size[0], pl, j))
    n = len(tasks)
    D = math.lcm(*[p for _, pl, _ in tasks for p in pl.values()])
    weights = [job.weight for job in w.jobs]
    start = (tuple([D] * n), tuple([-1] * n))
    dist = {start: 0.0}
    heap = [(0.0, start)]
    while heap:
        cost, (rem, mach) = heapq.heappop(heap)
        if cost > dist[(rem, mach)] + 1e-12:
            continue
        if all(r == 0 for r in rem):
            return cost
        open_jobs = {tasks[k][2] for k in range(n) if rem[k] > 0}
        step = sum(weights[j] for j in open_jobs)
        opts = []
        for k, (size, pl, _) in enumerate(tasks):
            if rem[k] == 0:
                opts.append([None])
                continue
            if mode in ("nomigration", "pinned", "nonpreemptive") and mach[k] >= 0:
                ms = [mach[k]]
            else:
                ms = list(pl)
            running_np = mode == "nonpreemptive" and mach[k] >= 0 and rem[k] < D
            opts.append(ms if running_np else [None] + ms)
        for choice in itertools.product(*opts):
            load = [0.0] * len(caps)
            for k, m in enumerate(choice):
                if m is not None:
                    load[m] += tasks[k][0]
            if any(load[i] > caps[i] + 1e-9 for i in range(len(caps))):
                continue
            nrem = list(rem)
            nmach = list(mach)
            for k, m in enumerate(choice):
                if m is not None:
                    nrem[k] = max(0, nrem[k] - D // tasks[k][1][m])
                    nmach[k] = m
            state = (tuple(nrem), tuple(nmach))
            if state == (rem, mach):
                continue
            nc = cost + step
            if nc < dist.get(state, np.inf) - 1e-12:
                dist[state] = nc
                heapq.heappush(heap, (nc, state))
    raise AssertionError("no schedule found")


@st.composite
def tiny(draw):
    """2 machines, at most 4 tasks, integer processing times 1..3."""
    caps = [draw(st.integers(2, 4)) for _ in range(2)]
    machines = [Machine(f"m{i}", (float(c),)) for i, c in enumerate(caps)]
    n = draw(st.integers(1, 4))
    jobs_of = sorted(draw(st.lists(st.integers(0, 2), min_size=n, max_size=n)))
    jobs = {}
    for k, j in enumerate(jobs_of):
        ms = draw(st.lists(st.integers(0, 1), min_size=1, max_size=2, unique=True))
        size = draw(st.integers(1, max(caps[i] for i in ms)))
        pl = {f"m{i}": float(draw(st.integers(1, 3))) for i in ms}
        jobs.setdefault(j, []).append(Task(f"t{k}", (float(size),), pl))
    return ComputeWorkload(machines, [ComputeJob(f"j{j}", [Stage(f"s{j}", ts)],
                                                 float(draw(st.integers(1, 4))))
                                      for j, ts in sorted(jobs.items())])


# ---------------------------------------------------------------------- tests
@settings(max_examples=25, **SETTINGS)
@given(w=instances(max_jobs=3, max_tasks=2, max_p=5), eps=st.sampled_from([0.25, 0.5]))
def test_compact_lp1_and_lp2_equal_the_dense_formulation(w, eps):
    assert lp1(w, eps).value == pytest.approx(dense_lp1(w, eps), rel=1e-6, abs=1e-6)
    assert lp2(w).value == pytest.approx(dense_lp1(w, 1.0, lp2_mode=True), rel=1e-6,
                                         abs=1e-6)


@settings(max_examples=40, **SETTINGS)
@given(w=instances(max_jobs=5, max_tasks=3))
def test_compact_lp3_equals_the_dense_formulation(w):
    assert lp3(w).value == pytest.approx(dense_lp3(w), rel=1e-6, abs=1e-6)


@settings(max_examples=30, **SETTINGS)
@given(w=tiny())
def test_lp_values_are_lower_bounds_on_brute_force_optima(w):
    mig = brute_force(w, "migration")
    nomig = brute_force(w, "nomigration")
    pin = brute_force(w, "pinned")
    nonp = brute_force(w, "nonpreemptive")
    assert mig <= nomig + 1e-9 <= nonp + 2e-9
    assert nomig <= pin + 1e-9
    for eps in (0.1, 0.5):
        assert lp1(w, eps).value <= mig + 1e-6
    assert lp2(w).value <= nomig + 1e-6
    assert lp3(w.pinned()).value <= pin + 1e-6
    # the non-preemptive DP is the true optimum: every non-preemptive policy is >= it
    for name in ALL:
        pol = get_compute_policy(name)
        if not pol.preemptive and not pol.pinned:
            _, s, obj = verify_policy(w, name)
            assert obj >= nonp - 1e-6, name


@settings(max_examples=60, **SETTINGS)
@given(w=instances(releases=True, stages=True))
def test_lp_values_are_lower_bounds_on_every_verified_schedule(w):
    b1, b2 = lp1(w, 0.25).value, lp2(w).value
    pw = w.pinned()
    b3 = lp3(pw).value
    for name in ALL:
        pol = get_compute_policy(name)
        inst, s, obj = verify_policy(w, name)
        assert b1 <= obj + 1e-6 * max(1, obj), name
        if not pol.migration:
            assert b2 <= obj + 1e-6 * max(1, obj), name
        # every policy run on the pinned instance is a single-machine schedule
        _, s3, obj3 = verify_policy(pw, name)
        assert b3 <= obj3 + 1e-6 * max(1, obj3), name
        assert b1 <= obj3 + 1e-6 * max(1, obj3), name


def test_first_interval_credit_makes_the_lp_tight_on_one_task():
    # one task of one unit: OPT = 1. With d_0 = 0 credited (the reconstruction as written)
    # LP1 is 0, so no ratio could hold; our credit d_1/(1+eps) keeps LP1 in (0, 1].
    w = ComputeWorkload([Machine("m0", (1.0,))],
                        [ComputeJob("j", [Stage("s", [Task("t", (1.0,), {"m0": 5.0})])])])
    assert lp1(w, 0.5, first_left=0.0).value == pytest.approx(0.0, abs=1e-9)
    v = lp1(w, 0.5).value
    assert 0 < v <= 5.0
    assert v == pytest.approx(5.0 / 1.5)


def test_lp_sizes_grow_with_log_horizon():
    w = ComputeWorkload([Machine("m0", (2.0,)), Machine("m1", (2.0,))],
                        [ComputeJob(f"j{k}", [Stage(f"s{k}", [Task(f"t{k}", (1.0,),
                                                                     {"m0": 1.0 + k,
                                                                      "m1": 2.0 + k})])])
                         for k in range(6)])
    r1, r2 = lp1(w, 0.25), lp1(w, 0.5)
    assert r1.details.intervals.L > r2.details.intervals.L
    assert r1.details.intervals.d[-1] >= sum(2.0 + k for k in range(6))
    assert r1.details.intervals.d[-2] < sum(2.0 + k for k in range(6))
    assert r1.details.variables > r2.details.variables
