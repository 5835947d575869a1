"""DEMT and the minsum LP on the paper's largest instances: 400 jobs on 200 machines.

The paper reports DEMT under 2 s on its largest instances (Section 4.2, Figure 7); the
target here is under 1 s. For every workload family
(:mod:`controller.moldable.generators`) and a few seeds, the script times

* ``demt`` without shuffles and with ``--shuffles`` batch shuffles (the experiment's
  setting);
* the ``sequential`` baseline in the same run, as the reference: the cheapest algorithm
  of the registry (an allotment of one machine and one list pass), so ``x seq`` says what
  DEMT's batches, knapsacks and compaction cost on top of a list schedule on this machine;
* the minsum interval LP (:func:`controller.moldable.bounds.minsum_lp`): build and HiGHS
  solve.

Each figure is the best of ``--repeat`` timings (less noise from other processes).

Run::

    .venv/bin/python -m benchmarks.moldable            # 4 families x 3 seeds
    .venv/bin/python -m benchmarks.moldable --quick    # 1 seed
"""
from __future__ import annotations

import argparse
import platform
import time

import numpy as np

from controller.moldable import schedule
from controller.moldable.bounds import minsum_lp
from controller.moldable.generators import FAMILIES, instance


def best_of(repeat: int, f):
    best, out = np.inf, None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = f()
        best = min(best, time.perf_counter() - t0)
    return best, out


def run(jobs: int = 400, machines: int = 200, seeds=(0, 1, 2), shuffles: int = 4,
        repeat: int = 3) -> list[dict]:
    print(f"# moldable benchmark on {platform.node()} ({platform.processor() or 'cpu'}), "
          f"python {platform.python_version()}: {jobs} jobs x {machines} machines, best of "
          f"{repeat}")
    print(f"{'family':13} {'seed':>4} {'seq s':>7} {'demt s':>7} {'x seq':>6} "
          f"{'demt+' + str(shuffles) + ' s':>9} {'x seq':>6} {'lp s':>6} {'lp vars':>8} "
          f"{'batches':>7}")
    rows = []
    for fam in FAMILIES:
        for seed in seeds:
            a = instance(fam, jobs, machines, seed=seed)
            t_seq, _ = best_of(repeat, lambda: schedule(a, "sequential"))
            t_demt, s = best_of(repeat, lambda: schedule(a, "demt"))
            t_shuf, _ = best_of(repeat, lambda: schedule(a, "demt", shuffles=shuffles))
            t_lp, lp = best_of(repeat, lambda: minsum_lp(a))
            row = {"family": fam, "seed": seed, "sequential": t_seq, "demt": t_demt,
                   "demt_shuffled": t_shuf, "lp": t_lp, "lp_solve": lp.seconds,
                   "lp_vars": lp.details.variables, "batches": s.info["batches"]}
            rows.append(row)
            print(f"{fam:13} {seed:4d} {t_seq:7.3f} {t_demt:7.3f} {t_demt / t_seq:6.1f} "
                  f"{t_shuf:9.3f} {t_shuf / t_seq:6.1f} {t_lp:6.3f} "
                  f"{lp.details.variables:8d} {s.info['batches']:7d}", flush=True)
    worst = max(rows, key=lambda r: r["demt"])
    worst_lp = max(rows, key=lambda r: r["lp"])
    print(f"# slowest demt: {worst['demt']:.3f} s ({worst['family']}, seed {worst['seed']}; "
          f"target < 1 s), {worst['demt'] / worst['sequential']:.1f} x sequential; "
          f"with {shuffles} shuffles {max(r['demt_shuffled'] for r in rows):.3f} s; "
          f"slowest LP bound: {worst_lp['lp']:.3f} s ({worst_lp['family']})")
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--jobs", type=int, default=400)
    p.add_argument("--machines", type=int, default=200)
    p.add_argument("--shuffles", type=int, default=4)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--quick", action="store_true", help="one seed per family")
    args = p.parse_args(argv)
    run(args.jobs, args.machines, (0,) if args.quick else (0, 1, 2), args.shuffles,
        args.repeat)


if __name__ == "__main__":
    main()
