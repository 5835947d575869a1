"""Multi-stage jobs on real switches: the LP policies' job objectives, offline and online.

Needs root (network namespaces, OVS); skipped otherwise, like tests/test_emulation_policies.py.

The workload (:func:`two_jobs`, 4 hosts x 2 cores at 20 Mbit/s, every flow into host 0):
job ``X`` (weight 10) is the chain ``X1 -> X2`` released at 0.3 s, job ``Y`` (weight 1)
the chain ``Y1 -> Y2 -> Y3`` released at 0, whose coflows weigh 5 each (``X``'s 1). The
objectives then disagree about which job goes first, and the simulator shows it:

* ``weighted`` (``sum w_k C_k``, the coflows' weights): ``Y`` first;
* ``jobs`` (LP (13), ``sum omega_g C_g``, the jobs' weights): ``X`` first. With ``lp-single``
  (one core, one downlink into host 0) ``Y1`` starts at 0, is preempted when ``X`` arrives
  at 0.3 s, and resumes after ``X2``: ``X`` 2.9 s, ``Y`` 4.48 s (``weighted``: ``Y`` 1.88 s,
  ``X`` 4.48 s);
* ``makespan`` (LP (14), then ``sum C_k``): ``Y`` first again (3.4 s, ``X`` 4.48 s).

Each case runs the workload on the switches and checks that the jobs complete in the
simulator's order, by the simulator's margin (at least 0.3 s here), each job's completion
time within ``JOB_RTOL`` of the simulator's (measured 0.7-3.8 % on the loaded 2-core VM,
load 4-6), and that the measured segments pass the schedule verifier (precedence
included; tests/test_emulation_policies.py ``verify_measured``). The sizes are chosen away
from near-ties: in the simulator, flows up to 2 % larger and a release 5-35 ms later change
no job's completion by more than 2.3 % in any case here (lp-flow online under ``jobs``
moves 10 %: not a case).

Online mode re-solves the LP at every release with the bytes the switches have left
(``controller.policies.lp_list``): the ``lp-single`` online case checks from the measured
bytes that ``Y1`` really sent before 0.3 s and then stopped while ``X`` ran. Every LP policy
runs online here once (``lp-flow``, ``lp-coflow``, ``lp-single``), and the installed
``coflowemu`` runs one case with ``--objective jobs --mode online --json`` against its own
simulator.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from controller.model import Coflow, Flow, Job, Workload
from topologies.fabric import Fabric

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_emulation_policies import (MB, MISS_RUNS, RATE, ROOT, assert_clean,  # noqa: E402
                                     clipped_rate, run_again_after_timeouts, run_both,
                                     run_emulated, verify_measured)

JOB_RTOL = 0.15
"""Bound on ``|JCT_emulated / JCT_simulated - 1|`` per job (as the policy-family tests'
per-coflow bound)."""

pytestmark = pytest.mark.skipif(os.geteuid() != 0,
                                reason="the Mininet emulation needs root (namespaces, OVS)")


def two_jobs() -> Workload:
    """Job X (weight 10, X1 -> X2, at 0.3 s) against job Y (weight 1, Y1 -> Y2 -> Y3,
    coflow weights 5, at 0); module docstring."""
    return Workload(Fabric(ports=4, cores=2, rate_bps=RATE), [
        Coflow("X1", [Flow(2, 0, 1.6 * MB), Flow(3, 0, 2.2 * MB)], release=0.3),
        Coflow("X2", [Flow(2, 0, 1.6 * MB), Flow(1, 0, 1.1 * MB)], release=0.3),
        Coflow("Y1", [Flow(2, 0, 1.1 * MB), Flow(1, 0, 1.1 * MB)], weight=5.0),
        Coflow("Y2", [Flow(1, 0, 1.1 * MB), Flow(3, 0, 0.7 * MB)], weight=5.0),
        Coflow("Y3", [Flow(2, 0, 0.7 * MB)], weight=5.0),
    ], precedence=[("X1", "X2"), ("Y1", "Y2"), ("Y2", "Y3")],
        jobs=[Job("X", ("X1", "X2"), weight=10.0), Job("Y", ("Y1", "Y2", "Y3"), weight=1.0)])


def job_times(w: Workload, completion: np.ndarray) -> np.ndarray:
    """Per job: completion - the job's release (its first coflow's)."""
    a = w.arrays
    return np.array([completion[g] - a.release[a.job_of == g].min()
                     for g in range(len(w.jobs))])


def assert_same_job_order(w, sim, emu, first: str):
    """The jobs finish in the simulator's order (``first`` first), by the simulator's
    margin within 0.15 s, each job's completion time within ``JOB_RTOL``."""
    ids = [j.id for j in w.jobs]
    s, e = sim.job_completion, emu.job_completion
    assert ids[int(np.argmin(s))] == first, ("premise", dict(zip(ids, s)))
    assert ids[int(np.argmin(e))] == first, dict(zip(ids, e))
    gap_s, gap_e = abs(s[0] - s[1]), abs(e[0] - e[1])
    assert gap_s > 0.3 and abs(gap_e - gap_s) < 0.15, (dict(zip(ids, s)), dict(zip(ids, e)))
    err = np.abs(job_times(w, e) / job_times(w, s) - 1)
    assert err.max() < JOB_RTOL, (dict(zip(ids, s)), dict(zip(ids, e)))


# (policy, mode, objective) -> the job the simulator and the switches finish first
CASES = {
    ("lp-single", "offline", "jobs"): "X",
    ("lp-single", "online", "jobs"): "X",
    ("lp-single", "online", "makespan"): "Y",
    ("lp-flow", "offline", "makespan"): "Y",
    ("lp-flow", "online", "weighted"): "Y",
}
"""``lp-coflow`` online under ``jobs`` runs through the installed command (last test)."""


@pytest.mark.parametrize("case", list(CASES), ids=["-".join(c) for c in CASES])
def test_lp_objectives_order_the_jobs_on_real_switches(system, case):
    policy, mode, objective = case
    w = two_jobs()
    sim, emu = run_both(w, policy, mode=mode, objective=objective)
    assert emu.engine == "mininet"
    for attempt in range(1, MISS_RUNS + 1):
        try:
            verify_measured(w, emu)          # bytes, releases, precedence, links
            assert_same_job_order(w, sim, emu, CASES[case])
            break
        except AssertionError as e:
            # as the contest (test_emulation_policies): a miss with TCP timeouts in the
            # run's counters is run again. A flow resumed after a long pause can wait for
            # a backed-off retransmission timer (docs/emulation-fidelity.md, "The drain
            # class": lp-single online under jobs, Y 0.52 s late in one clean-clone CI run
            # on 2026-11-27; MISS_RUNS)
            run_again_after_timeouts(attempt, emu, (e, emu.extra["tcp"]), "jobs")
            emu = run_emulated(w, policy, mode=mode, objective=objective)
    if policy == "lp-single" and objective == "jobs":
        # Y1 started alone at 0 and was preempted by X at 0.3 s (offline: X is first in
        # the list from the start; online: the LP re-solved at X's release with the bytes
        # the switches had left): Y1 sent at the line rate before, nothing while X ran,
        # and finished after X
        s, y1 = emu.segments, 2
        flows = np.flatnonzero(w.arrays.coflow == y1)
        before = sum(clipped_rate(s, int(f), 0.0, 0.28) for f in flows)
        during = sum(clipped_rate(s, int(f), 0.5, emu.job_completion[0] - 0.2) for f in flows)
        assert before > 0.8 * RATE and during < 0.05 * RATE, (before, during)
        assert emu.coflow_completion[y1] > emu.job_completion[0]
        # Y1's resume waited until ovs-vswitchd had emptied its datapath cache
        # (controller.datapath: the barrier answers for the tables only)
        assert emu.extra["controller"]["datapath_purge_ms"]["n"] >= 1, emu.extra["controller"]


def test_the_objectives_disagree_in_the_simulator():
    """The premise of the cases: on the same workload the three objectives give
    ``lp-single`` three schedules, and the job order follows the objective."""
    from controller.policies import get_policy
    from emulate.sim.flowsim import simulate
    w = two_jobs()
    done = {o: simulate(w, get_policy("lp-single", objective=o)).job_completion
            for o in ("weighted", "jobs", "makespan")}
    np.testing.assert_allclose(done["weighted"], [4.48, 1.88], atol=0.01)
    np.testing.assert_allclose(done["jobs"], [2.9, 4.48], atol=0.01)
    np.testing.assert_allclose(done["makespan"], [4.48, 3.4], atol=0.01)


def test_the_installed_command_runs_a_job_objective_online_on_the_switches(system, tmp_path):
    """``coflowemu run --engine mininet --objective jobs --mode online --json``: one JSON
    document whose jobs match ``--engine sim``'s for the same options."""
    from emulate.io.traces import write_json
    w = two_jobs()
    path = tmp_path / "jobs.json"
    write_json(w, str(path))
    exe = os.path.join(os.path.dirname(sys.executable), "coflowemu")
    docs = {}
    for engine in ("sim", "mininet"):
        r = subprocess.run([exe, "run", str(path), "--engine", engine, "--policy", "lp-coflow",
                            "--mode", "online", "--objective", "jobs", "--json",
                            "--no-lp-bound"], capture_output=True, text=True, cwd=ROOT,
                           timeout=300)
        assert r.returncode == 0, r.stderr
        docs[engine] = json.loads(r.stdout)        # exactly one JSON document
    assert_clean()
    sim, emu = (np.array([j["completion"] for j in docs[e]["jobs"]]) for e in ("sim", "mininet"))
    assert [j["id"] for j in docs["mininet"]["jobs"]] == ["X", "Y"]
    assert docs["mininet"]["engine"] == "mininet"
    np.testing.assert_allclose(sim, [3.48, 1.88], atol=0.01)       # the simulator's order
    err = np.abs(job_times(w, emu) / job_times(w, sim) - 1)
    assert err.max() < JOB_RTOL, (sim, emu)
    total = sum(j["weight"] * j["completion"] for j in docs["mininet"]["jobs"])
    assert docs["mininet"]["total_weighted_job_completion"] == pytest.approx(total)
