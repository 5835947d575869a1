"""The one result type of every LP relaxation: value, status, solution, rounds, seconds.

Two families of LPs bound the project's schedules from below:

* the **coflow LPs** (:mod:`controller.lp.coflow`): Chen's LP (1), LP (7), LP (8), over
  flows and coflows on an identical parallel network, solved by a cutting-plane loop;
* the **compute LPs** (:mod:`controller.compute.lp`): Shafiee & Ghaderi's LP1, LP2, LP3,
  over tasks, stages and machines, solved in one HiGHS call;
* the **moldable LP** (:mod:`controller.moldable.bounds`): Dutot et al.'s interval LP over
  moldable jobs, solved in one HiGHS call.

Both return an :class:`LPResult`. What every LP has is a field of it (``lp``, ``value``,
``status``, ``solution``, ``rounds``, ``seconds``); what only one family has sits in two
small objects, ``solution`` (the LP's optimal completion times, the order the LP-based
policies list work by) and ``details`` (how the LP was built and solved):

============  ===================================  =====================================
family        ``solution``                         ``details``
============  ===================================  =====================================
coflow        :class:`CoflowSolution`: ``C̄`` per   :class:`CuttingPlaneDetails`:
              flow, coflow, job                    objective, cores, cuts, violation
compute       :class:`StageSolution`: ``C~`` per   :class:`ModelDetails`: variables,
              stage, job; task fractions (LP1,     rows, non-zeros, intervals, weights
              LP2) or stage order (LP3)
moldable      :class:`IntervalSolution`: ``x_ik``  :class:`ModelDetails` (no intervals)
              per job and interval, boundaries
============  ===================================  =====================================

Examples
--------
>>> from topologies.fabric import Fabric
>>> from controller.model import Workload, Coflow, Flow
>>> from controller.lp.coflow import solve_coflow_lp
>>> w = Workload(Fabric(ports=2, cores=1, rate_bps=8.0),
...              (Coflow("a", (Flow(0, 1, 2.0),)), Coflow("b", (Flow(0, 1, 1.0),))))
>>> r = solve_coflow_lp(w.arrays, cores=1, rate_bps=8.0)
>>> r.lp, r.status, round(r.value, 6), r.solution.coflow_completion.tolist()
('LP8', 'optimal', 4.0, [3.0, 1.0])
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Union

import numpy as np

if TYPE_CHECKING:   # pragma: no cover
    from controller.compute.lp import Intervals

__all__ = ["LPResult", "STATUSES", "CoflowSolution", "CuttingPlaneDetails", "StageSolution",
           "TaskFractions", "StageOrder", "ModelDetails", "IntervalSolution"]

#: ``"optimal"``: solved to optimality (for the coflow LPs: no violated subset inequality
#: left). ``"round_limit"`` / ``"time_limit"``: a cutting-plane loop stopped early; the
#: value is the optimum of a relaxation with fewer cuts (still a lower bound) but the
#: solution is not LP-optimal.
STATUSES = ("optimal", "round_limit", "time_limit")


# ---------------------------------------------------------------------- coflow LPs
@dataclass(frozen=True, eq=False)
class CoflowSolution:
    """Optimal completion times of a coflow LP, in absolute seconds.

    Attributes
    ----------
    flow_completion : float array, one per flow
        ``C̄_f``; ``nan`` for flows not in the LP. For LP (7)/(8), which have no flow
        variables, the flow's coflow ``C̄_k``.
    coflow_completion : float array, one per coflow
        ``C̄_k``; ``nan`` for coflows not in the LP.
    job_completion : float array, one per job
        ``max C̄_k`` over the job's coflows in the LP (the ``C_g`` of LP (13)); ``nan`` for
        jobs with no coflow in the LP.
    """

    flow_completion: np.ndarray
    coflow_completion: np.ndarray
    job_completion: np.ndarray


@dataclass(frozen=True)
class CuttingPlaneDetails:
    """How a coflow LP was posed and how its cutting-plane loop went.

    Attributes
    ----------
    objective : str, ``"weighted"``, ``"jobs"`` or ``"makespan"``
    cores : int, ``m``
    cuts : int, subset rows added by separation (seed rows not counted)
    seed_cuts : int, subset rows added before the first solve
    max_violation : float
        Largest relative violation of a subset inequality at the returned solution.
    """

    objective: str
    cores: int
    cuts: int
    seed_cuts: int
    max_violation: float


# ---------------------------------------------------------------------- compute LPs
@dataclass(frozen=True, eq=False)
class TaskFractions:
    """The non-zero ``x^i_tl`` of an LP1/LP2 solution, one entry per (task, machine,
    interval); the values of a task sum to 1.

    Attributes
    ----------
    task, machine, interval : int arrays (``interval`` is 1-based, as in the paper)
    value : float array, the fraction of the task done on the machine in the interval
    """

    task: np.ndarray
    machine: np.ndarray
    interval: np.ndarray
    value: np.ndarray


@dataclass(frozen=True, eq=False)
class StageOrder:
    """The ``delta_{ab}`` of an LP3 solution: relaxed "stage ``a`` completes before ``b``",
    one entry per pair of stages sharing a machine (``a < b``; ``delta_ba = 1 - delta_ab``).

    Attributes
    ----------
    before, after : int arrays, the stages ``a`` and ``b``
    value : float array in [0, 1]
    """

    before: np.ndarray
    after: np.ndarray
    value: np.ndarray


@dataclass(frozen=True, eq=False)
class StageSolution:
    """Optimal completion times of a compute LP, in seconds.

    Attributes
    ----------
    stage_completion : float array, per stage, the LP completion times ``C~_s``
    job_completion : float array, per job, the largest ``C~`` of its stages
    fractions : TaskFractions or None, LP1/LP2 only
    order : StageOrder or None, LP3 only
    """

    stage_completion: np.ndarray
    job_completion: np.ndarray
    fractions: TaskFractions | None = None
    order: StageOrder | None = None

    def machine_fractions(self, n_tasks: int, n_machines: int) -> np.ndarray:
        """(n, M) array ``x~^i_t = sum_l x^i_tl``: fraction of task ``t`` on machine ``i``."""
        out = np.zeros((n_tasks, n_machines))
        x = self.fractions
        np.add.at(out, (x.task, x.machine), x.value)
        return out


@dataclass(frozen=True, eq=False)
class ModelDetails:
    """The size of a compute LP and what it was built from.

    Attributes
    ----------
    variables, rows, nonzeros : int, the LP's size
    build_seconds : float, time to build the matrices (``LPResult.seconds`` is the solve)
    intervals : Intervals or None, the geometric intervals of LP1/LP2
    weights : float array, the stage weights of the objective
    """

    variables: int
    rows: int
    nonzeros: int
    build_seconds: float
    intervals: Intervals | None = None
    weights: np.ndarray | None = field(default=None, repr=False)


# ---------------------------------------------------------------------- moldable LP
@dataclass(frozen=True, eq=False)
class IntervalSolution:
    """An optimum of the moldable interval LP: in which interval each job ends.

    Attributes
    ----------
    boundaries : float array (K+1,), ``T_0 = 0 < T_1 < ... < T_K`` (seconds); interval
        ``k`` is ``(T_{k-1}, T_k]`` for ``k = 1..K`` and the last, ``k = K+1``, is
        ``(T_K, inf)``
    fractions : float array (n, K+1), ``x_ik``
    job_completion : float array (n,), the completion each job is credited,
        ``sum_k c_ik x_ik`` (``c_ik`` the interval's left end, at least the job's
        shortest time)
    """

    boundaries: np.ndarray
    fractions: np.ndarray
    job_completion: np.ndarray


# ---------------------------------------------------------------------- the result
@dataclass(frozen=True, eq=False)
class LPResult:
    """Optimum of an LP relaxation; see the module docstring.

    Attributes
    ----------
    lp : str
        ``"LP1"``, ``"LP7"``, ``"LP8"`` (coflow; ``"LP1"`` is Chen's LP (1)) or ``"LP1"``,
        ``"LP2"``, ``"LP3"`` (compute) or ``"moldable-minsum"``; ``solution``'s type
        tells the family.
    value : float
        The LP optimum: a lower bound on the objective of every schedule of the LP's
        class (coflow LPs: ``sum_k w_k C_k``, ``sum_g omega_g C_g`` or ``max_k C_k`` in
        absolute seconds; compute LPs: ``sum_s w_s C~_s``, with the default stage weights
        a bound on ``sum_j w_j C_j``; moldable: ``sum_i w_i C_i``).
    status : str, one of :data:`STATUSES`
    solution : CoflowSolution or StageSolution
    rounds : int
        LP solves (the cutting-plane loop's rounds, both stages of ``"makespan"``; 1 for
        the compute LPs).
    seconds : float
        Wall time of the solve (coflow: the whole loop; compute: the HiGHS call).
    details : CuttingPlaneDetails or ModelDetails
    """

    lp: str
    value: float
    status: str
    solution: Union[CoflowSolution, StageSolution, IntervalSolution]
    rounds: int
    seconds: float
    details: Union[CuttingPlaneDetails, ModelDetails]

    @property
    def optimal(self) -> bool:
        return self.status == "optimal"
