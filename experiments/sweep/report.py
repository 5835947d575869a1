"""The summary of a results store: one line per setting, confidence intervals over seeds.

A *setting* is a group of recorded runs that differ only in their seed: same sweep,
workload kind and parameters (or file), fabric, engine, policy and policy options. Per
setting, :func:`summary` gives the runs and failures, the mean completion time (CCT of
coflows, or job completion time ``C_j - r_j`` on joint workloads: ``objective``), the
50th / 95th / 99th percentiles over every coflow (job) of the setting's runs, the mean
total weighted completion ``sum w C`` and the mean ratio to the LP bound with its 95 %
confidence interval over seeds (Student's t; none from one seed).

:func:`write_plots` draws, per sweep, the CDFs of completion times (one figure per
workload setting, one line per engine / policy; a line of more than 2,000 points through
2,000 quantiles) and, for every numeric parameter the
sweep varies other than the seed, the ratio to the LP bound against it (mean over the
other parameters, error bars: the 95 % interval), written atomically.
"""
from __future__ import annotations

import math
import os
import re

import numpy as np
import pandas as pd

#: columns that name a setting besides the parameter columns (p_, o_, fabric_, opt_)
_SETTING = ("sweep", "part", "kind", "file", "engine", "policy")
_PARAM = ("p_", "o_", "fabric_", "opt_")


def setting_columns(frame) -> list[str]:
    """The columns of ``runs`` that define a setting (everything swept but the seed)."""
    return [c for c in frame.columns if c in _SETTING or c.startswith(_PARAM)]


def _ci95(values: np.ndarray) -> float | None:
    v = values[~np.isnan(values)]
    if len(v) < 2:
        return None
    from scipy.stats import t
    return float(t.ppf(0.975, len(v) - 1) * v.std(ddof=1) / math.sqrt(len(v)))


def _label(row, cols) -> str:
    parts = []
    for c in cols:
        v = row[c]
        if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)):
            continue        # a parameter of another sweep of the store (or not given)
        name = re.sub(r"^(p_|o_|opt_|fabric_)", "", c)
        if c == "file":
            v = os.path.basename(str(v))
        parts.append(f"{v}" if c in ("policy", "engine", "kind", "file", "sweep", "part")
                     else f"{name}={v:g}" if isinstance(v, float) else f"{name}={v}")
    return " ".join(parts)


#: per recorded ok run, its completion times (CCTs, or job times ``C_j - r_j``)
_ITEMS = """
    select c.run_key, c.cct as t from coflows c join runs r using (run_key)
      where r.status = 'ok' and r.objective = 'coflows'
    union all
    select j.run_key, j.jct as t from jobs j join runs r using (run_key)
      where r.status = 'ok' and r.objective <> 'coflows'
"""
#: a CDF line of more points than this is drawn through this many quantiles
CDF_POINTS = 2000


def _items(db) -> str:
    """The name of a temporary table of :data:`_ITEMS` (made once per connection: every
    query of a summary or of the plots reads it instead of every Parquet file again)."""
    if not db.sql("select 1 from duckdb_tables() where table_name = '_items'").fetchall():
        db.execute(f"create temp table _items as {_ITEMS}")
    return "_items"


def _pooled_quantiles(db, groups: dict, qs: list) -> dict:
    """``{group: [quantile of every item of its runs, per q in qs]}`` for ``groups``
    (group -> run keys), computed by DuckDB (a store may hold millions of job rows)."""
    import pandas as pd
    pairs = pd.DataFrame([(g, k) for g, keys in groups.items() for k in keys],
                         columns=["grp", "run_key"])
    if pairs.empty:
        return {}
    db.register("_groups", pairs)
    try:
        got = db.sql(f"select g.grp, quantile_cont(i.t, $q), count(*) from {_items(db)} i "
                     f"join _groups g using (run_key) group by 1",
                     params={"q": list(qs)}).fetchall()
    finally:
        db.unregister("_groups")
    return {g: q for g, q, _ in got}


def _series(db, keys) -> np.ndarray:
    """The completion times of the runs ``keys``, or :data:`CDF_POINTS` quantiles of
    them when there are more."""
    (n,), = db.sql(f"select count(*) from {_items(db)} where run_key in (select unnest($k))",
                   params={"k": list(keys)}).fetchall()
    if n > CDF_POINTS:
        qs = ((np.arange(CDF_POINTS) + 0.5) / CDF_POINTS).tolist()
        return np.asarray(_pooled_quantiles(db, {0: list(keys)}, qs)[0])
    return db.sql(f"select t from {_items(db)} where run_key in (select unnest($k))",
                  params={"k": list(keys)}).df()["t"].to_numpy()


def summary(db) -> list[dict]:
    """One dict per setting (see the module doc), sweeps and settings in order."""
    runs = db.sql("select * from runs").df()
    if runs.empty:
        return []
    cols = setting_columns(runs)
    keys = runs[cols].apply(lambda r: "\x1f".join(map(str, r)), axis=1)
    runs = runs.assign(_setting=keys)
    ok_runs = runs[runs["status"] == "ok"]
    pooled = _pooled_quantiles(db, ok_runs.groupby("_setting")["run_key"].apply(list)
                               .to_dict(), [0.5, 0.95, 0.99])
    varying, fixed = {}, {}
    for sweep, g in runs.groupby("sweep", sort=False):
        varying[sweep] = [c for c in cols if c != "sweep" and g[c].map(str).nunique() > 1]
        fixed[sweep] = _label(g.iloc[0], [c for c in cols
                                          if c != "sweep" and c not in varying[sweep]])
    out = []
    for _, g in runs.groupby("_setting", sort=True):
        ok = g[g["status"] == "ok"]
        q = pooled.get(g["_setting"].iloc[0]) or [None] * 3
        ratio = ok["ratio"].astype(float).to_numpy() if "ratio" in ok else np.zeros(0)
        first = g.iloc[0]
        row = {c: _py(first[c]) for c in cols}
        row.update({
            "setting": _label(first, varying[first["sweep"]]) or "(every run)",
            "fixed": fixed[first["sweep"]],
            "objective": _py(ok["objective"].iloc[0]) if len(ok) else None,
            "runs": int(len(g)), "failed": int((g["status"] != "ok").sum()),
            "seeds": int(ok["seed"].nunique()) if "seed" in ok else None,
            "mean_ct": _mean(ok.get("mean_ct")),
            "p50_ct": _py(q[0]), "p95_ct": _py(q[1]), "p99_ct": _py(q[2]),
            "sum_wc": _mean(ok.get("sum_wc")),
            "ratio": _mean(ok.get("ratio")),
            "ratio_ci95": _ci95(ratio) if len(ratio) else None,
        })
        out.append(row)
    out.sort(key=lambda r: (str(r.get("sweep")), r["setting"]))
    return out


def failures(db) -> list[dict]:
    """Every recorded failed run: sweep, key, label, error."""
    return db.sql("select sweep, run_key, label, error from runs where status <> 'ok' "
                  "order by sweep, label").df().to_dict("records")


def _mean(col) -> float | None:
    if col is None:
        return None
    v = col.astype(float).to_numpy()
    v = v[~np.isnan(v)]
    return float(v.mean()) if len(v) else None


def _py(v):
    if v is None:
        return None
    if isinstance(v, (np.floating, float)):
        return None if math.isnan(v) else float(v)
    if isinstance(v, np.integer):
        return int(v)
    return v


def format_summary(rows: list[dict], fails: list[dict]) -> str:
    """The plain-text table: one block per sweep."""
    def num(v, fmt=".4g"):
        return "-" if v is None else format(v, fmt)
    out = []
    for sweep in dict.fromkeys(r["sweep"] for r in rows):
        sel = [r for r in rows if r["sweep"] == sweep]
        width = max(28, *(len(r["setting"]) for r in sel))
        head = (f"{'setting':<{width}} {'runs':>4} {'fail':>4} {'mean':>9} {'p50':>9} "
                f"{'p95':>9} {'p99':>9} {'sum w*C':>12} {'ratio LP (95% CI)':>19}")
        obj = {r["objective"] for r in sel if r["objective"]}
        what = "job completion times" if obj == {"jobs"} else (
            "coflow completion times" if obj == {"coflows"} else "completion times")
        out += [f"sweep {sweep} ({sel[0]['fixed']}): {what} in seconds (pooled over "
                f"seeds), mean over seeds of sum w*C and of the ratio to the LP bound",
                head, "-" * len(head)]
        for r in sel:
            ratio = "-" if r["ratio"] is None else (
                f"{r['ratio']:.3f}" + (f" +- {r['ratio_ci95']:.3f}"
                                       if r["ratio_ci95"] is not None else ""))
            out.append(f"{r['setting']:<{width}} {r['runs']:>4} {r['failed']:>4} "
                       f"{num(r['mean_ct']):>9} {num(r['p50_ct']):>9} {num(r['p95_ct']):>9} "
                       f"{num(r['p99_ct']):>9} {num(r['sum_wc'], '.6g'):>12} {ratio:>19}")
        out.append("")
    if fails:
        out.append(f"{len(fails)} failed run(s):")
        out += [f"  {f['sweep']} {f['run_key']} {f['label']}: {f['error']}" for f in fails]
    return "\n".join(out).rstrip()


# ------------------------------------------------------------------------------ plots
def write_plots(db, out_dir: str, *, max_cdfs: int = 8) -> list[str]:
    """The CDF and ratio plots of every sweep in the store; the paths written."""
    from pandas.api.types import is_numeric_dtype

    from experiments.plots import cdf, ratio_sweep
    runs = db.sql("select * from runs where status = 'ok'").df()
    if runs.empty:
        return []
    written = []
    for sweep, g in runs.groupby("sweep", sort=True):
        cols = [c for c in setting_columns(g) if c != "sweep" and g[c].map(str).nunique() > 1]
        line_cols = [c for c in cols if c in ("engine", "policy") or c.startswith("opt_")]
        work_cols = [c for c in cols if c not in line_cols]
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", str(sweep))
        obj = "coflow" if (g["objective"] == "coflows").all() else "job"
        groups = list(g.groupby(work_cols, sort=True, dropna=False)) if work_cols \
            else [((), g)]
        for n, (wkey, wg) in enumerate(groups[:max_cdfs]):
            series = {}
            for lkey, lg in (wg.groupby(line_cols, sort=True, dropna=False) if line_cols
                             else [((), wg)]):
                label = _label(lg.iloc[0], line_cols) or "all runs"
                series[label] = _series(db, lg["run_key"])
            title = f"{sweep}: " + (_label(wg.iloc[0], work_cols) or "every run")
            path = os.path.join(out_dir, f"{safe}-cdf{'-' + str(n) if work_cols else ''}.png")
            cdf(series, path, title=title, xlabel=f"{obj} completion time (s)",
                ylabel=f"fraction of {obj}s")
            written.append(path)
        for x in work_cols:
            xs = g[x]
            if not is_numeric_dtype(xs) or "ratio" not in g:
                continue
            lines = {}
            for lkey, lg in (g.groupby(line_cols, sort=True, dropna=False) if line_cols
                             else [((), g)]):
                pts = []
                for xv, pg in lg.groupby(x, sort=True):
                    r = pg["ratio"].astype(float).to_numpy()
                    r = r[~np.isnan(r)]
                    if not len(r):
                        continue
                    h = _ci95(r) or 0.0
                    pts.append((float(xv), float(r.mean()), float(r.mean() - h),
                                float(r.mean() + h)))
                if pts:
                    lines[_label(lg.iloc[0], line_cols) or "all runs"] = pts
            if not lines:
                continue
            name = re.sub(r"^(p_|o_|opt_|fabric_)", "", x)
            path = os.path.join(out_dir, f"{safe}-ratio-{name}.png")
            ratio_sweep({f"{sweep}: ratio to the LP bound": lines}, path, xlabel=name,
                        log=False)
            written.append(path)
    return written
