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
"""
from __future__ import annotations

import os
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def pytest_configure(config):
    config.addinivalue_line("markers", "emulation: runs Mininet and Open vSwitch (takes "
                                       "the ``system`` fixture); run alone, after the rest")


def pytest_collection_modifyitems(items):
    for item in items:
        if "system" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.emulation)


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
