"""Direct runs: a policy's own algorithm called on the generated instance, no engine.

A sweep's ``direct`` engine (``engines = ["direct"]``) runs what the papers' own
experiments run: the policy's schedule, computed by its pure function on the instance a
generator kind makes, evaluated as the algorithm defines it. For a compute-only workload
offline, a moldable or an MSJO workload with shuffle delays, or a redundancy workload,
that is exactly what the joint simulator replays (``sim``: the job models are thin
shells over these functions; ``tests/test_sweep_direct.py`` checks the two agree), so
``direct`` is the same run without the engine's objects and events. It also takes the
algorithms' own options, which the engines do not:

========== =============================================================================
kind       a run
========== =============================================================================
packing,   ``get_compute_policy(name).schedule(compute workload, **options)``: offline the
google     policy's schedule; ``online = true`` re-plans by the policy's own online rule
           (SynchPack at epochs ``tau_k = tau0 growth^k``, ``tau0_factor`` x the mean
           inter-arrival time; PSRS at arrivals; the others at every event), which no
           engine does; ``growth``, ``tau0_factor``
moldable   ``controller.moldable.schedule(instance, name, **options)`` (DEMT's
           ``shuffles``, ``seed``)
msjo       the MSJO policy on the cluster (so-mars's ``interval``; ``error = e``: the
           policy plans on lengths off by up to +-e, ``perturb`` seeded 100 + the
           workload's seed, and its plan is re-timed on the true lengths); the schedule
           is verified. Task-level policies (t-mars, h-mares, stf, htwf) are scored on
           ``sum_u w_u C_u`` (``objective = "tasks"``) with the per-task weights of
           ``task_weights = true``
redundancy the exact event simulator (:func:`controller.redundancy.simulate`: ``beta``,
           ``assign``, ``slot``) on the instance, without the 250,000 job objects of the
           paper's setting as a workload; free checkpoints only (``checkpoint_bytes`` >
           0 is refused: its transfers need the network, engine ``sim``)
========== =============================================================================

A run gives what an engine's run gives the store: the run row (objective ``jobs``: times
are ``C_j - r_j``; ``sum_wc``, ``makespan``, the bounds on the same instance), one row per
job (redundancy: with its ``work``; columns, not dicts: 250,000 rows travel as arrays)
and, for MSJO, one per task. Instances and bounds are cached per worker process: the
policies of one workload share them.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

#: the engine name a spec uses for direct runs
DIRECT = "direct"


@dataclass
class Result:
    """A direct run's outcome, per job (arrays in the instance's job order).

    ``total`` is the objective (``sum w C`` over jobs, or ``sum_u w_u C_u`` when
    ``objective`` is ``"tasks"``); ``tasks``: columns of one row per task, or None;
    ``job_columns``: extra per-job columns; ``extra``: extra run columns."""

    ids: tuple
    weight: np.ndarray
    release: np.ndarray
    completion: np.ndarray
    total: float
    makespan: float
    seconds: float
    objective: str = "jobs"
    tasks: dict | None = None
    job_columns: dict = field(default_factory=dict)
    extra: dict = field(default_factory=dict)


class Family:
    """How the direct engine runs the workloads of some generator kinds."""

    kinds: tuple = ()

    def instance(self, workload: str, fabric: str):
        """The instance of a run's workload (canonical JSON of its workload and fabric)."""
        raise NotImplementedError  # pragma: no cover - interface

    def run(self, inst, policy: str, options: dict, key: tuple) -> Result:
        """``policy`` with ``options`` on ``inst``, the instance of ``key`` (the run's
        workload and fabric as canonical JSON)."""
        raise NotImplementedError  # pragma: no cover - interface

    def bound(self, workload: str, fabric: str, name: str, policy: str) -> float | None:
        """The LP bound ``name`` (a spec's bound name) of the run's instance."""
        from experiments.sweep.execute import bound_of
        return bound_of(workload, fabric, name, policy)


def _joint(workload: str, fabric: str):
    from experiments.sweep.execute import build_workload
    return build_workload(workload, fabric)


class Compute(Family):
    """Compute jobs alone: a compute policy's own schedule, offline or online."""

    kinds = ("packing", "google")

    def instance(self, workload, fabric):
        return _joint(workload, fabric).compute

    def run(self, cw, policy, options, key):
        from controller.compute import get_compute_policy
        opts = dict(options)
        factor = opts.pop("tau0_factor", None)
        if factor is not None:
            arr = np.unique(cw.arrays.job_release)
            opts["tau0"] = float(factor) * (float(np.mean(np.diff(arr))) if len(arr) > 1
                                            else 1.0)
        t = time.perf_counter()
        s = get_compute_policy(policy).schedule(cw, **opts)
        secs = time.perf_counter() - t
        a = s.arrays
        return Result(a.job_ids, a.job_weight, a.job_release, s.job_completion,
                      s.weighted_completion, s.makespan, secs,
                      extra={"replans": int(s.info.get("replans", 1))})


class Moldable(Family):
    """Moldable jobs: the algorithm's schedule (both criteria: minsum, makespan)."""

    kinds = ("moldable",)

    def instance(self, workload, fabric):
        from controller.jobmodels.moldable import moldable_instance
        return moldable_instance(_joint(workload, fabric))

    def run(self, a, policy, options, key):
        from controller.moldable import schedule
        t = time.perf_counter()
        s = schedule(a, policy, **options)
        return Result(a.ids, a.weight, np.zeros(a.n), s.end, s.minsum, s.makespan,
                      time.perf_counter() - t)


class MSJO(Family):
    """MapReduce server jobs with shuffle delays: an MSJO policy's verified schedule."""

    kinds = ("msjo",)

    def instance(self, workload, fabric):
        from emulate.io.generators import generate_instance
        w, f = json.loads(workload), json.loads(fabric)
        if w["params"].get("shuffle_bytes"):
            raise ValueError("engine direct runs msjo workloads with shuffle delays; "
                             "shuffle coflows (shuffle_bytes > 0) need an engine (sim)")
        return generate_instance("msjo", seed=w["seed"], ports=f["ports"],
                                 cores=f["cores"], rate_bps=f["rate_bps"],
                                 params=w["params"])

    def run(self, cluster, policy, options, key):
        from controller.msjo import LEVEL, get_policy
        from controller.msjo.generators import perturb
        from controller.msjo.schedule import retime, verify
        opts = dict(options)
        error = opts.pop("error", None)
        a = cluster.arrays
        if policy == "t-mars" and "lp" not in opts:
            opts["lp"] = _task_lp(*key)
        t = time.perf_counter()
        if error is None:
            s = get_policy(policy)(a, **opts)
        else:
            plan = get_policy(policy)(perturb(cluster, float(error),
                                              seed=100 + json.loads(key[0])["seed"]
                                              ).arrays, **opts)
            s = retime(a, plan)
        secs = time.perf_counter() - t
        verify(s)
        task = LEVEL[policy] == "task"
        names = [f"{a.job_ids[j]}.{'m' if m else 'r'}{k}" for j, m, k in
                 zip(a.job.tolist(), a.is_map.tolist(), _index_in_stage(a).tolist())]
        tasks = {"id": names, "stage": [n.rsplit(".", 1)[0] + (".map" if m else ".reduce")
                                        for n, m in zip(names, a.is_map.tolist())],
                 "job": [a.job_ids[j] for j in a.job.tolist()],
                 "machine": [f"m{m}" for m in s.machine.tolist()],
                 "start": s.start, "end": s.end,
                 "preemptions": np.zeros(len(names), dtype=np.int64)}
        return Result(a.job_ids, a.job_weight, a.job_release, s.job_completion,
                      s.task_cost if task else s.job_cost, s.makespan, secs,
                      objective="tasks" if task else "jobs", tasks=tasks)

    def bound(self, workload, fabric, name, policy):
        from controller.msjo import LEVEL
        if name == "auto":
            name = "task" if LEVEL.get(policy) == "task" else "cls"
        if name == "cls":
            return _cls_lp(workload, fabric).value
        if name == "task":
            return _task_lp(workload, fabric).value
        raise ValueError(f"bound {name!r} does not bound an msjo workload (cls, task)")


class Redundancy(Family):
    """Redundancy with checkpointing: the exact event simulation of the online policy."""

    kinds = ("redundancy",)

    def instance(self, workload, fabric):
        from emulate.io.generators import generate_instance
        w, f = json.loads(workload), json.loads(fabric)
        return generate_instance("redundancy", seed=w["seed"], ports=f["ports"],
                                 cores=f["cores"], rate_bps=f["rate_bps"],
                                 params=w["params"])

    def run(self, inst, policy, options, key):
        from controller.redundancy import simulate
        r = simulate(inst, policy, **options)
        return Result(inst.ids, np.ones(inst.n_jobs), inst.arrival, r.completion,
                      float(r.completion.sum()), float(r.completion.max()), r.wall_seconds,
                      job_columns={"work": inst.work},
                      extra={"checkpoints": int(r.checkpoints), "beta": float(r.beta)})

    def bound(self, workload, fabric, name, policy):
        if name == "auto":
            return None
        raise ValueError(f"bound {name!r}: no LP bounds a redundancy workload (auto: none)")


FAMILIES = {k: f for f in (Compute(), Moldable(), MSJO(), Redundancy()) for k in f.kinds}


def family_of(workload: dict) -> Family:
    """The family that runs ``workload`` (a run's workload parameters) directly."""
    kind = workload.get("kind")
    if kind not in FAMILIES:
        raise ValueError(f"engine {DIRECT} runs generated workloads of the kinds "
                         f"{', '.join(FAMILIES)}; this run's workload is "
                         f"{kind or 'a file'} (use engine sim)")
    if float(workload.get("params", {}).get("checkpoint_bytes", 0) or 0) > 0:
        raise ValueError(f"engine {DIRECT} simulates free checkpoints; checkpoint_bytes > 0 "
                         f"moves every checkpoint's state over the fabric (use engine sim "
                         f"with a network policy, e.g. srpt+r+sebf)")
    return FAMILIES[kind]


@lru_cache(maxsize=8)
def _instance(kind: str, workload: str, fabric: str):
    return FAMILIES[kind].instance(workload, fabric)


def run_direct(workload: str, fabric: str, policy: str, options: dict) -> Result:
    """Run ``policy`` with ``options`` on the instance of ``workload`` / ``fabric``
    (canonical JSON, as :mod:`experiments.sweep.execute` passes them); options may also
    be in the name (``laps+r@beta=0.3``: :func:`controller.registry.parse_options`)."""
    from controller.registry import parse_options
    name, named = parse_options(policy)
    both = sorted(k for k in set(named) & set(options) if named[k] != options[k])
    if both:
        raise ValueError(f"option {both[0]!r} of {policy!r} given twice, in the name and "
                         f"as a spec option")
    w = json.loads(workload)
    return family_of(w).run(_instance(w["kind"], workload, fabric), name,
                            {**named, **options}, (workload, fabric))


@lru_cache(maxsize=64)
def direct_bound(workload: str, fabric: str, name: str, policy: str) -> float | None:
    """The bound ``name`` of a direct run's instance (cached per worker)."""
    return family_of(json.loads(workload)).bound(workload, fabric, name,
                                                 policy.partition("@")[0])


# ------------------------------------------------------------------------------ msjo
@lru_cache(maxsize=8)
def _cls_lp(workload: str, fabric: str):
    """CLS-LPP of an msjo run's cluster (an ``LPResult``)."""
    from controller.msjo.lp import solve_cls_lp
    return solve_cls_lp(_instance("msjo", workload, fabric).arrays)


@lru_cache(maxsize=8)
def _task_lp(workload: str, fabric: str):
    """The task-level LP of an msjo run's cluster (an ``LPResult``; T-MarS uses it)."""
    from controller.msjo.lp import solve_task_lp
    return solve_task_lp(_instance("msjo", workload, fabric).arrays)


def _index_in_stage(a) -> np.ndarray:
    """Per task, its index among its job's maps (a map) or reduces (a reduce)."""
    first = np.where(a.is_map, a.job_start[a.job], a.job_reduce_start[a.job])
    return np.arange(len(a.job)) - first
