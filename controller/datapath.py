"""The switches' flow cache, and why a barrier reply is not enough for a resume.

Open vSwitch does not forward with its OpenFlow tables: it forwards with a cache of
*datapath flows* (megaflows), each the translation of the tables for the headers of a
packet that missed the cache. A flow mod changes the tables at once, and the barrier
reply says so; the cached datapath flows that translated the old rule are re-translated
later, by the revalidator threads, which the change only wakes. Until they run, packets
of a connection whose rule was modified keep the old rule's actions (here: the old
DSCP, so the old priority class).

That window is short on an idle machine and long on a busy one. Measured with
``benchmarks/datapath_cache.py`` (a netdev bridge, a UDP stream every 0.2 ms, its rule's
``set_field ip_dscp`` flipped with ``ovs-ofctl mod-flows``, which returns after the
barrier reply; the receiver logs each datagram's TOS; 2026-11-27, Open vSwitch 3.1,
userspace datapath): idle, and beside two busy loops, 0 of 20 and 0 of 30 flips had a
datagram sent after the barrier with the old DSCP; beside three busy loops (load 3.1),
6 of 60 did, 581 datagrams in all, the last 93 ms after the barrier. For a resumed flow
that window is the drain class: its first packets crossed the switch behind the drained
bytes of every paused flow on that port (served at a fiftieth of the link) while its
later packets, in the new class, overtook them.

:meth:`Datapath.purge` empties the cache (``revalidator/purge`` on ovs-vswitchd's
control socket, as ``ovs-appctl`` sends it): it returns once the revalidators are paused
and every datapath flow is deleted, so every packet after it is translated from the
tables as they are. In the same run, the flips followed by a purge: 0 of 60 with a stale
datagram; a purge took 0.52 ms median (7.8 ms at most). (``revalidator/wait``, which
waits for a whole revalidation round, took 500 ms.) The price is one cache miss for
every connection's next packet, so the controller purges only where a stale class hurts:
before a resumed flow leaving the drain class is told
(:meth:`controller.app.CoflowController.apply_rules`, ``flush``).
"""
from __future__ import annotations

import json
import os
import socket
import time


def unixctl_path(rundir: str) -> str:
    """ovs-vswitchd's control socket in Open vSwitch's run directory ``rundir`` (named
    after the daemon's pid, from its pidfile); "" when no ovs-vswitchd runs there."""
    try:
        with open(os.path.join(rundir, "ovs-vswitchd.pid")) as fh:
            pid = int(fh.read().strip())
    except (OSError, ValueError):
        return ""
    path = os.path.join(rundir, f"ovs-vswitchd.{pid}.ctl")
    return path if os.path.exists(path) else ""


class Datapath:
    """ovs-vswitchd's datapath flow cache, reached through its control socket (a
    JSON-RPC stream, one request and one reply per connection, as ``ovs-appctl``)."""

    def __init__(self, path: str, timeout: float = 2.0):
        self.path = path
        self.timeout = timeout

    def command(self, method: str, *params: str) -> str:
        """Run one ``ovs-appctl`` command; its reply text. Raises ``OSError`` when the
        daemon cannot be reached or answers with an error."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(self.timeout)
            s.connect(self.path)
            s.sendall(json.dumps({"method": method, "params": list(params),
                                  "id": 0}).encode())
            buf, decoder = b"", json.JSONDecoder()
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    raise OSError(f"ovs-vswitchd closed {self.path} before answering {method}")
                buf += chunk
                try:
                    reply, _ = decoder.raw_decode(buf.decode())
                    break
                except ValueError:      # not a whole reply yet
                    continue
        if reply.get("error") is not None:
            raise OSError(f"ovs-vswitchd: {method}: {reply['error']}".rstrip())
        return reply.get("result") or ""

    def purge(self) -> float:
        """Delete every cached datapath flow (module docstring); the seconds it took."""
        t = time.perf_counter()
        self.command("revalidator/purge")
        return time.perf_counter() - t
