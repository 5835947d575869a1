"""Coflows held as arrays: the FB reader builds no Flow objects, and nothing can tell.

* ``read_fb_trace`` (numpy over each line's mappers x reducers, ``Coflow.from_arrays``)
  gives exactly the workload a reference reader builds flow by flow as the reader once
  did (a dict of (src, dst) -> bytes per coflow, Flow objects, sorted pairs): equal
  coflows and bit-identical ``FlowArrays``, on FB2010 and on traces whose host remapping
  merges pairs; the simulator gives identical completion times on both.
* ``Coflow.from_arrays`` and ``Coflow(id, flows)`` are the same coflow (equal, same hash,
  same flows, same pickle round trip); a bad flow is named by its index either way.
"""
from __future__ import annotations

import os
import pickle
from collections import defaultdict

import numpy as np
import pytest

from controller.model import Coflow, Flow, Workload, WorkloadError
from controller.policies import get_policy
from emulate.io.traces import read_fb_trace
from emulate.sim.flowsim import simulate
from topologies.fabric import Fabric

MB = 2**20
FB2010 = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "traces",
                      "FB2010-1Hr-150-0.txt")


def reference_reader(path, *, hosts=None, seed=0, scale_bytes=1.0, limit=None):
    """The FB format read flow by flow (a Flow object per flow, as the reader once did)."""
    with open(path) as fh:
        lines = fh.read().splitlines()
    ports = int(lines[0].split()[0])
    nh = hosts or ports
    perm = np.random.default_rng(seed).permutation(ports) % nh if hosts else np.arange(ports)
    coflows = []
    for raw in lines[1:]:
        if not raw.strip():
            continue
        if limit is not None and len(coflows) >= limit:
            break
        tok = raw.split()
        nm = int(tok[2])
        mappers = [int(x) for x in tok[3:3 + nm]]
        demand = defaultdict(float)
        for r in tok[4 + nm:]:
            port, _, mb = r.partition(":")
            share = float(mb) * MB * scale_bytes / nm
            for m in mappers:
                demand[(int(perm[m]), int(perm[int(port)]))] += share
        flows = tuple(Flow(s, d, b) for (s, d), b in sorted(demand.items()) if b > 0)
        coflows.append(Coflow(tok[0], flows, release=float(tok[1]) / 1000.0, weight=1.0))
    return Workload(Fabric(nh, 1, 2.0**30), tuple(coflows), name=os.path.basename(path))


def assert_identical(a: Workload, b: Workload):
    assert a.coflows == b.coflows
    fa, fb = a.arrays, b.arrays
    for name in ("src", "dst", "coflow", "size", "release", "weight"):
        x, y = getattr(fa, name), getattr(fb, name)
        assert x.dtype == y.dtype and np.array_equal(x, y), name
        assert x.tobytes() == y.tobytes(), name     # bit for bit
    assert [c.total_bytes for c in a.coflows] == [c.total_bytes for c in b.coflows]


SYNTHETIC = """6 4
1 0 3 0 1 1 2 2:1.5 3:0.25
2 10 2 4 5 3 0:1 1:0 5:2.5
3 20 1 2 1 2:3
4 35 4 0 1 2 3 2 4:0.1 5:0.7
"""


@pytest.mark.parametrize("hosts, scale", [(None, 1.0), (2, 1.0), (3, 0.5), (1, 3.0)])
def test_the_fb_reader_equals_the_flow_by_flow_reference(tmp_path, hosts, scale):
    path = str(tmp_path / "t.txt")
    with open(path, "w") as fh:
        fh.write(SYNTHETIC)
    got = read_fb_trace(path, hosts=hosts, scale_bytes=scale)
    assert_identical(got, reference_reader(path, hosts=hosts, scale_bytes=scale))


@pytest.fixture(scope="module")
def fb2010_both():
    if not os.path.exists(FB2010):
        pytest.skip(f"{FB2010} not present")
    return read_fb_trace(FB2010), reference_reader(FB2010)


def test_fb2010_read_over_arrays_is_the_flow_by_flow_workload(fb2010_both):
    got, ref = fb2010_both
    assert len(got.coflows) == 526 and got.arrays.n_flows == ref.arrays.n_flows
    assert_identical(got, ref)


@pytest.mark.parametrize("policy", ["fifo", "sebf", "fair", "sincronia"])
def test_fb2010_simulates_to_identical_ccts_either_way(policy):
    if not os.path.exists(FB2010):
        pytest.skip(f"{FB2010} not present")
    got = read_fb_trace(FB2010, limit=60, hosts=40)
    ref = reference_reader(FB2010, limit=60, hosts=40)
    a, b = simulate(got, get_policy(policy)), simulate(ref, get_policy(policy))
    assert np.array_equal(a.coflow_completion, b.coflow_completion)


def test_from_arrays_is_the_same_coflow_as_from_flows():
    flows = (Flow(0, 1, 3.0), Flow(2, 1, 0.0), Flow(1, 0, 7.5))
    made = Coflow("c", flows, release=1.5, weight=2.0)
    arr = Coflow.from_arrays("c", [0, 2, 1], [1, 1, 0], [3.0, 0.0, 7.5], release=1.5,
                             weight=2.0)
    assert made == arr and hash(made) == hash(arr) and arr.flows == flows
    assert arr.total_bytes == made.total_bytes == 10.5 and len(arr) == 3
    for c in (made, arr):
        back = pickle.loads(pickle.dumps(c))
        assert back == c and back.flows == flows
    assert Coflow("c", flows[:2], release=1.5, weight=2.0) != made
    with pytest.raises(AttributeError):
        made.release = 0.0
    with pytest.raises(ValueError):
        made.size[0] = 1.0            # the arrays are read-only


@pytest.mark.parametrize("src, dst, size, field, words", [
    ([0, -1], [1, 1], [1.0, 1.0], "src", ["flows[1]", "non-negative"]),
    ([0, 1], [1, 1], [1.0, np.nan], "bytes", ["flows[1]", "finite"]),
    ([0, 1], [1, 1], [1.0, 2e18], "bytes", ["flows[1]", "at most"]),
    ([0, 1, 0], [1, 1, 1], [1.0, 1.0, 2.0], "flows", ["flows[2]", "duplicate flow 0->1"]),
])
def test_a_bad_flow_is_named_by_its_index_either_way(src, dst, size, field, words):
    for make in (lambda: Coflow.from_arrays("c", src, dst, size),
                 lambda: Coflow("c", tuple(map(Flow, src, dst, size)))):
        with pytest.raises(WorkloadError) as info:
            make()
        assert info.value.field == field
        for w in words:
            assert w in str(info.value), str(info.value)


@pytest.mark.parametrize("flow, field", [
    (Flow(True, 1, 1.0), "src"), (Flow(0, 1.0, 1.0), "dst"), (Flow(0, 1, "1"), "bytes"),
    (Flow(0, 1, None), "bytes"), (Flow(0, 1, True), "bytes"), (Flow(0, 2**70, 1.0), "dst"),
])
def test_flow_objects_of_the_wrong_type_are_refused(flow, field):
    with pytest.raises(WorkloadError) as info:
        Coflow("c", (Flow(0, 2, 1.0), flow))
    assert info.value.field == field and "flows[1]" in str(info.value)


@pytest.mark.parametrize("bad, field, words", [
    (Flow(-1, 0, 1.0), "src", ["flows[70]", "non-negative"]),
    (Flow(0, 0, float("inf")), "bytes", ["flows[70]", "finite"]),
    (Flow(0, 5, 1.0), "flows", ["flows[70]", "duplicate flow 0->5"]),
    (Flow(0, 0, "1"), "bytes", ["flows[70]", "number"]),
])
def test_many_flows_are_checked_over_arrays_and_the_bad_one_named(bad, field, words):
    flows = [Flow(0, d, 1.0) for d in range(1, 100)]
    assert len(flows) > Coflow._FEW
    good = Coflow("c", flows)
    assert good == Coflow.from_arrays("c", good.src, good.dst, good.size)
    flows[70] = bad
    with pytest.raises(WorkloadError) as info:
        Coflow("c", flows)
    assert info.value.field == field
    for w in words:
        assert w in str(info.value), str(info.value)
