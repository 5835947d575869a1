"""Job models plug into both engines through controller.jobmodel alone.

A second model is written here, registered by name and picked by the workload
(``JointWorkload.model``): every task holds the whole cluster (a gang of one piece per
machine, each holding the machine's capacity) for its shortest processing time, tasks one
at a time in index order, non-preemptive. Nothing in ``emulate.sim.jobsim`` or
``controller.joint_runtime`` knows it: the joint simulator runs it end to end, the
controller dispatches its gangs to the agents.
"""
from __future__ import annotations

import dataclasses
import time

import numpy as np
import pytest

from controller.jobmodel import (JobModel, JobModelError, Piece, get_job_model, job_models,
                                 register)
from controller.model import WorkloadError
from emulate.sim.jobsim import simulate_joint
from emulate.io.traces import joint_to_dict, read_workload, write_json
from jobmodel_helpers import controller_run as joint_controller_run
from test_jobsim import hand_example


@register
class WholeCluster(JobModel):
    """Every task holds every machine for its shortest time; one task at a time.

    Its one policy is called ``fifo`` (a name ``split_policy`` knows as a compute policy
    of some registered model)."""

    name = "test-whole-cluster"
    summary = "a task holds the whole cluster (test model)"
    gang = True

    def __init__(self, workload, policy):
        super().__init__(workload, policy)
        a = self.arrays
        self.p = np.where(a.allowed, a.proc, np.inf).min(axis=1)
        self.comp = np.full(a.n_tasks, np.nan)
        self.pinned = np.full(a.n_tasks, -1, dtype=np.int64)
        self.seg = [[], [], [], []]
        self.current: tuple[Piece, ...] = ()
        self.replans = 0

    @classmethod
    def policies(cls):
        return ["fifo"]

    def capacity(self, machine):
        return float(self.arrays.capacity[machine])

    def demand(self, task, machine):
        return self.capacity(machine)

    def work(self, task, machine):
        return float(self.p[task])

    @property
    def completion(self):
        return self.comp

    def projected_completion(self):
        out = np.where(np.isnan(self.comp), np.inf, self.comp)
        for pc in self.current:
            if np.isnan(self.comp[pc.task]):
                out[pc.task] = pc.end
        return out

    def segments(self):
        return self.seg

    def placement(self, task):
        return int(self.pinned[task])

    def pin(self, task, machine):
        self.pinned[task] = machine

    def fixed_machine(self, task):
        return 0

    def plan(self, t, tasks, follow=True):
        a = self.arrays
        ends = {q: c for q, c in enumerate(self.comp) if not np.isnan(c)}
        free = max([t] + list(ends.values()))
        todo, pieces = [int(q) for q in tasks], []
        while todo:
            for q in todo:
                preds = [x for s in a.stage_preds[a.task_stage[q]] for x in a.stage_tasks[s]]
                if all(x in ends for x in preds):
                    break
            start = max([free] + [ends[x] for x in preds])
            free = ends[q] = start + self.p[q]
            pieces += [Piece(q, i, start, free, self.demand(q, i), self.work(q, i), True)
                       for i in range(a.n_machines)]
            todo.remove(q)
        if follow:
            self.current = tuple(pieces)
            self.replans += 1
        return tuple(pieces)

    def commit(self, t):
        for pc in self.current:
            if pc.start < t - self.tol:
                for col, v in zip(self.seg, (pc.task, pc.machine, pc.start, pc.end)):
                    col.append(v)
                self.comp[pc.task] = pc.end
        self.current = ()

    def complete(self, tasks, times):
        self.comp[tasks] = times


def whole_cluster_example():
    return dataclasses.replace(hand_example(), model=WholeCluster.name)


def controller_run(tmp_path, model: str):
    """The controller's joint run of the hand example under ``model`` (policies fifo),
    with no network: agents that record what they are sent; the clock started."""
    return joint_controller_run(tmp_path, dataclasses.replace(hand_example(), model=model),
                                "fifo")


def test_a_registered_model_is_found_by_name_beside_the_packing_model():
    models = job_models()
    assert models["packing"].name == "packing" and models[WholeCluster.name] is WholeCluster
    with pytest.raises(JobModelError, match="unknown job model 'nope'; known: .*packing"):
        get_job_model("nope")
    with pytest.raises(JobModelError, match="runs no compute policy 'psrs'"):
        simulate_joint(whole_cluster_example(), "psrs+fifo")
    with pytest.raises(WorkloadError, match="model must name a job model"):
        dataclasses.replace(hand_example(), model="")


def test_the_joint_simulator_runs_a_new_model_end_to_end():
    # a [0, 2], then (c arrives at 1, after b in index order) b [2, 5], c [5, 7], each on
    # both machines. The map ends at 5: r is placed on m0 (the model's fixed machine), a
    # and b finished on m1 (their last piece): 3 MB 1 -> 0 at 1 MB/s [5, 8]. c ends at 7:
    # j1.out (0.5 MB 1 -> 0) waits behind the shuffle (fifo) [8, 8.5]; r [8, 12].
    r = simulate_joint(whole_cluster_example(), "fifo+fifo", segments=True)
    doc = r.to_json()
    segs = {}
    for d in r.segment_dicts():
        if "task" in d:
            segs.setdefault(d["task"], []).append((d["machine"], d["start"], d["end"]))
    assert {k: sorted(v) for k, v in segs.items()} == {
        "a": [("m0", 0.0, 2.0), ("m1", 0.0, 2.0)], "b": [("m0", 2.0, 5.0), ("m1", 2.0, 5.0)],
        "c": [("m0", 5.0, 7.0), ("m1", 5.0, 7.0)],
        "r": [("m0", 8.0, 12.0), ("m1", 8.0, 12.0)]}
    cf = {c["id"]: c for c in doc["coflows"]}
    assert (cf["j0.shuffle"]["release"], cf["j0.shuffle"]["completion"]) == (5.0, 8.0)
    assert (cf["j1.out"]["release"], cf["j1.out"]["completion"]) == (7.0, 8.5)
    flows = {(d["src"], d["dst"]) for d in r.segment_dicts() if d.get("coflow") == "j0.shuffle"}
    assert flows == {(1, 0)}
    assert [j["completion"] for j in doc["jobs"]] == [12.0, 8.5]
    assert doc["replans"] == r.extra["replans"] >= 3


def test_a_workloads_model_round_trips_through_json(tmp_path):
    w = whole_cluster_example()
    p = tmp_path / "w.json"
    write_json(w, str(p))
    assert read_workload(str(p)).model == WholeCluster.name
    assert "model" not in joint_to_dict(hand_example())


def test_the_controller_sends_a_gang_to_every_machine_and_ends_the_task_with_its_last_piece(
        tmp_path):
    run = controller_run(tmp_path, WholeCluster.name)
    assert run.register_info(0) == {"capacity": 1.0}
    run._joint_step()
    sent = [run.agents[h].sent for h in range(2)]
    assert [len(x) for x in sent] == [1, 1]
    segs = [run.segs[m[0]["seg"]] for m in sent]
    assert {s.task for s in segs} == {0} and {s.machine for s in segs} == {0, 1}
    assert all(m[0]["demand"] == 1.0 for m in sent)
    assert all(m[0]["seconds"] == pytest.approx(2.0 * run.scale) for m in sent)
    run._task_done(sent[0][0]["seg"], time.time(), False)
    assert np.isnan(run.task_end[0])           # the other piece of the gang still runs
    run._task_done(sent[1][0]["seg"], time.time(), False)
    assert not np.isnan(run.task_end[0]) and run.task_machine[0] == 1


@register
class WholeClusterAfterDelay(WholeCluster):
    """:class:`WholeCluster` whose tasks start ``delay`` after their predecessors end
    (a shuffle delay, as the MapReduce server-job model has)."""

    name = "test-whole-cluster-delay"
    delay = 0.5

    def earliest_start(self, task, task_end):
        a = self.arrays
        preds = [x for s in a.stage_preds[a.task_stage[task]] for x in a.stage_tasks[s]]
        wait = super().earliest_start(task, task_end)
        return wait if wait == np.inf or not preds else np.max(task_end[preds]) + self.delay


def test_the_controller_holds_a_piece_until_the_models_delay_after_its_predecessors(
        tmp_path):
    from controller.joint_runtime import _Seg
    run = controller_run(tmp_path, WholeClusterAfterDelay.name)
    r = run.driver.a.task_ids.index("r")
    run.task_end[[run.driver.a.task_ids.index(x) for x in "ab"]] = run.now_w()
    run.segs[0] = _Seg(r, 0, 0.0, 4.0, True, run.cplan)
    run.n_state["planned"] += 1
    run._dispatch(0)                   # its predecessors ended just now: wait 0.5 s
    assert run.segs[0].state == "blocked" and run.agents[0].sent == []
    timer = [t for t in run.timers if t.kind == "task_go"]
    assert [t.data for t in timer] == [(-1, run.cplan)]
    assert timer[0].at == pytest.approx(run.at_w(run.task_end[0] + 0.5))
    run.driver.model.delay = 0.0       # as if the timer fired after the delay
    run._handle([("task_go", timer[0].at, timer[0].data)], False)
    assert run.segs[0].state == "sent" and [m["seg"] for m in run.agents[0].sent] == [0]
