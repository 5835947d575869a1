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

import numpy as np

from controller.lp.bound import lp_bound_for
from emulate.io.records import atomic_write
from emulate.io.traces import random_workload, write_json
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


EMULATION_POLICIES = ["fifo", "sincronia", "lp-coflow", "lp-flow"]


def emulation_workload(seed: int = 7):
    """The emulation demo's workload: 4 hosts x 2 cores at 20 Mbit/s, 16 coflows of about
    8 MB (flows long enough for TCP on a userspace switch; see the README's fidelity
    numbers), 70 % load, weights in [1, 10]."""
    return random_workload(seed, ports=4, cores=2, coflows=16, rate_bps=20e6,
                           mean_bytes=8e6, chi=1, weights=(1.0, 10.0),
                           name=f"demo-emulation-seed{seed}")


def run_demo_emulation(seed: int = 7, out_dir: str = "results/demo-emulation") -> str:
    """The same comparison on real switches (Mininet, os-ken, TCP), beside the simulator.

    Needs root and the system set-up of ``scripts/setup-system.sh``.
    """
    w = emulation_workload(seed)
    os.makedirs(out_dir, exist_ok=True)
    write_json(w, os.path.join(out_dir, "workload.json"))
    bound = lp_bound_for(w)
    sim = compare(w, EMULATION_POLICIES, lp_bound=bound, out_dir=os.path.join(out_dir, "sim"))
    emu = compare(w, EMULATION_POLICIES, engine="mininet", lp_bound=bound,
                  out_dir=os.path.join(out_dir, "mininet"), progress=True)
    cct_cdf(emu, os.path.join(out_dir, "cct-cdf-mininet.png"),
            title=f"CCT CDF on Mininet, {w.name}")
    lines = [f"workload {w.name}: {len(w.coflows)} coflows, {w.arrays.n_flows} flows, "
             f"{w.fabric.ports} hosts x {w.fabric.cores} cores at 20 Mbit/s",
             "", "emulation (Mininet + os-ken + TCP):", emu.table(), "",
             "simulator, same workload:", sim.table(), "",
             f"{'policy':<14}{'mean CCT emu/sim':>18}{'median |CCT err|':>18}"]
    for re_, rs in zip(emu.runs, sim.runs):
        err = abs(re_.cct / rs.cct - 1)
        lines.append(f"{re_.policy:<14}{re_.cct.mean() / rs.cct.mean():>18.3f}"
                     f"{100 * float(np.median(err)):>17.1f}%")
    lines.append(f"records and plots: {out_dir}/")
    return "\n".join(lines)
