"""The controller's run: from agent reports to a State, from the policy's Plan to rules and signals.

One :class:`EmulationRun` drives one emulated run of a workload. It is the stateful shell
around the policy: it keeps what the agents report (registration, flow starts, flow
completions, byte counters), builds a :class:`~controller.plan.State` at the same events
as the simulator (the start, releases, coflow completions, byte thresholds, the plan's
horizon), calls ``policy.plan(state)`` and *enforces* the plan:

* every flow the plan's rates (:mod:`controller.rates`) let send is started on its core,
  on a persistent connection between its hosts on that core (opened before the start,
  so no handshake): an OpenFlow rule on that core's switch matches the connection's
  4-tuple, marks the flow's class (``set_field ip_dscp``) and forwards it; the agent marks
  the same class on its socket;
* the plan's order becomes classes by :func:`controller.classes.conflict_classes`,
  re-mapped at every event; for a plan without rate caps one lower than they come (class
  0 is kept for a flow that starts where a flow it preempts still has bytes queued:
  :func:`controller.classes.preempting_classes`); a rule is modified when its flow's class
  changes;
* a started flow the plan gives rate 0 is paused at its agent (its rule moves to the
  drain class, :data:`~controller.classes.DRAIN_CLASS`) and resumed later;
* a flow with a rate cap is paced by its agent at its planned payload rate
  (:mod:`emulate.mininet.pacer`);
* with ``sharing="fair"`` every flow sends in one class and TCP shares.

When a flow completes the rates are recomputed from the same plan (as the simulator
does; not with ``rates_fixed``). All of this runs in one thread (:meth:`EmulationRun.serve`),
fed by a queue of events from the API threads, the OpenFlow thread and its own timers;
decisions are logged, one JSON line each with a timestamp, to ``decisions.jsonl``.

Latency matters (the simulator's control loop takes no time): signals go to the agents
before the rule changes go to the switches; the State's byte counts are estimated (last
measured counters plus the planned rates since) instead of waiting a round trip to every
receiver (``exact_state`` waits); counters for the segments are collected asynchronously.

Resumes are the exception: a resumed flow's agent is told once the switch has its new rule
(the ``rules_installed`` barrier, 3-30 ms). Told at once, it sent its first window while
the rule still put it in the drain class, and its own later packets, in the new class,
overtook them: holes in its sequence that only the retransmission timer repaired, a
timer that the paused flow's drained round trips (up to 0.5 s in the drain class) had
inflated to 0.5-0.7 s (``ss -ti``: ``rto:532 rtt:17.986/24.659``, 11 of 13 segments
SACKed, nothing sent for 0.56 s). In ``tests/test_emulation_jobs.py`` that made a job 9-17 %
late in 4 of 30 runs (5 cases x 6, 2026-11-27); told after the rule, 0 of 30. A barrier
reply means the switch's tables have the rule, not yet its datapath cache (up to 93 ms
later on a loaded machine: :mod:`controller.datapath`); so the rules a resume waits for
are sent with ``flush``: after their barrier the cache is emptied, then the run hears
``rules_installed``.

Times: the emulation runs ``time_scale`` times slower than the workload (link rates
divided by it, release times multiplied by it); every time reported is converted back to
workload seconds, so records compare directly with the simulator's.
"""
from __future__ import annotations

import heapq
import json
import logging
import os
import queue
import threading
import time
from dataclasses import asdict, dataclass, field

import numpy as np

from controller import rates
from controller.api import ApiError
from controller.classes import (DRAIN_CLASS, N_DATA_CLASSES, RUN_CLASS, coflow_classes,
                                conflict_classes, dscp_of, preempting_classes, tos_of)
from controller.lifecycle import CoflowLifecycle
from controller.model import Workload
from controller.plan import Plan, PlanError, State
from topologies.mininet_topo import core_address, switch_port

log = logging.getLogger("coflowemu.controller")

IDLE, RUNNING, PAUSED, DONE = 0, 1, 2, 3
_STATUS = {IDLE: "idle", RUNNING: "running", PAUSED: "paused", DONE: "done"}


@dataclass
class RunConfig:
    """What the engine tells the controller about a run (``config.json``)."""

    run_dir: str
    api_path: str
    ofp_port: int
    """TCP port of the OpenFlow listener on 127.0.0.1 (when there is no ``ofp_path``)."""
    n_hosts: int
    n_cores: int
    time_scale: float = 1.0
    data_port: int = 5001
    pause: bool = True
    """Pause started flows the plan gives rate 0 (else leave them in the lowest class)."""
    class_mapping: str = "conflict"
    prewarm: bool = True
    """Open a persistent connection per (src, dst, core) before the start."""
    exact_state: bool = False
    """Wait for every receiver's counters before each policy call (else estimate them)."""
    interactive: bool = False
    """``coflowemu topo``: forwarding only, no workload."""
    start_delay: float = 0.3
    ready_timeout: float = 60.0
    run_timeout: float = 3600.0
    counters_timeout: float = 2.0
    ofp_path: str = ""
    """The OpenFlow listener's Unix socket (in the private run directory: only root, i.e.
    the run's own switches, can reach it); empty: TCP on ``127.0.0.1:ofp_port``."""
    liveness_interval: float = 1.0
    """Seconds between pings to every agent during the run."""
    liveness_timeout: float = 5.0
    """An agent silent this long (stopped, hung) fails the run, naming its host."""
    drain_bytes: int = 0
    """What a flow can have in flight (the agents' receive window): after a flow stops or
    moves to a lower class, its links count as draining for this many bytes at the core's
    rate (0: never; :func:`controller.classes.preempting_classes`)."""
    ovs_ctl: str = ""
    """ovs-vswitchd's control socket (:func:`controller.datapath.unixctl_path`): the
    datapath cache is emptied there before a resumed flow is told; "": not emptied."""

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1)

    @classmethod
    def from_json(cls, text: str) -> "RunConfig":
        return cls(**json.loads(text))


@dataclass(order=True)
class _Timer:
    at: float
    seq: int
    kind: str = field(compare=False)
    data: object = field(compare=False, default=None)


def stacks(depth: int = 6) -> str:
    """Every thread's stack, its ``depth`` innermost frames one line each, for a run that
    waits for what never comes: os-ken runs each switch connection in a thread of its
    own (its native hub), and the OpenFlow handshake is invisible from the run's own
    thread. Short enough for the engine's error message to carry whole."""
    import sys
    import traceback
    names = {t.ident: t.name for t in threading.enumerate()}
    out = []
    for ident, f in sys._current_frames().items():
        out.append(f"thread {names.get(ident, ident)}:")
        out += [f"  {os.path.basename(fr.filename)}:{fr.lineno} in {fr.name}: {fr.line}"
                for fr in traceback.extract_stack(f)[-depth:]]
    return "\n".join(out)


#: how the controller's error for a run never ready starts (the engine and the tests
#: recognise it by this)
NOT_READY = "not ready after"

#: the controller log's line before every thread's stack of a run never ready
STACKS_MARK = "where every thread of the controller waits"


class RunAborted(RuntimeError):
    """The run cannot go on (agent lost, switch lost, policy error, timeout)."""


class EmulationRun:
    """See the module docstring. ``switches`` is the OpenFlow side (controller.app);
    ``gated`` coflows are released only once opened (``lifecycle.open``: a joint run's
    shuffles). Releases, readiness and completions are :attr:`lifecycle`
    (:class:`controller.lifecycle.CoflowLifecycle`, the simulator's too)."""

    def __init__(self, cfg: RunConfig, workload: Workload, policy, switches, gated=None):
        self.cfg = cfg
        self.workload = workload
        self.policy = policy
        self.switches = switches
        a = self.arrays = workload.arrays
        nf, nc = a.n_flows, a.n_coflows
        self.scale = float(cfg.time_scale)
        self.core_rate = np.array(workload.fabric.rates, dtype=np.float64) / 8.0  # B/s
        self.events: queue.Queue = queue.Queue()
        self.timers: list[_Timer] = []
        self._tseq = 0
        # flows
        self.status = np.full(nf, IDLE, dtype=np.int64)
        self.rx = np.zeros(nf)              # bytes received, last measured
        self.est_base = np.zeros(nf)        # estimate: bytes at est_t ...
        self.est_t = np.zeros(nf)
        self.est_rate = np.zeros(nf)        # ... plus this emulated rate since, bytes/s
        self.pinned = np.full(nf, -1, dtype=np.int64)
        self.cls = np.full(nf, -1, dtype=np.int64)
        # until when (time.monotonic) a flow that stopped or moved to a lower class may
        # still have bytes queued on a core's input from a host / output to a host
        self.drain_in = np.zeros((workload.fabric.cores, workload.fabric.ports))
        self.drain_out = np.zeros((workload.fabric.cores, workload.fabric.ports))
        self.pace = np.full(nf, np.nan)
        self.sport = np.full(nf, -1, dtype=np.int64)     # connection a flow is sent on
        self._next_sport = 10000
        self.idle: dict[tuple[int, int, int], list[int]] = {}  # (src, dst, core) -> sports
        self.conn_key: dict[int, tuple[int, int, int]] = {}
        self.rule_cls: dict[int, int] = {}   # connection (source port) -> its rule's class
        self.flow_done = np.zeros(nf, dtype=bool)
        self.flow_completion = np.full(nf, np.nan)
        self.started_at = np.full(nf, np.nan)
        # coflows: released, ready, complete (``gated`` ones wait for lifecycle.open)
        self.lifecycle = CoflowLifecycle(a, gated, on_complete=self._coflow_done)
        self.sent = np.zeros(nc)
        # segments: per flow, the (time, rx) of the last reading while running (a resume
        # restarts the time: what drained while paused counts from there), and the time
        # of that reading itself
        self.seg_t = np.full(nf, np.nan)
        self.seg_rx = np.zeros(nf)
        self.read_t = np.full(nf, np.nan)
        # resumed flows whose agent waits for their rule (see _apply):
        # flow -> (the rules' token, time.time() of the resume)
        self.resumes: dict[int, tuple[int, float]] = {}
        self.segments: list[tuple[int, int, float, float, float]] = []
        # bookkeeping
        self.agents: dict[int, object] = {}
        self._pinged: dict[int, float] = {}   # host -> when its unanswered ping was sent
        self.watchers: list = []
        self.cores_ready: set[int] = set()
        self.plan: Plan | None = None
        self.plan_seq = 0
        self.policy_calls = 0
        self.applies = 0
        self.t0: float | None = None
        self.m_loop = 0.0          # monotonic time the current batch of events was taken
        self.finished = False
        self.error: str | None = None
        self.stats: dict[str, list] = {"policy_ms": [], "snapshot_ms": [],
                                       "event_to_rules_ms": [], "event_to_signal_ms": [],
                                       "resume_wait_ms": [], "datapath_purge_ms": []}
        self.api_errors = 0
        self._dlock = threading.Lock()
        self._dlog = open(f"{cfg.run_dir}/decisions.jsonl", "a", buffering=1)

    def _grow_flows(self, n: int) -> None:
        """``n`` flows were appended to :attr:`arrays` (made at run time): extend every
        per-flow array with an idle flow's state."""
        pad = {"status": IDLE, "rx": 0.0, "est_base": 0.0, "est_t": 0.0, "est_rate": 0.0,
               "pinned": -1, "cls": -1, "pace": np.nan, "sport": -1, "flow_done": False,
               "flow_completion": np.nan, "started_at": np.nan, "seg_t": np.nan,
               "seg_rx": 0.0, "read_t": np.nan}
        for name, v in pad.items():
            old = getattr(self, name)
            setattr(self, name, np.concatenate([old, np.full(n, v, dtype=old.dtype)]))

    # ------------------------------------------------------------------ time
    def now_w(self, t: float | None = None) -> float:
        """Workload time (seconds) of wall time ``t`` (default: now)."""
        t = time.time() if t is None else t
        return (t - self.t0) / self.scale

    def at_w(self, tw: float) -> float:
        """Wall time of workload time ``tw``."""
        return self.t0 + tw * self.scale

    def _timer(self, at: float, kind: str, data=None) -> None:
        self._tseq += 1
        heapq.heappush(self.timers, _Timer(at, self._tseq, kind, data))

    def decision(self, **fields) -> None:
        """Log one decision (a JSON line with the wall time ``t`` and workload time ``tw``)."""
        fields = {"t": round(time.time(), 6), **fields}
        if self.t0 is not None:
            fields.setdefault("tw", round(self.now_w(), 6))
        line = json.dumps(fields, separators=(",", ":"), default=_jsonable) + "\n"
        with self._dlock:
            if not self._dlog.closed:
                self._dlog.write(line)

    # ------------------------------------------------------------------ API side
    def on_request(self, ch, msg: dict) -> None:
        """Called by the API threads with every valid request. Raises ApiError."""
        op = msg["op"]
        a = self.arrays
        if op == "ping":
            ch.answer(msg["id"])
            return
        if op == "watch":
            ch.role = "watcher"
            self.watchers.append(ch)
            ch.answer(msg["id"], n_coflows=a.n_coflows)
            return
        if op == "register":
            host = msg["host"]
            if host >= self.cfg.n_hosts:
                raise ApiError(f"register: host {host} out of range 0..{self.cfg.n_hosts - 1}")
            if ch.role == "agent":
                raise ApiError(f"register: this connection is already host {ch.host}")
            if host in self.agents and not self.agents[host].closed:
                raise ApiError(f"register: host {host} already has an agent")
            ch.host, ch.role, ch.pid = host, "agent", msg["pid"]
            self.agents[host] = ch
            ch.answer(msg["id"], data_port=self.cfg.data_port, **self.register_info(host))
            self.events.put(("register", time.time(), host))
            return
        # the rest name a flow
        f = msg.get("flow")
        if op == "agent_error":
            if ch.role != "agent":
                raise ApiError("agent_error: only a registered agent may report errors")
            self.events.put(("agent_error", time.time(), (ch.host, f, msg["error"])))
            ch.answer(msg["id"])
            return
        if f >= a.n_flows:
            raise ApiError(f"{op}: flow {f} out of range 0..{a.n_flows - 1}")
        if op == "plan":
            ch.answer(msg["id"], **self.flow_info(f))
            return
        if ch.role != "agent":
            raise ApiError(f"{op}: only a registered agent may report flows")
        if op == "flow_started":
            if ch.host != a.src[f]:
                raise ApiError(f"flow_started: flow {f} is sent by host {a.src[f]}, "
                               f"not by host {ch.host}")
            if self.status[f] == IDLE:
                raise ApiError(f"flow_started: flow {f} was never started")
            self.events.put(("flow_started", time.time(), (f, msg["t"], msg.get("t_cmd"), {
                "m_cmd": msg.get("m_cmd"), "m_write": msg.get("m"),
                "m_recv": time.monotonic()})))
        elif op == "flow_done":
            if ch.host != a.dst[f]:
                raise ApiError(f"flow_done: flow {f} is received by host {a.dst[f]}, "
                               f"not by host {ch.host}")
            if msg["bytes"] != int(a.size[f]):
                raise ApiError(f"flow_done: flow {f} has {int(a.size[f])} bytes, "
                               f"report says {msg['bytes']}")
            if self.status[f] in (IDLE, DONE):
                raise ApiError(f"flow_done: flow {f} is {_STATUS[self.status[f]]}")
            self.events.put(("flow_done", time.time(), (f, msg["t"], {
                "m_done": msg.get("m"), "m_first": msg.get("m_first"),
                "m_recv": time.monotonic()})))
        ch.answer(msg["id"])

    def register_info(self, host: int) -> dict:
        """Extra fields of the answer to ``register`` (a joint run: the capacity)."""
        return {}

    def on_close(self, ch) -> None:
        if ch.role == "agent" and not self.finished and self.agents.get(ch.host) is ch:
            self.events.put(("agent_lost", time.time(), ch.host))
        if ch.overflowed:
            log.warning("%s %s did not read its messages and was disconnected", ch.role,
                        ch.name if ch.host is None else f"of host {ch.host}")
        if ch in self.watchers:
            self.watchers.remove(ch)

    def flow_info(self, f: int) -> dict:
        a = self.arrays
        return {"flow": f, "coflow": self.workload.coflows[a.coflow[f]].id,
                "src": int(a.src[f]), "dst": int(a.dst[f]), "bytes": int(a.size[f]),
                "status": _STATUS[int(self.status[f])],
                "core": int(self.pinned[f]), "class": int(self.cls[f]),
                "paused": bool(self.status[f] == PAUSED),
                "pace_bps": None if np.isnan(self.pace[f]) else float(self.pace[f])}

    def warm_up(self) -> None:
        """Call a copy of the policy on the start state once, before the clock starts.

        Policies compile (numba) or build caches on their first call; paid inside the run
        it would delay the first plan by up to a second of emulated time. The copy keeps
        the real policy's own state untouched. The rate rule's kernels
        (:mod:`controller.rates`) are compiled (or loaded from numba's cache) here too.
        """
        import copy
        rates.warm_up()
        saved = (self.lifecycle, self.t0)
        try:
            self.t0 = time.time()
            # the start's state, on a lifecycle of its own (the run's stays untouched)
            life = self.lifecycle = CoflowLifecycle(self.arrays, np.flatnonzero(saved[0].gated))
            life.release_due(0.0)
            life.make_ready(0.0, self.flow_done)
            st = self.state("start")
            copy.deepcopy(self.policy).plan(st).validate(st)   # (validate compiles too)
        except Exception as e:  # noqa: BLE001 - the real call will report it
            log.warning("policy warm-up failed: %s", e)
        finally:
            self.lifecycle, self.t0 = saved

    # ------------------------------------------------------------------ main loop
    def serve(self) -> dict:
        """Run to the end; returns the result dict (also on error, with ``error``)."""
        try:
            self._wait_ready()
            if self.cfg.prewarm:
                self.prewarm()
            self._run()
        except RunAborted as e:
            self.error = str(e)
            log.error("run aborted: %s", e)
        except Exception as e:  # noqa: BLE001
            self.error = f"{type(e).__name__}: {e}"
            log.exception("run failed")
        self.finished = True
        result = self.result()
        self.decision(event="finished", ok=self.error is None, error=self.error)
        for w in list(self.watchers):
            w.send({"op": "finished", "ok": self.error is None, "error": self.error})
        for ch in list(self.agents.values()):
            ch.send({"op": "stop", "id": 0})
        self._dlog.close()
        return result

    def _wait_ready(self) -> None:
        deadline = time.time() + self.cfg.ready_timeout
        n_cores = self.workload.fabric.cores
        while len(self.agents) < self.cfg.n_hosts or len(self.cores_ready) < n_cores:
            left = deadline - time.time()
            if left <= 0:
                log.error("not ready: %s:\n%s", STACKS_MARK, stacks())
                raise RunAborted(
                    f"{NOT_READY} {self.cfg.ready_timeout:g} s: agents of hosts "
                    f"{sorted(set(range(self.cfg.n_hosts)) - set(self.agents))} and "
                    f"cores {sorted(set(range(n_cores)) - self.cores_ready)} missing")
            try:
                ev = self.events.get(timeout=left)
            except queue.Empty:
                continue
            self._handle_setup(ev)

    def _new_conn(self, key: tuple[int, int, int], cls: int = 0) -> int:
        """A new connection's source port for ``key``; its rule (class ``cls``) installed.

        Class 0 by default (the prewarmed connections): the class most flows of a capped
        plan start in (in a matching no two running flows share a link), and above the
        one the others start in (:data:`~controller.classes.RUN_CLASS`). A flow whose
        rule is in another class crosses the switch in that class until the modify lands,
        and its first segments stay there, behind whatever waits in it, after the rest of
        the flow moved: with the lowest class (until 2026-11-26) a flow's first byte
        waited behind paused flows' bytes in flight. lp-single on 16 x 4 at 1 Mbit/s, seed 1: a
        coflow of eight 8.6 kB flows to one host +50 % -> +13 / +22 %, p90 per-coflow
        error 31-34 % (three runs) -> 14.5 / 22.0 % (two runs)."""
        sport = self._next_sport
        self._next_sport += 1
        if self._next_sport > 65000:
            raise RunAborted("out of source ports for connections")
        self.conn_key[sport] = key
        s, d, h = key
        self.rule_cls[sport] = cls
        self.switches.install_flow(h, sport, self._conn_rule(key, sport, cls))
        return sport

    def prewarm(self) -> None:
        """One persistent connection per (source, destination, core), opened before t0.

        A flow then starts on an established connection (its switch rule already there):
        no handshake, no ARP, no new megaflow in the switch on its first packets.
        """
        t = time.perf_counter()
        n, m = self.cfg.n_hosts, self.workload.fabric.cores
        reqs = []
        for (s, d) in sorted(self.prewarm_pairs()):
            for h in range(m):
                key = (s, d, h)
                sport = self._new_conn(key)
                ch = self.agents[s]
                reqs.append((key, sport, ch, ch.request_async(
                    {"op": "connect", "addr": core_address(d, h), "port": self.cfg.data_port,
                     "src_addr": core_address(s, h), "sport": sport})))
        deadline = time.time() + max(10.0, 0.05 * len(reqs))
        for key, sport, ch, req in reqs:
            ans = ch.wait(*req, timeout=max(0.0, deadline - time.time()))
            if not ans or not ans.get("ok"):
                raise RunAborted(f"could not open connection {key} (source port {sport}): "
                                 f"{ans}")
            self.idle.setdefault(key, []).append(sport)
        log.info("%d connections opened in %.3f s (%d hosts, %d cores)", len(reqs),
                 time.perf_counter() - t, n, m)
        self.decision(event="prewarm", connections=len(reqs),
                      ms=round((time.perf_counter() - t) * 1e3, 1))

    def prewarm_pairs(self) -> set:
        """(source, destination) host pairs that get a connection on every core."""
        return {(int(s), int(d)) for s, d in zip(self.arrays.src, self.arrays.dst)}

    def _handle_setup(self, ev) -> None:
        kind, _, data = ev
        if kind == "register":
            log.info("agent of host %d registered", data)
        elif kind == "switch_ready":
            self.cores_ready.add(data)
            log.info("core %d ready", data)
        elif kind in ("agent_lost", "switch_lost"):
            raise RunAborted(f"{kind} before the start: {data}")
        elif kind == "intruder":
            raise RunAborted(_intruder(data))
        elif kind == "agent_error":
            log.warning("agent error before the start: %s", data)

    def _run(self) -> None:
        a = self.arrays
        self.t0 = time.time() + self.cfg.start_delay
        releases = set(np.unique(a.release).tolist()) | {0.0}  # the simulator plans at 0
        for r in sorted(releases):
            self._timer(self.at_w(float(r)), "release", float(r))
        self.decision(event="t0", t0=self.t0, scale=self.scale)
        log.info("t0 = %.6f (time scale %g)", self.t0, self.scale)
        self.on_t0()
        self._timer(time.time() + self.cfg.liveness_interval, "liveness")
        deadline = time.time() + self.cfg.run_timeout
        first = True
        while not self.all_done():
            if time.time() > deadline:
                raise RunAborted(f"run did not finish within {self.cfg.run_timeout:g} s")
            timeout = (self.timers[0].at - time.time()) if self.timers else 1.0
            try:
                ev = self.events.get(timeout=max(0.0, min(timeout, 1.0)))
            except queue.Empty:
                ev = None
            if ev is None:
                if self.timers and self.timers[0].at <= time.time():
                    tm = heapq.heappop(self.timers)
                    ev = (tm.kind, time.time(), tm.data)
                else:
                    self._check_stuck()
                    continue
            # take everything already queued too: simultaneous completions make one event
            batch = [ev]
            while True:
                try:
                    batch.append(self.events.get_nowait())
                except queue.Empty:
                    break
            while self.timers and self.timers[0].at <= time.time():
                tm = heapq.heappop(self.timers)
                batch.append((tm.kind, time.time(), tm.data))
            self.m_loop = time.monotonic()
            first = self._handle(batch, first)

    def on_t0(self) -> None:
        """Called once the clock's origin ``t0`` is set (a joint run arms its timers)."""

    def all_done(self) -> bool:
        """The run is over: every coflow complete (a joint run: and every stage)."""
        return self.lifecycle.finished

    def busy(self) -> bool:
        """Something is under way that will produce an event (a running flow)."""
        return bool((self.status == RUNNING).any())

    def check_agents(self) -> None:
        """Raise :class:`RunAborted` naming an agent silent for ``liveness_timeout``
        (stopped by SIGSTOP, hung, its machine overloaded); ping the others (their answer
        is what they are heard by when they have nothing to report)."""
        now = time.monotonic()
        for host, ch in sorted(self.agents.items()):
            asked = self._pinged.get(host)
            if asked is not None and ch.last_heard >= asked:
                asked = None                     # heard from since: alive
            if asked is None:
                self._pinged[host] = now
                ch.request_cb({"op": "ping"}, _ignore)
            elif now - asked > self.cfg.liveness_timeout:
                # measured from the ping, not from the last message: a long policy call
                # of our own is no reason to blame an agent
                raise RunAborted(
                    f"the agent of host {host} (pid {ch.pid}) has not answered for "
                    f"{now - asked:.1f} s (stopped or hung): the run cannot go on")

    def _check_stuck(self) -> None:
        if self.t0 is None or time.time() < self.t0:
            return
        busy = self.busy()
        pending = any(t.kind in ("release", "horizon", "byte_check") for t in self.timers)
        if not busy and not pending and not self.all_done():
            stuck = [self.workload.coflows[k].id
                     for k in np.flatnonzero(~self.lifecycle.done)][:5]
            raise RunAborted(f"the plan lets nothing send at t={self.now_w():g} while "
                             f"coflows {stuck} are unfinished and no event is pending")

    def _handle(self, batch, first: bool) -> bool:
        t_recv = min(ev[1] for ev in batch)
        replan = None
        reapply = False
        completed = []
        became_ready = False
        for kind, _, data in batch:
            if kind == "release":
                if first:
                    replan = "start"
                else:
                    replan = replan or "horizon"
                self.release(data)
            elif kind == "flow_done":
                f, t_done, marks = data
                if self.status[f] == DONE:
                    continue
                completed += self._flow_done(f, t_done, marks)
                reapply = True
            elif kind == "flow_started":
                f, t, t_cmd, marks = data
                if np.isnan(self.started_at[f]):
                    self.started_at[f] = t
                    self.decision(event="flow_started", flow=f, tw_started=self.now_w(t),
                                  t_cmd=t_cmd, t_conn=t, **_marks(marks))
            elif kind == "horizon":
                if data == self.plan_seq:
                    replan = replan or "horizon"
            elif kind == "byte_check":
                if data == self.plan_seq:
                    if self._byte_limit_hit():
                        replan = replan or "byte_limit"
                    else:
                        self._arm_byte_limit(self.plan)
            elif kind == "liveness":
                self.check_agents()
                self._timer(time.time() + self.cfg.liveness_interval, "liveness")
            elif kind == "agent_lost":
                raise RunAborted(f"the agent of host {data} disconnected")
            elif kind == "switch_lost":
                raise RunAborted(f"the switch of core {data} disconnected")
            elif kind == "intruder":
                raise RunAborted(_intruder(data))
            elif kind == "agent_error":
                host, f, err = data
                raise RunAborted(f"agent of host {host} reports for flow {f}: {err}")
            elif kind == "counters":
                self._counters(*data)
            elif kind == "rules_installed":
                self._resume(data)
            elif kind == "register":
                log.warning("agent of host %s registered again during the run", data)
            elif kind == "switch_ready":
                self.cores_ready.add(data)
        if self._make_ready():
            became_ready = True
        if completed:
            replan = "completion"
        if became_ready and replan in (None, "horizon"):
            replan = "ready"
        if completed and self.watchers:
            msg = {"op": "progress", "done": int(self.lifecycle.done.sum()),
                   "total": int(self.arrays.n_coflows)}
            for w in list(self.watchers):
                w.send(msg)
        if self.all_done():
            return False
        if replan is not None:
            self._replan(replan, t_recv)
            return False
        if reapply and self.plan is not None and not getattr(self.plan, "rates_fixed", False):
            # rates follow the same plan after a flow completes (with rates_fixed they
            # stay until the next plan: the finished flow's capacity idles)
            self._apply(self.plan, t_recv, "flow_completion")
        return first

    # ------------------------------------------------------------------ bookkeeping
    def _flow_done(self, f: int, t_done: float, marks: dict | None = None) -> list[int]:
        a = self.arrays
        tw = self.now_w(t_done)
        if not t_done > self.seg_t[f]:
            # resumed after its last bytes had arrived (they were in its socket when it
            # was paused; the resume crossed this report): they count from the last
            # reading, not from the resume (they were lost: the likely cause of a CI run
            # measuring a 53 kB flow of the DAG test as 46 kB, 2026-11-27)
            self.seg_t[f] = self.read_t[f]
        self._close_segment(f, t_done, float(a.size[f]))
        self.resumes.pop(f, None)
        self.status[f] = DONE
        self.flow_done[f] = True
        self.rx[f] = a.size[f]
        self.est_base[f], self.est_t[f], self.est_rate[f] = a.size[f], t_done, 0.0
        self.flow_completion[f] = tw
        sport = int(self.sport[f])
        key = self.conn_key[sport]
        self.idle.setdefault(key, []).append(sport)
        self.decision(event="flow_done", flow=f, tw_done=tw, m_loop=round(self.m_loop, 6),
                      **_marks(marks))
        k = int(a.coflow[f])
        return [k] if self.lifecycle.finish_flow(f, tw) else []

    def _coflow_done(self, k: int, tw: float) -> None:
        """Coflow ``k`` completed at ``tw`` (called by the lifecycle)."""
        self.decision(event="coflow_done", coflow=self.workload.coflows[k].id, tw_done=tw)

    def release(self, r: float) -> None:
        """Release time ``r`` has come: its coflows are released (a gated one once
        opened)."""
        self.lifecycle.release_due(r)

    def _make_ready(self) -> bool:
        """Mark ready what can be (empty coflows complete now); True if any."""
        return self.lifecycle.make_ready(self.now_w(), self.flow_done)

    def snapshot(self) -> float:
        """Read the receivers' byte counters of every started flow; returns ms taken."""
        t = time.perf_counter()
        live = np.flatnonzero((self.status == RUNNING) | (self.status == PAUSED))
        hosts = sorted({int(self.arrays.dst[f]) for f in live})
        reqs = []
        for h in hosts:
            ch = self.agents.get(h)
            if ch is not None:
                reqs.append((h, ch, ch.request_async({"op": "counters"})))
        deadline = time.time() + self.cfg.counters_timeout
        for h, ch, req in reqs:
            ans = ch.wait(*req, timeout=max(0.0, deadline - time.time()))
            self._counters(h, ans)
        ms = (time.perf_counter() - t) * 1e3
        self.stats["snapshot_ms"].append(ms)
        return ms

    def snapshot_async(self, flows) -> None:
        """Ask the receivers of ``flows`` for counters; the answers come back as events
        (segment boundaries of flows whose rate just changed, off the critical path)."""
        for h in sorted({int(self.arrays.dst[f]) for f in flows}):
            ch = self.agents.get(h)
            if ch is not None:
                ch.request_cb({"op": "counters"}, lambda ans, h=h: self.events.put(
                    ("counters", time.time(), (h, ans))))

    def _counters(self, h: int, ans) -> None:
        if not ans or not ans.get("ok") or not isinstance(ans.get("rx"), dict):
            log.warning("no counters from host %d (%r); using the last ones", h, ans)
            return
        t_read = float(ans.get("t", time.time()))
        for key, n in ans["rx"].items():
            try:
                f, n = int(key), float(n)
            except (TypeError, ValueError):
                continue
            if 0 <= f < len(self.rx) and self.status[f] in (RUNNING, PAUSED):
                if (self.arrays.dst[f] == h and n >= self.rx[f]
                        and (np.isnan(self.seg_t[f]) or t_read > self.seg_t[f])):
                    self.rx[f] = min(n, self.arrays.size[f])
                    self.est_base[f], self.est_t[f] = self.rx[f], t_read
                    self._close_segment(f, t_read, self.rx[f], reopen=True)

    def _close_segment(self, f: int, t: float, rx: float, reopen: bool = False) -> None:
        t_prev = self.seg_t[f]
        if not np.isnan(t_prev) and t > t_prev and rx > self.seg_rx[f]:
            t0w, t1w = self.now_w(t_prev), self.now_w(t)
            self.segments.append((f, int(self.pinned[f]), t0w, t1w,
                                  (rx - self.seg_rx[f]) * 8.0 / (t1w - t0w)))
        if reopen:
            self.seg_t[f], self.seg_rx[f] = t, rx
            self.read_t[f] = t
        else:
            self.seg_t[f], self.seg_rx[f] = np.nan, rx

    def estimated_rx(self, t: float | None = None) -> np.ndarray:
        """Bytes received per flow now: the last measurement plus the expected rate since.

        Lets the controller decide at once instead of waiting a round trip for every
        receiver's counters (``RunConfig.exact_state`` restores the wait). The expected
        rates are the plan's; the error is the difference between them and TCP's actual
        rates over the time since the last measurement (each flow completion, each
        counter answer), a few kilobytes.
        """
        t = time.time() if t is None else t
        est = self.est_base + self.est_rate * np.maximum(t - self.est_t, 0.0)
        est = np.maximum(est, self.rx)
        return np.minimum(np.where(self.status == RUNNING, est, self.rx), self.arrays.size)

    def _advance_estimates(self, t: float) -> None:
        """Fold the expected bytes up to ``t`` into the estimate before rates change."""
        self.est_base = self.estimated_rx(t)
        self.est_t[:] = t

    def state(self, event: str) -> State:
        a = self.arrays
        rx = self.estimated_rx() if not self.cfg.exact_state else self.rx
        self.sent = np.bincount(a.coflow, weights=rx, minlength=a.n_coflows)
        remaining = a.size - rx
        remaining[self.flow_done] = 0.0
        return self.lifecycle.state(max(self.now_w(), 0.0), event, self.workload, remaining,
                                    self.sent, self.flow_done, self.pinned, copy=True)

    # ------------------------------------------------------------------ planning
    def _replan(self, event: str, t_recv: float) -> None:
        snap = self.snapshot() if self.cfg.exact_state else 0.0
        st = self.state(event)
        t = time.perf_counter()
        try:
            plan = self.policy.plan(st)
            plan.validate(st)
        except PlanError as e:
            raise RunAborted(f"policy {getattr(self.policy, 'name', '?')!r}: {e}") from None
        ms = (time.perf_counter() - t) * 1e3
        self.policy_calls += 1
        self.plan_seq += 1
        self.plan = plan
        self.stats["policy_ms"].append(ms)
        self.decision(event="plan", why=event, seq=self.plan_seq, policy_ms=round(ms, 3),
                      snapshot_ms=round(snap, 3), sharing=plan.sharing,
                      horizon=plan.horizon)
        if np.isfinite(plan.horizon):
            self._timer(self.at_w(plan.horizon), "horizon", self.plan_seq)
        self._apply(plan, t_recv, event, snapshot_done=True)
        if not self.cfg.exact_state:
            # measurements for the segments and the next estimates, off the critical path
            self.snapshot_async(np.flatnonzero(self.status == RUNNING))
        self._arm_byte_limit(plan)

    def _apply(self, plan: Plan, t_recv: float, why: str, snapshot_done: bool = False) -> None:
        """Enforce ``plan`` on the current eligible flows (see the module docstring)."""
        a = self.arrays
        self.applies += 1
        t_apply = time.perf_counter()
        self._advance_estimates(time.time())
        elig = np.flatnonzero(self.lifecycle.eligible)
        order = elig[np.lexsort((elig, plan.rank[elig]))]
        core = np.where(self.pinned >= 0, self.pinned, plan.core).astype(np.int64)
        cap = np.full(a.n_flows, np.inf)
        if plan.rate_cap is not None:
            rates.byte_caps(order, np.asarray(plan.rate_cap, dtype=np.float64), cap)
        rate = rates.allocate(order, a.src, a.dst, core, cap, self.core_rate, plan.sharing,
                              plan.backfill)
        self.expected_rate = dict(zip(order.tolist(), rate.tolist()))
        eps = 1e-9 * self.core_rate.max()
        if self.cfg.pause:
            run = rate > eps
        else:
            run = cap[order] > 0
        run_flows = order[run]
        if plan.sharing == "fair":
            classes = np.zeros(len(run_flows), dtype=np.int64)
        elif self.cfg.class_mapping == "coflow":
            classes = coflow_classes(run_flows, a.coflow)
        elif plan.rate_cap is not None:
            # capped flows are paced at their planned rates and the classes only order
            # what the caps leave, often among long chains of flows sharing a port (MADD
            # splits a port among a coflow's flows): they keep every class. (sebf, 16 x 4
            # at 1 Mbit/s, seed 1: a coflow of eight flows to one host, seven of them in a
            # chain on one core, took its last flow to the lowest class with class 0 kept
            # for preempting flows: p90 per-coflow error 12.9-25 % in three runs against
            # 5.4-7.1 % in two.)
            classes = conflict_classes(run_flows, a.src, a.dst, core)
        else:
            classes = self._preempting(
                order, run_flows, core,
                conflict_classes(run_flows, a.src, a.dst, core, N_DATA_CLASSES - 1) + RUN_CLASS)
        new_cls = dict(zip(run_flows.tolist(), classes.tolist()))
        run_rate = dict(zip(order.tolist(), rate.tolist()))
        launches, updates, of_ops, rule_wait = [], {}, [], []
        log_launch, log_pause, log_resume, log_cls, log_pace = [], [], [], [], []
        t_now = time.time()
        for f in order.tolist():
            st = self.status[f]
            if f in new_cls:
                c = new_cls[f]
                # capped flows, and fair shares (TCP alone splits a link unevenly
                # between an old and a new flow: 12.7 / 7.3 Mbit/s measured), are paced
                pace = (run_rate[f] * 8.0 / self.scale
                        if np.isfinite(cap[f]) or plan.sharing == "fair" else np.nan)
                if st == IDLE:
                    h = int(core[f])
                    self.pinned[f] = h
                    self.status[f] = RUNNING
                    self.cls[f] = c
                    self.pace[f] = pace
                    key = (int(a.src[f]), int(a.dst[f]), h)
                    pool = self.idle.get(key)
                    self.sport[f] = self._take_conn(key, c)
                    self._mark(f, c, of_ops)
                    launches.append(f)
                    self.seg_t[f], self.seg_rx[f] = t_now, 0.0
                    self.read_t[f] = t_now
                    log_launch.append((f, h, c, None if np.isnan(pace) else round(pace / 1e6, 4)))
                    continue
                changed = {}
                if st == PAUSED:
                    self.status[f] = RUNNING
                    changed["paused"] = False
                    log_resume.append(f)
                    self.seg_t[f], self.seg_rx[f] = t_now, self.rx[f]
                n_ops = len(of_ops)
                if c != self.cls[f]:
                    self.cls[f] = c
                    self._mark(f, c, of_ops)
                    changed["tos"] = tos_of(c)
                    log_cls.append((f, c))
                if not (np.isnan(pace) and np.isnan(self.pace[f])) and pace != self.pace[f]:
                    self.pace[f] = pace
                    changed["pace_bps"] = None if np.isnan(pace) else float(pace)
                    log_pace.append((f, None if np.isnan(pace) else round(pace / 1e6, 4)))
                if changed:
                    if len(of_ops) > n_ops and (st == PAUSED or f in self.resumes):
                        # its rule leaves the drain class (or changes again before its
                        # agent was told): the agent resumes once the switch has the new
                        # one (module docstring, "Resumes")
                        rule_wait.append(f)
                    elif f not in self.resumes:     # (else told with its rule, as it is then)
                        updates.setdefault(int(a.src[f]), []).append(self._update_item(f))
            elif st == RUNNING:
                # what the paused flow still has in flight and in its socket drains in
                # the drain class (controller.classes)
                self.resumes.pop(f, None)
                self.status[f] = PAUSED
                log_pause.append(f)
                if self.cls[f] != DRAIN_CLASS:
                    self.cls[f] = DRAIN_CLASS
                    self._mark(f, DRAIN_CLASS, of_ops)
                updates.setdefault(int(a.src[f]), []).append(self._update_item(f))
        # The agents first: they are what starts and stops bytes; the rules follow in the
        # switches' own thread (Python's OpenFlow serialisation costs up to a millisecond
        # per message on a busy machine). A reused connection keeps its rule's class from
        # its previous flow: a flow in the same class needs no rule change at all; in
        # another class, its first packets cross the switch in the old one until the
        # modify lands (10-30 ms later with the userspace switch under load).
        for f in launches:
            h = int(self.pinned[f])
            s, d = int(a.src[f]), int(a.dst[f])
            ch = self.agents[s]
            ch.send({"op": "start", "id": 0, "flow": f, "addr": core_address(d, h),
                     "port": self.cfg.data_port, "src_addr": core_address(s, h),
                     "sport": int(self.sport[f]), "bytes": int(a.size[f]),
                     "tos": tos_of(int(self.cls[f])), "paused": False,
                     "pace_bps": None if np.isnan(self.pace[f]) else float(self.pace[f])})
        for host, items in updates.items():
            self.agents[host].send({"op": "update", "id": 0, "flows": items})
        m_signal = time.monotonic()
        token = self.switches.apply_rules(
            of_ops, t_recv, self.stats["event_to_rules_ms"],
            flush=self.stats["datapath_purge_ms"] if rule_wait else None)
        for f in rule_wait:
            self.resumes[f] = (0 if token is None else token,
                               self.resumes.get(f, (0, t_now))[1])
        if token is None:                   # switches that report no installation
            self._resume(np.inf)
        self.stats["event_to_signal_ms"].append((time.time() - t_recv) * 1e3)
        self.est_rate[:] = 0.0
        for f, r in run_rate.items():
            if self.status[f] == RUNNING:
                self.est_rate[f] = r / self.scale
        apply_ms = (time.perf_counter() - t_apply) * 1e3
        if log_pause or log_resume or log_cls:
            self.snapshot_async(log_pause + log_resume + [f for f, _ in log_cls])
        self.decision(event="apply", why=why, seq=self.plan_seq, apply_ms=round(apply_ms, 3),
                      launch=log_launch,
                      pause=log_pause, resume=log_resume, reclass=log_cls, pace=log_pace,
                      running=int((self.status == RUNNING).sum()),
                      paused=int((self.status == PAUSED).sum()),
                      m_loop=round(self.m_loop, 6), m_signal=round(m_signal, 6), rules=token)

    def _resume(self, token: float) -> None:
        """Tell the agents of the resumed flows waiting for rules up to ``token`` (rules
        are installed in order: a later token's barrier answers for earlier ones)."""
        now = time.time()
        due = sorted(f for f, (tk, _) in self.resumes.items() if tk <= token)
        if not due:
            return
        by_host: dict[int, list] = {}
        for f in due:
            _, t = self.resumes.pop(f)
            by_host.setdefault(int(self.arrays.src[f]), []).append(self._update_item(f))
            self.stats["resume_wait_ms"].append((now - t) * 1e3)
        for host, items in by_host.items():
            self.agents[host].send({"op": "update", "id": 0, "flows": items})
        self.decision(event="resume_sent", flows=due, token=None if token == np.inf else token)

    def _update_item(self, f: int) -> dict:
        """Flow ``f`` as an agent's ``update`` gives it: its class, paused or not, pace."""
        return {"flow": f, "tos": tos_of(int(self.cls[f])),
                "paused": bool(self.status[f] == PAUSED),
                "pace_bps": None if np.isnan(self.pace[f]) else float(self.pace[f])}

    def _preempting(self, order, run_flows, core, base) -> np.ndarray:
        """The classes of ``run_flows`` (:func:`controller.classes.preempting_classes`,
        ``base`` their conflict classes from 1), after noting as draining the links of
        the flows of ``order`` that stop sending now or move to a lower class."""
        a = self.arrays
        now = time.monotonic()
        new = np.full(a.n_flows, DRAIN_CLASS, dtype=np.int64)          # paused
        new[run_flows] = base
        was = order[self.status[order] == RUNNING]
        # (a flow in class 0 going back to its class leaves nothing another flow that
        # preempts could be queued behind: those start in class 0 only above it)
        lower = (new[was] > self.cls[was]) & ~((self.cls[was] == 0) & (new[was] == RUN_CLASS))
        left = was[lower]
        if len(left) and self.cfg.drain_bytes:
            h = core[left]
            until = now + self.cfg.drain_bytes * self.scale / self.core_rate[h]
            np.maximum.at(self.drain_in, (h, a.src[left]), until)
            np.maximum.at(self.drain_out, (h, a.dst[left]), until)
        fresh = (self.status[run_flows] != RUNNING) | (self.cls[run_flows] == 0)
        return preempting_classes(base, run_flows, a.src, a.dst, core, fresh,
                                  self.drain_in > now, self.drain_out > now)

    def _take_conn(self, key: tuple[int, int, int], cls: int) -> int:
        """An idle connection for ``key`` (one whose rule has class ``cls`` if any), or a
        new one."""
        pool = self.idle.get(key)
        if not pool:
            return self._new_conn(key, cls)
        same = [i for i, sport in enumerate(pool) if self.rule_cls.get(sport) == cls]
        return pool.pop(same[-1] if same else -1)

    def _mark(self, f: int, cls: int, of_ops: list) -> None:
        """Flow ``f``'s connection is to carry class ``cls``: a rule change in ``of_ops``
        unless its rule has that class already."""
        sport = int(self.sport[f])
        if self.rule_cls.get(sport) != cls:
            self.rule_cls[sport] = cls
            key = self.conn_key[sport]
            of_ops.append((key[2], sport, self._conn_rule(key, sport, cls)))

    def _conn_rule(self, key: tuple[int, int, int], sport: int, cls: int) -> dict:
        s, d, h = key
        return {"ipv4_src": core_address(s, h), "ipv4_dst": core_address(d, h),
                "tcp_src": sport, "tcp_dst": self.cfg.data_port,
                "dscp": dscp_of(cls), "out_port": switch_port(d)}

    def _byte_limit_hit(self) -> bool:
        p = self.plan
        if p is None or p.byte_limit is None:
            return False
        if self.cfg.exact_state:
            self.snapshot()
        rx = self.estimated_rx() if not self.cfg.exact_state else self.rx
        sent = np.bincount(self.arrays.coflow, weights=rx, minlength=self.arrays.n_coflows)
        lim = p.byte_limit
        return bool(((sent >= lim * (1 - 1e-9)) & np.isfinite(lim)
                     & ~self.lifecycle.done).any())

    def _arm_byte_limit(self, plan: Plan | None) -> None:
        """A timer at the predicted crossing of the nearest byte threshold."""
        if plan is None or plan.byte_limit is None:
            return
        a = self.arrays
        lim = plan.byte_limit
        best = np.inf
        expected = getattr(self, "expected_rate", {})
        life = self.lifecycle
        for k in np.flatnonzero(np.isfinite(lim) & life.ready & ~life.done):
            fl = a.flows_of(k)
            r = sum(expected.get(int(f), 0.0) for f in fl)
            if r > 0:
                sent = float(self.estimated_rx()[fl].sum())
                best = min(best, max(lim[k] - sent, 0.0) / r)
        if np.isfinite(best):
            at = time.time() + max(best * self.scale, 0.005)
            self._timer(at, "byte_check", self.plan_seq)

    # ------------------------------------------------------------------ result
    def result(self) -> dict:
        segs = self.segments
        return {
            "ok": self.error is None,
            "error": self.error,
            "t0": self.t0,
            "time_scale": self.scale,
            "flow_completion": [None if np.isnan(x) else float(x) for x in self.flow_completion],
            "coflow_completion": [None if np.isnan(x) else float(x)
                                  for x in self.lifecycle.completion],
            "segments": {"flow": [s[0] for s in segs], "core": [s[1] for s in segs],
                         "start": [s[2] for s in segs], "end": [s[3] for s in segs],
                         "rate_bps": [s[4] for s in segs]},
            "policy_calls": self.policy_calls,
            "applies": self.applies,
            "stats": {k: _summary(v) for k, v in self.stats.items()},
        }


def _intruder(data) -> str:
    core, dpid, peer = data
    return (f"a second OpenFlow connection ({peer or 'local socket'}) claimed core {core} "
            f"(datapath id {dpid:#x}) while its switch was connected: rejected; the run "
            f"is failed because its rules can no longer be trusted")


def _ignore(_answer) -> None:
    pass


def _marks(marks: dict | None) -> dict:
    """Monotonic stamps for a decision line (rounded to the microsecond, absent dropped)."""
    return {k: round(v, 6) for k, v in (marks or {}).items() if v is not None}


def _summary(values) -> dict:
    if not values:
        return {"n": 0}
    v = np.asarray(values, dtype=float)
    return {"n": int(v.size), "median": float(np.median(v)),
            "p90": float(np.percentile(v, 90)), "max": float(v.max()),
            "mean": float(v.mean())}


def _jsonable(o):
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    return str(o)
