"""End to end: a whole ``coflowemu run FB2010 --policy P --json`` against its simulation.

For each policy, whole processes (median of ``--repeat``) on FB2010 with its arrivals (one
core, 2^30 bit/s): the process's wall time, the simulator's own ``wall_seconds`` from its
JSON, and their ratio (the target: at most 1.5). Then, in this process, what runs besides
the simulation: reading the trace (``read_fb_trace``), the LP bound reported as
``lp_lower_bound`` (solved, and read back from the bound cache of
``controller.lp.bound``), the JSON document, and the start-up of a tiny ``run``.

The LP bound is cached on disk by default (``$COFLOWEMU_CACHE``); the first process solves
it, so ``--repeat`` runs after a first, unmeasured, one.

Usage: ``python benchmarks/sim_end_to_end.py [--trace PATH] [--policies a,b]
[--repeat N]``
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_TRACE = os.path.join(HERE, "..", "..", "shared", "traces", "FB2010-1Hr-150-0.txt")
COFLOWEMU = os.path.join(os.path.dirname(sys.executable), "coflowemu")
POLICIES = "fifo,scf,sebf,sincronia,aalo,fair"


def whole(args: list[str]) -> tuple[float, dict]:
    t = time.perf_counter()
    out = subprocess.run([COFLOWEMU, "run", *args, "--json"], check=True,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout
    return time.perf_counter() - t, json.loads(out)


def process_and_simulation(args: list[str], repeat: int) -> tuple[float, float]:
    """Medians of ``repeat`` whole ``coflowemu run ARGS --json`` processes: the process's
    wall time and the simulator's own ``wall_seconds``, after one unmeasured process (the
    LP bound into its cache; the kernels loaded once)."""
    whole(args)
    runs = [whole(args) for _ in range(repeat)]
    return (statistics.median(r[0] for r in runs),
            statistics.median(r[1]["wall_seconds"] for r in runs))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", default=DEFAULT_TRACE)
    ap.add_argument("--policies", default=POLICIES)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    if not os.path.exists(args.trace):
        raise SystemExit(f"trace not found: {args.trace} (see README: The Facebook trace)")
    from controller.lp.bound import lp_bound_for
    from emulate.io.traces import read_fb_trace

    t = time.perf_counter()
    w = read_fb_trace(args.trace)
    t_read = time.perf_counter() - t
    t = time.perf_counter()
    value = lp_bound_for(w, cache=False)
    t_lp = time.perf_counter() - t
    lp_bound_for(w)  # into the cache
    t = time.perf_counter()
    lp_bound_for(w)
    t_cached = time.perf_counter() - t
    with tempfile.TemporaryDirectory() as tmp:
        tiny = os.path.join(tmp, "tiny.json")
        with open(tiny, "w") as fh:
            json.dump({"fabric": {"ports": 2, "cores": 1, "rate_bps": 8e6},
                       "coflows": [{"id": "a", "flows": [{"src": 0, "dst": 1,
                                                          "bytes": 1e6}]}]}, fh)
        startup = statistics.median(whole([tiny, "--policy", "sebf"])[0]
                                    for _ in range(args.repeat))
    print(f"FB2010 ({w.arrays.n_flows} flows, trace arrivals, 1 core); outside the "
          f"simulation: reading {t_read:.2f} s, LP bound {t_lp:.2f} s solved "
          f"({value:.6g}) / {t_cached * 1e3:.0f} ms cached, start-up of a tiny run "
          f"{startup:.2f} s")
    print(f"\n{'policy':<11}{'process s':>10}{'sim s':>8}{'ratio':>7}{'no LP s':>9}"
          f"{'ratio':>7}")
    for p in args.policies.split(","):
        wall, sim = process_and_simulation([args.trace, "--policy", p], args.repeat)
        nolp = statistics.median(whole([args.trace, "--policy", p, "--no-lp-bound"])[0]
                                 for _ in range(args.repeat))
        print(f"{p:<11}{wall:10.2f}{sim:8.2f}{wall / sim:7.2f}{nolp:9.2f}{nolp / sim:7.2f}",
              flush=True)
    print("\n(ratio: the whole process over the simulator's own wall_seconds; target <= 1.5)")


if __name__ == "__main__":
    main()
