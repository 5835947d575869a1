"""Comparing policies on one workload: CCT statistics, weighted completion, LP ratio.

:func:`compare` runs every policy on the same workload and engine and returns a
:class:`Comparison` (one :class:`Row` per policy). Each run's record is written to
``out_dir`` as soon as it finishes (atomically), so an interrupted sweep loses nothing.

The LP ratio is taken on the CCT basis:
``(sum w C - sum w r) / (LP - sum w r)``, because with trace arrival times the release
times dominate absolute completion times and would push every ratio towards 1.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass

import numpy as np

from controller.model import Workload
from emulate.engines import EngineError, RunOptions, get_engine
from emulate.io.records import RunResult, atomic_write, run_key


@dataclass
class Row:
    """One policy's line of the comparison table (times in seconds)."""

    policy: str
    mean_cct: float
    p50_cct: float
    p95_cct: float
    p99_cct: float
    total_weighted_completion: float
    total_weighted_cct: float
    lp_ratio: float | None
    wall_seconds: float

    @classmethod
    def of(cls, run: RunResult, lp: float | None) -> "Row":
        cct = run.cct
        w = run.workload.arrays
        ratio = lp_ratio(run.total_weighted_completion, w.weight, w.release, lp)
        q = np.percentile(cct, [50, 95, 99]) if len(cct) else [0.0] * 3
        return cls(run.policy, float(cct.mean()) if len(cct) else 0.0, float(q[0]),
                   float(q[1]), float(q[2]), run.total_weighted_completion,
                   run.total_weighted_cct, ratio, run.wall_seconds)


def lp_ratio(total_weighted_completion: float, weight, release, lp: float | None
             ) -> float | None:
    """The ratio to the LP bound on the CCT basis, ``(sum w C - sum w r) / (LP - sum w
    r)``; None without a bound (or when the bound is no more than ``sum w r``)."""
    wr = float(np.dot(weight, release))
    if lp is None or lp - wr <= 0:
        return None
    return (total_weighted_completion - wr) / (lp - wr)


@dataclass
class Comparison:
    workload: Workload
    engine: str
    lp_bound: float | None
    rows: list[Row]
    runs: list[RunResult]

    def table(self) -> str:
        """A plain-text table, one line per policy."""
        head = (f"{'policy':<14}{'mean CCT':>11}{'p50':>11}{'p95':>11}{'p99':>11}"
                f"{'sum w*C':>14}{'ratio LP':>10}{'wall s':>8}")
        lines = [head, "-" * len(head)]
        for r in self.rows:
            ratio = f"{r.lp_ratio:.3f}" if r.lp_ratio is not None else "-"
            lines.append(f"{r.policy:<14}{r.mean_cct:>11.4g}{r.p50_cct:>11.4g}"
                         f"{r.p95_cct:>11.4g}{r.p99_cct:>11.4g}"
                         f"{r.total_weighted_completion:>14.6g}{ratio:>10}"
                         f"{r.wall_seconds:>8.2f}")
        lb = f"{self.lp_bound:.6g}" if self.lp_bound is not None else "not computed"
        lines.append(f"LP lower bound on sum w*C: {lb}   (CCT times in seconds; engine "
                     f"{self.engine}; {len(self.workload.coflows)} coflows, "
                     f"{self.workload.fabric.cores} core(s))")
        return "\n".join(lines)

    def to_json(self) -> dict:
        return {"workload": self.workload.name, "engine": self.engine,
                "lp_lower_bound": self.lp_bound,
                "rows": [r.__dict__ for r in self.rows]}


def compare(workload: Workload, policies: list[str], *, engine: str = "sim",
            lp_bound: float | None = None, out_dir: str | None = None,
            progress: bool = False, options_for=None, resume: bool = False,
            time_scale: float = 1.0) -> Comparison:
    """Run every policy on ``workload``; write each record to ``out_dir`` as it finishes.

    ``options_for(name) -> dict`` gives per-policy options (e.g. ``mode``). With
    ``resume``, a policy whose record is already in ``out_dir`` is read back instead of
    run again (so a long sweep can be continued, or split over processes) - only when the
    record's :func:`~emulate.io.records.run_key` equals this run's (same workload content,
    fabric, policy options, engine, time scale, code version); any other record is run
    again and overwritten.
    """
    rows, runs = [], []
    for spec in policies:
        path = os.path.join(out_dir, f"run-{_safe(spec)}.json") if out_dir else None
        opts = dict(options_for(spec) or {}) if options_for else {}
        options = RunOptions(progress=progress, policy_options=opts,
                             time_scale=time_scale)
        key = run_key(workload, spec, engine, policy_options=opts, time_scale=time_scale,
                      engine_options=options.engine_options)
        run = _load_record(workload, path, key) if resume and path else None
        if run is None:
            try:
                run = get_engine(engine).run(workload, spec, options)
            except EngineError as e:
                if path and e.partial is not None:   # keep what finished, marked incomplete
                    doc = e.partial.to_json(lp_bound)
                    doc["run_key"] = key
                    atomic_write(path, json.dumps(doc, indent=1))
                raise
            if path:
                doc = run.to_json(lp_bound)
                doc["run_key"] = key
                atomic_write(path, json.dumps(doc, indent=1))
        runs.append(run)
        rows.append(Row.of(run, lp_bound))
    return Comparison(workload, engine, lp_bound, rows, runs)


def _load_record(workload: Workload, path: str, key: dict) -> RunResult | None:
    try:
        with open(path) as fh:
            return RunResult.from_json(workload, json.load(fh), key)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)
