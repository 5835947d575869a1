"""The bi-criteria moldable-job paper's experiments, from the results store.

The experiment is the sweep ``experiments/specs/moldable.toml``: the setting of Section
4 of the paper (``m = 200`` machines, 25 to 400 independent moldable jobs, 40 instances
per point, the four workload families of :mod:`controller.moldable.generators`), every
algorithm of :mod:`controller.moldable` (``demt`` with 4 batch shuffles, ``gang``,
``sequential``, ``list-shelf``, ``list-wlptf``, ``list-saf``) run directly on each
instance, with both lower bounds of :mod:`controller.moldable.bounds` (the minsum
interval LP, the makespan bound). This module gives, per family and criterion, the ratio
of each point as in the paper (after Jain): the sum of the values over the sum of the
bounds of its runs, with the smallest and largest per-run ratio; and the plot (ratio
against the number of jobs, per family and criterion, min/max error bars).

Run::

    .venv/bin/python -m experiments.moldable            # 4,800 runs, ~15 min on 2 cores
    .venv/bin/python -m experiments.moldable --quick    # 3 seeds, 25 / 100 / 400 jobs

References
----------
Dutot, Eyraud, Mounié, Trystram, Section 4 (Figures 3-6); algorithms.md 5.4.
"""
from __future__ import annotations

from experiments.sweep.paper import Paper, main as paper_main, markdown, versions

#: criterion -> (the run column, its bound's column, the bound's name)
CRITERIA = {"minsum": ("sum_wc", "bound_moldable", "interval LP"),
            "makespan": ("makespan", "bound_makespan", "makespan bound")}


def points(db, spec):
    """Per (family, jobs, algorithm): runs, and per criterion the ratio of sums and the
    smallest and largest per-run ratio (a pandas frame)."""
    from experiments.sweep.store import ok_rows
    runs = ok_rows(db, spec)
    cols = {"runs": ("seed", "count")}
    for crit, (value, bound, _) in CRITERIA.items():
        runs = runs.assign(**{f"{crit}_v": runs[value], f"{crit}_b": runs[bound],
                              f"{crit}_r": runs[value] / runs[bound]})
        cols.update({f"{crit}_v": (f"{crit}_v", "sum"), f"{crit}_b": (f"{crit}_b", "sum"),
                     f"{crit}_min": (f"{crit}_r", "min"), f"{crit}_max": (f"{crit}_r", "max")})
    out = runs.groupby(["p_family", "p_n_jobs", "policy"], sort=False).agg(**cols)
    for crit in CRITERIA:
        out[f"{crit}_ratio"] = out[f"{crit}_v"] / out[f"{crit}_b"]
    return out.reset_index(), runs


def tables(db, spec) -> str:
    """Markdown: per family and criterion, the ratio to the bound (sum/sum [min, max])."""
    pts, runs = points(db, spec)
    algos = list(dict.fromkeys(r.policy for r in spec.runs()))
    m = int(runs["fabric_ports"].iloc[0])
    out = []
    for fam in dict.fromkeys(pts["p_family"]):
        f = pts[pts["p_family"] == fam]
        for crit, (_, _, bound) in CRITERIA.items():
            body = []
            for n in sorted(set(f["p_n_jobs"])):
                cells = [f"{n}"]
                for a in algos:
                    r = f[(f["p_n_jobs"] == n) & (f["policy"] == a)]
                    cells.append("" if r.empty else
                                 f"{r[f'{crit}_ratio'].iloc[0]:.2f} "
                                 f"[{r[f'{crit}_min'].iloc[0]:.2f}, "
                                 f"{r[f'{crit}_max'].iloc[0]:.2f}]")
                body.append(cells)
            seeds = int(f["runs"].max())
            out += [f"**{fam}**, {crit} / {bound} (m = {m}, {seeds} runs per point; sum of "
                    f"values / sum of bounds [min, max])", "",
                    markdown(["jobs"] + algos, body).replace("|---|", "|---:|", 1), ""]
    out.append(f"({len(runs)} runs; {versions(runs)})")
    return "\n".join(out)


def plot(db, spec, path: str) -> None:
    """One panel per family and criterion: ratio against the number of jobs, with the
    smallest and largest per-run ratio as error bars (the paper's Figures 3-6)."""
    from experiments.plots import ratio_sweep
    pts, runs = points(db, spec)
    if pts.empty:
        return
    panels = {}
    for fam in dict.fromkeys(pts["p_family"]):
        for crit in CRITERIA:
            f = pts[pts["p_family"] == fam].sort_values("p_n_jobs")
            panels[f"{fam}: {crit}"] = {
                a: list(zip(g["p_n_jobs"], g[f"{crit}_ratio"], g[f"{crit}_min"],
                            g[f"{crit}_max"])) for a, g in f.groupby("policy", sort=False)}
    ratio_sweep(panels, path, xlabel="jobs",
                title=f"moldable jobs on m = {int(runs['fabric_ports'].iloc[0])}: ratio to "
                      f"the lower bounds")


def quick(doc: dict) -> dict:
    """3 seeds, 25 / 100 / 400 jobs."""
    (w,) = doc["workloads"]
    w["seeds"] = 3
    w["params"]["n_jobs"] = [25, 100, 400]
    return doc


PAPER = Paper("moldable", tables, quick, plot)


if __name__ == "__main__":
    paper_main(PAPER)
