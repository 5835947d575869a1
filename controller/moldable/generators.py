"""The paper's synthetic moldable workloads (Section 4.1), seeded and deterministic.

A job is a sequential time ``p(1)`` and a parallelism model that gives ``p(2..m)``; its
weight is uniform in ``[1, 10]`` (the paper's "priority").

**Sequential times** (:func:`sequential_times`):

* ``"uniform"``: ``U[low, high]``, default ``[1, 10]`` (the paper's range is lost in our
  text, algorithms.md 5.4);
* ``"mixed"``: 70 % *small* jobs ``N(1, 0.5)`` and 30 % *large* jobs ``N(10, 5)``,
  truncated above 0 (a draw ``<= 0`` is drawn again).

**Parallelism model 1** (:func:`model1_times`; formula reconstructed):
``p(q+1) = p(q) (q + 1 - X) / (q + 1)`` with ``X`` in [0, 1] drawn once per job
(``x_per="job"``, default) or once per step (``x_per="step"``). *Highly parallel*:
``X ~ N(0.9, 0.2)``; *weakly parallel*: ``X ~ N(0.1, 0.2)``; draws outside [0, 1] are
drawn again (:func:`parallelism`).

**Model 2, Cirne-Berman** (:func:`cirne_berman_times`): Downey's speedup
(:func:`controller.moldable.speedup.downey_speedup`) with per-job parameters, applied to
model 1's sequential times. Cirne & Berman fit distributions for ``A`` and ``sigma`` from
a user survey; those fitted distributions are not in our sources, so we use (our choice,
configurable): ``A`` log-uniform on ``[1, a_max]`` (Downey's log-uniform degree of
parallelism; ``a_max`` defaults to ``m``) and ``sigma ~ U[0, sigma_max]``,
``sigma_max = 2`` (Downey's range of the variance of parallelism).

**Families** (:data:`FAMILIES`, the paper's four figures):

==================  =====================  ==========================================
family              sequential times       parallelism
==================  =====================  ==========================================
``weakly``          uniform                model 1, weakly parallel
``highly``          uniform                model 1, highly parallel
``mixed``           mixed                  model 1: small jobs weakly, large highly
``cirne-berman``    uniform                Downey, ``A`` log-uniform, ``sigma`` uniform
==================  =====================  ==========================================

:func:`instance` gives the numpy view directly (what the experiment runs; building the
validated objects of 400 x 200 tables costs more than scheduling them);
:func:`workload` the validated :class:`~controller.moldable.model.MoldableWorkload`.

Examples
--------
>>> a = instance("highly", n=3, m=4, seed=1)
>>> a.time.shape, bool((np.diff(a.time, axis=1) <= 0).all())
((3, 4), True)
>>> workload("mixed", 5, 8, seed=2).machines
8

References
----------
Dutot, Eyraud, Mounié, Trystram, Section 4.1; W. Cirne and F. Berman, "A model for
moldable supercomputer jobs" (IPDPS 2001); A. B. Downey, "A model for speedup of parallel
programs" (1997); algorithms.md 5.4.
"""
from __future__ import annotations

import numpy as np

from controller.moldable.model import MoldableArrays, MoldableJob, MoldableWorkload
from controller.moldable.speedup import downey_speedup

__all__ = ["FAMILIES", "sequential_times", "parallelism", "model1_times",
           "cirne_berman_times", "instance", "workload"]

FAMILIES = ("weakly", "highly", "mixed", "cirne-berman")

#: (mean, standard deviation) of X for weakly and highly parallel jobs
WEAKLY = (0.1, 0.2)
HIGHLY = (0.9, 0.2)


def _rng(seed) -> np.random.Generator:
    return seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)


def _truncated_normal(rng, mean, sd, size, lo, hi) -> np.ndarray:
    """Normal draws; each outside ``[lo, hi]`` is drawn again."""
    mean = np.broadcast_to(np.asarray(mean, dtype=np.float64), size).copy()
    out = rng.normal(mean, sd)
    bad = (out < lo) | (out > hi)
    while bad.any():
        out[bad] = rng.normal(mean[bad], sd)
        bad = (out < lo) | (out > hi)
    return out


def sequential_times(n: int, kind: str = "uniform", seed=0, *, low: float = 1.0,
                     high: float = 10.0, small_fraction: float = 0.7):
    """Sequential times and which jobs are *large* (mixed: the ``N(10, 5)`` class).

    Returns
    -------
    (float array (n,), bool array (n,))
    """
    rng = _rng(seed)
    if kind == "uniform":
        return rng.uniform(low, high, n), np.zeros(n, dtype=bool)
    if kind == "mixed":
        large = rng.random(n) >= small_fraction
        mean = np.where(large, 10.0, 1.0)
        sd = np.where(large, 5.0, 0.5)
        out = rng.normal(mean, sd)
        while (out <= 0).any():
            bad = out <= 0
            out[bad] = rng.normal(mean[bad], sd[bad])
        return out, large
    raise ValueError(f"unknown sequential-time kind {kind!r}; known: uniform, mixed")


def parallelism(rng, mean, size, sd: float = 0.2) -> np.ndarray:
    """Draws of model 1's ``X ~ N(mean, sd)``, each outside [0, 1] drawn again."""
    return _truncated_normal(_rng(rng), mean, sd, size, 0.0, 1.0)


def model1_times(sequential, m: int, x) -> np.ndarray:
    """(n, m) times of model 1 for per-job ``x`` (n,) or per-step ``x`` (n, m-1)."""
    p1 = np.asarray(sequential, dtype=np.float64)
    x = np.asarray(x, dtype=np.float64)
    if x.ndim == 1:
        x = np.repeat(x[:, None], max(m - 1, 0), axis=1)
    q = np.arange(1, m, dtype=np.float64)
    f = (q + 1 - x) / (q + 1)
    return p1[:, None] * np.concatenate([np.ones((len(p1), 1)), np.cumprod(f, axis=1)],
                                        axis=1)


def cirne_berman_times(sequential, m: int, seed=0, *, a_max: float | None = None,
                       sigma_max: float = 2.0) -> np.ndarray:
    """(n, m) times of Downey's speedup with ``A`` log-uniform on ``[1, a_max]`` and
    ``sigma ~ U[0, sigma_max]`` per job (module docstring)."""
    rng = _rng(seed)
    p1 = np.asarray(sequential, dtype=np.float64)
    n = len(p1)
    A = np.exp(rng.uniform(0.0, np.log(a_max or m), n))
    sigma = rng.uniform(0.0, sigma_max, n)
    q = np.arange(1, m + 1, dtype=np.float64)
    return p1[:, None] / downey_speedup(q[None, :], A[:, None], sigma[:, None])


def instance(family: str, n: int, m: int, seed=0, *, sequential: str | None = None,
             low: float = 1.0, high: float = 10.0, x_per: str = "job",
             weights=(1.0, 10.0)) -> MoldableArrays:
    """The numpy view of a workload of ``family`` (module docstring).

    Parameters
    ----------
    family : one of :data:`FAMILIES`
    n, m : jobs, machines
    seed : int or numpy Generator
    sequential : "uniform" or "mixed", optional; overrides the family's sequential times
    low, high : the uniform range of sequential times
    x_per : "job" or "step", how often model 1's X is drawn
    weights : (low, high) of the uniform weights
    """
    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r}; known: {', '.join(FAMILIES)}")
    if x_per not in ("job", "step"):
        raise ValueError(f"x_per must be 'job' or 'step', got {x_per!r}")
    rng = _rng(seed)
    kind = sequential or ("mixed" if family == "mixed" else "uniform")
    p1, large = sequential_times(n, kind, rng, low=low, high=high)
    w = rng.uniform(weights[0], weights[1], n)
    if family == "cirne-berman":
        t = cirne_berman_times(p1, m, rng)
    else:
        if family == "weakly":
            mean = np.full(n, WEAKLY[0])
        elif family == "highly":
            mean = np.full(n, HIGHLY[0])
        else:
            mean = np.where(large, HIGHLY[0], WEAKLY[0])
        size = (n,) if x_per == "job" else (n, max(m - 1, 0))
        mean = mean if x_per == "job" else np.repeat(mean[:, None], max(m - 1, 0), axis=1)
        t = model1_times(p1, m, parallelism(rng, mean, size))
    return MoldableArrays(m, w, t, tuple(f"j{i}" for i in range(n)))


def workload(family: str, n: int, m: int, seed=0, **options) -> MoldableWorkload:
    """The validated workload of :func:`instance` (same arguments, same numbers)."""
    a = instance(family, n, m, seed, **options)
    jobs = [MoldableJob(a.ids[i], {q + 1: float(a.time[i, q]) for q in range(m)},
                        float(a.weight[i])) for i in range(n)]
    return MoldableWorkload(m, jobs, f"{family}-{n}x{m}-seed{seed}")
