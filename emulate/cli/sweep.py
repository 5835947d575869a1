"""Command-line commands of sweeps: ``sweep`` (run a spec on Dask) and ``results``.

``emulate.cli`` adds :func:`commands` to ``coflowemu``. The work is done in
:mod:`experiments.sweep` (imported inside the commands, as ``compare`` does, so that
``coflowemu --help`` stays fast and Dask is loaded only by the commands that use it).

Examples
--------
::

    coflowemu sweep experiments/specs/coflow.toml --out results/sweeps
    coflowemu sweep spec.toml --out results/sweeps --scheduler tcp://127.0.0.1:8786
    coflowemu results results/sweeps                   # summary table + plots
    coflowemu results results/sweeps --sql "select policy, avg(ratio) from runs group by 1"
    coflowemu results results/sweeps --import results/run-sebf.json --sweep old
"""
from __future__ import annotations

import json
import math
import os
import sys

import click


def _fail(msg: str, code: int = 2):
    click.echo(f"coflowemu: error: {msg}", err=True)
    sys.exit(code)


@click.command()
@click.argument("spec", type=click.Path(dir_okay=False))
@click.option("--out", "out", type=click.Path(file_okay=False), required=True,
              help="The results store (Parquet files; created).")
@click.option("--scheduler", metavar="ADDRESS",
              help="A running Dask scheduler (tcp://host:port); default: a local cluster "
                   "on 127.0.0.1.")
@click.option("--workers", type=click.IntRange(min=0),
              help="Local cluster: worker processes (default: one per core); 0: no "
                   "Dask, the runs one after the other in this process.")
@click.option("--retry-failed", is_flag=True, help="Run again the runs recorded as failed.")
@click.option("--dry-run", is_flag=True, help="List the runs (and which are recorded); run none.")
@click.option("--progress/--no-progress", default=True, show_default=True,
              help="Progress bar on stderr.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON object.")
def sweep(spec, out, scheduler, workers, retry_failed, dry_run, progress, as_json):
    """Run every run of the sweep SPEC (TOML; docs/sweeps.md) not yet recorded in OUT.

    Runs execute as Dask tasks; each run's rows are written to OUT as it completes, so an
    interrupted sweep continues where it stopped when run again."""
    from experiments.sweep.runner import SweepError, run_sweep
    from experiments.sweep.spec import SpecError, read_spec
    from experiments.sweep.store import recorded
    try:
        s = read_spec(spec)
        if dry_run:
            have = recorded(out, s.name)
            runs = [{"run_key": r.key, "label": r.label, "recorded": have.get(r.key)}
                    for r in s.runs()]
            if as_json:
                click.echo(json.dumps({"sweep": s.name, "runs": runs}))
            else:
                for r in runs:
                    click.echo(f"{r['run_key']} {r['recorded'] or '-':<6} {r['label']}")
            return
        report = run_sweep(s, out, scheduler=scheduler, workers=workers,
                           progress=progress and not as_json, retry_failed=retry_failed)
    except SpecError as e:
        _fail(str(e))
    except SweepError as e:
        _fail(str(e), 2 if e.setup else 1)
    except KeyboardInterrupt:
        _fail(f"interrupted; the runs written to {out} are complete: run the same command "
              f"to continue", 130)
    click.echo(json.dumps(report.to_json()) if as_json else report.format())


@click.command()
@click.argument("store", type=click.Path(file_okay=False))
@click.option("--sql", help="A DuckDB query over the views runs, coflows, jobs, tasks.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@click.option("--plots", "plots_dir", type=click.Path(file_okay=False),
              help="Where the plots go.  [default: STORE/plots]")
@click.option("--no-plots", is_flag=True, help="Print the summary only.")
@click.option("--import", "imports", multiple=True, type=click.Path(dir_okay=False),
              help="Import a per-run JSON record (coflowemu run --json, compare's "
                   "run-*.json) into STORE first (repeat).")
@click.option("--sweep", "sweep_name", default="imported", show_default=True,
              help="--import: the sweep the records go to.")
def results(store, sql, as_json, plots_dir, no_plots, imports, sweep_name):
    """Summarise the results store STORE (or query it with --sql); write the plots."""
    import duckdb

    from experiments.sweep.report import failures, format_summary, summary, write_plots
    from experiments.sweep.store import StoreError, import_records, open_results
    try:
        if imports:
            keys = import_records(list(imports), store, sweep_name)
            if not as_json:
                click.echo(f"imported {len(keys)} record(s) into sweep {sweep_name}",
                           err=True)
        db = open_results(store)
        if sql:
            try:
                rel = db.sql(sql)
            except duckdb.Error as e:
                _fail(f"--sql: {' '.join(str(e).split())}")
            if rel is None:
                _fail("--sql: the statement returned no rows (use a query: select ...)")
            cols, rows = rel.columns, rel.fetchall()
            if as_json:
                click.echo(json.dumps({"columns": cols,
                                       "rows": [[_json(v) for v in r] for r in rows]}))
            else:
                click.echo(_table(cols, rows))
            return
        rows, fails = summary(db), failures(db)
        plots = [] if no_plots else write_plots(db, plots_dir or os.path.join(store, "plots"))
    except StoreError as e:
        _fail(str(e))
    if as_json:
        click.echo(json.dumps({"summary": rows, "failed": fails, "plots": plots},
                              default=_json))
    else:
        click.echo(format_summary(rows, fails))
        if plots:
            click.echo(f"plots: {', '.join(plots)}")


def _json(v):
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, (int, float, str, bool)) or v is None:
        return v
    if hasattr(v, "item"):
        return _json(v.item())
    return str(v)


def _table(cols, rows) -> str:
    cells = [[str(c) for c in cols]] + [["NULL" if v is None else
                                         (f"{v:.6g}" if isinstance(v, float) else str(v))
                                         for v in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(cols))]
    lines = ["  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def commands() -> list:
    return [sweep, results]
