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

Every run is appended to ``<out>/mapreduce.json`` as soon as it finishes (written to a
temporary file, then renamed: an interrupted run keeps what it finished); the tables go
to ``<out>/mapreduce.md``. ``--write-workloads DIR`` also writes every workload as JSON
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
import time
from dataclasses import asdict, dataclass

import numpy as np

from controller.jobs import JointWorkload, compute_lower_bound, mapreduce_jobs
from emulate.engines import engines, get_engine
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


def make_workload(cfg: Config, setting: str, seed: int) -> JointWorkload:
    """The seeded workload of one setting (same seed -> same jobs in both settings)."""
    if setting not in SETTINGS:
        raise ValueError(f"unknown setting {setting!r}; known: {', '.join(SETTINGS)}")
    return mapreduce_jobs(seed, n_jobs=cfg.jobs, ports=cfg.ports, cores=cfg.cores,
                          rate_bps=cfg.rate_bps,
                          mean_interarrival=cfg.gap if setting == "arrivals" else None,
                          name=f"mapreduce-{setting}-s{seed}")


def run(cfg: Config, verbose: bool = True) -> tuple[list[dict], str]:
    """Run every pair on every workload; return the rows and the tables (markdown)."""
    os.makedirs(cfg.out, exist_ok=True)
    path = os.path.join(cfg.out, "mapreduce.json")
    rows: list[dict] = []
    t_start = time.perf_counter()
    for setting in cfg.settings:
        for seed in cfg.seeds:
            w = make_workload(cfg, setting, seed)
            if cfg.write_workloads:
                write_json(w, os.path.join(cfg.write_workloads, f"{w.name}.json"))
            lp = compute_lower_bound(w, "lp1").value
            a = w.compute.arrays
            for c in cfg.compute:
                for n in cfg.network:
                    t0 = time.perf_counter()
                    r = get_engine("sim").run(w, f"{c}+{n}")
                    versus = {}
                    if cfg.engine != "sim":
                        sim = r
                        r = get_engine(cfg.engine).run(w, f"{c}+{n}")
                        err = np.abs((r.job_completion - r.job_release) /
                                     (sim.job_completion - sim.job_release) - 1)
                        versus = {"sim_weighted_completion": sim.total_weighted_job_completion,
                                  "job_error_median": float(np.median(err)),
                                  "job_error_max": float(err.max()),
                                  "job_errors": err.tolist(),
                                  "emulation": r.extra.pop("emulation")}
                    doc = r.to_json()
                    shuffles = [x["cct"] for x in doc["coflows"] if x["id"] in w.shuffles]
                    rows.append({
                        "setting": setting, "seed": seed, "workload": w.name,
                        "compute": c, "network": n, "pair": f"{c}+{n}",
                        "weighted_completion": r.total_weighted_job_completion,
                        "weighted_mean_job_time": r.total_weighted_job_delay / w.total_weight,
                        "mean_job_time": float(np.mean(r.job_completion - r.job_release)),
                        "makespan": r.makespan, "mean_shuffle_cct": float(np.mean(shuffles)),
                        "lp1": lp, "ratio": r.total_weighted_job_completion / lp,
                        "jobs": len(w.jobs), "tasks": a.n_tasks, "shuffles": len(w.shuffles),
                        "seconds": time.perf_counter() - t0, "engine": cfg.engine,
                        **versus, **r.extra})
                    atomic_write(path, json.dumps({"config": asdict(cfg), "rows": rows},
                                                  indent=1) + "\n")
                    if verbose:
                        x = rows[-1]
                        vs = (f"  jobs vs sim: median {x['job_error_median']:.1%} max "
                              f"{x['job_error_max']:.1%}" if versus else "")
                        print(f"[{time.perf_counter() - t_start:6.1f}s] {setting} s{seed} "
                              f"{x['pair']:<24} sum wC {x['weighted_completion']:9.1f} "
                              f"x LP1 {x['ratio']:.2f}{vs}", flush=True)
    text = tables(rows, cfg)
    atomic_write(os.path.join(cfg.out, "mapreduce.md"), text + "\n")
    return rows, text


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

        best = min(((c, n) for c in cfg.compute for n in cfg.network),
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
                cells.append(f"{mean(c, n, 'weighted_completion'):.1f}{star} "
                             f"(x{mean(c, n, 'ratio'):.2f})")
            out.append("| " + " | ".join(cells) + " |")
        out.append("")
        out.append(f"{setting}: mean shuffle CCT (s) / weighted mean job time (s)")
        out.append("| " + " | ".join(head) + " |")
        out.append("|" + "---|" * len(head))
        for c in cfg.compute:
            out.append("| " + " | ".join(
                [c] + [f"{mean(c, n, 'mean_shuffle_cct'):.2f} / "
                       f"{mean(c, n, 'weighted_mean_job_time'):.2f}" for n in cfg.network])
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
                                 f"{max(r['job_error_max'] for r in v):.1%}" if v else "")
                out.append("| " + " | ".join(cells) + " |")
            out.append("")
    return "\n".join(out)


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
    args = p.parse_args(argv)

    def names(s):
        return tuple(x.strip() for x in s.split(",") if x.strip())

    cfg = Config(jobs=args.jobs, gap=args.gap, seeds=tuple(range(1 if args.quick else
                                                                  args.seeds)),
                 settings=names(args.settings), compute=names(args.compute),
                 network=names(args.network), out=args.out,
                 write_workloads=args.write_workloads, engine=args.engine)
    _, text = run(cfg)
    print(text)


if __name__ == "__main__":
    main()
