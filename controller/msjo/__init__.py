"""MSJO: joint scheduling of MapReduce jobs with servers (Ling et al.; issue 13).

Jobs of a map stage and a reduce stage of non-preemptive, unit-size tasks on identical
machines, with a shuffle delay after every map (algorithms.md section 3). Modules, one
per concept:

* :mod:`~controller.msjo.model`: tasks, jobs, the cluster, the numpy view.
* :mod:`~controller.msjo.schedule`: schedules, the verifier, strict and Graham list
  scheduling, re-timing under true lengths.
* :mod:`~controller.msjo.lp`: CLS-LPP, COGE / CND-LPP, the task-level LP.
* :mod:`~controller.msjo.mars`: MarS (3-approx.), T-MarS (7-approx.), SO-MarS.
* :mod:`~controller.msjo.baselines`: MARES, HUWF, HJWF, H-MARES, STF, HTWF.
* :mod:`~controller.msjo.generators`: the paper's synthetic scenarios, prediction error.

Every policy is a pure function ``policy(arrays, **options) -> MSJOSchedule``;
:data:`POLICIES` names them and :data:`LEVEL` says which objective each targets
(``"job"``: ``sum w_j C_j``; ``"task"``: ``sum w_u C_u``)::

    from controller.msjo import get_policy
    sched = get_policy("mars")(cluster.arrays)

The engines (simulator, emulation) run these through the job-model seam
(:mod:`controller.jobmodels.msjo`, a workload with ``"model": "msjo"``); nothing here
knows an engine.
"""
from __future__ import annotations

from typing import Callable

from controller.msjo import baselines, mars as _mars

__all__ = ["POLICIES", "LEVEL", "get_policy"]

#: name -> policy function
POLICIES: dict[str, Callable] = {
    "mars": _mars.mars,
    "t-mars": _mars.t_mars,
    "so-mars": _mars.so_mars,
    "mares": baselines.mares,
    "huwf": baselines.huwf,
    "hjwf": baselines.hjwf,
    "h-mares": baselines.h_mares,
    "stf": baselines.stf,
    "htwf": baselines.htwf,
}

#: name -> the objective the policy targets
LEVEL = {"mars": "job", "so-mars": "job", "mares": "job", "huwf": "job", "hjwf": "job",
         "t-mars": "task", "h-mares": "task", "stf": "task", "htwf": "task"}


def get_policy(name: str) -> Callable:
    """The MSJO policy called ``name``; ``KeyError`` listing the names if unknown."""
    try:
        return POLICIES[name]
    except KeyError:
        raise KeyError(f"unknown MSJO policy {name!r}; known: "
                       f"{', '.join(sorted(POLICIES))}") from None
