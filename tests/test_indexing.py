"""The simulator's kernels compile their indexes without Python's negative wraparound
(controller/indexing.py): only in the modules that ask for it, and never with a negative
index, which numba's bounds checks would report."""
import importlib
import os
import subprocess
import sys

import numba
import numpy as np
import pytest
from numba.core.itanium_mangler import mangle_identifier

from controller.indexing import mangled_prefix, no_wraparound, registered

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


#: the modules whose kernels compile without the wraparound
KERNELS = ("emulate.sim.capped", "emulate.sim.matching", "emulate.sim.fairshare",
           "emulate.sim.flowsim", "controller.plan", "controller.cores", "controller.rates",
           "controller.policies.portload", "controller.policies.sincronia",
           "controller.policies.weaver", "controller.policies.lp_list",
           "controller.policies.offline_madd", "controller.policies.coflowsim_fifo")


def test_the_kernels_modules_are_registered():
    for name in KERNELS:
        importlib.import_module(name)
        assert registered(name), name
        # the prefix of the names numba's own mangler gives the module's functions
        assert ("_Z" + mangle_identifier(name + ".f")).startswith(mangled_prefix(name))
    assert not registered("controller.redundancy.speed")


def test_the_mangled_prefix_is_numbas():
    @numba.njit
    def probe(a):
        return a[0]

    probe(np.zeros(1))
    name = probe.overloads[probe.signatures[0]].fndesc.mangled_name
    assert name.startswith(mangled_prefix(__name__))


def test_only_registered_modules_lose_the_wraparound():
    # the same function compiled with bounds checks, in a module registered and in one
    # that is not: -1 is the last element in the second, out of bounds in the first
    code = (
        "import numba, numpy as np\n"
        "from controller.indexing import no_wraparound\n"
        "{register}"
        "@numba.njit(boundscheck=True)\n"
        "def at(a, i):\n"
        "    return a[i]\n"
    )
    a = np.arange(5.0)
    plain = {}
    exec(code.format(register=""), {"__name__": "idx_plain"}, plain)
    assert plain["at"](a, -1) == 4.0
    kept = {}
    exec(code.format(register="no_wraparound(__name__)\n"), {"__name__": "idx_kept"}, kept)
    assert kept["at"](a, 2) == 2.0
    with pytest.raises(IndexError):
        kept["at"](a, -1)
    no_wraparound("idx_kept")   # registering again changes nothing
    assert registered("idx_kept") and not registered("idx_plain")


def test_the_engines_never_index_with_a_negative_number(tmp_path):
    """Every engine and the policies' kernels on a prefix of FB2010 (releases at 0 and
    with arrivals, 1 and 2 cores), compiled afresh with numba's bounds checks: a negative
    index would raise. (The whole suite passed with ``NUMBA_BOUNDSCHECK=1`` too.)"""
    code = (
        "import numpy as np\n"
        "from emulate.io.traces import read_fb_trace\n"
        "from emulate.sim.flowsim import simulate\n"
        "from controller.policies import get_policy\n"
        "trace = {trace!r}\n"
        "runs = [(zero, cores, name, {{}}) for zero in (True, False)\n"
        "        for cores, names in ((1, ('sebf', 'fifo', 'aalo', 'fair', 'sincronia')),\n"
        "                             (2, ('weaver', 'sebf', 'lp-coflow', 'lp-flow')))\n"
        "        for name in names]\n"
        "runs.append((False, 1, 'fifo', {{'allocation': 'coflowsim'}}))\n"
        "for zero, cores, name, opts in runs:\n"
        "    kw = dict(zero_release=True, rate_bps=8 * 2**20) if zero else {{}}\n"
        "    w = read_fb_trace(trace, limit=25, cores=cores, **kw)\n"
        "    simulate(w, get_policy(name, **opts), segments=True)\n"
        "print('ok')\n"
    ).format(trace=os.path.join(ROOT, "..", "shared", "traces", "FB2010-1Hr-150-0.txt"))
    env = {**os.environ, "NUMBA_BOUNDSCHECK": "1", "NUMBA_CACHE_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT,
                         capture_output=True, text=True, timeout=1200)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().endswith("ok")
