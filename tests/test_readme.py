"""The README's user-policy example works as printed, through the CLI."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

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


def test_readme_compute_policy_runs_a_joint_workload_from_its_folder(tmp_path):
    from controller.jobs import mapreduce_jobs
    from emulate.io.traces import write_json
    with open(os.path.join(ROOT, "README.md")) as fh:
        blocks = [b for b in _python_blocks(fh.read()) if "class ShortestTaskFirst" in b]
    assert len(blocks) == 1, "the README shows one ShortestTaskFirst example"
    (tmp_path / "shortest.py").write_text(blocks[0])
    w = mapreduce_jobs(3, n_jobs=3)
    write_json(w, str(tmp_path / "mr.json"))
    exe = os.path.join(os.path.dirname(sys.executable), "coflowemu")
    out = subprocess.run([exe, "run", "mr.json", "--policy", "shortest:ShortestTaskFirst+sebf",
                          "--json"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["policy"] == "shortest:ShortestTaskFirst+sebf"
    assert len(doc["jobs"]) == len(w.jobs)
    assert all(j["completion"] >= j["release"] for j in doc["jobs"])
    assert doc["lp"] == "LP3" and doc["lp_lower_bound"] <= doc["total_weighted_job_completion"]
