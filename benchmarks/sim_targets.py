"""Issue #18's targets for the simulator, every one measured in one run, with its verdict.

Each row is one target for one policy: the figure measured, the limit, and whether it is
met. The figures come from whole ``coflowemu run`` processes, one at a time, as a user
runs them (the helpers of ``sim_reference.py``, ``sim_end_to_end.py`` and
``sim_growth.py``, which print more detail on each):

* **reference**: FB2010 with every release at 0 on one 150-port switch at 1 MiB/s (the
  setting of Sincronia's offline simulator): our process's wall time over that of the
  reference's nearest counterpart (SEBF+MADD for ``sebf``, PD+MADD for the others),
  median of ``--repeat``, interleaved; at most 0.5. Needs ``--reference PATH`` (a built
  ``offlinesim``, README: Benchmarks); without it the row shows our time alone.
* **read**: reading FB2010 (``read_fb_trace``, median of 3): at most 0.5 s.
* **end to end**: FB2010 with its arrivals, every registered network policy on one core
  and ``--multi-policies`` on each of ``--cores``: the whole process's wall time over the
  simulator's own ``wall_seconds`` (median of ``--repeat``, after one unmeasured process
  that fills the LP bound's cache); at most 1.5.
* **growth cpu / growth mem**: FB2010 tiled k times on disjoint ports (``--tiles``; 4x:
  2.8M flows, 10x: 7.1M), one process per k: the user CPU at k over the user CPU at 1x,
  divided by k, each less that of a one-coflow run of the same policy (start-up, imports,
  numba loading its kernels: a fixed cost that would flatter the ratio); the same for the
  peak resident memory, with the bytes per flow; linear is at most 1.00.
  One process per figure varies by 10-30 % from run to run at 4x and 10x on this VM
  (README), so a growth counts as met up to ``1 + --growth-slack`` (0.10) and the table
  says so.
* **in time cpu / in time mem**: the same figures for FB2010 repeated k times one copy
  after another on the same ports (``sim_growth.py --in-time``: a trace k hours long,
  k times the flows and the plans). The tiled rows cannot show work per plan in
  proportion to the whole workload (their plans do not grow with k); these do: such
  work made ``aalo`` never end and ``sincronia`` 1.9x linear at 10x on one core, and
  every policy on several cores 1.3-2.3x at 4x, before 2026-11-30.

Rows are written to ``--out`` (JSON, replaced atomically after each row) as they come,
so an interrupted run keeps what it measured. The whole run takes 25-45 minutes on the
2-core VM (``--tiles 1,4`` and ``--repeat 1`` for a quicker look).

Usage: ``python benchmarks/sim_targets.py [--reference PATH] [--trace PATH] [--repeat N]
[--tiles 1,4,10] [--cores 2,4] [--out FILE]``
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time

import sim_end_to_end
import sim_growth
import sim_reference

REFERENCE_POLICIES = "sebf,sincronia,fifo,scf,fair,aalo"
GROWTH_POLICIES = "sebf,sincronia,fifo,fair"
MULTI_POLICIES = "lp-flow,lp-coflow,weaver,sebf"
GROWTH_TARGETS = ("growth cpu", "growth mem", "in time cpu", "in time mem")


class Table:
    """The rows measured so far: printed as they come and kept in ``out`` (JSON)."""

    def __init__(self, out: str | None, slack: float):
        self.rows: list[dict] = []
        self.out = out
        self.slack = slack
        print(f"{'target':<12}{'policy':<11}{'m':>2}{'k':>4}{'figure':>10}{'limit':>8}"
              f"{'met':>6}  detail", flush=True)

    def add(self, target: str, policy: str, m: int, figure: float, limit: float | None,
            detail: str, k: int | None = None, slack: float = 0.0) -> None:
        met = None if limit is None else figure <= limit * (1.0 + slack)
        row = {"target": target, "policy": policy, "cores": m, "tiles": k,
               "figure": None if math.isnan(figure) else figure, "limit": limit,
               "met": met, "detail": detail}
        self.rows.append(row)
        verdict = "-" if met is None else ("yes" if met else "NO")
        print(f"{target:<12}{policy:<11}{m:>2}{k or '':>4}{figure:>10.3f}"
              f"{'' if limit is None else f'{limit:.2f}':>8}{verdict:>6}  {detail}",
              flush=True)
        if self.out:
            from emulate.io.records import atomic_write
            atomic_write(self.out, json.dumps({"rows": self.rows}, indent=1) + "\n")

    def summary(self) -> None:
        judged = [r for r in self.rows if r["met"] is not None]
        missed = [r for r in judged if not r["met"]]
        print(f"\n{len(judged) - len(missed)} of {len(judged)} targets met"
              + (f" (growth met within +{self.slack:.0%}: the run-to-run spread)"
                 if any(r["target"] in GROWTH_TARGETS for r in judged) else ""))
        for r in missed:
            print(f"  missed: {r['target']} {r['policy']} m={r['cores']}"
                  + (f" k={r['tiles']}" if r["tiles"] else "")
                  + f": {r['figure']:.3f} > {r['limit']:.2f}")


def reference_rows(table: Table, args) -> None:
    names = args.reference_policies.split(",")
    _, ours, ref, _ = sim_reference.measure(args.trace, names, args.reference, args.repeat)
    for p in names:
        r = sim_reference.median(ours[p])
        detail = f"ours {r['wall']:.2f} s wall, {r['user']:.2f} s user, mean CCT {r['cct']:.2f}"
        if not args.reference:
            table.add("reference", p, 1, r["wall"], None, detail + " (no --reference)")
            continue
        c = sim_reference.COUNTERPART.get(p, sim_reference.DEFAULT_COUNTERPART)
        rr = sim_reference.median(ref[c])
        table.add("reference", p, 1, r["wall"] / rr["wall"], 0.5,
                  f"{detail}; {' '.join(c)} {rr['wall']:.2f} s wall, {rr['user']:.2f} s "
                  f"user (user x{r['user'] / rr['user']:.2f})")


def read_row(table: Table, args) -> None:
    from emulate.io.traces import read_fb_trace
    times = []
    for _ in range(3):
        t = time.perf_counter()
        w = read_fb_trace(args.trace)
        times.append(time.perf_counter() - t)
    table.add("read", "-", 1, statistics.median(times), 0.5,
              f"{len(w.coflows)} coflows, {w.arrays.n_flows} flows (s)")


def end_to_end_rows(table: Table, args, policies: dict[int, list[str]]) -> None:
    for m, names in policies.items():
        for p in names:
            wall, sim = sim_end_to_end.process_and_simulation(
                [args.trace, "--policy", p, "--cores", str(m)], args.repeat)
            table.add("end to end", p, m, wall / sim, 1.5,
                      f"process {wall:.2f} s, simulation {sim:.2f} s")


def growth_rows(table: Table, args, policies: dict[int, list[str]], tmp: str,
                in_time: bool = False) -> None:
    """The growth rows (module docstring): the trace tiled on disjoint ports, or
    ``in_time``, repeated one copy after another."""
    from emulate.io.traces import read_fb_trace
    tiles = sorted({1, *(int(x) for x in args.tiles.split(","))})
    flows1 = read_fb_trace(args.trace).arrays.n_flows
    target, write = (("in time", sim_growth.repeat_trace) if in_time
                     else ("growth", sim_growth.tile_trace))
    paths = {}
    for k in tiles:
        paths[k] = os.path.join(tmp, f"{target.replace(' ', '-')}-{k}.txt")
        write(args.trace, k, paths[k])
    with open(args.trace) as fh:   # the fixed cost: the trace's first coflow alone
        ports, first = fh.readline().split()[0], fh.readline()
    paths[0] = os.path.join(tmp, "first.txt")
    with open(paths[0], "w") as fh:
        fh.write(f"{ports} 1\n{first}")
    for m, names in policies.items():
        for p in names:
            fixed = sim_growth.run(paths[0], p, m)
            base = sim_growth.run(paths[1], p, m)
            for k in tiles[1:]:
                r = sim_growth.run(paths[k], p, m)
                n = flows1 * k
                # tiles: k copies of the same schedule; in time, each copy runs into the
                # tail of the one before (the mean CCT differs a little)
                same = ("same as 1x" if abs(r["cct"] - base["cct"]) <= 1e-9 * base["cct"]
                        else f"{r['cct']:.2f}, {base['cct']:.2f} at 1x" if in_time
                        else "OTHER than 1x")
                for what, key, unit, scale in (("cpu", "user", "s", 1.0),
                                               ("mem", "rss", "MB", 2.0 ** -20)):
                    one, at_k, zero = base[key], r[key], fixed[key]
                    per_flow = (f"{1e6 * (at_k - zero) / n:.2f} us/flow" if what == "cpu"
                                else f"{(at_k - zero) / n:.0f} B/flow")
                    # a 1x run within a quarter of the fixed cost is mostly noise
                    measurable = one - zero > 0.25 * zero
                    table.add(f"{target} {what}", p, m,
                              (at_k - zero) / (one - zero) / k if measurable else math.nan,
                              1.0 if measurable else None,
                              f"{zero * scale:.1f} {unit} fixed, {one * scale:.1f} at 1x, "
                              f"{at_k * scale:.1f} at {k}x ({per_flow}); simulation "
                              f"{base['sim']:.1f} s at 1x, {r['sim']:.1f} s at {k}x; mean "
                              f"CCT {same}", k=k, slack=args.growth_slack)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reference", help="a built Sincronia offlinesim binary")
    ap.add_argument("--trace", default=sim_reference.DEFAULT_TRACE)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--tiles", default="1,4,10")
    ap.add_argument("--cores", default="2,4", help="m > 1 values (besides one core)")
    ap.add_argument("--reference-policies", default=REFERENCE_POLICIES)
    ap.add_argument("--policies", help="one-core end-to-end policies (default: every "
                    "registered network policy)")
    ap.add_argument("--growth-policies", default=GROWTH_POLICIES)
    ap.add_argument("--multi-policies", default=MULTI_POLICIES,
                    help="the policies of the end-to-end and growth rows on m > 1 cores")
    ap.add_argument("--growth-slack", type=float, default=0.10)
    ap.add_argument("--only", default="reference,read,end-to-end,growth,in-time",
                    help="which targets to measure")
    ap.add_argument("--out", help="JSON file of the rows, rewritten after each row")
    args = ap.parse_args()
    if not os.path.exists(args.trace):
        raise SystemExit(f"trace not found: {args.trace} (see README: The Facebook trace)")
    if args.reference and not os.access(args.reference, os.X_OK):
        raise SystemExit(f"reference not executable: {args.reference}")
    from controller.policies.base import catalogue
    only = set(args.only.split(","))
    multi = {int(m): args.multi_policies.split(",") for m in args.cores.split(",") if m}
    one = args.policies.split(",") if args.policies else list(catalogue())
    print(f"FB2010 ({args.trace}); whole processes, one at a time; load "
          f"{os.getloadavg()[0]:.1f} at the start\n", flush=True)
    table = Table(args.out, args.growth_slack)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        if "reference" in only:
            reference_rows(table, args)
        if "read" in only:
            read_row(table, args)
        if "end-to-end" in only:
            end_to_end_rows(table, args, {1: one, **multi})
        if "growth" in only:
            growth_rows(table, args, {1: args.growth_policies.split(","), **multi}, tmp)
        if "in-time" in only:
            growth_rows(table, args, {1: args.growth_policies.split(","), **multi}, tmp,
                        in_time=True)
    table.summary()
    print(f"({time.perf_counter() - t0:.0f} s in all; load {os.getloadavg()[0]:.1f} at the "
          f"end)")


if __name__ == "__main__":
    sys.exit(main())
