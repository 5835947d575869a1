"""Benchmark of the redundancy simulator on the paper's full setting, per policy.

The paper's simulations (algorithms.md 4.4): 100 machines with AP/UP speed processes,
Poisson arrivals at ``lam = 2.5`` (the heavy-traffic limit) over a horizon of 100,000
time units, Pareto work of mean 40: about 250,000 jobs. Per policy it prints the
simulator's seconds (the exact checkpoint kernel, :func:`controller.redundancy.simulate`,
with the speed processes already drawn), its checkpoints (arrivals and departures), the
speed change points it crossed, events per second (both counted) and the ratio to the
target of 60 s. The baseline measured in the same run is ``draw``: drawing the 100
machines' speed processes far enough (one pass over the change points, numpy); a
policy's ``x draw`` is how many such passes its whole simulation costs.

Usage::

    .venv/bin/python benchmarks/redundancy.py [--lam 2.5] [--horizon 100000]
        [--policies srpt+r fair+r ...]
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402

from controller.redundancy import POLICIES, Instance, simulate  # noqa: E402
from controller.redundancy.generators import paper_instance  # noqa: E402
from controller.redundancy.speed import constant  # noqa: E402

TARGET = 60.0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lam", type=float, default=2.5)
    ap.add_argument("--horizon", type=float, default=100_000.0)
    ap.add_argument("--machines", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--policies", nargs="*", default=list(POLICIES))
    args = ap.parse_args(argv)
    print(f"# {platform.python_version()} on {platform.machine()}, {os.cpu_count()} cpus")
    # compile (or load) the kernels before anything is timed
    simulate(Instance(np.zeros(2), np.ones(2), constant(1)), "srpt+r", record=True)
    inst = paper_instance(args.seed, machines=args.machines, lam=args.lam,
                          horizon=args.horizon)
    first = simulate(inst, args.policies[0])          # finds how far the runs go
    until = 1.5 * float(first.completion.max())
    t = time.perf_counter()
    speed = inst.speed(until)
    draw = time.perf_counter() - t
    fixed = Instance(inst.arrival, inst.work, speed)
    print(f"{args.machines} machines, lam {args.lam}, horizon {args.horizon:g}: "
          f"{inst.n_jobs} jobs, {len(speed.time)} speed change points drawn to {until:.0f}")
    print(f"draw (baseline): {draw:.2f} s")
    print(f"{'policy':<12}{'seconds':>9}{'x draw':>8}{'/ 60 s':>8}{'checkpts':>10}"
          f"{'crossed':>10}{'events/s':>11}{'mean flowtime':>15}")
    for pol in args.policies:
        r = simulate(fixed, pol)
        s = r.wall_seconds
        print(f"{pol:<12}{s:9.2f}{s / draw:8.1f}{s / TARGET:8.2f}{r.checkpoints:10d}"
              f"{r.crossed:10d}{r.events / s:11.0f}{r.mean_flowtime:15.2f}", flush=True)


if __name__ == "__main__":
    main()
