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
emulation runs. tc runs once per namespace in ``tc -batch`` mode, which is what keeps
building a 16 x 4 network to a few seconds (Mininet's ``TCLink`` runs several ``tc``
processes per interface).

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

import os
import shutil
import subprocess
from typing import Callable, Sequence

PREFIX = "cfe"
"""Name prefix of every switch (OVS bridge) and root-namespace interface we create."""

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
    from mininet.node import OVSSwitch, RemoteController
    from mininet.topo import Topo
except ImportError:  # pragma: no cover - without mininet only the helpers above work
    Topo = object
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
                             params1={"ip": f"{core_address(i, c)}/16"})


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

    from mininet.link import Link
    from mininet.net import Mininet

    if os.geteuid() != 0:
        raise PermissionError("building a Mininet network needs root")
    # Mininet.init() would raise rlimits and rewrite system-wide sysctls (tcp_wmem, ...)
    # that nothing restores; the emulation needs none of it.
    Mininet.inited = True
    datapath = datapath or choose_datapath()
    switch = partial(OVSSwitch, datapath=datapath, protocols="OpenFlow13",
                     failMode="secure", reconnectms=1000)
    # with a Unix socket, the bridges start without a controller and get it in one
    # ovs-vsctl call (Mininet writes every target as protocol:ip:port)
    ctrl = _Controller("c0", ip=controller_ip, port=controller_port) \
        if controller_path is None else None
    net = Mininet(topo=topo, switch=switch, controller=ctrl, link=Link, build=False,
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
    """Offloads off, IPv6 off, hairpin routes, and the rate trees on both link ends."""
    root_lines = []
    for i in range(topo.n_hosts):
        h = net.get(host_name(i))
        lines = []
        cmds = ["sysctl -qw net.ipv6.conf.all.disable_ipv6=1 "
                "net.ipv6.conf.default.disable_ipv6=1 net.ipv4.conf.all.accept_local=1 "
                "net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0 "
                "net.ipv4.tcp_slow_start_after_idle=0 net.ipv4.tcp_congestion_control=cubic",
                # local delivery after our hairpin rules (see hairpin_commands)
                "ip rule add pref 1000 lookup local", "ip rule del pref 0 lookup local"]
        for c in range(topo.n_cores):
            intf = host_intf(i, c)
            cmds.append(f"ethtool -K {intf} tx off rx off tso off gso off gro off "
                        f">/dev/null 2>&1")
            cmds += hairpin_commands(i, c, h.intf(intf).MAC())
            lines += qdisc(intf, topo.rates[c])
            root_lines += qdisc(switch_intf(i, c), topo.rates[c])
        _tc_batch(lines, run=lambda text, h=h: _host_tc(h, text))
        out = h.cmd("; ".join(cmds) + "; ip rule | grep -c 'lookup 1'")
        if out.strip().splitlines()[-1:] != [str(topo.n_cores)]:
            raise RuntimeError(f"configuring {h.name} failed: {out.strip()}")
    _tc_batch(root_lines, run=_root_tc)


def hairpin_commands(host: int, core: int, mac: str) -> list[str]:
    """Make traffic from a host to its own address on ``core`` cross that core's switch.

    The fabric model charges a flow from server ``i`` to itself to ``i``'s uplink and
    downlink, like any other. Linux would deliver it over ``lo``; instead, locally
    generated packets to the host's own core address are routed out of the core's
    interface (policy rule before the local table, a static neighbour entry for the own
    MAC), the switch sends them back through the input port (``OFPP_IN_PORT``), and
    ``accept_local`` lets the host take packets with its own source address.
    """
    intf, addr, table = host_intf(host, core), core_address(host, core), 100 + core
    return [f"sysctl -qw net.ipv4.conf.{intf}.accept_local=1 net.ipv4.conf.{intf}.rp_filter=0",
            f"ip rule add pref 500 iif lo to {addr} lookup {table}",
            f"ip route add {addr}/32 dev {intf} table {table}",
            f"ip neigh replace {addr} lladdr {mac} dev {intf} nud permanent"]


def _root_tc(text: str) -> str:
    r = subprocess.run(["tc", "-force", "-batch", "-"], input=text, capture_output=True,
                       text=True)
    return f"{r.stderr}rc={r.returncode}"


def _host_tc(host, text: str) -> str:
    p = host.popen(["tc", "-force", "-batch", "-"], stdin=subprocess.PIPE,
                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out, _ = p.communicate(text.encode())
    return f"{out.decode(errors='replace')}rc={p.wait()}"


def _tc_batch(lines: list[str], run) -> None:
    """Run tc's batch of ``lines`` (on its standard input: no file a kill could leave)."""
    if not lines:
        return
    out = run("\n".join(lines) + "\n")
    if "rc=0" not in out:
        raise RuntimeError(f"tc -batch failed: {out.strip()}")


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
