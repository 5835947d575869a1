"""The largest fabric the input allows, 4096 ports x 64 cores, simulates in memory sized by
its flows, not by ``ports**2 x cores``.

The simulator groups flows by (core, src, dst) pair. It once found a flow's pair through a
table of every ``cores * ports * ports`` key (8 GiB on this fabric), and the fabric
refused ``ports**2 x cores`` above 2^27 to keep that table within 1 GiB. The table is now
as large as the (src, dst) pairs the flows use (``FlowArrays.pair_index``) times the
cores, so the limit is gone:

* ``pair_index`` is ``np.unique(src * ports + dst, return_inverse=True)`` on both of its
  paths (a table of the ``ports**2`` keys when that is small, a sort otherwise);
* the same flows on 8 ports and on 4096 (4088 of them idle) give the same completions,
  through the installed command, for policies of each engine (matching, fair sharing,
  capped backfill), with a peak memory of the 4096-port process within a few hundred MB
  of the 8-port one's.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.model import Coflow, Workload
from topologies.fabric import MAX_CORES, MAX_PORTS, Fabric

BIN = os.path.join(os.path.dirname(sys.executable), "coflowemu")


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_pair_index_is_numpys_unique_with_its_inverse(data):
    ports = data.draw(st.sampled_from([1, 3, 40, 1100, MAX_PORTS]))  # table, and sort
    n = data.draw(st.integers(1, 60))
    pick = st.lists(st.integers(0, ports - 1), min_size=n, max_size=n)
    src, dst = np.array(data.draw(pick)), np.array(data.draw(pick))
    w = Workload(Fabric(ports, 1, 1e9), tuple(   # a coflow per flow: pairs may repeat
        Coflow.from_arrays(f"c{i}", src[i:i + 1], dst[i:i + 1], np.ones(1)) for i in range(n)))
    keys, of = w.arrays.pair_index
    want, inverse = np.unique(w.arrays.src * ports + w.arrays.dst, return_inverse=True)
    assert np.array_equal(keys, want) and np.array_equal(of, inverse.reshape(-1))
    assert of.dtype == np.int64


def _workload(ports: int) -> dict:
    """40 coflows of up to 12 flows among ports 0..7 (seeded), on ``ports`` ports x 64."""
    rng = np.random.default_rng(7)
    coflows = []
    for k in range(40):
        pairs = {(int(rng.integers(8)), int(rng.integers(8))) for _ in range(12)}
        coflows.append({"id": f"c{k}", "release": float(rng.integers(0, 4)) * 1e-3,
                        "flows": [{"src": s, "dst": d, "bytes": int(rng.integers(1, 9)) * 125000}
                                  for s, d in sorted(pairs)]})
    return {"fabric": {"ports": ports, "cores": MAX_CORES, "rate_bps": 1e9},
            "coflows": coflows}


@pytest.mark.parametrize("policy", ["fifo", "fair", "sebf", "sincronia", "lp-flow"])
def test_the_largest_fabric_runs_as_the_same_flows_on_a_small_one(tmp_path, policy):
    small, large = tmp_path / "small.json", tmp_path / "large.json"
    small.write_text(json.dumps(_workload(8)))
    large.write_text(json.dumps(_workload(MAX_PORTS)))
    a, b = _run_rss(small, policy), _run_rss(large, policy)
    assert b[0]["ports"] == MAX_PORTS and b[0]["cores"] == MAX_CORES
    assert [c["completion"] for c in b[0]["coflows"]] == pytest.approx(
        [c["completion"] for c in a[0]["coflows"]], rel=1e-12, abs=1e-15)
    # the dense table alone would be 8 GiB; the per-port arrays of 2 x 4096 x 64 ports
    # take a few tens of MB
    assert b[1] - a[1] < 400 * 2**10, (a[1], b[1])


def _run_rss(path, policy) -> tuple[dict, int]:
    """``coflowemu run path --policy P --json`` as a process: its document and its peak
    resident memory in KB (``ru_maxrss`` of the child, from ``os.wait4``). Its stderr goes
    to a file beside ``path``: a second pipe, read after stdout, could fill and block it."""
    errs = path.with_suffix(f".{policy}.err")
    with open(errs, "w") as err:
        proc = subprocess.Popen([BIN, "run", str(path), "--policy", policy, "--json",
                                 "--no-lp-bound"], stdout=subprocess.PIPE, stderr=err,
                                text=True, stdin=subprocess.DEVNULL)
        out = proc.stdout.read()
        _, status, usage = os.wait4(proc.pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, errs.read_text()
    return json.loads(out), usage.ru_maxrss
