"""The rates a plan gives: what the controller expects each flow to get on the fabric.

The same rules as ``controller.plan`` states and the simulator applies (``"priority"``:
work-conserving strict priority in rank order, ties by flow index, optional backfill;
``"fair"``: max-min fair with caps). The controller uses them to decide which flows send
at all (a flow the plan gives rate 0 is paused at its agent instead of being left to
starve in a low class, where TCP would back off and come back late), which pacing a
capped flow gets, and when a coflow will cross a byte threshold.

Plain Python loops: the controller calls this once per event on the eligible flows only.
"""
from __future__ import annotations

import numpy as np


def allocate(order: np.ndarray, src: np.ndarray, dst: np.ndarray, core: np.ndarray,
             cap: np.ndarray, core_rate: np.ndarray, sharing: str = "priority",
             backfill: bool = True) -> np.ndarray:
    """Rate (same unit as ``core_rate``) per flow of ``order``.

    Parameters
    ----------
    order : int array
        Eligible flows, in rank order (ties by index) for ``"priority"``.
    src, dst, core, cap : arrays indexed by flow
        ``cap`` is ``inf`` where the plan sets none.
    core_rate : float array, rate of every link of each core.

    Returns
    -------
    float array aligned with ``order``.
    """
    order = np.asarray(order, dtype=np.int64)
    res_in: dict[tuple[int, int], float] = {}
    res_out: dict[tuple[int, int], float] = {}
    rate = np.zeros(len(order))
    if sharing == "fair":
        return _fair(order, src, dst, core, cap, core_rate)
    for n, f in enumerate(order):
        h = int(core[f])
        ki, ko = (h, int(src[f])), (h, int(dst[f]))
        r = min(float(cap[f]), res_in.get(ki, core_rate[h]), res_out.get(ko, core_rate[h]))
        r = max(r, 0.0)
        rate[n] = r
        res_in[ki] = res_in.get(ki, core_rate[h]) - r
        res_out[ko] = res_out.get(ko, core_rate[h]) - r
    if backfill:
        for n, f in enumerate(order):
            h = int(core[f])
            ki, ko = (h, int(src[f])), (h, int(dst[f]))
            r = min(res_in[ki], res_out[ko])
            if r > 0.0:
                rate[n] += r
                res_in[ki] -= r
                res_out[ko] -= r
    return rate


def _fair(order, src, dst, core, cap, core_rate) -> np.ndarray:
    """Max-min fair by progressive filling, each flow at most its cap."""
    n = len(order)
    rate = np.zeros(n)
    live = [i for i in range(n) if cap[order[i]] > 0]
    res: dict[tuple, float] = {}
    while live:
        cnt: dict[tuple, int] = {}
        for i in live:
            f = order[i]
            h = int(core[f])
            for key in (("i", h, int(src[f])), ("o", h, int(dst[f]))):
                cnt[key] = cnt.get(key, 0) + 1
                res.setdefault(key, float(core_rate[h]))
        inc = min(min(res[k] / c for k, c in cnt.items()),
                  min(cap[order[i]] - rate[i] for i in live))
        inc = max(inc, 0.0)
        still = []
        for i in live:
            f = order[i]
            h = int(core[f])
            rate[i] += inc
            res[("i", h, int(src[f]))] -= inc
            res[("o", h, int(dst[f]))] -= inc
        for i in live:
            f = order[i]
            h = int(core[f])
            tol = 1e-12 * core_rate[h]
            if (res[("i", h, int(src[f]))] <= tol or res[("o", h, int(dst[f]))] <= tol
                    or rate[i] >= cap[f] - 1e-12 * (cap[f] if np.isfinite(cap[f]) else 1.0)):
                continue
            still.append(i)
        if len(still) == len(live) and inc == 0.0:
            break
        live = still
    return rate
