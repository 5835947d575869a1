"""The real emulation, end to end: Mininet + Open vSwitch + the os-ken controller + agents.

Needs root (network namespaces, OVS); skipped otherwise. All traffic stays inside the
emulated hosts' namespaces. Every test checks that nothing of ours is left behind.

Flows are 4 MB on 20 Mbit/s links: 1.6 s alone (the engine calibrates the links for TCP/IP
header overhead, so payload gets the fabric's rate).
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

from controller.model import Coflow, Flow, Workload
from topologies.fabric import Fabric

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RATE = 20e6
MB4 = 4_000_000
SOLO = MB4 * 8 / RATE  # 1.6 s

pytestmark = pytest.mark.skipif(os.geteuid() != 0,
                                reason="the Mininet emulation needs root (namespaces, OVS)")

POLICY_SRC = textwrap.dedent('''
    """A test policy: a fixed coflow order and a fixed core per flow."""
    import numpy as np
    from controller.plan import Plan
    from controller.policies.base import Policy

    class Fixed(Policy):
        name = "fixed"

        def __init__(self, order, cores):
            self.order = list(order)
            self.cores = list(cores)

        def plan(self, state):
            a = state.arrays
            pos = {cid: n for n, cid in enumerate(self.order)}
            rank = np.array([pos[state.workload.coflows[k].id] for k in a.coflow], float)
            rank += (a.src * a.ports + a.dst) / (a.ports * a.ports + 1.0)
            return Plan(core=np.array(self.cores, dtype=np.int64), rank=rank)
''')




@pytest.fixture(scope="module")
def fixed(tmp_path_factory):
    """The ``Fixed`` policy class, importable by the controller process too."""
    d = tmp_path_factory.mktemp("policies")
    (d / "cfe_test_policies.py").write_text(POLICY_SRC)
    sys.path.insert(0, str(d))
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join([str(d)] + ([old] if old else []))
    import cfe_test_policies
    yield cfe_test_policies.Fixed
    sys.path.remove(str(d))
    if old is None:
        os.environ.pop("PYTHONPATH", None)
    else:
        os.environ["PYTHONPATH"] = old


def competing_workload() -> Workload:
    """A = {1->0, 2->0}, B = {3->0, 3->2}: A's and B's first flows share host 0's downlink."""
    return Workload(Fabric(ports=4, cores=2, rate_bps=RATE), [
        Coflow("A", [Flow(1, 0, MB4), Flow(2, 0, MB4)]),
        Coflow("B", [Flow(3, 0, MB4), Flow(3, 2, MB4)]),
    ])


CORES = [0, 1, 0, 1]  # f0 1->0 core 0, f1 2->0 core 1, f2 3->0 core 0, f3 3->2 core 1


def assert_clean():
    from emulate.mininet.clean import leftovers
    assert leftovers(settled=True) == {"bridges": [], "interfaces": [], "run_dirs": []}


@pytest.mark.parametrize("pause", [True, False], ids=["pause-signals", "switch-classes-only"])
def test_higher_priority_coflow_finishes_at_solo_time_and_the_other_gets_leftover(
        system, fixed, pause):
    from emulate.mininet.engine import run_mininet
    from emulate.sim.flowsim import simulate
    w = competing_workload()
    for first, second in (("A", "B"), ("B", "A")):
        policy = fixed([first, second], CORES)
        r = run_mininet(w, policy, pause=pause)
        s = simulate(w, fixed([first, second], CORES))
        cct = dict(zip(["A", "B"], r.cct))
        # the preferred coflow is not slowed down by the other one (TCP fair sharing would
        # make it 2 x SOLO). Without pause signals the starved flow keeps the low class's
        # queue full, and the single userspace switch thread slows everyone a little: the
        # first coflow's flows and the free flow below +7 to +12 % in one CI run.
        tol = 0.08 if pause else 0.25
        assert abs(cct[first] / SOLO - 1) < tol, (first, cct)
        # the other one waits for the shared downlink: twice the solo time, not a fair share
        assert cct[second] > 1.8 * SOLO, (second, cct)
        # ... and meanwhile uses what is left: its flow on the free core finishes at SOLO
        # (held with its coflow, it would take 2 x SOLO)
        free = 3 if second == "B" else 1
        assert abs(r.flow_completion[free] / SOLO - 1) < tol, r.flow_completion
        if pause:
            np.testing.assert_allclose(r.coflow_completion, s.coflow_completion, rtol=0.05)
        assert_clean()


def test_a_flow_pinned_to_core_k_shows_its_bytes_on_core_k_ports_only(system, fixed):
    from emulate.mininet.engine import run_mininet
    w = Workload(Fabric(ports=4, cores=2, rate_bps=RATE), [
        Coflow("x", [Flow(0, 1, MB4)]), Coflow("y", [Flow(2, 3, MB4 // 2)])])
    r = run_mininet(w, fixed(["x", "y"], [1, 0]))
    pb = np.array(r.extra["port_bytes"])  # (core, host, [from host, to host])
    # flow 0 (0->1) on core 1: in at host 0's uplink, out at host 1's downlink
    assert pb[1, 0, 0] >= MB4 and pb[1, 1, 1] >= MB4
    # flow 1 (2->3) on core 0
    assert pb[0, 2, 0] >= MB4 // 2 and pb[0, 3, 1] >= MB4 // 2
    # nowhere else: the other core's ports of these hosts carry nothing of the data
    # (a few kB of ARP at most; ACKs go the other way on the flow's own core)
    assert pb[0, 0].max() < 20_000 and pb[0, 1].max() < 20_000, pb
    assert pb[1, 2].max() < 20_000 and pb[1, 3].max() < 20_000, pb
    # reverse directions of the flows' own ports carry only ACKs (a few % of the bytes)
    assert pb[1, 0, 1] < 0.1 * MB4 and pb[1, 1, 0] < 0.1 * MB4, pb
    assert_clean()


@pytest.mark.parametrize("rate, size", [(RATE, MB4), (0.5e6, 250_000)])   # 1.6 s, 4 s
def test_a_flow_each_way_between_two_hosts_takes_its_solo_time(system, rate, size):
    """The ACKs of what a host receives have a budget beside its data's R (the fluid
    model has no ACKs): with one rate for both, a flow each way on one link took +2.4 %
    at 20 Mbit/s (+4.1 % at 1 Mbit/s, where every segment is acknowledged). At 0.5 Mbit/s
    the receiver often sends two ACKs per segment (the segment, then the window its read
    opens); with a budget of R/20 the flows took +11-13 %.

    Each way is compared with a lone flow of the same size between two other hosts in the
    same run: the whole emulation is sometimes a few % slow (all three flows +2.8-3.0 % in
    one run of three on an idle VM, +2.5-3.3 % each way in a clean-clone CI run), while the
    flows each way stayed within 0.9 % of the lone one (2.1 % with two real-time busy
    loops taking 71 % of both CPUs, where all three took +9-21 %). ACKs put back inside R
    (1:1 at R, data at R - C) fail it: each way +4.2 % against the lone flow at 0.5
    Mbit/s, +0.8-2.7 % at 20 Mbit/s (three runs)."""
    from emulate.mininet.engine import run_mininet
    w = Workload(Fabric(ports=4, cores=1, rate_bps=rate),
                 [Coflow("a", [Flow(0, 1, size)]), Coflow("b", [Flow(1, 0, size)]),
                  Coflow("lone", [Flow(2, 3, size)])])
    r = run_mininet(w, "fifo")
    solo = size * 8 / rate
    each_way, lone = r.cct[:2], r.cct[2]
    assert abs(lone / solo - 1) < 0.10, (r.cct, solo)
    assert all(abs(c / lone - 1) < 0.015 for c in each_way), (r.cct, r.extra["tcp"])
    assert_clean()


def test_every_host_route_floors_the_retransmission_timeout_at_a_few_ms(system):
    """Linux's 200 ms RTO floor cost a CI run's flow 0.2 s after a loss; every route a
    host's flows take (each core's subnet, the hairpin route) carries ``rto_min``: a few
    ms, two frame times on a slow core (its third segment waits that long at the start)."""
    from emulate.mininet.lock import hold
    from topologies.mininet_topo import ParallelTopo, build_network
    with hold():
        net = build_network(ParallelTopo(hosts=2, cores=2, rates=(RATE, 0.5e6)), 6653)
        try:
            for h in net.hosts:
                tables = {t: h.cmd(f"ip -4 route show table {t}").splitlines()
                          for t in ("main", "100", "101")}
                assert sum(map(len, tables.values())) == 4, tables  # two subnets, hairpins
                core0 = [r for r in tables["main"] if r.startswith("10.1.")] + tables["100"]
                core1 = [r for r in tables["main"] if r.startswith("10.2.")] + tables["101"]
                assert len(core0) == len(core1) == 2, tables
                assert all("rto_min lock 5ms" in r for r in core0), core0
                assert all("rto_min lock 49ms" in r for r in core1), core1
        finally:
            net.stop()
    assert_clean()


KILL_SCRIPT = textwrap.dedent('''
    import sys
    from controller.model import Coflow, Flow, Workload
    from topologies.fabric import Fabric
    from emulate.mininet.engine import run_mininet
    w = Workload(Fabric(ports=4, cores=2, rate_bps=20e6),
                 [Coflow("long", [Flow(0, 1, 40e6), Flow(2, 3, 40e6), Flow(1, 2, 40e6)])])
    run_mininet(w, "fifo")
    print("finished")
''')


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL],
                         ids=["ctrl-c", "sigterm", "sigkill-then-clean"])
def test_a_run_killed_half_way_leaves_nothing_behind(system, sig):
    from emulate.mininet.clean import STATE_DIR, clean, is_ours, read_state
    # Ctrl-C as at a terminal: a suite started in the background by a shell without job
    # control (``sh -c 'make test &'``) inherits SIGINT ignored, and Python then never
    # raises KeyboardInterrupt (the run finished and printed "finished")
    p = subprocess.Popen([sys.executable, "-c", KILL_SCRIPT], cwd=ROOT,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    run_dir = None
    deadline = time.time() + 60
    while time.time() < deadline and p.poll() is None:
        dirs = [d for d in (os.listdir(STATE_DIR) if os.path.isdir(STATE_DIR) else [])
                if d.startswith(f"run-{p.pid}-")]
        if dirs:
            run_dir = os.path.join(STATE_DIR, dirs[0])
            dec = os.path.join(run_dir, "decisions.jsonl")
            if os.path.exists(dec) and '"apply"' in open(dec).read():
                break
        time.sleep(0.1)
    assert run_dir and p.poll() is None, p.stdout.read().decode() if p.poll() else "no run"
    time.sleep(1.0)  # bytes are flowing
    procs = read_state(run_dir)["procs"]
    assert len(procs) >= 1 + 4 + 4  # controller, agents, host shells
    p.send_signal(sig)
    out = p.communicate(timeout=60)[0].decode()
    assert "finished" not in out
    if sig == signal.SIGKILL:
        clean()
    assert_clean()
    alive = [pid for pid, marker in procs if is_ours(pid, marker)]
    assert alive == [], (alive, out)


def test_a_malformed_agent_message_does_not_disturb_the_run(system, fixed):
    from emulate.mininet.clean import STATE_DIR
    from emulate.mininet.engine import run_mininet
    from emulate.sim.flowsim import simulate
    w = competing_workload()
    bad = [b"this is not json", b"[1, 2, 3]", b'{"op": "explode", "id": 1}',
           b'{"op": "flow_done", "flow": 0, "t": 1.0, "bytes": 4000000}',  # no id
           b'{"op": "flow_done", "id": 2, "flow": "zero", "t": 1.0, "bytes": 4000000}',
           b'{"op": "flow_done", "id": 3, "flow": 0, "t": 1.0, "bytes": 4000000}',  # not agent
           b'{"op": "plan", "id": 4, "flow": 99}', b'{"op": "plan", "id": 5, "flow": -1}',
           b'{"op": "register", "id": 6, "host": 0, "pid": 1}',  # host 0 has an agent
           b'{"op": "register", "id": 7, "host": true, "pid": 1}',
           b'{"op": "ping", "id": 8, "extra": 1}', b"{" + b"x" * 70000 + b"}",
           b'{"op": "agent_error", "id": 9, "flow": 0, "error": "I am not an agent"}']
    answers = []

    def rogue():
        deadline = time.time() + 60
        while time.time() < deadline:
            dirs = [d for d in (os.listdir(STATE_DIR) if os.path.isdir(STATE_DIR) else [])
                    if d.startswith(f"run-{os.getpid()}-")]
            if dirs:
                dec = os.path.join(STATE_DIR, dirs[0], "decisions.jsonl")
                if os.path.exists(dec) and '"apply"' in open(dec).read():
                    break
            time.sleep(0.05)
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(os.path.join(STATE_DIR, dirs[0], "api.sock"))
        s.settimeout(5)
        f = s.makefile("rb")
        for line in bad:
            s.sendall(line + b"\n")
            answers.append(json.loads(f.readline()))
        s.sendall(b'{"op": "plan", "id": 10, "flow": 0}\n')  # a good query still works
        answers.append(json.loads(f.readline()))
        s.close()

    t = threading.Thread(target=rogue)
    t.start()
    r = run_mininet(w, fixed(["A", "B"], CORES))
    t.join()
    assert len(answers) == len(bad) + 1
    assert all(a["ok"] is False and a["error"] for a in answers[:-1]), answers
    assert answers[-1]["ok"] is True and answers[-1]["flow"] == 0
    assert r.extra["api_errors"] >= len(bad)
    s = simulate(w, fixed(["A", "B"], CORES))
    np.testing.assert_allclose(r.coflow_completion, s.coflow_completion, rtol=0.05)
    assert_clean()


# ------------------------------------------------------------------ joint workloads
# (pair, largest per-job |time emulated / time simulated - 1|); synchpack-1's plans are
# hundreds of migrating pieces, and its choices flip on millisecond differences: verified
# only (README: The emulation)
JOINT_PAIRS = [("fifo+fair", 0.10), ("synchpack-3+lp-coflow", 0.10),
               ("synchpack-2+sebf", 0.10), ("synchpack-1+sincronia", None)]


def small_mapreduce(rate_bps=RATE):
    """Four MapReduce jobs on 4 hosts x 2 cores x 20 Mbit/s, arriving over ~3 s.

    The seed is one whose joint decisions do not flip when the network is up to 20 %
    slower or 8 % faster than its nominal rate (checked below): on a slow CI machine a
    shuffle of the emulation can lag the simulator's, and with seed 3 a lag like a 15 %
    slower network reordered two jobs' reduce tasks (one job 33 % longer)."""
    from controller.jobs import mapreduce_jobs
    return mapreduce_jobs(1, n_jobs=4, ports=4, cores=2, rate_bps=rate_bps, map_seconds=2.0,
                          reduce_seconds=2.0, n_map=(2, 4), mean_interarrival=1.0,
                          map_output_bytes=2e6, second_round=0.5)


@pytest.mark.parametrize("pair, bound", [p for p in JOINT_PAIRS if p[1] is not None],
                         ids=[p for p, b in JOINT_PAIRS if b is not None])
def test_the_joint_fidelity_instance_keeps_its_decisions_within_the_emulations_rate_error(
        pair, bound):
    """Simulator only: the premise of the bound below. Per-job times at 80-108 % of the
    link rate stay within the bound of the nominal rate's (a decision that flipped in that
    band would make the emulation's agreement a matter of machine speed)."""
    from emulate.sim.jobsim import simulate_joint
    nominal = simulate_joint(small_mapreduce(), pair)
    d0 = nominal.job_completion - nominal.job_release
    for f in np.arange(0.80, 1.081, 0.02):
        s = simulate_joint(small_mapreduce(RATE * f), pair)
        err = np.abs((s.job_completion - s.job_release) / d0 - 1).max()
        assert err < bound, (pair, f, err)


@pytest.mark.parametrize("pair, bound", JOINT_PAIRS, ids=[p for p, _ in JOINT_PAIRS])
def test_mapreduce_jobs_run_on_the_emulation_as_in_the_joint_simulator(system, pair, bound):
    """Tasks on the agents (capacity, placement, precedence verified on what they ran),
    shuffles made from where the maps ran, per-job times within 10 % of the simulator."""
    from controller.compute import compute_policies
    from controller.policyspec import split_policy
    from emulate.mininet.engine import run_mininet
    from emulate.sim.jobsim import simulate_joint
    from test_jobsim import verify_joint
    w = small_mapreduce()
    sim = simulate_joint(w, pair)
    emu = run_mininet(w, pair)
    assert emu.network.engine == "mininet"
    doc = json.loads(json.dumps(emu.to_json()))
    p = compute_policies()[split_policy(pair)[0]]
    verify_joint(w, doc, emu.segment_dicts(), preemptive=p.preemptive,
                 migration=p.migration, pinned=p.pinned, measured=0.02)
    err = (emu.job_completion - emu.job_release) / (sim.job_completion - sim.job_release) - 1
    if bound is not None:
        assert np.abs(err).max() < bound, err
    assert emu.extra["network_restarts"] >= 1 and emu.extra["emulation"]["api_errors"] == 0
    assert_clean()


def test_a_joint_workload_runs_on_the_emulation_from_the_cli(system, tmp_path):
    from click.testing import CliRunner

    from controller.jobs import mapreduce_jobs
    from emulate.cli import main
    from emulate.io.traces import write_json
    path = tmp_path / "mr.json"     # the text report only: a smaller workload than above
    write_json(mapreduce_jobs(1, n_jobs=2, ports=4, cores=2, rate_bps=RATE, map_seconds=0.5,
                              reduce_seconds=0.5, n_map=(2, 2), mean_interarrival=0.5,
                              map_output_bytes=1e6, second_round=0.0), str(path))
    r = CliRunner().invoke(main, ["run", str(path), "--engine", "mininet", "--policy",
                                  "synchpack-3+sebf", "--no-lp-bound"])
    assert r.exit_code == 0, r.output
    assert "(joint mininet): 2 jobs" in r.output
    assert "against the joint simulator: per-job time error" in r.output
    assert_clean()
