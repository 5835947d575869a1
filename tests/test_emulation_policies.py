"""Every policy family on real switches: Mininet + Open vSwitch + the controller + agents.

Needs root (network namespaces, OVS); skipped otherwise, like tests/test_emulation_mininet.py.
Every run goes through the same checks:

* it completes, and every coflow's measured completion is within a bound of the
  simulator's for the same workload and policy;
* the *measured* segments (receivers' byte counters between controller events) pass the
  schedule verifier (tests/verifier.py) at a tolerance fit for measurements: link
  capacities and flow bytes within ``MEASURED_RTOL`` (a counter reading a few ms late shifts
  bytes between neighbouring segments; a loaded machine's timers jitter);
* where the policy orders coflows, the coflow it prefers finishes first, by a margin of
  about 2x in CCT (the workloads are built so that order is unambiguous).

The standard contest (``contest``): on 4 hosts x 2 cores at 20 Mbit/s, a big coflow ``A``
(3.3 and 2.7 MB into host 0, 1.3 s alone) at time 0 and a small one ``B`` (two 0.75 MB
flows into host 0) at 0.4 s. Host 0's two downlinks are the bottleneck of both; ``A``'s
flows differ by 0.6 MB so that no least-loaded core choice is a near-tie (a tie flips on
a measurement's few kB and the two engines then run different schedules). FIFO keeps
``A`` first; smallest-first orders (scf, sebf, sincronia, the LP orders, weaver) let ``B``
go first; aalo depends on its first byte threshold: at 10 MiB both coflows stay in queue 0
(FIFO), at 2 MB ``A`` has crossed it (at 0.2 s) before ``B`` arrives and ``B`` (1.5 MB)
never does, so ``B`` goes first (at 0.5 MB ``B`` too crosses it 0.1 s after its start
and falls back behind ``A``: measured as in the simulator, but not a test of order);
fair sharing gives ``B`` a share of the downlinks.

Plus: a rate cap lifted after a tiny one (the pacing takes the new rate at once), a
precedence DAG (a successor's first byte after its predecessor's completion,
measured), heterogeneous cores (``core_rates``: each core's measured throughput near its
own rate) and the README's user policy loaded by ``module:Class``.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import warnings

import numpy as np
import pytest

from controller.model import Coflow, Flow, Workload
from topologies.fabric import Fabric

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from verifier import verify_segments  # noqa: E402

RATE = 20e6
MB = 1_000_000
MEASURED_RTOL = 0.12
"""Tolerance on link capacity and flow bytes for measured segments."""
WINDOW = 0.2
"""Measured segments are checked over pieces of at least this many seconds (at 0.1 s a
hand-off's few ms of timestamp jitter and socket-buffer drain read as 22.4 Mbit/s on a
20 Mbit/s link in CI; an overbooked link still shows as about twice its rate)."""

pytestmark = pytest.mark.skipif(os.geteuid() != 0,
                                reason="the Mininet emulation needs root (namespaces, OVS)")


def assert_clean():
    from emulate.mininet.clean import leftovers
    assert leftovers(settled=True) == {"bridges": [], "interfaces": [], "run_dirs": []}


def contest(rate=RATE) -> Workload:
    """A (big, at 0) and B (small, at 0.4 s), all four flows into host 0."""
    return Workload(Fabric(ports=4, cores=2, rate_bps=rate), [
        Coflow("A", [Flow(1, 0, 3.3 * MB), Flow(2, 0, 2.7 * MB)]),
        Coflow("B", [Flow(3, 0, 0.75 * MB), Flow(1, 0, 0.75 * MB)], release=0.4),
    ])


MISS_RUNS = 3
"""Runs of a case whose misses all show TCP timeouts in the run's counters before it fails
(a miss without timeouts fails at once). Two were too few: in a clean-clone CI run on a
machine 1.5x slower than usual (2026-11-28), ``lp-flow`` online ``weighted`` in
tests/test_emulation_jobs.py finished job X 0.41 and 0.47 s late in both runs (6 timeouts
each), the retransmission-timer stall of "The drain class" in docs/emulation-fidelity.md;
on this VM that case then had no miss in 10 runs idle and 5 beside real-time busy loops
taking half of both CPUs."""


def run_again_after_timeouts(attempt: int, emu, why, what: str) -> None:
    """Let run ``attempt`` of a case miss (a warning naming ``what`` and ``why``) if it is
    not the last of :data:`MISS_RUNS` and TCP timed out in it; else fail with ``why``."""
    assert attempt < MISS_RUNS and emu.extra["tcp"]["timeouts"] > 0, why
    warnings.warn(f"{what} run again after a miss with TCP timeouts: {why}")


def run_emulated(w, policy, **options):
    """The emulated RunResult of ``w`` under ``policy`` (name, options); nothing left."""
    from emulate.mininet.engine import run_mininet
    emu = run_mininet(w, policy, network_options=options or None)
    assert_clean()
    return emu


def run_both(w, policy, **options):
    """(simulated, emulated) RunResults of ``w`` under ``policy`` (name, options)."""
    from emulate.sim.flowsim import simulate
    from controller.policies import get_policy
    return simulate(w, get_policy(policy, **options)), run_emulated(w, policy, **options)


def clipped_rate(segs, flow: int, lo: float, hi: float) -> float:
    """Mean measured rate of ``flow`` over [lo, hi] (bits / time)."""
    on = segs.flow == flow
    a, b = np.maximum(segs.start[on], lo), np.minimum(segs.end[on], hi)
    return float(np.sum(segs.rate_bps[on] * np.clip(b - a, 0, None)) / (hi - lo))


def check_links_binned(w, segs, window: float = WINDOW, rtol: float = MEASURED_RTOL):
    """Per (core, input port) and (core, output port): bits carried in every ``window``
    bin at most the core's rate x window (x 1 + rtol)."""
    a = w.arrays
    span = float(segs.end.max())
    edges = np.arange(0.0, span + window, window)
    for side, port in (("input", a.src[segs.flow]), ("output", a.dst[segs.flow])):
        load = np.zeros((w.fabric.cores, w.fabric.ports, len(edges) - 1))
        for s in range(len(segs.flow)):
            lo = np.clip(segs.start[s], edges[:-1], edges[1:])
            hi = np.clip(segs.end[s], edges[:-1], edges[1:])
            load[segs.core[s], port[s]] += segs.rate_bps[s] * (hi - lo)
        cap = np.array(w.fabric.rates)[:, None, None] * window * (1 + rtol)
        over = np.argwhere(load > cap)
        assert not over.size, (f"core {over[0][0]} {side} port {over[0][1]} carries "
                               f"{load[tuple(over[0])] / window / 1e6:.2f} Mbit/s during "
                               f"[{edges[over[0][2]]:.3f}, {edges[over[0][2] + 1]:.3f}]")


def verify_measured(w, r):
    """The measured segments against the schedule rules (module docstring).

    Links are checked over ``WINDOW`` bins (:func:`check_links_binned`), not instant by
    instant: a flow that is paused drains what its socket buffer holds for a few ms in
    the lowest class while the next one starts, and a counter read between two events
    2 ms apart sees TCP's bursts (a window's worth in 2 ms reads as twice the link rate).
    The verifier's instantaneous link check is turned off by giving it a fabric 100x
    faster; everything else of it (bytes, releases, precedence, one core per flow) holds
    as for the simulator, bytes within ``MEASURED_RTOL``."""
    assert r.segments is not None and len(r.segments.flow) > 0
    assert np.isfinite(r.coflow_completion).all(), r.coflow_completion
    check_links_binned(w, r.segments)
    fast = w.fabric.__class__(ports=w.fabric.ports, cores=w.fabric.cores,
                              rate_bps=w.fabric.rate_bps * 100,
                              core_rates=None if w.fabric.core_rates is None else
                              tuple(x * 100 for x in w.fabric.core_rates))
    v = verify_segments(w.replace(fabric=fast), r.segments, rtol=MEASURED_RTOL)
    # each coflow's reported completion is its last measured byte (within a counter period)
    np.testing.assert_allclose(r.coflow_completion, v.coflow_completion, atol=0.05)
    return v


# policy -> (options, the coflow that must finish first or None, CCT bound vs simulator)
FAMILIES = {
    "fifo": ({}, "A", 0.15),
    "scf": ({}, "B", 0.15),
    "sebf": ({}, "B", 0.15),
    "sincronia": ({}, "B", 0.15),
    "weaver": ({}, "B", 0.15),
    "lp-flow": ({}, "B", 0.15),
    "lp-coflow": ({}, "B", 0.15),
    "lp-single": ({}, "B", 0.20),
    "aalo-10MiB": ({"first_threshold": 10 * 2**20}, "A", 0.15),
    "aalo-2MB": ({"first_threshold": 2 * MB}, "B", 0.15),
    "fair": ({}, None, 0.15),
}


def contest_misses(family, w, sim, emu) -> list[str]:
    """What the emulated contest run ``emu`` gets wrong against ``FAMILIES[family]``."""
    _, first, bound = FAMILIES[family]
    verify_measured(w, emu)
    cct_e = dict(zip("AB", emu.cct))
    misses = []
    if first is not None:
        other = "B" if first == "A" else "A"
        done = dict(zip("AB", emu.coflow_completion))
        # the switches agree with the policy, by a margin: the later one finishes at
        # least 150 ms after
        if not done[other] - done[first] > 0.15:
            misses.append(f"{first} first by 150 ms: {done}")
    elif not 0.45 < cct_e["B"] < 0.9:  # fair: B shares the downlinks, neither waits
        misses.append(f"B shares the downlinks: CCT {cct_e['B']:.3f}")
    err = np.abs(emu.cct / sim.cct - 1)
    if not err.max() < bound:
        misses.append(f"CCT error {err.max():.1%} over {bound:.0%}")
    return misses


@pytest.mark.parametrize("family", list(FAMILIES))
def test_each_policy_family_orders_the_contest_on_real_switches(system, family):
    """The contest on the switches, against the simulator (module docstring).

    A run that misses with TCP timeouts in its counters is run again (:data:`MISS_RUNS`
    runs in all), and the last must not miss: a flow paused behind a higher class backs
    off its retransmission timer, and a segment lost soon after it resumes waits for a
    timeout that the starved segments' round trips inflated to 0.5-0.8 s (traced with the
    kernel's tcp and skb tracepoints; about 1 % of contest runs on a loaded machine while
    paused flows drained in the lowest class: "Paused flows and TCP timeouts" in
    docs/emulation-fidelity.md; the drain class makes it rarer). A miss without timeouts
    fails at once."""
    options, first, _ = FAMILIES[family]
    policy = family.split("-")[0] if family.startswith("aalo") else family
    w = contest()
    sim, emu = run_both(w, policy, **options)
    assert emu.engine == "mininet"
    if first is not None:   # the simulator agrees with the reading of the policy (premise)
        other = "B" if first == "A" else "A"
        assert sim.coflow_completion[ord(first) - 65] < sim.coflow_completion[
            ord(other) - 65], (family, dict(zip("AB", sim.cct)))
    for attempt in range(1, MISS_RUNS + 1):
        misses = contest_misses(family, w, sim, emu)
        # what a failure shows: per-flow completions of both engines and what TCP did
        why = (family, misses, np.round(sim.flow_completion, 3).tolist(),
               np.round(emu.flow_completion, 3).tolist(), emu.extra["tcp"])
        if not misses:
            return
        run_again_after_timeouts(attempt, emu, why, "contest")
        emu = run_emulated(w, policy, **options)


@pytest.mark.parametrize("policy", ["sebf", "weaver"])
def test_madd_rate_caps_are_paced_on_the_switches(system, policy):
    """MADD: C = {0->1 4 MB, 0->2 4 MB, 3->2 1 MB} goes first (bottleneck 1.6 s); its 1 MB
    flow gets a quarter of the link (5 Mbit/s, to finish with the others at 1.6 s), paced
    by its agent, and D's 6 MB flow 3->2 on the same core the other 15 Mbit/s
    (backfilled), not a TCP fair share (10/10)."""
    w = Workload(Fabric(ports=4, cores=2, rate_bps=RATE), [
        Coflow("C", [Flow(0, 1, 4 * MB), Flow(0, 2, 4 * MB), Flow(3, 2, 1 * MB)]),
        Coflow("D", [Flow(3, 2, 6 * MB), Flow(3, 1, 6 * MB)])])
    sim, emu = run_both(w, policy)
    verify_measured(w, emu)
    np.testing.assert_allclose(sim.flow_completion[:3], 1.6, rtol=1e-6)   # the premise
    why = (np.round(emu.flow_completion, 3).tolist(), emu.extra["tcp"])
    np.testing.assert_allclose(emu.coflow_completion, sim.coflow_completion, rtol=0.10,
                               err_msg=str(why))
    np.testing.assert_allclose(emu.flow_completion, sim.flow_completion, rtol=0.10,
                               err_msg=str(why))
    s = emu.segments
    assert s.core[s.flow == 2][0] == s.core[s.flow == 3][0]     # sharing one uplink
    # C's 1 MB flow: 1 MB over its whole life (1.6 s), not 0.4 s at the full link; D's
    # 3->2 next to it meanwhile: the 15 Mbit/s left over
    lo, hi = s.start[s.flow == 2].min(), s.end[s.flow == 2].max()
    assert abs(clipped_rate(s, 2, lo, hi) / (RATE / 4) - 1) < 0.12, (lo, hi)
    assert abs(clipped_rate(s, 3, lo, hi) / (RATE * 3 / 4) - 1) < 0.12, (lo, hi)


TINY_THEN_FULL = '''
"""B capped to 6 kbit/s for 20 ms, then paused behind A, then alone (a test policy)."""
import numpy as np

from controller.plan import Plan
from controller.policies import Policy


class TinyThenFull(Policy):
    name = "tiny-then-full"
    summary = "flow 1 capped to 6 kbit/s until 0.02 s, then behind flow 0"

    def plan(self, state):
        n = state.arrays.n_flows
        core, cap = np.zeros(n, dtype=np.int64), np.full(n, np.nan)
        if state.time < 0.02:
            cap[1] = 6e3
            return Plan(core=core, rank=np.array([1.0, 0.0]), rate_cap=cap,
                        backfill=False, horizon=0.02)
        return Plan(core=core, rank=np.array([0.0, 1.0]), rate_cap=cap)
'''


def test_a_rate_raised_after_a_tiny_cap_takes_effect_at_once(system, tmp_path, monkeypatch):
    """The sebf outlier's mechanism (4 x 2, seed 1: mean CCT ratio 2.1, up to 10 in a
    repeat): MADD caps a flow to a few kbit/s, it is paused, later it runs alone at the
    full link. Paced by the kernel (``SO_MAX_PACING_RATE``, 1000 B/s at least) the socket
    kept sending at the old rate for seconds after the cap was lifted: B's 2 MB took
    18-19.6 s instead of 0.8 s. Paced in the agent, the new rate holds at the next write.
    (Run against the kernel-paced agent of 4ec6c95^: B completed at 21.1 s, not 1.2 s.)"""
    (tmp_path / "tinythenfull.py").write_text(TINY_THEN_FULL)
    monkeypatch.syspath_prepend(str(tmp_path))
    w = Workload(Fabric(ports=2, cores=1, rate_bps=RATE), [
        Coflow("A", [Flow(0, 1, 1 * MB)]), Coflow("B", [Flow(0, 1, 2 * MB)])])
    sim, emu = run_both(w, "tinythenfull:TinyThenFull")
    np.testing.assert_allclose(sim.coflow_completion, [0.4, 1.2], rtol=1e-3)  # the premise
    verify_measured(w, emu)
    np.testing.assert_allclose(emu.coflow_completion, sim.coflow_completion, rtol=0.10)


def test_a_dag_successor_never_starts_before_its_predecessor_finishes(system):
    """P -> S on disjoint ports (S could run at once without the arc), and an independent
    coflow I on S's ports: S's first measured byte comes after P's completion."""
    w = Workload(Fabric(ports=4, cores=2, rate_bps=RATE), [
        Coflow("P", [Flow(0, 1, 2 * MB)]),
        Coflow("S", [Flow(2, 3, 1 * MB), Flow(0, 3, 1 * MB)]),
        Coflow("I", [Flow(3, 2, 1 * MB)], release=0.1),
    ], precedence=[("P", "S")])
    sim, emu = run_both(w, "lp-coflow")
    verify_measured(w, emu)           # the verifier checks precedence on the segments too
    a = w.arrays
    p_done = emu.coflow_completion[0]
    s_first = emu.segments.start[a.coflow[emu.segments.flow] == 1].min()
    assert s_first >= p_done - 0.005, (s_first, p_done)
    assert p_done > 0.7, p_done       # P really took its time (0.8 s)
    np.testing.assert_allclose(emu.coflow_completion, sim.coflow_completion, rtol=0.10)


def test_a_generated_dag_workload_keeps_its_precedence(system):
    """--chi 3: a seeded generator DAG, every arc respected by what was measured."""
    from emulate.io.generators import generate
    w = generate("coflows", seed=4, ports=4, cores=2, rate_bps=RATE,
                 params={"coflows": 6, "mean_bytes": 1 * MB, "chi": 3})
    assert w.precedence
    sim, emu = run_both(w, "sincronia")
    verify_measured(w, emu)
    a = w.arrays
    index = {c.id: k for k, c in enumerate(w.coflows)}
    seg_coflow = a.coflow[emu.segments.flow]
    for p, s in w.precedence:
        starts = emu.segments.start[seg_coflow == index[s]]
        if starts.size:
            assert starts.min() >= emu.coflow_completion[index[p]] - 0.005, (p, s)


def test_heterogeneous_cores_carry_their_own_rates(system):
    """core_rates 30/10 Mbit/s: weaver puts the 6 MB flow on the fast core and the 2 MB one
    (same source) on the slow one; each one's measured rate is its core's."""
    w = Workload(Fabric(ports=4, cores=2, rate_bps=30e6, core_rates=(30e6, 10e6)), [
        Coflow("H", [Flow(0, 1, 6 * MB), Flow(0, 2, 2 * MB)])])
    sim, emu = run_both(w, "weaver")
    verify_measured(w, emu)
    s = emu.segments
    dur = s.end - s.start
    per_core = {}
    for c in (0, 1):
        on = s.core == c
        assert on.any(), f"nothing measured on core {c}"
        per_core[c] = np.sum((s.rate_bps * dur)[on]) / (s.end[on].max() - s.start[on].min())
    assert per_core[0] > 2 * per_core[1], per_core
    assert abs(per_core[0] / 30e6 - 1) < 0.12 and abs(per_core[1] / 10e6 - 1) < 0.12, per_core
    np.testing.assert_allclose(emu.flow_completion, sim.flow_completion, rtol=0.10)


def readme_policy_source() -> str:
    text = open(os.path.join(ROOT, "README.md")).read()
    m = re.search(r"Save this as `heaviest.py`:\n\n```python\n(.*?)```", text, re.S)
    assert m, "README lost its heaviest.py example"
    return m.group(1)


def test_the_readmes_user_policy_runs_on_the_switches(system, tmp_path, monkeypatch):
    """``heaviest:HeaviestFirst`` from the README: the heavier coflow goes first."""
    (tmp_path / "heaviest.py").write_text(readme_policy_source())
    monkeypatch.syspath_prepend(str(tmp_path))
    w = Workload(Fabric(ports=4, cores=2, rate_bps=RATE), [
        Coflow("light", [Flow(1, 0, 1.5 * MB), Flow(2, 0, 1.5 * MB)], weight=1.0),
        Coflow("heavy", [Flow(3, 0, 1.5 * MB), Flow(1, 0, 1.5 * MB)], weight=3.0)])
    sim, emu = run_both(w, "heaviest:HeaviestFirst")
    assert emu.policy == "heaviest-first"
    verify_measured(w, emu)
    assert emu.coflow_completion[1] < 0.6 * emu.coflow_completion[0], emu.coflow_completion
    np.testing.assert_allclose(emu.coflow_completion, sim.coflow_completion, rtol=0.15)


# ------------------------------------------------------------------ --rate auto
def test_the_calibration_measures_what_the_switches_forward_and_leaves_nothing(system):
    from emulate.mininet.calibrate import ACCURATE_FRACTION, measure_forwarding
    b = measure_forwarding(1.0)
    # 4 TCP flows through two switches: tens of Mbit/s at the very least on a loaded
    # machine, and not more than the shaped links (4 x 10 Gbit/s)
    assert 20e6 < b.forwarded_bps < 40e9, b
    assert b.budget_bps == pytest.approx(ACCURATE_FRACTION * b.forwarded_bps)
    assert b.source == "measured" and b.datapath in ("user", "kernel")
    assert_clean()


def test_run_rate_auto_reports_its_choice_and_runs_at_it(system, tmp_path):
    import json
    from emulate.io.traces import write_json
    w = Workload(Fabric(ports=4, cores=2, rate_bps=200e6), [
        Coflow("a", [Flow(0, 1, 2 * MB), Flow(2, 3, 2 * MB)])])
    path = tmp_path / "w.json"
    write_json(w, str(path))
    r = subprocess.run([os.path.join(os.path.dirname(sys.executable), "coflowemu"), "run",
                        str(path), "--engine", "mininet", "--rate", "auto", "--policy", "fifo",
                        "--json", "--no-lp-bound"], capture_output=True, text=True, cwd=ROOT,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)                     # exactly one JSON document
    auto = doc["rate_auto"]
    assert "forwarding budget" in r.stderr and "rate auto: links 200" in r.stderr
    # the workload's rate is kept; the time scale brings 4 hosts x 2 x 200 Mbit/s inside
    assert auto["rates_bps"] == [200e6, 200e6] and not auto["rate_chosen"]
    assert auto["offered_bps"] <= auto["budget_bps"] < auto["offered_bps"] * 2
    assert doc["time_scale"] == auto["time_scale"] >= 2
    # results in the workload's seconds: 2 MB at 200 Mbit/s = 0.08 s
    assert abs(doc["makespan"] / 0.08 - 1) < 0.25, doc["makespan"]
    assert_clean()
