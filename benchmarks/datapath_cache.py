"""Benchmark: how long after a barrier reply the switch still applies a modified rule's
old actions, with and without emptying the datapath cache (:mod:`controller.datapath`).

One bridge of the datapath the emulation uses (``choose_datapath``), two namespaces, a
UDP stream from one to the other (a datagram every 0.2 ms carrying its send time on the
machine's monotonic clock), and one rule for it that sets its DSCP. The rule's DSCP is
flipped ``--flips`` times per arm with ``ovs-ofctl mod-flows``, which returns after the
switch's barrier reply; the arms alternate flip by flip, so both see the same load:

* ``barrier``: nothing more (what a controller that trusts the barrier gets);
* ``purge``: then :meth:`controller.datapath.Datapath.purge`, as the controller does
  before it resumes a flow.

The receiver logs every datagram's TOS. A *stale* datagram was sent after the flip had
returned (and the purge, in that arm) and still carries the old DSCP. With ``--busy K``,
K busy loops run meanwhile (the loaded machine of a CI run; started and ended here, by
PID). Run as root, with Open vSwitch running (``scripts/setup-system.sh``)::

    sudo .venv/bin/python benchmarks/datapath_cache.py --flips 30 --busy 2

Holds the Mininet lock (no emulation runs meanwhile) and removes its bridge and
namespaces whatever happens.
"""
from __future__ import annotations

import argparse
import bisect
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from controller.datapath import Datapath, unixctl_path  # noqa: E402
from emulate.mininet.clean import ovs_rundir  # noqa: E402
from emulate.mininet.lock import hold  # noqa: E402
from topologies.mininet_topo import choose_datapath  # noqa: E402

BRIDGE, NS = "cfdcache", ("cfdc1", "cfdc2")
ADDR = ("10.199.0.1", "10.199.0.2")
PORT = 9000
MATCH = f"udp,nw_src={ADDR[0]},nw_dst={ADDR[1]},tp_dst={PORT}"

RECEIVER = r"""
import socket, struct, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IP, socket.IP_RECVTOS, 1)
s.bind((sys.argv[1], int(sys.argv[2])))
s.settimeout(2.0)
with open(sys.argv[3], "w") as out:
    try:
        while True:
            data, anc, _, _ = s.recvmsg(64, 64)
            tos = [c[2][0] for c in anc if c[1] == socket.IP_TOS]
            seq, sent = struct.unpack("!Qd", data[:16])
            out.write(f"{sent:.6f} {tos[0] >> 2 if tos else -1}\n")
    except socket.timeout:
        pass
"""
SENDER = r"""
import socket, struct, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.connect((sys.argv[1], int(sys.argv[2])))
end, seq = time.monotonic() + float(sys.argv[3]), 0
while time.monotonic() < end:
    s.send(struct.pack("!Qd", seq, time.monotonic()))
    seq += 1
    time.sleep(0.0002)
"""


def sh(cmd: list[str]) -> None:
    subprocess.run(cmd, check=True, capture_output=True, text=True)


def build(datapath: str) -> None:
    for i, (ns, addr) in enumerate(zip(NS, ADDR), 1):
        sh(["ip", "netns", "add", ns])
        sh(["ip", "link", "add", f"{ns}-eth0", "type", "veth", "peer", "name", f"{BRIDGE}-p{i}"])
        sh(["ip", "link", "set", f"{ns}-eth0", "netns", ns])
        sh(["ip", "-n", ns, "addr", "add", f"{addr}/24", "dev", f"{ns}-eth0"])
        sh(["ip", "-n", ns, "link", "set", f"{ns}-eth0", "up"])
        sh(["ip", "link", "set", f"{BRIDGE}-p{i}", "up"])
        # checksums in software: the userspace datapath needs it (as the emulation does)
        subprocess.run(["ip", "netns", "exec", ns, "ethtool", "-K", f"{ns}-eth0", "tx", "off"],
                       capture_output=True)
    dp = "netdev" if datapath == "user" else "system"
    sh(["ovs-vsctl", "add-br", BRIDGE, "--", "set", "bridge", BRIDGE, f"datapath_type={dp}",
        "fail-mode=secure", "protocols=OpenFlow13",
        "--", "add-port", BRIDGE, f"{BRIDGE}-p1", "--", "set", "interface", f"{BRIDGE}-p1",
        "ofport_request=1",
        "--", "add-port", BRIDGE, f"{BRIDGE}-p2", "--", "set", "interface", f"{BRIDGE}-p2",
        "ofport_request=2"])
    sh(["ovs-ofctl", "-O", "OpenFlow13", "add-flow", BRIDGE, "priority=1,actions=NORMAL"])
    sh(["ovs-ofctl", "-O", "OpenFlow13", "add-flow", BRIDGE,
        f"priority=100,{MATCH},actions=set_field:10->ip_dscp,output:2"])


def teardown() -> None:
    subprocess.run(["ovs-vsctl", "--if-exists", "del-br", BRIDGE], capture_output=True)
    for ns in NS:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def measure(flips: int, cache: Datapath, tmp: str) -> tuple[list, list]:
    """Flip the rule ``2 * flips`` times, arms alternating; the flips and the datagrams."""
    log = os.path.join(tmp, "received.txt")
    rx = subprocess.Popen(["ip", "netns", "exec", NS[1], sys.executable, "-c", RECEIVER,
                           ADDR[1], str(PORT), log])
    time.sleep(0.5)
    subprocess.run(["ip", "netns", "exec", NS[0], "ping", "-c", "2", "-i", "0.2", ADDR[1]],
                   capture_output=True)                 # ARP before the stream
    seconds = 2 * flips * 0.45 + 1.5
    tx = subprocess.Popen(["ip", "netns", "exec", NS[0], sys.executable, "-c", SENDER,
                           ADDR[1], str(PORT), str(seconds)])
    time.sleep(0.7)
    done, dscp = [], 10
    for k in range(2 * flips):
        arm = ("barrier", "purge")[k % 2]
        new = 20 if dscp == 10 else 10
        t0 = time.monotonic()
        sh(["ovs-ofctl", "-O", "OpenFlow13", "mod-flows", BRIDGE,
            f"{MATCH},actions=set_field:{new}->ip_dscp,output:2"])
        t_barrier = time.monotonic()
        purge_ms = cache.purge() * 1e3 if arm == "purge" else None
        done.append({"arm": arm, "old": dscp, "t0": t0,
                     "t_barrier": t_barrier, "t_done": time.monotonic(),
                     "flip_ms": (t_barrier - t0) * 1e3, "purge_ms": purge_ms})
        dscp = new
        time.sleep(random.uniform(0.2, 0.4))
    tx.wait()
    rx.wait()
    with open(log) as fh:
        got = [(float(a), int(b)) for a, b in (line.split() for line in fh)]
    return done, got


def summarise(done: list, got: list) -> dict:
    """Per arm: the flips after which a datagram still carried the old DSCP (received
    after the flip's barrier, or purge, and before the next flip), how many, the last."""
    got = sorted(got)
    times = [t for t, _ in got]
    for k, f in enumerate(done):
        nxt = done[k + 1]["t0"] if k + 1 < len(done) else float("inf")
        window = got[bisect.bisect_left(times, f["t_done"]):bisect.bisect_left(times, nxt)]
        stale = [t for t, d in window if d == f["old"]]
        f["stale"] = len(stale)
        f["stale_ms"] = (max(stale) - f["t_done"]) * 1e3 if stale else 0.0
    out = {}
    for arm in ("barrier", "purge"):
        fs = [f for f in done if f["arm"] == arm]
        out[arm] = {"flips": len(fs), "flips_with_stale": sum(f["stale"] > 0 for f in fs),
                    "stale_datagrams": sum(f["stale"] for f in fs),
                    "max_stale_ms": round(max(f["stale_ms"] for f in fs), 1),
                    "flip_ms_median": round(statistics.median(f["flip_ms"] for f in fs), 1)}
        if arm == "purge":
            out[arm]["purge_ms_median"] = round(statistics.median(f["purge_ms"] for f in fs), 2)
            out[arm]["purge_ms_max"] = round(max(f["purge_ms"] for f in fs), 2)
    out["datagrams"] = len(got)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--flips", type=int, default=30, help="rule changes per arm")
    ap.add_argument("--busy", type=int, default=0, help="busy loops meanwhile")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if os.geteuid() != 0:
        print("datapath_cache.py: run as root (namespaces, Open vSwitch)", file=sys.stderr)
        return 2
    ctl = unixctl_path(ovs_rundir())
    if not ctl:
        print("datapath_cache.py: no ovs-vswitchd (run scripts/setup-system.sh)", file=sys.stderr)
        return 2
    datapath = choose_datapath()
    busy = []
    with hold(), tempfile.TemporaryDirectory() as tmp:
        teardown()
        try:
            build(datapath)
            busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                    for _ in range(args.busy)]
            done, got = measure(args.flips, Datapath(ctl), tmp)
        finally:
            for p in busy:
                p.kill()
                p.wait()
            teardown()
    res = {"datapath": datapath, "busy_loops": args.busy, "load": os.getloadavg()[0],
           **summarise(done, got)}
    if args.json:
        print(json.dumps(res))
        return 0
    print(f"datapath {datapath}, {args.busy} busy loops, load {res['load']:.1f}, "
          f"{res['datagrams']} datagrams")
    print(f"{'arm':8} {'flips':>5} {'with stale':>10} {'stale dgrams':>12} "
          f"{'last stale ms':>13} {'flip ms':>8} {'purge ms (max)':>15}")
    for arm in ("barrier", "purge"):
        r = res[arm]
        purge = (f"{r['purge_ms_median']:.2f} ({r['purge_ms_max']:.2f})"
                 if arm == "purge" else "-")
        print(f"{arm:8} {r['flips']:5d} {r['flips_with_stale']:10d} {r['stale_datagrams']:12d} "
              f"{r['max_stale_ms']:13.1f} {r['flip_ms_median']:8.1f} {purge:>15}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
