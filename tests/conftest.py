"""Fixtures shared by the test modules.

``system`` (module scope): Open vSwitch running and Mininet present for the emulation
tests (``scripts/setup-system.sh`` is idempotent and run when the preflight check fails),
nothing of ours on the machine before the module, and nothing left after it: every
emulation test cleans up after itself (looked at under the Mininet lock, so another
process's emulation in flight is not taken for a leftover).

Every test that takes ``system`` is marked ``emulation``: ``make test`` runs the others
on every CPU (pytest-xdist) and then these alone, one at a time, on an otherwise idle
machine (their timing is what they check), so a test that runs Mininet must take
``system`` even where an earlier test would have started Open vSwitch for it.

An emulation test whose check misses (an ``AssertionError``) runs again, up to twice
(pytest-rerunfailures' ``flaky`` mark), and fails if it misses every time; a regression
misses every time. The timing these tests check is real, on a shared 2-core VM: a case
within 1.3 % of the simulator in ten runs in a row took +11.7 % once in a clean-clone CI
run (sebf's MADD pacing, 2026-11-29), the heterogeneous cores' case missed twice in a
row in another (+13 %, then -14 %), the VM's steal time reached 18 % in a later run of
the same tests, and the fifty-odd such cases made every few CI runs fail on one of
them. A run whose switches were never ready runs again too (one in a few hundred runs,
cause not found yet; its error reports both ends of the OpenFlow connections). No first
miss is hidden: the log's summary lists every case run again with what it missed.
"""
from __future__ import annotations

import os
import subprocess

import pytest

from controller.runtime import NOT_READY

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def pytest_configure(config):
    config.addinivalue_line("markers", "emulation: runs Mininet and Open vSwitch (takes "
                                       "the ``system`` fixture); run alone, after the rest")


def pytest_collection_modifyitems(items):
    for item in items:
        if "system" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.emulation)
            item.add_marker(pytest.mark.flaky(reruns=2, only_rerun=[
                "AssertionError", NOT_READY]))


#: (test id, what it missed: the end of a long report) of every miss of an emulation case
#: that was run again after it
MISSES: list[tuple[str, str]] = []


def pytest_runtest_logreport(report):
    if report.outcome == "rerun":
        MISSES.append((report.nodeid, report.longreprtext[-12000:]))


def pytest_terminal_summary(terminalreporter):
    if MISSES:
        terminalreporter.section("emulation cases run again after a miss")
        for nodeid, text in MISSES:
            terminalreporter.write_line(f"{nodeid}:\n{text}\n")


@pytest.fixture(scope="module")
def system():
    from emulate.mininet.clean import clean, leftovers
    from emulate.mininet.engine import EmulationError, preflight
    try:
        preflight()
    except EmulationError:
        subprocess.run(["bash", os.path.join(ROOT, "scripts", "setup-system.sh")], check=True)
        preflight()
    from emulate.mininet.lock import hold
    with hold():        # a run being set up has a run directory before its state file
        clean()
    yield
    assert leftovers(settled=True) == {"bridges": [], "interfaces": [], "run_dirs": []}
