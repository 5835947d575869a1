"""Synthetic compute workloads: Google-cluster-like jobs and MapReduce-like jobs.

Both take a seed (or a ``numpy.random.Generator``) and are deterministic given it.

**Google-cluster-like** (modelled on the production class of the 2011 Google trace, as the
paper uses it; the trace itself is not shipped):

* tasks per job: ``1 + Zipf(task_zipf)``, at most ``max_tasks`` (multi-task jobs only;
  heavy-tailed: most jobs have a few tasks, some have many);
* durations (integer seconds, >= 1): a per-job log-normal base (median
  ``duration_median``, shape ``duration_sigma``) times a per-task log-normal jitter
  (shape ``task_jitter``), at most ``duration_max``;
* memory demand (the packed resource, as a fraction of a machine's ``capacity``): a per-job
  log-normal base (median ``size_median``, shape ``size_sigma``) with per-task jitter,
  clipped to ``[size_min, size_max]``;
* placement: ``n_local`` machines chosen at random run the task at its duration (its
  data is there); a random ``remote_fraction`` of the other machines run it in
  ``ceil(alpha x duration)`` (the remote penalty); ``remote_fraction = 0`` leaves only
  local machines, ``n_local = 1, remote_fraction = 0`` is the single-machine setting;
* priority class per job: 0..3 with probabilities ``priority_probs``;
* arrivals: all at 0 (offline), or a Poisson process with ``mean_interarrival`` seconds.

Weight schemes (:func:`weights`): ``"equal"`` (1), ``"random"`` (uniform in [1, 10]) and
``"priority"`` (``2 ** priority class``).

**MapReduce-like**: a map stage of ``n_map`` tasks with data locality (``n_local`` local
machines, remote penalty ``alpha`` elsewhere) followed by a reduce stage of ``n_reduce``
tasks that may run on any machine at the same speed (they pull from every map), with
``after = (map,)``.

References
----------
Wilkes, "More Google cluster data" (2011); Shafiee & Ghaderi, Section 7 (data set and
placement model); algorithms.md 2.8.
"""
from __future__ import annotations

import numpy as np

from controller.compute.model import ComputeJob, ComputeWorkload, Machine, Stage, Task

__all__ = ["google_like", "mapreduce_like", "packing_paper", "weights", "WEIGHT_SCHEMES"]

WEIGHT_SCHEMES = ("equal", "random", "priority")


def _rng(seed) -> np.random.Generator:
    return seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)


def _placement(rng, M, n_local, remote_fraction, alpha, p):
    ms = rng.permutation(M)
    local = ms[:min(n_local, M)]
    others = ms[min(n_local, M):]
    n_rem = int(round(remote_fraction * len(others)))
    remote = others[:n_rem]
    pl = {f"m{int(i)}": float(p) for i in local}
    pl.update({f"m{int(i)}": float(np.ceil(alpha * p)) for i in remote})
    return pl


def weights(workload: ComputeWorkload, scheme: str, seed=0) -> np.ndarray:
    """Job weights under ``scheme`` ("equal", "random" in [1, 10], "priority" = 2^class)."""
    n = len(workload.jobs)
    if scheme == "equal":
        return np.ones(n)
    if scheme == "random":
        return _rng(seed).uniform(1.0, 10.0, n)
    if scheme == "priority":
        return np.array([2.0 ** j.priority for j in workload.jobs])
    raise ValueError(f"unknown weight scheme {scheme!r}; known: {', '.join(WEIGHT_SCHEMES)}")


def google_like(n_jobs: int = 40, n_machines: int = 10, *, seed=0, capacity: float = 1.0,
                max_tasks: int = 20, task_zipf: float = 1.8, duration_median: float = 60.0,
                duration_sigma: float = 1.0, task_jitter: float = 0.3,
                duration_max: float = 3600.0, size_median: float = 0.08,
                size_sigma: float = 0.7, size_min: float = 0.01, size_max: float = 0.8,
                n_local: int = 3, remote_fraction: float = 0.3, alpha: float = 2.0,
                priority_probs=(0.55, 0.25, 0.12, 0.08),
                mean_interarrival: float | None = None,
                weight_scheme: str = "equal") -> ComputeWorkload:
    """A Google-cluster-like workload; see the module docstring for every parameter."""
    rng = _rng(seed)
    if n_jobs < 1 or n_machines < 1:
        raise ValueError("need n_jobs >= 1 and n_machines >= 1")
    machines = [Machine(f"m{i}", (float(capacity),)) for i in range(n_machines)]
    t_arr = 0.0
    jobs = []
    for j in range(n_jobs):
        if mean_interarrival:
            t_arr += float(rng.exponential(mean_interarrival)) if j else 0.0
        K = int(min(max_tasks, 1 + rng.zipf(task_zipf)))
        base_d = duration_median * np.exp(duration_sigma * rng.standard_normal())
        base_s = size_median * np.exp(size_sigma * rng.standard_normal())
        prio = int(rng.choice(len(priority_probs), p=np.asarray(priority_probs) /
                              np.sum(priority_probs)))
        tasks = []
        for k in range(K):
            p = float(np.clip(np.round(base_d * np.exp(task_jitter * rng.standard_normal())),
                              1.0, duration_max))
            a = float(np.clip(base_s * np.exp(0.2 * rng.standard_normal()), size_min,
                              size_max)) * capacity
            a = round(a, 4)
            tasks.append(Task(f"j{j}.t{k}", (a,), _placement(rng, n_machines, n_local,
                                                             remote_fraction, alpha, p),
                              round(t_arr, 3)))
        jobs.append(ComputeJob(f"j{j}", [Stage(f"j{j}.s0", tasks)], 1.0, prio))
    w = ComputeWorkload(machines, jobs, name=f"google-like-{n_jobs}x{n_machines}")
    return w.with_weights(weights(w, weight_scheme, rng)) if weight_scheme != "equal" else w


def packing_paper(n_jobs: int = 60, n_machines: int = 6, *, seed=0,
                  size_median: float = 0.15, max_tasks: int = 20, n_local: int = 3,
                  remote_fraction: float = 0.3, alpha: float = 2.0, scheme: str = "equal",
                  load: float | None = None, pinned: bool = False) -> ComputeWorkload:
    """The packing paper's workload of one seed (Shafiee & Ghaderi, Section 7, as
    ``experiments/packing.py`` runs it): :func:`google_like` jobs weighted by ``scheme``
    (:func:`weights`, seed ``1000 + seed``); with ``load``, Poisson arrivals whose mean
    gap gives that load of the machines' capacity (seed ``2000 + seed``); ``pinned``:
    every task on its own machine of the original trace (:meth:`ComputeWorkload.pinned`,
    the preemptive comparison's setting)."""
    w = google_like(n_jobs, n_machines, seed=seed, size_median=size_median,
                    max_tasks=max_tasks, n_local=n_local, remote_fraction=remote_fraction,
                    alpha=alpha)
    w = w.with_weights(weights(w, scheme, seed=1000 + seed))
    if load:
        a = w.arrays
        volume = float((a.size * a.pmin).sum())
        mean_gap = volume / (len(w.jobs) * load * float(a.capacity.sum()))
        rng = np.random.default_rng(2000 + seed)
        arr = np.concatenate([[0.0], np.cumsum(rng.exponential(mean_gap, len(w.jobs) - 1))])
        w = w.with_releases(np.round(arr, 3))
    return w.pinned() if pinned else w


def mapreduce_like(n_jobs: int = 10, n_machines: int = 8, *, seed=0, capacity: float = 1.0,
                   n_map=(2, 8), n_reduce=(1, 4), map_median: float = 20.0,
                   reduce_median: float = 30.0, sigma: float = 0.5, map_size: float = 0.15,
                   reduce_size: float = 0.3, n_local: int = 2, remote_fraction: float = 1.0,
                   alpha: float = 2.0, mean_interarrival: float | None = None,
                   weight_scheme: str = "equal") -> ComputeWorkload:
    """MapReduce-like two-stage jobs (map -> reduce); see the module docstring."""
    rng = _rng(seed)
    machines = [Machine(f"m{i}", (float(capacity),)) for i in range(n_machines)]
    all_m = {f"m{i}" for i in range(n_machines)}
    jobs = []
    t_arr = 0.0
    for j in range(n_jobs):
        if mean_interarrival:
            t_arr += float(rng.exponential(mean_interarrival)) if j else 0.0
        nm = int(rng.integers(n_map[0], n_map[1] + 1))
        nr = int(rng.integers(n_reduce[0], n_reduce[1] + 1))
        maps, reds = [], []
        for k in range(nm):
            p = float(max(1.0, np.round(map_median * np.exp(sigma * rng.standard_normal()))))
            a = round(float(np.clip(map_size * np.exp(0.3 * rng.standard_normal()), 0.02,
                                    0.9)) * capacity, 4)
            maps.append(Task(f"j{j}.map{k}", (a,), _placement(rng, n_machines, n_local,
                                                              remote_fraction, alpha, p),
                             round(t_arr, 3)))
        for k in range(nr):
            p = float(max(1.0, np.round(reduce_median * np.exp(sigma *
                                                                rng.standard_normal()))))
            a = round(float(np.clip(reduce_size * np.exp(0.3 * rng.standard_normal()), 0.02,
                                    0.9)) * capacity, 4)
            reds.append(Task(f"j{j}.reduce{k}", (a,), {m: p for m in sorted(all_m)},
                             round(t_arr, 3)))
        jobs.append(ComputeJob(f"j{j}", [Stage(f"j{j}.map", maps),
                                         Stage(f"j{j}.reduce", reds, after=(f"j{j}.map",))],
                               1.0, int(rng.integers(0, 4))))
    w = ComputeWorkload(machines, jobs, name=f"mapreduce-like-{n_jobs}x{n_machines}")
    return w.with_weights(weights(w, weight_scheme, rng)) if weight_scheme != "equal" else w
