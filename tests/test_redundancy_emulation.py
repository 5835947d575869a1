"""The redundancy model on the emulation (controller/redundancy/emulation.py).

Without root: the records path (the controller's raw result -> the simulator's job and
segment records, the flowtime error) fed with the simulator's own copies gives the
simulator's records and zero error. With root: a small time-scaled Mininet run whose
measured records pass the independent verifier (tests/redundancy_verifier.py) within the
emulation's timing, with a bounded flowtime error against the simulator; and a short run
whose checkpoints move their state as real flows between the agents.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from redundancy_verifier import RecordError, verify  # noqa: E402

from controller.jobmodels.redundancy import RedundancyModel  # noqa: E402
from controller.redundancy.emulation import flowtime_error  # noqa: E402
from emulate.mininet.redundancy import redundancy_result  # noqa: E402
from emulate.io.generators import redundancy  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLI = os.path.join(ROOT, ".venv", "bin", "coflowemu")


def small(seed=5, horizon=40.0):
    """6 AP/UP machines (short periods: the speeds change during a job), ~24 jobs of
    Pareto(3, 10) work (mean 15): the simulator's last departure near 60."""
    return redundancy(seed, ports=6, cores=1, rate_bps=1e9, machines=6, lam=0.6,
                      horizon=horizon, shape=3.0, scale=10.0, ap_length=(0.5, 20.0),
                      up_length=(0.5, 5.0))


def raw_from_simulator(jw, policy):
    """The controller's ``result()["redundancy"]`` as an emulation that ran exactly the
    simulator's copies would report it."""
    model = RedundancyModel(jw, policy)
    run = model.run
    c = run.copies
    progress = [sh * run.speed.work(int(m), s, e) for m, s, e, sh in
                zip(c["machine"], c["start"], c["end"], c["share"])]
    return {"redundancy": {
        "completion": run.completion.tolist(),
        "copies": {"job": c["job"].tolist(), "copy": c["copy"].tolist(),
                   "machine": c["machine"].tolist(), "start": c["start"].tolist(),
                   "end": c["end"].tolist(), "share": c["share"].tolist(),
                   "progress": progress},
        "checkpoints": run.checkpoints, "speed_horizon": 1e9}}, run


@pytest.mark.parametrize("policy", ["srpt+r", "fair+r", "laps+r@beta=0.3"])
def test_the_records_of_an_exact_emulation_are_the_simulators(policy):
    jw = small(horizon=20.0)
    out, run = raw_from_simulator(jw, policy)
    res = redundancy_result(jw, policy, out, 1.0, {})
    doc = res.to_json()
    assert doc["flowtime_error"]["max"] == 0.0
    assert doc["progress_mismatch"] < 1e-9
    assert doc["mean_flowtime"] == pytest.approx(run.mean_flowtime)
    sim = {j["id"]: j for j in RedundancyModel(jw, policy).records()["jobs"]}
    for j in doc["jobs"]:
        assert j["completion"] == pytest.approx(sim[j["id"]]["completion"])
        assert j["flowtime"] == pytest.approx(j["simulated_flowtime"])
    verify(doc["jobs"], res.task_segments, len(jw.machines))
    # the segment lines are the simulator's
    sim_segs = RedundancyModel(jw, policy).segment_records()
    key = (lambda s: (s.get("job", ""), s.get("copy", -1), s["machine"], s["start"]))
    assert len(res.task_segments) >= len(sim_segs)
    mine = sorted((s for s in res.task_segments if "job" in s), key=key)
    theirs = sorted((s for s in sim_segs if "job" in s), key=key)
    assert [key(s) for s in mine] == [key(s) for s in theirs]


def test_flowtime_error_figures():
    e = flowtime_error(np.array([11.0, 20.0, 29.0]), np.array([10.0, 20.0, 30.0]))
    assert e["median"] == 1.0 and e["max"] == 1.0 and e["mean"] == 0.0
    assert e["max_rel"] == pytest.approx(0.1)


def test_a_compute_only_network_option_is_refused():
    from controller.policies import PolicyError
    from emulate.mininet.engine import MininetRun
    with pytest.raises(PolicyError, match="no network"):
        MininetRun(small(horizon=5.0), "srpt+r", network_options={"mode": "x"})


@pytest.mark.skipif(os.geteuid() != 0, reason="the Mininet emulation needs root")
def test_emulated_run_passes_the_verifier_within_its_timing(system, tmp_path):
    """``coflowemu run --engine mininet`` (the engine takes the Mininet lock): every job
    completes,
    the records follow the model's rules within the emulation's timing, and the flowtimes
    stay near the simulator's for the same speed processes."""
    from emulate.io.traces import joint_to_dict
    jw = small(seed=3, horizon=25.0)
    w = tmp_path / "w.json"
    w.write_text(json.dumps(joint_to_dict(jw)))
    seg = tmp_path / "seg.jsonl"
    scale = 0.3
    out = subprocess.run([CLI, "run", str(w), "--policy", "srpt+r", "--engine", "mininet",
                          "--time-scale", str(scale), "--json", "--segments", str(seg)],
                         capture_output=True, text=True, timeout=1800)
    assert out.returncode == 0, out.stderr[-2000:]
    doc = json.loads(out.stdout)
    lines = [json.loads(x) for x in seg.read_text().splitlines()]
    jobs = doc["jobs"]
    assert len(jobs) == len(jw.jobs) and all(np.isfinite(j["completion"]) for j in jobs)
    # the rules with exact timing fail only for the emulation's latencies ...
    horizon = max(j["completion"] for j in jobs)
    timing = timing_tolerance(doc, scale)             # workload units
    peak = RedundancyModel(jw, "srpt+r").run.speed.peak
    try:
        # (a copy of a departed job gains at most peak x timing before its stop arrives)
        verify(jobs, lines, len(jw.machines), tol=timing / horizon, work_tol=peak * timing)
    except RecordError as e:
        pytest.fail(f"{e} (timing tolerance {timing:g})")
    # ... the work reported by the agents is the speed process's
    assert doc["progress_mismatch"] < 1e-6
    err = doc["flowtime_error"]
    assert err["median"] < 0.05 * doc["simulator"]["mean_flowtime"], err
    assert abs(doc["mean_flowtime"] - doc["simulator"]["mean_flowtime"]) < \
        0.1 * doc["simulator"]["mean_flowtime"], (doc["mean_flowtime"], doc["simulator"])


def test_a_bad_policy_is_refused_before_the_emulation_starts(tmp_path):
    """One error line, exit 2, no Mininet started (no lock needed)."""
    from emulate.io.traces import joint_to_dict
    w = tmp_path / "w.json"
    w.write_text(json.dumps(joint_to_dict(small(horizon=5.0))))
    out = subprocess.run([CLI, "run", str(w), "--policy", "laps+r@beta=2", "--engine", "mininet",
                          "--json"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.strip().splitlines() == [
        "coflowemu: error: beta of laps+r must be in (0, 1], got 2"]


def test_a_speed_process_too_long_for_one_agent_message_is_a_workload_error():
    from controller.model import WorkloadError
    from controller.redundancy.emulation import agent_speeds
    jw = redundancy(1, ports=2, cores=1, rate_bps=1e9, machines=2, lam=0.05, horizon=2000.0,
                    shape=3.0, scale=10.0, ap_length=(0.5, 0.2), up_length=(0.5, 0.05))
    with pytest.raises(WorkloadError, match="do not fit in one message"):
        agent_speeds(RedundancyModel(jw, "srpt").run)
    assert agent_speeds(RedundancyModel(small(horizon=5.0), "srpt").run).n == 6


def timing_tolerance(doc, scale):
    """Twice the controller's largest lag (checkpoint, arrival or departure), in workload
    units: how far the emulation's times may be from the events they follow."""
    c = doc["emulation"]["controller"]
    lag_ms = c["checkpoint_ms"]["max"] + max(c["arrival_lag_ms"]["max"],
                                             c["departure_lag_ms"]["max"])
    return 2 * lag_ms * 1e-3 / scale


@pytest.mark.skipif(os.geteuid() != 0, reason="the Mininet emulation needs root")
def test_emulated_checkpoint_transfers_are_real_flows(system, tmp_path):
    """``srpt+r+sebf`` on jobs with ``checkpoint_bytes`` (6 machines, a 20 Mbit/s fabric,
    200 kB states: 80 ms alone on a link): the controller sends each transfer as a coflow
    of real flows between the agents and starts the waiting copies when it has arrived;
    the records carry the transfers, their coflows' CCTs and the simulator's prediction
    under the same transfers, and pass the verifier (copies only where the state is)
    within the emulation's timing."""
    from emulate.io.traces import joint_to_dict
    jw = redundancy(1, ports=6, cores=1, rate_bps=20e6, machines=6, lam=0.6, horizon=5.0,
                    shape=3.0, scale=10.0, ap_length=(0.5, 20.0), up_length=(0.5, 5.0),
                    checkpoint_bytes=2e5)
    w = tmp_path / "w.json"
    w.write_text(json.dumps(joint_to_dict(jw)))
    seg = tmp_path / "seg.jsonl"
    scale = 1.0
    out = subprocess.run([CLI, "run", str(w), "--policy", "srpt+r+sebf", "--engine",
                          "mininet", "--time-scale", str(scale), "--json", "--segments",
                          str(seg)], capture_output=True, text=True, timeout=1800)
    assert out.returncode == 0, out.stderr[-2000:]
    doc = json.loads(out.stdout)
    jobs = doc["jobs"]
    assert len(jobs) == len(jw.jobs) and all(np.isfinite(j["completion"]) for j in jobs)
    xs = doc["transfers"]
    cost = doc["checkpoint_cost"]
    assert xs and cost["completed"] > 0 and cost["bytes_moved"] > 0
    assert cost["completed"] + cost["abandoned"] == cost["transfers"] == len(xs)
    done = {x["coflow"]: x["completion"] for x in xs if x["completion"] is not None}
    ccts = {c["id"]: c for c in doc["coflows"]}
    for cid, t in done.items():             # each completed transfer, as the agents sent it
        assert ccts[cid]["completion"] == pytest.approx(t, abs=1e-6)
        assert ccts[cid]["cct"] >= 8 * 2e5 / 20e6 * 0.95
    lines = [json.loads(x) for x in seg.read_text().splitlines()]
    assert any("coflow" in x for x in lines)
    timing = timing_tolerance(doc, scale)
    horizon = max(j["completion"] for j in jobs)
    peak = RedundancyModel(jw, "srpt+r").run.speed.peak
    try:
        verify(jobs, lines, len(jw.machines), tol=timing / horizon, work_tol=peak * timing,
               transfers=xs, replay=False)
    except RecordError as e:
        pytest.fail(f"{e} (timing tolerance {timing:g})")
    assert doc["progress_mismatch"] < 1e-6
    sim = doc["simulator"]
    assert sim["transfers"] > 0
    assert abs(doc["mean_flowtime"] - sim["mean_flowtime"]) < 0.3 * sim["mean_flowtime"], \
        (doc["mean_flowtime"], sim)


def test_the_records_of_an_exact_emulation_with_transfers_are_the_simulators():
    """The records path with checkpoint transfers: a controller result that ran exactly
    the simulator's copies and flows gives the simulator's jobs, transfers and coflows,
    and zero flowtime error against the prediction under the same transfers."""
    from emulate.sim.jobsim import simulate_joint
    jw = redundancy(3, ports=6, cores=1, rate_bps=20e6, machines=6, lam=0.6, horizon=10.0,
                    shape=3.0, scale=10.0, ap_length=(0.5, 20.0), up_length=(0.5, 5.0),
                    checkpoint_bytes=2e5)
    policy = "srpt+r+sebf"
    sim = simulate_joint(jw, policy, segments=True)
    doc = sim.to_json()
    model = RedundancyModel(jw, "srpt+r")
    pos = {jid: k for k, jid in enumerate(model.instance.ids)}
    done = {j["id"]: j["completion"] for j in doc["jobs"]}
    segs = [s for s in sim.task_segments if "job" in s]
    mid = {m: k for k, m in enumerate(jw.compute.arrays.machine_ids)}
    net, a = sim.network, sim.network.workload.arrays
    s = net.segments
    out = {"redundancy": {
        "completion": [done[jid] for jid in model.instance.ids],
        "copies": {"job": [pos[x["job"]] for x in segs], "copy": [x["copy"] for x in segs],
                   "machine": [mid[x["machine"]] for x in segs],
                   "start": [x["start"] for x in segs], "end": [x["end"] for x in segs],
                   "share": [x["share"] for x in segs], "progress": [x["work"] for x in segs]},
        "checkpoints": doc["checkpoints"], "speed_horizon": 1e9,
        "transfers": doc["transfers"],
        "network": {"coflows": [c.id for c in net.workload.coflows],
                    "release": [c.release for c in net.workload.coflows],
                    "flows": [a.coflow.tolist(), a.src.tolist(), a.dst.tolist(),
                              a.size.tolist()], "received": a.size.tolist()}},
        "flow_completion": net.flow_completion.tolist(),
        "coflow_completion": net.coflow_completion.tolist(),
        "segments": {"flow": s.flow.tolist(), "core": s.core.tolist(),
                     "start": s.start.tolist(), "end": s.end.tolist(),
                     "rate_bps": s.rate_bps.tolist()}}
    emu = redundancy_result(jw, policy, out, 1.0, {}).to_json()
    assert emu["flowtime_error"]["max"] == pytest.approx(0.0, abs=1e-9)
    assert emu["simulator"]["transfers"] == doc["checkpoint_cost"]["transfers"] > 0
    assert emu["transfers"] == doc["transfers"]
    assert [(c["id"], c["completion"]) for c in emu["coflows"]] == \
        [(c["id"], c["completion"]) for c in doc["coflows"]]
    assert emu["checkpoint_cost"]["bytes_moved"] == pytest.approx(
        doc["checkpoint_cost"]["bytes_moved"])
