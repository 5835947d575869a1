"""Rate-capped strict priority with backfilling, kept up to date incrementally.

Varys-style plans (``sebf``, ``weaver``) give every flow a rate cap (MADD: the rate that
makes its coflow's flows finish together) and a priority rank, and hand what the caps
leave to the flows in rank order (backfilling). The engine's rule
(``controller.rates.priority_rates``) is two passes in rank order: each flow gets
``min(cap, what is left on its two ports)``, then each flow gets what is still left on
both its ports. Redone from scratch at every flow completion that costs O(eligible
flows): on FB2010 about 12k flows send at once and 700k complete.

Two facts make the work proportional to what changes instead:

* **The first pass is constant between plans.** When the caps fit the links (on each
  port of each core they sum to at most its rate, as MADD's do) every flow gets exactly
  its cap, and a completion only frees capacity, so nothing in the first pass changes
  until the next plan. What the caps leave on port ``p``, ``R[p]``, grows by the cap of
  each flow that finishes there. A plan whose caps do not fit (a flow held below its cap
  by the caps ranked before it) is left to the rescan.
* **The backfill is a greedy over (core, src, dst) pairs, repaired where it changes.**
  Only the first unfinished flow of a pair (its *head*) can get backfill, since the
  pair's earlier flow takes what is left on both its ports first; a backfilled head takes
  the smaller of what is left on its two ports, so it empties one of them. The engine
  keeps each pair's amount and, per port, its backfills sorted by rank (``akey``, with
  ``fullk``: the rank at which the port fills). A change at rank ``k`` on a port (a cap
  returned, a head finished, an amount changed) can only change the backfills ranked
  after ``k`` on that port, so it queues a *check* of each of them, and, if the port
  now has more left than before, a *cursor* that walks its pairs from where the port
  used to fill, offering each unserved pair what it can take (the cursors of
  :mod:`emulate.sim.matching`, with amounts instead of whole links). Tasks run in rank order
  and queue only tasks ranked after them, so each decision is made after every decision
  ranked before it: the result is the greedy of the whole order, for work proportional
  to what changed (on FB2010 about 60 checks and 40 cursor steps per completion, against
  thousands of flows rescanned).

Flows whose rate does not change are not touched at an event: a flow's remaining bytes
are brought up to date only when its rate changes, it finishes or the call returns
(``tl``: the time ``rem`` refers to), and the next completion comes from a heap keyed by
the time each flow's remaining bytes fall to the engine's finishing tolerance.
"""
from __future__ import annotations

import numba
import numpy as np

from emulate.sim.matching import (COFLOW_DONE, EPS_BYTES, LEAF, SEG_FULL, STOP_TIME, STUCK,
                              _requeue, advance_flow, heap_insert, heap_pop, joins_stop,
                              set_rate)

#: a first-pass rate this much below its cap means the caps do not fit the links
CAP_SLACK = 1e-9


@numba.njit(cache=True)
def first_pass(order, src, dst, core, cap, core_cap, ports):
    """The first pass of the capped priority rule over ``order`` (flows not done).

    Returns ``(c, R, fits)``: each position's first-pass rate, what is left on each port
    (input ``h*P + i``, output ``C*P + h*P + j``), and whether every flow got its cap
    (up to :data:`CAP_SLACK`); when it is False the incremental engine does not apply.
    """
    cores = core_cap.shape[0]
    nport = cores * ports
    R = np.empty(2 * nport)
    for h in range(cores):
        R[h * ports:(h + 1) * ports] = core_cap[h]
        R[nport + h * ports:nport + (h + 1) * ports] = core_cap[h]
    c = np.zeros(order.shape[0])
    fits = True
    for m in range(order.shape[0]):
        f = order[m]
        h = core[f]
        pi = h * ports + src[f]
        po = nport + h * ports + dst[f]
        r = min(cap[f], R[pi], R[po])
        tiny = 1e-9 * core_cap[h]
        if r > tiny:
            c[m] = r
            R[pi] -= r
            R[po] -= r
        if cap[f] > tiny and cap[f] - c[m] > CAP_SLACK * cap[f]:
            fits = False
    return c, R, fits


#: the saturation key of a port that never fills
NEVER = 1 << 62


@numba.njit(**LEAF)
def _left(x, k, R, akey, aamt, alen):
    """What the caps and the backfill of pairs ranked before key ``k`` leave on port x."""
    v = R[x]
    for i in range(alen[x]):
        if akey[x, i] >= k:
            break
        v -= aamt[x, i]
    return v


@numba.njit(**LEAF)
def _full_at(x, R, akey, aamt, alen, tiny):
    """The key of the backfill that fills port ``x`` (-1: the caps fill it; NEVER)."""
    v = R[x]
    if v <= tiny:
        return -1
    for i in range(alen[x]):
        v -= aamt[x, i]
        if v <= tiny:
            return akey[x, i]
    return NEVER


@numba.njit(**LEAF)
def _put(x, k, e, amt, akey, apair, aamt, alen):
    """Set pair ``e``'s backfill (key ``k``) in port ``x``'s sorted list (0: remove it).
    The lists have room for every pair of the port."""
    n = alen[x]
    i = 0
    while i < n and akey[x, i] < k:
        i += 1
    if i < n and akey[x, i] == k:
        if amt > 0.0:
            aamt[x, i] = amt
        else:
            for j in range(i, n - 1):
                akey[x, j] = akey[x, j + 1]
                apair[x, j] = apair[x, j + 1]
                aamt[x, j] = aamt[x, j + 1]
            alen[x] = n - 1
        return
    if amt <= 0.0:
        return
    for j in range(n, i, -1):
        akey[x, j] = akey[x, j - 1]
        apair[x, j] = apair[x, j - 1]
        aamt[x, j] = aamt[x, j - 1]
    akey[x, i] = k
    apair[x, i] = e
    aamt[x, i] = amt
    alen[x] = n + 1


@numba.njit(cache=True)
def _room(tk, tp, ti, need):
    """A heap's arrays (keys, ports, indices) with room for ``need`` entries: the same
    arrays if they have it, else grown copies. The loops below grow their heaps once per
    event at most and push with :func:`emulate.sim.matching.heap_insert`: an array rebound
    per push would cost its reference counts on every push."""
    if need <= tk.shape[0]:
        return tk, tp, ti
    w = max(need, 2 * tk.shape[0])
    k2 = np.empty(w, dtype=tk.dtype)
    p2 = np.empty(w, dtype=np.int64)
    i2 = np.empty(w, dtype=np.int64)
    k2[:tk.shape[0]] = tk
    p2[:tk.shape[0]] = tp
    i2[:tk.shape[0]] = ti
    return k2, p2, i2


@numba.njit(**LEAF)
def _assign(e, k, amt, R, tiny_of, a, akey, apair, aamt, alen, fullk, pin, pout, tmark, touched, n_touched,
            tk, tp, ti, nt):
    """Pair ``e`` (head at key ``k``) gets backfill ``amt``: update both ports' lists and
    queue what may change after ``k`` on them (the backfills ranked later; a cursor from
    where the port used to fill, if it now has more left)."""
    up = amt < a[e]
    for x in (pin[e], pout[e]):
        full = fullk[x]
        _put(x, k, e, amt, akey, apair, aamt, alen)
        fullk[x] = _full_at(x, R, akey, aamt, alen, tiny_of[x])
        nt = _after(x, k, up, full, akey, apair, alen, tk, tp, ti, nt)
    a[e] = amt
    if not tmark[e]:
        tmark[e] = True
        touched[n_touched] = e
        n_touched += 1
    return n_touched, nt


@numba.njit(**LEAF)
def _first_at(keys, lo, hi, k):
    """The first index in ``keys[lo:hi]`` (sorted) whose key is at least ``k`` (``hi``:
    none); a binary search without the slice (whose reference count costs more)."""
    while lo < hi:
        mid = (lo + hi) // 2
        if keys[mid] < k:
            lo = mid + 1
        else:
            hi = mid
    return lo


@numba.njit(**LEAF)
def _after(x, k, up, full, akey, apair, alen, tk, tp, ti, nt):
    """Port ``x`` changed at key ``k``: re-check its backfills ranked after ``k``; if it
    has more left than before and used to fill, walk its pairs from where it filled."""
    for i in range(alen[x]):
        if akey[x, i] > k:
            nt = heap_insert(tk, tp, ti, nt, akey[x, i], -1, apair[x, i])
    if up and full < NEVER:
        start = k if k > full else full
        nt = heap_insert(tk, tp, ti, nt, start + 1, x, 0)
    return nt


@numba.njit(**LEAF)
def _sweep(R, tiny_of, a, akey, apair, aamt, alen, fullk, pptr, pflow, phead, pin, pout, qptr,
           qpair, qkey, qlen, tmark, touched, n_touched, tk, tp, ti, nt):
    """Repair the backfill: process the queued checks and cursors in key order.

    A check ``(k, -1, e)`` recomputes pair ``e``'s backfill from what its ports have left
    before ``k`` (stale if ``e``'s head is no longer at ``k``); a cursor ``(k, x, _)``
    walks port ``x``'s pairs from key ``k`` while the port has something left, giving
    each unserved pair what it can take. Every task queues only tasks ranked after it, so
    each decision is made after every decision ranked before it: the result is the greedy
    backfill of the whole order.

    Returns ``(n_touched, nt)``. It stops early, with tasks still queued (``nt > 0``),
    when the heap may not hold what the next task queues: :func:`_repair` grows it and
    goes on."""
    # the most tasks one check queues (two ports' backfills, a cursor each), plus one
    room = 2 * akey.shape[1] + 5
    while nt > 0:
        if nt + room > tk.shape[0]:
            return n_touched, nt
        k, x, e, nt = heap_pop(tk, tp, ti, nt)
        if x >= 0:
            # the cursor walks on while nothing queued is ranked before its next pair
            lo = qptr[x]
            nq = qlen[x]
            idx = _first_at(qkey, lo, lo + nq, k) - lo
            while idx < nq:
                k = qkey[lo + idx]
                if fullk[x] < k:
                    break  # the port is full before k
                if nt > 0 and tk[0] < k:
                    nt = heap_insert(tk, tp, ti, nt, k, x, 0)
                    break
                if nt + room > tk.shape[0]:
                    return n_touched, heap_insert(tk, tp, ti, nt, k, x, 0)  # resume here
                e = qpair[lo + idx]
                if a[e] == 0.0:
                    n_touched, nt = _check(
                        e, k, R, tiny_of, a, akey, apair, aamt, alen, fullk, pin, pout, tmark,
                        touched, n_touched, tk, tp, ti, nt)
                idx += 1
        else:
            if phead[e] >= pptr[e + 1] or pflow[phead[e]] != k:
                continue  # the pair's head moved on
            n_touched, nt = _check(
                e, k, R, tiny_of, a, akey, apair, aamt, alen, fullk, pin, pout, tmark, touched, n_touched,
                tk, tp, ti, nt)
    return n_touched, nt


@numba.njit(cache=True)
def _repair(R, tiny_of, a, akey, apair, aamt, alen, fullk, pptr, pflow, phead, pin, pout,
            qptr, qpair, qkey, qlen, tmark, touched, n_touched, tk, tp, ti, nt):
    """:func:`_sweep` until the queue is empty, growing the task heap when it stops for
    room. Returns ``(n_touched, tk, tp, ti)``."""
    while True:
        n_touched, nt = _sweep(R, tiny_of, a, akey, apair, aamt, alen, fullk, pptr, pflow,
                               phead, pin, pout, qptr, qpair, qkey, qlen, tmark, touched,
                               n_touched, tk, tp, ti, nt)
        if nt == 0:
            return n_touched, tk, tp, ti
        tk, tp, ti = _room(tk, tp, ti, 2 * tk.shape[0])


@numba.njit(**LEAF)
def _check(e, k, R, tiny_of, a, akey, apair, aamt, alen, fullk, pin, pout, tmark, touched, n_touched,
           tk, tp, ti, nt):
    """Pair ``e`` (head at key ``k``) gets what both its ports have left before ``k``."""
    p = pin[e]
    q = pout[e]
    amt = 0.0
    if fullk[p] >= k and fullk[q] >= k:  # neither port is full before k
        amt = min(_left(p, k, R, akey, aamt, alen), _left(q, k, R, akey, aamt, alen))
        if amt <= tiny_of[p]:
            amt = 0.0
    if amt != a[e]:
        return _assign(e, k, amt, R, tiny_of, a, akey, apair, aamt, alen, fullk, pin, pout, tmark, touched,
                       n_touched, tk, tp, ti, nt)
    return n_touched, nt


@numba.njit(**LEAF)
def _due(m, f, tl, rem, rate, size):
    """The time flow ``f`` (position ``m``) is down to the finishing tolerance."""
    left = rem[f] - (EPS_BYTES + 1e-12 * size[f])
    return tl[m] + (left if left > 0.0 else 0.0) / rate[f]


@numba.njit(**LEAF)
def _free(m, c, R, tiny_of, a, akey, apair, aamt, alen, fullk, order, done, pair, pptr,
          pflow, phead, pin, pout, qptr, qpair, qkey, qlen, tmark, touched, n_touched, tk, tp,
          ti, nt):
    """Flow ``f`` (position ``m``) has finished: its cap returns to its ports; if it
    headed its pair, the pair's backfill is released and its next unfinished flow (to be
    checked) heads it now. Queues what may change: the task heap must have room for
    ``4 * width + 5`` more tasks (two ports' backfills, two cursors, a check)."""
    e = pair[m]
    if pflow[phead[e]] == m:
        while phead[e] < pptr[e + 1] and done[order[pflow[phead[e]]]]:
            phead[e] += 1
        nxt = pflow[phead[e]] if phead[e] < pptr[e + 1] else -1
        _requeue(pin[e], m, nxt, e, qptr, qpair, qkey, qlen)
        _requeue(pout[e], m, nxt, e, qptr, qpair, qkey, qlen)
        if a[e] > 0.0:
            n_touched, nt = _assign(
                e, m, 0.0, R, tiny_of, a, akey, apair, aamt, alen, fullk, pin, pout, tmark, touched,
                n_touched, tk, tp, ti, nt)
        if nxt >= 0:
            nt = heap_insert(tk, tp, ti, nt, nxt, -1, e)
            if not tmark[e]:
                tmark[e] = True
                touched[n_touched] = e
                n_touched += 1
    if c[m] > 0.0:
        for x in (pin[e], pout[e]):
            full = fullk[x]
            R[x] += c[m]
            fullk[x] = _full_at(x, R, akey, aamt, alen, tiny_of[x])
            nt = _after(x, -1, True, full, akey, apair, alen, tk, tp, ti, nt)
    return n_touched, nt


@numba.njit(cache=True)
def run_capped(t, stop_time, order, src, dst, coflow, size, core, c, R, do_backfill,
               core_cap, rem, rate, done, pinned, flow_completion, left, sent,
               coflow_completion, record, seg_start, seg_flow, seg_core, seg_t0, seg_t1,
               seg_rate, n_seg, pairs):
    """Advance under a capped priority plan whose caps fit (``c``, ``R``: :func:`
    first_pass` of ``order``, the flows not done) until a coflow completes or
    ``stop_time``. Returns (t, reason, n_seg, inner_events)."""
    pair, pptr, pflow, phead, pin, pout, qptr, qpair, qkey, qlen = pairs
    n = order.shape[0]
    npairs = pin.shape[0]
    cores = core_cap.shape[0]
    ports = (R.shape[0] // 2) // cores
    nport = cores * ports
    seg_cap = seg_flow.shape[0]
    tiny_of = np.empty(2 * nport)
    for x in range(2 * nport):
        tiny_of[x] = 1e-9 * core_cap[(x % nport) // ports]
    # backfill state: per pair its amount, per port its backfills sorted by key (at
    # most one per pair of the port)
    a = np.zeros(npairs)
    width = qlen.max() + 1
    akey = np.empty((2 * nport, width), dtype=np.int64)
    apair = np.empty((2 * nport, width), dtype=np.int64)
    aamt = np.empty((2 * nport, width))
    alen = np.zeros(2 * nport, dtype=np.int64)
    fullk = np.empty(2 * nport, dtype=np.int64)  # per port, _full_at kept up to date
    for x in range(2 * nport):
        fullk[x] = -1 if R[x] <= tiny_of[x] else NEVER
    tmark = np.zeros(npairs, dtype=np.bool_)
    touched = np.empty(npairs, dtype=np.int64)
    n_touched = 0
    tk = np.empty(2 * nport + 4 * width, dtype=np.int64)  # backfill tasks
    tp = np.empty(2 * nport + 4 * width, dtype=np.int64)
    ti = np.empty(2 * nport + 4 * width, dtype=np.int64)
    nt = 0
    # rates: ``rem[order[m]]`` is the remaining at ``tl[m]``; due times on a heap
    tl = np.full(n, t)
    ver = np.zeros(n, dtype=np.int64)
    hk = np.empty(max(1024, n), dtype=np.float64)
    hp = np.empty(max(1024, n), dtype=np.int64)
    hi = np.empty(max(1024, n), dtype=np.int64)
    nh = 0
    stash = np.empty(1024, dtype=np.int64)  # flows due before the next completion
    stash_fin = np.empty(1024)  # and when each would finish
    n_live = n
    events = 0
    if record and n_seg + 2 * n + 2 > seg_cap:
        return t, SEG_FULL, n_seg, events
    # the first allocation: a cursor on every port the caps leave something on
    if do_backfill:
        for x in range(2 * nport):
            if qlen[x] > 0 and R[x] > tiny_of[x]:
                nt = heap_insert(tk, tp, ti, nt, qkey[qptr[x]], x, 0)
        n_touched, tk, tp, ti = _repair(
            R, tiny_of, a, akey, apair, aamt, alen, fullk, pptr, pflow, phead, pin, pout, qptr,
            qpair, qkey, qlen, tmark, touched, n_touched, tk, tp, ti, nt)
        nt = 0
    for x in range(n_touched):
        tmark[touched[x]] = False
    n_touched = 0
    for m in range(n):
        f = order[m]
        e = pair[m]
        r = c[m] + (a[e] if pflow[phead[e]] == m else 0.0)
        if r != rate[f]:
            n_seg = set_rate(f, r, t, rate, core, seg_start, record, seg_flow, seg_core,
                             seg_t0, seg_t1, seg_rate, n_seg)
        if r > 0.0:
            if pinned[f] < 0:
                pinned[f] = core[f]
            nh = heap_insert(hk, hp, hi, nh, _due(m, f, tl, rem, rate, size), m, 0)
    reason = STOP_TIME
    while True:
        if record and n_seg + 2 * n_live + 2 * npairs + 2 > seg_cap:
            reason = SEG_FULL
            break
        # the next completion: flows whose due time is before the earliest finish
        best = np.inf
        n_st = 0
        while nh > 0:
            m = hp[0]
            f = order[m]
            if done[f] or hi[0] != ver[m]:
                _, _, _, nh = heap_pop(hk, hp, hi, nh)
                continue
            if hk[0] > best:
                break
            _, _, _, nh = heap_pop(hk, hp, hi, nh)
            fin = tl[m] + rem[f] / rate[f]
            if fin < best:
                best = fin
            if n_st == stash.shape[0]:
                grown = np.empty(2 * n_st, dtype=np.int64)
                grown[:n_st] = stash
                stash = grown
                grown_fin = np.empty(2 * n_st)
                grown_fin[:n_st] = stash_fin
                stash_fin = grown_fin
            stash[n_st] = m
            stash_fin[n_st] = fin
            n_st += 1
        if best == np.inf and stop_time == np.inf:
            reason = STUCK
            break
        t_new = stop_time if joins_stop(best, stop_time, core_cap) else best
        events += 1
        coflow_done = False
        freed = False
        hk, hp, hi = _room(hk, hp, hi, nh + n_st)
        if do_backfill:
            tk, tp, ti = _room(tk, tp, ti, nt + n_st * (4 * width + 5))
        for x in range(n_st):
            m = stash[x]
            f = order[m]
            # the flows finishing at ``t_new`` send all they have left: ``t_new - tl``
            # may round to less (to 0 when what is left takes under an ulp of ``t``)
            dt = np.inf if stash_fin[x] <= t_new else t_new - tl[m]
            n_seg, fin, cd = advance_flow(
                f, dt, t_new, rem, size, sent, coflow, done, flow_completion,
                left, coflow_completion, rate, core, seg_start, record, seg_flow, seg_core,
                seg_t0, seg_t1, seg_rate, n_seg)
            tl[m] = t_new
            if fin:
                n_live -= 1
                freed = True
                coflow_done = coflow_done or cd
                if do_backfill:
                    n_touched, nt = _free(
                        m, c, R, tiny_of, a, akey, apair, aamt, alen, fullk, order, done, pair,
                        pptr, pflow, phead, pin, pout, qptr, qpair, qkey, qlen, tmark, touched,
                        n_touched, tk, tp, ti, nt)
            else:
                nh = heap_insert(hk, hp, hi, nh, _due(m, f, tl, rem, rate, size), m, ver[m])
        t = t_new
        if coflow_done or t >= stop_time:
            reason = COFLOW_DONE if coflow_done else STOP_TIME
            break
        # repair the backfill; the pairs' heads whose rate changes take it now
        while freed and do_backfill:
            freed = False
            n_touched, tk, tp, ti = _repair(
                R, tiny_of, a, akey, apair, aamt, alen, fullk, pptr, pflow, phead, pin, pout, qptr,
                qpair, qkey, qlen, tmark, touched, n_touched, tk, tp, ti, nt)
            nt = 0
            n_t = n_touched
            n_touched = 0
            hk, hp, hi = _room(hk, hp, hi, nh + n_t)
            for x in range(n_t):
                e = touched[x]
                tmark[e] = False
                if phead[e] >= pptr[e + 1]:
                    continue
                m = pflow[phead[e]]
                f = order[m]
                r = c[m] + a[e]
                if r == rate[f]:
                    continue
                # bring the flow up to now at its old rate, then change it
                n_seg, fin, cd = advance_flow(
                    f, t - tl[m], t, rem, size, sent, coflow, done, flow_completion, left,
                    coflow_completion, rate, core, seg_start, record, seg_flow, seg_core,
                    seg_t0, seg_t1, seg_rate, n_seg)
                tl[m] = t
                if fin:  # rounding put its due time a hair after now: it ends now
                    n_live -= 1
                    freed = True
                    coflow_done = coflow_done or cd
                    tk, tp, ti = _room(tk, tp, ti, nt + 4 * width + 5)
                    n_touched, nt = _free(
                        m, c, R, tiny_of, a, akey, apair, aamt, alen, fullk, order, done, pair,
                        pptr, pflow, phead, pin, pout, qptr, qpair, qkey, qlen, tmark, touched,
                        n_touched, tk, tp, ti, nt)
                    continue
                n_seg = set_rate(f, r, t, rate, core, seg_start, record, seg_flow, seg_core,
                                 seg_t0, seg_t1, seg_rate, n_seg)
                ver[m] += 1
                if r > 0.0:
                    if pinned[f] < 0:
                        pinned[f] = core[f]
                    nh = heap_insert(hk, hp, hi, nh, _due(m, f, tl, rem, rate, size), m,
                                     ver[m])
        if coflow_done:
            reason = COFLOW_DONE
            break
    # bring every sending flow up to now (the next plan reads ``rem`` and ``sent``)
    for m in range(n):
        f = order[m]
        if not done[f] and rate[f] > 0.0 and tl[m] < t:
            n_seg, fin, cd = advance_flow(
                f, t - tl[m], t, rem, size, sent, coflow, done, flow_completion, left,
                coflow_completion, rate, core, seg_start, record, seg_flow, seg_core,
                seg_t0, seg_t1, seg_rate, n_seg)
    return t, reason, n_seg, events
