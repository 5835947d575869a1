"""Sweeps: specs expanded into runs, run on Dask (a local cluster and a separately started
scheduler with two workers), resumed after a kill, failures recorded, results in Parquet
queried with DuckDB, and the ``sweep`` / ``results`` commands at the process boundary.

Every Dask process a test starts listens on 127.0.0.1 and is ended by its PID.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from experiments.sweep.spec import SpecError, parse_spec, read_spec

BIN = os.path.dirname(sys.executable)
COFLOWEMU = os.path.join(BIN, "coflowemu")

SPEC = """
name = "small"
bounds = ["auto"]

[[workloads]]
kind = "coflows"
seeds = 2
params = { coflows = [3, 5] }

[[fabrics]]
ports = 4
cores = 2
rate = "1Gbps"

[[policies]]
specs = ["fifo", "sebf"]

[[policies]]
specs = ["nosuch"]          # fails: recorded with its error, the rest completes
"""


def _rows(store):
    """Run rows and coflow rows of a store, without the wall-clock columns."""
    from experiments.sweep.store import open_results
    db = open_results(str(store))
    runs = db.sql("select run_key, label, status, error, sum_wc, lp_bound, ratio, mean_ct, "
                  "p99_ct, n_items from runs order by run_key").fetchall()
    coflows = db.sql("select run_key, id, release, completion, cct from coflows "
                     "order by run_key, id").fetchall()
    return runs, coflows


@pytest.fixture(scope="module")
def local(tmp_path_factory):
    """The small spec run once on a LocalCluster of two workers."""
    from experiments.sweep.runner import run_sweep
    d = tmp_path_factory.mktemp("sweep")
    (d / "small.toml").write_text(SPEC)
    spec = read_spec(str(d / "small.toml"))
    report = run_sweep(spec, str(d / "out"), workers=2, progress=False)
    return d, spec, report


# ------------------------------------------------------------------------------ spec
def test_spec_expands_into_the_cross_product_of_its_groups(tmp_path):
    (tmp_path / "w.json").write_text(json.dumps(
        {"fabric": {"ports": 2, "cores": 1, "rate_bps": 8.0},
         "coflows": [{"id": "a", "flows": [{"src": 0, "dst": 1, "bytes": 1}]}]}))
    doc = {"name": "x", "engines": ["sim"],
           "workloads": [{"kind": "coflows", "seeds": [0, 1, 2],
                          "params": {"coflows": [4, 8], "load": 0.5}},
                         {"file": "w.json"}],
           "fabrics": [{"ports": 4, "cores": [1, 2]}],
           "policies": [{"specs": ["fifo", "lp-coflow"], "mode": ["offline", "online"]},
                        {"specs": "sebf"}]}
    spec = parse_spec(doc, source=str(tmp_path / "s.toml"))
    runs = spec.runs(version="v1")
    # (3 seeds x 2 sizes + 1 file) x 2 fabrics x (2 x 2 + 1) policy settings
    assert len(runs) == (3 * 2 + 1) * 2 * 5
    assert len({r.key for r in runs}) == len(runs)
    gen = [r for r in runs if "kind" in r.workload]
    assert {(r.workload["seed"], r.workload["params"]["coflows"]) for r in gen} == \
        {(s, c) for s in (0, 1, 2) for c in (4, 8)}
    assert {r.workload["params"]["load"] for r in gen} == {0.5}
    assert {(r.fabric["ports"], r.fabric["cores"], r.fabric["rate_bps"]) for r in gen} == \
        {(4, 1, 1e9), (4, 2, 1e9)}
    assert {(r.policy, tuple(r.options.items())) for r in runs} == {
        ("fifo", (("mode", "offline"),)), ("fifo", (("mode", "online"),)),
        ("lp-coflow", (("mode", "offline"),)), ("lp-coflow", (("mode", "online"),)),
        ("sebf", ())}
    files = [r for r in runs if "file" in r.workload]
    assert {r.workload["file"] for r in files} == {str(tmp_path / "w.json")}
    # the key is the parameters plus the code version: same spec, same keys
    assert [r.key for r in spec.runs(version="v1")] == [r.key for r in runs]
    assert not {r.key for r in spec.runs(version="v2")} & {r.key for r in runs}


@pytest.mark.parametrize("change, path, message", [
    (lambda d: d.pop("name"), "name", "non-empty string"),
    (lambda d: d.update(engines=["warp"]), "engines[0]", "unknown engine 'warp'"),
    (lambda d: d["workloads"][0].update(kind="nope"), "workloads[0].kind", "unknown kind"),
    (lambda d: d["workloads"][0]["params"].update(bogus=1), "workloads[0].params.bogus",
     "has no parameter 'bogus'"),
    (lambda d: d["workloads"][0].update(seeds=0), "workloads[0].seeds", "count >= 1"),
    (lambda d: d["fabrics"][0].update(rate="fast"), "fabrics[0].rate", "rate"),
    (lambda d: d["fabrics"][0].update(cores=[1, 0]), "fabrics[0].cores[1]", ">= 1"),
    (lambda d: d["policies"][0].pop("specs"), "policies[0]", "missing key 'specs'"),
    (lambda d: d.update(bounds=["lp9"]), "bounds[0]", "unknown bound"),
    (lambda d: d["workloads"].append({"file": "missing.json"}), "workloads[1].file",
     "no such file"),
])
def test_bad_specs_name_the_file_and_key_path(change, path, message):
    doc = {"name": "x", "workloads": [{"kind": "coflows", "params": {"coflows": 3}}],
           "fabrics": [{"ports": 4}], "policies": [{"specs": ["fifo"]}]}
    change(doc)
    with pytest.raises(SpecError) as e:
        parse_spec(doc, source="spec.toml")
    assert e.value.path == path and message in str(e.value)
    assert str(e.value).startswith("spec.toml: " + path + ":")


# ------------------------------------------------------------------------------ running
def test_a_failing_run_is_recorded_and_the_rest_complete(local):
    d, spec, report = local
    assert report.total == 12 and report.done == 8 and len(report.failed) == 4
    assert all("unknown policy 'nosuch'" in err for _, _, err in report.failed)
    runs, _ = _rows(d / "out")
    assert len(runs) == 12
    assert {r[2] for r in runs if "nosuch" in r[1]} == {"failed"}
    assert all(r[2] == "ok" and r[3] is None for r in runs if "nosuch" not in r[1])


def test_a_recorded_sweep_is_skipped_when_run_again(local):
    from experiments.sweep.runner import run_sweep
    d, spec, _ = local
    before = _rows(d / "out")
    again = run_sweep(spec, str(d / "out"), workers=1, progress=False)
    assert again.skipped == 12 and again.done == 0 and not again.failed
    assert _rows(d / "out") == before


def test_rows_match_the_engine_called_directly(local):
    """A sweep's numbers are the engine's: sum w*C, LP bound, ratio and every CCT."""
    from controller.lp.bound import lp_bound_for
    from emulate.engines import get_engine
    from emulate.io.generators import generate
    from experiments.sweep.store import open_results
    d, spec, _ = local
    db = open_results(str(d / "out"))
    row = db.sql("select run_key, sum_wc, lp_bound, ratio, p99_ct from runs "
                 "where policy = 'sebf' and seed = 1 and p_coflows = 5").fetchall()[0]
    w = generate("coflows", seed=1, ports=4, cores=2, rate_bps=1e9, params={"coflows": 5})
    r = get_engine("sim").run(w, "sebf")
    lp = lp_bound_for(w)
    wr = float(w.arrays.weight @ w.arrays.release)
    assert row[1] == pytest.approx(r.total_weighted_completion, rel=1e-12)
    assert row[2] == pytest.approx(lp, rel=1e-9)
    assert row[3] == pytest.approx((r.total_weighted_completion - wr) / (lp - wr), rel=1e-9)
    assert row[4] == pytest.approx(np.percentile(r.cct, 99), rel=1e-12)
    ccts = [c[0] for c in db.sql(f"select cct from coflows where run_key = '{row[0]}' "
                                 f"order by id").fetchall()]
    assert sorted(ccts) == pytest.approx(sorted(r.cct.tolist()), rel=1e-12)


def test_duckdb_queries_and_pandas_over_the_parquet_store(local):
    from experiments.sweep.store import open_results
    d, _, _ = local
    db = open_results(str(d / "out"))
    # one coflow row per coflow of every recorded ok run, none for failed runs
    per_run = db.sql("select r.run_key, r.n_items, count(c.id) from runs r left join "
                     "coflows c using (run_key) group by all").fetchall()
    assert all(n == (k or 0) for _, k, n in per_run)
    assert db.sql("select count(*) from coflows").fetchall()[0][0] == 8 // 2 * (3 + 5)
    # partitioned by sweep: a column of every view
    assert db.sql("select distinct sweep from runs").fetchall() == [("small",)]
    df = db.sql("select policy, avg(ratio) as r from runs where status = 'ok' "
                "group by policy order by policy").df()
    assert list(df["policy"]) == ["fifo", "sebf"] and (df["r"] >= 1 - 1e-9).all()
    files = os.listdir(d / "out" / "runs" / "sweep=small")
    assert len(files) == 12 and all(f.endswith(".parquet") for f in files)


def test_summary_pools_seeds_with_confidence_intervals(local):
    from experiments.sweep.report import summary, write_plots
    from experiments.sweep.store import open_results
    d, _, _ = local
    db = open_results(str(d / "out"))
    rows = summary(db)
    assert len(rows) == 6       # 2 sizes x 3 policies; seeds pooled
    ok = [r for r in rows if r["policy"] != "nosuch"]
    for r in ok:
        ratios = [x[0] for x in db.sql(
            f"select ratio from runs where policy = '{r['policy']}' "
            f"and p_coflows = {r['p_coflows']}").fetchall()]
        assert r["runs"] == 2 and r["failed"] == 0 and r["seeds"] == 2
        assert r["ratio"] == pytest.approx(sum(ratios) / 2)
        assert r["ratio_ci95"] is not None and r["ratio_ci95"] >= 0
        assert r["p50_ct"] <= r["p95_ct"] <= r["p99_ct"]
    assert all(r["failed"] == 2 and r["ratio"] is None for r in rows
               if r["policy"] == "nosuch")
    plots = write_plots(db, str(d / "plots"))
    assert any("ratio-coflows" in p for p in plots) and any("cdf" in p for p in plots)
    for p in plots:
        with open(p, "rb") as fh:
            assert fh.read(8) == b"\x89PNG\r\n\x1a\n"


def _free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_separate_scheduler_and_two_workers_give_identical_results(local, tmp_path):
    """`dask scheduler` + two `dask worker` processes (this test's own, on 127.0.0.1)."""
    from experiments.sweep.runner import run_sweep
    d, spec, _ = local
    port = _free_port()
    procs = []
    try:
        procs.append(subprocess.Popen(
            [os.path.join(BIN, "dask"), "scheduler", "--host", "127.0.0.1", "--port",
             str(port), "--no-dashboard"], stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL))
        for _ in range(2):
            procs.append(subprocess.Popen(
                [os.path.join(BIN, "dask"), "worker", f"tcp://127.0.0.1:{port}", "--host",
                 "127.0.0.1", "--nthreads", "1", "--no-nanny", "--no-dashboard"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                stdin=subprocess.DEVNULL))
        from distributed import Client
        with Client(f"tcp://127.0.0.1:{port}", timeout="30s") as c:
            c.wait_for_workers(2, timeout=60)
        report = run_sweep(spec, str(tmp_path / "out"), scheduler=f"tcp://127.0.0.1:{port}",
                           progress=False)
        assert report.workers == 2
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in reversed(procs):
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
    assert report.done == 8 and len(report.failed) == 4
    assert _rows(tmp_path / "out") == _rows(d / "out")


def test_the_in_process_executor_gives_the_clusters_rows(local, tmp_path):
    """workers = 0 (compare, demo): the same execute per run, no Dask, same rows."""
    from experiments.sweep.runner import SweepError, run_sweep
    d, spec, _ = local
    report = run_sweep(spec, str(tmp_path / "out"), workers=0, progress=False)
    assert report.workers == 0 and report.done == 8 and len(report.failed) == 4
    assert "in this process" in report.format()
    assert _rows(tmp_path / "out") == _rows(d / "out")
    with pytest.raises(SweepError, match="takes no scheduler"):
        run_sweep(spec, str(tmp_path / "x"), workers=0, scheduler="tcp://127.0.0.1:1")


def test_emulation_runs_are_refused_without_root(tmp_path, monkeypatch):
    from experiments.sweep.runner import SweepError, run_sweep
    spec = parse_spec({"name": "emu", "engines": ["mininet"],
                       "workloads": [{"kind": "coflows", "params": {"coflows": 2}}],
                       "policies": [{"specs": ["fifo"]}]})
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(SweepError, match="needs root"):
        run_sweep(spec, str(tmp_path / "out"), workers=1, progress=False)
    assert not (tmp_path / "out" / "runs").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="the Mininet emulation needs root")
def test_an_emulation_sweep_runs_its_mininet_runs_one_at_a_time_on_one_worker(system,
                                                                               tmp_path):
    """A tiny sweep on both engines, local cluster of two workers: the emulation runs go
    to the one worker that offers mininet=1, one after the other (the engine holds the
    machine's Mininet lock too), the simulator runs beside them; the emulated CCTs are
    the simulator's within TCP's fidelity."""
    from experiments.sweep.runner import run_sweep
    from experiments.sweep.store import open_results
    spec = parse_spec({"name": "emu", "engines": ["sim", "mininet"], "bounds": ["none"],
                       "workloads": [{"kind": "coflows", "seeds": [1], "params": {
                           "coflows": 3, "mean_bytes": 8e6, "load": 0.0}}],
                       "fabrics": [{"ports": 3, "cores": 1, "rate": "20Mbps"}],
                       "policies": [{"specs": ["fifo", "sebf"]}]})
    report = run_sweep(spec, str(tmp_path), workers=2, progress=False)
    assert report.done == 4 and not report.failed, report.format()
    db = open_results(str(tmp_path))
    emu = db.sql("select worker, started_at, started_at + run_seconds, run_key, policy "
                 "from runs where engine = 'mininet' order by started_at").fetchall()
    assert len(emu) == 2 and len({r[0] for r in emu}) == 1
    assert emu[0][2] <= emu[1][1] + 1e-3                    # no overlap
    for _, _, _, key, policy in emu:
        (sim_key,), = db.sql(f"select run_key from runs where engine = 'sim' and "
                             f"policy = '{policy}'").fetchall()
        e, s = (np.array([c for c, in db.sql(f"select cct from coflows where run_key = "
                                             f"'{k}' order by id").fetchall()])
                for k in (key, sim_key))
        assert len(e) == 3 and e.mean() == pytest.approx(s.mean(), rel=0.2)


# ------------------------------------------------------------------------------ CLI
def _cli(*args, cwd=None, timeout=300):
    return subprocess.run([COFLOWEMU, *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=timeout, stdin=subprocess.DEVNULL)


def test_cli_results_json_and_sql_are_one_document(local):
    d, _, _ = local
    out = _cli("results", d / "out", "--json", "--plots", d / "cli-plots")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert len(doc["summary"]) == 6 and len(doc["failed"]) == 4 and doc["plots"]
    out = _cli("results", d / "out", "--json", "--sql",
               "select policy, count(*) as n from runs group by 1 order by 1")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {"columns": ["policy", "n"],
                                      "rows": [["fifo", 4], ["nosuch", 4], ["sebf", 4]]}
    bad = _cli("results", d / "out", "--sql", "select nope from runs")
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.count("\n") == 1 and "Traceback" not in bad.stderr


def test_cli_bad_spec_is_one_line_and_exit_2(tmp_path):
    (tmp_path / "s.toml").write_text('name = "x"\n[[workloads]]\nkind = "coflows"\n'
                                     'params = { coflows = 2 }\n[[policies]]\nspec = "x"\n')
    out = _cli("sweep", tmp_path / "s.toml", "--out", tmp_path / "o")
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.strip() == (f"coflowemu: error: {tmp_path / 's.toml'}: policies[0]: "
                                  f"missing key 'specs': the policies of this group (names, "
                                  f"module:Class, compute+network)")
    (tmp_path / "t.toml").write_text("name = \n")
    out = _cli("sweep", tmp_path / "t.toml", "--out", tmp_path / "o")
    assert out.returncode == 2 and "not valid TOML" in out.stderr and "line 1" in out.stderr


def test_cli_sweep_with_checkpoint_transfers_stores_the_rows_of_coflowemu_run(tmp_path):
    """A redundancy workload whose checkpoints move state (``checkpoint_bytes``): the
    sweep's sim run stores per job and per transfer coflow the rows ``coflowemu run
    --json`` prints for the generated file; engine direct refuses it (free checkpoints
    only), recorded as a failure with its reason."""
    import duckdb
    (tmp_path / "s.toml").write_text(
        'name = "ckpt"\nengines = ["sim", "direct"]\nbounds = ["none"]\n'
        '[[workloads]]\nkind = "redundancy"\nseeds = [3]\n'
        'params = { machines = 4, lam = 0.4, horizon = 20.0, checkpoint_bytes = 2e6 }\n'
        '[[fabrics]]\nports = 4\ncores = 1\nrate = "100Mbps"\n'
        '[[policies]]\nspecs = ["srpt+r+sebf"]\n')
    out = _cli("sweep", tmp_path / "s.toml", "--out", tmp_path / "o", "--workers", 0,
               "--json", "--no-progress")
    report = json.loads(out.stdout)
    assert out.returncode == 0 and report["done"] == 1 and len(report["failed"]) == 1
    assert "checkpoint_bytes > 0" in json.dumps(report["failed"])
    gen = _cli("generate", "--kind", "redundancy", "--seed", 3, "--ports", 4, "--cores", 1,
               "--rate", "100Mbps", "-p", "machines=4", "-p", "lam=0.4", "-p",
               "horizon=20", "-p", "checkpoint_bytes=2e6", "--out", tmp_path / "w.json")
    assert gen.returncode == 0, gen.stderr
    ran = _cli("run", tmp_path / "w.json", "--policy", "srpt+r+sebf", "--json")
    doc = json.loads(ran.stdout)
    assert doc["checkpoint_cost"]["transfers"] > 0
    db = duckdb.connect()
    for table, want in (("jobs", {str(j["id"]): (j["release"], j["completion"])
                                  for j in doc["jobs"]}),
                        ("coflows", {str(c["id"]): (c["release"], c["completion"])
                                     for c in doc["coflows"]})):
        got = {i: (r, c) for i, r, c in db.sql(
            f"select id, release, completion from read_parquet("
            f"'{tmp_path}/o/{table}/*/*.parquet')").fetchall()}
        assert got.keys() == want.keys() and len(want) > 0
        for k in want:
            assert got[k] == pytest.approx(want[k], rel=1e-9), (table, k)


def test_cli_resume_after_a_killed_sweep_gives_the_same_rows(tmp_path):
    """Kill `coflowemu sweep` (and its local cluster) as its first runs are written; the
    re-run completes the store with exactly the rows of every run executed alone, none
    twice."""
    from experiments.sweep.execute import execute
    from experiments.sweep.store import open_results
    (tmp_path / "r.toml").write_text(
        'name = "resume"\n[[workloads]]\nkind = "coflows"\nseeds = 6\n'
        'params = { coflows = [20, 30] }\n[[fabrics]]\nports = 6\ncores = 2\n'
        '[[policies]]\nspecs = ["fifo", "sebf"]\n')
    store = tmp_path / "out"
    runs_dir = store / "runs" / "sweep=resume"
    p = subprocess.Popen([COFLOWEMU, "sweep", tmp_path / "r.toml", "--out", store,
                          "--workers", "1", "--no-progress"], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                         start_new_session=True)
    try:
        deadline = time.time() + 240
        while time.time() < deadline and p.poll() is None:
            if runs_dir.exists() and any(f.endswith(".parquet") for f in os.listdir(runs_dir)):
                break
            time.sleep(0.01)
    finally:
        os.killpg(p.pid, signal.SIGKILL)      # the sweep and its cluster (its session)
        p.wait()
    done = len([f for f in os.listdir(runs_dir) if f.endswith(".parquet")])
    assert 1 <= done < 24, "the sweep was not killed mid-way"
    out = _cli("sweep", tmp_path / "r.toml", "--out", store, "--workers", "1", "--json")
    doc = json.loads(out.stdout)
    assert doc["skipped"] == done and doc["done"] == 24 - done and not doc["failed"]
    cols = ["run_key", "sum_wc", "lp_bound", "ratio", "mean_ct", "p99_ct", "n_items"]
    got = open_results(str(store)).sql(
        f"select {', '.join(cols)} from runs order by run_key").fetchall()
    want = sorted(tuple(o.run[c] for c in cols) for o in map(
        execute, read_spec(str(tmp_path / "r.toml")).runs()))
    assert got == want
    assert len([f for f in os.listdir(runs_dir) if not f.startswith(".")]) == 24


def test_imported_json_records_become_the_same_rows(local, tmp_path):
    """`coflowemu run --json` records imported: the numbers a sweep records for it."""
    from emulate.io.generators import generate
    from emulate.io.traces import write_json
    from experiments.sweep.store import open_results
    d, _, _ = local
    w = generate("coflows", seed=0, ports=4, cores=2, rate_bps=1e9, params={"coflows": 3})
    write_json(w, str(tmp_path / "w.json"))
    out = _cli("run", tmp_path / "w.json", "--policy", "sebf", "--json")
    assert out.returncode == 0, out.stderr
    (tmp_path / "rec.json").write_text(out.stdout)
    out = _cli("results", tmp_path / "store", "--import", tmp_path / "rec.json", "--sweep",
               "old", "--json", "--no-plots")
    assert out.returncode == 0, out.stderr
    assert [r["policy"] for r in json.loads(out.stdout)["summary"]] == ["sebf"]
    got = open_results(str(tmp_path / "store")).sql(
        "select sum_wc, lp_bound, ratio, n_items from runs").fetchall()[0]
    want = open_results(str(d / "out")).sql(
        "select sum_wc, lp_bound, ratio, n_items from runs where policy = 'sebf' and "
        "seed = 0 and p_coflows = 3").fetchall()[0]
    assert got == pytest.approx(want, rel=1e-9)
    bad = _cli("results", tmp_path / "store", "--import", tmp_path / "w.json")
    assert bad.returncode == 2 and "not a run record" in bad.stderr


def test_a_run_whose_worker_dies_is_recorded_and_the_sweep_goes_on(tmp_path):
    """A user policy that kills its process: Dask gives up on the run (KilledWorker),
    which is recorded as failed; the other run completes."""
    (tmp_path / "dies.py").write_text(
        "import os\nfrom controller.policies import Policy\n\n\n"
        "class Dies(Policy):\n    name = 'dies'\n\n"
        "    def plan(self, state):\n        os._exit(3)\n")
    (tmp_path / "s.toml").write_text(
        'name = "die"\n[[workloads]]\nkind = "coflows"\nparams = { coflows = 3 }\n'
        '[[fabrics]]\nports = 4\n[[policies]]\nspecs = ["fifo", "dies:Dies"]\n')
    out = _cli("sweep", "s.toml", "--out", "o", "--workers", "2", "--json", cwd=tmp_path)
    doc = json.loads(out.stdout)
    assert out.returncode == 0 and doc["done"] == 1
    assert [f["label"].split()[-1] for f in doc["failed"]] == ["dies:Dies"]
    assert "worker died" in doc["failed"][0]["error"]


def test_the_shipped_specs_read_and_mapreduce_defaults_are_its_spec():
    """Every spec in experiments/specs/ expands; experiments.mapreduce's defaults are
    experiments/specs/mapreduce.toml run for run (same keys: a store is shared)."""
    from experiments.mapreduce import Config, spec_of
    root = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "experiments", "specs")
    specs = {f: read_spec(os.path.join(root, f)) for f in os.listdir(root)
             if f.endswith(".toml")}
    assert {"coflow.toml", "demo.toml", "demo-emulation.toml", "packing.toml",
            "mapreduce.toml", "mapreduce-emulation.toml", "moldable.toml", "msjo.toml",
            "msjo-emulation.toml", "redundancy.toml"} <= set(specs)
    assert all(s.runs(version="v") for s in specs.values())
    shipped = [r.key for r in specs["mapreduce.toml"].runs(version="v")]
    assert sorted(r.key for r in spec_of(Config()).runs(version="v")) == sorted(shipped)
    emu = [r.key for r in specs["mapreduce-emulation.toml"].runs(version="v")]
    assert sorted(r.key for r in spec_of(Config(engine="mininet", seeds=(0,))).runs(
        version="v")) == sorted(emu)
    # the papers' sizes
    assert len(specs["moldable.toml"].runs(version="v")) == 4 * 5 * 40 * 6
    red = specs["redundancy.toml"].runs(version="v")
    assert {r.workload["params"]["horizon"] for r in red} == {100000.0}
    assert max(r.workload["params"]["lam"] for r in red) == 2.5


def test_packing_offline_runs_are_the_policies_own_schedules():
    """experiments/specs/packing.toml runs its offline parts in the joint simulator with
    each compute policy alone: offline, that gives exactly the policy's own schedule."""
    from controller.compute import get_compute_policy
    from emulate.engines import get_engine
    from emulate.io.generators import generate
    root = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "experiments", "specs")
    shipped = read_spec(os.path.join(root, "packing.toml")).runs(version="v")
    assert {r.part for r in shipped} == {
        "preemptive", "nonpreemptive", "alpha", "online-preemptive",
        "online-nonpreemptive", "load-preemptive", "load-nonpreemptive"}
    assert {r.engine for r in shipped if not r.part.startswith(("online", "load"))} == \
        {"sim"}
    for pinned, policies in ((True, ("synchpack-3", "psrs", "tetris-p")),
                             (False, ("jsq-mw", "tetris-np"))):
        w = generate("packing", seed=1, ports=4, cores=1,
                     params={"n_jobs": 8, "scheme": "random", "pinned": pinned})
        for name in policies:
            direct = get_compute_policy(name).schedule(w.compute).weighted_completion
            assert get_engine("sim").run(w, name).total_weighted_job_completion == \
                pytest.approx(direct, rel=1e-12)


def test_parts_are_separate_cross_products_and_errors_name_the_part():
    doc = {"name": "p", "fabrics": [{"ports": 4}],
           "parts": [{"name": "a", "workloads": [{"kind": "coflows", "seeds": 2}],
                      "policies": [{"specs": ["fifo", "sebf"]}]},
                     {"name": "b", "bounds": ["none"], "workloads": [{"kind": "jobs"}],
                      "policies": [{"specs": "fifo"}]}]}
    runs = parse_spec(doc).runs(version="v")
    assert [(r.part, r.workload["kind"], r.policy) for r in runs] == [
        ("a", "coflows", "fifo"), ("a", "coflows", "sebf"), ("a", "coflows", "fifo"),
        ("a", "coflows", "sebf"), ("b", "jobs", "fifo")]
    assert runs[-1].bounds == () and runs[0].bounds == ("auto",)
    doc["parts"][1]["policies"] = [{"specs": []}]
    with pytest.raises(SpecError, match=r"parts\[1\]\.policies\[0\]\.specs"):
        parse_spec(doc)
    doc["parts"][1] = {"name": "a", "policies": [{"specs": "fifo"}]}
    with pytest.raises(SpecError, match=r"parts\[1\]\.name: each part needs a name of its"):
        parse_spec(doc)
