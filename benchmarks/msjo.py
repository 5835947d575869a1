"""Benchmark of the MSJO LPs and MarS against the number of jobs.

Random scenario of Ling et al. (jobs of ~40 tasks: Poisson(30) maps, U[1, maps]
reduces), 50 machines, 10..100 jobs. Per size (median of ``--repeat`` runs, seconds):

* ``base``: the LP (1)-(3) alone, no subset constraint (one HiGHS solve): the baseline
  the ratios are taken against;
* ``CLS``: CLS-LPP with every subset constraint (exact separation, the cutting-plane
  loop of ``controller.lp.separation``), its rounds and cuts (seeded prefixes included):
  the fast loop (``solve_cls_lp(fast=True)``, the default from 1,000 tasks: every
  prefix of HUWF's order seeded as a sparse chain, evenly spread extra cuts per round)
  against the plain one
  (``fast=False``: geometric seed, the most violated local maxima only) in the same run,
  and the two values' relative difference (the same LP: tolerance-level);
* ``COGE e=0.3`` / ``COGE e=0``: constraint generation (iterations = LP solves, PGC rows);
* ``MarS list``: MarS's list scheduling given the LP; ``HUWF``: the whole HUWF policy.

Usage::

    .venv/bin/python benchmarks/msjo.py [--jobs 10 20 50 100] [--repeat 3]
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from controller.msjo.baselines import huwf  # noqa: E402
from controller.msjo.generators import synthetic  # noqa: E402
from controller.msjo.lp import solve_cls_lp, solve_coge  # noqa: E402
from controller.msjo.mars import mars  # noqa: E402


def _timed(f, repeat):
    out, times = None, []
    for _ in range(repeat):
        t = time.perf_counter()
        out = f()
        times.append(time.perf_counter() - t)
    return out, statistics.median(times)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, nargs="*", default=[10, 20, 50, 100])
    ap.add_argument("--machines", type=int, default=50)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    print(f"# MSJO LPs, {platform.python_version()}, {os.cpu_count()} CPUs, "
          f"{args.machines} machines, median of {args.repeat}\n")
    print("| jobs | tasks | base s | CLS plain s (rounds, cuts) | CLS fast s (rounds, cuts) "
          "| plain/fast | value diff | CLS/base | COGE e=0.3 s (iters) "
          "| COGE e=0 s (iters) | CND/CLS value | MarS list s | HUWF s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for n in args.jobs:
        a = synthetic(n, machines=args.machines, seed=args.seed).arrays
        base, tb = _timed(lambda: solve_cls_lp(a, max_rounds=1, seed=False), args.repeat)
        plain, tp = _timed(lambda: solve_cls_lp(a, fast=False), args.repeat)
        cls, tc = _timed(lambda: solve_cls_lp(a, fast=True), args.repeat)
        g3, tg3 = _timed(lambda: solve_coge(a, threshold=0.3), args.repeat)
        g0, tg0 = _timed(lambda: solve_coge(a, threshold=0.0), args.repeat)
        _, tm = _timed(lambda: mars(a, lp=g3), args.repeat)
        _, th = _timed(lambda: huwf(a), args.repeat)
        print(f"| {n} | {a.n_tasks} | {tb:.3f} | {tp:.2f} ({plain.rounds}, "
              f"{plain.details.cuts + plain.details.seed_cuts}) | {tc:.2f} ({cls.rounds}, "
              f"{cls.details.cuts + cls.details.seed_cuts}) | {tp / tc:.1f}x | "
              f"{abs(cls.value / plain.value - 1):.0e} | {tc / tb:.0f}x | "
              f"{tg3:.2f} ({g3.rounds}) | {tg0:.2f} ({g0.rounds}, {g0.status}) | "
              f"{g3.value / cls.value:.3f} | {tm:.3f} | {th:.3f} |", flush=True)


if __name__ == "__main__":
    main()
