"""Calibration: what this machine's switches forward, and the rate and time scale to use.

The emulation is faithful only while the switches forward every byte it offers: with the
userspace datapath one ``ovs-vswitchd`` thread forwards every packet, and per-flow rates
stay accurate (99-100 %) well below what it forwards when saturated (design.md: ~1 Gbit/s
at best, accurate to ~200 Mbit/s, 91-95 % at 350-450 Mbit/s). So:

* :func:`measure_forwarding` builds a small fabric (4 hosts x 2 cores, links shaped far
  above what the switch forwards), runs 4 parallel TCP flows (``iperf3``, two per core,
  every host sending and receiving) for ``seconds`` and sums what arrived: the
  *saturation* rate. The *budget* is :data:`ACCURATE_FRACTION` of it (half). A busy
  machine measures less, so its budget is smaller (conservative);
* the probe runs on a fabric of the run's size (at least 4 x 2; :func:`probe_fabric`): the
  userspace datapath's one forwarding thread polls every port, so the same 4 flows get
  less through a larger fabric (on the 2-core VM at load 9-10: 387 Mbit/s on 4 x 2,
  230 on 16 x 4, 164 on 32 x 4; ``benchmarks/emulation_build.py --forwarding``), and a
  budget measured on 4 x 2 would overbook a 32 x 4 run 2.4 times;
* :func:`forwarding_budget` keeps the figure per machine (host name, CPU count, kernel),
  datapath and fabric size, with its date and the load average at the time, in
  :data:`CACHE_PATH`, and measures again when there is none or it is older than
  ``max_age`` (one day);
* :func:`choose` turns a budget into a :class:`Choice` for a workload, under two limits:

  - *the switches*: the worst case offered load, every used host's uplinks busy at once
    (:func:`~emulate.mininet.engine.offered_load_bps`, in wire bits), stays inside the
    budget;
  - *the control loop*: the short flows (the 10th percentile of flow sizes,
    :func:`short_flow_bits`) last at least :data:`FLOW_TIME_S` on the wire at the fastest
    core's rate. Every flow hand-off (a completion reported, the next flow signalled,
    its first byte across the switch) takes milliseconds the simulator does not have,
    so a flow lasting a few times that carries tens of percent of error whatever the
    switch forwards.

  If the workload's link rate is part of the model (a file's ``fabric.rate_bps``), the
  rate stays and the *time scale* is the smallest power of two (>= 1) meeting both:
  results stay in the workload's seconds, the wire runs ``time_scale`` times slower (the
  budget's limit is a hard one: beyond ``max_time_scale`` the workload is refused; the
  flows' is not: their time scale stops at ``max_time_scale``). If the rate is free
  (``coflowemu fidelity --random``), the rate is the largest 1-2-5 value (1, 2, 5, 10, 20,
  ... Mbit/s) meeting both, heterogeneous cores keeping their ratios, at time scale 1.

``coflowemu run --engine mininet --rate auto`` and ``coflowemu fidelity --rate auto`` print
the choice on stderr (and put it in ``--json`` output under ``"rate_auto"``).
"""
from __future__ import annotations

import contextlib
import json
import math
import os
import platform
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import asdict, dataclass, replace

import numpy as np

ACCURATE_FRACTION = 0.5
"""Share of the saturated forwarding rate up to which per-flow rates stay accurate.

Measured on the 2-core VM: the probe saturates at 412 Mbit/s (load 3.7), and the fidelity
target held up to 200 Mbit/s offered in total (README: 4 x 2 at 25 Mbit/s, load 6-10);
design.md's figures (1 Gbit/s at best, accurate to ~200) are from a quieter machine with
more flows. A conservative share: the worst-case offered load it is compared with (every
uplink busy at once) is rarely reached."""

FLOW_TIME_S = 0.08
"""Wire time the short flows (the 10th percentile of sizes) need for the fidelity target.

Measured on the 2-core VM (``benchmarks/emulation_fidelity.py``, 20 coflows of 2 MB mean,
every network policy, README "The emulation"): a flow hand-off takes ~10 ms median and
tens of ms at p90. On 16 x 4 seed 1's short flows last 90 ms at 1 Mbit/s, where 7 of 13
policies met the target on that seed, and 45 ms at 2 Mbit/s, where 3 of 13 did (p90 up to
138 %); seed 2's last 172 ms at 2 Mbit/s and all 13 met it there. On 4 x 2 (seed 1's 6 ms
at 20 Mbit/s, 12 at 10, 116 at 1) the policies meeting it went 0 -> 1 -> 3 of 13 and
the medians halved: necessary, not sufficient ("`--rate auto` and the short flows" in
docs/emulation-fidelity.md)."""

FLOW_QUANTILE = 10
"""Percentile of flow sizes that :data:`FLOW_TIME_S` applies to: the p90 target allows a
tenth of the coflows their hand-offs."""

CACHE_PATH = "/var/cache/coflowemu/forwarding.json"
"""Per-machine calibration figures (the engine runs as root)."""

MAX_AGE_S = 24 * 3600.0

PROBE_RATE_BPS = 10e9
"""Shaped rate of the probe fabric's links: far above what the switch forwards."""

PROBE_FABRIC = (4, 2)
"""The smallest probe fabric (hosts, cores): 4 flows among 4 hosts on 2 cores."""


@dataclass(frozen=True)
class Budget:
    """What this machine forwards: saturated and accurate totals, where and when measured."""

    forwarded_bps: float
    budget_bps: float
    datapath: str
    machine: dict
    measured_at: float
    load: float
    source: str = "measured"
    fabric: tuple[int, int] = PROBE_FABRIC
    """Hosts x cores of the fabric the probe ran on."""

    def to_json(self) -> dict:
        d = asdict(self)
        d["measured_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.measured_at))
        return d

    def describe(self) -> str:
        return (f"forwarding budget {self.budget_bps / 1e6:.0f} Mbit/s "
                f"({ACCURATE_FRACTION:.0%} of {self.forwarded_bps / 1e6:.0f} Mbit/s forwarded "
                f"by the {self.datapath} datapath on {self.fabric[0]} x {self.fabric[1]}, "
                f"{self.source} "
                f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(self.measured_at))}, "
                f"load {self.load:.1f})")


@dataclass(frozen=True)
class Choice:
    """Link rates and time scale for a run, and why."""

    rates_bps: tuple[float, ...]
    """The workload's link rate per core (workload seconds)."""
    time_scale: float
    offered_bps: float
    """Worst-case total the switches forward at that time scale (wire bits/s)."""
    budget_bps: float
    rate_chosen: bool
    """True: the rate was free and chosen; False: the workload's rate was kept."""
    short_flow_bits: float | None = None
    """The 10th percentile of flow sizes (:func:`short_flow_bits`); None: no flows."""

    @property
    def short_flow_s(self) -> float | None:
        """How long that flow lasts on the wire at the fastest core's rate."""
        if self.short_flow_bits is None:
            return None
        return self.short_flow_bits / max(self.wire_bps)

    @property
    def wire_bps(self) -> tuple[float, ...]:
        """Payload rate of each core's emulated links (rates / time scale)."""
        return tuple(r / self.time_scale for r in self.rates_bps)

    def to_json(self) -> dict:
        return {"rates_bps": list(self.rates_bps), "time_scale": self.time_scale,
                "wire_bps": list(self.wire_bps), "offered_bps": self.offered_bps,
                "budget_bps": self.budget_bps, "rate_chosen": self.rate_chosen,
                "short_flow_bytes": (None if self.short_flow_bits is None
                                     else self.short_flow_bits / 8),
                "short_flow_wire_s": self.short_flow_s, "flow_time_s": FLOW_TIME_S}

    def describe(self) -> str:
        rates = "/".join(f"{r / 1e6:g}" for r in self.rates_bps)
        wire = "/".join(f"{r / 1e6:.3g}" for r in self.wire_bps)
        how = "chosen" if self.rate_chosen else "the workload's"
        flows = ("" if self.short_flow_s is None else
                 f"; short flows ({FLOW_QUANTILE}th percentile, "
                 f"{self.short_flow_bits / 8e3:.3g} kB) last {self.short_flow_s * 1e3:.0f} ms "
                 f"on the wire (wanted: {FLOW_TIME_S * 1e3:.0f})")
        return (f"rate auto: links {rates} Mbit/s ({how}), time scale {self.time_scale:g} "
                f"(wire {wire} Mbit/s per link), worst-case offered "
                f"{self.offered_bps / 1e6:.0f} of {self.budget_bps / 1e6:.0f} Mbit/s{flows}")


# ---------------------------------------------------------------------------- the choice
def nice_floor(x: float) -> float:
    """The largest value of the 1-2-5 series (..., 1, 2, 5, 10, 20, ...) <= ``x``."""
    if not x > 0 or not math.isfinite(x):
        raise ValueError(f"need a finite rate > 0, got {x!r}")
    e = math.floor(math.log10(x))
    for m in (5, 2, 1):
        v = m * 10.0 ** e
        if v <= x * (1 + 1e-12):
            return v
    return 10.0 ** (e - 1) * 5   # pragma: no cover (rounding at a decade)


def short_flow_bits(workload) -> float | None:
    """The :data:`FLOW_QUANTILE` th percentile of ``workload``'s flow sizes (flows of at
    least one byte), in bits; None without flows. A JointWorkload's are its shuffles'."""
    size = getattr(workload, "network", workload).arrays.size
    size = size[size > 0]
    return float(np.percentile(size, FLOW_QUANTILE)) * 8 if size.size else None


def choose(workload, budget_bps: float, *, rate_free: bool = False,
           max_time_scale: float = 4096.0) -> Choice:
    """Rate and time scale keeping the worst-case offered load inside ``budget_bps`` and
    the short flows at least :data:`FLOW_TIME_S` on the wire (module docstring).
    ``workload``: a Workload or JointWorkload; with ``rate_free`` its rates are replaced
    (ratios kept) and the time scale is 1."""
    from emulate.mininet.engine import offered_load_bps
    if not budget_bps > 0:
        raise ValueError(f"the forwarding budget must be > 0, got {budget_bps!r}")
    f = workload.fabric
    top = max(f.rates)
    short = short_flow_bits(workload)
    if rate_free:
        at_1 = offered_load_bps(workload, 1.0)           # at the workload's own rates
        # offered load is linear in the rates: scale so the fastest core gets a 1-2-5 rate
        fit = top * budget_bps / at_1
        if short is not None:
            fit = min(fit, short / FLOW_TIME_S)
        rate = nice_floor(fit)
        rates = tuple(r / top * rate for r in f.rates)
        offered = at_1 * rate / top
        return Choice(rates, 1.0, offered, budget_bps, True, short)
    s = 1.0
    while offered_load_bps(workload, s) > budget_bps:
        s *= 2
        if s > max_time_scale:
            raise ValueError(
                f"the workload offers up to {offered_load_bps(workload, 1.0) / 1e6:.0f} "
                f"Mbit/s; more than {max_time_scale:g} times the forwarding budget "
                f"({budget_bps / 1e6:.0f} Mbit/s): lower its rate (--rate)")
    while short is not None and short * s / top < FLOW_TIME_S and s * 2 <= max_time_scale:
        s *= 2
    return Choice(tuple(f.rates), s, offered_load_bps(workload, s), budget_bps, False, short)


def with_rates(workload, rates) -> object:
    """``workload`` on the same fabric with link rates ``rates`` (one per core)."""
    f = workload.fabric
    same = len(set(rates)) == 1
    fabric = replace(f, rate_bps=max(rates), core_rates=None if same else tuple(rates))
    return workload.replace(fabric=fabric)


# ---------------------------------------------------------------------------- measuring
def machine() -> dict:
    """What the figure depends on: host name, CPUs, kernel."""
    return {"host": socket.gethostname(), "cpus": os.cpu_count(),
            "kernel": platform.release()}


def measure_forwarding(seconds: float = 1.5, *, datapath: str | None = None,
                       hosts: int = 4, cores: int = 2) -> Budget:
    """Saturate a fabric (4 x 2 by default) with 4 TCP flows among its first 4 hosts on its
    first 2 cores for ``seconds``; the :class:`Budget`. A larger fabric forwards the same
    flows among more idle ports (``benchmarks/emulation_build.py --forwarding``)."""
    from emulate.mininet.engine import EmulationError, open_topology
    from topologies.fabric import Fabric
    from topologies.mininet_topo import choose_datapath, core_address, host_name
    if not shutil.which("iperf3"):
        raise EmulationError("iperf3 not found: run scripts/setup-system.sh", setup=True)
    datapath = datapath or choose_datapath()
    load = os.getloadavg()[0]
    pairs = [(0, 1, 0), (1, 2, 1), (2, 3, 0), (3, 0, 1)]   # (src, dst, core)
    if hosts < 4 or cores < 2:
        raise ValueError(f"the probe needs at least 4 hosts x 2 cores, got {hosts} x {cores}")
    with open_topology(Fabric(ports=hosts, cores=cores, rate_bps=PROBE_RATE_BPS),
                       datapath=datapath) as net:
        servers, clients = [], []
        # the controller installs each core's forwarding rules once its switch connects:
        # on a large fabric that outlasts the start (64 x 2: "No route to host")
        for src, dst, core in pairs:
            wait_reachable(net.get(host_name(src)), core_address(dst, core))
        try:
            for i in range(4):
                servers.append(net.get(host_name(i)).popen(
                    ["iperf3", "-s", "-1", "-p", "5201"], stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL))
            # a fixed wait lost this race in CI ("unable to connect to server")
            for i, p in enumerate(servers):
                wait_listening(net.get(host_name(i)), 5201, p)
            for src, dst, core in pairs:
                clients.append(net.get(host_name(src)).popen(
                    ["iperf3", "-c", core_address(dst, core), "-p", "5201", "-J",
                     "-t", f"{seconds:g}", "-O", "0.3"],
                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT))
            total = 0.0
            for p in clients:
                out, _ = p.communicate(timeout=seconds + 30)
                doc = json.loads(out)
                if "error" in doc:
                    raise EmulationError(f"calibration: iperf3: {doc['error']}")
                total += float(doc["end"]["sum_received"]["bits_per_second"])
        finally:
            for p in clients + servers:
                if p.poll() is None:
                    p.kill()
                with contextlib.suppress(Exception):
                    p.wait(timeout=2)
    return Budget(total, total * ACCURATE_FRACTION, datapath, machine(), time.time(), load,
                  fabric=(hosts, cores))


def wait_reachable(host, addr: str, timeout: float = 30.0) -> None:
    """Ping ``addr`` from ``host`` (a Mininet host) until it answers; raise
    :class:`~emulate.mininet.engine.EmulationError` after ``timeout`` seconds."""
    from emulate.mininet.engine import EmulationError
    deadline = time.monotonic() + timeout
    while True:
        r = host.popen(["ping", "-c", "1", "-W", "1", addr], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        if r.wait() == 0:
            return
        if time.monotonic() > deadline:
            raise EmulationError(f"calibration: {addr} unreachable from {host.name} after "
                                 f"{timeout:g} s (the controller's rules missing?)")
        time.sleep(0.2)


def wait_listening(host, port: int, server, timeout: float = 10.0) -> None:
    """Wait until a TCP socket listens on ``port`` in ``host``'s namespace (``ss``); raise
    :class:`~emulate.mininet.engine.EmulationError` if ``server`` (its process) exits
    first or after ``timeout`` seconds."""
    from emulate.mininet.engine import EmulationError
    deadline = time.monotonic() + timeout
    while True:
        out = host.popen(["ss", "-Hltn", f"sport = :{port}"], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL).communicate()[0]
        if out.strip():
            return
        if server.poll() is not None:
            raise EmulationError(f"calibration: iperf3 server on {host.name} exited "
                                 f"(code {server.returncode}) before listening on {port}")
        if time.monotonic() > deadline:
            raise EmulationError(f"calibration: nothing listens on {host.name}:{port} after "
                                 f"{timeout:g} s")
        time.sleep(0.05)


def probe_fabric(workload) -> tuple[int, int]:
    """The fabric the calibration probes for ``workload``: its size, at least 4 x 2."""
    f = workload.fabric
    return max(PROBE_FABRIC[0], f.ports), max(PROBE_FABRIC[1], f.cores)


def cache_key(datapath: str, fabric=PROBE_FABRIC) -> str:
    """The cache entry of a datapath and probe fabric (``"user"``, ``"user 32x4"``)."""
    hosts, cores = fabric
    return datapath if (hosts, cores) == PROBE_FABRIC else f"{datapath} {hosts}x{cores}"


def read_cache(path: str = CACHE_PATH, *, datapath: str, fabric=PROBE_FABRIC,
               max_age: float = MAX_AGE_S, now: float | None = None) -> Budget | None:
    """The cached figure for this machine, datapath and probe fabric if younger than
    ``max_age``."""
    try:
        with open(path) as fh:
            doc = json.load(fh)
        entry = doc[cache_key(datapath, fabric)]
        fwd = float(entry["forwarded_bps"])
        b = Budget(fwd, fwd * ACCURATE_FRACTION, datapath,
                   dict(entry["machine"]), float(entry["measured_at"]),
                   float(entry["load"]), "cached", tuple(fabric))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    now = time.time() if now is None else now
    if b.machine != machine() or not 0 <= now - b.measured_at <= max_age:
        return None
    return b


def write_cache(b: Budget, path: str = CACHE_PATH) -> None:
    """Store ``b`` (atomically: a temporary file renamed into place)."""
    doc = {}
    with contextlib.suppress(OSError, ValueError):
        with open(path) as fh:
            doc = json.load(fh)
        if not isinstance(doc, dict):
            doc = {}
    entry = asdict(b)
    entry.pop("source")
    doc[cache_key(b.datapath, b.fabric)] = entry
    d = os.path.dirname(path)
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".forwarding-")
    with os.fdopen(fd, "w") as fh:
        json.dump(doc, fh, indent=1)
    os.replace(tmp, path)


def forwarding_budget(*, datapath: str | None = None, fabric=PROBE_FABRIC,
                      path: str = CACHE_PATH, max_age: float = MAX_AGE_S,
                      seconds: float = 1.5) -> Budget:
    """This machine's :class:`Budget` on a ``fabric`` (hosts, cores; see
    :func:`probe_fabric`): cached if fresh, else measured (and cached)."""
    from topologies.mininet_topo import choose_datapath
    datapath = datapath or choose_datapath()
    b = read_cache(path, datapath=datapath, fabric=fabric, max_age=max_age)
    if b is None:
        b = measure_forwarding(seconds, datapath=datapath, hosts=fabric[0], cores=fabric[1])
        with contextlib.suppress(OSError):
            write_cache(b, path)
    return b
