"""Max-min fair sharing over (core, src, dst) pairs, kept up to date from event to event.

Without rate caps every flow of a (core, src, dst) *pair* meets the same two links, so
max-min fairness gives all of them one rate, and the progressive filling of the rule
(``controller.rates.fair_rates``, flow by flow) runs over pairs weighted by their number
of flows. The filling raises one *level* for every pair not yet frozen; a port freezes
when the level reaches its capacity left by its frozen pairs divided by its flows not
frozen, and its pairs freeze at that level. So every pair sends at the level of the first
of its two ports to freeze, its *bottleneck*, and the allocation is a sequence of ports
with nondecreasing levels.

At an event some pairs lose flows and the allocation has to be redone. Three facts keep
an event far cheaper than a filling from scratch that then advances every pair:

* **A guessed order is checked in O(ports).** Take the ports in any order and compute each
  one's level from the pairs of the ports before it (the filling's triangular system). If
  the levels come out nondecreasing and every port passed with no pair left to freeze is
  within its capacity, every pair has a bottleneck (a saturated port on which its rate is
  the largest), which characterises the max-min fair allocation, and that allocation is
  unique (Bertsekas and Gallager, *Data Networks*, 2nd ed., section 6.5.2). An event moves
  few ports in the order (FB2010 with every release at 0: under one port per event on
  average, mostly by one or two places), and those that move are mostly the event's
  *movers*, the ports whose flows changed. So a filling first takes the ports in their
  previous order with the movers as the only other candidates at each step; if that
  fails its check (about one event in nine on FB2010), each step chooses among the next
  :data:`WINDOW` ports of the previous order, and checks; if that fails too the event's
  filling is done again with every port a candidate, which is the rule's own scan.
* **Dense blocks.** The ports split into connected components (pairs are the edges); a
  component's flow counts are a dense inputs x outputs block, so freezing a port updates
  the other side with one vector loop.
* **Rates are implicit.** A pair's rate is its bottleneck's level. Each port keeps ``S``,
  the bytes it has served per flow (the integral of its level, summed with Kahan's
  compensation and rebased before it grows large), and each pair an offset ``Z``: its
  flows have sent ``S - Z`` of their bottleneck since the pair was built. An event
  advances ports, not pairs, and touches only the pairs whose bottleneck changed (found
  from the ports that moved in the order) and those whose flows finish. A component's next
  completion is the earliest, over its ports, of the time the port's first pair needs.

A pair's flows are sorted by bytes left; all are served alike, so they finish in that
order. The levels are the rule's (the same sums, in the same order unless a window or a tie
picks another order of equal levels), and completion times agree with the per-flow rescan
up to floating-point rounding: the bytes a flow has sent are ``S - Z`` here, a running sum
of its own there. ``tests/test_simulator.py`` checks both against each other.
"""
from __future__ import annotations

from collections import namedtuple

import numba
import numpy as np

from controller.indexing import no_wraparound
from emulate.sim.matching import (COFLOW_DONE, EPS_BYTES, INL, LEAF, SEG_FULL, STOP_TIME,
                                  STUCK, emit, next_event, pair_lists, set_rate)

# the kernels never index with a negative number
no_wraparound(__name__)

#: ports of the previous order each step of a filling chooses among
WINDOW = 8
#: a guessed order's levels may decrease by this fraction of the link rate, and a port
#: with no pair left to freeze exceed its capacity by it (rounding of equal levels)
TOL = 1e-12
#: a port's bytes served per flow are rebased before they reach this (2^26 bytes: the
#: rounding of a difference stays near 1e-8 bytes, far below EPS_BYTES)
REBASE = 2.0 ** 26
#: a candidate whose level's numerator exceeds (1 + ABOVE) times the least level so far
#: times its denominator is above that level whatever the rounding, and is not divided
ABOVE = 1e-9
#: at most this many ports whose flows changed at an event are followed by name
MOVERS = 8
#: the position of a port not in the order
NEVER = 1 << 60

#: The kernel's state (arrays; built by :func:`build`). Flows are numbered by their
#: position ``m`` in ``live``; pairs ``e``; ports by their index ``x`` in the
#: components' blocks (component ``c`` owns ``loff[c]:loff[c+1]``: its inputs, then its
#: outputs). Per flow: ``live``, ``pair``, ``rem0`` (bytes left at build); ``alive`` the
#: positions not known done. Per pair: its flows ``pflow[head:head+cnt]`` (by ``rem0``), ports
#: ``prow``/``pcol``, bottleneck ``att``, offset ``Z``, key ``K`` (the bottleneck's ``S``
#: when the first flow finishes), ``hthr`` (that flow's finishing slack), ``xrec`` (the rate
#: last recorded in segments). Per component: ``nr``/``ncl`` inputs and outputs, port and
#: block offsets ``loff``/``doff``, ``cap``, ``tc`` (time its ports
#: are served to), ``tnext`` (its next completion), ``nseq``, ``kmin`` (first position of
#: a port whose flows changed). Blocks: ``N``/``NT`` flow counts by rows / columns,
#: ``PI``/``PIT`` pair numbers. Per port: ``gport`` (the simulator's port), ``pcnt``
#: (flows), ``lev``, ``frozen``, ``seqpos`` (position in ``seq``), ``was`` (frozen before
#: the filling), ``oldpos``, ``S``/``Sc`` (bytes served per flow, compensation),
#: ``Tmin`` (least key of its pairs), ``dirty``; scratch ``used``, ``ucnt``, ``cand``,
#: ``newseq``, ``ismv``. ``mv``: the movers of the event (ports whose flows changed;
#: their number last, above :data:`MOVERS` when too many to follow). ``counters``: live
#: flows, alive positions, fillings, fillings redone with every port a candidate,
#: fillings the in-order pass refused; ``thr``: the largest finishing slack.
FairState = namedtuple("FairState", [
    "live", "pair", "rem0", "alive", "pflow", "head", "cnt", "prow", "pcol", "att", "Z",
    "K", "hthr", "xrec", "prb", "pcb", "KR", "KC", "nr", "ncl", "loff", "doff", "cap", "tc", "tnext",
    "nseq", "kmin", "N", "NT", "PI", "PIT", "gport", "pcomp", "pcnt", "lev", "frozen",
    "seqpos", "was", "oldpos", "S", "Sc", "Tmin", "dirty", "used", "ucnt", "cand", "seq",
    "newseq", "counters", "thr", "mv", "ismv"])


@numba.njit(cache=True)
def sort_pair_flows(pptr, pflow, key):
    """Sort each pair's positions ``pflow[pptr[e]:pptr[e+1]]`` by ``key`` (stable)."""
    for e in range(pptr.shape[0] - 1):
        lo, hi = pptr[e], pptr[e + 1]
        if hi - lo <= 32:
            for a in range(lo + 1, hi):
                v = pflow[a]
                b = a
                while b > lo and key[pflow[b - 1]] > key[v]:
                    pflow[b] = pflow[b - 1]
                    b -= 1
                pflow[b] = v
        else:
            idx = np.argsort(key[pflow[lo:hi]], kind="mergesort")
            pflow[lo:hi] = pflow[lo:hi][idx]


@numba.njit(**LEAF)
def _root(parent, p):
    while parent[p] != p:
        parent[p] = parent[parent[p]]
        p = parent[p]
    return p


@numba.njit(cache=True)
def build(t, live, src, dst, coflow, size, core, ports, core_cap, rem, rate, pinned,
          record, seg_start, seg_flow, seg_core, seg_t0, seg_t1, seg_rate, n_seg, dpair,
          pair_map):
    """The fair-sharing state of the flows ``live`` (none done) at time ``t``, their
    max-min fair rates set (segments of flows whose rate changes closed). Returns
    (:data:`FairState`, n_seg); ``dpair`` and ``pair_map`` are those of
    :func:`emulate.sim.matching.pair_lists`."""
    n = live.shape[0]
    cores = core_cap.shape[0]
    nport = cores * ports
    pair, pptr, pflow, phead, pin, pout, _, _, _, _ = pair_lists(live, src, dst, core, dpair,
                                                                  ports, nport, pair_map)
    npairs = pin.shape[0]
    rem0 = np.empty(n)
    for m in range(n):
        rem0[m] = rem[live[m]]
    sort_pair_flows(pptr, pflow, rem0)
    # connected components of the ports, pairs as edges
    parent = np.arange(2 * nport)
    has = np.zeros(2 * nport, dtype=np.bool_)
    for e in range(npairs):
        has[pin[e]] = True
        has[pout[e]] = True
        a = _root(parent, pin[e])
        b = _root(parent, pout[e])
        if a != b:
            parent[a] = b
    cid = np.full(2 * nport, -1, dtype=np.int64)
    ncomp = 0
    for p in range(2 * nport):
        if has[p] and cid[_root(parent, p)] < 0:
            cid[_root(parent, p)] = ncomp
            ncomp += 1
    nr = np.zeros(ncomp, dtype=np.int64)
    ncl = np.zeros(ncomp, dtype=np.int64)
    local = np.full(2 * nport, -1, dtype=np.int64)  # row / column in its block
    for p in range(2 * nport):
        if has[p]:
            c = cid[_root(parent, p)]
            if p < nport:
                local[p] = nr[c]
                nr[c] += 1
            else:
                local[p] = ncl[c]
                ncl[c] += 1
    loff = np.zeros(ncomp + 1, dtype=np.int64)
    doff = np.zeros(ncomp + 1, dtype=np.int64)
    for c in range(ncomp):
        w = nr[c] + ncl[c]
        loff[c + 1] = loff[c] + w
        doff[c + 1] = doff[c] + nr[c] * ncl[c]
    nl = loff[ncomp]
    gport = np.empty(nl, dtype=np.int64)
    pcomp = np.empty(nl, dtype=np.int64)
    flat = np.full(2 * nport, -1, dtype=np.int64)
    cap = np.empty(ncomp)
    for p in range(2 * nport):
        if has[p]:
            c = cid[_root(parent, p)]
            x = loff[c] + (local[p] if p < nport else nr[c] + local[p])
            gport[x] = p
            pcomp[x] = c
            flat[p] = x
            cap[c] = core_cap[(p % nport) // ports]
    N = np.zeros(doff[ncomp])
    NT = np.zeros(doff[ncomp])
    PI = np.full(doff[ncomp], -1, dtype=np.int64)
    PIT = np.full(doff[ncomp], -1, dtype=np.int64)
    pcnt = np.zeros(nl)
    prow = np.empty(npairs, dtype=np.int64)
    pcol = np.empty(npairs, dtype=np.int64)
    cnt = np.empty(npairs, dtype=np.int64)
    K = np.empty(npairs)
    hthr = np.empty(npairs)
    prb = np.empty(npairs, dtype=np.int64)
    pcb = np.empty(npairs, dtype=np.int64)
    for e in range(npairs):
        c = pcomp[flat[pin[e]]]
        r = local[pin[e]]
        j = local[pout[e]]
        k = pptr[e + 1] - pptr[e]
        N[doff[c] + r * ncl[c] + j] = k
        NT[doff[c] + j * nr[c] + r] = k
        prb[e] = doff[c] + r * ncl[c] + j
        pcb[e] = doff[c] + j * nr[c] + r
        PI[prb[e]] = e
        PIT[pcb[e]] = e
        prow[e] = flat[pin[e]]
        pcol[e] = flat[pout[e]]
        pcnt[prow[e]] += k
        pcnt[pcol[e]] += k
        cnt[e] = k
        m = pflow[pptr[e]]
        K[e] = rem0[m]
        hthr[e] = EPS_BYTES + 1e-12 * size[live[m]]
    thrmax = EPS_BYTES
    for m in range(n):
        thrmax = max(thrmax, EPS_BYTES + 1e-12 * size[live[m]])
    counters = np.zeros(5, dtype=np.int64)
    counters[0] = n
    counters[1] = n
    st = FairState(
        live, pair, rem0, np.arange(n), pflow, phead, cnt, prow, pcol,
        np.full(npairs, -1, dtype=np.int64), np.zeros(npairs), K, hthr, np.zeros(npairs),
        prb, pcb, np.full(doff[ncomp], np.inf), np.full(doff[ncomp], np.inf),
        nr, ncl, loff, doff, cap, np.full(ncomp, t), np.full(ncomp, np.inf),
        loff[1:] - loff[:-1], np.full(ncomp, NEVER, dtype=np.int64), N, NT, PI, PIT, gport,
        pcomp, pcnt, np.zeros(nl), np.zeros(nl, dtype=np.bool_),
        np.full(nl, NEVER, dtype=np.int64), np.zeros(nl, dtype=np.bool_),
        np.full(nl, NEVER, dtype=np.int64), np.zeros(nl), np.zeros(nl),
        np.full(nl, np.inf), np.zeros(nl, dtype=np.bool_), np.zeros(nl), np.zeros(nl),
        np.empty(nl, dtype=np.int64), np.arange(nl),
        np.empty(nl, dtype=np.int64), counters, np.array([thrmax]),
        np.zeros(MOVERS + 1, dtype=np.int64), np.zeros(nl, dtype=np.bool_))
    for c in range(ncomp):  # the first filling takes every port as a candidate
        _fill(st, c, 0, loff[c + 1] - loff[c], False)
    for e in range(npairs):  # every pair on its bottleneck, served nothing yet (S = 0)
        st.att[e] = _bottleneck(st, e)
        st.xrec[e] = st.lev[st.att[e]]
        _set_key(st, e)
    for x in range(nl):
        _port_min(st, x)
    for c in range(ncomp):
        _next(st, c)
    for m in range(n):  # the rates: flows whose rate changes close their segment
        f = live[m]
        r = st.xrec[pair[m]]
        if rate[f] != r:
            n_seg = set_rate(f, r, t, rate, core, seg_start, record, seg_flow, seg_core,
                             seg_t0, seg_t1, seg_rate, n_seg)
        if r > 0.0 and pinned[f] < 0:
            pinned[f] = core[f]
    return st, n_seg


@numba.njit(**INL)
def _bottleneck(st, e):
    """The port pair ``e`` sends at the level of: the first of its two to freeze."""
    r = st.prow[e]
    j = st.pcol[e]
    if st.frozen[r] and (not st.frozen[j] or st.seqpos[r] < st.seqpos[j]):
        return r
    return j


@numba.njit(**INL)
def _port_row(st, x):
    """Port ``x``'s row (an input) or column (an output) of its block: the pair numbers
    (-1: none) and the keys of the pairs on it as their bottleneck (inf: not)."""
    c = st.pcomp[x]
    i = x - st.loff[c]
    a = st.nr[c]
    b = st.ncl[c]
    d = st.doff[c]
    if i < a:
        return st.PI[d + i * b:d + (i + 1) * b], st.KR[d + i * b:d + (i + 1) * b]
    return st.PIT[d + (i - a) * a:d + (i - a + 1) * a], st.KC[d + (i - a) * a:d + (i - a + 1) * a]


@numba.njit(**INL)
def _set_key(st, e):
    """Pair ``e``'s key into the row of its bottleneck (inf in the other's)."""
    k = st.K[e] if st.cnt[e] > 0 else np.inf
    if st.att[e] == st.prow[e]:
        st.KR[st.prb[e]] = k
        st.KC[st.pcb[e]] = np.inf
    else:
        st.KR[st.prb[e]] = np.inf
        st.KC[st.pcb[e]] = k


@numba.njit(**INL)
def _spread(i, a, b, base, N, NT, used, ucnt, level):
    """Port ``i`` of a block (``a`` inputs, then ``b`` outputs; counts at ``base``; sums
    ``used``, ``ucnt`` by port of the block) freezes at ``level``: its pairs go into the
    sums of every port of the other side (frozen ones too: theirs are not read again)."""
    if i < a:  # an input port: its row of counts goes to the outputs
        row = N[base + i * b:base + (i + 1) * b]
        out_used = used[a:a + b]
        out_cnt = ucnt[a:a + b]
        for j in range(b):
            out_used[j] += row[j] * level
            out_cnt[j] -= row[j]
    else:
        col = NT[base + (i - a) * a:base + (i - a + 1) * a]
        for r in range(a):
            used[r] += col[r] * level
            ucnt[r] -= col[r]


@numba.njit(**INL)
def _block(st, c):
    """Component ``c``'s first port, inputs, outputs, block offset, link rate, tolerance
    (:data:`TOL`), and the sums ``used``, ``ucnt`` of its ports."""
    lo = st.loff[c]
    hi = st.loff[c + 1]
    cp = st.cap[c]
    return lo, st.nr[c], st.ncl[c], st.doff[c], cp, TOL * cp, st.used[lo:hi], st.ucnt[lo:hi]


@numba.njit(**INL)
def _begin(st, c, start):
    """The sums of component ``c``'s ports after the positions before ``start`` of its
    order (kept from the filling before); (the last level, its port: -1 none)."""
    lo, a, b, base, _, _, bused, bcnt = _block(st, c)
    pcnt = st.pcnt
    for x in range(bused.shape[0]):
        bused[x] = 0.0
        bcnt[x] = pcnt[lo + x]
    seq, frozen, lev, N, NT = st.seq, st.frozen, st.lev, st.N, st.NT
    last = 0.0
    prev = -1
    for s in range(start):  # the sums of the kept positions, as they were made
        x = seq[lo + s]
        if frozen[x]:
            last = lev[x]
            prev = x
            _spread(x - lo, a, b, base, N, NT, bused, bcnt, last)
    return last, prev


@numba.njit(**LEAF)
def _fill(st, c, start, window, check):
    """The progressive filling of component ``c`` from position ``start`` of its
    previous order ``seq`` (the positions before are kept, with their levels), each
    step choosing among the next ``window`` ports of that order. With ``check``, False as
    soon as the order is shown wrong; fill again from ``start`` with ``window`` the whole
    component then. Ports without flows drop out of the order.

    Ties between equal levels go to the lower port number, as in the rule's scan. A
    candidate with no pair left to freeze comes first (the first in the window: only
    the side whose sums just changed can hold one). Otherwise each step takes the least
    level of the window from the sums as they are: a candidate whose numerator is
    clearly above the least so far times its denominator (:data:`ABOVE`) is passed
    without dividing, and the others are divided and compared exactly, so the choice is
    that of comparing every level. (Keeping the levels of the side that did not change
    instead cost more in mispredicted branches than the divisions it saved.) Freezing a
    port adds its pairs to the sums of every port of the other side, frozen ones too:
    theirs are not read again.
    """
    lo, a, b, base, cp, tol, bused, bcnt = _block(st, c)
    seq, used, ucnt, pcnt, nold = st.seq, st.used, st.ucnt, st.pcnt, st.nseq[c]
    frozen, seqpos, lev, gport, N, NT = st.frozen, st.seqpos, st.lev, st.gport, st.N, st.NT
    last, _ = _begin(st, c, start)
    for s in range(start, nold):
        x = seq[lo + s]
        seqpos[x] = NEVER
        frozen[x] = False
    cand = st.cand
    newseq = st.newseq
    nxt = start
    ncand = 0
    ns = start
    while True:
        while ncand < window and nxt < nold:
            x = seq[lo + nxt]
            nxt += 1
            if pcnt[x] > 0.0:
                cand[lo + ncand] = x
                ncand += 1
        if ncand == 0:
            break
        bi = 0
        while bi < ncand and ucnt[cand[lo + bi]] > 0.0:
            bi += 1
        if bi < ncand:
            # every pair of this port froze at its other port: it only has to fit, and
            # takes its place unfrozen
            best = cand[lo + bi]
            if check and used[best] > cp + tol:
                return False
            seqpos[best] = ns
            newseq[lo + ns] = best
            ns += 1
            ncand -= 1
            cand[lo + bi] = cand[lo + ncand]
            continue
        best = cand[lo]
        bi = 0
        bl = (cp - used[best]) / ucnt[best]
        above = bl + abs(bl) * ABOVE + 1e-300
        for i in range(1, ncand):  # the least level
            x = cand[lo + i]
            r = cp - used[x]
            if r > above * ucnt[x]:
                continue  # a level clearly above bl, without dividing
            level = r / ucnt[x]
            if level < bl or (level == bl and gport[x] < gport[best]):
                bl = level
                best = x
                bi = i
                above = bl + abs(bl) * ABOVE + 1e-300
        seqpos[best] = ns
        newseq[lo + ns] = best
        ns += 1
        ncand -= 1
        cand[lo + bi] = cand[lo + ncand]
        if check and bl < last - tol:
            return False
        level = bl if bl > 0.0 else 0.0
        last = level
        lev[best] = level
        frozen[best] = True
        _spread(best - lo, a, b, base, N, NT, bused, bcnt, level)
    for s in range(start, ns):
        seq[lo + s] = newseq[lo + s]
    st.nseq[c] = ns
    return True


@numba.njit(**LEAF)
def _fill_in_order(st, c, start):
    """The filling of component ``c`` from position ``start``, each step choosing between
    the next port of the previous order and the event's movers (the ports whose flows
    changed), the least level first (ties to the lower port number), a port with no pair
    left to freeze at once. False, with the order as it was (the caller fills again), as
    soon as a level comes out below the one before it or equal to it from a lower port
    number, or a port with no pair left to freeze is over its capacity: the order the
    pass follows is then not the rule's. Without a failure the levels are nondecreasing,
    which makes them the rule's (the module's first point), and equal levels are in the
    rule's order of ports. Cheaper than :func:`_fill`'s window of :data:`WINDOW` when the
    event moved only its movers, which is most events."""
    nmv = st.mv[MOVERS]
    if nmv > MOVERS:
        st.counters[4] += 1
        return False
    lo, a, b, base, cp, tol, bused, bcnt = _block(st, c)
    seq, used, ucnt, pcnt, nold = st.seq, st.used, st.ucnt, st.pcnt, st.nseq[c]
    frozen, seqpos, lev, gport, N, NT = st.frozen, st.seqpos, st.lev, st.gport, st.N, st.NT
    last, prev = _begin(st, c, start)
    mv = st.mv
    ismv = st.ismv
    pend = 0  # movers still to place: mv[:pend]
    for i in range(nmv):
        y = mv[i]
        ismv[y] = True
        if pcnt[y] > 0.0:
            mv[i] = mv[pend]
            mv[pend] = y
            pend += 1
        else:
            seqpos[y] = NEVER
            frozen[y] = False
    newseq = st.newseq
    ns = start
    nxt = start
    ok = True
    while True:
        while nxt < nold:
            x = seq[lo + nxt]
            if ismv[x]:
                nxt += 1
            elif pcnt[x] <= 0.0:
                seqpos[x] = NEVER
                frozen[x] = False
                nxt += 1
            else:
                break
        best = seq[lo + nxt] if nxt < nold else -1
        bi = -1  # the mover chosen (-1: the next of the order)
        if best >= 0 and ucnt[best] <= 0.0:
            bl = -1.0
        else:
            bl = np.inf
            if best >= 0:
                bl = (cp - used[best]) / ucnt[best]
            for i in range(pend):
                y = mv[i]
                if ucnt[y] <= 0.0:
                    best = y
                    bi = i
                    bl = -1.0
                    break
                level = (cp - used[y]) / ucnt[y]
                if level < bl or (level == bl and gport[y] < gport[best]):
                    bl = level
                    best = y
                    bi = i
        if best < 0:
            break
        if bi >= 0:
            pend -= 1
            mv[bi] = mv[pend]
            mv[pend] = best
        else:
            nxt += 1
        seqpos[best] = ns
        newseq[lo + ns] = best
        ns += 1
        if ucnt[best] <= 0.0:
            frozen[best] = False
            if used[best] > cp + tol:
                ok = False
                break
            continue
        if bl < last or (bl == last and prev >= 0 and gport[best] < gport[prev]):
            ok = False
            break
        frozen[best] = True
        level = bl if bl > 0.0 else 0.0
        lev[best] = level
        last = level
        prev = best
        _spread(best - lo, a, b, base, N, NT, bused, bcnt, level)
    for i in range(nmv):
        ismv[mv[i]] = False
    if not ok:
        st.counters[4] += 1
        return False
    for s in range(start, ns):
        seq[lo + s] = newseq[lo + s]
    st.nseq[c] = ns
    return True


@numba.njit(**INL)
def _port_min(st, x):
    """``Tmin[x]``: the least key of the pairs on their bottleneck ``x`` (inf: none)."""
    m = np.inf
    for k in _port_row(st, x)[1]:
        m = min(m, k)
    st.Tmin[x] = m


@numba.njit(**INL)
def _next(st, c):
    """``tnext[c]``: when the first flow of component ``c`` finishes at today's levels."""
    frozen, Tmin, S, Sc, lev = st.frozen, st.Tmin, st.S, st.Sc, st.lev
    d = np.inf
    for x in range(st.loff[c], st.loff[c + 1]):
        if frozen[x] and Tmin[x] < np.inf and lev[x] > 0.0:
            left = Tmin[x] - (S[x] - Sc[x])
            dx = left / lev[x] if left > 0.0 else 0.0
            if dx < d:
                d = dx
    st.tnext[c] = st.tc[c] + d


@numba.njit(**INL)
def _advance(st, c, t):
    """Serve component ``c``'s ports at their levels from ``tc[c]`` to ``t``."""
    dt = t - st.tc[c]
    if dt > 0.0:
        S = st.S
        Sc = st.Sc
        frozen = st.frozen
        lev = st.lev
        for x in range(st.loff[c], st.loff[c + 1]):
            if frozen[x]:
                y = lev[x] * dt - Sc[x]  # Kahan's compensated sum
                s = S[x] + y
                Sc[x] = (s - S[x]) - y
                S[x] = s
    st.tc[c] = t


@numba.njit(**INL)
def _reattach(st, e, b):
    """Pair ``e`` sends at the level of port ``b`` from now: keep its bytes served."""
    a = st.att[e]
    served = (st.S[a] - st.Sc[a]) - st.Z[e]
    st.Z[e] = (st.S[b] - st.Sc[b]) - served
    st.K[e] = st.rem0[st.pflow[st.head[e]]] + st.Z[e]
    st.att[e] = b
    _set_key(st, e)
    st.dirty[a] = True
    st.dirty[b] = True


@numba.njit(**LEAF)
def _finish(st, c, t, coflow, size, core, rem, rate, done, flow_completion, left, sent,
            coflow_completion, stops, eligible, record, seg_start, seg_flow, seg_core,
            seg_t0, seg_t1, seg_rate, n_seg):
    """Finish the flows of component ``c`` due at ``t`` (its ports served to ``t``).
    Returns (n_seg, any finished, a coflow ``k`` with ``stops[k]`` completed)."""
    lo = st.loff[c]
    a = st.nr[c]
    b = st.ncl[c]
    base = st.doff[c]
    any_done = False
    coflow_done = False
    # a flow whose bytes left take less than the clock's resolution at t finishes at t
    # too: the clock cannot move to a later instant for it
    tick = 4.0 * np.spacing(t)
    st.mv[MOVERS] = 0
    for x in range(lo, st.loff[c + 1]):
        v = st.S[x] - st.Sc[x]
        close = st.lev[x] * tick
        thr = max(st.thr[0], close)
        if not st.frozen[x] or st.Tmin[x] - v > thr:
            continue
        pairs, keys = _port_row(st, x)
        for i in range(pairs.shape[0]):
            if keys[i] - v > thr:
                continue
            e = pairs[i]
            while st.cnt[e] > 0 and st.K[e] - v <= max(st.hthr[e], close):
                f = st.live[st.pflow[st.head[e]]]
                k = coflow[f]
                sent[k] += rem[f]
                rem[f] = 0.0
                done[f] = True
                eligible[f] = False
                flow_completion[f] = t
                n_seg = emit(record, f, core[f], seg_start[f], t, st.lev[x], seg_flow,
                             seg_core, seg_t0, seg_t1, seg_rate, n_seg)
                rate[f] = 0.0
                left[k] -= 1
                if left[k] == 0:
                    coflow_completion[k] = t
                    coflow_done = coflow_done or stops[k]
                st.head[e] += 1
                st.cnt[e] -= 1
                st.counters[0] -= 1
                r = st.prow[e] - lo
                j = st.pcol[e] - lo - a
                st.N[base + r * b + j] -= 1.0
                st.NT[base + j * a + r] -= 1.0
                for y in (st.prow[e], st.pcol[e]):
                    st.pcnt[y] -= 1.0
                    st.kmin[c] = min(st.kmin[c], st.seqpos[y])
                    _add_mover(st, y)
                if st.cnt[e] > 0:
                    m = st.pflow[st.head[e]]
                    st.K[e] = st.rem0[m] + st.Z[e]
                    st.hthr[e] = EPS_BYTES + 1e-12 * size[st.live[m]]
                _set_key(st, e)
                any_done = True
            st.dirty[x] = True
    return n_seg, any_done, coflow_done


@numba.njit(**INL)
def _add_mover(st, y):
    """Port ``y``'s flows changed at this event: one of the movers (none are followed
    once more than :data:`MOVERS` change)."""
    k = st.mv[MOVERS]
    if k > MOVERS:
        return
    for i in range(k):
        if st.mv[i] == y:
            return
    if k < MOVERS:
        st.mv[k] = y
    st.mv[MOVERS] = k + 1


@numba.njit(**LEAF)
def _reallocate(st, c):
    """Component ``c``'s flows changed: fill again from the position of the first changed
    port (the in-order pass, else the window, else the full scan), move the pairs whose
    bottleneck changed, rebase, renew ``Tmin``."""
    lo = st.loff[c]
    hi = st.loff[c + 1]
    start = min(st.kmin[c], st.nseq[c])
    st.kmin[c] = NEVER
    for s in range(start, st.nseq[c]):
        x = st.seq[lo + s]
        st.oldpos[x] = st.seqpos[x]
        st.was[x] = st.frozen[x]
    st.counters[2] += 1
    if not _fill_in_order(st, c, start) and not _fill(st, c, start, WINDOW, True):
        st.counters[3] += 1
        _fill(st, c, start, hi - lo, False)
    # a pair whose bottleneck changed has a port that passed, in the new order, a port it
    # was behind (then it comes after a higher old position), or that froze in one
    # filling and not in the other
    top = -1
    for s in range(start, st.nseq[c]):
        x = st.seq[lo + s]
        moved = st.was[x] != st.frozen[x]
        if st.was[x] and st.frozen[x]:
            if st.oldpos[x] < top:
                moved = True
            else:
                top = st.oldpos[x]
        if moved:
            for e in _port_row(st, x)[0]:
                if e >= 0 and st.cnt[e] > 0:
                    bn = _bottleneck(st, e)
                    if bn != st.att[e]:
                        _reattach(st, e, bn)
    for x in range(lo, hi):
        if st.frozen[x] and st.S[x] - st.Sc[x] > REBASE:
            # bytes served per flow back to 0, the keys of its pairs with them
            v = st.S[x] - st.Sc[x]
            pairs, keys = _port_row(st, x)
            for i in range(pairs.shape[0]):
                if keys[i] < np.inf:
                    e = pairs[i]
                    st.Z[e] -= v
                    st.K[e] -= v
                    keys[i] = st.K[e]
            st.S[x] = 0.0
            st.Sc[x] = 0.0
            st.dirty[x] = True
        if st.dirty[x]:
            st.dirty[x] = False
            _port_min(st, x)


@numba.njit(**LEAF)
def _record_rates(st, c, t, core, pinned, seg_start, seg_flow, seg_core, seg_t0, seg_t1,
                  seg_rate, n_seg):
    """Segments: close those of the flows of component ``c`` whose pair's rate changed."""
    for at in range(st.doff[c], st.doff[c + 1]):
        e = st.PI[at]
        if e < 0 or st.cnt[e] == 0:
            continue
        x = st.lev[st.att[e]]
        if x == st.xrec[e]:
            continue
        for i in range(st.head[e], st.head[e] + st.cnt[e]):
            f = st.live[st.pflow[i]]
            if st.xrec[e] > 0.0:
                n_seg = emit(True, f, core[f], seg_start[f], t, st.xrec[e], seg_flow,
                             seg_core, seg_t0, seg_t1, seg_rate, n_seg)
            seg_start[f] = t
            if x > 0.0 and pinned[f] < 0:
                pinned[f] = core[f]
        st.xrec[e] = x
    return n_seg


@numba.njit(cache=True)
def run(st, t, stop_time, coflow, size, core, core_cap, rem, rate, done, pinned,
        flow_completion, left, sent, coflow_completion, stops, eligible, record, seg_start,
        seg_flow, seg_core, seg_t0, seg_t1, seg_rate, n_seg):
    """Advance until a coflow ``k`` with ``stops[k]`` completes (or the last flow
    finishes) or ``stop_time``. Returns (t, reason, n_seg, inner events); ``rem``,
    ``rate`` and ``sent`` are brought up to date on return (:func:`sync`), and ``st`` goes
    on from there at the next call."""
    ncomp = st.tnext.shape[0]
    seg_cap = seg_flow.shape[0]
    events = 0
    reason = STOP_TIME
    completed = False
    while True:
        if record and n_seg + 2 * st.counters[0] + 1 > seg_cap:
            reason = SEG_FULL
            break
        if completed and st.counters[0] == 0:
            reason = COFLOW_DONE  # (the last flow finished at a completion not stopped at)
            break
        tn = np.inf
        for c in range(ncomp):
            tn = min(tn, st.tnext[c])
        dt = max(min(tn, stop_time) - t, 0.0)
        if dt == np.inf:
            reason = STUCK
            break
        events += 1
        t_new, dt = next_event(t, dt, stop_time, core_cap)
        # the components due now, and any a hair later (their test is in bytes)
        slack = 1e-9 * max(1.0, abs(t_new))
        coflow_done = False
        for c in range(ncomp):
            if st.tnext[c] > t_new + slack:
                continue
            _advance(st, c, t_new)
            n_seg, changed, cd = _finish(st, c, t_new, coflow, size, core, rem, rate, done,
                                         flow_completion, left, sent, coflow_completion,
                                         stops, eligible, record, seg_start, seg_flow,
                                         seg_core, seg_t0, seg_t1, seg_rate, n_seg)
            coflow_done = coflow_done or cd
            completed = completed or changed
            if changed:
                _reallocate(st, c)
                if record:
                    n_seg = _record_rates(st, c, t_new, core, pinned, seg_start, seg_flow,
                                          seg_core, seg_t0, seg_t1, seg_rate, n_seg)
            _next(st, c)
        t = t_new
        if coflow_done:
            reason = COFLOW_DONE
            break
        if t >= stop_time:
            reason = STOP_TIME
            break
    sync(st, t, coflow, size, core, rem, rate, done, pinned, sent)
    return t, reason, n_seg, events


@numba.njit(cache=True)
def sync(st, t, coflow, size, core, rem, rate, done, pinned, sent):
    """Write the bytes left, the rates and the bytes sent per coflow at ``t`` into the
    simulator's arrays (every component served up to ``t``), in the flows' order."""
    for c in range(st.tnext.shape[0]):
        _advance(st, c, t)
    cnt = st.cnt
    att = st.att
    lev = st.lev
    npairs = cnt.shape[0]
    served = np.empty(npairs)
    prate = np.empty(npairs)
    for e in range(npairs):
        if cnt[e] > 0:
            x = att[e]
            served[e] = (st.S[x] - st.Sc[x]) - st.Z[e]
            prate[e] = lev[x]
    alive = st.alive
    live = st.live
    pair = st.pair
    rem0 = st.rem0
    k = 0
    for i in range(st.counters[1]):
        m = alive[i]
        f = live[m]
        if done[f]:
            continue
        alive[k] = m
        k += 1
        e = pair[m]
        r = rem0[m] - served[e]
        if r < 0.0:
            r = 0.0
        if served[e] > 0.0 and r == rem[f] and r == size[f]:
            r = np.nextafter(rem[f], 0.0)
        sent[coflow[f]] += rem[f] - r
        rem[f] = r
        rate[f] = prate[e]
        if prate[e] > 0.0 and pinned[f] < 0:
            pinned[f] = core[f]
    st.counters[1] = k


def live_flows(st) -> int:
    """How many flows of the state are not done."""
    return int(st.counters[0])
