"""Tests of the event-driven simulator (emulate.sim.flowsim, emulate.sim.matching).

* Every registered policy (``available()`` when the tests run) produces, on random small
  workloads (releases, random DAGs, empty coflows, zero-byte flows, heterogeneous cores),
  a schedule the independent verifier (tests/verifier.py) accepts.
* The incremental priority-greedy matching gives the same completions as the rescan path.
* Hand-computed examples: port sharing, DAG successors, preemption, heterogeneous cores.
* A brute-force reference: an exact (``Fraction``) event-driven implementation of the
  papers' priority-greedy matching engine (algorithms.md 1.5), written here, gives the
  same completion times as the simulator under a fixed flow order and core map.

Times: ``rate_bps = 8`` makes one byte take one second at full rate.
"""
from __future__ import annotations

import inspect
import os
import multiprocessing
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from controller.model import Coflow, Flow, Workload
from controller.plan import Plan, coflow_order_plan
from controller.policies import Policy, PolicyError, available, get_policy
from emulate.sim.flowsim import Simulator, simulate
from topologies.fabric import Fabric
from benchmark_modules import benchmark
from verifier import flow_refs, verify

R = 8.0
REGISTERED = sorted(available())
SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])


# --------------------------------------------------------------------------- test policy
class FixedOrder(Policy):
    """Ranks flows by a fixed list (first = highest priority); a fixed core per flow.

    Not registered: a test instrument. ``order`` lists flow indices (the engines'
    numbering, see ``verifier.flow_refs``); flows not listed come after, by index.
    """

    name = "test-fixed-order"

    def __init__(self, order, cores=None):
        super().__init__()
        self.order = [int(f) for f in order]
        self.cores = None if cores is None else [int(h) for h in cores]

    def plan(self, state):
        n = state.arrays.n_flows
        rank = np.arange(n, dtype=np.float64) + n
        rank[self.order] = np.arange(len(self.order), dtype=np.float64)
        core = (np.zeros(n, dtype=np.int64) if self.cores is None
                else np.array(self.cores, dtype=np.int64))
        return Plan(core=core, rank=rank)


class Checked(Policy):
    """Wraps a policy; checks the :class:`~controller.plan.State` it is given at every call
    against the documented contract (controller/plan.py) and against the workload."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner
        self.name = inner.name or type(inner).__name__
        self.calls = 0

    def start(self, workload):
        self.workload = workload
        self.last = -np.inf
        self.inner.start(workload)

    def plan(self, state):
        self.calls += 1
        check_state(self.workload, state, self.last)
        self.last = state.time
        return self.inner.plan(state)


def check_state(w, s, last_time):
    """The State contract, from the workload alone (flows numbered like flow_refs)."""
    refs = flow_refs(w)
    size = np.array([r.bytes for r in refs])
    of = np.array([r.coflow for r in refs], dtype=np.int64)
    t = s.time
    where = f"t={t} ({s.event})"
    assert t >= last_time, f"{where}: time went back from {last_time}"
    index = {c.id: k for k, c in enumerate(w.coflows)}
    rel = np.array([c.release for c in w.coflows])
    assert np.array_equal(s.released, rel <= t), f"{where}: released {s.released}"
    assert np.all((s.remaining >= 0) & (s.remaining <= size)), f"{where}: remaining"
    assert np.array_equal(s.flow_done, s.remaining == 0), f"{where}: flow_done"
    sent = size - s.remaining
    assert np.array_equal(s.core >= 0, sent > 0), \
        (f"{where}: core {s.core.tolist()} must be >= 0 exactly for flows that have sent "
         f"(sent {sent.tolist()})")
    assert close(s.sent, np.bincount(of, weights=sent, minlength=len(w.coflows))), \
        f"{where}: sent per coflow {s.sent} vs flows {sent}"
    for k, c in enumerate(w.coflows):
        preds_done = all(s.done[index[a]] for a, b in w.precedence if b == c.id)
        assert s.ready[k] == (s.released[k] and preds_done), f"{where}: ready[{c.id}]"
        all_sent = bool(np.all(s.flow_done[of == k]))
        assert s.done[k] == (s.ready[k] and all_sent), f"{where}: done[{c.id}]"
        if s.done[k]:
            assert s.completion[k] <= t, f"{where}: completion[{c.id}] in the future"
        else:
            assert np.isnan(s.completion[k]), f"{where}: completion[{c.id}] while running"
    assert np.array_equal(s.eligible, s.ready[of] & ~s.flow_done), f"{where}: eligible"
    # (gathered from the ready coflows not done, which the line above makes every one)
    assert np.array_equal(s.eligible_flows(), np.flatnonzero(s.eligible)), \
        f"{where}: eligible_flows"


# --------------------------------------------------------------------------- instances
#: Whether the random workloads contain coflows without bytes (no flows, or only
#: zero-byte flows). Off while bug #1 (see test_empty_coflow_*) is open: with it on, almost
#: every property test below fails on that one bug and would hide any other.
EMPTY_COFLOWS = True


@st.composite
def workloads(draw, *, ports=(2, 6), cores=(1, 3), coflows=(1, 8), max_flows=4, max_size=5,
              heterogeneous=True, zero_flows=True, empty=None, rate=R):
    """Small random workloads: integer sizes and releases, random DAG, weights 0..5.

    ``zero_flows``: flows of 0 bytes may appear; ``empty``: coflows without bytes may
    appear (default :data:`EMPTY_COFLOWS`).
    """
    empty = EMPTY_COFLOWS if empty is None else empty
    P = draw(st.integers(*ports))
    m = draw(st.integers(*cores))
    n = draw(st.integers(*coflows))
    core_rates = None
    if heterogeneous and m > 1 and draw(st.booleans()):
        core_rates = tuple(draw(st.lists(st.sampled_from([rate / 2, rate, 2 * rate, 3 * rate]),
                                         min_size=m, max_size=m)))
    cfs = []
    pair = st.tuples(st.integers(0, P - 1), st.integers(0, P - 1))
    for k in range(n):
        pairs = draw(st.lists(pair, min_size=0 if empty else 1, max_size=max_flows,
                              unique=True))
        sizes = draw(st.lists(st.integers(0 if zero_flows else 1, max_size),
                              min_size=len(pairs), max_size=len(pairs)))
        if not empty and not any(sizes):
            sizes[0] = draw(st.integers(1, max_size))
        rel = draw(st.integers(0, 6)) if draw(st.booleans()) else 0
        cfs.append(Coflow(f"c{k}", tuple(Flow(s, d, float(b)) for (s, d), b in
                                         zip(pairs, sizes)),
                          release=float(rel), weight=float(draw(st.integers(0, 5)))))
    all_arcs = [(a, b) for a in range(n) for b in range(a + 1, n)]
    arcs = draw(st.lists(st.sampled_from(all_arcs), unique=True, max_size=n)) if all_arcs else []
    return Workload(Fabric(ports=P, cores=m, rate_bps=rate, core_rates=core_rates),
                    tuple(cfs), tuple((f"c{a}", f"c{b}") for a, b in sorted(arcs)))


@st.composite
def ordered_workloads(draw, **kw):
    """A workload with a flow order (permutation) and a core per flow."""
    w = draw(workloads(**kw))
    nf = len(flow_refs(w))
    order = draw(st.permutations(range(nf)))
    cores = draw(st.lists(st.integers(0, w.fabric.cores - 1), min_size=nf, max_size=nf))
    return w, order, cores


def w_of(coflows, arcs=(), ports=4, cores=1, core_rates=None, rate=R):
    return Workload(Fabric(ports=ports, cores=cores, rate_bps=rate, core_rates=core_rates),
                    tuple(coflows), tuple(arcs))


def close(a, b, rel=1e-9):
    a, b = np.asarray(a, float), np.asarray(b, float)
    return a.shape == b.shape and np.allclose(a, b, rtol=rel, atol=rel)


def variants(name):
    """Option sets to run a registered policy with: defaults, and online mode if it has one."""
    out = [{}]
    params = inspect.signature(available()[name].__init__).parameters
    if "mode" in params:
        out.append({"mode": "online"})
    return out


#: Former bug #3 (controller/policies/lp_list.py, online mode): at a re-plan, a coflow
#: whose started flows had all finished lost its core and its remaining flows went to
#: another core. lp-coflow online on BUG3 split c2 over cores 0 and 1.
BUG3 = Workload(Fabric(ports=2, cores=2, rate_bps=R), (
    Coflow("c0", (Flow(0, 0, 1.0),), release=1.0),
    Coflow("c1", (Flow(0, 0, 1.0),)),
    Coflow("c2", (Flow(1, 0, 1.0), Flow(1, 1, 1.0)))))
INDIVISIBLE = ("lp-coflow", "lp-single")


def _policy_run(name, options):
    pid = name + "".join(f"-{v}" for v in options.values())
    return pytest.param(name, options, id=pid)


POLICY_RUNS = [_policy_run(n, o) for n in REGISTERED for o in variants(n)]


def run_or_refuse(w, name, options, **kw):
    """Simulate; a policy may refuse a heterogeneous fabric with PolicyError, nothing else."""
    policy = get_policy(name, **options)
    try:
        return simulate(w, policy, segments=True, **kw)
    except PolicyError:
        if w.fabric.identical:
            raise
        return None


# --------------------------------------------------------------------------- all policies
def test_there_are_registered_policies():
    assert {"fifo", "lp-flow", "lp-coflow", "lp-single"} <= set(REGISTERED)


@pytest.mark.parametrize("name, options", POLICY_RUNS)
@settings(max_examples=100, **SETTINGS)
@example(w=BUG3)
@given(w=workloads())
def test_every_registered_policy_produces_a_schedule_the_verifier_accepts(name, options, w):
    """Indivisible algorithms (lp-coflow, lp-single) must also keep a coflow on one core."""
    result = run_or_refuse(w, name, options)
    if result is None:
        return
    v = verify(w, result, indivisible=name in INDIVISIBLE)
    assert v.objective == pytest.approx(result.total_weighted_completion, rel=1e-9, abs=1e-9)
    if name == "lp-single":
        assert set(result.segments.core.tolist()) <= {0}


def test_lp_coflow_online_keeps_a_coflow_on_one_core_after_its_first_flows_finish():
    r = simulate(BUG3, get_policy("lp-coflow", mode="online"), segments=True)
    verify(BUG3, r, indivisible=True)


@pytest.mark.parametrize("name", ["fifo", "lp-flow"])
def test_policies_on_heterogeneous_cores_are_verified_or_refused_with_policy_error(name):
    w = w_of([Coflow("a", (Flow(0, 1, 4.0), Flow(1, 0, 2.0))),
              Coflow("b", (Flow(0, 1, 4.0),), release=1.0)], cores=2, core_rates=(R, 2 * R))
    result = run_or_refuse(w, name, {})
    if name == "lp-flow":
        assert result is None  # the LP algorithms assume identical cores
    else:
        verify(w, result)


# --------------------------------------------------------------------------- incremental
def same_run(w, make_policy):
    a = Simulator(w, make_policy(), segments=True, incremental=True).run()
    b = Simulator(w, make_policy(), segments=True, incremental=False).run()
    verify(w, a)
    verify(w, b)
    assert close(a.coflow_completion, b.coflow_completion), \
        (a.coflow_completion, b.coflow_completion)
    assert close(a.flow_completion, b.flow_completion), (a.flow_completion, b.flow_completion)


@settings(max_examples=300, **SETTINGS)
@given(case=ordered_workloads())
def test_incremental_matching_equals_rescan_under_a_fixed_order(case):
    w, order, cores = case
    same_run(w, lambda: FixedOrder(order, cores))


#: Bug #2 (emulate/sim/matching.py run_matching): when a flow completes exactly at the stop
#: time (a release, the plan's horizon), the matching is repaired under the *old* plan
#: before STOP_TIME is returned; the flows it starts there are pinned to a core
#: (State.core >= 0) although they have sent nothing, so the next plan cannot move them.
#: The rescan path does not do this. Here FIFO's order c1, c2, c3 is inverted: c3's flow
#: (3) is pinned to core 1 at t=2 and runs first; rescan (and FIFO) give c2 3, c3 4.
BUG2 = Workload(Fabric(ports=2, cores=2, rate_bps=R), (
    Coflow("c0", (Flow(0, 0, 1.0),), release=2.0),
    Coflow("c1", (Flow(0, 1, 3.0), Flow(0, 0, 2.0))),
    Coflow("c2", (Flow(0, 0, 1.0),)),
    Coflow("c3", (Flow(0, 0, 1.0),))))


def test_fifo_keeps_its_order_when_a_flow_completes_at_a_release_instant():
    r = simulate(BUG2, get_policy("fifo"), segments=True)
    verify(BUG2, r)
    assert r.coflow_completion.tolist() == [4.0, 3.0, 3.0, 4.0]


def test_fifo_on_the_bug2_instance_with_rescan_gives_fifo_order():
    r = Simulator(BUG2, get_policy("fifo"), segments=True, incremental=False).run()
    verify(BUG2, r)
    assert r.coflow_completion.tolist() == [4.0, 3.0, 3.0, 4.0]


def test_flow_that_has_sent_nothing_is_not_pinned_at_a_release_instant():
    Simulator(BUG2, Checked(get_policy("fifo")), incremental=True).run()


#: Bug #4 (every engine's next event; emulate.sim.matching.joins_stop): a completion that
#: falls on a release in exact arithmetic (c1's flow 3 ends at 4 = 7/3 + 5/3, c3 arrives
#: at 4) was an event of its own or not depending on the last ulp of the engine's clock.
#: The rescan advances every sending flow at every event and put it at 3.9999999999999996:
#: sebf planned the completion alone, started c0 on core 1 (pinning it), and c3, released
#: an ulp later, went to the slow core 0 (c0 6, c3 6). The capped engine (whose times are
#: rounded differently) put it at 4.0, one plan for both, as in exact arithmetic: c3 on
#: core 1 first (4 1/3), then c0 (6 1/3). Both schedules passed the verifier. Now an event
#: closer to a release than the finishing tolerance (EPS_BYTES at the fastest link's
#: rate) is the release's instant in every engine.
BUG4 = Workload(Fabric(ports=2, cores=2, rate_bps=R, core_rates=(4.0, 24.0)), (
    Coflow("c0", (Flow(1, 0, 4.0), Flow(1, 1, 2.0)), weight=0.0),
    Coflow("c1", (Flow(0, 1, 1.0), Flow(1, 1, 5.0)), weight=0.0),
    Coflow("c2", (), release=2.0, weight=0.0),
    Coflow("c3", (Flow(1, 0, 1.0),), release=4.0, weight=0.0),
    Coflow("c4", (), release=3.0, weight=0.0),
    Coflow("c5", (Flow(1, 1, 3.0),), weight=0.0),
    Coflow("c6", (Flow(0, 1, 1.0), Flow(1, 0, 4.0)), weight=0.0)))
#: BUG4's completions in exact arithmetic (the same instance with sizes and releases
#: times 3 has integer event times, on which both engines agree)
BUG4_EXACT = [19 / 3, 4.0, 2.0, 13 / 3, 3.0, 1.0, 7 / 3]


@pytest.mark.parametrize("incremental", [True, False])
def test_sebf_plans_a_completion_at_a_release_instant_with_the_release(incremental):
    r = Simulator(BUG4, get_policy("sebf"), segments=True, incremental=incremental).run()
    verify(BUG4, r)
    assert close(r.coflow_completion, BUG4_EXACT), r.coflow_completion
    exact = Workload(BUG4.fabric, tuple(
        Coflow(c.id, tuple(Flow(f.src, f.dst, 3 * f.bytes) for f in c.flows),
               release=3 * c.release, weight=0.0) for c in BUG4.coflows))
    e = Simulator(exact, get_policy("sebf"), incremental=incremental).run()
    assert close(e.coflow_completion / 3, BUG4_EXACT), e.coflow_completion


@settings(max_examples=200, **SETTINGS)
@given(w=workloads(ports=(2, 3), coflows=(2, 12)), rule=st.sampled_from(["balanced", "ecmp"]))
def test_fair_sharing_over_pairs_equals_the_per_flow_rescan(w, rule):
    # few ports and many coflows: (core, src, dst) pairs hold several flows, which the
    # incremental path fills as one (emulate.sim.fairshare) and the rescan flow by flow
    same_run(w, lambda: get_policy("fair", cores=rule))
    quiet = Simulator(w, get_policy("fair", cores=rule)).run()  # no segments recorded
    ref = Simulator(w, get_policy("fair", cores=rule), incremental=False).run()
    assert close(quiet.flow_completion, ref.flow_completion)


@st.composite
def crowded_fabrics(draw):
    """Many flows on up to 8 ports, in one or two groups of ports that share no flow (the
    kernel's components), sizes 1..60 bytes, releases 0 or spread."""
    P = draw(st.integers(3, 8))
    groups = draw(st.sampled_from([1, 2])) if P >= 4 else 1
    half = P // groups
    coflows = []
    for k in range(draw(st.integers(2, 10))):
        g = draw(st.integers(0, groups - 1))
        ports = st.integers(g * half, g * half + half - 1)
        flows = draw(st.lists(st.tuples(ports, ports, st.integers(1, 60)), min_size=1,
                              max_size=12, unique_by=lambda f: f[:2]))
        coflows.append(Coflow(f"c{k}", tuple(Flow(s, d, float(b)) for s, d, b in flows),
                              release=float(draw(st.sampled_from([0, 0, 1, 7])))))
    return Workload(Fabric(ports=P, cores=1, rate_bps=R), tuple(coflows))


@settings(max_examples=150, **SETTINGS)
@given(w=crowded_fabrics())
def test_fair_kernel_equals_the_rescan_on_crowded_ports_and_separate_components(w):
    # many pairs per port: the kept order moves at most events, windows choose, checks
    # fail now and then (every port a candidate again); two groups: two components
    same_run(w, lambda: get_policy("fair"))


def test_fair_kernel_rebases_bytes_served_and_keeps_the_rescan_completions():
    # 2^27-byte flows at 1 byte/s: each port's bytes served per flow pass REBASE (2^26)
    from emulate.sim.fairshare import REBASE
    big = 2.0 ** 27
    w = w_of([Coflow("a", (Flow(0, 1, big), Flow(0, 2, big + 5), Flow(1, 2, 3.0))),
              Coflow("b", (Flow(2, 1, big / 2), Flow(1, 1, 2 * big)))], ports=3)
    a = Simulator(w, get_policy("fair"), segments=True).run()
    b = Simulator(w, get_policy("fair"), segments=True, incremental=False).run()
    verify(w, a)
    assert a.flow_completion.max() > REBASE
    assert close(a.flow_completion, b.flow_completion, rel=1e-12), (a.flow_completion,
                                                                    b.flow_completion)


def fair_state(data):
    """A random instance's fair-sharing state (emulate.sim.fairshare.build): up to 40
    one-byte flows on up to 6 ports; (state, the rule's rates, a function giving the
    state's rates in the flows' order)."""
    from controller.rates import allocate
    from emulate.sim import fairshare
    P = data.draw(st.integers(2, 6))
    n = data.draw(st.integers(1, 40))
    src = np.array(data.draw(st.lists(st.integers(0, P - 1), min_size=n, max_size=n)))
    dst = np.array(data.draw(st.lists(st.integers(0, P - 1), min_size=n, max_size=n)))
    size = np.ones(n)
    core = np.zeros(n, dtype=np.int64)
    cap = np.array([float(data.draw(st.integers(1, 5)))])
    seg = [np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64), np.zeros(1),
           np.zeros(1), np.zeros(1)]
    state, _ = fairshare.build(0.0, np.arange(n), src, dst, core, size, core, P, cap,
                               size.copy(), np.zeros(n), np.full(n, -1), False, np.zeros(n),
                               *seg, 0, src * P + dst, np.full(P * P, -1))
    rule = allocate(np.arange(n), src, dst, core, np.full(n, np.inf), cap, "fair")
    return state, rule, lambda: state.lev[[fairshare._bottleneck(state, state.pair[m])
                                           for m in range(n)]]


@settings(max_examples=200, **SETTINGS)
@given(data=st.data())
def test_fair_filling_of_any_guessed_order_is_the_rule_or_is_refused(data):
    """emulate.sim.fairshare: a filling that follows a guessed order (any window) either
    passes its checks and gives the rule's levels (controller.rates.fair_rates), or fails
    them; with every port a candidate it is the rule."""
    from emulate.sim import fairshare
    state, rule, rate = fair_state(data)
    assert close(rate(), rule, rel=1e-12)
    # a guess: the order shuffled; each component filled again through small windows
    for c in range(len(state.nr)):
        lo, hi = state.loff[c], state.loff[c + 1]
        k = state.nseq[c]
        state.seq[lo:lo + k] = data.draw(st.permutations(state.seq[lo:lo + k].tolist()))
        if not fairshare._fill(state, c, 0, data.draw(st.integers(1, 3)), True):
            assert fairshare._fill(state, c, 0, hi - lo, False)
    assert close(rate(), rule, rel=1e-9)


@settings(max_examples=200, **SETTINGS)
@given(data=st.data())
def test_fair_in_order_filling_with_any_movers_is_the_rule_or_is_refused(data):
    """emulate.sim.fairshare: the in-order pass over a guessed order, with any ports as
    the event's movers (too many to follow included), either gives the rule's levels or
    refuses and leaves the order as it was (a filling with every port a candidate is then
    the rule)."""
    from emulate.sim import fairshare
    state, rule, rate = fair_state(data)
    assert close(rate(), rule, rel=1e-12)
    refused = 0
    for c in range(len(state.nr)):
        lo, hi = state.loff[c], state.loff[c + 1]
        k = state.nseq[c]
        state.seq[lo:lo + k] = data.draw(st.permutations(state.seq[lo:lo + k].tolist()))
        movers = data.draw(st.lists(st.integers(lo, hi - 1), unique=True,
                                    max_size=fairshare.MOVERS + 1))
        state.mv[:min(len(movers), fairshare.MOVERS)] = movers[:fairshare.MOVERS]
        state.mv[fairshare.MOVERS] = len(movers)
        before = state.seq[lo:lo + k].copy()
        if not fairshare._fill_in_order(state, c, 0):
            refused += 1
            assert (state.seq[lo:lo + k] == before).all() and state.nseq[c] == k
            assert fairshare._fill(state, c, 0, hi - lo, False)
        assert not state.ismv.any()
    assert state.counters[4] == refused
    assert close(rate(), rule, rel=1e-9)


def test_fair_events_mostly_keep_the_order_with_their_movers():
    # FB2010's first 15 coflows, every release at 0, on one 150-port switch: the in-order
    # pass (previous order and movers) fills most events; the window and the full scan
    # take the others, and the completions are the per-flow rescan's
    from emulate.io.traces import read_fb_trace
    trace = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "traces",
                         "FB2010-1Hr-150-0.txt")
    w = read_fb_trace(trace, zero_release=True, rate_bps=8 * 2 ** 20, limit=15)
    sim = Simulator(w, get_policy("fair"))
    r = sim.run()
    counters = sim._fair[1].counters
    fillings, refused = int(counters[2]), int(counters[4])
    assert fillings > 1000 and 0 < refused < fillings // 3, counters
    ref = Simulator(w, get_policy("fair"), incremental=False).run()
    assert close(r.coflow_completion, ref.coflow_completion, rel=1e-9)


def assert_max_min_fair(w, r, rtol=1e-9):
    """Brute force, independent of ``controller.rates``: on every elementary interval of
    the segments, the flows sending are exactly the eligible ones (released, predecessors
    done, not finished), no port of a core carries more than the core's rate, and every
    sending flow has a *bottleneck*: a saturated port of its own on which no flow sends
    faster. That characterises the max-min fair allocation (Bertsekas and Gallager, Data
    Networks, 6.5.2)."""
    refs = flow_refs(w)
    seg = r.segments
    cap = w.fabric.rate_bps
    ids = {c.id: k for k, c in enumerate(w.coflows)}
    ready = np.array([c.release for c in w.coflows], dtype=float)
    for a, b in w.precedence:
        ready[ids[b]] = max(ready[ids[b]], r.coflow_completion[ids[a]])
    cut = np.unique(np.concatenate([seg.start, seg.end]))
    for lo, hi in zip(cut[:-1], cut[1:]):
        mid = (lo + hi) / 2
        on = (seg.start <= mid) & (mid < seg.end)
        flows, core, rate = seg.flow[on], seg.core[on], seg.rate_bps[on]
        want = [f for f, ref in enumerate(refs)
                if ready[ref.coflow] <= mid < r.flow_completion[f]]
        assert sorted(flows.tolist()) == want, (mid, flows, want)
        src = np.array([refs[f].src for f in flows])
        dst = np.array([refs[f].dst for f in flows])
        links = [(("out", c, s), ("in", c, d)) for c, s, d in zip(core, src, dst)]
        load, top = {}, {}
        for pair, x in zip(links, rate):
            for link in pair:
                load[link] = load.get(link, 0.0) + x
                top[link] = max(top.get(link, 0.0), x)
        assert max(load.values(), default=0.0) <= cap * (1 + rtol), (mid, load)
        for pair, x in zip(links, rate):
            assert any(load[link] >= cap * (1 - rtol) and x >= top[link] * (1 - rtol)
                       for link in pair), (mid, pair, x, load, top)


@settings(max_examples=150, **SETTINGS)
@given(w=st.one_of(crowded_fabrics(), workloads(heterogeneous=False, coflows=(2, 10),
                                                max_flows=6)))
def test_fair_kernel_rates_are_max_min_fair_by_brute_force(w):
    # every interval of the kept kernel's run, including those after completions inside a
    # kept plan (keep_at_completion) and the re-plans when successors become ready
    r = Simulator(w, get_policy("fair"), segments=True).run()
    verify(w, r)
    assert_max_min_fair(w, r)


def test_brute_force_max_min_check_refuses_a_schedule_that_is_not_fair():
    # two flows out of port 0 served one after the other: feasible (the verifier accepts
    # it) but the waiting flow has rate 0, and fifo's is not max-min fair
    w = w_of([Coflow("a", (Flow(0, 1, 2.0),)), Coflow("b", (Flow(0, 2, 2.0),))], ports=3)
    fifo = Simulator(w, get_policy("fifo"), segments=True).run()
    verify(w, fifo)
    with pytest.raises(AssertionError):
        assert_max_min_fair(w, fifo)
    assert_max_min_fair(w, Simulator(w, get_policy("fair"), segments=True).run())


# capped priority (emulate/sim/capped.py): sebf and weaver give MADD rate caps that fit the
# links; the incremental engine keeps their first pass and repairs their backfill
CAPPED = ["sebf", "weaver"]


def count_capped_runs(monkeypatch):
    """Counts the runs of the incremental capped engine (emulate.sim.capped.CappedEngine)."""
    import emulate.sim.flowsim as sim
    calls = []
    inner = sim.CappedEngine.run

    def spy(*args):
        calls.append(1)
        return inner(*args)

    monkeypatch.setattr(sim.CappedEngine, "run", spy)
    return calls


@settings(max_examples=150, **SETTINGS)
@given(w=workloads(ports=(2, 4), coflows=(2, 10), max_flows=5), name=st.sampled_from(CAPPED))
def test_capped_priority_equals_the_rescan_for_sebf_and_weaver(w, name):
    # few ports and many coflows: pairs hold several flows, ports several backfills
    same_run(w, lambda: get_policy(name))
    quiet = Simulator(w, get_policy(name)).run()  # no segments recorded
    ref = Simulator(w, get_policy(name), incremental=False).run()
    assert close(quiet.flow_completion, ref.flow_completion)


def test_sebf_runs_on_the_capped_engine(monkeypatch):
    calls = count_capped_runs(monkeypatch)
    w = Workload(Fabric(ports=3, cores=1, rate_bps=R), (
        Coflow("a", (Flow(0, 1, 4.0), Flow(0, 2, 2.0))),
        Coflow("b", (Flow(1, 2, 3.0), Flow(2, 1, 1.0))),
        Coflow("c", (Flow(0, 2, 5.0),), release=1.0)))
    r = simulate(w, get_policy("sebf"), segments=True)
    verify(w, r)
    assert calls, "sebf's caps fit the links: the capped engine must run"
    ref = Simulator(w, get_policy("sebf"), incremental=False).run()
    assert close(r.flow_completion, ref.flow_completion)


class OverCapped(Policy):
    """Flows in index order on core 0, each capped at twice the link rate: the second
    flow on a port is held below its cap by the first, so the caps do not fit."""

    name = "test-over-capped"

    def plan(self, state):
        n = state.arrays.n_flows
        return Plan(core=np.zeros(n, dtype=np.int64), rank=np.arange(n, dtype=np.float64),
                    rate_cap=np.full(n, 2 * R), sharing="priority", backfill=True)


def test_caps_that_do_not_fit_the_links_are_left_to_the_rescan(monkeypatch):
    calls = count_capped_runs(monkeypatch)
    w = Workload(Fabric(ports=2, cores=1, rate_bps=R), (
        Coflow("a", (Flow(0, 0, 2.0), Flow(0, 1, 1.0))),))
    r = simulate(w, OverCapped(), segments=True)
    verify(w, r)
    assert not calls
    # port 0 sends the first flow at the link rate (1 byte/s), then the second
    assert r.flow_completion.tolist() == [2.0, 3.0]


@settings(max_examples=40, **SETTINGS)
@given(w=workloads(ports=(2, 4), coflows=(2, 8), max_flows=5, heterogeneous=False))
def test_capped_engine_finishes_flows_whose_rest_is_below_a_clock_tick(w):
    # at t ~ 1e12 s a clock tick (2^-13 s) moves 1e-4 bytes at these rates, above the
    # engine's finishing tolerance: a flow whose rest is smaller must still finish (it
    # once stalled the engine with time standing still). The schedule is checked, not
    # compared with the unshifted run's: remaining bytes rounded to a tick can reorder
    # coflows whose bottlenecks tie exactly (SEBF), as they can in the rescan
    shift = 1e12
    late = Workload(w.fabric, tuple(
        Coflow(c.id, c.flows, release=c.release + shift, weight=c.weight) for c in w.coflows),
        w.precedence)
    got = in_child(lambda: Simulator(late, get_policy("sebf"), segments=True).run(), 60)
    verify(late, got, rtol=1e-2)  # segment ends are multiples of a tick


def in_child(fn, seconds):
    """``fn()`` run in a forked child; fails the test if it takes over ``seconds`` (a
    compiled loop that never returns cannot be interrupted in this process)."""
    ctx = multiprocessing.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=lambda: send.send(fn()))
    child.start()
    ready = recv.poll(seconds)
    if not ready:
        child.kill()
    child.join()
    assert ready, f"the simulation did not finish in {seconds} s (stalled)"
    return recv.recv()


@settings(max_examples=300, **SETTINGS)
@example(w=BUG2, name="fifo")
@given(w=workloads(heterogeneous=False), name=st.sampled_from(REGISTERED))
def test_incremental_matching_equals_rescan_for_registered_policies(w, name):
    same_run(w, lambda: get_policy(name))


@pytest.mark.parametrize("name", REGISTERED)
@settings(max_examples=50, **SETTINGS)
@given(w=workloads())
def test_state_given_to_every_registered_policy_is_consistent_on_the_rescan_path(name, w):
    try:
        Simulator(w, Checked(get_policy(name)), incremental=False).run()
    except PolicyError:
        assert not w.fabric.identical


@settings(max_examples=300, **SETTINGS)
@example(w=BUG2, name="fifo")
@given(w=workloads(), name=st.sampled_from(REGISTERED))
def test_state_given_to_registered_policies_is_consistent_on_the_incremental_path(w, name):
    try:
        Simulator(w, Checked(get_policy(name)), incremental=True).run()
    except PolicyError:
        assert not w.fabric.identical


# --------------------------------------------------------------------------- by hand
def run_fixed(w, order, cores=None, **kw):
    result = simulate(w, FixedOrder(order, cores), segments=True, **kw)
    verify(w, result)
    return result


def segments_of(result, flow):
    s = result.segments
    idx = np.flatnonzero(s.flow == flow)
    idx = idx[np.argsort(s.start[idx])]
    return [(float(s.start[i]), float(s.end[i]), float(s.rate_bps[i]), int(s.core[i]))
            for i in idx]


def merged(segs):
    """Consecutive segments of one flow at the same rate joined: [(start, end, rate)]."""
    out = []
    for t0, t1, r, _ in segs:
        if out and out[-1][1] == t0 and out[-1][2] == r:
            out[-1] = (out[-1][0], t1, r)
        else:
            out.append((t0, t1, r))
    return out


@pytest.mark.parametrize("order", [[0, 1], [1, 0]])
def test_two_flows_sharing_an_input_port_finish_at_one_and_two_size_units(order):
    w = w_of([Coflow("a", (Flow(0, 1, 1.0),)), Coflow("b", (Flow(0, 2, 1.0),))])
    r = run_fixed(w, order)
    first, second = order
    assert r.flow_completion[first] == 1.0 and r.flow_completion[second] == 2.0
    assert merged(segments_of(r, second)) == [(1.0, 2.0, R)]


def test_two_flows_sharing_an_output_port_serialize_and_disjoint_ports_run_in_parallel():
    w = w_of([Coflow("a", (Flow(0, 2, 3.0), Flow(3, 1, 2.0))),
              Coflow("b", (Flow(1, 2, 5.0),))])
    r = run_fixed(w, [0, 1, 2])
    assert r.flow_completion.tolist() == [3.0, 2.0, 8.0]
    assert r.coflow_completion.tolist() == [3.0, 8.0]


def test_fifo_serves_the_example_of_the_simulator_docstring():
    w = w_of([Coflow("a", (Flow(0, 1, 2.0),)), Coflow("b", (Flow(0, 1, 1.0),))], ports=2)
    r = simulate(w, get_policy("fifo"), segments=True)
    verify(w, r)
    assert r.coflow_completion.tolist() == [2.0, 3.0]


def test_dag_successor_starts_exactly_when_its_predecessor_ends():
    w = w_of([Coflow("a", (Flow(0, 1, 2.0), Flow(1, 0, 1.0))), Coflow("b", (Flow(2, 3, 1.0),))],
             arcs=[("a", "b")])
    r = run_fixed(w, [2, 0, 1])  # b's flow first in the list: still waits for a
    assert merged(segments_of(r, 2)) == [(2.0, 3.0, R)]
    assert r.coflow_completion.tolist() == [2.0, 3.0]


#: Bug #1 (emulate/sim/flowsim.py Simulator.step): after every advance,
#: ``for k in flatnonzero((left == 0) & ~cdone): _complete(k)`` completes *every* coflow
#: without bytes left, including empty coflows (no flows, or only zero-byte flows) that
#: are not ready yet (not released, or predecessors unfinished). They get the current time
#: as completion, and their successors' predecessor counts are decremented early (and
#: again when they really become ready, so a successor can wait forever).


def test_empty_coflow_between_two_coflows_keeps_the_precedence_with_fifo():
    # a (2 s) -> e (no flows) -> b; x (1 s, other ports) makes an event at t=1.
    w = w_of([Coflow("a", (Flow(0, 1, 2.0),)), Coflow("e", ()), Coflow("b", (Flow(2, 3, 1.0),)),
              Coflow("x", (Flow(4, 5, 1.0),))], arcs=[("a", "e"), ("e", "b")], ports=6)
    r = simulate(w, get_policy("fifo"), segments=True)
    verify(w, r)  # got: b sends at 1, before e (and a) complete at 2
    assert r.coflow_completion.tolist() == [2.0, 2.0, 3.0, 1.0]


def test_empty_coflow_after_a_released_later_coflow_completes_after_it():
    w = w_of([Coflow("c0", (Flow(0, 0, 1.0),), release=1.0), Coflow("c1", ())],
             arcs=[("c0", "c1")], ports=2)
    r = run_fixed(w, [0])  # got: c1 completes at 1.0, before c0 (2.0)
    assert r.coflow_completion.tolist() == [2.0, 2.0]


def test_chain_through_an_empty_coflow_and_a_late_release():
    # a (2 s) -> e (no flows) -> b; b released at 5; c (no flows) released at 3
    w = w_of([Coflow("a", (Flow(0, 1, 2.0),)), Coflow("e", ()),
              Coflow("b", (Flow(0, 1, 1.0),), release=5.0), Coflow("c", (), release=3.0),
              Coflow("z", (Flow(2, 3, 0.0),))],
             arcs=[("a", "e"), ("e", "b")])
    r = run_fixed(w, [0, 1])
    assert r.coflow_completion.tolist() == [2.0, 2.0, 6.0, 3.0, 0.0]


def test_all_coflows_empty_complete_at_their_ready_times():
    w = w_of([Coflow("a", (), release=2.0), Coflow("b", (), release=1.0)], arcs=[("a", "b")])
    r = run_fixed(w, [])
    assert r.coflow_completion.tolist() == [2.0, 2.0]


def test_later_release_preempts_lower_priority_when_the_policy_ranks_it_first():
    w = w_of([Coflow("lo", (Flow(0, 1, 4.0),)), Coflow("hi", (Flow(0, 1, 1.0),), release=1.0)])
    r = run_fixed(w, [1, 0])
    assert merged(segments_of(r, 0)) == [(0.0, 1.0, R), (2.0, 5.0, R)]
    assert merged(segments_of(r, 1)) == [(1.0, 2.0, R)]
    assert r.coflow_completion.tolist() == [5.0, 2.0]


def test_fifo_does_not_preempt_for_a_later_release():
    w = w_of([Coflow("lo", (Flow(0, 1, 4.0),)), Coflow("hi", (Flow(0, 1, 1.0),), release=1.0)])
    r = simulate(w, get_policy("fifo"), segments=True)
    verify(w, r)
    assert r.coflow_completion.tolist() == [4.0, 5.0]


def test_preempted_flow_resumes_on_its_own_core():
    w = w_of([Coflow("lo", (Flow(0, 1, 4.0),)), Coflow("hi", (Flow(0, 1, 1.0),), release=1.0)],
             cores=2)
    r = run_fixed(w, [1, 0], cores=[1, 1])
    assert {h for *_, h in segments_of(r, 0)} == {1}
    assert r.coflow_completion.tolist() == [5.0, 2.0]


def test_heterogeneous_core_rates_give_each_core_its_own_speed():
    w = w_of([Coflow("slow", (Flow(0, 1, 4.0),)), Coflow("fast", (Flow(0, 1, 4.0),))],
             cores=2, core_rates=(R, 2 * R))
    r = run_fixed(w, [0, 1], cores=[0, 1])
    assert r.coflow_completion.tolist() == [4.0, 2.0]
    assert merged(segments_of(r, 1)) == [(0.0, 2.0, 2 * R)]


def test_time_scales_with_the_link_rate():
    w = w_of([Coflow("a", (Flow(0, 1, 1e6),))], rate=1e9)
    r = run_fixed(w, [0])
    assert r.coflow_completion[0] == pytest.approx(8e6 / 1e9, rel=1e-12)


@settings(max_examples=100, **SETTINGS)
@given(case=ordered_workloads(heterogeneous=False), c=st.sampled_from([2, 3, 7]))
def test_scaling_sizes_and_releases_scales_every_completion(case, c):
    w, order, cores = case
    scaled = w.replace(coflows=tuple(
        Coflow(k.id, tuple(Flow(f.src, f.dst, f.bytes * c) for f in k.flows),
               release=k.release * c, weight=k.weight) for k in w.coflows))
    a = simulate(w, FixedOrder(order, cores))
    b = simulate(scaled, FixedOrder(order, cores))
    assert close(a.coflow_completion * c, b.coflow_completion)


# --------------------------------------------------------------------------- reference
def reference_engine(w, order, cores):
    """algorithms.md 1.5, exactly (Fractions): returns (flow, coflow) completion times.

    ``order``: flow indices (``flow_refs`` numbering), first = highest priority;
    ``cores``: a core per flow. One global loop over all cores; at each event, for each
    core, scan the list and select every eligible flow whose input and output port on
    that core are both free; advance to the next completion or release.
    """
    flows = flow_refs(w)
    n = len(w.coflows)
    index = {c.id: k for k, c in enumerate(w.coflows)}
    preds = [[] for _ in range(n)]
    for a, b in w.precedence:
        preds[index[b]].append(index[a])
    release = [Fraction(c.release) for c in w.coflows]
    speed = [Fraction(w.fabric.core_rate(h)) / 8 for h in range(w.fabric.cores)]
    rem = [Fraction(f.bytes) for f in flows]
    cf = [None] * len(flows)
    ck = [None] * n
    mine = [[f for f, r in enumerate(flows) if r.coflow == k] for k in range(n)]
    t = Fraction(0)

    def ready(k):
        return release[k] <= t and all(ck[p] is not None for p in preds[k])

    def settle():  # completions at t, including empty coflows (cascading)
        changed = True
        while changed:
            changed = False
            for k in range(n):
                if ck[k] is None and ready(k) and all(rem[f] == 0 for f in mine[k]):
                    ck[k] = t
                    changed = True

    settle()
    while any(c is None for c in ck):
        sel = []
        used_in, used_out = set(), set()
        for f in order:  # one scan; ports are per core
            r = flows[f]
            if rem[f] > 0 and ready(r.coflow):
                h = cores[f]
                if (h, r.src) not in used_in and (h, r.dst) not in used_out:
                    sel.append(f)
                    used_in.add((h, r.src))
                    used_out.add((h, r.dst))
        later = [x for x in release if x > t]
        nxt = min(later) if later else None
        if not sel:
            assert nxt is not None, "reference engine stuck"
            t = nxt
            settle()
            continue
        dt = min(rem[f] / speed[cores[f]] for f in sel)
        if nxt is not None:
            dt = min(dt, nxt - t)
        for f in sel:
            rem[f] -= speed[cores[f]] * dt
            if rem[f] == 0:
                cf[f] = t + dt
        t += dt
        settle()
    return cf, ck


def test_reference_engine_on_the_hand_examples():
    w = w_of([Coflow("lo", (Flow(0, 1, 4.0),)), Coflow("hi", (Flow(0, 1, 1.0),), release=1.0)])
    assert reference_engine(w, [1, 0], [0, 0]) == ([5, 2], [5, 2])
    w = w_of([Coflow("a", (Flow(0, 1, 2.0),)), Coflow("e", ()),
              Coflow("b", (Flow(0, 1, 1.0),), release=5.0)], arcs=[("a", "e"), ("e", "b")])
    assert reference_engine(w, [0, 1], [0, 0]) == ([2, 6], [2, 2, 6])


@pytest.mark.parametrize("incremental", [True, False], ids=["incremental", "rescan"])
@settings(max_examples=200, **SETTINGS)
@given(case=ordered_workloads(ports=(2, 4), cores=(1, 2), coflows=(1, 5), max_flows=3,
                              max_size=4))
def test_simulator_equals_exact_reference_engine_under_a_fixed_order(case, incremental):
    w, order, cores = case
    cf, ck = reference_engine(w, order, cores)
    r = Simulator(w, FixedOrder(order, cores), segments=True, incremental=incremental).run()
    verify(w, r)
    assert close(r.flow_completion, [float(x) for x in cf]), (r.flow_completion, cf)
    assert close(r.coflow_completion, [float(x) for x in ck]), (r.coflow_completion, ck)


@settings(max_examples=100, **SETTINGS)
@given(case=ordered_workloads(ports=(2, 3), cores=(1, 2), coflows=(1, 4), max_flows=3,
                              max_size=4, rate=24.0))
def test_simulator_equals_exact_reference_engine_with_fractional_event_times(case):
    w, order, cores = case  # rate 24 bit/s: 3 bytes per second, events at thirds
    cf, ck = reference_engine(w, order, cores)
    r = simulate(w, FixedOrder(order, cores), segments=True)
    verify(w, r)
    assert close(r.flow_completion, [float(x) for x in cf])
    assert close(r.coflow_completion, [float(x) for x in ck])


BUG1_CASE = (Workload(Fabric(ports=2, cores=1, rate_bps=R),
                      (Coflow("c0", (Flow(0, 0, 1.0),), release=1.0), Coflow("c1", ())),
                      (("c0", "c1"),)), [0], [0])


@settings(max_examples=200, **SETTINGS)
@example(case=BUG1_CASE)
@given(case=ordered_workloads(ports=(2, 4), cores=(1, 2), coflows=(1, 5), max_flows=3,
                              max_size=4, empty=True))
def test_simulator_equals_exact_reference_engine_with_empty_coflows(case):
    w, order, cores = case
    cf, ck = reference_engine(w, order, cores)
    r = simulate(w, FixedOrder(order, cores), segments=True)
    verify(w, r)
    assert close(r.coflow_completion, [float(x) for x in ck])


# --------------------------------------------------------------------------- kept pair lists
@settings(max_examples=150, **SETTINGS)
@given(w=workloads(heterogeneous=False, max_flows=6, coflows=(2, 8)),
       name=st.sampled_from(["fifo", "scf", "lcf", "sincronia", "aalo"]))
def test_kept_pair_lists_give_the_rescan_completions_with_releases_at_zero(w, name):
    """With every release at 0 and no DAG a static order re-plans at each completion with
    the same order less the finished coflow: the engine keeps its pair lists."""
    w = Workload(w.fabric, tuple(Coflow(c.id, c.flows, release=0.0, weight=c.weight)
                                 for c in w.coflows))
    same_run(w, lambda: get_policy(name))


def test_a_static_order_builds_its_pair_lists_once_with_releases_at_zero(monkeypatch):
    import emulate.sim.flowsim as flowsim
    calls = []
    real = flowsim.matching_pairs
    monkeypatch.setattr(flowsim, "matching_pairs", lambda *a: calls.append(1) or real(*a))
    w = w_of([Coflow(f"c{k}", (Flow(k % 3, (k + 1) % 3, 1.0 + k), Flow(0, 2, 2.0)))
              for k in range(6)], ports=3)
    r = simulate(w, get_policy("fifo"))
    # fifo's plan holds through completions on one core: asked once, run through
    assert r.extra["policy_calls"] == 1 and len(calls) == 1
    ref = Simulator(w, get_policy("fifo"), incremental=False).run()
    assert ref.extra["policy_calls"] == 6
    assert close(r.coflow_completion, ref.coflow_completion)
    # stepped from outside (a loop that watches completions), it is asked at each one
    sim = Simulator(w, get_policy("fifo"))
    sim.start()
    while not sim.finished:
        sim.step()
    assert sim.policy_calls == 6 and len(calls) == 2
    assert close(sim.result().coflow_completion, ref.coflow_completion)


@settings(max_examples=100, **SETTINGS)
@given(w=workloads(heterogeneous=False), name=st.sampled_from(["fifo", "scf", "fair"]))
def test_plans_kept_through_completions_give_the_completions_of_plans_asked_at_each(w, name):
    """Plan.keep_at_completion: run() keeps the plan through completions (stopping after
    those of coflows with successors, and at releases); stepping from outside asks the
    policy at each completion. Same schedule."""
    kept = Simulator(w, get_policy(name), segments=True).run()
    sim = Simulator(w, get_policy(name), segments=True)
    sim.start()
    while not sim.finished:
        sim.step()
    asked = sim.result()
    verify(w, kept)
    assert kept.extra["policy_calls"] <= asked.extra["policy_calls"]
    assert close(kept.coflow_completion, asked.coflow_completion)
    assert close(kept.flow_completion, asked.flow_completion)


# --------------------------------------------------------------------------- sincronia-offline
def test_sebf_sincronia_offline_allocation_on_a_hand_computed_schedule():
    """Order A (bottleneck 3) then B (5). At 0: A's MADD gives 0->0 1/3 and 1->1 1; B
    needs input 1, full: skipped, and its share needs input 1 too: nothing; work
    conservation tops 0->0 up to 1, so it ends at 1, and ports 0 then idle until the next
    event, A's bottleneck 3 (Varys would re-allocate at 1; nothing else can use them
    here). At 3: B alone, 5 bytes at 1: done at 8."""
    w = w_of([Coflow("A", (Flow(0, 0, 1.0), Flow(1, 1, 3.0))),
              Coflow("B", (Flow(1, 0, 5.0),))], ports=2)
    pol = get_policy("sebf", allocation="sincronia-offline")
    r = Simulator(w, pol, segments=True).run()
    verify(w, r)
    assert close(r.flow_completion, [1.0, 3.0, 8.0])
    assert close(r.coflow_completion, [3.0, 8.0])
    assert close(pol.event_times, [0.0, 3.0, 8.0])
    assert close(pol.reference_completions(r.coflow_completion), [3.0, 8.0])


def test_sebf_sincronia_offline_skips_a_coflow_whose_port_is_full():
    """B (0->1, 1 byte, bottleneck 1) first, then A (0->0 2, 1->1 4: bottleneck 4). At 0
    B takes input 0 and output 1; A is skipped (its input 0 is full) and neither of its
    flows has both ports free for the skipped share or for work conservation: it waits.
    At 1 (B's bottleneck): A's MADD, 0->0 at 1/2 and 1->1 at 1, and work conservation
    tops 0->0 up to 1: it ends at 3, and A at 1 + 4 = 5, the next event."""
    w = w_of([Coflow("A", (Flow(0, 0, 2.0), Flow(1, 1, 4.0))),
              Coflow("B", (Flow(0, 1, 1.0),))], ports=2)
    pol = get_policy("sebf", allocation="sincronia-offline")
    r = Simulator(w, pol, segments=True).run()
    verify(w, r)
    assert close(r.coflow_completion, [5.0, 1.0])
    assert close(r.flow_completion, [3.0, 5.0, 1.0])
    assert close(pol.event_times, [0.0, 1.0, 5.0])


@settings(max_examples=60, **SETTINGS)
@given(w=workloads(heterogeneous=False, cores=(1, 1), max_flows=6))
def test_sebf_sincronia_offline_schedules_pass_the_verifier(w):
    verify(w, Simulator(w, get_policy("sebf", allocation="sincronia-offline"),
                        segments=True).run())


def test_sebf_refuses_an_unknown_allocation_and_sincronia_offline_on_several_cores():
    with pytest.raises(PolicyError, match="allocation"):
        get_policy("sebf", allocation="greedy")
    w = w_of([Coflow("a", (Flow(0, 1, 1.0),))], cores=2)
    with pytest.raises(PolicyError, match="one core"):
        simulate(w, get_policy("sebf", allocation="sincronia-offline"))


REFERENCE = os.environ.get("SINCRONIA_OFFLINESIM", "/tmp/sincronia/offlinesim/offlinesim")


@pytest.mark.skipif(not os.access(REFERENCE, os.X_OK),
                    reason="Sincronia's offlinesim not built (README: Benchmarks)")
@pytest.mark.parametrize("seed", range(4))
def test_sebf_sincronia_offline_reproduces_the_reference_simulator(seed, tmp_path):
    """Random one-switch instances in whole MiB at 1 MiB/s (the reference's unit): the
    reference's per-coflow completions, to its printed precision (6 digits)."""
    import subprocess
    write_reference_input = benchmark("sim_reference").write_reference_input
    rng = np.random.default_rng(seed)
    P = 8
    cfs = []
    for k in range(25):
        pairs = {(int(rng.integers(P)), int(rng.integers(P)))
                 for _ in range(int(rng.integers(1, 8)))}
        cfs.append(Coflow(str(k + 1), tuple(Flow(s, d, float(rng.integers(1, 40)) * 2**20)
                                            for s, d in sorted(pairs))))
    w = Workload(Fabric(ports=P, cores=1, rate_bps=8.0 * 2**20), tuple(cfs))
    write_reference_input(w, str(tmp_path / "in.txt"))
    subprocess.run([REFERENCE, str(tmp_path / "in.txt"), str(tmp_path / "out.log"), "SEBF",
                    "MADD"], check=True, stdout=subprocess.DEVNULL, cwd=tmp_path)
    rows = [r.split() for r in (tmp_path / "out.log").read_text().splitlines()[:-1]]
    ref = np.zeros(len(cfs))
    for r in rows:
        ref[int(r[0]) - 1] = float(r[4])
    pol = get_policy("sebf", allocation="sincronia-offline")
    ours = pol.reference_completions(simulate(w, pol).coflow_completion)
    assert np.allclose(ours, ref, rtol=1e-5, atol=1e-3), (ours, ref)


# --------------------------------------------------------------------------- rekeyed pair lists
def _aalo():
    # thresholds of 1, 2, 4, ... bytes: on these workloads coflows change queues often
    return get_policy("aalo", first_threshold=1.0, factor=2.0, queues=4)


@settings(max_examples=150, **SETTINGS)
@given(w=workloads(cores=(1, 2), coflows=(2, 7), max_size=9))
def test_rekeyed_pair_lists_give_the_rebuilt_schedule(w):
    """aalo's plans move the coflows that crossed a threshold: the matching keeps its pair
    lists and moves those coflows' flows (Simulator._reorder); rebuilt from scratch at
    every such plan instead, the schedule is the same, segment for segment."""
    kept = Simulator(w, _aalo(), segments=True).run()
    rebuilt = Simulator(w, _aalo(), segments=True)
    rebuilt._reorder = lambda plan, st: (None, None)
    rebuilt = rebuilt.run()
    verify(w, kept)
    for name in ("flow", "core", "start", "end", "rate_bps"):
        assert np.array_equal(getattr(kept.segments, name), getattr(rebuilt.segments, name)), name
    assert np.array_equal(kept.flow_completion, rebuilt.flow_completion, equal_nan=True)


@settings(max_examples=150, **SETTINGS)
@given(w=workloads(cores=(1, 2), coflows=(2, 7), max_size=9),
       name=st.sampled_from(["aalo", "fifo", "sincronia"]))
def test_kept_matching_gives_the_schedule_of_a_matching_rebuilt_at_every_plan(w, name):
    """The greedy matching is kept with the pair lists across plans and repaired around
    what changed (the pairs aalo's plans rekey, the ports the last run left free);
    built from scratch at every plan instead (same pair lists), the schedule is the same,
    segment for segment."""
    make = _aalo if name == "aalo" else lambda: get_policy(name)
    kept = Simulator(w, make(), segments=True).run()
    rebuilt = Simulator(w, make(), segments=True)
    inner = rebuilt._advance_matching

    def fresh(*args):
        if rebuilt._kept is not None:
            rebuilt._kept = rebuilt._kept[:3] + (None,)  # no matching kept: build it
        return inner(*args)

    rebuilt._advance_matching = fresh
    rebuilt = rebuilt.run()
    verify(w, kept)
    for field in ("flow", "core", "start", "end", "rate_bps"):
        assert np.array_equal(getattr(kept.segments, field),
                              getattr(rebuilt.segments, field)), field
    assert np.array_equal(kept.flow_completion, rebuilt.flow_completion, equal_nan=True)


class MovingCores(Policy):
    """Coflows by index (a matching plan) or fair sharing; at about half the plans every
    eligible flow not started takes a random core. ``inplace``: the plans' cores are one
    array written in place, as the least-loaded rule's buffer is
    (:func:`controller.cores.plan_cores`); else each plan has a new array with the same
    values."""

    name = "test-moving-cores"

    def __init__(self, seed, sharing, inplace):
        super().__init__()
        self.seed, self.sharing, self.inplace = seed, sharing, inplace

    def start(self, workload):
        super().start(workload)
        self.rng = np.random.default_rng(self.seed)
        self.core = np.zeros(workload.arrays.n_flows, dtype=np.int64)

    def plan(self, state):
        a = state.arrays
        core = self.core if self.inplace else self.core.copy()
        if self.rng.random() < 0.5:
            flows = state.eligible_flows()
            pin = state.core[flows]
            core[flows] = np.where(pin >= 0, pin, self.rng.integers(0, a.cores, len(flows)))
        self.core = core
        if self.sharing == "fair":
            return Plan(core=core, rank=np.zeros(a.n_flows), sharing="fair", backfill=False)
        return coflow_order_plan(state, state.active_coflows, core=core)


@settings(max_examples=150, **SETTINGS)
@given(w=workloads(cores=(2, 3), coflows=(2, 7), max_size=9),
       sharing=st.sampled_from(["priority", "fair"]), seed=st.integers(0, 2**16))
def test_cores_written_in_place_give_the_schedule_of_new_arrays(w, sharing, seed):
    """The engines keep the matching's pair lists and the fair-sharing state while a plan
    leaves its flows on their cores: a policy that writes its plans' cores into one array
    (the least-loaded rule does) gets the schedule of one that makes a new array at each
    plan, segment for segment, and the rescan's completions."""
    runs = [Simulator(w, MovingCores(seed, sharing, inplace), segments=True,
                      incremental=incremental).run()
            for inplace, incremental in ((True, True), (False, True), (True, False))]
    for r in runs:
        verify(w, r)
    inplace, fresh, rescan = runs
    for field in ("flow", "core", "start", "end", "rate_bps"):
        assert np.array_equal(getattr(inplace.segments, field),
                              getattr(fresh.segments, field)), field
    assert close(inplace.coflow_completion, rescan.coflow_completion)


def test_aalo_rekeys_instead_of_rebuilding_with_releases_at_zero(monkeypatch):
    import emulate.sim.flowsim as flowsim
    built, rekeyed = [], []
    for name, calls in (("matching_pairs", built), ("rekey_pairs", rekeyed)):
        real = getattr(flowsim, name)
        monkeypatch.setattr(flowsim, name,
                            lambda *a, real=real, calls=calls: calls.append(1) or real(*a))
    w = w_of([Coflow(f"c{k}", (Flow(k % 3, (k + 1) % 3, 1.0 + k), Flow(0, 2, 2.0 + k)))
              for k in range(6)], ports=3)
    r = simulate(w, _aalo())
    assert len(built) == 1 and len(rekeyed) > 0
    ref = Simulator(w, _aalo(), incremental=False).run()
    assert close(r.coflow_completion, ref.coflow_completion)


@pytest.mark.parametrize("t0", [1e5, 1e5 + 0.37, 1e5 + 0.74, 3e5])
def test_aalo_late_in_a_long_run_moves_past_a_limit_closer_than_half_an_ulp(t0):
    """Late in a run an ulp of the time is long: at 1e5 s 1.5e-11 s, in which nine flows
    at 8 Gbit/s send 0.13 bytes. A coflow short of its threshold by less than half that
    (and by more than aalo's 1e-9 slack) crossed it at a time that rounded to now: the
    matching stopped there for the limit, no byte moved, aalo kept the coflow in its
    queue, and the run never ended (FB2010 repeated four times in time, at t = 8381 s).
    The crossing is an ulp later at least; the run ends as the rescan's does."""
    n, size = 9, 20 * 2**20
    a = Coflow("a", tuple(Flow(i, n + i, size) for i in range(n)), release=t0)
    # released when a, alone until then, crosses 10 MiB: a plan there
    b = Coflow("b", (Flow(2 * n, 2 * n + 1, 1000.0),), release=t0 + 10 * 2**20 / (n * 1e9))
    w = w_of([a, b], ports=2 * n + 2, rate=8e9)
    sim = Simulator(w, get_policy("aalo"), segments=True)
    sim._through = True
    sim.start()
    for _ in range(100):
        if sim.finished:
            break
        sim.step()
    assert sim.finished, f"still at t={sim.t!r} after 100 plans"
    r = sim.result()
    verify(w, r)
    ref = Simulator(w, get_policy("aalo"), incremental=False).run()
    assert close(r.coflow_completion, ref.coflow_completion, rel=1e-12)
