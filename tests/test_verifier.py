"""Self-test of the schedule verifier (tests/verifier.py): it accepts valid hand-made
schedules and rejects each kind of violation with a message that says what went wrong.

Times: ``rate_bps = 8`` makes one byte take one second at full rate.
"""
from __future__ import annotations

import numpy as np
import pytest

from controller.model import Coflow, Flow, Workload
from topologies.fabric import Fabric
from verifier import SegmentArrays, flow_refs, verify_segments

R = 8.0


def segs(*rows) -> SegmentArrays:
    """Rows (flow, core, start, end, rate_bps)."""
    rows = list(rows)
    col = lambda i, t: np.array([r[i] for r in rows], dtype=t)  # noqa: E731
    return SegmentArrays(col(0, np.int64), col(1, np.int64), col(2, float), col(3, float),
                         col(4, float))


def wl(coflows, arcs=(), ports=3, cores=2, core_rates=None):
    return Workload(Fabric(ports=ports, cores=cores, rate_bps=R, core_rates=core_rates),
                    tuple(coflows), tuple(arcs))


# Flows (index: coflow, src->dst, bytes):
#   0: a 0->1 2   1: a 1->2 1   2: b 0->2 1   (b released at 1)
#   c has no flows, after a; d: 3: d 2->0 1, after a
BASE = wl([Coflow("a", (Flow(0, 1, 2.0), Flow(1, 2, 1.0), Flow(2, 2, 0.0)), weight=2.0),
           Coflow("b", (Flow(0, 2, 1.0),), release=1.0, weight=3.0),
           Coflow("c", ()),
           Coflow("d", (Flow(2, 0, 1.0),))],
          arcs=[("a", "c"), ("a", "d")])
# A valid schedule on 2 cores: a's flows on core 0; b on core 1 at the same time as a's
# 0->1 (same input port 0, different core); d after a, on core 1.
GOOD = [(0, 0, 0.0, 2.0, R), (1, 0, 0.0, 1.0, R), (2, 1, 1.0, 2.0, R), (3, 1, 2.0, 3.0, R)]
GOOD_DONE = [2.0, 2.0, 2.0, 3.0]


def check(rows, done=GOOD_DONE, w=BASE, **kw):
    return verify_segments(w, segs(*rows), coflow_completion=np.array(done, float), **kw)


def test_flow_numbering_skips_zero_byte_flows_and_follows_coflow_order():
    refs = flow_refs(BASE)
    assert [(r.cid, r.src, r.dst, r.bytes) for r in refs] == [
        ("a", 0, 1, 2.0), ("a", 1, 2, 1.0), ("b", 0, 2, 1.0), ("d", 2, 0, 1.0)]


def test_valid_schedule_is_accepted_and_objective_recomputed():
    v = check(GOOD, flow_completion=np.array([2.0, 1.0, 2.0, 3.0]))
    assert v.coflow_completion.tolist() == GOOD_DONE
    # empty coflow c completes when ready: at a's completion
    assert v.ready.tolist() == [0.0, 1.0, 2.0, 2.0]
    assert v.objective == pytest.approx(2 * 2.0 + 3 * 2.0 + 1 * 2.0 + 1 * 3.0)


def test_preempted_flow_in_several_segments_and_shared_port_at_half_rate_are_valid():
    rows = [(0, 0, 0.0, 1.0, R), (0, 0, 3.0, 4.0, R),          # a 0->1 preempted
            (1, 0, 0.0, 2.0, R / 2), (2, 1, 1.0, 2.0, R),        # 1->2 at half rate
            (3, 1, 4.0, 5.0, R)]
    v = check(rows, done=[4.0, 2.0, 4.0, 5.0])
    assert v.coflow_completion.tolist() == [4.0, 2.0, 4.0, 5.0]


def test_two_flows_each_at_half_rate_on_one_output_port_are_valid():
    w = wl([Coflow("x", (Flow(0, 2, 1.0), Flow(1, 2, 1.0)))], cores=1)
    v = verify_segments(w, segs((0, 0, 0.0, 2.0, R / 2), (1, 0, 0.0, 2.0, R / 2)),
                        coflow_completion=np.array([2.0]))
    assert v.objective == 2.0


@pytest.mark.parametrize("rows, pattern", [
    # b's flow 0->2 on core 0 at the same time as a's 0->1: input port 0 of core 0 at 2R
    ([(0, 0, 0.0, 2.0, R), (1, 0, 0.0, 1.0, R), (2, 0, 1.0, 2.0, R), (3, 1, 2.0, 3.0, R)],
     r"core 0 input port 0 carries 16 bit/s during \[1, 2\]"),
    # a's 1->2 and b's 0->2 together on core 1: output port 2 of core 1 at 2R
    ([(0, 0, 0.0, 2.0, R), (1, 1, 1.0, 2.0, R), (2, 1, 1.0, 2.0, R), (3, 1, 2.0, 3.0, R)],
     r"core 1 output port 2 carries 16 bit/s during \[1, 2\]"),
    # one flow above the link rate alone (and done in half the time)
    ([(0, 0, 0.0, 1.0, 2 * R), (1, 0, 0.0, 1.0, R), (2, 1, 1.0, 2.0, R), (3, 1, 2.0, 3.0, R)],
     r"core 0 input port 0 carries 16 bit/s during \[0, 1\]"),
])
def test_link_overload_is_rejected(rows, pattern):
    done = [max(r[3] for r in rows if r[0] in (0, 1)), 2.0, 2.0, 3.0]
    done[2] = done[0]
    with pytest.raises(AssertionError, match=pattern):
        check(rows, done=done)


def test_overload_only_on_a_short_overlap_is_rejected():
    rows = [(0, 0, 0.0, 2.0, R), (1, 0, 0.0, 1.0, R), (2, 0, 1.999, 2.999, R),
            (3, 1, 2.0, 3.0, R)]
    with pytest.raises(AssertionError, match=r"input port 0 carries 16 bit/s during "
                                             r"\[1.999, 2\]"):
        check(rows, done=[2.0, 2.999, 2.0, 3.0])


def test_heterogeneous_core_rates_limit_each_core_separately():
    w = wl([Coflow("x", (Flow(0, 1, 2.0),)), Coflow("y", (Flow(0, 1, 2.0),))],
           cores=2, core_rates=(R, 2 * R))
    ok = segs((0, 0, 0.0, 2.0, R), (1, 1, 0.0, 1.0, 2 * R))
    assert verify_segments(w, ok).coflow_completion.tolist() == [2.0, 1.0]
    bad = segs((0, 0, 0.0, 1.0, 2 * R), (1, 1, 0.0, 1.0, 2 * R))
    with pytest.raises(AssertionError, match=r"core 0 input port 0 carries 16 bit/s .* > "
                                             r"its rate 8 bit/s"):
        verify_segments(w, bad)


def test_migration_between_cores_is_rejected():
    rows = [(0, 0, 0.0, 1.0, R), (0, 1, 2.0, 3.0, R)] + GOOD[1:]
    with pytest.raises(AssertionError, match=r"coflow 'a' flow 0->1 migrates: it sends on "
                                             r"cores \[0, 1\]"):
        check(rows)


def test_overlapping_segments_of_one_flow_are_rejected():
    rows = [(0, 0, 0.0, 2.0, R / 2), (0, 0, 1.0, 3.0, R / 2)] + GOOD[1:]
    with pytest.raises(AssertionError, match=r"coflow 'a' flow 0->1 has overlapping "
                                             r"segments"):
        check(rows, done=[3.0, 3.0, 3.0, 3.0])


@pytest.mark.parametrize("first, sent", [((0, 0, 0.0, 1.5, R), "1.5"),
                                         ((0, 0, 0.0, 2.5, R), "2.5")])
def test_wrong_byte_total_is_rejected(first, sent):
    rows = [first] + GOOD[1:]
    with pytest.raises(AssertionError, match=rf"coflow 'a' flow 0->1 sends {sent} bytes, "
                                             rf"its size is 2 bytes"):
        check(rows)


def test_byte_total_within_relative_tolerance_is_accepted():
    rows = [(0, 0, 0.0, 2.0, R * (1 + 1e-8))] + GOOD[1:]
    check(rows)  # 2 (1 + 1e-8) bytes sent, rate 1e-8 above the link's: both within rtol


def test_flow_that_never_sends_is_rejected():
    with pytest.raises(AssertionError, match=r"coflow 'd' flow 2->0 \(1 bytes\) never sent"):
        check(GOOD[:3])


def test_sending_before_release_is_rejected():
    rows = GOOD[:2] + [(2, 1, 0.5, 1.5, R), GOOD[3]]
    with pytest.raises(AssertionError, match=r"coflow 'b' sends at 0.5, before its release 1"):
        check(rows, done=[2.0, 1.5, 2.0, 3.0])


def test_sending_before_a_predecessor_completes_is_rejected():
    rows = GOOD[:3] + [(3, 1, 0.0, 1.0, R)]
    with pytest.raises(AssertionError, match=r"coflow 'd' sends at 0, before its predecessor "
                                             r"'a' completes at 2"):
        check(rows, done=[2.0, 2.0, 2.0, 1.0])


def test_successor_starting_exactly_at_predecessor_completion_is_accepted():
    check(GOOD)  # d starts at 2.0 == a's completion


@pytest.mark.parametrize("done, pattern", [
    ([2.5, 2.0, 2.0, 3.0], r"coflow 'a': reported completion 2.5, the end of its last "
                           r"segment is 2"),
    ([2.0, 2.0, 0.0, 3.0], r"coflow 'c': reported completion 0.0, its ready time \(it has "
                           r"no bytes\) is 2"),
    ([2.0, np.nan, 2.0, 3.0], r"coflow 'b': reported completion nan"),
])
def test_reported_completion_must_match_segments(done, pattern):
    with pytest.raises(AssertionError, match=pattern):
        check(GOOD, done=done)


def test_reported_flow_completion_must_match_segments():
    with pytest.raises(AssertionError, match=r"coflow 'a' flow 1->2: reported completion 2.0"):
        check(GOOD, flow_completion=np.array([2.0, 2.0, 2.0, 3.0]))


def test_indivisible_requires_one_core_per_coflow():
    rows = [(0, 0, 0.0, 2.0, R), (1, 1, 0.0, 1.0, R), (2, 1, 1.0, 2.0, R), (3, 1, 2.0, 3.0, R)]
    check(rows)  # fine when flows of a coflow may use different cores
    with pytest.raises(AssertionError, match=r"coflow 'a' uses cores \[0, 1\]"):
        check(rows, indivisible=True)
    check(GOOD, indivisible=True)


@pytest.mark.parametrize("row, pattern", [
    ((9, 0, 0.0, 1.0, R), r"segment 4 names flow 9"),
    ((3, 2, 2.0, 3.0, R), r"segment 4 .* is on core 2; the fabric has cores 0..1"),
    ((3, 1, 3.0, 2.0, R), r"segment 4 .* ends at 2 before it starts at 3"),
    ((3, 1, 2.0, 3.0, -R), r"segment 4 .* has negative rate"),
    ((3, 1, 2.0, np.inf, R), r"segment 4 .* non-finite"),
])
def test_malformed_segments_are_rejected(row, pattern):
    with pytest.raises(AssertionError, match=pattern):
        check(GOOD + [row])


def test_zero_rate_segments_are_ignored():
    check(GOOD + [(3, 0, 0.0, 5.0, 0.0)])
