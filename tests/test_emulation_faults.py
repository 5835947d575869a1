"""Faults in the emulation: races, lost peers, intruders, leftovers (issue 19).

The parts that need no root run everywhere (the controller process against fake
switches and fake agents over its real sockets); the parts that build a Mininet network
are skipped without root (each run takes the machine's Mininet lock itself:
:mod:`emulate.mininet.lock`).
"""
from __future__ import annotations

import contextlib
import glob
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

from benchmark_modules import benchmark

needs_root = pytest.mark.skipif(os.geteuid() != 0,
                                reason="needs root (Mininet, Open vSwitch)")


def test_the_ready_barrier_reply_is_handled_before_the_switch_reaches_main_state():
    import os_ken.base.app_manager  # noqa: F401  (import order: see controller.app)
    from os_ken.controller import ofp_event
    from os_ken.controller.handler import CONFIG_DISPATCHER, MAIN_DISPATCHER

    from controller.app import CoflowController
    # the barrier is sent from the CONFIG-state features handler; os-ken moves the switch
    # to MAIN in another thread, so the reply may be dispatched in either state
    callers = CoflowController.switch_features.callers
    assert CONFIG_DISPATCHER in callers[ofp_event.EventOFPSwitchFeatures].dispatchers
    replies = CoflowController.barrier_reply.callers[ofp_event.EventOFPBarrierReply]
    assert {CONFIG_DISPATCHER, MAIN_DISPATCHER} <= set(replies.dispatchers)


# ---------------------------------------------------------------------- killed engine
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

ENGINE_SCRIPT = textwrap.dedent('''
    from controller.model import Coflow, Flow, Workload
    from topologies.fabric import Fabric
    from emulate.mininet.engine import run_mininet
    w = Workload(Fabric(ports=4, cores=2, rate_bps=20e6),
                 [Coflow("long", [Flow(0, 1, 40e6), Flow(2, 3, 40e6), Flow(1, 2, 40e6)])])
    run_mininet(w, "fifo")
    print("finished")
''')


@pytest.fixture(scope="module")
def system(system):
    """The shared one (tests/conftest.py), and after the faults' runs not even a stale
    file of ours: what a SIGKILL leaves, `clean` removes."""
    yield
    from emulate.mininet.clean import clean, leftovers
    clean()
    assert leftovers(files=True, settled=True) == NOTHING


NOTHING = {"bridges": [], "interfaces": [], "run_dirs": [], "files": []}


def engine_run_dir(p, timeout: float = 60.0) -> str:
    """The run directory of engine process ``p`` once it has recorded its controller."""
    from emulate.mininet.clean import STATE_DIR, read_state
    deadline = time.time() + timeout
    while time.time() < deadline and p.poll() is None:
        dirs = [d for d in (os.listdir(STATE_DIR) if os.path.isdir(STATE_DIR) else [])
                if d.startswith(f"run-{p.pid}-")]
        if dirs:
            d = os.path.join(STATE_DIR, dirs[0])
            if read_state(d).get("procs"):
                return d
        time.sleep(0.01)
    raise AssertionError(p.stdout.read().decode() if p.poll() is not None else "no run")


@needs_root
def test_an_engine_killed_during_build_leaves_no_controller_and_clean_leaves_nothing(system):
    from emulate.mininet.clean import clean, is_ours, leftovers, read_state
    p = subprocess.Popen([sys.executable, "-c", ENGINE_SCRIPT], cwd=ROOT,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    run_dir = engine_run_dir(p)
    procs = read_state(run_dir)["procs"]   # the controller, still importing
    p.kill()
    p.wait()
    deadline = time.time() + 5
    while time.time() < deadline and any(is_ours(pid, m) for pid, m in procs):
        time.sleep(0.05)
    assert [pid for pid, m in procs if is_ours(pid, m)] == []   # without `clean`
    clean()
    assert leftovers(files=True, settled=True) == NOTHING


# ---------------------------------------------------------------------- lost agents
def two_coflows():
    """``quick`` (0 -> 1) finishes in 0.1 s; ``long`` (2 -> 3) takes 16 s."""
    from controller.model import Coflow, Flow, Workload
    from topologies.fabric import Fabric
    return Workload(Fabric(ports=4, cores=1, rate_bps=20e6), [
        Coflow("quick", [Flow(0, 1, 0.2e6)]), Coflow("long", [Flow(2, 3, 40e6)])],
        name="two")


def agent_pid(run_dir: str, host: int) -> int | None:
    from emulate.mininet.clean import command_line, read_state
    for pid, marker in read_state(run_dir).get("procs", []):
        if marker == "emulate.mininet.agent" and f"--host {host} " in command_line(pid) + " ":
            return pid
    return None


def when_coflow_done(coflow: str, action, timeout: float = 60.0) -> threading.Thread:
    """In a thread: once this process's run logs ``coflow`` done, ``action(run_dir)``."""
    from emulate.mininet.clean import STATE_DIR

    def watch():
        deadline = time.time() + timeout
        while time.time() < deadline:
            for d in glob.glob(os.path.join(STATE_DIR, f"run-{os.getpid()}-*")):
                with contextlib.suppress(OSError):
                    with open(os.path.join(d, "decisions.jsonl")) as fh:
                        if f'"coflow_done","coflow":"{coflow}"' in fh.read().replace(
                                ", ", ","):
                            action(d)
                            return
            time.sleep(0.05)
    t = threading.Thread(target=watch, daemon=True)
    t.start()
    return t


@needs_root
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGSTOP], ids=["killed", "stopped"])
def test_a_lost_agent_fails_the_run_fast_naming_its_host_and_keeps_what_finished(system, sig):
    from emulate.mininet.engine import EmulationError, run_mininet
    when = {}

    def hit(run_dir):
        when["t"] = time.time()
        os.kill(agent_pid(run_dir, 3), sig)

    when_coflow_done("quick", hit, timeout=180.0)
    with pytest.raises(EmulationError) as err:
        run_mininet(two_coflows(), "fifo")
    assert "t" in when, f"the run failed before the fault: {err.value}"
    failed_after = time.time() - when["t"]
    assert "host 3" in str(err.value)
    assert failed_after < 15.0            # a stopped agent hung the run for 109 s
    part = err.value.partial
    assert part is not None and part.incomplete
    assert np.isfinite(part.coflow_completion[0]) and np.isnan(part.coflow_completion[1])
    doc = json.loads(json.dumps(part.to_json(), allow_nan=False))
    assert doc["incomplete"] and doc["finished_coflows"] == 1
    assert [c["completion"] is None for c in doc["coflows"]] == [False, True]


# ---------------------------------------------------------------------- intruders
def start_controller(tmp_path, n_hosts: int = 2, n_cores: int = 1,
                     ready_timeout: float = 30.0):
    """The real controller process (no root needed) on a run directory of its own,
    listening for switches on ``<tmp>/of/of.sock``; returns (process, config)."""
    import pickle

    from controller.model import Coflow, Flow, Workload
    from controller.policies import get_policy
    from controller.runtime import RunConfig
    from emulate.mininet.engine import start_python
    from topologies.fabric import Fabric
    run_dir = tmp_path / "run"
    run_dir.mkdir(mode=0o700)
    (tmp_path / "of").mkdir(mode=0o700)
    w = Workload(Fabric(ports=n_hosts, cores=n_cores, rate_bps=20e6),
                 [Coflow("a", [Flow(0, 1, 1e6)])])
    cfg = RunConfig(run_dir=str(run_dir), api_path=str(run_dir / "api.sock"), ofp_port=0,
                    ofp_path=str(tmp_path / "of" / "of.sock"), n_hosts=n_hosts,
                    n_cores=n_cores, ready_timeout=ready_timeout)
    (run_dir / "config.json").write_text(cfg.to_json())
    (run_dir / "workload.pkl").write_bytes(pickle.dumps(w))
    (run_dir / "policy.pkl").write_bytes(pickle.dumps(get_policy("fifo")))
    with open(run_dir / "controller.out", "wb") as out:
        p = start_python("controller.app", [str(run_dir)], run_dir=str(run_dir), stdout=out)
    return p, cfg


def test_a_second_switch_claiming_a_connected_core_is_rejected_and_fails_the_run(tmp_path):
    FakeSwitch = benchmark("faults").FakeSwitch
    from topologies.mininet_topo import DPID_BASE
    p, cfg = start_controller(tmp_path)
    try:
        real = FakeSwitch(cfg.ofp_path, DPID_BASE + 1, timeout=30)
        assert real.configured.wait(30)
        deadline = time.time() + 10
        while real.flow_mods < 3 and time.time() < deadline:   # forwarding installed
            time.sleep(0.05)
        assert real.flow_mods >= 3
        intruder = FakeSwitch(cfg.ofp_path, DPID_BASE + 1)
        assert intruder.closed.wait(10)          # refused ...
        assert p.wait(20) == 1                   # ... and the run failed
    finally:
        if p.poll() is None:
            p.kill()
    assert intruder.flow_mods == 0
    result = json.loads((tmp_path / "run" / "result.json").read_text())
    assert not result["ok"] and "second OpenFlow connection" in result["error"]
    assert "core 0" in result["error"]
    log = (tmp_path / "run" / "controller.log").read_text()
    assert "rejected a second OpenFlow connection" in log


def test_a_run_never_ready_logs_where_every_thread_waits(tmp_path):
    """A switch that connects and never completes the OpenFlow handshake (CI saw both
    cores of a run connected at Open vSwitch's end and never ready at the controller's):
    the run fails after ``ready_timeout`` and its log shows every thread's stack, the
    connection's reader among them."""
    p, cfg = start_controller(tmp_path, ready_timeout=3.0)
    try:
        silent = benchmark("faults").connect(cfg.ofp_path, timeout=30)    # never says hello
        try:
            assert p.wait(60) == 1
        finally:
            silent.close()
    finally:
        if p.poll() is None:
            p.kill()
    result = json.loads((tmp_path / "run" / "result.json").read_text())
    assert not result["ok"]
    assert "not ready after 3 s" in result["error"] and "cores [0] missing" in result["error"]
    log = (tmp_path / "run" / "controller.log").read_text()
    assert "where every thread of the controller waits" in log
    assert "thread os-ken:" in log and "thread MainThread:" in log
    assert "in _recv_loop" in log              # the silent switch's connection, waiting


# ---------------------------------------------------------------------- import path
def test_root_children_import_nothing_from_the_working_directory(tmp_path, monkeypatch):
    """A ``pickle.py`` where the user runs ``sudo coflowemu`` must not be imported as root
    (the controller imports pickle first thing); a user policy's own module still is."""
    from emulate.mininet.engine import policy_dirs, start_python
    evil = tmp_path / "cwd"
    evil.mkdir()
    marker = tmp_path / "imported"
    (evil / "pickle.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    (evil / "json.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    monkeypatch.chdir(evil)
    monkeypatch.setenv("PYTHONPATH", str(evil))          # inherited: dropped too
    run_dir = tmp_path / "run"
    run_dir.mkdir(mode=0o700)
    with open(tmp_path / "out", "wb") as out:
        p = start_python("controller.app", [str(tmp_path / "missing")], run_dir=str(run_dir),
                         stdout=out)
    assert p.wait(60) != 0                       # no such run directory ...
    assert "FileNotFoundError" in (tmp_path / "out").read_text()
    assert not marker.exists()                   # ... and no code from the cwd ran

    # a user's policy module: its directory is appended (after the standard library)
    pol = tmp_path / "pols"
    (pol / "mypkg").mkdir(parents=True)
    (pol / "mypkg" / "__init__.py").write_text("")
    (pol / "mypkg" / "mine.py").write_text(
        "from controller.policies.fifo import Fifo\nclass Mine(Fifo):\n    name = ''\n")
    monkeypatch.syspath_prepend(str(pol))
    from mypkg.mine import Mine
    assert policy_dirs(Mine()) == [str(pol)]
    assert policy_dirs({"compute": "fifo", "network": "mypkg.mine:Mine"}) == [str(pol)]
    from controller.policies import get_policy
    assert policy_dirs(get_policy("fifo")) == []


# ---------------------------------------------------------------------- the campaign
@needs_root
def test_the_quick_fault_campaign_ends_every_run_cleanly_and_leaves_nothing(system):
    rows = benchmark("faults").fault_campaign(quick=True)
    assert [r["fault"] for r in rows] == ["SIGTERM at build", "SIGKILL mid-run",
                                          "fake switch"]
    for r in rows:
        # (the message leads with what a run that did not end cleanly said: the row's
        # repr alone is cut short before it)
        assert r["runs"] == r["ended_cleanly"] == 1, f"{r['fault']}: {r['failures']} {r}"
        assert r["records_lost"] == r["takeovers"] == r["leftovers_after_clean"] == 0, r
    assert rows[0]["leftovers_after_run"] == 0      # SIGTERM: it cleaned up itself
