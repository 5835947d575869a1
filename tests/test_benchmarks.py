"""The benchmarks of issue #18 run as the README shows them, on a small trace."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np

from benchmark_modules import benchmark
from controller.model import Coflow, Flow, Workload
from topologies.fabric import Fabric

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# an FB-format trace: 8 ports, 3 coflows (id, arrival ms, mappers, reducers:MB)
SMALL = "8 3\n1 0 2 0 1 2 2:3 3:1\n2 100 1 4 1 5:2\n3 150 2 6 7 1 0:4\n"


def test_sim_targets_measures_every_target_asked_and_keeps_its_rows(tmp_path):
    trace = tmp_path / "small.txt"
    trace.write_text(SMALL)
    out = tmp_path / "rows.json"
    proc = subprocess.run(
        [sys.executable, os.path.join(ROOT, "benchmarks", "sim_targets.py"), "--trace",
         str(trace), "--only", "read,end-to-end,growth,in-time", "--policies", "fifo,sebf",
         "--multi-policies", "sebf", "--cores", "2", "--growth-policies", "fifo",
         "--tiles", "3", "--repeat", "1", "--out", str(out)],
        capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(out.read_text())["rows"]
    got = {(r["target"], r["policy"], r["cores"], r["tiles"]) for r in rows}
    assert got == {("read", "-", 1, None), ("end to end", "fifo", 1, None),
                   ("end to end", "sebf", 1, None), ("end to end", "sebf", 2, None),
                   ("growth cpu", "fifo", 1, 3), ("growth mem", "fifo", 1, 3),
                   ("growth cpu", "sebf", 2, 3), ("growth mem", "sebf", 2, 3),
                   ("in time cpu", "fifo", 1, 3), ("in time mem", "fifo", 1, 3),
                   ("in time cpu", "sebf", 2, 3), ("in time mem", "sebf", 2, 3)}
    growth = ("growth cpu", "growth mem", "in time cpu", "in time mem")
    for r in rows:
        if r["target"] in growth:
            # (the small trace's copies in time do not overlap: the same mean CCT)
            assert "mean CCT same as 1x" in r["detail"], r
            if r["limit"] is None:   # 1x within the noise of the fixed cost: not judged
                assert r["met"] is None and r["figure"] is None, r
                continue
        slack = 1.1 if r["target"] in growth else 1.0
        assert r["met"] == (r["figure"] <= r["limit"] * slack), r
    judged = [r for r in rows if r["met"] is not None]
    assert f"{sum(r['met'] for r in judged)} of {len(judged)} targets met" in proc.stdout


def test_sim_locality_runs_as_the_readme_shows_it_on_a_small_trace(tmp_path):
    trace = tmp_path / "small.txt"
    trace.write_text(SMALL)
    proc = subprocess.run(
        [sys.executable, os.path.join(ROOT, "benchmarks", "sim_locality.py"), "--trace",
         str(trace), "--samples", "5"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "live flows" in out and "density" in out
    layouts = [line.split()[:2] for line in out.splitlines()
               if line.split()[1:2] in (["as"], ["dense"], ["rows"])]
    assert [k for k, _ in layouts] == ["1"] * 3 + ["4"] * 3 + ["10"] * 3
    assert "as read" in out and "random" in out


def test_sim_locality_counts_the_flows_live_at_each_completion_and_keeps_the_coflows():
    bench = benchmark("sim_locality")
    # one coflow, two flows on disjoint ports at 1 byte/s: they end at 2 s and 5 s, so at
    # the first end one flow is live (on one line), at the second none
    w = Workload(Fabric(ports=4, cores=1, rate_bps=8.0),
                 (Coflow("a", (Flow(0, 1, 2.0), Flow(2, 3, 5.0))),))
    flows, lines = bench.live_set(w, "fifo", samples=10)
    assert (flows, lines) == (0.5, 0.5)
    # numbered at random, every coflow keeps its flows (by size and ports)
    w = Workload(Fabric(ports=6, cores=1), tuple(
        Coflow(str(k), tuple(Flow(s, (s + k + 1) % 6, float(10 * k + s + 1)) for s in range(5)))
        for k in range(4)))
    a, b = w.arrays, bench.scattered(w).arrays
    assert sorted(b.coflow.tolist()) == sorted(a.coflow.tolist())
    for k in range(4):
        assert (sorted(zip(b.src[b.coflow == k], b.dst[b.coflow == k], b.size[b.coflow == k]))
                == sorted(zip(a.src[a.coflow == k], a.dst[a.coflow == k], a.size[a.coflow == k])))
    assert not np.array_equal(a.size, b.size)
    assert bench.touch_ns(1 << 16, 4) > 0 and bench.touch_ns(1 << 16, 4, rows=True) > 0
