"""The paper's synthetic instances: Poisson arrivals, Pareto work, AP/UP machines.

algorithms.md 4.4: ``N = 100`` machines whose rates alternate between available and
unavailable periods (:class:`~controller.redundancy.speed.ApUp`, normalised to mean rate
1), jobs arriving as a Poisson process of rate ``lam`` over ``[0, horizon)``, each with
Pareto work (shape 2, scale 20: mean ``shape scale / (shape - 1) = 40``). The heavy-traffic
limit is ``lam = N / mean work = 2.5``.

Seeds: the arrivals and works come from ``default_rng(seed)``; machine ``m``'s speed from
its own seed ``seed * 1000 + m`` (what a generated workload file records per machine), so
the machines do not change when the job parameters do.
"""
from __future__ import annotations

import numpy as np

from controller.redundancy.simulator import Instance
from controller.redundancy.speed import AP_UP_DEFAULTS, ApUp, speed_of

__all__ = ["poisson_pareto", "machine_specs", "paper_instance"]


def poisson_pareto(seed: int, lam: float, horizon: float, shape: float = 2.0,
                   scale: float = 20.0) -> tuple[np.ndarray, np.ndarray]:
    """Arrival times (a Poisson process of rate ``lam`` on ``[0, horizon)``) and Pareto
    works (``scale (1 + Lomax(shape))``: minimum ``scale``, mean ``shape scale / (shape -
    1)``)."""
    if not (lam > 0 and horizon > 0 and shape > 1 and scale > 0):
        raise ValueError(f"need lam > 0, horizon > 0, shape > 1, scale > 0; got lam={lam}, "
                         f"horizon={horizon}, shape={shape}, scale={scale}")
    rng = np.random.default_rng(seed)
    n = rng.poisson(lam * horizon)
    arrival = np.sort(rng.uniform(0.0, horizon, n))
    work = scale * (1.0 + rng.pareto(shape, n))
    return arrival, work


def machine_specs(seed: int, machines: int, params: ApUp | None = None,
                  model: str = "ap-up") -> list[dict | None]:
    """Per machine its ``speed`` spec: ``ap-up`` with seed ``seed * 1000 + m`` and the
    parameters that differ from the defaults; ``"constant"``: None (rate 1)."""
    if model == "constant":
        return [None] * machines
    p = params or ApUp()
    extra = {k: list(getattr(p, k)) for k in AP_UP_DEFAULTS
             if tuple(getattr(p, k)) != tuple(AP_UP_DEFAULTS[k])}
    if not p.normalise:
        extra["normalise"] = False
    return [{"model": "ap-up", **extra, "seed": seed * 1000 + m} for m in range(machines)]


def paper_instance(seed: int = 0, *, machines: int = 100, lam: float = 2.5,
                   horizon: float = 100_000.0, shape: float = 2.0, scale: float = 20.0,
                   speed: str = "ap-up", params: ApUp | None = None) -> Instance:
    """The paper's setting (module docstring) as an :class:`Instance` whose AP/UP
    processes are drawn as far as the run needs."""
    arrival, work = poisson_pareto(seed, lam, horizon, shape, scale)
    specs = machine_specs(seed, machines, params, speed)
    return Instance(arrival, work, lambda until: speed_of(specs, until))
