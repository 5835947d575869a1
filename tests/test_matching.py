"""The kept greedy matching of emulate.sim.matching: repaired by cursors after its pairs'
head keys change (rekey_pairs) or its heads finish, it is the matching built from scratch;
and the byte-limit scan's ``clear`` time, before which the engine skips the scan.

The simulator-level counterpart (a whole aalo run with the matching kept across plans
against the same run rebuilding it at every plan) is in test_simulator.py.
"""
from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from emulate.sim.matching import (NO_KEY, _greedy, _holder_keys, _limit_time, _repair,
                                  _repair_cursors, _vacate, matching_pairs, rekey_pairs)

SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def instances(draw):
    """Flows on ``cores`` x ``ports`` ports grouped in coflows, keyed coflow after coflow
    as the simulator keys them (label * W + rank inside); some coflows take new labels
    (odd: between the others' even ones, or before or after them all)."""
    ports = draw(st.integers(2, 5))
    cores = draw(st.integers(1, 2))
    n_coflows = draw(st.integers(1, 8))
    flows = draw(st.lists(st.tuples(st.integers(0, n_coflows - 1), st.integers(0, ports - 1),
                                    st.integers(0, ports - 1), st.integers(0, cores - 1)),
                          min_size=1, max_size=40))
    moved = draw(st.lists(st.integers(0, n_coflows - 1), max_size=4, unique=True))
    new_label = draw(st.lists(st.integers(0, 6 * n_coflows), min_size=n_coflows,
                              max_size=n_coflows, unique=True))
    finished = draw(st.lists(st.integers(0, 2 * ports * cores), max_size=6))
    return ports, cores, n_coflows, flows, moved, new_label, finished


def _build(ports, cores, n_coflows, flows):
    coflow = np.array([c for c, _, _, _ in flows], dtype=np.int64)
    src = np.array([s for _, s, _, _ in flows], dtype=np.int64)
    dst = np.array([d for _, _, d, _ in flows], dtype=np.int64)
    core = np.array([h for _, _, _, h in flows], dtype=np.int64)
    order = np.lexsort((np.arange(len(flows)), coflow)).astype(np.int64)
    width = 64
    within = np.empty(len(flows), dtype=np.int64)
    for k in range(n_coflows):
        mine = order[coflow[order] == k]
        within[mine] = np.arange(len(mine))
    pos = np.full(len(flows), -1, dtype=np.int64)
    label = 4 * n_coflows + 2 * np.arange(n_coflows, dtype=np.int64)
    pos[order] = label[coflow[order]] * width + within[order]
    nport = cores * ports
    pairs = matching_pairs(order, pos, src, dst, core, src * ports + dst, ports, nport,
                           np.full(cores * ports * ports, -1, dtype=np.int64),
                           np.full(len(flows), -1, dtype=np.int64))
    return coflow, pos, within, width, nport, pairs


def _greedy_of(pos, pairs, nport):
    pair, pptr, pflow, phead, pin, pout, qptr, qpair, qkey, qlen, fkey = pairs
    owner = np.full(2 * nport, -1, dtype=np.int64)
    _greedy(owner, pos, pptr, pflow, phead, pin, pout, qlen, nport)
    return owner


def _brute_greedy(pos, pairs, nport):
    """The greedy matching by its definition: every flow not done by rank key, each taking
    its two ports if both are free."""
    pair, pptr, pflow, phead, pin, pout = pairs[:6]
    live = [(pos[pflow[j]], pflow[j], e) for e in range(len(pin))
            for j in range(phead[e], pptr[e + 1])]
    owner = np.full(2 * nport, -1, dtype=np.int64)
    for _, f, e in sorted(live):
        if owner[pin[e]] < 0 and owner[pout[e]] < 0:
            owner[pin[e]] = owner[pout[e]] = f
    return owner


def _repaired(owner, pos, pairs, nport, changed, changed_old, pend_port, pend_after):
    pair, pptr, pflow, phead, pin, pout, qptr, qpair, qkey, qlen, fkey = pairs
    owner = owner.copy()
    hk, hp, hi = (np.empty(4, dtype=np.int64) for _ in range(3))  # (grown as needed)
    hk, hp, hi, nh = _repair_cursors(hk, hp, hi, owner, pos, pair, pptr, pflow, phead, pin,
                                     pout, qptr, qkey, qlen, changed, changed_old,
                                     pend_port, pend_after, len(pend_port))
    okey = np.empty(2 * nport, dtype=np.int64)
    _holder_keys(owner, pos, pair, pout, okey, nport)
    _repair(hk, hp, hi, nh, owner, okey, pos, pair, pflow, phead, pin, pout, qptr, qpair,
            qkey, qlen, nport)
    return owner


@settings(max_examples=400, **SETTINGS)
@given(case=instances())
def test_repaired_matching_after_heads_finish_and_coflows_move_is_the_greedy_one(case):
    ports, cores, n_coflows, flows, moved, new_label, finished = case
    coflow, pos, within, width, nport, pairs = _build(ports, cores, n_coflows, flows)
    pair, pptr, pflow, phead, pin, pout, qptr, qpair, qkey, qlen, fkey = pairs
    owner = _greedy_of(pos, pairs, nport)
    assert np.array_equal(owner, _brute_greedy(pos, pairs, nport))
    # some matched heads finish: their ports are left free, to repair (as a run that
    # stops at an event leaves them)
    pend_port, pend_after = [], []
    for p in finished:
        f = owner[p % nport]
        if f >= 0:
            po = _vacate(p % nport, f, pos, pair, pptr, fkey, phead, pout, qptr, qpair, qkey,
                         qlen, owner)
            pend_port += [p % nport, po]
            pend_after += [pos[f], pos[f]]
    # then some coflows move (new labels: later or earlier), as aalo's plans move them
    live = np.zeros(len(flows), dtype=bool)
    for e in range(len(pin)):
        live[pflow[phead[e]:pptr[e + 1]]] = True
    mv = np.array([f for f in range(len(flows)) if live[f] and coflow[f] in moved],
                  dtype=np.int64)
    new_key = np.array([(2 * new_label[coflow[f]] + 1) * width + within[f]
                        for f in mv], dtype=np.int64)
    changed, changed_old = rekey_pairs(mv, new_key, pos, pairs)
    # the lists stay sorted, each pair's flows by key (their keys beside them), each
    # port's pairs by head key
    assert np.array_equal(fkey, pos[pflow])
    for e in range(len(pin)):
        keys = pos[pflow[phead[e]:pptr[e + 1]]]
        assert np.all(np.diff(keys) > 0)
    for p in range(2 * nport):
        assert np.all(np.diff(qkey[qptr[p]:qptr[p] + qlen[p]]) > 0)
    got = _repaired(owner, pos, pairs, nport, changed, changed_old,
                    np.array(pend_port, dtype=np.int64), np.array(pend_after, dtype=np.int64))
    assert np.array_equal(got, _brute_greedy(pos, pairs, nport))
    assert np.array_equal(got, _greedy_of(pos, pairs, nport))
    assert NO_KEY > pos.max()


@settings(max_examples=300, **SETTINGS)
@given(n_ports=st.integers(1, 6), n_coflows=st.integers(1, 3), data=st.data())
def test_no_byte_limit_is_reached_before_the_scan_s_clear_time(n_ports, n_coflows, data):
    """``_limit_time``'s ``clear``: a scan at any time before it, after the sending flows
    advanced there (some finishing, their bytes added in another order), finds no limit
    reached, so the engine may skip it; and it is no later than the crossing time."""
    ints = st.integers(0, n_coflows - 1)
    coflow = np.array(data.draw(st.lists(ints, min_size=n_ports, max_size=n_ports)),
                      dtype=np.int64)
    rate = np.array(data.draw(st.lists(st.sampled_from([1.0, 3.0, 1048576.0, 1e9]),
                                       min_size=n_ports, max_size=n_ports)))
    sending = data.draw(st.lists(st.booleans(), min_size=n_ports, max_size=n_ports))
    owner = np.array([p if sending[p] else -1 for p in range(n_ports)], dtype=np.int64)
    limit = np.array(data.draw(st.lists(st.sampled_from([10.0, 1048576.0 * 10, 1e12, np.inf]),
                                        min_size=n_coflows, max_size=n_coflows)))
    t = data.draw(st.sampled_from([0.0, 1.0, 12345.678]))
    tl = np.array(data.draw(st.lists(st.floats(0.0, 1.0), min_size=n_ports,
                                     max_size=n_ports))) * t
    frac = data.draw(st.floats(0.0, 1.0))
    sent = np.array([0.0 if not np.isfinite(b) else b * frac for b in limit])
    ctot, cpend = np.zeros(n_coflows), np.zeros(n_coflows)
    seen = np.empty(n_ports, dtype=np.int64)
    args = (rate, coflow, limit)
    out, clear = _limit_time(t, n_ports, owner, tl, *args, sent, ctot, cpend, seen)
    assert clear <= out
    if not np.isfinite(clear) or clear <= t:
        return
    # advance every sending flow to a time before ``clear``, in a drawn order, some
    # stopping there
    t2 = t + (clear - t) * data.draw(st.floats(0.0, 1.0, exclude_max=True))
    if t2 >= clear:
        return  # (rounded up to it: the engine scans there)
    sent2 = sent.copy()
    for p in data.draw(st.permutations([p for p in range(n_ports) if sending[p]])):
        sent2[coflow[p]] += rate[p] * (t2 - tl[p])
    owner2 = owner.copy()
    owner2[data.draw(st.lists(st.integers(0, n_ports - 1), max_size=n_ports))] = -1
    tl2 = np.full(n_ports, t2)
    out2, _ = _limit_time(t2, n_ports, owner2, tl2, *args, sent2, ctot, cpend, seen)
    assert out2 > t2


def test_a_limit_crossing_closer_than_half_an_ulp_comes_an_ulp_later():
    """At 1e5 s an ulp is 1.5e-11 s: a coflow sending 9e9 bytes/s 0.04 bytes short of its
    limit crosses it in less than half an ulp, which would round to now (where no byte
    moves). The crossing is the next representable time, where the limit is reached."""
    t, rate, limit = 1e5, 9e9, np.array([10.0 * 2**20])
    sent = limit - 0.04
    owner, tl = np.zeros(1, dtype=np.int64), np.array([t])
    out, clear = _limit_time(t, 1, owner, tl, np.array([rate]), np.zeros(1, dtype=np.int64),
                             limit, sent, np.zeros(1), np.zeros(1),
                             np.empty(1, dtype=np.int64))
    assert t + 0.04 / rate == t and clear == t
    assert out == np.nextafter(t, np.inf)
    assert sent[0] + rate * (out - t) >= limit[0] * (1 - 1e-12)
