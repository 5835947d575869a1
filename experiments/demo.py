"""The main job: LP-based policies against the baselines on a seeded 2-core workload.

``coflowemu demo`` (and ``make demo``) generates a synthetic workload (heavy-tailed
coflows like FB2010's, Poisson arrivals at 70 % load, weights in [1, 10], a precedence DAG
with three coflows on its longest path) on a 2-core fabric, runs every policy in the
simulator, prints the comparison table with the LP lower bound as the yardstick, and
writes the CCT CDF plot and the per-run records under ``out_dir``.
"""
from __future__ import annotations

import json
import os

from emulate.records import atomic_write
from emulate.traces import random_workload, write_json
from experiments.compare import compare
from experiments.plots import cct_cdf

DEMO_POLICIES = ["lp-flow", "lp-coflow", "lp-single", "fifo", "scf", "ncf", "lcf", "sebf",
                 "sincronia", "aalo", "fair", "weaver"]


def demo_workload(seed: int = 7):
    """The demo's workload: 12 ports x 2 cores at 1 Gbit/s, 60 coflows, chi = 3."""
    return random_workload(seed, ports=12, cores=2, coflows=60, rate_bps=1e9,
                           mean_bytes=20e6, chi=3, weights=(1.0, 10.0),
                           name=f"demo-seed{seed}")


def run_demo(seed: int = 7, out_dir: str = "results/demo") -> str:
    """Run the demo comparison; returns the printed report."""
    from emulate.cli import lp_bound_for
    w = demo_workload(seed)
    os.makedirs(out_dir, exist_ok=True)
    write_json(w, os.path.join(out_dir, "workload.json"))
    bound = lp_bound_for(w)
    cmp = compare(w, DEMO_POLICIES, lp_bound=bound, out_dir=out_dir, progress=True)
    plot = os.path.join(out_dir, "cct-cdf.png")
    cct_cdf(cmp, plot, title=f"CCT CDF, {w.name} ({len(w.coflows)} coflows, 2 cores)")
    atomic_write(os.path.join(out_dir, "compare.json"), json.dumps(cmp.to_json(), indent=1))
    return (f"workload {w.name}: {len(w.coflows)} coflows, {w.arrays.n_flows} flows, "
            f"{w.fabric.ports} ports x {w.fabric.cores} cores at 1 Gbit/s, DAG chi={w.chi}\n"
            f"{cmp.table()}\n(ratio LP = (sum w*C - sum w*r) / (LP - sum w*r); the LP is "
            f"LP (1), a lower bound for every schedule)\n"
            f"plot: {plot}; records: {out_dir}/")
