"""Core assignment: which of the ``m`` parallel cores each flow takes.

On an identical parallel network a flow is sent whole through one core. The rule used by
the list-scheduling algorithms (algorithms.md 1.6) and, by default, by the baselines:
take flows in priority order and put each on the core that minimises the load already
assigned to its input port plus its output port on that core (smallest core on ties).
Flows that have already sent bytes stay where they are and count towards the load.
"""
from __future__ import annotations

import numba
import numpy as np

from controller.indexing import no_wraparound

# the kernels never index with a negative number
no_wraparound(__name__)


@numba.njit(cache=True)
def _least_loaded(order, src, dst, load, pinned, out, cores, ports, core_rate):
    """The rule for the flows of ``order`` not pinned (``pinned`` -1), written to ``out``."""
    lin = np.zeros((cores, ports))
    lout = np.zeros((cores, ports))
    for n in range(order.shape[0]):
        f = order[n]
        if pinned[f] >= 0:
            lin[pinned[f], src[f]] += load[f]
            lout[pinned[f], dst[f]] += load[f]
    for n in range(order.shape[0]):
        f = order[n]
        if pinned[f] >= 0:
            continue
        best = 0
        best_v = np.inf
        for h in range(cores):
            v = (lin[h, src[f]] + lout[h, dst[f]] + 2.0 * load[f]) / core_rate[h]
            if h == 0 or v < best_v - 1e-12 * best_v:
                best_v = v
                best = h
        out[f] = best
        lin[best, src[f]] += load[f]
        lout[best, dst[f]] += load[f]
    return out


def least_loaded_cores(arrays, order: np.ndarray, load: np.ndarray, pinned: np.ndarray,
                       core_rates) -> np.ndarray:
    """Core per flow by the least-loaded-ports rule (see the module docstring).

    Parameters
    ----------
    arrays : FlowArrays
    order : int array
        Flows in priority order (only these are assigned; the others keep ``pinned``,
        or core 0 where it is -1).
    load : float array per flow
        Bytes each flow puts on its ports (usually the remaining bytes).
    pinned : int array per flow
        Core of flows already started, -1 otherwise.
    core_rates : sequence of float
        Rate of each core; loads are compared in time (bytes / rate), which for identical
        cores is the plain sum of the paper.

    Returns
    -------
    int64 array per flow, a plan's ``core``: ``pinned`` where a flow is pinned, the rule's
    core for the others in ``order``, core 0 for the rest (flows the plan does not
    serve).
    """
    rates = np.asarray(core_rates, dtype=np.float64)
    # one pass over every flow: the copy (numpy's: a per-flow array allocated in a
    # kernel is not given huge pages, and above 32 MiB each of its 4 KiB pages is a
    # fault at every plan) with the unpinned flows on core 0
    pinned = np.asarray(pinned, dtype=np.int64)
    out = np.maximum(pinned, 0)
    if len(rates) > 1:
        _least_loaded(np.asarray(order, dtype=np.int64), arrays.src, arrays.dst,
                      np.asarray(load, dtype=np.float64), pinned, out, len(rates),
                      arrays.ports, rates / rates.max())
    return out
