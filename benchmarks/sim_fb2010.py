"""Simulator speed on the Facebook coflow benchmark (FB2010: 526 coflows, ~706k flows).

Prints, per policy, the wall time of a full simulation (1 core, 2^30 bit/s as in
CoflowSim), the number of inner events and policy calls, and the mean CCT. As a baseline
in the same run, the first ``--prefix`` coflows are simulated twice under ``fifo``,
``fair`` and ``sebf``: with the incremental engines (the default: the priority-greedy
matching repaired over (src, dst) pairs, ``emulate/sim/matching.py``; max-min fair sharing
kept by pairs and ports from event to event, ``emulate/sim/fairshare.py``; rate-capped
priority with its backfill repaired, ``emulate/sim/capped.py``) and with the plain rescan
of every eligible flow at every event (``incremental=False``); the ratios are what the
incremental engines buy.

Reading the trace is timed too (median of 3): ``read_fb_trace`` (numpy over each line,
coflows held as arrays) against, in the same run, the flow-by-flow reference reader of
``tests/test_workload_arrays.py`` (a dict and a Flow object per flow, as the reader once
did; it builds the identical workload). Target (issue #18): under 0.5 s.

``--cores 1,2,4`` repeats the table of full simulations on ``m`` parallel cores (each
server has one link of 2^30 bit/s to each core; ``--multi-policies``, default the
policies the parallel-network papers compare: lp-flow, lp-coflow, weaver, sebf, aalo,
sincronia).

Usage: ``python benchmarks/sim_fb2010.py [--trace PATH] [--policies a,b] [--prefix N]
[--cores 1,2,4] [--multi-policies a,b]``
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

from controller.policies import get_policy
from emulate.sim.flowsim import Simulator, simulate
from emulate.io.traces import read_fb_trace

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
DEFAULT_TRACE = os.path.join(HERE, "..", "..", "shared", "traces", "FB2010-1Hr-150-0.txt")
POLICIES = "fifo,scf,ncf,lcf,sebf,aalo,sincronia,fair,lp-single,lp-coflow"
MULTI_POLICIES = "lp-flow,lp-coflow,weaver,sebf,aalo,sincronia"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", default=DEFAULT_TRACE)
    ap.add_argument("--policies", default=POLICIES)
    ap.add_argument("--prefix", type=int, default=60,
                    help="coflows in the incremental-vs-rescan comparison")
    ap.add_argument("--cores", default="1",
                    help="comma-separated m values for the table of full simulations")
    ap.add_argument("--multi-policies", default=MULTI_POLICIES,
                    help="the policies simulated on m > 1 cores")
    args = ap.parse_args()
    if not os.path.exists(args.trace):
        raise SystemExit(f"trace not found: {args.trace} (see README: The Facebook trace)")
    from test_workload_arrays import reference_reader

    def timed(read) -> float:
        times = []
        for _ in range(3):
            t = time.perf_counter()
            read(args.trace)
            times.append(time.perf_counter() - t)
        return statistics.median(times)

    w = read_fb_trace(args.trace)
    new, old = timed(read_fb_trace), timed(reference_reader)
    print(f"read {w.name}: {len(w.coflows)} coflows, {w.arrays.n_flows} flows in "
          f"{new:.2f} s (flow-by-flow reference {old:.2f} s, x{old / new:.1f}; "
          f"target < 0.5 s)")
    simulate(read_fb_trace(args.trace, limit=3), get_policy("fifo"))  # numba warm-up

    small = read_fb_trace(args.trace, limit=args.prefix)
    for name in ("fair", "sebf"):
        simulate(read_fb_trace(args.trace, limit=3), get_policy(name))  # numba warm-up
    print()
    for name, what in (("fifo", "matching"), ("fair", "fair sharing by pairs"),
                       ("sebf", "capped backfill")):
        times = {}
        for incremental in (True, False):
            t = time.perf_counter()
            Simulator(small, get_policy(name), incremental=incremental).run()
            times[incremental] = time.perf_counter() - t
        print(f"first {args.prefix} coflows ({small.arrays.n_flows} flows), {name}: "
              f"incremental {what} {times[True]:.2f} s, rescan {times[False]:.2f} s, "
              f"speed-up x{times[False] / times[True]:.1f}")

    for m in map(int, args.cores.split(",")):
        wm = w if m == 1 else read_fb_trace(args.trace, cores=m)
        names = args.policies if m == 1 else args.multi_policies
        print(f"\n{m} core(s)\n{'policy':<12}{'wall s':>9}{'events':>10}{'plans':>7}"
              f"{'mean CCT s':>12}")
        for name in names.split(","):
            t = time.perf_counter()
            r = simulate(wm, get_policy(name))
            wall = time.perf_counter() - t
            print(f"{name:<12}{wall:>9.1f}{r.events:>10}{r.extra.get('policy_calls', 0):>7}"
                  f"{r.cct.mean():>12.2f}", flush=True)


if __name__ == "__main__":
    main()
