"""The redundancy model: policies, the exact checkpoint simulator, the job model, the
JSON format and the CLI (algorithms.md section 4)."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.redundancy import Instance, copies, simulate
from controller.redundancy.policies import POLICIES
from controller.redundancy.speed import constant, from_points
from redundancy_verifier import RecordError, run_records, verify

CLI = str(Path(sys.executable).with_name("coflowemu"))
ALL = ["srpt+r", "srpt", "fair+r", "fair-share", "laps+r", "laps", "laps+r@beta=0.2", "laps@beta=1"]


def inst(arrivals, works, speed):
    order = np.argsort(arrivals, kind="stable")
    return Instance(np.asarray(arrivals, float)[order], np.asarray(works, float)[order],
                    speed)


# ---------------------------------------------------------------------- policies
def test_srpt_r_spreads_spare_machines_and_gives_the_rest_to_the_smallest_job():
    assert copies("srpt+r", [5, 7], 5) == [(5, 0, 1.0), (5, 1, 1.0), (5, 2, 1.0),
                                            (7, 3, 1.0), (7, 4, 1.0)]
    assert copies("srpt+r", [1, 2, 3], 2) == [(1, 0, 1.0), (2, 1, 1.0)]
    assert copies("srpt", [5, 7], 5) == [(5, 0, 1.0), (7, 1, 1.0)]


def test_fair_r_shares_machines_among_the_newest_and_copies_the_newest_when_few():
    # n = 5 >= N = 2: q = 2, the newest 4 share the machines two by two, the oldest waits
    assert copies("fair+r", [0, 1, 2, 3, 4], 2) == [(1, 0, 0.5), (2, 0, 0.5), (3, 1, 0.5),
                                                     (4, 1, 0.5)]
    # n = 2 < N = 5: the newest gets N - (n-1) floor(N/n) = 3
    assert copies("fair+r", [0, 1], 5) == [(0, 0, 1.0), (0, 1, 1.0), (1, 2, 1.0),
                                            (1, 3, 1.0), (1, 4, 1.0)]
    assert copies("fair-share", [0, 1], 5) == [(0, 0, 1.0), (1, 1, 1.0)]


def test_laps_serves_the_ceil_beta_n_newest():
    # n = 4, beta 0.5: k = 2 <= N = 5: the newest gets floor(5/2) = 2, the oldest selected 3
    assert copies("laps+r", [0, 1, 2, 3], 5) == [(2, 0, 1.0), (2, 1, 1.0), (2, 2, 1.0),
                                                  (3, 3, 1.0), (3, 4, 1.0)]
    assert copies("laps", [0, 1, 2, 3], 5) == [(2, 0, 1.0), (3, 1, 1.0)]
    # k = ceil(0.5 * 10) = 5 > N = 2: fair+r on the 5 newest (q = 2, the oldest of them waits)
    assert [c[0] for c in copies("laps+r", list(range(10)), 2)] == [6, 7, 8, 9]
    assert copies("laps+r@beta=1", list(range(7)), 3) == copies("fair+r", list(range(7)), 3)
    with pytest.raises(ValueError, match="beta"):
        copies("laps+r@beta=0", [0], 1)


@given(st.sampled_from(list(POLICIES)), st.integers(1, 40), st.integers(1, 9),
       st.floats(0.05, 1.0))
def test_every_allocation_uses_each_machine_at_most_once_in_full(policy, n, N, beta):
    cs = copies(policy, list(range(n)), N, beta)
    load = np.zeros(N)
    per_job = {}
    for j, m, s in cs:
        load[m] += s
        per_job.setdefault(j, set()).add(s)
    assert np.all(load <= 1 + 1e-12)
    assert all(len(v) == 1 for v in per_job.values())     # one share per job
    if not policy.endswith("+r"):
        assert all(sum(1 for c in cs if c[0] == j) == 1 for j in per_job)


# ---------------------------------------------------------------------- hand-computed runs
def test_single_machine_srpt_preempts_for_the_shorter_arrival():
    r = simulate(inst([0, 1], [4, 1], constant(1)), "srpt")
    assert r.completion.tolist() == [5.0, 2.0]


def test_a_copy_on_a_faster_machine_finishes_the_job():
    # m0: rate 2 on [0, 1), stalled until 5, then 1; m1: rate 1
    sp = from_points([([0, 1, 5], [2, 0, 1]), ([0], [1])])
    assert simulate(inst([0], [3], sp), "srpt+r").completion.tolist() == [3.0]
    assert simulate(inst([0], [3], sp), "srpt").completion.tolist() == [6.0]


def test_a_checkpoint_clones_the_most_advanced_copy():
    # A (work 4) runs two copies until B arrives at 1.5: the m0 copy has done 2, the m1
    # copy 1.5, so A keeps 2 left; then A runs on m0 alone (stalled until 10): done at 12.
    # B runs on m1 from 1.5 (10.5 done by 12), then two copies at rate 1: done at 101.5.
    sp = from_points([([0, 1, 10], [2, 0, 1]), ([0], [1])])
    r = simulate(inst([0, 1.5], [4, 100], sp), "srpt+r", record=True)
    assert r.completion == pytest.approx([12.0, 101.5])
    verify(*run_records(r), 2)


def test_fair_r_lets_the_oldest_wait_and_then_copies_it():
    r = simulate(inst([0, 0, 0], [10, 10, 10], constant(2)), "fair+r")
    assert r.completion.tolist() == [20.0, 10.0, 10.0]
    r = simulate(inst([0, 0, 0, 0], [10, 10, 10, 10], constant(2)), "fair+r")
    assert r.completion.tolist() == [20.0, 20.0, 20.0, 20.0]   # two per machine, share 1/2


def test_a_job_that_can_never_finish_is_reported():
    sp = from_points([([0, 1], [1, 0])])
    with pytest.raises(ValueError, match="never finish"):
        simulate(inst([0], [2], sp), "srpt")


def brute_force_srpt(arrivals, works, N, dt=1e-3):
    """Time-stepped SRPT on N machines of rate 1 (the reference for constant speeds)."""
    rem = np.array(works, float)
    done = np.full(len(works), np.nan)
    t = 0.0
    while np.isnan(done).any():
        act = [j for j in range(len(works)) if arrivals[j] <= t + 1e-12 and np.isnan(done[j])]
        act.sort(key=lambda j: (rem[j], j))
        for j in act[:N]:
            rem[j] -= dt
            if rem[j] <= 1e-9:
                done[j] = t + dt
        t += dt
    return done


def test_srpt_matches_a_time_stepped_brute_force_on_constant_machines():
    arrivals, works = [0.0, 0.2, 0.5, 0.5, 1.1], [1.3, 0.4, 0.9, 0.2, 0.5]
    ref = brute_force_srpt(arrivals, works, 2)
    got = simulate(inst(arrivals, works, constant(2)), "srpt").completion
    assert got == pytest.approx(ref, abs=5e-3)


# ---------------------------------------------------------------------- properties
@st.composite
def instances(draw):
    N = draw(st.integers(1, 4))
    n = draw(st.integers(1, 8))
    arrivals = sorted(draw(st.lists(st.floats(0, 10).map(lambda x: round(x, 1)),
                                    min_size=n, max_size=n)))
    works = draw(st.lists(st.floats(0.1, 8), min_size=n, max_size=n))
    pts = []
    for _ in range(N):
        k = draw(st.integers(1, 4))
        gaps = draw(st.lists(st.floats(0.1, 5), min_size=k - 1, max_size=k - 1))
        rates = draw(st.lists(st.floats(0, 2), min_size=k, max_size=k))
        rates[-1] = max(rates[-1], 0.25)          # every machine works in the end
        pts.append((np.concatenate([[0.0], np.cumsum(gaps)]), np.array(rates)))
    return Instance(np.array(arrivals), np.array(works), from_points(pts))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances(), st.sampled_from(ALL), st.sampled_from(["index", "sticky"]))
def test_every_run_passes_the_independent_verifier(instance, policy, assign):
    r = simulate(instance, policy, record=True, assign=assign)
    done = verify(*run_records(r), instance.speed.n)
    assert len(done) == instance.n_jobs
    assert np.all(r.completion >= instance.arrival)


@settings(max_examples=100, deadline=None)
@given(instances())
def test_srpt_r_equals_srpt_on_constant_equal_machines(instance):
    const = Instance(instance.arrival, instance.work, constant(instance.speed.n))
    assert simulate(const, "srpt+r").completion == pytest.approx(
        simulate(const, "srpt").completion, rel=1e-9, abs=1e-9)


@settings(max_examples=100, deadline=None)
@given(instances(), st.integers(0, 3))
def test_srpt_r_equals_srpt_while_n_is_at_least_n_machines(instance, extra):
    # a backlog of long jobs at 0 keeps n >= N until the instance's jobs are done
    N = instance.speed.n
    big = 1e4
    arr = np.concatenate([np.zeros(N + extra), instance.arrival])
    work = np.concatenate([np.full(N + extra, big), instance.work])
    order = np.argsort(arr, kind="stable")
    i2 = Instance(arr[order], work[order], instance.speed)
    a, b = simulate(i2, "srpt+r").completion, simulate(i2, "srpt").completion
    small = work[order] < big
    assert a[small] == pytest.approx(b[small], rel=1e-9, abs=1e-9)


def test_redundancy_helps_on_varying_speed_at_light_load():
    from controller.redundancy.generators import paper_instance
    i = paper_instance(1, machines=20, lam=0.2, horizon=2000.0)
    assert simulate(i, "srpt+r").mean_flowtime < 0.8 * simulate(i, "srpt").mean_flowtime


# ---------------------------------------------------------------------- format and CLI
def workload(tmp_path, **extra):
    (tmp_path / "m1.txt").write_text("# time rate\n0 2\n3 0.5\n")
    doc = {"name": "tiny", "model": "redundancy", "fabric": {"ports": 3},
           "machines": [{"id": "m0"}, {"id": "m1", "speed": {"trace": "m1.txt"}},
                        {"id": "m2", "speed": {"model": "ap-up", "seed": 4}}],
           "stages": [{"id": "a.s", "tasks": [{"id": "a", "work": 6.0}]},
                      {"id": "b.s", "tasks": [{"id": "b", "work": 2.0, "release": 1.0}]},
                      {"id": "c.s", "tasks": [{"id": "c", "work": 30.0, "release": 1.5}]}],
           "jobs": [{"id": "a", "stages": ["a.s"]}, {"id": "b", "stages": ["b.s"]},
                    {"id": "c", "stages": ["c.s"]}]}
    doc.update(extra)
    p = tmp_path / "w.json"
    p.write_text(json.dumps(doc, indent=1))
    return p


@pytest.mark.parametrize("policy", ["srpt+r", "fair-share", "laps+r@beta=0.3"])
def test_cli_run_writes_flowtimes_and_verifiable_segments(tmp_path, policy):
    w = workload(tmp_path)
    seg = tmp_path / "seg.jsonl"
    out = subprocess.run([CLI, "run", str(w), "--policy", policy, "--json", "--segments",
                          str(seg)], capture_output=True, text=True, check=True)
    doc = json.loads(out.stdout)
    jobs = doc["jobs"]
    assert [j["id"] for j in jobs] == ["a", "b", "c"]
    for j in jobs:
        assert j["flowtime"] == pytest.approx(j["completion"] - j["arrival"])
    assert doc["total_flowtime"] == pytest.approx(sum(j["flowtime"] for j in jobs))
    assert doc["mean_flowtime"] == pytest.approx(doc["total_flowtime"] / 3)
    lines = [json.loads(x) for x in seg.read_text().splitlines()]
    kinds = {frozenset(x) for x in lines}
    assert kinds == {frozenset({"job", "copy", "machine", "start", "end", "share", "work"}),
                     frozenset({"machine", "start", "end", "rate"})}
    verify(jobs, lines, 3)
    # the job model's run is the pure simulator's
    from controller.jobmodels.redundancy import redundancy_instance
    from emulate.io.traces import read_workload
    instance, order = redundancy_instance(read_workload(str(w)))
    ref = simulate(instance, policy).completion
    assert sorted(j["completion"] for j in jobs) == pytest.approx(sorted(ref))


def test_a_joint_round_trip_keeps_work_and_speed(tmp_path):
    from emulate.io.traces import joint_to_dict, read_workload
    w = read_workload(str(workload(tmp_path)))
    again = tmp_path / "again.json"
    again.write_text(json.dumps(joint_to_dict(w)))
    w2 = read_workload(str(again))
    assert [m.speed for m in w2.machines] == [m.speed for m in w.machines]
    assert [t.work for s in w2.stages for t in s.tasks] == [6.0, 2.0, 30.0]


@pytest.mark.parametrize("change, line, field", [
    (("a", {"id": "a", "work": -1}), 9, "work"),
    (("m2", {"id": "m2", "speed": {"model": "ap-up"}}), 7, "speed"),
    (("m1", {"id": "m1", "speed": {"trace": "none.txt"}}), 6, "speed"),
    (("a", {"id": "a", "size": 1, "placement": {"m0": 2}}), 9, "work"),
])
def test_bad_input_names_file_line_and_field(tmp_path, change, line, field):
    p = workload(tmp_path)
    doc = json.loads(p.read_text())
    key, repl = change
    for lst in [doc["machines"]] + [s["tasks"] for s in doc["stages"]]:
        for k, x in enumerate(lst):
            if x["id"] == key:
                lst[k] = repl
    text = json.dumps(doc, indent=1)
    p.write_text(text)
    want = next(n for n, ln in enumerate(text.splitlines(), 1) if f'"{key}"' in ln)
    out = subprocess.run([CLI, "run", str(p), "--policy", "srpt+r"], capture_output=True,
                         text=True)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.strip().count("\n") == 0 and "Traceback" not in out.stderr
    assert out.stderr.startswith(f"coflowemu: error: {p}:{want}: {field}: "), out.stderr


def test_speed_and_work_belong_to_the_redundancy_model_only(tmp_path):
    p = workload(tmp_path)
    doc = json.loads(p.read_text())
    del doc["model"]
    p.write_text(json.dumps(doc))
    out = subprocess.run([CLI, "run", str(p), "--policy", "fifo"], capture_output=True,
                         text=True)
    assert out.returncode == 2 and "speed" in out.stderr and "redundancy" in out.stderr


def test_generate_then_run_and_list_policies(tmp_path):
    g = tmp_path / "g.json"
    subprocess.run([CLI, "generate", "--kind", "redundancy", "-p", "machines=6", "-p",
                    "lam=0.1", "-p", "horizon=60", "--out", str(g)], check=True,
                   capture_output=True)
    doc = json.loads(g.read_text())
    assert doc["model"] == "redundancy" and len(doc["machines"]) == 6
    assert doc["machines"][5]["speed"] == {"model": "ap-up", "seed": 5}
    out = subprocess.run([CLI, "run", str(g), "--policy", "srpt+r", "--json"],
                         capture_output=True, text=True, check=True)
    assert json.loads(out.stdout)["mean_flowtime"] > 0
    pol = subprocess.run([CLI, "policies"], capture_output=True, text=True,
                         check=True).stdout
    block = pol.split("redundancy job model")[1]
    assert all(p in block for p in POLICIES)


@pytest.mark.parametrize("tamper", ["work", "share", "early", "split", "lost"])
def test_the_verifier_rejects_tampered_records(tamper):
    sp = from_points([([0, 1, 10], [2, 0, 1]), ([0], [1])])
    r = simulate(inst([0, 1.5], [4, 100], sp), "srpt+r", record=True)
    jobs, segs = run_records(r)
    verify(jobs, segs, 2)
    first = next(s for s in segs if "job" in s)
    if tamper == "work":
        first["work"] *= 1.01
    elif tamper == "share":
        segs.append(dict(first, copy=9, share=0.5))
    elif tamper == "early":
        jobs[0]["arrival"] = 0.5
    elif tamper == "split":                      # a checkpoint at no event
        k = segs.index(first)
        mid = (first["start"] + first["end"]) / 2
        segs[k:k + 1] = [dict(first, end=mid, work=first["work"] * (mid - first["start"])),
                         dict(first, start=mid, work=first["work"] * (first["end"] - mid))]
    else:
        jobs[1]["work"] += 1
    with pytest.raises(RecordError):
        verify(jobs, segs, 2)


def test_a_plus_inside_a_redundancy_policy_name_is_not_the_compute_network_separator():
    from controller.policyspec import split_policy
    assert split_policy("srpt+r") == ("srpt+r", None)
    assert split_policy("laps+r@beta=0.3") == ("laps+r@beta=0.3", None)
    assert split_policy("fair+r+sebf") == ("fair+r", "sebf")
    assert split_policy("srpt+sebf") == ("srpt", "sebf")
    assert split_policy("psrs+lp-coflow") == ("psrs", "lp-coflow")


def test_a_workload_whose_machines_stop_for_good_is_a_user_error(tmp_path):
    (tmp_path / "stop.txt").write_text("0 1\n1 0\n")
    (tmp_path / "w.json").write_text(json.dumps(
        {"model": "redundancy", "fabric": {"ports": 1},
         "machines": [{"id": "m0", "speed": {"trace": "stop.txt"}}],
         "stages": [{"id": "a.s", "tasks": [{"id": "a", "work": 6.0}]}],
         "jobs": [{"id": "a", "stages": ["a.s"]}]}))
    out = subprocess.run([CLI, "run", str(tmp_path / "w.json"), "--policy", "srpt"],
                         capture_output=True, text=True)
    assert out.returncode == 2 and "never finish" in out.stderr
    assert "Traceback" not in out.stderr


def test_sticky_assignment_keeps_a_job_on_its_machine():
    # when the shorter job 1 arrives at 1, index order deals it machine 0 (rate 0.5) and
    # moves job 0 to machine 1 (rate 1); sticky keeps job 0 on machine 0
    sp = from_points([([0], [0.5]), ([0], [1.0])])
    i = inst([0, 1], [10, 1], sp)
    ri = simulate(i, "srpt", record=True)
    rs = simulate(i, "srpt", record=True, assign="sticky")
    assert ri.copies["job"].tolist() == rs.copies["job"].tolist() == [0, 1, 0, 0]
    assert ri.copies["machine"].tolist() == [0, 0, 1, 0]
    assert rs.copies["machine"].tolist() == [0, 1, 0, 0]
    assert ri.completion.tolist() == pytest.approx([18.0, 3.0])
    assert rs.completion.tolist() == pytest.approx([20.0, 2.0])
