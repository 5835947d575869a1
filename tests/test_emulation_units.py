"""The emulation's pure parts (no root): API validation, class mapping, expected rates."""
from __future__ import annotations

import json
import os
import socket
import threading

import numpy as np
import pytest

from controller.api import AGENT_OPS, ApiError, ApiServer, Channel, parse, validate
from controller.classes import (DRAIN_CLASS, N_DATA_CLASSES, coflow_classes, conflict_classes,
                                htb_priority_tree, tos_of)
from controller.rates import allocate
from benchmark_modules import benchmark


@pytest.mark.parametrize("line, why", [
    (b"nope", "not JSON"), (b"[]", "JSON object"), (b'"x"', "JSON object"),
    (b"\xff\xfe", "not JSON")])
def test_parse_rejects_what_is_not_a_json_object(line, why):
    with pytest.raises(ApiError, match=why):
        parse(line)


@pytest.mark.parametrize("msg, why", [
    ({"op": "boom", "id": 1}, "unknown op"),
    ({"op": "ping"}, "'id'"),
    ({"op": "ping", "id": -1}, "'id'"),
    ({"op": "ping", "id": True}, "'id'"),
    ({"op": "register", "id": 1, "host": 0}, "missing field 'pid'"),
    ({"op": "register", "id": 1, "host": "0", "pid": 1}, "'host' must be int"),
    ({"op": "register", "id": 1, "host": False, "pid": 1}, "'host' must be int"),
    ({"op": "flow_done", "id": 1, "flow": 0, "t": float("nan"), "bytes": 1}, "finite"),
    ({"op": "flow_done", "id": 1, "flow": -3, "t": 1.0, "bytes": 1}, ">= 0"),
    ({"op": "ping", "id": 1, "x": 1}, "unknown fields"),
])
def test_validate_names_the_wrong_field(msg, why):
    with pytest.raises(ApiError, match=why):
        validate(msg)


def test_validate_accepts_every_op_with_its_fields():
    sample = {int: 3, float: 1.5, str: "boom", bool: True}
    for op, fields in AGENT_OPS.items():
        msg = {"op": op, "id": 7}
        for name, (types, _) in fields.items():
            msg[name] = sample[types[0]]
        assert validate(msg) is msg


def test_server_answers_bad_lines_with_errors_and_keeps_serving(tmp_path):
    seen = []

    def on_request(ch, msg):
        seen.append(msg["op"])
        ch.answer(msg["id"], echo=msg["op"])

    path = str(tmp_path / "api.sock")
    srv = ApiServer(path, on_request)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    s.settimeout(5)
    f = s.makefile("rb")
    for line in (b"garbage", b'{"op": "ping"}', b"{" + b"y" * 70000 + b"}",
                 b'{"re": 99, "ok": true}', b'{"op": "ping", "id": 4}'):
        s.sendall(line + b"\n")
    answers = [json.loads(f.readline()) for _ in range(5)]
    assert [a["ok"] for a in answers] == [False, False, False, False, True]
    assert answers[-1] == {"re": 4, "ok": True, "echo": "ping"}
    assert seen == ["ping"] and srv.errors == 4
    s.close()
    srv.close()


def test_channel_request_gets_its_answer(tmp_path):
    a, b = socket.socketpair()
    ca, cb = Channel(a), Channel(b)

    def peer():
        for line in cb.lines():
            msg = json.loads(line)
            cb.answer(msg["id"], value=msg["x"] * 2)

    threading.Thread(target=peer, daemon=True).start()
    threading.Thread(target=lambda: [ca.resolve(json.loads(x)) for x in ca.lines()],
                     daemon=True).start()
    assert ca.request({"op": "double", "x": 21}, timeout=5)["value"] == 42
    ca.close()
    cb.close()


def test_conflict_classes_keep_the_order_of_every_pair_that_shares_a_link():
    rng = np.random.default_rng(1)
    for _ in range(50):
        n, ports, cores = 12, 4, 2
        src = rng.integers(0, ports, n)
        dst = (src + rng.integers(1, ports, n)) % ports
        core = rng.integers(0, cores, n)
        order = rng.permutation(n)
        cls = conflict_classes(order, src, dst, core)
        pos = {f: i for i, f in enumerate(order)}
        c = {f: cls[pos[f]] for f in order}
        for f in range(n):
            for g in range(n):
                share = core[f] == core[g] and (src[f] == src[g] or dst[f] == dst[g])
                if f != g and share and pos[f] < pos[g] and c[f] < N_DATA_CLASSES - 1:
                    assert c[f] < c[g]


def test_coflow_classes_give_each_of_the_first_coflows_its_own_class():
    coflow = np.array([0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9])
    cls = coflow_classes(np.arange(11), coflow)
    assert cls.tolist() == [0, 0, 1, 2, 3, 4, 5, 6, 7, 7, 7]


def test_htb_tree_has_a_filter_per_data_class_on_its_tos():
    lines = htb_priority_tree("x-eth0", 20e6)
    for k in range(DRAIN_CLASS + 1):
        assert any(f"match ip tos {tos_of(k):#04x} 0xfc flowid 1:{11 + k}" in ln
                   for ln in lines)


def data_class_lines(lines: list[str]) -> list[str]:
    """The ``class add`` lines of the data classes and the drain class (1:11-1:19)."""
    return [ln for ln in lines if ln.startswith("class add")
            and any(f"classid 1:{11 + k} " in ln for k in range(DRAIN_CLASS + 1))]


def test_htb_tree_gives_the_data_the_link_rate_and_the_acks_a_budget_beside_it():
    """All data classes together get R (1:2); ACKs (1:10) R/8 beside it, in the link 1:1."""
    lines = htb_priority_tree("x-eth0", 20e6)
    assert "classid 1:1 htb rate 22500000bit ceil 22500000bit" in lines[1]
    assert "classid 1:10 htb rate 2500000bit ceil 22500000bit prio 0" in lines[2]
    assert "parent 1:1 classid 1:2 htb rate 20000000bit ceil 20000000bit" in lines[3]
    data = data_class_lines(lines)
    assert len(data) == N_DATA_CLASSES + 1
    assert all("parent 1:2 " in ln and "ceil 20000000bit" in ln for ln in data)
    # the data classes live on borrowing (strict priority), and so does the drain class
    # below them when a paused flow leaves nothing
    assert all("rate 8000bit" in ln for ln in data)


@pytest.mark.parametrize("rate, each", [(0.5e6, 500), (1e6, 1000), (8e6, 8000),
                                        (20e6, 8000), (1e9, 8000), (1e3, 8)])
def test_the_data_classes_guarantees_are_a_thousandth_of_a_slow_link_and_8kbit_on_fast(
        rate, each):
    """The nine lower classes' guarantees take at most 0.9 % of the link from the class
    above them (8 kbit/s each was 14 % of 0.5 Mbit/s); fast links keep 8 kbit/s, which a
    flow moved to a lower class lives on (:func:`controller.classes.data_guarantee`)."""
    lines = data_class_lines(htb_priority_tree("x-eth0", rate))
    assert len(lines) == DRAIN_CLASS + 1
    assert all(f" rate {each}bit ceil {int(rate)}bit " in ln for ln in lines), lines
    assert (DRAIN_CLASS + 1) * each <= 0.01 * rate or each == 8000 or each == 8


def test_the_drain_class_carries_a_paused_flows_leftover_within_a_second_or_waits():
    """At 20 Mbit/s a window and the unsent bytes (24 kB) get a fiftieth of the link of
    their own (0.5 s); at 1 Mbit/s (11 kB: 4.4 s at a fiftieth) the drain class is a
    lowest class."""
    from controller.classes import DRAIN_SECONDS, drain_rate
    from emulate.mininet.agent import NOTSENT_LOWAT
    from emulate.mininet.engine import MininetRun
    leftover = MininetRun.window(MininetRun, [20e6]) + NOTSENT_LOWAT
    d = drain_rate(20e6, leftover)
    assert d == 0.02 * 20e6 and leftover * 8 / d < DRAIN_SECONDS
    cls = f"classid 1:{11 + DRAIN_CLASS} htb rate {int(d)}bit ceil 20000000bit prio 7"
    assert any(cls in ln for ln in htb_priority_tree("x-eth0", 20e6, leftover))
    slow = MininetRun.window(MininetRun, [1e6]) + NOTSENT_LOWAT
    assert drain_rate(1e6, slow) == 0.0
    cls = f"classid 1:{11 + DRAIN_CLASS} htb rate 1000bit ceil 1000000bit prio 7"
    assert any(cls in ln for ln in htb_priority_tree("x-eth0", 1e6, slow))


def test_a_resumed_writer_waits_until_its_socket_is_acknowledged(monkeypatch):
    """A resumed flow's agent writes again only once what its pause left in the network
    is acknowledged (its new bytes, one class up, would overtake it): the wait ends when
    the receiver takes the bytes, or when the flow is paused again."""
    import socket
    import threading
    import time
    import types

    from emulate.mininet import agent
    from emulate.mininet.agent import Connection, Job, unacknowledged
    monkeypatch.setattr(agent, "DRAIN_WAIT_MAX", 5.0)
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    c = socket.create_connection(srv.getsockname())
    peer, _ = srv.accept()
    c.setblocking(False)
    sent = 0
    try:
        while True:                           # the receiver does not read: fill up
            sent += c.send(bytes(65536))
    except BlockingIOError:
        pass
    assert unacknowledged(c) > 0
    conn = Connection(types.SimpleNamespace(stopping=threading.Event()), "", 0, "", 0)
    job = Job({"flow": 0, "bytes": 1, "paused": False, "tos": 0})
    waiter = threading.Thread(target=conn._wait_drained, args=(c, job))
    waiter.start()
    waiter.join(0.3)
    assert waiter.is_alive()                  # bytes in the network: it waits
    got = 0
    while got < sent:
        got += len(peer.recv(1 << 20))
    waiter.join(2.0)
    assert not waiter.is_alive() and unacknowledged(c) == 0
    try:
        while True:
            c.send(bytes(65536))
    except BlockingIOError:
        pass
    job.go.clear()                            # paused again: no wait at all
    t = time.monotonic()
    conn._wait_drained(c, job)
    assert time.monotonic() - t < 0.1 and unacknowledged(c) > 0
    monkeypatch.setattr(agent, "DRAIN_WAIT_MAX", 0.1)
    job.go.set()                              # ... and never longer than the cap
    t = time.monotonic()
    conn._wait_drained(c, job)
    assert 0.1 <= time.monotonic() - t < 1.0 and unacknowledged(c) > 0
    for x in (c, peer, srv):
        x.close()


def test_htb_bucket_is_a_few_ms_of_the_link_or_one_frame():
    """At 1 Mbit/s a bucket of four frames (48 ms) made 24 kB flows finish 26 % early."""
    for rate, bucket in ((1e6, 1514), (2e6, 1514), (20e6, 10000), (100e6, 50000)):
        for line in htb_priority_tree("x-eth0", rate)[1:5 + N_DATA_CLASSES]:
            assert line.endswith(f"burst {bucket}b cburst {bucket}b")


def test_receive_window_is_a_few_ms_of_the_link_or_two_segments():
    """What a paused flow still has in flight drains in its class, ahead of the flow that
    preempted it: at 1 Mbit/s a 16 kB window was 130 ms of the link, four segments 65."""
    from emulate.mininet.engine import MininetRun
    window = MininetRun.window
    assert window(MininetRun, [1e6]) == window(MininetRun, [2e6]) == 2 * 1448
    assert window(MininetRun, [20e6]) == 16250
    assert window(MininetRun, [10e6, 100e6]) == int(100e6 / 8 * 0.0065)


def test_tcp_counters_parse_the_kernels_tables_and_sum_over_hosts():
    import os

    from emulate.mininet.tcpstats import COUNTERS, describe, parse_proc_tables, tcp_counters
    text = ("Tcp: RtoAlgorithm OutSegs RetransSegs\nTcp: 1 1000 7\n"
            "TcpExt: TCPTimeouts TCPLossProbes\nTcpExt: 3 2\n")
    t = parse_proc_tables(text)
    assert t[("Tcp", "OutSegs")] == 1000 and t[("TcpExt", "TCPTimeouts")] == 3
    one = tcp_counters([os.getpid()])
    assert set(one) == set(COUNTERS) and all(v >= 0 for v in one.values())
    two = tcp_counters([os.getpid(), os.getpid(), 2 ** 22 + 12345])   # a gone pid: nothing
    assert two == {k: 2 * v for k, v in one.items()} or two["out_segs"] >= 2 * one["out_segs"]
    assert "retransmitted" in describe(one) and "(PAWS)" in describe(one)


def _check_capacity(order, src, dst, core, rate, core_rate):
    for h in range(len(core_rate)):
        for port_of in (src, dst):
            for p in set(port_of.tolist()):
                on = [n for n, f in enumerate(order) if core[f] == h and port_of[f] == p]
                assert rate[on].sum() <= core_rate[h] * (1 + 1e-9)


def _saturated(f, order, src, dst, core, rate, core_rate):
    h = core[f]
    used_in = sum(rate[n] for n, g in enumerate(order) if core[g] == h and src[g] == src[f])
    used_out = sum(rate[n] for n, g in enumerate(order) if core[g] == h and dst[g] == dst[f])
    return max(used_in, used_out) >= core_rate[h] * (1 - 1e-9)


def _random_case(rng, n=15, ports=5, cores=2):
    src = rng.integers(0, ports, n)
    dst = (src + rng.integers(1, ports, n)) % ports
    core = rng.integers(0, cores, n).astype(np.int64)
    cap = np.where(rng.random(n) < 0.3, rng.uniform(0.1, 1.0, n), np.inf)
    return src, dst, core, cap, np.array([1.0, 0.5]), rng.permutation(n).astype(np.int64)


def test_priority_rates_serve_flows_in_rank_order_and_backfill_leftovers():
    rng = np.random.default_rng(7)
    for _ in range(40):
        src, dst, core, cap, core_rate, order = _random_case(rng)
        strict = allocate(order, src, dst, core, cap, core_rate, "priority", False)
        full = allocate(order, src, dst, core, cap, core_rate, "priority", True)
        for rate in (strict, full):
            _check_capacity(order, src, dst, core, rate, core_rate)
        for n, f in enumerate(order):
            # without backfill: min(cap, what the higher-ranked flows left on its ports)
            assert strict[n] <= cap[f] + 1e-12
            if strict[n] < cap[f] - 1e-9:
                prefix = strict.copy()
                prefix[n + 1:] = 0
                assert _saturated(f, order, src, dst, core, prefix, core_rate)
            # with backfill: work conserving
            assert full[n] >= strict[n] - 1e-12
            assert _saturated(f, order, src, dst, core, full, core_rate)


def test_fair_rates_are_max_min_fair_under_caps():
    rng = np.random.default_rng(8)
    for _ in range(40):
        src, dst, core, cap, core_rate, order = _random_case(rng)
        rate = allocate(order, src, dst, core, cap, core_rate, "fair")
        _check_capacity(order, src, dst, core, rate, core_rate)
        for n, f in enumerate(order):
            # every flow is at its cap or on a saturated link where it has the largest rate
            if rate[n] >= cap[f] - 1e-9:
                continue
            h = core[f]
            ok = False
            for port_of in (src, dst):
                on = [m for m, g in enumerate(order)
                      if core[g] == h and port_of[g] == port_of[f]]
                if (rate[on].sum() >= core_rate[h] * (1 - 1e-9)
                        and rate[n] >= rate[on].max() - 1e-9):
                    ok = True
            assert ok, (n, rate)


def test_rates_of_a_simple_case():
    # two flows out of port 0 on one core, the first ranked higher; a third elsewhere
    src, dst, core = np.array([0, 0, 1]), np.array([1, 2, 2]), np.zeros(3, np.int64)
    cap = np.array([np.inf, np.inf, np.inf])
    r = allocate(np.array([0, 1, 2]), src, dst, core, cap, np.array([10.0]), "priority")
    assert r.tolist() == [10.0, 0.0, 10.0]
    r = allocate(np.array([0, 1, 2]), src, dst, core, np.array([4.0, np.inf, np.inf]),
                 np.array([10.0]), "priority", backfill=False)
    assert r.tolist() == [4.0, 6.0, 4.0]
    r = allocate(np.array([0, 1, 2]), src, dst, core, cap, np.array([10.0]), "fair")
    assert r.tolist() == [5.0, 5.0, 5.0]


# ------------------------------------------------------------------ compute slots (agents)
class _SlotLog:
    """Records what a :class:`emulate.mininet.slots.Slots` reports, and its load at every start."""

    def __init__(self, capacity):
        from emulate.mininet.slots import Slots
        self.lock = threading.Lock()
        self.starts, self.ends = {}, {}
        self.loads = []
        self.all_done = threading.Event()
        self.expect = 0
        self.slots = Slots(capacity, self.started, self.done)

    def started(self, seg, t):
        with self.lock:
            self.starts[seg] = t
            self.loads.append(self.slots.used)

    def done(self, seg, t, ran, stopped):
        with self.lock:
            self.ends[seg] = (t, ran, stopped)
            if len(self.ends) == self.expect:
                self.all_done.set()


def test_slots_never_exceed_the_capacity_and_start_waiting_tasks_when_room_frees():
    log = _SlotLog(1.0)
    log.expect = 4
    demands = {0: 0.6, 1: 0.5, 2: 0.4, 3: 1.0}
    for seg, d in demands.items():
        log.slots.run(seg, d, 0.15)
    assert log.all_done.wait(5.0)
    assert max(log.loads) <= 1.0 + 1e-9 and log.slots.peak <= 1.0 + 1e-9
    # 0 and 2 fit together (first fit over the waiting ones), 1 waits for 0, 3 for all
    assert log.starts[2] - log.starts[0] < 0.05
    assert log.starts[1] >= log.ends[0][0] - 1e-3
    assert log.starts[3] >= max(log.ends[s][0] for s in (0, 1, 2)) - 1e-3
    for seg in demands:
        t, ran, stopped = log.ends[seg]
        assert not stopped and 0.14 <= ran <= 0.25, (seg, ran)


def test_a_stopped_task_releases_its_slot_at_once_and_reports_what_it_ran():
    import time
    log = _SlotLog(1.0)
    log.expect = 3
    log.slots.run(0, 1.0, 10.0)
    log.slots.run(1, 0.5, 0.05)          # waits behind 0
    log.slots.run(2, 0.5, 10.0)          # waits too; dropped before it starts
    time.sleep(0.1)
    log.slots.stop(2)
    log.slots.stop(0)
    deadline = time.time() + 5
    while 1 not in log.ends and time.time() < deadline:
        time.sleep(0.01)
    assert log.all_done.wait(5.0)
    assert log.ends[0][2] and 0.08 <= log.ends[0][1] < 1.0
    assert log.ends[2][1] == 0.0 and log.ends[2][2] and 2 not in log.starts
    assert not log.ends[1][2] and log.starts[1] >= log.ends[0][0] - 1e-3


def test_slots_refuse_a_task_bigger_than_the_host():
    log = _SlotLog(1.0)
    with pytest.raises(ValueError, match="needs 1.5"):
        log.slots.run(0, 1.5, 1.0)
    log.slots.run(1, 0.5, 0.01)
    with pytest.raises(ValueError, match="already given"):
        log.slots.run(1, 0.5, 0.01)


def _joint_run(tmp_path):
    """A joint controller run with no network: agents that record what they are sent."""
    import time
    from controller.jobs import mapreduce_jobs
    from controller.joint_runtime import JointEmulationRun
    from controller.policies import get_policy
    from controller.runtime import RunConfig

    class Agent:
        def __init__(self):
            self.sent = []

        def send(self, msg):
            self.sent.append(msg)

    w = mapreduce_jobs(1, n_jobs=2, ports=4, cores=2, rate_bps=20e6)
    cfg = RunConfig(run_dir=str(tmp_path), api_path=str(tmp_path / "api"), ofp_port=0,
                    n_hosts=4, n_cores=2)
    run = JointEmulationRun(cfg, w, "synchpack-1", lambda: get_policy("sincronia"))
    run.t0 = time.time()
    run.agents = {h: Agent() for h in range(4)}
    return run


def test_the_joint_warm_up_plans_on_a_driver_of_its_own(tmp_path, caplog, monkeypatch):
    """The compute policy plans once before the clock starts (its first call imports its
    LP solver: in the run, the first tasks started up to 0.9 s late), on a driver of its
    own: the run's plan, segments and agents stay untouched."""
    import logging

    from controller.jobrun import JobDriver
    run = _joint_run(tmp_path)
    replans = run.driver.model.replans
    planned, replan = [], JobDriver.replan
    monkeypatch.setattr(JobDriver, "replan", lambda d, *a: planned.append((d, replan(d, *a)))
                        or planned[-1][1])
    with caplog.at_level(logging.WARNING, logger="coflowemu.controller"):
        run.warm_up()
    assert "warm-up failed" not in caplog.text
    assert [(d is run.driver, bool(p)) for d, p in planned] == [(False, True)]
    assert run.driver.model.replans == replans and not run.segs and run.cplan == 0
    assert all(not a.sent for a in run.agents.values())
    assert np.isnan(run.driver.model.completion).all()


def test_a_tasks_pieces_start_in_plan_order_even_when_a_later_one_is_due_first(tmp_path):
    """A re-plan's first piece of a task waits while the cut piece still runs; the task's
    last piece, due next, must not overtake it (it would end the task on its machine and
    the earlier piece would run after the task finished)."""
    from controller.joint_runtime import _Seg
    run = _joint_run(tmp_path)
    segs = {0: _Seg(0, 0, 0.0, 1.0, False, 1), 1: _Seg(0, 1, 1.0, 1.5, False, 2),
            2: _Seg(0, 2, 1.5, 2.0, True, 2)}
    run.segs.update(segs)
    run.n_state["planned"] += 3
    run._dispatch(0)                       # the piece a re-plan cut: still running
    run._dispatch(1)
    assert segs[1].state == "blocked"
    # the cut piece's end and the last piece's start come in one batch of events,
    # before the blocked pieces are retried
    run._move(segs[0], "done")
    run._dispatch(2)                       # due, its machine free, but a piece is ahead
    assert segs[2].state == "blocked" and run.agents[2].sent == []
    run._retry_blocked()
    assert segs[1].state == "sent" and segs[2].state == "blocked"
    assert [m["seg"] for m in run.agents[1].sent] == [1]
    run._move(segs[1], "done")
    run._retry_blocked()
    assert segs[2].state == "sent" and [m["seg"] for m in run.agents[2].sent] == [2]


def test_a_shuffle_is_sent_from_where_its_producers_finished(tmp_path):
    """The shuffle's sources are the machines given as where each producer finished
    (the agents' reports on the emulation), not the plan's."""
    run = _joint_run(tmp_path)
    drv = run.driver
    k = next(k for k in range(len(drv.is_shuffle)) if drv.is_shuffle[k])
    producers = [q for s in drv.cof_stage_preds[k] for q in drv.a.stage_tasks[s]]
    consumers = [q for s in drv.cof_consumers[k] for q in drv.a.stage_tasks[s]]
    for q in consumers:
        drv.model.pin(q, 3)
    for m in (0, 1):
        where = np.full(drv.a.n_tasks, -1)
        where[producers] = m
        flows = drv.shuffle_flows(k, where)
        assert flows and {f.src for f in flows} == {m} and {f.dst for f in flows} == {3}


def test_a_watcher_that_never_reads_is_disconnected_and_never_blocks_the_sender(tmp_path):
    import logging
    import time
    got = {}

    def on_request(ch, msg):
        ch.role = "watcher"
        got["ch"] = ch
        ch.answer(msg["id"])

    closed = threading.Event()
    srv = ApiServer(str(tmp_path / "api"), on_request, lambda ch: closed.set(),
                    log=logging.getLogger("test"), max_backlog=1 << 16)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(str(tmp_path / "api"))
    s.sendall(b'{"op":"watch","id":1}\n')           # ... and never reads again
    deadline = time.time() + 5
    while "ch" not in got and time.time() < deadline:
        time.sleep(0.01)
    ch = got["ch"]
    push = {"op": "progress", "done": 1, "total": 2, "pad": "x" * 1000}
    sent = []

    def pushes():   # the controller's main loop: far more than the socket buffer holds
        for _ in range(5000):
            sent.append(ch.send(push))

    t = threading.Thread(target=pushes, daemon=True)
    t0 = time.perf_counter()
    t.start()
    t.join(10)
    assert not t.is_alive(), "a send to a watcher that does not read blocked the run"
    assert time.perf_counter() - t0 < 5
    assert sent[0] and not sent[-1] and ch.overflowed
    assert closed.wait(5)         # the server let it go (on_close)
    s.close()
    srv.close()


class _Recorder:
    """An agent or the switches of a run, as the controller sees them: what it was told."""

    def __init__(self):
        self.sent, self.rules = [], []

    def send(self, msg):
        self.sent.append(msg)

    def install_flow(self, core, sport, rule):
        self.rules.append(rule)

    def apply_rules(self, ops, t_recv, stats, flush=None):
        self.rules += [rule for _, _, rule in ops]


def _recorded_run(tmp_path, w, **options):
    """An EmulationRun of ``w`` (one core) told to recording agents and switches, its
    coflows released; ``apply(rank)`` enforces a priority plan of that rank and returns
    the flows' classes."""
    import time

    from controller.plan import Plan
    from controller.policies import get_policy
    from controller.runtime import EmulationRun, RunConfig
    n = w.fabric.ports
    cfg = RunConfig(run_dir=str(tmp_path), api_path=str(tmp_path / "api"), ofp_port=0,
                    n_hosts=n, n_cores=1, **options)
    run = EmulationRun(cfg, w, get_policy("fifo"), switches=_Recorder())
    run.agents = [_Recorder() for _ in range(n)]
    run.snapshot_async = lambda flows: None
    run.warm_up()
    run.t0 = time.time()
    run.release(0.0)
    run._make_ready()

    def apply(rank):
        run._apply(Plan(core=np.zeros(len(rank), dtype=np.int64), rank=np.array(rank, float),
                        sharing="priority"), time.time(), "test")
        return run.cls.tolist()
    return run, apply


def test_a_flow_that_preempts_another_overtakes_its_bytes_in_flight(tmp_path, monkeypatch):
    """A paused flow's bytes in flight stay queued in the class it ran in; the flow that
    preempts it starts one class higher while they can drain, then goes back."""
    import time

    from controller.classes import RUN_CLASS
    from controller.model import Coflow, Fabric, Flow, Workload
    w = Workload(Fabric(3, 1, 8e6), [Coflow("a", [Flow(0, 1, 1e6)]),
                                     Coflow("b", [Flow(0, 2, 1e6)]),
                                     Coflow("c", [Flow(2, 1, 1e6)])])
    run, apply = _recorded_run(tmp_path, w, drain_bytes=10_000)    # 10 ms at 1 MB/s
    clock = [100.0]
    monkeypatch.setattr(time, "monotonic", lambda: clock[0])

    cls = apply([0, 1, 2])
    assert cls[0] == RUN_CLASS and cls[1] == -1 and cls[2] == -1   # c waits behind a (dst 1)
    cls = apply([1, 0, 2])          # b preempts a on host 0's input; c then takes dst 1
    assert cls[0] == DRAIN_CLASS                 # a: paused
    assert cls[1] == 0                           # b: overtakes a's bytes on host 0's input
    assert cls[2] == 0                           # c: a's bytes are queued to host 1 too
    clock[0] += 0.005
    assert apply([1, 0, 2])[1:] == [0, 0]        # a's bytes may still be there
    clock[0] += 0.010
    assert apply([1, 0, 2])[1:] == [RUN_CLASS, RUN_CLASS]   # drained: back, not up
    launched = [m for ag in run.agents for m in ag.sent if m["op"] == "start"]
    assert [m["tos"] for m in launched] == [tos_of(RUN_CLASS), tos_of(0), tos_of(0)]
    run._dlog.close()


def test_a_resumed_flow_is_told_once_its_rule_left_the_drain_class(tmp_path):
    """Pauses and launches go to the agents at once; a resume waits for the barrier of the
    rules that take the flow out of the drain class (told at once, its first window
    crossed the switch in the drain class and was overtaken by its own later packets),
    and a pause before that barrier cancels it."""
    import time

    from controller.model import Coflow, Fabric, Flow, Workload

    class Switches(_Recorder):
        tokens = 0
        flushed: list = []          # the tokens whose rules must be in effect, caches too

        def apply_rules(self, ops, t_recv, stats, flush=None):
            super().apply_rules(ops, t_recv, stats)
            self.tokens += 1
            if flush is not None:
                self.flushed.append(self.tokens)
            return self.tokens

    w = Workload(Fabric(2, 1, 8e6), [Coflow("a", [Flow(0, 1, 1e6)]),
                                     Coflow("b", [Flow(0, 1, 1e6)])])
    run, apply = _recorded_run(tmp_path, w)
    run.switches = Switches()
    sent = run.agents[0].sent

    def told():
        out = [(m["op"], m.get("flow"), m.get("paused"))
               for m in sent if m["op"] == "start"]
        out += [("update", i["flow"], i["paused"]) for m in sent if m["op"] == "update"
                for i in m["flows"]]
        sent.clear()
        return out

    apply([0, 1])
    assert told() == [("start", 0, False)]
    apply([1, 0])                                   # b preempts a: both told at once
    assert told() == [("start", 1, False), ("update", 0, True)]
    assert run.switches.flushed == []               # nothing waits for a launch or pause
    apply([0, 1])                                   # a resumes, b pauses
    token = run.switches.tokens
    assert told() == [("update", 1, True)] and run.status[0] == 1
    assert run.switches.flushed == [token]          # a's resume waits for the caches too
    run._handle([("rules_installed", time.time(), token - 1)], False)
    assert told() == []                             # an earlier barrier: not its rule
    run._handle([("rules_installed", time.time(), token)], False)
    assert told() == [("update", 0, False)]
    assert run.cls[0] != DRAIN_CLASS and len(run.stats["resume_wait_ms"]) == 1
    apply([1, 0])                                   # b's turn again ...
    apply([0, 1])                                   # ... a resumes ...
    apply([1, 0])                                   # ... and is paused before its rule
    told()
    run._handle([("rules_installed", time.time(), run.switches.tokens)], False)
    assert ("update", 0, False) not in told() and not run.resumes
    run._dlog.close()


def test_a_flow_resumed_after_its_last_bytes_arrived_keeps_every_byte_in_its_segments(
        tmp_path):
    """A paused flow can finish from what its socket already held; when the controller
    resumes it before the completion's report is read, the bytes since the last reading
    still count (from that reading: they arrived before the resume)."""
    import time

    from controller.model import Coflow, Fabric, Flow, Workload
    w = Workload(Fabric(2, 1, 8e6), [Coflow("a", [Flow(0, 1, 1e6)]),
                                     Coflow("b", [Flow(0, 1, 1e6)])])
    run, apply = _recorded_run(tmp_path, w)
    apply([0, 1])
    time.sleep(0.02)
    run._counters(1, {"ok": True, "rx": {"0": 600_000}, "t": time.time()})
    apply([1, 0])                                  # b preempts a: a paused
    t_done = time.time() + 0.01                    # a's socket held its last 400 kB
    time.sleep(0.03)
    apply([0, 1])                                  # a resumed after t_done
    assert run.status[0] == 1 and run.seg_t[0] > t_done
    run._flow_done(0, t_done)
    s = np.array([seg for seg in run.segments if seg[0] == 0])
    assert np.sum(s[:, 4] * (s[:, 3] - s[:, 2])) / 8 == pytest.approx(1e6)
    assert s[:, 3].max() == pytest.approx(run.now_w(t_done))
    run._dlog.close()


def test_the_datapath_cache_is_emptied_through_the_daemons_control_socket(tmp_path):
    """``Datapath`` speaks ovs-vswitchd's control protocol (one JSON-RPC request, a reply
    that may come in pieces), raises ``OSError`` on an error reply or a closed socket, and
    ``unixctl_path`` finds the socket from the daemon's pidfile."""
    import time

    from controller.datapath import Datapath, unixctl_path

    path = str(tmp_path / "ovs-vswitchd.4242.ctl")
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(4)
    asked = []
    replies = [{"id": 0, "result": "", "error": None},
               {"id": 0, "result": None, "error": "\"revalidator/purge\" is not a valid command"},
               None]                                   # closes without answering

    def serve():
        for reply in replies:
            conn, _ = srv.accept()
            with conn:
                buf, dec = b"", json.JSONDecoder()
                while True:
                    buf += conn.recv(4096)
                    try:
                        asked.append(dec.raw_decode(buf.decode())[0])
                        break
                    except ValueError:
                        continue
                if reply is not None:
                    text = json.dumps(reply).encode()
                    conn.sendall(text[:7])             # in two pieces
                    time.sleep(0.05)
                    conn.sendall(text[7:])

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    cache = Datapath(path, timeout=5.0)
    assert cache.purge() >= 0.0
    assert asked[0] == {"method": "revalidator/purge", "params": [], "id": 0}
    with pytest.raises(OSError, match="not a valid command"):
        cache.purge()
    with pytest.raises(OSError, match="closed"):
        cache.purge()
    t.join(5)
    srv.close()

    assert unixctl_path(str(tmp_path)) == ""            # no pidfile
    (tmp_path / "ovs-vswitchd.pid").write_text("4242\n")
    assert unixctl_path(str(tmp_path)) == path
    (tmp_path / "ovs-vswitchd.pid").write_text("4243\n")  # a daemon gone: no socket
    assert unixctl_path(str(tmp_path)) == ""
    (tmp_path / "ovs-vswitchd.pid").write_text("garbage")
    assert unixctl_path(str(tmp_path)) == ""


def test_the_datapath_cache_benchmark_counts_old_marks_between_one_flip_and_the_next():
    """``benchmarks/datapath_cache.py``'s summary: a datagram is stale for a flip if it
    carries the flip's old DSCP and arrives after the flip's barrier (or purge) and
    before the next flip; the receiver's log is read in any order."""
    import random

    bench = benchmark("datapath_cache")
    done = [{"arm": ("barrier", "purge")[k % 2], "old": (10, 20)[k % 2], "t0": 1.0 + k,
             "t_done": 1.001 + k, "flip_ms": 1.0, "purge_ms": 0.5} for k in range(4)]
    got = [(1.0005, 10),                        # before flip 0's barrier: not stale
           (1.002, 10), (1.05, 10), (1.06, 20),  # flip 0: two stale, the last 49 ms after
           (2.002, 20), (2.5, 10),               # flip 1 (purge): one, 1 ms after
           (3.1, 10),                            # flip 2: one, 99 ms after
           (4.2, 10)]                            # flip 3 (old 20): none
    random.Random(1).shuffle(got)
    out = bench.summarise(done, got)
    assert [f["stale"] for f in done] == [2, 1, 1, 0]
    assert out["barrier"] == {"flips": 2, "flips_with_stale": 2, "stale_datagrams": 3,
                              "max_stale_ms": 99.0, "flip_ms_median": 1.0}
    assert (out["purge"]["flips_with_stale"], out["purge"]["stale_datagrams"],
            out["purge"]["max_stale_ms"]) == (1, 1, 1.0)
    assert out["datagrams"] == 8


def test_the_fidelity_benchmark_keeps_each_policys_row_as_it_is_measured(tmp_path,
                                                                         monkeypatch):
    """``benchmarks/emulation_fidelity.py --json``: each policy's row (seeds pooled, each
    seed's own figures beside) is in the file as soon as it is measured, so a run that
    fails or is stopped half way keeps the policies it finished. (The emulation is
    replaced by the simulator on a workload with one flow 10 % larger.)"""
    import emulate.mininet.fidelity as fid
    from controller.model import Coflow, Flow
    from emulate.engines import RunOptions, get_engine

    bench = benchmark("emulation_fidelity")
    out = tmp_path / "rows.json"

    def measure(w, policy, *, time_scale=1.0, policy_options=None):
        if policy == "sebf":
            assert json.loads(out.read_text())[0]["policy"] == "fifo"   # already kept
            raise RuntimeError("the emulation failed")
        c0 = w.coflows[0]
        bigger = Coflow(c0.id, (Flow(c0.flows[0].src, c0.flows[0].dst,
                                     c0.flows[0].bytes * 1.1),) + tuple(c0.flows[1:]),
                        release=c0.release, weight=c0.weight)
        sim = get_engine("sim").run(w, policy, RunOptions(segments=True))
        emu = get_engine("sim").run(w.replace(coflows=(bigger,) + tuple(w.coflows[1:])),
                                    policy, RunOptions(segments=True))
        emu.workload = w
        return fid.FidelityReport(w, policy, sim, emu)

    monkeypatch.setattr(fid, "measure", measure)
    monkeypatch.setattr(bench.os, "geteuid", lambda: 0)
    with pytest.raises(RuntimeError, match="emulation failed"):
        bench.main(["--configs", "4x2:20", "--policies", "fifo,sebf", "--seeds", "1,2",
                    "--coflows", "4", "--json", str(out)])
    rows = json.loads(out.read_text())
    assert [r["policy"] for r in rows] == ["fifo"]
    row = rows[0]
    assert [p["seed"] for p in row["per_seed"]] == [1, 2]
    assert row["emu_n"] == 8 and row["emu_max"] > 0
    assert row["emu_max"] == max(p["max"] for p in row["per_seed"])
    assert all(p["mean_cct_ratio"] >= 1 for p in row["per_seed"]), row["per_seed"]


def test_the_fidelity_benchmarks_every_policy_is_each_registered_one_and_the_online_lps():
    """``--policies all`` (the README's table): each registered network policy once, then
    lp-coflow, lp-flow and lp-single in their online mode (each option accepted)."""
    from controller.policies import available, get_policy

    bench = benchmark("emulation_fidelity")
    known = available()
    every = bench.every_policy(known)
    assert every[:len(known)] == sorted(known)
    assert every[len(known):] == ["lp-coflow@mode=online", "lp-flow@mode=online",
                                  "lp-single@mode=online"]
    for spec in every[len(known):]:
        name, options = bench.parse_policy(spec)
        assert get_policy(name, **options).mode == "online"


def test_a_resume_hears_of_its_rules_only_after_the_datapath_cache_is_emptied():
    """The controller's barrier handler: a token whose rules someone waits for (``flush``)
    is told to the run only after the purge, and a failed purge is logged and told all
    the same; a token without ``flush`` posts nothing (a later token's event answers for
    earlier ones, so it must never overtake a purge)."""
    import queue
    import time
    from types import SimpleNamespace

    import os_ken.base.app_manager  # noqa: F401  (import order: see controller.app)

    from controller.app import CoflowController

    class Run:
        def __init__(self):
            self.events, self.lines = queue.Queue(), []

        def decision(self, **kw):
            self.lines.append(kw)

    class Cache:
        def __init__(self, fail=False):
            self.fail, self.calls = fail, 0

        def purge(self):
            self.calls += 1
            if self.fail:
                raise OSError("ovs-vswitchd closed the socket")
            return 0.002

    app = CoflowController.__new__(CoflowController)   # no os-ken: the handlers' state only
    app.run, app._lock, app._rule_q = Run(), threading.Lock(), queue.Queue()
    app._barriers, app._pending_barrier = {}, {}
    app.datapath = Cache()

    def reply(dpid, xid):
        app.barrier_reply(SimpleNamespace(msg=SimpleNamespace(
            datapath=SimpleNamespace(id=dpid), xid=xid)))

    sink, flush = [], []
    app._pending_barrier.update({1: [7, 8], 2: [7]})
    app._barriers.update({(7, 10): ("rules", 1, time.time(), sink, flush),
                          (8, 11): ("rules", 1, time.time(), sink, flush),
                          (7, 12): ("rules", 2, time.time(), sink, None)})
    reply(7, 10)
    assert app._rule_q.empty() and not sink          # core 8 has not answered yet
    reply(7, 12)                                      # token 2: no flush, nothing posted
    reply(8, 11)
    assert len(sink) == 2 and app.run.events.empty()
    assert app._rule_q.get_nowait() == ("purge", 1, flush)
    app._purge(1, flush)
    assert app.datapath.calls == 1 and flush == [2.0]
    kind, _, token = app.run.events.get_nowait()
    assert (kind, token) == ("rules_installed", 1)
    assert [d["event"] for d in app.run.lines] == ["rules_installed"] * 2 + ["datapath_purged"]

    app.datapath = Cache(fail=True)
    app._purge(3, flush)                              # logged, and the resume goes on
    assert app.run.events.get_nowait()[2] == 3 and flush == [2.0]
    app.datapath = None                               # no control socket: no purge
    app._purge(4, flush)
    assert app.run.events.get_nowait()[2] == 4


def test_a_run_never_ready_reports_both_ends_of_its_switch_connections(tmp_path,
                                                                        monkeypatch):
    """The failure of a run never ready carries what the controller logged about its
    switches, every thread's stack whole (CI's message had kept the log's last 15 lines:
    the end of one stack), and Open vSwitch's log lines about this run's socket."""
    from emulate.mininet import engine
    from emulate.mininet.clean import controller_dir
    run = engine.MininetRun.__new__(engine.MininetRun)
    run.run_dir = str(tmp_path / "coflowemu-run-x")
    os.mkdir(run.run_dir)
    sock = os.path.join(controller_dir(run.run_dir), "of.sock")
    stack = [f"  hub.py:{n} in wait: x" for n in range(40)]
    (tmp_path / "coflowemu-run-x" / "controller.log").write_text("\n".join(
        ["2026-11-29T06:48:12.001 INFO coflowemu.controller: policy fifo started in 0.1 s",
         "2026-11-29T06:48:12.300 INFO coflowemu.controller: core 1 (dpid 0xcfe002) "
         "connected; forwarding for 5 hosts installed",
         "2026-11-29T06:49:12.208 ERROR coflowemu.controller: not ready: where every thread "
         "of the controller waits:", "thread os-ken:"] + stack +
        ["2026-11-29T06:49:12.210 INFO coflowemu.controller: result written (ok=False)"]))
    ovs_log = tmp_path / "ovs-vswitchd.log"
    ovs_log.write_text(f"06:48:11|rconn|INFO|s0<->unix:{sock}: connecting...\n"
                       "06:48:11|rconn|INFO|s9<->unix:/elsewhere/of.sock: connected\n"
                       f"06:48:12|rconn|INFO|s0<->unix:{sock}: connected\n")
    monkeypatch.setattr(engine, "OVS_LOG", str(ovs_log))
    report = run._not_ready_report()
    assert "core 1 (dpid 0xcfe002) connected" in report
    assert "thread os-ken:" in report and all(line in report for line in stack)
    assert f"s0<->unix:{sock}: connected" in report and "/elsewhere/" not in report
    assert "policy fifo started" not in report       # not about the switches
