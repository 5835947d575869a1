"""Sincronia: BSSI coflow ordering with greedy order-preserving rates (``sincronia``).

Implements Sincronia (Agarwal, Rajakrishnan, Narayan, Agarwal, Shmoys, Vahdat, SIGCOMM
2018), Section 4: the *Bottleneck-Select-Scale-Iterate* ordering (Algorithm 1) of the
coflows, for the weighted completion time, and an order-preserving work-conserving rate
allocation.

BSSI, on the ready coflows, their *remaining* bytes and their weights ``w``; the order is
filled from the back::

    for position = n, n-1, ..., 1:
        b    = the most loaded port (total remaining bytes of the unordered coflows)
        last = the unordered coflow minimising w_k / load_k(b)      (among load_k(b) > 0)
        place `last` at `position`
        for every other unordered coflow k:  w_k -= w_last * load_k(b) / load_last(b)
        remove `last`

(the primal-dual scaling step: the weight ``last`` "uses up" is charged to the coflows that
share its bottleneck). Ties: the lowest-numbered port (inputs ``0..P-1`` before outputs),
and among coflows with the same ratio the highest index goes last. Sincronia's guarantee
(4-approximation for the offline, zero-release, single big-switch problem) holds for this
order with any order-preserving work-conserving allocation.

Online use, as in the paper's Section 5: the order is recomputed over the ready coflows at
every event (coflow ready / completed) on the remaining bytes with the original weights.

Rates: the engine's ``"priority"`` sharing, work-conserving strict priority in BSSI order
(flows of a coflow ranked by index) -- Sincronia's greedy order-preserving
allocation. Parallel cores: BSSI sees every server as one port of the aggregate capacity
(the ``m`` links together, Sincronia's big-switch model); flows then take cores in that
order by the least-loaded rule of :mod:`controller.cores`.

References
----------
S. Agarwal, S. Rajakrishnan, A. Narayan, R. Agarwal, D. Shmoys, A. Vahdat. Sincronia:
near-optimal network design for coflows. SIGCOMM 2018.
"""
from __future__ import annotations

import numba
import numpy as np

from controller.indexing import no_wraparound
from controller.plan import Plan, State
from controller.policies.base import Policy, register
from controller.policies.portload import coflow_priority_plan, index_for

# the kernels never index with a negative number
no_wraparound(__name__)


@numba.njit(cache=True)
def _bssi(load, weight):
    n, q = load.shape
    w = weight.copy()
    total = np.zeros(q)
    for c in range(n):
        for p in range(q):
            total[p] += load[c, p]
    alive = np.ones(n, dtype=np.bool_)
    order = np.empty(n, dtype=np.int64)
    pos = n - 1
    while pos >= 0:
        b = 0
        for p in range(1, q):
            if total[p] > total[b]:
                b = p
        best = -1
        best_r = np.inf
        if total[b] > 0.0:
            for c in range(n):
                if alive[c] and load[c, b] > 0.0:
                    r = w[c] / load[c, b]
                    if r <= best_r:
                        best_r = r
                        best = c
            if best < 0:  # only rounding residue left on b
                total[b] = 0.0
                continue
        else:  # no loads left at all: the rest by index, highest last
            for c in range(n - 1, -1, -1):
                if alive[c]:
                    best = c
                    break
        order[pos] = best
        alive[best] = False
        pos -= 1
        lb = load[best, b]
        if lb > 0.0:
            for c in range(n):
                if alive[c] and load[c, b] > 0.0:
                    w[c] = max(0.0, w[c] - w[best] * load[c, b] / lb)
        for p in range(q):
            total[p] -= load[best, p]
    return order


def bssi_order(load: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """Sincronia's BSSI order (Algorithm 1): row indices of ``load``, first = highest priority.

    Parameters
    ----------
    load : (n, ports) float array
        Bytes of coflow ``k`` on each port (inputs and outputs as separate columns).
    weight : (n,) float array, non-negative

    Returns
    -------
    int array: a permutation of ``0..n-1``.

    Examples
    --------
    Two coflows on one port: the one with the larger weight per byte goes first.

    >>> bssi_order(np.array([[4.0], [1.0]]), np.array([1.0, 1.0])).tolist()
    [1, 0]
    """
    load = np.ascontiguousarray(load, dtype=np.float64)
    weight = np.asarray(weight, dtype=np.float64)
    if load.ndim != 2 or weight.shape != (load.shape[0],):
        raise ValueError("load must be (n, ports) and weight (n,)")
    if load.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    return _bssi(load, weight)


@register
class Sincronia(Policy):
    name = "sincronia"
    summary = "Sincronia: BSSI weighted order + greedy order-preserving rates (SIGCOMM'18)"

    def plan(self, state: State) -> Plan:
        idx = index_for(self, state.arrays)
        active = state.active_coflows
        flows, bounds = idx.gather(active, state.eligible)
        loads = idx.dense_loads(flows, bounds, state.remaining)
        order = active[bssi_order(loads, state.arrays.weight[active])]
        return coflow_priority_plan(state, idx, order)
