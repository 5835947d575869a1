"""Reproduce the simulations of the redundancy paper (Xu et al., algorithms.md 4.4).

The paper's setting: 100 machines whose rates alternate between available and
unavailable periods (AP rate U[0.5, 1.5], UP rate U[0, 0.2], lengths Gamma(0.5, 100) and
Gamma(0.5, 20), normalised to mean rate 1), Poisson arrivals of rate ``lam``, Pareto work
of mean 40 (shape 2, scale 20), horizon 100,000 time units. Every policy of a row runs
on the same instance (same arrivals, works and speed paths), by the exact checkpoint
simulator (:func:`controller.redundancy.simulate`), which the job model
``redundancy`` runs inside ``coflowemu run`` too (the JSON route would hold 250,000 jobs
as objects; the experiment feeds the simulator directly). Sections:

* ``cdf``: ``lam = 1``, with and without redundancy (SRPT+R vs SRPT, LAPS+R vs LAPS,
  Fair+R vs fair sharing): the fraction of jobs finished within 40 time units, the mean
  flowtime, flowtime quantiles, and the CDF plot;
* ``lambda``: mean flowtime against ``lam`` from 1 to 2.5 for the six policies;
* ``assign``: which physical machines the copies get, dealt out again in index order at
  every checkpoint (our default) or kept where a job held them (``sticky``), for the
  SRPT and fair policies at ``lam`` 1 and 2 (the paper does not say);
* ``beta``: LAPS+R's mean flowtime (all jobs, and the small half: work below the median)
  against ``beta`` at light (``lam = 1``) and heavy (``lam = 2.5``, the limit) load.

Rows go to ``<out>/redundancy.json`` as soon as they are computed
(:func:`emulate.io.records.atomic_write`), the tables to ``<out>/redundancy.md`` and
stdout, the plot to ``<out>/redundancy.png``.

Run::

    .venv/bin/python -m experiments.redundancy                    # the paper's horizon
    .venv/bin/python -m experiments.redundancy --horizon 20000    # what docs/ shows
    .venv/bin/python -m experiments.redundancy --quick            # a smoke run

References
----------
Xu, de Veciana, Lau, Zhou, Section 6 (simulations); docs/redundancy.md has our tables
beside their findings.
"""
from __future__ import annotations

import argparse
import os
import time
from dataclasses import asdict, dataclass

import numpy as np

from controller.redundancy import POLICIES, simulate
from controller.redundancy.generators import paper_instance
from emulate.io.records import RowLog, atomic_write

PAPER = {
    "cdf": "lam = 1: with redundancy many more jobs finish within 40 units and the mean "
           "flowtime drops by nearly [illegible]% (SRPT+R vs SRPT, LAPS+R vs LAPS)",
    "lambda": "SRPT+R ~ Fair+R at low lam; at higher lam Fair+R and LAPS+R reach about 2x "
              "SRPT+R's flowtime and explode near the limit while SRPT+R stays flat; "
              "Fair+R beats LAPS+R below lam ~ 2 and loses above",
    "beta": "heavy traffic: a smaller beta helps small jobs, an intermediate beta "
            "minimises the mean; light load: a small beta hurts the mean (big jobs starve)",
}
PAIRS = (("srpt+r", "srpt"), ("laps+r", "laps"), ("fair+r", "fair-share"))


@dataclass
class Config:
    horizon: float = 100_000.0
    machines: int = 100
    seed: int = 0
    cdf_lam: float = 1.0
    lams: tuple = (1.0, 1.25, 1.5, 1.75, 2.0, 2.25, 2.5)
    betas: tuple = (0.1, 0.2, 0.3, 0.5, 0.7, 1.0)
    beta_lams: tuple = (1.0, 2.5)
    assign_lams: tuple = (1.0, 2.0)
    within: float = 40.0
    out: str = "results/redundancy"


QUICK = Config(horizon=2000.0, lams=(1.0, 2.0, 2.5), betas=(0.2, 0.5, 1.0),
               assign_lams=(1.0,))



def _instance(cfg, lam):
    return paper_instance(cfg.seed, machines=cfg.machines, lam=lam, horizon=cfg.horizon)


def cdf_section(log, cfg, say, curves):
    inst = _instance(cfg, cfg.cdf_lam)
    for pol in POLICIES:
        r = simulate(inst, pol)
        f = r.flowtime
        q = np.quantile(f, [0.5, 0.9, 0.99])
        log.add(section="cdf", lam=cfg.cdf_lam, policy=pol, jobs=inst.n_jobs,
                within=float(np.mean(f <= cfg.within)), mean=r.mean_flowtime,
                p50=float(q[0]), p90=float(q[1]), p99=float(q[2]), seconds=r.wall_seconds)
        curves[pol] = np.sort(f)
        say(f"cdf {pol}: mean {r.mean_flowtime:.2f} ({r.wall_seconds:.1f}s)")


def lambda_section(log, cfg, say):
    for lam in cfg.lams:
        inst = _instance(cfg, lam)
        for pol in POLICIES:
            r = simulate(inst, pol)
            log.add(section="lambda", lam=lam, policy=pol, jobs=inst.n_jobs,
                    mean=r.mean_flowtime, seconds=r.wall_seconds,
                    last_departure=float(r.completion.max()))
        say(f"lambda {lam}: {inst.n_jobs} jobs")


def beta_section(log, cfg, say):
    for lam in cfg.beta_lams:
        inst = _instance(cfg, lam)
        small = inst.work <= np.median(inst.work)
        for beta in cfg.betas:
            r = simulate(inst, "laps+r", beta=beta)
            f = r.flowtime
            log.add(section="beta", lam=lam, beta=beta, policy="laps+r", mean=float(f.mean()),
                    small=float(f[small].mean()), large=float(f[~small].mean()),
                    seconds=r.wall_seconds)
        say(f"beta lam={lam}")


def assign_section(log, cfg, say):
    for lam in cfg.assign_lams:
        inst = _instance(cfg, lam)
        for pol in ("srpt+r", "srpt", "fair+r", "fair-share"):
            for assign in ("index", "sticky"):
                r = simulate(inst, pol, assign=assign)
                log.add(section="assign", lam=lam, policy=pol, assign=assign,
                        mean=r.mean_flowtime, seconds=r.wall_seconds)
        say(f"assign lam={lam}")


def tables(rows, cfg) -> str:
    out = []
    sel = [r for r in rows if r["section"] == "cdf"]
    if sel:
        out += [f"### cdf: lam = {cfg.cdf_lam}, with and without redundancy\n",
                f"Paper: {PAPER['cdf']}\n",
                f"| policy | within {cfg.within:g} | mean flowtime | median | p90 | p99 |",
                "|---|---|---|---|---|---|"]
        for r in sel:
            out.append(f"| {r['policy']} | {r['within']:.1%} | {r['mean']:.2f} | "
                       f"{r['p50']:.2f} | {r['p90']:.2f} | {r['p99']:.2f} |")
        by = {r["policy"]: r for r in sel}
        drops = [f"{a} vs {b}: mean flowtime {1 - by[a]['mean'] / by[b]['mean']:.0%} lower"
                 for a, b in PAIRS if a in by and b in by]
        out += ["", "; ".join(drops) + ".", ""]
    sel = [r for r in rows if r["section"] == "lambda"]
    if sel:
        pols = list(POLICIES)
        out += ["### lambda: mean flowtime against the arrival rate\n",
                f"Paper: {PAPER['lambda']}\n",
                "| lam | jobs | " + " | ".join(pols) + " | fair+r / srpt+r | laps+r / srpt+r |",
                "|---" * (len(pols) + 4) + "|"]
        for lam in sorted({r["lam"] for r in sel}):
            v = {r["policy"]: r for r in sel if r["lam"] == lam}
            cells = [f"{v[p]['mean']:.2f}" if p in v else "" for p in pols]
            ratio = (lambda a: f"{v[a]['mean'] / v['srpt+r']['mean']:.2f}"
                     if a in v and "srpt+r" in v else "")
            jobs = next(iter(v.values()))["jobs"]
            out.append(f"| {lam:g} | {jobs} | " + " | ".join(cells) +
                       f" | {ratio('fair+r')} | {ratio('laps+r')} |")
        out.append("")
    sel = [r for r in rows if r["section"] == "assign"]
    if sel:
        out += ["### assign: machines dealt in index order or kept (sticky)\n",
                "| lam | policy | index | sticky |", "|---|---|---|---|"]
        for lam in sorted({r["lam"] for r in sel}):
            for pol in dict.fromkeys(r["policy"] for r in sel):
                v = {r["assign"]: r["mean"] for r in sel if r["lam"] == lam
                     and r["policy"] == pol}
                out.append(f"| {lam:g} | {pol} | {v.get('index', 0):.2f} | "
                           f"{v.get('sticky', 0):.2f} |")
        out.append("")
    sel = [r for r in rows if r["section"] == "beta"]
    if sel:
        out += ["### beta: LAPS+R against beta\n", f"Paper: {PAPER['beta']}\n",
                "| lam | beta | mean flowtime | small half | large half |", "|---|---|---|---|---|"]
        for r in sel:
            out.append(f"| {r['lam']:g} | {r['beta']:g} | {r['mean']:.2f} | "
                       f"{r['small']:.2f} | {r['large']:.2f} |")
        out.append("")
    return "\n".join(out)


def plot(rows, curves, cfg, path) -> None:
    """The flowtime CDF at ``cdf_lam`` and the mean flowtime against lambda."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from experiments.plots import _save
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
    for pol, f in curves.items():
        a.plot(f, np.arange(1, len(f) + 1) / len(f), label=pol,
               ls="-" if pol.endswith("+r") else "--")
    a.axvline(cfg.within, color="grey", lw=0.8)
    a.set_xscale("log")
    a.set_xlabel("flowtime")
    a.set_ylabel("fraction of jobs")
    a.set_title(f"flowtime CDF, lam = {cfg.cdf_lam:g}")
    a.legend(fontsize=8)
    sel = [r for r in rows if r["section"] == "lambda"]
    for pol in POLICIES:
        pts = sorted((r["lam"], r["mean"]) for r in sel if r["policy"] == pol)
        if pts:
            b.plot(*zip(*pts), marker="o", label=pol, ls="-" if pol.endswith("+r") else "--")
    b.set_yscale("log")
    b.set_xlabel("arrival rate lam (2.5 = heavy-traffic limit)")
    b.set_ylabel("mean flowtime")
    b.set_title(f"{cfg.machines} AP/UP machines, horizon {cfg.horizon:g}")
    b.legend(fontsize=8)
    _save(fig, path)


SECTIONS = {"cdf": cdf_section, "lambda": lambda_section, "assign": assign_section,
            "beta": beta_section}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a smoke run in seconds")
    ap.add_argument("--horizon", type=float, default=None)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--out", default=None)
    ap.add_argument("--only", nargs="*", choices=list(SECTIONS), default=None)
    args = ap.parse_args(argv)
    cfg = QUICK if args.quick else Config()
    for key in ("horizon", "seed", "out"):
        if getattr(args, key) is not None:
            setattr(cfg, key, getattr(args, key))
    os.makedirs(cfg.out, exist_ok=True)
    log = RowLog(os.path.join(cfg.out, "redundancy.json"), {"config": asdict(cfg),
                                                         "quick": args.quick})
    t0 = time.perf_counter()
    say = lambda m: print(f"[{time.perf_counter() - t0:7.1f}s] {m}", flush=True)  # noqa
    curves = {}
    for name in args.only or SECTIONS:
        if name == "cdf":
            cdf_section(log, cfg, say, curves)
        else:
            SECTIONS[name](log, cfg, say)
        text = tables(log.rows, cfg)
        atomic_write(os.path.join(cfg.out, "redundancy.md"), text + "\n")
    if curves or any(r["section"] == "lambda" for r in log.rows):
        plot(log.rows, curves, cfg, os.path.join(cfg.out, "redundancy.png"))
    print(tables(log.rows, cfg))


if __name__ == "__main__":
    main()
