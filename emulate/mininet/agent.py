"""The host agent: runs inside one emulated host and moves the real bytes of its flows.

Started by the Mininet engine in every host's network namespace::

    python -m emulate.mininet.agent --api RUN_DIR/api.sock --host I [--window BYTES] [--nice N]

It registers with the controller over the management socket (:mod:`controller.api`),
then serves two roles (three when the host is a machine of a joint workload):

* **receiver**: listens on TCP port ``data_port`` on all its addresses. A connection
  carries flows one after another, each a 16-byte header (``b"CFE1"``, flow index, size)
  and its bytes; when a flow's last byte has arrived the agent reports ``flow_done`` with
  that arrival time. ``counters`` is answered with the bytes received so far per flow,
  exact, from the kernel (``TCP_INFO``). The listening socket's small receive buffer
  (``--window``) bounds what any flow has in flight, so a switch queue never holds more
  than a few milliseconds of one flow.
* **sender**: keeps persistent connections (:class:`Connection`), one per source port the
  controller chose; ``connect`` opens one ahead of time, ``start`` sends a flow on one
  (opening it if needed) from the host's address on the flow's core to the destination's
  address on that core (the controller has the rule for exactly that 4-tuple), marking
  the class's TOS on the socket (the host-side HTB tree acts on it), optionally paced
  at a payload rate (:class:`~emulate.mininet.pacer.Pacer`, in the agent: the kernel's
  ``SO_MAX_PACING_RATE`` keeps a lowered rate for seconds after it is raised). ``update``
  changes TOS, pacing and pause/resume of a flow.

* **machine**: when the registration answer gives the host a ``capacity``, ``task_run``
  and ``task_stop`` run segments of compute tasks against it (:mod:`emulate.mininet.slots`:
  admission so that the capacity is never exceeded, each segment holding its demand for
  its duration), reported as ``task_started`` and ``task_done``; when it gives the host
  a ``speed`` (the redundancy model), ``copy_run`` and ``copy_stop`` run a job's copies
  against the machine's varying rate (:mod:`emulate.mininet.copies`), reported as
  ``copy_done``.

A paused flow stops writing; what is already in its socket (``TCP_NOTSENT_LOWAT`` keeps it
small) still drains, in the drain class (:mod:`controller.classes`). A resumed flow writes
again once all of that has been acknowledged (``SIOCOUTQ`` 0, at most
:data:`DRAIN_WAIT_MAX` seconds): its new bytes, in a higher class, would overtake what is
still queued in the drain class, and the holes that left waited for a retransmission
timer the drain's long round trips had inflated (0.5-0.7 s). Standard library
only: startup is fast and the agent costs little CPU next to the switch.

The agent exits when the controller says ``stop`` or its connection closes, and (Linux)
when the engine process that started it dies.
"""
from __future__ import annotations

import argparse
import fcntl
import os
import queue
import signal
import socket
import struct
import sys
import termios
import threading
import time

from controller.api import CONTROLLER_OPS, ApiError, Channel, parse, validate
from emulate.mininet.copies import Copies, SpeedPath
from emulate.mininet.pacer import Pacer
from emulate.mininet.slots import Slots

HEADER = struct.Struct("!4sIQ")
MAGIC = b"CFE1"
CHUNK = 16384
SNDBUF = 0
"""Requested send buffer (0: the kernel's autotuning); TCP_NOTSENT_LOWAT bounds unsent data."""
NOTSENT_LOWAT = 8192
CONGESTION = b"cubic"
"""Every sender's congestion control, whatever the machine's default: Linux's usual one,
so that runs do not depend on the machine. (The hosts' ``sysctl
net.ipv4.tcp_congestion_control=cubic`` fails in a network namespace unless cubic is in
``tcp_allowed_congestion_control``: on this VM the hosts silently ran BBR, seen with
``ss -ti``. On 4 x 2, fifo / sebf / lp-coflow, seeds 1-2, the two differ by less than
repeats of either do.)"""
TCP_NOTSENT_LOWAT = getattr(socket, "TCP_NOTSENT_LOWAT", 25)
RCV_CHUNK = 65536
DRAIN_WAIT_MAX = 0.1
"""Longest a resumed flow waits for what its pause left in the network (module docstring).
Where the drain class is free the leftover crosses a 20 Mbit/s link in 10 ms, a 1 Mbit/s
one in 90 ms; where a higher class keeps it waiting, waiting longer only delays the flow
(its new bytes then overtake it as before). With 2 s, one run of lp-flow on 4 x 2 at 20
Mbit/s (seed 1, 2 MB coflows) had a coflow 3.6 times its simulated time."""
TCP_INFO_LEN = 232
TCPI_BYTES_RECEIVED = 128
"""Offset of ``tcpi_bytes_received`` (u64) in Linux's ``struct tcp_info``."""


class Agent:
    def __init__(self, api_path: str, host: int, sndbuf: int = SNDBUF, window: int = 0):
        self.host = host
        self.sndbuf = sndbuf
        self.window = window
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(api_path)
        self.ch = Channel(s, name=f"agent{host}")
        self.rx: dict[int, int] = {}
        self.rx_lock = threading.Lock()
        # flow -> (socket, stream offset of its first payload byte, size), while arriving
        self.rx_live: dict[int, tuple[socket.socket, int, int]] = {}
        self.conns: dict[int, "Connection"] = {}   # by source port
        self.flows: dict[int, "Job"] = {}
        self.data_port = None
        self.slots: Slots | None = None
        self.copies: Copies | None = None
        self.stopping = threading.Event()

    # ---------------------------------------------------------------- control
    def run(self, data_port: int) -> int:
        # listen first: once registered, flows may arrive at any moment
        self.data_port = data_port
        self.server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if self.window:
            # inherited by accepted connections: the advertised window stays near this, so
            # a queue never holds more than a few milliseconds of one flow's packets and a
            # higher-priority flow does not wait long behind them. (A small receive buffer
            # does this; TCP_WINDOW_CLAMP on the listener does not.)
            self.server.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self.window)
        self.server.bind(("0.0.0.0", data_port))
        self.server.listen(1024)
        threading.Thread(target=self._accept, daemon=True, name="accept").start()
        rid, ev, slot = self.ch.request_async({"op": "register", "host": self.host,
                                               "pid": os.getpid()})
        # compute tasks need the capacity before the first command can arrive
        reg_done = threading.Event()
        reader = threading.Thread(target=self._read, args=(reg_done,), daemon=True,
                                  name="control")
        reader.start()
        ans = self.ch.wait(rid, ev, slot, timeout=10.0)
        if not ans or not ans.get("ok"):
            print(f"agent {self.host}: registration refused: {ans}", file=sys.stderr)
            return 1
        if ans.get("capacity") is not None:
            self.slots = Slots(float(ans["capacity"]), self._task_started, self._task_done)
        if ans.get("speed") is not None:      # a machine of the redundancy model
            self.copies = Copies(SpeedPath(*ans["speed"]), self._copy_done)
        reg_done.set()
        if int(ans.get("data_port", data_port)) != data_port:
            print(f"agent {self.host}: controller expects data port {ans['data_port']}, "
                  f"listening on {data_port}", file=sys.stderr)
            return 1
        reader.join()
        return 0

    def _read(self, registered: threading.Event) -> None:
        for line in self.ch.lines():
            try:
                if line is None:
                    raise ApiError("message too long")
                msg = parse(line)
                if "re" in msg and "op" not in msg:
                    self.ch.resolve(msg)
                    continue
                registered.wait(10.0)
                validate(msg, CONTROLLER_OPS)
                self._command(msg)
            except ApiError as e:
                self.report_error(None, f"bad message from the controller: {e}")
            if self.stopping.is_set():
                break
        self.stopping.set()
        for c in list(self.conns.values()):
            c.jobs.put(None)

    def _command(self, msg: dict) -> None:
        op = msg["op"]
        if op == "connect":
            self._conn(msg).jobs.put(("connect", msg["id"]))
        elif op == "start":
            f = msg["flow"]
            if f in self.flows:
                raise ApiError(f"start: flow {f} already started")
            job = Job(msg)
            self.flows[f] = job
            self._conn(msg).jobs.put(("send", job))
        elif op == "update":
            for item in msg["flows"]:
                if not isinstance(item, dict) or not isinstance(item.get("flow"), int):
                    raise ApiError(f"update: bad item {item!r}")
                job = self.flows.get(item["flow"])
                if job is not None:
                    job.update(item)
        elif op == "counters":
            self.ch.answer(msg["id"], rx=self.counters(), t=time.time())
        elif op == "ping":
            self.ch.answer(msg["id"])
        elif op in ("task_run", "task_stop"):
            if self.slots is None:
                raise ApiError(f"{op}: host {self.host} is not a machine (no capacity)")
            try:
                if op == "task_run":
                    self.slots.run(msg["seg"], msg["demand"], msg["seconds"],
                                   msg.get("until"))
                else:
                    self.slots.stop(msg["seg"])
            except ValueError as e:
                raise ApiError(f"{op}: {e}") from None
        elif op in ("copy_run", "copy_stop"):
            if self.copies is None:
                raise ApiError(f"{op}: host {self.host} is not a machine with a speed")
            try:
                if op == "copy_run":
                    t = self.copies.run(msg["seg"], msg["share"], msg["work"], msg["t0"],
                                        msg["scale"])
                    self.ch.answer(msg["id"], t=t)
                else:
                    t, progress, finished = self.copies.stop(msg["seg"])
                    self.ch.answer(msg["id"], t=t, progress=progress, finished=finished)
            except ValueError as e:
                self.ch.answer(msg["id"], ok=False, error=str(e))
                raise ApiError(f"{op}: {e}") from None
        elif op == "stop":
            self.stopping.set()

    def _conn(self, msg: dict) -> "Connection":
        c = self.conns.get(msg["sport"])
        if c is None:
            c = Connection(self, msg["src_addr"], msg["sport"], msg["addr"], msg["port"])
            self.conns[msg["sport"]] = c
            c.start()
        elif (c.addr, c.src_addr) != (msg["addr"], msg["src_addr"]):
            raise ApiError(f"{msg['op']}: source port {msg['sport']} is a connection to "
                           f"{c.addr}, not {msg['addr']}")
        return c

    def _task_started(self, seg: int, t: float) -> None:
        self.ch.send({"op": "task_started", "id": 0, "seg": seg, "t": t})

    def _task_done(self, seg: int, t: float, ran: float, stopped: bool) -> None:
        self.ch.send({"op": "task_done", "id": 0, "seg": seg, "t": t, "ran": ran,
                      "stopped": bool(stopped)})

    def _copy_done(self, seg: int, t: float, progress: float, late: float) -> None:
        self.ch.send({"op": "copy_done", "id": 0, "seg": seg, "t": t, "progress": progress,
                      "late": late})

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
        """One connection: flows one after another, each a header and its bytes."""
        buf = bytearray(RCV_CHUNK)
        view = memoryview(buf)
        offset = 0  # bytes of the stream consumed so far
        flow = None
        try:
            while not self.stopping.is_set():
                head = _recv_exact(conn, HEADER.size)
                if head is None:
                    return
                m_first = time.monotonic()
                magic, flow, size = HEADER.unpack(head)
                if magic != MAGIC:
                    self.report_error(None, f"bad stream header {head!r}")
                    return
                offset += HEADER.size
                got = 0
                with self.rx_lock:
                    self.rx[flow] = 0
                    self.rx_live[flow] = (conn, offset, size)
                while got < size:
                    # (no SO_RCVLOWAT to save wake-ups: with the small receive buffer it
                    # left the last bytes of a flow unread on this kernel)
                    n = conn.recv_into(view, min(len(buf), size - got))
                    if n == 0:
                        break
                    got += n
                t, m = time.time(), time.monotonic()
                offset += got
                with self.rx_lock:
                    self.rx[flow] = got
                    self.rx_live.pop(flow, None)
                if got < size:
                    self.report_error(flow, f"connection closed after {got} of {size} bytes")
                    return
                self.ch.send({"op": "flow_done", "id": 0, "flow": flow, "t": t, "bytes": got,
                              "m": m, "m_first": m_first})
        except OSError as e:
            if not self.stopping.is_set():
                self.report_error(flow, f"receive failed: {e}")
        finally:
            conn.close()

    def counters(self) -> dict[str, int]:
        """Bytes received per flow: exact, from the kernel, for flows still arriving."""
        with self.rx_lock:
            out = {str(f): n for f, n in self.rx.items()}
            live = list(self.rx_live.items())
        for f, (conn, offset, size) in live:
            try:
                info = conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, TCP_INFO_LEN)
                got = struct.unpack_from("Q", info, TCPI_BYTES_RECEIVED)[0] - offset
                out[str(f)] = max(0, min(int(got), size))
            except OSError:
                pass
        return out


class Job:
    """One flow to send: pausable, re-markable and paceable while it runs."""

    def __init__(self, msg: dict):
        self.msg = msg
        self.flow = msg["flow"]
        self.size = msg["bytes"]
        self.t_cmd, self.m_cmd = time.time(), time.monotonic()
        self.go = threading.Event()
        if not msg["paused"]:
            self.go.set()
        self.was_paused = False         # paused since the writer last looked
        self.kick = threading.Event()   # wakes a writer waiting for its pacer
        self.tos = msg["tos"]
        self.pacer = Pacer(_bytes_per_s(msg.get("pace_bps")))
        self.conn: "Connection | None" = None

    def update(self, item: dict) -> None:
        if isinstance(item.get("tos"), int):
            self.tos = item["tos"]
        if "pace_bps" in item:
            self.pacer.set_rate(_bytes_per_s(item["pace_bps"]))
        if self.conn is not None:
            self.conn.apply(self)
        if item.get("paused"):
            self.was_paused = True
            self.go.clear()
        else:
            self.go.set()
        self.kick.set()


def _bytes_per_s(pace_bps) -> float | None:
    """A message's ``pace_bps`` (payload bits/s, > 0, or None) as the pacer's rate."""
    if pace_bps is None:
        return None
    if not pace_bps > 0:
        raise ApiError(f"pace_bps must be > 0 or null, got {pace_bps!r}")
    return pace_bps / 8.0


class Connection(threading.Thread):
    """A persistent TCP connection from ``src_addr:sport`` to ``addr:port``.

    The controller reuses an idle connection for the next flow between the same hosts on
    the same core (it has the switch rule for its 4-tuple already), so a flow starts
    without a handshake and without slow start: its first bytes leave as soon as the
    ``start`` arrives. Flows on one connection are sent one after another.
    """

    def __init__(self, agent: Agent, src_addr: str, sport: int, addr: str, port: int):
        super().__init__(daemon=True, name=f"conn{sport}")
        self.agent = agent
        self.src_addr, self.sport, self.addr, self.port = src_addr, sport, addr, port
        self.jobs: queue.Queue = queue.Queue()
        self.sock: socket.socket | None = None
        self.lock = threading.Lock()

    def apply(self, job: Job) -> None:
        """Mark the socket with ``job``'s class (its TOS)."""
        with self.lock:
            if self.sock is not None:
                self.sock.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, int(job.tos))

    def _connect(self) -> None:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if self.agent.sndbuf:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, self.agent.sndbuf)
        # unsent bytes in the socket stay few: a pause takes effect at once
        s.setsockopt(socket.IPPROTO_TCP, TCP_NOTSENT_LOWAT, NOTSENT_LOWAT)
        # no Nagle: a flow's last partial segment leaves at once instead of waiting for
        # the ACK of what is in flight (a delayed ACK: up to 40 ms) behind a small window
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, CONGESTION)
        except OSError:
            pass                  # not available here: the host's default
        s.bind((self.src_addr, self.sport))
        for attempt in range(50):
            try:
                s.connect((self.addr, self.port))
                break
            except OSError:
                if attempt == 49:
                    s.close()
                    raise
                time.sleep(0.05)
        with self.lock:
            self.sock = s

    def run(self) -> None:
        zeros = memoryview(bytes(CHUNK))
        job = None
        try:
            while True:
                item = self.jobs.get()
                if item is None or self.agent.stopping.is_set():
                    return
                kind, job = item
                if self.sock is None:
                    self._connect()
                if kind == "connect":
                    self.agent.ch.answer(job, ok=True)
                    job = None
                    continue
                job.conn = self
                self.apply(job)
                s = self.sock
                t, m = time.time(), time.monotonic()
                s.sendall(HEADER.pack(MAGIC, job.flow, job.size))
                # the report after the first byte: it is not on the hand-off's path
                self.agent.ch.send({"op": "flow_started", "id": 0, "flow": job.flow,
                                    "t": t, "t_cmd": job.t_cmd, "m": m, "m_cmd": job.m_cmd})
                left = job.size
                while left > 0:
                    if not job.go.is_set():
                        job.go.wait()
                    if self.agent.stopping.is_set():
                        return
                    if job.was_paused:
                        job.was_paused = False
                        self._wait_drained(s, job)
                        continue                  # (paused again meanwhile?)
                    job.kick.clear()     # (before the grant: a rate change wakes the wait)
                    n, wait = job.pacer.grant(min(CHUNK, left))
                    if not n:
                        job.kick.wait(wait)
                        continue
                    k = s.send(zeros[:n])
                    job.pacer.refund(n - k)
                    left -= k
                job.conn = None
                self.agent.flows.pop(job.flow, None)
                job = None
        except Exception as e:  # noqa: BLE001 - any failure must reach the controller
            if not self.agent.stopping.is_set():
                flow = job.flow if isinstance(job, Job) else None
                self.agent.report_error(flow, f"connection {self.src_addr}:{self.sport} -> "
                                        f"{self.addr}: {type(e).__name__}: {e}")
        finally:
            with self.lock:
                if self.sock is not None:
                    self.sock.close()
                    self.sock = None

    def _wait_drained(self, s: socket.socket, job: Job) -> None:
        """Until every byte written on ``s`` is acknowledged (module docstring), ``job``
        is paused again, the agent stops, or :data:`DRAIN_WAIT_MAX` seconds."""
        deadline = time.monotonic() + DRAIN_WAIT_MAX
        while job.go.is_set() and not self.agent.stopping.is_set() and \
                time.monotonic() < deadline and unacknowledged(s):
            time.sleep(0.002)


def unacknowledged(s: socket.socket) -> int:
    """Bytes written on TCP socket ``s`` and not yet acknowledged (Linux ``SIOCOUTQ``:
    unsent plus in flight)."""
    return struct.unpack("i", fcntl.ioctl(s.fileno(), termios.TIOCOUTQ, b"\0" * 4))[0]


def _recv_exact(conn: socket.socket, n: int) -> bytes | None:
    buf = b""
    while len(buf) < n:
        chunk = conn.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--api", required=True, help="the controller's API socket")
    p.add_argument("--host", type=int, required=True, help="host index (0-based)")
    p.add_argument("--port", type=int, default=5001, help="TCP port for flows")
    p.add_argument("--nice", type=int, default=0,
                   help="scheduling niceness (negative: served before other work)")
    p.add_argument("--sndbuf", type=int, default=SNDBUF, help="socket send buffer, bytes")
    p.add_argument("--window", type=int, default=0,
                   help="receive window clamp, bytes (0: none): bounds bytes in flight")
    args = p.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: os._exit(143))
    if args.nice:
        os.setpriority(os.PRIO_PROCESS, 0, args.nice)
    if os.environ.get("COFLOWEMU_AGENT_STACKS"):  # debugging: where every thread waits
        import faulthandler
        faulthandler.dump_traceback_later(float(os.environ["COFLOWEMU_AGENT_STACKS"]),
                                          file=sys.stdout)
    # many I/O threads share one GIL: hand it over quickly so control messages wait less
    sys.setswitchinterval(0.0005)
    agent = Agent(args.api, args.host, args.sndbuf, args.window)
    code = agent.run(args.port)
    os._exit(code)


if __name__ == "__main__":
    sys.exit(main())
