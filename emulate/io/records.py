"""Run records: what an engine reports about one run of a workload under a policy.

Every engine (the simulator, the Mininet emulation) returns a :class:`RunResult`: absolute
completion times per flow and per coflow (seconds), optionally the *segments* (every
interval during which a flow sent at a constant rate on one core), and wall-clock time.
:meth:`RunResult.to_json` gives the JSON schema of ``coflowemu run --json`` and
:meth:`RunResult.write_segments` the JSON lines of ``--segments``; both engines share them.

The coflow completion time (CCT) of a coflow is ``completion - release``.

A record written for later reuse (``compare --resume``) carries its :func:`run_key`:
every parameter that shapes the run (the workload's content digest, the fabric, the
policy and its options, the engine and its options, the time scale, the code version).
:meth:`RunResult.from_json` reads a record back only when its key equals the key of the
run it would stand for, so a record of another fabric, policy option or code version is
run again rather than silently reused.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import sys
import tempfile
from dataclasses import dataclass, field

import numpy as np

from controller.model import Workload


@dataclass
class Segments:
    """Parallel arrays, one entry per constant-rate interval of a flow."""

    flow: np.ndarray
    core: np.ndarray
    start: np.ndarray
    end: np.ndarray
    rate_bps: np.ndarray

    def __len__(self) -> int:
        return len(self.flow)

    @classmethod
    def empty(cls) -> "Segments":
        z = np.zeros(0)
        return cls(z.astype(np.int64), z.astype(np.int64), z, z.copy(), z.copy())

    def sorted(self) -> "Segments":
        o = np.lexsort((self.flow, self.start))
        return Segments(self.flow[o], self.core[o], self.start[o], self.end[o], self.rate_bps[o])


@dataclass
class RunResult:
    """The record of one run. Times are absolute seconds from the workload's time 0."""

    workload: Workload
    policy: str
    engine: str
    flow_completion: np.ndarray
    coflow_completion: np.ndarray
    segments: Segments | None = None
    wall_seconds: float = 0.0
    events: int = 0
    extra: dict = field(default_factory=dict)

    # ------------------------------------------------------------------ metrics
    @property
    def cct(self) -> np.ndarray:
        """Coflow completion times (completion - release), seconds, per coflow."""
        return self.coflow_completion - self.workload.arrays.release

    @property
    def total_weighted_completion(self) -> float:
        """Sum over coflows of weight x absolute completion time."""
        return float(np.dot(self.workload.arrays.weight, self.coflow_completion))

    @property
    def total_weighted_cct(self) -> float:
        """Sum over coflows of weight x (completion - release)."""
        return float(np.dot(self.workload.arrays.weight, self.cct))

    @property
    def incomplete(self) -> bool:
        """The run failed before every coflow finished (their completion is nan)."""
        return bool(self.extra.get("incomplete")) or bool(
            np.isnan(self.coflow_completion).any())

    @property
    def makespan(self) -> float:
        return float(self.coflow_completion.max()) if len(self.coflow_completion) else 0.0

    @property
    def job_completion(self) -> np.ndarray:
        """Per job: completion of its last coflow."""
        a = self.workload.arrays
        out = np.zeros(len(self.workload.jobs))
        for g in range(len(out)):
            out[g] = self.coflow_completion[a.job_of == g].max()
        return out

    @property
    def total_weighted_job_completion(self) -> float:
        return float(np.dot(self.workload.arrays.job_weight, self.job_completion))

    # ------------------------------------------------------------------ output
    def to_json(self, lp_lower_bound: float | None = None) -> dict:
        """The ``coflowemu run --json`` object."""
        w = self.workload
        out = {
            "policy": self.policy,
            "engine": self.engine,
            "workload": w.name,
            "cores": w.fabric.cores,
            "ports": w.fabric.ports,
            "rate_bps": list(w.fabric.rates),
            "total_weighted_completion": self.total_weighted_completion,
            "total_weighted_cct": self.total_weighted_cct,
            "makespan": self.makespan,
            "lp_lower_bound": lp_lower_bound,
            "wall_seconds": self.wall_seconds,
            "coflows": [
                {"id": c.id, "release": c.release, "completion": float(done),
                 "cct": float(done - c.release), "weight": c.weight}
                for c, done in zip(w.coflows, self.coflow_completion)],
        }
        if w.jobs:
            out["total_weighted_job_completion"] = self.total_weighted_job_completion
            out["jobs"] = [{"id": j.id, "weight": j.weight, "completion": float(done)}
                           for j, done in zip(w.jobs, self.job_completion)]
        out.update(self.extra)
        if self.incomplete:
            # what finished, with null for what did not (NaN is not JSON); no totals
            out["incomplete"] = True
            out["finished_coflows"] = int(np.isfinite(self.coflow_completion).sum())
            for k in ("total_weighted_completion", "total_weighted_cct", "makespan",
                      "total_weighted_job_completion"):
                if k in out:
                    out[k] = None
            for c in out["coflows"] + out.get("jobs", []):
                if c["completion"] != c["completion"]:
                    c["completion"] = None
                    if "cct" in c:
                        c["cct"] = None
        return out

    @classmethod
    def from_json(cls, workload: Workload, doc: dict, key: dict | None = None) -> "RunResult":
        """A record read back from :meth:`to_json` output (completions only, no segments).

        With ``key`` (a :func:`run_key`), the record's own ``run_key`` must equal it.
        Raises ``ValueError`` if the document is not a run of ``workload`` (or not the run
        ``key`` describes; the message names the first parameter that differs).
        """
        ids = [c.id for c in workload.coflows]
        got = [c["id"] for c in doc.get("coflows", [])]
        if got != ids or doc.get("workload") != workload.name:
            raise ValueError(f"record of {doc.get('workload')!r} does not match workload "
                             f"{workload.name!r}")
        if key is not None:
            differs = key_difference(doc.get("run_key"), key)
            if differs:
                raise ValueError(f"record of another run: {differs}")
        if doc.get("incomplete"):
            raise ValueError("record of an incomplete run")
        completion = np.array([c["completion"] for c in doc["coflows"]], dtype=np.float64)
        return cls(workload=workload, policy=doc["policy"], engine=doc.get("engine", "sim"),
                   flow_completion=np.full(workload.arrays.n_flows, np.nan),
                   coflow_completion=completion, wall_seconds=doc.get("wall_seconds", 0.0))

    def write_segments(self, path: str) -> int:
        """Write the segments as JSON lines (atomically); returns how many."""
        if self.segments is None:
            raise ValueError("this run recorded no segments (run with segments=True)")
        a = self.workload.arrays
        ids = [c.id for c in self.workload.coflows]
        s = self.segments.sorted()
        lines = [json.dumps({"coflow": ids[a.coflow[f]], "src": int(a.src[f]),
                             "dst": int(a.dst[f]), "core": int(h), "start": float(t0),
                             "end": float(t1), "rate_bps": float(r)})
                 for f, h, t0, t1, r in zip(s.flow, s.core, s.start, s.end, s.rate_bps)]
        atomic_write(path, "\n".join(lines) + ("\n" if lines else ""))
        return len(lines)


def atomic_write(path: str, text: str) -> None:
    """Write ``text`` to ``path`` so that readers see the old or the new file, never half
    (with the mode a plain ``open`` gives under the umask, not mkstemp's 0600)."""
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-", suffix=os.path.basename(path))
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


class RowLog:
    """An experiment's rows, rewritten atomically to a JSON file ``{"meta", "rows"}`` after
    every append: an interrupted experiment keeps every row it finished."""

    def __init__(self, path: str, meta: dict):
        self.path, self.meta, self.rows = path, meta, []

    def add(self, row: dict | None = None, **fields) -> None:
        self.rows.append({**(row or {}), **fields})
        atomic_write(self.path, json.dumps({"meta": self.meta, "rows": self.rows}, indent=1))


# ---------------------------------------------------------------------- run keys
def workload_digest(workload) -> str:
    """SHA-256 of everything in a workload that shapes a run (not just its name).

    Fabric (ports, cores, per-core rates), every coflow (id, release, weight, flows in
    order), precedence arcs and jobs. A joint workload (machines, stages, tasks) is
    digested from its canonical pickle-free description: ``repr`` of its frozen dataclasses.
    """
    h = hashlib.sha256()
    if not isinstance(workload, Workload):
        # a JointWorkload: its network part, and the rest through its frozen dataclasses'
        # repr (arrays printed in full)
        h.update(workload_digest(workload.network).encode())
        with np.printoptions(threshold=sys.maxsize):
            h.update(repr(workload).encode())
        return h.hexdigest()
    f = workload.fabric
    h.update(json.dumps({"ports": f.ports, "cores": f.cores, "rates": list(f.rates)},
                        sort_keys=True).encode())
    a = workload.arrays
    for arr in (a.src, a.dst, a.coflow, a.size, a.release, a.weight):
        h.update(np.ascontiguousarray(arr, dtype=np.float64).tobytes())
    h.update(json.dumps([[c.id for c in workload.coflows], list(workload.precedence),
                         [[j.id, list(j.coflows), j.weight] for j in workload.jobs]]
                        ).encode())
    return h.hexdigest()


@functools.lru_cache(maxsize=1)
def code_version() -> str:
    """The package version and a digest of its Python sources (any edit changes it)."""
    try:
        from importlib.metadata import version
        v = version("coflowemu")
    except Exception:  # noqa: BLE001 - not installed (a bare checkout)
        v = "unknown"
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    h = hashlib.sha256()
    for pkg in ("controller", "emulate", "topologies"):
        for d, dirs, files in sorted(os.walk(os.path.join(root, pkg))):
            dirs.sort()
            for name in sorted(files):
                if name.endswith(".py"):
                    path = os.path.join(d, name)
                    h.update(os.path.relpath(path, root).encode())
                    with open(path, "rb") as fh:
                        h.update(fh.read())
    return f"{v}+{h.hexdigest()[:16]}"


def run_key(workload, policy: str, engine: str, *, policy_options: dict | None = None,
            time_scale: float = 1.0, engine_options: dict | None = None) -> dict:
    """Every parameter that shapes a run, as a JSON object (see the module docstring)."""
    f = workload.fabric
    key = {"workload": workload.name, "workload_digest": workload_digest(workload),
           "ports": f.ports, "cores": f.cores, "rates_bps": list(f.rates),
           "policy": policy, "policy_options": dict(policy_options or {}),
           "engine": engine, "time_scale": float(time_scale),
           "engine_options": dict(engine_options or {}), "code_version": code_version()}
    # as it reads back from a file (tuples become lists, keys strings)
    return json.loads(json.dumps(key, sort_keys=True, default=str))


def key_difference(recorded, wanted: dict) -> str | None:
    """None when ``recorded`` equals ``wanted``; else which parameter differs, in words."""
    if not isinstance(recorded, dict):
        return "it has no run key (written by an older version)"
    for name in sorted(set(recorded) | set(wanted)):
        if recorded.get(name) != wanted.get(name):
            return f"{name} was {recorded.get(name)!r}, this run has {wanted.get(name)!r}"
    return None
