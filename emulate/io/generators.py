"""Seeded synthetic workloads by kind: what ``coflowemu generate --kind K`` writes.

A *kind* is a function ``(seed, ports, cores, rate_bps, **params) -> workload`` registered
with :func:`kind`: the fabric comes from the command line's common options (``--ports``
hosts, which are also the machines of a joint workload; ``--cores``; ``--rate``), the
kind's own parameters from ``--param name=value`` (converted to the type of the
parameter's default). ``coflowemu generate --kind K --list-params`` prints them.

Built-in kinds:

* ``coflows`` -- independent coflows with Poisson releases and an optional DAG
  (:func:`emulate.io.traces.random_workload`; the command's ``--coflows``, ``--chi``,
  ``--load``, ``--mean-size`` options);
* ``jobs`` -- multi-stage jobs of coflows (:func:`emulate.io.traces.multi_stage_jobs`);
* ``mapreduce`` -- joint workloads: map stage -> shuffle coflow -> reduce stage
  (:func:`controller.jobs.mapreduce_jobs`);
* ``google`` -- joint workloads of compute jobs only (no coflows): Google-cluster-like
  jobs with packing and placement (:func:`controller.compute.generators.google_like`),
  run with a compute policy alone (``--policy synchpack-3``).

* ``moldable`` -- joint workloads of the ``moldable`` job model: independent moldable
  jobs, all at 0, of one of the paper's families
  (:func:`controller.moldable.generators.workload`), run with a moldable algorithm alone
  (``--policy demt``).
* ``msjo`` -- joint workloads of the ``msjo`` job model: MapReduce jobs of whole-server
  map and reduce tasks with shuffle delays, the paper's synthetic scenarios
  (:func:`controller.msjo.generators.synthetic`), run with an MSJO policy alone
  (``--policy mars``).

A new job model adds its kind here: one decorated function.

Examples
--------
>>> w = generate("mapreduce", seed=1, ports=4, params={"n_jobs": "3"})
>>> len(w.jobs), len(w.machines)
(3, 4)
"""
from __future__ import annotations

import inspect
from typing import Callable

_KINDS: dict[str, Callable] = {}


class GeneratorError(ValueError):
    """Unknown kind, unknown parameter or a value of the wrong type."""


def kind(name: str):
    """Decorator: register a generator as ``generate --kind name``."""
    def add(fn):
        _KINDS[name] = fn
        return fn
    return add


def kinds() -> dict[str, Callable]:
    """Name -> generator of every kind."""
    return dict(_KINDS)


def params_of(name: str) -> dict[str, object]:
    """The ``--param`` names of a kind with their defaults (the common ones excluded)."""
    fn = _get(name)
    return {p.name: p.default for p in inspect.signature(fn).parameters.values()
            if p.name not in _COMMON and p.kind == p.KEYWORD_ONLY}


def generate(name: str, *, seed: int = 0, ports: int = 8, cores: int = 2,
             rate_bps: float = 1e9, params: dict | None = None):
    """A workload of kind ``name``; ``params`` values may be strings (from the CLI)."""
    fn = _get(name)
    known = params_of(name)
    kw = {}
    for key, value in (params or {}).items():
        if key not in known:
            raise GeneratorError(f"--kind {name} has no parameter {key!r}; its parameters: "
                                 f"{', '.join(known) or 'none'}")
        kw[key] = _convert(name, key, value, known[key])
    return fn(seed, ports=ports, cores=cores, rate_bps=rate_bps, **kw)


_COMMON = ("seed", "ports", "cores", "rate_bps")


def _get(name: str) -> Callable:
    try:
        return _KINDS[name]
    except KeyError:
        raise GeneratorError(f"unknown kind {name!r}; known: {', '.join(_KINDS)}") from None


def _convert(name, key, value, default):
    """``value`` (a string from the command line, or already typed) as ``default``'s type."""
    if not isinstance(value, str):
        return value
    try:
        if isinstance(default, bool):
            if value.lower() not in ("true", "false", "1", "0"):
                raise ValueError(value)
            return value.lower() in ("true", "1")
        if isinstance(default, int):
            return int(value)
        if isinstance(default, float) or default is None:
            return None if value.lower() == "none" else float(value)
        if isinstance(default, tuple):
            return tuple(type(d)(v) for d, v in zip(default, value.split(","), strict=True))
        return type(default)(value)
    except ValueError:
        raise GeneratorError(f"--param {key}={value}: --kind {name} takes "
                             f"{type(default).__name__} values like {default!r}") from None


# --------------------------------------------------------------------------- the kinds
@kind("coflows")
def coflows(seed, *, ports, cores, rate_bps, coflows: int = 20, mean_bytes: float = 2e6,
            chi: int = 1, load: float = 0.7, name: str = ""):
    """Independent coflows (heavy-tailed sizes), Poisson releases at offered ``load``
    (0: all released at 0), a precedence DAG with ``chi`` coflows on its longest path."""
    from emulate.io.traces import random_workload
    arrival = (load * ports * cores * rate_bps / 8.0 / mean_bytes) if load > 0 else 1e12
    w = random_workload(seed, ports=ports, cores=cores, coflows=coflows, rate_bps=rate_bps,
                        mean_bytes=mean_bytes, arrival_rate=arrival, chi=chi,
                        name=name or None)
    if load <= 0:
        w = w.replace(coflows=tuple(type(c)(c.id, c.flows, 0.0, c.weight)
                                    for c in w.coflows))
    return w


@kind("jobs")
def jobs(seed, *, ports, cores, rate_bps, jobs: int = 5, mean_bytes: float = 2e6):
    """Multi-stage jobs: each a chain-like DAG of 2-4 shuffles (coflows)."""
    from emulate.io.traces import multi_stage_jobs
    return multi_stage_jobs(seed, ports=ports, cores=cores, jobs=jobs, rate_bps=rate_bps,
                            mean_bytes=mean_bytes)


@kind("mapreduce")
def mapreduce(seed, *, ports, cores, rate_bps, n_jobs: int = 12,
              map_seconds: float = 4.0, reduce_seconds: float = 6.0,
              map_output_bytes: float = 2e6, second_round: float = 0.3,
              mean_interarrival: float = 2.0):
    """Joint MapReduce jobs: map stage -> shuffle coflow -> reduce stage (sometimes a
    second shuffle and reduce); ``mean_interarrival`` 0 releases every job at 0."""
    from controller.jobs import mapreduce_jobs
    return mapreduce_jobs(seed, n_jobs=n_jobs, ports=ports, cores=cores, rate_bps=rate_bps,
                          map_seconds=map_seconds, reduce_seconds=reduce_seconds,
                          map_output_bytes=map_output_bytes, second_round=second_round,
                          mean_interarrival=mean_interarrival or None)


@kind("google")
def google(seed, *, ports, cores, rate_bps, n_jobs: int = 40,
           mean_interarrival: float = 0.0, weight_scheme: str = "random",
           remote_fraction: float = 0.3):
    """Joint workloads of compute jobs only: Google-cluster-like jobs (Zipf task counts,
    log-normal durations and sizes, data locality), one machine per port."""
    from controller.compute.generators import google_like
    from controller.jobs import joint_from_compute
    from topologies.fabric import Fabric
    cw = google_like(n_jobs, ports, seed=seed, weight_scheme=weight_scheme,
                     mean_interarrival=mean_interarrival or None,
                     remote_fraction=remote_fraction)
    return joint_from_compute(cw, Fabric(ports, cores, rate_bps),
                              name=f"google-s{seed}-p{ports}-j{n_jobs}")


@kind("moldable")
def moldable(seed, *, ports, cores, rate_bps, n_jobs: int = 20, family: str = "highly"):
    """Joint workloads of moldable jobs (``"model": "moldable"``): ``n_jobs`` jobs of a
    family of the bi-criteria paper (weakly, highly, mixed, cirne-berman) on ``ports``
    identical machines, all at time 0."""
    from controller.jobmodels.moldable import joint_from_moldable
    from controller.moldable.generators import FAMILIES, workload
    from topologies.fabric import Fabric
    if family not in FAMILIES:
        raise GeneratorError(f"--param family={family}: known families: "
                             f"{', '.join(FAMILIES)}")
    if n_jobs < 1:
        raise GeneratorError(f"--param n_jobs={n_jobs}: need at least one job")
    mw = workload(family, n_jobs, ports, seed)
    return joint_from_moldable(mw, Fabric(ports, cores, rate_bps),
                               name=f"moldable-{family}-s{seed}-p{ports}-j{n_jobs}")


@kind("msjo")
def msjo(seed, *, ports, cores, rate_bps, scenario: str = "uniform", n_jobs: int = 10,
         delay_factor: float = 0.1, shuffle_bytes: float = 0.0, length_scale: float = 1.0,
         mean_maps: float = 30.0):
    """Joint workloads of MapReduce server jobs (``"model": "msjo"``): ``n_jobs`` jobs of
    the MSJO paper's ``uniform`` or ``random`` scenario (Bernoulli arrivals; random: maps ~
    Poisson(``mean_maps``)) on ``ports`` machines, task lengths and arrival slots times
    ``length_scale``. ``shuffle_bytes`` 0: map tasks with shuffle delay ``delay_factor``
    times their length; > 0: every job's shuffle is a coflow (no delays) and a map
    writes ``shuffle_bytes`` x its length / the mean map length (run with
    ``--policy mars+sebf``)."""
    import numpy as np

    from controller.jobmodels.msjo import joint_from_msjo
    from controller.msjo.generators import SCENARIOS, synthetic
    from topologies.fabric import Fabric
    if scenario not in SCENARIOS:
        raise GeneratorError(f"--param scenario={scenario}: known scenarios: "
                             f"{', '.join(SCENARIOS)}")
    if n_jobs < 1:
        raise GeneratorError(f"--param n_jobs={n_jobs}: need at least one job")
    for name, v, least in (("delay_factor", delay_factor, ">= 0"),
                           ("shuffle_bytes", shuffle_bytes, ">= 0"),
                           ("length_scale", length_scale, "> 0"),
                           ("mean_maps", mean_maps, "> 0")):
        if not (v >= 0 if least == ">= 0" else v > 0):
            raise GeneratorError(f"--param {name}={v}: must be {least}")
    cluster = synthetic(n_jobs, scenario=scenario, machines=ports, delay_factor=delay_factor,
                        slot=length_scale, mean_maps=mean_maps, seed=seed)
    if length_scale != 1.0:
        cluster = cluster.with_lengths(cluster.arrays.length * length_scale)
    out = None
    if shuffle_bytes > 0:
        a = cluster.arrays
        out = np.where(a.is_map, shuffle_bytes * a.length / a.length[a.is_map].mean(), 0.0)
    shuffle = "-shuffle" if out is not None else ""
    return joint_from_msjo(cluster, Fabric(ports, cores, rate_bps), output_bytes=out,
                           name=f"msjo-{scenario}{shuffle}-s{seed}-p{ports}-j{n_jobs}")
