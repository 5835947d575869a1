"""Direct runs (``engines = ["direct"]``): each family's run is the policy's own algorithm on
the instance, which for offline compute, moldable, MSJO (delays) and redundancy runs is
exactly what the joint simulator replays; the algorithms' options reach them; the rows
are an engine's; what direct cannot run fails with its reason, recorded."""
from __future__ import annotations

import numpy as np
import pytest

from experiments.sweep.execute import execute
from experiments.sweep.spec import parse_spec


def _runs(kind, params, policies, *, ports, engines=("sim", "direct"), bounds=("none",),
          options=None, seeds=(0,)):
    spec = parse_spec({"name": "d", "engines": list(engines), "bounds": list(bounds),
                       "workloads": [{"kind": kind, "seeds": list(seeds), "params": params}],
                       "fabrics": [{"ports": ports, "cores": 1}],
                       "policies": [{"specs": list(policies), **(options or {})}]})
    return spec.runs(version="test")


def _by_engine(runs):
    """{(policy, seed): {engine: outcome}} with every run ok."""
    out = {}
    for r in runs:
        o = execute(r)
        assert o.run["status"] == "ok", (r.label, o.run.get("error"))
        out.setdefault((r.policy, r.workload["seed"]), {})[r.engine] = o
    return out


def _jobs(o) -> dict:
    """id -> (release, completion) of an outcome's jobs (list of dicts or columns)."""
    j = o.jobs
    if isinstance(j, dict):
        return {i: (r, c) for i, r, c in zip(j["id"], j["release"], j["completion"])}
    return {d["id"]: (d["release"], d["completion"]) for d in j}


def _assert_same(outcomes):
    for (policy, seed), o in outcomes.items():
        sim, direct = o["sim"], o["direct"]
        if direct.run["objective"] == "jobs":   # task-level policies: sum_u w_u C_u
            assert direct.run["sum_wc"] == pytest.approx(sim.run["sum_wc"], rel=1e-9)
        assert direct.run["makespan"] == pytest.approx(sim.run["makespan"], rel=1e-9)
        a, b = _jobs(sim), _jobs(direct)
        assert a.keys() == b.keys()
        for k in a:
            assert b[k] == pytest.approx(a[k], rel=1e-9, abs=1e-9), (policy, k)
        assert direct.run["n_items"] == sim.run["n_items"]
        assert direct.run["mean_ct"] == pytest.approx(sim.run["mean_ct"], rel=1e-9)


@pytest.mark.parametrize("kind, params, policies, ports", [
    ("packing", {"n_jobs": 8, "scheme": "random", "pinned": True},
     ["synchpack-3", "psrs", "tetris-p"], 4),
    ("packing", {"n_jobs": 8}, ["jsq-mw", "tetris-np"], 4),
    ("moldable", {"n_jobs": 9, "family": "mixed"},
     ["demt", "gang", "sequential", "list-shelf", "list-wlptf", "list-saf"], 6),
    ("msjo", {"n_jobs": 4, "scenario": "random", "mean_maps": 4.0},
     ["mars", "mares", "huwf", "hjwf", "t-mars", "stf"], 5),
    ("redundancy", {"machines": 4, "lam": 0.2, "horizon": 60.0},
     ["srpt+r", "srpt", "fair+r", "fair-share", "laps+r", "laps"], 4),
])
def test_direct_runs_are_the_joint_simulators_runs(kind, params, policies, ports):
    _assert_same(_by_engine(_runs(kind, params, policies, ports=ports, seeds=(0, 1))))


def test_the_algorithms_options_reach_them():
    from controller.compute import get_compute_policy
    from controller.moldable import schedule
    from controller.msjo import get_policy
    from controller.msjo.generators import perturb
    from controller.msjo.schedule import retime
    from controller.redundancy import simulate
    from emulate.io.generators import generate, generate_instance

    def one(kind, params, policy, options, ports=6):
        (r,) = _runs(kind, params, [policy], ports=ports, engines=("direct",),
                     options=options, seeds=(3,))
        o = execute(r)
        assert o.run["status"] == "ok", o.run.get("error")
        return o.run

    w = generate("moldable", seed=3, ports=6, cores=1, params={"n_jobs": 12})
    from controller.jobmodels.moldable import moldable_instance
    assert one("moldable", {"n_jobs": 12}, "demt", {"shuffles": 3, "seed": 5})["sum_wc"] == \
        pytest.approx(schedule(moldable_instance(w), "demt", shuffles=3, seed=5).minsum)

    c = generate_instance("msjo", seed=3, ports=6, params={"n_jobs": 6,
                                                          "scenario": "random"})
    got = one("msjo", {"n_jobs": 6, "scenario": "random"}, "so-mars", {"interval": 7.0})
    assert got["sum_wc"] == pytest.approx(get_policy("so-mars")(c.arrays, interval=7.0)
                                          .job_cost)
    got = one("msjo", {"n_jobs": 6, "scenario": "random"}, "mars", {"error": 0.5})
    plan = get_policy("mars")(perturb(c, 0.5, seed=103).arrays)
    assert got["sum_wc"] == pytest.approx(retime(c.arrays, plan).job_cost)

    inst = generate_instance("redundancy", seed=3, params={"machines": 5, "lam": 0.3,
                                                          "horizon": 50.0})
    got = one("redundancy", {"machines": 5, "lam": 0.3, "horizon": 50.0}, "laps+r",
              {"beta": 0.3, "assign": "sticky"})
    want = simulate(inst, "laps+r", beta=0.3, assign="sticky")
    assert got["sum_wc"] == pytest.approx(float(want.completion.sum()))
    assert got["checkpoints"] == want.checkpoints and got["beta"] == 0.3
    named = one("redundancy", {"machines": 5, "lam": 0.3, "horizon": 50.0},
                "laps+r@beta=0.3", {"assign": "sticky"})     # options in the name too
    assert named["sum_wc"] == got["sum_wc"]

    # online packing: SynchPack re-plans at epochs tau_k = tau0 growth^k, tau0 a multiple
    # of the mean inter-arrival time
    params = {"n_jobs": 10, "load": 0.8}
    got = one("packing", params, "synchpack-2",
              {"online": True, "tau0_factor": 2.0, "growth": 2.0}, ports=4)
    cw = generate("packing", seed=3, ports=4, cores=1, params=params).compute
    arr = np.unique(cw.arrays.job_release)
    s = get_compute_policy("synchpack-2").schedule(
        cw, online=True, tau0=2.0 * float(np.mean(np.diff(arr))), growth=2.0)
    assert got["sum_wc"] == pytest.approx(s.weighted_completion)


def test_task_level_policies_are_scored_on_the_task_objective_with_task_weights():
    from controller.msjo import get_policy
    from controller.msjo.lp import solve_task_lp
    from emulate.io.generators import generate_instance
    params = {"n_jobs": 3, "scenario": "random", "mean_maps": 4.0, "task_weights": True}
    runs = _runs("msjo", params, ["t-mars", "htwf", "mars"], ports=3,
                 engines=("direct",), bounds=("auto",))
    c = generate_instance("msjo", seed=0, ports=3, params=params)
    lp = solve_task_lp(c.arrays).value
    assert len(set(c.arrays.weight.round(9))) > c.arrays.job_weight.size   # per task
    for r in runs:
        o = execute(r)
        assert o.run["status"] == "ok", o.run.get("error")
        s = get_policy(r.policy)(c.arrays)
        if r.policy == "mars":
            assert o.run["objective"] == "jobs" and o.run["lp_name"] == "auto"
            assert o.run["sum_wc"] == pytest.approx(s.job_cost)
            continue
        assert o.run["objective"] == "tasks"
        assert o.run["sum_wc"] == pytest.approx(s.task_cost, rel=1e-9)
        assert o.run["lp_bound"] == pytest.approx(lp) and o.run["ratio"] >= 1 - 1e-9
        assert len(o.tasks["id"]) == c.arrays.length.size


def test_what_direct_cannot_run_is_a_recorded_failure_with_its_reason():
    (r,) = _runs("coflows", {"coflows": 3}, ["fifo"], ports=4, engines=("direct",))
    o = execute(r)
    assert o.run["status"] == "failed" and "kinds packing, google" in o.run["error"]
    (r,) = _runs("msjo", {"n_jobs": 2, "shuffle_bytes": 1e6}, ["mars"], ports=4,
                 engines=("direct",))
    assert "shuffle coflows" in execute(r).run["error"]
    (r,) = _runs("moldable", {"n_jobs": 3}, ["demt"], ports=4, engines=("direct",),
                 options={"nosuch": 1})
    assert "nosuch" in execute(r).run["error"]
    (r,) = _runs("redundancy", {"machines": 2, "lam": 0.2, "horizon": 20.0}, ["srpt"],
                 ports=2, engines=("direct",), bounds=("cls",))
    assert "no LP bounds a redundancy workload" in execute(r).run["error"]


def test_direct_rows_go_through_the_store_as_columns(tmp_path):
    """A run's jobs as columns (redundancy: with their work) are the store's rows."""
    from experiments.sweep.runner import run_sweep
    from experiments.sweep.store import open_results
    spec = parse_spec({"name": "red", "engines": ["direct"], "bounds": ["auto"],
                       "workloads": [{"kind": "redundancy", "seeds": 1,
                                      "params": {"machines": 3, "lam": 0.3,
                                                 "horizon": 40.0}}],
                       "policies": [{"specs": ["srpt+r", "srpt"]}]})
    report = run_sweep(spec, str(tmp_path), workers=0, progress=False)
    assert report.done == 2 and not report.failed and report.workers == 0
    db = open_results(str(tmp_path))
    got = db.sql("select r.policy, count(*), sum(j.completion), min(j.work), "
                 "max(r.sum_wc) from jobs j join runs r using (run_key) "
                 "group by 1 order by 1").fetchall()
    assert [g[0] for g in got] == ["srpt", "srpt+r"]
    for _, n, total, work, sum_wc in got:
        assert n > 0 and total == pytest.approx(sum_wc) and work >= 20.0
