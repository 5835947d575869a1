"""Benchmark of the coflow LP relaxations and the LP list-scheduling policies on FB2010.

Prints, on the public Facebook trace (526 coflows, 150 ports, ~706k flows):

1. LP (8) (``m = 1``) and LP (7) (``m = 4``), all releases at 0: solve time (median of
   ``--repeat``), cutting-plane rounds, cuts, value; the same for LP (1) (solved through
   its exact reduction to coflow variables, see ``controller.lp.coflow``) and for the
   ``jobs``/``makespan`` objectives.
2. A baseline in the same run: a plain cutting-plane loop that re-solves the whole LP from
   scratch with ``scipy.optimize.linprog`` every round (same exact separation), against our
   warm-started HiGHS loop, on the whole trace (or the first ``--baseline-coflows``),
   stopped after ``--baseline-budget`` seconds.
3. LP (1) written literally, one column per flow (``formulation="flow-vars"``), on growing
   prefixes of the trace until one hits ``--flow-vars-budget`` seconds: the scaling that
   makes the reduction necessary (same optimum, checked).
4. With the trace's release times: the simulated run of ``lp-coflow`` and ``lp-flow``
   offline and online (m = 4), with the online re-plan time per arrival.

Usage::

    .venv/bin/python benchmarks/lp_coflow.py [--trace PATH] [--repeat 3] [--skip-online]

The trace is read from ``../shared/traces/FB2010-1Hr-150-0.txt`` relative to the repository
unless ``--trace`` says otherwise.
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from scipy.optimize import linprog

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from controller.lp.coflow import solve_coflow_lp, solve_flow_lp  # noqa: E402
from controller.lp.separation import PortItems, select_cuts, subset_rhs  # noqa: E402
from emulate.io.traces import read_fb_trace  # noqa: E402

DEFAULT_TRACE = REPO.parent / "shared" / "traces" / "FB2010-1Hr-150-0.txt"


def line(*parts):
    print(*parts, flush=True)


def timed(fn, repeat):
    """Median wall time of ``repeat`` calls and the last result."""
    times, res = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        res = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), res


# ------------------------------------------------------------------------- the baseline
def naive_linprog_loop(arrays, cores, rate_bps, *, tol=1e-7, cap=5, max_rounds=200,
                       budget=None):
    """LP (7)/(8) by a cutting-plane loop that re-solves from scratch with linprog.

    Same formulation, scaling, exact separation and cut selection (``select_cuts``) as
    ``solve_coflow_lp``, but no seed and no cut dropping; every round builds the LP with
    all cuts so far and calls ``linprog(method="highs")`` without a basis. Stops after
    ``budget`` seconds if given. Returns (value, rounds, cuts, finished).
    """
    t_start = time.perf_counter()
    P, nk = arrays.ports, arrays.n_coflows
    p = arrays.size * 8.0 / rate_bps
    scale = p.max()
    p = p / scale
    key = np.concatenate((arrays.src, P + arrays.dst)) * nk + np.concatenate(
        (arrays.coflow, arrays.coflow))
    L = np.bincount(key, weights=np.concatenate((p, p)), minlength=2 * P * nk)
    nz = np.flatnonzero(L > 0)
    items = PortItems.build(nz // nk, nz % nk, L[nz], L[nz] ** 2, 2 * P)
    e = np.zeros(nk)
    np.maximum.at(e, items.col, items.size)
    lb = arrays.release / scale + e
    a = arrays.arcs
    base_rows, base_rhs = [], []
    for kp, k in a:                               # C_k' - C_k <= -e_k
        row = np.zeros(nk)
        row[kp], row[k] = 1.0, -1.0
        base_rows.append(row)
        base_rhs.append(-e[k])
    cut_rows, cut_rhs = [], []
    rounds = 0
    finished = False
    while rounds < max_rounds:
        if budget is not None and time.perf_counter() - t_start > budget:
            break
        A = base_rows + cut_rows
        b = base_rhs + cut_rhs
        res = linprog(arrays.weight, A_ub=np.array(A) if A else None,
                      b_ub=np.array(b) if b else None,
                      bounds=list(zip(lb, [None] * nk)), method="highs",
                      options={"primal_feasibility_tolerance": 1e-9})
        rounds += 1
        sel = select_cuts(items, res.x, cores, tol=tol, cap=cap)
        added = len(sel.lengths)
        for st, ln in zip(sel.starts, sel.lengths):
            it = sel.order[st:st + ln]
            row = np.zeros(nk)
            row[items.col[it]] = -items.size[it]
            cut_rows.append(row)
            cut_rhs.append(-subset_rhs(items.size[it], items.sq[it], cores))
        if not added:
            finished = True
            break
    return float(res.fun) * scale, rounds, len(cut_rows), finished


# ------------------------------------------------------------------------- sections
def lp_section(w, repeat):
    a, rate = w.arrays, w.fabric.rate_bps
    line(f"\n== 1. LP solve time on FB2010, all releases at 0 ({a.n_coflows} coflows, "
         f"{a.ports} ports, {a.n_flows} flows; median of {repeat}) ==")
    line(f"{'LP':6} {'m':>2} {'objective':9} {'seconds':>8} {'rounds':>6} {'cuts':>6} "
         f"{'seed':>5} {'value (s)':>14}  status")
    rows = [("LP8", 1, solve_coflow_lp, "weighted"), ("LP7", 4, solve_coflow_lp, "weighted"),
            ("LP1", 1, solve_flow_lp, "weighted"), ("LP1", 4, solve_flow_lp, "weighted"),
            ("LP7", 4, solve_coflow_lp, "makespan"), ("LP1", 4, solve_flow_lp, "makespan")]
    out = {}
    for name, m, fn, obj in rows:
        sec, r = timed(lambda: fn(a, m, rate, obj), repeat)
        out[(name, m, obj)] = (sec, r)
        d = r.details
        line(f"{name:6} {m:>2} {obj:9} {sec:8.2f} {r.rounds:6d} {d.cuts:6d} {d.seed_cuts:5d} "
             f"{r.value:14.3f}  {r.status} (max rel. violation {d.max_violation:.1e})")
    return out


def baseline_section(trace, n_coflows, budget, repeat):
    kw = {} if not n_coflows else {"limit": n_coflows}
    w = read_fb_trace(str(trace), zero_release=True, **kw)
    a, rate = w.arrays, w.fabric.rate_bps
    line(f"\n== 2. Baseline: linprog re-solve from scratch vs warm-started HiGHS loop "
         f"({a.n_coflows} coflows, {a.n_flows} flows, releases 0; baseline budget "
         f"{budget:g} s) ==")
    for m in (1, 4):
        t0 = time.perf_counter()
        v_naive, rounds, cuts, finished = naive_linprog_loop(a, m, rate, budget=budget)
        t_naive = time.perf_counter() - t0
        t_ours, r = timed(lambda: solve_coflow_lp(a, m, rate), repeat)
        name = "LP8" if m == 1 else "LP7"
        if finished:
            agree = abs(v_naive - r.value) <= 1e-6 * max(1.0, abs(r.value))
            line(f"{name} m={m}: linprog loop {t_naive:7.1f} s ({rounds} rounds, {cuts} cuts) | "
                 f"ours {t_ours:6.2f} s ({r.rounds} rounds, {r.details.cuts} cuts) | speed-up "
                 f"x{t_naive / t_ours:.0f} | values {'agree' if agree else 'DIFFER'} "
                 f"({v_naive:.4f} vs {r.value:.4f})")
        else:
            line(f"{name} m={m}: linprog loop unfinished after {t_naive:7.1f} s ({rounds} rounds, "
                 f"{cuts} cuts, bound so far {v_naive:.4f}) | ours {t_ours:6.2f} s "
                 f"({r.rounds} rounds, {r.details.cuts} cuts, {r.value:.4f}) | speed-up "
                 f"> x{t_naive / t_ours:.0f}")


def flow_vars_section(trace, prefixes, budget):
    line(f"\n== 3. LP (1) literal (one column per flow) vs exact reduction, growing prefixes "
         f"(m = 1, releases 0; time limit {budget:g} s per literal solve) ==")
    line(f"{'coflows':>7} {'flows':>7} {'flow-vars s':>11} {'rounds':>6} {'cuts':>6} "
         f"{'reduced s':>9}  values")
    for n in prefixes:
        w = read_fb_trace(str(trace), zero_release=True, limit=n)
        a, rate = w.arrays, w.fabric.rate_bps
        t_red, red = timed(lambda: solve_flow_lp(a, 1, rate), 1)
        t0 = time.perf_counter()
        lit = solve_flow_lp(a, 1, rate, formulation="flow-vars", time_limit=budget)
        t_lit = time.perf_counter() - t0
        if lit.status == "optimal":
            agree = abs(lit.value - red.value) <= 1e-6 * max(1.0, red.value)
            verdict = f"{'agree' if agree else 'DIFFER'} ({lit.value:.4f} vs {red.value:.4f})"
        else:
            verdict = (f"literal stopped by the time limit at {lit.value:.4f} "
                       f"(max rel. violation {lit.details.max_violation:.1e}); reduced "
                       f"{red.value:.4f}")
        line(f"{n:7d} {a.n_flows:7d} {t_lit:11.2f} {lit.rounds:6d} {lit.details.cuts:6d} "
             f"{t_red:9.3f}  {verdict}")
        if lit.status != "optimal":
            break


def online_section(trace, cores):
    from controller.policies import get_policy
    from emulate.sim.flowsim import simulate
    w = read_fb_trace(str(trace), cores=cores)
    a = w.arrays
    line(f"\n== 4. Simulated runs with the trace's releases (m = {cores}, {a.n_flows} flows) ==")
    lp1 = solve_flow_lp(a, cores, w.fabric.rate_bps)
    lp7 = solve_coflow_lp(a, cores, w.fabric.rate_bps)
    line(f"lower bounds with releases: LP (1) {lp1.value:.1f} s ({lp1.seconds:.2f} s to solve), "
         f"LP (7) {lp7.value:.1f} s ({lp7.seconds:.2f} s)")
    bound = {"lp-coflow": lp7.value, "lp-flow": lp1.value}
    for name in ("lp-coflow", "lp-flow"):
        for mode in ("offline", "online"):
            pol = get_policy(name, mode=mode)
            t0 = time.perf_counter()
            res = simulate(w, pol)
            total = time.perf_counter() - t0
            s = np.array([x[1] for x in pol.solves])
            known = np.array([x[2] for x in pol.solves])
            line(f"{name:9} {mode:7}: run {total:6.1f} s | {len(s)} LP solves, per solve "
                 f"mean {s.mean() * 1e3:7.1f} ms, median {np.median(s) * 1e3:7.1f} ms, "
                 f"max {s.max() * 1e3:7.1f} ms (<= {known.max()} coflows) | "
                 f"sum w C = {res.total_weighted_completion:.1f} s "
                 f"(x{res.total_weighted_completion / bound[name]:.4f} of its LP)")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trace", default=str(DEFAULT_TRACE), help="FB2010 trace path")
    ap.add_argument("--repeat", type=int, default=3, help="repetitions per timing")
    ap.add_argument("--baseline-coflows", type=int, default=0,
                    help="trace prefix for the linprog baseline (0: the whole trace)")
    ap.add_argument("--baseline-budget", type=float, default=150.0,
                    help="seconds after which the linprog baseline is stopped")
    ap.add_argument("--flow-vars-prefixes", default="4,5,7,9,12",
                    help="trace prefixes (coflows) for the literal LP (1)")
    ap.add_argument("--flow-vars-budget", type=float, default=60.0)
    ap.add_argument("--skip-online", action="store_true")
    ap.add_argument("--cores", type=int, default=4, help="cores of the simulated runs")
    args = ap.parse_args(argv)
    trace = Path(args.trace)
    if not trace.exists():
        sys.exit(f"trace not found: {trace} (pass --trace PATH)")
    import highspy
    import scipy
    line(f"python {platform.python_version()}, numpy {np.__version__}, scipy "
         f"{scipy.__version__}, highspy {highspy.HIGHS_VERSION_MAJOR}."
         f"{highspy.HIGHS_VERSION_MINOR}.{highspy.HIGHS_VERSION_PATCH}, {os.cpu_count()} CPUs")
    t0 = time.perf_counter()
    w = read_fb_trace(str(trace), zero_release=True)
    line(f"read {trace.name}: {time.perf_counter() - t0:.1f} s")
    lp_section(w, args.repeat)
    baseline_section(trace, args.baseline_coflows, args.baseline_budget, 1)
    flow_vars_section(trace, [int(x) for x in args.flow_vars_prefixes.split(",") if x],
                      args.flow_vars_budget)
    if not args.skip_online:
        online_section(trace, args.cores)


if __name__ == "__main__":
    main()
