"""Every bad input of issue #19 is one clean error: exit 2, one stderr line naming the
file (and the line or JSON path, and the field), what was wrong and what is allowed; no
traceback, no hang, bounded memory.

Each case is a file (or a command-line option) that once gave a traceback, a hang, an
allocation of terabytes or a silently wrong answer. Every case runs through the command
line in-process (click's runner: the same ``main`` and its error handling) and, for the
readers, through the reader directly (the error's file, line and field); a sample runs
through the installed console script as a subprocess.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from controller.model import WorkloadError
from emulate.cli import main
from emulate.io.segments import read_segments
from emulate.io.traces import read_fb_trace, read_workload

BIN = os.path.join(os.path.dirname(sys.executable), "coflowemu")

BASE = {"fabric": {"ports": 4, "cores": 2, "rate_bps": 1e9},
        "coflows": [{"id": "c0", "release": 0.0, "weight": 1.0,
                     "flows": [{"src": 0, "dst": 1, "bytes": 3000}]},
                    {"id": "c1", "release": 1.0, "weight": 1.0,
                     "flows": [{"src": 1, "dst": 2, "bytes": 10}]}],
        "precedence": [["c0", "c1"]]}

JOINT = {"fabric": {"ports": 2, "cores": 1, "rate_bps": 1e9},
         "machines": [{"id": "m0", "capacity": 1.0}, {"id": "m1", "capacity": 1.0}],
         "stages": [{"id": "map", "tasks": [{"id": "map0", "size": 0.5,
                                             "placement": {"m0": 2.0, "m1": 4.0},
                                             "output_bytes": 1e6}]},
                    {"id": "reduce", "tasks": [{"id": "red0", "size": 0.5,
                                                "placement": {"m0": 3.0, "m1": 3.0}}]}],
         "coflows": [{"id": "shuffle", "shuffle": True}],
         "jobs": [{"id": "j0", "weight": 2.0, "stages": ["map", "reduce"],
                   "coflows": ["shuffle"],
                   "arcs": [["map", "shuffle"], ["shuffle", "reduce"]]}]}

TRACE = "4 2\n1 0 2 0 1 2 2:1.0 3:2.0\n2 1500 1 3 1 1:0.5\n"

SEGMENT = {"coflow": "c0", "src": 0, "dst": 1, "core": 0, "start": 0.0, "end": 1.0,
           "rate_bps": 1e9}


def changed(base: dict, path: tuple, value) -> str:
    """``base`` as indented JSON with the value at ``path`` replaced."""
    doc = json.loads(json.dumps(base))
    obj = doc
    for k in path[:-1]:
        obj = obj[k]
    obj[path[-1]] = value
    return json.dumps(doc, indent=1)


def segments(*lines) -> str:
    return "".join((ln if isinstance(ln, str) else json.dumps(ln)) + "\n" for ln in lines)


def seg(**changes):
    d = dict(SEGMENT, **changes)
    return {k: v for k, v in d.items() if v is not DROP}


DROP = object()


class Case:
    """A bad input: file ``content`` (str or bytes) named ``name``, the command line
    (``{f}`` is the file), the field the error names (None: any) and words it says."""

    def __init__(self, id, content, args, words=(), field=None, line=None, name="w.json",
                 reader=True, names_file=True):
        self.id, self.content, self.args, self.words = id, content, args, words
        self.field, self.line, self.name, self.reader = field, line, name, reader
        self.names_file = names_file     # False: a bad option, named instead of a file

    def write(self, d) -> str:
        path = os.path.join(d, self.name)
        data = self.content.encode() if isinstance(self.content, str) else self.content
        with open(path, "wb") as fh:
            fh.write(data)
        return path

    def argv(self, path) -> list[str]:
        return [a.replace("{f}", path) for a in self.args]

    def param(self):
        return pytest.param(self, id=self.id)


RUN = ["run", "{f}", "--policy", "sebf", "--no-lp-bound"]
BOUND = ["bound", "{f}", "--json"]
COMPARE = ["compare", "{f}", "--policies", "sebf,fifo", "--no-lp-bound", "--out", "{f}.d"]
GANTT = ["gantt", "{f}", "--out", "{f}.png"]

CASES = [
    # ---- encodings, shapes, nesting
    Case("json-not-utf8", changed(BASE, ("coflows", 1, "id"), "cX").encode()
         .replace(b'"cX"', b'"c\xff"'), RUN, ["UTF-8", "0xff"], "encoding"),
    Case("trace-not-utf8", TRACE.encode().replace(b"2 1500", b"2\xfe 1500"), RUN,
         ["UTF-8", "0xfe"], "encoding", line=3, name="t.txt"),
    Case("precedence-5", changed(BASE, ("precedence",), [5]), RUN,
         ["precedence[0]", "pair"], "precedence"),
    Case("precedence-null", changed(BASE, ("precedence",), [None]), RUN,
         ["precedence[0]", "pair"], "precedence"),
    Case("precedence-dup", changed(BASE, ("precedence",), [["c0", "c1"], ["c0", "c1"]]),
         ["run", "{f}", "--policy", "lp-coflow"], ["precedence[1]", "repeats"],
         "precedence"),
    Case("jobs-5", changed(BASE, ("jobs",), 5), RUN, ["'jobs'", "list"], "jobs"),
    Case("jobs-null", changed(BASE, ("jobs",), None), RUN, ["'jobs'", "list"], "jobs"),
    Case("nested-100k", "[" * 100_000, RUN, ["nested"], line=1),
    Case("nested-100k-inside", '{"fabric": {"ports": 4}, "coflows": ' + "[" * 100_000, RUN,
         ["nested"], line=1),
    Case("huge-int-digits", '{"fabric": {"ports": 4}, "coflows": [], "x": '
         + "9" * 5000 + "}", RUN, ["malformed JSON"]),
    # ---- numbers out of range
    Case("bytes-1e30-int", changed(BASE, ("coflows", 0, "flows", 0, "bytes"), 10**30), RUN,
         ["bytes", "at most 1e+18"], "bytes"),
    Case("weight-1e30-int", changed(BASE, ("coflows", 0, "weight"), 10**30), RUN,
         ["weight", "at most"], "weight"),
    Case("placement-1e30-int", changed(JOINT, ("stages", 0, "tasks", 0, "placement", "m0"),
                                       10**30), ["run", "{f}", "--policy", "fifo"],
         ["placement", "at most"], "placement"),
    Case("bytes-10**400-int", changed(BASE, ("coflows", 0, "flows", 0, "bytes"), 10**400),
         RUN, ["bytes", "digits"], "bytes"),
    Case("rate-infinity", changed(BASE, ("fabric", "rate_bps"), 1e999), BOUND,
         ["rate_bps", "1e+15"], "fabric"),
    Case("rate-infinity-compare", changed(BASE, ("fabric", "rate_bps"), 1e999), COMPARE,
         ["rate_bps"], "fabric"),
    Case("core-rates-infinity", changed(BASE, ("fabric", "core_rates"), [1e999, 1e9]),
         COMPARE, ["core_rates[0]"], "fabric"),
    Case("bytes-1e308", changed(BASE, ("coflows", 0, "flows", 0, "bytes"), 1e308), BOUND,
         ["bytes", "at most"], "bytes"),
    Case("release-1e300", changed(BASE, ("coflows", 0, "release"), 1e300), BOUND,
         ["release", "at most 1e+15"], "release"),
    # ---- sizes checked before anything is allocated
    Case("ports-1e9", changed(BASE, ("fabric", "ports"), 10**9), RUN,
         ["ports", "at most 4096"], "fabric"),
    Case("cores-1e7", changed(BASE, ("fabric", "cores"), 10**7), RUN,
         ["cores", "at most 64"], "fabric"),
    Case("trace-header-0-0", "0 0\n", RUN, ["ports", "1..4096"], "header", line=1,
         name="t.txt"),
    Case("trace-header-1e12-ports", f"{10**12} 1\n1 0 1 0 1 1:1\n", RUN,
         ["ports", "1..4096"], "header", line=1, name="t.txt"),
    # ---- options
    Case("policy-not-a-class", json.dumps(BASE), ["run", "{f}", "--policy", "os:getcwd"],
         ["os:getcwd", "not a policy"], reader=False, names_file=False),
    Case("policy-abstract", json.dumps(BASE),
         ["run", "{f}", "--policy", "controller.policies:Policy"], ["does not implement"],
         reader=False, names_file=False),
    Case("compute-policy-abstract", changed(JOINT, ("name",), "j"),
         ["run", "{f}", "--policy", "controller.compute:ComputePlanner+sebf"],
         ["does not implement"], reader=False, names_file=False),
    Case("policy-not-a-class-compare", json.dumps(BASE),
         ["compare", "{f}", "--policies", "os:path", "--no-lp-bound", "--out", "{f}.d"],
         ["os:path", "not a policy"], reader=False, names_file=False),
    Case("scale-bytes-negative", TRACE, RUN + ["--scale-bytes", "-1"], ["--scale-bytes",
                                                                        "> 0"],
         "scale_bytes", name="t.txt", reader=False),
    Case("scale-bytes-nan", TRACE, RUN + ["--scale-bytes", "nan"], ["--scale-bytes"],
         "scale_bytes", name="t.txt", reader=False),
    Case("scale-time-inf", TRACE, RUN + ["--scale-time", "inf"], ["--scale-time"],
         "scale_time", name="t.txt", reader=False),
    Case("limit-negative", TRACE, RUN + ["--limit", "-1"], ["--limit", ">= 1"], "limit",
         name="t.txt", reader=False),
    Case("hosts-zero", TRACE, RUN + ["--hosts", "0"], ["--hosts"], "hosts", name="t.txt",
         reader=False),
    Case("min-mb-nan", TRACE, RUN + ["--min-mb", "nan"], ["--min-mb"], "min_mb",
         name="t.txt", reader=False),
    Case("cores-option-1e7", TRACE, RUN + ["--cores", "10000000"], ["--cores", "1..64"],
         name="t.txt", reader=False, names_file=False),
    Case("time-scale-nan", json.dumps(BASE), RUN + ["--time-scale", "nan"],
         ["--time-scale"], reader=False, names_file=False),
    # ---- gantt's segments file
    Case("gantt-empty", "", GANTT, ["no flow segments"], name="s.jsonl"),
    Case("gantt-tasks-only", segments({"task": "t0", "machine": "m0", "start": 0,
                                       "end": 1}), GANTT, ["no flow segments"],
         name="s.jsonl"),
    Case("gantt-missing-start", segments(seg(start=DROP)), GANTT, ["missing 'start'"],
         "start", line=1, name="s.jsonl"),
    Case("gantt-missing-core", segments(SEGMENT, seg(core=DROP)), GANTT,
         ["missing 'core'"], "core", line=2, name="s.jsonl"),
    Case("gantt-string-core", segments(seg(core="0")), GANTT, ["'core'", "integer"],
         "core", line=1, name="s.jsonl"),
    Case("gantt-null-line", segments("null"), GANTT, ["JSON object"], line=1,
         name="s.jsonl"),
    Case("gantt-negative-time", segments(seg(start=-1.0)), GANTT, ["'start'", ">= 0"],
         "start", line=1, name="s.jsonl"),
    Case("gantt-nan-time", segments(seg(end=float("nan"))), GANTT, ["'end'", "finite"],
         "end", line=1, name="s.jsonl"),
    Case("gantt-infinite-time", segments(seg(end=float("inf"))), GANTT, ["'end'"],
         "end", line=1, name="s.jsonl"),
    Case("gantt-end-before-start", segments(seg(start=2.0, end=1.0)), GANTT,
         ["before 'start'"], "end", line=1, name="s.jsonl"),
    Case("gantt-negative-rate", segments(SEGMENT, SEGMENT, seg(rate_bps=-5)), GANTT,
         ["'rate_bps'"], "rate_bps", line=3, name="s.jsonl"),
    Case("gantt-not-utf8", b'{"coflow": "\xff"}\n', GANTT, ["UTF-8"], "encoding", line=1,
         name="s.jsonl"),
    # ---- joint workloads
    Case("joint-precedence-5", changed(JOINT, ("precedence",), [5]),
         ["run", "{f}", "--policy", "fifo"], ["precedence[0]"], "precedence"),
    Case("joint-arc-dup", changed(JOINT, ("jobs", 0, "arcs"),
                                  [["map", "shuffle"], ["shuffle", "reduce"],
                                   ["map", "shuffle"]]),
         ["run", "{f}", "--policy", "fifo"], ["arcs[2]", "repeats"], "arcs"),
]


def test_a_byte_order_mark_is_read_as_utf8(tmp_path):
    """Editors that write a BOM produce valid workloads (JSON and traces alike)."""
    for name, text in (("w.json", json.dumps(BASE)), ("t.txt", TRACE)):
        path = tmp_path / name
        path.write_bytes(b"\xef\xbb\xbf" + text.encode())
        assert len(read_workload(str(path)).coflows) == 2


def read(case: Case, path: str):
    if case.name == "s.jsonl":
        return read_segments(path)
    return read_workload(path)


@pytest.mark.parametrize("case", [c.param() for c in CASES])
def test_bad_input_is_one_clean_error_line_naming_the_file(case, tmp_path):
    path = case.write(str(tmp_path))
    out = CliRunner().invoke(main, case.argv(path))
    err = out.stderr if hasattr(out, "stderr") else out.output
    assert out.exit_code == 2, (out.exit_code, out.output, out.exc_info)
    assert out.exception is None or isinstance(out.exception, SystemExit), out.exc_info
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("coflowemu: error: "), err
    assert path in lines[0] or not case.names_file, err
    for word in case.words:
        assert word in lines[0], f"{word!r} not in {lines[0]!r}"


@pytest.mark.parametrize("case", [c.param() for c in CASES if c.reader and c.field])
def test_the_reader_names_file_line_and_field(case, tmp_path):
    path = case.write(str(tmp_path))
    with pytest.raises(WorkloadError) as info:
        read(case, path)
    e = info.value
    assert e.source == path and e.field == case.field, str(e)
    if case.line is not None:
        assert e.line == case.line, str(e)
    assert "\n" not in str(e)


def test_a_trace_line_expanding_past_the_flow_limit_is_refused_before_allocating(
        tmp_path, monkeypatch):
    import emulate.io.traces as traces
    monkeypatch.setattr(traces, "MAX_TRACE_FLOWS", 8)
    path = str(tmp_path / "t.txt")
    with open(path, "w") as fh:
        fh.write("3 2\n1 0 1 0 1 1:1\n2 0 3 0 1 2 3 0:1 1:1 2:1\n")
    with pytest.raises(WorkloadError, match=r"3 mappers x 3 reducers .* more than 8") as info:
        read_fb_trace(path)
    assert (info.value.line, info.value.field) == (3, "reducers")


def test_a_duplicated_precedence_arc_never_reaches_a_policy(tmp_path):
    """It once deadlocked lp-coflow ("lets nothing send"): now it is refused on reading."""
    from controller.model import Coflow, Flow, Workload
    from topologies.fabric import Fabric
    with pytest.raises(WorkloadError, match=r"precedence\[1\] repeats"):
        Workload(Fabric(2), (Coflow("a", (Flow(0, 1, 1.0),)), Coflow("b", (Flow(0, 1, 1.0),))),
                 (("a", "b"), ("a", "b")))


def test_bound_never_prints_nan(monkeypatch, tmp_path):
    """Whatever the solver returns, ``bound`` prints no NaN (not JSON) and no "optimal"
    beside a non-finite value: it fails with one line."""
    import controller.lp.coflow as coflow
    real = coflow.solve_coflow_lp

    def nan_lp(*a, **k):
        res = real(*a, **k)
        return type(res)(**{**res.__dict__, "value": float("nan")}) if hasattr(
            res, "__dict__") else res
    monkeypatch.setattr(coflow, "solve_coflow_lp", nan_lp)
    path = str(tmp_path / "w.json")
    with open(path, "w") as fh:
        json.dump(BASE, fh)
    out = CliRunner().invoke(main, ["bound", path, "--json"])
    assert out.exit_code == 1 and "NaN" not in out.stdout, out.output
    assert "beyond what the solver can represent" in out.output


SUBPROCESS_SAMPLE = ["json-not-utf8", "nested-100k", "trace-header-1e12-ports", "ports-1e9",
                     "bytes-1e308", "policy-not-a-class", "gantt-null-line",
                     "scale-bytes-nan"]


@pytest.mark.parametrize("case", [c.param() for c in CASES if c.id in SUBPROCESS_SAMPLE])
def test_the_installed_command_gives_one_line_and_exit_2(case, tmp_path):
    path = case.write(str(tmp_path))
    out = subprocess.run([BIN, *case.argv(path)], capture_output=True, text=True,
                         timeout=120, stdin=subprocess.DEVNULL)
    assert out.returncode == 2, out.stderr
    assert out.stdout == "" and "Traceback" not in out.stderr, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and (path in lines[0] or not case.names_file), out.stderr
    for word in case.words:
        assert word in lines[0], out.stderr
