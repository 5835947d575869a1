"""Rate-capped strict priority with backfilling, kept up to date incrementally.

Varys-style plans (``sebf``, ``weaver``) give every flow a rate cap (MADD: the rate that
makes its coflow's flows finish together) and a priority rank, and hand what the caps
leave to the flows in rank order (backfilling). The engine's rule
(``controller.rates.priority_rates``) is two passes in rank order: each flow gets
``min(cap, what is left on its two ports)``, then each flow gets what is still left on
both its ports. Redone from scratch at every flow completion that costs O(eligible
flows): on FB2010 about 12k flows send at once and 700k complete.

Three facts make the work proportional to what changes instead:

* **The first pass is constant between plans.** When the caps fit the links (on each
  port of each core they sum to at most its rate, as MADD's do) every flow gets exactly
  its cap, and a completion only frees capacity, so nothing in the first pass changes
  until the next plan. What the caps leave on port ``p``, ``R[p]``, grows by the cap of
  each flow that finishes there. When the caps do not fit (a flow held below its cap
  by the caps ranked before it), the first pass changes only when a flow finishes on a
  port where a flow is held below its cap (``clip``): without backfill the engine stops
  there and applies the plan again (:data:`REFIT`), as the rescan would at that
  completion (and at the others, where it changes nothing); with backfill the plan is
  left to the rescan. Flows without a cap take no part in the first pass, so it runs
  over the capped flows only.
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
  :mod:`emulate.sim.matching`, with amounts instead of whole links). Tasks run in rank
  order and queue only tasks ranked after them, so each decision is made after every
  decision ranked before it: the result is the greedy of the whole order, for work
  proportional to what changed (on FB2010 about 30 rate changes per completion, against
  thousands of flows rescanned).
* **The pairs outlive the plan.** Ranks are keys ``label[group] * W + r`` (a group is a
  coflow, ``r`` a flow's rank inside it, by index; ``W`` a power of two above the largest
  coflow): a plan that orders coflows (``Plan.coflow_order``) changes the keys of the
  coflows it moves only, if the coflows it keeps in the same relative order keep their
  labels. So each pair's flows stay sorted by key and each port's pairs by their head's
  key from plan to plan; a new plan removes and reinserts the flows of the coflows it
  moved (the fewest flows: the coflows kept are a heaviest increasing subsequence of the
  old labels) and of those that became ready, and re-offers the backfill. A plan that
  lists its flows sub-coflow after sub-coflow (a coflow's flows on one core: Weaver's
  order, ``FlowOrderPlan(grouped=True)``) is kept the same way with a label per
  sub-coflow, its flows that changed cores moved too. A plan that ranks flows one by
  one otherwise keys each flow by its position and rebuilds the pairs, in O(its flows).

Flows whose rate does not change are not touched at an event, nor at a plan (their due
times stand: :func:`_replan_rate`): a flow's remaining bytes
are brought up to date only when its rate changes, it finishes or the call returns
(``tl``: the time ``rem`` refers to), and the next completion comes from a heap keyed by
the time each flow's remaining bytes fall to the engine's finishing tolerance. The
helpers are inlined into three kernels (plan, event loop, finish); a numba call that
passes arrays costs their reference counts and the arguments' copies, which were most of
the engine's time when each helper was its own function.

The inlining is LLVM's (:data:`emulate.sim.matching.INL`: each helper compiled once,
without reference counts, and marked ``alwaysinline``), not numba's
(``inline="always"``), which copies the helper's IR and runs numba's untyped passes on
the copy at every call site, and again for the helpers it calls: that took 35 s to
compile ``_start`` and 52 s for ``_events``, most of it deep copies of the IR
(cProfile); now 16 and 13 s, the helpers included (each compiled once). The kernels take
``core`` read-only (:func:`read_only`): one signature each to compile, where a one-core
plan's read-only ``core`` and a writable one made two.
"""
from __future__ import annotations

import numba
import numpy as np

from controller.indexing import no_wraparound
from controller.plan import NO_SLOT, ordered_flows
from emulate.sim.matching import (COFLOW_DONE, EPS_BYTES, INL, SEG_FULL, STOP_TIME, STUCK,
                                  advance_flow, emit, joins_stop)

# the kernels index with flows, pairs, ports and heap positions, never negative numbers
no_wraparound(__name__)

#: a first-pass rate this much below its cap means the caps do not fit the links
CAP_SLACK = 1e-9

#: the saturation key of a port that never fills
NEVER = 1 << 62

#: keys are below this (``label * W + r``)
KEY_SPACE = 1 << 61

#: the event loop's stop for a completion on a port where a flow is held below its cap
#: (the engine applies the plan again; never returned to the simulator)
REFIT = 16


# the shared helpers of emulate.sim.matching, compiled again from the same source with
# these options
# (NUMBA_DISABLE_JIT leaves plain functions, without ``py_func``)
_advance = numba.njit(**INL)(getattr(advance_flow, "py_func", advance_flow))
_joins = numba.njit(**INL)(getattr(joins_stop, "py_func", joins_stop))


# ----------------------------------------------------------------------------- due heap
# ``hk`` and ``hf`` are the two columns of one array (a row per entry: a key and its
# flow share a cache line); an entry moves by carrying it past the entries it passes
# (one write of ``hpos`` per level instead of a swap's two): the same comparisons as
# swapping, so the same heap.
@numba.njit(**INL)
def _hmove(src, dst, hk, hf, hpos):
    hk[dst] = hk[src]
    hf[dst] = hf[src]
    hpos[hf[dst]] = dst


@numba.njit(**INL)
def _hup(i, hk, hf, hpos):
    key = hk[i]
    f = hf[i]
    while i > 0:
        p = (i - 1) >> 1
        if hk[p] <= key:
            break
        _hmove(p, i, hk, hf, hpos)
        i = p
    hk[i] = key
    hf[i] = f
    hpos[f] = i


@numba.njit(**INL)
def _hdown(i, n, hk, hf, hpos):
    key = hk[i]
    f = hf[i]
    while True:
        c = 2 * i + 1
        if c >= n:
            break
        if c + 1 < n and hk[c + 1] < hk[c]:
            c += 1
        if key <= hk[c]:
            break
        _hmove(c, i, hk, hf, hpos)
        i = c
    hk[i] = key
    hf[i] = f
    hpos[f] = i


@numba.njit(**INL)
def _hset(f, key, hk, hf, hpos, nh):
    """Flow ``f``'s due time is ``key`` (pushed if absent); returns the heap size."""
    i = hpos[f]
    if i < 0:
        hk[nh] = key
        hf[nh] = f
        hpos[f] = nh
        _hup(nh, hk, hf, hpos)
        return nh + 1
    old = hk[i]
    hk[i] = key
    if key < old:
        _hup(i, hk, hf, hpos)
    else:
        _hdown(i, nh, hk, hf, hpos)
    return nh


@numba.njit(**INL)
def _hdel(f, hk, hf, hpos, nh):
    """Remove flow ``f`` from the heap (if there); returns the heap size."""
    i = hpos[f]
    if i < 0:
        return nh
    nh -= 1
    hpos[f] = -1
    if i < nh:
        hk[i] = hk[nh]
        hf[i] = hf[nh]
        hpos[hf[i]] = i
        _hup(i, hk, hf, hpos)
        _hdown(hpos[hf[i]], nh, hk, hf, hpos)
    return nh


# ----------------------------------------------------------------------------- rates
@numba.njit(**INL)
def _due(f, tl, rem, rate, size):
    """The time flow ``f`` is down to the finishing tolerance."""
    left = rem[f] - (EPS_BYTES + 1e-12 * size[f])
    return tl[f] + (left if left > 0.0 else 0.0) / rate[f]


@numba.njit(**INL)
def _set_rate(f, r, t, rate, core, seg_start, record, seg_flow, seg_core, seg_t0, seg_t1,
              seg_rate, n_seg):
    """Flow ``f`` sends at ``r`` from ``t`` (:func:`emulate.sim.matching.set_rate`,
    without a call to emit a segment unless one is recorded)."""
    if record and rate[f] > 0.0:
        n_seg = emit(record, f, core[f], seg_start[f], t, rate[f], seg_flow, seg_core,
                     seg_t0, seg_t1, seg_rate, n_seg)
    seg_start[f] = t
    rate[f] = r
    return n_seg


@numba.njit(**INL)
def _note(i, mark, items, n):
    """Append ``i`` to the set ``items[:n]`` unless ``mark[i]`` says it is in it (the
    flows whose remaining bytes changed, for the next State; the pairs whose backfill
    changed); returns the new ``n``."""
    if not mark[i]:
        mark[i] = True
        items[n] = i
        n += 1
    return n


# ----------------------------------------------------------------------------- lists
@numba.njit(**INL)
def _pool_find(e, k, pool, pbeg, pend, fkey):
    """The first index in pair ``e``'s flows whose key is at least ``k``."""
    lo = pbeg[e]
    hi = pend[e]
    while lo < hi:
        mid = (lo + hi) >> 1
        if fkey[pool[mid]] < k:
            lo = mid + 1
        else:
            hi = mid
    return lo


@numba.njit(**INL)
def _pool_insert(f, e, k, pool, pbase, pcap, pbeg, pend, fkey):
    """Insert flow ``f`` (key ``k``) into pair ``e``'s sorted flows."""
    i = _pool_find(e, k, pool, pbeg, pend, fkey)
    if pend[e] < pbase[e] + pcap[e]:
        for j in range(pend[e], i, -1):
            pool[j] = pool[j - 1]
        pool[i] = f
        pend[e] += 1
    else:  # no room after: shift the flows before i down one
        for j in range(pbeg[e] - 1, i - 1):
            pool[j] = pool[j + 1]
        pool[i - 1] = f
        pbeg[e] -= 1


@numba.njit(**INL)
def _pool_remove(f, e, k, pool, pbeg, pend, fkey):
    """Remove flow ``f`` (key ``k``) from pair ``e``'s flows."""
    i = _pool_find(e, k, pool, pbeg, pend, fkey)
    if i == pbeg[e]:
        pbeg[e] += 1
        return
    for j in range(i, pend[e] - 1):
        pool[j] = pool[j + 1]
    pend[e] -= 1


@numba.njit(**INL)
def _q_find(x, k, qkey, qbase, qlen):
    """The first index in port ``x``'s pair list whose head key is at least ``k``
    (a binary search without branches on the keys: they are unpredictable)."""
    base = qbase[x]
    n = qlen[x]
    if n == 0:
        return base
    while n > 1:
        half = n >> 1
        base += half * (qkey[base + half] < k)
        n -= half
    return base + (qkey[base] < k)


@numba.njit(**INL)
def _q_move(src, dst, qpo, qkey):
    """Copy entry ``src`` of the ports' lists to ``dst``."""
    qpo[dst, 0] = qpo[src, 0]
    qpo[dst, 1] = qpo[src, 1]
    qkey[dst] = qkey[src]


@numba.njit(**INL)
def _q_insert(x, e, o, k, qpo, qkey, qbase, qlen):
    """Insert pair ``e`` (head key ``k``, other port ``o``) into port ``x``'s list."""
    i = _q_find(x, k, qkey, qbase, qlen)
    for j in range(qbase[x] + qlen[x], i, -1):
        _q_move(j - 1, j, qpo, qkey)
    qpo[i, 0] = e
    qpo[i, 1] = o
    qkey[i] = k
    qlen[x] += 1


@numba.njit(**INL)
def _q_remove(x, k, qpo, qkey, qbase, qlen):
    """Remove the pair whose head key is ``k`` from port ``x``'s list."""
    i = _q_find(x, k, qkey, qbase, qlen)
    for j in range(i, qbase[x] + qlen[x] - 1):
        _q_move(j + 1, j, qpo, qkey)
    qlen[x] -= 1


@numba.njit(**INL)
def _requeue(x, k, nk, qpo, qkey, qbase, qlen):
    """A pair's head moved from key ``k`` to a later ``nk`` (-1: no flow left): keep
    port ``x``'s list sorted."""
    if nk < 0:
        _q_remove(x, k, qpo, qkey, qbase, qlen)
        return
    j = _q_find(x, k, qkey, qbase, qlen)
    e = qpo[j, 0]
    o = qpo[j, 1]
    end = qbase[x] + qlen[x]
    while j + 1 < end and qkey[j + 1] < nk:
        _q_move(j + 1, j, qpo, qkey)
        j += 1
    qpo[j, 0] = e
    qpo[j, 1] = o
    qkey[j] = nk


# ----------------------------------------------------------------------------- backfill
@numba.njit(**INL)
def _left(x, k, R, akey, aamt, qbase, alen):
    """What the caps and the backfill of pairs ranked before key ``k`` leave on port x."""
    v = R[x]
    b = qbase[x]
    for i in range(b, b + alen[x]):
        if akey[i] >= k:
            break
        v -= aamt[i]
    return v


@numba.njit(**INL)
def _full_at(x, R, akey, aamt, qbase, alen, tiny):
    """The key of the backfill that fills port ``x`` (-1: the caps fill it; NEVER)."""
    v = R[x]
    if v <= tiny:
        return -1
    b = qbase[x]
    for i in range(b, b + alen[x]):
        v -= aamt[i]
        if v <= tiny:
            return akey[i]
    return NEVER


@numba.njit(**INL)
def _put(x, k, e, amt, akey, apair, aamt, qbase, alen):
    """Set pair ``e``'s backfill (key ``k``) in port ``x``'s sorted list (0: remove it).
    The lists have room for every pair of the port."""
    b = qbase[x]
    n = alen[x]
    i = 0
    while i < n and akey[b + i] < k:
        i += 1
    if i < n and akey[b + i] == k:
        if amt > 0.0:
            aamt[b + i] = amt
        else:
            for j in range(b + i, b + n - 1):
                akey[j] = akey[j + 1]
                apair[j] = apair[j + 1]
                aamt[j] = aamt[j + 1]
            alen[x] = n - 1
        return
    if amt <= 0.0:
        return
    for j in range(b + n, b + i, -1):
        akey[j] = akey[j - 1]
        apair[j] = apair[j - 1]
        aamt[j] = aamt[j - 1]
    akey[b + i] = k
    apair[b + i] = e
    aamt[b + i] = amt
    alen[x] = n + 1


# the backfill's tasks: a min-heap of rows (key, what), ``what`` >= 0 a cursor on that
# port, < 0 a check of pair ``-what - 1`` (one row per task: a level of the heap is one
# cache line)
@numba.njit(**INL)
def _tpush(tq, nt, key, what):
    c = nt
    while c > 0:
        p = (c - 1) >> 1
        if tq[p, 0] <= key:
            break
        tq[c, 0] = tq[p, 0]
        tq[c, 1] = tq[p, 1]
        c = p
    tq[c, 0] = key
    tq[c, 1] = what
    return nt + 1


@numba.njit(**INL)
def _tpop(tq, nt):
    """Pop the smallest key; returns (key, what, new size)."""
    key = tq[0, 0]
    what = tq[0, 1]
    nt -= 1
    lk = tq[nt, 0]
    lw = tq[nt, 1]
    c = 0
    while True:
        ch = 2 * c + 1
        if ch >= nt:
            break
        if ch + 1 < nt and tq[ch + 1, 0] < tq[ch, 0]:
            ch += 1
        if lk <= tq[ch, 0]:
            break
        tq[c, 0] = tq[ch, 0]
        tq[c, 1] = tq[ch, 1]
        c = ch
    tq[c, 0] = lk
    tq[c, 1] = lw
    return key, what, nt


@numba.njit(**INL)
def _push_check(e, k, qd, tq, nt):
    """Queue a check of pair ``e`` at key ``k`` unless one is queued (``qd[e]``)."""
    if qd[e] != k:
        qd[e] = k
        nt = _tpush(tq, nt, k, -e - 1)
    return nt


@numba.njit(**INL)
def _push_cursor(x, k, cpend, tq, nt):
    """Queue a cursor on port ``x`` from key ``k`` unless one from an earlier key is
    queued (``cpend[x]``: it walks past ``k``)."""
    if k < cpend[x]:
        cpend[x] = k
        nt = _tpush(tq, nt, k, x)
    return nt


@numba.njit(**INL)
def _after(x, k, up, full, akey, apair, qbase, alen, qd, cpend, tq, nt):
    """Port ``x`` changed at key ``k`` (``full``: where it filled before). With less left
    after ``k``, every backfill of ``x`` ranked after ``k`` may change: re-check them.
    With more, only the one that filled it can (the ones before it left ``x`` something,
    so their other port held them): re-check it, and walk the port's pairs from there."""
    b = qbase[x]
    if not up:
        for i in range(b, b + alen[x]):
            if akey[i] > k:
                nt = _push_check(apair[i], akey[i], qd, tq, nt)
    elif full < NEVER:
        if full > k:
            for i in range(b, b + alen[x]):
                if akey[i] == full:
                    nt = _push_check(apair[i], full, qd, tq, nt)
                    break
        nt = _push_cursor(x, (k if k > full else full) + 1, cpend, tq, nt)
    return nt


@numba.njit(**INL)
def _assign(e, k, amt, R, tiny_of, a, akey, apair, aamt, qbase, alen, fullk, pin, pout,
            tmark, touched, n_touched, qd, cpend, tq, nt):
    """Pair ``e`` (head at key ``k``) gets backfill ``amt``: update both ports' lists and
    queue what may change after ``k`` on them (the backfills ranked later; a cursor from
    where the port used to fill, if it now has more left)."""
    up = amt < a[e]
    for side in range(2):
        x = pin[e] if side == 0 else pout[e]
        full = fullk[x]
        _put(x, k, e, amt, akey, apair, aamt, qbase, alen)
        if full == NEVER or full >= k:
            # (else the caps fill x, or a backfill ranked before k does: the sums up to
            # it are the same, so it fills x still)
            fullk[x] = _full_at(x, R, akey, aamt, qbase, alen, tiny_of[x])
        nt = _after(x, k, up, full, akey, apair, qbase, alen, qd, cpend, tq, nt)
    a[e] = amt
    return _note(e, tmark, touched, n_touched), nt


@numba.njit(**INL)
def _check(e, k, R, tiny_of, a, akey, apair, aamt, qbase, alen, fullk, pin, pout, tmark,
           touched, n_touched, qd, cpend, tq, nt):
    """Pair ``e`` (head at key ``k``) gets what both its ports have left before ``k``."""
    p = pin[e]
    q = pout[e]
    amt = 0.0
    if fullk[p] >= k and fullk[q] >= k:  # neither port is full before k
        amt = min(_left(p, k, R, akey, aamt, qbase, alen),
                  _left(q, k, R, akey, aamt, qbase, alen))
        if amt <= tiny_of[p]:
            amt = 0.0
    if amt != a[e]:
        return _assign(e, k, amt, R, tiny_of, a, akey, apair, aamt, qbase, alen, fullk, pin,
                       pout, tmark, touched, n_touched, qd, cpend, tq, nt)
    return n_touched, nt


@numba.njit(**INL)
def _sweep(R, tiny_of, a, akey, apair, aamt, alen, fullk, hkey, pin, pout, qbase, qpo,
           qkey, qlen, tmark, touched, n_touched, qd, cpend, tq, nt):
    """Repair the backfill: process the queued checks and cursors in key order.

    A check ``(k, -1, e)`` recomputes pair ``e``'s backfill from what its ports have left
    before ``k`` (stale if ``e``'s head is no longer at ``k``); a cursor ``(k, x, _)``
    walks port ``x``'s pairs from key ``k`` while the port has something left, giving
    each unserved pair what it can take. Every task queues only tasks ranked after it, so
    each decision is made after every decision ranked before it: the result is the greedy
    backfill of the whole order. At most one check per pair and one cursor per port are
    queued (a second is the same work), so the heap holds at most a task per pair and
    port, and one per pair whose head moved on since its check was queued. Returns
    ``n_touched``."""
    while nt > 0:
        k, x, nt = _tpop(tq, nt)
        e = -x - 1
        if x >= 0:
            if cpend[x] != k:
                continue  # an earlier cursor walked past k
            cpend[x] = NEVER
            if fullk[x] < k:
                continue  # the port filled again before k
            # the cursor walks on while the port has room, checking the unserved pairs
            # whose other port has room too; it waits for the tasks ranked before a pair
            # it checks. (Passing a pair whose other port is full needs no wait: a task
            # that gives that port room after all queues a cursor of its own there.)
            j = _q_find(x, k, qkey, qbase, qlen)
            end = qbase[x] + qlen[x]
            while j < end:
                k = qkey[j]
                if fullk[x] < k:
                    break  # the port is full before k
                e = qpo[j, 0]
                if fullk[qpo[j, 1]] >= k and a[e] == 0.0:
                    if nt > 0 and tq[0, 0] < k:
                        nt = _push_cursor(x, k, cpend, tq, nt)
                        break
                    n_touched, nt = _check(
                        e, k, R, tiny_of, a, akey, apair, aamt, qbase, alen, fullk, pin,
                        pout, tmark, touched, n_touched, qd, cpend, tq, nt)
                j += 1
        else:
            if qd[e] == k:
                qd[e] = -1
            if hkey[e] == k:  # else the pair's head moved on: stale
                n_touched, nt = _check(
                    e, k, R, tiny_of, a, akey, apair, aamt, qbase, alen, fullk, pin, pout,
                    tmark, touched, n_touched, qd, cpend, tq, nt)
    return n_touched


# ----------------------------------------------------------------------------- plans
@numba.njit(cache=True)
def heaviest_increasing(labels, weight):
    """Which entries to keep: a heaviest subsequence of ``labels`` (distinct; -1 entries
    may not be kept) strictly increasing, by ``weight`` (> 0). O(n log n) with a Fenwick
    tree over the labels' ranks."""
    n = labels.shape[0]
    keep = np.zeros(n, dtype=np.bool_)
    idx = np.flatnonzero(labels >= 0)
    m = idx.shape[0]
    if m == 0:
        return keep
    rank = np.empty(n, dtype=np.int64)
    srt = idx[np.argsort(labels[idx])]
    for i in range(m):
        rank[srt[i]] = i + 1
    tree = np.zeros(m + 1)
    arg = np.full(m + 1, -1, dtype=np.int64)
    best = np.zeros(n)
    prev = np.full(n, -1, dtype=np.int64)
    top = -1
    for i in idx:
        # the heaviest chain ending below rank[i]
        j = rank[i] - 1
        b = 0.0
        bi = -1
        while j > 0:
            if tree[j] > b:
                b = tree[j]
                bi = arg[j]
            j -= j & (-j)
        best[i] = b + weight[i]
        prev[i] = bi
        j = rank[i]
        while j <= m:
            if best[i] > tree[j]:
                tree[j] = best[i]
                arg[j] = i
            j += j & (-j)
        if top < 0 or best[i] > best[top]:
            top = i
    while top >= 0:
        keep[top] = True
        top = prev[top]
    return keep


def spread_labels(n_coflows: int, order, space: int) -> np.ndarray:
    """Labels of coflows, ``-1`` outside ``order``, those of ``order`` increasing along it
    and spread evenly over ``(0, space)``: room between any two for :func:`relabel`."""
    label = np.full(n_coflows, -1, dtype=np.int64)
    n = len(order)
    label[order] = (np.arange(n, dtype=np.int64) + 1) * (space // (n + 1))
    return label


@numba.njit(cache=True)
def relabel(order, keep, label, space):
    """New labels for the coflows of ``order`` (in priority order): those kept keep
    theirs (increasing along ``order``), the others get labels spread between their kept
    neighbours. Returns False (nothing changed) when a gap has no room: relabel all."""
    n = order.shape[0]
    # the gaps: runs order[i:j] of coflows not kept, between labels lo and hi
    gap_i = np.empty(n + 1, dtype=np.int64)
    gap_j = np.empty(n + 1, dtype=np.int64)
    gap_lo = np.empty(n + 1, dtype=np.int64)
    gap_step = np.empty(n + 1, dtype=np.int64)
    gaps = 0
    i = 0
    lo = 0
    while i < n:
        j = i
        while j < n and not keep[j]:
            j += 1
        hi = label[order[j]] if j < n else space
        cnt = j - i
        if cnt > 0:
            step = (hi - lo) // (cnt + 1)
            if hi - lo <= cnt or step < 1:
                return False
            gap_i[gaps], gap_j[gaps], gap_lo[gaps], gap_step[gaps] = i, j, lo, step
            gaps += 1
        i = j + 1
        lo = hi
    for g in range(gaps):          # every gap has room: relabel
        for q in range(gap_j[g] - gap_i[g]):
            label[order[gap_i[g] + q]] = gap_lo[g] + (q + 1) * gap_step[g]
    return True


@numba.njit(cache=True)
def _leave_pairs(pool, pbeg, pend, core_of):
    """Every flow in a pair leaves it (``core_of`` -1; the pairs' bounds are the
    caller's to reset)."""
    for e in range(pbeg.shape[0]):
        for j in range(pbeg[e], pend[e]):
            core_of[pool[j]] = -1


@numba.njit(cache=True)
def _update_pairs(moved, insert, ikey, core, dpair, D, pool, pbase, pcap, pbeg, pend, hkey,
                  pin, pout, qbase, qpo, qkey, qlen, fkey, core_of, dirty, dmark):
    """Remove the flows ``moved`` from their pairs, insert the flows ``insert`` (each on
    its core ``core[f]``, with key ``ikey``), and put every pair whose head changed back
    in its ports' lists. ``dirty``/``dmark`` are scratch per pair (left unmarked)."""
    nd = 0
    for f in moved:
        e = core_of[f] * D + dpair[f]
        _pool_remove(f, e, fkey[f], pool, pbeg, pend, fkey)
        core_of[f] = -1
        if not dmark[e]:
            dmark[e] = True
            dirty[nd] = e
            nd += 1
    for i in range(insert.shape[0]):
        f = insert[i]
        fkey[f] = ikey[i]
        e = core[f] * D + dpair[f]
        _pool_insert(f, e, ikey[i], pool, pbase, pcap, pbeg, pend, fkey)
        core_of[f] = core[f]
        if not dmark[e]:
            dmark[e] = True
            dirty[nd] = e
            nd += 1
    # out of the ports' lists, then in at their new heads' keys (the lists' other pairs
    # kept their keys, so the lists stay sorted)
    for i in range(nd):
        e = dirty[i]
        if hkey[e] >= 0:
            _q_remove(pin[e], hkey[e], qpo, qkey, qbase, qlen)
            _q_remove(pout[e], hkey[e], qpo, qkey, qbase, qlen)
            hkey[e] = -1
    for i in range(nd):
        e = dirty[i]
        dmark[e] = False
        if pbeg[e] < pend[e]:
            k = fkey[pool[pbeg[e]]]
            _q_insert(pin[e], e, pout[e], k, qpo, qkey, qbase, qlen)
            _q_insert(pout[e], e, pin[e], k, qpo, qkey, qbase, qlen)
            hkey[e] = k


@numba.njit(cache=True)
def _group_changes(order, bounds, status, core_of, core):
    """The flows to take out of their pairs and those to put in, for a new order of
    sub-coflows (``status`` per sub-coflow: 0 kept, 1 moved, 2 new): every flow of a
    moved or new one, and a kept one's flows whose core changed (or not in a pair)."""
    out = np.empty(order.shape[0], dtype=np.int64)
    ins = np.empty(order.shape[0], dtype=np.int64)
    n_out = 0
    n_in = 0
    for g in range(bounds.shape[0] - 1):
        for q in range(bounds[g], bounds[g + 1]):
            f = order[q]
            if status[g] != 0 or core_of[f] != core[f]:
                if core_of[f] >= 0:
                    out[n_out] = f
                    n_out += 1
                ins[n_in] = f
                n_in += 1
    return out[:n_out], ins[:n_in]


def coflow_flows(order, ptr, flows, eligible) -> np.ndarray:
    """The eligible flows of the coflows ``order``, coflow after coflow, by index inside
    (``ptr``, ``flows``: ``FlowArrays.coflow_ptr``, ``coflow_flows``)."""
    return ordered_flows(order, ptr, flows, eligible, NO_SLOT, -1)


@numba.njit(cache=True)
def capped_flows(ranked, rate_cap):
    """The flows of ``ranked`` that a plan's caps (bits/s, NaN: none) let send in the
    first pass, in the same order, and their caps in bytes/s (``inf`` for none)."""
    out = np.empty(ranked.shape[0], dtype=np.int64)
    caps = np.empty(ranked.shape[0])
    n = 0
    for f in ranked:
        c = np.inf if np.isnan(rate_cap[f]) else rate_cap[f] / 8.0
        if c > 0.0:
            out[n] = f
            caps[n] = c
            n += 1
    return out[:n], caps[:n]


@numba.njit(cache=True)
def _moved_cores(order, ptr, flows, eligible, core_of, core):
    """Flows of ``order`` in the pairs whose plan puts them on another core."""
    out = np.empty(16, dtype=np.int64)
    n = 0
    for k in order:
        for q in range(ptr[k], ptr[k + 1]):
            f = flows[q]
            if eligible[f] and core_of[f] >= 0 and core_of[f] != core[f]:
                if n == out.shape[0]:
                    grown = np.empty(2 * n, dtype=np.int64)
                    grown[:n] = out
                    out = grown
                out[n] = f
                n += 1
    return out[:n]


@numba.njit(cache=True)
def _first_pass(cflows, cap, src, dst, core, core_cap, ports, R, cval, must_fit, clip):
    """The first pass of the capped priority rule over the capped flows ``cflows`` (in
    rank order, caps ``cap`` in bytes/s): ``cval`` their rates, ``R`` what is left on
    each port, ``clip`` the ports of the flows held below their caps. Returns whether
    every flow got its cap (up to :data:`CAP_SLACK`); when it is False and ``must_fit``
    the incremental engine does not apply (``cval`` is left zero). (Without
    ``must_fit``, without backfill, the first pass is the rule whether the caps fit or
    not: until the next plan if the rates are fixed, else until a completion frees one
    of the ``clip`` ports.)"""
    cores = core_cap.shape[0]
    nport = cores * ports
    for h in range(cores):
        R[h * ports:(h + 1) * ports] = core_cap[h]
        R[nport + h * ports:nport + (h + 1) * ports] = core_cap[h]
    clip[:] = False
    fits = True
    for m in range(cflows.shape[0]):
        f = cflows[m]
        h = core[f]
        pi = h * ports + src[f]
        po = nport + h * ports + dst[f]
        r = min(cap[m], R[pi], R[po])
        tiny = 1e-9 * core_cap[h]
        if r > tiny:
            cval[f] = r
            R[pi] -= r
            R[po] -= r
        if cap[m] > tiny and cap[m] - cval[f] > CAP_SLACK * cap[m]:
            fits = False
            clip[pi] = True
            clip[po] = True
    if not fits and must_fit:
        for f in cflows:
            cval[f] = 0.0
    return fits


@numba.njit(**INL)
def _rate_of(f, cval, a, pool, pbeg, pend, core_of, dpair, D):
    """Flow ``f``'s rate: its first-pass rate, plus its pair's backfill if it heads it."""
    r = cval[f]
    if core_of[f] >= 0:
        e = core_of[f] * D + dpair[f]
        if pool[pbeg[e]] == f:
            r = r + a[e]
    return r


@numba.njit(**INL)
def _apply_rate(f, r, t, rate, core, pinned, rem, size, tl, hk, hf, hpos, nh, seg_start,
                record, seg_flow, seg_core, seg_t0, seg_t1, seg_rate, n_seg, bulk):
    """Flow ``f`` (brought up to ``t``) sends at ``r`` from ``t``: its segment, its pin,
    its due time. With ``bulk`` nothing moves in the due heap: the key is set in the
    flow's row (a new flow's row appended; a stopped flow's left for :func:`_heapify` to
    drop)."""
    if r != rate[f]:
        n_seg = _set_rate(f, r, t, rate, core, seg_start, record, seg_flow, seg_core,
                          seg_t0, seg_t1, seg_rate, n_seg)
    if r > 0.0:
        if pinned[f] < 0:
            pinned[f] = core[f]
        tl[f] = t
        if not bulk:
            nh = _hset(f, _due(f, tl, rem, rate, size), hk, hf, hpos, nh)
        else:
            i = hpos[f]
            if i < 0:
                i = nh
                hf[i] = f
                hpos[f] = i
                nh += 1
            hk[i] = _due(f, tl, rem, rate, size)
    elif not bulk:
        nh = _hdel(f, hk, hf, hpos, nh)
    return nh, n_seg


@numba.njit(**INL)
def _replan_rate(f, r, t, rate, core, pinned, rem, size, tl, hk, hf, hpos, nh, seg_start,
                 record, seg_flow, seg_core, seg_t0, seg_t1, seg_rate, n_seg, bulk):
    """:func:`_apply_rate` at a plan's start, where a flow that goes on sending at the
    same rate keeps its due time (its ``rem`` and ``tl`` agree with it): of the flows a
    plan passes over (every flow that sent, is capped or is backfilled) only those
    whose rate changes move in the heap (or, ``bulk``, are set in its rows)."""
    if r == rate[f] and hpos[f] >= 0:
        return nh, n_seg
    return _apply_rate(f, r, t, rate, core, pinned, rem, size, tl, hk, hf, hpos, nh,
                       seg_start, record, seg_flow, seg_core, seg_t0, seg_t1, seg_rate,
                       n_seg, bulk)


@numba.njit(**INL)
def _unlink(f, D, dpair, core_of, pool, pbeg, pend, fkey, hkey, pin, pout, qbase, qpo,
            qkey, qlen):
    """Flow ``f`` has finished: out of its pair, whose head moves on if ``f`` headed it.
    Returns ``(e, k, nk)``: its pair, its key and the pair's new head key if it headed it
    (-1: no flow left), else -2."""
    e = core_of[f] * D + dpair[f]
    core_of[f] = -1
    k = fkey[f]
    if pool[pbeg[e]] != f:
        _pool_remove(f, e, k, pool, pbeg, pend, fkey)
        return e, k, -2
    pbeg[e] += 1
    nk = fkey[pool[pbeg[e]]] if pbeg[e] < pend[e] else -1
    _requeue(pin[e], k, nk, qpo, qkey, qbase, qlen)
    _requeue(pout[e], k, nk, qpo, qkey, qbase, qlen)
    hkey[e] = nk
    return e, k, nk


@numba.njit(**INL)
def _release(e, k, nk, c, R, tiny_of, a, akey, apair, aamt, qbase, alen, fullk, pin, pout,
             tmark, touched, n_touched, qd, cpend, tq, nt):
    """What a finished flow of pair ``e`` (key ``k``; ``nk``: :func:`_unlink`'s) leaves
    to the backfill: the pair's backfill if it headed it (its next flow, to be checked,
    heads it now) and its first-pass rate ``c`` on its ports; queues what may change."""
    if nk > -2:
        if a[e] > 0.0:
            n_touched, nt = _assign(e, k, 0.0, R, tiny_of, a, akey, apair, aamt, qbase,
                                    alen, fullk, pin, pout, tmark, touched, n_touched, qd,
                                    cpend, tq, nt)
        if nk >= 0:
            nt = _push_check(e, nk, qd, tq, nt)
            n_touched = _note(e, tmark, touched, n_touched)
    if c > 0.0:
        for side in range(2):
            x = pin[e] if side == 0 else pout[e]
            full = fullk[x]
            R[x] += c
            fullk[x] = _full_at(x, R, akey, aamt, qbase, alen, tiny_of[x])
            nt = _after(x, -1, True, full, akey, apair, qbase, alen, qd, cpend, tq,
                        nt)
    return n_touched, nt


#: the kernels below allocate nothing: compiled without numba's reference counting
KERNEL = dict(cache=True, _nrt=False)


@numba.njit(**KERNEL)
def _start(t, cflows, old, do_backfill, D, dpair, core_of, pool, pbeg, pend, hkey, pin,
           pout, qbase, qpo, qkey, qlen, cval, R, tiny_of, a, akey, apair, aamt, alen, fullk,
           tmark, touched, qd, cpend, tq, rate, core, pinned, rem, size, tl, hk, hf,
           hpos, nh, seg_start, record, seg_flow, seg_core, seg_t0, seg_t1, seg_rate,
           n_seg, vmark):
    """A plan's rates: the backfill from scratch (a cursor on every port the caps leave
    something on), then every flow that is capped, sent under the last plan (``old``) or
    heads a backfilled pair gets its rate and due time (:func:`_replan_rate`; ``vmark``,
    False per flow, is scratch). Returns ``(nh, n_seg)``."""
    for x in range(R.shape[0]):
        b = qbase[x]
        for i in range(b, b + alen[x]):
            a[apair[i]] = 0.0
        alen[x] = 0
        fullk[x] = -1 if R[x] <= tiny_of[x] else NEVER
    n_touched = 0
    if do_backfill:
        nt = 0
        for x in range(R.shape[0]):
            if qlen[x] > 0 and R[x] > tiny_of[x]:
                nt = _push_cursor(x, qkey[qbase[x]], cpend, tq, nt)
        n_touched = _sweep(R, tiny_of, a, akey, apair, aamt, alen, fullk, hkey, pin, pout,
                           qbase, qpo, qkey, qlen, tmark, touched, n_touched, qd, cpend, tq,
                           nt)
    for x in range(n_touched):
        tmark[touched[x]] = False
    # many rates change at once (a plan of fixed rates re-rates nearly every flow): set
    # them without moving each in the due heap, then build the heap again in O(its size).
    # The capped flows first, in rank order (their entries in sequence, mostly), then
    # those of the last plan's flows (in the heap's order, at random) that are not capped.
    changes = 0
    for f in cflows:
        changes += _rate_of(f, cval, a, pool, pbeg, pend, core_of, dpair, D) != rate[f]
    bulk = changes * BULK > nh + 64
    for f in cflows:
        vmark[f] = True
        nh, n_seg = _replan_rate(f, _rate_of(f, cval, a, pool, pbeg, pend, core_of, dpair, D),
                                t, rate, core, pinned, rem, size, tl, hk, hf, hpos, nh,
                                seg_start, record, seg_flow, seg_core, seg_t0, seg_t1,
                                seg_rate, n_seg, bulk)
    for f in old:
        if not vmark[f]:
            nh, n_seg = _replan_rate(
                f, _rate_of(f, cval, a, pool, pbeg, pend, core_of, dpair, D), t, rate, core,
                pinned, rem, size, tl, hk, hf, hpos, nh, seg_start, record, seg_flow,
                seg_core, seg_t0, seg_t1, seg_rate, n_seg, bulk)
    for f in cflows:
        vmark[f] = False
    for x in range(n_touched):
        e = touched[x]
        if pbeg[e] < pend[e]:
            f = pool[pbeg[e]]
            nh, n_seg = _replan_rate(f, cval[f] + a[e], t, rate, core, pinned, rem, size,
                                     tl, hk, hf, hpos, nh, seg_start, record, seg_flow,
                                     seg_core, seg_t0, seg_t1, seg_rate, n_seg, bulk)
    if bulk:
        nh = _heapify(rate, hk, hf, hpos, nh)
    return nh, n_seg


#: :func:`_start` builds the due heap again when more than one flow in ``BULK`` of it
#: changes rate (moving each costs its sifts, at random over the heap)
BULK = 4


@numba.njit(**INL)
def _heapify(rate, hk, hf, hpos, nh):
    """The due heap again from its rows (``hk``, ``hf``) after :func:`_replan_rate` set
    keys in place in bulk: rows of flows that stopped (rate 0) are dropped, the rest
    sifted bottom-up (Floyd's, O(rows)). Returns the heap size."""
    n = 0
    for i in range(nh):
        f = hf[i]
        if rate[f] > 0.0:
            hk[n] = hk[i]
            hf[n] = f
            hpos[f] = n
            n += 1
        else:
            hpos[f] = -1
    for i in range(n // 2 - 1, -1, -1):
        _hdown(i, n, hk, hf, hpos)
    return n


@numba.njit(**KERNEL)
def _events(t, stop_time, do_backfill, coflow, size, core, core_cap, rem, rate,
            done, pinned, flow_completion, left, sent, coflow_completion, record, seg_start,
            seg_flow, seg_core, seg_t0, seg_t1, seg_rate, n_seg, D, dpair, core_of, pool,
            pbeg, pend, fkey, hkey, pin, pout, qbase, qpo, qkey, qlen, cval, R,
            tiny_of, a, akey, apair, aamt, alen, fullk, tmark, touched, tbuf, qd, cpend, tq,
            tl, hk, hf, hpos, nh, n_live, stash, stash_fin, chg, chgmark, nchg, stops,
            clip):
    """Advance under the plan :func:`_start` applied until a coflow ``k`` with
    ``stops[k]`` completes, ``stop_time``, or a flow completes on a port of ``clip``
    (:data:`REFIT`: a flow held below its cap there may get more) (or the segment
    record is full: call again after growing it). Returns ``(t, reason, n_seg, events,
    nh, n_live, nchg)``."""
    npairs = pin.shape[0]
    seg_cap = seg_flow.shape[0]
    events = 0
    nt = 0
    n_touched = 0
    reason = STOP_TIME
    while True:
        if record and n_seg + 2 * n_live + 2 * npairs + 2 > seg_cap:
            reason = SEG_FULL
            break
        # the next completion: flows whose due time is before the earliest finish
        best = np.inf
        n_st = 0
        while nh > 0 and hk[0] <= best:
            f = hf[0]
            nh = _hdel(f, hk, hf, hpos, nh)
            fin = tl[f] + rem[f] / rate[f]
            if fin < best:
                best = fin
            stash[n_st] = f
            stash_fin[n_st] = fin
            n_st += 1
        if best == np.inf and stop_time == np.inf:
            reason = STUCK
            break
        t_new = stop_time if _joins(best, stop_time, core_cap) else best
        events += 1
        coflow_done = False
        freed = False
        refit = False
        for x in range(n_st):
            f = stash[x]
            # the flows finishing at ``t_new`` send all they have left: ``t_new - tl``
            # may round to less (to 0 when what is left takes under an ulp of ``t``)
            dt = np.inf if stash_fin[x] <= t_new else t_new - tl[f]
            n_seg, fin, cd = _advance(
                f, dt, t_new, rem, size, sent, coflow, done, flow_completion,
                left, coflow_completion, rate, core, seg_start, record, seg_flow, seg_core,
                seg_t0, seg_t1, seg_rate, n_seg)
            tl[f] = t_new
            nchg = _note(f, chgmark, chg, nchg)
            if fin:
                n_live -= 1
                freed = True
                coflow_done = coflow_done or (cd and stops[coflow[f]])
                e, k, nk = _unlink(f, D, dpair, core_of, pool, pbeg, pend, fkey, hkey,
                                   pin, pout, qbase, qpo, qkey, qlen)
                refit = refit or clip[pin[e]] or clip[pout[e]]   # its pair's two ports
                c = cval[f]
                cval[f] = 0.0
                if do_backfill:
                    n_touched, nt = _release(e, k, nk, c, R, tiny_of, a, akey, apair, aamt,
                                             qbase, alen, fullk, pin, pout, tmark, touched,
                                             n_touched, qd, cpend, tq, nt)
            else:
                nh = _hset(f, _due(f, tl, rem, rate, size), hk, hf, hpos, nh)
        t = t_new
        if coflow_done or t >= stop_time or refit:
            reason = COFLOW_DONE if coflow_done else STOP_TIME if t >= stop_time else REFIT
            break
        # repair the backfill; the pairs' heads whose rate changes take it now
        while freed and do_backfill:
            freed = False
            n_touched = _sweep(R, tiny_of, a, akey, apair, aamt, alen, fullk, hkey, pin,
                               pout, qbase, qpo, qkey, qlen, tmark, touched, n_touched, qd,
                               cpend, tq, nt)
            nt = 0
            # the pairs' heads whose rate changes (``tbuf``, new rates in ``stash_fin``),
            # all found before any changes: their reads at random overlap
            n_t = 0
            for x in range(n_touched):
                e = touched[x]
                tmark[e] = False
                if pbeg[e] < pend[e]:
                    f = pool[pbeg[e]]
                    r = cval[f] + a[e]
                    if r != rate[f]:
                        tbuf[n_t] = f
                        stash_fin[n_t] = r
                        n_t += 1
            n_touched = 0
            for x in range(n_t):
                f = tbuf[x]
                r = stash_fin[x]
                # bring the flow up to now at its old rate, then change it
                n_seg, fin, cd = _advance(
                    f, t - tl[f], t, rem, size, sent, coflow, done, flow_completion, left,
                    coflow_completion, rate, core, seg_start, record, seg_flow, seg_core,
                    seg_t0, seg_t1, seg_rate, n_seg)
                tl[f] = t
                nchg = _note(f, chgmark, chg, nchg)
                if fin:  # rounding put its due time a hair after now: it ends now
                    n_live -= 1
                    freed = True
                    coflow_done = coflow_done or (cd and stops[coflow[f]])
                    nh = _hdel(f, hk, hf, hpos, nh)
                    e, k, nk = _unlink(f, D, dpair, core_of, pool, pbeg, pend, fkey, hkey,
                                       pin, pout, qbase, qpo, qkey, qlen)
                    c = cval[f]
                    cval[f] = 0.0
                    n_touched, nt = _release(e, k, nk, c, R, tiny_of, a, akey, apair, aamt,
                                             qbase, alen, fullk, pin, pout, tmark, touched,
                                             n_touched, qd, cpend, tq, nt)
                    continue
                nh, n_seg = _apply_rate(f, r, t, rate, core, pinned, rem, size, tl, hk, hf,
                                        hpos, nh, seg_start, record, seg_flow, seg_core,
                                        seg_t0, seg_t1, seg_rate, n_seg, False)
        if coflow_done:
            reason = COFLOW_DONE
            break
    # the tasks and marks of a repair cut short by the stop are dropped (the next plan
    # starts the backfill from scratch)
    for x in range(n_touched):
        tmark[touched[x]] = False
    for x in range(nt):
        if tq[x, 1] >= 0:
            cpend[tq[x, 1]] = NEVER
        else:
            qd[-tq[x, 1] - 1] = -1
    return t, reason, n_seg, events, nh, n_live, nchg


@numba.njit(**KERNEL)
def _finish(t, D, dpair, core_of, pool, pbeg, pend, fkey, hkey, pin, pout, qbase, qpo,
            qkey, qlen, cval, size, coflow, rem, sent, done, flow_completion, left,
            coflow_completion, rate, core, seg_start, record, seg_flow, seg_core, seg_t0,
            seg_t1, seg_rate, n_seg, tl, hk, hf, hpos, nh, n_live, stash, chg, chgmark,
            nchg):
    """Bring every sending flow up to ``t`` (the next plan reads ``rem`` and ``sent``).
    Returns ``(n_seg, nh, n_live, nchg)``."""
    n = nh
    for i in range(n):
        stash[i] = hf[i]
    for i in range(n):
        f = stash[i]
        if tl[f] < t:
            n_seg, fin, cd = _advance(
                f, t - tl[f], t, rem, size, sent, coflow, done, flow_completion, left,
                coflow_completion, rate, core, seg_start, record, seg_flow, seg_core,
                seg_t0, seg_t1, seg_rate, n_seg)
            tl[f] = t
            nchg = _note(f, chgmark, chg, nchg)
            if fin:
                n_live -= 1
                nh = _hdel(f, hk, hf, hpos, nh)
                _unlink(f, D, dpair, core_of, pool, pbeg, pend, fkey, hkey, pin, pout,
                        qbase, qpo, qkey, qlen)
                cval[f] = 0.0
    return n_seg, nh, n_live, nchg


# ----------------------------------------------------------------------------- engine
def read_only(x: np.ndarray) -> np.ndarray:
    """A read-only view of ``x`` (``x`` itself if it is one): the kernels take ``core``
    read-only (a one-core plan's is, :func:`controller.plan.single_core`), so that they
    have one signature each to compile, not two."""
    if not x.flags.writeable:
        return x
    v = x.view()
    v.flags.writeable = False
    return v


class CappedEngine:
    """The capped engine of one simulation run: its pairs, ports and heaps, kept from
    plan to plan (see the module docstring).

    :meth:`plan` applies a plan's order and caps (False if the caps do not fit the
    links and the plan backfills: the rescan takes that plan); :meth:`run` advances it.
    Anything else that changes the flows in between (another engine's step) must call
    :meth:`invalidate`: the next plan then rebuilds the pairs from the flows eligible at
    that time.
    """

    def __init__(self, arrays, core_cap: np.ndarray):
        a = arrays
        self.arrays = a
        n = a.n_flows
        C, P = a.cores, a.ports
        nport = C * P
        self.core_cap = core_cap
        # (src, dst) pairs of the workload; pair e = h * D + d on core h; each pair has
        # room for every flow of its (src, dst)
        uniq, self.dpair = a.pair_index
        self.D = D = len(uniq)
        h = np.repeat(np.arange(C, dtype=np.int64), D)
        self.pin = h * P + np.tile(uniq // P, C)
        self.pout = nport + h * P + np.tile(uniq % P, C)
        self.pcap = np.tile(np.bincount(self.dpair, minlength=D), C).astype(np.int64)
        self.pbase = np.concatenate([[0], np.cumsum(self.pcap)[:-1]]).astype(np.int64)
        self.pool = np.empty(max(1, int(self.pcap.sum())), dtype=np.int64)
        self.pbeg = self.pbase.copy()
        self.pend = self.pbase.copy()
        self.hkey = np.full(C * D, -1, dtype=np.int64)
        self.a = np.zeros(C * D)
        # per port: room for each of its pairs, in the pair list and the backfill list
        deg = np.bincount(np.concatenate([self.pin, self.pout]), minlength=2 * nport)
        self.qbase = np.concatenate([[0], np.cumsum(deg)]).astype(np.int64)
        m = max(1, int(deg.sum()))
        self.qpo = np.empty((m, 2), dtype=np.int64)   # (pair, its other port)
        self.qlen = np.zeros(2 * nport, dtype=np.int64)
        self.akey = np.empty(m, dtype=np.int64)
        self.apair = np.empty(m, dtype=np.int64)
        self.aamt = np.empty(m)
        self.alen = np.zeros(2 * nport, dtype=np.int64)
        self.fullk = np.full(2 * nport, NEVER, dtype=np.int64)
        self.R = np.zeros(2 * nport)
        self.clip = np.zeros(2 * nport, dtype=np.bool_)   # ports of flows below their caps
        tiny = np.repeat(1e-9 * np.asarray(core_cap, dtype=np.float64), P)
        self.tiny_of = np.concatenate([tiny, tiny])
        self.tmark = np.zeros(C * D, dtype=np.bool_)
        self.touched = np.empty(C * D, dtype=np.int64)
        self.tbuf = np.empty(C * D, dtype=np.int64)
        self.dirty = np.empty(C * D, dtype=np.int64)
        self.dmark = np.zeros(C * D, dtype=np.bool_)
        # the backfill's tasks: a check per pair and a cursor per port at most, and a
        # stale check per flow finishing in one event (see _sweep)
        w = C * D + 2 * nport + n + 8
        self.tq = np.empty((w, 2), dtype=np.int64)
        self.qd = np.full(C * D, -1, dtype=np.int64)
        self.cpend = np.full(2 * nport, NEVER, dtype=np.int64)
        # per flow
        nn = max(1, n)
        self.core_of = np.full(n, -1, dtype=np.int64)
        self.cval = np.zeros(n)
        self.tl = np.zeros(n)
        # due heap rows: (due time, flow as int64 bits); at least two, so that its columns
        # are strided on every workload (a one-row column is contiguous: another type for
        # the kernels, compiled again)
        heap = np.empty((max(2, n), 2))
        self.hk = heap[:, 0]
        self.hf = heap.view(np.int64)[:, 1]
        self.hpos = np.full(n, -1, dtype=np.int64)
        self.nh = 0
        self.n_live = 0
        self.stash = np.empty(nn, dtype=np.int64)
        self.stash_fin = np.empty(nn)
        self.chg = np.empty(nn, dtype=np.int64)
        self.chgmark = np.zeros(n, dtype=np.bool_)
        self.vmark = np.zeros(n, dtype=np.bool_)   # _start's: the capped flows
        self.nchg = 0
        # rank keys: label[coflow] * W + rk (rk: the flow's rank by index inside its
        # coflow, W a power of two above the largest coflow); or, for a plan without a
        # coflow order, the flow's position
        ptr, flows = a.coflow_ptr, a.coflow_flows
        self.rk = np.empty(n, dtype=np.int64)
        self.rk[flows] = np.arange(n, dtype=np.int64) - np.repeat(ptr[:-1], np.diff(ptr))
        self.W = 1 << max(0, int(np.diff(ptr).max(initial=1)) - 1).bit_length()
        self.fkey = np.zeros(n, dtype=np.int64)
        self.qkey = np.empty(m, dtype=np.int64)
        self.mode = None
        self.label = np.zeros(0, dtype=np.int64)   # per coflow
        self.cflows = np.zeros(0, dtype=np.int64)
        self.caps = np.zeros(0)
        self.do_backfill = True
        self.caps_fit = True   # the last plan's caps fit the links
        self.valid = False
        self._old = None

    def invalidate(self) -> None:
        """Another engine moved the flows: rebuild at the next plan."""
        self.valid = False

    def take_changed(self) -> np.ndarray:
        """The flows whose remaining bytes changed since the last call (sorted)."""
        out = np.sort(self.chg[:self.nchg])
        self.chgmark[out] = False
        self.nchg = 0
        return out

    # ------------------------------------------------------------------ plans
    def plan(self, t, order, coflow_order, core, cflows, caps, backfill, eligible, left,
             rate, groups=None, fixed=False) -> bool:
        """Apply a plan at time ``t``: flows ranked by ``coflow_order`` (coflows, each
        eligible flow in one of them, by index inside) or else by ``order`` (every
        eligible flow; with ``groups``, ``(ids, bounds)`` of
        :meth:`controller.plan.FlowOrderPlan.sub_coflows`, it lists them sub-coflow after
        sub-coflow), on cores ``core``; the flows ``cflows`` (rank order) capped at
        ``caps`` (bytes/s, > 0), the others at 0. Returns False if the caps do not fit
        the links and the plan backfills (then the caller rescans and must
        :meth:`invalidate`). Without backfill the first pass is the rule whether the
        caps fit or not (:attr:`caps_fit` says which): with ``fixed``
        (``Plan.rates_fixed``) its rates stay until the next plan; else a completion on
        a port where a flow is held below its cap frees room for it, and the engine
        applies the plan again there (:meth:`run`), as the rescan would."""
        core = read_only(core)
        mode = ("coflow" if coflow_order is not None else
                "group" if groups is not None else "flow")
        old = self.hf[:self.nh].copy() if self.valid else np.flatnonzero(rate > 0)
        if not (self.valid and mode == self.mode and (
                (mode == "coflow" and self._reorder(coflow_order, core, eligible, left))
                or (mode == "group" and self._regroup(order, groups, core)))):
            self._rebuild(mode, order, coflow_order, core, eligible, groups)
        self._core = core
        self._first(cflows, caps, backfill)
        if not self.caps_fit:
            if backfill:
                self.cflows = np.zeros(0, dtype=np.int64)
                return False
            if fixed:
                self.clip[:] = False   # the rates stay until the next plan
        self.do_backfill = bool(backfill)
        self._old = old
        return True

    def _first(self, cflows, caps, must_fit) -> None:
        """The first pass over the capped flows ``cflows`` at ``caps``
        (:func:`_first_pass`), the last pass's rates cleared first (it sets only the
        rates it gives)."""
        a = self.arrays
        self.cval[self.cflows] = 0.0
        self.cflows, self.caps = cflows, caps
        self.caps_fit = _first_pass(cflows, caps, a.src, a.dst, self._core, self.core_cap,
                                    a.ports, self.R, self.cval, must_fit, self.clip)

    def _refit(self, sim) -> None:
        """The first pass again over the capped flows still sending, after a completion
        on a port where a flow was held below its cap (the plan applied again; every
        sending flow is up to now)."""
        live = ~sim.done[self.cflows]
        self._first(self.cflows[live], self.caps[live], False)
        self._old = self.hf[:self.nh].copy()

    def _rebuild(self, mode, order, coflow_order, core, eligible, groups=None) -> None:
        """The pairs from scratch: every eligible flow, in rank order."""
        a = self.arrays
        # (the flows in the pairs and the capped ones, not every flow: a plan's work is
        # in proportion to the flows that can send)
        _leave_pairs(self.pool, self.pbeg, self.pend, self.core_of)
        self.cval[self.cflows] = 0.0
        self.pbeg[:] = self.pbase
        self.pend[:] = self.pbase
        self.hkey[:] = -1
        self.a[:] = 0.0
        self.qlen[:] = 0
        self.alen[:] = 0
        self.hpos[self.hf[:self.nh]] = -1
        self.nh = 0
        self.cflows = np.zeros(0, dtype=np.int64)
        if mode == "coflow":
            self.label = spread_labels(a.n_coflows, coflow_order, KEY_SPACE // self.W)
            insert = ordered_flows(coflow_order, a.coflow_ptr, a.coflow_flows, eligible,
                                   self.core_of, -1)
            ikey = self.label[a.coflow[insert]] * self.W + self.rk[insert]
        elif mode == "group":
            self.label = spread_labels(a.n_coflows * a.cores, groups[0],
                                       KEY_SPACE // self.W)
            insert = order
            ikey = self.label[a.coflow[insert] * a.cores + core[insert]] * self.W \
                + self.rk[insert]
        else:
            insert = order
            ikey = np.arange(1, len(order) + 1, dtype=np.int64)
        self._update(np.zeros(0, dtype=np.int64), insert, ikey, core)
        self.n_live = len(insert)
        self.mode = mode
        self.valid = True

    def _reorder(self, coflow_order, core, eligible, left) -> bool:
        """The pairs under a new coflow order, moving the flows of the fewest coflows;
        False (nothing changed) if the labels have no room left: rebuild."""
        a = self.arrays
        old_labels = self.label[coflow_order]
        keep = heaviest_increasing(old_labels, left[coflow_order].astype(np.float64))
        new_label = self.label.copy()
        if not relabel(coflow_order, keep, new_label, KEY_SPACE // self.W):
            return False
        moved = coflow_order[(old_labels >= 0) & ~keep]
        out = ordered_flows(moved, a.coflow_ptr, a.coflow_flows, eligible, self.core_of, 1)
        if a.cores > 1:   # flows not yet started may change cores from plan to plan
            out = np.concatenate([out, _moved_cores(coflow_order[keep], a.coflow_ptr,
                                                    a.coflow_flows, eligible,
                                                    self.core_of, core)])
        ins = np.concatenate([out, ordered_flows(coflow_order[old_labels < 0], a.coflow_ptr,
                                                 a.coflow_flows, eligible, self.core_of, 0)])
        self.label = new_label
        self._update(out, ins, new_label[a.coflow[ins]] * self.W + self.rk[ins], core)
        self.n_live += len(ins) - len(out)
        return True

    def _regroup(self, order, groups, core) -> bool:
        """:meth:`_reorder` for a plan that lists its flows sub-coflow after sub-coflow
        (labels per sub-coflow: a coflow's flows on one core): the flows of the
        sub-coflows moved or new, and those that changed cores, move; False if the
        labels have no room left: rebuild."""
        a = self.arrays
        ids, bounds = groups
        old_labels = self.label[ids]
        keep = heaviest_increasing(old_labels, np.diff(bounds).astype(np.float64))
        # labels for the sub-coflows of this order only: one that left it (its flows
        # moved to other cores) and comes back later is new then, not a stale label
        new_label = np.full_like(self.label, -1)
        new_label[ids] = old_labels
        if not relabel(ids, keep, new_label, KEY_SPACE // self.W):
            return False
        status = np.where(old_labels < 0, 2, np.where(keep, 0, 1)).astype(np.int64)
        out, ins = _group_changes(order, bounds, status, self.core_of, core)
        self.label = new_label
        self._update(out, ins, new_label[a.coflow[ins] * a.cores + core[ins]] * self.W
                     + self.rk[ins], core)
        self.n_live += len(ins) - len(out)
        return True

    def _update(self, out, ins, ikey, core) -> None:
        _update_pairs(out, ins, ikey, core, self.dpair, self.D, self.pool, self.pbase,
                      self.pcap, self.pbeg, self.pend, self.hkey, self.pin, self.pout,
                      self.qbase, self.qpo, self.qkey, self.qlen, self.fkey, self.core_of,
                      self.dirty, self.dmark)

    # ------------------------------------------------------------------ run
    def run(self, sim, stop: float) -> int:
        """Advance ``sim`` (the :class:`emulate.sim.flowsim.Simulator`) under the plan
        applied last until a coflow of ``sim._stops`` completes or ``stop``; returns the
        reason."""
        a = self.arrays
        life = sim.lifecycle
        core = self._core
        while True:
            if self._old is not None:
                self._start(sim)
            t, reason, sim.n_seg, ev, self.nh, self.n_live, self.nchg = _events(
                sim.t, stop, self.do_backfill, a.coflow, a.size, core,
                sim.core_cap, sim.rem, sim.rate, sim.done, sim.pinned, sim.flow_completion,
                life.left, sim.sent, life.completion, sim.record, sim.seg_start, *sim._seg,
                sim.n_seg, self.D, self.dpair, self.core_of, self.pool, self.pbeg,
                self.pend, self.fkey, self.hkey, self.pin, self.pout, self.qbase,
                self.qpo, self.qkey, self.qlen, self.cval, self.R, self.tiny_of, self.a,
                self.akey, self.apair, self.aamt, self.alen, self.fullk, self.tmark,
                self.touched, self.tbuf, self.qd, self.cpend, self.tq,
                self.tl, self.hk, self.hf, self.hpos, self.nh, self.n_live, self.stash,
                self.stash_fin, self.chg, self.chgmark, self.nchg, sim._stops, self.clip)
            if not sim._ran(t, reason, ev) and reason != REFIT:
                break
            if reason == REFIT:
                self._finish(sim)
                self._refit(sim)
        self._finish(sim)
        return reason

    def _finish(self, sim) -> None:
        """Every sending flow brought up to now (:func:`_finish`)."""
        a = self.arrays
        life = sim.lifecycle
        while sim.record and sim.n_seg + self.nh + 2 > len(sim._seg[0]):
            sim._grow_segments()
        sim.n_seg, self.nh, self.n_live, self.nchg = _finish(
            sim.t, self.D, self.dpair, self.core_of, self.pool, self.pbeg, self.pend,
            self.fkey, self.hkey, self.pin, self.pout, self.qbase, self.qpo, self.qkey,
            self.qlen, self.cval, a.size, a.coflow, sim.rem, sim.sent, sim.done,
            sim.flow_completion, life.left, life.completion, sim.rate, self._core,
            sim.seg_start, sim.record, *sim._seg, sim.n_seg, self.tl, self.hk, self.hf,
            self.hpos, self.nh, self.n_live, self.stash, self.chg, self.chgmark, self.nchg)

    def _start(self, sim) -> None:
        """The rates of the plan applied last (:func:`_start`)."""
        a = self.arrays
        need = len(self._old) + len(self.cflows) + len(self.pin) + 2
        while sim.record and sim.n_seg + need > len(sim._seg[0]):
            sim._grow_segments()
        self.nh, sim.n_seg = _start(
            sim.t, self.cflows, self._old, self.do_backfill, self.D, self.dpair,
            self.core_of, self.pool, self.pbeg, self.pend, self.hkey, self.pin,
            self.pout, self.qbase, self.qpo, self.qkey, self.qlen, self.cval, self.R,
            self.tiny_of, self.a, self.akey, self.apair, self.aamt, self.alen,
            self.fullk, self.tmark, self.touched, self.qd, self.cpend, self.tq, sim.rate,
            self._core, sim.pinned, sim.rem, a.size, self.tl, self.hk,
            self.hf, self.hpos, self.nh, sim.seg_start, sim.record, *sim._seg,
            sim.n_seg, self.vmark)
        self._old = None

    def sending(self) -> np.ndarray:
        """The flows sending now."""
        return self.hf[:self.nh].copy()
