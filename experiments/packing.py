"""Reproduce the packing-and-placement paper's comparisons on a Google-like workload.

Two comparisons, as in the paper's Section 7:

* **preemptive, original trace** (every task on its own machine; ``ComputeWorkload.pinned``):
  SynchPack-3 vs PSRS vs Tetris-P, ratio to LP3;
* **non-preemptive, with placement** (``n_local`` local machines, a random
  ``remote_fraction`` of the others at ``alpha`` times the duration): SynchPack-2 vs JSQ-MW
  vs Tetris-NP, ratio to LP2;

each **offline** (all jobs at time 0; metric: weighted average completion time
``sum w C / sum w``) for equal, random [1, 10] and priority-class (``2^class``) weights and
for a sweep of the remote penalty ``alpha``; and **online** (Poisson arrivals at a target
load; metric: weighted average delay ``sum w (C - arrival) / sum w``; SynchPack re-plans at
epochs ``tau_k = tau_0 2^k`` with ``tau_0`` a multiple of the mean inter-arrival time,
PSRS at every arrival, Tetris and JSQ-MW at every event). Results are averaged over seeds.
The "ratio" column is ``sum w C`` over the LP value (the LP has the release constraints in
the online setting), the "gain" columns are how much lower SynchPack's metric is than each
baseline's, in percent.

The offline comparisons are a sweep (:func:`spec_of`; ``experiments/specs/packing.toml``
is the spec of the defaults) run on Dask by :mod:`experiments.sweep`: each compute policy
alone in the joint simulator, each run written to the results store ``<out>/store`` as
it finishes (an interrupted run continues where it stopped). The online comparisons
re-plan at the paper's epochs (``tau0``, ``growth``), which the engines do not (they
re-plan at every event), so they call the policies' ``schedule`` here. Every row is
appended to ``<out>/packing.json`` as soon as it is computed (written to a temporary
file, then ``os.replace``); the tables are written to ``<out>/packing.md`` and printed.

Run::

    .venv/bin/python -m experiments.packing            # defaults, about two minutes
    .venv/bin/python -m experiments.packing --quick    # a smoke run in seconds

References
----------
Shafiee & Ghaderi, Section 7 (Table 1, Figures 2 and 3); algorithms.md 2.8.
"""
from __future__ import annotations

import argparse
import os
import time
from dataclasses import asdict, dataclass, field

import numpy as np

from controller.compute import get_compute_policy
from controller.compute.generators import packing_paper
from controller.compute.lp import lp2, lp3
from controller.compute.model import ComputeWorkload
from emulate.io.records import RowLog, atomic_write

PREEMPTIVE = ("synchpack-3", "psrs", "tetris-p")
NONPREEMPTIVE = ("synchpack-2", "jsq-mw", "tetris-np")
# online: SynchPack with the doubling epochs tau_k = tau_0 2^k (the paper's rule as we read
# it) and, for comparison, with fixed epochs tau_k = gap (growth 1)
ONLINE_PREEMPTIVE = ("synchpack-3", "synchpack-3/fixed", "psrs", "tetris-p")
ONLINE_NONPREEMPTIVE = ("synchpack-2", "synchpack-2/fixed", "jsq-mw", "tetris-np")


@dataclass
class Config:
    """Sizes and parameters of the experiment (defaults run in about two minutes)."""

    n_jobs: int = 60
    n_machines: int = 6
    size_median: float = 0.15
    max_tasks: int = 20
    n_local: int = 3
    remote_fraction: float = 0.3
    alpha: float = 2.0
    seeds: tuple = (0, 1, 2)
    schemes: tuple = ("equal", "random", "priority")
    alphas: tuple = (1.5, 2.0, 3.0, 4.0)
    online_jobs: int = 60
    online_seeds: tuple = (0, 1)
    load: float = 0.8
    loads: tuple = (0.5, 0.7, 0.9)
    tau0_factor: float = 2.0
    growth: float = 2.0
    fixed_tau0_factor: float = 1.0
    out: str = "results/packing"
    extra: dict = field(default_factory=dict)
    workers: int | None = None          # local Dask workers of the offline sweep
    scheduler: str | None = None        # or a running Dask scheduler's address


def make_workload(cfg: Config, seed: int, *, alpha: float | None = None, scheme="equal",
                  n_jobs: int | None = None, online: bool = False,
                  load: float | None = None) -> ComputeWorkload:
    """The Google-like workload of one seed, weighted by ``scheme``; online: Poisson
    arrivals whose mean inter-arrival time gives the target ``cfg.load``
    (:func:`controller.compute.generators.packing_paper`)."""
    return packing_paper(n_jobs or cfg.n_jobs, cfg.n_machines, seed=seed,
                         size_median=cfg.size_median, max_tasks=cfg.max_tasks,
                         n_local=cfg.n_local, remote_fraction=cfg.remote_fraction,
                         alpha=cfg.alpha if alpha is None else alpha, scheme=scheme,
                         load=(load or cfg.load) if online else None)


def _evaluate(log: RowLog, w: ComputeWorkload, policies, lp_value: float, *, setting: str,
              seed: int, scheme: str, alpha: float, online: bool, cfg: Config,
              load: float | None = None):
    tw = w.total_weight
    gap = 0.0
    if online:
        arr = np.unique([j.release for j in w.jobs])
        gap = float(np.mean(np.diff(arr))) if len(arr) > 1 else 1.0
    for label in policies:
        name = label.split("/")[0]
        pol = get_compute_policy(name)
        opts = {"online": online}
        if online and name.startswith("synchpack"):
            if label.endswith("/fixed"):
                opts.update(tau0=cfg.fixed_tau0_factor * gap, growth=1.0)
            else:
                opts.update(tau0=cfg.tau0_factor * gap, growth=cfg.growth)
        t0 = time.perf_counter()
        s = pol.schedule(w, **opts)
        secs = time.perf_counter() - t0
        metric = (s.weighted_delay if online else s.weighted_completion) / tw
        log.add({"setting": setting, "seed": seed, "scheme": scheme, "alpha": alpha,
                 "load": load, "policy": label, "online": online, "metric": metric,
                 "weighted_completion": s.weighted_completion, "lp": lp_value,
                 "ratio": s.weighted_completion / lp_value, "seconds": secs,
                 "replans": s.info.get("replans", 1), "jobs": len(w.jobs),
                 "tasks": w.arrays.n_tasks})


def run(cfg: Config, verbose: bool = True) -> tuple[list[dict], str]:
    """Run every comparison; return the rows and the tables (markdown)."""
    log = RowLog(os.path.join(cfg.out, "packing.json"), asdict(cfg))
    t_start = time.perf_counter()

    def say(msg):
        if verbose:
            print(f"[{time.perf_counter() - t_start:6.1f}s] {msg}", flush=True)

    for row in _offline_rows(cfg, verbose):
        log.add(row)
    say("offline comparisons (the sweep's parts preemptive, nonpreemptive, alpha)")
    for seed in cfg.online_seeds:
        for scheme in cfg.schemes:
            w = make_workload(cfg, seed, scheme=scheme, n_jobs=cfg.online_jobs, online=True)
            pw = w.pinned()
            _evaluate(log, pw, ONLINE_PREEMPTIVE, lp3(pw).value, setting="online-preemptive",
                      seed=seed, scheme=scheme, alpha=cfg.alpha, online=True, cfg=cfg)
            _evaluate(log, w, ONLINE_NONPREEMPTIVE, lp2(w).value,
                      setting="online-nonpreemptive", seed=seed, scheme=scheme,
                      alpha=cfg.alpha, online=True, cfg=cfg)
            say(f"online seed {seed} {scheme}")
        for load in cfg.loads:
            w = make_workload(cfg, seed, scheme="equal", n_jobs=cfg.online_jobs, online=True,
                              load=load)
            pw = w.pinned()
            _evaluate(log, pw, ONLINE_PREEMPTIVE, lp3(pw).value, setting="load-preemptive",
                      seed=seed, scheme="equal", alpha=cfg.alpha, online=True, cfg=cfg,
                      load=load)
            _evaluate(log, w, ONLINE_NONPREEMPTIVE, lp2(w).value,
                      setting="load-nonpreemptive", seed=seed, scheme="equal",
                      alpha=cfg.alpha, online=True, cfg=cfg, load=load)
            say(f"online load sweep seed {seed} load {load}")
    text = tables(log.rows)
    atomic_write(os.path.join(cfg.out, "packing.md"), text)
    say(f"done: {os.path.join(cfg.out, 'packing.json')}, {os.path.join(cfg.out, 'packing.md')}")
    return log.rows, text


#: the spec's parts -> the settings of the tables
_PARTS = {"preemptive": "offline-preemptive", "nonpreemptive": "offline-nonpreemptive",
          "alpha": "alpha-sweep"}


def spec_of(cfg: Config):
    """The offline comparisons of ``cfg`` as a sweep spec (:mod:`experiments.sweep`): the
    ``packing`` generator kind run by the joint simulator with each compute policy alone
    (offline, that is the policy's own schedule), LP3 / LP2 bounds.
    ``experiments/specs/packing.toml`` is the spec of the defaults."""
    from emulate.io.generators import params_of
    from experiments.sweep.spec import parse_spec
    defaults = params_of("packing")
    given = {"n_jobs": cfg.n_jobs, "size_median": cfg.size_median, "max_tasks": cfg.max_tasks,
             "n_local": cfg.n_local, "remote_fraction": cfg.remote_fraction}
    base = {k: v for k, v in given.items() if v != defaults[k]}
    alpha = {"alpha": cfg.alpha} if cfg.alpha != defaults["alpha"] else {}

    def part(name, bound, params, policies):
        return {"name": name, "bounds": [bound], "policies": [{"specs": list(policies)}],
                "workloads": [{"kind": "packing", "seeds": list(cfg.seeds),
                               "params": {**base, **params}}]}
    return parse_spec({"name": "packing", "fabrics": [{"ports": cfg.n_machines, "cores": 1}],
                       "parts": [
        part("preemptive", "lp3", {**alpha, "scheme": list(cfg.schemes), "pinned": True},
             PREEMPTIVE),
        part("nonpreemptive", "lp2", {**alpha, "scheme": list(cfg.schemes)}, NONPREEMPTIVE),
        part("alpha", "lp2", {"alpha": list(cfg.alphas)}, NONPREEMPTIVE)]})


def _offline_rows(cfg: Config, verbose: bool) -> list[dict]:
    """Run the offline comparisons as a sweep (store ``<out>/store``: resumable) and
    return their rows in this module's format."""
    from experiments.sweep.runner import completed_sweep
    spec = spec_of(cfg)
    db = completed_sweep(spec, os.path.join(cfg.out, "store"), workers=cfg.workers,
                         scheduler=cfg.scheduler, progress=verbose)
    keys = {r.key: r for r in spec.runs()}
    weight = dict(db.sql("select run_key, sum(weight) from jobs group by 1").fetchall())
    tasks = dict(db.sql("select run_key, count(*) from tasks group by 1").fetchall())
    order = {k: i for i, k in enumerate(keys)}
    rows = []
    for r in db.sql("select * from runs where sweep = 'packing'").df().to_dict("records"):
        run = keys.get(r["run_key"])
        if run is None:             # a run of another code version or configuration
            continue
        p = run.workload["params"]
        rows.append((order[run.key], {
            "setting": _PARTS[run.part], "seed": run.workload["seed"],
            "scheme": p.get("scheme", "equal"), "alpha": p.get("alpha", cfg.alpha),
            "load": None, "policy": run.policy, "online": False,
            "metric": r["sum_wc"] / weight[r["run_key"]],
            "weighted_completion": r["sum_wc"], "lp": r["lp_bound"], "ratio": r["ratio"],
            "seconds": r["run_seconds"], "jobs": int(r["n_items"]),
            "tasks": int(tasks[r["run_key"]])}))
    return [row for _, row in sorted(rows, key=lambda x: x[0])]


def _mean(rows, **match):
    sel = [r for r in rows if all(r[k] == v for k, v in match.items())]
    if not sel:
        return None
    return (float(np.mean([r["metric"] for r in sel])), float(np.mean([r["ratio"] for r in sel])),
            len(sel))


def _table(rows, setting, policies, key, keys, metric_name):
    ours = [p for p in policies if p.startswith("synchpack")]
    base = [p for p in policies if not p.startswith("synchpack")]
    head = [key] + [f"{p} {metric_name}" for p in policies] + \
        [f"{p} /LP" for p in policies] + \
        [f"{o} gain vs {b}" if len(ours) > 1 else f"gain vs {b}" for o in ours for b in base]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for k in keys:
        vals = {p: _mean(rows, setting=setting, policy=p, **{key: k}) for p in policies}
        if any(v is None for v in vals.values()):
            continue
        cells = [str(k)] + [f"{vals[p][0]:.1f}" for p in policies] + \
            [f"{vals[p][1]:.3f}" for p in policies] + \
            [f"{100 * (vals[b][0] - vals[o][0]) / vals[b][0]:+.1f}%" for o in ours
             for b in base]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def tables(rows) -> str:
    """Markdown tables of the mean metric, ratio to the LP and SynchPack's gain."""
    schemes = list(dict.fromkeys(r["scheme"] for r in rows))
    alphas = sorted({r["alpha"] for r in rows if r["setting"] == "alpha-sweep"})
    loads = sorted({r["load"] for r in rows if r["setting"].startswith("load")})
    nseeds = len({r["seed"] for r in rows if r["setting"].startswith("offline")})
    nonline = len({r["seed"] for r in rows if r["setting"].startswith("online")})
    epochs = ("synchpack-x: epochs tau_k = tau_0 2^k, tau_0 = 2 x mean inter-arrival; "
              "synchpack-x/fixed: epochs of one mean inter-arrival time")
    out = [f"Offline, preemptive, original trace (single machine per task); weighted average "
           f"completion time (s), mean of {nseeds} seeds; /LP = sum wC / LP3",
           _table(rows, "offline-preemptive", PREEMPTIVE, "scheme", schemes, "wC/w"), "",
           f"Offline, non-preemptive, with placement; weighted average completion time (s), "
           f"mean of {nseeds} seeds; /LP = sum wC / LP2",
           _table(rows, "offline-nonpreemptive", NONPREEMPTIVE, "scheme", schemes, "wC/w"), "",
           "Offline, non-preemptive, remote penalty sweep (equal weights)",
           _table(rows, "alpha-sweep", NONPREEMPTIVE, "alpha", alphas, "wC/w"), "",
           f"Online, preemptive; weighted average delay (s), mean of {nonline} seeds; "
           f"/LP = sum wC / LP3 with releases; {epochs}",
           _table(rows, "online-preemptive", ONLINE_PREEMPTIVE, "scheme", schemes, "delay"),
           "",
           "Online, non-preemptive; weighted average delay (s); /LP = sum wC / LP2 with "
           "releases",
           _table(rows, "online-nonpreemptive", ONLINE_NONPREEMPTIVE, "scheme", schemes,
                  "delay"), "",
           "Online, preemptive, load sweep (equal weights); weighted average delay (s)",
           _table(rows, "load-preemptive", ONLINE_PREEMPTIVE, "load", loads, "delay"), "",
           "Online, non-preemptive, load sweep (equal weights); weighted average delay (s)",
           _table(rows, "load-nonpreemptive", ONLINE_NONPREEMPTIVE, "load", loads, "delay"),
           ""]
    return "\n".join(out)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", default=Config.out)
    p.add_argument("--jobs", type=int, default=Config.n_jobs)
    p.add_argument("--machines", type=int, default=Config.n_machines)
    p.add_argument("--seeds", type=int, default=len(Config.seeds))
    p.add_argument("--online-jobs", type=int, default=Config.online_jobs)
    p.add_argument("--load", type=float, default=Config.load)
    p.add_argument("--tau0-factor", type=float, default=Config.tau0_factor)
    p.add_argument("--quick", action="store_true", help="tiny sizes, one seed (smoke run)")
    p.add_argument("--workers", type=int, help="local Dask workers (default: one per core)")
    p.add_argument("--scheduler", help="a running Dask scheduler (tcp://host:port)")
    args = p.parse_args(argv)
    cfg = Config(n_jobs=args.jobs, n_machines=args.machines, seeds=tuple(range(args.seeds)),
                 online_jobs=args.online_jobs, load=args.load, tau0_factor=args.tau0_factor,
                 out=args.out, workers=args.workers, scheduler=args.scheduler)
    if args.quick:
        cfg = Config(n_jobs=12, n_machines=4, seeds=(0,), alphas=(1.5, 3.0), online_jobs=12,
                     online_seeds=(0,), loads=(0.5, 0.9), out=args.out, workers=args.workers,
                     scheduler=args.scheduler)
    _, text = run(cfg)
    print(text)


if __name__ == "__main__":
    main()
