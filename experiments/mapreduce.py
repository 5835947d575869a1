"""MapReduce jobs on machines and network together: compute+network policy pairs compared.

The workload (:func:`controller.jobs.mapreduce_jobs`, seeded): ``jobs`` MapReduce jobs on
8 hosts x 2 cores x 10 Mbit/s (a fabric the emulation can carry: design.md), each a map
stage with data locality (2 local machines, 2x slower elsewhere), a shuffle whose flows are
made at run time from where the maps finished to where the reducers are placed, a reduce
stage, and for about a third of the jobs a second shuffle and reduce stage. Two settings:

* ``arrivals``: jobs arrive as a Poisson process (mean gap ``gap`` seconds);
* ``batch``: every job at time 0 (the offline setting).

Every pair of a compute policy ({SynchPack-3, PSRS, Tetris-P, FIFO} by default) and a
network policy ({LP-coflow, Varys SEBF, per-flow fair sharing}) runs in the joint
simulator (``emulate.sim.jobsim``). The table gives, per setting, the weighted job completion
``sum_j w_j C_j`` (mean over seeds) and its ratio to the LP1 bound of the stages
(``controller.jobs.compute_lower_bound``: valid for every pair; it has no network time,
hence the large ratios). The best pair of each setting is marked with ``*``.

With ``--engine mininet`` (root) every pair also runs on the emulation: tasks on the
agents of the emulated hosts, flows on real switches (``controller.joint_runtime``); the
tables then give the emulated figures and, per pair, how far each job's time is from the
joint simulator's (``|T_emulated / T_simulated - 1|``, median and max over jobs).

The runs are a sweep (:func:`spec_of`; ``experiments/specs/mapreduce.toml`` is the
spec of the defaults) on Dask (:mod:`experiments.sweep`): each run is written to the
results store ``<out>/store`` as it finishes, so an interrupted experiment continues
where it stopped when run again, and ``coflowemu results <out>/store`` queries it. The
rows go to ``<out>/mapreduce.json`` and the tables to ``<out>/mapreduce.md``.
``--write-workloads DIR`` also writes every workload as JSON
(``coflowemu run DIR/mapreduce-arrivals-s0.json --policy synchpack-3+sebf`` replays one;
the emulation runs the same files).

Run::

    .venv/bin/python -m experiments.mapreduce                  # 12 pairs x 2 settings x 3 seeds
    .venv/bin/python -m experiments.mapreduce --quick          # one seed, smoke run
    .venv/bin/python -m experiments.mapreduce --compute synchpack-1,synchpack-2,jsq-mw \\
        --network sincronia,aalo --write-workloads results/mapreduce/workloads
    sudo .venv/bin/python -m experiments.mapreduce --engine mininet --quick \\
        --out results/mapreduce-emulation          # both engines, about 30 min
"""
from __future__ import annotations

import argparse
import json
import os
from dataclasses import asdict, dataclass

import numpy as np

from controller.jobs import JointWorkload, mapreduce_jobs
from emulate.engines import engines
from emulate.io.records import atomic_write
from emulate.io.traces import write_json

COMPUTE = ("synchpack-3", "psrs", "tetris-p", "fifo")
NETWORK = ("lp-coflow", "sebf", "fair")
SETTINGS = ("arrivals", "batch")


@dataclass
class Config:
    """Sizes and parameters (the defaults run in about a minute)."""

    jobs: int = 12
    ports: int = 8
    cores: int = 2
    rate_bps: float = 10e6
    gap: float = 2.0
    seeds: tuple = (0, 1, 2)
    settings: tuple = SETTINGS
    compute: tuple = COMPUTE
    network: tuple = NETWORK
    out: str = "results/mapreduce"
    write_workloads: str | None = None
    engine: str = "sim"
    workers: int | None = None          # local Dask workers (default: one per core)
    scheduler: str | None = None        # or a running Dask scheduler's address


def make_workload(cfg: Config, setting: str, seed: int) -> JointWorkload:
    """The seeded workload of one setting (same seed -> same jobs in both settings)."""
    if setting not in SETTINGS:
        raise ValueError(f"unknown setting {setting!r}; known: {', '.join(SETTINGS)}")
    return mapreduce_jobs(seed, n_jobs=cfg.jobs, ports=cfg.ports, cores=cfg.cores,
                          rate_bps=cfg.rate_bps,
                          mean_interarrival=cfg.gap if setting == "arrivals" else None,
                          name=f"mapreduce-{setting}-s{seed}")


def spec_of(cfg: Config):
    """The sweep spec of ``cfg`` (:mod:`experiments.sweep`): the ``mapreduce`` kind with
    ``mean_interarrival`` = ``gap`` (arrivals) or 0 (batch), every compute+network pair,
    bound LP1, on the simulator (and on ``cfg.engine`` too).
    ``experiments/specs/mapreduce.toml`` is the spec of the defaults."""
    from experiments.sweep.spec import parse_spec
    for s in cfg.settings:
        if s not in SETTINGS:
            raise ValueError(f"unknown setting {s!r}; known: {', '.join(SETTINGS)}")
    return parse_spec({
        "name": "mapreduce" if cfg.engine == "sim" else f"mapreduce-{cfg.engine}",
        "engines": ["sim"] + ([cfg.engine] if cfg.engine != "sim" else []),
        "bounds": ["lp1"],
        "workloads": [{"kind": "mapreduce", "seeds": list(cfg.seeds),
                       "params": {"n_jobs": cfg.jobs,
                                  "mean_interarrival": [_gap(cfg, s) for s in
                                                        cfg.settings]}}],
        "fabrics": [{"ports": cfg.ports, "cores": cfg.cores, "rate": cfg.rate_bps}],
        "policies": [{"specs": [f"{c}+{n}" for c in cfg.compute for n in cfg.network]}]})


def _gap(cfg: Config, setting: str) -> float:
    return float(cfg.gap) if setting == "arrivals" else 0.0


def run(cfg: Config, verbose: bool = True, tables_only: bool = False
        ) -> tuple[list[dict], str]:
    """Run every pair on every workload as a sweep (store: ``<out>/store``, resumable;
    ``tables_only``: run nothing, read the store); return the rows and the tables
    (markdown)."""
    from experiments.sweep.runner import completed_sweep
    from experiments.sweep.store import open_results
    os.makedirs(cfg.out, exist_ok=True)
    if cfg.write_workloads:
        for setting in cfg.settings:
            for seed in cfg.seeds:
                w = make_workload(cfg, setting, seed)
                write_json(w, os.path.join(cfg.write_workloads, f"{w.name}.json"))
    spec = spec_of(cfg)
    store = os.path.join(cfg.out, "store")
    db = open_results(store) if tables_only else completed_sweep(
        spec, store, workers=cfg.workers, scheduler=cfg.scheduler, progress=verbose)
    rows = _rows(db, spec, cfg)
    atomic_write(os.path.join(cfg.out, "mapreduce.json"),
                 json.dumps({"config": asdict(cfg), "rows": rows}, indent=1) + "\n")
    text = tables(rows, cfg)
    atomic_write(os.path.join(cfg.out, "mapreduce.md"), text + "\n")
    return rows, text


def _rows(db, spec, cfg: Config) -> list[dict]:
    """The experiment's rows (one per setting, seed and pair on ``cfg.engine``, in that
    order) from the sweep's store (each run's row of the current code version, else its
    latest: :func:`~experiments.sweep.store.spec_rows`); on the emulation with the
    per-job error against the simulator's run of the same workload and pair."""
    from experiments.sweep.paper import against_simulator
    from experiments.sweep.store import ok_rows
    runs = spec.runs()
    recorded = {int(r["spec_index"]): r for r in ok_rows(db, spec).to_dict("records")}
    rows_of = {(r.engine, r.workload["params"]["mean_interarrival"], r.workload["seed"],
                r.policy): recorded[i] for i, r in enumerate(runs) if i in recorded}
    errors = {r["run_key"]: r for r in against_simulator(db, spec, cfg.engine)} \
        if cfg.engine != "sim" else {}
    jobs = db.sql("select run_key, id, weight, jct from jobs order by run_key, id").df()
    jobs = {k: g for k, g in jobs.groupby("run_key")}
    counts = dict(db.sql("select run_key, count(*) from tasks group by 1").fetchall())
    shuffles = {k: (n, m) for k, n, m in db.sql(
        "select run_key, count(*), avg(cct) from coflows group by 1").fetchall()}
    rows = []
    for setting in cfg.settings:
        for seed in cfg.seeds:
            for c in cfg.compute:
                for n in cfg.network:
                    r = rows_of.get((cfg.engine, _gap(cfg, setting), seed, f"{c}+{n}"))
                    if r is None:
                        continue
                    key = r["run_key"]
                    j = jobs[key]
                    w = j["weight"].to_numpy()
                    row = {
                        "setting": setting, "seed": seed,
                        "workload": f"mapreduce-{setting}-s{seed}",
                        "compute": c, "network": n, "pair": f"{c}+{n}",
                        "weighted_completion": r["sum_wc"],
                        "weighted_mean_job_time": float(np.dot(w, j["jct"]) / w.sum()),
                        "mean_job_time": float(j["jct"].mean()),
                        "makespan": r["makespan"], "mean_shuffle_cct": shuffles[key][1],
                        "lp1": r["lp_bound"], "ratio": r["ratio"], "jobs": len(j),
                        "tasks": counts.get(key, 0), "shuffles": shuffles[key][0],
                        "seconds": r["run_seconds"], "engine": cfg.engine,
                        "code_version": r["code_version"]}
                    if cfg.engine != "sim":
                        e = errors[key]
                        row.update(sim_weighted_completion=e["sim_sum_wc"],
                                   job_error_median=e["job_error_median"],
                                   job_error_max=e["job_error_max"],
                                   job_errors=e["job_errors"])
                    rows.append(row)
    return rows


def tables(rows: list[dict], cfg: Config) -> str:
    """Per setting: compute policies (rows) x network policies (columns)."""
    out = []
    for setting in cfg.settings:
        sel = [r for r in rows if r["setting"] == setting]
        if not sel:
            continue
        seeds = sorted({r["seed"] for r in sel})
        r0 = sel[0]

        def mean(c, n, key):
            v = [r[key] for r in sel if r["compute"] == c and r["network"] == n]
            return float(np.mean(v)) if v else np.nan

        best = min(((c, n) for c in cfg.compute for n in cfg.network
                    if not np.isnan(mean(c, n, "weighted_completion"))),
                   key=lambda p: mean(*p, "weighted_completion"))
        what = ("Poisson arrivals, mean gap " + f"{cfg.gap:g} s" if setting == "arrivals"
                else "all jobs at time 0")
        where = " on the emulation" if cfg.engine != "sim" else ""
        out.append(f"{setting}{where}: {r0['jobs']} MapReduce jobs ({what}), "
                   f"{cfg.ports} hosts x "
                   f"{cfg.cores} cores x {cfg.rate_bps / 1e6:g} Mbit/s; sum_j w_j C_j "
                   f"(x LP1 bound), mean of seeds {', '.join(map(str, seeds))}; "
                   f"* = best pair")
        head = ["compute \\ network"] + list(cfg.network)
        out.append("| " + " | ".join(head) + " |")
        out.append("|" + "---|" * len(head))
        for c in cfg.compute:
            cells = [c]
            for n in cfg.network:
                star = "*" if (c, n) == best else ""
                cells.append(_cell(f"{mean(c, n, 'weighted_completion'):.1f}{star} "
                                   f"(x{mean(c, n, 'ratio'):.2f})"))
            out.append("| " + " | ".join(cells) + " |")
        out.append("")
        out.append(f"{setting}: mean shuffle CCT (s) / weighted mean job time (s)")
        out.append("| " + " | ".join(head) + " |")
        out.append("|" + "---|" * len(head))
        for c in cfg.compute:
            out.append("| " + " | ".join(
                [c] + [_cell(f"{mean(c, n, 'mean_shuffle_cct'):.2f} / "
                             f"{mean(c, n, 'weighted_mean_job_time'):.2f}")
                       for n in cfg.network])
                + " |")
        out.append("")
        if cfg.engine != "sim":
            out.append(f"{setting}: per-job |time emulated / time simulated - 1|, "
                       f"median / max over jobs (worst seed)")
            out.append("| " + " | ".join(head) + " |")
            out.append("|" + "---|" * len(head))
            for c in cfg.compute:
                cells = [c]
                for n in cfg.network:
                    v = [r for r in sel if r["compute"] == c and r["network"] == n]
                    cells.append(f"{max(r['job_error_median'] for r in v):.1%} / "
                                 f"{max(r['job_error_max'] for r in v):.1%}" if v else "-")
                out.append("| " + " | ".join(cells) + " |")
            out.append("")
    return "\n".join(out)


def _cell(text: str) -> str:
    """A table cell; ``-`` for a pair with no recorded run (a sweep still running)."""
    return "-" if "nan" in text else text


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", default=Config.out)
    p.add_argument("--jobs", type=int, default=Config.jobs)
    p.add_argument("--seeds", type=int, default=len(Config.seeds), help="seeds 0..N-1")
    p.add_argument("--gap", type=float, default=Config.gap,
                   help="mean gap between arrivals (s), setting 'arrivals'")
    p.add_argument("--settings", default=",".join(SETTINGS))
    p.add_argument("--compute", default=",".join(COMPUTE), help="compute policies")
    p.add_argument("--network", default=",".join(NETWORK), help="network policies")
    p.add_argument("--write-workloads", metavar="DIR",
                   help="also write every workload as JSON into DIR")
    p.add_argument("--quick", action="store_true", help="one seed (smoke run)")
    p.add_argument("--engine", choices=tuple(engines()), default="sim",
                   help="mininet (root): run every pair on the emulation too")
    p.add_argument("--workers", type=int, help="local Dask workers (default: one per core)")
    p.add_argument("--scheduler", help="a running Dask scheduler (tcp://host:port)")
    p.add_argument("--tables-only", action="store_true",
                   help="run nothing; the tables of what <out>/store holds")
    args = p.parse_args(argv)

    def names(s):
        return tuple(x.strip() for x in s.split(",") if x.strip())

    cfg = Config(jobs=args.jobs, gap=args.gap, seeds=tuple(range(1 if args.quick else
                                                                  args.seeds)),
                 settings=names(args.settings), compute=names(args.compute),
                 network=names(args.network), out=args.out,
                 write_workloads=args.write_workloads, engine=args.engine,
                 workers=args.workers, scheduler=args.scheduler)
    from experiments.sweep.store import StoreError
    try:
        _, text = run(cfg, tables_only=args.tables_only)
    except StoreError as e:
        p.exit(2, f"error: {e}\n")
    print(text)


if __name__ == "__main__":
    main()
