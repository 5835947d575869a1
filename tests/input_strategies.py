"""Hypothesis strategies for malformed inputs, shared by tests/test_fuzz_inputs.py and
benchmarks/reliability.py (the input campaign).

* :func:`mutated_json` -- a valid document (a coflow workload with a DAG, multi-stage
  jobs, joint workloads of the packing, moldable and msjo job models, all from the seeded
  generators) with 1-3 edits: a value replaced by a nasty one (null, a huge or negative
  integer, NaN, Infinity, a string, a list, an object), a key or list item deleted, a list
  item duplicated (duplicate ids, arcs, flows); or its text cut, or a byte that is not
  UTF-8 inserted. Draws ``(kind, bytes)``.
* :func:`mutated_trace` -- the FB benchmark format with tokens replaced, dropped or
  inserted, lines duplicated, the header changed, a stray byte. Draws bytes.
* :func:`mutated_segments` -- ``--segments`` lines with fields replaced or dropped, or
  cut. Draws bytes.
* :func:`cli_options` -- ``run`` / ``bound`` / ``generate`` with option values out of
  range or of the wrong type. Draws ``(args, file placeholder)``; the placeholders
  ``{dir}``, ``{json}`` and ``{trace}`` stand for a directory, a valid JSON workload
  (``BASES["coflows"]``) and a valid trace (``TRACE``).

:data:`POLICY` is the policy the command line runs each kind of workload with.
"""
from __future__ import annotations

import json

from hypothesis import strategies as st

from emulate.io.traces import joint_to_dict, workload_to_dict

def _bases() -> dict[str, dict]:
    from emulate.io.generators import generate
    docs = {"coflows": workload_to_dict(generate("coflows", seed=1, ports=4, cores=2,
                                                 params={"coflows": 4, "chi": 2})),
            "jobs": workload_to_dict(generate("jobs", seed=1, ports=4, cores=1,
                                              params={"jobs": 2}))}
    for kind, params in (("mapreduce", {"n_jobs": 2}), ("moldable", {"n_jobs": 2}),
                         ("msjo", {"n_jobs": 2})):
        docs[kind] = joint_to_dict(generate(kind, seed=1, ports=3, cores=1, params=params))
    return docs


BASES = _bases()
#: the policy the command line runs each kind with
POLICY = {"coflows": "sebf", "jobs": "fifo", "mapreduce": "fifo+sebf", "moldable": "demt",
          "msjo": "mars"}
TRACE = "4 3\n1 0 2 0 1 2 2:1.0 3:2.0\n2 1500 1 3 1 1:0.5\n3 2500 3 0 1 2 1 3:0.75\n"
SEGMENTS = [{"coflow": "c0", "src": 0, "dst": 1, "core": 0, "start": 0.0, "end": 1.0,
             "rate_bps": 1e9},
            {"coflow": "c1", "src": 1, "dst": 0, "core": 1, "start": 0.5, "end": 2.0,
             "rate_bps": 5e8},
            {"task": "t0", "machine": "m0", "start": 0.0, "end": 3.0}]

NASTY = st.one_of(
    st.none(), st.booleans(), st.integers(-2**70, 2**70),
    st.sampled_from([0, -1, 1, 10**30, 10**400, 2**63, 1e308, -0.0, 4097, 10**9, "",
                     "c0", "0", [], {}, [5], [None], [[]], ["a", "a"], {"x": 1}]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=6),
    st.lists(st.one_of(st.integers(-3, 3), st.text(max_size=2)), max_size=3))


def _paths(obj, prefix=()):
    """Every path into ``obj`` (dict keys, list indexes), containers included."""
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _paths(v, prefix + (i,))


def _at(doc, path):
    for k in path:
        doc = doc[k]
    return doc


@st.composite
def mutated_doc(draw, base: dict):
    doc = json.loads(json.dumps(base))
    for _ in range(draw(st.integers(1, 3))):
        paths = [p for p in _paths(doc) if p]
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent, key = _at(doc, path[:-1]), path[-1]
        op = draw(st.sampled_from(["replace", "replace", "delete", "duplicate"]))
        if op == "replace":
            parent[key] = draw(NASTY)
        elif op == "delete":
            del parent[key]
        elif isinstance(parent, list):
            parent.insert(key, json.loads(json.dumps(parent[key])))
        else:
            parent[key] = draw(NASTY)
    return doc


@st.composite
def mutated_json(draw, kinds=tuple(BASES)):
    kind = draw(st.sampled_from(kinds))
    text = json.dumps(draw(mutated_doc(BASES[kind])), indent=1)   # NaN/Infinity literals
    data = text.encode()
    how = draw(st.sampled_from(["doc", "doc", "doc", "cut", "byte"]))
    if how == "cut":
        data = data[:draw(st.integers(0, len(data)))]
    elif how == "byte":
        at = draw(st.integers(0, len(data)))
        data = data[:at] + draw(st.sampled_from([b"\xff", b"\xc3", b"\x00", b"\xe2\x82"])) \
            + data[at:]
    return kind, data


TOKENS = st.one_of(st.sampled_from(["nan", "inf", "-inf", "1e309", "-1", "0", "4", "3:",
                                    ":1", "1:nan", "1:-1", "9:1", "99999999999999999999",
                                    "4096", "4097", "x", "²", "1:1e400", "0:1"]),
                   st.integers(-5, 10).map(str),
                   st.text(alphabet="0123456789:.-e", min_size=1, max_size=5))


@st.composite
def mutated_trace(draw):
    lines = [ln.split() for ln in TRACE.splitlines()]
    for _ in range(draw(st.integers(1, 3))):
        n = draw(st.integers(0, len(lines) - 1))
        op = draw(st.sampled_from(["replace", "replace", "drop", "insert", "dup_line"]))
        if op == "dup_line":
            lines.insert(n, list(lines[n]))
            continue
        if not lines[n]:
            continue
        k = draw(st.integers(0, len(lines[n]) - 1))
        if op == "replace":
            lines[n][k] = draw(TOKENS)
        elif op == "drop":
            del lines[n][k]
        else:
            lines[n].insert(k, draw(TOKENS))
    data = "\n".join(" ".join(ln) for ln in lines).encode() + b"\n"
    if draw(st.booleans()) and draw(st.booleans()):
        at = draw(st.integers(0, len(data)))
        data = data[:at] + b"\xff" + data[at:]
    return data


@st.composite
def mutated_segments(draw):
    segs = draw(mutated_doc({"s": SEGMENTS})).get("s", []) if draw(st.booleans()) else SEGMENTS
    if not isinstance(segs, list):
        segs = [segs]
    text = "\n".join(json.dumps(s) for s in segs) + "\n"
    if draw(st.booleans()):
        text = text[:draw(st.integers(0, len(text)))]
    return text.encode()


NUMBER_TEXT = st.sampled_from(["-1", "0", "1", "2", "nan", "inf", "-inf", "1e400", "abc", "",
                               "10000000", "0.5", "4097", "64", "65"])


@st.composite
def cli_options(draw):
    """A command line with option values out of range or of the wrong type."""
    cmd = draw(st.sampled_from(["run", "bound", "generate"]))
    if cmd == "generate":
        args = ["generate", "--out", "{dir}/g.json"]
        for opt in draw(st.lists(st.sampled_from(["--seed", "--ports", "--cores", "--rate",
                                                  "--coflows", "--chi", "--load",
                                                  "--mean-size", "--jobs"]),
                                 max_size=3, unique=True)):
            args += [opt, draw(NUMBER_TEXT)]
        kind = draw(st.sampled_from(["coflows", "mapreduce", "moldable", "msjo", "google"]))
        args += ["--kind", kind]
        if draw(st.booleans()):
            args += ["-p", draw(st.sampled_from(["n_jobs", "family", "scenario",
                                                 "delay_factor", "remote_fraction",
                                                 "second_round", "bogus", "name"]))
                     + "=" + draw(NUMBER_TEXT)]
        return args, None
    trace = draw(st.booleans())
    args = [cmd, "{trace}" if trace else "{json}"]
    opts = ["--cores", "--rate"] + (["--hosts", "--min-mb", "--scale-bytes", "--scale-time",
                                     "--limit"] if trace else [])
    opts += ["--time-scale"] if cmd == "run" else ["--tolerance"]
    for opt in draw(st.lists(st.sampled_from(opts), max_size=3, unique=True)):
        args += [opt, draw(NUMBER_TEXT)]
    if cmd == "run":
        args += ["--no-lp-bound", "--policy",
                 draw(st.sampled_from(["sebf", "fifo", "os:getcwd", "os:path", "nope", ":",
                                       "json:JSONDecoder", "controller.policies:Policy",
                                       "fifo+sebf"]))]
    else:
        args += ["--lp", draw(st.sampled_from(["coflow", "single", "flow", "synchpack-1",
                                               "moldable", "cls"]))]
    return args, ("{trace}" if trace else "{json}")
