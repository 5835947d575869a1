"""What checkpoints cost when the state moves over the fabric (checkpoint transfers).

The paper's setting scaled down (algorithms.md 4.4; docs/redundancy.md): ``--machines``
AP/UP machines (default 20), Poisson arrivals at ``lam`` scaled to the same load as the
paper's ``lam`` 1 on 100 machines (``lam = machines / 100`` by default: load 0.4),
Pareto work of mean 40, a fabric of one core at ``--rate`` (default 1 Gbit/s) with
machine ``i`` on port ``i``, time units of seconds. Every job declares the same
``checkpoint_bytes``; each row is one policy (its network half scheduling the transfers)
with index or sticky assignment, at one size. Printed per row: the mean flowtime, its
ratio to the same run with free checkpoints (the paper's model: ``checkpoint_bytes`` 0,
measured in the same run on the same instance), the transfers released and abandoned,
the gigabytes put on the wire, and the wall seconds of the run (beside the free run's:
the event loop in Python with the flow-level simulator restarted at every transfer,
against the numba kernel).

Rows go to ``--out`` (JSON ``{"meta", "rows"}``, rewritten atomically after each row) as
they are measured; the load average is printed beside each (the machine is shared).

Usage::

    .venv/bin/python benchmarks/redundancy_checkpoints.py [--machines 20] [--horizon 2000]
        [--sizes 1e6 1e8 1e9] [--policies srpt+r fair+r laps+r srpt] [--network sebf]
        [--out results/redundancy/checkpoints.jsonl]
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from controller.jobmodels.redundancy import joint_from_redundancy  # noqa: E402
from controller.redundancy.generators import machine_specs, poisson_pareto  # noqa: E402
from controller.redundancy.simulator import Instance  # noqa: E402
from controller.redundancy.speed import ApUp, constant  # noqa: E402
from emulate.io.records import RowLog  # noqa: E402
from emulate.sim.jobsim import simulate_joint  # noqa: E402
from topologies import Fabric  # noqa: E402


def workload(seed: int, machines: int, lam: float, horizon: float, rate_bps: float,
             nbytes: float):
    """The scaled-down paper instance as a joint workload with ``nbytes`` per job."""
    arrival, work = poisson_pareto(seed, lam, horizon, 2.0, 20.0)
    specs = machine_specs(seed, machines, ApUp(), "ap-up")
    inst = Instance(arrival, work, constant(machines))
    return joint_from_redundancy(inst, Fabric(machines, 1, rate_bps), specs=specs,
                                 checkpoint_bytes=nbytes)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--machines", type=int, default=20)
    ap.add_argument("--lam", type=float, default=None,
                    help="arrival rate (default machines / 100: the paper's load at lam 1)")
    ap.add_argument("--horizon", type=float, default=2000.0)
    ap.add_argument("--rate", type=float, default=1e9, help="fabric rate, bit/s")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--sizes", type=float, nargs="*", default=[1e6, 1e8, 1e9])
    ap.add_argument("--policies", nargs="*", default=["srpt+r", "fair+r", "laps+r", "srpt"],
                    help="redundancy policies (compute halves)")
    ap.add_argument("--network", default="sebf", help="the network policy of the transfers")
    ap.add_argument("--assign", nargs="*", default=["index", "sticky"])
    ap.add_argument("--out", default=None, help="JSON file of the rows")
    args = ap.parse_args(argv)
    lam = args.lam if args.lam is not None else args.machines / 100.0
    log = RowLog(args.out, {k: v for k, v in vars(args).items() if k != "out"}) \
        if args.out else None
    free_jw = workload(args.seed, args.machines, lam, args.horizon, args.rate, 0.0)
    simulate_joint(free_jw, args.policies[0].split("+")[0])      # compile before timing
    print(f"{args.machines} machines, lam {lam:g}, horizon {args.horizon:g}: "
          f"{len(free_jw.jobs)} jobs; fabric {args.rate:g} bit/s")
    print(f"{'policy':<28}{'bytes':>8}{'mean':>9}{'x free':>8}{'transfers':>10}"
          f"{'abandoned':>10}{'GB moved':>10}{'s':>8}{'free s':>8}{'load':>7}")
    for size in args.sizes:
        jw = workload(args.seed, args.machines, lam, args.horizon, args.rate, size)
        for compute in args.policies:
            for assign in args.assign:
                pol = f"{compute}@assign={assign}+{args.network}"
                t = time.perf_counter()
                free = simulate_joint(free_jw, f"{compute}@assign={assign}")
                free_s = time.perf_counter() - t
                t = time.perf_counter()
                doc = simulate_joint(jw, pol).to_json()
                wall = time.perf_counter() - t
                c = doc["checkpoint_cost"]
                row = {"policy": pol, "checkpoint_bytes": size, "jobs": len(jw.jobs),
                       "mean_flowtime": doc["mean_flowtime"],
                       "free_mean_flowtime": free.extra["mean_flowtime"],
                       "ratio": doc["mean_flowtime"] / free.extra["mean_flowtime"],
                       "transfers": c["transfers"], "abandoned": c["abandoned"],
                       "bytes_moved": c["bytes_moved"], "seconds": wall,
                       "free_seconds": free_s, "load": os.getloadavg()[0]}
                print(f"{pol:<28}{size:8.0e}{row['mean_flowtime']:9.2f}{row['ratio']:8.3f}"
                      f"{c['transfers']:10d}{c['abandoned']:10d}"
                      f"{c['bytes_moved'] / 1e9:10.2f}{wall:8.2f}{free_s:8.2f}"
                      f"{row['load']:7.2f}", flush=True)
                if log is not None:
                    log.add(**row)
    if log is not None:
        print(f"rows: {args.out}")


if __name__ == "__main__":
    main()
