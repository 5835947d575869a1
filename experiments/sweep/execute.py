"""One run of a sweep, as a Dask task executes it: workload, engine, LP bound, rows.

:func:`execute` builds the run's workload (a seeded generator kind or a file, on the
run's fabric), runs it through ``emulate.engines.get_engine(engine).run(workload,
policy, RunOptions)`` -- the door every command and experiment uses -- or, for engine
``direct``, calls the policy's algorithm on the instance (:mod:`experiments.sweep.direct`),
computes the LP bounds the spec asks for, and returns an :class:`Outcome`: the run's row
and its rows per coflow, job and task (picklable, so a worker on another machine sends
them back to the client, which writes them: :mod:`experiments.sweep.store`). The row
also says where and when the run ran (``worker``: host and process, ``started_at``).

A run that fails (bad parameters, a policy error, an engine error) does not raise: its
outcome has ``status = "failed"`` and the error, so the sweep goes on. Emulation runs
(``engine = "mininet"``) run on the one worker per machine that offers the resource
``mininet`` (:mod:`experiments.sweep.runner`), and the engine itself holds the machine's
Mininet lock while it builds, runs and tears down (:mod:`emulate.mininet.lock`).

Workloads and bounds are cached per worker process (a policy sweep over one workload
generates and bounds it once per worker).
"""
from __future__ import annotations

import json
import os
import socket
import time
import traceback
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from experiments.sweep.direct import DIRECT
from experiments.sweep.spec import Run, canonical

#: the joint workloads' compute LP is solved by ``auto`` up to this many tasks (as ``run``)
AUTO_MAX_TASKS = 1000


@dataclass
class Outcome:
    """What a run gives back: its row (parameters, status, metrics) and detail rows
    (each table a list of dicts, or a dict of equally long columns)."""

    run: dict
    coflows: list = field(default_factory=list)
    jobs: list = field(default_factory=list)
    tasks: list = field(default_factory=list)


def execute(run: Run) -> Outcome:
    """Run ``run``; never raises for a failure of the run itself (see the module doc)."""
    t0, started = time.perf_counter(), time.time()
    try:
        workload, fabric = canonical(run.workload), canonical(run.fabric)
        out = (_direct if run.engine == DIRECT else _engine)(run, workload, fabric)
        out.run.update(status="ok", error=None)
    except Exception as e:  # noqa: BLE001 - every failure of a run is its record
        out = Outcome(run={"status": "failed", "error": _one_line(e)})
        out.run["traceback"] = traceback.format_exc(limit=8)
    out.run.update(parameter_columns(run))
    out.run.update(run_seconds=time.perf_counter() - t0, started_at=started,
                   worker=f"{socket.gethostname()}:{os.getpid()}")
    return out


def _engine(run: Run, workload: str, fabric: str) -> Outcome:
    """An engine's run: ``get_engine(run.engine).run(...)``, its record's rows."""
    from emulate.engines import RunOptions, get_engine
    w = build_workload(workload, fabric)
    opts = RunOptions(policy_options=dict(run.options))
    result = get_engine(run.engine).run(w, run.policy, opts)
    bounds = {b: bound_of(workload, fabric, b, run.policy) for b in run.bounds}
    out = outcome_of_record(result.to_json(next(iter(bounds.values()), None)), run.key,
                            joint=hasattr(w, "machines"))
    out.run.update(bound_columns(bounds))
    return out


def _direct(run: Run, workload: str, fabric: str) -> Outcome:
    """A direct run (:mod:`experiments.sweep.direct`): the policy's algorithm on the
    instance; rows as an engine's (jobs as columns)."""
    from experiments.sweep.direct import direct_bound, run_direct
    res = run_direct(workload, fabric, run.policy, run.options)
    bounds = {b: direct_bound(workload, fabric, b, run.policy) for b in run.bounds}
    lp = next(iter(bounds.values()), None)
    jct = res.completion - res.release
    f = json.loads(fabric)
    w = json.loads(workload)
    row = metrics(jct, res.total, lp, objective=res.objective, makespan=res.makespan,
                  ratio=res.total / lp if lp else None)
    row.update(workload=f"{w['kind']}-s{w['seed']}", ports=f["ports"], cores=f["cores"],
               rate_bps=f["rate_bps"], wall_seconds=res.seconds, **res.extra)
    row.update(bound_columns(bounds))
    n = len(res.ids)
    jobs = {"run_key": [run.key] * n, "id": [str(i) for i in res.ids],
            "weight": np.asarray(res.weight, dtype=np.float64),
            "release": np.asarray(res.release, dtype=np.float64),
            "completion": np.asarray(res.completion, dtype=np.float64), "jct": jct,
            **res.job_columns}
    tasks = None
    if res.tasks is not None:
        tasks = {"run_key": [run.key] * len(res.tasks["id"]), **res.tasks}
    return Outcome(row, jobs=jobs, tasks=tasks or [])


def bound_columns(bounds: dict) -> dict:
    """``bound_<name>`` per bound and ``lp_name``, the first bound's name."""
    return {**{f"bound_{k}": v for k, v in bounds.items()},
            "lp_name": next(iter(bounds), None)}


def metrics(times, total: float, lp: float | None, *, objective: str, makespan: float,
            ratio: float | None) -> dict:
    """The run row's figures: completion-time statistics of ``times`` (seconds: CCTs or
    job times), the objective ``total`` (``sum_wc``), the bound and the ratios."""
    times = np.asarray(times, dtype=np.float64)
    q = np.percentile(times, [50, 95, 99]) if len(times) else [np.nan] * 3
    return {"objective": objective, "n_items": int(len(times)),
            "mean_ct": float(times.mean()) if len(times) else None,
            "p50_ct": float(q[0]), "p95_ct": float(q[1]), "p99_ct": float(q[2]),
            "makespan": float(makespan), "sum_wc": float(total), "lp_bound": lp,
            "ratio": ratio, "ratio_abs": total / lp if lp else None}


def failed(run: Run, error: str) -> Outcome:
    """The outcome of a run that never returned (its worker died, no worker could take it)."""
    o = Outcome(run={"status": "failed", "error": error, "run_seconds": None})
    o.run.update(parameter_columns(run))
    return o


def parameter_columns(run: Run) -> dict:
    """The run's parameters as columns: ``part`` (of a spec with parts), ``kind``,
    ``seed``, ``p_<param>``, ``file``, ``o_<trace option>``, ``fabric_ports`` /
    ``fabric_cores`` / ``fabric_rate_bps`` (as asked for), ``policy``, ``opt_<option>``,
    ``engine``, ``run_key``, ``code_version``, ``label``, ``params`` (all as JSON)."""
    w = run.workload
    cols = {"run_key": run.key, "code_version": run.code_version, "label": run.label,
            "part": run.part, "engine": run.engine, "policy": run.policy,
            "kind": w.get("kind"), "seed": w.get("seed"), "file": w.get("file"),
            "params": json.dumps(run.params(), sort_keys=True)}
    cols.update({f"p_{k}": v for k, v in w.get("params", {}).items()})
    cols.update({f"o_{k}": v for k, v in w.get("options", {}).items()})
    cols.update({f"fabric_{k}": v for k, v in run.fabric.items()})
    cols.update({f"opt_{k}": v for k, v in run.options.items()})
    return cols


def outcome_of_record(doc: dict, key: str, *, joint: bool) -> Outcome:
    """Rows from a run record (``RunResult.to_json`` / ``JointResult.to_json``: what
    ``coflowemu run --json`` prints and ``compare`` wrote per run before it kept its runs
    in a store)."""
    coflows = [{"run_key": key, "id": str(c["id"]), "release": float(c["release"]),
                "completion": float(c["completion"]), "cct": float(c["cct"]),
                "weight": float(c["weight"])} for c in doc.get("coflows", [])]
    jobs = [{"run_key": key, "id": str(j["id"]), "weight": float(j["weight"]),
             "release": float(j.get("release", np.nan)),
             "completion": float(j["completion"]),
             "jct": float(j["completion"]) - float(j.get("release", np.nan))}
            for j in doc.get("jobs", [])]
    tasks = [{"run_key": key, "id": str(t["id"]), "stage": str(t["stage"]),
              "job": str(t["job"]), "machine": str(t["machine"]),
              "start": float(t["start"]), "end": float(t["end"]),
              "preemptions": int(t.get("preemptions", 0))} for t in doc.get("tasks", [])]
    lp = doc.get("lp_lower_bound")
    if joint:
        times = np.array([j["jct"] for j in jobs])
        total = float(doc["total_weighted_job_completion"])
        ratio = total / lp if lp else None
    else:
        times = np.array([c["cct"] for c in coflows])
        total = float(doc["total_weighted_completion"])
        ratio = lp_ratio(total, np.array([c["weight"] for c in coflows]),
                         np.array([c["release"] for c in coflows]), lp)
    rate = doc.get("rate_bps")
    row = metrics(times, total, lp, objective="jobs" if joint else "coflows",
                  makespan=doc["makespan"], ratio=ratio)
    row.update(workload=doc.get("workload"), ports=doc.get("ports"), cores=doc.get("cores"),
               rate_bps=float(rate[0]) if isinstance(rate, list) else rate,
               wall_seconds=float(doc.get("wall_seconds", 0)))
    return Outcome(row, coflows, jobs, tasks)


def lp_ratio(total_weighted_completion: float, weight, release, lp: float | None
             ) -> float | None:
    """The ratio to the LP bound on the CCT basis, ``(sum w C - sum w r) / (LP - sum w
    r)``; None without a bound (or when the bound is no more than ``sum w r``): with trace
    arrival times the release times dominate absolute completion times and would push
    every ratio towards 1."""
    wr = float(np.dot(weight, release))
    if lp is None or lp - wr <= 0:
        return None
    return (total_weighted_completion - wr) / (lp - wr)


# ------------------------------------------------------------------------------ workload
@lru_cache(maxsize=32)
def build_workload(workload: str, fabric: str):
    """The run's workload (cached per process; workloads are immutable)."""
    w, f = json.loads(workload), json.loads(fabric)
    if "kind" in w:
        from emulate.io.generators import generate
        return generate(w["kind"], seed=w["seed"], ports=f["ports"], cores=f["cores"],
                        rate_bps=f["rate_bps"], params=w["params"])
    from emulate.io.traces import read_workload
    opts = dict(w["options"])
    if f["ports"] is not None:
        opts["hosts"] = f["ports"]
    wl = read_workload(w["file"], cores=f["cores"], rate_bps=f["rate_bps"], **opts)
    return wl


@lru_cache(maxsize=64)
def bound_of(workload: str, fabric: str, name: str, policy: str) -> float | None:
    """The LP lower bound ``name`` of the run's workload (``auto``: what ``coflowemu
    run`` reports for it; None where that is none; ``makespan``: the moldable makespan
    bound, on ``C_max``; ``task``: MSJO's task-level LP, on ``sum_u w_u C_u``)."""
    w = build_workload(workload, fabric)
    joint = hasattr(w, "machines")
    if name in ("flow", "coflow", "single"):
        if joint:
            raise ValueError(f"bound {name!r} is a coflow LP; this is a joint workload "
                             f"(bounds lp1, lp2, lp3, moldable, makespan, cls, task)")
        from controller.lp.coflow import solve_coflow_lp, solve_flow_lp
        m = 1 if name == "single" else w.fabric.cores
        solve = solve_flow_lp if name == "flow" else solve_coflow_lp
        return solve(w.arrays, m, w.fabric.rate_bps).value
    if name == "auto" and not joint:
        from controller.lp.bound import lp_bound_for
        return lp_bound_for(w)
    if not joint:
        raise ValueError(f"bound {name!r} bounds joint workloads; this one has coflows only "
                         f"(bounds flow, coflow, single, auto)")
    if name == "auto":
        from controller.jobmodel import DEFAULT_MODEL
        name = {"moldable": "moldable", "msjo": "cls"}.get(w.model)
        if name is None:
            if w.model != DEFAULT_MODEL or sum(len(s.tasks) for s in w.stages) > AUTO_MAX_TASKS:
                return None
            from controller.compute import get_compute_policy
            from controller.policyspec import split_policy
            name = get_compute_policy(split_policy(policy).compute).lower_bound
    if name in ("moldable", "makespan"):
        from controller.jobmodels.moldable import moldable_instance
        from controller.moldable.bounds import makespan_bound, minsum_lp
        if w.model != "moldable":
            raise ValueError(f"bound {name!r} bounds moldable workloads; this is a "
                             f"{w.model} workload")
        return (minsum_lp if name == "moldable" else makespan_bound)(
            moldable_instance(w)).value
    if name in ("cls", "task"):
        from controller.jobmodels.msjo import msjo_cluster
        from controller.msjo.lp import solve_cls_lp, solve_task_lp
        if w.model != "msjo":
            raise ValueError(f"bound {name!r} bounds msjo workloads; this is a {w.model} "
                             f"workload")
        return (solve_cls_lp if name == "cls" else solve_task_lp)(
            msjo_cluster(w)[0].arrays).value
    from controller.jobs import compute_lower_bound
    return compute_lower_bound(w, name).value


def _one_line(e: BaseException) -> str:
    msg = " ".join(str(e).split()) or type(e).__name__
    return f"{type(e).__name__}: {msg}"
