"""Tests of the ``coflowemu`` command line (emulate/cli/__init__.py).

In process with click's CliRunner, and as a real subprocess of ``.venv/bin/coflowemu``
where the exit code and the absence of a traceback on the terminal matter.

* ``run --json`` schema; ``--segments`` JSON lines accepted by the verifier; ``--cores``
  and ``--rate`` overrides with human units; ``--policy package.module:Class``;
* bad input: exit code 2 and one line naming the file and the field, no traceback;
* ``policies``, ``generate`` then ``run``, ``gantt`` (PNG), ``compare`` (table, plot,
  its runs in the results store, resume), ``bound``.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import uuid

import pytest
from click.testing import CliRunner

from controller.model import Coflow, Flow, Workload
from controller.policies import available
from emulate.cli import main
from emulate.io.traces import read_json, write_json
from topologies.fabric import Fabric
from verifier import read_segment_lines, verify_segments

BIN = os.path.join(os.path.dirname(sys.executable), "coflowemu")
PNG = b"\x89PNG\r\n\x1a\n"
MBYTE = 1e6
RATE = 8e6  # 1 MB per second


@pytest.fixture
def runner():
    return CliRunner()


def small_workload(cores=2):
    """Three coflows on 3 ports at 1 MB/s: a DAG arc, a release, a shared port."""
    return Workload(Fabric(ports=3, cores=cores, rate_bps=RATE), (
        Coflow("a", (Flow(0, 1, 2 * MBYTE), Flow(1, 2, 1 * MBYTE)), weight=2.0),
        Coflow("b", (Flow(0, 2, 1 * MBYTE),), release=0.5, weight=1.0),
        Coflow("c", (Flow(2, 0, 1 * MBYTE), Flow(0, 1, 0.0)), weight=3.0)),
        (("a", "c"),), name="small")


@pytest.fixture
def wfile(tmp_path):
    path = str(tmp_path / "small.json")
    write_json(small_workload(), path)
    return path


def invoke(runner, *args):
    result = runner.invoke(main, [str(a) for a in args], catch_exceptions=False)
    return result


def run_json(runner, *args):
    r = invoke(runner, "run", *args, "--json")
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def shell(*args, cwd=None, env=None):
    return subprocess.run([BIN, *map(str, args)], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=300)


# ============================================================================ run
def test_run_json_has_the_documented_schema_and_consistent_totals(runner, wfile):
    doc = run_json(runner, wfile, "--policy", "fifo", "--no-lp-bound")
    for key, kind in [("policy", str), ("cores", int), ("total_weighted_completion", float),
                      ("makespan", float), ("coflows", list)]:
        assert isinstance(doc[key], kind), key
    assert doc["policy"] == "fifo" and doc["cores"] == 2 and doc["lp_lower_bound"] is None
    assert [c["id"] for c in doc["coflows"]] == ["a", "b", "c"]
    w = small_workload()
    for c, k in zip(doc["coflows"], w.coflows):
        assert set(c) >= {"id", "release", "completion", "cct", "weight"}
        assert (c["release"], c["weight"]) == (k.release, k.weight)
        assert c["cct"] == pytest.approx(c["completion"] - c["release"])
        assert c["completion"] >= c["release"]
    total = sum(c["weight"] * c["completion"] for c in doc["coflows"])
    assert doc["total_weighted_completion"] == pytest.approx(total, rel=1e-12)
    assert doc["makespan"] == max(c["completion"] for c in doc["coflows"])


def test_run_json_lp_lower_bound_is_at_most_the_schedules_cost(runner, wfile):
    doc = run_json(runner, wfile, "--policy", "lp-flow")
    assert isinstance(doc["lp_lower_bound"], float)
    assert 0 < doc["lp_lower_bound"] <= doc["total_weighted_completion"] * (1 + 1e-6)


def test_run_without_json_prints_a_summary(runner, wfile):
    r = invoke(runner, "run", wfile, "--policy", "fifo", "--no-lp-bound")
    assert r.exit_code == 0
    assert "fifo on small" in r.stdout and "total weighted completion" in r.stdout


@pytest.mark.parametrize("policy", sorted(available()))
def test_run_segments_are_json_lines_the_verifier_accepts(runner, wfile, tmp_path, policy):
    seg = tmp_path / "segs.jsonl"
    doc = run_json(runner, wfile, "--policy", policy, "--segments", seg, "--no-lp-bound")
    w = read_json(wfile)
    lines = seg.read_text().splitlines()
    assert lines and all(json.loads(x) for x in lines)
    segs = read_segment_lines(w, str(seg))  # exactly the keys coflow..rate_bps per line
    done = [c["completion"] for c in doc["coflows"]]
    v = verify_segments(w, segs, coflow_completion=done,
                        indivisible=policy in ("lp-coflow", "lp-single"))
    assert v.objective == pytest.approx(doc["total_weighted_completion"], rel=1e-9)


@pytest.mark.parametrize("rate, bps", [("100Mbps", 1e8), ("1Gbit", 1e9), ("500kbps", 5e5),
                                       ("2.5e6", 2.5e6), ("1Gibps", 2.0**30)])
def test_cores_and_rate_overrides_take_human_units(runner, tmp_path, rate, bps):
    path = str(tmp_path / "one.json")
    write_json(Workload(Fabric(2, 1, 1e9), (Coflow("x", (Flow(0, 1, MBYTE),)),
                                            Coflow("y", (Flow(1, 0, MBYTE),)))), path)
    doc = run_json(runner, path, "--cores", 3, "--rate", rate, "--policy", "fifo",
                   "--no-lp-bound")
    assert doc["cores"] == 3 and doc["rate_bps"] == [bps] * 3
    assert [c["completion"] for c in doc["coflows"]] == pytest.approx([8e6 / bps] * 2)


def test_mode_option_reaches_lp_policies_and_is_ignored_by_others(runner, wfile):
    online = run_json(runner, wfile, "--policy", "lp-flow", "--mode", "online", "--no-lp-bound")
    assert online["policy"] == "lp-flow@mode=online"
    fifo = run_json(runner, wfile, "--policy", "fifo", "--mode", "online", "--no-lp-bound")
    assert fifo["policy"] == "fifo"


def test_run_reads_an_fb_trace_with_trace_options(runner, tmp_path):
    trace = tmp_path / "t.txt"
    trace.write_text("4 2\n1 0 2 0 1 2 2:1.0 3:2.0\n2 1500 1 3 1 1:0.5\n")
    doc = run_json(runner, trace, "--hosts", 2, "--zero-release", "--policy", "fifo",
                   "--no-lp-bound")
    assert [c["release"] for c in doc["coflows"]] == [0.0, 0.0]
    assert doc["ports"] == 2


# ============================================================================ bad input
def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


GOOD_DOC = {"fabric": {"ports": 3, "cores": 1, "rate_bps": 8e6},
            "coflows": [{"id": "c0", "flows": [{"src": 0, "dst": 1, "bytes": 100}]},
                        {"id": "c1", "flows": [{"src": 1, "dst": 2, "bytes": 100}]}]}


def doc_with(**changes):
    d = json.loads(json.dumps(GOOD_DOC))
    d.update(changes)
    return json.dumps(d, indent=1)


def c1_flow(**flow):
    f = {"src": 1, "dst": 2, "bytes": 100}
    f.update(flow)
    return doc_with(coflows=[GOOD_DOC["coflows"][0], {"id": "c1", "flows": [f]}])



BAD_CASES = [
    # (file name, file text or None, extra args, words the message must contain)
    pytest.param("missing.json", None, [], ["missing.json", "cannot read"], id="missing-file"),
    pytest.param("broken.json", '{"fabric": {"ports": 3},\n "coflows": [\n {"id": "c0" }\n',
                 [], ["broken.json:4", "malformed JSON"], id="malformed-json"),
    pytest.param("neg.json", c1_flow(bytes=-5), [], ["neg.json:", "bytes", "c1", ">= 0"],
                 id="negative-size"),
    pytest.param("port.json", c1_flow(dst=7), [], ["port.json:", "dst", "c1", "out of range"],
                 id="port-out-of-range"),
    pytest.param("type.json", c1_flow(src="1"), [], ["type.json:", "src", "c1"],
                 id="wrong-type"),
    pytest.param("arc.json", doc_with(precedence=[["c0", "zz"]]), [],
                 ["arc.json", "precedence", "zz"], id="unknown-coflow-in-arc"),
    pytest.param("cyc.json", doc_with(precedence=[["c0", "c1"], ["c1", "c0"]]), [],
                 ["cyc.json:", "precedence", "cycle"], id="cycle"),
    pytest.param("nofab.json", json.dumps({"coflows": []}), [], ["nofab.json", "fabric"],
                 id="missing-fabric"),
    pytest.param("ok.json", doc_with(), ["--rate", "1Gbpz"], ["1Gbpz", "rate"], id="bad-unit"),
    pytest.param("ok.json", doc_with(), ["--policy", "no-such"], ["no-such", "fifo"],
                 id="unknown-policy"),
    pytest.param("ok.json", doc_with(), ["--policy", "nomod_x.y:Z"], ["nomod_x"],
                 id="unloadable-policy"),
    pytest.param("ok.json", doc_with(), ["--cores", "0"], ["--cores"], id="zero-cores"),
    pytest.param("ok.json", doc_with(), ["--policy", "lp-flow", "--mode", "sometimes"],
                 ["sometimes"], id="bad-mode"),
    pytest.param("t.txt", "4 1\n1 0 1 0 1 9:1\n", [], ["t.txt:2", "reducers", "9:1"],
                 id="fb-trace-line"),
    pytest.param("rates.json", doc_with(fabric={"ports": 3, "cores": 2,
                                                "core_rates": ["fast", "slow"]}), [],
                 ["rates.json", "core_rates"], id="core-rates-not-numbers"),
    pytest.param("arcs.json", doc_with(precedence=[[["c0"], "c1"]]), [],
                 ["arcs.json", "precedence"], id="arc-with-a-list"),
]


@pytest.mark.parametrize("name, text, args, words", BAD_CASES)
def test_bad_input_exits_2_with_one_line_naming_file_and_field(tmp_path, name, text, args,
                                                              words):
    path = str(tmp_path / name) if text is None else write(tmp_path, name, text)
    p = shell("run", path, "--no-lp-bound", *args)
    both = p.stdout + p.stderr
    assert "Traceback" not in both, both
    assert p.returncode == 2, both
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    for word in words:
        assert word in lines[0], f"{word!r} not in {lines[0]!r}"


def test_bad_input_in_process_is_a_system_exit_2(runner, tmp_path):
    path = write(tmp_path, "neg.json", c1_flow(bytes=-1))
    r = runner.invoke(main, ["run", path])
    assert r.exit_code == 2 and isinstance(r.exception, SystemExit)
    assert "neg.json" in r.stderr and "bytes" in r.stderr


# ============================================================================ commands
def test_policies_lists_every_registered_policy_with_its_summary(runner):
    r = invoke(runner, "policies")
    assert r.exit_code == 0
    block = r.stdout.split("\n\n")[0]  # the network policies (other sections may follow)
    listed = {line.split()[0]: line for line in block.splitlines() if line.strip()}
    reg = available()
    assert set(listed) == set(reg)
    for name, cls in reg.items():
        assert cls.summary and cls.summary in listed[name]


def test_generate_then_run(runner, tmp_path):
    out = tmp_path / "g.json"
    r = invoke(runner, "generate", "--seed", 3, "--ports", 4, "--cores", 2, "--coflows", 6,
               "--chi", 3, "--mean-size", "200KB", "--out", out)
    assert r.exit_code == 0 and "6 coflows" in r.stdout
    w = read_json(str(out))
    assert len(w.coflows) == 6 and w.fabric.cores == 2 and w.fabric.ports == 4 and w.chi == 3
    doc = run_json(runner, out, "--policy", "lp-coflow")
    assert len(doc["coflows"]) == 6 and doc["lp_lower_bound"] is not None
    again = tmp_path / "g2.json"
    invoke(runner, "generate", "--seed", 3, "--ports", 4, "--cores", 2, "--coflows", 6,
           "--chi", 3, "--mean-size", "200KB", "--out", again)
    assert again.read_bytes() == out.read_bytes()


def test_generate_jobs_and_zero_load_then_run(runner, tmp_path):
    jobs = tmp_path / "jobs.json"
    assert invoke(runner, "generate", "--jobs", 2, "--ports", 4, "--out", jobs).exit_code == 0
    doc = run_json(runner, jobs, "--policy", "fifo", "--no-lp-bound")
    assert len(doc["jobs"]) == 2 and "total_weighted_job_completion" in doc
    zero = tmp_path / "zero.json"
    assert invoke(runner, "generate", "--load", 0, "--coflows", 4, "--out", zero).exit_code == 0
    assert all(c.release == 0 for c in read_json(str(zero)).coflows)


@pytest.mark.parametrize("by", ["src", "dst"])
def test_gantt_writes_a_png(runner, wfile, tmp_path, by):
    seg = tmp_path / "s.jsonl"
    run_json(runner, wfile, "--policy", "fifo", "--segments", seg, "--no-lp-bound")
    png = tmp_path / "plots" / "gantt.png"
    r = invoke(runner, "gantt", seg, "--out", png, "--by", by)
    assert r.exit_code == 0, r.output
    assert png.read_bytes()[:8] == PNG


def test_gantt_of_a_bad_segments_file_exits_2(tmp_path, wfile):
    p = shell("gantt", wfile, "--out", tmp_path / "g.png")  # a workload, not JSON lines
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert os.path.basename(wfile) in p.stderr and len(p.stderr.strip().splitlines()) == 1


def _store_runs(out, *cols):
    """(policy, *cols) of every run of the compare sweep recorded in the store ``out``."""
    from experiments.sweep.store import open_results
    return open_results(str(out)).sql(
        f"select policy, {', '.join(cols)} from runs where sweep = 'compare' "
        f"order by policy, recorded_at").fetchall()


def test_compare_prints_a_table_and_writes_the_plot_and_its_runs_to_the_store(
        runner, wfile, tmp_path):
    from experiments.sweep.store import open_results
    out, plot = tmp_path / "out", tmp_path / "cdf.png"
    r = invoke(runner, "compare", wfile, "--policies", "fifo,lp-coflow", "--no-lp-bound",
               "--plot", plot, "--out", out)
    assert r.exit_code == 0, r.output
    rows = [line.split()[0] for line in r.stdout.splitlines()]
    assert "policy" in rows[0] and "fifo" in rows and "lp-coflow" in rows
    assert plot.read_bytes()[:8] == PNG
    db = open_results(str(out))
    for name in ("fifo", "lp-coflow"):
        direct = run_json(runner, wfile, "--policy", name, "--no-lp-bound")
        (key, total), = db.sql(f"select run_key, sum_wc from runs "
                               f"where policy = '{name}'").fetchall()
        assert total == pytest.approx(direct["total_weighted_completion"], rel=1e-12)
        got = db.sql(f"select id, completion from coflows where run_key = '{key}' "
                     f"order by id").fetchall()
        assert got == [(c["id"], pytest.approx(c["completion"], rel=1e-12))
                       for c in sorted(direct["coflows"], key=lambda c: c["id"])]


def test_compare_writes_its_plot_beside_the_runs_by_default(runner, wfile, tmp_path):
    out = tmp_path / "sweep"
    r = invoke(runner, "compare", wfile, "--policies", "fifo", "--no-lp-bound", "--out", out)
    assert r.exit_code == 0, r.output
    assert (out / "cct-cdf.png").read_bytes()[:8] == PNG
    assert f"CCT CDF written to {out / 'cct-cdf.png'}" in r.stdout


def test_compare_with_the_lp_bound_gives_ratios_of_at_least_one(runner, wfile, tmp_path):
    r = invoke(runner, "compare", wfile, "--policies", "fifo,lp-flow", "--json",
               "--plot", tmp_path / "p.png", "--out", tmp_path / "o")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["lp_lower_bound"] > 0
    for row in doc["rows"]:
        assert row["lp_ratio"] >= 1 - 1e-6


def test_compare_resume_reads_back_recorded_runs_and_reruns_without_it(runner, wfile,
                                                                       tmp_path):
    out = tmp_path / "out"
    args = ("compare", wfile, "--policies", "fifo,sebf", "--no-lp-bound", "--json",
            "--plot", tmp_path / "p.png", "--out", out)
    first = json.loads(invoke(runner, *args).stdout)
    recorded = _store_runs(out, "run_key", "recorded_at")
    again = json.loads(invoke(runner, *args, "--resume").stdout)
    assert again == first and _store_runs(out, "run_key", "recorded_at") == recorded
    fresh = json.loads(invoke(runner, *args).stdout)         # run again, rows replaced
    assert [r["total_weighted_completion"] for r in fresh["rows"]] == pytest.approx(
        [r["total_weighted_completion"] for r in first["rows"]], rel=1e-12)
    now = _store_runs(out, "run_key", "recorded_at")
    assert [r[:2] for r in now] == [r[:2] for r in recorded]
    assert all(b[2] > a[2] for a, b in zip(recorded, now))


@pytest.mark.parametrize("change", [("--cores", "1"), ("--rate", "10Mbps"), "content"])
def test_compare_resume_reruns_when_a_parameter_that_shapes_the_run_differs(
        runner, wfile, tmp_path, change):
    out = tmp_path / "out"
    base = ("compare", wfile, "--policies", "sebf", "--no-lp-bound", "--json",
            "--plot", tmp_path / "p.png", "--out", out)
    before = json.loads(invoke(runner, *base, "--cores", "2").stdout)
    if change == "content":   # the same name, other bytes
        w = small_workload()
        write_json(w.replace(coflows=tuple(
            Coflow(c.id, tuple(Flow(f.src, f.dst, 2 * f.bytes) for f in c.flows),
                   release=c.release, weight=c.weight) for c in w.coflows)), wfile)
        change = ()
    # a changed fabric, rate or workload content: a run of its own, not the recorded one
    again = json.loads(invoke(runner, *base, "--cores", "2", *change, "--resume").stdout)
    fresh = json.loads(invoke(runner, *base, "--cores", "2", *change).stdout)
    assert again["rows"][0]["total_weighted_completion"] == pytest.approx(
        fresh["rows"][0]["total_weighted_completion"], rel=1e-12)
    assert again["rows"][0]["total_weighted_completion"] != pytest.approx(
        before["rows"][0]["total_weighted_completion"], rel=1e-9)
    assert len({k for _, k in _store_runs(out, "run_key")}) == 2


def test_a_compare_run_that_fails_is_recorded_and_the_command_exits_1(tmp_path, wfile):
    (tmp_path / "boom.py").write_text(
        "from controller.policies import Policy\n\n\n"
        "class Boom(Policy):\n    name = 'boom'\n\n"
        "    def plan(self, state):\n        raise RuntimeError('no plan today')\n")
    p = shell("compare", wfile, "--policies", "fifo,boom:Boom", "--no-lp-bound", "--out",
              tmp_path / "o", cwd=tmp_path)
    assert p.returncode == 1 and p.stdout == "" and "Traceback" not in p.stderr
    assert p.stderr.count("\n") == 1 and "boom:Boom" in p.stderr
    assert "no plan today" in p.stderr and str(tmp_path / "o") in p.stderr
    assert _store_runs(tmp_path / "o", "status") == [("boom:Boom", "failed"),
                                                     ("fifo", "ok")]


@pytest.mark.parametrize("lp", ["flow", "coflow", "single"])
def test_bound_is_at_most_every_simulated_cost(runner, wfile, lp):
    r = invoke(runner, "bound", wfile, "--lp", lp, "--json")
    assert r.exit_code == 0, r.output
    value = json.loads(r.stdout)["value"]
    policy = {"flow": "lp-flow", "coflow": "lp-coflow", "single": "lp-single"}[lp]
    cost = run_json(runner, wfile, "--policy", policy, "--no-lp-bound")
    assert 0 < value <= cost["total_weighted_completion"] * (1 + 1e-6)


# ============================================================================ user policy
USER_POLICY = '''
import numpy as np
from controller.plan import coflow_order_plan
from controller.policies import Policy


class Reverse(Policy):
    """Serves ready coflows in reverse workload order, all on core 0."""
    name = "my-reverse"

    def plan(self, state):
        return coflow_order_plan(state, state.active_coflows[::-1])
'''


@pytest.fixture
def user_package(tmp_path):
    pkg = f"userpol_{uuid.uuid4().hex[:8]}"
    (tmp_path / pkg).mkdir()
    (tmp_path / pkg / "__init__.py").write_text("")
    (tmp_path / pkg / "mod.py").write_text(textwrap.dedent(USER_POLICY))
    yield pkg
    for name in [m for m in sys.modules if m == pkg or m.startswith(pkg + ".")]:
        del sys.modules[name]


def two_on_one_port(tmp_path):
    path = str(tmp_path / "two.json")
    write_json(Workload(Fabric(2, 1, RATE), (Coflow("first", (Flow(0, 1, MBYTE),)),
                                             Coflow("second", (Flow(0, 1, MBYTE),)))), path)
    return path


def test_user_policy_loads_by_dotted_path_in_process(runner, tmp_path, user_package,
                                                     monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    doc = run_json(runner, two_on_one_port(tmp_path), "--policy", f"{user_package}.mod:Reverse",
                   "--no-lp-bound")
    assert doc["policy"] == "my-reverse"
    assert [c["completion"] for c in doc["coflows"]] == [2.0, 1.0]  # reversed order


def test_user_policy_loads_from_pythonpath_in_a_subprocess(tmp_path, user_package):
    work = two_on_one_port(tmp_path)
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    p = shell("run", work, "--policy", f"{user_package}.mod:Reverse", "--json",
              "--no-lp-bound", cwd="/", env=env)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert [c["completion"] for c in doc["coflows"]] == [2.0, 1.0]


def test_user_policy_loads_from_the_working_directory(tmp_path, user_package):
    work = two_on_one_port(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    p = shell("run", work, "--policy", f"{user_package}.mod:Reverse", "--json",
              "--no-lp-bound", cwd=tmp_path, env=env)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["policy"] == "my-reverse"


def test_user_policy_with_a_wrong_class_name_exits_2(tmp_path, user_package):
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    p = shell("run", two_on_one_port(tmp_path), "--policy", f"{user_package}.mod:Nope",
              env=env)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert "Nope" in p.stderr and len(p.stderr.strip().splitlines()) == 1


_CHURN = textwrap.dedent("""
    import resource, sys
    import numpy as np
    if sys.argv[1] == "keep":
        from emulate.cli import keep_freed_memory
        assert keep_freed_memory()
    def plan():   # what a plan on FB2010 allocates and drops: four per-flow arrays
        arrays = [np.ones(706_397) for _ in range(4)]
        return sum(float(a[-1]) for a in arrays)
    plan()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(50):
        plan()
    print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
""")


def test_the_command_keeps_the_memory_plans_free_for_the_next_plan():
    """glibc hands freed per-plan arrays back to the kernel and faults them in again at
    the next plan (weaver on 2 cores: 1.1M page faults); the command keeps them."""
    faults = {how: int(subprocess.run([sys.executable, "-c", _CHURN, how], check=True,
                                      capture_output=True, text=True).stdout)
              for how in ("default", "keep")}
    assert faults["keep"] < 500 < faults["default"], faults


_THREADS = textwrap.dedent("""
    import os, sys
    if sys.argv[1] == "one":
        from emulate.cli import one_blas_thread
        one_blas_thread()
    import numpy, scipy.linalg   # both load an OpenBLAS
    print(len(os.listdir("/proc/self/task")))
""")


@pytest.mark.skipif((os.cpu_count() or 1) < 2 or not os.path.isdir("/proc/self/task"),
                    reason="OpenBLAS starts threads only with more than one CPU")
def test_the_command_starts_no_blas_threads():
    """numpy's and scipy's OpenBLAS start a spinning thread per extra CPU; the command
    (and what it starts) runs with one."""
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    threads = {how: int(subprocess.run([sys.executable, "-c", _THREADS, how], check=True,
                                       capture_output=True, text=True, env=env).stdout)
               for how in ("default", "one")}
    assert threads["one"] == 1 < threads["default"], threads
