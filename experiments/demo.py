"""The main job: LP-based policies against the baselines on a seeded 2-core workload.

``coflowemu demo`` (and ``make demo``) runs the sweep ``experiments/specs/demo.toml``
(with the seed asked for): a synthetic workload (heavy-tailed coflows like FB2010's,
Poisson arrivals at 70 % load, weights in [1, 10], a precedence DAG with three coflows
on its longest path) on a 2-core fabric, every policy in the simulator, in this process
(:func:`experiments.compare.compare`) into the results store ``out_dir``; it prints the
comparison table with the LP lower bound as the yardstick and writes the CCT CDF plot
and the workload. A second demo with the same seed and code reads its runs back from
the store. ``demo-emulation`` runs ``experiments/specs/demo-emulation.toml``: the same
comparison on Mininet beside the simulator (root).
"""
from __future__ import annotations

import os

import numpy as np

from experiments.compare import compare
from experiments.plots import cct_cdf

SPECS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "specs")
DEMO = os.path.join(SPECS, "demo.toml")
EMULATION = os.path.join(SPECS, "demo-emulation.toml")


def demo_spec(seed: int = 7, path: str = DEMO):
    """The spec at ``path`` (one generated workload) with ``seeds = [seed]`` and the
    workload named ``<spec name>-seed<seed>``."""
    from experiments.sweep.spec import parse_spec, read_doc
    doc = read_doc(path)
    (w,) = doc["workloads"]
    w["seeds"] = [seed]
    w["params"]["name"] = f"{doc['name']}-seed{seed}"
    return parse_spec(doc, source=path)


def _workload(spec, out_dir: str):
    """The spec's workload, also written to ``out_dir/workload.json``."""
    from emulate.io.traces import write_json
    from experiments.sweep.execute import build_workload
    from experiments.sweep.spec import canonical
    r = spec.runs()[0]
    w = build_workload(canonical(r.workload), canonical(r.fabric))
    os.makedirs(out_dir, exist_ok=True)
    write_json(w, os.path.join(out_dir, "workload.json"))
    return w


def run_demo(seed: int = 7, out_dir: str = "results/demo") -> str:
    """Run the demo comparison; returns the printed report."""
    spec = demo_spec(seed)
    w = _workload(spec, out_dir)
    cmp = compare(spec, out_dir, rerun=False)["sim"]
    plot = os.path.join(out_dir, "cct-cdf.png")
    cct_cdf(cmp, plot, title=f"CCT CDF, {w.name} ({len(w.coflows)} coflows, 2 cores)")
    return (f"workload {w.name}: {len(w.coflows)} coflows, {w.arrays.n_flows} flows, "
            f"{w.fabric.ports} ports x {w.fabric.cores} cores at 1 Gbit/s, DAG chi={w.chi}\n"
            f"{cmp.table()}\n(ratio LP = (sum w*C - sum w*r) / (LP - sum w*r); the LP is "
            f"LP (1), a lower bound for every schedule)\n"
            f"plot: {plot}; runs: the results store {out_dir} (coflowemu results {out_dir})")


def run_demo_emulation(seed: int = 7, out_dir: str = "results/demo-emulation") -> str:
    """The same comparison on real switches (Mininet, os-ken, TCP), beside the simulator.

    Needs root and the system set-up of ``scripts/setup-system.sh``.
    """
    spec = demo_spec(seed, EMULATION)
    w = _workload(spec, out_dir)
    got = compare(spec, out_dir, rerun=True)
    emu, sim = got["mininet"], got["sim"]
    cct_cdf(emu, os.path.join(out_dir, "cct-cdf-mininet.png"),
            title=f"CCT CDF on Mininet, {w.name}")
    lines = [f"workload {w.name}: {len(w.coflows)} coflows, {w.arrays.n_flows} flows, "
             f"{w.fabric.ports} hosts x {w.fabric.cores} cores at 20 Mbit/s",
             "", "emulation (Mininet + os-ken + TCP):", emu.table(), "",
             "simulator, same workload:", sim.table(), "",
             f"{'policy':<14}{'mean CCT emu/sim':>18}{'median |CCT err|':>18}"]
    for policy, cct in emu.series.items():
        ref = sim.series[policy]
        err = abs(cct / ref - 1)
        lines.append(f"{policy:<14}{cct.mean() / ref.mean():>18.3f}"
                     f"{100 * float(np.median(err)):>17.1f}%")
    lines.append(f"plots and the results store: {out_dir}/")
    return "\n".join(lines)
