"""Plots are written atomically, and a killed plot leaves no temporary file behind."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SLOW_PLOT = textwrap.dedent('''
    import sys, time
    import matplotlib.figure
    from experiments import plots
    render = matplotlib.figure.Figure.savefig
    def slow(self, *a, **k):
        print("rendering", flush=True)
        time.sleep(60)
        return render(self, *a, **k)
    matplotlib.figure.Figure.savefig = slow
    fig = plots.plt.figure()
    plots._save(fig, sys.argv[1])
''')


def test_a_plot_killed_while_rendering_leaves_no_temporary_file(tmp_path):
    out = tmp_path / "p.png"
    p = subprocess.Popen([sys.executable, "-c", SLOW_PLOT, str(out)], cwd=ROOT,
                         stdout=subprocess.PIPE)
    assert p.stdout.readline().strip() == b"rendering"
    p.send_signal(signal.SIGKILL)
    p.wait()
    assert os.listdir(tmp_path) == []


def test_the_next_plot_removes_what_killed_ones_left_and_spares_fresh_ones(tmp_path):
    from experiments import plots
    stale = tmp_path / ".tmp-abc123.png"
    stale.write_bytes(b"")
    old = time.time() - 2 * plots.STALE_SECONDS
    os.utime(stale, (old, old))
    fresh = tmp_path / ".tmp-def456.png"     # a plot being written right now
    fresh.write_bytes(b"")
    record = tmp_path / ".tmp-xyzrun-fifo.json"   # not a plot's
    record.write_bytes(b"")
    os.utime(record, (old, old))
    plots._save(plots.plt.figure(), str(tmp_path / "p.png"))
    assert sorted(os.listdir(tmp_path)) == sorted([fresh.name, record.name, "p.png"])
    assert (tmp_path / "p.png").read_bytes()[:4] == b"\x89PNG"
