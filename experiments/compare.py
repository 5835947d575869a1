"""Comparing policies on one workload: a sweep of one workload, its table from the store.

``coflowemu compare`` and ``coflowemu demo`` are sweeps (:func:`comparison_spec`): one
workload (a file with its trace options, or a generator kind), its fabric, the policies
(each with its own options, e.g. ``mode`` for the LP policies), one engine or two, the LP
bound ``auto`` (what ``coflowemu run`` reports). :func:`compare` runs them with the
sweep runner in this process (``run_sweep(workers=0)``: the same
:func:`~experiments.sweep.execute.execute` per run as on Dask, no cluster to start for a
dozen runs) into a results store, each run's rows written as it finishes, and reads
them back (:func:`comparison`) into a :class:`Comparison`: one :class:`Row` per policy,
the plain-text table, the JSON document, the CCTs for the CDF plot. ``coflowemu results
OUT`` queries the same store.

The LP ratio is taken on the CCT basis (:func:`experiments.sweep.execute.lp_ratio`):
``(sum w C - sum w r) / (LP - sum w r)``, because with trace arrival times the release
times dominate absolute completion times and would push every ratio towards 1.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: the spec name of ``coflowemu compare``'s runs in the store
SWEEP = "compare"


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


@dataclass
class Comparison:
    """The runs of one workload on one engine, one :class:`Row` per policy (spec order),
    and every policy's CCTs (``series``: coflows in the order of their ids)."""

    workload: str
    engine: str
    lp_bound: float | None
    rows: list[Row]
    series: dict
    coflows: int
    cores: int

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
                     f"{self.engine}; {self.coflows} coflows, {self.cores} core(s))")
        return "\n".join(lines)

    def to_json(self) -> dict:
        return {"workload": self.workload, "engine": self.engine,
                "lp_lower_bound": self.lp_bound, "rows": [r.__dict__ for r in self.rows]}


class ComparisonError(RuntimeError):
    """Some runs of a comparison failed (each recorded in the store with its error)."""


def comparison_spec(workload: dict, policies: list[str], *, options: dict | None = None,
                    fabric: dict | None = None, engines=("sim",), bound: bool = True,
                    name: str = SWEEP, source: str | None = None):
    """The sweep spec of a comparison: ``workload`` a spec's workload table (``{"file":
    ..., "options": {...}}`` or ``{"kind": ..., "seeds": [s], "params": {...}}``),
    ``options[policy]`` each policy's options (one policy group each), ``fabric`` a
    spec's fabric table, the bound ``auto`` or none."""
    from experiments.sweep.spec import parse_spec
    options = options or {}
    return parse_spec({"name": name, "engines": list(engines),
                       "bounds": ["auto" if bound else "none"], "workloads": [workload],
                       "fabrics": [fabric] if fabric else [],
                       "policies": [{"specs": [p], **options.get(p, {})} for p in policies]},
                      source=source)


def compare(spec, out: str, *, rerun: bool = True, progress: bool | None = None) -> dict:
    """Run ``spec``'s runs in this process into the store ``out`` (``rerun``: every run
    again; else the runs already recorded are read back) and return one
    :class:`Comparison` per engine, in the spec's order. ``progress`` None: a progress
    bar when stderr is a terminal.

    Raises
    ------
    ComparisonError
        A run failed; the message has one line per failed run (label: error).
    """
    from experiments.sweep.runner import run_sweep
    from experiments.sweep.store import open_results
    import sys
    if progress is None:
        progress = sys.stderr.isatty()
    report = run_sweep(spec, out, workers=0, rerun=rerun, progress=progress)
    if report.failed:
        raise ComparisonError("\n".join(f"{label}: {err}" for label, _, err in report.failed))
    db = open_results(out)
    return {e: comparison(db, spec, e) for e in dict.fromkeys(r.engine for r in spec.runs())}


def comparison(db, spec, engine: str = "sim") -> Comparison:
    """The :class:`Comparison` of ``spec``'s runs on ``engine`` recorded in the store
    ``db`` (the current code version's: what :func:`compare` just ran or read back)."""
    from experiments.sweep.store import spec_rows
    runs = spec_rows(db, spec, exact=True)
    runs = runs[(runs["engine"] == engine) & (runs["status"] == "ok")]
    keys = list(runs["run_key"])
    cof = db.sql("select run_key, cct, weight from coflows where run_key in "
                 "(select unnest($k)) order by run_key, id", params={"k": keys}).df()
    cof = {k: g for k, g in cof.groupby("run_key")}
    rows, series = [], {}
    for r in runs.to_dict("records"):
        c = cof[r["run_key"]]
        rows.append(Row(r["policy"], r["mean_ct"], r["p50_ct"], r["p95_ct"], r["p99_ct"],
                        r["sum_wc"], float(np.dot(c["weight"], c["cct"])),
                        _none(r["ratio"]), r["wall_seconds"]))
        series[r["policy"]] = c["cct"].to_numpy()
    first = runs.iloc[0]
    return Comparison(first["workload"], engine, _none(first["lp_bound"]), rows, series,
                      int(first["n_items"]), int(first["cores"]))


def _none(v):
    return None if v is None or (isinstance(v, float) and np.isnan(v)) else float(v)
