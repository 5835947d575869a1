"""The run core both engines share: the rate rule, the coflows' lifecycle, restarts.

* The controller's rates (``controller.rates.allocate``) are the simulator's: on random
  plans (priority with and without caps and backfill, fair with caps) the rates the
  simulator's rescan gives every flow are the ones ``allocate`` returns.
* The lifecycle (``controller.lifecycle``): empty coflows complete when ready, in a
  cascade; a gated coflow waits for its opening and for its release time; eligibility is
  ``ready[coflow] & ~flow_done``; the controller logs every completion.
* A simulator started from a :class:`~emulate.sim.flowsim.StartPoint` continues the run it was
  taken from; the residual network of a restart (``controller.jobrun.residual``).
"""
from __future__ import annotations

import numpy as np
import pytest

from controller.jobrun import residual
from controller.jobs import mapreduce_jobs
from controller.lifecycle import CoflowLifecycle
from controller.model import Coflow, Flow, Workload
from controller.plan import Plan
from controller.policies import Policy, get_policy
from controller.rates import allocate, byte_caps
from emulate.sim.flowsim import Simulator, StartPoint
from topologies.fabric import Fabric


# --------------------------------------------------------------------------- rates
class RandomPlan(Policy):
    """One random plan (rank, core, caps in bits/s, sharing, backfill), every call."""

    name = "test-random-plan"

    def __init__(self, rng, n_flows, cores, sharing, caps, backfill):
        super().__init__()
        self.rank = rng.permutation(n_flows).astype(np.float64)
        self.core = rng.integers(0, cores, n_flows).astype(np.int64)
        self.cap = None
        if caps:
            self.cap = np.where(rng.random(n_flows) < 0.6, rng.uniform(0.0, 24.0, n_flows),
                                np.nan)
            self.cap[rng.random(n_flows) < 0.1] = 0.0
        self.sharing = sharing
        self.backfill = backfill

    def plan(self, state):
        return Plan(core=self.core.copy(), rank=self.rank.copy(), rate_cap=self.cap,
                    sharing=self.sharing, backfill=self.backfill)


def _random_workload(rng) -> Workload:
    ports, cores = int(rng.integers(2, 7)), int(rng.integers(1, 4))
    rates = tuple(float(x) for x in rng.choice([4.0, 8.0, 16.0, 24.0], cores))
    coflows = []
    for k in range(int(rng.integers(1, 6))):
        pairs = {(int(rng.integers(ports)), int(rng.integers(ports)))
                 for _ in range(int(rng.integers(1, 6)))}
        coflows.append(Coflow(f"c{k}", tuple(Flow(s, d, float(rng.integers(1, 50)))
                                             for s, d in sorted(pairs))))
    return Workload(Fabric(ports=ports, cores=cores, rate_bps=8.0, core_rates=rates),
                    tuple(coflows))


@pytest.mark.parametrize("sharing, caps, backfill", [
    ("priority", False, True), ("priority", True, False), ("priority", True, True),
    ("fair", False, True), ("fair", True, True)])
def test_controller_rates_are_the_simulators_rates(sharing, caps, backfill):
    rng = np.random.default_rng(11)
    for _ in range(60):
        w = _random_workload(rng)
        a = w.arrays
        policy = RandomPlan(rng, a.n_flows, a.cores, sharing, caps, backfill)
        sim = Simulator(w, policy, incremental=False)  # the rescan: the rule itself
        sim.start()
        sim.step(until=1e-6)                           # before any flow can finish
        order = np.lexsort((np.arange(a.n_flows), policy.rank))
        cap = np.full(a.n_flows, np.inf)
        if policy.cap is not None:
            byte_caps(order, policy.cap, cap)
        core_rate = np.array(w.fabric.rates) / 8.0
        want = allocate(order, a.src, a.dst, policy.core, cap, core_rate, sharing, backfill)
        assert sim.rate[order].tolist() == want.tolist()


# --------------------------------------------------------------------------- lifecycle
def _chain() -> Workload:
    """a -> e (empty) -> b, b released at 2; c (gated in the tests) released at 3."""
    return Workload(Fabric(ports=2, cores=1, rate_bps=8.0),
                    (Coflow("a", (Flow(0, 1, 1.0),)), Coflow("e", ()),
                     Coflow("b", (Flow(1, 0, 1.0),), release=2.0),
                     Coflow("c", (Flow(0, 1, 1.0),), release=3.0)),
                    (("a", "e"), ("e", "b")))


def test_empty_coflows_complete_when_ready_in_a_cascade():
    w = _chain()
    life = CoflowLifecycle(w.arrays)
    done = np.zeros(w.arrays.n_flows, dtype=bool)
    life.release_due(0.0)
    assert life.make_ready(0.0, done)
    assert life.ready.tolist() == [True, False, False, False]
    done[0] = True
    assert life.finish_flow(0, 1.0)             # a completes; e is ready and empty
    assert life.make_ready(1.0, done)
    assert life.completion[:2].tolist() == [1.0, 1.0] and not life.ready[2]
    life.release_due(2.0)
    assert life.make_ready(2.0, done) and life.ready[2]
    assert life.eligible.tolist() == (life.ready[w.arrays.coflow] & ~done).tolist()


def test_a_gated_coflow_waits_for_its_opening_and_its_release_time():
    w = _chain()
    done = np.zeros(w.arrays.n_flows, dtype=bool)
    early = CoflowLifecycle(w.arrays, gated=[3])
    early.release_due(1.0)
    assert early.open(3) and not early.released[3]     # opened before its release time
    early.release_due(3.0)
    assert early.released[3]
    late = CoflowLifecycle(w.arrays, gated=[3])
    late.release_due(4.0)
    assert not late.released[3]                         # due, but not opened
    assert late.open(3) and late.released[3]
    assert not late.open(3)                             # opened once
    assert late.make_ready(4.0, done) and late.eligible[2]


def test_the_controller_logs_every_coflow_the_lifecycle_completes(tmp_path):
    import json
    import time
    from controller.runtime import EmulationRun, RunConfig
    cfg = RunConfig(run_dir=str(tmp_path), api_path=str(tmp_path / "api"), ofp_port=0,
                    n_hosts=2, n_cores=1)
    run = EmulationRun(cfg, _chain(), get_policy("fifo"), switches=None)
    run.warm_up()                                # (on a lifecycle of its own)
    assert not run.lifecycle.released.any()
    run.t0 = time.time()
    run.release(0.0)
    assert run._make_ready()
    assert run.lifecycle.finish_flow(0, 1.0)
    run.flow_done[0] = True
    run._make_ready()
    st = run.state("completion")
    assert st.done.tolist() == [True, True, False, False]
    assert st.eligible.tolist() == [False, False, False]
    run._dlog.close()
    lines = [json.loads(x) for x in open(tmp_path / "decisions.jsonl")]
    assert [x["coflow"] for x in lines if x["event"] == "coflow_done"] == ["a", "e"]


# --------------------------------------------------------------------------- restarts
def test_a_simulation_started_from_a_start_point_continues_the_run():
    w = Workload(Fabric(ports=3, cores=2, rate_bps=8.0),
                 tuple(Coflow(f"c{k}", (Flow(k % 3, (k + 1) % 3, 3.0 + k),
                                        Flow((k + 1) % 3, k % 3, 2.0)), release=float(k))
                       for k in range(5)))
    whole = Simulator(w, get_policy("fifo")).run()
    first = Simulator(w, get_policy("fifo"))
    first.start()
    while first.t < 4.5:
        first.step(until=4.5)
    keep = ~first.lifecycle.done                   # coflows that have not completed
    kept = np.flatnonzero(keep[w.arrays.coflow] & (first.rem > 0))   # their flows left
    assert (first.rem[kept] < w.arrays.size[kept]).any()
    assert (first.pinned[kept] >= 0).any()
    coflows, g = [], 0                             # g: the engines' numbering of flows
    for c, k in zip(w.coflows, keep):
        mine = [f for n, f in enumerate(c.flows) if first.rem[g + n] > 0]
        g += len(c.flows)
        if k:
            coflows.append(Coflow(c.id, tuple(mine), release=c.release, weight=c.weight))
    rest = Workload(w.fabric, tuple(coflows))
    resumed = Simulator(rest, get_policy("fifo"), start_point=StartPoint(
        time=first.t, remaining=first.rem[kept], sent=first.sent[keep],
        pinned=first.pinned[kept])).run()
    assert resumed.coflow_completion.tolist() == pytest.approx(
        whole.coflow_completion[keep].tolist(), rel=1e-12)


def test_a_start_point_with_bytes_a_flow_does_not_have_is_refused():
    w = _chain()
    with pytest.raises(ValueError, match=r"remaining\[1\]"):
        Simulator(w, get_policy("fifo"), start_point=StartPoint(remaining=[1.0, 2.0, 1.0]))
    with pytest.raises(ValueError, match="shape"):
        Simulator(w, get_policy("fifo"), start_point=StartPoint(sent=[0.0]))


def test_the_residual_network_has_the_active_coflows_with_the_bytes_their_flows_have_left():
    jw = mapreduce_jobs(0, n_jobs=2)
    net = jw.network.arrays
    active = np.ones(net.n_coflows, dtype=bool)
    active[0] = False
    remaining = net.size.copy()
    remaining[net.coflow == 1] = 0.0              # every flow of coflow 1 has finished
    remaining[np.flatnonzero(net.coflow == 2)[:1]] /= 2
    res = residual(jw, net.arcs, active, net.coflow, net.src, net.dst, remaining)
    ra = res.workload.arrays
    assert res.coflows.tolist() == np.flatnonzero(active).tolist()
    assert [c.id for c in res.workload.coflows] == [jw.coflows[k].id for k in res.coflows]
    assert (net.coflow[res.flows] != 1).all() and (net.coflow[res.flows] != 0).all()
    assert ra.size.tolist() == remaining[res.flows].tolist()
    assert res.coflows[ra.coflow].tolist() == net.coflow[res.flows].tolist()
    assert (ra.src == net.src[res.flows]).all() and (ra.dst == net.dst[res.flows]).all()
