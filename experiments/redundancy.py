"""The simulations of the redundancy paper (Xu et al., algorithms.md 4.4), from the
results store.

The experiment is the sweep ``experiments/specs/redundancy.toml`` (its comments give the
paper's setting: 100 AP/UP machines, Pareto work of mean 40, horizon 100,000): every
policy of a row on the same instance, by the exact checkpoint simulator
(:func:`controller.redundancy.simulate`) called directly on the instance (engine
``direct``: the job model ``redundancy`` runs the same simulator inside ``coflowemu run``,
but the workload would hold 250,000 jobs as objects), one row per job (arrival, work,
completion, flowtime) in the store. The tables:

* ``cdf``: ``lam = 1``, with and without redundancy (SRPT+R vs SRPT, LAPS+R vs LAPS,
  Fair+R vs fair sharing): the fraction of jobs finished within 40 time units, the mean
  flowtime, flowtime quantiles (and the CDF plot);
* ``lambda``: mean flowtime against ``lam`` from 1 to 2.5 for the six policies;
* ``assign``: the copies' machines dealt out again in index order at every checkpoint
  (the default) or kept where a job held them (``sticky``), SRPT and fair policies at
  ``lam`` 1 and 2;
* ``beta``: LAPS+R's mean flowtime (all jobs, and the small half: work at most the
  median) against ``beta`` at light (``lam = 1``) and heavy (``lam = 2.5``) load.

Run::

    .venv/bin/python -m experiments.redundancy            # the paper's horizon (~15 min)
    .venv/bin/python -m experiments.redundancy --quick    # horizon 2,000: a smoke run

References
----------
Xu, de Veciana, Lau, Zhou, Section 6 (simulations); docs/redundancy.md has our tables
beside their findings.
"""
from __future__ import annotations

from experiments.sweep.paper import Paper, main as paper_main, markdown, versions
from experiments.sweep.store import ok_rows

PAPER_FINDINGS = {
    "cdf": "lam = 1: with redundancy many more jobs finish within 40 units and the mean "
           "flowtime drops by nearly [illegible]% (SRPT+R vs SRPT, LAPS+R vs LAPS)",
    "lambda": "SRPT+R ~ Fair+R at low lam; at higher lam Fair+R and LAPS+R reach about 2x "
              "SRPT+R's flowtime and explode near the limit while SRPT+R stays flat; "
              "Fair+R beats LAPS+R below lam ~ 2 and loses above",
    "beta": "heavy traffic: a smaller beta helps small jobs, an intermediate beta "
            "minimises the mean; light load: a small beta hurts the mean (big jobs starve)",
}
PAIRS = (("srpt+r", "srpt"), ("laps+r", "laps"), ("fair+r", "fair-share"))
#: the CDF table's arrival rate and the flowtime it counts jobs within
CDF_LAM, WITHIN = 1.0, 40.0


def cdf_rows(db, runs) -> list[tuple]:
    """Per policy at ``lam = CDF_LAM`` (the lambda part): (policy, fraction within
    ``WITHIN``, mean, median, p90, p99 flowtime)."""
    sel = runs[(runs["part"] == "lambda") & (runs["p_lam"] == CDF_LAM)]
    got = {p: (w, q) for p, w, q in db.sql(
        "select r.policy, avg((j.jct <= $w)::double), quantile_cont(j.jct, [0.5, 0.9, 0.99]) "
        "from jobs j join runs r using (run_key) where run_key in (select unnest($k)) "
        "group by 1", params={"w": WITHIN, "k": list(sel["run_key"])}).fetchall()}
    return [(p, got[p][0], m, *got[p][1]) for p, m in zip(sel["policy"], sel["mean_ct"])]


def tables(db, spec) -> str:
    runs = ok_rows(db, spec)
    out = []
    cdf = cdf_rows(db, runs)
    if cdf:
        by = {r[0]: r for r in cdf}
        drops = [f"{a} vs {b}: mean flowtime {1 - by[a][2] / by[b][2]:.0%} lower"
                 for a, b in PAIRS if a in by and b in by]
        out += [f"### cdf: lam = {CDF_LAM:g}, with and without redundancy", "",
                f"Paper: {PAPER_FINDINGS['cdf']}", "",
                markdown(["policy", f"within {WITHIN:g}", "mean flowtime", "median", "p90",
                          "p99"], [[p, f"{w:.1%}", f"{m:.2f}", f"{a:.2f}", f"{b:.2f}",
                                    f"{c:.2f}"] for p, w, m, a, b, c in cdf]),
                "", "; ".join(drops) + ".", ""]
    lam = runs[runs["part"] == "lambda"]
    if not lam.empty:
        pols = list(dict.fromkeys(lam["policy"]))
        body = []
        for x, g in lam.groupby("p_lam", sort=True):
            v = dict(zip(g["policy"], g["mean_ct"]))
            ratio = [f"{v[a] / v['srpt+r']:.2f}" if a in v and "srpt+r" in v else ""
                     for a in ("fair+r", "laps+r")]
            body.append([f"{x:g}", int(g["n_items"].iloc[0])] +
                        [f"{v[p]:.2f}" if p in v else "" for p in pols] + ratio)
        out += ["### lambda: mean flowtime against the arrival rate", "",
                f"Paper: {PAPER_FINDINGS['lambda']}", "",
                markdown(["lam", "jobs", *pols, "fair+r / srpt+r", "laps+r / srpt+r"], body),
                ""]
    sticky = runs[runs["part"] == "assign"]
    if not sticky.empty:
        body = []
        for _, r in sticky.sort_values(["p_lam"], kind="stable").iterrows():
            index = lam[(lam["p_lam"] == r["p_lam"]) & (lam["policy"] == r["policy"])]
            body.append([f"{r['p_lam']:g}", r["policy"],
                         f"{index['mean_ct'].iloc[0]:.2f}" if len(index) else "",
                         f"{r['mean_ct']:.2f}"])
        out += ["### assign: machines dealt in index order or kept (sticky)", "",
                markdown(["lam", "policy", "index (default)", "sticky"], body), ""]
    beta = runs[runs["part"] == "beta"]
    if not beta.empty:
        halves = {k: (s, lg) for k, s, lg in db.sql(
            "with m as (select run_key, median(work) as med from jobs "
            "where run_key in (select unnest($k)) group by 1) "
            "select j.run_key, avg(j.jct) filter (where j.work <= m.med), "
            "avg(j.jct) filter (where j.work > m.med) from jobs j join m using (run_key) "
            "group by 1", params={"k": list(beta["run_key"])}).fetchall()}
        body = [[f"{r['p_lam']:g}", f"{r['opt_beta']:g}", f"{r['mean_ct']:.2f}",
                 f"{halves[r['run_key']][0]:.2f}", f"{halves[r['run_key']][1]:.2f}"]
                for _, r in beta.sort_values(["p_lam", "opt_beta"]).iterrows()]
        out += ["### beta: LAPS+R against beta", "", f"Paper: {PAPER_FINDINGS['beta']}", "",
                markdown(["lam", "beta", "mean flowtime", "small half", "large half"], body),
                ""]
    out.append(f"({len(runs)} runs, horizon {runs['p_horizon'].iloc[0]:g}; "
               f"{versions(runs)})")
    return "\n".join(out)


def plot(db, spec, path: str) -> None:
    """The flowtime CDF at ``lam = CDF_LAM`` (2,000 quantiles a line) and the mean
    flowtime against lambda."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from experiments.plots import _save
    runs = ok_rows(db, spec)
    lam = runs[runs["part"] == "lambda"]
    if lam.empty:
        return
    qs = np.linspace(0.0005, 0.9995, 2000).tolist()
    sel = lam[lam["p_lam"] == CDF_LAM]
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
    for p, k in zip(sel["policy"], sel["run_key"]):
        (v,), = db.sql("select quantile_cont(jct, $q) from jobs where run_key = $k",
                       params={"q": qs, "k": k}).fetchall()
        a.plot(v, qs, label=p, ls="-" if p.endswith("+r") else "--")
    a.axvline(WITHIN, color="grey", lw=0.8)
    a.set_xscale("log")
    a.set_xlabel("flowtime")
    a.set_ylabel("fraction of jobs")
    a.set_title(f"flowtime CDF, lam = {CDF_LAM:g}")
    a.legend(fontsize=8)
    for p, g in lam.groupby("policy", sort=False):
        g = g.sort_values("p_lam")
        b.plot(g["p_lam"], g["mean_ct"], marker="o", label=p,
               ls="-" if p.endswith("+r") else "--")
    b.set_yscale("log")
    b.set_xlabel("arrival rate lam (2.5 = heavy-traffic limit)")
    b.set_ylabel("mean flowtime")
    b.set_title(f"100 AP/UP machines, horizon {lam['p_horizon'].iloc[0]:g}")
    b.legend(fontsize=8)
    _save(fig, path)


def quick(doc: dict) -> dict:
    """Horizon 2,000; lam 1, 2, 2.5; beta 0.2, 0.5, 1; sticky at lam 1."""
    for part in doc["parts"]:
        (w,) = part["workloads"]
        w["params"]["horizon"] = 2000.0
        if part["name"] == "lambda":
            w["params"]["lam"] = [1.0, 2.0, 2.5]
        if part["name"] == "assign":
            w["params"]["lam"] = [1.0]
        if part["name"] == "beta":
            part["policies"][0]["beta"] = [0.2, 0.5, 1.0]
    return doc


PAPER = Paper("redundancy", tables, quick, plot)


if __name__ == "__main__":
    paper_main(PAPER)
