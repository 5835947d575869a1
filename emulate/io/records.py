"""Run records: what an engine reports about one run of a workload under a policy.

Every engine (the simulator, the Mininet emulation) returns a :class:`RunResult`: absolute
completion times per flow and per coflow (seconds), optionally the *segments* (every
interval during which a flow sent at a constant rate on one core), and wall-clock time.
:meth:`RunResult.to_json` gives the JSON schema of ``coflowemu run --json`` and
:meth:`RunResult.write_segments` the JSON lines of ``--segments``; both engines share them.

The coflow completion time (CCT) of a coflow is ``completion - release``. Runs kept
for later (``compare``, ``demo``, sweeps) go to a results store, keyed by their
parameters and the code version: :mod:`experiments.sweep`.
"""
from __future__ import annotations

import json
import os
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
