"""Remove what an emulation run left behind: ``coflowemu clean``.

Like Mininet's ``mn -c``, but only for coflowemu's own things, found two ways:

* every run keeps a state file, ``/run/coflowemu/<run>/state.json``, listing the PIDs it
  started (controller, agents, Mininet's host and switch shells) and the OVS bridges it
  made. A PID is signalled only while ``/proc/<pid>/cmdline`` still shows the command we
  started (a reused PID belongs to someone else and is left alone);
* OVS bridges and root-namespace interfaces named with our prefix (``cfe<N>``,
  ``cfe<N>-eth<M>``: see :mod:`topologies.mininet_topo`);
* tc batch files ``/tmp/cfe-tc-*.batch`` that earlier versions wrote for every build
  (tc now reads its batch on standard input), and the OpenFlow socket directories
  ``<ovs_rundir>/coflowemu-run-*`` of runs that are gone (:func:`controller_dir`: Open
  vSwitch connects to ``unix:`` controllers only inside its own run directory).

Controllers and agents die with the engine that started them (their parent-death
signal is set before they run any code: :func:`emulate.mininet.engine.start_python`), so
after a SIGKILL of the engine what remains is the run directory, the OVS bridges (kept by
ovsdb) and any interface the kernel did not remove with its namespace: all removed here.

A run whose engine process is still alive is skipped (it cleans up after itself), unless
``force``. Host namespaces are not named (``ip netns`` never lists them): they vanish
with the processes that hold them.
"""
from __future__ import annotations

import contextlib
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import time

from topologies.mininet_topo import PREFIX

STATE_DIR = "/run/coflowemu"
_BRIDGE = re.compile(rf"^{PREFIX}\d+$")
_INTF = re.compile(rf"^{PREFIX}\d+-eth\d+$")
STALE_FILES = "/tmp/cfe-tc-*.batch"
OVS_RUNDIRS = ("/var/run/openvswitch", "/usr/local/var/run/openvswitch")
"""Where Open vSwitch accepts ``unix:`` controller sockets (it refuses any other place)."""


def ovs_rundir() -> str:
    """Open vSwitch's run directory, spelled as OVS spells it (``$OVS_RUNDIR`` first)."""
    for d in (os.environ.get("OVS_RUNDIR"), *OVS_RUNDIRS):
        if d and os.path.isdir(d):
            return d
    return OVS_RUNDIRS[0]


def controller_dir(run_dir: str) -> str:
    """The private directory (0700) of a run's OpenFlow socket, inside OVS's run
    directory: ``<ovs_rundir>/coflowemu-<run>``."""
    return os.path.join(ovs_rundir(), f"coflowemu-{os.path.basename(run_dir)}")


def _controller_dirs() -> list[str]:
    return sorted(glob.glob(os.path.join(ovs_rundir(), "coflowemu-run-*")))


# ---------------------------------------------------------------------- state files
def new_run_dir() -> str:
    """A fresh private directory for one run, registered for :func:`clean`."""
    os.makedirs(STATE_DIR, mode=0o755, exist_ok=True)
    d = os.path.join(STATE_DIR, f"run-{os.getpid()}-{int(time.time() * 1000) % 10**9}")
    os.mkdir(d, 0o700)
    write_state(d, engine_pid=os.getpid(), engine_cmd=command_line(os.getpid()), procs=[],
                bridges=[])
    return d


def read_state(run_dir: str) -> dict:
    try:
        with open(os.path.join(run_dir, "state.json")) as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return {}


def write_state(run_dir: str, **changes) -> None:
    st = read_state(run_dir)
    st.update(changes)
    tmp = os.path.join(run_dir, ".state.json")
    with open(tmp, "w") as fh:
        json.dump(st, fh)
    os.replace(tmp, os.path.join(run_dir, "state.json"))


def add_procs(run_dir: str, procs) -> None:
    """Record started processes: ``[(pid, marker)]``; marker must be in its cmdline."""
    st = read_state(run_dir)
    st.setdefault("procs", []).extend([int(p), m] for p, m in procs)
    write_state(run_dir, procs=st["procs"])


# ---------------------------------------------------------------------- processes
def command_line(pid: int) -> str:
    """``pid``'s command line, words joined by spaces ("" when it is gone)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def is_ours(pid: int, marker: str) -> bool:
    """True while ``pid`` runs and its command line contains ``marker``."""
    cmd = command_line(pid)
    return bool(cmd) and marker in cmd


def end_processes(procs, timeout: float = 3.0) -> list[int]:
    """SIGTERM, then SIGKILL, each ``(pid, marker)`` that is still ours; returns those ended."""
    ours = [(int(p), m) for p, m in procs if int(p) != os.getpid() and is_ours(int(p), m)]
    for pid, _ in ours:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.time() + timeout
    for pid, m in ours:
        while is_ours(pid, m) and time.time() < deadline:
            _reap(pid)
            time.sleep(0.02)
        if is_ours(pid, m):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        _reap(pid)
    return [p for p, _ in ours]


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


# ---------------------------------------------------------------------- network
def our_bridges() -> list[str]:
    r = subprocess.run(["ovs-vsctl", "--timeout=5", "list-br"], capture_output=True,
                       text=True)
    return [b for b in r.stdout.split() if _BRIDGE.match(b)]


def our_interfaces() -> list[str]:
    r = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True)
    out = []
    for line in r.stdout.splitlines():
        parts = line.split(":", 2)
        if len(parts) > 1:
            name = parts[1].strip().split("@")[0]
            if _INTF.match(name) or _BRIDGE.match(name):
                out.append(name)
    return out


def delete_bridges(names) -> None:
    names = list(names)
    if names and shutil.which("ovs-vsctl"):
        cmd = ["ovs-vsctl", "--timeout=10"]
        for b in names:
            cmd += ["--", "--if-exists", "del-br", b]
        subprocess.run(cmd, capture_output=True)


def delete_interfaces(names) -> None:
    for n in names:
        subprocess.run(["ip", "link", "del", n], capture_output=True)


# ---------------------------------------------------------------------- entry point
def clean(force: bool = False, verbose: bool = False) -> dict:
    """Remove leftovers of earlier runs; returns what was removed.

    Skips runs whose engine is alive unless ``force``; bridges/interfaces with our
    prefix are removed only when no live run remains.
    """
    removed = {"processes": [], "bridges": [], "interfaces": [], "run_dirs": [], "files": []}
    live = False
    if os.path.isdir(STATE_DIR):
        for name in sorted(os.listdir(STATE_DIR)):
            d = os.path.join(STATE_DIR, name)
            if not os.path.isdir(d):
                continue
            st = read_state(d)
            epid = st.get("engine_pid")
            if (epid and epid != os.getpid() and not force
                    and is_ours(int(epid), st.get("engine_cmd", "") or "python")):
                live = True
                if verbose:
                    print(f"clean: run {name} is still alive (pid {epid}); skipped")
                continue
            removed["processes"] += end_processes(st.get("procs", []))
            removed["bridges"] += [b for b in st.get("bridges", []) if b in our_bridges()]
            delete_bridges(st.get("bridges", []))
            remove_run_dir(d)
            removed["run_dirs"].append(d)
    if not live:
        br = our_bridges()
        delete_bridges(br)
        removed["bridges"] += [b for b in br if b not in removed["bridges"]]
        intfs = our_interfaces()
        delete_interfaces(intfs)
        removed["interfaces"] += intfs
        for path in stale_files():
            with contextlib.suppress(OSError):
                if os.path.isdir(path):
                    shutil.rmtree(path)
                else:
                    os.unlink(path)
                removed["files"].append(path)
    if verbose:
        for k, v in removed.items():
            print(f"clean: {k}: {' '.join(map(str, v)) if v else '-'}")
    return removed


def remove_run_dir(run_dir: str) -> None:
    """Remove a run's directory and its OpenFlow socket's directory."""
    shutil.rmtree(controller_dir(run_dir), ignore_errors=True)
    shutil.rmtree(run_dir, ignore_errors=True)


def stale_files() -> list[str]:
    """Files of ours outside any run directory (see the module docstring) and the
    OpenFlow socket directories of runs that are gone."""
    runs = set(os.listdir(STATE_DIR)) if os.path.isdir(STATE_DIR) else set()
    return sorted(glob.glob(STALE_FILES)) + [
        d for d in _controller_dirs() if os.path.basename(d)[len("coflowemu-"):] not in runs]


def leftovers(files: bool = False, settled: bool = False) -> dict:
    """What of ours exists now (bridges, interfaces, run dirs; with ``files`` the stale
    files too): empty lists when clean.

    With ``settled``, look while holding the Mininet lock (:mod:`emulate.mininet.lock`):
    every run holds it from build to teardown, so what is found then was left behind, not
    an emulation of another process in flight.
    """
    if settled:
        from emulate.mininet import lock        # (lock imports this module)
        with lock.hold(lock.LOCK_PATH):
            return leftovers(files)
    dirs = sorted(os.listdir(STATE_DIR)) if os.path.isdir(STATE_DIR) else []
    out = {"bridges": our_bridges(), "interfaces": our_interfaces(), "run_dirs": dirs}
    if files:
        out["files"] = stale_files()
    return out
