"""The controller's JSON API to the host agents (and to the engine that watches a run).

Transport: one JSON object per line (UTF-8, at most :data:`MAX_LINE` bytes) over a Unix
stream socket in the run's private directory (mode 0700). This is the *management
network*: Mininet hosts have their own network namespaces but share the file system, so
every agent reaches the socket by its path, while nothing on any network (emulated or
real) can reach it, and its traffic never crosses the emulated switches or competes with
the measured bytes. (A management link through Mininet's root-namespace trick would put
the API on an address every host can route to and add interfaces to the root namespace;
the socket needs neither.)

Requests carry an integer ``id``; the answer to a request carries ``re`` (that id) and
``ok``. Either side may send requests. Every request is validated by :func:`validate`:
a bad message (not JSON, not an object, unknown ``op``, a missing or ill-typed field, a
number out of range, a line too long) is logged by the receiver and answered with
``{"re": id-or-null, "ok": false, "error": "..."}``; the connection and the run go on.

Agent -> controller
    ``register {host, pid}``; ``flow_started {flow, t, t_cmd?, m?, m_cmd?}`` (the sender
    wrote the flow's first byte at ``t``, having had the ``start`` since ``t_cmd``);
    ``flow_done {flow, t, bytes, m?, m_first?}`` (receiver got every byte at ``t``, the
    first one at ``m_first``); ``plan {flow}`` (query: core, class, paused, pacing of a
    flow); ``agent_error {flow?, error}``; ``ping``. Times ``t*`` are wall-clock seconds,
    ``m*`` the machine's monotonic clock (``time.monotonic``, one clock for every process
    of the run: the hand-off's stages are measured with it).
Engine -> controller
    ``watch`` (then receives ``progress``/``finished`` pushes); ``ping``.
Controller -> agent
    ``connect {addr, port, src_addr, sport}`` (open a persistent connection, answered once
    established); ``start {flow, addr, port, src_addr, sport, bytes, tos, paused,
    pace_bps}`` (send a flow on that connection, opening it if needed);
    ``update {flows: [{flow, tos, paused, pace_bps}]}``; ``counters`` (answer
    ``{rx: {flow: bytes}, t}``); ``ping`` (liveness: an agent that answers nothing for
    a few seconds is stopped or hung, and the run fails naming its host); ``stop``.
Redundancy copies (:mod:`emulate.mininet.copies`)
    controller -> agent ``copy_run {seg, share, work, t0, scale}`` and ``copy_stop {seg}``
    (answered with ``{t, progress, finished}``); agent -> controller ``copy_done {seg, t,
    progress, late}``. A machine's speed process comes with the answer to ``register``.

This module is standard library only: the agents import it.
"""
from __future__ import annotations

import json
import logging
import math
import socket
import threading
import time

MAX_LINE = 1 << 16
"""Longest accepted message (bytes, newline excluded)."""

MAX_BACKLOG = 1 << 20
"""Bytes the controller holds for a peer that does not read (a watcher that never reads,
a stopped agent) before it disconnects that peer; its sends never block the run."""

_INT = (int,)
_NUM = (int, float)

# op -> {field: (types, required)}
AGENT_OPS: dict[str, dict[str, tuple[tuple, bool]]] = {
    "register": {"host": (_INT, True), "pid": (_INT, True)},
    "flow_started": {"flow": (_INT, True), "t": (_NUM, True), "t_cmd": (_NUM, False),
                     "m": (_NUM, False), "m_cmd": (_NUM, False)},
    "flow_done": {"flow": (_INT, True), "t": (_NUM, True), "bytes": (_INT, True),
                  "m": (_NUM, False), "m_first": (_NUM, False)},
    "plan": {"flow": (_INT, True)},
    "agent_error": {"flow": (_INT + (type(None),), False), "error": ((str,), True)},
    "task_started": {"seg": (_INT, True), "t": (_NUM, True)},
    "task_done": {"seg": (_INT, True), "t": (_NUM, True), "ran": (_NUM, True),
                  "stopped": ((bool,), True)},
    "copy_done": {"seg": (_INT, True), "t": (_NUM, True), "progress": (_NUM, True),
                  "late": (_NUM, True)},
    "watch": {},
    "ping": {},
}

CONTROLLER_OPS: dict[str, dict[str, tuple[tuple, bool]]] = {
    "connect": {"addr": ((str,), True), "port": (_INT, True), "src_addr": ((str,), True),
                "sport": (_INT, True)},
    "start": {"flow": (_INT, True), "addr": ((str,), True), "port": (_INT, True),
              "src_addr": ((str,), True), "sport": (_INT, True), "bytes": (_INT, True),
              "tos": (_INT, True), "paused": ((bool,), True),
              "pace_bps": (_NUM + (type(None),), False)},
    "update": {"flows": ((list,), True)},
    "counters": {},
    "task_run": {"seg": (_INT, True), "demand": (_NUM, True), "seconds": (_NUM, True),
                 "until": (_NUM, False)},
    "task_stop": {"seg": (_INT, True)},
    "copy_run": {"seg": (_INT, True), "share": (_NUM, True), "work": (_NUM, True),
                 "t0": (_NUM, True), "scale": (_NUM, True)},
    "copy_stop": {"seg": (_INT, True)},
    "ping": {},
    "stop": {},
}


class ApiError(ValueError):
    """A message that does not follow the protocol; the text says what is wrong."""


def parse(line: bytes) -> dict:
    """Decode one line into a JSON object, or raise :class:`ApiError`."""
    if len(line) > MAX_LINE:
        raise ApiError(f"message longer than {MAX_LINE} bytes")
    try:
        msg = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise ApiError(f"not JSON: {e}") from None
    if not isinstance(msg, dict):
        raise ApiError(f"a message must be a JSON object, got {type(msg).__name__}")
    return msg


def validate(msg: dict, ops: dict = AGENT_OPS) -> dict:
    """Check a request against its ``op``'s fields; returns it or raises ApiError.

    Booleans are not accepted as integers, numbers must be finite, integers >= 0.
    """
    op = msg.get("op")
    if not isinstance(op, str) or op not in ops:
        raise ApiError(f"unknown op {op!r}; known: {', '.join(sorted(ops))}")
    mid = msg.get("id")
    if not _is_int(mid) or mid < 0:
        raise ApiError(f"{op}: 'id' must be a non-negative integer, got {mid!r}")
    fields = ops[op]
    for name, (types, required) in fields.items():
        if name not in msg:
            if required:
                raise ApiError(f"{op}: missing field {name!r}")
            continue
        v = msg[name]
        if v is None and type(None) in types:
            continue
        if isinstance(v, bool) and bool not in types:
            raise ApiError(f"{op}: {name!r} must be {_names(types)}, got {v!r}")
        if not isinstance(v, types):
            raise ApiError(f"{op}: {name!r} must be {_names(types)}, got {v!r}")
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            if not math.isfinite(v) or v < 0:
                raise ApiError(f"{op}: {name!r} must be finite and >= 0, got {v!r}")
    extra = set(msg) - set(fields) - {"op", "id"}
    if extra:
        raise ApiError(f"{op}: unknown fields {sorted(extra)}")
    return msg


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _names(types) -> str:
    return " or ".join("null" if t is type(None) else t.__name__ for t in types)


class Channel:
    """One side of an API connection: framed send, request/answer matching, line reading.

    ``send`` is safe from any thread. ``request`` sends and waits for the answer, which the
    thread running :meth:`serve` hands over.

    With ``max_backlog`` (the controller's side), ``send`` never blocks: what the peer's
    socket does not take at once waits in a buffer that a writer thread drains, and a
    peer that lets more than ``max_backlog`` bytes pile up is logged and disconnected
    (:attr:`overflowed`). Without it (agents, the engine) ``send`` blocks until sent.
    """

    def __init__(self, sock: socket.socket, log: logging.Logger | None = None,
                 name: str = "?", max_backlog: int | None = None):
        self.sock = sock
        self.log = log or logging.getLogger("coflowemu.api")
        self.name = name
        self.max_backlog = max_backlog
        self.overflowed = False
        self._backlog = bytearray()
        self._writer: threading.Thread | None = None
        self._wlock = threading.Lock()
        self._wake = threading.Condition(self._wlock)
        self._ids = 0
        self._pending: dict[int, list] = {}
        self._plock = threading.Lock()
        self.closed = False
        self.host: int | None = None
        self.pid: int | None = None
        self.role = "unknown"
        self.last_heard = time.monotonic()
        """When the peer last sent anything (liveness)."""

    def send(self, obj: dict) -> bool:
        data = (json.dumps(obj, separators=(",", ":")) + "\n").encode()
        with self._wlock:
            if self.max_backlog is None:
                try:
                    self.sock.sendall(data)
                    return True
                except OSError:
                    self.closed = True
                    return False
            if self.closed:
                return False
            if not self._backlog:       # the usual case: the socket takes it all at once
                try:
                    n = self.sock.send(data, socket.MSG_DONTWAIT)
                except BlockingIOError:
                    n = 0
                except OSError:
                    self.closed = True
                    return False
                data = data[n:]
                if not data:
                    return True
            if len(self._backlog) + len(data) > self.max_backlog:
                self.overflowed = True
                self.log.warning("api: %s (%s, host %s) does not read: %d bytes waiting "
                                 "for it; disconnected", self.name, self.role, self.host,
                                 len(self._backlog) + len(data))
                self._shutdown()
                return False
            self._backlog += data
            if self._writer is None:
                self._writer = threading.Thread(target=self._write_loop, daemon=True,
                                                name=f"api-{self.name}-writer")
                self._writer.start()
            self._wake.notify()
            return True

    def _write_loop(self) -> None:
        """Drain the backlog (blocking sends, in this thread only)."""
        while True:
            with self._wake:
                while not self._backlog and not self.closed:
                    self._wake.wait()
                if self.closed:
                    return
                chunk = bytes(self._backlog[:65536])
            try:
                n = self.sock.send(chunk)
            except OSError:
                with self._wlock:
                    self.closed = True
                return
            with self._wlock:
                del self._backlog[:n]

    def _shutdown(self) -> None:
        """Closed for sending and receiving (the reading thread sees the end)."""
        self.closed = True
        self._wake.notify_all()
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def answer(self, request_id, ok: bool = True, error: str | None = None, **fields) -> None:
        msg = {"re": request_id, "ok": ok}
        if error is not None:
            msg["error"] = error
        msg.update(fields)
        self.send(msg)

    def request_async(self, obj: dict) -> tuple[int, threading.Event, list]:
        with self._plock:
            self._ids += 1
            rid = self._ids
            ev = threading.Event()
            slot = [ev, None]
            self._pending[rid] = slot
        obj = dict(obj, id=rid)
        if not self.send(obj):
            ev.set()
        return rid, ev, slot

    def wait(self, rid: int, ev: threading.Event, slot: list, timeout: float) -> dict | None:
        ev.wait(timeout)
        with self._plock:
            self._pending.pop(rid, None)
        return slot[1]

    def request_cb(self, obj: dict, callback) -> int:
        """Send a request; ``callback(answer)`` runs in the reading thread when it comes."""
        with self._plock:
            self._ids += 1
            rid = self._ids
            self._pending[rid] = [threading.Event(), None, callback]
        self.send(dict(obj, id=rid))
        return rid

    def request(self, obj: dict, timeout: float = 2.0) -> dict | None:
        """Send a request; its answer, or None on timeout / closed connection."""
        return self.wait(*self.request_async(obj), timeout)

    def resolve(self, msg: dict) -> bool:
        """Hand an answer to the waiting request; False if nobody waits for it."""
        rid = msg.get("re")
        with self._plock:
            slot = self._pending.get(rid) if _is_int(rid) else None
            if slot is not None and len(slot) > 2:
                del self._pending[rid]
        if slot is None:
            return False
        slot[1] = msg
        slot[0].set()
        if len(slot) > 2:
            slot[2](msg)
        return True

    def lines(self):
        """Yield raw lines until the peer closes; over-long lines come as ``None``."""
        buf = b""
        skipping = False
        while True:
            try:
                chunk = self.sock.recv(65536)
            except OSError:
                chunk = b""
            if not chunk:
                self.closed = True
                with self._plock:
                    for slot in self._pending.values():
                        slot[0].set()
                return
            self.last_heard = time.monotonic()
            buf += chunk
            while True:
                nl = buf.find(b"\n")
                if nl < 0:
                    if len(buf) > MAX_LINE:
                        if not skipping:
                            yield None
                        skipping = True
                        buf = b""
                    break
                line, buf = buf[:nl], buf[nl + 1:]
                if skipping:
                    skipping = False
                    continue
                if line.strip():
                    yield line

    def close(self) -> None:
        self.closed = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        if self.max_backlog is not None:    # wake the writer (blocking mode: none)
            with self._wlock:
                self._wake.notify_all()
        self.sock.close()


class ApiServer:
    """Accepts connections on a Unix socket; one thread per connection. Sends to a
    peer never block (``max_backlog``, see :class:`Channel`).

    ``on_request(channel, msg)`` gets every valid request (after :func:`validate`); it may
    raise :class:`ApiError` to have the request answered with an error. Answers to the
    controller's own requests are routed to :meth:`Channel.resolve`.
    ``on_close(channel)`` is called when a peer goes away.
    """

    def __init__(self, path: str, on_request, on_close=None, log=None,
                 max_backlog: int = MAX_BACKLOG):
        self.path = path
        self.max_backlog = max_backlog
        self.on_request = on_request
        self.on_close = on_close
        self.log = log or logging.getLogger("coflowemu.api")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(path)
        self.sock.listen(256)
        self.channels: list[Channel] = []
        self.errors = 0
        self._stop = False

    def serve_forever(self) -> None:
        n = 0
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            n += 1
            ch = Channel(conn, self.log, name=f"conn{n}", max_backlog=self.max_backlog)
            self.channels.append(ch)
            threading.Thread(target=self._serve, args=(ch,), daemon=True,
                             name=f"api-{ch.name}").start()

    def _serve(self, ch: Channel) -> None:
        for line in ch.lines():
            rid = None
            try:
                if line is None:
                    raise ApiError(f"message longer than {MAX_LINE} bytes (dropped)")
                msg = parse(line)
                rid = msg.get("id") if _is_int(msg.get("id")) else None
                if "re" in msg and "op" not in msg:
                    if not ch.resolve(msg):
                        raise ApiError(f"answer to unknown request {msg.get('re')!r}")
                    continue
                validate(msg)
                self.on_request(ch, msg)
            except ApiError as e:
                self.errors += 1
                shown = line[:200] if line is not None else b"<too long>"
                self.log.warning("api: bad message from %s (host %s): %s; message: %r",
                                 ch.name, ch.host, e, shown)
                ch.answer(rid, ok=False, error=str(e))
            except Exception as e:  # noqa: BLE001 - a handler bug must not kill the server
                self.errors += 1
                self.log.exception("api: error handling a message from %s", ch.name)
                ch.answer(rid, ok=False, error=f"internal error: {type(e).__name__}: {e}")
        if self.on_close:
            self.on_close(ch)

    def close(self) -> None:
        self._stop = True
        try:
            self.sock.close()
        except OSError:
            pass
        for ch in list(self.channels):
            ch.close()
