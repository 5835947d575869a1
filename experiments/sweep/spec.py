"""Sweep specs: a TOML file that names the runs of an experiment as a cross product.

A *sweep* is every combination of workloads x fabrics x policies x engines that a spec
lists; each combination is a :class:`Run`, one task of the runner
(:mod:`experiments.sweep.runner`), keyed by a hash of its full parameters and the code
version (:func:`code_version`). The schema (``docs/sweeps.md`` has the manual)::

    name = "demo"                 # the sweep's name: its partition in the results store
    engines = ["sim"]             # sim | mininet (root; one emulation per machine) |
                                  # direct (the policy's algorithm on the instance)
    bounds = ["auto"]             # LP bounds every run reports ("none": no bound)

    [[workloads]]                 # a generator kind (emulate/io/generators.py) ...
    kind = "coflows"
    seeds = [0, 1, 2]             # or a count: seeds = 3 means 0, 1, 2
    params = { coflows = 30, load = [0.5, 0.9] }     # a list is swept

    [[workloads]]                 # ... or a file (JSON workload or FB trace)
    file = "w.json"               # relative to the spec's folder
    options = { limit = 100 }     # FB trace options (hosts, min_mb, limit, ...)

    [[fabrics]]                   # generated workloads: the fabric they are made for;
    ports = 8                     # files: cores and rate override the file's own
    cores = [1, 2]
    rate = "1Gbps"

    [[policies]]
    specs = ["fifo", "sebf", "lp-coflow"]    # names, module:Class, compute+network
    mode = ["offline", "online"]             # any other key: a policy option, swept

Every list is swept (a scalar is a list of one); every group of ``workloads``,
``fabrics`` and ``policies`` is crossed with the others. Errors name the file and the key
path (``policies[1].specs``) and say what is allowed.

Examples
--------
>>> s = parse_spec({"name": "t", "workloads": [{"kind": "coflows", "seeds": 2,
...                 "params": {"coflows": [4, 8]}}],
...                 "policies": [{"specs": ["fifo", "sebf"]}]}, source="t.toml")
>>> len(s.runs())
8
>>> sorted({r.policy for r in s.runs()})
['fifo', 'sebf']
"""
from __future__ import annotations

import hashlib
import itertools
import json
import os
import tomllib
from dataclasses import dataclass, field
from functools import lru_cache

#: keys a ``[[policies]]`` group takes besides its options
_POLICY_KEYS = ("specs",)
#: LP bounds a spec may ask for (experiments.sweep.execute.lower_bound computes them)
BOUNDS = ("auto", "none", "flow", "coflow", "single", "lp1", "lp2", "lp3", "moldable",
          "makespan", "cls", "task")
#: fabric defaults for generated workloads (those of ``coflowemu generate``)
DEFAULT_FABRIC = {"ports": 8, "cores": 2, "rate": "1Gbps"}


class SpecError(ValueError):
    """A spec that cannot be read or expanded: file, key path and what is allowed."""

    def __init__(self, message: str, *, source: str | None = None, path: str | None = None,
                 line: int | None = None):
        self.message, self.source, self.path, self.line = message, source, path, line
        super().__init__(str(self))

    def __str__(self) -> str:
        where = f"{self.source}:" if self.source else ""
        where += f"{self.line}:" if self.line is not None else ""
        where += f" {self.path}:" if self.path else ""
        return f"{where} {self.message}".strip()


@dataclass(frozen=True)
class Run:
    """One run of a sweep: what to run, where, under which policy; its key and version.

    ``workload`` is ``{"kind", "seed", "params"}`` or ``{"file", "sha256", "options"}``;
    ``fabric`` is ``{"ports", "cores", "rate_bps"}`` (``None`` values: the file's own).
    """

    sweep: str
    workload: dict
    fabric: dict
    policy: str
    options: dict
    engine: str
    bounds: tuple
    code_version: str
    part: str | None = None
    key: str = field(default="", compare=False)

    def params(self) -> dict:
        """Everything that determines the run's result (what its key hashes)."""
        out = {"sweep": self.sweep, "workload": self.workload, "fabric": self.fabric,
               "policy": self.policy, "options": self.options, "engine": self.engine,
               "bounds": list(self.bounds), "code_version": self.code_version}
        if self.part is not None:
            out["part"] = self.part
        return out

    @property
    def label(self) -> str:
        """A short human name: ``coflows(load=0.5)/s1 8x2@1e+09 sim sebf{mode=online}``."""
        w = self.workload
        if "kind" in w:
            p = ",".join(f"{k}={v}" for k, v in sorted(w["params"].items()))
            what = f"{w['kind']}({p})/s{w['seed']}"
        else:
            what = os.path.basename(w["file"])
        f = self.fabric
        fab = "x".join(str(f[k]) if f[k] is not None else "-" for k in ("ports", "cores"))
        rate = f"@{f['rate_bps']:g}" if f["rate_bps"] is not None else ""
        opts = ("{" + ",".join(f"{k}={v}" for k, v in sorted(self.options.items())) + "}"
                if self.options else "")
        part = f"[{self.part}] " if self.part is not None else ""
        return f"{part}{what} {fab}{rate} {self.engine} {self.policy}{opts}"


def canonical(d: dict) -> str:
    """``d`` as canonical JSON (sorted keys): how a run's workload and fabric are passed
    to the cached builders of :mod:`experiments.sweep.execute`."""
    return json.dumps(d, sort_keys=True)


def run_key(params: dict) -> str:
    """The hash (16 hex digits of SHA-256) of a run's parameters, in canonical JSON."""
    text = json.dumps(params, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Part:
    """One cross product of a spec (a spec without ``[[parts]]`` has one, unnamed)."""

    name: str | None
    engines: tuple
    bounds: tuple
    workloads: tuple
    fabrics: tuple
    policies: tuple


@dataclass(frozen=True)
class Spec:
    """A parsed spec; :meth:`runs` expands it."""

    name: str
    source: str | None
    parts: tuple

    def runs(self, version: str | None = None) -> list[Run]:
        """Every run of the cross product(s), in spec order, each with its key."""
        version = code_version() if version is None else version
        out = []
        for part in self.parts:
            for w, f, (pol, opts), eng in itertools.product(
                    _expand_workloads(part.workloads), _expand_fabrics(part.fabrics),
                    _expand_policies(part.policies), part.engines):
                r = Run(self.name, w, _fabric_for(w, f), pol, opts, eng, part.bounds,
                        version, part.name)
                out.append(Run(**{**r.__dict__, "key": run_key(r.params())}))
        return out


# ------------------------------------------------------------------------------ reading
def read_spec(path: str) -> Spec:
    """Read a TOML spec; relative workload files are resolved against its folder."""
    return parse_spec(read_doc(path), source=path)


def read_doc(path: str) -> dict:
    """A spec file's document (the TOML as a dict, not yet validated: for a program that
    changes a shipped spec, e.g. its seeds, before :func:`parse_spec`)."""
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except OSError as e:
        raise SpecError(f"cannot read spec: {e.strerror}", source=path) from None
    except tomllib.TOMLDecodeError as e:
        raise SpecError(f"not valid TOML: {e}", source=path) from None


def parse_spec(doc: dict, *, source: str | None = None) -> Spec:
    """Validate a spec document (the TOML as a dict) into a :class:`Spec`."""
    base = os.path.dirname(os.path.abspath(source)) if source else os.getcwd()

    def err(msg, path=None):
        return SpecError(msg, source=source, path=path)

    known = {"name", "engines", "bounds", "workloads", "fabrics", "policies", "description",
             "parts"}
    for k in doc:
        if k not in known:
            raise err(f"unknown key; a spec has {', '.join(sorted(known))}", k)
    name = doc.get("name")
    if not isinstance(name, str) or not name or any(c in name for c in "/\\=\0"):
        raise err("the sweep's name: a non-empty string without / \\ or =", "name")
    if "parts" not in doc:
        return Spec(name, source, (_part(doc, None, {}, "", base, err),))
    parts = _tables(doc, "parts", err, required=True)
    names = []
    for i, p in enumerate(parts):
        pname = p.get("name")
        if not isinstance(pname, str) or not pname or pname in names:
            raise err("each part needs a name of its own (a non-empty string)",
                      f"parts[{i}].name")
        names.append(pname)
        for k in p:
            if k not in known - {"parts", "description"}:
                raise err("unknown key; a part has name, engines, bounds, workloads, "
                          "fabrics, policies", f"parts[{i}].{k}")
    return Spec(name, source, tuple(
        _part({**{k: v for k, v in doc.items() if k != "parts"}, **p}, p["name"], p,
              f"parts[{i}].", base, err) for i, p in enumerate(parts)))


def _part(doc: dict, name: str | None, own: dict, at_: str, base: str, err) -> Part:
    """One cross product: ``doc``'s engines, bounds, workloads, fabrics and policies
    (``own``: the part's own keys, whose errors name the path ``at_ + key``)."""
    at = {k: (at_ if k in own else "") for k in
          ("engines", "bounds", "workloads", "fabrics", "policies")}
    eng = _strings(doc.get("engines", ["sim"]), at["engines"] + "engines", err)
    for i, e in enumerate(eng):
        if e not in sweep_engines():
            raise err(f"unknown engine {e!r}; known: {', '.join(sweep_engines())}",
                      f"{at['engines']}engines[{i}]")
    bounds = _strings(doc.get("bounds", ["auto"]), at["bounds"] + "bounds", err)
    for i, b in enumerate(bounds):
        if b not in BOUNDS:
            raise err(f"unknown bound {b!r}; known: {', '.join(BOUNDS)}",
                      f"{at['bounds']}bounds[{i}]")
    bounds = tuple(b for b in bounds if b != "none")
    workloads = tuple(_workload(w, f"{at['workloads']}workloads[{i}]", base, err)
                      for i, w in enumerate(_tables(doc, "workloads", err, required=True,
                                                    at=at["workloads"])))
    fabrics = tuple(_fabric(f, f"{at['fabrics']}fabrics[{i}]", err)
                    for i, f in enumerate(_tables(doc, "fabrics", err, at=at["fabrics"])))
    policies = tuple(_policy(p, f"{at['policies']}policies[{i}]", err)
                     for i, p in enumerate(_tables(doc, "policies", err, required=True,
                                                   at=at["policies"])))
    return Part(name, eng, bounds, workloads, fabrics or ({},), policies)


def sweep_engines() -> tuple:
    """The engines a spec may name: the registered ones (:mod:`emulate.engines`) and
    ``direct`` (the policy's algorithm on the instance: :mod:`experiments.sweep.direct`)."""
    from emulate.engines import engines
    from experiments.sweep.direct import DIRECT
    return (*engines(), DIRECT)


def emulated(engine: str) -> bool:
    """Whether ``engine`` is an emulation (root, one per machine: every engine but the
    simulator and the direct runs)."""
    from experiments.sweep.direct import DIRECT
    return engine not in ("sim", DIRECT)


def _tables(doc, key, err, required=False, at="") -> list:
    v = doc.get(key, [])
    if isinstance(v, dict):
        v = [v]
    if not isinstance(v, list) or not all(isinstance(t, dict) for t in v):
        raise err("a table or an array of tables ([[" + key + "]])", at + key)
    if required and not v:
        raise err(f"at least one [[{key}]] group is needed", at + key)
    return v


def _strings(v, path, err) -> tuple:
    v = _list(v)
    if not v or not all(isinstance(x, str) and x for x in v):
        raise err("a non-empty string or list of strings", path)
    return tuple(v)


def _list(v) -> list:
    return list(v) if isinstance(v, list) else [v]


def _workload(t: dict, path: str, base: str, err) -> dict:
    from emulate.io.generators import kinds, params_of
    if ("kind" in t) == ("file" in t):
        raise err("give either kind = \"...\" (a generator) or file = \"...\"", path)
    if "kind" in t:
        for k in t:
            if k not in ("kind", "seeds", "params"):
                raise err(f"unknown key {k!r}; a generated workload has kind, seeds, params",
                          f"{path}.{k}")
        kind = t["kind"]
        if kind not in kinds():
            raise err(f"unknown kind {kind!r}; known: {', '.join(kinds())}", f"{path}.kind")
        seeds = t.get("seeds", [0])
        if isinstance(seeds, int) and not isinstance(seeds, bool):
            if seeds < 1:
                raise err("a count >= 1 or a list of integer seeds", f"{path}.seeds")
            seeds = list(range(seeds))
        if not isinstance(seeds, list) or not seeds or not all(
                isinstance(s, int) and not isinstance(s, bool) for s in seeds):
            raise err("a count >= 1 or a list of integer seeds", f"{path}.seeds")
        params = t.get("params", {})
        if not isinstance(params, dict):
            raise err("a table of generator parameters", f"{path}.params")
        known = params_of(kind)
        for k in params:
            if k not in known:
                raise err(f"kind {kind} has no parameter {k!r}; its parameters: "
                          f"{', '.join(known) or 'none'}", f"{path}.params.{k}")
        return {"kind": kind, "seeds": tuple(seeds),
                "params": {k: tuple(_list(v)) for k, v in params.items()}}
    for k in t:
        if k not in ("file", "options"):
            raise err(f"unknown key {k!r}; a file workload has file, options", f"{path}.{k}")
    f = t["file"]
    if not isinstance(f, str) or not f:
        raise err("a path (relative to the spec's folder)", f"{path}.file")
    full = f if os.path.isabs(f) else os.path.normpath(os.path.join(base, f))
    if not os.path.isfile(full):
        raise err(f"no such file: {full}", f"{path}.file")
    opts = t.get("options", {})
    if not isinstance(opts, dict):
        raise err("a table of trace options", f"{path}.options")
    trace_opts = ("hosts", "min_mb", "scale_bytes", "scale_time", "zero_release", "limit")
    for k in opts:
        if k not in trace_opts:
            raise err(f"unknown option {k!r}; trace options: {', '.join(trace_opts)}",
                      f"{path}.options.{k}")
    return {"file": full, "sha256": _file_hash(full),
            "options": {k: tuple(_list(v)) for k, v in opts.items()}}


def _fabric(t: dict, path: str, err) -> dict:
    from emulate.io.units import UnitError, parse_rate
    out = {}
    for k, v in t.items():
        if k not in ("ports", "cores", "rate"):
            raise err(f"unknown key {k!r}; a fabric has ports, cores, rate", f"{path}.{k}")
        vals = _list(v)
        for i, x in enumerate(vals):
            where = f"{path}.{k}" + (f"[{i}]" if isinstance(v, list) else "")
            if k == "rate":
                try:
                    vals[i] = parse_rate(x)
                except (UnitError, TypeError) as e:
                    raise err(str(e), where) from None
            elif not isinstance(x, int) or isinstance(x, bool) or x < 1:
                raise err("an integer >= 1 (or a list of them)", where)
        out[k] = tuple(vals)
    return out


def _policy(t: dict, path: str, err) -> dict:
    if "specs" not in t:
        raise err("missing key 'specs': the policies of this group (names, "
                  "module:Class, compute+network)", path)
    specs = _strings(t["specs"], f"{path}.specs", err)
    options = {k: tuple(_list(v)) for k, v in t.items() if k not in _POLICY_KEYS}
    for k, v in options.items():
        if not v:
            raise err("an option value or a non-empty list of them", f"{path}.{k}")
    return {"specs": specs, "options": options}


# ------------------------------------------------------------------------------ expansion
def _product(d: dict) -> list[dict]:
    keys = sorted(d)
    return [dict(zip(keys, vals)) for vals in itertools.product(*(d[k] for k in keys))]


def _expand_workloads(groups) -> list[dict]:
    out = []
    for g in groups:
        if "kind" in g:
            out += [{"kind": g["kind"], "seed": s, "params": p}
                    for p in _product(g["params"]) for s in g["seeds"]]
        else:
            out += [{"file": g["file"], "sha256": g["sha256"], "options": o}
                    for o in _product(g["options"])]
    return out


def _expand_fabrics(groups) -> list[dict]:
    return [p for g in groups for p in _product(g)]


def _expand_policies(groups) -> list[tuple]:
    return [(s, o) for g in groups for s in g["specs"] for o in _product(g["options"])]


def _fabric_for(workload: dict, f: dict) -> dict:
    """The run's fabric: generated workloads get the defaults for what ``f`` omits; files
    keep their own (``None``)."""
    from emulate.io.units import parse_rate
    if "kind" in workload:
        d = {**DEFAULT_FABRIC, "rate": parse_rate(DEFAULT_FABRIC["rate"]), **f}
    else:
        d = {"ports": None, "cores": None, "rate": None, **f}
    return {"ports": d["ports"], "cores": d["cores"],
            "rate_bps": float(d["rate"]) if d["rate"] is not None else None}


# ------------------------------------------------------------------------------ versions
def _file_hash(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


@lru_cache(maxsize=1)
def code_version() -> str:
    """``<package version>+<12 hex digits>``: the version in setup.py's metadata and a
    SHA-256 over the source tree (every ``.py`` file of topologies/, controller/,
    emulate/ and experiments/, by relative path and content). Any change to the code a
    run executes gives new keys, so a re-run sweep runs again; a checkout of the same
    tree gives the same keys (no git needed: workers may have none)."""
    from importlib.metadata import PackageNotFoundError, version
    try:
        v = version("coflowemu")
    except PackageNotFoundError:  # pragma: no cover - run from a plain checkout
        v = "0"
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    h = hashlib.sha256()
    for pkg in ("topologies", "controller", "emulate", "experiments"):
        files = []
        for d, dirs, names in os.walk(os.path.join(root, pkg)):
            dirs[:] = sorted(x for x in dirs if x != "__pycache__")
            files += [os.path.join(d, n) for n in names if n.endswith(".py")]
        for p in sorted(files):
            h.update(os.path.relpath(p, root).encode() + b"\0")
            with open(p, "rb") as fh:
                h.update(fh.read() + b"\0")
    return f"{v}+{h.hexdigest()[:12]}"
