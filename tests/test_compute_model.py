"""The compute model: validation errors, derived views, JSON, residual instances, generators."""
from __future__ import annotations

import numpy as np
import pytest

from controller.compute import ComputePolicy, compute_policies, get_compute_policy
from controller.compute.generators import google_like, mapreduce_like, weights
from controller.compute.model import (ComputeJob, ComputeWorkload, Machine, Stage, Task,
                                      WorkloadError)


def _w(tasks, machines=None, **kw):
    machines = machines or [Machine("m0", (4.0,)), Machine("m1", (2.0,))]
    return ComputeWorkload(machines, [ComputeJob("j", [Stage("s", tasks)], **kw)])


# ---------------------------------------------------------------------- validation
@pytest.mark.parametrize("make,field,text", [
    (lambda: _w([Task("t", (3.0,), {"m1": 1.0})]), "size", "bigger than every machine"),
    (lambda: _w([Task("t", (1.0,), {})]), "placement", "empty placement"),
    (lambda: _w([Task("t", (1.0,), {"m9": 1.0})]), "placement", "unknown machine 'm9'"),
    (lambda: _w([Task("t", (1.0,), {"m0": 0.0})]), "placement", "must be > 0"),
    (lambda: _w([Task("t", (1.0,), {"m0": 1.0}, release=-1.0)]), "release", ">= 0"),
    (lambda: _w([Task("t", (0.0,), {"m0": 1.0})]), "size", "must be > 0"),
    (lambda: _w([Task("t", (1.0,), {"m0": 1.0}), Task("t", (1.0,), {"m0": 1.0})]), "id",
     "duplicate task id 't'"),
    (lambda: _w([Task("t", (1.0,), {"m0": 1.0})], weight=0.0), "weight", "> 0"),
    (lambda: _w([Task("t", (1.0,), {"m0": 1.0})],
                machines=[Machine("m0", (1.0,)), Machine("m0", (1.0,))]), "machines",
     "duplicate machine id"),
    (lambda: Machine("m", (0.0,)), "capacity", "must be > 0"),
    (lambda: Stage("s", []), "tasks", "no tasks"),
    (lambda: ComputeJob("j", [Stage("a", [Task("t", 1.0, {"m0": 1.0})], after=("b",)),
                              Stage("b", [Task("u", 1.0, {"m0": 1.0})], after=("a",))]),
     "after", "cycle"),
    (lambda: ComputeJob("j", [Stage("a", [Task("t", 1.0, {"m0": 1.0})], after=("z",))]),
     "after", "unknown stage 'z'"),
])
def test_bad_input_raises_workload_error_naming_the_field(make, field, text):
    with pytest.raises(WorkloadError, match=text) as e:
        make()
    assert e.value.field == field


def test_duplicate_stage_and_job_ids_across_jobs_are_rejected():
    m = [Machine("m0", (1.0,))]
    t = lambda k: Task(k, 1.0, {"m0": 1.0})  # noqa: E731
    with pytest.raises(WorkloadError, match="duplicate stage id 's'"):
        ComputeWorkload(m, [ComputeJob("a", [Stage("s", [t("x")])]),
                            ComputeJob("b", [Stage("s", [t("y")])])])
    with pytest.raises(WorkloadError, match="duplicate job id 'a'"):
        ComputeWorkload(m, [ComputeJob("a", [Stage("s", [t("x")])]),
                            ComputeJob("a", [Stage("r", [t("y")])])])


def test_machines_too_small_for_a_task_are_dropped_from_its_placement_set():
    w = _w([Task("t", (3.0,), {"m0": 5.0, "m1": 1.0})])
    a = w.arrays
    assert a.proc[0, 0] == 5.0 and np.isinf(a.proc[0, 1])
    assert a.fastest[0] == 0
    assert w.pinned().tasks[0].placement == {"m0": 5.0}


def test_pinned_keeps_the_fastest_machine_and_breaks_ties_by_placement_order():
    w = _w([Task("t", (1.0,), {"m1": 2.0, "m0": 2.0}), Task("u", (1.0,), {"m0": 3.0,
                                                                          "m1": 2.0})])
    p = w.pinned()
    assert w.arrays.fastest.tolist() == [1, 1]
    assert dict(p.tasks[0].placement) == {"m1": 2.0}
    assert dict(p.tasks[1].placement) == {"m1": 2.0}
    assert p.arrays.single_machine and not w.arrays.single_machine


def test_json_round_trip_and_missing_fields():
    w = mapreduce_like(3, 4, seed=1)
    d = w.to_dict()
    w2 = ComputeWorkload.from_dict(d)
    assert w2.to_dict() == d
    del d["jobs"][0]["stages"][0]["tasks"][0]["placement"]
    with pytest.raises(WorkloadError, match="missing 'placement'") as e:
        ComputeWorkload.from_dict(d)
    assert e.value.field == "placement"


def test_subset_scales_processing_times_and_shifts_releases():
    w = google_like(4, 3, seed=2, mean_interarrival=10.0)
    a = w.arrays
    idx = np.array([0, 2, 3])
    sub = a.subset(idx, remaining=[0.5, 1.0, 0.25], t0=5.0)
    order = {o: k for k, o in enumerate(sub.orig_task)}
    for q, t in enumerate(idx):
        k = order[t]
        frac = [0.5, 1.0, 0.25][q]
        assert np.allclose(sub.proc[k][a.allowed[t]], a.proc[t][a.allowed[t]] * frac)
        assert sub.release[k] == max(0.0, a.release[t] - 5.0)
        assert sub.task_ids[k] == a.task_ids[t]


def test_stage_weights_put_job_weight_on_sink_stages():
    w = mapreduce_like(2, 3, seed=0).with_weights([3.0, 5.0])
    a = w.arrays
    assert a.stage_weight.tolist() == [0.0, 3.0, 0.0, 5.0]
    assert a.stage_preds[1].tolist() == [0]


# ---------------------------------------------------------------------- generators
def test_generators_are_deterministic_given_the_seed():
    assert google_like(10, 4, seed=5).to_dict() == google_like(10, 4, seed=5).to_dict()
    assert google_like(10, 4, seed=5).to_dict() != google_like(10, 4, seed=6).to_dict()
    assert mapreduce_like(5, 4, seed=1).to_dict() == mapreduce_like(5, 4, seed=1).to_dict()


def test_google_like_jobs_are_heavy_tailed_with_local_and_penalised_remote_machines():
    w = google_like(400, 20, seed=0, n_local=3, remote_fraction=0.25, alpha=3.0,
                    max_tasks=50)
    counts = np.array([len(j.tasks) for j in w.jobs])
    assert counts.min() >= 2 and counts.max() <= 50
    assert counts.max() >= 5 * np.median(counts)          # heavy tail in task counts
    p = np.array([min(t.placement.values()) for t in w.tasks])
    assert np.all(p >= 1) and np.all(p == np.round(p))
    assert p.mean() > 1.3 * np.median(p)                  # skewed durations
    for t in w.tasks[:200]:
        base = min(t.placement.values())
        local = [m for m, q in t.placement.items() if q == base]
        remote = [m for m, q in t.placement.items() if q != base]
        assert len(local) == 3
        assert len(remote) == round(0.25 * 17)
        assert all(t.placement[m] == np.ceil(3.0 * base) for m in remote)
        assert 0 < t.size[0] <= 0.8


def test_google_like_arrivals_and_weight_schemes():
    w = google_like(300, 5, seed=1, mean_interarrival=20.0)
    r = np.array([j.release for j in w.jobs])
    assert np.all(np.diff(r) >= 0) and r[0] == 0
    assert 15 < np.diff(r).mean() < 25
    assert np.all(weights(w, "equal") == 1)
    rw = weights(w, "random", seed=3)
    assert rw.min() >= 1 and rw.max() <= 10 and rw.std() > 1
    pw = weights(w, "priority")
    assert set(np.unique(pw)) <= {1.0, 2.0, 4.0, 8.0} and len(np.unique(pw)) > 1
    with pytest.raises(ValueError, match="unknown weight scheme"):
        weights(w, "bogus")


def test_mapreduce_like_jobs_have_a_map_stage_then_a_reduce_stage():
    w = mapreduce_like(6, 5, seed=3, n_map=(2, 4), n_reduce=(1, 2))
    for j in w.jobs:
        mp, rd = j.stages
        assert mp.after == () and rd.after == (mp.id,)
        assert 2 <= len(mp.tasks) <= 4 and 1 <= len(rd.tasks) <= 2
        for t in rd.tasks:
            assert len(set(t.placement.values())) == 1 and len(t.placement) == 5


# ---------------------------------------------------------------------- registry
def test_registry_lists_every_policy_and_rejects_unknown_names():
    names = set(compute_policies())
    assert names == {"synchpack-1", "synchpack-2", "synchpack-3", "psrs", "tetris-p",
                     "tetris-np", "jsq-mw", "fifo"}
    assert isinstance(get_compute_policy("psrs"), ComputePolicy)
    with pytest.raises(ValueError, match="unknown compute policy 'nope'.*synchpack-3"):
        get_compute_policy("nope")
