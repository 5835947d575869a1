"""Benchmark: a 200-run simulator sweep on Dask with 1 and 2 workers and in this process,
against calling the engine directly.

The sweep: ``coflows`` workloads (100 coflows, 16 ports x 2 cores at 1 Gbit/s, 70 % load),
40 seeds x 5 policies (fifo, sebf, sincronia, fair, lp-coflow), every run with its LP
bound (``auto``: LP (1)). Timed in the same process, on the same runs:

* **direct**: a loop that generates each workload, runs it with
  ``get_engine("sim").run(workload, policy)`` and solves its LP bound (what a script
  calling the engine does; workloads and bounds computed once per workload, as the
  sweep's workers cache them);
* **in-process**: ``run_sweep(workers=0)`` into a fresh store: every run's
  :func:`~experiments.sweep.execute.execute` and its Parquet files, no Dask (what
  ``compare`` and ``demo`` use);
* **dask, 1 worker** and **dask, 2 workers**: ``run_sweep`` on a local cluster
  (127.0.0.1) into a fresh store, the cluster's start-up and shut-down timed apart (on
  an empty cluster of the same size).

Per mode: wall seconds and CPU seconds (user + system of this process and of its child
processes, ``resource.getrusage``: the workers are children, counted when the cluster
has shut down; CPU time is what the work costs whatever else the machine runs, wall time
is what the other jobs on a shared machine let it have). Reported: the speed-up of 2
workers against 1 (wall), the per-run overhead of the Dask path and of the in-process
path against the direct loop (wall and CPU), the load average before and after.

Run::

    .venv/bin/python benchmarks/sweep.py [--runs 200] [--json]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
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


def _cpu() -> float:
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def timed(fn, *args) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process and its children) of ``fn(*args)``."""
    w, c = time.perf_counter(), _cpu()
    fn(*args)
    return time.perf_counter() - w, _cpu() - c


def direct(runs) -> None:
    from controller.lp.bound import lp_bound_for
    from emulate.engines import get_engine
    from emulate.io.generators import generate
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


def sweep(spec, workers: int) -> None:
    from experiments.sweep.runner import run_sweep
    with tempfile.TemporaryDirectory() as d:
        rep = run_sweep(spec, os.path.join(d, "out"), workers=workers, progress=False)
    assert rep.done == rep.total and not rep.failed, rep.format()


def cluster(workers: int) -> None:
    from experiments.sweep.runner import _client
    with _client(None, workers):
        pass


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    spec = make_spec(args.runs)
    runs = spec.runs()
    n = len(runs)
    from emulate.sim.warmup import warm_up
    warm_up()
    load0 = os.getloadavg()
    got = {"direct": timed(direct, runs), "in_process": timed(sweep, spec, 0)}
    for k in (1, 2):
        start = timed(cluster, k)
        total = timed(sweep, spec, k)
        got[f"dask{k}_startup"] = start
        got[f"dask{k}"] = (total[0] - start[0], total[1] - start[1])
    load1 = os.getloadavg()
    d = got["direct"]
    doc = {"runs": n, "cpus": os.cpu_count(), "load_before": load0[0],
           "load_after": load1[0],
           **{f"{k}_wall_s": v[0] for k, v in got.items()},
           **{f"{k}_cpu_s": v[1] for k, v in got.items()},
           "speedup_2_vs_1": got["dask1"][0] / got["dask2"][0],
           **{f"overhead_{k}_per_run_ms": 1e3 * (got[k][0] - d[0]) / n
              for k in ("in_process", "dask1")},
           **{f"overhead_{k}_cpu_per_run_ms": 1e3 * (got[k][1] - d[1]) / n
              for k in ("in_process", "dask1")}}
    if args.json:
        print(json.dumps(doc))
        return 0
    print(f"{n} simulator runs (coflows, 100 coflows, 16x2 at 1 Gbit/s, {len(POLICIES)} "
          f"policies, LP bound), {os.cpu_count()} CPUs, load {load0[0]:.2f} before, "
          f"{load1[0]:.2f} after")
    print(f"  {'':<28}{'wall s':>9}{'ms/run':>9}{'CPU s':>9}{'ms/run':>9}")
    for label, k in (("direct engine loop", "direct"),
                     ("run_sweep, in this process", "in_process"),
                     ("dask, 1 worker", "dask1"), ("dask, 2 workers", "dask2")):
        w, c = got[k]
        extra = (f"  (+ {got[k + '_startup'][0]:.1f} s wall to start and stop the "
                 f"cluster)" if k.startswith("dask") else "")
        print(f"  {label:<28}{w:>9.2f}{1e3 * w / n:>9.1f}{c:>9.2f}{1e3 * c / n:>9.1f}"
              f"{extra}")
    print(f"  speed-up 2 vs 1 worker      x{doc['speedup_2_vs_1']:.2f} (wall)")
    for label, k in (("in-process", "in_process"), ("Dask, 1 worker", "dask1")):
        print(f"  {label} overhead {doc[f'overhead_{k}_per_run_ms']:+.1f} ms/run wall, "
              f"{doc[f'overhead_{k}_cpu_per_run_ms']:+.1f} ms/run CPU, against the "
              f"direct loop")
    return 0


if __name__ == "__main__":
    sys.exit(main())
