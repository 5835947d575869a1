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

* ``packing`` -- the same, as the packing paper's offline experiments generate them
  (:func:`controller.compute.generators.packing_paper`: weight schemes, remote penalty,
  ``pinned`` tasks for the preemptive comparison).
* ``moldable`` -- joint workloads of the ``moldable`` job model: independent moldable
  jobs, all at 0, of one of the paper's families
  (:func:`controller.moldable.generators.workload`), run with a moldable algorithm alone
  (``--policy demt``).
* ``msjo`` -- joint workloads of the ``msjo`` job model: MapReduce jobs of whole-server
  map and reduce tasks with shuffle delays, the paper's synthetic scenarios
  (:func:`controller.msjo.generators.synthetic`), run with an MSJO policy alone
  (``--policy mars``).

* ``redundancy`` -- joint workloads of the ``redundancy`` job model: Poisson arrivals
  with Pareto work on machines whose speed alternates between available and unavailable
  periods (:func:`controller.redundancy.generators.poisson_pareto`), run with a
  redundancy policy alone (``--policy srpt+r``).

A new job model adds its kind here: one decorated function.

Every parameter is checked before anything is generated: the fabric against its limits
(:mod:`topologies.fabric`), the seed an integer >= 0, a count (``coflows``, ``jobs``,
``n_jobs``, ``chi``) an integer in ``1..MAX_COUNT`` (100,000), every other number finite
and >= 0 (``mean_bytes`` > 0; the fractions ``second_round``, ``remote_fraction`` <= 1).

Examples
--------
>>> w = generate("mapreduce", seed=1, ports=4, params={"n_jobs": "3"})
>>> len(w.jobs), len(w.machines)
(3, 4)
"""
from __future__ import annotations

import inspect
import math
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
    from topologies.fabric import Fabric
    fn = _get(name)
    known = params_of(name)
    Fabric(ports, cores, rate_bps)          # its limits, before anything is sized by it
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise GeneratorError(f"--seed must be an integer >= 0, got {seed!r}")
    kw = {}
    for key, value in (params or {}).items():
        if key not in known:
            raise GeneratorError(f"--kind {name} has no parameter {key!r}; its parameters: "
                                 f"{', '.join(known) or 'none'}")
        kw[key] = _checked(key, _convert(name, key, value, known[key]))
    try:
        return fn(seed, ports=ports, cores=cores, rate_bps=rate_bps, **kw)
    except GeneratorError:
        raise
    except ValueError as e:     # a parameter the kind's own generator refused
        raise GeneratorError(f"--kind {name}: {e}") from None


#: the most coflows or jobs a generator makes
MAX_COUNT = 100_000
_COUNTS = ("coflows", "jobs", "n_jobs", "chi")
_FRACTIONS = ("second_round", "remote_fraction")


def _checked(key, value):
    """``value`` of parameter ``key`` if in range (see the module docstring)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return value
    if key in _COUNTS:
        if not isinstance(value, int) or not 1 <= value <= MAX_COUNT:
            raise GeneratorError(f"--param {key}={value}: must be an integer in "
                                 f"1..{MAX_COUNT}")
    elif not (math.isfinite(value) and value >= 0) or (key == "mean_bytes" and value == 0):
        raise GeneratorError(f"--param {key}={value}: must be a finite number "
                             f"{'> 0' if key == 'mean_bytes' else '>= 0'}")
    elif key in _FRACTIONS and value > 1:
        raise GeneratorError(f"--param {key}={value}: a fraction, must be in 0..1")
    return value


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


@kind("packing")
def packing(seed, *, ports, cores, rate_bps, n_jobs: int = 60, size_median: float = 0.15,
            max_tasks: int = 20, n_local: int = 3, remote_fraction: float = 0.3,
            alpha: float = 2.0, scheme: str = "equal", pinned: bool = False):
    """Joint workloads of compute jobs only: the packing paper's offline workload
    (:func:`controller.compute.generators.packing_paper`: Google-like jobs weighted
    ``equal``, ``random`` or ``priority``, remote penalty ``alpha``; ``pinned``: every task
    on its machine of the original trace), one machine per port, all at time 0."""
    from controller.compute.generators import WEIGHT_SCHEMES, packing_paper
    from controller.jobs import joint_from_compute
    from topologies.fabric import Fabric
    if scheme not in WEIGHT_SCHEMES:
        raise GeneratorError(f"--param scheme={scheme}: known schemes: "
                             f"{', '.join(WEIGHT_SCHEMES)}")
    cw = packing_paper(n_jobs, ports, seed=seed, size_median=size_median,
                       max_tasks=max_tasks, n_local=n_local, remote_fraction=remote_fraction,
                       alpha=alpha, scheme=scheme, pinned=pinned)
    return joint_from_compute(cw, Fabric(ports, cores, rate_bps),
                              name=f"packing-{scheme}-s{seed}-p{ports}-j{n_jobs}"
                                   + ("-pinned" if pinned else ""))


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
    # finite and >= 0 is checked for every number before a kind runs; these two must be > 0
    for name, v in (("length_scale", length_scale), ("mean_maps", mean_maps)):
        if not v > 0:
            raise GeneratorError(f"--param {name}={v}: must be > 0")
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


@kind("redundancy")
def redundancy(seed, *, ports, cores, rate_bps, machines: int = 100, lam: float = 1.0,
               horizon: float = 200.0, shape: float = 2.0, scale: float = 20.0,
               speed: str = "ap-up", ap_rate: tuple = (0.5, 1.5), up_rate: tuple = (0.0, 0.2),
               ap_length: tuple = (0.5, 100.0), up_length: tuple = (0.5, 20.0),
               checkpoint_bytes: float = 0.0):
    """Joint workloads of the redundancy model (``"model": "redundancy"``): ``machines``
    machines (the fabric's ports; ``--ports`` is not used), jobs arriving as a Poisson
    process of rate ``lam`` over ``[0, horizon)`` with Pareto work (``shape``, ``scale``:
    mean 40 by default), each machine's speed ``ap-up`` (AP/UP alternation with the given
    rate ranges and Gamma (shape, scale) lengths, normalised to mean rate 1; machine
    ``m``'s seed ``seed * 1000 + m``) or ``constant`` (rate 1); every job's
    ``checkpoint_bytes`` (default 0: free checkpoints, the paper's model; else each
    checkpoint's state moves over the fabric, :mod:`controller.redundancy.transfers`).
    The paper's setting is
    ``lam`` 1 to 2.5 and ``horizon`` 100000 (250,000 jobs: run that with
    ``benchmarks/redundancy.py`` or ``experiments/redundancy.py``, not as a file)."""
    from controller.jobmodels.redundancy import joint_from_redundancy
    from controller.model import WorkloadError
    from controller.redundancy.generators import machine_specs, poisson_pareto
    from controller.redundancy.simulator import Instance
    from controller.redundancy.speed import ApUp, constant
    from topologies.fabric import Fabric
    if machines < 1:
        raise GeneratorError(f"--param machines={machines}: need at least one machine")
    if speed not in ("ap-up", "constant"):
        raise GeneratorError(f"--param speed={speed}: known speed models: ap-up, constant")
    try:
        arrival, work = poisson_pareto(seed, lam, horizon, shape, scale)
        params = ApUp(ap_rate, up_rate, ap_length, up_length)
    except (ValueError, WorkloadError) as e:
        raise GeneratorError(f"--kind redundancy: {e}") from None
    if not len(arrival):
        raise GeneratorError(f"--kind redundancy: no job arrives in [0, {horizon:g}) at "
                             f"lam={lam:g} with seed {seed}; raise lam or horizon")
    specs = machine_specs(seed, machines, params, speed)
    inst = Instance(arrival, work, constant(machines))
    if not (checkpoint_bytes >= 0 and math.isfinite(checkpoint_bytes)):
        raise GeneratorError(f"--param checkpoint_bytes={checkpoint_bytes}: must be >= 0")
    return joint_from_redundancy(inst, Fabric(machines, cores, rate_bps), specs=specs,
                                 name=f"redundancy-s{seed}-n{machines}-l{lam:g}-h{horizon:g}",
                                 checkpoint_bytes=checkpoint_bytes)
