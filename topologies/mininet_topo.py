"""The identical parallel network as a Mininet topology.

A fabric of ``cores`` non-blocking switches and ``hosts`` servers becomes, in Mininet,
``cores`` OpenFlow switches (Open vSwitch bridges named ``cfe1``, ``cfe2``, ...: the
``cfe`` prefix marks them as coflowemu's, so :mod:`emulate.mininet.clean` can find and remove
them after a crash without touching anybody else's) and ``hosts`` hosts ``h1`` ... ``hN``,
each linked to every core::

      h1 ----- cfe1 ----- h2          host i, interface h<i+1>-eth<c>  <->  switch cfe<c+1>
        \\                /           port i+1 (both directions at the core's rate)
         `----- cfe2 ----'

Addressing makes the destination address pick the core: host ``i`` has one interface per
core, ``h<i+1>-eth<c>`` with address ``10.<c+1>.0.<i+1>/16``, so a connection to
``10.<c+1>.0.<j+1>`` leaves host ``i`` through core ``c``'s uplink and arrives over core
``c``'s downlink to ``j``. :func:`core_address` gives the address.

Rates: every link of core ``c`` runs at ``rates[c]`` bits/s, enforced by an HTB tree on
*both* ends of the veth pair (the host end limits the uplink = input port of the core,
the switch end the downlink = output port). The tree is given by a ``qdisc`` function
(``intf, rate_bps -> tc batch lines``): :func:`htb_single_class` by default, the
controller's strict-priority tree (:func:`controller.classes.htb_priority_tree`) for
emulation runs.

Building costs one process per batch, not per interface: every veth pair of the fabric
is created by one ``ip -batch`` in the root namespace (host ends straight into their
host's namespace, fixed MAC addresses from :func:`intf_mac`), and each host is configured
by one shell command line (addresses, rules, routes, offloads) and one ``tc -batch``,
all hosts at once. Mininet's own ``Link`` runs four to six commands per link, one after
another (``ip link add``, ``ifconfig`` for the address, the state and the switch end),
and ``TCLink`` several ``tc`` processes per interface: on the 2-core VM that was 12.8 s
to build 32 x 4, most of it waiting for those commands.

Retransmission timeout: every route of a host carries ``rto_min`` (the routing
attribute; any Linux): :func:`rto_min_ms` of its core's rate, :data:`RTO_MIN_MS` on
links of 5 Mbit/s and up. Linux's 200 ms floor is a third of a 0.6 s coflow's
completion: one lost packet that fast retransmit and the tail-loss probe do not repair
cost a run's flow 0.2 s (seen twice in CI, a 20 Mbit/s flow finishing 0.2 s late), and a
flow whose queued packets wait behind a higher class longer than the floor backs off from
there. Datacenter stacks run floors of a few milliseconds for the same reason; the RTO is
still at least the measured RTT plus four deviations. On slow links the floor is
:data:`RTO_MIN_FRAMES` frame times: a flow's first segments leave at once (the HTB bucket
and nothing queued), so its first RTT samples are a fraction of a millisecond and its
first RTO is a few jiffies, while the third segment waits more than a frame time for the
bucket to refill (24 ms at 0.5 Mbit/s): the timer fired first and the segment went on
the wire twice.

Self traffic (a flow from a host to itself) crosses the switch too, as the fabric model
says it does (:func:`hairpin_commands`).

Datapath: the kernel datapath when the ``openvswitch`` module is there, OVS's userspace
datapath (``datapath_type=netdev``) otherwise (:func:`choose_datapath`). Checksum
offload (and segmentation offload) is turned off on the host interfaces: with the
userspace datapath TCP does not work otherwise, and without TSO/GSO the HTB queues see
real frames.

Examples
--------
>>> topo = ParallelTopo(hosts=4, cores=2, rates=(50e6, 50e6))   # doctest: +SKIP
>>> net = build_network(topo, controller_port=6653)              # doctest: +SKIP
>>> net.stop()                                                   # doctest: +SKIP
"""
from __future__ import annotations

import math
import os
import shutil
import subprocess
from typing import Callable, Sequence

PREFIX = "cfe"
"""Name prefix of every switch (OVS bridge) and root-namespace interface we create."""

RTO_MIN_MS = 5
"""Floor of the hosts' TCP retransmission timeout, ms (module docstring)."""

RTO_MIN_FRAMES = 2
"""... and at least this many full frames' time at the link's rate (module docstring)."""


def rto_min_ms(rate_bps: float) -> int:
    """The ``rto_min`` of routes over links of ``rate_bps``, whole ms.

    >>> rto_min_ms(20e6), rto_min_ms(1e6), rto_min_ms(0.5e6)
    (5, 25, 49)
    """
    frames = RTO_MIN_FRAMES * 1514 * 8 / float(rate_bps) * 1e3
    return max(RTO_MIN_MS, int(math.ceil(frames)))

DPID_BASE = 0xCFE000
"""Datapath id of core ``c`` is ``DPID_BASE + c + 1``."""


def switch_name(core: int) -> str:
    return f"{PREFIX}{core + 1}"


def host_name(host: int) -> str:
    return f"h{host + 1}"


def host_intf(host: int, core: int) -> str:
    return f"h{host + 1}-eth{core}"


def switch_intf(host: int, core: int) -> str:
    return f"{switch_name(core)}-eth{host + 1}"


def switch_port(host: int) -> int:
    """OpenFlow port number of host ``host`` on every core switch."""
    return host + 1


def core_address(host: int, core: int) -> str:
    """Address of ``host``'s interface on ``core``: ``10.<core+1>.0.<host+1>``."""
    if not 0 <= host < 254 * 256 or not 0 <= core < 254:
        raise ValueError(f"host {host} / core {core} outside the 10.<core+1>.0.0/16 plan")
    return f"10.{core + 1}.{host // 254}.{host % 254 + 1}"


def intf_mac(host: int, core: int, switch_side: bool = False) -> str:
    """MAC address of ``host``'s interface on ``core`` (or of the switch port facing it):
    locally administered, unique in the fabric, known before the interface exists."""
    return (f"02:cf:{core & 0xff:02x}:{host >> 8 & 0xff:02x}:{host & 0xff:02x}:"
            f"{1 if switch_side else 0:02x}")


def dpid_of(core: int) -> int:
    return DPID_BASE + core + 1


def core_of_dpid(dpid: int) -> int | None:
    c = dpid - DPID_BASE - 1
    return c if 0 <= c < 4096 else None


def choose_datapath() -> str:
    """``"kernel"`` when the openvswitch kernel module is loaded or loadable, else ``"user"``."""
    if os.path.isdir("/sys/module/openvswitch"):
        return "kernel"
    if shutil.which("modprobe"):
        r = subprocess.run(["modprobe", "openvswitch"], capture_output=True)
        if r.returncode == 0 and os.path.isdir("/sys/module/openvswitch"):
            return "kernel"
    return "user"


def htb_single_class(intf: str, rate_bps: float) -> list[str]:
    """tc batch lines: one HTB class at ``rate_bps`` on ``intf`` (what TCLink does)."""
    r = int(round(rate_bps))
    return [f"qdisc replace dev {intf} root handle 1: htb default 1",
            f"class add dev {intf} parent 1: classid 1:1 htb rate {r}bit ceil {r}bit "
            f"burst 15k cburst 15k"]


try:  # Mininet is an optional dependency (extras "emulation").
    from mininet.link import Intf, Link
    from mininet.net import Mininet
    from mininet.node import OVSSwitch, RemoteController
    from mininet.topo import Topo
except ImportError:  # pragma: no cover - without mininet only the helpers above work
    Topo = Intf = Link = Mininet = object
    OVSSwitch = RemoteController = None


class ParallelTopo(Topo):
    """``hosts`` hosts, each linked to every one of ``cores`` core switches.

    Parameters
    ----------
    hosts, cores : int
    rates : sequence of float
        Link rate of every core in bits/s (one entry per core).
    """

    def build(self, hosts: int = 4, cores: int = 2, rates: Sequence[float] | None = None):
        if hosts < 2 or cores < 1:
            raise ValueError(f"need >= 2 hosts and >= 1 core, got {hosts} x {cores}")
        rates = tuple(rates) if rates is not None else (1e7,) * cores
        if len(rates) != cores:
            raise ValueError(f"{len(rates)} rates for {cores} cores")
        self.n_hosts, self.n_cores, self.rates = hosts, cores, rates
        for c in range(cores):
            self.addSwitch(switch_name(c), dpid=f"{dpid_of(c):016x}")
        for i in range(hosts):
            # The host's "main" address is its core-0 address (Mininet configures it on
            # the default interface; without it Mininet would add 10.0.0.x/8).
            self.addHost(host_name(i), ip=f"{core_address(i, 0)}/16")
        for i in range(hosts):
            for c in range(cores):
                self.addLink(host_name(i), switch_name(c), port1=c, port2=switch_port(i),
                             intfName1=host_intf(i, c), intfName2=switch_intf(i, c),
                             addr1=intf_mac(i, c), addr2=intf_mac(i, c, switch_side=True),
                             params1={"ip": f"{core_address(i, c)}/16"})


class _Intf(Intf):
    """An interface configured later, with its host's others, by :func:`configure_hosts`
    (Mininet's ``Intf`` runs ``ifconfig`` two or three times on creation)."""

    def config(self, mac=None, ip=None, **_params):
        if ip:
            self.ip, self.prefixLen = ip.split("/")
        return {}


class _Link(Link):
    """A veth pair that :class:`_Network` creates with all the others in one batch."""

    def __init__(self, node1, node2, **params):
        params["intf"] = _Intf       # Mininet.addLink passes its own default
        super().__init__(node1, node2, fast=True, **params)

    @classmethod
    def makeIntfPair(cls, *args, **kwargs):
        return None


class _Network(Mininet):
    """Mininet with the veth pairs made in one ``ip -batch`` once every link is known,
    and the hosts configured by :func:`configure_hosts` instead of one by one."""

    def buildFromTopo(self, topo=None):
        super().buildFromTopo(topo)
        # the switch end in the root namespace, the host end straight into the host's
        _run_batches([(subprocess.Popen, ["ip", "-batch", "-"], [
            f"link add name {link.intf2.name} address {link.intf2.mac} type veth peer name "
            f"{link.intf1.name} address {link.intf1.mac} netns {link.intf1.node.pid}"
            for link in self.links] + [f"link set {link.intf2.name} up" for link in self.links])])

    def configHosts(self):
        return None


class _Controller(RemoteController if RemoteController else object):
    """A remote controller we start ourselves; no telnet probe."""

    def checkListening(self):
        return


def build_network(topo: ParallelTopo, controller_port: int, *, datapath: str | None = None,
                  qdisc: Callable[[str, float], list[str]] = htb_single_class,
                  controller_ip: str = "127.0.0.1", controller_path: str | None = None):
    """Build and start the Mininet network of ``topo``; returns the started ``Mininet``.

    Switches connect (OpenFlow 1.3, fail mode secure) to ``controller_ip:controller_port``,
    or with ``controller_path`` to the controller's Unix socket there (Open vSwitch's
    ``unix:`` target: reachable by root only when the socket's directory is private).
    Every link end gets the ``qdisc`` tree at its core's rate. Does not wait for the
    switches to connect (the controller knows when they have). On any error the partly
    built network is stopped before the exception propagates.
    """
    from functools import partial

    if os.geteuid() != 0:
        raise PermissionError("building a Mininet network needs root")
    # Mininet.init() would raise rlimits and rewrite system-wide sysctls (tcp_wmem, ...)
    # that nothing restores; the emulation needs none of it.
    Mininet.inited = True
    datapath = datapath or choose_datapath()
    # batch: every bridge and port in one ovs-vsctl process (Mininet's batchStartup).
    # Without it each switch writes its ovs-vsctl line to its shell's terminal, whose line
    # buffer (4096 bytes) cut the line of a switch with 64 ports: no bridges at 64 x 2.
    switch = partial(OVSSwitch, datapath=datapath, protocols="OpenFlow13",
                     failMode="secure", reconnectms=1000, batch=True)
    # with a Unix socket, the bridges start without a controller and get it in one
    # ovs-vsctl call (Mininet writes every target as protocol:ip:port)
    ctrl = _Controller("c0", ip=controller_ip, port=controller_port) \
        if controller_path is None else None
    net = _Network(topo=topo, switch=switch, controller=ctrl, link=_Link, build=False,
                  autoSetMacs=False, autoStaticArp=False, waitConnected=False,
                  inNamespace=False)
    try:
        net.build()
        net.start()
        if controller_path is not None:
            cmd = ["ovs-vsctl", "--timeout=10"]
            for sw in net.switches:
                cmd += ["--", f"--id=@{sw.name}", "create", "Controller",
                        f'target="unix:{controller_path}"', "max_backoff=1000",
                        "--", "set", "bridge", sw.name, f"controller=@{sw.name}"]
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                raise RuntimeError(f"setting the controller failed: {r.stderr.strip()}")
        made = set(subprocess.run(["ovs-vsctl", "list-br"], capture_output=True,
                                  text=True).stdout.split())
        missing = [s.name for s in net.switches if s.name not in made]
        if missing:
            raise RuntimeError(f"Open vSwitch did not create bridges {missing} (is "
                               f"ovs-vswitchd running? scripts/setup-system.sh starts it)")
        configure_hosts(net, topo, qdisc)
    except BaseException:
        stop_network(net)
        raise
    return net


def configure_hosts(net, topo: ParallelTopo, qdisc) -> None:
    """Addresses, IPv6 off, hairpin routes, offloads off, and the rate trees on both link
    ends: per host one ``ip -batch``, one ``tc -batch`` and one shell command line, the
    hosts all at once (module docstring)."""
    ip_batches, tc_batches, shells, root_tc = [], [], [], []
    for i in range(topo.n_hosts):
        h = net.get(host_name(i))
        ip = ["link set lo up",
              # local delivery after our hairpin rules (see hairpin_commands)
              "rule add pref 1000 lookup local", "rule del pref 0 lookup local"]
        tc = []
        sysctl = ["net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1",
                  "net.ipv4.conf.all.accept_local=1", "net.ipv4.conf.all.rp_filter=0",
                  "net.ipv4.conf.default.rp_filter=0", "net.ipv4.tcp_slow_start_after_idle=0",
                  "net.ipv4.tcp_congestion_control=cubic"]
        ethtool = []
        for c in range(topo.n_cores):
            intf = host_intf(i, c)
            addr = core_address(i, c)
            ip += [f"addr add {addr}/16 dev {intf}", f"link set {intf} up",
                   f"route replace 10.{c + 1}.0.0/16 dev {intf} proto kernel "
                   f"scope link src {addr} rto_min {rto_min_ms(topo.rates[c])}ms"]
            keys, lines = hairpin_commands(i, c, intf_mac(i, c), topo.rates[c])
            sysctl += keys
            ip += lines
            ethtool.append(f"ethtool -K {intf} tx off rx off tso off gso off gro off "
                           f">/dev/null 2>&1")
            tc += qdisc(intf, topo.rates[c])
            root_tc += qdisc(switch_intf(i, c), topo.rates[c])
        ip_batches.append((h.popen, ["ip", "-batch", "-"], ip))
        tc_batches.append((h.popen, ["tc", "-force", "-batch", "-"], tc))
        shells.append((h, "; ".join([f"sysctl -qw {' '.join(sysctl)}", *ethtool,
                                     "ip rule | grep -c 'lookup 1'"])))
    _run_batches(ip_batches + tc_batches +
                 [(subprocess.Popen, ["tc", "-force", "-batch", "-"], root_tc)])
    for h, line in shells:
        h.sendCmd(line)
    for h, _ in shells:
        out = h.waitOutput()
        if out.strip().splitlines()[-1:] != [str(topo.n_cores)]:
            raise RuntimeError(f"configuring {h.name} failed: {out.strip()}")


def hairpin_commands(host: int, core: int, mac: str,
                     rate_bps: float) -> tuple[list[str], list[str]]:
    """Make traffic from a host to its own address on ``core`` cross that core's switch.

    The fabric model charges a flow from server ``i`` to itself to ``i``'s uplink and
    downlink, like any other. Linux would deliver it over ``lo``; instead, locally
    generated packets to the host's own core address are routed out of the core's
    interface (policy rule before the local table, a static neighbour entry for the own
    MAC), the switch sends them back through the input port (``OFPP_IN_PORT``), and
    ``accept_local`` lets the host take packets with its own source address.

    Returns ``(sysctl settings, ip -batch lines)``.
    """
    intf, addr, table = host_intf(host, core), core_address(host, core), 100 + core
    return ([f"net.ipv4.conf.{intf}.accept_local=1", f"net.ipv4.conf.{intf}.rp_filter=0"],
            [f"rule add pref 500 iif lo to {addr} lookup {table}",
             f"route add {addr}/32 dev {intf} table {table} "
             f"rto_min {rto_min_ms(rate_bps)}ms",
             f"neigh replace {addr} lladdr {mac} dev {intf} nud permanent"])


def _run_batches(batches) -> None:
    """Run ``(popen, argv, lines)`` batches (``ip -batch -``, ``tc -batch -``: the lines on
    standard input, so no file a kill could leave) all at once; raise if one fails."""
    procs = []
    try:
        for popen, argv, lines in batches:
            if lines:
                p = popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT)
                procs.append((argv, p))
                p.stdin.write(("\n".join(lines) + "\n").encode())
                p.stdin.close()
        failed = []
        for argv, p in procs:
            out = p.stdout.read().decode(errors="replace")
            if p.wait() != 0:
                failed.append(f"{' '.join(argv)}: {out.strip()} (rc={p.returncode})")
        if failed:
            raise RuntimeError(f"{len(failed)} batch(es) failed: {failed[0]}")
    finally:
        for _, p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()


def stop_network(net) -> None:
    """Stop ``net`` quickly; never raises.

    One ``ovs-vsctl`` call deletes every bridge; ending the host shells destroys the host
    namespaces and with them both ends of every veth (Mininet's ``net.stop()`` deletes the
    links one ``ip link del`` at a time, seconds on a 16 x 4 fabric). Whatever is still
    there afterwards (it should not be) goes the slow way.
    """
    try:
        names = [sw.name for sw in net.switches]
        if names:
            cmd = ["ovs-vsctl", "--timeout=10"]
            for b in names:
                cmd += ["--", "--if-exists", "del-br", b]
            subprocess.run(cmd, capture_output=True)
        for node in net.hosts + net.switches:
            node.terminate()
        for c in net.controllers:
            c.stop()
        ours = {i.name for link in net.links for i in (link.intf1, link.intf2)} | set(names)
        r = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True)
        for line in r.stdout.splitlines():
            parts = line.split(":", 2)
            name = parts[1].strip().split("@")[0] if len(parts) > 1 else ""
            if name in ours:
                subprocess.run(["ip", "link", "del", name], capture_output=True)
    except Exception:  # noqa: BLE001 - fall back to Mininet's own teardown
        try:
            net.stop()
        except Exception:  # noqa: BLE001 - best effort; emulate.mininet.clean removes what remains
            pass
