"""Why the simulator's time grows faster than its flows: the live flows' working set
against this machine's memory.

Issue #18 asks that the time to simulate FB2010 tiled k times (k copies on disjoint ports,
the same arrivals) grow at most linearly in k. Every count of work does (the copies finish
together: sebf on one core has 521,376 events at 1x and at 4x, each doing k times the
work; docs/simulator-speed.md, round 9), yet the engine's event loop costs 1.4-1.6 times
more per unit of work at 4x. This script measures, in one run, the two sides of the
explanation, and how much a layout that packs the live flows densely could change it:

1. **The live set.** FB2010 with its arrivals on one core under ``--policy``, sampled at
   flow completions (every completion is an event, so the sample is weighted as the
   engine's work is): the flows that are live (released and not finished: those in the
   engine's pairs and heaps), and the 64-byte lines they occupy in one per-flow float64
   array (*density*: live flows per 8 entries; 1.00 would be a table of the live flows
   alone). Times ``--arrays`` per-flow arrays the engine reads or writes for a flow it
   touches (the capped engine, a rate change: ``rem``, ``rate``, ``size``, ``coflow``,
   ``tl``, ``seg_start``, ``pinned``, the due heap's position, the first-pass rate and the
   changed mark; a completion adds ``done``, ``flow_completion``, the pair and the key),
   that is the live working set at 1x; FB2010 tiled k times has k times it.
2. **This machine's cost of touching a flow**: a read-modify-write of one entry in each of
   ``--arrays`` float64 arrays at random over working sets of those sizes (numba, the
   engine's compiler), per touched flow, at 1x, 4x and 10x: as the arrays are now, packed
   densely (a table of the live flows alone), and as rows (a flow's entries in one row,
   the same bytes as now): the growth per unit of work that memory alone predicts.
3. **How much the layout matters**: the simulation's CPU (in this process, after the
   live set's simulation) with the flows numbered as read (a coflow's flows adjacent) and numbered at
   random, every live flow on lines of its own.

Usage: ``python benchmarks/sim_locality.py [--trace PATH] [--policy sebf] [--arrays 12]
[--samples 400]``
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import time

import numba
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_TRACE = os.path.join(HERE, "..", "..", "shared", "traces", "FB2010-1Hr-150-0.txt")
LINE = 64          # bytes of a cache line
ENTRIES = LINE // 8


@numba.njit(cache=True)
def _touch(arrays, index):
    """One read-modify-write of entry ``i`` of every row of ``arrays`` for each ``i`` of
    ``index`` (the rows are the per-flow arrays, each its own lines)."""
    for i in index:
        for k in range(arrays.shape[0]):
            arrays[k, i] = arrays[k, i] * 0.5 + 1.0


@numba.njit(cache=True)
def _touch_rows(rows, index):
    """:func:`_touch` with a flow's entries in one row (``rows[i, k]``)."""
    for i in index:
        for k in range(rows.shape[1]):
            rows[i, k] = rows[i, k] * 0.5 + 1.0


def touch_ns(working_set: float, arrays: int, rows: bool = False,
             touches: int = 3_000_000, seed: int = 0) -> float:
    """Nanoseconds per flow touched at random over ``working_set`` bytes held in
    ``arrays`` per-flow float64 arrays (best of three). Each array is an odd number of
    lines long: at a power of two bytes every array's entry ``i`` falls in the same cache
    set, and the sets' conflicts, not the size, set the cost (3 and 6 MiB took 3x the
    time of 4 MiB). ``rows``: the same bytes as one row of ``arrays`` entries per flow."""
    n = (int(working_set // (arrays * LINE)) | 1) * ENTRIES
    table = np.ones((n, arrays)) if rows else np.ones((arrays, n))
    kernel = _touch_rows if rows else _touch
    index = np.random.default_rng(seed).integers(0, n, touches)
    kernel(table, index[:8])
    best = np.inf
    for _ in range(3):
        t = time.perf_counter()
        kernel(table, index)
        best = min(best, time.perf_counter() - t)
    return best / touches * 1e9


def live_set(workload, policy: str, samples: int) -> tuple[float, float]:
    """Mean live flows and mean lines of one per-flow array they occupy, over
    ``samples`` flow completions of ``policy``'s schedule."""
    from controller.policies import get_policy
    from emulate.sim.flowsim import simulate
    a = workload.arrays
    end = np.asarray(simulate(workload, get_policy(policy)).flow_completion, dtype=float)
    release = a.release[a.coflow]
    at = np.random.default_rng(0).choice(end, min(samples, len(end)), replace=False)
    flows, lines = [], []
    for t in at:
        live = np.flatnonzero((release <= t) & (end > t))
        flows.append(len(live))
        lines.append(len(np.unique(live // ENTRIES)))
    return float(np.mean(flows)), float(np.mean(lines))


def scattered(workload, seed: int = 1):
    """``workload`` with its flows numbered at random (its cached arrays replaced by a
    permuted copy; coflows, sizes and ports the same)."""
    a = workload.arrays
    p = np.random.default_rng(seed).permutation(a.n_flows)
    out = workload.replace()
    out.__dict__["arrays"] = dataclasses.replace(a, src=a.src[p], dst=a.dst[p],
                                                 coflow=a.coflow[p], size=a.size[p])
    return out


def simulation_cpu(workload, policy: str) -> tuple[float, float]:
    """CPU seconds of one simulation in this process, and its mean CCT."""
    from controller.policies import get_policy
    from emulate.sim.flowsim import simulate
    t = time.process_time()
    r = simulate(workload, get_policy(policy))
    return time.process_time() - t, float(np.mean(r.cct))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", default=DEFAULT_TRACE)
    ap.add_argument("--policy", default="sebf")
    ap.add_argument("--arrays", type=int, default=12,
                    help="per-flow arrays touched for each flow the engine touches")
    ap.add_argument("--samples", type=int, default=400)
    args = ap.parse_args()
    if not os.path.exists(args.trace):
        raise SystemExit(f"trace not found: {args.trace} (see README: The Facebook trace)")
    from emulate.io.traces import read_fb_trace
    w = read_fb_trace(args.trace)
    flows, lines = live_set(w, args.policy, args.samples)
    one = lines * LINE * args.arrays
    dense = flows * 8 * args.arrays
    print(f"{args.policy} on FB2010 with its arrivals, 1 core, {w.arrays.n_flows} flows; "
          f"at {args.samples} flow completions:")
    print(f"  live flows {flows:.0f} on {lines:.0f} lines per array (density "
          f"{flows / lines / ENTRIES:.2f}); x {args.arrays} arrays: working set "
          f"{one / 2**20:.1f} MiB at 1x, {dense / 2**20:.1f} MiB packed densely")
    print(f"\ncost of touching a flow ({args.arrays} float64 arrays, at random), this "
          f"machine, same run:")
    print(f"{'tiles':>6}{'layout':>8}{'MiB':>8}{'ns/flow':>9}{'x 1x':>7}")
    base = None
    for k in (1, 4, 10):
        for layout, size in (("as now", one), ("dense", dense), ("rows", one)):
            ns = touch_ns(size * k, args.arrays, rows=layout == "rows")
            base = base or ns
            print(f"{k:>6}{layout:>8}{size * k / 2**20:8.1f}{ns:9.1f}{ns / base:7.2f}")
    # (the live set's simulation above loaded the kernels: no warm-up run needed)
    print(f"\n{args.policy}, the whole simulation in this process (after the live set's), "
          f"flows numbered as read and at random:")
    rows = [("as read", w), ("random", scattered(w))]
    cpu = {name: simulation_cpu(wl, args.policy) for name, wl in rows}
    for name, (s, cct) in cpu.items():
        print(f"  {name:<8} CPU {s:6.2f} s  x{s / cpu['as read'][0]:.2f}  mean CCT "
              f"{cct:.6f}")


if __name__ == "__main__":
    main()
