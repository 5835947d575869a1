"""The simulator's kernels compile their indexes without Python's negative wraparound
(emulate/sim/indexing.py): only in the modules that ask for it, and never with a negative
index, which numba's bounds checks would report."""
import os
import subprocess
import sys

import numba
import numpy as np
import pytest

from emulate.sim import capped, matching  # noqa: F401 (they register themselves)
from emulate.sim.indexing import mangled_prefix, no_wraparound, registered

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_the_engines_modules_are_registered():
    assert registered("emulate.sim.capped")
    assert registered("emulate.sim.matching")
    assert not registered("emulate.sim.fairshare")


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
        "from emulate.sim.indexing import no_wraparound\n"
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
    """Every engine on a prefix of FB2010 (releases at 0 and with arrivals, 1 and 2
    cores), compiled afresh with numba's bounds checks: a negative index would raise."""
    code = (
        "import numpy as np\n"
        "from emulate.io.traces import read_fb_trace\n"
        "from emulate.sim.flowsim import simulate\n"
        "from controller.policies import get_policy\n"
        "trace = {trace!r}\n"
        "for zero in (True, False):\n"
        "    kw = dict(zero_release=True, rate_bps=8 * 2**20) if zero else {{}}\n"
        "    for cores, names in ((1, ('sebf', 'fifo', 'aalo')),\n"
        "                         (2, ('weaver', 'sebf', 'lp-coflow'))):\n"
        "        w = read_fb_trace(trace, limit=25, cores=cores, **kw)\n"
        "        for p in names:\n"
        "            simulate(w, get_policy(p), segments=True)\n"
        "print('ok')\n"
    ).format(trace=os.path.join(ROOT, "..", "shared", "traces", "FB2010-1Hr-150-0.txt"))
    env = {**os.environ, "NUMBA_BOUNDSCHECK": "1", "NUMBA_CACHE_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT,
                         capture_output=True, text=True, timeout=1200)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().endswith("ok")
