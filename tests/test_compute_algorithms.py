"""Properties of SynchPack-1/2/3 that their analyses promise, checked on random instances.

* SynchPack-3: per stage ``C_j <= 4 C~_j`` (LP3), hence ``sum w C <= 4 LP3``.
* SynchPack-1: Lemma 3.3 (every fraction of intervals <= l finishes in S by ``3 d_l``),
  slow motion (``C_j(S') <= tau_j(lam)/lam`` for every ``lam``; S' feasible for every
  ``lam``), and ``sum w C <= 6 (1 + eps) LP1``.
* SynchPack-2: slow motion on LP values (every task's ``x_bar`` sums to 1, ``x_bar`` is
  ``x / lam`` capped), the mapping (every task matched, only nonzero edges, copy weight
  <= 1, ``p <= d_l`` for the mapped interval, mapped volume <= ``sum v x_bar`` + largest
  mapped volume <= ``2 c_i d_bar_l``), Lemma 4.10 (``C_t <= 6 d_bar_l`` in the block
  schedule) and ``sum w C <= 24 LP2``.
"""
from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.compute import synchpack1, synchpack2, synchpack3
from controller.compute.generators import google_like
from controller.compute.lp import lp1, lp2, lp3
from controller.compute.schedule import ComputeSchedule
from test_compute_verifier import SETTINGS, instances, verify

REL = 1e-7


# ---------------------------------------------------------------------- SynchPack-3
@settings(max_examples=80, **SETTINGS)
@given(w=instances(max_machines=3, max_jobs=6, max_tasks=4, max_p=9))
def test_synchpack3_completes_every_stage_within_four_times_its_lp3_time(w):
    pw = w.pinned()
    s = synchpack3.schedule(pw)
    obj = verify(pw, s, preemptive=True, migration=False, pinned=True)
    lpC = s.info["lp_C"]
    assert np.all(s.stage_completion <= 4 * lpC * (1 + REL) + 1e-9)
    assert obj <= 4 * lp3(pw).value * (1 + REL) + 1e-9


def test_synchpack3_ratio_on_google_like_workloads():
    for seed in range(3):
        w = google_like(25, 4, seed=seed, weight_scheme="random").pinned()
        s = synchpack3.schedule(w)
        verify(w, s, preemptive=True, migration=False, pinned=True)
        assert np.all(s.stage_completion <= 4 * s.info["lp_C"] * (1 + REL))


# ---------------------------------------------------------------------- SynchPack-1
@settings(max_examples=40, **SETTINGS)
@given(w=instances(max_jobs=4, max_tasks=3, max_p=8), eps=st.sampled_from([0.2, 0.5]))
def test_synchpack1_fractions_of_intervals_up_to_l_finish_by_three_d_l(w, eps):
    fs = synchpack1.fraction_schedule(w.arrays, eps)
    d = fs.lp.details.intervals.d
    for l in np.unique(fs.fraction_interval):
        done = fs.fraction_end[fs.fraction_interval <= l].max()
        assert done <= 3 * d[l] * (1 + REL), (l, done, d[l])


@settings(max_examples=40, **SETTINGS)
@given(w=instances(max_jobs=4, max_tasks=3, max_p=8),
       lams=st.lists(st.floats(0.05, 1.0), min_size=1, max_size=3))
def test_slow_motion_schedule_is_feasible_and_completes_jobs_by_tau_over_lambda(w, lams):
    fs = synchpack1.fraction_schedule(w.arrays, 0.25)
    for lam in lams + [1.0]:
        segs = synchpack1.slow_motion(fs, lam)
        s = ComputeSchedule.from_segments(w.arrays, segs)
        verify(w, s, preemptive=True, migration=True)
        bound = synchpack1.tau(fs, [lam])[:, 0] / lam
        assert np.all(s.job_completion <= bound * (1 + REL) + 1e-9)


@settings(max_examples=40, **SETTINGS)
@given(w=instances(max_jobs=5, max_tasks=3, max_p=9), eps=st.sampled_from([0.1, 0.25, 0.5]))
def test_synchpack1_is_within_six_plus_eps_of_lp1(w, eps):
    s = synchpack1.schedule(w, eps=eps)
    obj = verify(w, s, preemptive=True, migration=True)
    v = lp1(w, eps).value
    assert obj <= s.info["tau_bound"] * (1 + REL) + 1e-9
    assert obj <= 6 * (1 + eps) * v * (1 + REL) + 1e-9
    # the derandomised lambda is no worse than the density-2*lambda average of the bound
    fs = synchpack1.fraction_schedule(w.arrays, eps)
    grid = (np.arange(400) + 0.5) / 400
    avg = np.mean(2 * grid * (w.arrays.job_weight @ (synchpack1.tau(fs, grid) / grid)))
    assert s.info["tau_bound"] <= avg * (1 + 1e-3) + 1e-9


def test_best_lambda_minimises_the_bound_over_a_fine_grid():
    w = google_like(8, 3, seed=4, n_local=2, remote_fraction=0.5, weight_scheme="random")
    fs = synchpack1.fraction_schedule(w.arrays, 0.25)
    choice = synchpack1.best_lambda(fs)
    lam, val = choice.lam, choice.bound
    grid = np.linspace(0.01, 1.0, 991)
    vals = w.arrays.job_weight @ (synchpack1.tau(fs, grid) / grid)
    assert val <= vals.min() * (1 + 1e-9)
    assert val == pytest.approx(w.arrays.job_weight @ (synchpack1.tau(fs, [lam])[:, 0] / lam))


# ---------------------------------------------------------------------- SynchPack-2
@settings(max_examples=60, **SETTINGS)
@given(w=instances(max_jobs=5, max_tasks=3, max_p=9), lam=st.floats(0.05, 1.0))
def test_slow_motion_on_lp_values_keeps_each_task_whole(w, lam):
    a = w.arrays
    res = lp2(w)
    xbar = synchpack2.slow_motion_lp(res.solution.fractions, lam)
    t, i, l, v = xbar.task, xbar.machine, xbar.interval, xbar.value
    tot = np.zeros(a.n_tasks)
    np.add.at(tot, t, v)
    assert np.allclose(tot, 1.0, atol=1e-9)
    # per (task, machine): the same total, and the cumulative x_bar is min(cum x / lam, x~)
    x = res.solution.fractions
    xt, xi, xl, xv = x.task, x.machine, x.interval, x.value
    for k in range(a.n_tasks):
        for m in range(a.n_machines):
            sel = (xt == k) & (xi == m)
            if not sel.any():
                assert not ((t == k) & (i == m)).any()
                continue
            ls = np.sort(xl[sel])
            x_of = dict(zip(xl[sel], xv[sel]))
            xb_of = dict(zip(l[(t == k) & (i == m)], v[(t == k) & (i == m)]))
            cum_x = np.cumsum([x_of[q] for q in ls])
            cum_xb = np.cumsum([xb_of.get(q, 0.0) for q in ls])
            assert np.allclose(cum_xb, np.minimum(cum_x / lam, cum_x[-1]), atol=1e-9)


@settings(max_examples=60, **SETTINGS)
@given(w=instances(max_jobs=5, max_tasks=4, max_p=9), lam=st.floats(0.05, 1.0))
def test_mapping_matches_every_task_on_nonzero_edges_within_interval_capacity(w, lam):
    a = w.arrays
    res = lp2(w)
    xbar = synchpack2.slow_motion_lp(res.solution.fractions, lam)
    mp = synchpack2.map_to_machine_intervals(a, xbar)
    et, ei, el, ec, ew = mp.edges
    d = res.details.intervals.d
    assert np.all(mp.machine >= 0) and np.all(mp.block >= 1)
    assert np.all(mp.matched_weight > 0)
    for k in range(a.n_tasks):
        m, b = mp.machine[k], mp.block[k]
        assert ((et == k) & (ei == m) & (el == b) & (ew > 0)).any()
        assert a.proc[k, m] <= d[b] * (1 + 1e-9)
    task_w = np.zeros(a.n_tasks)
    np.add.at(task_w, et, ew)
    assert np.allclose(task_w, 1.0, atol=1e-9)
    xt, xi, xl, xv = xbar.task, xbar.machine, xbar.interval, xbar.value
    for (m, b), cw in mp.copy_weight.items():
        assert np.all(cw <= 1 + 1e-9)
        need = xv[(xi == m) & (xl == b)].sum()
        assert len(cw) <= int(np.ceil(need - 1e-9)) + 1
        # Lemma 4.7: mapped volume <= sum v x_bar + largest mapped volume <= 2 c d_bar
        on = (mp.machine == m) & (mp.block == b)
        if not on.any():
            continue
        vol = a.size[on] * a.proc[on, m]
        sel = (xi == m) & (xl == b)
        frac_vol = float((a.size[xt[sel]] * a.proc[xt[sel], m] * xv[sel]).sum())
        assert vol.sum() <= frac_vol + vol.max() + 1e-7
        assert vol.sum() <= 2 * a.capacity[m] * d[b] / lam * (1 + 1e-7)


@settings(max_examples=50, **SETTINGS)
@given(w=instances(max_jobs=5, max_tasks=4, max_p=9), lam=st.sampled_from([1.0, 0.6, 0.3]))
def test_block_packing_finishes_each_task_by_six_stretched_interval_ends(w, lam):
    s = synchpack2.schedule(w, lam=lam, shift=False)
    verify(w, s, preemptive=False, migration=False)
    d = lp2(w).details.intervals.d
    blk = s.info["block"]
    assert np.all(s.task_completion <= 6 * d[blk] / lam * (1 + REL))


@settings(max_examples=50, **SETTINGS)
@given(w=instances(max_jobs=5, max_tasks=4, max_p=9))
def test_synchpack2_is_within_24_of_lp2_and_left_shift_never_hurts(w):
    s = synchpack2.schedule(w)
    obj = verify(w, s, preemptive=False, migration=False)
    assert obj <= 24 * lp2(w).value * (1 + REL)
    for lam in (1.0, 0.5):
        a = synchpack2.schedule(w, lam=lam, shift=False)
        b = synchpack2.schedule(w, lam=lam, shift=True)
        verify(w, b, preemptive=False, migration=False)
        assert np.all(b.task_completion <= a.task_completion + 1e-9)


def test_ratios_on_a_google_like_workload():
    w = google_like(20, 4, seed=7, n_local=2, remote_fraction=0.5, alpha=2.0,
                    weight_scheme="priority")
    s2 = synchpack2.schedule(w)
    assert verify(w, s2, preemptive=False, migration=False) <= 24 * lp2(w).value
    s1 = synchpack1.schedule(w, eps=0.25)
    assert verify(w, s1, preemptive=True, migration=True) <= 6 * 1.25 * lp1(w, 0.25).value


def test_synchpack2_does_not_depend_on_the_string_hash_seed():
    """SynchPack-2's matching once iterated over sets of string-labelled nodes: its
    schedule changed with PYTHONHASHSEED (a sweep's workers disagreed)."""
    import subprocess
    import sys
    code = ("from controller.compute import get_compute_policy\n"
            "from controller.compute.generators import packing_paper\n"
            "w = packing_paper(30, 6, seed=1)\n"
            "print(get_compute_policy('synchpack-2').schedule(w).weighted_completion)\n")
    out = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, env={**os.environ, "PYTHONHASHSEED": str(s)}
                          ).stdout for s in (0, 1, 2)}
    assert len(out) == 1, out
