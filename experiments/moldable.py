"""Reproduce the bi-criteria paper's experiments: DEMT and the baselines against the bounds.

The setting of Section 4 of the paper: ``m = 200`` machines, 25 to 400 independent
moldable jobs, 40 runs (instances) per point, four workload families
(:mod:`controller.moldable.generators`: weakly parallel, highly parallel, mixed,
Cirne-Berman), every algorithm of the registry (:mod:`controller.moldable`: ``demt`` with
``--shuffles`` batch shuffles, ``gang``, ``sequential``, ``list-shelf``, ``list-wlptf``,
``list-saf``). For each point and algorithm, both criteria are compared with their lower
bounds (:mod:`controller.moldable.bounds`): the minsum with the interval LP, the makespan
with the dual-approximation bound. The ratio of a point is, as in the paper (after Jain),
the sum of the values over the sum of the bounds of its runs; min and max are the extreme
per-run ratios.

Every record (one per family, jobs, run and algorithm) is kept; after each point the whole
list is written to ``<out>/moldable.json`` atomically (:func:`emulate.io.records.
atomic_write`), so a crash loses at most the point in progress. The tables go to
``<out>/moldable.md`` and standard output, the plot (ratio against the number of jobs per
family and criterion, min/max error bars) to ``<out>/moldable.png``.

Run::

    .venv/bin/python -m experiments.moldable            # the paper's setting, ~5 minutes
    .venv/bin/python -m experiments.moldable --quick    # 3 runs per point, 3 job counts

References
----------
Dutot, Eyraud, Mounié, Trystram, Section 4 (Figures 3-6); algorithms.md 5.4.
"""
from __future__ import annotations

import argparse
import json
import os
import time
from dataclasses import asdict, dataclass

import numpy as np

from controller.moldable import algorithms, schedule
from controller.moldable.bounds import makespan_bound, minsum_lp
from controller.moldable.generators import FAMILIES, instance
from emulate.io.records import atomic_write


@dataclass
class Config:
    """The experiment's sizes (defaults: the paper's setting)."""

    machines: int = 200
    jobs: tuple = (25, 50, 100, 200, 400)
    runs: int = 40
    families: tuple = FAMILIES
    algorithms: tuple = tuple(algorithms())
    shuffles: int = 4
    seed: int = 0
    out: str = "results/moldable"


def run_point(cfg: Config, family: str, n: int) -> list[dict]:
    """The records of one point: every run, every algorithm."""
    rows = []
    for r in range(cfg.runs):
        seed = [cfg.seed, FAMILIES.index(family), n, r]
        a = instance(family, n, cfg.machines, seed=np.random.default_rng(seed))
        t0 = time.perf_counter()
        lp = minsum_lp(a)
        lp_secs = time.perf_counter() - t0
        cb = makespan_bound(a).value
        for name in cfg.algorithms:
            opts = {"shuffles": cfg.shuffles, "seed": r} if name == "demt" else {}
            t0 = time.perf_counter()
            s = schedule(a, name, **opts)
            secs = time.perf_counter() - t0
            rows.append({"family": family, "jobs": n, "machines": cfg.machines, "run": r,
                         "algorithm": name, "minsum": s.minsum, "makespan": s.makespan,
                         "minsum_bound": lp.value, "makespan_bound": cb,
                         "seconds": secs, "lp_seconds": lp_secs})
    return rows


def summary(rows: list[dict], family: str, n: int, algorithm: str, criterion: str):
    """(ratio of sums, min, max) of the runs of one point, or None."""
    sel = [r for r in rows if r["family"] == family and r["jobs"] == n
           and r["algorithm"] == algorithm]
    if not sel:
        return None
    v = np.array([r[criterion] for r in sel])
    b = np.array([r[criterion + "_bound"] for r in sel])
    per = v / b
    return float(v.sum() / b.sum()), float(per.min()), float(per.max())


def tables(rows: list[dict], cfg: Config) -> str:
    """Markdown: per family and criterion, the ratio to the bound (sum/sum [min, max])."""
    out = []
    for fam in cfg.families:
        for crit, bound in (("minsum", "interval LP"), ("makespan", "dual bound")):
            ns = [n for n in cfg.jobs if summary(rows, fam, n, cfg.algorithms[0], crit)]
            if not ns:
                continue
            runs = len({r["run"] for r in rows if r["family"] == fam})
            out.append(f"**{fam}**, {crit} / {bound} (m = {cfg.machines}, {runs} runs per "
                       f"point; sum of values / sum of bounds [min, max])")
            out.append("")
            out.append("| jobs | " + " | ".join(cfg.algorithms) + " |")
            out.append("|---:|" + "---|" * len(cfg.algorithms))
            for n in ns:
                cells = []
                for name in cfg.algorithms:
                    s = summary(rows, fam, n, name, crit)
                    cells.append(f"{s[0]:.2f} [{s[1]:.2f}, {s[2]:.2f}]")
                out.append(f"| {n} | " + " | ".join(cells) + " |")
            out.append("")
    return "\n".join(out)


def run(cfg: Config, verbose: bool = True) -> tuple[list[dict], str]:
    """Every point; records written after each; returns the records and the tables."""
    rows: list[dict] = []
    path = os.path.join(cfg.out, "moldable.json")
    t_start = time.perf_counter()
    for fam in cfg.families:
        for n in cfg.jobs:
            rows.extend(run_point(cfg, fam, n))
            atomic_write(path, json.dumps({"meta": asdict(cfg), "rows": rows}, indent=1))
            if verbose:
                print(f"[{time.perf_counter() - t_start:6.1f}s] {fam} {n} jobs", flush=True)
    text = tables(rows, cfg)
    atomic_write(os.path.join(cfg.out, "moldable.md"), text + "\n")
    plot(rows, cfg, os.path.join(cfg.out, "moldable.png"))
    return rows, text


def plot(rows: list[dict], cfg: Config, path: str) -> None:
    """One panel per family and criterion: ratio against the number of jobs, with the
    smallest and largest per-run ratio as error bars (the paper's Figures 3-6)."""
    from experiments.plots import ratio_sweep
    panels = {}
    for fam in cfg.families:
        for crit in ("minsum", "makespan"):
            lines = {name: [(n, *s) for n in cfg.jobs
                            if (s := summary(rows, fam, n, name, crit)) is not None]
                     for name in cfg.algorithms}
            if any(lines.values()):
                panels[f"{fam}: {crit}"] = {k: v for k, v in lines.items() if v}
    ratio_sweep(panels, path, xlabel="jobs",
                title=f"moldable jobs on m = {cfg.machines}: ratio to the lower bounds")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", default=Config.out)
    p.add_argument("--runs", type=int, default=Config.runs)
    p.add_argument("--machines", type=int, default=Config.machines)
    p.add_argument("--shuffles", type=int, default=Config.shuffles)
    p.add_argument("--seed", type=int, default=Config.seed)
    p.add_argument("--quick", action="store_true",
                   help="3 runs per point, 25 / 100 / 400 jobs (a smoke run)")
    args = p.parse_args(argv)
    cfg = Config(machines=args.machines, runs=args.runs, shuffles=args.shuffles,
                 seed=args.seed, out=args.out)
    if args.quick:
        cfg.runs, cfg.jobs = min(args.runs, 3), (25, 100, 400)
    _, text = run(cfg)
    print(text)


if __name__ == "__main__":
    main()
