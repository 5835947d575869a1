"""Workload sources: the project's JSON format, the Facebook coflow benchmark, generators.

This is the one place that reads and writes workloads.

JSON format
-----------
::

    {"fabric": {"ports": 4, "cores": 2, "rate_bps": 1e9},
     "coflows": [{"id": "c0", "release": 0.0, "weight": 1.0,
                  "flows": [{"src": 0, "dst": 1, "bytes": 3000}]}],
     "precedence": [["c0", "c1"]],
     "jobs": [{"id": "j0", "weight": 1.0, "coflows": ["c0", "c1"]}]}

``fabric.core_rates`` (a rate per core), ``name`` and any other extra keys are allowed
(extra keys are ignored). ``release`` defaults to 0, ``weight`` to 1; ``precedence`` and
``jobs`` may be omitted.

A document with a ``machines`` key is a *joint* workload (compute stages, coflows and the
job DAGs joining them, :class:`controller.jobs.JointWorkload`): it also has ``stages``,
jobs list their ``stages``, ``coflows`` and ``arcs``, and a coflow may be a run-time
``shuffle``. :func:`joint_from_dict` reads it, :func:`joint_to_dict` writes it; every key
is documented in ``docs/jobs.md``.

Facebook coflow benchmark (``FB2010-1Hr-150-0.txt``)
----------------------------------------------------
Line 1 ``<ports> <coflows>``, then a coflow per line:
``<id> <arrival ms> <#mappers> <mapper port>... <#reducers> <reducer port>:<MB>...``.
A reducer's megabytes (1 MB = 2^20 bytes) are split evenly over the coflow's mappers,
as the reference simulator (CoflowSim) does.

Bad input
---------
Files are UTF-8 text (a byte-order mark is dropped). Every reader raises
:class:`~controller.model.WorkloadError` naming the file, the line (of the offending
object in JSON) and the field, and checks sizes before allocating anything: the fabric's
limits (:mod:`topologies.fabric`), the model's (:mod:`controller.model`), a trace's
expansion into flows (:data:`MAX_TRACE_FLOWS`). README "Limits and errors" lists them.

Generators
----------
:func:`random_workload` (heavy-tailed coflows like FB2010's, seeded), :func:`random_dag`
(a DAG with a chosen longest path) and :func:`multi_stage_jobs`. The same seed gives the
same workload on every machine (numpy's PCG64).
"""
from __future__ import annotations

import json
import math
import re
from collections import defaultdict

import numpy as np

from controller.jobmodel import DEFAULT_MODEL
from controller.model import MAX_SECONDS, Coflow, Flow, Job, Workload, WorkloadError
from emulate.io.records import atomic_write
from topologies.fabric import MAX_PORTS, Fabric, FabricError

#: Where users can fetch the public benchmark (the project does not ship it).
FB2010_URL = ("https://raw.githubusercontent.com/coflow/coflow-benchmark/master/"
              "FB2010-1Hr-150-0.txt")
MB = 1048576


# ---------------------------------------------------------------------------- JSON
def read_json(path: str, *, cores: int | None = None, rate_bps: float | None = None
              ) -> "Workload | JointWorkload":
    """Read a workload in the project's JSON format.

    Parameters
    ----------
    path : str
    cores, rate_bps : optional overrides of the file's fabric (CLI ``--cores``/``--rate``).

    Returns
    -------
    Workload, or a :class:`~controller.jobs.JointWorkload` if the document has
    ``machines`` (see :func:`joint_from_dict`).

    Raises
    ------
    WorkloadError
        Naming the file, the line (where it can be found) and the field.
    """
    text = read_text(path, "workload")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise WorkloadError(f"malformed JSON: {e.msg} (column {e.colno})", source=path,
                            line=e.lineno) from None
    except RecursionError:
        raise WorkloadError("malformed JSON: nested deeper than Python's JSON reader "
                            "allows (a workload nests a few levels)", source=path,
                            line=1) from None
    except ValueError as e:     # an integer of more than sys.get_int_max_str_digits()
        raise WorkloadError(f"malformed JSON: {e}", source=path) from None
    if isinstance(doc, dict) and "machines" in doc:
        return joint_from_dict(doc, source=path, text=text, cores=cores, rate_bps=rate_bps)
    return workload_from_dict(doc, source=path, text=text, cores=cores, rate_bps=rate_bps)


def read_text(path: str, what: str) -> str:
    """The UTF-8 text of ``path``, or a :class:`WorkloadError` naming the file (and the
    line and column of the first byte that is not UTF-8)."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as e:
        raise WorkloadError(f"cannot read {what}: {e.strerror}", source=path) from None
    try:
        return data.decode("utf-8-sig")        # a byte-order mark (some editors) dropped
    except UnicodeDecodeError as e:
        line_start = data.rfind(b"\n", 0, e.start) + 1
        raise WorkloadError(f"not UTF-8 text: byte 0x{data[e.start]:02x} at column "
                            f"{e.start - line_start + 1} (a {what} must be UTF-8 text)",
                            source=path, line=data.count(b"\n", 0, e.start) + 1,
                            field="encoding") from None


def _brief(value) -> str:
    """``repr(value)`` cut to one short line (a bad value may be a huge list)."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _line_of(text: str | None, *needles: str) -> int | None:
    """Line of the first needle found in ``text`` (1-based)."""
    if not text:
        return None
    for needle in needles:
        if needle is None:
            continue
        m = re.search(needle, text)
        if m:
            return text.count("\n", 0, m.start()) + 1
    return None


def _id_pattern(value) -> str:
    return r'"id"\s*:\s*' + re.escape(json.dumps(value))


def _require(obj, key, kind, where, source, line, default=None):
    if key not in obj:
        if default is not None:
            return default
        raise WorkloadError(f"{where}: missing field {key!r}", source=source, line=line,
                            field=key)
    v = obj[key]
    if kind is not None and (isinstance(v, bool) or not isinstance(v, kind)):
        name = {list: "a list", str: "a string", dict: "an object",
                int: "an integer"}.get(kind, "a number")
        raise WorkloadError(f"{where}: {key!r} must be {name}, got {_brief(v)}", source=source,
                            line=line, field=key)
    return v


def _fabric_from(doc, source, text, cores, rate_bps) -> Fabric:
    num = (int, float)
    fab = _require(doc, "fabric", dict, "top level", source, _line_of(text, r'"fabric"'))
    fline = _line_of(text, r'"fabric"')
    try:
        return Fabric(
            ports=_require(fab, "ports", int, "fabric", source, fline),
            cores=int(cores) if cores is not None else _require(fab, "cores", int, "fabric",
                                                                 source, fline, default=1),
            rate_bps=float(rate_bps) if rate_bps is not None else float(
                _require(fab, "rate_bps", num, "fabric", source, fline, default=1e9)),
            core_rates=(None if cores is not None or rate_bps is not None
                        else fab.get("core_rates")))
    except FabricError as e:
        raise WorkloadError(str(e), source=source, line=fline, field="fabric") from None


def workload_from_dict(doc, *, source: str = "<workload>", text: str | None = None,
                       cores: int | None = None, rate_bps: float | None = None,
                       name: str | None = None) -> Workload:
    """Build a workload from a parsed JSON document (see the module docstring)."""
    if not isinstance(doc, dict):
        raise WorkloadError("the top level must be an object with 'fabric' and 'coflows'",
                            source=source, line=1)
    num = (int, float)
    fabric = _fabric_from(doc, source, text, cores, rate_bps)
    coflows = []
    for n, c in enumerate(_require(doc, "coflows", list, "top level", source, None)):
        where = f"coflows[{n}]"
        if not isinstance(c, dict):
            raise WorkloadError(f"{where} must be an object", source=source, field="coflows")
        line = _line_of(text, _id_pattern(c.get("id")))
        cid = _require(c, "id", str, where, source, line)
        where = f"coflow {cid!r}"
        flows = []
        for k, f in enumerate(_require(c, "flows", list, where, source, line)):
            fw = f"{where} flows[{k}]"
            if not isinstance(f, dict):
                raise WorkloadError(f"{fw} must be an object", source=source, line=line,
                                    field="flows")
            flows.append(Flow(_require(f, "src", int, fw, source, line),
                              _require(f, "dst", int, fw, source, line),
                              _require(f, "bytes", num, fw, source, line)))
        try:
            coflows.append(Coflow(cid, tuple(flows),
                                  release=_require(c, "release", num, where, source, line, 0.0),
                                  weight=_require(c, "weight", num, where, source, line, 1.0)))
        except WorkloadError as e:
            raise e.located(source, line) from None
    arcs = doc.get("precedence", [])
    if not isinstance(arcs, list):
        raise WorkloadError(f"'precedence' must be a list of [before, after] pairs, got "
                            f"{_brief(arcs)}", source=source, line=_line_of(text, r'"precedence"'),
                            field="precedence")
    jobs = []
    for n, j in enumerate(_require(doc, "jobs", list, "top level", source,
                                   _line_of(text, r'"jobs"'), default=[])):
        where = f"jobs[{n}]"
        line = _line_of(text, _id_pattern(j.get("id")) if isinstance(j, dict) else None)
        if not isinstance(j, dict):
            raise WorkloadError(f"{where} must be an object", source=source, field="jobs")
        try:
            jobs.append(Job(_require(j, "id", str, where, source, line),
                            tuple(_require(j, "coflows", list, where, source, line)),
                            weight=_require(j, "weight", num, where, source, line, 1.0)))
        except WorkloadError as e:
            raise e.located(source, line) from None
    try:
        return Workload(fabric, tuple(coflows), tuple(tuple(a) if isinstance(a, list) else a
                                                      for a in arcs),
                        tuple(jobs), name=name or str(doc.get("name", source)))
    except WorkloadError as e:
        line = None
        dup = re.match(r"duplicate (coflow|job) id '([^']*)'", e.message)
        if dup:  # the second occurrence is the duplicate
            found = [m.start() for m in re.finditer(_id_pattern(dup.group(2)), text or "")]
            if len(found) > 1:
                line = text.count("\n", 0, found[1]) + 1
        elif e.field == "precedence":
            line = _line_of(text, r'"precedence"')
        elif e.message.startswith("job "):
            m = re.match(r"job '([^']*)'", e.message)
            line = _line_of(text, _id_pattern(m.group(1)) if m else None, r'"jobs"')
        else:
            m = re.search(r"coflow '([^']*)'", e.message)
            if m:
                line = _line_of(text, _id_pattern(m.group(1)))
        raise e.located(source, line) from None


def workload_to_dict(w: Workload) -> dict:
    """The JSON document of a workload (inverse of :func:`workload_from_dict`)."""
    fab = {"ports": w.fabric.ports, "cores": w.fabric.cores, "rate_bps": w.fabric.rate_bps}
    if w.fabric.core_rates:
        fab["core_rates"] = list(w.fabric.core_rates)
    return {
        "name": w.name, "fabric": fab,
        "coflows": [{"id": c.id, "release": c.release, "weight": c.weight,
                     "flows": [{"src": f.src, "dst": f.dst, "bytes": f.bytes} for f in c.flows]}
                    for c in w.coflows],
        "precedence": [list(a) for a in w.precedence],
        "jobs": [{"id": j.id, "weight": j.weight, "coflows": list(j.coflows)} for j in w.jobs],
    }


def write_json(w, path: str) -> None:
    """Write a workload (coflow-only or joint) in the JSON format (atomically)."""
    doc = workload_to_dict(w) if isinstance(w, Workload) else joint_to_dict(w)
    atomic_write(path, json.dumps(doc, indent=1) + "\n")


# ---------------------------------------------------------------------------- joint JSON
_WHO = re.compile(r"\b(?:task|stage|job|coflow|shuffle|machine|id) '([^']*)'")


def _number_or_list(v, where, key, source, line):
    if isinstance(v, bool) or not (isinstance(v, (int, float)) or (
            isinstance(v, list) and v and all(isinstance(x, (int, float))
                                             and not isinstance(x, bool) for x in v))):
        raise WorkloadError(f"{where}: {key!r} must be a number or a non-empty list of "
                            f"numbers, got {_brief(v)}", source=source, line=line, field=key)
    return tuple(float(x) for x in v) if isinstance(v, list) else (float(v),)


def _list_of_ids(obj, key, where, source, line, default=None):
    v = _require(obj, key, list, where, source, line, default=default)
    for x in v:
        if not isinstance(x, str):
            raise WorkloadError(f"{where}: {key!r} must list ids (strings), got {_brief(x)}",
                                source=source, line=line, field=key)
    return tuple(v)


def joint_from_dict(doc, *, source: str = "<workload>", text: str | None = None,
                    cores: int | None = None, rate_bps: float | None = None,
                    name: str | None = None):
    """Build a :class:`~controller.jobs.JointWorkload` from a parsed JSON document.

    The format (every key in ``docs/jobs.md``)::

        {"fabric": {"ports": 2, "cores": 1, "rate_bps": 1e9},
         "machines": [{"id": "m0", "capacity": [1.0]}, {"id": "m1", "capacity": 1.0}],
         "stages": [{"id": "map", "tasks": [{"id": "map0", "size": 0.5,
                                             "placement": {"m0": 2.0, "m1": 4.0},
                                             "output_bytes": 1e6}]},
                    {"id": "reduce", "tasks": [{"id": "red0", "size": 0.5,
                                                "placement": {"m0": 3.0, "m1": 3.0}}]}],
         "coflows": [{"id": "shuffle", "shuffle": true}],
         "jobs": [{"id": "j0", "weight": 2.0, "stages": ["map", "reduce"],
                   "coflows": ["shuffle"],
                   "arcs": [["map", "shuffle"], ["shuffle", "reduce"]]}]}

    ``machines[i]`` is the host on port ``i``. A coflow of a job without a ``weight`` gets
    the job's weight.

    Raises
    ------
    WorkloadError
        Naming the file, the line of the offending object (where it can be found) and
        the field.
    """
    from controller.compute.model import Machine, Stage, Task
    from controller.jobs import JointJob, JointWorkload

    num = (int, float)
    if not isinstance(doc, dict):
        raise WorkloadError("the top level must be an object with 'fabric', 'machines', "
                            "'stages', 'coflows' and 'jobs'", source=source, line=1)
    fabric = _fabric_from(doc, source, text, cores, rate_bps)

    def line_of_id(value):
        return _line_of(text, _id_pattern(value))

    def top_list(key, default=None):
        return _require(doc, key, list, "top level", source, _line_of(text, f'"{key}"'),
                        default=default)

    def need_object(obj, where, key, line):
        if not isinstance(obj, dict):
            raise WorkloadError(f"{where} must be an object", source=source, line=line,
                                field=key)

    try:
        machines = []
        for n, m in enumerate(top_list("machines")):
            need_object(m, f"machines[{n}]", "machines", _line_of(text, r'"machines"'))
            mid = m.get("id", f"m{n}")
            line = line_of_id(mid) if "id" in m else _line_of(text, r'"machines"')
            where = f"machines[{n}]"
            if not isinstance(mid, str) or not mid:
                raise WorkloadError(f"{where}: 'id' must be a non-empty string, got {_brief(mid)}",
                                    source=source, line=line, field="id")
            cap = _number_or_list(m.get("capacity", 1.0), f"machine {mid!r}", "capacity",
                                  source, line)
            speed = _speed(m["speed"], mid, source, line) if "speed" in m else None
            machines.append(Machine(mid, cap, speed))
        # jobs first: a job's coflows default to its weight
        raw_jobs = top_list("jobs")
        job_weight = {}
        for n, j in enumerate(raw_jobs):
            need_object(j, f"jobs[{n}]", "jobs", _line_of(text, r'"jobs"'))
            line = line_of_id(j.get("id"))
            w = _require(j, "weight", num, f"jobs[{n}]", source, line, 1.0)
            for cid in j.get("coflows", []) if isinstance(j.get("coflows", []), list) else []:
                if isinstance(cid, str):
                    job_weight.setdefault(cid, w)
        stages, outputs = [], {}
        for n, st in enumerate(top_list("stages")):
            need_object(st, f"stages[{n}]", "stages", _line_of(text, r'"stages"'))
            line = line_of_id(st.get("id"))
            sid = _require(st, "id", str, f"stages[{n}]", source, line)
            where = f"stage {sid!r}"
            if "after" in st:
                raise WorkloadError(f"{where}: 'after' is not a key of the joint format: give "
                                    f"precedence as job arcs [before, after]", source=source,
                                    line=line, field="after")
            tasks = []
            for k, t in enumerate(_require(st, "tasks", list, where, source, line)):
                need_object(t, f"{where} tasks[{k}]", "tasks", line)
                tline = line_of_id(t.get("id")) or line
                tid = _require(t, "id", str, f"{where} tasks[{k}]", source, tline)
                tw = f"task {tid!r}"
                table, view, work = None, (None, None), None
                if "moldable" in t:
                    table, view = _moldable(t, tid, machines, source, tline)
                if "work" in t:
                    work, view = _work(t, tid, machines, source, tline)
                size = _number_or_list(_require(t, "size", None, tw, source, tline, view[0]),
                                       tw, "size", source, tline)
                pl = _require(t, "placement", dict, tw, source, tline, view[1])
                for mid, p in pl.items():
                    if isinstance(p, bool) or not isinstance(p, num):
                        raise WorkloadError(f"{tw}: placement[{mid!r}] must be a processing "
                                            f"time in seconds, got {_brief(p)}", source=source,
                                            line=tline, field="placement")
                tasks.append(Task(tid, size, pl, _require(t, "release", num, tw, source,
                                                           tline, 0.0), table,
                                  delay=_require(t, "delay", num, tw, source, tline, 0.0),
                                  work=work,
                                  checkpoint_bytes=_require(t, "checkpoint_bytes", num, tw,
                                                            source, tline, 0.0)))
                if "output_bytes" in t:
                    outputs[tid] = _require(t, "output_bytes", num, tw, source, tline)
            stages.append(Stage(sid, tuple(tasks)))
        coflows, shuffles = [], set()
        for n, c in enumerate(top_list("coflows", [])):
            where = f"coflows[{n}]"
            need_object(c, where, "coflows", _line_of(text, r'"coflows"'))
            line = line_of_id(c.get("id"))
            cid = _require(c, "id", str, where, source, line)
            where = f"coflow {cid!r}"
            shuffle = c.get("shuffle", False)
            if not isinstance(shuffle, bool):
                raise WorkloadError(f"{where}: 'shuffle' must be true or false, got "
                                    f"{shuffle!r}", source=source, line=line, field="shuffle")
            flows = []
            if shuffle:
                if "flows" in c:
                    raise WorkloadError(f"{where} is a shuffle and lists flows; a shuffle's "
                                        f"flows are made at run time (give flows or "
                                        f"\"shuffle\": true, not both)", source=source,
                                        line=line, field="flows")
                shuffles.add(cid)
            else:
                for k, f in enumerate(_require(c, "flows", list, where, source, line)):
                    fw = f"{where} flows[{k}]"
                    need_object(f, fw, "flows", line)
                    flows.append(Flow(_require(f, "src", int, fw, source, line),
                                      _require(f, "dst", int, fw, source, line),
                                      _require(f, "bytes", num, fw, source, line)))
            coflows.append(Coflow(cid, tuple(flows),
                                  release=_require(c, "release", num, where, source, line, 0.0),
                                  weight=_require(c, "weight", num, where, source, line,
                                                  job_weight.get(cid, 1.0))))
        jobs = []
        for n, j in enumerate(raw_jobs):
            line = line_of_id(j.get("id"))
            jid = _require(j, "id", str, f"jobs[{n}]", source, line)
            where = f"job {jid!r}"
            arcs = _require(j, "arcs", list, where, source, line, [])
            for k, arc in enumerate(arcs):
                if not (isinstance(arc, list) and len(arc) == 2
                        and all(isinstance(x, str) for x in arc)):
                    raise WorkloadError(f"{where} arcs[{k}] must be a pair [before, after] of "
                                        f"stage or coflow ids, got {_brief(arc)}", source=source,
                                        line=line, field="arcs")
            prio = _require(j, "priority", int, where, source, line, 0)
            jobs.append(JointJob(jid, _list_of_ids(j, "stages", where, source, line),
                                 _list_of_ids(j, "coflows", where, source, line, []),
                                 tuple(tuple(a) for a in arcs),
                                 _require(j, "weight", num, where, source, line, 1.0), prio))
        arcs = doc.get("precedence", [])
        if not isinstance(arcs, list):
            raise WorkloadError("'precedence' must be a list of [before, after] pairs",
                                source=source, line=_line_of(text, r'"precedence"'),
                                field="precedence")
        return JointWorkload(fabric, machines, stages, coflows, jobs, shuffles=shuffles,
                             output_bytes=outputs,
                             precedence=tuple(tuple(a) if isinstance(a, list) else a
                                              for a in arcs),
                             name=name or str(doc.get("name", source)),
                             model=_require(doc, "model", str, "top level", source,
                                            _line_of(text, '"model"'), DEFAULT_MODEL))
    except WorkloadError as e:
        if e.source is not None and e.line is not None:
            raise
        m = _WHO.search(e.message)
        line = line_of_id(m.group(1)) if m else None
        if line is None and e.field in ("precedence", "machines", "stages", "coflows",
                                        "jobs"):
            line = _line_of(text, f'"{e.field}"')
        raise e.located(source, line) from None


def _moldable(t, tid, machines, source, line) -> tuple:
    """A task's ``moldable`` entry as a table ``{q: seconds}`` (a speedup model expanded
    for the workload's machines; :func:`controller.jobmodels.moldable.moldable_table`)
    and the (size, placement) it has where the task gives none."""
    from controller.jobmodels.moldable import moldable_table, packing_view
    spec = _require(t, "moldable", dict, f"task {tid!r}", source, line)
    try:
        table = moldable_table(tid, spec, len(machines))
    except WorkloadError as e:
        raise e.located(source, line) from None
    return table, packing_view(table, machines)


def _speed(spec, mid, source, line) -> dict:
    """A machine's ``speed`` entry, checked (:func:`controller.redundancy.speed.check_spec`;
    a trace file is relative to the workload file)."""
    import os

    from controller.redundancy.speed import check_spec
    base = os.path.dirname(os.path.abspath(source)) if os.path.exists(source) else None
    try:
        return check_spec(spec, mid, base)
    except WorkloadError as e:
        raise e.located(source, line) from None


def _work(t, tid, machines, source, line) -> tuple:
    """A redundancy task's ``work`` (> 0) and the (size, placement) it has where the task
    gives none: a whole machine, every machine at ``work`` seconds at rate 1."""
    w = _require(t, "work", (int, float), f"task {tid!r}", source, line)
    if isinstance(w, bool) or not (math.isfinite(w) and w > 0):
        raise WorkloadError(f"task {tid!r}: work must be a number > 0, got {w!r}",
                            source=source, line=line, field="work")
    return float(w), (1.0, {m.id: float(w) for m in machines})


def joint_to_dict(w) -> dict:
    """The JSON document of a joint workload (inverse of :func:`joint_from_dict`)."""
    fab = {"ports": w.fabric.ports, "cores": w.fabric.cores, "rate_bps": w.fabric.rate_bps}
    if w.fabric.core_rates:
        fab["core_rates"] = list(w.fabric.core_rates)

    def vec(v):
        return v[0] if len(v) == 1 else list(v)

    def task(t):
        if t.moldable is not None:     # size and placement follow from the table
            d = {"id": t.id, "moldable": {str(q): p for q, p in t.moldable.items()},
                 "release": t.release}
        elif t.work is not None:       # likewise from the work
            d = {"id": t.id, "work": t.work, "release": t.release}
        else:
            d = {"id": t.id, "size": vec(t.size), "placement": dict(t.placement),
                 "release": t.release}
        if t.delay:
            d["delay"] = t.delay
        if t.checkpoint_bytes:
            d["checkpoint_bytes"] = t.checkpoint_bytes
        if t.id in w.output_bytes:
            d["output_bytes"] = w.output_bytes[t.id]
        return d

    def coflow(c):
        d = {"id": c.id, "release": c.release, "weight": c.weight}
        if c.id in w.shuffles:
            d["shuffle"] = True
        else:
            d["flows"] = [{"src": f.src, "dst": f.dst, "bytes": f.bytes} for f in c.flows]
        return d

    doc = {
        "name": w.name, "fabric": fab,
        "machines": [{"id": m.id, "capacity": vec(m.capacity),
                      **({"speed": dict(m.speed)} if m.speed is not None else {})}
                     for m in w.machines],
        "stages": [{"id": s.id, "tasks": [task(t) for t in s.tasks]} for s in w.stages],
        "coflows": [coflow(c) for c in w.coflows],
        "precedence": [list(a) for a in w.precedence],
        "jobs": [{"id": j.id, "weight": j.weight, "priority": j.priority,
                  "stages": list(j.stages), "coflows": list(j.coflows),
                  "arcs": [list(a) for a in j.arcs]} for j in w.jobs],
    }
    if w.model != DEFAULT_MODEL:
        doc["model"] = w.model
    return doc


# ---------------------------------------------------------------------------- FB2010
def read_fb_trace(path: str, *, cores: int = 1, rate_bps: float = 2.0**30,
                  hosts: int | None = None, min_mb: float = 0.0, scale_bytes: float = 1.0,
                  scale_time: float = 1.0, zero_release: bool = False,
                  limit: int | None = None, seed: int = 0) -> Workload:
    """Read the Facebook coflow-benchmark format.

    Parameters
    ----------
    path : str
    cores, rate_bps : the fabric. The default 2^30 bit/s is what CoflowSim calls 1 Gbit/s.
    hosts : int, optional
        Remap the trace's ports onto this many hosts (port ``p`` -> a seeded random
        permutation of ports, modulo ``hosts``); flows that land on the same (src, dst)
        pair of a coflow are merged.
    min_mb : float
        Drop coflows whose total shuffle is below this many MB (0 keeps all).
    scale_bytes, scale_time : float
        Multiply every size / arrival time (finite, > 0).
    zero_release : bool
        Release every coflow at time 0 (the offline setting of the LP benchmarks).
    limit : int, optional
        Keep only the first ``limit`` coflows (>= 1).

    Raises
    ------
    WorkloadError
        With file, line and field for a malformed line; with file and the option's name
        for an option out of range. The header's ports and the flows a line expands to
        (mappers x reducers) are checked against the limits (``fabric.MAX_PORTS``,
        :data:`MAX_TRACE_FLOWS`) before anything is allocated.
    """
    _check_trace_options(path, hosts=hosts, min_mb=min_mb, scale_bytes=scale_bytes,
                         scale_time=scale_time, limit=limit, seed=seed)
    lines = read_text(path, "trace").splitlines()
    if not lines:
        raise WorkloadError("empty trace", source=path, line=1)
    head = lines[0].split()
    if len(head) != 2 or not all(re.fullmatch(r"[0-9]+", x) for x in head):
        raise WorkloadError("first line must be '<ports> <coflows>' (two integers)",
                            source=path, line=1, field="header")
    ports, declared = int(head[0]), int(head[1])
    if not 1 <= ports <= MAX_PORTS:
        raise WorkloadError(f"the trace's ports must be in 1..{MAX_PORTS}, got {head[0]}",
                            source=path, line=1, field="header")
    nhosts = hosts or ports
    perm = (np.random.default_rng(seed).permutation(ports) % nhosts if hosts
            else np.arange(ports))
    coflows = []
    seen_ids: dict[str, int] = {}
    n_flows = 0
    for ln, raw in enumerate(lines[1:], start=2):
        if not raw.strip():
            continue
        if limit is not None and len(coflows) >= limit:
            break
        tok = raw.split()

        def bad(field, msg):
            return WorkloadError(msg, source=path, line=ln, field=field)

        try:
            cid = tok[0]
            arrival = float(tok[1])
            nm = int(tok[2])
        except (IndexError, ValueError):
            raise bad("line", "expected '<id> <arrival ms> <#mappers> <ports>... "
                              "<#reducers> <port>:<MB>...'") from None
        if nm < 0:
            raise bad("mappers", f"the number of mappers must be >= 1, got {nm}")
        try:
            mappers = [int(x) for x in tok[3:3 + nm]]
        except ValueError:
            raise bad("mappers", f"mapper ports must be integers, got "
                                 f"{' '.join(tok[3:3 + nm])[:60]!r}") from None
        if len(mappers) != nm:
            raise bad("mappers", f"expected {nm} mapper ports, found {len(mappers)}")
        try:
            nr = int(tok[3 + nm])
        except IndexError:
            raise bad("reducers", "expected '<#reducers> <port>:<MB>...' after the "
                                  "mappers") from None
        except ValueError:
            raise bad("reducers", f"the number of reducers must be an integer, got "
                                  f"{tok[3 + nm]!r}") from None
        red = tok[4 + nm:]
        if len(red) != nr:
            raise bad("reducers", f"expected {nr} reducers 'port:MB', found {len(red)}")
        if not math.isfinite(arrival) or not 0 <= arrival <= MAX_SECONDS * 1000.0:
            raise bad("arrival", f"arrival must be a finite number of ms >= 0 and at most "
                                 f"{MAX_SECONDS * 1000:g}, got {tok[1]}")
        if cid in seen_ids:
            raise bad("id", f"duplicate coflow id {cid!r} (first on line {seen_ids[cid]})")
        seen_ids[cid] = ln
        if nm == 0:
            raise bad("mappers", "a coflow needs at least one mapper")
        for p in mappers:
            if not 0 <= p < ports:
                raise bad("mappers", f"mapper port {p} out of range 0..{ports - 1}")
        if n_flows + nm * nr > MAX_TRACE_FLOWS:
            raise bad("reducers", f"{nm} mappers x {nr} reducers make the trace's flows "
                                  f"more than {MAX_TRACE_FLOWS} (the limit of a trace)")
        rport = np.empty(nr, dtype=np.int64)
        rmb = np.empty(nr, dtype=np.float64)
        for k, r in enumerate(red):
            port, sep, mb = r.partition(":")
            try:
                port_i, mb_f = int(port), float(mb)
            except ValueError:
                raise bad("reducers", f"reducer {r!r} is not 'port:MB'") from None
            if not sep or not 0 <= port_i < ports:
                raise bad("reducers", f"reducer port in {r!r} out of range 0..{ports - 1}")
            if not math.isfinite(mb_f) or mb_f < 0:
                raise bad("reducers", f"negative or non-finite size in {r!r} (must be a "
                                      f"number >= 0)")
            rport[k], rmb[k] = port_i, mb_f
        total_mb = float(rmb.sum())
        if total_mb < min_mb:
            continue
        n_flows += nm * nr
        # reducer-major, mapper-minor, as the bytes are added up (float sums in one order)
        m = perm[np.asarray(mappers, dtype=np.int64)]
        key = (np.repeat(perm[rport], nm) + np.tile(m, nr) * nhosts)  # src * n + dst
        share = np.repeat(rmb * MB * scale_bytes / nm, nm)
        pair, inverse = np.unique(key, return_inverse=True)
        size = np.bincount(inverse, weights=share, minlength=len(pair))
        keep = size > 0
        release = 0.0 if zero_release else arrival / 1000.0 * scale_time
        try:
            coflows.append(Coflow.from_arrays(cid, pair[keep] // nhosts, pair[keep] % nhosts,
                                              size[keep], release=release, weight=1.0))
        except WorkloadError as e:
            raise e.located(path, ln) from None
    if limit is None and min_mb == 0 and len(coflows) != declared:
        raise WorkloadError(f"header declares {declared} coflows, found {len(coflows)}",
                            source=path, line=1, field="header")
    try:
        return Workload(Fabric(nhosts, cores, rate_bps), tuple(coflows),
                        name=path.rsplit("/", 1)[-1])
    except FabricError as e:
        raise WorkloadError(str(e), source=path, field="fabric") from None
    except WorkloadError as e:
        raise e.located(path) from None


#: the most flows a trace may expand to (mappers x reducers summed over its coflows):
#: about 3x FB2010 tiled 10 times
MAX_TRACE_FLOWS = 20_000_000


def _check_trace_options(path, *, hosts, min_mb, scale_bytes, scale_time, limit, seed):
    """The FB reader's options, each a :class:`WorkloadError` naming the file and the
    option (as the command line spells it) when out of range."""
    def fail(option, allowed, value):
        raise WorkloadError(f"--{option.replace('_', '-')} must be {allowed}, got {value!r}",
                            source=path, field=option)

    def integer(v):
        return isinstance(v, (int, np.integer)) and not isinstance(v, bool)

    def real(v):
        return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)

    if hosts is not None and not (integer(hosts) and 1 <= hosts <= MAX_PORTS):
        fail("hosts", f"an integer in 1..{MAX_PORTS}", hosts)
    if not (real(min_mb) and math.isfinite(min_mb) and min_mb >= 0):
        fail("min_mb", "a finite number >= 0", min_mb)
    for option, v in (("scale_bytes", scale_bytes), ("scale_time", scale_time)):
        if not (real(v) and math.isfinite(v) and v > 0):
            fail(option, "a finite number > 0 (--zero-release puts every arrival at 0)"
                 if option == "scale_time" else "a finite number > 0", v)
    if limit is not None and not (integer(limit) and limit >= 1):
        fail("limit", "an integer >= 1", limit)
    if not integer(seed):
        fail("seed", "an integer", seed)


def read_workload(path: str, *, cores: int | None = None, rate_bps: float | None = None,
                  **trace_options) -> Workload:
    """Read a JSON workload or a FB-benchmark trace, by content."""
    try:
        with open(path, "rb") as fh:
            first = fh.read(64).removeprefix(b"\xef\xbb\xbf").lstrip()
    except OSError as e:
        raise WorkloadError(f"cannot read workload: {e.strerror}", source=path) from None
    if first.startswith((b"{", b"[")):       # JSON (a list is refused as its top level)
        if trace_options:
            raise WorkloadError(f"options {sorted(trace_options)} apply to FB traces only",
                                source=path)
        return read_json(path, cores=cores, rate_bps=rate_bps)
    kw = dict(trace_options)
    if cores is not None:
        kw["cores"] = cores
    if rate_bps is not None:
        kw["rate_bps"] = rate_bps
    return read_fb_trace(path, **kw)


# ---------------------------------------------------------------------------- generators
def random_coflows(rng: np.random.Generator, n: int, ports: int, *, mean_bytes: float = 1e6,
                   max_width: int | None = None, arrival_rate: float | None = None,
                   weights: tuple[float, float] | None = None, prefix: str = "c"
                   ) -> list[Coflow]:
    """``n`` random coflows with FB2010-like heavy tails.

    Widths: most coflows are narrow (one or two mappers/reducers), a few are wide (a
    truncated Pareto number of mappers and reducers, at most ``max_width``). Per-reducer
    bytes are lognormal (sigma 1.5) scaled so the mean coflow carries about
    ``mean_bytes``; they are split over the mappers as in the trace. Arrivals are a Poisson
    process of ``arrival_rate`` per second (all at 0 if None); weights uniform in
    ``weights`` (all 1 if None).
    """
    max_width = max_width or ports
    out = []
    t = 0.0
    for k in range(n):
        wide = rng.random() < 0.3
        nm = int(min(max_width, 1 + rng.pareto(1.2) * (3 if wide else 0.3)))
        nr = int(min(max_width, 1 + rng.pareto(1.2) * (3 if wide else 0.3)))
        mappers = rng.choice(ports, size=min(nm, ports), replace=False)
        reducers = rng.choice(ports, size=min(nr, ports), replace=False)
        per_red = rng.lognormal(mean=0.0, sigma=1.5, size=len(reducers))
        per_red *= mean_bytes / (math.exp(1.5**2 / 2) * 2.0)
        demand = defaultdict(float)
        for r, b in zip(reducers, per_red):
            for m in mappers:
                demand[(int(m), int(r))] += max(1.0, round(b / len(mappers)))
        if arrival_rate:
            t += rng.exponential(1.0 / arrival_rate)
        w = 1.0 if weights is None else float(rng.uniform(*weights))
        out.append(Coflow(f"{prefix}{k}", tuple(Flow(s, d, b) for (s, d), b in
                                               sorted(demand.items())),
                          release=round(t, 9), weight=round(w, 6)))
    return out


def random_dag(rng: np.random.Generator, ids: list[str], chi: int, *,
               extra_arcs: float = 0.3) -> list[tuple[str, str]]:
    """Random precedence arcs over ``ids`` whose longest path has exactly ``chi`` coflows.

    Coflows are dealt to ``chi`` levels (each non-empty); every coflow of level ``l > 0``
    gets an arc from a random coflow of level ``l - 1``, plus a share ``extra_arcs`` of
    random forward arcs between lower and higher levels.
    """
    n = len(ids)
    if not 1 <= chi <= max(1, n):
        raise ValueError(f"chi must be in 1..{n}, got {chi}")
    if n == 0:
        return []
    level = np.concatenate([np.arange(chi), rng.integers(0, chi, size=n - chi)])
    rng.shuffle(level)
    by_level = [[ids[i] for i in np.flatnonzero(level == l)] for l in range(chi)]
    arcs = set()
    for l in range(1, chi):
        for c in by_level[l]:
            arcs.add((by_level[l - 1][rng.integers(len(by_level[l - 1]))], c))
    for _ in range(int(extra_arcs * n)):
        a, b = sorted(rng.choice(chi, size=2, replace=chi < 2)) if chi > 1 else (0, 0)
        if a < b:
            arcs.add((by_level[a][rng.integers(len(by_level[a]))],
                      by_level[b][rng.integers(len(by_level[b]))]))
    return sorted(arcs)


def random_workload(seed: int = 0, *, ports: int = 8, cores: int = 2, coflows: int = 20,
                    rate_bps: float = 1e9, mean_bytes: float = 2e6,
                    arrival_rate: float | None = None, chi: int = 1,
                    weights: tuple[float, float] | None = (1.0, 10.0),
                    max_width: int | None = None, name: str | None = None) -> Workload:
    """A seeded synthetic workload: heavy-tailed coflows, optional arrivals and DAG.

    ``arrival_rate`` defaults to a load near 0.7 of the fabric's capacity.
    """
    rng = np.random.default_rng(seed)
    fabric = Fabric(ports, cores, rate_bps)
    if arrival_rate is None:
        capacity = ports * cores * rate_bps / 8.0
        arrival_rate = 0.7 * capacity / mean_bytes
    cfs = random_coflows(rng, coflows, ports, mean_bytes=mean_bytes, max_width=max_width,
                         arrival_rate=arrival_rate, weights=weights)
    arcs = random_dag(rng, [c.id for c in cfs], chi) if chi > 1 else []
    return Workload(fabric, tuple(cfs), tuple(arcs),
                    name=name or f"random-s{seed}-p{ports}-m{cores}-n{coflows}-chi{chi}")


def multi_stage_jobs(seed: int = 0, *, ports: int = 8, cores: int = 2, jobs: int = 5,
                     stages: tuple[int, int] = (2, 4), rate_bps: float = 1e9,
                     mean_bytes: float = 1e6, arrival_rate: float = 5.0,
                     name: str | None = None) -> Workload:
    """Multi-stage jobs: each job a chain-like DAG of 2-4 shuffles (coflows).

    Each job arrives at a Poisson time; its coflows share the arrival as release; stage
    ``s + 1`` depends on stage ``s`` (and sometimes on ``s - 1`` too). Job weights are
    uniform in [1, 10].
    """
    rng = np.random.default_rng(seed)
    cfs, arcs, js = [], [], []
    t = 0.0
    for g in range(jobs):
        t += rng.exponential(1.0 / arrival_rate)
        k = int(rng.integers(stages[0], stages[1] + 1))
        stage_cfs = random_coflows(rng, k, ports, mean_bytes=mean_bytes, prefix=f"j{g}s")
        stage_cfs = [Coflow(c.id, c.flows, release=round(t, 9), weight=1.0) for c in stage_cfs]
        for s in range(1, k):
            arcs.append((stage_cfs[s - 1].id, stage_cfs[s].id))
            if s >= 2 and rng.random() < 0.3:
                arcs.append((stage_cfs[s - 2].id, stage_cfs[s].id))
        cfs.extend(stage_cfs)
        js.append(Job(f"j{g}", tuple(c.id for c in stage_cfs),
                      weight=round(float(rng.uniform(1, 10)), 6)))
    return Workload(Fabric(ports, cores, rate_bps), tuple(cfs), tuple(arcs), tuple(js),
                    name=name or f"jobs-s{seed}-p{ports}-m{cores}-j{jobs}")
