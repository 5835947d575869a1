"""Speedup models: a job's processing time on ``q`` machines from its sequential time.

A moldable job may be given by a table ``{q: seconds}`` or by a *speedup model*, a dict
``{"sequential": p1, "model": name, **parameters}`` that :func:`table` expands into the
table for ``q = 1..m``. Every model here gives monotone jobs (``p`` non-increasing in
``q``, work ``q p(q)`` non-decreasing), the class the paper and its algorithms assume:

``"linear"``
    ``p(q) = p1 / q`` (perfect speedup; constant work).
``"amdahl"``, parameter ``parallel_fraction`` ``f`` in [0, 1]
    ``p(q) = p1 ((1 - f) + f / q)``.
``"model1"``, parameter ``x`` in [0, 1] (a number, or a list of ``m - 1`` numbers, one per
step)
    The paper's parallelism model 1 (Section 4.1; formula reconstructed in algorithms.md
    5.4): ``p(q+1) = p(q) (q + 1 - X) / (q + 1)``. ``X = 1`` is linear speedup, ``X = 0``
    none; ``X <= 1`` keeps the work non-decreasing.
``"downey"``, parameters ``A`` (average parallelism, >= 1) and ``sigma`` (>= 0)
    Downey's speedup ``S(q)`` (Downey 1997, the model Cirne & Berman build on),
    ``p(q) = p1 / S(q)``. Low variance (``sigma <= 1``)::

        S(q) = A q / (A + sigma (q - 1) / 2)                   1 <= q <= A
        S(q) = A q / (sigma (A - 1/2) + q (1 - sigma / 2))      A <= q <= 2A - 1
        S(q) = A                                                q >= 2A - 1

    high variance (``sigma >= 1``)::

        S(q) = q A (sigma + 1) / (sigma (q + A - 1) + A)        1 <= q <= A + A sigma - sigma
        S(q) = A                                                q >= A + A sigma - sigma

    ``S(q) / q`` is non-increasing, so the work is non-decreasing.

Examples
--------
>>> table({"sequential": 10.0, "model": "amdahl", "parallel_fraction": 0.9}, 2)
{1: 10.0, 2: 5.5}
>>> table({"sequential": 8.0, "model": "model1", "x": 1.0}, 4)
{1: 8.0, 2: 4.0, 3: 2.6666666666666665, 4: 2.0}

References
----------
Dutot, Eyraud, Mounié, Trystram, "Bi-criteria Algorithm for Scheduling Jobs on Cluster
Platforms", Section 4.1; A. B. Downey, "A model for speedup of parallel programs" (1997);
W. Cirne and F. Berman, "A model for moldable supercomputer jobs" (IPDPS 2001).
"""
from __future__ import annotations

import numpy as np

__all__ = ["MODELS", "times", "table", "model1", "downey_speedup"]

MODELS = ("linear", "amdahl", "model1", "downey")


def model1(sequential: float, m: int, x) -> np.ndarray:
    """Model 1 times ``p(1..m)``: ``p(q+1) = p(q) (q + 1 - X_q) / (q + 1)``.

    Parameters
    ----------
    sequential : float, ``p(1)``
    m : int, machines
    x : float or array of ``m - 1`` floats in [0, 1]
        One ``X`` for the job, or one per step ``q -> q + 1``.
    """
    xs = np.broadcast_to(np.asarray(x, dtype=np.float64), (max(m - 1, 0),))
    q = np.arange(1, m, dtype=np.float64)
    factors = (q + 1 - xs) / (q + 1)
    return float(sequential) * np.concatenate([[1.0], np.cumprod(factors)])


def downey_speedup(q, A, sigma) -> np.ndarray:
    """Downey's speedup ``S(q)`` for average parallelism ``A`` and variance ``sigma``
    (numbers or arrays; broadcast together)."""
    q, A, sigma = np.broadcast_arrays(np.asarray(q, dtype=np.float64),
                                      np.asarray(A, dtype=np.float64),
                                      np.asarray(sigma, dtype=np.float64))
    with np.errstate(divide="ignore", invalid="ignore"):
        low = np.where(q <= A, A * q / (A + sigma * (q - 1) / 2),
                       np.where(q <= 2 * A - 1,
                                A * q / (sigma * (A - 0.5) + q * (1 - sigma / 2)), A))
        high = np.where(q <= A + A * sigma - sigma,
                        q * A * (sigma + 1) / (sigma * (q + A - 1) + A), A)
    s = np.where(sigma <= 1.0, low, high)
    return np.maximum(s, 1.0)  # S(1) = 1 exactly; guards rounding below 1


def times(spec: dict, m: int) -> np.ndarray:
    """The times ``p(1..m)`` of a speedup-model spec (see the module docstring).

    Raises
    ------
    ValueError
        Unknown model, missing or out-of-range parameter (the caller names the job).
    """
    spec = dict(spec)
    name = spec.pop("model", None)
    p1 = spec.pop("sequential", None)
    if isinstance(p1, bool) or not isinstance(p1, (int, float)) or not p1 > 0 \
            or not np.isfinite(p1):
        raise ValueError(f"sequential must be a number > 0 (seconds on one machine), "
                         f"got {p1!r}")
    q = np.arange(1, m + 1, dtype=np.float64)

    def param(key, lo=None, hi=None):
        if key not in spec:
            raise ValueError(f"model {name!r} needs the parameter {key!r}")
        v = spec.pop(key)
        arr = np.asarray(v, dtype=np.float64)
        if not np.all(np.isfinite(arr)) or (lo is not None and np.any(arr < lo)) or \
                (hi is not None and np.any(arr > hi)):
            raise ValueError(f"{key} must be in [{lo}, {hi if hi is not None else 'inf'}], "
                             f"got {v!r}")
        return v

    if name == "linear":
        out = p1 / q
    elif name == "amdahl":
        f = float(param("parallel_fraction", 0.0, 1.0))
        out = p1 * ((1 - f) + f / q)
    elif name == "model1":
        x = param("x", 0.0, 1.0)
        if np.ndim(x) and np.size(x) != m - 1:
            raise ValueError(f"x must be one number or {m - 1} numbers (one per step), "
                             f"got {np.size(x)}")
        out = model1(p1, m, x)
    elif name == "downey":
        A = float(param("A", 1.0))
        sigma = float(param("sigma", 0.0))
        out = p1 / downey_speedup(q, A, sigma)
    else:
        raise ValueError(f"unknown speedup model {name!r}; known: {', '.join(MODELS)}")
    if spec:
        raise ValueError(f"model {name!r} has no parameter(s) {', '.join(sorted(spec))}")
    return out


def table(spec: dict, m: int) -> dict[int, float]:
    """The ``{q: seconds}`` table of a speedup-model spec, ``q = 1..m``."""
    return {q + 1: float(t) for q, t in enumerate(times(spec, m))}
