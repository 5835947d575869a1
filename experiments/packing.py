"""The packing-and-placement paper's comparisons, from the results store.

The experiment is the sweep ``experiments/specs/packing.toml`` (its comments say what
each part is); this module turns its recorded runs into the paper-style tables, as in
the paper's Section 7:

* **preemptive, original trace** (every task on its own machine): SynchPack-3 vs PSRS vs
  Tetris-P, ratio to LP3;
* **non-preemptive, with placement**: SynchPack-2 vs JSQ-MW vs Tetris-NP, ratio to LP2;

each **offline** (all jobs at time 0; metric: weighted average completion time ``sum w C
/ sum w``) for equal, random [1, 10] and priority-class (``2^class``) weights and for a
sweep of the remote penalty ``alpha``; and **online** (Poisson arrivals at a target
load; metric: weighted average delay ``sum w (C - arrival) / sum w``; SynchPack re-plans
at epochs ``tau_k = tau_0 2^k``, ``synchpack-k/fixed`` at fixed epochs of one mean
inter-arrival time). Results are averaged over seeds. The "/LP" column is ``sum w C``
over the LP value (with the release constraints online), the "gain" columns are how much
lower SynchPack's metric is than each baseline's, in percent.

Run::

    .venv/bin/python -m experiments.packing            # about two minutes on 2 cores
    .venv/bin/python -m experiments.packing --quick    # a smoke run in seconds

(:func:`experiments.sweep.paper.main`: ``--out`` store, ``--tables-only``, ...).

References
----------
Shafiee & Ghaderi, Section 7 (Table 1, Figures 2 and 3); algorithms.md 2.8.
"""
from __future__ import annotations

import numpy as np

from experiments.sweep.paper import Paper, main as paper_main, markdown, versions

PREEMPTIVE = ("synchpack-3", "psrs", "tetris-p")
NONPREEMPTIVE = ("synchpack-2", "jsq-mw", "tetris-np")
ONLINE_PREEMPTIVE = ("synchpack-3", "synchpack-3/fixed", "psrs", "tetris-p")
ONLINE_NONPREEMPTIVE = ("synchpack-2", "synchpack-2/fixed", "jsq-mw", "tetris-np")


def rows(db, spec) -> list[dict]:
    """One dict per recorded ok run of ``spec``: ``setting`` (its part), ``seed``,
    ``scheme``, ``alpha``, ``load``, ``policy`` (``synchpack-k/fixed``: fixed epochs),
    ``metric`` (``sum w (C - r) / sum w``: offline ``r = 0``), ``ratio`` (to the part's
    LP), ``code_version``."""
    from experiments.sweep.store import ok_rows
    runs = ok_rows(db, spec)
    per = {k: (w, wt) for k, w, wt in db.sql(
        "select run_key, sum(weight), sum(weight * jct) from jobs group by 1").fetchall()}
    out = []
    for r in runs.to_dict("records"):
        fixed = r.get("opt_growth") == 1.0
        w, wt = per[r["run_key"]]
        out.append({"setting": r["part"], "seed": r["seed"],
                    "scheme": _given(r.get("p_scheme"), "equal"),
                    "alpha": _given(r.get("p_alpha"), 2.0), "load": _given(r.get("p_load")),
                    "policy": r["policy"] + ("/fixed" if fixed else ""),
                    "metric": wt / w, "ratio": r["ratio"],
                    "code_version": r["code_version"]})
    return out


def _given(v, default=None):
    return default if v is None or (isinstance(v, float) and np.isnan(v)) else v


def _table(rows, setting, policies, key, metric_name):
    ours = [p for p in policies if p.startswith("synchpack")]
    base = [p for p in policies if not p.startswith("synchpack")]
    head = [key] + [f"{p} {metric_name}" for p in policies] + \
        [f"{p} /LP" for p in policies] + \
        [f"{o} gain vs {b}" if len(ours) > 1 else f"gain vs {b}" for o in ours for b in base]
    sel = [r for r in rows if r["setting"] == setting]
    body = []
    for k in dict.fromkeys(sorted(r[key] for r in sel)):
        vals = {}
        for p in policies:
            v = [r for r in sel if r["policy"] == p and r[key] == k]
            vals[p] = (np.mean([r["metric"] for r in v]), np.mean([r["ratio"] for r in v])) \
                if v else None
        if any(v is None for v in vals.values()):
            continue
        body.append([str(k)] + [f"{vals[p][0]:.1f}" for p in policies] +
                    [f"{vals[p][1]:.3f}" for p in policies] +
                    [f"{100 * (vals[b][0] - vals[o][0]) / vals[b][0]:+.1f}%" for o in ours
                     for b in base])
    return markdown(head, body)


def tables(db, spec) -> str:
    """Markdown tables of the mean metric, ratio to the LP and SynchPack's gain."""
    rs = rows(db, spec)

    def seeds(*settings):
        return len({r["seed"] for r in rs if r["setting"] in settings})
    epochs = ("synchpack-x: epochs tau_k = tau_0 2^k, tau_0 = 2 x mean inter-arrival; "
              "synchpack-x/fixed: epochs of one mean inter-arrival time")
    return "\n".join([
        f"Offline, preemptive, original trace (single machine per task); weighted average "
        f"completion time (s), mean of {seeds('preemptive')} seeds; /LP = sum wC / LP3",
        _table(rs, "preemptive", PREEMPTIVE, "scheme", "wC/w"), "",
        f"Offline, non-preemptive, with placement; weighted average completion time (s), "
        f"mean of {seeds('nonpreemptive')} seeds; /LP = sum wC / LP2",
        _table(rs, "nonpreemptive", NONPREEMPTIVE, "scheme", "wC/w"), "",
        "Offline, non-preemptive, remote penalty sweep (equal weights)",
        _table(rs, "alpha", NONPREEMPTIVE, "alpha", "wC/w"), "",
        f"Online, preemptive; weighted average delay (s), mean of "
        f"{seeds('online-preemptive')} seeds; /LP = sum wC / LP3 with releases; {epochs}",
        _table(rs, "online-preemptive", ONLINE_PREEMPTIVE, "scheme", "delay"), "",
        "Online, non-preemptive; weighted average delay (s); /LP = sum wC / LP2 with "
        "releases",
        _table(rs, "online-nonpreemptive", ONLINE_NONPREEMPTIVE, "scheme", "delay"), "",
        "Online, preemptive, load sweep (equal weights); weighted average delay (s)",
        _table(rs, "load-preemptive", ONLINE_PREEMPTIVE, "load", "delay"), "",
        "Online, non-preemptive, load sweep (equal weights); weighted average delay (s)",
        _table(rs, "load-nonpreemptive", ONLINE_NONPREEMPTIVE, "load", "delay"), "",
        f"({len(rs)} runs; {versions_of(rs)})"])


def versions_of(rs) -> str:
    import pandas as pd
    return versions(pd.DataFrame(rs))


def quick(doc: dict) -> dict:
    """12 jobs, one seed, two alphas and loads."""
    for part in doc["parts"]:
        for w in part["workloads"]:
            w["seeds"] = 1
            w["params"]["n_jobs"] = 12
            for k, v in (("alpha", [1.5, 3.0]), ("load", [0.5, 0.9])):
                if isinstance(w["params"].get(k), list):
                    w["params"][k] = v
    return doc


PAPER = Paper("packing", tables, quick)


if __name__ == "__main__":
    paper_main(PAPER)
