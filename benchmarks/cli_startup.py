"""Benchmark: how long the ``coflowemu`` command takes to start, against ``python -c pass``.

Scripts call the CLI in loops (one ``run`` per workload and policy), so start-up is paid
over and over. Every command runs as a whole process of the installed console script,
stdout to a pipe, as a shell script runs it; each is timed ``--repeat`` times and the
median reported beside the interpreter's own start-up in the same run (the VM's speed
drifts between sessions: read the ratios). The commands:

* ``--help`` and ``policies`` (no workload), ``generate`` (a 20-coflow workload);
* ``run`` of a 5-coflow workload with ``--no-lp-bound`` and with the LP bound (``--json``);
* ``bound --json`` on the same workload.

Target (issue: a CLI that scripts can drive): ``--help``, ``policies`` and ``generate``
well under 0.5 s, the tiny ``run`` under 1 s. ``python -X importtime`` shows where a
command's time goes::

    .venv/bin/python -X importtime -m emulate.cli policies 2>&1 | sort -t'|' -k2 -n | tail

Run::

    .venv/bin/python benchmarks/cli_startup.py [--repeat 7] [--json]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

BIN = os.path.join(os.path.dirname(sys.executable), "coflowemu")


def timed(cmd: list[str], cwd: str, repeat: int) -> float:
    """Median wall seconds of ``cmd`` as a whole process (fails loudly if it fails)."""
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        subprocess.run(cmd, cwd=cwd, check=True, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        subprocess.run([BIN, "generate", "--seed", "1", "--ports", "4", "--coflows", "5",
                        "--out", "w.json"], cwd=d, check=True, capture_output=True)
        cases = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "--help": [BIN, "--help"],
            "policies": [BIN, "policies"],
            "generate": [BIN, "generate", "--out", "g.json"],
            "run (5 coflows)": [BIN, "run", "w.json", "--json", "--no-lp-bound"],
            "run + LP bound": [BIN, "run", "w.json", "--json"],
            "bound --json": [BIN, "bound", "w.json", "--json"],
        }
        res = {name: timed(cmd, d, args.repeat) for name, cmd in cases.items()}
    base = res["python -c pass"]
    if args.json:
        print(json.dumps({"seconds": res, "ratio_to_python": {k: v / base
                                                             for k, v in res.items()}}))
        return 0
    print(f"{'command':<20}{'median s':>10}{'x python':>10}   (median of {args.repeat})")
    for name, s in res.items():
        print(f"{name:<20}{s:>10.3f}{s / base:>10.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
