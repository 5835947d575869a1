"""What the simulator keeps from plan to plan for capped priority plans (sebf, weaver).

The capped engine (emulate/sim/capped.py, :class:`CappedEngine`) keeps its pairs, port
lists and backfill from one plan to the next and moves only the coflows whose place in
the order changed; SEBF on one core keeps each coflow's port loads
(:class:`controller.policies.portload.CoflowLoads`) and updates only the flows that sent
(``State.changed``). Each kept path is checked here against the same thing computed from
scratch at every plan, on random small instances with arrivals and completions between
plans, on one and two cores:

* the kept engine against the engine rebuilt at every plan, and against the rescan
  (``incremental=False``, the rule of controller/rates.py), every schedule verified;
* a policy that shuffles the coflow order and the caps at every plan (and sometimes gives
  caps that do not fit the links, which the rescan takes: the engine must rebuild after);
  the same with its rates fixed until a horizon and no backfill (the capped engine
  takes those whether the caps fit or not), kept through completions or not; and caps
  on every flow without backfill, fitting or not (the engine applies the plan again at
  a completion on a port where a flow is held below its cap, as the rescan would);
* SEBF's one-core plan from kept loads against its plan from the eligible flows;
* the engine's due heap after every run: the flows sending, each keyed by its due time
  (a plan keeps the keys of the flows whose rate it leaves alone).
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.plan import CoflowPlan, FlowOrderPlan
from controller.policies import Policy, get_policy
from controller.policies.sebf import Sebf
from emulate.sim.capped import CappedEngine
from emulate.sim.flowsim import Simulator
from test_simulator import SETTINGS, close, workloads
from verifier import verify


class Shuffled(Policy):
    """Every plan: the active coflows in a random order, a random core for each flow not
    yet started, caps on a random share of the flows that fit the links (each at most its
    core's rate over the most capped flows on either of its ports), the others backfill
    (without the backfill a plan may let nothing send).
    With ``overcap``, one plan in five has caps three times as large: they may not fit,
    and the rescan takes that plan."""

    name = "test-shuffled"
    share = 0.6   # of the eligible flows, capped

    def __init__(self, seed: int, overcap: bool):
        super().__init__()
        self.rng = np.random.default_rng(seed)
        self.overcap = overcap

    def plan(self, state):
        a = state.arrays
        rng = self.rng
        order = rng.permutation(state.active_coflows)
        core = np.where(state.core >= 0, state.core, rng.integers(0, a.cores, a.n_flows))
        pos = np.full(a.n_coflows, -1)
        pos[order] = np.arange(len(order))
        elig = np.flatnonzero(state.eligible)
        chosen = elig[rng.random(len(elig)) < self.share]
        chosen = chosen[np.lexsort((chosen, pos[a.coflow[chosen]]))]  # rank order
        cap = fitting_caps(rng, state, core, chosen, self.overcap)
        return CoflowPlan(state, order, core, cap_flows=chosen, cap_values=cap,
                          backfill=True)


def fitting_caps(rng, state, core, chosen, overcap):
    """Caps (bits/s) for the flows ``chosen`` on ``core`` that fit the links: each at
    most its core's rate over the most chosen flows on either of its ports (with
    ``overcap``, one call in five three times as large: they may not fit)."""
    a = state.arrays
    P, C = a.ports, a.cores
    h = core[chosen]
    n_in = np.bincount(h * P + a.src[chosen], minlength=C * P)
    n_out = np.bincount(h * P + a.dst[chosen], minlength=C * P)
    most = np.maximum(n_in[h * P + a.src[chosen]], n_out[h * P + a.dst[chosen]])
    rates = np.asarray(state.workload.fabric.rates, dtype=np.float64)
    cap = rates[h] / np.maximum(most, 1) * rng.uniform(0.2, 1.0, len(chosen))
    if overcap and rng.random() < 0.2:
        cap *= 3.0
    return cap


class ShuffledSubCoflows(Shuffled):
    """:class:`Shuffled` by sub-coflows (a coflow's flows on one core): every plan a
    random core for each flow not yet started (so flows move between sub-coflows, and a
    sub-coflow can leave the order and come back), the sub-coflows in a random order, a
    :class:`FlowOrderPlan` listing them ``grouped``, caps on a random share of the flows
    that fit the links (or, with ``overcap``, sometimes not)."""

    name = "test-shuffled-sub-coflows"

    def plan(self, state):
        a = state.arrays
        rng = self.rng
        core = np.where(state.core >= 0, state.core, rng.integers(0, a.cores, a.n_flows))
        elig = np.flatnonzero(state.eligible)
        sub = a.coflow[elig] * a.cores + core[elig]
        ids = np.unique(sub)
        pos = np.empty(a.n_coflows * a.cores, dtype=np.int64)
        pos[ids] = rng.permutation(len(ids))
        flows = elig[np.lexsort((elig, pos[sub]))]
        chosen = flows[rng.random(len(flows)) < 0.6]   # (in rank order)
        cap = fitting_caps(rng, state, core, chosen, self.overcap)
        return FlowOrderPlan(state, flows, core, grouped=True, cap_flows=chosen,
                             cap_values=cap, backfill=True)


class ShuffledFixed(Shuffled):
    """:class:`Shuffled` with its rates fixed until its horizon (``Plan.rates_fixed``,
    no backfill: Sincronia's offline allocation is such a plan): a random order, caps on
    a random share of the flows (with ``overcap`` sometimes not fitting the links), a
    horizon a random time ahead. With ``keep`` the policy returns the plan again when
    asked at a completion before its horizon; with ``declare`` (default: ``keep``) the
    plan says so (``Plan.keep_at_completion``), so an engine may run through completions
    without asking."""

    name = "test-shuffled-fixed"

    def __init__(self, seed: int, overcap: bool, keep: bool, declare: bool | None = None):
        super().__init__(seed, overcap)
        self.keep = keep
        self.declare = keep if declare is None else declare
        self.kept = None

    def plan(self, state):
        kept = self.kept
        if (self.keep and kept is not None and state.event == "completion"
                and state.time < kept.horizon):
            return kept
        plan = super().plan(state)
        plan.backfill = False
        plan.rates_fixed = True
        plan.keep_at_completion = self.declare
        plan.horizon = state.time + float(self.rng.uniform(0.5, 4.0))
        self.kept = plan
        return plan


class ShuffledCapsOnly(Shuffled):
    """:class:`Shuffled` without backfill, its rates not fixed (CoflowSim's FIFO is such
    a plan): a random order, caps on every eligible flow, with ``overcap`` sometimes
    not fitting the links. A completion on a port where a flow is held below its
    cap gives it more: the rescan does it at every completion, the capped engine applies
    the plan again at those completions."""

    name = "test-shuffled-caps-only"
    share = 1.0

    def plan(self, state):
        plan = super().plan(state)
        plan.backfill = False
        return plan


def rebuilt_every_plan(mp):
    """Patch the capped engine to forget its pairs before every plan."""
    inner = CappedEngine.plan

    def plan(self, *args):
        self.invalidate()
        return inner(self, *args)

    mp.setattr(CappedEngine, "plan", plan)


def kept_rebuilt_rescan(w, make_policy):
    """The run with the kept engine, with the engine rebuilt at every plan, and the
    rescan's; each verified; returns them."""
    kept = Simulator(w, make_policy(), segments=True).run()
    with pytest.MonkeyPatch.context() as mp:
        rebuilt_every_plan(mp)
        rebuilt = Simulator(w, make_policy(), segments=True).run()
    rescan = Simulator(w, make_policy(), segments=True, incremental=False).run()
    for r in (kept, rebuilt, rescan):
        verify(w, r)
    return kept, rebuilt, rescan


def assert_same(*runs):
    first = runs[0]
    for r in runs[1:]:
        assert close(first.flow_completion, r.flow_completion), \
            (first.flow_completion, r.flow_completion)
        assert close(first.coflow_completion, r.coflow_completion)


@settings(max_examples=40, **SETTINGS)
@given(w=workloads(ports=(2, 4), cores=(1, 2), coflows=(2, 10), max_flows=5),
       name=st.sampled_from(["sebf", "weaver"]))
def test_kept_capped_engine_equals_rebuilt_engine_and_rescan(w, name):
    assert_same(*kept_rebuilt_rescan(w, lambda: get_policy(name)))


@settings(max_examples=60, **SETTINGS)
@given(w=workloads(ports=(2, 4), cores=(1, 2), coflows=(2, 10), max_flows=5),
       seed=st.integers(0, 2 ** 32 - 1), overcap=st.booleans())
def test_kept_engine_under_shuffled_orders_and_caps(w, seed, overcap):
    # every plan moves many coflows (the kept engine relabels and moves their flows) and
    # flows not yet started change cores; runs are compared plan for plan, so they must
    # see the same states: the same seed draws the same orders
    assert_same(*kept_rebuilt_rescan(w, lambda: Shuffled(seed, overcap)))


@settings(max_examples=60, **SETTINGS)
@given(w=workloads(ports=(2, 4), cores=(1, 3), coflows=(2, 10), max_flows=5),
       seed=st.integers(0, 2 ** 32 - 1), overcap=st.booleans())
def test_kept_engine_under_shuffled_sub_coflows(w, seed, overcap):
    # the engine keys flows by sub-coflow labels from plan to plan: sub-coflows move,
    # appear, leave and come back as flows not yet started change cores
    assert_same(*kept_rebuilt_rescan(w, lambda: ShuffledSubCoflows(seed, overcap)))


@settings(max_examples=60, **SETTINGS)
@given(w=workloads(ports=(2, 4), cores=(1, 2), coflows=(2, 10), max_flows=5),
       seed=st.integers(0, 2 ** 32 - 1), overcap=st.booleans())
def test_caps_without_backfill_run_on_the_capped_engine_as_on_the_rescan(w, seed, overcap):
    assert_same(*kept_rebuilt_rescan(w, lambda: ShuffledCapsOnly(seed, overcap)))


@settings(max_examples=60, **SETTINGS)
@given(w=workloads(ports=(2, 4), cores=(1, 2), coflows=(2, 10), max_flows=5),
       seed=st.integers(0, 2 ** 32 - 1), overcap=st.booleans(), keep=st.booleans())
def test_fixed_rates_without_backfill_run_on_the_capped_engine_as_on_the_rescan(
        w, seed, overcap, keep):
    # the capped engine takes fixed rates without backfill (every capped flow at what the
    # first pass gives it until the next plan), whether the caps fit or not; a plan kept
    # through completions is run through them only when its caps fit (else a completion
    # frees what held a flow below its cap, and the rescan, asked again, gives it more)
    assert_same(*kept_rebuilt_rescan(w, lambda: ShuffledFixed(seed, overcap, keep)))


def test_fixed_rates_reach_the_capped_engine_and_kept_plans_run_through_completions(
        monkeypatch):
    # the property above tests the capped engine only if fixed-rate plans reach it: count
    # its runs, and the policy's calls when the plan says it is kept through completions
    # and when it does not (the same plans: the same schedule either way)
    from controller.model import Coflow, Flow, Workload
    from topologies.fabric import Fabric
    runs = []
    inner = CappedEngine.run

    def spy(self, sim, stop):
        runs.append(stop)
        return inner(self, sim, stop)

    monkeypatch.setattr(CappedEngine, "run", spy)
    w = Workload(Fabric(ports=4, cores=1, rate_bps=8.0), tuple(
        Coflow(f"c{k}", (Flow(k % 4, (k + 1) % 4, 1.0 + k), Flow((k + 2) % 4, k % 4, 2.0)))
        for k in range(8)))
    calls = {}
    results = {}
    for declare in (False, True):
        policy = ShuffledFixed(3, False, True, declare)
        runs.clear()
        results[declare] = Simulator(w, policy, segments=True).run()
        verify(w, results[declare])
        calls[declare] = results[declare].extra["policy_calls"]
        assert len(runs) == calls[declare]   # every plan ran on the capped engine
    assert calls[True] < calls[False], calls
    assert_same(results[False], results[True])


def test_caps_that_do_not_fit_without_backfill_run_on_the_capped_engine(monkeypatch):
    # the property above tests the engine's re-application only if such plans reach
    # the engine and a completion on a port where a flow is held below its cap applies
    # the plan again: count the plans it refused and its refits
    from controller.model import Coflow, Flow, Workload
    from topologies.fabric import Fabric
    refused, refits = [], []
    inner_plan, inner_refit = CappedEngine.plan, CappedEngine._refit

    def plan(self, *args):
        ok = inner_plan(self, *args)
        refused.append(not ok)
        return ok

    def refit(self, sim):
        refits.append(sim.t)
        inner_refit(self, sim)

    monkeypatch.setattr(CappedEngine, "plan", plan)
    monkeypatch.setattr(CappedEngine, "_refit", refit)
    w = Workload(Fabric(ports=3, cores=1, rate_bps=8.0), tuple(
        Coflow(f"c{k}", (Flow(k % 3, (k + 1) % 3, 1.0 + k), Flow((k + 2) % 3, k % 3, 2.0)))
        for k in range(9)))

    class Overcapped(ShuffledCapsOnly):
        def plan(self, state):
            p = super().plan(state)
            p.cap_values = p.cap_values * 3.0   # never fits: 3 x what would
            return p

    kept = Simulator(w, Overcapped(5, False), segments=True).run()
    rescan = Simulator(w, Overcapped(5, False), segments=True, incremental=False).run()
    verify(w, kept)
    assert_same(kept, rescan)
    assert refused and not any(refused) and len(refits) >= 3, (refused, refits)


@pytest.mark.parametrize("policy,method", [(Shuffled, "_reorder"),
                                           (ShuffledSubCoflows, "_regroup")])
def test_shuffled_plans_run_on_the_kept_engine(monkeypatch, policy, method):
    # the properties above test the kept engine only if its plans reach it and it keeps
    # pairs: count the plans it applied without a rebuild
    kept = []
    inner = getattr(CappedEngine, method)

    def spy(self, *args):
        ok = inner(self, *args)
        kept.append(ok)
        return ok

    monkeypatch.setattr(CappedEngine, method, spy)
    from controller.model import Coflow, Flow, Workload
    from topologies.fabric import Fabric
    w = Workload(Fabric(ports=3, cores=2, rate_bps=8.0), tuple(
        Coflow(f"c{k}", (Flow(k % 3, (k + 1) % 3, 1.0 + k), Flow((k + 2) % 3, k % 3, 2.0)),
               release=float(k // 3)) for k in range(9)))
    assert_same(*kept_rebuilt_rescan(w, lambda: policy(7, False)))
    assert sum(kept) >= 3, kept


class BothSebfPlans(Policy):
    """SEBF's one-core plan (kept loads), checked at every call against its plan from the
    eligible flows' remaining bytes (:meth:`Sebf._any_core_plan`)."""

    name = "test-both-sebf"

    def __init__(self):
        super().__init__()
        self.kept, self.scratch = Sebf(), Sebf()
        self.calls = 0

    def start(self, workload):
        self.workload = workload
        self.kept.start(workload)
        self.scratch.start(workload)

    def plan(self, state):
        self.calls += 1
        plan = self.kept._one_core_plan(state)
        ref = self.scratch._any_core_plan(state)
        assert np.array_equal(plan.coflow_order, ref.coflow_order), \
            (plan.coflow_order, ref.coflow_order)
        a = state.arrays
        ordered = np.zeros(a.n_coflows, dtype=bool)
        ordered[plan.coflow_order] = True
        f = np.flatnonzero(state.eligible & ordered[a.coflow])
        assert close(plan.rate_cap[f], ref.rate_cap[f]), (plan.rate_cap[f], ref.rate_cap[f])
        assert np.array_equal(f[np.argsort(plan.rank[f], kind="stable")],
                              f[np.argsort(ref.rank[f], kind="stable")])
        return plan


@settings(max_examples=60, **SETTINGS)
@given(w=workloads(ports=(2, 5), cores=(1, 1), coflows=(1, 10), max_flows=6, empty=False),
       incremental=st.booleans())
def test_sebf_one_core_plan_from_kept_loads_equals_the_plan_from_scratch(w, incremental):
    # incremental: the capped engine hands State.changed (only the flows that sent are
    # summed again); the rescan hands none (every load is summed)
    policy = BothSebfPlans()
    r = Simulator(w, policy, segments=True, incremental=incremental).run()
    verify(w, r)
    assert policy.calls >= 1


class SebfAgainstDense(Policy):
    """SEBF's plan on any number of cores (a :class:`CoflowPlan`: ranks built if read,
    MADD caps on the flows that get one), checked at every call against the dense plan
    of its definition: rank ``g + tie`` for the eligible flows of ``order[g]`` and one
    rank after them for the rest, the least-loaded cores (0 where unassigned), and
    MADD's caps on the eligible flows in order, NaN (none) elsewhere."""

    name = "test-sebf-dense"

    def __init__(self):
        super().__init__()
        self.sebf = Sebf()
        self.calls = 0

    def start(self, workload):
        self.workload = workload
        self.sebf.start(workload)

    def plan(self, state):
        from controller.cores import least_loaded_cores
        from controller.policies.portload import FlowIndex, madd_rates
        self.calls += 1
        plan = self.sebf._any_core_plan(state)
        a = state.arrays
        order = plan.coflow_order
        idx = FlowIndex(a)
        flows, bounds = idx.gather(order, state.eligible)
        group = np.repeat(np.arange(len(order)), np.diff(bounds))
        rank = np.full(a.n_flows, float(len(order) + 1))
        rank[flows] = group + idx.tie[flows]
        core = least_loaded_cores(a, flows, state.remaining, state.core,
                                  state.workload.fabric.rates)
        cap = np.full(a.n_flows, np.nan)
        cap[flows] = madd_rates(a, flows, group, core, state.remaining,
                                state.workload.fabric.rates)
        assert isinstance(plan, CoflowPlan)
        assert np.array_equal(plan.core, core)
        assert np.array_equal(plan.rank, rank)
        assert np.array_equal(plan.rate_cap, cap, equal_nan=True)
        assert np.all(plan.cap_values > 0) if plan.cap_flows is not None else True
        return plan


class WeaverAgainstDense(Policy):
    """Weaver's plan on several cores (a :class:`FlowOrderPlan`: its flows in order,
    MADD caps on those that get one), checked at every call: its order is every
    eligible flow once, sub-coflow after sub-coflow (a coflow's flows on one core), and
    its dense ranks and caps, built when read, agree with it."""

    name = "test-weaver-dense"

    def __init__(self):
        super().__init__()
        self.weaver = get_policy("weaver")
        self.calls = 0

    def start(self, workload):
        self.workload = workload
        self.weaver.start(workload)

    def plan(self, state):
        plan = self.weaver.plan(state)
        a = state.arrays
        self.calls += 1
        if a.cores == 1:
            return plan   # (sebf's plan: the check above)
        assert isinstance(plan, FlowOrderPlan)
        f = plan.flows
        assert np.array_equal(np.sort(f), np.flatnonzero(state.eligible))
        sub = a.coflow[f] * a.cores + plan.core[f]
        runs = sub[np.flatnonzero(np.diff(sub, prepend=-1))]
        assert len(np.unique(runs)) == len(runs)   # each sub-coflow's flows together
        assert np.array_equal(plan.flow_order(state), f)
        rank = plan.rank
        assert np.array_equal(f[np.argsort(rank[f], kind="stable")], f)
        assert np.all(rank[~state.eligible] >= len(f))
        cap = plan.rate_cap
        assert np.all(np.isnan(cap[~state.eligible]))
        assert np.all(cap[f] >= 0.0)
        assert np.array_equal(np.flatnonzero(cap > 0), np.sort(plan.cap_flows))
        assert np.array_equal(cap[plan.cap_flows], plan.cap_values)
        return plan


@settings(max_examples=60, **SETTINGS)
@given(w=workloads(ports=(2, 5), cores=(1, 3), coflows=(1, 10), max_flows=6, empty=False),
       checked=st.sampled_from([SebfAgainstDense, WeaverAgainstDense]))
def test_sparse_plans_agree_with_their_dense_form(w, checked):
    policy = checked()
    r = Simulator(w, policy, segments=True).run()
    verify(w, r)
    assert policy.calls >= 1


def test_flow_order_plan_must_list_every_eligible_flow_once():
    """A :class:`FlowOrderPlan` missing an eligible flow, listing one twice, listing a
    flow that cannot send or an index out of range is refused with a PlanError."""
    from controller.model import Coflow, Flow, Workload
    from controller.plan import PlanError
    from topologies.fabric import Fabric
    w = Workload(Fabric(cores=2, ports=3, rate_bps=8e6),
                 [Coflow("a", [Flow(0, 1, 1e6), Flow(0, 2, 1e6)]),
                  Coflow("b", [Flow(2, 0, 1e6)], release=5.0)])
    bad = {"missing": [0], "twice": [0, 0], "not ready": [0, 2], "out of range": [0, 7],
           "negative": [1, -1]}

    class Listing(Policy):
        name = "test-listing"

        def __init__(self, flows=None, grouped=False, core=(0, 0, 0)):
            super().__init__()
            self.flows, self.grouped, self.core = flows, grouped, np.array(core)

        def plan(self, state):
            flows = (np.flatnonzero(state.eligible)[::-1] if self.flows is None
                     else self.flows)
            return FlowOrderPlan(state, flows, self.core, grouped=self.grouped)

    for what, flows in bad.items():
        with pytest.raises(PlanError, match="every eligible flow once"):
            Simulator(w, Listing(flows)).run()
        # grouped, the sub-coflows tell a flow listed twice (each once, by index inside)
        with pytest.raises(PlanError, match="every eligible flow once|by index inside"):
            Simulator(w, Listing(flows, grouped=True, core=(0, 1, 0))).run()
    # a grouped order reads its flows' cores: checked first
    for core in ((0, -1, 0), (0, 2, 0)):
        with pytest.raises(PlanError, match="plan.core must be in 0..1"):
            Simulator(w, Listing([1, 0], grouped=True, core=core)).run()
    ok = Simulator(w, Listing()).run()   # the eligible flows, last first
    assert np.all(np.isfinite(ok.coflow_completion))
    assert ok.flow_completion[1] < ok.flow_completion[0]

    # grouped: each sub-coflow's flows together, by index inside
    class Grouped(Policy):
        name = "test-grouped"

        def __init__(self, core):
            super().__init__()
            self.core = np.asarray(core, dtype=np.int64)

        def plan(self, state):
            flows = np.flatnonzero(state.eligible)[::-1]
            return FlowOrderPlan(state, flows, self.core, grouped=True)

    with pytest.raises(PlanError, match="together, by index inside"):
        Simulator(w, Grouped([0, 0, 0])).run()   # coflow a's flows on core 0, 1 before 0
    assert np.all(np.isfinite(Simulator(w, Grouped([0, 1, 0])).run().coflow_completion))


def due_heap_checked(mp):
    """Patch the capped engine to check its due heap after every run: a heap (each key at
    most its children's), ``hpos`` its inverse, holding exactly the flows sending, each
    keyed by the time its remaining bytes reach the finishing tolerance at its rate
    (a flow whose rate a plan leaves alone keeps the key it had: the same time)."""
    from emulate.sim.matching import EPS_BYTES
    inner = CappedEngine.run
    checked = []

    def run(self, sim, stop):
        reason = inner(self, sim, stop)
        nh, hk, hf = self.nh, self.hk, self.hf
        assert np.all(hk[(np.arange(1, nh) - 1) // 2] <= hk[1:nh])
        assert np.array_equal(self.hpos[hf[:nh]], np.arange(nh))
        assert np.count_nonzero(self.hpos >= 0) == nh
        assert np.array_equal(np.sort(hf[:nh]), np.flatnonzero(sim.rate > 0))
        f = hf[:nh]
        left = np.maximum(sim.rem[f] - (EPS_BYTES + 1e-12 * sim.arrays.size[f]), 0.0)
        assert close(hk[:nh], self.tl[f] + left / sim.rate[f], rel=1e-12)
        checked.append(nh)
        return reason

    mp.setattr(CappedEngine, "run", run)
    return checked


@settings(max_examples=30, **SETTINGS)
@given(w=workloads(ports=(2, 4), cores=(1, 2), coflows=(2, 10), max_flows=5,
                 empty=False),
       seed=st.integers(0, 2 ** 32 - 1), shuffled=st.booleans())
def test_due_heap_holds_the_sending_flows_at_their_due_times(w, seed, shuffled):
    with pytest.MonkeyPatch.context() as mp:
        checked = due_heap_checked(mp)
        Simulator(w, Shuffled(seed, False) if shuffled else get_policy("sebf")).run()
    assert checked
