"""The MSJO job model (controller.jobmodels.msjo) through both engines' seam.

A workload written by ``coflowemu generate --kind msjo`` runs under every MSJO policy
through ``coflowemu run`` as a subprocess: one JSON document on stdout, task segments
that a verifier accepts (one task per machine at a time, each task once in one piece of
its length, not before its release, every reduce at least the shuffle delay after each
of its job's maps) and job completions equal to the policy's own
:class:`~controller.msjo.schedule.MSJOSchedule`. Bad input exits 2 with one line naming
the file, the line and the field. The controller (no network) holds a reduce piece until
the delay after its maps' reported ends.
"""
from __future__ import annotations

import json
from collections import defaultdict

import numpy as np
import pytest

from controller.jobmodel import get_job_model
from controller.jobmodels.msjo import MSJOModel, joint_from_msjo, msjo_cluster
from controller.msjo import POLICIES, get_policy
from controller.msjo.model import Cluster, Job, Task
from controller.policyspec import PolicySpec, split_policy
from emulate.io.traces import joint_to_dict, read_workload
from emulate.sim.jobsim import simulate_joint
from jobmodel_helpers import coflowemu, run_generated, controller_run, write_lines
from topologies.fabric import Fabric

TOL = 1e-9


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """A generated msjo workload: 5 random-scenario jobs on 6 machines."""
    d = tmp_path_factory.mktemp("msjo")
    out = coflowemu("generate", "--kind", "msjo", "--ports", 6, "--seed", 3,
                    "-p", "n_jobs=5", "-p", "scenario=random", "-p", "delay_factor=0.3",
                    "--out", d / "w.json")
    assert out.returncode == 0, out.stderr
    return d


def verify(segs: list[dict], w, tol: float = TOL) -> dict:
    """Check msjo task segments; returns task id -> (machine, start, end).

    Every task once, in one piece of its length on a machine of the workload, not before
    its release; a machine runs one task at a time; every reduce starts at least the
    delay after each map of its job ends (``S_v >= S_u + p_u + d_u``). ``tol``: the
    slack of measured times (the emulation's agents' reports)."""
    machines = {m.id for m in w.machines}
    tasks = {t.id: t for s in w.stages for t in s.tasks}
    out, by_machine = {}, defaultdict(list)
    for d in segs:
        assert set(d) == {"task", "machine", "start", "end"}
        assert d["machine"] in machines
        assert d["task"] not in out, f"{d['task']}: one piece, non-preemptive"
        t = tasks[d["task"]]
        assert d["end"] - d["start"] == pytest.approx(t.placement[d["machine"]], rel=1e-12,
                                                      abs=tol)
        assert d["start"] >= t.release - tol, f"{t.id}: not before its release"
        out[d["task"]] = (d["machine"], d["start"], d["end"])
        by_machine[d["machine"]].append((d["start"], d["end"]))
    assert set(out) == set(tasks), "every task runs"
    for iv in by_machine.values():
        iv.sort()
        for (_, e0), (s1, _) in zip(iv, iv[1:]):
            assert s1 >= e0 - tol, "a machine runs one task at a time"
    stage = {s.id: s for s in w.stages}
    for j in w.jobs:
        mp, rd = (stage[s] for s in j.stages)
        ready = max(out[u.id][2] + u.delay for u in mp.tasks)
        for v in rd.tasks:
            assert out[v.id][1] >= ready - tol, f"{v.id}: the shuffle delay"
    return out


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_every_msjo_policy_runs_through_the_cli_and_matches_its_schedule(generated, policy):
    doc, w, segs = run_generated(generated, policy)
    got = verify(segs, w)
    cluster, order = msjo_cluster(w)
    sched = get_policy(policy)(cluster.arrays)
    ids = w.compute.arrays.task_ids
    assert {ids[q]: got[ids[q]][1] for q in order} == {
        ids[q]: float(s) for q, s in zip(order, sched.start)}
    jobs = {j["id"]: j["completion"] for j in doc["jobs"]}
    assert jobs == {jid: float(c) for jid, c in zip(cluster.arrays.job_ids,
                                                     sched.job_completion)}
    assert doc["compute_policy"] == policy and doc["network_policy"] is None
    assert doc["total_weighted_job_completion"] == pytest.approx(sched.job_cost, rel=1e-12)


def test_bound_prints_lp_lower_bounds_below_every_policys_cost(generated):
    """`bound --lp cls|coge|task-level --json` (one document each): CND <= CLS, each at
    most every policy's sum_j w_j C_j; the task-level LP at most every sum_u w_u C_u."""
    docs = {}
    for lp, extra in (("cls", ()), ("coge", ("--tolerance", 0)), ("task-level", ())):
        out = coflowemu("bound", generated / "w.json", "--lp", lp, *extra, "--json")
        assert out.returncode == 0, out.stderr
        docs[lp] = json.loads(out.stdout)
        assert docs[lp]["status"] == "optimal" and docs[lp]["lp"] == lp
    assert docs["coge"]["value"] <= docs["cls"]["value"] * (1 + 1e-9)
    w = read_workload(str(generated / "w.json"))
    cluster, _ = msjo_cluster(w)
    for policy in POLICIES:
        sched = get_policy(policy)(cluster.arrays)
        assert docs["cls"]["value"] <= sched.job_cost * (1 + 1e-9)
        assert docs["task-level"]["value"] <= sched.task_cost * (1 + 1e-9)
    out = coflowemu("bound", generated / "w.json", "--lp", "synchpack-3")
    assert out.returncode == 2 and "--lp cls" in out.stderr


def test_an_msjo_workload_round_trips_through_json_with_its_delays(generated):
    w = read_workload(str(generated / "w.json"))
    assert w.model == "msjo" and len(w.machines) == 6 and len(w.jobs) == 5
    doc = joint_to_dict(w)
    assert doc["model"] == "msjo"
    m0, r0 = doc["stages"][0]["tasks"][0], doc["stages"][1]["tasks"][0]
    assert m0["delay"] == pytest.approx(0.3 * m0["placement"]["m0"])
    assert "delay" not in r0
    assert doc["jobs"][0]["arcs"] == [doc["jobs"][0]["stages"]]


def test_msjo_policy_names_are_compute_policies_of_a_spec():
    for name in POLICIES:
        assert split_policy(name) == PolicySpec(name, None)
        assert split_policy(f"{name}+fair") == PolicySpec(name, "fair")
    assert get_job_model("msjo") is MSJOModel
    assert not MSJOModel.gang and not MSJOModel.preemptive


def small_cluster() -> Cluster:
    """j0: maps of 1 s (delay 0.5) and 2 s (delay 1.5), a reduce of 3 s; j1 (release 1):
    one map of 1 s (delay 0), one reduce of 1 s; 2 machines."""
    return Cluster(2, (Job("j0", (Task(1.0, 0.5), Task(2.0, 1.5)), (Task(3.0),), 0.0, 2.0),
                       Job("j1", (Task(1.0),), (Task(1.0),), 1.0, 1.0)))


def test_the_simulator_keeps_the_shuffle_delay_of_a_hand_instance():
    # mars or not, j0's reduce waits for 2 + 1.5 = 3.5 at least
    w = joint_from_msjo(small_cluster(), Fabric(2, 1, 1e9))
    for policy in POLICIES:
        r = simulate_joint(w, policy, segments=True)
        sched = get_policy(policy)(small_cluster().arrays)
        assert r.job_completion.tolist() == sched.job_completion.tolist()
        starts = {d["task"]: d["start"] for d in r.segment_dicts() if "task" in d}
        assert starts["j0.r0"] >= 3.5


def msjo_doc(maps: list[dict], reduces: list[dict], **job) -> dict:
    """A joint msjo document on 2 machines: one job ``j0``, its map and reduce stages."""
    doc = {"model": "msjo", "fabric": {"ports": 2, "cores": 1, "rate_bps": 1e9},
           "machines": [{"id": "m0"}, {"id": "m1"}],
           "stages": [{"id": "j0.map", "tasks": maps}, {"id": "j0.reduce", "tasks": reduces}],
           "jobs": [{"id": "j0", "stages": ["j0.map", "j0.reduce"],
                     "arcs": [["j0.map", "j0.reduce"]], **job}]}
    return doc


def task(tid, p=2.0, **kw) -> dict:
    return {"id": tid, "size": 1.0, "placement": {"m0": p, "m1": p}, **kw}


def assert_one_error_line(p, policy: str, bad: str, message: str) -> None:
    """``coflowemu run p --policy policy`` exits 2 with one stderr line naming ``p``, the
    line of the element with id ``bad``, and ``message``; nothing on stdout."""
    out = coflowemu("run", p, "--policy", policy, "--json")
    assert out.returncode == 2, out.stderr
    assert out.stdout == ""
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    line = next(n for n, x in enumerate(p.read_text().splitlines(), 1)
                if f'"id": "{bad}"' in x)
    assert lines[0].startswith(f"coflowemu: error: {p}:{line}: "), lines[0]
    assert message in lines[0]


@pytest.mark.parametrize("maps, reduces, job, bad, message", [
    ([task("a0", delay=-1.0)], [task("b0")], {}, "a0",
     "delay: task 'a0': delay must be >= 0, got -1.0"),
    ([task("a0")], [task("b0", delay=1.0)], {}, "b0",
     "delay: task 'b0' of job 'j0': a reduce task has no delay"),
    ([task("a0"), {"id": "a1", "size": 1.0, "placement": {"m0": 2.0, "m1": 3.0}}],
     [task("b0")], {}, "a1",
     "placement: task 'a1' of job 'j0': an msjo task takes the same time on every machine"),
    ([task("a0"), {"id": "a1", "size": 1.0, "placement": {"m0": 2.0}}], [task("b0")], {},
     "a1", "placement: task 'a1' of job 'j0': an msjo task runs on every machine; "
           "placement lacks 'm1'"),
    ([task("a0")], [task("b0")], {"arcs": []}, "j0",
     "arcs: job 'j0': an msjo job is a map stage then a reduce stage"),
    ([task("a0", delay="x")], [task("b0")], {}, "a0",
     "delay: task 'a0': 'delay' must be a number"),
])
def test_bad_msjo_input_exits_2_with_one_line_naming_file_line_and_field(
        tmp_path, maps, reduces, job, bad, message):
    p = tmp_path / "bad.json"
    write_lines(p, msjo_doc(maps, reduces, **job))
    assert_one_error_line(p, "mars", bad, message)


def test_a_delay_outside_an_msjo_workload_is_a_user_error(tmp_path):
    p = tmp_path / "bad.json"
    doc = msjo_doc([task("a0", delay=1.0)], [task("b0")])
    del doc["model"]
    write_lines(p, doc)
    out = coflowemu("run", p, "--policy", "synchpack-3", "--json")
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1
    assert "task 'a0' has a shuffle delay but the workload's model is 'packing'" in out.stderr


# ------------------------------------------------------------------------- controller
def test_the_controller_holds_a_reduce_until_the_delay_after_its_maps_reported_ends(
        tmp_path):
    from controller.joint_runtime import _Seg
    run = controller_run(tmp_path, joint_from_msjo(small_cluster(), Fabric(2, 1, 1e9)),
                         "mars")
    assert run.register_info(0) == {"capacity": 1.0}
    ids = run.driver.a.task_ids
    r, m0, m1 = ids.index("j0.r0"), ids.index("j0.m0"), ids.index("j0.m1")
    run.segs[0] = _Seg(r, 0, 0.0, 3.0, True, run.cplan)
    run.n_state["planned"] += 1
    run.task_end[m0] = run.now_w()
    run._dispatch(0)                   # a map not reported yet: held, no timer
    assert run.segs[0].state == "blocked" and run.agents[0].sent == []
    assert not [t for t in run.timers if t.kind == "task_go"]
    run.blocked.remove(0)
    now = run.now_w()
    run.task_end[m0], run.task_end[m1] = now - 0.2, now - 1.0
    run._dispatch(0)                   # m0's delay ends last: 0.3 s from now
    assert run.segs[0].state == "blocked" and run.agents[0].sent == []
    timer = [t for t in run.timers if t.kind == "task_go"]
    assert [t.data for t in timer] == [(-1, run.cplan)]
    assert timer[0].at == pytest.approx(run.at_w(now - 0.2 + 0.5))
    run.task_end[[m0, m1]] -= 1.0      # as if the timer fired after the delay
    run._handle([("task_go", timer[0].at, timer[0].data)], False)
    assert run.segs[0].state == "sent" and [m["seg"] for m in run.agents[0].sent] == [0]
    assert run.agents[0].sent[0]["seconds"] == pytest.approx(3.0 * run.scale)


def test_the_model_waits_for_every_map_and_the_largest_end_plus_delay():
    w = joint_from_msjo(small_cluster(), Fabric(2, 1, 1e9))
    model = MSJOModel(w, "mars")
    ids = w.compute.arrays.task_ids
    end = np.full(len(ids), np.nan)
    r = ids.index("j0.r0")
    assert model.earliest_start(ids.index("j0.m0"), end) == -np.inf
    end[ids.index("j0.m0")] = 1.0
    assert model.earliest_start(r, end) == np.inf
    end[ids.index("j0.m1")] = 2.0
    assert model.earliest_start(r, end) == 3.5
    end[ids.index("j0.m0")] = 3.2
    assert model.earliest_start(r, end) == pytest.approx(3.7)


# ------------------------------------------------------------------ shuffle coflows
def verify_shuffled(doc: dict, segs: list[dict], w, tol: float = TOL) -> dict:
    """Check a run of an msjo workload whose shuffles are coflows: the task rules of
    :func:`verify` (every task once in one piece, not before its release, one task per
    machine at a time); a job's shuffle opens no earlier than its last map ends and every
    reduce starts no earlier than its shuffle completes. Returns task id -> (machine,
    start, end). ``tol``: the slack of measured times (the emulation's reports)."""
    got = verify([d for d in segs if "task" in d], w, tol)
    cof = {c["id"]: c for c in doc["coflows"]}
    stage = {s.id: s for s in w.stages}
    for j in w.jobs:
        (mp, rd), (sh,) = (stage[s] for s in j.stages), j.coflows
        maps_end = max(got[u.id][2] for u in mp.tasks)
        assert cof[sh]["release"] >= maps_end - tol, f"{sh}: opens after the last map"
        done = cof[sh]["release"] + cof[sh]["cct"]
        for v in rd.tasks:
            assert got[v.id][1] >= done - tol, f"{v.id}: starts after its shuffle"
    return got


def shuffled_cluster() -> tuple[Cluster, list[float]]:
    """small_cluster without delays, and its maps' output bytes (reduces: 0)."""
    c = Cluster(2, (Job("j0", (Task(1.0), Task(2.0)), (Task(3.0),), 0.0, 2.0),
                    Job("j1", (Task(1.0),), (Task(1.0),), 1.0, 1.0)))
    return c, [4e6, 2e6, 0.0, 1e6, 0.0]


@pytest.fixture(scope="module")
def generated_shuffled(tmp_path_factory):
    """A generated msjo workload with shuffle coflows: 4 random-scenario jobs (maps ~
    Poisson(5)), lengths x 0.2, on 8 hosts x 2 cores x 10 Mbit/s."""
    d = tmp_path_factory.mktemp("msjo-shuffle")
    out = coflowemu("generate", "--kind", "msjo", "--ports", 8, "--cores", 2, "--rate",
                    10e6, "--seed", 2, "-p", "n_jobs=4", "-p", "scenario=random",
                    "-p", "mean_maps=5", "-p", "length_scale=0.2", "-p", "shuffle_bytes=1e6",
                    "--out", d / "w.json")
    assert out.returncode == 0, out.stderr
    return d


@pytest.mark.parametrize("policy", ["mars+sebf", "mars+fair", "hjwf+lp-coflow",
                                    "so-mars+sebf"])
def test_shuffle_coflows_run_the_schedules_order_as_soon_as_machine_and_shuffle_allow(
        generated_shuffled, policy):
    """Through the CLI: the verifier's rules; every task on its machine in the policy's
    schedule (planned with the estimated delays), each machine in the schedule's order,
    and a task starts exactly when the machine frees, its release, and (a reduce) its
    shuffle's completion allow."""
    doc, w, segs = run_generated(generated_shuffled, policy)
    got = verify_shuffled(doc, segs, w)
    compute = policy.split("+")[0]
    assert doc["compute_policy"] == compute and doc["network_policy"] == policy.split("+")[1]
    model = MSJOModel(w, compute)
    ids = w.compute.arrays.task_ids
    cof = {c["id"]: c["release"] + c["cct"] for c in doc["coflows"]}
    job_of = {t.id: j for j in w.jobs for s in j.stages
              for t in w.stages[w.stage_index[s]].tasks}
    rel = {t.id: t.release for s in w.stages for t in s.tasks}
    for i, seq in enumerate(model.sequence):
        assert [got[ids[q]][0] for q in seq] == [f"m{i}"] * len(seq)
        free = 0.0
        for q in seq:
            tid = ids[q]
            ready = max(free, rel[tid])
            if ".r" in tid:
                ready = max(ready, cof[job_of[tid].coflows[0]])
            assert got[tid][1] == pytest.approx(ready, abs=1e-9), tid
            free = got[tid][2]
    assert all(c["cct"] > 0 for c in doc["coflows"])       # the network took time


def test_the_policy_plans_with_the_estimated_delay_and_the_network_decides_it():
    c, out = shuffled_cluster()
    w = joint_from_msjo(c, Fabric(2, 2, 8e6), output_bytes=out)
    assert w.shuffles == {"j0.shuffle", "j1.shuffle"} and not any(
        t.delay for s in w.stages for t in s.tasks)
    cluster, _ = msjo_cluster(w)
    # 4 MB over 2 x 8 Mbit/s = 2 s as if alone
    assert cluster.arrays.delay.tolist() == [2.0, 1.0, 0.0, 0.5, 0.0]
    r = simulate_joint(w, "mars+fair", segments=True)
    doc = r.to_json()
    got = verify_shuffled(doc, r.segment_dicts(), w)
    # j0's maps run on both machines, so half of each map's output crosses the network
    flows = [d for d in r.segment_dicts() if "coflow" in d]
    assert {d["coflow"] for d in flows} <= {"j0.shuffle", "j1.shuffle"}
    assert got["j0.r0"][1] > max(got["j0.m0"][2], got["j0.m1"][2])


def test_the_delay_model_and_a_delay_free_shuffle_model_differ_only_where_they_should():
    """Zero bytes: every shuffle is local or empty and completes as it opens, so reduces
    start when their maps end and the machine is free."""
    c, out = shuffled_cluster()
    w = joint_from_msjo(c, Fabric(2, 1, 1e9), output_bytes=[0.0] * 5)
    r = simulate_joint(w, "mars+sebf", segments=True)
    doc = r.to_json()
    got = verify_shuffled(doc, r.segment_dicts(), w)
    assert all(x["cct"] == 0 for x in doc["coflows"])
    assert got["j0.r0"][1] == pytest.approx(max(got["j0.m0"][2], got["j0.m1"][2]))


def shuffle_doc(**change) -> dict:
    """A joint msjo document on 2 machines: one job ``j0`` whose shuffle is a coflow."""
    doc = msjo_doc([task("a0", output_bytes=1e6)], [task("b0")])
    doc["coflows"] = [{"id": "j0.s", "shuffle": True}]
    doc["jobs"][0].update({"coflows": ["j0.s"],
                           "arcs": [["j0.map", "j0.s"], ["j0.s", "j0.reduce"]]})
    for k, v in change.items():
        doc[k] = v
    return doc


@pytest.mark.parametrize("change, bad, message", [
    ({"stages": [{"id": "j0.map", "tasks": [task("a0", delay=1.0, output_bytes=1e6)]},
                 {"id": "j0.reduce", "tasks": [task("b0")]}]}, "a0",
     "delay: task 'a0' of job 'j0': a map whose output goes by the shuffle coflow 'j0.s' "
     "has no delay"),
    ({"coflows": [{"id": "j0.s", "flows": []}]}, "j0",
     "shuffles: job 'j0': coflow 'j0.s' between the map and reduce stages must be a "
     "shuffle"),
    ({"stages": [{"id": "j0.map", "tasks": [task("a0")]},
                 {"id": "j0.reduce", "tasks": [task("b0")]},
                 {"id": "j1.map", "tasks": [task("c0")]},
                 {"id": "j1.reduce", "tasks": [task("d0")]}],
      "jobs": [{"id": "j0", "stages": ["j0.map", "j0.reduce"], "coflows": ["j0.s"],
                "arcs": [["j0.map", "j0.s"], ["j0.s", "j0.reduce"]]},
               {"id": "j1", "stages": ["j1.map", "j1.reduce"],
                "arcs": [["j1.map", "j1.reduce"]]}]}, "j1",
     "coflows: job 'j1' has no shuffle coflow but job 'j0' has one"),
])
def test_bad_shuffled_msjo_input_exits_2_with_one_line(tmp_path, change, bad, message):
    p = tmp_path / "bad.json"
    write_lines(p, shuffle_doc(**change))
    assert_one_error_line(p, "mars+sebf", bad, message)


@pytest.mark.parametrize("param, message", [
    ("shuffle_bytes=-1", "--param shuffle_bytes=-1.0: must be a finite number >= 0"),
    ("length_scale=0", "--param length_scale=0.0: must be > 0"),
    ("mean_maps=0", "--param mean_maps=0.0: must be > 0"),
])
def test_bad_msjo_generator_parameters_exit_2_with_one_line(tmp_path, param, message):
    out = coflowemu("generate", "--kind", "msjo", "--ports", 4, "-p", param,
                    "--out", tmp_path / "w.json")
    assert out.returncode == 2 and out.stdout == ""
    assert len(out.stderr.strip().splitlines()) == 1 and message in out.stderr, out.stderr
    assert not (tmp_path / "w.json").exists()
