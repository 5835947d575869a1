"""The one LP result type (controller.lp.result) of the coflow and the compute LPs."""
from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from controller.compute.lp import lp1, lp2, lp3
from controller.jobs import compute_lower_bound, mapreduce_jobs
from controller.lp.coflow import solve_coflow_lp, solve_flow_lp
from controller.lp.result import (CoflowSolution, CuttingPlaneDetails, LPResult, ModelDetails,
                                  StageSolution)
from controller.model import Coflow, Flow, Workload
from emulate.cli import main
from emulate.io.traces import write_json
from topologies import Fabric

RATE = 8e6


def coflow_workload() -> Workload:
    return Workload(Fabric(ports=3, cores=2, rate_bps=RATE), (
        Coflow("a", (Flow(0, 1, 2e6), Flow(1, 2, 1e6)), weight=2.0),
        Coflow("b", (Flow(0, 2, 1e6),), release=0.5),
        Coflow("c", (Flow(2, 1, 3e6),))))


COMMON = ("lp", "value", "status", "solution", "rounds", "seconds", "details")


def test_coflow_and_compute_lps_return_the_same_result_type_with_the_common_fields():
    w = coflow_workload()
    jw = mapreduce_jobs(1, n_jobs=2)
    results = [solve_flow_lp(w.arrays, 2, RATE), solve_coflow_lp(w.arrays, 2, RATE),
               lp1(jw.compute), lp2(jw.compute), lp3(jw.compute.pinned())]
    for r in results:
        assert type(r) is LPResult
        assert all(hasattr(r, f) for f in COMMON)
        assert r.status == "optimal" and r.optimal and r.rounds >= 1 and r.seconds >= 0
        assert np.isfinite(r.value) and r.value > 0
    assert [r.lp for r in results] == ["LP1", "LP7", "LP1", "LP2", "LP3"]
    for r in results[:2]:
        assert isinstance(r.solution, CoflowSolution)
        assert isinstance(r.details, CuttingPlaneDetails)
        assert r.details.cores == 2 and r.details.objective == "weighted"
    for r in results[2:]:
        assert isinstance(r.solution, StageSolution)
        assert isinstance(r.details, ModelDetails)
        assert r.details.variables > 0 and r.details.rows > 0
        assert len(r.solution.stage_completion) == jw.compute.arrays.n_stages
    assert results[2].solution.fractions is not None and results[2].solution.order is None
    assert results[4].solution.order is not None and results[4].solution.fractions is None


def test_lp1_fractions_of_every_task_sum_to_one_on_its_machines():
    a = mapreduce_jobs(2, n_jobs=2).compute.arrays
    x = lp1(a).solution.machine_fractions(a.n_tasks, a.n_machines)
    assert x.sum(axis=1) == pytest.approx(np.ones(a.n_tasks))
    assert np.all(x[~a.allowed] == 0)


def test_compute_lower_bound_is_an_lp_result_named_after_its_lp():
    jw = mapreduce_jobs(0, n_jobs=2)
    for lp, name in (("lp1", "LP1"), ("synchpack-2", "LP2"), ("lp3", "LP3")):
        r = compute_lower_bound(jw, lp)
        assert isinstance(r, LPResult) and r.lp == name


def test_bound_json_keeps_its_keys(tmp_path):
    runner = CliRunner()
    p = tmp_path / "w.json"
    write_json(coflow_workload(), str(p))
    r = runner.invoke(main, ["bound", str(p), "--lp", "flow", "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert set(doc) == {"lp", "cores", "objective", "value", "rounds", "cuts", "seconds",
                        "status"}
    assert doc["status"] == "optimal" and isinstance(doc["cuts"], int)
    jp = tmp_path / "j.json"
    write_json(mapreduce_jobs(0, n_jobs=2), str(jp))
    r = runner.invoke(main, ["bound", str(jp), "--lp", "synchpack-2", "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert set(doc) == {"lp", "name", "objective", "value", "seconds", "status", "variables",
                        "rows"}
    assert doc["name"] == "LP2" and doc["variables"] > 0 and doc["rows"] > 0
