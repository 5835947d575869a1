"""Reproduce the synthetic comparisons of Ling et al. (MSJO, Section 5; algorithms.md 3.7).

Every figure is a *ratio to the LP lower bound*: ``sum w_j C_j`` over CLS-LPP (job
level; all subset constraints, so at least CND-LPP and the ratio at most what a CND
denominator gives: 1-2 % lower, the CND/CLS column of ``benchmarks/msjo.py``) or ``sum w_u C_u`` over the task-level LP (task
level). Sections:

* ``jobs``: random scenario, 50 machines, 10..100 jobs: MarS, MARES, HUWF, HJWF;
* ``uniform``: the uniform scenario (30 + 10 tasks of 10 / 15 s), same sweep;
* ``machines100``: random scenario on 100 machines;
* ``error``: MarS planning on lengths off by up to +-0 / 25 / 50 / 100 %, evaluated with
  the true lengths (:func:`~controller.msjo.schedule.retime`);
* ``tasks``: task level, 100 and 1,000 tasks (jobs of about 10 tasks, Poisson(6) maps,
  per-task weights, 10 machines: our choice, the paper's is lost): T-MarS, H-MARES,
  STF, HTWF;
* ``semionline``: SO-MarS with batch intervals of 50 s and 100 s against the offline
  MARES, HUWF, HJWF (which know every job in advance), 50 jobs;
* ``emulation`` (only with ``--engine``; ``mininet`` needs root): small random-scenario
  workloads on 8 hosts x 2 cores x 10 Mbit/s (the fabric the emulation carries), written
  by ``coflowemu generate --kind msjo``: jobs whose **shuffle is a real coflow** under
  MarS / MARES / HJWF / HUWF with a network policy (``mars+sebf``, ``mars+lp-coflow``,
  ``mars+fair``, ...), and jobs with **shuffle delays** (no coflows; the network half of
  ``mars+fair`` idles) whose delays the emulated hosts' agents and the controller keep.
  Each pair runs in the joint simulator and on the engine; the table gives ``sum w_j
  C_j`` on both and the per-job error ``|T_engine / T_sim - 1|`` (``T`` = completion -
  release), median and max over jobs, as ``experiments.mapreduce`` does.
  :func:`run_one` runs one (workload, policy, engine) and returns its record.

Every row is written to ``<out>/msjo.json`` as soon as it is computed
(:func:`emulate.io.records.atomic_write`), the tables to ``<out>/msjo.md`` and stdout.

Run::

    .venv/bin/python -m experiments.msjo            # the full run (see docs/msjo.md)
    .venv/bin/python -m experiments.msjo --quick    # a smoke run in seconds
    flock /tmp/coflowemu-mininet.lock .venv/bin/python -m experiments.msjo \
        --only emulation --engine mininet --out results/msjo-emulation   # root, ~12 min

References
----------
Ling et al., Section 5.1-5.3 (Figs. 7-18); docs/msjo.md has our tables beside theirs.
"""
from __future__ import annotations

import argparse
import os
import time
from dataclasses import asdict, dataclass

import numpy as np

from controller.msjo import get_policy
from emulate.engines import EngineError, engines, get_engine
from controller.msjo.generators import perturb, synthetic
from controller.msjo.lp import solve_cls_lp, solve_task_lp
from controller.msjo.schedule import retime, verify
from emulate.io.records import RowLog, atomic_write

JOB_POLICIES = ("mars", "mares", "huwf", "hjwf")
TASK_POLICIES = ("t-mars", "h-mares", "stf", "htwf")

PAPER = {  # the paper's numbers we compare with (algorithms.md 3.7)
    "jobs": "MarS 1.32 -> ~1.38; at 10 jobs MARES 1.58, HUWF 1.77, HJWF 1.86; "
            "at 20 jobs 1.96 / 2.17 / 2.25",
    "uniform": "MarS ~1.15; MARES 1.48 -> 1.88",
    "machines100": "MarS 1.09 -> 1.01; at 100 jobs better by 0.42 / 0.75 / 0.79",
    "error": "100 % prediction error costs MarS at most +0.09",
    "tasks": "100 tasks: T-MarS 1.03, H-MARES 1.19, STF 1.31, HTWF 1.42; "
             "1000 tasks: T-MarS <= 1.21, H-MARES 1.6, STF and HTWF > 2.2",
    "semionline": "50 s: SO-MarS 1.09 vs 1.35 / 1.63 / 1.75; 100 s: < 1.19 vs > 1.53",
}


@dataclass
class Config:
    jobs: tuple = (10, 20, 50, 100)
    seeds: tuple = (0, 1)
    big: int = 100            # from this many jobs (or tasks, x10) on, the first seed only
    errors: tuple = (0.0, 0.25, 0.5, 1.0)
    error_jobs: int = 50
    tasks: tuple = (100, 1000)
    task_machines: int = 10
    intervals: tuple = (50.0, 100.0)
    so_jobs: int = 50
    out: str = "results/msjo"
    # emulation section: workloads of `coflowemu generate --kind msjo` on 8 x 2 x 10 Mbit/s
    engine: str | None = None
    emu_seeds: tuple = (0, 1)
    emu_params: tuple = (("scenario", "random"), ("n_jobs", 4), ("mean_maps", 5.0),
                         ("length_scale", 0.2))
    emu_shuffle_bytes: float = 1e6
    emu_delay_factor: float = 0.2
    emu_pairs: tuple = ("mars+sebf", "mars+lp-coflow", "mars+fair", "mares+sebf",
                        "hjwf+sebf", "huwf+sebf")
    emu_delay_pairs: tuple = ("mars+fair", "mares+fair", "hjwf+fair")


QUICK = Config(jobs=(10, 20), seeds=(0,), big=100, error_jobs=10, tasks=(100,), so_jobs=10,
               errors=(0.0, 1.0), emu_seeds=(0,), emu_pairs=("mars+sebf", "hjwf+fair"),
               emu_delay_pairs=("mars+fair",))



def _run(name, a, **kw):
    t = time.perf_counter()
    s = get_policy(name)(a, **kw)
    verify(s)
    return s, time.perf_counter() - t


def job_sweep(log, cfg, section, scenario, machines, say):
    for n in cfg.jobs:
        for seed in (cfg.seeds[:1] if n >= cfg.big else cfg.seeds):
            a = synthetic(n, scenario=scenario, machines=machines, seed=seed).arrays
            lp = solve_cls_lp(a)
            for name in JOB_POLICIES:
                s, sec = _run(name, a)
                log.add(section=section, x=n, seed=seed, policy=name,
                        ratio=s.job_cost / lp.value, seconds=sec, lp_seconds=lp.seconds)
            say(f"{section} jobs={n} seed={seed} tasks={a.n_tasks} lp {lp.seconds:.2f}s")


def error_sweep(log, cfg, say):
    for seed in cfg.seeds:
        c = synthetic(cfg.error_jobs, seed=seed)
        lp = solve_cls_lp(c.arrays)
        for e in cfg.errors:
            plan = get_policy("mars")(perturb(c, e, seed=100 + seed).arrays)
            s = retime(c.arrays, plan)
            verify(s)
            log.add(section="error", x=e, seed=seed, policy="mars",
                    ratio=s.job_cost / lp.value)
        say(f"error seed={seed}")


def task_sweep(log, cfg, say):
    for n in cfg.tasks:
        for seed in (cfg.seeds[:1] if n >= 10 * cfg.big else cfg.seeds):
            c = synthetic(max(1, round(n / 9.5)), machines=cfg.task_machines, mean_maps=6,
                          task_weights=True, seed=seed)
            a = c.arrays
            lp = solve_task_lp(a)
            for name in TASK_POLICIES:
                s, sec = _run(name, a, **({"lp": lp} if name == "t-mars" else {}))
                log.add(section="tasks", x=n, seed=seed, policy=name, n_tasks=a.n_tasks,
                        ratio=s.task_cost / lp.value, seconds=sec, lp_seconds=lp.seconds)
            say(f"tasks n={a.n_tasks} seed={seed} lp {lp.seconds:.1f}s")


def semionline_sweep(log, cfg, say):
    for seed in cfg.seeds:
        a = synthetic(cfg.so_jobs, seed=seed).arrays
        lp = solve_cls_lp(a)
        for iv in cfg.intervals:
            s, sec = _run("so-mars", a, interval=iv)
            log.add(section="semionline", x=iv, seed=seed, policy="so-mars",
                    ratio=s.job_cost / lp.value, seconds=sec)
            for name in ("mares", "huwf", "hjwf"):
                s, sec = _run(name, a)
                log.add(section="semionline", x=iv, seed=seed, policy=name,
                        ratio=s.job_cost / lp.value, seconds=sec)
        say(f"semionline seed={seed}")


def emulation_workload(cfg: Config, seed: int, shuffled: bool):
    """The emulation section's workload: ``coflowemu generate --kind msjo --ports 8
    --cores 2 --rate 10e6 --seed S -p ...`` with ``shuffle_bytes`` (shuffle coflows) or
    ``delay_factor`` (shuffle delays)."""
    from emulate.io.generators import generate
    params = dict(cfg.emu_params)
    if shuffled:
        params["shuffle_bytes"] = cfg.emu_shuffle_bytes
    else:
        params["delay_factor"] = cfg.emu_delay_factor
    return generate("msjo", seed=seed, ports=8, cores=2, rate_bps=10e6, params=params)


def run_one(w, policy: str, engine: str = "sim", *, sim=None) -> dict:
    """Run joint msjo workload ``w`` under ``policy`` (``compute+network``) on ``engine``
    and return its record: ``sum w_j C_j``, makespan, the per-job times; on an engine other
    than the simulator also the simulator's (``sim``, a
    :class:`~emulate.sim.jobsim.JointResult` of the same pair, run here if None) and the
    per-job error ``|T_engine / T_sim - 1|`` (``T`` = completion - release): median, max,
    every job's."""
    t0 = time.perf_counter()
    r = get_engine(engine).run(w, policy)
    row = {"workload": w.name, "policy": policy, "engine": engine, "jobs": len(w.jobs),
           "tasks": w.compute.arrays.n_tasks, "coflows": len(w.coflows),
           "weighted_completion": r.total_weighted_job_completion, "makespan": r.makespan,
           "job_times": (r.job_completion - r.job_release).tolist(),
           "seconds": time.perf_counter() - t0}
    if w.coflows:
        row["mean_shuffle_cct"] = float(np.mean(r.network.coflow_completion -
                                                r.network.workload.arrays.release))
    if engine != "sim":
        sim = sim if sim is not None else get_engine("sim").run(w, policy)
        err = np.abs((r.job_completion - r.job_release) /
                     (sim.job_completion - sim.job_release) - 1)
        row.update(sim_weighted_completion=sim.total_weighted_job_completion,
                   job_error_median=float(np.median(err)), job_error_max=float(err.max()),
                   job_errors=err.tolist(), emulation=r.extra.get("emulation"))
    return row


def emulation_sweep(log, cfg, say):
    for shuffled, pairs in ((True, cfg.emu_pairs), (False, cfg.emu_delay_pairs)):
        for seed in cfg.emu_seeds:
            w = emulation_workload(cfg, seed, shuffled)
            for pair in pairs:
                x = "shuffle coflows" if shuffled else "delays"
                try:
                    row = run_one(w, pair, cfg.engine)
                except EngineError as e:     # recorded; the sweep goes on
                    log.add(section="emulation", x=x, seed=seed, workload=w.name,
                            policy=pair, engine=cfg.engine, error=str(e).splitlines()[0])
                    say(f"emulation {w.name} {pair} on {cfg.engine}: failed: "
                        f"{log.rows[-1]['error']}")
                    continue
                log.add(section="emulation", x=x, seed=seed, **row)
                err = (f", per-job error median {row['job_error_median']:.1%} max "
                       f"{row['job_error_max']:.1%}" if "job_error_max" in row else "")
                say(f"emulation {w.name} {pair} on {cfg.engine}: sum wC "
                    f"{row['weighted_completion']:.1f}{err}")


def emulation_table(rows) -> str:
    sel = [r for r in rows if r["section"] == "emulation" and "error" not in r]
    failed = [r for r in rows if r["section"] == "emulation" and "error" in r]
    if not sel:
        return ""
    eng = sel[0]["engine"]
    out = [f"### emulation: MSJO workloads on {eng}, 8 hosts x 2 cores x 10 Mbit/s\n",
           "Per pair: sum w_j C_j in the joint simulator and on the engine (mean over "
           "seeds), per-job |T_engine / T_sim - 1| median and max (worst seed).\n",
           "| shuffle | pair | sum wC sim | sum wC " + eng + " | job error median | max |",
           "|---|---|---|---|---|---|"]
    for kind in ("shuffle coflows", "delays"):
        for pair in dict.fromkeys(r["policy"] for r in sel if r["x"] == kind):
            v = [r for r in sel if r["x"] == kind and r["policy"] == pair]
            simc = np.mean([r.get("sim_weighted_completion", r["weighted_completion"])
                            for r in v])
            errs = (f"{max(r['job_error_median'] for r in v):.1%} | "
                    f"{max(r['job_error_max'] for r in v):.1%}"
                    if "job_error_max" in v[0] else " | ")
            out.append(f"| {kind} | {pair} | {simc:.1f} | "
                       f"{np.mean([r['weighted_completion'] for r in v]):.1f} | {errs} |")
    out += [f"\nFailed run: {r['workload']} {r['policy']}: {r['error']}" for r in failed]
    return "\n".join(out) + "\n"


SECTIONS = {
    "jobs": ("ratio to CLS-LPP, random scenario, 50 machines", "jobs", JOB_POLICIES),
    "uniform": ("ratio to CLS-LPP, uniform scenario, 50 machines", "jobs", JOB_POLICIES),
    "machines100": ("ratio to CLS-LPP, random scenario, 100 machines", "jobs",
                    JOB_POLICIES),
    "error": ("MarS's ratio to CLS-LPP with prediction error (random, 50 machines)",
              "error", ("mars",)),
    "tasks": ("task level: ratio to the task LP (10 machines)", "tasks", TASK_POLICIES),
    "semionline": ("SO-MarS vs offline baselines, ratio to CLS-LPP", "interval (s)",
                   ("so-mars", "mares", "huwf", "hjwf")),
    "emulation": ("the msjo job model on an engine beside the joint simulator", "", ()),
}


def tables(rows) -> str:
    out = []
    for sec, (title, xname, pols) in SECTIONS.items():
        sel = [r for r in rows if r["section"] == sec]
        if not sel:
            continue
        if sec == "emulation":
            out.append(emulation_table(rows))
            continue
        xs = sorted({r["x"] for r in sel})
        out.append(f"### {sec}: {title}\n\nPaper: {PAPER[sec]}\n")
        out.append("| " + xname + " | " + " | ".join(pols) + " |")
        out.append("|---" * (len(pols) + 1) + "|")
        for x in xs:
            cells = []
            for p in pols:
                v = [r["ratio"] for r in sel if r["x"] == x and r["policy"] == p]
                cells.append(f"{np.mean(v):.3f}" if v else "")
            out.append(f"| {x:g} | " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a smoke run in seconds")
    ap.add_argument("--out", default=None)
    ap.add_argument("--only", nargs="*", choices=list(SECTIONS), default=None)
    ap.add_argument("--engine", choices=tuple(engines()), default=None,
                    help="run the emulation section on this engine (mininet: root)")
    args = ap.parse_args(argv)
    cfg = QUICK if args.quick else Config()
    if args.out:
        cfg.out = args.out
    cfg.engine = args.engine
    os.makedirs(cfg.out, exist_ok=True)
    log = RowLog(os.path.join(cfg.out, "msjo.json"), {"config": asdict(cfg),
                                                   "quick": args.quick})
    t0 = time.perf_counter()
    say = lambda m: print(f"[{time.perf_counter() - t0:7.1f}s] {m}", flush=True)
    only = set(args.only or (set(SECTIONS) - ({"emulation"} if cfg.engine is None else
                                             set())))
    if "emulation" in only and cfg.engine is None:
        ap.error("--only emulation needs --engine (sim or mininet)")
    if "jobs" in only:
        job_sweep(log, cfg, "jobs", "random", 50, say)
    if "uniform" in only:
        job_sweep(log, cfg, "uniform", "uniform", 50, say)
    if "machines100" in only:
        job_sweep(log, cfg, "machines100", "random", 100, say)
    if "error" in only:
        error_sweep(log, cfg, say)
    if "tasks" in only:
        task_sweep(log, cfg, say)
    if "semionline" in only:
        semionline_sweep(log, cfg, say)
    if "emulation" in only:
        emulation_sweep(log, cfg, say)
    text = tables(log.rows)
    atomic_write(os.path.join(cfg.out, "msjo.md"), text)
    print(text)
    return log.rows


if __name__ == "__main__":
    main()
