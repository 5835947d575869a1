"""The knapsack that picks a batch's jobs: most weight on exactly ``m`` machines.

DEMT fills each batch with the candidates of largest total weight whose allotments fit
on the ``m`` machines (Section 3.2 of the paper): a 0/1 knapsack with item sizes ``q_j``
(machines), values ``w_j`` (weights) and capacity ``m``, by dynamic programming over the
machine count in ``O(n m)``::

    W(0, 0) = 0,  W(0, c) = -inf  for c > 0
    W(j, c) = max(W(j-1, c), W(j-1, c - q_j) + w_j)

``W(j, c)`` is the largest weight of a subset of the first ``j`` items using *exactly*
``c`` machines; the answer is ``max_c W(n, c)`` (the smallest such ``c`` on ties), and the
subset is read back from the recorded choices. The capacity is exactly ``m``, never more
(algorithms.md 5.5).

Examples
--------
>>> r = knapsack([2, 2, 3], [3.0, 4.0, 6.0], 4)
>>> r.selected.tolist(), r.value, r.used
([0, 1], 7.0, 4)

References
----------
Dutot, Eyraud, Mounié, Trystram, Section 3.2; algorithms.md 5.2 step 3.3.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Knapsack", "knapsack"]


@dataclass(frozen=True, eq=False)
class Knapsack:
    """The chosen items.

    Attributes
    ----------
    selected : int array, indices of the chosen items, increasing
    value : float, their total value (weight)
    used : int, their total size (machines)
    """

    selected: np.ndarray
    value: float
    used: int


def knapsack(sizes, values, capacity: int) -> Knapsack:
    """Most valuable subset of items with total size at most ``capacity`` (exact DP).

    Parameters
    ----------
    sizes : int array, each >= 1
    values : float array, each >= 0
    capacity : int, >= 0

    Returns
    -------
    Knapsack
    """
    sizes = np.asarray(sizes, dtype=np.int64)
    values = np.asarray(values, dtype=np.float64)
    n = len(sizes)
    W = np.full(capacity + 1, -np.inf)
    W[0] = 0.0
    take = np.zeros((n, capacity + 1), dtype=bool)
    for j in range(n):
        q = int(sizes[j])
        if q > capacity:
            continue
        cand = W[:capacity + 1 - q] + values[j]
        better = cand > W[q:]
        take[j, q:] = better
        W[q:] = np.where(better, cand, W[q:])   # reads the old W: the right side is a copy
    c = int(np.argmax(W))
    value = float(W[c])
    used = c
    chosen = []
    for j in range(n - 1, -1, -1):
        if take[j, c]:
            chosen.append(j)
            c -= int(sizes[j])
    return Knapsack(np.array(sorted(chosen), dtype=np.int64), value, used)
