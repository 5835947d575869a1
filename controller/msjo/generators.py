"""The synthetic MSJO workloads of Ling et al. (Section 5.1.1) and prediction error.

Following MARES / OFFA, a workload of ``jobs`` jobs on ``machines`` machines (50 by
default, 100 in the paper's second setting):

* **releases**: Bernoulli arrivals, one trial per time slot of ``slot`` seconds with
  probability ``arrival_p`` (the paper's probability is garbled, "2": we read 1/2); job
  ``k`` is released at the start of the slot of the ``k``-th success (the first at 0 or
  later);
* **task counts**: ``"uniform"``: 30 maps and 10 reduces; ``"random"``: maps ~
  Poisson(30) (at least 1), reduces ~ U{1 .. #maps};
* **lengths**: ``"uniform"``: 10 s per map, 15 s per reduce; ``"random"``: N(10, 5) and
  N(15, 5), truncated above 0 (redrawn until positive);
* **weights**: N(30, 10) truncated above 0, per job (and per task with
  ``task_weights``, for the task-level experiments);
* **shuffle delay**: proportional to the map's length, ``delay_factor`` times it (the
  factor is lost in the text; default 0.1).

``scenario="random"`` draws task counts and lengths at random, ``"uniform"`` neither;
``tasks=`` and ``lengths=`` set them apart.

:func:`perturb` gives the lengths the policies *predict*: each true length times a
factor drawn uniformly from ``[1 - error, 1 + error]`` (``error`` = 1 is the paper's
100 %), kept above 1 % of the true length. The policies plan on the perturbed cluster;
:func:`controller.msjo.schedule.retime` runs their plan with the true lengths.
"""
from __future__ import annotations

import numpy as np

from controller.msjo.model import Cluster, Job, Task

__all__ = ["synthetic", "perturb", "SCENARIOS"]

SCENARIOS = ("random", "uniform")


def _positive_normal(rng, mean, sd, size=None):
    x = rng.normal(mean, sd, size)
    bad = x <= 0
    while np.any(bad):
        x = np.where(bad, rng.normal(mean, sd, np.shape(x)), x)
        bad = x <= 0
    return x


def synthetic(jobs: int, *, scenario: str = "random", machines: int = 50,
              tasks: str | None = None, lengths: str | None = None,
              delay_factor: float = 0.1, arrival_p: float = 0.5, slot: float = 1.0,
              task_weights: bool = False, mean_maps: float = 30.0,
              seed: int | np.random.Generator = 0) -> Cluster:
    """A synthetic MSJO cluster as in the paper's Section 5.1.1.

    Parameters
    ----------
    jobs : int >= 1
    scenario : ``"random"`` or ``"uniform"``, the default for ``tasks`` and ``lengths``
    machines : int
    tasks, lengths : ``"random"``, ``"uniform"`` or None (the scenario's)
    delay_factor : float >= 0, ``d_u = delay_factor * p_u``
    arrival_p : float in (0, 1], Bernoulli arrival probability per slot
    slot : float > 0, seconds per slot
    task_weights : bool, draw a weight per task too
    mean_maps : float, the Poisson mean of the random map count (paper: 30)
    seed : int or numpy Generator

    Examples
    --------
    >>> c = synthetic(3, scenario="uniform", seed=1)
    >>> c.machines, [len(j.maps) for j in c.jobs], c.jobs[0].maps[0].delay
    (50, [30, 30, 30], 1.0)
    """
    if scenario not in SCENARIOS:
        raise ValueError(f"scenario must be one of {SCENARIOS}, got {scenario!r}")
    tasks = tasks or scenario
    lengths = lengths or scenario
    for name, v in (("tasks", tasks), ("lengths", lengths)):
        if v not in SCENARIOS:
            raise ValueError(f"{name} must be one of {SCENARIOS}, got {v!r}")
    if not 0 < arrival_p <= 1:
        raise ValueError(f"arrival_p must be in (0, 1], got {arrival_p!r}")
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    gaps = rng.geometric(arrival_p, size=jobs) - 1          # failures before each success
    releases = (np.cumsum(gaps) + np.arange(jobs)) * slot
    out = []
    for k in range(jobs):
        if tasks == "uniform":
            nm, nr = 30, 10
        else:
            nm = max(1, int(rng.poisson(mean_maps)))
            nr = int(rng.integers(1, nm + 1))
        if lengths == "uniform":
            pm, pr = np.full(nm, 10.0), np.full(nr, 15.0)
        else:
            pm, pr = _positive_normal(rng, 10, 5, nm), _positive_normal(rng, 15, 5, nr)
        w = float(_positive_normal(rng, 30, 10))
        tw = (_positive_normal(rng, 30, 10, nm + nr) if task_weights
              else [None] * (nm + nr))
        maps = tuple(Task(float(p), delay_factor * float(p),
                          None if tw[i] is None else float(tw[i])) for i, p in enumerate(pm))
        reds = tuple(Task(float(p), 0.0, None if tw[nm + i] is None else float(tw[nm + i]))
                     for i, p in enumerate(pr))
        out.append(Job(f"j{k}", maps, reds, float(releases[k]), w))
    return Cluster(machines, tuple(out))


def perturb(cluster: Cluster, error: float, seed: int | np.random.Generator = 0) -> Cluster:
    """The cluster with predicted lengths: each times U[1 - error, 1 + error].

    Delays scale with their map's length. ``error`` in [0, 1]; lengths are kept above
    1 % of the true one.
    """
    if not 0 <= error <= 1:
        raise ValueError(f"error must be in [0, 1], got {error!r}")
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    p = cluster.arrays.length
    f = np.maximum(rng.uniform(1 - error, 1 + error, len(p)), 0.01)
    return cluster.with_lengths(p * f)
