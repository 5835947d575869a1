"""The real emulation engine: Mininet switches, the os-ken controller, agents sending TCP.

:func:`run_mininet` runs a workload under a policy on real switches and returns the same
:class:`~emulate.io.records.RunResult` as the simulator:

1. a private run directory under ``/run/coflowemu`` (state file for ``coflowemu clean``,
   the controller's API socket, logs);
2. the controller process (``python -m controller.app``, see :mod:`controller.app`),
   which computes every plan and enforces it;
3. the Mininet network (:mod:`topologies.mininet_topo`): ``N`` hosts x ``m`` cores, every
   link end shaped by the strict-priority HTB tree of :mod:`controller.classes` at the
   core's rate divided by ``time_scale`` and multiplied by ``wire_overhead`` (so that TCP
   payload, not frames, gets the fabric's rate);
4. one agent per host (:mod:`emulate.mininet.agent`) inside the host's namespace;
5. the controller releases coflows at ``release x time_scale`` after its start, and writes
   the records when every coflow is done.

Everything is torn down in a ``finally`` (agents, controller, switches, links, host
namespaces, tc state goes with the interfaces, the run directory) on success, on error,
on Ctrl-C and on SIGTERM (turned into an exception while the run is on). The controller
and the agents die with a killed engine (:func:`start_python`); what it could not remove
(run directory, bridges), ``coflowemu clean`` (:mod:`emulate.mininet.clean`) does.

A failed run (an agent lost, stopped or hung, the controller dead, an intruding switch)
raises :class:`EmulationError` whose ``partial`` is the record of the coflows that had
finished, marked incomplete (a dead controller's are read back from its decision log).

Capacity: one ovs-vswitchd thread forwards every packet; rates are accurate up to about
200 Mbit/s of total traffic on a small VM. :func:`offered_load_bps` gives a run's worst
case; pick ``time_scale`` so that it stays below that (``suggest_time_scale``).
"""
from __future__ import annotations

import contextlib
import json
import os
import pickle
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from functools import partial

import numpy as np

from controller.classes import htb_priority_tree
from controller.datapath import unixctl_path
from controller.model import Workload
from controller.runtime import NOT_READY, STACKS_MARK, RunConfig
from emulate.mininet import clean as cleaner
from emulate.mininet.agent import NOTSENT_LOWAT
from emulate.engines import EngineError, Interrupted
from emulate.io.records import RunResult, Segments
from emulate.mininet.lock import hold as machine_lock
from emulate.mininet.tcpstats import tcp_counters
from topologies.mininet_topo import (ParallelTopo, build_network, choose_datapath,
                                     host_name, stop_network, switch_intf)

WIRE_OVERHEAD = 1514 / 1448
"""Ethernet frame bytes per TCP payload byte at MTU 1500 with timestamps."""

CAPACITY_BPS = 200e6
"""Total forwarded rate up to which the userspace switch keeps per-flow rates accurate."""

OVS_LOG = "/var/log/openvswitch/ovs-vswitchd.log"
"""Where ovs-vswitchd logs (``ovs-ctl start``, as ``scripts/setup-system.sh`` runs it):
its side of a run's OpenFlow connections when the run is never ready."""


class EmulationError(EngineError):
    """The emulation could not run (not root, OVS missing: ``setup``) or failed
    (controller or agent)."""


def offered_load_bps(workload, time_scale: float = 1.0) -> float:
    """The most the switches may have to forward at once: every uplink busy, in wire bits/s.

    ``workload``: a Workload, or a JointWorkload (whose shuffles may use every machine)."""
    f = workload.fabric
    if hasattr(workload, "machines"):
        hosts = max(len(workload.machines), len(_hosts_used(workload.network)))
    else:
        used = _hosts_used(workload)
        hosts = min(len(used), f.ports) if used.size else f.ports
    return hosts * sum(f.rates) / time_scale * WIRE_OVERHEAD


def _hosts_used(workload: Workload) -> np.ndarray:
    return np.unique(np.concatenate([workload.arrays.src, workload.arrays.dst]))


def suggest_time_scale(workload, capacity_bps: float = CAPACITY_BPS) -> float:
    """Smallest power-of-two slow-down (>= 1) keeping :func:`offered_load_bps` in capacity."""
    s = 1.0
    while offered_load_bps(workload, s) > capacity_bps:
        s *= 2
    return s


def preflight() -> None:
    """Raise :class:`EmulationError` with what to do when the system is not ready."""
    if os.geteuid() != 0:
        raise EmulationError("the Mininet engine needs root (network namespaces, Open "
                             "vSwitch); run as root, after scripts/setup-system.sh",
                             setup=True)
    for tool in ("mnexec", "ovs-vsctl", "tc", "ethtool"):
        if not shutil.which(tool):
            raise EmulationError(f"{tool} not found: run scripts/setup-system.sh (installs "
                                 f"mininet, openvswitch-switch, iperf3, ethtool)", setup=True)
    r = subprocess.run(["ovs-vsctl", "--timeout=3", "show"], capture_output=True, text=True)
    if r.returncode != 0:
        raise EmulationError("Open vSwitch is not running: run scripts/setup-system.sh "
                             f"(it starts it) [{r.stderr.strip()}]", setup=True)
    try:
        import mininet  # noqa: F401
        import os_ken  # noqa: F401
    except ImportError as e:
        raise EmulationError(f"{e.name} is not installed: pip install -e '.[emulation]'",
                             setup=True) from None


def start_python(module: str, args: list[str], *, run_dir: str, stdout, nice: int = 0,
                 popen=subprocess.Popen, code_dirs=(), **kwargs):
    """Start ``python -m module args`` as a child that dies with this process, with a
    safe import path.

    The child gets its parent-death signal (SIGKILL) before it runs a single line of
    Python (``preexec_fn``; checked against a parent that died in between), so a killed
    engine leaves no controller or agent behind, even during their start-up. ``popen`` is
    ``subprocess.Popen`` or a Mininet host's ``popen`` (the agent in its namespace).

    It runs as root, so it imports only from the installed package and the standard
    library: ``python -P`` in the private ``run_dir`` (neither the user's working
    directory nor the run directory on ``sys.path``), ``PYTHONPATH`` = the package's own
    directory only. ``code_dirs`` (the directories of a user's policy modules, see
    :func:`policy_dirs`) are *appended* to ``sys.path`` by the child
    (``COFLOWEMU_CODE_PATH``), after the standard library, which they cannot shadow.
    """
    parent = os.getpid()

    def child() -> None:
        _libc().prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL))
        if os.getppid() != parent:      # the engine died before prctl: nobody waits for us
            os._exit(1)
        if nice:
            os.setpriority(os.PRIO_PROCESS, 0, nice)

    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PYTHON") and k != CODE_PATH_VAR}
    env["PYTHONPATH"] = PACKAGE_ROOT
    if code_dirs:
        env[CODE_PATH_VAR] = os.pathsep.join(code_dirs)
    return popen([sys.executable, "-P", "-m", module, *args], stdout=stdout,
                 stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, preexec_fn=child,
                 cwd=run_dir, env=env, **kwargs)


PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
"""The directory holding the ``controller``, ``emulate`` and ``topologies`` packages."""

CODE_PATH_VAR = "COFLOWEMU_CODE_PATH"


def policy_dirs(policy) -> list[str]:
    """Directories to import a run's user policy modules from (none for built-ins).

    ``policy``: a policy object, or a joint run's ``{"compute": name, "network": name}``
    (``module:Class`` names). Each module's import root: the directory its top-level
    package (or the module itself) is in.
    """
    if isinstance(policy, dict):
        modules = [n.split(":")[0] for n in (policy.get("compute"), policy.get("network"))
                   if isinstance(n, str) and ":" in n]
    else:
        modules = [type(policy).__module__]
    out = []
    for name in modules:
        f = getattr(sys.modules.get(name), "__file__", None)
        if not f:
            continue
        root = os.path.dirname(os.path.abspath(f))
        if os.path.basename(f).startswith("__init__."):
            root = os.path.dirname(root)
        for _ in name.split(".")[:-1]:
            root = os.path.dirname(root)
        if root != PACKAGE_ROOT and root not in out:
            out.append(root)
    return out


PR_SET_PDEATHSIG = 1


def _libc():
    import ctypes
    return ctypes.CDLL(None, use_errno=True)


@contextlib.contextmanager
def _sigterm_raises():
    """Inside: SIGTERM raises :class:`Interrupted` (main thread only)."""
    import threading
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        raise Interrupted(f"signal {signum}")

    old = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


@contextlib.contextmanager
def _signals_blocked():
    """Cleanup must not be cut short by a second Ctrl-C / SIGTERM."""
    sigs = {signal.SIGINT, signal.SIGTERM}
    old = signal.pthread_sigmask(signal.SIG_BLOCK, sigs)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


class MininetRun:
    """One emulated run; use :func:`run_mininet`. Holds what must be torn down."""

    def __init__(self, workload: Workload, policy, *, time_scale: float = 1.0,
                 pause: bool = True, class_mapping: str = "conflict",
                 datapath: str | None = None, wire_overhead: float = WIRE_OVERHEAD,
                 timeout: float | None = None, keep_dir: bool = False, quiet: bool = True,
                 nice: int = -10, interactive: bool = False, exact_state: bool = False,
                 network_options: dict | None = None):
        from controller.policies import PolicyError, get_policy
        from controller.policies.base import policy_label
        self.joint = None
        if hasattr(workload, "machines"):   # a JointWorkload: "compute+network"
            from controller.policyspec import split_policy
            if not isinstance(policy, str):
                raise TypeError("a joint workload takes a policy name 'compute+network'")
            compute, network = split_policy(policy)
            if workload.model == "redundancy" and not workload.coflows:
                # copies on the agents, decisions in the controller; a network policy
                # only for checkpoint transfers (controller.redundancy.emulation)
                from controller.jobmodel import get_job_model
                from controller.jobmodels.redundancy import has_transfers
                from controller.redundancy.emulation import agent_speeds, emulated_policy
                emulated_policy(compute)                                   # fail early
                agent_speeds(get_job_model("redundancy")(workload, compute).run)
                if network is None and has_transfers(workload):
                    raise PolicyError(f"{policy!r} names no network policy, and the "
                                      f"workload's jobs move their checkpoints "
                                      f"(checkpoint_bytes): name one, e.g. {policy}+sebf")
                if network is None and network_options:
                    raise PolicyError(f"{policy!r} runs no network policy: no network "
                                      f"options")
                if network is not None:
                    get_policy(network, **(network_options or {}))
                self.joint = workload
                workload = workload.network
                self.policy = {"compute": compute, "network": network, "redundancy": True,
                               "options": dict(network_options or {})}
                self.policy_name = policy
            elif network is None:
                raise PolicyError(f"{policy!r} is a compute policy only; the emulation runs "
                                  f"a network policy too, e.g. {policy}+lp-coflow")
            else:
                get_policy(network, **(network_options or {}))   # fail early
                self.joint = workload
                workload = workload.network
                self.policy = {"compute": compute, "network": network,
                               "options": dict(network_options or {})}
                self.policy_name = policy
        else:
            self.policy = get_policy(policy, **(network_options or {})) \
                if isinstance(policy, str) else policy
            self.policy_name = policy_label(self.policy)
        self.workload = workload
        self.interactive = interactive
        self.exact_state = exact_state
        if not time_scale > 0:
            raise ValueError(f"time_scale must be > 0, got {time_scale!r}")
        self.time_scale = float(time_scale)
        self.pause = pause
        self.class_mapping = class_mapping
        self.datapath = datapath
        self.wire_overhead = wire_overhead
        self.timeout = timeout if timeout is not None else self.default_timeout()
        self.keep_dir = keep_dir
        self.quiet = quiet
        self.nice = int(nice)
        self.net = None
        self.controller = None
        self.agents: list = []
        self.run_dir = None
        self.timings: dict[str, float] = {}

    window_ms = 6.5
    min_window = 2 * 1448

    def window(self, rates) -> int:
        """Receive buffer of every connection: ``window_ms`` at the fastest link, at least
        ``min_window`` bytes (two segments). Bounds what one flow has queued in a switch (so
        a flow that takes priority waits at most that long: a paused flow's bytes in flight
        still drain in their class) while leaving room for RTT jitter.

        What a preempted flow has in flight sits in the host's queue of the class it ran
        in, which was the class the flow that preempts it started in (a leaf is a FIFO;
        since, plans without rate caps start such a flow one class higher:
        :func:`controller.classes.preempting_classes`), so the new flow's first byte
        waited for all of it. With a floor of four segments (the kernel advertised about
        8 kB: 65 ms of a 1 Mbit/s link) the 8.6 kB flows of a small lp-flow coflow on
        16 x 4 (seed 1) reached their receiver 31-65 ms after their first write (decision
        log), and the coflow took 0.236 s against the simulator's 0.138 (+71 %); with two
        segments +35 % ("A preempted flow's bytes in flight" in
        docs/emulation-fidelity.md).

        A fixed floor of 16 kB (until 2026-11-26; 4 ms above it) was 130 ms of a 1 Mbit/s
        link: a 20 kB coflow of sincronia on 16 x 4 waited behind the flow it paused and took
        twice its simulated time. With this window fewer segments are sent twice (0.15-0.25 %
        against 0.08-1.48 %; sincronia, 16 x 4 at 1 Mbit/s, seed 2, 4 and 7 runs)."""
        return int(max(self.min_window, max(rates) / 8 * self.window_ms / 1e3))

    def default_timeout(self) -> float:
        """Wall seconds after which the run is abandoned: everything serialised, x2, +60."""
        a = self.workload.arrays
        volume = float(a.size.sum())
        last = float(a.release.max()) if a.n_coflows else 0.0
        if self.joint is not None:   # shuffle bytes and every task one after another
            ca = self.joint.compute.arrays
            volume += float(sum(self.joint.output_bytes.values()))
            last = max(last, float(ca.job_release.max()) if len(ca.job_release) else 0.0)
            last += float(np.min(ca.proc, axis=1).sum())
        serial = volume * 8.0 / min(self.workload.fabric.rates)
        return 60.0 + 2.0 * (serial + last) * self.time_scale

    # ------------------------------------------------------------------ run
    def run(self, progress=None) -> RunResult:
        preflight()
        with _sigterm_raises(), machine_lock():
            wall = time.perf_counter()
            try:
                self._setup()
                out = self._wait(progress)
            finally:
                with _signals_blocked():
                    self.teardown()
        if out.get("failure"):
            raise EmulationError(out["failure"], partial=self._partial(
                out, time.perf_counter() - wall))
        return self._record(out, time.perf_counter() - wall)

    def _partial(self, out: dict, wall: float) -> RunResult | None:
        """The record of what a failed run finished (never-finished coflows: nan),
        marked incomplete; None for a joint run or a result without completions."""
        if self.joint is not None or "coflow_completion" not in out:
            return None
        with contextlib.suppress(KeyError, TypeError, ValueError):
            r = self._record_network(out, wall)
            r.extra.update(incomplete=True, error=out.get("error"))
            return r
        return None

    def _setup(self) -> None:
        w = self.workload
        n_hosts = w.fabric.ports
        self.run_dir = cleaner.new_run_dir()
        api = os.path.join(self.run_dir, "api.sock")
        ofp_dir = cleaner.controller_dir(self.run_dir)
        os.mkdir(ofp_dir, 0o700)
        rates = [r / self.time_scale * self.wire_overhead for r in w.fabric.rates]
        window = self.window(rates)
        cfg = RunConfig(run_dir=self.run_dir, api_path=api, ofp_port=0,
                        ofp_path=os.path.join(ofp_dir, "of.sock"),
                        n_hosts=n_hosts, n_cores=w.fabric.cores, time_scale=self.time_scale,
                        interactive=self.interactive,
                        pause=self.pause,
                        class_mapping=self.class_mapping, run_timeout=self.timeout,
                        exact_state=self.exact_state,
                        # the kernel doubles a requested receive buffer
                        drain_bytes=2 * window,
                        ovs_ctl=unixctl_path(cleaner.ovs_rundir()))
        with open(os.path.join(self.run_dir, "config.json"), "w") as fh:
            fh.write(cfg.to_json())
        with open(os.path.join(self.run_dir, "workload.pkl"), "wb") as fh:
            pickle.dump(self.joint if self.joint is not None else w, fh)
        with open(os.path.join(self.run_dir, "policy.pkl"), "wb") as fh:
            pickle.dump(self.policy, fh)
        t = time.perf_counter()
        with open(os.path.join(self.run_dir, "controller.out"), "wb") as out:
            self.controller = start_python("controller.app", [self.run_dir],
                                           run_dir=self.run_dir, stdout=out, nice=self.nice,
                                           code_dirs=policy_dirs(self.policy),
                                           start_new_session=True)
        cleaner.add_procs(self.run_dir, [(self.controller.pid, "controller.app")])
        # the network, while the controller starts (switches retry until it listens)
        tn = time.perf_counter()
        from mininet.log import setLogLevel
        setLogLevel("error" if self.quiet else "info")
        topo = ParallelTopo(hosts=n_hosts, cores=w.fabric.cores, rates=rates)
        self.datapath = self.datapath or choose_datapath()
        cleaner.write_state(self.run_dir, bridges=[s for s in topo.switches()])
        self.net = build_network(topo, cfg.ofp_port, controller_path=cfg.ofp_path,
                                 datapath=self.datapath,
                                 qdisc=partial(htb_priority_tree,
                                               leftover_bytes=window + NOTSENT_LOWAT))
        shells = [(n.pid, f"mininet:{n.name}") for n in self.net.hosts + self.net.switches
                  if getattr(n, "pid", None)]
        cleaner.add_procs(self.run_dir, shells)
        self.timings["network_build_s"] = time.perf_counter() - tn
        deadline = time.time() + 60
        while not os.path.exists(api):
            if self.controller.poll() is not None:
                raise EmulationError("the controller exited at start:\n" + self._tail(
                    "controller.out") + self._tail("controller.log"))
            if time.time() > deadline:
                raise EmulationError("the controller did not open its API socket in 60 s")
            time.sleep(0.02)
        self.timings["controller_start_s"] = time.perf_counter() - t
        self.ports_before = port_bytes(n_hosts, w.fabric.cores)
        if self.interactive:
            return
        # the agents
        t = time.perf_counter()
        procs = []
        for i in range(n_hosts):
            h = self.net.get(host_name(i))
            with open(os.path.join(self.run_dir, f"agent{i}.out"), "wb") as log:
                p = start_python("emulate.mininet.agent", [
                    "--api", api, "--host", str(i), "--port", str(cfg.data_port),
                    "--nice", str(self.nice), "--window", str(window)],
                    run_dir=self.run_dir, stdout=log, popen=h.popen)
            self.agents.append(p)
            procs.append((p.pid, "emulate.mininet.agent"))
        cleaner.add_procs(self.run_dir, procs)
        self.timings["agents_start_s"] = time.perf_counter() - t

    def _wait(self, progress) -> dict:
        """Wait for the controller to finish the run; its result dict."""
        watcher = None
        if progress is not None:
            watcher = _Watcher(os.path.join(self.run_dir, "api.sock"), progress)
        try:
            deadline = time.time() + self.timeout + 60
            while self.controller.poll() is None:
                if time.time() > deadline:
                    raise EmulationError(f"the run did not finish in {self.timeout:.0f} s")
                dead = [i for i, p in enumerate(self.agents) if p.poll() is not None]
                if dead and self.controller.poll() is None:
                    # the controller notices (the agent's socket closed) and writes its
                    # result: why, and what had finished
                    grace = time.time() + 5.0
                    while self.controller.poll() is None and time.time() < grace:
                        time.sleep(0.05)
                    if self.controller.poll() is None:
                        raise EmulationError(
                            f"agent of host {dead[0]} exited:\n" + self._tail(
                                f"agent{dead[0]}.out"))
                time.sleep(0.05)
        finally:
            if watcher:
                watcher.close()
        path = os.path.join(self.run_dir, "result.json")
        if not os.path.exists(path):
            out = self._salvage()
            done = sum(x is not None for x in out["coflow_completion"])
            out["failure"] = (f"the controller exited without a result ({done} of "
                              f"{self.workload.arrays.n_coflows} coflows had finished, by "
                              f"its decision log; their record is kept, marked "
                              f"incomplete):\n" + self._tail("controller.out") +
                              self._tail("controller.log"))
            return out
        with open(path) as fh:
            out = json.load(fh)
        if not out.get("ok"):
            done = sum(x is not None for x in out.get("coflow_completion", []))
            never_ready = str(out.get("error", "")).startswith(NOT_READY)
            out["failure"] = (f"the emulated run failed: {out.get('error')} ({done} of "
                              f"{self.workload.arrays.n_coflows} coflows had finished; "
                              f"the record of those is kept, marked incomplete)\n" +
                              (self._not_ready_report() if never_ready else
                               self._tail("controller.log")))
        out["decisions"] = os.path.join(self.run_dir, "decisions.jsonl")
        after = port_bytes(self.workload.fabric.ports, self.workload.fabric.cores)
        out["port_bytes"] = (after - self.ports_before).tolist()
        out["tcp"] = tcp_counters(h.pid for h in self.net.hosts)
        return out

    def _salvage(self) -> dict:
        """What a controller that died without a result had finished, from the completions
        in its decision log (written line by line as they happen)."""
        a = self.workload.arrays
        index = {c.id: k for k, c in enumerate(self.workload.coflows)}
        flows, coflows = [None] * a.n_flows, [None] * a.n_coflows
        with contextlib.suppress(OSError):
            with open(os.path.join(self.run_dir, "decisions.jsonl")) as fh:
                for line in fh:
                    with contextlib.suppress(ValueError, KeyError, TypeError, IndexError):
                        d = json.loads(line)
                        if d.get("event") == "flow_done":
                            flows[int(d["flow"])] = float(d["tw_done"])
                        elif d.get("event") == "coflow_done":
                            coflows[index[d["coflow"]]] = float(d["tw_done"])
        empty = {"flow": [], "core": [], "start": [], "end": [], "rate_bps": []}
        return {"ok": False, "error": "the controller died", "flow_completion": flows,
                "coflow_completion": coflows, "segments": empty, "policy_calls": 0,
                "stats": {}, "port_bytes": []}

    def _not_ready_report(self) -> str:
        """Why a run's switches or agents never became ready, from both ends: what the
        controller logged about its switches and where each of its threads waited
        (:func:`controller.runtime.stacks`), its stderr, and Open vSwitch's side of this
        run's OpenFlow connections: what ovs-vswitchd logged about the run's socket (the
        history: connecting, connected, closed) and each controller record's
        ``is_connected`` and status (read before teardown removes the bridges, but after
        the controller has exited: its connections are closed by then)."""
        parts = []
        lines = self._lines("controller.log") or []
        mark = next((i for i, x in enumerate(lines) if STACKS_MARK in x), len(lines))
        about = [x for x in lines[:mark] if " WARNING " in x or " ERROR " in x
                 or "connected" in x or "core " in x]
        parts.append("--- controller.log (switches, warnings, errors; then every thread):\n"
                     + "".join(about[-20:] + lines[mark:mark + 200]) + "\n")
        parts.append(self._tail("controller.out"))
        sock = os.path.join(cleaner.controller_dir(self.run_dir), "of.sock")
        if shutil.which("ovs-vsctl"):
            r = subprocess.run(["ovs-vsctl", "--timeout=5",
                                "--columns=target,is_connected,status", "list", "controller"],
                               capture_output=True, text=True)
            mine = [rec for rec in r.stdout.split("\n\n") if sock in rec]
            parts.append("--- ovs-vsctl list controller (this run's):\n"
                         + ("\n".join(mine) or r.stdout[-2000:] + r.stderr[-500:]) + "\n")
        try:
            with open(OVS_LOG, errors="replace") as fh:
                logged = [x for x in fh.read().splitlines()[-20000:] if sock in x]
            parts.append("--- ovs-vswitchd.log (this run's socket):\n"
                         + "\n".join(logged[-15:]) + "\n")
        except OSError:
            pass
        return "".join(parts)

    def _lines(self, name: str) -> list[str] | None:
        """The lines (ends kept) of the run directory's file ``name``; None if unreadable."""
        try:
            with open(os.path.join(self.run_dir, name), errors="replace") as fh:
                return fh.readlines()
        except OSError:
            return None

    def _tail(self, name: str, n: int = 15) -> str:
        lines = self._lines(name)
        return "" if lines is None else f"--- {name}:\n" + "".join(lines[-n:])

    # ------------------------------------------------------------------ teardown
    def teardown(self) -> None:
        """Stop agents, controller, network; remove the run directory. Never raises."""
        t = time.perf_counter()
        procs = [(p.pid, "emulate.mininet.agent") for p in self.agents]
        if self.controller is not None:
            procs.append((self.controller.pid, "controller.app"))
        cleaner.end_processes(procs, timeout=2.0)
        for p in self.agents + ([self.controller] if self.controller else []):
            with contextlib.suppress(Exception):
                p.wait(timeout=1)
        if self.net is not None:
            stop_network(self.net)
            self.net = None
        if self.run_dir:
            # whatever net.stop() could not remove (it never raises)
            st = cleaner.read_state(self.run_dir)
            left = [b for b in st.get("bridges", []) if b in cleaner.our_bridges()]
            cleaner.delete_bridges(left)
            cleaner.end_processes(st.get("procs", []), timeout=1.0)
            if self.keep_dir:
                # a private directory of a name nobody can predict (we run as root)
                kept = tempfile.mkdtemp(prefix=f"coflowemu-{os.path.basename(self.run_dir)}-")
                with contextlib.suppress(OSError):
                    shutil.copytree(self.run_dir, kept, dirs_exist_ok=True,
                                    ignore=shutil.ignore_patterns("*.sock", "*.pkl"))
                os.chmod(kept, 0o700)
                self.kept_dir = kept
            cleaner.remove_run_dir(self.run_dir)
        self.timings["teardown_s"] = time.perf_counter() - t

    # ------------------------------------------------------------------ records
    def _record(self, out: dict, wall: float):
        if self.joint is not None:
            return self._record_joint(out, wall)
        return self._record_network(out, wall)

    def _extra(self, out: dict) -> dict:
        extra = {"time_scale": self.time_scale, "datapath": self.datapath,
                 "policy_calls": out["policy_calls"], "controller": out["stats"],
                 "api_errors": out.get("api_errors", 0),
                 "controller_cpu_s": out.get("cpu_s"),
                 "port_bytes": out["port_bytes"], "tcp": out.get("tcp"),
                 "timings": {k: round(v, 4) for k, v in self.timings.items()}}
        if getattr(self, "kept_dir", None):
            extra["run_dir"] = self.kept_dir
        return extra

    def _record_joint(self, out: dict, wall: float):
        """The :class:`~emulate.sim.jobsim.JointResult` of a joint run (as the simulator's)."""
        from controller.compute.schedule import ComputeSchedule
        from emulate.sim.jobsim import joint_result
        if "redundancy" in out:
            from emulate.mininet.redundancy import redundancy_result
            return redundancy_result(self.joint, self.policy_name, out, wall,
                                     {"emulation": self._extra(out)})
        jw, j = self.joint, out["joint"]
        sched = ComputeSchedule.from_segments(jw.compute.arrays, tuple(
            np.array(x) for x in j["tasks"]), self.policy_name)
        s = out["segments"]
        segs = (s["flow"], s["core"], s["start"], s["end"], s["rate_bps"])
        stage, cc, fc = (_floats(x) for x in (j["stage_completion"],
                                              out["coflow_completion"], out["flow_completion"]))
        extra = {k: j[k] for k in ("replans", "placement_probes", "network_restarts",
                                   "joint_events")}
        extra["emulation"] = self._extra(out)
        return joint_result(jw, self.policy_name, sched, stage, j["flows"], fc,
                            j["coflow_release"], cc, segs, engine="mininet", wall=wall,
                            events=out.get("applies", 0), extra=extra)

    def _record_network(self, out: dict, wall: float) -> RunResult:
        fc, cc = _floats(out["flow_completion"]), _floats(out["coflow_completion"])
        s = out["segments"]
        segs = Segments(np.array(s["flow"], dtype=np.int64), np.array(s["core"], np.int64),
                        np.array(s["start"], float), np.array(s["end"], float),
                        np.array(s["rate_bps"], float))
        extra = self._extra(out)
        return RunResult(workload=self.workload, policy=self.policy_name, engine="mininet",
                         flow_completion=fc, coflow_completion=cc, segments=segs,
                         wall_seconds=wall, events=out.get("applies", 0), extra=extra)


def _floats(values) -> np.ndarray:
    """A JSON list of times (null = never) as a float array (nan = never)."""
    return np.array([np.nan if x is None else x for x in values], dtype=float)


def port_bytes(n_hosts: int, n_cores: int) -> np.ndarray:
    """Bytes counted by the switch-side interfaces, shape (cores, hosts, 2).

    ``[c, i, 0]``: received by core ``c`` from host ``i`` (its uplink, input port);
    ``[c, i, 1]``: sent by core ``c`` to host ``i`` (its downlink, output port). Frames,
    headers included, both directions' traffic (data one way, ACKs the other).
    """
    out = np.zeros((n_cores, n_hosts, 2), dtype=np.int64)
    for c in range(n_cores):
        for i in range(n_hosts):
            base = f"/sys/class/net/{switch_intf(i, c)}/statistics/"
            for k, name in enumerate(("rx_bytes", "tx_bytes")):
                with contextlib.suppress(OSError, ValueError):
                    with open(base + name) as fh:
                        out[c, i, k] = int(fh.read())
    return out


class _Watcher:
    """Follows the controller's progress pushes; calls ``progress(done, total)``."""

    def __init__(self, path: str, progress):
        import threading

        from controller.api import Channel
        self.progress = progress
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(path)
        self.ch = Channel(s, name="engine")
        self.ch.send({"op": "watch", "id": 1})
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        for line in self.ch.lines():
            with contextlib.suppress(ValueError, TypeError):
                msg = json.loads(line)
                if msg.get("op") == "progress":
                    self.progress(int(msg["done"]), int(msg["total"]))

    def close(self) -> None:
        self.ch.close()


@contextlib.contextmanager
def open_topology(fabric, *, datapath: str | None = None, quiet: bool = True):
    """The emulated fabric with its controller, for interactive use; torn down on exit.

    Yields the started ``Mininet`` object: hosts ``h1..hN`` (address of host ``i`` on core
    ``c``: ``10.<c+1>.0.<i+1>``), core switches ``cfe1..cfem`` forwarding by destination,
    the strict-priority classes on every port (mark a flow's class with its TOS, e.g.
    ``iperf3 -S 0xa0`` for class 0, see :mod:`controller.classes`).
    """
    preflight()
    w = Workload(fabric, ())
    session = MininetRun(w, "fifo", datapath=datapath, quiet=quiet, interactive=True)
    with _sigterm_raises(), machine_lock():
        try:
            session._setup()
            yield session.net
        finally:
            with _signals_blocked():
                session.teardown()


def run_mininet(workload: Workload, policy, *, time_scale: float = 1.0,
                segments: bool = True, progress: bool = False, pause: bool = True,
                class_mapping: str = "conflict", datapath: str | None = None,
                timeout: float | None = None, keep_dir: bool = False,
                quiet: bool = True, nice: int = -10, exact_state: bool = False,
                network_options: dict | None = None):
    """Run ``workload`` under ``policy`` on the real emulation; see the module docstring.

    Parameters
    ----------
    workload : Workload or JointWorkload
        Its fabric gives hosts (``ports``), cores and rates. A joint workload's tasks run
        on the agents of its machines' hosts (:mod:`controller.joint_runtime`).
    policy : Policy or str
        A fresh policy instance or a registered name / ``module:Class``; for a joint
        workload ``compute+network`` (as ``controller.policyspec.split_policy``).
    network_options : dict, optional
        Options of the network policy (``mode``, ``objective``).
    time_scale : float
        The emulation runs this many times slower than the workload (rates / time_scale,
        releases x time_scale); recorded times are in workload seconds.
    segments : bool
        Keep the measured segments (between two controller events, from the receivers'
        byte counters) in the result.
    progress : bool
        Show a progress bar of completed coflows.
    pause : bool
        Pause started flows the plan gives rate 0 (default; their rules go to the drain
        class) instead of leaving them in their classes.
    class_mapping : {"conflict", "coflow"}
        How ranks map onto the 8 classes (:mod:`controller.classes`).
    datapath : {"kernel", "user", None}
        OVS datapath; None picks the kernel one when its module exists.
    timeout : float, optional
        Wall seconds before the run is abandoned (default from the workload's size).
    keep_dir : bool
        Copy the run's logs (controller.log, decisions.jsonl, agent logs) to a private
        new directory ``/tmp/coflowemu-run-*`` (``extra["run_dir"]``).
    exact_state : bool
        Wait for every receiver's byte counters before each policy call instead of
        estimating them from the last measurement and the planned rates.
    nice : int
        Niceness of the controller and the agents (default -10, like ovs-vswitchd): on a
        busy machine every hop of the control loop otherwise waits for a CPU time slice,
        which adds milliseconds to every flow's start and completion.

    Returns
    -------
    RunResult with ``engine="mininet"``; ``extra`` has the controller's latency figures.
    For a joint workload a :class:`~emulate.sim.jobsim.JointResult` (its ``network`` has
    ``engine="mininet"``, ``extra["emulation"]`` the latency figures).

    Raises
    ------
    EmulationError
        Not root, Open vSwitch not running, or the run failed (the message says why).
    """
    run = MininetRun(workload, policy, time_scale=time_scale, pause=pause,
                     class_mapping=class_mapping, datapath=datapath, timeout=timeout,
                     keep_dir=keep_dir, quiet=quiet, nice=nice, exact_state=exact_state,
                     network_options=network_options)
    if progress:
        from tqdm import tqdm
        preflight()
        with machine_lock(), tqdm(total=len(workload.coflows), unit="coflow",
                                  desc="mininet", leave=False) as bar:
            def upd(done, total):      # the bar starts once the machine is ours
                bar.n = done
                bar.refresh()
            result = run.run(progress=upd)
    else:
        result = run.run()
    if not segments:
        if run.joint is not None:
            result.network.segments = None
        else:
            result.segments = None
    return result
