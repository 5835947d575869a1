"""Checkpoint transfers (controller/redundancy/transfers.py, emulate/sim/redundancy.py):
the state moved as coflows on the fabric, in-process and through ``coflowemu run``."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import verifier as network_verifier
from controller.jobmodels.redundancy import joint_from_redundancy, redundancy_instance
from controller.redundancy import Instance, simulate
from controller.redundancy.transfers import simulate_transfers
from emulate.io.generators import redundancy
from emulate.sim.jobsim import simulate_joint
from redundancy_verifier import RecordError, verify
from topologies import Fabric

CLI = str(Path(sys.executable).with_name("coflowemu"))
POLICIES = ["srpt+r", "srpt", "fair+r", "fair-share", "laps+r", "laps@beta=0.3"]


class NoNetwork:
    """A fabric that must never be asked to move anything."""

    def send(self, new, abandoned, t):
        raise AssertionError("a transfer with checkpoint_bytes 0")

    def advance(self, until):
        return until, []


def small(seed=5, horizon=30.0):
    return redundancy(seed, ports=6, cores=1, rate_bps=1e9, machines=6, lam=0.6,
                      horizon=horizon, shape=3.0, scale=10.0, ap_length=(0.5, 20.0),
                      up_length=(0.5, 5.0))


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("options", ["", "@assign=sticky", "@slot=0.5", "@slot=3"])
def test_free_checkpoints_in_the_event_loop_are_the_kernels_run(policy, options):
    """With nothing to move the transfer loop (Python, reacting to a network) gives the
    numba kernel's run: completions, checkpoints and every copy interval."""
    inst, _ = redundancy_instance(small())
    a = simulate(inst, policy + options, record=True)
    b, state = simulate_transfers(inst, policy + options, np.zeros(inst.n_jobs), NoNetwork())
    assert np.array_equal(a.completion, b.completion)
    assert a.checkpoints == b.checkpoints and not state.transfers
    key = (lambda c: sorted(zip(c["start"], c["job"], c["copy"], c["machine"], c["end"])))
    assert key(a.copies) == key(b.copies)


def two_machines(nbytes, rate_bps=16e6):
    """Two machines of rate 1; jobs a (work 10) and c (work 20) at 0, b (work 1) at 1; a
    transfer of ``nbytes`` takes 8 nbytes / rate_bps alone (0.5 for 1 MB)."""
    from controller.redundancy.speed import constant
    inst = Instance(np.array([0.0, 0.0, 1.0]), np.array([10.0, 20.0, 1.0]), constant(2),
                    ("a", "c", "b"))
    return inst, joint_from_redundancy(inst, Fabric(2, 1, rate_bps),
                                       checkpoint_bytes=nbytes)


def two_machine_workload(tmp_path, nbytes):
    """:func:`two_machines` as a workload file."""
    from emulate.io.traces import joint_to_dict
    p = tmp_path / "w.json"
    p.write_text(json.dumps(joint_to_dict(two_machines(nbytes)[1]), indent=1))
    return p


# a on m0, c on m1 from 0. At 1 b arrives and SRPT serves b, a: index deals b m0 and a
# m1, where a's state is not (it waits for it until 1.5); at b's departure (2) a goes back
# to m0 and waits again (to 2.5), then needs 8.5: done at 11; c (on m1, its state there)
# has 11 left at 11, copies on m0 (transfer to 11.5) and m1: done at 21. Sticky keeps a
# on m0 (b gets m1): a runs through, done at 10; c alone at 10 gets a copy on m0 too
# (transfer to 10.5) and finishes on m1 at 21. Free checkpoints: 10, 21 and 2.
@pytest.mark.parametrize("policy, a_done, starts, sources", [
    ("srpt+r+sebf", 11.0, [1.5, 2.5, 11.5], [("a", "m0", "m1"), ("a", "m1", "m0"),
                                            ("c", "m1", "m0")]),
    ("srpt+r+fair", 11.0, [1.5, 2.5, 11.5], [("a", "m0", "m1"), ("a", "m1", "m0"),
                                            ("c", "m1", "m0")]),
    ("srpt+r@assign=sticky+sebf", 10.0, [10.5], [("c", "m1", "m0")]),
])
def test_hand_computed_transfers_through_the_cli(tmp_path, policy, a_done, starts,
                                                 sources):
    """``coflowemu run W --policy ... --json --segments F`` as a subprocess: one JSON
    document; the copies wait for their state; each transfer a coflow whose flow
    segments pass the network verifier; every record passes the redundancy verifier."""
    w = two_machine_workload(tmp_path, 1e6)
    seg = tmp_path / "seg.jsonl"
    out = subprocess.run([CLI, "run", str(w), "--policy", policy, "--json", "--segments",
                          str(seg)], capture_output=True, text=True, check=True)
    doc = json.loads(out.stdout)
    done = {j["id"]: j["completion"] for j in doc["jobs"]}
    assert done == pytest.approx({"a": a_done, "b": 2.0, "c": 21.0})
    xs = doc["transfers"]
    assert [(x["job"], x["from"], x["to"][0]) for x in xs] == sources
    assert [x["completion"] for x in xs] == pytest.approx([t for t in starts])
    assert all(x["abandoned"] is None and len(x["to"]) == 1 for x in xs)
    assert [c["id"] for c in doc["coflows"]] == [x["coflow"] for x in xs]
    assert all(c["cct"] == pytest.approx(0.5) for c in doc["coflows"])
    cost = doc["checkpoint_cost"]
    assert cost["transfers"] == len(xs) and cost["bytes_moved"] == pytest.approx(1e6 * len(xs))
    assert cost["free_mean_flowtime"] == pytest.approx((10 + 21 + 1) / 3)
    lines = [json.loads(ln) for ln in seg.read_text().splitlines()]
    assert {frozenset(ln) for ln in lines} == {
        frozenset({"job", "copy", "machine", "start", "end", "share", "work"}),
        frozenset({"machine", "start", "end", "rate"}),
        frozenset({"coflow", "src", "dst", "core", "start", "end", "rate_bps"})}
    verify(doc["jobs"], lines, 2, transfers=xs)
    off_event = sorted({s["start"] for s in lines if "job" in s} - {0.0, 1.0, 2.0, 10.0,
                                                                     11.0})
    assert off_event == pytest.approx(starts)       # the copies that waited, and only they


def test_a_copy_that_starts_before_its_state_arrived_is_rejected(tmp_path):
    """The verifier can fail: the waiting copy moved to the checkpoint."""
    _, jw = two_machines(1e6)
    r = simulate_joint(jw, "srpt+r+sebf", segments=True)
    doc = r.to_json()
    segs = [dict(s) for s in r.task_segments]
    verify(doc["jobs"], segs, 2, transfers=doc["transfers"])
    early = next(s for s in segs if s.get("job") == "a" and s["start"] == pytest.approx(1.5))
    early["start"], early["work"] = 1.0, early["work"] + 0.5
    jobs = [dict(j, work=j["work"] + 0.5 * (j["id"] == "a")) for j in doc["jobs"]]
    with pytest.raises(RecordError, match="on its way"):      # all else consistent
        verify(jobs, segs, 2, transfers=doc["transfers"], replay=False)
    # without the transfer's record, the replay of where a's state is still sees it
    rest = doc["transfers"][1:]
    with pytest.raises(RecordError, match="does not hold"):
        verify(jobs, segs, 2, transfers=rest)
    bad = [dict(x, **{"from": "m0"}) for x in doc["transfers"]]
    with pytest.raises(RecordError, match="from 'm0'"):
        verify(doc["jobs"], r.task_segments, 2, transfers=bad)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), policy=st.sampled_from(POLICIES),
       network=st.sampled_from(["sebf", "fair", "aalo", "lp-coflow"]),
       nbytes=st.sampled_from([3e5, 3e6, 3e7]),
       options=st.sampled_from(["", "@assign=sticky", "@slot=1"]))
def test_random_runs_with_transfers_pass_both_verifiers(seed, policy, network, nbytes,
                                                        options):
    """Random small instances (AP/UP machines with short periods, a 100 Mbit/s fabric:
    transfers of 0.02 to 2.4 time units, many abandoned at the larger sizes)."""
    rng = np.random.default_rng(seed)
    inst, _ = redundancy_instance(redundancy(seed, ports=4, cores=1, rate_bps=1e8,
                                             machines=4, lam=float(rng.uniform(0.5, 1.0)),
                                             horizon=15.0, shape=3.0, scale=5.0,
                                             ap_length=(0.5, 8.0), up_length=(0.5, 3.0)))
    jw = joint_from_redundancy(inst, Fabric(4, 1, 1e8),
                               specs=[{"model": "ap-up", "seed": seed * 1000 + m,
                                       "ap_length": [0.5, 8.0], "up_length": [0.5, 3.0]}
                                      for m in range(4)], checkpoint_bytes=nbytes)
    r = simulate_joint(jw, f"{policy}{options}+{network}", segments=True)
    doc = r.to_json()
    assert all(np.isfinite(j["completion"]) for j in doc["jobs"])
    slot = 1.0 if "slot" in options else None
    verify(doc["jobs"], r.task_segments, 4, transfers=doc["transfers"], slot=slot)
    if doc["coflows"]:
        network_verifier.verify(r.network.workload, r.network)
    cost = doc["checkpoint_cost"]
    assert cost["completed"] + cost["abandoned"] == cost["transfers"]
    free = simulate(redundancy_instance(jw)[0], f"{policy}{options}")
    assert cost["free_mean_flowtime"] == pytest.approx(free.mean_flowtime)


def run_cli(*args):
    return subprocess.run([CLI, *args], capture_output=True, text=True)


def one_error_line(out, *parts):
    assert out.returncode == 2 and out.stdout == "", (out.returncode, out.stdout)
    err = out.stderr.strip()
    assert "\n" not in err and "Traceback" not in err, err
    for p in parts:
        assert p in err, err
    return err


@pytest.mark.parametrize("value, message", [(-1, "must be >= 0"), ("2e6", "must be a number"),
                                            (True, "must be a number")])
def test_a_bad_checkpoint_size_names_file_line_and_field(tmp_path, value, message):
    p = two_machine_workload(tmp_path, 1e6)
    doc = json.loads(p.read_text())
    doc["stages"][2]["tasks"][0]["checkpoint_bytes"] = value
    text = json.dumps(doc, indent=1)
    p.write_text(text)
    line = next(n for n, ln in enumerate(text.splitlines(), 1) if '"id": "b"' in ln)
    err = one_error_line(run_cli("run", str(p), "--policy", "srpt+r+sebf"), message)
    assert err.startswith(f"coflowemu: error: {p}:{line}: checkpoint_bytes: "), err


def test_checkpoint_bytes_belongs_to_the_redundancy_model(tmp_path):
    p = two_machine_workload(tmp_path, 1e6)
    doc = json.loads(p.read_text())
    del doc["model"]
    for m in doc["machines"]:
        m.pop("speed", None)
    for s in doc["stages"]:
        for t in s["tasks"]:
            t.pop("work")
            t.update(size=1, placement={"m0": 1.0})
    p.write_text(json.dumps(doc, indent=1))
    one_error_line(run_cli("run", str(p), "--policy", "fifo"), "checkpoint_bytes",
                   "redundancy")


@pytest.mark.parametrize("policy, parts", [
    ("srpt+r", ["names no network policy", "srpt+r+sebf"]),
    ("srpt+r@slot=0+sebf", ["slot of srpt+r must be a time > 0"]),
    ("srpt+r@assign=near+sebf", ["assign of srpt+r must be 'index' or 'sticky'"]),
    ("srpt+r@gamma=1+sebf", ["no option 'gamma'"]),
    ("srpt@beta=0.3+sebf", ["takes no beta"]),
    ("srpt+r+nope", ["nope"]),
])
def test_bad_policies_are_one_error_line(tmp_path, policy, parts):
    one_error_line(run_cli("run", str(two_machine_workload(tmp_path, 1e6)), "--policy", policy,
                           "--json"), *parts)


def test_generate_with_checkpoint_bytes_then_run(tmp_path):
    g = tmp_path / "g.json"
    subprocess.run([CLI, "generate", "--kind", "redundancy", "--rate", "100Mbps", "-p",
                    "machines=4", "-p", "lam=0.3", "-p", "horizon=20", "-p",
                    "checkpoint_bytes=1e6", "--out", str(g)], check=True, capture_output=True)
    doc = json.loads(g.read_text())
    assert {t["checkpoint_bytes"] for s in doc["stages"] for t in s["tasks"]} == {1e6}
    out = run_cli("run", str(g), "--policy", "srpt+r+sebf", "--json")
    assert out.returncode == 0, out.stderr
    run = json.loads(out.stdout)
    assert run["checkpoint_cost"]["transfers"] == len(run["transfers"]) > 0
    assert len(run["coflows"]) <= len(run["transfers"])


def test_a_sweep_spec_runs_redundancy_policies_with_their_options():
    """A sweep spec's ``specs`` reach the options and the transfers: each run of the
    expanded spec (executed in-process, as a Dask worker does) is the direct run's."""
    from experiments.sweep.execute import execute
    from experiments.sweep.spec import parse_spec
    specs = ["srpt+r@assign=sticky+sebf", "laps+r@beta=0.3+fair", "srpt+r@slot=1+sebf"]
    spec = parse_spec({"name": "ckpt", "bounds": ["none"],
                       "workloads": [{"kind": "redundancy", "seeds": [2],
                                      "params": {"machines": 4, "lam": 0.5, "horizon": 10.0,
                                                 "checkpoint_bytes": 1e6}}],
                       "fabrics": [{"ports": 4, "cores": 1, "rate": "100Mbps"}],
                       "policies": [{"specs": specs}]})
    runs = spec.runs("test")
    assert [r.policy for r in runs] == specs
    jw = redundancy(2, ports=4, cores=1, rate_bps=1e8, machines=4, lam=0.5, horizon=10.0,
                    checkpoint_bytes=1e6)
    for r in runs:
        out = execute(r)
        assert out.run["status"] == "ok", out.run.get("error")
        direct = simulate_joint(jw, r.policy).to_json()
        assert direct["checkpoint_cost"]["transfers"] > 0
        assert len(out.jobs) == len(direct["jobs"])
        done = sorted(j["completion"] for j in direct["jobs"])
        assert sorted(j["completion"] for j in out.jobs) == pytest.approx(done)
