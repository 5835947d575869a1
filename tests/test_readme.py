"""The README's user-policy example works as printed, through the CLI."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def test_readme_user_policy_runs_from_its_folder_and_orders_by_weight(tmp_path):
    with open(os.path.join(ROOT, "README.md")) as fh:
        blocks = [b for b in _python_blocks(fh.read()) if "class HeaviestFirst" in b]
    assert len(blocks) == 1, "the README shows one HeaviestFirst example"
    (tmp_path / "heaviest.py").write_text(blocks[0])
    # two coflows on the same port pair: the heavier one must finish first
    doc = {"fabric": {"ports": 2, "cores": 1, "rate_bps": 8e6},
           "coflows": [{"id": "light", "weight": 1.0,
                        "flows": [{"src": 0, "dst": 1, "bytes": 1e6}]},
                       {"id": "heavy", "weight": 5.0,
                        "flows": [{"src": 0, "dst": 1, "bytes": 1e6}]}]}
    (tmp_path / "w.json").write_text(json.dumps(doc))
    exe = os.path.join(os.path.dirname(sys.executable), "coflowemu")
    out = subprocess.run([exe, "run", "w.json", "--policy", "heaviest:HeaviestFirst",
                          "--json", "--no-lp-bound"], cwd=tmp_path, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    res = {c["id"]: c["completion"] for c in json.loads(out.stdout)["coflows"]}
    assert res["heavy"] < res["light"]
    assert json.loads(out.stdout)["policy"] == "heaviest-first"


def _compute_example(tmp_path, w, *args):
    """Run the README's ShortestTaskFirst on ``w`` from its folder; the completed process."""
    from emulate.io.traces import write_json
    with open(os.path.join(ROOT, "README.md")) as fh:
        blocks = [b for b in _python_blocks(fh.read()) if "class ShortestTaskFirst" in b]
    assert len(blocks) == 1, "the README shows one ShortestTaskFirst example"
    (tmp_path / "shortest.py").write_text(blocks[0])
    write_json(w, str(tmp_path / "mr.json"))
    exe = os.path.join(os.path.dirname(sys.executable), "coflowemu")
    return subprocess.run([exe, "run", "mr.json", "--policy",
                           "shortest:ShortestTaskFirst+sebf", "--json", *args],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600)


def test_readme_compute_policy_runs_a_joint_workload_from_its_folder(tmp_path):
    from controller.jobs import mapreduce_jobs
    w = mapreduce_jobs(3, n_jobs=3)
    out = _compute_example(tmp_path, w)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["policy"] == "shortest:ShortestTaskFirst+sebf"
    assert len(doc["jobs"]) == len(w.jobs)
    assert all(j["completion"] >= j["release"] for j in doc["jobs"])
    assert doc["lp"] == "LP3" and doc["lp_lower_bound"] <= doc["total_weighted_job_completion"]


@pytest.mark.skipif(os.geteuid() != 0, reason="the emulation needs root")
def test_readme_compute_policy_runs_on_the_emulation(system, tmp_path, monkeypatch):
    """The same plug-in in the emulation's controller process: tasks on the agents,
    shuffles on real switches, what the agents ran verified, jobs as in the simulator."""
    from controller.jobs import mapreduce_jobs
    from test_jobsim import verify_joint
    w = mapreduce_jobs(1, n_jobs=3, ports=4, cores=2, rate_bps=20e6, map_seconds=1.0,
                       reduce_seconds=1.0, n_map=(2, 3), mean_interarrival=1.0,
                       map_output_bytes=1e6, second_round=0.0)
    out = _compute_example(tmp_path, w, "--engine", "mininet", "--segments", "seg.jsonl")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["engine"] == "mininet" and len(doc["jobs"]) == 3
    with open(tmp_path / "seg.jsonl") as fh:
        segs = [json.loads(line) for line in fh]
    from controller.compute import get_compute_policy
    monkeypatch.chdir(tmp_path)
    p = get_compute_policy("shortest:ShortestTaskFirst")
    verify_joint(w, doc, segs, preemptive=p.preemptive, migration=p.migration,
                 pinned=p.pinned, measured=0.02)
