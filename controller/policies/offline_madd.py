"""The MADD allocation of Sincronia's offline simulator, to compare with its published figures.

The Sincronia authors' offline simulator (``sincronia-coflow/simulator``, ``offlinesim``,
C++; ``assign_MADD_rates_to_flows``) schedules a one-switch workload whose coflows are all
released at 0 in a fixed order, computed once at time 0 (``SEBF``: Varys's smallest
effective bottleneck first; ``PD``: Sincronia's primal-dual BSSI). At each of its events
it allocates, on the capacity left on each port:

1. **MADD**, coflow by coflow in the order: the coflow's bottleneck ``Γ`` on what earlier
   coflows left, each flow at ``remaining / Γ`` (clipped to what is left on its ports). A
   coflow one of whose loaded ports is already full is *skipped*. A flow of a scheduled
   coflow that finds one of its ports full is marked finished and never backfilled again.
2. **The skipped coflows**: what is left is split evenly among their flows per port
   (each gets ``min(left_in / flows at its input, left_out / flows at its output)``).
3. **Work conservation**, in the order: every flow not marked finished gets what is still
   left on both its ports.

Rates then stay fixed until the next event, the earliest ``Γ`` of step 1: a flow that
finishes before (a backfilled one) leaves its capacity idle, a coflow that finishes
before is not an event. And the reference *records* a coflow's completion at the first
event at which it has nothing left, not when its last byte is sent; :meth:`OfflineMadd.
reference_completions` reads our exact completions that way, for comparison.

Against ``sebf`` (Varys: re-ordered at every coflow event on the remaining bytes, MADD
re-applied at every flow completion, capacity backfilled at once): on FB2010 with
releases at 0 on 150 ports at 1 MiB/s the reference's SEBF+MADD mean CCT is 7734.8 s, our
``sebf``'s 5901.3 s (README "Semantics beside the reference simulators").

This module is the allocation only; :class:`~controller.policies.sebf.Sebf` with
``allocation="sincronia-offline"`` uses it with the static SEBF order.

References
----------
S. Agarwal et al. Sincronia: near-optimal network design for coflows. SIGCOMM 2018;
simulator at https://github.com/sincronia-coflow/simulator (``offlinesim/scheduler.cpp``).
"""
from __future__ import annotations

import numba
import numpy as np

from controller.indexing import no_wraparound

# the kernels never index with a negative number
no_wraparound(__name__)

#: the reference's thresholds, in its units (one port = 1 MB per time unit): bandwidth
#: below ``BW_EPS`` of a port's capacity is none; a flow with at most ``SIZE_EPS`` MB left
#: (one byte) is finished
BW_EPS = 0.00000000000093132257
SIZE_EPS_BYTES = 0.000000953674316 * 2 ** 20


@numba.njit(cache=True)
def offline_madd(flows, bounds, src, dst, rem, cap, ports, dead, size_eps, bw_eps):
    """One event of the reference's allocation.

    ``flows[bounds[g]:bounds[g+1]]`` are the unfinished flows of the ``g``-th coflow in
    the order; ``cap`` the capacity of a port (bytes/s); ``dead`` per flow, the flows
    marked finished (updated). Returns ``(rate per position of flows, time to the next
    event)`` (``inf``: no coflow got MADD rates).
    """
    n = flows.shape[0]
    groups = bounds.shape[0] - 1
    rate = np.zeros(n)
    s_left = np.full(ports, cap)
    r_left = np.full(ports, cap)
    lin = np.zeros(ports)
    lout = np.zeros(ports)
    skipped = np.zeros(groups, dtype=np.bool_)
    eps = bw_eps * cap
    dt = np.inf
    for g in range(groups):
        lo, hi = bounds[g], bounds[g + 1]
        if lo == hi:
            continue
        for q in range(lo, hi):
            f = flows[q]
            lin[src[f]] += rem[f]
            lout[dst[f]] += rem[f]
        gamma = -1.0
        for q in range(lo, hi):
            f = flows[q]
            for load, left in ((lin[src[f]], s_left[src[f]]), (lout[dst[f]], r_left[dst[f]])):
                if load <= size_eps:
                    continue
                if left < eps:
                    skipped[g] = True
                elif load / left > gamma:
                    gamma = load / left
        for q in range(lo, hi):
            f = flows[q]
            lin[src[f]] = 0.0
            lout[dst[f]] = 0.0
        if skipped[g] or gamma <= 0.0:
            skipped[g] = True
            continue
        for q in range(lo, hi):
            f = flows[q]
            i, j = src[f], dst[f]
            if rem[f] > size_eps and s_left[i] > eps and r_left[j] > eps:
                r = rem[f] / gamma
                if r > s_left[i] or r > r_left[j]:
                    r = min(s_left[i], r_left[j])
                rate[q] = r
                s_left[i] -= r
                r_left[j] -= r
            else:
                dead[f] = True
        if gamma < dt:
            dt = gamma
    # the skipped coflows share what is left, evenly per port
    ns = np.zeros(ports, dtype=np.int64)
    nr = np.zeros(ports, dtype=np.int64)
    for g in range(groups):
        if skipped[g]:
            for q in range(bounds[g], bounds[g + 1]):
                f = flows[q]
                if s_left[src[f]] > eps and r_left[dst[f]] > eps and rem[f] > size_eps:
                    ns[src[f]] += 1
                    nr[dst[f]] += 1
    share = np.zeros(n)
    for g in range(groups):
        if skipped[g]:
            for q in range(bounds[g], bounds[g + 1]):
                f = flows[q]
                i, j = src[f], dst[f]
                if s_left[i] > eps and r_left[j] > eps and rem[f] > size_eps:
                    r = min(s_left[i] / ns[i], r_left[j] / nr[j])
                    share[q] = r if r >= eps else 0.0
    for q in range(n):
        if share[q] > 0.0:
            f = flows[q]
            rate[q] += share[q]
            s_left[src[f]] -= share[q]
            r_left[dst[f]] -= share[q]
    if dt == np.inf:
        for q in range(n):
            if rem[flows[q]] <= size_eps:
                dt = size_eps / cap  # only residue left: a step that sends it
                break
    # work conservation in the order, flows not marked finished
    for q in range(n):
        f = flows[q]
        if rem[f] <= size_eps:
            # finished for the reference (it zeroes what is left below one byte); here
            # the residue is sent by the next event
            dead[f] = True
            rate[q] = rem[f] / dt
            continue
        if dead[f]:
            continue
        i, j = src[f], dst[f]
        if s_left[i] > eps and r_left[j] > eps:
            r = min(s_left[i], r_left[j])
            if r >= eps:
                rate[q] += r
                s_left[i] -= r
                r_left[j] -= r
    return rate, dt
