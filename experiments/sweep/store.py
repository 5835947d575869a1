"""The results store: Parquet files, one per run and table, queried with DuckDB.

Layout of a store ``DIR`` (Hive partitioning by sweep)::

    DIR/runs/sweep=<name>/<run key>.parquet      one row: parameters, status, metrics
    DIR/coflows/sweep=<name>/<run key>.parquet   one row per coflow (id, release, cct, ...)
    DIR/jobs/sweep=<name>/<run key>.parquet      one row per job (release, completion, jct)
    DIR/tasks/sweep=<name>/<run key>.parquet     one row per task (stage, machine, start, end)

Every file is written under a temporary name and renamed into place, and a run's detail
files are written before its run file: a run is *recorded* when its run file exists, so
an interrupted sweep (Ctrl-C, a killed scheduler or client) leaves only complete runs, and
the views below only show detail rows of recorded runs. Re-writing a run replaces its
files (nothing is ever appended), so a run is never counted twice.

:func:`open_results` gives a DuckDB connection with the views ``runs``, ``coflows``,
``jobs`` and ``tasks`` (``sweep`` is a column of each); ``.df()`` on a query gives a
pandas frame. :func:`import_records` turns the per-run JSON records that ``coflowemu run
--json`` prints and ``coflowemu compare`` writes (``emulate/io/records.py``,
``experiments/compare.py``) into the same rows.

Examples
--------
::

    from experiments.sweep.store import open_results
    db = open_results("results/sweep")
    db.sql("select policy, avg(ratio) from runs group by policy").df()
"""
from __future__ import annotations

import glob
import hashlib
import json
import os
import tempfile

TABLES = ("runs", "coflows", "jobs", "tasks")
#: a file being written (never matched by the ``*.parquet`` the readers look for)
TMP_PREFIX, TMP_SUFFIX = ".tmp-", ".partial"


class StoreError(ValueError):
    """A store that cannot be read (no such folder, no runs) or a bad record to import."""


def _dir(out: str, table: str, sweep: str) -> str:
    return os.path.join(out, table, f"sweep={sweep}")


def write_outcome(out: str, sweep: str, outcome) -> str:
    """Write one run's rows (details first, the run row last, with ``recorded_at``: the
    Unix time it was written); the run file's path."""
    import time
    key = outcome.run["run_key"]
    for table in TABLES[1:]:
        rows = getattr(outcome, table)
        path = os.path.join(_dir(out, table, sweep), f"{key}.parquet")
        if _length(rows):
            _write_rows(path, rows)
        elif os.path.exists(path):      # a re-run with fewer tables: no stale rows
            os.unlink(path)
    path = os.path.join(_dir(out, "runs", sweep), f"{key}.parquet")
    _write_rows(path, [{**outcome.run, "recorded_at": time.time()}])
    return path


def _length(rows) -> int:
    """Rows in a table given as a list of dicts or a dict of columns."""
    if isinstance(rows, dict):
        return len(next(iter(rows.values()))) if rows else 0
    return len(rows)


def _write_rows(path: str, rows) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq
    table = pa.Table.from_pydict(rows) if isinstance(rows, dict) else pa.Table.from_pylist(rows)
    d = os.path.dirname(path)
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=d, prefix=TMP_PREFIX, suffix=TMP_SUFFIX)
    os.close(fd)
    try:
        pq.write_table(table, tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def remove_partial(out: str, sweep: str) -> int:
    """Remove the temporary files an interrupted writer left for ``sweep``; how many."""
    n = 0
    for table in TABLES:
        for p in glob.glob(os.path.join(_dir(out, table, sweep), f"{TMP_PREFIX}*{TMP_SUFFIX}"),
                           include_hidden=True):
            os.unlink(p)
            n += 1
    return n


def recorded(out: str, sweep: str) -> dict[str, str]:
    """Run key -> status of every run recorded for ``sweep`` in ``out``."""
    import pyarrow.parquet as pq
    got = {}
    for p in glob.glob(os.path.join(_dir(out, "runs", sweep), "*.parquet")):
        try:
            t = pq.read_table(p, columns=["run_key", "status"])
        except Exception:  # noqa: BLE001 - an unreadable file is not a record
            continue
        for k, s in zip(t.column("run_key").to_pylist(), t.column("status").to_pylist()):
            got[k] = s
    return got


def open_results(out: str):
    """A DuckDB connection (in memory) with views ``runs``, ``coflows``, ``jobs``,
    ``tasks`` over the store ``out``; tables without files are empty views."""
    import duckdb
    if not os.path.isdir(os.path.join(out, "runs")):
        raise StoreError(f"{out}: no results store here (no runs/ folder; run `coflowemu "
                         f"sweep SPEC --out {out}` first)")
    db = duckdb.connect()
    for table in TABLES:
        pattern = os.path.join(out, table, "*", "*.parquet")
        if not glob.glob(pattern):
            if table == "runs":
                raise StoreError(f"{out}: no runs recorded yet")
            cols = ", ".join(f"null::{t} as {c}" for c, t in _EMPTY[table])
            db.execute(f"create view {table} as select {cols} where false")
            continue
        src = (f"read_parquet({_sql_str(pattern)}, hive_partitioning = true, "
               f"union_by_name = true)")
        if table == "runs":
            db.execute(f"create view runs as select * from {src}")
        else:   # detail rows of recorded runs only
            db.execute(f"create view {table} as select * from {src} "
                       f"where run_key in (select run_key from runs)")
    return db


def spec_rows(db, spec, *, exact: bool = False):
    """The recorded rows of ``spec``'s runs (a pandas frame in the spec's run order, one
    row per run at most, failed runs included; ``spec_index``: the run's position in
    ``spec.runs()``): with ``exact``, the runs of the current
    code version only (what a sweep just ran); otherwise, per run, the row of the current
    code version if there is one, else the most recently recorded row of the same
    parameters under another version (a paper's table from a long sweep that an unrelated
    edit would otherwise discard; ``code_version`` says which)."""
    from experiments.sweep.spec import run_key
    runs = spec.runs()
    rows = db.sql("select * from runs where sweep = $s", params={"s": spec.name}).df()
    current = {r.key: i for i, r in enumerate(runs)}
    if exact:
        rows = rows[rows["run_key"].isin(current)]
        order = rows["run_key"].map(current)
    else:
        def unversioned(params: dict) -> str:
            return run_key({k: v for k, v in params.items() if k != "code_version"})
        want = {unversioned(r.params()): i for i, r in enumerate(runs)}
        order = rows["params"].map(lambda p: want.get(unversioned(json.loads(p))))
        rows = rows[order.notna()].assign(
            _order=order[order.notna()].astype(int),
            _current=rows["run_key"].isin(current),
            _at=rows["recorded_at"] if "recorded_at" in rows else 0.0)
        rows = rows.sort_values(["_current", "_at"]).drop_duplicates("_order", keep="last")
        order = rows.pop("_order")
        rows = rows.drop(columns=["_current", "_at"])
    return rows.assign(spec_index=order.astype(int)).sort_values("spec_index") \
        .reset_index(drop=True)


def ok_rows(db, spec):
    """The rows of ``spec``'s runs that a table may be made of: :func:`spec_rows`'s ok
    runs, each checked against its detail rows (as many per-item rows, jobs or coflows
    by its ``objective``, as its ``n_items``).

    Raises
    ------
    StoreError
        No ok run of ``spec`` recorded, or a run's detail rows missing or extra (a store
        put together by hand, files lost): one line naming the sweep and the run.
    """
    rows = spec_rows(db, spec)
    rows = rows[rows["status"] == "ok"]
    if rows.empty:
        raise StoreError(f"the store holds no completed run of sweep {spec.name!r} "
                         f"(run the spec without --tables-only first)")
    counts = {}
    for table, objectives in (("jobs", ("jobs", "tasks")), ("coflows", ("coflows",))):
        keys = list(rows.loc[rows["objective"].isin(objectives), "run_key"])
        if keys:
            counts.update(db.sql(f"select run_key, count(*) from {table} where run_key in "
                                 f"(select unnest($k)) group by 1",
                                 params={"k": keys}).fetchall())
    for key, want, objective in zip(rows["run_key"], rows["n_items"], rows["objective"]):
        got = counts.get(key, 0)
        if got != want:
            table = "coflows" if objective == "coflows" else "jobs"
            raise StoreError(f"sweep {spec.name!r}, run {key}: {got} rows in {table}, its "
                             f"run row says {int(want)}: the store is damaged (re-run "
                             f"the run: delete its runs/ file and run the spec again)")
    return rows


#: the columns of a detail table that has no file yet (an empty view, same schema)
_EMPTY = {
    "coflows": [("run_key", "varchar"), ("id", "varchar"), ("release", "double"),
                ("completion", "double"), ("cct", "double"), ("weight", "double"),
                ("sweep", "varchar")],
    "jobs": [("run_key", "varchar"), ("id", "varchar"), ("weight", "double"),
             ("release", "double"), ("completion", "double"), ("jct", "double"),
             ("sweep", "varchar")],
    "tasks": [("run_key", "varchar"), ("id", "varchar"), ("stage", "varchar"),
              ("job", "varchar"), ("machine", "varchar"), ("start", "double"),
              ("end", "double"), ("preemptions", "bigint"), ("sweep", "varchar")],
}


def _sql_str(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def import_records(paths: list[str], out: str, sweep: str) -> list[str]:
    """Import per-run JSON records into ``out`` under ``sweep``; the run keys written.

    A record's key is the hash of its content (importing it twice writes it once)."""
    from experiments.sweep.execute import Outcome, outcome_of_record
    keys = []
    for path in paths:
        try:
            with open(path) as fh:
                text = fh.read()
            doc = json.loads(text)
        except OSError as e:
            raise StoreError(f"{path}: cannot read: {e.strerror}") from None
        except json.JSONDecodeError as e:
            raise StoreError(f"{path}:{e.lineno}: not JSON: {e.msg}") from None
        if not isinstance(doc, dict) or "policy" not in doc or (
                "coflows" not in doc and "jobs" not in doc):
            raise StoreError(f"{path}: not a run record (a `coflowemu run --json` object "
                             f"with policy and coflows or jobs)")
        key = hashlib.sha256(text.encode()).hexdigest()[:16]
        joint = "total_weighted_job_completion" in doc and "tasks" in doc
        try:
            o = outcome_of_record(doc, key, joint=joint)
        except (KeyError, TypeError, ValueError) as e:
            raise StoreError(f"{path}: record field {e} missing or malformed") from None
        o.run.update({"run_key": key, "status": "ok", "error": None,
                      "engine": doc.get("engine", "sim"), "policy": doc["policy"],
                      "label": f"{doc.get('workload')} {doc['policy']}",
                      "file": os.path.abspath(path), "code_version": "imported",
                      "params": json.dumps({"imported": os.path.abspath(path)}),
                      "lp_name": doc.get("lp") or ("auto" if doc.get("lp_lower_bound")
                                                   is not None else None)})
        write_outcome(out, sweep, Outcome(o.run, o.coflows, o.jobs, o.tasks))
        keys.append(key)
    return keys
