"""A paper's experiment as a sweep: its shipped spec run into a store, its tables from it.

Each paper module (``experiments/packing.py``, ``moldable.py``, ``msjo.py``,
``redundancy.py``) is a :class:`Paper`: the spec ``experiments/specs/<name>.toml``, a
function from the results store to the paper's tables (markdown: what the generic
summary of ``coflowemu results`` cannot say, e.g. ratios of sums over runs, CDF
fractions), optionally a plot and a smaller ``--quick`` version of the spec. Its
``python -m`` entry point is :func:`main`::

    python -m experiments.moldable [--out results/sweeps] [--quick]
                                   [--workers N | --scheduler ADDRESS] [--tables-only]

which runs the spec with the sweep runner (resumable: recorded runs are skipped), prints
the tables and writes them to ``<out>/tables/<name>.md`` (plots to
``<out>/plots/<name>.png``). ``--tables-only`` runs nothing: the tables of what the store
holds, each run's row of the current code version or, if none, its latest recorded one
(:func:`~experiments.sweep.store.ok_rows`; the tables name the code versions); a store
without the spec's runs, or with a run's detail rows missing, is one error line, exit 2.
``coflowemu sweep experiments/specs/<name>.toml --out DIR`` runs the same runs.
"""
from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from typing import Callable

SPECS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "specs")


@dataclass(frozen=True)
class Paper:
    """A paper's experiment: ``name`` (its spec's file name without ``.toml``),
    ``tables(db, spec) -> markdown``, ``quick(doc) -> doc`` (the spec made small),
    ``plot(db, spec, path)``."""

    name: str
    tables: Callable
    quick: Callable | None = None
    plot: Callable | None = None

    @property
    def path(self) -> str:
        return os.path.join(SPECS, f"{self.name}.toml")

    def spec(self, quick: bool = False):
        """The shipped spec (``quick``: its small version, sweep ``<name>-quick``)."""
        from experiments.sweep.spec import parse_spec, read_doc
        doc = read_doc(self.path)
        if quick and self.quick:
            doc = self.quick(doc)
            doc["name"] = f"{doc['name']}-quick"
        return parse_spec(doc, source=self.path)


def main(paper: Paper, argv=None) -> str:
    """The ``python -m experiments.<name>`` command (module docstring); the tables."""
    ap = argparse.ArgumentParser(description=f"{paper.name}: run experiments/specs/"
                                             f"{paper.name}.toml, print its tables")
    ap.add_argument("--out", default="results/sweeps", help="the results store")
    ap.add_argument("--quick", action="store_true", help="a small version of the spec")
    ap.add_argument("--workers", type=int, help="local Dask workers (default: one per "
                                                "core; 0: in this process)")
    ap.add_argument("--scheduler", help="a running Dask scheduler (tcp://host:port)")
    ap.add_argument("--tables-only", action="store_true",
                    help="run nothing; the tables of what the store holds")
    args = ap.parse_args(argv)
    from experiments.sweep.store import StoreError, open_results
    spec = paper.spec(args.quick)
    try:
        if args.tables_only:
            db = open_results(args.out)
        else:
            from experiments.sweep.runner import completed_sweep
            db = completed_sweep(spec, args.out, workers=args.workers,
                                 scheduler=args.scheduler)
        text = paper.tables(db, spec)
    except StoreError as e:
        ap.exit(2, f"error: {e}\n")
    from emulate.io.records import atomic_write
    atomic_write(os.path.join(args.out, "tables", f"{spec.name}.md"), text + "\n")
    if paper.plot:
        paper.plot(db, spec, os.path.join(args.out, "plots", f"{spec.name}.png"))
    print(text)
    return text


def markdown(head: list, rows: list) -> str:
    """A markdown table: ``head`` cells, then one line per row of cells (``str``-ed)."""
    lines = ["| " + " | ".join(map(str, head)) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(map(str, r)) + " |" for r in rows]
    return "\n".join(lines)


def versions(rows) -> str:
    """One line naming the code versions ``rows`` (a frame of runs) were recorded with."""
    v = sorted(set(rows["code_version"]))
    return f"code version{'s' if len(v) > 1 else ''} {', '.join(v)}"


def against_simulator(db, spec, engine: str = "mininet"):
    """Per recorded ok run of ``spec`` on ``engine`` whose simulator twin (the same run
    with engine ``sim``) is recorded too: its row (a dict) with ``sim_sum_wc`` and the
    per-job error ``|T_engine / T_sim - 1|`` (``T`` = completion - release; job ids
    matched): ``job_errors`` (every job's, in id order), ``job_error_median``,
    ``job_error_max``. A list, in the spec's order."""
    import numpy as np

    from experiments.sweep.spec import canonical
    from experiments.sweep.store import spec_rows
    runs = spec.runs()
    rows = spec_rows(db, spec)
    rows = {int(r["spec_index"]): r for r in rows.to_dict("records") if r["status"] == "ok"}

    def twin_of(r):
        return (r.part, canonical(r.workload), canonical(r.fabric), r.policy,
                canonical(r.options))
    sim = {twin_of(r): i for i, r in enumerate(runs) if r.engine == "sim" and i in rows}
    pairs = [(rows[i], rows[sim[twin_of(r)]]) for i, r in enumerate(runs)
             if r.engine == engine and i in rows and twin_of(r) in sim]
    keys = [k for e, s in pairs for k in (e["run_key"], s["run_key"])]
    jobs = db.sql("select run_key, id, jct from jobs where run_key in (select unnest($k)) "
                  "order by run_key, id", params={"k": keys}).df()
    jct = {k: g.set_index("id")["jct"] for k, g in jobs.groupby("run_key")}
    out = []
    for e, s in pairs:
        te, ts = jct[e["run_key"]], jct[s["run_key"]]
        err = np.abs(te / ts.loc[te.index] - 1).to_numpy()
        out.append({**e, "sim_sum_wc": s["sum_wc"], "job_errors": err.tolist(),
                    "job_error_median": float(np.median(err)),
                    "job_error_max": float(err.max())})
    return out
