"""The machine's Mininet lock (emulate/mininet/lock.py): one emulation at a time, taken by
whoever already holds it for us, never through a symbolic link or another account's file.
No Mininet needed: the lock is a file in a temporary directory."""
from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import pytest

from emulate.mininet.lock import LockError, hold, holders

HOLD = ("import sys, time\n"
        "from emulate.mininet.lock import hold\n"
        "with hold(sys.argv[1]):\n"
        "    print('held', flush=True)\n"
        "    time.sleep(float(sys.argv[2]))\n")


@pytest.fixture
def path(tmp_path):
    return str(tmp_path / "mininet.lock")


def test_a_second_holder_waits_until_the_first_releases_and_says_whom_it_waits_for(path):
    first = subprocess.Popen([sys.executable, "-c", HOLD, path, "1.0"], stdout=subprocess.PIPE,
                             text=True, cwd=os.path.dirname(os.path.dirname(__file__)))
    try:
        assert first.stdout.readline().strip() == "held"
        assert holders(path) == [first.pid]
        said = []
        t0 = time.monotonic()
        with hold(path, say=said.append):
            waited = time.monotonic() - t0
            assert holders(path) == [os.getpid()]
        assert first.wait(10) == 0
    finally:
        first.kill()
    assert waited > 0.3
    assert len(said) == 1 and f"pid {first.pid}" in said[0] and path in said[0]


def test_the_lock_is_taken_again_by_its_holder_and_its_descendants(path):
    with hold(path):
        with hold(path, say=pytest.fail):            # the same process: no self-wait
            pass
        child = subprocess.run(                        # a child of the holder (a sweep's
            [sys.executable, "-c", HOLD, path, "0"],   # worker, `flock ... coflowemu run`)
            capture_output=True, text=True, timeout=20,
            cwd=os.path.dirname(os.path.dirname(__file__)))
        assert child.returncode == 0 and child.stdout.strip() == "held", child.stderr
    assert holders(path) == []


def test_the_lock_dies_with_a_killed_holder(path):
    first = subprocess.Popen([sys.executable, "-c", HOLD, path, "60"], stdout=subprocess.PIPE,
                             text=True, cwd=os.path.dirname(os.path.dirname(__file__)))
    assert first.stdout.readline().strip() == "held"
    first.kill()
    first.wait(10)
    done = threading.Event()

    def take():
        with hold(path, say=lambda m: None):
            done.set()
    threading.Thread(target=take, daemon=True).start()
    assert done.wait(10)


def test_a_symbolic_link_is_refused(path, tmp_path):
    os.symlink(tmp_path / "elsewhere", path)
    with pytest.raises(LockError, match="symbolic link"):
        with hold(path):
            pass
    assert not (tmp_path / "elsewhere").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="files of another account need root to make")
def test_a_lock_file_of_another_account_is_refused(path):
    open(path, "w").close()
    os.chown(path, 65534, 65534)
    with pytest.raises(LockError, match="uid 65534"):
        with hold(path):
            pass


@pytest.mark.skipif(os.geteuid() != 0, reason="the lock file must be root's")
def test_settled_leftovers_wait_for_the_emulation_in_flight(path, tmp_path, monkeypatch):
    """``leftovers(settled=True)`` looks under the lock: the run directory of an emulation
    in flight (another process holding the lock) is not reported once it has finished."""
    from emulate.mininet import clean, lock
    state = tmp_path / "state"
    run = state / "run-1"
    run.mkdir(parents=True)
    monkeypatch.setattr(clean, "STATE_DIR", str(state))
    monkeypatch.setattr(lock, "LOCK_PATH", path)
    script = HOLD + "    import shutil; shutil.rmtree(sys.argv[3])\n"      # before it lets go
    other = subprocess.Popen([sys.executable, "-c", script, path, "1.0", str(run)],
                             stdout=subprocess.PIPE, text=True,
                             cwd=os.path.dirname(os.path.dirname(__file__)))
    assert other.stdout.readline().strip() == "held"
    assert clean.leftovers()["run_dirs"] == ["run-1"]          # in flight
    assert clean.leftovers(settled=True)["run_dirs"] == []     # after it finished
    assert other.wait(10) == 0
