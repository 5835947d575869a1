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
* a watcher that never reads its progress pushes: the run must finish as usual;
* no fault, ten times: every run must succeed (the switch-ready race).

*Leftovers* are our OVS bridges, root-namespace interfaces, run directories, stale
files and processes (see :mod:`emulate.mininet.clean`); after every fault
``coflowemu clean`` runs and must leave nothing.

Run as root::

    flock /tmp/coflowemu-mininet.lock .venv/bin/python benchmarks/faults.py --quick
    flock /tmp/coflowemu-mininet.lock .venv/bin/python benchmarks/faults.py --json
    flock /tmp/coflowemu-mininet.lock .venv/bin/python benchmarks/faults.py \
        --only "agent stopped" --only "fake switch"

:func:`fault_campaign` returns the rows (list of dicts) for the reliability campaign.
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import struct
import sys
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


def connect(address, timeout: float = 10.0) -> socket.socket:
    """A stream socket connected to ``address`` (a Unix socket path or a ``(host, port)``
    pair), trying again every 50 ms until the controller listens or ``timeout`` s pass."""
    family = socket.AF_UNIX if isinstance(address, str) else socket.AF_INET
    deadline = time.time() + timeout
    while True:
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.connect(address)
            return sock
        except OSError:
            sock.close()
            if time.time() > deadline:
                raise
            time.sleep(0.05)


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
        self.sock = connect(address, timeout)
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


# ---------------------------------------------------------------------- runs
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COFLOWEMU = os.path.join(os.path.dirname(os.path.abspath(sys.executable)), "coflowemu")


def workload_file(directory: str, long_mb: float) -> str:
    """``quick`` (host 0 -> 1, 0.2 MB: done in 0.1 s) and ``long`` (2 -> 3, ``long_mb``
    MB at 20 Mbit/s: 40 MB take 16 s) on 4 hosts x 2 cores, written as JSON; returns
    its path."""
    from controller.model import Coflow, Flow, Workload
    from emulate.io.traces import write_json
    from topologies.fabric import Fabric
    w = Workload(Fabric(ports=4, cores=2, rate_bps=20e6), [
        Coflow("quick", [Flow(0, 1, 0.2e6)]),
        Coflow("long", [Flow(2, 3, long_mb * 1e6)])],
        name="faults")
    path = os.path.join(directory, f"faults-{long_mb:g}.json")
    write_json(w, path)
    return path


class Run:
    """``coflowemu run --engine mininet --json`` as a child process, watched from outside:
    its run directory, the processes it started, the coflows its controller finished."""

    def __init__(self, workload: str):
        import subprocess
        self.p = subprocess.Popen([COFLOWEMU, "run", workload, "--engine", "mininet",
                                   "--policy", "fifo", "--json", "--no-lp-bound"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  stdin=subprocess.DEVNULL, cwd=REPO)
        self.run_dir = None
        self.procs: list = []
        self.done: set[str] = set()
        self.t_fault = None

    def wait_for(self, what: str, timeout: float = 90.0) -> bool:
        """Until the run has ``what``: "controller" (building), "apply" (sending),
        "quick" (coflow quick finished). False if the engine ended first."""
        from emulate.mininet.clean import STATE_DIR, read_state
        deadline = time.time() + timeout
        while time.time() < deadline and self.p.poll() is None:
            if self.run_dir is None and os.path.isdir(STATE_DIR):
                mine = [d for d in os.listdir(STATE_DIR) if d.startswith(f"run-{self.p.pid}-")]
                self.run_dir = os.path.join(STATE_DIR, mine[0]) if mine else None
            if self.run_dir:
                procs = read_state(self.run_dir).get("procs", [])
                if len(procs) > len(self.procs):
                    self.procs = procs
                self._read_decisions()
                if what == "controller" and self.procs:
                    return True
                if what == "apply" and self.applied:
                    return True
                if what == "quick" and "quick" in self.done:
                    return True
            time.sleep(0.02)
        return False

    applied = False

    def _read_decisions(self) -> None:
        try:
            with open(os.path.join(self.run_dir, "decisions.jsonl")) as fh:
                for line in fh:
                    if '"apply"' in line:
                        self.applied = True
                    if '"coflow_done"' in line:
                        self.done.add(json.loads(line)["coflow"])
        except (OSError, ValueError, KeyError):
            pass

    def agent_pid(self, host: int) -> int | None:
        from emulate.mininet.clean import command_line
        for pid, marker in self.procs:
            if marker == "emulate.mininet.agent" and f"--host {host} " in command_line(pid) + " ":
                return pid
        return None

    def controller_pid(self) -> int | None:
        return next((pid for pid, m in self.procs if m == "controller.app"), None)

    def finish(self, timeout: float = 120.0) -> dict:
        """Wait for the engine; its exit code, output, seconds since the fault."""
        try:
            out, err = self.p.communicate(timeout=timeout)
        except Exception:   # noqa: BLE001 - a hang is a result too
            self.p.kill()
            out, err = self.p.communicate()
            return {"code": None, "out": out.decode(), "err": err.decode(), "after": None}
        after = time.time() - self.t_fault if self.t_fault else None
        return {"code": self.p.returncode, "out": out.decode(), "err": err.decode(),
                "after": after}

    def strays(self) -> int:
        """Processes it started that are still alive."""
        from emulate.mininet.clean import is_ours
        return sum(1 for pid, m in self.procs if is_ours(int(pid), m))


def leftover_count() -> int:
    from emulate.mininet.clean import leftovers
    return sum(len(v) for v in leftovers(files=True).values())


def settle(run: Run, seconds: float = 5.0) -> None:
    """Give processes that should die with the engine a moment."""
    deadline = time.time() + seconds
    while run.strays() and time.time() < deadline:
        time.sleep(0.1)


# ---------------------------------------------------------------------- faults
def signal_fault(sig, when: str):
    import signal as signals

    def inject(run: Run) -> dict:
        if not run.wait_for("controller" if when == "build" else "apply"):
            return {"ok": False, "why": "the run ended before the fault"}
        if when == "run":
            time.sleep(0.5)
        run.t_fault = time.time()
        run.p.send_signal(sig)
        res = run.finish()
        settle(run)
        # exited (no hang), no traceback, nothing it started still alive; SIGINT/SIGTERM:
        # it said so and cleaned up (leftovers after run are counted apart)
        clean_exit = (res["code"] is not None and "Traceback" not in res["err"]
                      and run.strays() == 0)
        if sig != signals.SIGKILL:
            clean_exit = clean_exit and res["code"] != 0 and "interrupted" in res["err"]
        return {"ok": clean_exit, "why": f"exit {res['code']}: {res['err'][-300:]}"}
    return inject


def agent_fault(sig):
    def inject(run: Run) -> dict:
        if not run.wait_for("quick"):
            return {"ok": False, "why": "quick never finished"}
        finished_before = len(run.done)
        run.t_fault = time.time()
        os.kill(run.agent_pid(3), sig)
        res = run.finish()
        settle(run)
        try:
            doc = json.loads(res["out"])
            kept = sum(c["completion"] is not None for c in doc["coflows"])
        except (ValueError, KeyError, TypeError):
            kept = 0
        ok = (res["code"] == 1 and "host 3" in res["err"] and res["after"] is not None
              and res["after"] < 15.0 and "Traceback" not in res["err"])
        return {"ok": ok, "lost": max(0, finished_before - kept), "why": res["err"][-300:]}
    return inject


def controller_fault(run: Run) -> dict:
    import signal as signals
    if not run.wait_for("quick"):
        return {"ok": False, "why": "quick never finished"}
    finished_before = len(run.done)
    run.t_fault = time.time()
    os.kill(run.controller_pid(), signals.SIGKILL)
    res = run.finish()
    settle(run)
    try:
        kept = sum(c["completion"] is not None for c in json.loads(res["out"])["coflows"])
    except (ValueError, KeyError, TypeError):
        kept = 0
    ok = res["code"] == 1 and "controller" in res["err"] and "Traceback" not in res["err"]
    return {"ok": ok, "lost": max(0, finished_before - kept), "why": res["err"][-300:]}


def fake_switch_fault(run: Run) -> dict:
    """A second connection claiming core 0 mid-run (as root: the only account that can
    reach the socket at all)."""
    from emulate.mininet.clean import controller_dir
    from topologies.mininet_topo import DPID_BASE
    if not run.wait_for("apply"):
        return {"ok": False, "why": "no apply"}
    run.t_fault = time.time()
    fake = FakeSwitch(os.path.join(controller_dir(run.run_dir), "of.sock"), DPID_BASE + 1)
    res = run.finish()
    settle(run)
    fake.close()
    takeover = fake.flow_mods > 0 or res["code"] == 0
    ok = res["code"] == 1 and "second OpenFlow connection" in res["err"]
    return {"ok": ok, "takeover": int(takeover), "why": res["err"][-300:]}


NOBODY = 65534


def other_user_switch_fault(run: Run) -> dict:
    """Another account (``nobody``) tries to reach the OpenFlow socket: it cannot even
    connect (the socket's directory is root's, mode 0700)."""
    import subprocess
    from emulate.mininet.clean import controller_dir
    if not run.wait_for("apply"):
        return {"ok": False, "why": "no apply"}
    path = os.path.join(controller_dir(run.run_dir), "of.sock")
    run.t_fault = time.time()
    # the system's Python: another account may not be able to read the project's venv
    python = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
    probe = subprocess.run(
        [python, "-I", "-c", "import socket, sys\n"
         "s = socket.socket(socket.AF_UNIX)\n"
         "try:\n    s.connect(sys.argv[1])\nexcept PermissionError:\n    sys.exit(13)\n"
         "print('connected')", path],
        user=NOBODY, group=NOBODY, capture_output=True, text=True, cwd="/")
    refused = probe.returncode == 13
    res = run.finish()
    settle(run)
    return {"ok": res["code"] == 0, "takeover": int(not refused),
            "why": f"probe exit {probe.returncode} {probe.stdout}{probe.stderr}; run exit "
                   f"{res['code']}: {res['err'][-300:]}"}


BAD_LINES = [b"not json", b"[1,2]", b'{"op":"boom","id":1}', b'{"op":"ping"}',
             b'{"op":"register","id":2,"host":99,"pid":1}',
             b'{"op":"register","id":3,"host":0,"pid":1}',
             b'{"op":"flow_done","id":4,"flow":0,"t":1.0,"bytes":5}',
             b'{"op":"flow_started","id":5,"flow":99999,"t":1.0}',
             b'{"op":"agent_error","id":6,"error":"x"}', b"\xff\xfe\x00",
             b"x" * 70000, b'{"op":"plan","id":7,"flow":1e308}']


def bad_api_fault(run: Run) -> dict:
    if not run.wait_for("apply"):
        return {"ok": False, "why": "no apply"}
    run.t_fault = time.time()
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(os.path.join(run.run_dir, "api.sock"))
    for line in BAD_LINES:
        s.sendall(line + b"\n")
    time.sleep(0.5)
    s.close()
    res = run.finish()
    settle(run)
    return {"ok": res["code"] == 0, "why": res["err"][-300:]}


def deaf_watcher_fault(run: Run) -> dict:
    if not run.wait_for("controller"):
        return {"ok": False, "why": "no controller"}
    deadline = time.time() + 60
    while not os.path.exists(os.path.join(run.run_dir, "api.sock")) and time.time() < deadline:
        time.sleep(0.02)
    run.t_fault = time.time()
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
    s.connect(os.path.join(run.run_dir, "api.sock"))
    s.sendall(b'{"op":"watch","id":1}\n')      # and never reads
    res = run.finish()
    settle(run)
    s.close()
    return {"ok": res["code"] == 0, "why": res["err"][-300:]}


def no_fault(run: Run) -> dict:
    """A plain run: must succeed (about 1 in 20 failed "not ready after 60 s" when the
    ready barrier's reply raced os-ken's switch to MAIN state)."""
    res = run.finish()
    settle(run)
    return {"ok": res["code"] == 0, "why": res["err"][-300:]}


def faults(quick: bool) -> list[tuple[str, object, float, int]]:
    """(name, injector, long coflow MB, runs)."""
    import signal as s
    if quick:   # what CI runs: a couple of kills and an intruder, one run each
        return [("SIGTERM at build", signal_fault(s.SIGTERM, "build"), 40, 1),
                ("SIGKILL mid-run", signal_fault(s.SIGKILL, "run"), 40, 1),
                ("fake switch", fake_switch_fault, 40, 1)]
    n = 3
    return [("SIGINT at build", signal_fault(s.SIGINT, "build"), 40, n),
            ("SIGTERM at build", signal_fault(s.SIGTERM, "build"), 40, n),
            ("SIGKILL at build", signal_fault(s.SIGKILL, "build"), 40, n),
            ("SIGINT mid-run", signal_fault(s.SIGINT, "run"), 40, n),
            ("SIGTERM mid-run", signal_fault(s.SIGTERM, "run"), 40, n),
            ("SIGKILL mid-run", signal_fault(s.SIGKILL, "run"), 40, n),
            ("agent killed", agent_fault(s.SIGKILL), 40, n),
            ("agent stopped", agent_fault(s.SIGSTOP), 40, n),
            ("controller killed", controller_fault, 40, n),
            ("fake switch", fake_switch_fault, 40, n),
            ("fake switch, other user", other_user_switch_fault, 4, 1),
            ("bad API traffic", bad_api_fault, 4, 1),
            ("watcher never reads", deaf_watcher_fault, 4, 1),
            ("none (ready race check)", no_fault, 4, 10)]


def fault_campaign(quick: bool, only: list[str] | None = None) -> list[dict]:
    """Run every fault (``quick``: SIGTERM at build, SIGKILL mid-run, a fake switch; one
    run each); one dict per fault with the columns of the table (and ``failures``: what
    the runs that did not end cleanly said). Needs root and the Mininet lock (the caller
    holds it)."""
    import tempfile

    from emulate.mininet.clean import clean
    clean()
    out = []
    with tempfile.TemporaryDirectory(prefix="coflowemu-faults-") as d:
        files = {}
        for name, inject, long_mb, runs in faults(quick):
            if only and name not in only:
                continue
            path = files.setdefault(long_mb, workload_file(d, long_mb))
            row = {"fault": name, "runs": 0, "ended_cleanly": 0, "records_lost": 0,
                   "takeovers": 0, "leftovers_after_run": 0, "leftovers_after_clean": 0,
                   "failures": []}
            for _ in range(runs):
                run = Run(path)
                try:
                    r = inject(run)
                finally:
                    if run.p.poll() is None:
                        run.p.kill()
                        run.p.wait()
                row["runs"] += 1
                row["ended_cleanly"] += int(bool(r.get("ok")))
                row["records_lost"] += int(r.get("lost", 0))
                row["takeovers"] += int(r.get("takeover", 0))
                row["leftovers_after_run"] += leftover_count() + run.strays()
                clean()
                row["leftovers_after_clean"] += leftover_count() + run.strays()
                if not r.get("ok"):
                    row["failures"].append(r.get("why", ""))
            out.append(row)
    return out


COLUMNS = [("fault", 26), ("runs", 6), ("ended_cleanly", 15), ("records_lost", 14),
           ("takeovers", 11), ("leftovers_after_run", 21), ("leftovers_after_clean", 23)]


def table(rows: list[dict]) -> str:
    head = "".join(f"{c.replace('_', ' '):<{w}}" for c, w in COLUMNS)
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append("".join(f"{str(r[c]):<{w}}" for c, w in COLUMNS))
    total = {c: sum(r[c] for r in rows) for c, _ in COLUMNS[1:]}
    lines.append("".join(f"{str(total.get(c, 'total')):<{w}}" for c, w in COLUMNS))
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true",
                    help="SIGTERM at build, SIGKILL mid-run, a fake switch (CI's part)")
    ap.add_argument("--only", action="append", metavar="FAULT",
                    help="run only this fault (its name in the table; repeatable)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if os.geteuid() != 0:
        print("faults: needs root (Mininet, Open vSwitch)", file=sys.stderr)
        return 2
    t = time.perf_counter()
    rows = fault_campaign(args.quick, args.only)
    if args.json:
        print(json.dumps(rows))
    else:
        print(table(rows))
        print(f"({time.perf_counter() - t:.0f} s; failures: "
              f"{[(r['fault'], f) for r in rows for f in r['failures']] or 'none'})")
    bad = any(r["ended_cleanly"] < r["runs"] or r["records_lost"] or r["takeovers"]
              or r["leftovers_after_clean"] for r in rows)
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
