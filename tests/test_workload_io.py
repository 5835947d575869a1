"""Tests of workload input and output (emulate.io.traces): the project's JSON format, the
Facebook coflow-benchmark reader and the seeded generators.

* JSON: write_json/read_json round trip; the documented shape (extra keys allowed);
  every bad input gives a WorkloadError naming the file, the line where it can be found,
  the coflow and the field.
* FB trace: reducer MB (1 MB = 2^20 bytes) split evenly over the mappers, arrival ms ->
  s, min_mb, hosts remapping (merging duplicate pairs), scaling, zero_release, limit;
  malformed lines name the line and the field; the real FB2010 trace when present.
* Generators: deterministic per seed; random_dag has exactly the requested longest path.
"""
from __future__ import annotations

import json
import math
import os
import re
from collections import defaultdict

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.model import (MAX_BYTES, MAX_SECONDS, MAX_WEIGHT, Coflow, Flow, Job, Workload,
                              WorkloadError)
from emulate.io.traces import (multi_stage_jobs, random_dag, random_workload, read_fb_trace,
                            read_json, read_workload, workload_from_dict, write_json)
from topologies.fabric import Fabric

MB = 2**20
FB2010 = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "traces",
                      "FB2010-1Hr-150-0.txt")
SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def line_of(text: str, needle: str, nth: int = 0) -> int:
    """1-based line of the ``nth`` occurrence of ``needle`` in ``text``."""
    pos = -1
    for _ in range(nth + 1):
        pos = text.index(needle, pos + 1)
    return text.count("\n", 0, pos) + 1


# ============================================================================ JSON
def test_round_trip_of_a_hand_built_workload_with_core_rates_dag_and_jobs(tmp_path):
    w = Workload(Fabric(ports=5, cores=2, rate_bps=1e9, core_rates=(1e9, 2.5e8)),
                 (Coflow("map", (Flow(0, 1, 3000.0), Flow(4, 1, 0.0)), release=0.5, weight=2.0),
                  Coflow("red", (Flow(1, 2, 1.5e6),), release=0.0, weight=0.0),
                  Coflow("empty", ())),
                 (("map", "red"), ("map", "empty")),
                 (Job("j0", ("map", "red"), weight=3.0),), name="hand")
    path = str(tmp_path / "w.json")
    write_json(w, path)
    back = read_json(path)
    assert back == w
    assert back.fabric.core_rates == (1e9, 2.5e8)
    write_json(back, str(tmp_path / "again.json"))
    assert (tmp_path / "again.json").read_text() == (tmp_path / "w.json").read_text()


@pytest.mark.parametrize("make", [
    lambda: random_workload(3, ports=6, cores=3, coflows=12, chi=3),
    lambda: multi_stage_jobs(4, ports=5, cores=2, jobs=3),
], ids=["random_workload", "multi_stage_jobs"])
def test_round_trip_of_generated_workloads(tmp_path, make):
    w = make()
    path = str(tmp_path / "w.json")
    write_json(w, path)
    assert read_json(path) == w


ids = st.text(min_size=1, max_size=6)


@st.composite
def any_workload(draw):
    ports = draw(st.integers(1, 5))
    cores = draw(st.integers(1, 3))
    names = draw(st.lists(ids, min_size=0, max_size=5, unique=True))
    def num(top):     # up to the model's documented limit
        return st.floats(min_value=0, max_value=top, allow_nan=False, allow_infinity=False)
    cfs = []
    for cid in names:
        pairs = draw(st.lists(st.tuples(st.integers(0, ports - 1), st.integers(0, ports - 1)),
                              max_size=4, unique=True))
        cfs.append(Coflow(cid, tuple(Flow(s, d, draw(num(MAX_BYTES))) for s, d in pairs),
                          release=draw(num(MAX_SECONDS)), weight=draw(num(MAX_WEIGHT))))
    arcs = [(names[a], names[b]) for a in range(len(names)) for b in range(a + 1, len(names))
            if draw(st.booleans())]
    jobs = ()
    if names and draw(st.booleans()):
        jobs = (Job(draw(ids), tuple(names[::2]), weight=draw(num(MAX_WEIGHT))),)
    rates = None
    if draw(st.booleans()):
        rates = tuple(draw(st.lists(st.floats(1.0, 1e12), min_size=cores, max_size=cores)))
    return Workload(Fabric(ports, cores, draw(st.floats(1.0, 1e12)), rates), tuple(cfs),
                    tuple(arcs), jobs, name=draw(ids))


@settings(max_examples=150, **SETTINGS)
@given(w=any_workload())
def test_round_trip_of_any_valid_workload_is_exact(tmp_path, w):
    path = str(tmp_path / "w.json")
    write_json(w, path)
    back = read_json(path)
    assert back == w
    assert [c.id for c in back.coflows] == [c.id for c in w.coflows]


ISSUE_DOC = """{"fabric": {"ports": 4, "cores": 2, "rate_bps": 1e9, "vendor": "any"},
 "coflows": [
  {"id": "c0", "release": 0.0, "weight": 1.0,
   "flows": [{"src": 0, "dst": 1, "bytes": 3000}, {"src": 2, "dst": 1, "bytes": 5.5}]},
  {"id": "c1", "flows": [{"src": 1, "dst": 3, "bytes": 100, "note": "extra"}], "tag": 7}
 ],
 "precedence": [["c0", "c1"]],
 "jobs": [{"id": "j0", "weight": 2.0, "coflows": ["c0", "c1"]}],
 "comment": "extra keys are ignored"}
"""


def test_the_documented_json_shape_reads_with_extra_keys_and_defaults(tmp_path):
    path = tmp_path / "issue.json"
    path.write_text(ISSUE_DOC)
    w = read_json(str(path))
    assert w.fabric == Fabric(ports=4, cores=2, rate_bps=1e9)
    assert [c.id for c in w.coflows] == ["c0", "c1"]
    assert w.coflows[0].flows == (Flow(0, 1, 3000), Flow(2, 1, 5.5))
    assert w.coflows[1].flows == (Flow(1, 3, 100),)
    assert (w.coflows[1].release, w.coflows[1].weight) == (0.0, 1.0)  # defaults
    assert w.precedence == (("c0", "c1"),)
    assert w.jobs == (Job("j0", ("c0", "c1"), 2.0),)
    assert w.chi == 2


def test_precedence_and_jobs_may_be_omitted_and_cores_default_to_one(tmp_path):
    doc = {"fabric": {"ports": 2}, "coflows": [{"id": "a", "flows": []}]}
    w = workload_from_dict(doc)
    assert (w.fabric.cores, w.fabric.rate_bps, w.precedence, w.jobs) == (1, 1e9, (), ())


def test_cores_and_rate_overrides_replace_the_files_fabric(tmp_path):
    w = Workload(Fabric(ports=3, cores=2, rate_bps=1e9, core_rates=(1e9, 1e8)),
                 (Coflow("a", (Flow(0, 1, 1.0),)),))
    path = str(tmp_path / "w.json")
    write_json(w, path)
    assert read_json(path, cores=4).fabric == Fabric(ports=3, cores=4, rate_bps=1e9)
    assert read_json(path, rate_bps=5e6).fabric == Fabric(ports=3, cores=2, rate_bps=5e6)
    assert read_workload(path, cores=1, rate_bps=2e6).fabric == Fabric(3, 1, 2e6)


# ---------------------------------------------------------------------------- bad JSON
BASE = {"fabric": {"ports": 4, "cores": 2, "rate_bps": 1e9},
        "coflows": [{"id": "c0", "release": 0.0, "weight": 1.0,
                     "flows": [{"src": 0, "dst": 1, "bytes": 3000}]},
                    {"id": "c1", "release": 1.0, "weight": 1.0,
                     "flows": [{"src": 1, "dst": 2, "bytes": 10},
                               {"src": 2, "dst": 3, "bytes": 20}]}],
        "precedence": [["c0", "c1"]],
        "jobs": [{"id": "j0", "weight": 1.0, "coflows": ["c0", "c1"]}]}


def mutated(path, value):
    doc = json.loads(json.dumps(BASE))
    *head, last = path
    obj = doc
    for k in head:
        obj = obj[k]
    if value is DELETE:
        del obj[last]
    else:
        obj[last] = value
    return doc


DELETE = object()
C1 = '"id": "c1"'
FAB = '"fabric"'
PREC = '"precedence"'

BUG_DUP_ID_LINE = ("bug: a duplicate coflow id gives no line (the message 'duplicate coflow "
                   "id ...' does not match the reader's r\"coflow '...'\" lookup)")
BUG_ARC_LINE = ("bug: an unknown coflow in a precedence arc gives no line: the reader looks "
                "the unknown id up as a coflow and never falls back to the 'precedence' line")
BUG_INT_MESSAGE = ("bug: an integer field given a non-integer number says \"must be a number, "
                   "got 1.5\" (it is a number; allowed is an integer)")
BUG_UNHASHABLE = ("bug: a list where a coflow id is expected (precedence arc or job coflows) "
                  "raises TypeError 'unhashable type: list', not WorkloadError")
BUG_CORE_RATES = ("bug: non-numeric fabric.core_rates raise ValueError/TypeError from float(), "
                  "not WorkloadError")


def bad(path, value, field, words, line, *, bug=None):
    marks = []  # every bug these cases recorded is fixed; `bug` names what it was
    return pytest.param(path, value, field, words, line, marks=marks,
                        id="/".join(str(p) for p in path) + "=" + str(value)[:20])


BAD = [
    bad(("precedence",), [["c0", "zz"]], "precedence", ["unknown coflow", "zz"], PREC,
        bug=BUG_ARC_LINE),
    bad(("precedence",), [["c0", "c1"], ["c1", "c0"]], "precedence", ["cycle", "c0", "c1"],
        PREC),
    bad(("precedence",), [["c1", "c1"]], "precedence", ["c1", "precedes itself"], (PREC, C1)),
    bad(("precedence",), [["c0"]], "precedence", ["pair"], PREC),
    bad(("precedence",), "c0->c1", "precedence", ["list"], PREC),
    bad(("precedence",), [[["c0"], "c1"]], "precedence", ["precedence[0]"], PREC,
        bug=BUG_UNHASHABLE),
    bad(("coflows", 1, "flows", 0, "dst"), 4, "dst", ["c1", "out of range", "0..3"], C1),
    bad(("coflows", 1, "flows", 1, "src"), -1, "src", ["c1", "non-negative"], C1),
    bad(("coflows", 1, "flows", 0, "bytes"), -5, "bytes", ["c1", ">= 0", "-5"], C1),
    bad(("coflows", 1, "flows", 0, "bytes"), "10", "bytes", ["c1", "number", "'10'"], C1),
    bad(("coflows", 1, "flows", 0, "bytes"), True, "bytes", ["c1", "number"], C1),
    bad(("coflows", 1, "flows", 1), {"src": 1, "dst": 2, "bytes": 1}, "flows",
        ["c1", "duplicate flow 1->2"], C1),
    bad(("coflows", 1, "id"), "c0", "id", ["duplicate", "c0"], '"id": "c0"',
        bug=BUG_DUP_ID_LINE),
    bad(("coflows", 1, "flows", 0, "src"), 1.5, "src", ["c1", "integer", "1.5"], C1,
        bug=BUG_INT_MESSAGE),
    bad(("coflows", 1, "flows", 0, "src"), True, "src", ["c1"], C1),
    bad(("coflows", 1, "release"), "0", "release", ["c1", "number"], C1),
    bad(("coflows", 1, "release"), -1, "release", ["c1", ">= 0"], C1),
    bad(("coflows", 1, "weight"), -2, "weight", ["c1", ">= 0"], C1),
    bad(("coflows", 1, "weight"), None, "weight", ["c1", "number"], C1),
    bad(("coflows", 1, "flows"), {"src": 1}, "flows", ["c1", "list"], C1),
    bad(("coflows", 1, "flows"), [[1, 2, 3]], "flows", ["c1", "object"], C1),
    bad(("coflows", 1, "id"), 5, "id", ["coflows[1]", "string"], '"id": 5'),
    bad(("coflows", 1, "id"), "", "id", ["non-empty"], '"id": ""'),
    bad(("coflows", 1, "flows", 0, "src"), DELETE, "src", ["c1", "missing", "src"], C1),
    bad(("coflows", 1, "flows", 0, "bytes"), DELETE, "bytes", ["c1", "missing", "bytes"], C1),
    bad(("coflows", 1, "flows"), DELETE, "flows", ["c1", "missing", "flows"], C1),
    bad(("coflows", 1, "id"), DELETE, "id", ["coflows[1]", "missing", "id"], None),
    bad(("coflows", 1), "c1", "coflows", ["coflows[1]", "object"], None),
    bad(("coflows",), {}, "coflows", ["list"], None),
    bad(("coflows",), DELETE, "coflows", ["missing", "coflows"], None),
    bad(("fabric",), DELETE, "fabric", ["missing", "fabric"], None),
    bad(("fabric",), 4, "fabric", ["object"], FAB),
    bad(("fabric", "ports"), DELETE, "ports", ["missing", "ports"], FAB),
    bad(("fabric", "ports"), "4", "ports", ["'4'"], FAB),
    bad(("fabric", "ports"), 4.5, "ports", ["integer", "4.5"], FAB, bug=BUG_INT_MESSAGE),
    bad(("fabric", "ports"), 0, "fabric", ["ports", "positive"], FAB),
    bad(("fabric", "cores"), "2", "cores", ["'2'"], FAB),
    bad(("fabric", "rate_bps"), "1Gbps", "rate_bps", ["number"], FAB),
    bad(("fabric", "rate_bps"), -1, "fabric", ["rate_bps", "1..1e+15"], FAB),
    bad(("fabric", "core_rates"), [1e9], "fabric", ["core_rates", "1 entries", "2 cores"], FAB),
    bad(("fabric", "core_rates"), ["fast", "slow"], "fabric", ["core_rates"], FAB,
        bug=BUG_CORE_RATES),
    bad(("jobs", 0, "coflows"), ["c0", "zz"], "coflows", ["j0", "unknown coflow", "zz"], None),
    bad(("jobs", 0, "coflows"), "c0", "coflows", ["jobs[0]", "list"], '"id": "j0"'),
    bad(("jobs", 0, "coflows"), [["c0"]], "coflows", ["j0"], None, bug=BUG_UNHASHABLE),
    bad(("jobs", 0), "j0", "jobs", ["jobs[0]", "object"], None),
]


@pytest.mark.parametrize("path, value, field, words, line_needle", BAD)
def test_bad_input_names_file_line_coflow_and_field(tmp_path, path, value, field, words,
                                                    line_needle):
    text = json.dumps(mutated(path, value), indent=1)
    fname = str(tmp_path / "bad.json")
    with open(fname, "w") as fh:
        fh.write(text)
    with pytest.raises(WorkloadError) as info:
        read_json(fname)
    e = info.value
    msg = str(e)
    assert e.source == fname and msg.startswith(fname), msg
    assert e.field == field, msg
    for word in words:
        assert word in msg, f"{word!r} not in {msg!r}"
    if line_needle is not None:
        needles = line_needle if isinstance(line_needle, tuple) else (line_needle,)
        lines = [line_of(text, nd, n) for nd in needles for n in range(text.count(nd))]
        assert e.line in lines, f"line {e.line}, expected one of {lines}: {msg}"
        assert msg.startswith(f"{fname}:{e.line}: "), msg
    assert "\n" not in msg


@pytest.mark.parametrize("text, line, col", [
    ('{"fabric": {"ports": 4},\n "coflows": [\n  {"id": "c0" "flows": []}\n ]}\n', 3, 15),
    ('{"fabric": {"ports": 4},\n "coflows": [],\n}\n', 3, 1),
    ("", 1, 1),
    ("[1, 2", 1, 6),
])
def test_malformed_json_names_file_line_and_column(tmp_path, text, line, col):
    fname = str(tmp_path / "broken.json")
    with open(fname, "w") as fh:
        fh.write(text)
    with pytest.raises(WorkloadError) as info:
        read_json(fname)
    msg = str(info.value)
    assert info.value.line == line
    assert msg.startswith(f"{fname}:{line}: malformed JSON"), msg
    assert f"column {col}" in msg


def test_top_level_that_is_not_an_object_is_rejected_at_line_1(tmp_path):
    fname = str(tmp_path / "list.json")
    with open(fname, "w") as fh:
        fh.write("[]\n")
    with pytest.raises(WorkloadError, match=r"list.json:1: .*top level must be an object"):
        read_json(fname)


@pytest.mark.parametrize("literal, field", [("NaN", "bytes"), ("1e400", "bytes"),
                                            ("Infinity", "bytes")])
def test_non_finite_numbers_are_rejected(tmp_path, literal, field):
    text = json.dumps(BASE, indent=1).replace('"bytes": 3000', f'"bytes": {literal}')
    fname = str(tmp_path / "nan.json")
    with open(fname, "w") as fh:
        fh.write(text)
    with pytest.raises(WorkloadError, match=r"finite") as info:
        read_json(fname)
    assert info.value.field == field and "'c0'" in str(info.value)
    assert info.value.line == line_of(text, '"id": "c0"')


def test_missing_file_names_the_file(tmp_path):
    fname = str(tmp_path / "nope.json")
    with pytest.raises(WorkloadError, match=re.escape(fname) + r": cannot read workload"):
        read_json(fname)


# ============================================================================ FB trace
TRACE = """4 4
1 0 2 0 1 2 2:1.0 3:2.0
2 1500 1 3 1 1:0.5
3 2500 1 2 1 0:4
4 4000 3 0 1 2 1 3:0.75
"""


def write_trace(tmp_path, text, name="trace.txt"):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def flows_mb(c):
    return {(f.src, f.dst): f.bytes / MB for f in c.flows}


def test_fb_reducer_megabytes_are_split_evenly_over_the_mappers(tmp_path):
    w = read_fb_trace(write_trace(tmp_path, TRACE))
    assert w.fabric == Fabric(ports=4, cores=1, rate_bps=2.0**30)
    assert [c.id for c in w.coflows] == ["1", "2", "3", "4"]
    assert flows_mb(w.coflows[0]) == {(0, 2): 0.5, (1, 2): 0.5, (0, 3): 1.0, (1, 3): 1.0}
    assert flows_mb(w.coflows[1]) == {(3, 1): 0.5}
    assert flows_mb(w.coflows[2]) == {(2, 0): 4.0}
    assert flows_mb(w.coflows[3]) == {(0, 3): 0.25, (1, 3): 0.25, (2, 3): 0.25}
    assert w.coflows[0].flows[0].bytes == 0.5 * 1048576
    assert all(c.weight == 1.0 for c in w.coflows)


def test_fb_arrival_milliseconds_become_release_seconds(tmp_path):
    w = read_fb_trace(write_trace(tmp_path, TRACE))
    assert [c.release for c in w.coflows] == [0.0, 1.5, 2.5, 4.0]


def test_fb_options_min_mb_scale_zero_release_limit_and_fabric(tmp_path):
    path = write_trace(tmp_path, TRACE)
    assert [c.id for c in read_fb_trace(path, min_mb=1.0).coflows] == ["1", "3"]
    assert [c.id for c in read_fb_trace(path, min_mb=0.75).coflows] == ["1", "3", "4"]
    w = read_fb_trace(path, scale_bytes=2.0, scale_time=0.5)
    assert flows_mb(w.coflows[2]) == {(2, 0): 8.0}
    assert [c.release for c in w.coflows] == [0.0, 0.75, 1.25, 2.0]
    assert all(c.release == 0 for c in read_fb_trace(path, zero_release=True).coflows)
    assert [c.id for c in read_fb_trace(path, limit=2).coflows] == ["1", "2"]
    assert read_fb_trace(path, cores=3, rate_bps=1e8).fabric == Fabric(4, 3, 1e8)
    assert read_workload(path, cores=2).fabric.cores == 2  # by content: not JSON


def test_fb_hosts_remapping_to_one_host_merges_every_pair(tmp_path):
    w = read_fb_trace(write_trace(tmp_path, TRACE), hosts=1)
    assert w.fabric.ports == 1
    assert [flows_mb(c) for c in w.coflows] == [{(0, 0): 3.0}, {(0, 0): 0.5}, {(0, 0): 4.0},
                                                {(0, 0): 0.75}]


@pytest.mark.parametrize("seed", range(4))
def test_fb_hosts_remapping_is_one_port_map_applied_to_every_flow(tmp_path, seed):
    # coflows p0..p7 have one flow p -> (p+1) % 8; they reveal the port map
    lines = [f"p{p} 0 1 {p} 1 {(p + 1) % 8}:1" for p in range(8)]
    lines.append("all 0 8 0 1 2 3 4 5 6 7 8 " + " ".join(f"{r}:8" for r in range(8)))
    path = write_trace(tmp_path, f"8 {len(lines)}\n" + "\n".join(lines) + "\n")
    w = read_fb_trace(path, hosts=3, seed=seed)
    assert w.fabric.ports == 3
    port = {}
    for p in range(8):
        (f,) = w.coflows[p].flows
        port[p] = f.src
        assert f.bytes == MB
    for p in range(8):
        assert w.coflows[p].flows[0].dst == port[(p + 1) % 8]
    assert set(port.values()) <= {0, 1, 2}
    expect = defaultdict(float)
    for m in range(8):
        for r in range(8):
            expect[(port[m], port[r])] += 1.0  # 8 MB over 8 mappers
    assert flows_mb(w.coflows[8]) == dict(expect)
    assert w.coflows[8].total_bytes == 64 * MB


def test_fb_hosts_remapping_is_deterministic_per_seed(tmp_path):
    path = write_trace(tmp_path, TRACE)
    assert read_fb_trace(path, hosts=2, seed=5) == read_fb_trace(path, hosts=2, seed=5)


BUG_FB_NONFINITE = ("bug: a non-finite reducer size or arrival ('1:inf', arrival 'nan') raises "
                    "a WorkloadError without file and line (Coflow built outside the located "
                    "block of read_fb_trace)")
BUG_FB_NAN_MB = ("bug: a reducer size 'nan' MB is accepted silently: every flow is dropped "
                 "(bytes > 0 is False for nan) and the coflow becomes empty")
BUG_FB_DUP_ID = "bug: a duplicate coflow id in an FB trace gives no line"
BUG_FB_COUNT = ("bug: read_fb_trace's specific count errors (field mappers/reducers, 'expected "
                "N ..., found M') are raised inside `try: ... except (IndexError, ValueError)`"
                " and WorkloadError is a ValueError: they become the generic field 'line'")


def fb_bad(body, line, field, words, header="4 1", bug=None):
    marks = []  # every bug these cases recorded is fixed; `bug` names what it was
    return pytest.param(f"{header}\n{body}\n", line, field, words, marks=marks, id=body[:24])


FB_BAD = [
    fb_bad("1 x 1 0 1 1:1", 2, "line", ["<arrival ms>"]),
    fb_bad("1 -5 1 0 1 1:1", 2, "arrival", [">= 0", "-5"]),
    fb_bad("1 0 2 0", 2, "mappers", ["expected 2 mapper ports", "found 1"]),
    fb_bad("1 0 1 0 2 1:1", 2, "reducers", ["expected 2 reducers", "found 1"],
           bug=BUG_FB_COUNT),
    fb_bad("1 0 3 0 1", 2, "mappers", ["expected 3 mapper ports", "found 2"], bug=BUG_FB_COUNT),
    fb_bad("1 0 1 0 1 1-1", 2, "reducers", ["'1-1'", "port:MB"]),
    fb_bad("1 0 1 0 1 1:", 2, "reducers", ["'1:'"]),
    fb_bad("1 0 1 0 1 9:1", 2, "reducers", ["9:1", "0..3"]),
    fb_bad("1 0 1 7 1 1:1", 2, "mappers", ["7", "0..3"]),
    fb_bad("1 0 1 0 1 1:-1", 2, "reducers", ["negative", "1:-1"]),
    fb_bad("1 0 0 1 1:1", 2, "mappers", ["at least one mapper"]),
    fb_bad("1 0 1 0 1 1:1", 1, "header", ["<ports> <coflows>"], header="4"),
    fb_bad("1 0 1 0 1 1:1", 1, "header", ["declares 2", "found 1"], header="4 2"),
    fb_bad("1 0 1 0 1 1:1\n\n2 0 1 0 1 1:1\n3 0 1 0 1 x", 5, "reducers", ["'x'"],
           header="4 3"),
    fb_bad("1 0 1 0 1 1:inf", 2, "reducers", ["inf"], bug=BUG_FB_NONFINITE),
    fb_bad("1 nan 1 0 1 1:1", 2, "arrival", ["nan"], bug=BUG_FB_NONFINITE),
    fb_bad("1 0 1 0 1 1:nan", 2, "reducers", ["nan"], bug=BUG_FB_NAN_MB),
    fb_bad("1 0 1 0 1 1:1\n1 0 1 0 1 2:1", 3, "id", ["duplicate", "'1'"], header="4 2",
           bug=BUG_FB_DUP_ID),
]


@pytest.mark.parametrize("text, line, field, words", FB_BAD)
def test_fb_malformed_line_names_file_line_and_field(tmp_path, text, line, field, words):
    path = write_trace(tmp_path, text)
    with pytest.raises(WorkloadError) as info:
        read_fb_trace(path)
    msg = str(info.value)
    assert (info.value.source, info.value.line, info.value.field) == (path, line, field), msg
    assert msg.startswith(f"{path}:{line}: "), msg
    for word in words:
        assert word in msg, f"{word!r} not in {msg!r}"


def test_fb_empty_trace_is_rejected(tmp_path):
    path = write_trace(tmp_path, "")
    with pytest.raises(WorkloadError, match=re.escape(path) + ":1: empty trace"):
        read_fb_trace(path)


@pytest.fixture(scope="module")
def fb2010():
    if not os.path.exists(FB2010):
        pytest.skip(f"{FB2010} not present")
    return read_fb_trace(FB2010)


def test_real_fb2010_trace_has_526_coflows_on_150_ports_and_all_its_bytes(fb2010):
    w = fb2010
    assert len(w.coflows) == 526 and w.fabric.ports == 150
    total_mb = 0.0
    arrivals = []
    with open(FB2010) as fh:
        head = fh.readline().split()
        assert head == ["150", "526"]
        for line in fh:
            tok = line.split()
            nm = int(tok[2])
            nr = int(tok[3 + nm])
            arrivals.append(float(tok[1]) / 1000.0)
            total_mb += sum(float(r.split(":")[1]) for r in tok[4 + nm:4 + nm + nr])
    total = sum(c.total_bytes for c in w.coflows)
    assert total == pytest.approx(total_mb * MB, rel=1e-12)
    assert [c.release for c in w.coflows] == pytest.approx(arrivals)
    assert len({c.id for c in w.coflows}) == 526


# ============================================================================ generators
def test_random_workload_is_deterministic_per_seed():
    a = random_workload(11, ports=6, cores=2, coflows=15, chi=3)
    b = random_workload(11, ports=6, cores=2, coflows=15, chi=3)
    c = random_workload(12, ports=6, cores=2, coflows=15, chi=3)
    assert a == b
    assert a.coflows != c.coflows


def test_multi_stage_jobs_is_deterministic_and_jobs_partition_the_coflows():
    a = multi_stage_jobs(5, ports=6, jobs=4)
    assert a == multi_stage_jobs(5, ports=6, jobs=4)
    assert a != multi_stage_jobs(6, ports=6, jobs=4)
    owner = {cid: j.id for j in a.jobs for cid in j.coflows}
    assert sorted(owner) == sorted(c.id for c in a.coflows)
    for x, y in a.precedence:
        assert owner[x] == owner[y]  # arcs stay inside a job


def test_generated_workload_files_are_identical_per_seed(tmp_path):
    write_json(random_workload(4), str(tmp_path / "a.json"))
    write_json(random_workload(4), str(tmp_path / "b.json"))
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()


@settings(max_examples=200, deadline=None)
@given(n=st.integers(1, 14), data=st.data(), seed=st.integers(0, 2**32 - 1),
       extra=st.sampled_from([0.0, 0.3, 1.0, 3.0]))
def test_random_dag_has_exactly_the_requested_longest_path(n, data, seed, extra):
    chi = data.draw(st.integers(1, n))
    ids = [f"c{k}" for k in range(n)]
    arcs = random_dag(np.random.default_rng(seed), ids, chi, extra_arcs=extra)
    assert arcs == random_dag(np.random.default_rng(seed), ids, chi, extra_arcs=extra)
    w = Workload(Fabric(2), tuple(Coflow(c, ()) for c in ids), tuple(arcs))
    assert w.chi == chi


@pytest.mark.parametrize("chi", [1, 2, 4, 7])
def test_random_workload_has_the_requested_chi(chi):
    assert random_workload(chi, coflows=10, chi=chi).chi == chi


def test_random_dag_rejects_a_chi_longer_than_the_coflows():
    with pytest.raises(ValueError, match="chi"):
        random_dag(np.random.default_rng(0), ["a", "b"], 3)


def test_random_dag_over_no_coflows_is_empty():
    assert random_dag(np.random.default_rng(0), [], 1) == []


def test_generated_sizes_are_positive_and_ports_in_range():
    w = random_workload(9, ports=5, cores=2, coflows=30)
    assert all(f.bytes >= 1 and 0 <= f.src < 5 and 0 <= f.dst < 5
               for c in w.coflows for f in c.flows)
    rel = [c.release for c in w.coflows]
    assert rel == sorted(rel) and all(math.isfinite(r) for r in rel)
