"""LP1 / LP2 / LP3 build and solve times against instance size, and how far they grow.

Instances are Google-like workloads (``controller.compute.generators.google_like``) of
growing size: ``jobs`` doubles at every step and the machine count grows with it
(``machines = max(4, jobs // 8)``), so the load per machine stays comparable. LP3 runs on
the single-machine (pinned) instance, LP1 and LP2 on the instance with placement sets
(``n_local`` local machines, a ``remote_fraction`` of the others as remote options).

For every LP the size grows until one solve exceeds ``--budget`` seconds (or ``--max-jobs``
is reached); the last size solved within the budget is "how far it grows on this machine".
Every row also shows the solve time relative to the baseline, the smallest instance's
solve time of the same LP in the same run, and the growth of the LP itself (non-zeros
relative to the baseline), so the ratio says how the time scales with the matrix.

Run::

    .venv/bin/python -m benchmarks.compute_lp              # budget 20 s per solve
    .venv/bin/python -m benchmarks.compute_lp --quick      # small sizes, seconds
"""
from __future__ import annotations

import argparse
import platform
import time

import numpy as np

from controller.compute.generators import google_like
from controller.compute.lp import lp1, lp2, lp3


def instance(jobs: int, seed: int = 0, remote_fraction: float = 0.3):
    return google_like(jobs, max(4, jobs // 8), seed=seed, n_local=3,
                       remote_fraction=remote_fraction, weight_scheme="random")


def measure(name: str, w, eps: float):
    a = w.arrays
    t0 = time.perf_counter()
    if name == "LP1":
        r = lp1(w, eps)
    elif name == "LP2":
        r = lp2(w)
    else:
        w = w.pinned()
        r = lp3(w)
    wall = time.perf_counter() - t0
    d = r.details
    L = d.intervals.L if d.intervals is not None else 0
    return {"lp": name, "jobs": len(w.jobs), "tasks": a.n_tasks, "machines": a.n_machines,
            "intervals": L, "vars": d.variables, "rows": d.rows, "nnz": d.nonzeros,
            "build": d.build_seconds, "solve": r.seconds, "wall": wall, "value": r.value}


def run(start: int = 8, max_jobs: int = 4096, budget: float = 20.0, eps: float = 0.25,
        lps=("LP3", "LP2", "LP1")):
    print(f"# compute LP benchmark on {platform.node()} ({platform.processor() or 'cpu'}), "
          f"python {platform.python_version()}, budget {budget:g} s per solve, eps {eps}")
    head = (f"{'lp':4} {'jobs':>5} {'tasks':>6} {'mach':>4} {'L':>3} {'vars':>9} {'rows':>9} "
            f"{'nnz':>10} {'build s':>8} {'solve s':>8} {'x base':>8} {'nnz x':>7}")
    summary = {}
    for name in lps:
        print(head)
        base = None
        jobs = start
        last_ok = None
        while jobs <= max_jobs:
            row = measure(name, instance(jobs), eps)
            if base is None:
                base = row
            ratio = row["solve"] / max(base["solve"], 1e-9)
            growth = row["nnz"] / max(base["nnz"], 1)
            print(f"{name:4} {row['jobs']:5d} {row['tasks']:6d} {row['machines']:4d} "
                  f"{row['intervals']:3d} {row['vars']:9d} {row['rows']:9d} {row['nnz']:10d} "
                  f"{row['build']:8.3f} {row['solve']:8.3f} {ratio:8.1f} {growth:7.1f}",
                  flush=True)
            if row["solve"] > budget:
                break
            last_ok = row
            jobs *= 2
        summary[name] = last_ok
        print()
    print("# largest instance solved within the budget")
    for name, r in summary.items():
        if r:
            print(f"{name}: {r['jobs']} jobs, {r['tasks']} tasks, {r['machines']} machines, "
                  f"{r['intervals']} intervals -> {r['vars']} vars, {r['nnz']} nnz, "
                  f"solve {r['solve']:.2f} s")
    return summary


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--budget", type=float, default=20.0, help="stop growing past this solve time")
    p.add_argument("--max-jobs", type=int, default=4096)
    p.add_argument("--eps", type=float, default=0.25, help="LP1 interval growth")
    p.add_argument("--quick", action="store_true")
    args = p.parse_args(argv)
    if args.quick:
        run(start=8, max_jobs=64, budget=5.0, eps=args.eps)
    else:
        run(max_jobs=args.max_jobs, budget=args.budget, eps=args.eps)


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
