"""The priority-greedy matching, kept up to date incrementally.

Under a plan with ``sharing="priority"`` and no rate caps every link is either fully used
by one flow or free: the engine's allocation is the greedy matching that takes flows in
rank order and starts each one whose input and output port (on its core) are both free
(algorithms.md 1.5, lines 10-22 of the papers' algorithms). Recomputing it from scratch
at each of the ~700k flow completions of a big trace costs O(flows) per event; this
module repairs it instead.

When a flow leaves the matching its two ports become free. A *cursor* walks the list of
flows of a free port in rank order and stops at the first flow that can take it: one
whose other port is free or held by a flow of lower priority (which it then displaces,
freeing that flow's other port: a new cursor). Cursors are processed in rank order from a
heap, so every decision is made after all decisions of higher priority: the result is
exactly the greedy matching of the whole order, at a cost proportional to the flows the
cursors walk past.
"""
from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True)
def heap_push(hk, hp, hi, n, key, port, idx):
    """Push (key, port, idx) on a min-heap of size n; returns the new arrays and size.

    Keys may be integers (rank positions) or floats (fair-share levels)."""
    if n == hk.shape[0]:
        nk = np.empty(2 * n, dtype=hk.dtype)
        npp = np.empty(2 * n, dtype=np.int64)
        ni = np.empty(2 * n, dtype=np.int64)
        nk[:n] = hk
        npp[:n] = hp
        ni[:n] = hi
        hk, hp, hi = nk, npp, ni
    c = n
    hk[c], hp[c], hi[c] = key, port, idx
    while c > 0:
        p = (c - 1) // 2
        if hk[p] <= hk[c]:
            break
        hk[p], hk[c] = hk[c], hk[p]
        hp[p], hp[c] = hp[c], hp[p]
        hi[p], hi[c] = hi[c], hi[p]
        c = p
    return hk, hp, hi, n + 1


@numba.njit(cache=True)
def heap_pop(hk, hp, hi, n):
    """Pop the smallest key; returns (key, port, idx, new size)."""
    key, port, idx = hk[0], hp[0], hi[0]
    n -= 1
    hk[0], hp[0], hi[0] = hk[n], hp[n], hi[n]
    c = 0
    while True:
        l = 2 * c + 1
        if l >= n:
            break
        s = l
        if l + 1 < n and hk[l + 1] < hk[l]:
            s = l + 1
        if hk[c] <= hk[s]:
            break
        hk[s], hk[c] = hk[c], hk[s]
        hp[s], hp[c] = hp[c], hp[s]
        hi[s], hi[c] = hi[c], hi[s]
        c = s
    return key, port, idx, n


@numba.njit(cache=True)
def port_lists(order, key, nports):
    """CSR lists: for each port id (``key`` per flow), its flows in ``order``'s order.

    Returns (ptr, flows, positions) with ``flows[ptr[p]:ptr[p+1]]`` the flows of port p.
    """
    ptr = np.zeros(nports + 1, dtype=np.int64)
    for n in range(order.shape[0]):
        ptr[key[order[n]] + 1] += 1
    for p in range(nports):
        ptr[p + 1] += ptr[p]
    fill = ptr[:-1].copy()
    flows = np.empty(order.shape[0], dtype=np.int64)
    lpos = np.empty(order.shape[0], dtype=np.int64)
    for n in range(order.shape[0]):
        p = key[order[n]]
        flows[fill[p]] = order[n]
        lpos[fill[p]] = n
        fill[p] += 1
    return ptr, flows, lpos


#: bytes below which a flow counts as finished (absorbs floating-point residue)
EPS_BYTES = 1e-6
# reasons the compiled loops return
STOP_TIME, COFLOW_DONE, BYTE_LIMIT, SEG_FULL, STUCK = 0, 1, 2, 3, 4


@numba.njit(cache=True)
def emit(record, f, h, t0, t1, r, seg_flow, seg_core, seg_t0, seg_t1, seg_rate, n_seg):
    """Append a segment (flow f on core h sent at r bytes/s during [t0, t1])."""
    if record and t1 > t0:
        seg_flow[n_seg] = f
        seg_core[n_seg] = h
        seg_t0[n_seg] = t0
        seg_t1[n_seg] = t1
        seg_rate[n_seg] = r
        return n_seg + 1
    return n_seg


@numba.njit(cache=True)
def byte_limit_dt(running, n_running, rate, coflow, byte_limit, sent, ctot, dt):
    """The earliest time (from now, at most ``dt``) at which a coflow with a byte limit
    reaches it, given the rates of the flows in ``running[:n_running]`` (-1 entries are
    skipped). ``ctot`` is per-coflow scratch, left zeroed."""
    for m in range(n_running):
        f = running[m]
        if f >= 0 and byte_limit[coflow[f]] < np.inf:
            ctot[coflow[f]] += rate[f]
    for m in range(n_running):
        f = running[m]
        if f >= 0:
            k = coflow[f]
            if ctot[k] > 0.0:
                d = (byte_limit[k] - sent[k]) / ctot[k]
                if d < 0.0:
                    d = 0.0
                if d < dt:
                    dt = d
                ctot[k] = 0.0
    return dt


@numba.njit(cache=True)
def advance_flow(f, dt, t_new, rem, size, sent, coflow, done, flow_completion, left,
                 coflow_completion, rate, core, seg_start, record, seg_flow, seg_core,
                 seg_t0, seg_t1, seg_rate, n_seg):
    """Flow ``f`` sends at its rate for ``dt``; if that finishes it, record its completion
    (and its coflow's, if it was the last flow). Returns (n_seg, finished, coflow done)."""
    r = rate[f]
    moved = r * dt
    if moved > rem[f]:
        moved = rem[f]
    rem[f] -= moved
    k = coflow[f]
    sent[k] += moved
    if rem[f] > EPS_BYTES + 1e-12 * size[f]:
        return n_seg, False, False
    sent[k] += rem[f]
    rem[f] = 0.0
    done[f] = True
    flow_completion[f] = t_new
    n_seg = emit(record, f, core[f], seg_start[f], t_new, r, seg_flow, seg_core, seg_t0,
                 seg_t1, seg_rate, n_seg)
    rate[f] = 0.0
    left[k] -= 1
    if left[k] == 0:
        coflow_completion[k] = t_new
        return n_seg, True, True
    return n_seg, True, False


@numba.njit(cache=True)
def _cursor(hk, hp, hi, nh, port, after, ptr, lpos):
    """Push a cursor on ``port`` at its first flow positioned after ``after``."""
    lo, hi_ = ptr[port], ptr[port + 1]
    k = lo + np.searchsorted(lpos[lo:hi_], after, side="right")
    if k < hi_:
        hk, hp, hi, nh = heap_push(hk, hp, hi, nh, lpos[k], port, k)
    return hk, hp, hi, nh


@numba.njit(cache=True)
def _saturated(key, owner, tot, pos, nport):
    """True when every input port (or every output port) that still has flows is held by
    a flow ranked before ``key``: then no flow ranked at or after ``key`` can start."""
    open_in = False
    open_out = False
    for p in range(nport):
        if tot[p] > 0 and (owner[p] < 0 or pos[owner[p]] >= key):
            open_in = True
        q = nport + p
        if tot[q] > 0 and (owner[q] < 0 or pos[owner[q]] >= key):
            open_out = True
        if open_in and open_out:
            return False
    return True


@numba.njit(cache=True)
def run_matching(t, stop_time, fresh, order, pos, src, dst, coflow, size, core, core_cap,
                 rem, rate, done, pinned, flow_completion, left, sent, byte_limit,
                 has_limit, coflow_completion, record, seg_start, seg_flow, seg_core,
                 seg_t0, seg_t1, seg_rate, n_seg, ptr, lflows, lpos, owner, prev_running):
    """Advance under the priority-greedy matching until a coflow completes, a byte limit
    is crossed or ``stop_time``. Returns (t, reason, n_seg, inner_events).

    Ports are numbered ``h*P + i`` (input i of core h) and ``C*P + h*P + j`` (output j);
    ``ptr/lflows/lpos`` are their flow lists (:func:`port_lists`), ``owner`` the flow
    holding each port or -1. With ``fresh`` the matching is rebuilt from ``order``;
    ``prev_running`` lists the flows sending before (their segments end if they stop).
    """
    cores = core_cap.shape[0]
    nport = owner.shape[0] // 2
    P = nport // cores
    hk = np.empty(1024, dtype=np.int64)
    hp = np.empty(1024, dtype=np.int64)
    hi = np.empty(1024, dtype=np.int64)
    nh = 0
    ctot = np.zeros(byte_limit.shape[0])
    seg_cap = seg_flow.shape[0]
    events = 0
    # not-done flows left in each port's list, and how many ports still have some
    tot = np.zeros(2 * nport, dtype=np.int64)
    for n in range(order.shape[0]):
        f = order[n]
        if not done[f]:
            tot[core[f] * P + src[f]] += 1
            tot[nport + core[f] * P + dst[f]] += 1
    if fresh:
        for p in range(2 * nport):
            owner[p] = -1
        # greedy scan; stop once every input (or output) port with flows left is taken
        # or has no flow further down the order
        passed = np.zeros(2 * nport, dtype=np.int64)
        open_in = 0
        open_out = 0
        for p in range(nport):
            if tot[p] > 0:
                open_in += 1
            if tot[nport + p] > 0:
                open_out += 1
        for n in range(order.shape[0]):
            if open_in == 0 or open_out == 0:
                break
            f = order[n]
            if done[f]:
                continue
            pi = core[f] * P + src[f]
            po = nport + core[f] * P + dst[f]
            free_i = owner[pi] < 0
            free_o = owner[po] < 0
            passed[pi] += 1
            passed[po] += 1
            if free_i and free_o:
                owner[pi] = f
                owner[po] = f
                open_in -= 1
                open_out -= 1
            else:
                if free_i and passed[pi] == tot[pi]:
                    open_in -= 1
                if free_o and passed[po] == tot[po]:
                    open_out -= 1
        # flows whose rate changes: stopped ones first, then started ones
        for m in range(prev_running.shape[0]):
            f = prev_running[m]
            if rate[f] > 0.0 and not done[f]:
                pi = core[f] * P + src[f]
                if owner[pi] != f:
                    n_seg = emit(record, f, core[f], seg_start[f], t, rate[f], seg_flow,
                                 seg_core, seg_t0, seg_t1, seg_rate, n_seg)
                    rate[f] = 0.0
                    seg_start[f] = t
        for p in range(nport):
            f = owner[p]
            if f >= 0:
                r = core_cap[core[f]]
                if rate[f] != r:
                    if rate[f] > 0.0:
                        n_seg = emit(record, f, core[f], seg_start[f], t, rate[f], seg_flow,
                                     seg_core, seg_t0, seg_t1, seg_rate, n_seg)
                    rate[f] = r
                    seg_start[f] = t
                if pinned[f] < 0:
                    pinned[f] = core[f]
    while True:
        if record and n_seg + 4 * nport + 2 > seg_cap:
            return t, SEG_FULL, n_seg, events
        dt = stop_time - t
        for p in range(nport):
            f = owner[p]
            if f >= 0:
                d = rem[f] / rate[f]
                if d < dt:
                    dt = d
        if has_limit:
            dt = byte_limit_dt(owner, nport, rate, coflow, byte_limit, sent, ctot, dt)
        if dt == np.inf:
            return t, STUCK, n_seg, events
        events += 1
        t_new = stop_time if dt >= stop_time - t else t + dt
        coflow_done = False
        limit_hit = False
        for p in range(nport):
            f = owner[p]
            if f < 0:
                continue
            n_seg, finished, cdone = advance_flow(
                f, dt, t_new, rem, size, sent, coflow, done, flow_completion, left,
                coflow_completion, rate, core, seg_start, record, seg_flow, seg_core,
                seg_t0, seg_t1, seg_rate, n_seg)
            k = coflow[f]
            if finished:
                po = nport + core[f] * P + dst[f]
                owner[p] = -1
                owner[po] = -1
                tot[p] -= 1
                tot[po] -= 1
                hk, hp, hi, nh = _cursor(hk, hp, hi, nh, p, pos[f], ptr, lpos)
                hk, hp, hi, nh = _cursor(hk, hp, hi, nh, po, pos[f], ptr, lpos)
                coflow_done = coflow_done or cdone
            elif has_limit and byte_limit[k] < np.inf and sent[k] >= byte_limit[k] * (1 - 1e-12):
                limit_hit = True
        t = t_new
        if coflow_done or limit_hit:
            return t, COFLOW_DONE if coflow_done else BYTE_LIMIT, n_seg, events
        if t >= stop_time:
            # the next plan decides what starts now (nothing is pinned before it sends)
            return t, STOP_TIME, n_seg, events
        # repair the matching, cursors in rank order
        steps = 0
        while nh > 0:
            key, port, k, nh = heap_pop(hk, hp, hi, nh)
            steps += 1
            if steps % 32 == 0 and _saturated(key, owner, tot, pos, nport):
                nh = 0  # no flow at or after `key` can get a port: every cursor dies
                break
            g = lflows[k]
            own = owner[port]
            if own >= 0 and pos[own] <= key:
                continue  # the port is held by a flow of higher priority: cursor dies
            nxt = k + 1 < ptr[port + 1]
            if done[g]:
                if nxt:
                    hk, hp, hi, nh = heap_push(hk, hp, hi, nh, lpos[k + 1], port, k + 1)
                continue
            h = core[g]
            if port < nport:
                q = nport + h * P + dst[g]
            else:
                q = h * P + src[g]
            oq = owner[q]
            if oq >= 0 and pos[oq] < key:
                if nxt:
                    hk, hp, hi, nh = heap_push(hk, hp, hi, nh, lpos[k + 1], port, k + 1)
                continue
            for d in (own, oq):
                if d >= 0 and rate[d] > 0.0:
                    # displaced: frees its ports; a cursor on the one g does not take
                    di = core[d] * P + src[d]
                    do = nport + core[d] * P + dst[d]
                    owner[di] = -1
                    owner[do] = -1
                    n_seg = emit(record, d, core[d], seg_start[d], t, rate[d], seg_flow,
                                 seg_core, seg_t0, seg_t1, seg_rate, n_seg)
                    rate[d] = 0.0
                    seg_start[d] = t
                    other = do if (di == port or di == q) else di
                    hk, hp, hi, nh = _cursor(hk, hp, hi, nh, other, pos[d], ptr, lpos)
            owner[port] = g
            owner[q] = g
            rate[g] = core_cap[h]
            seg_start[g] = t
            if pinned[g] < 0:
                pinned[g] = h
