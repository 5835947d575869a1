"""Policy specs: the ``--policy`` string of a joint run, split into its compute and network
policies.

A joint workload (machines, stages, jobs and coflows: ``controller.jobs``) runs under a
*combined policy* ``compute+network``: the compute policy (registry
:mod:`controller.compute`) decides where and when tasks run, the network policy (registry
:mod:`controller.policies`) schedules the flows. Each half is a registered name or a
plug-in ``package.module:Class``; a plug-in path contains no ``+``, so the spec splits at
its first ``+`` (``psrs+mymod:MyPolicy``, ``mymod:MyCompute+sebf``), except where a
compute policy's own name has one (the redundancy model's ``srpt+r``,
``laps+r@beta=0.3``): a spec that is a compute policy as a whole is one, and
``srpt+r+sebf`` splits after the longest compute name.

The compute half is a policy of some job model (:mod:`controller.jobmodel`: the packing
model's :mod:`controller.compute` policies, the moldable model's ``demt``, ``gang``, ...;
every registered model's :meth:`~controller.jobmodel.JobModel.policies`); whether the
workload's model runs it is checked when the run starts.

A spec without ``+`` names one policy:

* a network policy (a registered name, or a ``module:Class`` that is not a
  :class:`~controller.compute.ComputePlanner`): compute uses :data:`DEFAULT_COMPUTE`
  (``fifo``: arrival order, fastest machine with room, non-preemptive; no LP, so a plain
  name stays cheap);
* a compute policy (a registered name, or a ``module:Class`` subclassing
  :class:`~controller.compute.ComputePlanner`): ``network`` is ``None``, a run with a
  compute policy alone, for a workload without coflows.

A name in both registries (``fifo``) is the network policy.

Each half may carry options, ``NAME@KEY=VALUE[@KEY=VALUE...]`` (:func:`parse_options`):
``sebf@allocation=sincronia-offline``, ``srpt+r@assign=sticky+sebf``. The halves keep
them; :func:`~controller.policies.get_policy` gives a network policy its options, a job
model reads its compute policy's (:attr:`JobModel.options
<controller.jobmodel.JobModel.options>`).

Examples
--------
>>> split_policy("synchpack-3+lp-coflow")
PolicySpec(compute='synchpack-3', network='lp-coflow')
>>> split_policy("sebf")
PolicySpec(compute='fifo', network='sebf')
>>> split_policy("synchpack-3")
PolicySpec(compute='synchpack-3', network=None)
>>> split_policy("srpt+r")
PolicySpec(compute='srpt+r', network=None)
>>> split_policy("synchpack-3+lp-coflow@mode=online")
PolicySpec(compute='synchpack-3', network='lp-coflow@mode=online')
"""
from __future__ import annotations

from typing import NamedTuple

from controller.compute import compute_policies
from controller.policies import PolicyError
from controller.policies.base import catalogue
from controller.registry import parse_options

__all__ = ["DEFAULT_COMPUTE", "PolicySpec", "split_policy", "model_policies", "parse_options",
           "base_name"]

#: compute policy used when a joint workload is run under a plain network policy name
DEFAULT_COMPUTE = "fifo"


class PolicySpec(NamedTuple):
    """The two halves of a ``--policy`` spec (unpacks as ``compute, network``).

    Attributes
    ----------
    compute : str, a registered compute policy name or ``module:Class``
    network : str or None, a registered network policy name or ``module:Class``; ``None``
        when the spec names a compute policy alone
    """

    compute: str
    network: str | None


def model_policies() -> list[str]:
    """Every built-in compute policy name: the packing policies first, then those of the
    other registered job models, each name once."""
    from controller.jobmodel import job_models
    names = dict.fromkeys(compute_policies())
    for cls in job_models().values():
        names.update(dict.fromkeys(cls.policies()))
    return list(names)


def base_name(spec: str) -> str:
    """A policy name without its options (``lp-coflow@mode=online`` -> ``lp-coflow``)."""
    return spec.partition("@")[0]


def _is_compute(name: str) -> bool:
    """Whether some job model runs ``name`` (a built-in name, or a plug-in a model takes:
    :meth:`JobModel.runs <controller.jobmodel.JobModel.runs>`)."""
    from controller.jobmodel import job_models
    return _builtin(name) or any(cls.runs(base_name(name)) for cls in job_models().values())


def _builtin(name: str) -> bool:
    """Whether ``name`` is a compute policy of a built-in kind, without loading plug-ins:
    a packing policy, or a name another job model runs (``srpt+r``, ``laps+r@beta=0.3``:
    a name with a ``+`` that is not a plug-in path)."""
    from controller.jobmodel import DEFAULT_MODEL, job_models
    if "+" in name.partition("@")[2]:
        return False                        # options, then "+": two halves
    name = base_name(name)
    return name in compute_policies() or any(
        cls.runs(name) for model, cls in job_models().items() if model != DEFAULT_MODEL)


def split_policy(spec: str) -> PolicySpec:
    """``"compute+network"``, ``"network"`` or ``"compute"`` -> :class:`PolicySpec`; see
    the module docstring.

    The network half is checked only for being there (engines load it with
    :func:`~controller.policies.get_policy`, which reports unknown names and options).

    Raises
    ------
    PolicyError
        Unknown compute policy; an empty half; a plain name that is neither a network nor
        a compute policy; a ``module:Class`` that cannot be loaded.
    """
    if "+" in spec and _builtin(spec):
        return PolicySpec(spec, None)       # a compute name with a "+" (srpt+r, laps+r)
    for k in [i for i, ch in enumerate(spec) if ch == "+"][1:][::-1]:
        if spec[k + 1:] and _builtin(spec[:k]):
            return PolicySpec(spec[:k], spec[k + 1:])   # srpt+r+sebf: longest compute name
    compute, plus, network = spec.partition("+")
    if not plus:
        if ":" in spec:
            return PolicySpec(spec, None) if _is_compute(spec) else \
                PolicySpec(DEFAULT_COMPUTE, spec)
        if base_name(spec) in catalogue():
            return PolicySpec(DEFAULT_COMPUTE, spec)
        if _is_compute(spec):
            return PolicySpec(spec, None)
        raise PolicyError(f"unknown policy {spec!r}: neither a network policy (known: "
                          f"{', '.join(catalogue())}) nor a compute policy (known: "
                          f"{', '.join(model_policies())}); on a joint workload name "
                          f"both as compute+network, e.g. {DEFAULT_COMPUTE}+sebf")
    if not compute:
        raise PolicyError(f"no compute policy in {spec!r} (compute+network, e.g. "
                          f"{DEFAULT_COMPUTE}+{network or 'sebf'})")
    if not _is_compute(compute):
        if ":" in compute:
            raise PolicyError(f"{compute!r} in {spec!r} is not a compute policy (subclass "
                              f"controller.compute.ComputePlanner)")
        raise PolicyError(f"unknown compute policy {compute!r} in {spec!r}; known: "
                          f"{', '.join(model_policies())}")
    if not network:
        raise PolicyError(f"no network policy in {spec!r} (compute+network, e.g. "
                          f"{compute}+lp-coflow)")
    return PolicySpec(compute, network)
