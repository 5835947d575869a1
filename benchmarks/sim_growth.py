"""How the simulator's time and memory grow with the trace: FB2010 tiled k times.

FB2010 tiled ``k`` times is ``k`` copies of the trace on disjoint ports (copy ``i`` uses
ports ``150 i .. 150 i + 149``), with the same arrivals: ``k`` times the flows (706,397
per copy; 4x: 2.8M, 10x: 7.1M) on ``k`` times the ports, each copy as loaded as the
original. An exact simulator should take about ``k`` times as long and as much memory;
the script prints, per policy and ``k``, whole ``coflowemu run --json`` processes (one
each, run one at a time): the process's wall time and user CPU, the simulator's own
``wall_seconds``, the peak resident memory of the process (``ru_maxrss`` of the child,
from ``os.wait4``), time and memory per flow, and the growth of the simulation's wall
time, of the process's user CPU and of its peak memory against ``k = 1`` in the same
run, divided by ``k`` (1.00 = linear; above 1, superlinear), and the load average (1 min)
at the end of each process. On a shared machine the user
CPU is the steadier of the two times.

``--in-time`` repeats the trace in time instead: copy ``i`` on the same 150 ports, its
arrivals ``i`` times the trace's span later (the last arrival plus a minute: 61.5 min for
FB2010), as a trace ``k`` hours long would be. Then the flows and the plans grow ``k``
times and the flows sending at once do not: what grows faster than ``k`` is work per plan
in proportion to the whole workload (a pass over every flow at every plan, which made
``sincronia`` 1.9x linear at 10x and ``aalo`` never end, before 2026-11-29), not the
memory hierarchy.

``--cores 2,4`` runs the same on parallel cores (each copy's ports keep ``m`` cores).
``--before DIR`` runs every process a second time, right after, on the code checked out
in ``DIR`` (e.g. ``git archive main | tar -x -C DIR``; the same interpreter with ``DIR``
first on ``PYTHONPATH``) and prints its row and the ratios of this code's user CPU and
simulation time to that code's, in the same run.

Usage: ``python benchmarks/sim_growth.py [--trace PATH] [--tiles 1,4,10] [--in-time]
[--policies sebf,sincronia,fifo,fair] [--cores 1] [--before DIR]``
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_TRACE = os.path.join(HERE, "..", "..", "shared", "traces", "FB2010-1Hr-150-0.txt")
COFLOWEMU = os.path.join(os.path.dirname(sys.executable), "coflowemu")


def tile_trace(path: str, k: int, out: str) -> int:
    """Write ``path`` (FB benchmark format) tiled ``k`` times to ``out``; returns the
    number of coflows. Copies keep the arrivals; lines stay sorted by arrival."""
    with open(path) as fh:
        lines = fh.read().splitlines()
    ports, n = (int(x) for x in lines[0].split())
    rows = []
    for raw in lines[1:]:
        tok = raw.split()
        if not tok:
            continue
        nm = int(tok[2])
        for i in range(k):
            off = i * ports
            mappers = [str(int(p) + off) for p in tok[3:3 + nm]]
            reducers = []
            for r in tok[4 + nm:]:
                port, _, mb = r.partition(":")
                reducers.append(f"{int(port) + off}:{mb}")
            rows.append((float(tok[1]), i, " ".join(
                [f"{tok[0]}-{i}" if k > 1 else tok[0], tok[1], tok[2], *mappers,
                 tok[3 + nm], *reducers])))
    rows.sort(key=lambda r: (r[0], r[1]))
    with open(out, "w") as fh:
        fh.write(f"{ports * k} {len(rows)}\n")
        fh.writelines(r[2] + "\n" for r in rows)
    return len(rows)


def repeat_trace(path: str, k: int, out: str) -> int:
    """Write ``path`` (FB benchmark format) repeated ``k`` times in time to ``out``: copy
    ``i`` on the same ports, its arrivals ``i * (last arrival + 60 s)`` later; returns
    the number of coflows."""
    with open(path) as fh:
        lines = [ln for ln in fh.read().splitlines() if ln.split()]
    ports = int(lines[0].split()[0])
    rows = [ln.split() for ln in lines[1:]]
    span = max(int(r[1]) for r in rows) + 60_000   # (arrivals in ms)
    with open(out, "w") as fh:
        fh.write(f"{ports} {k * len(rows)}\n")
        for i in range(k):
            for r in rows:
                fh.write(" ".join([f"{r[0]}-{i}" if k > 1 else r[0], str(int(r[1]) + i * span),
                                   *r[2:]]) + "\n")
    return k * len(rows)


def run(trace: str, policy: str, cores: int, code: str | None = None) -> dict:
    """One whole ``coflowemu run`` process: wall, user CPU, peak RSS (bytes), sim time;
    ``code``: a checkout to import the project from instead of this one."""
    cmd = [COFLOWEMU, "run", trace, "--policy", policy, "--cores", str(cores), "--json",
           "--no-lp-bound"]
    env = dict(os.environ)
    if code is not None:
        env["PYTHONPATH"] = os.pathsep.join([os.path.abspath(code)] + [
            p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True, env=env)
    out = proc.stdout.read()
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(cmd)} failed (exit {os.waitstatus_to_exitcode(status)})")
    doc = json.loads(out)
    return {"wall": wall, "user": ru.ru_utime, "rss": ru.ru_maxrss * 1024.0,
            "sim": doc["wall_seconds"],
            "cct": sum(c["cct"] for c in doc["coflows"]) / len(doc["coflows"])}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", default=DEFAULT_TRACE)
    ap.add_argument("--tiles", default="1,4,10")
    ap.add_argument("--policies", default="sebf,sincronia,fifo,fair")
    ap.add_argument("--cores", default="1", help="comma-separated m values")
    ap.add_argument("--in-time", action="store_true",
                    help="copies one after another in time on the same ports")
    ap.add_argument("--before", metavar="DIR",
                    help="a checkout of the code to compare with, run in the same run")
    args = ap.parse_args()
    if not os.path.exists(args.trace):
        raise SystemExit(f"trace not found: {args.trace} (see README: The Facebook trace)")
    tiles = [int(x) for x in args.tiles.split(",")]
    if tiles[0] != 1:
        tiles.insert(0, 1)
    from emulate.io.traces import read_fb_trace
    flows1 = read_fb_trace(args.trace).arrays.n_flows
    with tempfile.TemporaryDirectory() as tmp:
        paths = {}
        for k in tiles:
            paths[k] = os.path.join(tmp, f"tiled-{k}.txt")
            (repeat_trace if args.in_time else tile_trace)(args.trace, k, paths[k])
        for m in (int(x) for x in args.cores.split(",")):
            how = "repeated in time" if args.in_time else "tiled on disjoint ports"
            print(f"\nFB2010 {how}, with its arrivals, {m} core(s); whole processes, one "
                  f"each, same run; growth = (figure at k / figure at 1) / k", flush=True)
            print(f"{'policy':<10}{'k':>3}{'flows':>10}{'wall s':>8}{'user s':>8}"
                  f"{'sim s':>8}{'peak MB':>9}{'B/flow':>8}{'us/flow':>8}"
                  f"{'growth sim':>11}{'growth cpu':>11}{'growth mem':>11}{'mean CCT':>10}"
                  f"{'load':>6}",
                  flush=True)
            for p in args.policies.split(","):
                base = {}
                for k in tiles:
                    n = flows1 * k
                    for who in ("now", "before") if args.before else ("now",):
                        r = run(paths[k], p, m, args.before if who == "before" else None)
                        b = base.setdefault(who, r)
                        label = p if who == "now" else "  before"
                        print(f"{label:<10}{k:>3}{n:>10}{r['wall']:8.1f}{r['user']:8.1f}"
                              f"{r['sim']:8.1f}{r['rss'] / 2**20:9.0f}{r['rss'] / n:8.0f}"
                              f"{1e6 * r['sim'] / n:8.2f}{r['sim'] / b['sim'] / k:11.2f}"
                              f"{r['user'] / b['user'] / k:11.2f}"
                              f"{r['rss'] / b['rss'] / k:11.2f}{r['cct']:10.2f}"
                              f"{os.getloadavg()[0]:6.1f}", flush=True)
                        if who == "before":
                            print(f"{'':<10}{'':>3}{'now/before:':>18} user x"
                                  f"{now['user'] / r['user']:.2f}, sim x"
                                  f"{now['sim'] / r['sim']:.2f}", flush=True)
                        now = r


if __name__ == "__main__":
    main()
