"""The yardstick: the LP lower bound every run of a coflow workload is compared with.

``run``, ``compare``, the demo and the experiments report a schedule's total weighted
completion time beside a lower bound valid for *every* schedule of the workload, whatever
the policy: LP (8) on one core (coflow level, exact and cheap), LP (1) on several
identical cores (flow level: valid for every schedule that keeps a flow on one core)
while the workload is small enough for it to be cheap. Heterogeneous cores have no bound
here (the LPs assume identical cores).

Examples
--------
Two coflows on one port pair at 1 byte/s, sizes 2 and 1: the best order sends the smaller
first (completions 1 and 3), and LP (8) is exact here:

>>> from controller.model import Coflow, Flow, Workload
>>> from topologies import Fabric
>>> w = Workload(Fabric(ports=2, cores=1, rate_bps=8.0),
...              [Coflow("big", [Flow(0, 1, 2.0)]), Coflow("small", [Flow(0, 1, 1.0)])])
>>> round(lp_bound_for(w), 6)
4.0
"""
from __future__ import annotations

from controller.lp.coflow import solve_coflow_lp, solve_flow_lp
from controller.model import Workload


def lp_bound_for(workload: Workload, *, max_flows: int = 5000) -> float | None:
    """A lower bound on ``sum_k w_k C_k`` of every schedule, when cheap enough; else None.

    Parameters
    ----------
    workload : Workload
    max_flows : int
        LP (1) on several cores is solved only up to this many flows.

    Returns
    -------
    float or None
        LP (8) on one core; LP (1) on several identical cores up to ``max_flows`` flows;
        ``None`` otherwise (heterogeneous cores, or too large).
    """
    fab = workload.fabric
    if not fab.identical:
        return None
    if fab.cores == 1:
        return solve_coflow_lp(workload.arrays, 1, fab.rate_bps).value
    if workload.arrays.n_flows <= max_flows:
        return solve_flow_lp(workload.arrays, fab.cores, fab.rate_bps).value
    return None
