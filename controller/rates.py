"""The rate rule: the rate each flow gets on the fabric under a plan.

A plan (``controller.plan``) says how rates follow from ranks (``sharing``):

* ``"priority"``: work-conserving strict priority. Flows are taken in rank order (ties by
  flow index); each gets ``min(cap, what is left on its input port, what is left on its
  output port)`` on its core; with ``backfill`` a second pass in rank order hands what is
  still left to flows regardless of their caps (Varys's backfilling);
* ``"fair"``: max-min fair by progressive filling, each flow at most its cap.

This module is that rule, once, for both engines. The simulator (``emulate.sim.flowsim``) applies
it at every flow completion when it rescans (rate caps, byte limits, fixed rates; its
incremental engines, ``emulate.sim.matching`` and ``emulate.sim.capped``, are fast paths tested
equal to it). The controller (``controller.runtime``) applies it at every event to the
eligible flows: to decide which flows send at all (a flow the plan gives rate 0 is paused
at its agent instead of being left to starve in a low class, where TCP would back off and
come back late), which pacing a capped flow gets, and when a coflow will cross a byte
threshold.

The kernels are compiled by numba (``cache=True``); :func:`allocate` is their plain
interface. The controller calls :func:`warm_up` before a run's clock starts, so no kernel
is compiled (or loaded from the cache) inside an emulated run.

Examples
--------
>>> import numpy as np
>>> src, dst, core = np.array([0, 0, 1]), np.array([1, 2, 2]), np.zeros(3, dtype=np.int64)
>>> allocate(np.arange(3), src, dst, core, np.full(3, np.inf), np.array([10.0])).tolist()
[10.0, 0.0, 10.0]
>>> allocate(np.arange(3), src, dst, core, np.full(3, np.inf), np.array([10.0]),
...          "fair").tolist()
[5.0, 5.0, 5.0]
"""
from __future__ import annotations

import heapq

import numba
import numpy as np

from controller.indexing import no_wraparound
from controller.plan import SHARINGS

# the kernels never index with a negative number
no_wraparound(__name__)

__all__ = ["allocate", "byte_caps", "fair_rates", "priority_rates", "warm_up"]


def allocate(order: np.ndarray, src: np.ndarray, dst: np.ndarray, core: np.ndarray,
             cap: np.ndarray, core_rate: np.ndarray, sharing: str = "priority",
             backfill: bool = True) -> np.ndarray:
    """Rate (same unit as ``core_rate``) per flow of ``order``.

    Parameters
    ----------
    order : int array
        Eligible flows, in rank order (ties by index) for ``"priority"``.
    src, dst, core, cap : arrays indexed by flow
        ``cap`` is ``inf`` where the plan sets none (:func:`byte_caps` converts a plan's).
    core_rate : float array
        The rate of every link of each core.
    sharing : {"priority", "fair"}
    backfill : bool
        ``"priority"`` only: hand what the first pass leaves to flows beyond their caps.

    Returns
    -------
    float array aligned with ``order``.
    """
    order = np.ascontiguousarray(order, dtype=np.int64)
    src = np.ascontiguousarray(src, dtype=np.int64)
    dst = np.ascontiguousarray(dst, dtype=np.int64)
    core = np.ascontiguousarray(core, dtype=np.int64)
    cap = np.ascontiguousarray(cap, dtype=np.float64)
    core_rate = np.ascontiguousarray(core_rate, dtype=np.float64)
    rate = np.zeros(len(order))
    if not len(order):
        return rate
    done = np.zeros(len(src), dtype=np.bool_)  # the eligible flows have bytes left
    if sharing == "fair":
        fair_rates(order, 0, src, dst, core, cap, done, core_rate, rate,
                   np.zeros(len(order), dtype=np.bool_))
        return rate
    cores = len(core_rate)
    ports = int(max(src[order].max(), dst[order].max())) + 1
    shape = (cores, ports)
    tot_in = np.bincount(core[order] * ports + src[order],
                         minlength=cores * ports).reshape(shape)
    tot_out = np.bincount(core[order] * ports + dst[order],
                          minlength=cores * ports).reshape(shape)
    nz = np.array([np.count_nonzero(tot_in), np.count_nonzero(tot_out)], dtype=np.int64)
    has_cap = bool(np.isfinite(cap[order]).any())
    priority_rates(order, 0, src, dst, core, cap, done, core_rate, backfill, has_cap, rate,
                   np.empty(shape), np.empty(shape), tot_in, tot_out, nz,
                   np.empty(shape, dtype=np.int64), np.empty(shape, dtype=np.int64),
                   np.empty(shape, dtype=np.bool_), np.empty(shape, dtype=np.bool_))
    return rate


def warm_up() -> None:
    """Compile (or load from numba's cache) the kernels for what :func:`allocate` and
    :func:`byte_caps` are given in a run (int64 flows, float64 rates)."""
    one = np.zeros(1, dtype=np.int64)
    byte_caps(one, np.full(1, np.nan), np.empty(1))
    for sharing in SHARINGS:
        allocate(one, one, one + 1, one, np.array([1.0]), np.array([2.0]), sharing)


@numba.njit(cache=True)
def byte_caps(order, rate_cap, out):
    """A plan's caps in bytes/s for the flows it orders; whether any of them is finite.

    ``out[f]`` becomes ``rate_cap[f] / 8`` (``inf`` where ``rate_cap[f]`` is NaN, no cap)
    for ``f`` in ``order``, the only flows the kernels read; the rest of ``out`` is left
    as it was (the simulator reuses one buffer for every plan).
    """
    finite = False
    for m in range(order.shape[0]):
        f = order[m]
        r = rate_cap[f]
        if np.isnan(r):
            out[f] = np.inf
        else:
            out[f] = r / 8.0
            finite = finite or out[f] < np.inf
    return finite


@numba.njit(cache=True)
def priority_rates(order, head, src, dst, core, cap, done, core_cap, backfill, has_cap,
                    newr, res_in, res_out, tot_in, tot_out, nz, pass_in, pass_out,
                    closed_in, closed_out):
    """Work-conserving strict priority in ``order``; returns the last position scanned.

    ``newr[n]`` becomes the rate of flow ``order[n]`` for ``head <= n <=`` the returned
    position (beyond it every flow gets nothing). ``tot_in[h, p]`` / ``tot_out[h, p]``
    count the flows of ``order`` not ``done`` at input / output port ``p`` of core ``h``,
    ``nz`` how many of those counts are non-zero; ``res_*``, ``pass_*``, ``closed_*``
    are scratch of shape ``(cores, ports)``. The backfill pass runs only with
    ``has_cap`` (without caps the first pass leaves nothing a flow could use).

    Once every input port (or every output port) that still has flows is saturated or
    has no flow left further down the order, the rest of the order gets nothing, in the
    first pass and in the backfill pass (which only hands out what is left on both of a
    flow's ports), so the scan stops early.
    """
    res_in[:, :] = 0.0
    res_out[:, :] = 0.0
    for h in range(res_in.shape[0]):
        res_in[h, :] = core_cap[h]
        res_out[h, :] = core_cap[h]
    pass_in[:, :] = 0
    pass_out[:, :] = 0
    closed_in[:, :] = False
    closed_out[:, :] = False
    n_ci = 0
    n_co = 0
    end = order.shape[0] - 1
    for n in range(head, order.shape[0]):
        f = order[n]
        newr[n] = 0.0
        if done[f]:
            continue
        h = core[f]
        i = src[f]
        j = dst[f]
        r = min(cap[f], res_in[h, i], res_out[h, j])
        if r > 1e-9 * core_cap[h]:  # not floating-point crumbs of a full link
            newr[n] = r
            res_in[h, i] -= r
            res_out[h, j] -= r
        pass_in[h, i] += 1
        pass_out[h, j] += 1
        tiny = 1e-9 * core_cap[h]
        if not closed_in[h, i] and (res_in[h, i] <= tiny or pass_in[h, i] >= tot_in[h, i]):
            closed_in[h, i] = True
            n_ci += 1
        if not closed_out[h, j] and (res_out[h, j] <= tiny
                                     or pass_out[h, j] >= tot_out[h, j]):
            closed_out[h, j] = True
            n_co += 1
        if n_ci >= nz[0] or n_co >= nz[1]:
            end = n
            break
    if has_cap and backfill:
        for n in range(head, end + 1):
            f = order[n]
            if done[f]:
                continue
            h = core[f]
            r = min(res_in[h, src[f]], res_out[h, dst[f]])
            if r > 1e-9 * core_cap[h]:
                newr[n] += r
                res_in[h, src[f]] -= r
                res_out[h, dst[f]] -= r
    return end


@numba.njit(cache=True)
def fair_rates(order, head, src, dst, core, cap, done, core_cap, newr, frozen):
    """Max-min fair rates by progressive filling, each flow at most its cap.

    All unfrozen flows share one rising level ``x``; port ``p`` saturates when ``x``
    reaches ``(capacity - rate of its frozen flows) / its unfrozen flows``. Ports are taken
    from a heap in that order and their flows frozen at the level (flow caps likewise),
    so the cost is O(flows log ports) per allocation.
    """
    cores = core_cap.shape[0]
    n_all = order.shape[0]
    nport = 0
    for n in range(head, n_all):
        f = order[n]
        if src[f] + 1 > nport:
            nport = src[f] + 1
        if dst[f] + 1 > nport:
            nport = dst[f] + 1
    P = nport
    nport = cores * P
    cnt = np.zeros(2 * nport, dtype=np.int64)
    used = np.zeros(2 * nport)
    live = 0
    for n in range(head, n_all):
        f = order[n]
        newr[n] = 0.0
        if done[f] or cap[f] <= 0.0:
            frozen[n] = True
            continue
        frozen[n] = False
        cnt[core[f] * P + src[f]] += 1
        cnt[nport + core[f] * P + dst[f]] += 1
        live += 1
    if live == 0:
        return n_all - 1
    # CSR lists of positions per port
    ptr = np.zeros(2 * nport + 1, dtype=np.int64)
    for p in range(2 * nport):
        ptr[p + 1] = ptr[p] + cnt[p]
    fill = ptr[:-1].copy()
    lst = np.empty(ptr[2 * nport], dtype=np.int64)
    for n in range(head, n_all):
        if not frozen[n]:
            f = order[n]
            pi = core[f] * P + src[f]
            po = nport + core[f] * P + dst[f]
            lst[fill[pi]] = n
            fill[pi] += 1
            lst[fill[po]] = n
            fill[po] += 1
    # flow caps in increasing order
    capped = np.empty(live, dtype=np.int64)
    nc = 0
    for n in range(head, n_all):
        if not frozen[n] and cap[order[n]] < np.inf:
            capped[nc] = n
            nc += 1
    capkeys = np.empty(nc)
    for c in range(nc):
        capkeys[c] = cap[order[capped[c]]]
    corder = np.argsort(capkeys)
    ci = 0
    heap = [(0.0, 0)]  # (level, port); seeded for numba's type inference
    heap.pop()
    for p in range(2 * nport):
        if cnt[p] > 0:
            h = (p % nport) // P
            heapq.heappush(heap, (core_cap[h] / cnt[p], p))
    while live > 0:
        lp = np.inf
        port = -1
        while len(heap) > 0:
            key, q = heap[0]
            h = (q % nport) // P
            if cnt[q] > 0 and key == (core_cap[h] - used[q]) / cnt[q]:
                lp = key
                port = q
                break
            heapq.heappop(heap)  # stale: the port's level changed since
        while ci < nc and frozen[capped[corder[ci]]]:
            ci += 1
        lc = capkeys[corder[ci]] if ci < nc else np.inf
        if lc <= lp:
            victims_lo, victims_hi = 0, 1
            single = capped[corder[ci]]
            level = lc
            ci += 1
        else:
            heapq.heappop(heap)
            victims_lo, victims_hi = ptr[port], ptr[port + 1]
            single = -1
            level = lp
        for v in range(victims_lo, victims_hi):
            n = single if single >= 0 else lst[v]
            if frozen[n]:
                continue
            frozen[n] = True
            live -= 1
            f = order[n]
            r = level if level > 0.0 else 0.0
            newr[n] = r
            pi = core[f] * P + src[f]
            po = nport + core[f] * P + dst[f]
            for q in (pi, po):
                used[q] += r
                cnt[q] -= 1
                if cnt[q] > 0:
                    h = (q % nport) // P
                    heapq.heappush(heap, ((core_cap[h] - used[q]) / cnt[q], q))
    return n_all - 1
