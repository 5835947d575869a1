"""The host agent: runs inside one emulated host and moves the real bytes of its flows.

Started by the Mininet engine in every host's network namespace::

    python -m emulate.agent --api RUN_DIR/api.sock --host I

It registers with the controller over the management socket (:mod:`controller.api`),
then serves two roles:

* **receiver**: listens on TCP port ``data_port`` on all its addresses; a connection
  starts with a 16-byte header (``b"CFE1"``, flow index, size); the agent counts the bytes
  that follow and, when all have arrived, reports ``flow_done`` with the arrival time of
  the last byte. It answers ``counters`` with the bytes received so far per flow.
* **sender**: on ``start`` it connects from its address on the flow's core
  (``src_addr:sport``; the controller has installed the rule for exactly that 4-tuple) to
  the destination's address on that core, marks the class's TOS on the socket (the
  host-side HTB tree acts on it), optionally paces (``SO_MAX_PACING_RATE``), and writes
  ``bytes`` bytes; ``update`` changes TOS, pacing and pause/resume of a running flow.

A paused flow stops writing; what is already in its small socket buffer (``SNDBUF``) still
drains, in its class. Standard library only, one thread per flow: startup is fast and the
agent costs little CPU next to the switch.

The agent exits when the controller says ``stop`` or its connection closes, and (Linux)
when the engine process that started it dies.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import struct
import sys
import threading
import time

from controller.api import CONTROLLER_OPS, ApiError, Channel, parse, validate

HEADER = struct.Struct("!4sIQ")
MAGIC = b"CFE1"
CHUNK = 16384
SNDBUF = 65536
SO_MAX_PACING_RATE = getattr(socket, "SO_MAX_PACING_RATE", 47)


class Agent:
    def __init__(self, api_path: str, host: int, sndbuf: int = SNDBUF):
        self.host = host
        self.sndbuf = sndbuf
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(api_path)
        self.ch = Channel(s, name=f"agent{host}")
        self.rx: dict[int, int] = {}
        self.rx_lock = threading.Lock()
        self.senders: dict[int, "Sender"] = {}
        self.data_port = None
        self.stopping = threading.Event()

    # ---------------------------------------------------------------- control
    def run(self, data_port: int) -> int:
        # listen first: once registered, flows may arrive at any moment
        self.data_port = data_port
        self.server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.server.bind(("0.0.0.0", data_port))
        self.server.listen(1024)
        threading.Thread(target=self._accept, daemon=True, name="accept").start()
        rid, ev, slot = self.ch.request_async({"op": "register", "host": self.host,
                                               "pid": os.getpid()})
        reader = threading.Thread(target=self._read, daemon=True, name="control")
        reader.start()
        ans = self.ch.wait(rid, ev, slot, timeout=10.0)
        if not ans or not ans.get("ok"):
            print(f"agent {self.host}: registration refused: {ans}", file=sys.stderr)
            return 1
        if int(ans.get("data_port", data_port)) != data_port:
            print(f"agent {self.host}: controller expects data port {ans['data_port']}, "
                  f"listening on {data_port}", file=sys.stderr)
            return 1
        reader.join()
        return 0

    def _read(self) -> None:
        for line in self.ch.lines():
            try:
                if line is None:
                    raise ApiError("message too long")
                msg = parse(line)
                if "re" in msg and "op" not in msg:
                    self.ch.resolve(msg)
                    continue
                validate(msg, CONTROLLER_OPS)
                self._command(msg)
            except ApiError as e:
                self.report_error(None, f"bad message from the controller: {e}")
            if self.stopping.is_set():
                break
        self.stopping.set()

    def _command(self, msg: dict) -> None:
        op = msg["op"]
        if op == "start":
            f = msg["flow"]
            if f in self.senders:
                raise ApiError(f"start: flow {f} already started")
            s = Sender(self, msg)
            self.senders[f] = s
            s.start()
        elif op == "update":
            for item in msg["flows"]:
                if not isinstance(item, dict) or not isinstance(item.get("flow"), int):
                    raise ApiError(f"update: bad item {item!r}")
                s = self.senders.get(item["flow"])
                if s is not None:
                    s.update(item)
        elif op == "counters":
            with self.rx_lock:
                rx = {str(f): n for f, n in self.rx.items()}
            self.ch.answer(msg["id"], rx=rx, t=time.time())
        elif op == "stop":
            self.stopping.set()

    def report_error(self, flow, error: str) -> None:
        self.ch.send({"op": "agent_error", "id": 0, "flow": flow, "error": error[:500]})

    # ---------------------------------------------------------------- receiving
    def _accept(self) -> None:
        while not self.stopping.is_set():
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self._receive, args=(conn,), daemon=True).start()

    def _receive(self, conn: socket.socket) -> None:
        try:
            head = _recv_exact(conn, HEADER.size)
            if head is None:
                return
            magic, flow, size = HEADER.unpack(head)
            if magic != MAGIC:
                return
            got = 0
            buf = bytearray(1 << 17)
            view = memoryview(buf)
            with self.rx_lock:
                self.rx[flow] = 0
            while got < size:
                n = conn.recv_into(view, min(len(buf), size - got))
                if n == 0:
                    break
                got += n
                with self.rx_lock:
                    self.rx[flow] = got
            t = time.time()
            if got == size:
                self.ch.send({"op": "flow_done", "id": 0, "flow": flow, "t": t, "bytes": got})
            else:
                self.report_error(flow, f"connection closed after {got} of {size} bytes")
        except OSError as e:
            self.report_error(None, f"receive failed: {e}")
        finally:
            conn.close()


class Sender(threading.Thread):
    """Sends one flow; pausable, re-markable, paceable while it runs."""

    def __init__(self, agent: Agent, msg: dict):
        super().__init__(daemon=True, name=f"flow{msg['flow']}")
        self.agent = agent
        self.msg = msg
        self.flow = msg["flow"]
        self.go = threading.Event()
        if not msg["paused"]:
            self.go.set()
        self.sock: socket.socket | None = None
        self.tos = msg["tos"]
        self.pace = msg.get("pace_bps")
        self.paced = False
        self.lock = threading.Lock()

    def update(self, item: dict) -> None:
        with self.lock:
            if "tos" in item and isinstance(item["tos"], int):
                self.tos = item["tos"]
            if "pace_bps" in item:
                self.pace = item["pace_bps"]
            if self.sock is not None:
                self._apply_opts(self.sock)
        if item.get("paused"):
            self.go.clear()
        else:
            self.go.set()

    def _apply_opts(self, s: socket.socket) -> None:
        s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, int(self.tos))
        if self.pace is None and not self.paced:
            return
        # bytes/s as an unsigned 32-bit value; ~0 means "no pacing"
        pace = 0xFFFFFFFF if self.pace is None else max(int(self.pace / 8), 1000)
        s.setsockopt(socket.SOL_SOCKET, SO_MAX_PACING_RATE,
                     struct.pack("I", min(pace, 0xFFFFFFFF)))
        self.paced = self.pace is not None

    def run(self) -> None:
        m = self.msg
        size = m["bytes"]
        s = None
        try:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, self.agent.sndbuf)
            with self.lock:
                self._apply_opts(s)
            s.bind((m["src_addr"], m["sport"]))
            for attempt in range(50):
                try:
                    s.connect((m["addr"], m["port"]))
                    break
                except (ConnectionRefusedError, TimeoutError, OSError):
                    if attempt == 49:
                        raise
                    time.sleep(0.05)
            with self.lock:
                self.sock = s
                self._apply_opts(s)
            self.agent.ch.send({"op": "flow_started", "id": 0, "flow": self.flow,
                                "t": time.time()})
            s.sendall(HEADER.pack(MAGIC, self.flow, size))
            zeros = memoryview(bytes(CHUNK))
            left = size
            while left > 0:
                if not self.go.is_set():
                    self.go.wait()
                if self.agent.stopping.is_set():
                    return
                n = s.send(zeros[:min(CHUNK, left)])
                left -= n
            s.shutdown(socket.SHUT_WR)
            # keep the socket until the receiver closes (it has counted every byte)
            s.settimeout(600)
            while s.recv(4096):
                pass
        except Exception as e:  # noqa: BLE001 - any failure must reach the controller
            if not self.agent.stopping.is_set():
                self.agent.report_error(self.flow, f"send failed: {type(e).__name__}: {e}")
        finally:
            with self.lock:
                self.sock = None
            if s is not None:
                s.close()


def _recv_exact(conn: socket.socket, n: int) -> bytes | None:
    buf = b""
    while len(buf) < n:
        chunk = conn.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def _die_with_parent() -> None:
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM))
    except Exception:  # noqa: BLE001
        pass


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--api", required=True, help="the controller's API socket")
    p.add_argument("--host", type=int, required=True, help="host index (0-based)")
    p.add_argument("--port", type=int, default=5001, help="TCP port for flows")
    p.add_argument("--sndbuf", type=int, default=SNDBUF, help="socket send buffer, bytes")
    args = p.parse_args(argv)
    _die_with_parent()
    signal.signal(signal.SIGTERM, lambda *_: os._exit(143))
    agent = Agent(args.api, args.host, args.sndbuf)
    code = agent.run(args.port)
    os._exit(code)


if __name__ == "__main__":
    sys.exit(main())
