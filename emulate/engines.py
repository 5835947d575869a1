"""Engines: what runs a workload under a policy and records what happened.

An engine takes a workload (coflows only, or a joint workload of machines, stages and
jobs: ``docs/jobs.md``), a policy *spec* and :class:`RunOptions`, and returns the run's
record: a :class:`~emulate.io.records.RunResult` for a coflow workload, a
:class:`~emulate.sim.jobsim.JointResult` for a joint one. The spec is the same string
everywhere: a registered name or ``package.module:Class`` (``sebf``,
``mypkg.mod:MyPolicy``), and on a joint workload ``compute+network``
(``synchpack-3+lp-coflow``). Engines build the policy objects themselves, fresh for every
run, so a caller never hands one policy instance to two runs.

Built in:

* ``sim`` -- the event-driven flow-level simulator (:mod:`emulate.sim.flowsim`; joint workloads:
  :mod:`emulate.sim.jobsim`). No root, no network.
* ``mininet`` -- the real emulation (:mod:`emulate.mininet.engine`): Mininet cores, the
  os-ken controller, agents sending TCP and running tasks. Root and
  ``scripts/setup-system.sh``.

``coflowemu run``, ``compare``, ``fidelity`` and the experiments all go through
:func:`get_engine`. Adding an engine is one module: subclass :class:`Engine`, give it a
``name``, decorate it with :func:`register`, and import the module before
:func:`get_engine` is asked for it (built-in engines live here).

Examples
--------
>>> from controller.model import Coflow, Flow, Workload
>>> from topologies import Fabric
>>> w = Workload(Fabric(ports=2, cores=1, rate_bps=8.0),
...              [Coflow("a", [Flow(0, 1, 2.0)]), Coflow("b", [Flow(0, 1, 1.0)])])
>>> get_engine("sim").run(w, "fifo").coflow_completion.tolist()
[2.0, 3.0]
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

_ENGINES: dict[str, "type[Engine]"] = {}


class EngineError(RuntimeError):
    """An engine could not run (``setup``: root, a system package or service missing) or
    its run failed. The CLI prints the message and exits with 2 (setup) or 1."""

    def __init__(self, message: str, *, setup: bool = False, partial=None):
        super().__init__(message)
        self.setup = setup
        #: what the failed run had finished (a RunResult marked incomplete), or None
        self.partial = partial


class Interrupted(BaseException):
    """A signal (SIGTERM, Ctrl-C) ended a run; the engine cleaned up before raising."""


@dataclass(frozen=True)
class RunOptions:
    """How to run, beside what (workload) and under which policy (spec).

    Attributes
    ----------
    segments : bool
        Keep every constant-rate interval of every flow (and every task piece) in the
        record (``--segments``, the verifier, the Gantt chart; memory on big traces).
    progress : bool
        Show a progress bar (completed coflows).
    policy_options : dict
        Options of the network policy (``mode``, ``objective``), passed to its class.
    time_scale : float
        Emulation: run this many times slower than the workload (records stay in
        workload seconds). The simulator has no use for it.
    engine_options : dict
        Options only one engine understands (e.g. ``pause``, ``datapath`` for
        ``mininet``); an engine rejects options it does not know.
    """

    segments: bool = False
    progress: bool = False
    policy_options: dict = field(default_factory=dict)
    time_scale: float = 1.0
    engine_options: dict = field(default_factory=dict)


class Engine:
    """Base class: override :meth:`run`."""

    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""

    def run(self, workload, policy: str, options: RunOptions | None = None):
        """Run ``workload`` under the policy ``policy`` (a spec string); the record."""
        raise NotImplementedError  # pragma: no cover - interface


def register(cls):
    """Class decorator: make an engine available by its ``name``."""
    if not cls.name:
        raise ValueError(f"{cls.__name__} has no name")
    _ENGINES[cls.name] = cls
    return cls


def engines() -> dict[str, "type[Engine]"]:
    """Name -> class of every registered engine."""
    return dict(_ENGINES)


def get_engine(name: str) -> Engine:
    """A new engine instance by name."""
    try:
        return _ENGINES[name]()
    except KeyError:
        raise ValueError(f"unknown engine {name!r}; known: {', '.join(_ENGINES)}") from None


def is_joint(workload) -> bool:
    """Whether ``workload`` is a joint workload (machines, stages and jobs)."""
    return hasattr(workload, "machines")


@register
class SimEngine(Engine):
    """The flow-level simulator; joint workloads in the joint simulator."""

    name = "sim"
    summary = "event-driven flow-level simulator (no root, no network)"

    def run(self, workload, policy: str, options: RunOptions | None = None):
        o = options or RunOptions()
        if o.engine_options:
            raise ValueError(f"engine sim takes no options {sorted(o.engine_options)}")
        if is_joint(workload):
            from emulate.sim.jobsim import simulate_joint
            return simulate_joint(workload, policy, segments=o.segments,
                                  network_options=dict(o.policy_options))
        from controller.policies import get_policy
        from emulate.sim.flowsim import simulate
        return simulate(workload, get_policy(policy, **o.policy_options),
                        segments=o.segments, progress=o.progress)


@register
class MininetEngine(Engine):
    """The real emulation on Mininet (root)."""

    name = "mininet"
    summary = "Mininet cores, os-ken controller, agents sending TCP (root)"

    def run(self, workload, policy: str, options: RunOptions | None = None):
        o = options or RunOptions()
        from emulate.mininet.engine import run_mininet
        return run_mininet(workload, policy, time_scale=o.time_scale, segments=o.segments,
                           progress=o.progress, network_options=dict(o.policy_options),
                           **o.engine_options)
