"""The papers' experiments as sweeps: each shipped spec made tiny, run in process, and its
tables (from the store only) checked against the algorithms called directly; the
``python -m experiments.<paper>`` command at the process boundary."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from experiments.sweep.runner import completed_sweep
from experiments.sweep.spec import parse_spec, read_doc


def _run(paper, shrink, tmp_path):
    """``paper``'s shipped spec document changed by ``shrink``, run in this process; the
    store and the spec."""
    doc = shrink(read_doc(paper.path))
    spec = parse_spec(doc, source=paper.path)
    return completed_sweep(spec, str(tmp_path), workers=0, progress=False), spec


def _cells(text: str, first: str) -> list[str]:
    """The cells of the first markdown row of ``text`` whose first cell is ``first``."""
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and cells[0] == first:
            return cells
    raise AssertionError(f"no row {first!r} in\n{text}")


def _assert_plots(paper, db, spec, tmp_path):
    paper.plot(db, spec, str(tmp_path / "p.png"))
    assert (tmp_path / "p.png").read_bytes().startswith(b"\x89PNG")


def test_moldable_ratios_are_sums_of_values_over_sums_of_bounds(tmp_path):
    from controller.jobmodels.moldable import moldable_instance
    from controller.moldable import schedule
    from controller.moldable.bounds import makespan_bound, minsum_lp
    from emulate.io.generators import generate
    from experiments.moldable import PAPER

    def tiny(doc):
        doc["workloads"][0].update(seeds=2, params={"family": ["weakly", "cirne-berman"],
                                                    "n_jobs": [4, 8]})
        doc["fabrics"] = [{"ports": 8, "cores": 1}]
        doc["policies"][0]["shuffles"] = 1
        return doc
    db, spec = _run(PAPER, tiny, tmp_path)
    text = PAPER.tables(db, spec)
    algos = ["demt", "gang", "sequential", "list-shelf", "list-wlptf", "list-saf"]
    assert "| jobs | " + " | ".join(algos) + " |" in text
    # the cirne-berman minsum row of 8 jobs, computed here from the schedules
    insts = [moldable_instance(generate("moldable", seed=s, ports=8, cores=1, params={
        "n_jobs": 8, "family": "cirne-berman"})) for s in (0, 1)]
    block = text[text.index("**cirne-berman**, minsum"):]
    cells = _cells(block, "8")
    for algo, cell in zip(algos, cells[1:]):
        opts = {"shuffles": 1} if algo == "demt" else {}
        v = np.array([schedule(a, algo, **opts).minsum for a in insts])
        b = np.array([minsum_lp(a).value for a in insts])
        assert cell == f"{v.sum() / b.sum():.2f} [{(v / b).min():.2f}, {(v / b).max():.2f}]"
        assert (v >= b * (1 - 1e-9)).all()
    mk = text[text.index("**weakly**, makespan"):]
    a0 = moldable_instance(generate("moldable", seed=0, ports=8, cores=1, params={
        "n_jobs": 4, "family": "weakly"}))
    assert schedule(a0, "gang").makespan >= makespan_bound(a0).value
    assert _cells(mk, "4")[0] == "4"
    _assert_plots(PAPER, db, spec, tmp_path)


def test_msjo_tables_are_mean_ratios_to_the_lp_of_each_part(tmp_path):
    from controller.msjo import get_policy
    from controller.msjo.lp import solve_cls_lp, solve_task_lp
    from emulate.io.generators import generate_instance
    from experiments.msjo import PAPER

    def tiny(doc):
        doc = PAPER.quick(doc)
        for part in doc["parts"]:
            p = part["workloads"][0]["params"]
            p["n_jobs"] = [3, 5] if isinstance(p["n_jobs"], list) else 3
            part["workloads"][0]["seeds"] = 2
            part["fabrics"] = [{"ports": 4, "cores": 1}]
            if part["name"] == "semionline":
                part["policies"][0]["interval"] = [5.0, 10.0]
        return doc
    db, spec = _run(PAPER, tiny, tmp_path)
    text = PAPER.tables(db, spec)
    for part in ("jobs", "uniform", "machines100", "error", "tasks", "semionline"):
        assert f"### {part}:" in text
    cs = [generate_instance("msjo", seed=s, ports=4, params={"scenario": "random",
                                                             "n_jobs": 5}) for s in (0, 1)]
    jobs = _cells(text[text.index("### jobs"):], "5")
    for name, cell in zip(["mars", "mares", "huwf", "hjwf"], jobs[1:]):
        want = np.mean([get_policy(name)(c.arrays).job_cost / solve_cls_lp(c.arrays).value
                        for c in cs])
        assert cell == f"{want:.3f}"
    semi = text[text.index("### semionline"):]
    c3 = [generate_instance("msjo", seed=s, ports=4, params={"scenario": "random",
                                                             "n_jobs": 3}) for s in (0, 1)]
    want = np.mean([get_policy("so-mars")(c.arrays, interval=10.0).job_cost /
                    solve_cls_lp(c.arrays).value for c in c3])
    row = _cells(semi, "10")
    assert row[1] == f"{want:.3f}" and row[2:] == _cells(semi, "5")[2:]   # offline: same
    tw = [generate_instance("msjo", seed=s, ports=4, params={
        "scenario": "random", "n_jobs": 3, "mean_maps": 6.0, "task_weights": True})
        for s in (0, 1)]
    task = text[text.index("### tasks"):]
    row = next(ln for ln in task.splitlines() if ln.startswith("| ") and "(3)" in ln)
    want = np.mean([get_policy("stf")(c.arrays).task_cost / solve_task_lp(c.arrays).value
                    for c in tw])
    assert row.split("|")[4].strip() == f"{want:.3f}"      # t-mars, h-mares, stf


def test_redundancy_tables_count_flowtimes_from_the_jobs_rows(tmp_path):
    from controller.redundancy import simulate
    from emulate.io.generators import generate_instance
    from experiments.redundancy import PAPER

    def tiny(doc):
        doc = PAPER.quick(doc)
        for part in doc["parts"]:
            w = part["workloads"][0]["params"]
            w.update(machines=6, horizon=300.0)
            w["lam"] = [0.05, 0.1] if part["name"] != "assign" else [0.05]
            if part["name"] == "lambda":
                w["lam"] = [0.05, 1.0]      # the cdf table's lam is 1
        return doc
    db, spec = _run(PAPER, tiny, tmp_path)
    text = PAPER.tables(db, spec)
    inst = generate_instance("redundancy", seed=0, params={"machines": 6, "horizon": 300.0,
                                                           "lam": 1.0})
    f = simulate(inst, "srpt").flowtime
    q = np.quantile(f, [0.5, 0.9, 0.99])
    assert _cells(text, "srpt") == ["srpt", f"{np.mean(f <= 40):.1%}", f"{f.mean():.2f}",
                                    f"{q[0]:.2f}", f"{q[1]:.2f}", f"{q[2]:.2f}"]
    inst = generate_instance("redundancy", seed=0, params={"machines": 6, "horizon": 300.0,
                                                           "lam": 0.1})
    f = simulate(inst, "laps+r", beta=0.2).flowtime
    small = inst.work <= np.median(inst.work)
    beta = text[text.index("### beta"):]
    row = next(ln for ln in beta.splitlines() if ln.startswith("| 0.1 | 0.2 |"))
    assert row == (f"| 0.1 | 0.2 | {f.mean():.2f} | {f[small].mean():.2f} | "
                   f"{f[~small].mean():.2f} |")
    assert "| 0.05 | srpt | " in text[text.index("### assign"):]
    _assert_plots(PAPER, db, spec, tmp_path)


def test_packing_tables_give_the_policies_own_online_schedules(tmp_path):
    from controller.compute import get_compute_policy
    from emulate.io.generators import generate
    from experiments.packing import PAPER

    def tiny(doc):
        doc = PAPER.quick(doc)
        for part in doc["parts"]:
            w = part["workloads"][0]
            w["params"]["n_jobs"] = 6
            if isinstance(w["params"].get("scheme"), list):
                w["params"]["scheme"] = ["equal", "random"]
        return doc
    db, spec = _run(PAPER, tiny, tmp_path)
    text = PAPER.tables(db, spec)
    cw = generate("packing", seed=0, ports=6, cores=1, params={
        "n_jobs": 6, "scheme": "random", "load": 0.8}).compute
    a = cw.arrays
    gap = float(np.mean(np.diff(np.unique(a.job_release))))
    want = {}
    for label, opts in (("synchpack-2", {"tau0": 2 * gap, "growth": 2.0}),
                        ("synchpack-2/fixed", {"tau0": gap, "growth": 1.0}),
                        ("jsq-mw", {}), ("tetris-np", {})):
        s = get_compute_policy(label.split("/")[0]).schedule(cw, online=True, **opts)
        want[label] = s.weighted_delay / a.job_weight.sum()
    block = text[text.index("Online, non-preemptive;"):]
    row = _cells(block, "random")
    assert row[1:5] == [f"{want[k]:.1f}" for k in ("synchpack-2", "synchpack-2/fixed",
                                                    "jsq-mw", "tetris-np")]
    for title in ("Offline, preemptive", "Offline, non-preemptive, with placement",
                  "remote penalty", "Online, preemptive;", "load sweep"):
        assert title in text


def test_mapreduce_tables_and_the_per_job_error_against_the_simulator(tmp_path):
    """The sim tables are the engine's runs; the emulation's error table pairs each run
    with its simulator twin job by job (emulated rows made here from the simulator's,
    job ``i`` of each run ``1 + 0.02 i`` times slower: no root needed); a pair with no
    recorded run is ``-``."""
    import dataclasses

    from emulate.engines import RunOptions, get_engine
    from experiments import mapreduce as mr
    from experiments.sweep.execute import execute, parameter_columns
    from experiments.sweep.store import write_outcome
    cfg = mr.Config(jobs=3, seeds=(0,), compute=("fifo", "psrs"), network=("sebf", "fair"),
                    out=str(tmp_path / "sim"), workers=0)
    rows, text = mr.run(cfg, verbose=False)
    assert len(rows) == 8
    for r in rows:
        res = get_engine("sim").run(mr.make_workload(cfg, r["setting"], 0), r["pair"],
                                    RunOptions())
        assert r["weighted_completion"] == pytest.approx(
            res.to_json()["total_weighted_job_completion"], rel=1e-9)
    batch = [r for r in rows if r["setting"] == "batch"]
    best = min(r["weighted_completion"] for r in batch)
    assert _cells(text[text.index("batch:"):], "psrs")[1:] == [
        f"{r['weighted_completion']:.1f}{'*' if r['weighted_completion'] == best else ''} "
        f"(x{r['ratio']:.2f})" for r in batch if r["compute"] == "psrs"]

    emu = dataclasses.replace(cfg, engine="mininet", out=str(tmp_path / "emu"))
    spec = mr.spec_of(emu)
    for run in spec.runs():
        if run.engine == "sim":
            write_outcome(os.path.join(emu.out, "store"), spec.name, execute(run))
        elif run.policy != "psrs+fair":
            out = execute(dataclasses.replace(run, engine="sim"))
            out.run.update(parameter_columns(run))
            out.jobs = [{**j, "run_key": run.key, "jct": j["jct"] * (1 + 0.02 * i)}
                        for i, j in enumerate(sorted(out.jobs, key=lambda j: j["id"]))]
            write_outcome(os.path.join(emu.out, "store"), spec.name, out)
    rows, text = mr.run(emu, verbose=False, tables_only=True)
    assert len(rows) == 6 and all(r["job_error_median"] == pytest.approx(0.02) and
                                  r["job_error_max"] == pytest.approx(0.04) for r in rows)
    err = text[text.index("batch: per-job"):]
    assert _cells(err, "fifo")[1:] == ["2.0% / 4.0%"] * 2
    assert _cells(err, "psrs")[1:] == ["2.0% / 4.0%", "-"]
    assert _cells(text[text.index("batch on the emulation"):], "psrs")[2] == "-"


def test_a_paper_command_runs_its_spec_and_reprints_its_tables_from_the_store(tmp_path):
    exe = [sys.executable, "-m", "experiments.msjo", "--quick", "--out", str(tmp_path),
           "--workers", "0"]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    first = subprocess.run(exe, capture_output=True, text=True, cwd=root, timeout=600)
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith("### jobs: ratio to CLS-LPP")
    again = subprocess.run(exe + ["--tables-only"], capture_output=True, text=True,
                           cwd=root, timeout=600)
    assert again.returncode == 0 and again.stdout == first.stdout
    with open(tmp_path / "tables" / "msjo-quick.md") as fh:
        assert fh.read() == first.stdout
    # a store that lost a run's job rows, or holds none of the spec's runs: one line,
    # exit 2
    lost = sorted((tmp_path / "jobs" / "sweep=msjo-quick").glob("*.parquet"))[0]
    lost.unlink()
    bad = subprocess.run(exe + ["--tables-only"], capture_output=True, text=True, cwd=root,
                         timeout=600)
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.count("\n") == 1 and lost.stem in bad.stderr
    assert "0 rows in jobs" in bad.stderr and "Traceback" not in bad.stderr
    other = subprocess.run([sys.executable, "-m", "experiments.msjo", "--out",
                            str(tmp_path), "--tables-only"],
                           capture_output=True, text=True, cwd=root, timeout=600)
    assert other.returncode == 2 and other.stderr.count("\n") == 1
    assert "no completed run of sweep 'msjo'" in other.stderr


@pytest.mark.parametrize("name", ["packing", "moldable", "msjo", "redundancy"])
def test_the_quick_specs_are_small_versions_of_the_shipped_ones(name):
    import importlib
    paper = importlib.import_module(f"experiments.{name}").PAPER
    full, quick = paper.spec().runs(version="v"), paper.spec(quick=True).runs(version="v")
    assert 0 < len(quick) < len(full)
    assert {r.part for r in quick} == {r.part for r in full}
    assert {r.policy for r in quick} == {r.policy for r in full}
