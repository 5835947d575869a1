"""The command line's contract at the process boundary, as a shell script meets it.

Every command runs as a subprocess of the installed console script (``.venv/bin/coflowemu``)
with stdout and stderr as pipes, the way ``coflowemu run w.json --json | jq`` does. What
click's in-process runner cannot see is checked here: C libraries write to file
descriptor 1 directly (HiGHS printed its banner before every ``--json`` document while
the in-process tests stayed green). So:

* every ``--json`` output is exactly one JSON document on stdout, nothing before or after
  it (logs and progress go to stderr);
* every file a command writes (workloads, segments, records, plots) is read back;
* bad input: exit code 2, nothing on stdout, one line on stderr, no traceback.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from controller.jobs import mapreduce_jobs
from emulate.io.traces import read_workload, write_json

BIN = os.path.join(os.path.dirname(sys.executable), "coflowemu")
PNG = b"\x89PNG\r\n\x1a\n"


def coflowemu(*args, cwd=None, timeout=600) -> subprocess.CompletedProcess:
    return subprocess.run([BIN, *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=timeout, stdin=subprocess.DEVNULL)


def one_json_document(out: subprocess.CompletedProcess):
    """The whole of stdout parsed as one JSON value (fails on any banner or extra line)."""
    assert out.returncode == 0, out.stderr
    assert "HiGHS" not in out.stdout
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A generated coflow workload (with a DAG) and a MapReduce joint workload."""
    d = tmp_path_factory.mktemp("cli")
    out = coflowemu("generate", "--seed", 3, "--ports", 4, "--cores", 2, "--coflows", 6,
                    "--chi", 2, "--out", d / "w.json")
    assert out.returncode == 0, out.stderr
    write_json(mapreduce_jobs(0, n_jobs=2, ports=4), str(d / "mr.json"))
    return d


def test_generate_writes_a_workload_the_readers_accept(files):
    w = read_workload(str(files / "w.json"))
    assert len(w.coflows) == 6 and w.fabric.cores == 2 and w.chi == 2


@pytest.mark.parametrize("kind, params, policy", [
    ("coflows", ["-p", "coflows=4"], "sebf"),
    ("jobs", ["-p", "jobs=2"], "lp-coflow"),
    ("mapreduce", ["-p", "n_jobs=2"], "synchpack-3+sebf"),
    ("google", ["-p", "n_jobs=3"], "synchpack-3"),   # no coflows: compute policy alone
    ("packing", ["-p", "n_jobs=3", "-p", "pinned=true"], "psrs"),  # the packing paper's
    ("moldable", ["-p", "n_jobs=3"], "demt"),         # the moldable job model
    ("msjo", ["-p", "n_jobs=3", "-p", "scenario=random"], "mars"),   # the msjo job model
    ("redundancy", ["-p", "machines=4", "-p", "lam=0.1", "-p", "horizon=40"],
     "srpt+r"),                                       # the redundancy job model
])
def test_every_generator_kind_writes_a_workload_that_runs(tmp_path, kind, params, policy):
    from emulate.io.generators import kinds
    assert kind in kinds()
    out = coflowemu("generate", "--kind", kind, "--ports", 4, *params, "--out", "w.json",
                    cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    doc = one_json_document(coflowemu("run", "w.json", "--policy", policy, "--json",
                                      cwd=tmp_path))
    assert doc["jobs" if kind in ("mapreduce", "google", "packing", "moldable", "msjo",
                                  "redundancy") else "coflows"]


def test_every_generator_kind_is_tested():
    from emulate.io.generators import kinds
    tested = {"coflows", "jobs", "mapreduce", "google", "packing", "moldable", "msjo",
              "redundancy"}
    assert set(kinds()) == tested


@pytest.mark.parametrize("args", [
    ["run", "w.json", "--policy", "sebf", "--json"],
    ["run", "w.json", "--policy", "lp-flow", "--mode", "online", "--json"],
    ["bound", "w.json", "--lp", "flow", "--json"],
    ["bound", "w.json", "--lp", "coflow", "--objective", "makespan", "--json"],
    ["bound", "w.json", "--lp", "single", "--json"],
    ["run", "mr.json", "--policy", "synchpack-3+lp-coflow", "--json"],
    ["bound", "mr.json", "--lp", "synchpack-3", "--json"],
], ids=lambda a: "-".join(a[:1] + a[2:4] + a[4:6]))
def test_every_json_output_is_exactly_one_json_document_on_stdout(files, args):
    doc = one_json_document(coflowemu(*args, cwd=files))
    assert isinstance(doc, dict)
    assert doc.get("value", doc.get("total_weighted_completion")) is not None


def test_run_writes_segments_as_json_lines_and_prints_one_document(files):
    doc = one_json_document(coflowemu("run", "w.json", "--policy", "fifo", "--json",
                                      "--segments", "seg.jsonl", cwd=files))
    with open(files / "seg.jsonl") as fh:
        segs = [json.loads(line) for line in fh]
    assert segs and {"coflow", "src", "dst", "core", "start", "end"} <= set(segs[0])
    assert max(s["end"] for s in segs) == pytest.approx(doc["makespan"])


def test_joint_run_writes_task_and_flow_segments(files):
    doc = one_json_document(coflowemu("run", "mr.json", "--policy", "psrs+sebf", "--json",
                                      "--segments", "mr-seg.jsonl", cwd=files))
    assert len(doc["jobs"]) == 2
    with open(files / "mr-seg.jsonl") as fh:
        segs = [json.loads(line) for line in fh]
    assert any("task" in s for s in segs) and any("coflow" in s for s in segs)


def test_compare_prints_one_document_and_writes_its_store_and_plot(files):
    out = coflowemu("compare", "w.json", "--policies", "fifo,sincronia", "--json",
                    "--out", "cmp", cwd=files)
    doc = one_json_document(out)
    assert [r["policy"] for r in doc["rows"]] == ["fifo", "sincronia"]
    q = coflowemu("results", "cmp", "--json", "--sql",
                  "select policy, sum_wc from runs order by policy", cwd=files)
    assert [(p, pytest.approx(t)) for p, t in one_json_document(q)["rows"]] == \
        [(r["policy"], r["total_weighted_completion"]) for r in doc["rows"]]
    assert (files / "cmp" / "cct-cdf.png").read_bytes().startswith(PNG)


def test_demo_prints_the_table_and_a_second_demo_reads_its_runs_back(tmp_path):
    out = coflowemu("demo", "--seed", 3, "--out", tmp_path / "d")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("workload demo-seed3: 60 coflows")
    assert [ln.split()[0] for ln in lines[3:15]] == [
        "lp-flow", "lp-coflow", "lp-single", "fifo", "scf", "ncf", "lcf", "sebf",
        "sincronia", "aalo", "fair", "weaver"]
    assert (tmp_path / "d" / "cct-cdf.png").read_bytes().startswith(PNG)
    assert read_workload(str(tmp_path / "d" / "workload.json")).name == "demo-seed3"
    again = coflowemu("demo", "--seed", 3, "--out", tmp_path / "d")
    assert again.returncode == 0 and again.stdout == out.stdout     # read back, not rerun
    q = coflowemu("results", tmp_path / "d", "--json", "--sql",
                  "select count(*), count(distinct run_key) from runs where sweep = 'demo'")
    assert one_json_document(q)["rows"] == [[12, 12]]


def test_gantt_draws_the_segments_a_run_wrote(files):
    assert coflowemu("run", "w.json", "--policy", "sebf", "--segments", "g.jsonl",
                     cwd=files).returncode == 0
    out = coflowemu("gantt", "g.jsonl", "--out", "g.png", cwd=files)
    assert out.returncode == 0, out.stderr
    assert (files / "g.png").read_bytes().startswith(PNG)


def test_policy_options_in_the_name_reach_the_policy_and_name_its_record(files):
    """``NAME@KEY=VALUE``: the option changes the run (aalo's first queue threshold
    decides which coflows are demoted) and the record is labelled with it."""
    docs = {p: one_json_document(coflowemu("run", files / "w.json", "--policy", p,
                                           "--json", "--no-lp-bound"))
            for p in ("aalo", "aalo@first_threshold=1000", "lp-coflow@mode=online")}
    assert docs["aalo"]["policy"] == "aalo"
    assert docs["aalo@first_threshold=1000"]["policy"] == "aalo@first_threshold=1000"
    assert docs["lp-coflow@mode=online"]["policy"] == "lp-coflow@mode=online"
    ccts = {p: [c["cct"] for c in d["coflows"]] for p, d in docs.items()}
    assert ccts["aalo"] != ccts["aalo@first_threshold=1000"]
    same = one_json_document(coflowemu("run", files / "w.json", "--policy", "lp-coflow",
                                       "--mode", "online", "--json", "--no-lp-bound"))
    assert same["policy"] == "lp-coflow@mode=online"
    assert [c["cct"] for c in same["coflows"]] == ccts["lp-coflow@mode=online"]


def test_policies_lists_network_and_compute_policies_on_stdout(files):
    out = coflowemu("policies")
    assert out.returncode == 0 and out.stderr == ""
    names = {line.split()[0] for line in out.stdout.splitlines() if line[:1].isalnum()}
    assert {"sebf", "lp-coflow", "synchpack-3", "psrs"} <= names


@pytest.mark.parametrize("args", [
    ["run", "missing.json", "--json"],
    ["run", "w.json", "--policy", "no-such-policy", "--json"],
    ["run", "w.json", "--rate", "fast", "--json"],
    ["bound", "mr.json", "--lp", "flow", "--json"],
    ["run", "w.json", "--policy", "sebf@no_such_option=1", "--json"],
    ["run", "w.json", "--policy", "sebf@allocation", "--json"],
    ["run", "w.json", "--policy", "aalo@queues=0", "--json"],
    ["run", "w.json", "--policy", "lp-coflow@mode=online", "--mode", "offline", "--json"],
    ["run", "mr.json", "--policy", "fifo@x=1+sebf", "--json"],
], ids=["missing-file", "unknown-policy", "bad-rate", "wrong-lp", "unknown-option",
        "option-without-value", "bad-option-value", "option-given-twice",
        "compute-option-not-taken"])
def test_bad_input_exits_2_with_one_line_on_stderr_and_nothing_on_stdout(files, args):
    out = coflowemu(*args, cwd=files)
    assert out.returncode == 2, (out.stdout, out.stderr)
    assert out.stdout == ""
    assert "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


@pytest.mark.skipif(os.geteuid() != 0, reason="the emulation needs root")
def test_fidelity_json_is_one_document_with_a_report_per_policy(system, tmp_path):
    out = coflowemu("fidelity", "--random", 1, "--hosts", 3, "--cores", 1, "--coflows", 3,
                    "--rate", "20Mbps", "--mean-size", "1MB", "--policy", "fifo",
                    "--policy", "sincronia", "--json", cwd=tmp_path)
    doc = one_json_document(out)
    assert [r["policy"] for r in doc["reports"]] == ["fifo", "sincronia"]
    assert doc["summary"]["coflows"] == 6
