"""Fault campaign: every emulation fault survived or reported, nothing left behind.

Injects the faults of issue 19 into real emulated runs (each under the Mininet lock,
``flock /tmp/coflowemu-mininet.lock``) and prints one row per fault:

    fault / runs / ended cleanly / records lost / takeovers / leftovers after run /
    leftovers after `clean`

* signals (SIGINT, SIGTERM, SIGKILL) to ``coflowemu run --engine mininet`` at build and
  mid-run: *ended cleanly* = the engine exited with a clear message (SIGKILL: no
  controller or agent outlived it);
* an agent killed and an agent stopped (SIGSTOP) mid-run: the run fails within seconds
  naming the host, and the coflows that had finished are in the (incomplete) record
  (*records lost* counts those missing);
* the controller killed mid-run;
* a fake switch claiming a core's datapath id mid-run: *takeovers* counts runs that
  accepted it (the fake switch received a flow-mod or the run reported success);
* bad API traffic (malformed lines, wrong ops, a line too long) from a stranger on the
  API socket: the run must finish as usual;
* a watcher that never reads its progress pushes: the run must finish as usual.

*Leftovers* are our OVS bridges, root-namespace interfaces, run directories, stale
files and processes (see :mod:`emulate.mininet.clean`); after every fault
``coflowemu clean`` runs and must leave nothing.

Run as root::

    flock /tmp/coflowemu-mininet.lock .venv/bin/python benchmarks/faults.py --quick
    flock /tmp/coflowemu-mininet.lock .venv/bin/python benchmarks/faults.py --json

:func:`fault_campaign` returns the rows (list of dicts) for the reliability campaign.
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import struct
import threading
import time

# ---------------------------------------------------------------------- a fake switch
OFP_VERSION = 4                     # OpenFlow 1.3
HELLO, ECHO_REQUEST, ECHO_REPLY = 0, 2, 3
FEATURES_REQUEST, FEATURES_REPLY = 5, 6
FLOW_MOD = 14
MULTIPART_REQUEST, MULTIPART_REPLY = 18, 19
BARRIER_REQUEST, BARRIER_REPLY = 20, 21
HEADER = struct.Struct("!BBHI")     # version, type, length, xid


class FakeSwitch:
    """Speaks just enough OpenFlow 1.3 to pass for a core switch.

    Says hello, answers the features request claiming ``dpid``, answers port
    descriptions (none), echoes and barriers, and counts the flow-mods it is sent.
    ``address``: a Unix socket path or a ``(host, port)`` pair.
    """

    def __init__(self, address, dpid: int, timeout: float = 10.0):
        self.dpid = dpid
        self.flow_mods = 0
        self.configured = threading.Event()     # got its features request answered
        self.closed = threading.Event()         # the controller hung up
        family = socket.AF_UNIX if isinstance(address, str) else socket.AF_INET
        deadline = time.time() + timeout
        while True:
            self.sock = socket.socket(family, socket.SOCK_STREAM)
            try:
                self.sock.connect(address)
                break
            except OSError:
                self.sock.close()
                if time.time() > deadline:
                    raise
                time.sleep(0.05)
        self._send(HELLO, 0)
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _send(self, kind: int, xid: int, body: bytes = b"") -> None:
        self.sock.sendall(HEADER.pack(OFP_VERSION, kind, HEADER.size + len(body), xid)
                          + body)

    def _recv(self, n: int) -> bytes | None:
        buf = b""
        while len(buf) < n:
            try:
                chunk = self.sock.recv(n - len(buf))
            except OSError:
                return None
            if not chunk:
                return None
            buf += chunk
        return buf

    def _loop(self) -> None:
        try:
            while True:
                head = self._recv(HEADER.size)
                if head is None:
                    return
                _, kind, length, xid = HEADER.unpack(head)
                body = self._recv(length - HEADER.size) if length > HEADER.size else b""
                if body is None:
                    return
                if kind == FEATURES_REQUEST:
                    # datapath_id, n_buffers, n_tables, auxiliary_id, pad, capabilities,
                    # reserved
                    self._send(FEATURES_REPLY, xid,
                               struct.pack("!QIBB2xII", self.dpid, 0, 254, 0, 0, 0))
                    self.configured.set()
                elif kind == MULTIPART_REQUEST:
                    mp_type = struct.unpack_from("!H", body)[0] if len(body) >= 2 else 13
                    self._send(MULTIPART_REPLY, xid, struct.pack("!HH4x", mp_type, 0))
                elif kind == ECHO_REQUEST:
                    self._send(ECHO_REPLY, xid, body)
                elif kind == BARRIER_REQUEST:
                    self._send(BARRIER_REPLY, xid)
                elif kind == FLOW_MOD:
                    self.flow_mods += 1
        except OSError:
            pass
        finally:
            self.closed.set()

    def close(self) -> None:
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
