"""The moldable job model (controller.jobmodels.moldable) through both engines' seam.

A workload written by ``coflowemu generate --kind moldable`` runs under every moldable
algorithm through ``coflowemu run`` as a subprocess: one JSON document on stdout, task
segments that a verifier accepts (at most ``m`` machines busy, each job on exactly ``q``
distinct machines for ``p(q)`` in one piece, every job run) and completions equal to the
algorithm's own :class:`~controller.moldable.MoldableSchedule`. Bad input exits 2 with
one line naming the file, the line and the field. The Mininet test needs root.
"""
from __future__ import annotations

import json
import os
from collections import defaultdict

import pytest

from controller.jobmodel import get_job_model
from controller.jobmodels.moldable import MoldableModel, moldable_instance
from controller.moldable import algorithms, schedule
from controller.moldable.speedup import table
from controller.policyspec import PolicySpec, split_policy
from emulate.io.traces import joint_to_dict, read_workload
from emulate.sim.jobsim import simulate_joint
from jobmodel_helpers import coflowemu, run_generated, write_lines

TOL = 1e-9


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """A generated moldable workload: 12 mixed jobs on 6 machines."""
    d = tmp_path_factory.mktemp("moldable")
    out = coflowemu("generate", "--kind", "moldable", "--ports", 6, "--seed", 3,
                    "-p", "n_jobs=12", "-p", "family=mixed", "--out", d / "w.json")
    assert out.returncode == 0, out.stderr
    return d


def verify(segs: list[dict], w) -> dict:
    """Check moldable task segments; returns task id -> (allotment, start, end).

    At most ``m`` machines busy at any time (no machine runs two pieces at once, every
    machine one of the ``m``); each job on exactly ``q`` distinct machines, in one piece
    (same start and end everywhere) of length ``p(q)``; every job run."""
    m = len(w.machines)
    machines = {x.id for x in w.machines}
    tasks = {t.id: t for s in w.stages for t in s.tasks}
    by_task, by_machine = defaultdict(list), defaultdict(list)
    for d in segs:
        assert set(d) == {"task", "machine", "start", "end"}
        assert d["machine"] in machines
        by_task[d["task"]].append(d)
        by_machine[d["machine"]].append((d["start"], d["end"]))
    assert set(by_task) == set(tasks), "every job runs"
    out = {}
    for tid, ds in by_task.items():
        q = len(ds)
        assert len({d["machine"] for d in ds}) == q, f"{tid}: q distinct machines"
        assert len({(d["start"], d["end"]) for d in ds}) == 1, f"{tid}: one piece"
        start, end = ds[0]["start"], ds[0]["end"]
        assert q in tasks[tid].moldable, f"{tid}: allotment {q} allowed"
        assert end - start == pytest.approx(tasks[tid].moldable[q], rel=1e-12)
        out[tid] = (q, start, end)
    for iv in by_machine.values():
        iv.sort()
        for (_, e0), (s1, _) in zip(iv, iv[1:]):
            assert s1 >= e0 - TOL, "a machine runs one piece at a time"
    events = sorted([(s, 1) for q, s, e in out.values() for _ in range(q)] +
                    [(e, -1) for q, s, e in out.values() for _ in range(q)],
                    key=lambda x: (x[0], x[1]))
    busy = 0
    for _, step in events:
        busy += step
        assert busy <= m
    return out


@pytest.mark.parametrize("policy", algorithms())
def test_every_moldable_policy_runs_through_the_cli_and_matches_its_schedule(generated,
                                                                             policy):
    doc, w, segs = run_generated(generated, policy)
    got = verify(segs, w)
    sched = schedule(moldable_instance(w), policy)
    ids = w.compute.arrays.task_ids
    assert {tid: got[tid][2] for tid in ids} == {tid: float(sched.end[k])
                                                 for k, tid in enumerate(ids)}
    assert {tid: got[tid][0] for tid in ids} == {tid: int(sched.allotment[k])
                                                 for k, tid in enumerate(ids)}
    jobs = {j["id"]: j["completion"] for j in doc["jobs"]}
    assert {j["id"]: j["allotment"] for j in doc["jobs"]} == {
        tid: int(sched.allotment[k]) for k, tid in enumerate(ids)}
    assert jobs == {tid: float(sched.end[k]) for k, tid in enumerate(ids)}
    assert doc["compute_policy"] == policy and doc["network_policy"] is None
    assert doc["makespan"] == sched.makespan
    assert doc["sum_weighted_completion"] == pytest.approx(sched.minsum, rel=1e-12)
    assert len(segs) == sum(got[t][0] for t in ids)   # one segment per machine held
    assert {t["id"]: (t["allotment"], t["preemptions"]) for t in doc["tasks"]} == {
        tid: (got[tid][0], 0) for tid in ids}
    lb = doc["lower_bounds"]                           # both criteria, both bounds
    assert lb["minsum"] <= doc["sum_weighted_completion"] * (1 + 1e-9)
    assert lb["makespan"] <= doc["makespan"] * (1 + 1e-9)


def test_bound_prints_both_lower_bounds_of_a_moldable_workload(generated):
    out = coflowemu("bound", generated / "w.json", "--lp", "moldable", "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    w = read_workload(str(generated / "w.json"))
    inst = moldable_instance(w)
    for policy in algorithms():
        sched = schedule(inst, policy)
        assert doc["minsum"] <= sched.minsum * (1 + 1e-9)
        assert doc["makespan"] <= sched.makespan * (1 + 1e-9)
    assert doc["lp"] == "moldable" and doc["status"] == "optimal" and doc["seconds"] >= 0


def test_bound_moldable_on_a_coflow_workload_exits_2(generated, tmp_path):
    out = coflowemu("generate", "--ports", 3, "--coflows", 2, "--out", tmp_path / "c.json")
    assert out.returncode == 0, out.stderr
    out = coflowemu("bound", tmp_path / "c.json", "--lp", "moldable", "--json")
    assert out.returncode == 2 and out.stdout == "" and "moldable" in out.stderr


def test_a_moldable_workload_round_trips_through_json_with_its_tables(generated):
    w = read_workload(str(generated / "w.json"))
    assert w.model == "moldable" and len(w.machines) == 6 and len(w.jobs) == 12
    doc = joint_to_dict(w)
    assert doc["model"] == "moldable"
    t0 = doc["stages"][0]["tasks"][0]
    assert set(t0) == {"id", "moldable", "release"}
    assert sorted(int(q) for q in t0["moldable"]) == list(range(1, 7))


def test_a_speedup_model_is_expanded_for_the_workloads_machines(tmp_path):
    spec = {"sequential": 10.0, "model": "amdahl", "parallel_fraction": 0.9}
    p = tmp_path / "w.json"
    p.write_text(json.dumps(moldable_doc([{"id": "t0", "moldable": spec},
                                          {"id": "t1", "moldable": {"1": 4.0, "2": 2.5}}])))
    w = read_workload(str(p))
    tasks = {t.id: t for s in w.stages for t in s.tasks}
    assert dict(tasks["t0"].moldable) == table(spec, 4)
    assert dict(tasks["t1"].moldable) == {1: 4.0, 2: 2.5}
    r = simulate_joint(w, "demt")
    sched = schedule(moldable_instance(w), "demt")
    assert r.job_completion.tolist() == sched.end.tolist()


def test_moldable_policy_names_are_compute_policies_of_a_spec():
    for name in algorithms():
        assert split_policy(name) == PolicySpec(name, None)
        assert split_policy(f"{name}+fair") == PolicySpec(name, "fair")
    assert get_job_model("moldable") is MoldableModel
    assert MoldableModel.gang and not MoldableModel.preemptive


def moldable_doc(tasks: list[dict], model: str | None = "moldable") -> dict:
    """A joint document on 4 machines, one job per task (weights 1, 2, ...)."""
    doc = {"fabric": {"ports": 4, "cores": 1, "rate_bps": 1e9},
           "machines": [{"id": f"m{i}"} for i in range(4)],
           "stages": [{"id": f"s{k}", "tasks": [t]} for k, t in enumerate(tasks)],
           "jobs": [{"id": f"j{k}", "weight": k + 1, "stages": [f"s{k}"]}
                    for k in range(len(tasks))]}
    if model:
        doc["model"] = model
    return doc


GOOD = {"id": "t0", "moldable": {"1": 4.0, "2": 2.5}}


@pytest.mark.parametrize("tasks, model, message", [
    ([GOOD, {"id": "t1", "moldable": {"1": 5.0, "2": 6.0}}], "moldable",
     "moldable: task 't1' moldable: not monotone: p(2) = 6 s > p(1) = 5 s"),
    ([GOOD, {"id": "t1", "moldable": {"1": 8.0, "8": 1.0}}], "moldable",
     "moldable: task 't1' moldable: allotment 8 is larger than the 4 machines"),
    ([GOOD, {"id": "t1", "moldable": {"sequential": 8.0, "model": "nope"}}], "moldable",
     "moldable: task 't1' moldable: "),
    ([GOOD, {"id": "t1", "moldable": {"1": 5.0}}], None,
     "moldable: task 't0' is moldable but the workload's model is 'packing'"),
    ([GOOD, {"id": "t1", "size": 0.5, "placement": {"m0": 2.0}}], "moldable",
     "moldable: task 't1' is not moldable"),
])
def test_bad_moldable_input_exits_2_with_one_line_naming_file_line_and_field(
        tmp_path, tasks, model, message):
    p = tmp_path / "bad.json"
    write_lines(p, moldable_doc(tasks, model))
    out = coflowemu("run", p, "--policy", "demt", "--json")
    assert out.returncode == 2, out.stderr
    assert out.stdout == ""
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    bad = next(t["id"] for t in tasks if t["id"] in message.split("'")[1:2])
    line = next(n for n, x in enumerate(p.read_text().splitlines(), 1)
                if f'"id": "{bad}"' in x)
    assert lines[0].startswith(f"coflowemu: error: {p}:{line}: "), lines[0]
    assert message in lines[0]


def test_a_packing_policy_on_a_moldable_workload_is_a_user_error(generated):
    out = coflowemu("run", generated / "w.json", "--policy", "synchpack-3", "--json")
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1
    assert "runs no compute policy 'synchpack-3'" in out.stderr


# ------------------------------------------------------------------------- emulation
@pytest.mark.skipif(os.geteuid() != 0, reason="the Mininet emulation needs root")
def test_emulation_job_completions_are_within_10_percent_of_the_simulator(system, tmp_path):
    """4 hosts, 5 moldable jobs of a few seconds under demt (+ fifo for the empty
    network): per-job completions on Mininet within 10 % of the joint simulator's."""
    out = coflowemu("generate", "--kind", "moldable", "--ports", 4, "--seed", 1,
                    "-p", "n_jobs=5", "-p", "family=highly", "--out", tmp_path / "w.json")
    assert out.returncode == 0, out.stderr
    w = read_workload(str(tmp_path / "w.json"))
    sim = simulate_joint(w, "demt+fifo")
    out = coflowemu("run", tmp_path / "w.json", "--engine", "mininet", "--policy",
                    "demt+fifo", "--json", timeout=900)
    assert out.returncode == 0, out.stderr
    emu = {j["id"]: j["completion"] for j in json.loads(out.stdout)["jobs"]}
    for j, c in zip(w.jobs, sim.job_completion):
        assert emu[j.id] == pytest.approx(float(c), rel=0.10), j.id
