"""The OpenFlow 1.3 application that enforces a policy's plans on the core switches.

An os-ken application (Ryu's maintained fork; the same code runs under Ryu where Ryu is
installed, by swapping the ``os_ken`` imports for ``ryu``). It is started by the Mininet
engine as its own process::

    python -m controller.app RUN_DIR

where ``RUN_DIR`` holds ``config.json`` (:class:`controller.runtime.RunConfig`),
``workload.pkl`` and ``policy.pkl``. It listens for switches on the Unix socket
``<ofp_path>`` in the run's private directory (mode 0700: only root, that is Open
vSwitch, reaches it; no TCP port, so no port to race for or to reach from another
account; ``127.0.0.1:<ofp_port>`` when no path is given) and for agents on the Unix
socket ``<api_path>``
(:mod:`controller.api`), runs the :class:`controller.runtime.EmulationRun` (for a joint
workload, whose ``policy.pkl`` names a compute and a network policy, the
:class:`controller.joint_runtime.JointEmulationRun`), writes
``result.json`` and exits. Logs: ``controller.log`` (everything, timestamped) and
``decisions.jsonl`` (one JSON line per decision).

What it installs on core switch ``c`` (datapath id ``0xcfe000 + c + 1``):

* priority 10, forwarding: IPv4 to ``10.<c+1>.0.<j+1>`` and ARP asking for it -> port
  ``j+1``; priority 11: the same address coming *from* port ``j+1`` -> back out of it
  (a host's traffic to itself, see ``topologies.mininet_topo.hairpin_commands``); nothing
  else is forwarded (no flooding: the fabric needs none);
* priority 100, one rule per agent connection (flows reuse idle connections between the
  same hosts on the same core): its TCP 4-tuple -> ``set_field ip_dscp=<class>``, output
  to the destination's port; modified whenever the class of the flow it carries changes
  (cookie = the connection's source port), in a thread of its own (``rules``) after the
  agents have their signals. An idle connection keeps its rule: the next flow on it in
  the same class needs no change. Where the run waits for rules to be in effect (a
  resumed flow leaving the drain class), the switches' datapath cache is emptied after
  their barrier (:mod:`controller.datapath`: the barrier answers for the tables only).

A second connection claiming the datapath id of a connected core (a takeover attempt)
is refused, logged, and fails the run: the connected switch is never replaced.

Handlers, by the event they answer: switch features (configure the switch), barrier
replies (the switch has applied the rules: readiness and the event-to-rules latency),
port status and errors (logged), state change to DEAD (the run aborts: a lost switch
means the plan is no longer enforced).
"""
from __future__ import annotations

import itertools
import logging
import os
import pickle
import queue
import sys
import threading
import time

from controller.datapath import Datapath
from topologies.mininet_topo import core_address, core_of_dpid, switch_port

# os-ken: import app_manager before the controller (the other order is a circular import)
from os_ken.base import app_manager  # noqa: E402  isort: skip
from os_ken.controller import ofp_event  # noqa: E402
from os_ken.controller.handler import (CONFIG_DISPATCHER, DEAD_DISPATCHER,  # noqa: E402
                                       MAIN_DISPATCHER, set_ev_cls)
from os_ken.ofproto import ofproto_v1_3  # noqa: E402

log = logging.getLogger("coflowemu.controller")

RULE_PRIORITY = 100
FORWARD_PRIORITY = 10

#: set by :func:`main` before os-ken instantiates the application
_RUN: dict = {}


class CoflowController(app_manager.OSKenApp):
    """Connects the core switches to an :class:`~controller.runtime.EmulationRun`."""

    OFP_VERSIONS = [ofproto_v1_3.OFP_VERSION]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.run = _RUN.get("run")  # None in interactive mode (forwarding only)
        self.n_hosts = _RUN["cfg"].n_hosts
        self.n_cores = _RUN["cfg"].n_cores
        self.datapaths: dict[int, object] = {}
        self._barriers: dict[tuple[int, int], tuple] = {}
        self._pending_barrier: dict[int, list] = {}
        self._lock = threading.Lock()
        self._tokens = itertools.count(1)
        self._rule_q: queue.Queue = queue.Queue()
        ctl = _RUN["cfg"].ovs_ctl
        self.datapath = Datapath(ctl) if ctl else None
        threading.Thread(target=self._rule_loop, daemon=True, name="rules").start()
        if self.run is not None:
            self.run.switches = self

    # ------------------------------------------------------------------ switch events
    @set_ev_cls(ofp_event.EventOFPSwitchFeatures, CONFIG_DISPATCHER)
    def switch_features(self, ev):
        dp = ev.msg.datapath
        core = core_of_dpid(dp.id)
        if core is None or core >= self.n_cores:
            log.warning("ignoring switch with datapath id %#x (not a core of this run)", dp.id)
            return
        first = self.datapaths.get(core)
        if first is not None and first is not dp and first.is_active:
            # a takeover attempt (or a second switch with our id): never replace the
            # connected switch; refuse the newcomer and fail the run
            log.error("rejected a second OpenFlow connection (%s) claiming core %d "
                      "(datapath id %#x): its switch is connected", dp.address or "socket",
                      core, dp.id)
            dp.close()
            if self.run is not None and not self.run.finished:
                self.run.events.put(("intruder", time.time(),
                                     (core, dp.id, str(dp.address or ""))))
            return
        self.datapaths[core] = dp
        ofp, parser = dp.ofproto, dp.ofproto_parser
        # clean slate, then forwarding
        dp.send_msg(parser.OFPFlowMod(dp, command=ofp.OFPFC_DELETE, table_id=ofp.OFPTT_ALL,
                                      out_port=ofp.OFPP_ANY, out_group=ofp.OFPG_ANY,
                                      match=parser.OFPMatch()))
        for j in range(self.n_hosts):
            addr = core_address(j, core)
            # a host's packets to itself go back out of its own port (hairpin)
            dp.send_msg(parser.OFPFlowMod(
                dp, priority=FORWARD_PRIORITY + 1,
                match=parser.OFPMatch(in_port=switch_port(j), eth_type=0x0800, ipv4_dst=addr),
                instructions=[parser.OFPInstructionActions(
                    ofp.OFPIT_APPLY_ACTIONS, [parser.OFPActionOutput(ofp.OFPP_IN_PORT)])]))
            out = [parser.OFPActionOutput(switch_port(j))]
            for match in (parser.OFPMatch(eth_type=0x0800, ipv4_dst=addr),
                          parser.OFPMatch(eth_type=0x0806, arp_tpa=addr)):
                dp.send_msg(parser.OFPFlowMod(
                    dp, priority=FORWARD_PRIORITY, match=match,
                    instructions=[parser.OFPInstructionActions(ofp.OFPIT_APPLY_ACTIONS, out)]))
        log.info("core %d (dpid %#x) connected; forwarding for %d hosts installed",
                 core, dp.id, self.n_hosts)
        self._send_barrier(dp, ("ready", core))

    # CONFIG too: the "ready" barrier is sent from switch_features, while os-ken's own
    # handler may not yet have moved the switch to MAIN (another thread); its reply,
    # dispatched in CONFIG, was dropped and the run waited 60 s for a ready core
    @set_ev_cls(ofp_event.EventOFPBarrierReply, [CONFIG_DISPATCHER, MAIN_DISPATCHER])
    def barrier_reply(self, ev):
        dp = ev.msg.datapath
        with self._lock:
            what = self._barriers.pop((dp.id, ev.msg.xid), None)
        if what is None:
            return
        if self.run is None:
            return
        if what[0] == "ready":
            self.run.events.put(("switch_ready", time.time(), what[1]))
        elif what[0] == "rules":
            _, token, t_event, sink, flush = what
            with self._lock:
                left = self._pending_barrier.get(token)
                if left is None:
                    return
                left.remove(dp.id)
                if left:
                    return
                del self._pending_barrier[token]
            ms = (time.time() - t_event) * 1e3
            sink.append(ms)
            self.run.decision(event="rules_installed", token=token, event_to_rules_ms=round(ms, 3),
                              m=round(time.monotonic(), 6))
            if flush is not None:
                self._rule_q.put(("purge", token, flush))

    @set_ev_cls(ofp_event.EventOFPErrorMsg, [CONFIG_DISPATCHER, MAIN_DISPATCHER])
    def error_msg(self, ev):
        m = ev.msg
        log.error("OpenFlow error from %#x: type=%d code=%d data=%s", m.datapath.id, m.type,
                  m.code, m.data[:64].hex() if m.data else "")
        if self.run is not None:
            self.run.decision(event="of_error", dpid=m.datapath.id, type=m.type, code=m.code)

    @set_ev_cls(ofp_event.EventOFPPortStatus, MAIN_DISPATCHER)
    def port_status(self, ev):
        m = ev.msg
        log.info("port status on %#x: reason %d port %d", m.datapath.id, m.reason,
                 m.desc.port_no)

    @set_ev_cls(ofp_event.EventOFPStateChange, [MAIN_DISPATCHER, DEAD_DISPATCHER])
    def state_change(self, ev):
        dp = ev.datapath
        if ev.state == DEAD_DISPATCHER and dp.id is not None:
            core = core_of_dpid(dp.id)
            if core is not None and self.datapaths.get(core) is dp:
                del self.datapaths[core]
                log.warning("core %d disconnected", core)
                if self.run is not None and not self.run.finished:
                    self.run.events.put(("switch_lost", time.time(), core))

    # ------------------------------------------------------------------ used by the run
    def install_flow(self, core: int, conn: int, rule: dict, modify: bool = False) -> None:
        """Pin connection ``conn`` (its source port) to ``core``'s switch: match its
        4-tuple, mark its DSCP, forward. ``modify`` changes an existing rule's class."""
        dp = self.datapaths[core]
        ofp, parser = dp.ofproto, dp.ofproto_parser
        match = parser.OFPMatch(eth_type=0x0800, ip_proto=6, ipv4_src=rule["ipv4_src"],
                                ipv4_dst=rule["ipv4_dst"], tcp_src=rule["tcp_src"],
                                tcp_dst=rule["tcp_dst"])
        out = ofp.OFPP_IN_PORT if rule["ipv4_src"] == rule["ipv4_dst"] else rule["out_port"]
        actions = [parser.OFPActionSetField(ip_dscp=rule["dscp"]),
                   parser.OFPActionOutput(out)]
        dp.send_msg(parser.OFPFlowMod(
            dp, cookie=conn, priority=RULE_PRIORITY, match=match,
            command=ofp.OFPFC_MODIFY_STRICT if modify else ofp.OFPFC_ADD,
            instructions=[parser.OFPInstructionActions(ofp.OFPIT_APPLY_ACTIONS, actions)]))

    def apply_rules(self, ops, t_event: float, sink: list,
                    flush: list | None = None) -> int | None:
        """Modify the rules ``ops`` (``(core, conn, rule)``, see :meth:`install_flow`)
        and send a barrier to their cores, in the ``rules`` thread: the run's loop goes
        on at once (serialising an OpenFlow message costs Python up to a millisecond on
        a busy machine; the next event need not wait for it). When every core has
        answered, ``sink`` gets the ms since ``t_event`` and the decision log a
        ``rules_installed`` line with the returned token (None: no ops).

        ``flush`` (a list): someone waits for these rules to be *in effect*: after the
        barrier the switches' datapath cache is emptied (:mod:`controller.datapath`),
        ``flush`` gets the ms that took, and the run's events ``("rules_installed", t,
        token)``; tokens are flushed in order, so that event answers for earlier ones."""
        if not ops:
            return None
        token = next(self._tokens)
        self._rule_q.put(("rules", list(ops), token, t_event, sink, flush))
        return token

    def _rule_loop(self) -> None:
        while True:
            item = self._rule_q.get()
            if item[0] == "purge":
                self._purge(*item[1:])
                continue
            _, ops, token, t_event, sink, flush = item
            try:
                for core, conn, rule in ops:
                    self.install_flow(core, conn, rule, modify=True)
                cores = sorted({core for core, _, _ in ops})
                dps = [self.datapaths[c] for c in cores if c in self.datapaths]
                with self._lock:
                    self._pending_barrier[token] = [dp.id for dp in dps]
                for dp in dps:
                    self._send_barrier(dp, ("rules", token, t_event, sink, flush))
            except Exception:  # noqa: BLE001 - a lost switch is reported by state_change
                log.exception("installing rules (token %d) failed", token)

    def _purge(self, token: int, sink: list) -> None:
        """Empty the datapath cache for ``token``'s rules, then tell the run (a failed
        purge is logged and told all the same: a resume must not wait forever)."""
        if self.datapath is not None:
            try:
                ms = self.datapath.purge() * 1e3
                sink.append(ms)
                self.run.decision(event="datapath_purged", token=token,
                                  purge_ms=round(ms, 3), m=round(time.monotonic(), 6))
            except OSError as e:
                log.warning("emptying the datapath cache (token %d) failed: %s", token, e)
        self.run.events.put(("rules_installed", time.time(), token))

    def _send_barrier(self, dp, what) -> None:
        msg = dp.ofproto_parser.OFPBarrierRequest(dp)
        dp.set_xid(msg)
        with self._lock:
            self._barriers[(dp.id, msg.xid)] = what
        dp.send_msg(msg)


class _UnixSwitchSocket:
    """A switch's connection on the Unix socket, as os-ken's Datapath expects it: TCP
    options (os-ken sets TCP_NODELAY on every switch) are no-ops, the rest is the socket."""

    def __init__(self, sock):
        self._sock = sock

    def setsockopt(self, level, *args):
        import socket
        if level != socket.IPPROTO_TCP:
            self._sock.setsockopt(level, *args)

    def __getattr__(self, name):
        return getattr(self._sock, name)


def _accept_unix_switches() -> None:
    """Let os-ken's Datapath take switch connections on a Unix socket."""
    import socket

    from os_ken.controller import controller as ofc
    init = ofc.Datapath.__init__
    if getattr(init, "_unix_ok", False):
        return

    def datapath_init(self, sock, address):
        if getattr(sock, "family", None) == socket.AF_UNIX:
            sock = _UnixSwitchSocket(sock)
        init(self, sock, address)
    datapath_init._unix_ok = True
    ofc.Datapath.__init__ = datapath_init


def _setup_logging(path: str) -> None:
    h = logging.FileHandler(path)
    h.setFormatter(logging.Formatter("%(asctime)s.%(msecs)03d %(levelname)s %(name)s: "
                                     "%(message)s", "%Y-%m-%dT%H:%M:%S"))
    root = logging.getLogger()
    root.handlers[:] = [h]
    root.setLevel(logging.INFO)
    logging.getLogger("os_ken").setLevel(logging.WARNING)


def main(argv=None) -> int:
    """Entry point of the controller process (see the module docstring)."""
    import signal

    from controller.api import ApiServer
    from controller.runtime import EmulationRun, RunConfig

    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m controller.app RUN_DIR", file=sys.stderr)
        return 2
    run_dir = argv[0]
    # a user's policy modules, after the standard library (see engine.start_python)
    sys.path += [d for d in os.environ.get("COFLOWEMU_CODE_PATH", "").split(os.pathsep) if d]
    signal.signal(signal.SIGTERM, lambda *_: os._exit(143))
    # the scheduler, the API threads and os-ken's per-switch send/receive threads share
    # one GIL: hand it over every 0.5 ms instead of 5 ms, or an event waits for it
    sys.setswitchinterval(0.0005)
    _setup_logging(os.path.join(run_dir, "controller.log"))
    with open(os.path.join(run_dir, "config.json")) as fh:
        cfg = RunConfig.from_json(fh.read())
    if cfg.interactive:
        # `coflowemu topo`: forwarding (and the class rules people add by hand) only
        import controller.app as app_module
        app_module._RUN.update(cfg=cfg)
        run = api = None
    else:
        with open(os.path.join(run_dir, "workload.pkl"), "rb") as fh:
            workload = pickle.load(fh)
        with open(os.path.join(run_dir, "policy.pkl"), "rb") as fh:
            policy = pickle.load(fh)
        t = time.perf_counter()
        if isinstance(policy, dict) and policy.get("redundancy"):
            # the redundancy model: copies on the agents; a network policy only for the
            # checkpoint transfers
            from controller.policies import get_policy
            from controller.redundancy.emulation import RedundancyEmulationRun
            net = policy.get("network")
            run = RedundancyEmulationRun(
                cfg, workload, policy["compute"], None if net is None else
                (lambda: get_policy(net, **policy.get("options", {}))))
        elif isinstance(policy, dict):
            # a joint run: {"compute": name, "network": name, "options": {...}}
            from controller.joint_runtime import JointEmulationRun
            from controller.policies import get_policy
            run = JointEmulationRun(cfg, workload, policy["compute"],
                                    lambda: get_policy(policy["network"],
                                                       **policy.get("options", {})))
        else:
            policy.start(workload)
            run = EmulationRun(cfg, workload, policy, switches=None)
        log.info("policy %s started in %.3f s", getattr(run.policy, "name", run.policy),
                 time.perf_counter() - t)
        t = time.perf_counter()
        run.warm_up()
        log.info("policy warmed up in %.3f s", time.perf_counter() - t)
        # os-ken imports the application as ``controller.app``, which is not ``__main__``
        import controller.app as app_module
        app_module._RUN.update(run=run, cfg=cfg)
        api = ApiServer(cfg.api_path, run.on_request, run.on_close, log=log)
        os.chmod(cfg.api_path, 0o600)
        threading.Thread(target=api.serve_forever, daemon=True, name="api").start()

    from os_ken import cfg as oscfg
    # a listen "host" that is a path in an existing directory: os-ken listens on a Unix
    # socket there (hub.StreamServer) and ignores the port, which must not be 0 (os-ken
    # would then listen a second time, on its old default port: the same path)
    host, port = (cfg.ofp_path, 6653) if cfg.ofp_path else ("127.0.0.1", cfg.ofp_port)
    if cfg.ofp_path:
        _accept_unix_switches()
    oscfg.CONF(args=["--ofp-listen-host", host, "--ofp-tcp-listen-port", str(port)],
               project="os_ken")
    threading.Thread(target=app_manager.AppManager.run_apps, args=(["controller.app"],),
                     daemon=True, name="os-ken").start()
    if run is None:
        open(cfg.api_path, "w").close()  # tells the engine we are up
        while True:
            time.sleep(3600)

    result = run.serve()
    result["api_errors"] = api.errors
    import resource
    ru = resource.getrusage(resource.RUSAGE_SELF)
    result["cpu_s"] = {"user": ru.ru_utime, "system": ru.ru_stime}
    import json
    tmp = os.path.join(run_dir, ".result.json")
    with open(tmp, "w") as fh:
        json.dump(result, fh)
    os.replace(tmp, os.path.join(run_dir, "result.json"))
    log.info("result written (ok=%s); exiting", result["ok"])
    time.sleep(0.2)  # let the stop messages leave
    api.close()
    logging.shutdown()
    os._exit(0 if result["ok"] else 1)


if __name__ == "__main__":
    sys.exit(main())
