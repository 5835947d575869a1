"""One emulation at a time on a machine: the Mininet lock.

Every emulated fabric uses the same names (switches ``cfe1..cfem``, interfaces
``cfe<N>-eth<M>``, host shells ``h1..hN``: :mod:`topologies.mininet_topo`), so two
emulations on one machine would tear each other's switches down. Every run and every
interactive topology therefore holds an exclusive ``flock`` on :data:`LOCK_PATH` from
before it builds anything until its teardown has finished; a second run waits for it
(saying once on stderr whom it waits for) instead of failing half-built. The lock dies
with its holder: a SIGKILLed run leaves no stale lock (``coflowemu clean`` removes its
switches).

The lock is taken by whatever already holds it for us too: a run started under
``flock /tmp/coflowemu-mininet.lock coflowemu run ...`` (the README's commands for
benchmarks, which keep other work off the machine while they measure) or by a sweep's
worker that took it itself, finds the lock held by itself or by an ancestor process
(``/proc/locks``) and goes on instead of waiting for itself forever.

The file is opened without following symbolic links and must belong to root (the runs
need root anyway): in a world-writable ``/tmp`` nobody else can point it elsewhere.
"""
from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import sys

from emulate.engines import EngineError
from emulate.mininet.clean import command_line

__all__ = ["LOCK_PATH", "LockError", "hold", "holders"]

#: the machine's Mininet lock (the path the README's ``flock`` commands name)
LOCK_PATH = "/tmp/coflowemu-mininet.lock"


class LockError(EngineError):
    """The lock file cannot be used (a symbolic link, not root's): a set-up error."""

    def __init__(self, message: str):
        super().__init__(message, setup=True)


def holders(path: str = LOCK_PATH) -> list[int]:
    """The PIDs holding a ``flock`` on ``path``, from ``/proc/locks`` (empty where the
    file or ``/proc/locks`` is missing)."""
    try:
        st = os.stat(path, follow_symlinks=False)
        with open("/proc/locks", encoding="ascii") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return []
    dev = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    out = []
    for line in lines:
        f = line.split()
        if "->" in f:                   # a waiter, listed after the holder
            continue
        if len(f) >= 6 and f[1] == "FLOCK" and f[5] == dev:
            out.append(int(f[4]))
    return out


def _ancestors() -> set[int]:
    """This process and its ancestors, by ``/proc/<pid>/stat``."""
    pids, pid = set(), os.getpid()
    while pid > 1 and pid not in pids:
        pids.add(pid)
        try:
            with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
                pid = int(fh.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return pids


@contextlib.contextmanager
def hold(path: str = LOCK_PATH, *, say=None):
    """Hold the Mininet lock for the ``with`` block; see the module docstring.

    Parameters
    ----------
    path : str
        The lock file (created, mode 0644, if missing).
    say : callable, optional
        Called once with a message when the lock is busy (default: print to stderr).

    Raises
    ------
    LockError
        ``path`` is a symbolic link or not owned by root.
    """
    mine = _ancestors()
    if any(pid in mine for pid in holders(path)):
        yield                           # held for us by ourselves or an ancestor
        return
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise LockError(f"{path} is a symbolic link; remove it") from None
        raise LockError(f"cannot open the Mininet lock {path}: {e.strerror}") from None
    try:
        if os.fstat(fd).st_uid != 0:
            raise LockError(f"{path} belongs to uid {os.fstat(fd).st_uid}, not root; "
                            f"remove it")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            who = ", ".join(f"pid {p} ({command_line(p)[:80] or '?'})"
                            for p in holders(path)) or "?"
            (say or (lambda m: print(m, file=sys.stderr, flush=True)))(
                f"waiting for another emulation to finish: {who} holds {path}")
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)                    # releases the lock
