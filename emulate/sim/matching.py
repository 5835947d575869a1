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
heap, so every flow starts or displaces only after all decisions of higher priority: the
result is exactly the greedy matching of the whole order, at a cost proportional to the
flows the cursors walk past. A cursor passes the flows blocked at their other port in one
walk, without the heap, and queues the first that is not: a flow passed as blocked stays
correctly decided, because whatever frees its other port later (a completion, a
displacement) starts a cursor there that reaches it from that side.

An event costs in proportion to what it changes, not to the number of ports: a sending
flow's remaining bytes are brought up to date only when it finishes, stops or the run
returns, and the next completion comes from a heap of the sending flows' due times (as in
:mod:`emulate.sim.capped`), so the flows whose rate stays the same are not touched. (On
FB2010 tiled ``k`` times on disjoint ports, scanning every port at every event made the
matching's time grow as ``k**2``.) Plans with byte limits (``aalo``) still scan the
sending flows once an event for the limits' crossing times; the scan after the event,
which tells whether a limit was reached, runs only once a coflow may have come near its
limit (:func:`_limit_time`'s ``clear``).
"""
from __future__ import annotations

import numba
import numpy as np

from controller.indexing import no_wraparound

# the kernels index with flows, pairs, ports and heap positions, never negative numbers
no_wraparound(__name__)

#: jit options of the hot helpers that take arrays but allocate none: compiled without
#: numba's reference-counting runtime, so a call costs no atomic reference counts. Numba's
#: refcount pruning leaves those of helpers called (or inlined) in branching code (numba
#: issues #2345, #2350, where ``_nrt=False`` is the maintainers' remedy); in the capped
#: engine on FB2010 they were half of the run time.
LEAF = dict(cache=True, _nrt=False)
#: jit options of helpers inlined by LLVM where they are called (each compiled once,
#: marked ``alwaysinline``; numba's own ``inline="always"`` copies the helper's IR into
#: every call site and compiles far slower), without numba's reference counting
INL = dict(cache=True, forceinline=True, _nrt=False)


@numba.njit(cache=True, inline="always")
def heap_push(hk, hp, hi, n, key, port, idx):
    """Push (key, port, idx) on a min-heap of size n; returns the new arrays and size.

    Keys may be integers (rank positions) or floats (fair-share levels)."""
    if n == hk.shape[0]:
        hk, hp, hi = heap_grown(hk, hp, hi, n)
    return hk, hp, hi, heap_insert(hk, hp, hi, n, key, port, idx)


@numba.njit(cache=True)
def heap_grown(hk, hp, hi, n):
    """The heap's arrays, twice as long (its ``n`` entries copied).

    A hot loop pushes with :func:`heap_insert` and calls this only when the heap is full:
    reassigning the arrays costs atomic reference counts, which the loop then pays only
    in that branch (and :func:`heap_push` returns the arrays at every push)."""
    nk = np.empty(2 * n, dtype=hk.dtype)
    npp = np.empty(2 * n, dtype=np.int64)
    ni = np.empty(2 * n, dtype=np.int64)
    nk[:n] = hk[:n]
    npp[:n] = hp[:n]
    ni[:n] = hi[:n]
    return nk, npp, ni


@numba.njit(**INL)
def heap_insert(hk, hp, hi, n, key, port, idx):
    """Push on a heap with room for it (no arrays returned: a caller in a hot loop saves
    their reference counts); returns the new size."""
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
    return n + 1


@numba.njit(**INL)
def set_rate(f, r, t, rate, core, seg_start, record, seg_flow, seg_core, seg_t0, seg_t1,
             seg_rate, n_seg):
    """Flow ``f`` sends at ``r`` from ``t``: close its segment at the old rate if it was
    sending. Returns n_seg."""
    if rate[f] > 0.0:
        n_seg = emit(record, f, core[f], seg_start[f], t, rate[f], seg_flow, seg_core,
                     seg_t0, seg_t1, seg_rate, n_seg)
    seg_start[f] = t
    rate[f] = r
    return n_seg


@numba.njit(**INL)
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


#: bytes below which a flow counts as finished (absorbs floating-point residue)
EPS_BYTES = 1e-6

#: a flow displaced this close (relative to the time) before it is due ends then: the
#: two are one instant in exact arithmetic, but the engine reckons each flow's due time
#: from its own start, so times that are equal in exact arithmetic can round some ulps
#: apart; displaced with the few bytes left, it would wait for its ports again
TIE = 1e-12


@numba.njit(**INL)
def joins_stop(t_next, stop_time, core_cap):
    """Whether an event at ``t_next`` happens at ``stop_time`` (a release, the plan's
    horizon): at or after it, or so close before it that they are one instant - no flow,
    even at the fastest link's rate, moves more than :data:`EPS_BYTES` in between (or
    they are a few ulps apart).

    Then the flows finishing there and the release are one event, as in exact arithmetic.
    Otherwise a completion that falls on a release in exact arithmetic comes an ulp before
    it or not depending on how an engine rounds its times (the rescan advances every
    sending flow at every event, the incremental engines only the flows whose rate
    changes), and one engine plans the completion alone (starting, hence pinning, flows
    to cores) where another plans it together with the release."""
    gap = stop_time - t_next
    fastest = 0.0
    for h in range(core_cap.shape[0]):
        fastest = max(fastest, core_cap[h])
    return gap * fastest <= EPS_BYTES or gap <= 4.0 * np.spacing(stop_time)


@numba.njit(**INL)
def next_event(t, dt, stop_time, core_cap):
    """``(t_new, dt)`` of the next event, due ``dt`` after ``t`` (at most ``stop_time - t``):
    ``stop_time`` if it :func:`joins_stop`."""
    if dt >= stop_time - t or joins_stop(t + dt, stop_time, core_cap):
        return stop_time, stop_time - t
    return t + dt, dt
# reasons the compiled loops return
STOP_TIME, COFLOW_DONE, BYTE_LIMIT, SEG_FULL, STUCK = 0, 1, 2, 3, 4


@numba.njit(**INL)
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


@numba.njit(**INL)
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


@numba.njit(cache=True, inline="always")
def _less(rem, moved, size):
    """``rem - moved``; but a flow that has sent nothing (``rem == size``) and now sends
    ``moved > 0`` bytes, fewer than ``rem``'s precision, ends one step below ``size``: it
    has started (it is pinned to its core), so it must have sent something."""
    out = rem - moved
    if moved > 0.0 and out == rem and rem == size:
        out = np.nextafter(rem, 0.0)
    return out


@numba.njit(**INL)
def advance_flow(f, dt, t_new, rem, size, sent, coflow, done, flow_completion, left,
                 coflow_completion, rate, core, seg_start, record, seg_flow, seg_core,
                 seg_t0, seg_t1, seg_rate, n_seg):
    """Flow ``f`` sends at its rate for ``dt``; if that finishes it, record its completion
    (and its coflow's, if it was the last flow). Returns (n_seg, finished, coflow done)."""
    r = rate[f]
    moved = r * dt
    if moved > rem[f]:
        moved = rem[f]
    rem[f] = _less(rem[f], moved, size[f])
    k = coflow[f]
    sent[k] += moved
    if rem[f] > EPS_BYTES + 1e-12 * size[f]:
        return n_seg, False, False
    sent[k] += rem[f]
    rem[f] = 0.0
    done[f] = True
    flow_completion[f] = t_new
    if record:  # (not otherwise: two reads at random fewer)
        n_seg = emit(record, f, core[f], seg_start[f], t_new, r, seg_flow, seg_core,
                     seg_t0, seg_t1, seg_rate, n_seg)
    rate[f] = 0.0
    left[k] -= 1
    if left[k] == 0:
        coflow_completion[k] = t_new
        return n_seg, True, True
    return n_seg, True, False


@numba.njit(cache=True)
def pair_lists(order, src, dst, core, dpair, ports, nport, pair_map):
    """Group the flows of ``order`` by (core, src, dst) *pair*, and the pairs by port.

    Pairs are numbered in order of their first flow in ``order``. ``dpair`` is each
    flow's (src, dst) pair among the workload's ``D`` (``FlowArrays.pair_index``),
    ``pair_map`` scratch of ``cores * D`` entries, all -1 (left so on return): a table
    as large as the pairs in use, not ``cores * ports**2`` (read at random once per flow
    of ``order``, at every plan). Returns

    * ``pair``: the pair of each position of ``order``;
    * ``pptr, pflow``: the positions (in ``order``) of pair ``e``'s flows are
      ``pflow[pptr[e]:pptr[e+1]]``, ascending; ``phead[e]`` indexes the first one not done;
    * ``pin, pout``: the input port ``h*P + src`` and output port ``C*P + h*P + dst`` of
      each pair (``nport = C*P``);
    * ``qptr, qpair, qkey, qlen``: per port, the pairs with flows left sorted by the
      position of their head flow (``qkey``, unique: one flow heads one pair), the first
      ``qlen[p]`` entries of ``qpair[qptr[p]:qptr[p+1]]`` in use.
    """
    n = order.shape[0]
    D = pair_map.shape[0] // (nport // ports)
    pair = np.empty(n, dtype=np.int64)
    first = np.empty(n, dtype=np.int64)  # per pair, its first flow
    npairs = 0
    for m in range(n):
        f = order[m]
        key = core[f] * D + dpair[f]
        e = pair_map[key]
        if e < 0:
            e = npairs
            pair_map[key] = e
            first[e] = f
            npairs += 1
        pair[m] = e
    pptr = np.zeros(npairs + 1, dtype=np.int64)
    for m in range(n):
        pptr[pair[m] + 1] += 1
    for e in range(npairs):
        pptr[e + 1] += pptr[e]
    phead = pptr[:-1].copy()
    pflow = np.empty(n, dtype=np.int64)
    for m in range(n):
        e = pair[m]
        pflow[phead[e]] = m
        phead[e] += 1
    phead[:] = pptr[:-1]
    pin = np.empty(npairs, dtype=np.int64)
    pout = np.empty(npairs, dtype=np.int64)
    qptr = np.zeros(2 * nport + 1, dtype=np.int64)
    for e in range(npairs):
        f = first[e]
        h = core[f]
        pair_map[h * D + dpair[f]] = -1
        pin[e] = h * ports + src[f]
        pout[e] = nport + h * ports + dst[f]
        qptr[pin[e] + 1] += 1
        qptr[pout[e] + 1] += 1
    for p in range(2 * nport):
        qptr[p + 1] += qptr[p]
    qlen = np.zeros(2 * nport, dtype=np.int64)
    qpair = np.empty(2 * npairs, dtype=np.int64)
    qkey = np.empty(2 * npairs, dtype=np.int64)
    for e in range(npairs):  # pairs are numbered by their head's position: sorted
        for p in (pin[e], pout[e]):
            qpair[qptr[p] + qlen[p]] = e
            qkey[qptr[p] + qlen[p]] = pflow[pptr[e]]
            qlen[p] += 1
    return pair, pptr, pflow, phead, pin, pout, qptr, qpair, qkey, qlen


#: a rank key above every flow's
NO_KEY = 1 << 62


@numba.njit(cache=True)
def matching_pairs(order, key, src, dst, core, dpair, ports, nport, pair_map, pair_of):
    """The pair lists :func:`run_matching` takes for the flows of ``order`` (by rank),
    whose rank keys are ``key[order]`` (increasing): :func:`pair_lists`, with flows
    instead of positions (``pflow``), keys instead of positions (``qkey``),
    ``pair_of`` (per flow, filled for the flows of ``order``) as ``pair``, and ``fkey``
    beside ``pflow``: the key of each of its flows (``key[pflow]``, kept so by
    :func:`rekey_pairs`), so that searching and shifting a pair's flows by key reads
    one array in order instead of ``key`` at random."""
    pair, pptr, pflow, phead, pin, pout, qptr, qpair, qkey, qlen = pair_lists(
        order, src, dst, core, dpair, ports, nport, pair_map)
    fkey = np.empty(order.shape[0], dtype=np.int64)
    for m in range(order.shape[0]):
        pair_of[order[m]] = pair[m]
        pflow[m] = order[pflow[m]]
        fkey[m] = key[pflow[m]]
    for x in range(qkey.shape[0]):
        qkey[x] = key[order[qkey[x]]]
    return pair_of, pptr, pflow, phead, pin, pout, qptr, qpair, qkey, qlen, fkey


@numba.njit(cache=True)
def drop_passed(head, pairs, eligible):
    """The flows the pairs' heads passed since ``head`` (each pair's head index then)
    have finished: they are no longer eligible. O(pairs + those flows)."""
    phead = pairs[3]
    pflow = pairs[2]
    for e in range(phead.shape[0]):
        for j in range(head[e], phead[e]):
            eligible[pflow[j]] = False


#: a pair with more moved flows than this is sorted again whole in :func:`rekey_pairs`;
#: with fewer, each moves on its own (in the time of the flows it passes)
FEW_MOVED = 8


@numba.njit(cache=True)
def rekey_pairs(flows, new_key, pos, pairs):
    """The flows ``flows`` (not done, in the pair lists ``pairs``) take the rank keys
    ``new_key``: ``pos`` and the lists follow (each pair's flows left sorted by key, each
    port's pairs by their head's key), for work in proportion to the pairs they are in
    and the flows they pass in them (their keys read from ``fkey``, beside them). Keys
    stay distinct. Returns ``(changed, old)``: the pairs whose head's key changed and
    those old keys (what :func:`run_matching` repairs a kept matching around)."""
    pair, pptr, pflow, phead, pin, pout, qptr, qpair, qkey, qlen, fkey = pairs
    n = flows.shape[0]
    touched = np.empty(n, dtype=np.int64)
    old_head = np.empty(n, dtype=np.int64)  # (-1 until read: keys are >= 0)
    new_head = np.empty(n, dtype=np.bool_)
    moved = np.zeros(pin.shape[0], dtype=np.int64)  # per pair, its flows in ``flows``
    slot = np.empty(pin.shape[0], dtype=np.int64)  # per pair, its index in ``touched``
    nt = 0
    for m in range(n):
        e = pair[flows[m]]
        if moved[e] == 0:
            slot[e] = nt
            touched[nt] = e
            old_head[nt] = -1
            nt += 1
        moved[e] += 1
    # (a pair's old head is read, and whether it changed decided, while its list is at
    # hand: one pass over the pairs' lists)
    for m in range(n):
        f = flows[m]
        e = pair[f]
        if moved[e] <= FEW_MOVED:
            x = slot[e]
            lo = phead[e]
            if old_head[x] < 0:
                old_head[x] = fkey[lo]
            _move_in_pair(f, new_key[m], pos, pflow, fkey, lo, pptr[e + 1])
            new_head[x] = fkey[lo] != old_head[x]
        else:
            pos[f] = new_key[m]
    nc = 0
    for x in range(nt):
        e = touched[x]
        if moved[e] > FEW_MOVED:
            lo = phead[e]
            hi = pptr[e + 1]
            old_head[x] = fkey[lo]
            seg = pflow[lo:hi].copy()
            keys = np.empty(hi - lo, dtype=np.int64)
            for j in range(hi - lo):
                keys[j] = pos[seg[j]]
            idx = np.argsort(keys)
            for j in range(hi - lo):
                pflow[lo + j] = seg[idx[j]]
                fkey[lo + j] = keys[idx[j]]
            new_head[x] = fkey[lo] != old_head[x]
        moved[e] = 0
        if new_head[x]:
            touched[nc] = e
            old_head[nc] = old_head[x]
            nc += 1
    _requeue_all(touched[:nc], fkey, phead, pin, pout, qptr, qpair, qkey, qlen, moved)
    return touched[:nc], old_head[:nc]


@numba.njit(cache=True)
def _requeue_all(changed, fkey, phead, pin, pout, qptr, qpair, qkey, qlen, mark):
    """The pairs ``changed`` have new head keys: the pair list of each port they are in
    is sorted again by one merge (its other pairs stay in order), for work in proportion
    to the lists touched rather than to how far each head moved in them. ``mark`` is
    per-pair scratch, all 0 (left so)."""
    c = changed.shape[0]
    if c == 0:
        return
    nk = np.empty(c, dtype=np.int64)
    for x in range(c):
        nk[x] = fkey[phead[changed[x]]]
    by_key = np.argsort(nk)
    nport2 = qptr.shape[0] - 1
    cnt = np.zeros(nport2 + 1, dtype=np.int64)
    for x in range(c):
        e = changed[x]
        mark[e] = 1
        cnt[pin[e] + 1] += 1
        cnt[pout[e] + 1] += 1
    for p in range(nport2):
        cnt[p + 1] += cnt[p]
    start = cnt[:-1].copy()
    ins = np.empty(2 * c, dtype=np.int64)  # the changed pairs by port, by new key inside
    for y in range(c):
        x = by_key[y]
        e = changed[x]
        for p in (pin[e], pout[e]):
            ins[start[p]] = x
            start[p] += 1
    for p in range(nport2):
        a = cnt[p]
        b = cnt[p + 1]
        if a == b:
            continue
        lo = qptr[p]
        n = qlen[p]
        w = lo
        for j in range(lo, lo + n):  # the unchanged pairs, in order, to the front
            if mark[qpair[j]] == 0:
                qpair[w] = qpair[j]
                qkey[w] = qkey[j]
                w += 1
        i = w - 1  # then merged with the changed ones from the back
        k = b - 1
        for d in range(lo + n - 1, lo - 1, -1):
            if k >= a and (i < lo or nk[ins[k]] > qkey[i]):
                qkey[d] = nk[ins[k]]
                qpair[d] = changed[ins[k]]
                k -= 1
            else:
                qkey[d] = qkey[i]
                qpair[d] = qpair[i]
                i -= 1
    for x in range(c):
        mark[changed[x]] = 0


@numba.njit(**INL)
def _first_at_or_after(keys, lo, hi, x):
    """The first index ``i`` of ``lo .. hi - 1`` with ``keys[i] >= x`` (``hi`` if none):
    a binary search of the sorted segment ``keys[lo:hi]``, no slice made."""
    while lo < hi:
        mid = (lo + hi) // 2
        if keys[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


@numba.njit(**INL)
def _move_in_pair(f, key, pos, pflow, fkey, lo, hi):
    """Flow ``f``, in ``pflow[lo:hi]`` (sorted by their keys ``fkey[lo:hi]``), takes rank
    key ``key``: it moves to its place, the flows it passes shift by one (with their
    keys)."""
    old = pos[f]
    j = _first_at_or_after(fkey, lo, hi, old)
    while pflow[j] != f:  # (keys are distinct: the first is ``f``)
        j += 1
    pos[f] = key
    if key > old:
        while j + 1 < hi and fkey[j + 1] < key:
            pflow[j] = pflow[j + 1]
            fkey[j] = fkey[j + 1]
            j += 1
    else:
        while j > lo and fkey[j - 1] > key:
            pflow[j] = pflow[j - 1]
            fkey[j] = fkey[j - 1]
            j -= 1
    pflow[j] = f
    fkey[j] = key


@numba.njit(**INL)
def _requeue(port, old, new, e, qptr, qpair, qkey, qlen):
    """Pair ``e``'s head moved from position ``old`` to ``new`` (-1: no flow left): keep
    ``port``'s pair list sorted."""
    lo = qptr[port]
    hi = lo + qlen[port]
    i = _first_at_or_after(qkey, lo, hi, old)
    if new < 0:
        for j in range(i, hi - 1):
            qkey[j] = qkey[j + 1]
            qpair[j] = qpair[j + 1]
        qlen[port] -= 1
        return
    j = i
    while j + 1 < hi and qkey[j + 1] < new:
        qkey[j] = qkey[j + 1]
        qpair[j] = qpair[j + 1]
        j += 1
    qkey[j] = new
    qpair[j] = e


@numba.njit(**INL)
def _walk(port, k, limit, nport, qptr, qpair, qkey, qlen, pin, pout, owner, okey):
    """The first entry at or after ``k`` of ``port``'s pair list whose pair is not
    blocked at its other port (held by a flow ranked before the pair's head), or -1 if
    there is none ranked before ``limit`` (the position of the port's own holder: the
    cursor dies there)."""
    base = qptr[port]
    n = qlen[port]
    while k < n:
        key = qkey[base + k]
        if key >= limit:
            return -1
        e = qpair[base + k]
        o = pout[e] if port < nport else pin[e]
        if owner[o] < 0 or okey[o] >= key:
            return k
        k += 1
    return -1


@numba.njit(cache=True, inline="always")
def _cursor(hk, hp, hi, nh, port, after, qptr, qkey, qlen):
    """Push a cursor on ``port`` at its first pair whose head is positioned after ``after``."""
    if nh == hk.shape[0]:
        hk, hp, hi = heap_grown(hk, hp, hi, nh)
    return hk, hp, hi, _cursor_in(hk, hp, hi, nh, port, after, qptr, qkey, qlen)


@numba.njit(**INL)
def _cursor_in(hk, hp, hi, nh, port, after, qptr, qkey, qlen):
    """:func:`_cursor` on a heap with room for it; returns the new size."""
    lo = qptr[port]
    n = qlen[port]
    a = _first_at_or_after(qkey, lo, lo + n, after + 1) - lo  # (keys are integers)
    if a < n:
        return heap_insert(hk, hp, hi, nh, qkey[lo + a], port, a)
    return nh


@numba.njit(**INL)
def _saturated(key, owner, qlen, okey, nport):
    """True when every input port (or every output port) that still has flows is held by
    a flow ranked before ``key``: then no flow ranked at or after ``key`` can start."""
    open_in = False
    open_out = False
    for p in range(nport):
        if qlen[p] > 0 and (owner[p] < 0 or okey[p] >= key):
            open_in = True
        q = nport + p
        if qlen[q] > 0 and (owner[q] < 0 or okey[q] >= key):
            open_out = True
        if open_in and open_out:
            return False
    return True


#: :func:`_cursor_at`: no flow at or after the cursor's key can get a port
SATURATED = -2
#: :func:`_events`: a heap is full (the caller grows it and resumes)
NEED_ROOM = -1


@numba.njit(**INL)
def _cursor_at(key, port, k, steps, owner, okey, pin, pout, qptr, qpair, qkey, qlen, nport):
    """The cursor ``(key, port, k)`` just popped from the heap: returns ``(k, e, q,
    steps)``, ``e`` the pair that takes ``port`` and its other port ``q`` now (displacing
    their holders, ranked after it); else ``e`` is -1 and the cursor goes on at entry
    ``k`` of the port's list if ``k >= 0`` (the caller pushes it again) or dies, or ``e``
    is :data:`SATURATED` (then every cursor dies). ``steps`` counts the cursors looked
    at (every 32nd checks :func:`_saturated`). Ranks are compared through ``okey``, the
    key of each held port's holder. No arrays out: no reference counts."""
    lo = qptr[port]
    n = qlen[port]
    if k >= n or qkey[lo + k] != key:
        # the list moved under the cursor (a displaced flow finished, its pair's head
        # moved on): go on from the first pair at or after ``key``
        a = _first_at_or_after(qkey, lo, lo + n, key) - lo
        return (a if a < n else -1), -1, -1, steps
    steps += 1
    if steps % 32 == 0 and _saturated(key, owner, qlen, okey, nport):
        return -1, SATURATED, -1, steps
    held = owner[port] >= 0
    if held and okey[port] <= key:
        return -1, -1, -1, steps  # held by a flow of higher priority: it dies
    e = qpair[lo + k]
    q = pout[e] if port < nport else pin[e]
    if owner[q] >= 0 and okey[q] < key:
        # blocked at its other port: walk on to the first pair that is not (or until
        # the port's holder outranks the walk)
        return (_walk(port, k + 1, okey[port] if held else NO_KEY, nport, qptr, qpair,
                      qkey, qlen, pin, pout, owner, okey), -1, -1, steps)
    return k, e, q, steps


@numba.njit(**INL)
def _holder_keys(owner, pos, pair, pout, okey, nport):
    """``okey`` := per held port, the rank key of its holder."""
    for p in range(nport):
        f = owner[p]
        if f >= 0:
            okey[p] = okey[pout[pair[f]]] = pos[f]


@numba.njit(cache=True)
def _repair(hk, hp, hi, nh, owner, okey, pos, pair, pflow, phead, pin, pout, qptr, qpair,
            qkey, qlen, nport):
    """Process the heap's cursors in rank order on the matching ``owner`` alone (no rates,
    no bytes): the greedy matching of the pairs' current heads, when ``owner`` is that
    matching but for the decisions the cursors reach (see :func:`run_matching`). A
    displaced flow frees its other port, with a cursor after it. Returns the (grown) heap
    arrays; the heap is left empty."""
    steps = 0
    while nh > 0:
        key, port, k, nh = heap_pop(hk, hp, hi, nh)
        k, e, q, steps = _cursor_at(key, port, k, steps, owner, okey, pin, pout, qptr,
                                    qpair, qkey, qlen, nport)
        if e == SATURATED:
            break
        if e < 0:
            if k >= 0:
                hk, hp, hi, nh = heap_push(hk, hp, hi, nh, qkey[qptr[port] + k], port, k)
            continue
        own = owner[port]
        oq = owner[q]
        for d in (own, oq):
            if d >= 0 and owner[pin[pair[d]]] == d:
                di = pin[pair[d]]
                do = pout[pair[d]]
                owner[di] = -1
                owner[do] = -1
                other = do if (di == port or di == q) else di
                hk, hp, hi, nh = _cursor(hk, hp, hi, nh, other, pos[d], qptr, qkey, qlen)
        g = pflow[phead[e]]
        owner[port] = g
        owner[q] = g
        okey[port] = okey[q] = key
    return hk, hp, hi


@numba.njit(cache=True)
def _repair_cursors(hk, hp, hi, owner, pos, pair, pptr, pflow, phead, pin, pout, qptr, qkey,
                    qlen, changed, changed_old, pend_port, pend_after, n_pend):
    """The cursors that repair a kept matching: one on each port left free and not yet
    repaired when the last run returned (``pend_*``), and for each pair whose head's key
    changed (``changed``, old keys ``changed_old``) one at its new head and, if it was
    matched (it leaves the matching), one after its old key on each of its ports.
    Returns the heap (arrays and size)."""
    nh = 0
    for x in range(n_pend):
        hk, hp, hi, nh = _cursor(hk, hp, hi, nh, pend_port[x], pend_after[x], qptr, qkey,
                                 qlen)
    for x in range(changed.shape[0]):
        e = changed[x]
        f = owner[pin[e]]
        if f >= 0 and pair[f] == e:
            owner[pin[e]] = -1
            owner[pout[e]] = -1
            for p in (pin[e], pout[e]):
                hk, hp, hi, nh = _cursor(hk, hp, hi, nh, p, changed_old[x], qptr, qkey, qlen)
    for x in range(changed.shape[0]):
        # (after every removal) a pair blocked now by a flow ranked before its head needs
        # no cursor: whatever frees that port later has one that reaches the pair
        e = changed[x]
        if phead[e] < pptr[e + 1]:
            key = pos[pflow[phead[e]]]
            oi = owner[pin[e]]
            oo = owner[pout[e]]
            if (oi < 0 or pos[oi] > key) and (oo < 0 or pos[oo] > key):
                hk, hp, hi, nh = _cursor(hk, hp, hi, nh, pin[e], key - 1, qptr, qkey, qlen)
    return hk, hp, hi, nh


@numba.njit(**INL)
def _due(f, tl, rem, rate, size):
    """The time flow ``f`` (``rem[f]`` bytes left at ``tl``, sending at ``rate[f]``) is
    down to the finishing tolerance of :func:`advance_flow`."""
    left = rem[f] - (EPS_BYTES + 1e-12 * size[f])
    return tl + (left if left > 0.0 else 0.0) / rate[f]


@numba.njit(**INL)
def _vacate(p, f, pos, pair, pptr, fkey, phead, pout, qptr, qpair, qkey, qlen, owner):
    """Flow ``f``, holding input port ``p``, has finished: its two ports are free and its
    pair's head moves on (both ports' pair lists stay sorted). Returns its output port."""
    e = pair[f]
    po = pout[e]
    owner[p] = -1
    owner[po] = -1
    phead[e] += 1
    new = fkey[phead[e]] if phead[e] < pptr[e + 1] else -1
    _requeue(p, pos[f], new, e, qptr, qpair, qkey, qlen)
    _requeue(po, pos[f], new, e, qptr, qpair, qkey, qlen)
    return po


@numba.njit(**INL)
def _vacate_into(p, f, pos, pair, pptr, fkey, phead, pout, qptr, qpair, qkey, qlen, owner,
                 ports, after, n):
    """:func:`_vacate`, and its two freed ports appended to ``ports[n:]``, each with
    ``after`` = ``pos[f]`` (where a cursor on it starts). Returns the new count."""
    po = _vacate(p, f, pos, pair, pptr, fkey, phead, pout, qptr, qpair, qkey, qlen, owner)
    ports[n] = p
    ports[n + 1] = po
    after[n] = pos[f]
    after[n + 1] = pos[f]
    return n + 2


@numba.njit(**INL)
def _catch_up(t, nport, owner, tl, pos, pair, pptr, fkey, phead, pout, qptr, qpair, qkey,
              qlen, rem, size, sent, coflow, done, flow_completion, left, coflow_completion,
              rate, core, seg_start, record, seg_flow, seg_core, seg_t0, seg_t1, seg_rate,
              n_seg, pend_port, pend_after, n_pend):
    """Bring every sending flow's remaining bytes (and its coflow's sent bytes) up to
    ``t``: the caller reads them when :func:`run_matching` returns. A flow that rounding
    finishes here leaves the matching: its ports join ``pend_*`` (free, not repaired).
    Returns (n_seg, a coflow completed, n_pend)."""
    completed = False
    for p in range(nport):
        f = owner[p]
        if f >= 0 and tl[p] < t:
            n_seg, fin, cd = advance_flow(
                f, t - tl[p], t, rem, size, sent, coflow, done, flow_completion, left,
                coflow_completion, rate, core, seg_start, record, seg_flow, seg_core,
                seg_t0, seg_t1, seg_rate, n_seg)
            tl[p] = t
            if fin:
                n_pend = _vacate_into(p, f, pos, pair, pptr, fkey, phead, pout, qptr, qpair,
                                      qkey, qlen, owner, pend_port, pend_after, n_pend)
                completed = completed or cd
    return n_seg, completed, n_pend


#: relative margin below a byte limit that :func:`_limit_time`'s ``clear`` keeps: far
#: above the 1e-12 of its test and the rounding of its sums
LIMIT_CLEAR = 1e-9


@numba.njit(**INL)
def _limit_time(t, nport, owner, tl, orate, ocof, byte_limit, sent, ctot, cpend, seen):
    """``(when, clear)``: the earliest time (``t`` if one has, else at least the next
    representable time) at which a coflow with a byte limit reaches it (to 1e-12 of it),
    given the sending flows (the holders of the input ports, whose bytes since ``tl`` of
    their port are not in ``sent`` yet; their rates and coflows are ``orate`` and
    ``ocof`` of the port, read there rather than at random in the arrays of every flow),
    inf if none will; and the time at which the first of them comes within
    :data:`LIMIT_CLEAR` of its limit (``t`` if one is already).

    Before ``clear``, with these flows or some of them sending, no coflow is within that
    margin of its limit: a scan then finds no limit reached, whatever order its sums
    take (their rounding is some ulps), and :func:`run_matching` skips it. ``ctot`` and
    ``cpend`` are per-coflow scratch, left zeroed; ``seen`` scratch of ``nport``."""
    n = 0
    for p in range(nport):
        if owner[p] >= 0:
            k = ocof[p]
            if byte_limit[k] < np.inf:
                if ctot[k] == 0.0:
                    seen[n] = k
                    n += 1
                ctot[k] += orate[p]
                cpend[k] += orate[p] * (t - tl[p])
    out = np.inf
    clear = np.inf
    for x in range(n):
        k = seen[x]
        if ctot[k] > 0.0:  # (a zero rate adds nothing, and may add k twice to seen)
            s = sent[k] + cpend[k]
            if s >= byte_limit[k] * (1 - 1e-12):
                out = t
            else:
                # (at least the next representable time: late in a long run a crossing
                # less than half an ulp of ``t`` away rounds to ``t``, where no byte moves,
                # and the run would stop there for the limit again and again)
                u = t + (byte_limit[k] - s) / ctot[k]
                out = min(out, max(u, np.nextafter(t, np.inf)))
            near = byte_limit[k] - (LIMIT_CLEAR * byte_limit[k] + EPS_BYTES)
            clear = min(clear, t + max(near - s, 0.0) / ctot[k])
            ctot[k] = 0.0
            cpend[k] = 0.0
    return out, clear


@numba.njit(cache=True)
def _greedy(owner, pos, pptr, pflow, phead, pin, pout, qlen, nport):
    """``owner`` := the greedy matching of the pairs keyed by their heads' rank keys,
    built from scratch (O(pairs))."""
    for p in range(2 * nport):
        owner[p] = -1
    # greedy over pairs by head position; stop once every input (or output) port
    # with pairs is taken or has no pair further down
    passed = np.zeros(2 * nport, dtype=np.int64)
    open_in = 0
    open_out = 0
    for p in range(nport):
        if qlen[p] > 0:
            open_in += 1
        if qlen[nport + p] > 0:
            open_out += 1
    # live pairs by head position (pair numbers, unless heads moved since pair_lists)
    live = np.empty(pin.shape[0], dtype=np.int64)
    heads = np.empty(pin.shape[0], dtype=np.int64)
    n_live = 0
    is_sorted = True
    for e in range(pin.shape[0]):
        if phead[e] < pptr[e + 1]:
            live[n_live] = e
            heads[n_live] = pos[pflow[phead[e]]]
            if n_live > 0 and heads[n_live] < heads[n_live - 1]:
                is_sorted = False
            n_live += 1
    if not is_sorted:
        live[:n_live] = live[:n_live][np.argsort(heads[:n_live])]
    for x in range(n_live):
        if open_in == 0 or open_out == 0:
            break
        e = live[x]
        pi = pin[e]
        po = pout[e]
        free_i = owner[pi] < 0
        free_o = owner[po] < 0
        passed[pi] += 1
        passed[po] += 1
        if free_i and free_o:
            f = pflow[phead[e]]
            owner[pi] = f
            owner[po] = f
            open_in -= 1
            open_out -= 1
        else:
            if free_i and passed[pi] == qlen[pi]:
                open_in -= 1
            if free_o and passed[po] == qlen[po]:
                open_out -= 1


@numba.njit(**INL)
def _serve_cursors(t, hk, hp, hi, nh, dk, dp, df, nd, steps, owner, okey, mate, orate,
                   ocof, tl, due, pos, pair, pptr, pflow, fkey, phead, pin, pout, qptr,
                   qpair, qkey, qlen, nport, rem, size, sent, coflow, done, flow_completion,
                   left, coflow_completion, rate, core, core_cap, pinned, stops, seg_start,
                   record, seg_flow, seg_core, seg_t0, seg_t1, seg_rate, n_seg):
    """:func:`run_matching`'s repair at time ``t``: the cursors of the heap ``hk, hp, hi``
    in rank order, each starting the pair it reaches (displacing the holders of its
    ports: their bytes up to ``t``, then a cursor on the port the new flow does not take)
    with its entry on the due heap ``dk, dp, df``.

    Returns ``(nh, nd, steps, n_seg, completed, coflow_done)``; ``nh > 0`` when a heap
    has no room for what one more cursor may push (see :func:`_events`)."""
    ports_per_core = nport // core_cap.shape[0]
    completed = False
    coflow_done = False
    while nh > 0:
        if nh + 2 > hk.shape[0] or nd == dk.shape[0]:
            break  # (one cursor pushes at most two more after its own pop, one due)
        key, port, k, nh = heap_pop(hk, hp, hi, nh)
        k, e, q, steps = _cursor_at(key, port, k, steps, owner, okey, pin, pout, qptr,
                                    qpair, qkey, qlen, nport)
        if e == SATURATED:
            nh = 0  # no flow at or after `key` can get a port: every cursor dies
            break
        if e < 0:
            if k >= 0:  # (room: it was popped)
                nh = heap_insert(hk, hp, hi, nh, qkey[qptr[port] + k], port, k)
            continue
        g = pflow[phead[e]]
        h = pin[e] // ports_per_core  # (the pair's core: ``core[g]``)
        for x in (port, q):
            d = owner[x]
            if d >= 0 and rate[d] > 0.0:
                # displaced: its bytes up to now, then it frees its ports; a cursor
                # on the one g does not take
                other = mate[x]
                di = x if x < nport else other
                do = other if x < nport else x
                due[di] = -1.0
                fin = tl[di] + rem[d] / rate[d]
                n_seg, finished, cdone = advance_flow(
                    d, np.inf if fin - t <= TIE * t else t - tl[di], t, rem, size,
                    sent, coflow, done, flow_completion,
                    left, coflow_completion, rate, core, seg_start, record, seg_flow,
                    seg_core, seg_t0, seg_t1, seg_rate, n_seg)
                if finished:
                    # (it is due at this instant: it ends now; its pair's next flow
                    # is ranked after g, so the entries that move in the port lists
                    # are after the cursor's)
                    _vacate(di, d, pos, pair, pptr, fkey, phead, pout, qptr, qpair,
                            qkey, qlen, owner)
                    if cdone:
                        completed = True
                        coflow_done = coflow_done or stops[coflow[d]]
                else:
                    owner[di] = -1
                    owner[do] = -1
                    if record:
                        n_seg = emit(record, d, core[d], seg_start[d], t, rate[d],
                                     seg_flow, seg_core, seg_t0, seg_t1, seg_rate,
                                     n_seg)
                        seg_start[d] = t
                    rate[d] = 0.0
                nh = _cursor_in(hk, hp, hi, nh, other, okey[x], qptr, qkey, qlen)
        owner[port] = g
        owner[q] = g
        okey[port] = okey[q] = key
        mate[port] = q
        mate[q] = port
        rate[g] = core_cap[h]
        if record:
            seg_start[g] = t
        if pinned[g] < 0:
            pinned[g] = h
        gi = pin[e]
        orate[gi] = core_cap[h]
        ocof[gi] = coflow[g]
        tl[gi] = t
        due[gi] = _due(g, t, rem, rate, size)
        nd = heap_insert(dk, dp, df, nd, due[gi], gi, g)
    return nh, nd, steps, n_seg, completed, coflow_done


@numba.njit(**INL)
def _events(t, stop_time, resume, hk, hp, hi, nh, dk, dp, df, nd, steps, completed,
            coflow_done, events, n_seg, owner, okey, mate, orate, ocof, tl, due, stash,
            stash_fin, freed, freed_after, pos, pair, pptr, pflow, fkey, phead, pin, pout,
            qptr, qpair, qkey, qlen, nport, rem, size, sent, coflow, done, flow_completion,
            left, coflow_completion, rate, core, core_cap, pinned, stops, has_limit,
            byte_limit, ctot, cpend, seen, seg_start, record, seg_flow, seg_core, seg_t0,
            seg_t1, seg_rate):
    """:func:`run_matching`'s events from ``t`` (its state in the arguments): returns
    ``(t, reason, resume, nh, nd, steps, completed, coflow_done, events, n_seg)``.

    ``reason`` :data:`NEED_ROOM`: the repair of the event at ``t`` stopped for a full
    heap; the caller grows it and calls again with ``resume`` (the repair goes on).
    The loop is a function of its own, taking the heaps as arguments it never
    reassigns: in a loop where a full heap is replaced by a longer one, every heap
    operation cost atomic reference counts of the arrays (numba's pruning leaves
    them), a sixth of the run on FB2010. The cursor heap is empty at each event and at
    least ``4 * nport`` long: the freed ports' cursors fit."""
    sat = seg_flow.shape[0]
    while True:
        if not resume:
            if record and n_seg + 4 * nport + 2 > sat:
                return (t, SEG_FULL, False, nh, nd, steps, completed, coflow_done, events,
                        n_seg)
            # the next completion: the flows due before the earliest finish among them
            best = np.inf
            n_st = 0
            while nd > 0 and dk[0] <= best:
                key, p, f, nd = heap_pop(dk, dp, df, nd)
                if owner[p] != f or due[p] != key:
                    continue  # it stopped (or finished) since this entry was pushed
                due[p] = -1.0
                fin = tl[p] + rem[f] / rate[f]
                if fin < best:
                    best = fin
                stash[n_st] = p
                stash_fin[n_st] = fin
                n_st += 1
            clear = np.inf
            if has_limit:
                lim, clear = _limit_time(t, nport, owner, tl, orate, ocof, byte_limit, sent,
                                         ctot, cpend, seen)
                best = min(best, lim)
            if best == np.inf and stop_time == np.inf:
                return (t, COFLOW_DONE if completed else STUCK, False, nh, nd, steps,
                        completed, coflow_done, events, n_seg)
            events += 1
            t_new = stop_time if best >= stop_time or joins_stop(best, stop_time,
                                                                core_cap) else best
            # (a stop a hair after ``best`` joins it: the flows due by then finish with it)
            while nd > 0 and dk[0] <= t_new:
                key, p, f, nd = heap_pop(dk, dp, df, nd)
                if owner[p] == f and due[p] == key:
                    due[p] = -1.0
                    stash[n_st] = p
                    stash_fin[n_st] = tl[p] + rem[f] / rate[f]
                    n_st += 1
            coflow_done = False
            n_freed = 0
            for x in range(n_st):
                p = stash[x]
                f = owner[p]
                # the flows finishing at ``t_new`` send all they have left: ``t_new - tl``
                # may round to less
                n_seg, finished, cdone = advance_flow(
                    f, np.inf if stash_fin[x] <= t_new else t_new - tl[p], t_new, rem, size,
                    sent, coflow, done, flow_completion, left, coflow_completion, rate, core,
                    seg_start, record, seg_flow, seg_core, seg_t0, seg_t1, seg_rate, n_seg)
                tl[p] = t_new
                if not finished:
                    due[p] = _due(f, t_new, rem, rate, size)
                    nd = heap_insert(dk, dp, df, nd, due[p], p, f)  # (room: it was popped)
                    continue
                n_freed = _vacate_into(p, f, pos, pair, pptr, fkey, phead, pout, qptr, qpair,
                                       qkey, qlen, owner, freed, freed_after, n_freed)
                if cdone:
                    completed = True
                    coflow_done = coflow_done or stops[coflow[f]]
            t = t_new
            # (before ``clear`` no coflow can have come near its limit: no scan)
            limit_hit = has_limit and t >= clear and _limit_time(
                t, nport, owner, tl, orate, ocof, byte_limit, sent, ctot, cpend,
                seen)[0] <= t
            # cursors on the freed ports (after every list is up to date)
            for m in range(n_freed):  # (room: the heap is empty, 4 * nport long)
                nh = _cursor_in(hk, hp, hi, nh, freed[m], freed_after[m], qptr, qkey, qlen)
            if coflow_done or limit_hit or t >= stop_time:
                # (at the stop time the next plan decides what starts now: nothing is pinned
                # before it sends)
                reason = (COFLOW_DONE if coflow_done else BYTE_LIMIT if limit_hit
                          else STOP_TIME)
                return (t, reason, False, nh, nd, steps, completed, coflow_done, events,
                        n_seg)
            # repair the matching, cursors in rank order
            steps = 0
        resume = False
        nh, nd, steps, n_seg, c_any, c_stop = _serve_cursors(
            t, hk, hp, hi, nh, dk, dp, df, nd, steps, owner, okey, mate, orate, ocof, tl,
            due, pos, pair, pptr, pflow, fkey, phead, pin, pout, qptr, qpair, qkey, qlen,
            nport, rem, size, sent, coflow, done, flow_completion, left, coflow_completion,
            rate, core, core_cap, pinned, stops, seg_start, record, seg_flow, seg_core,
            seg_t0, seg_t1, seg_rate, n_seg)
        completed = completed or c_any
        coflow_done = coflow_done or c_stop
        if nh > 0:
            return t, NEED_ROOM, True, nh, nd, steps, completed, coflow_done, events, n_seg
        if coflow_done:  # a displaced flow's coflow completed
            return (t, COFLOW_DONE, False, nh, nd, steps, completed, coflow_done, events,
                    n_seg)


@numba.njit(cache=True)
def run_matching(t, stop_time, pos, src, dst, coflow, size, core, core_cap,
                 rem, rate, done, pinned, flow_completion, left, sent, byte_limit,
                 has_limit, coflow_completion, stops, record, seg_start, seg_flow,
                 seg_core, seg_t0, seg_t1, seg_rate, n_seg, pairs, owner, prev_running,
                 repair, changed, changed_old, pend_port, pend_after, n_pend):
    """Advance under the priority-greedy matching until a coflow ``k`` with ``stops[k]``
    completes (or the last flow finishes), a byte limit is crossed or ``stop_time``.
    Returns (t, reason, n_seg, inner_events, n_pend).

    Ports are numbered ``h*P + i`` (input i of core h) and ``C*P + h*P + j`` (output j);
    ``pos`` is each flow's rank key (smaller first; -1: not in the plan) and ``pairs``
    the plan's :func:`matching_pairs`, ``owner`` the flow holding each port or -1. The
    matching is first built from the pairs' current heads, or with ``repair`` repaired:
    ``owner`` is then the matching the last call returned, over the same pairs, whose
    ports ``pend_port[:n_pend]`` were freed after pairs ranked up to ``pend_after`` and
    not repaired yet, and whose pairs ``changed`` have new head keys (their old ones
    ``changed_old``, :func:`rekey_pairs`); cursors from those places give the greedy
    matching of the new keys, as they do after a completion, for work in proportion to
    what changed instead of the number of pairs. On return ``pend_*`` lists the freed
    ports this call leaves unrepaired. ``prev_running`` lists the flows sending before
    (their segments end if they stop).

    Only the first flow not done of a (core, src, dst) pair can be in the greedy
    matching (the later ones meet the same two ports, taken by then), so the greedy
    matching of flows is the greedy matching of pairs keyed by their head flow: the
    cursors walk pairs, not flows.

    An event touches only the flows whose rate changes or that finish: a sending flow's
    remaining bytes are brought up to date when it finishes, stops or the call returns
    (``tl``, per input port: the time its holder's ``rem`` refers to), and the next
    completion comes from a heap keyed by the time each sending flow is down to the
    finishing tolerance (``due``: its holder's live entry; entries of flows that stopped
    since are skipped). Only a plan with byte limits scans the sending flows at each
    event, for the limits' crossing times.
    """
    pair, pptr, pflow, phead, pin, pout, qptr, qpair, qkey, qlen, fkey = pairs
    cores = core_cap.shape[0]
    nport = owner.shape[0] // 2
    hk = np.empty(max(1024, 4 * nport), dtype=np.int64)
    hp = np.empty(hk.shape[0], dtype=np.int64)
    hi = np.empty(hk.shape[0], dtype=np.int64)
    completed = False  # a coflow completed (nothing left to send then is no deadlock)
    nh = 0
    ctot = np.zeros(byte_limit.shape[0])
    cpend = np.zeros(byte_limit.shape[0] if has_limit else 0)
    seen = np.empty(nport if has_limit else 0, dtype=np.int64)
    events = 0
    freed = np.empty(2 * nport, dtype=np.int64)
    freed_after = np.empty(2 * nport, dtype=np.int64)
    # per port, its holder's key (read where the cursors compare ranks, instead of the
    # holder's own entry at random in an array of every flow); the repair keeps it
    okey = np.empty(2 * nport, dtype=np.int64)
    if repair:
        hk, hp, hi, nh = _repair_cursors(hk, hp, hi, owner, pos, pair, pptr, pflow, phead,
                                         pin, pout, qptr, qkey, qlen, changed, changed_old,
                                         pend_port, pend_after, n_pend)
        _holder_keys(owner, pos, pair, pout, okey, nport)
        hk, hp, hi = _repair(hk, hp, hi, nh, owner, okey, pos, pair, pflow, phead, pin,
                             pout, qptr, qpair, qkey, qlen, nport)
        nh = 0
    else:
        _greedy(owner, pos, pptr, pflow, phead, pin, pout, qlen, nport)
        _holder_keys(owner, pos, pair, pout, okey, nport)
    n_pend = 0
    # flows whose rate changes: stopped ones first, then started ones
    for m in range(prev_running.shape[0]):
        f = prev_running[m]
        if rate[f] > 0.0 and not done[f]:
            if pos[f] < 0 or owner[core[f] * (nport // cores) + src[f]] != f:
                n_seg = emit(record, f, core[f], seg_start[f], t, rate[f], seg_flow,
                             seg_core, seg_t0, seg_t1, seg_rate, n_seg)
                rate[f] = 0.0
                seg_start[f] = t
    # per port, its holder's other port (read at a displacement instead of the flow's
    # own entries, at random in arrays of every flow)
    mate = np.empty(2 * nport, dtype=np.int64)
    orate = np.empty(nport)  # (and per input port its holder's rate and coflow)
    ocof = np.empty(nport, dtype=np.int64)
    for p in range(nport):
        f = owner[p]
        if f >= 0:
            mate[p] = pout[pair[f]]
            mate[pout[pair[f]]] = p
    # the due heap: (due time, input port, its holder)
    tl = np.empty(nport)
    due = np.full(nport, -1.0)
    dk = np.empty(nport + 16)
    dp = np.empty(nport + 16, dtype=np.int64)
    df = np.empty(nport + 16, dtype=np.int64)
    nd = 0
    stash = np.empty(nport, dtype=np.int64)
    stash_fin = np.empty(nport)
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
            orate[p] = r
            ocof[p] = coflow[f]
            tl[p] = t
            due[p] = _due(f, t, rem, rate, size)
            dk, dp, df, nd = heap_push(dk, dp, df, nd, due[p], p, f)
    resume = False
    steps = 0
    coflow_done = False
    while True:
        t, reason, resume, nh, nd, steps, completed, coflow_done, events, n_seg = _events(
            t, stop_time, resume, hk, hp, hi, nh, dk, dp, df, nd, steps, completed,
            coflow_done, events, n_seg, owner, okey, mate, orate, ocof, tl, due, stash,
            stash_fin, freed, freed_after, pos, pair, pptr, pflow, fkey, phead, pin, pout,
            qptr, qpair, qkey, qlen, nport, rem, size, sent, coflow, done, flow_completion,
            left, coflow_completion, rate, core, core_cap, pinned, stops, has_limit,
            byte_limit, ctot, cpend, seen, seg_start, record, seg_flow, seg_core, seg_t0,
            seg_t1, seg_rate)
        if reason != NEED_ROOM:
            break
        if nh + 2 > hk.shape[0]:
            hk, hp, hi = heap_grown(hk, hp, hi, nh)
        if nd == dk.shape[0]:
            dk, dp, df = heap_grown(dk, dp, df, nd)
    # the cursors not processed: their ports are free, not repaired
    for x in range(nh):
        pend_port[n_pend] = hp[x]
        pend_after[n_pend] = hk[x] - 1
        n_pend += 1
    # every sending flow up to now: the caller reads rem and sent
    n_seg, _, n_pend = _catch_up(t, nport, owner, tl, pos, pair, pptr, fkey, phead, pout,
                                 qptr, qpair, qkey, qlen, rem, size, sent, coflow, done,
                                 flow_completion, left, coflow_completion, rate, core,
                                 seg_start, record, seg_flow, seg_core, seg_t0, seg_t1,
                                 seg_rate, n_seg, pend_port, pend_after, n_pend)
    return t, reason, n_seg, events, n_pend
