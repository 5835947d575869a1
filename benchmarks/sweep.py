"""Benchmark: a 200-run simulator sweep on Dask with 1 and 2 workers, against calling the
engine directly.

The sweep: ``coflows`` workloads (100 coflows, 16 ports x 2 cores at 1 Gbit/s, 70 % load),
40 seeds x 5 policies (fifo, sebf, sincronia, fair, lp-coflow), every run with its LP
bound (``auto``: LP (1)). Timed in the same process, on the same runs:

* **direct**: a loop that generates each workload, runs it with
  ``get_engine("sim").run(workload, policy)`` and solves its LP bound (what a script
  calling the engine does; workloads and bounds computed once per workload, as the
  sweep's workers cache them);
* **in-process**: :func:`experiments.sweep.execute.execute` on every run (the same plus
  the rows), no Dask, no files;
* **dask, 1 worker** and **dask, 2 workers**: ``run_sweep`` on a LocalCluster (127.0.0.1)
  into a fresh store, with the cluster's start-up timed apart.

Reported: wall seconds of each, the speed-up of 2 workers against 1, and the per-run
overhead of the Dask path against the direct loop (``(dask 1 worker - direct) / runs``,
cluster start-up excluded). The machine's other load matters (2 cores shared): read the
ratios, measured in the same run.

Run::

    .venv/bin/python benchmarks/sweep.py [--runs 200] [--json]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

POLICIES = ("fifo", "sebf", "sincronia", "fair", "lp-coflow")


def make_spec(runs: int):
    from experiments.sweep.spec import parse_spec
    seeds = max(1, runs // len(POLICIES))
    return parse_spec({"name": "bench", "bounds": ["auto"],
                       "workloads": [{"kind": "coflows", "seeds": seeds,
                                      "params": {"coflows": 100, "load": 0.7}}],
                       "fabrics": [{"ports": 16, "cores": 2, "rate": "1Gbps"}],
                       "policies": [{"specs": list(POLICIES)}]})


def direct(runs) -> float:
    from controller.lp.bound import lp_bound_for
    from emulate.engines import get_engine
    from emulate.io.generators import generate
    t = time.perf_counter()
    cache = {}
    for r in runs:
        w = r.workload
        k = (w["seed"], tuple(sorted(w["params"].items())))
        if k not in cache:
            wl = generate(w["kind"], seed=w["seed"], ports=r.fabric["ports"],
                          cores=r.fabric["cores"], rate_bps=r.fabric["rate_bps"],
                          params=w["params"])
            cache[k] = (wl, lp_bound_for(wl))
        get_engine("sim").run(cache[k][0], r.policy).total_weighted_completion
    return time.perf_counter() - t


def in_process(runs) -> float:
    from experiments.sweep.execute import execute
    t = time.perf_counter()
    for r in runs:
        assert execute(r).run["status"] == "ok"
    return time.perf_counter() - t


def on_dask(spec, workers: int) -> tuple[float, float]:
    """(cluster start-up and shut-down seconds, sweep seconds without them) into a
    fresh store; start-up is timed on an empty cluster of the same size."""
    from experiments.sweep.runner import _client, run_sweep
    t = time.perf_counter()
    with _client(None, workers):
        pass
    startup = time.perf_counter() - t
    with tempfile.TemporaryDirectory() as d:
        t = time.perf_counter()
        rep = run_sweep(spec, os.path.join(d, "out"), workers=workers, progress=False)
        total = time.perf_counter() - t
    assert rep.done == rep.total and not rep.failed, rep.format()
    return startup, total - startup


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    spec = make_spec(args.runs)
    runs = spec.runs()
    from emulate.sim.warmup import warm_up
    warm_up()
    d = direct(runs)
    p = in_process(runs)
    s1, t1 = on_dask(spec, 1)
    s2, t2 = on_dask(spec, 2)
    n = len(runs)
    doc = {"runs": n, "direct_s": d, "in_process_s": p, "dask1_startup_s": s1,
           "dask1_s": t1, "dask2_startup_s": s2, "dask2_s": t2, "speedup_2_vs_1": t1 / t2,
           "overhead_per_run_ms": 1e3 * (t1 - d) / n, "cpus": os.cpu_count(),
           "load": os.getloadavg()[0]}
    if args.json:
        print(json.dumps(doc))
        return 0
    print(f"{n} simulator runs (coflows, 100 coflows, 16x2 at 1 Gbit/s, "
          f"{len(POLICIES)} policies), {os.cpu_count()} CPUs, load {doc['load']:.1f}")
    print(f"  direct engine loop      {d:8.2f} s   {1e3 * d / n:7.1f} ms/run")
    print(f"  execute() in-process    {p:8.2f} s   {1e3 * p / n:7.1f} ms/run")
    print(f"  dask, 1 worker          {t1:8.2f} s   {1e3 * t1 / n:7.1f} ms/run "
          f"(+ {s1:.1f} s cluster start/stop)")
    print(f"  dask, 2 workers         {t2:8.2f} s   {1e3 * t2 / n:7.1f} ms/run "
          f"(+ {s2:.1f} s cluster start/stop)")
    print(f"  speed-up 2 vs 1 worker  x{t1 / t2:.2f}")
    print(f"  Dask path overhead      {doc['overhead_per_run_ms']:+.1f} ms/run against "
          f"the direct loop")
    return 0


if __name__ == "__main__":
    sys.exit(main())
