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
    """The rule for the flows of ``order``, written to ``out`` (a pinned flow's pin)."""
    lin = np.zeros((cores, ports))
    lout = np.zeros((cores, ports))
    for n in range(order.shape[0]):
        f = order[n]
        if pinned[f] >= 0:
            out[f] = pinned[f]
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
                       core_rates, out: np.ndarray | None = None) -> np.ndarray:
    """Core per flow by the least-loaded-ports rule (see the module docstring).

    Parameters
    ----------
    arrays : FlowArrays
    order : int array
        Flows in priority order (only these are assigned).
    load : float array per flow
        Bytes each flow puts on its ports (usually the remaining bytes).
    pinned : int array per flow
        Core of flows already started, -1 otherwise.
    core_rates : sequence of float
        Rate of each core; loads are compared in time (bytes / rate), which for identical
        cores is the plain sum of the paper.
    out : int64 array per flow, optional
        Written for the flows of ``order`` only and returned: a policy's
        :func:`plan_cores`, reused plan after plan, so that a plan costs O(len(order))
        rather than a new array of every flow (at every plan, a pass and, above 32 MiB,
        a page fault per 4 KiB page). Without it, a new array whose other flows keep
        ``pinned``, or core 0 where it is -1.

    Returns
    -------
    int64 array per flow, a plan's ``core``: ``pinned`` for the pinned flows of
    ``order``, the rule's core for its others.
    """
    rates = np.asarray(core_rates, dtype=np.float64)
    pinned = np.asarray(pinned, dtype=np.int64)
    order = np.asarray(order, dtype=np.int64)
    if out is None:
        out = np.maximum(pinned, 0)  # (numpy's copy: the pass the buffer avoids)
    if len(rates) == 1:
        out[order] = 0
        return out
    return _least_loaded(order, arrays.src, arrays.dst, np.asarray(load, dtype=np.float64),
                         pinned, out, len(rates), arrays.ports, rates / rates.max())


def plan_cores(owner, arrays) -> np.ndarray:
    """``owner``'s array of plan cores for ``arrays`` (int64 per flow, made on first use),
    which its plans reuse: each plan writes the cores of the flows it serves (every
    eligible flow) and leaves the others as the last plan that served them wrote them.

    The engines hold a plan's ``core`` only while it is the current plan, and remember
    the cores a state they keep was built with (:func:`emulate.sim.flowsim.kept_cores`),
    so writing the next plan's in place is safe. Kept per ``arrays`` (a policy may plan
    for several workloads, one after another)."""
    held = owner.__dict__.get("_plan_cores")
    if held is None or held[0] is not arrays:
        held = (arrays, np.zeros(arrays.n_flows, dtype=np.int64))
        owner.__dict__["_plan_cores"] = held
    return held[1]
