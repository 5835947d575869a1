"""The simulator against the Sincronia C++ offline simulator, on the same instance.

The instance is the setting of Sincronia's offline simulator (SIGCOMM 2018): FB2010 with
**every release at 0** (526 coflows competing at once) on one 150-port switch whose ports
run at 1 MiB/s. Every flow of FB2010 is a whole number of MiB, so the reference's per-flow
input format (integer MB, one MB per time unit per port) holds the instance exactly and
its time unit is our second: mean CCTs compare as they are.

Both simulators run as whole processes, interleaved, ``--repeat`` times (median); for
each of ours it prints the process's wall time and user CPU, the simulator's own
``wall_seconds``, the mean CCT, and the ratios to the reference's nearest counterpart in
the same run:

* ``sebf`` against the reference's ``SEBF MADD`` (Varys's ordering and rates);
* ``sincronia``, ``fifo``, ``scf``, ``fair``, ``aalo`` against ``PD MADD`` (Sincronia's
  primal-dual ordering with MADD rates, its default for the offline comparison);
* ``sebf@allocation=sincronia-offline`` (not run unless listed in ``--policies``): the
  reference's own allocation as an option of ``sebf``, against ``SEBF MADD``, the same
  schedule on both sides (the same mean CCT).

Otherwise the two do not compute the same schedules (see README "Semantics beside the reference
simulators"): the reference orders once at time 0 and steps only at MADD coflow
completions; ours re-plans at every coflow event and re-allocates at every flow
completion, exactly. The mean CCTs measured before the speed work of issue #18 are printed
beside today's (``BEFORE``): they must not change.

``--baseline DIR`` runs the same policies a second time from another checkout of this
project (e.g. ``git archive main | tar -x -C DIR``), with ``PYTHONPATH=DIR`` and this
environment's ``coflowemu``, interleaved with the rest: a before/after comparison in the
same run, under the same load (warm that tree's kernels first:
``PYTHONPATH=DIR python -m emulate.sim.warmup``).

Building the reference (its code is not part of this project)::

    git clone https://github.com/sincronia-coflow/simulator /tmp/sincronia
    cd /tmp/sincronia/offlinesim && for f in *.cpp; do g++ -O2 -c $f; done \\
        && g++ -O2 -o offlinesim *.o

Usage: ``python benchmarks/sim_reference.py [--reference PATH] [--trace PATH]
[--policies a,b] [--repeat N] [--baseline DIR]``; without ``--reference`` it prints ours alone.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DEFAULT_TRACE = os.path.join(ROOT, "..", "shared", "traces", "FB2010-1Hr-150-0.txt")
COFLOWEMU = os.path.join(os.path.dirname(sys.executable), "coflowemu")
POLICIES = "sebf,sincronia,fifo,scf,fair,aalo"
OFFLINE = "sebf@allocation=sincronia-offline"
#: the reference's nearest counterpart of each of our policies (ordering, allocation)
COUNTERPART = {"sebf": ("SEBF", "MADD"),
               # the reference's own allocation, as an option of ours: the same schedule
               OFFLINE: ("SEBF", "MADD")}
DEFAULT_COUNTERPART = ("PD", "MADD")
RATE = "1MiBps"   # one MiB per second per port: the reference's time unit is a second
MIB = 2 ** 20
#: mean CCTs (s) on this instance before the speed work of issue #18 (commit 9a47054)
BEFORE = {"sebf": 5901.29, "sincronia": 5597.84, "fifo": 145220.23, "scf": 12122.09,
          "fair": 37125.61, "aalo": 10402.37}


def write_reference_input(workload, path: str) -> None:
    """``workload`` in the Sincronia simulators' per-flow format (sizes in MiB).

    Raises ``ValueError`` unless the workload has one core and every flow is a whole
    number of MiB (the format's sizes are integers).
    """
    a = workload.arrays
    if a.cores != 1:
        raise ValueError("the reference simulates one switch: use one core")
    mib = a.size / MIB
    if not np.all(mib == np.rint(mib)):
        raise ValueError("the reference's sizes are whole MB: this workload's are not")
    mib = mib.astype(np.int64)
    with open(path, "w") as fh:
        fh.write(f"{a.ports} {a.n_coflows}\n")
        for k in range(a.n_coflows):
            fl = a.flows_of(k)
            s, d = a.src[fl], a.dst[fl]
            head = [k + 1, 0, len(fl), len(np.unique(s)), len(np.unique(d))]
            body = np.column_stack([s, d, mib[fl]]).ravel()
            fh.write(" ".join(map(str, head + body.tolist())) + "\n")


def timed(cmd: list[str], **kw) -> tuple[float, float, subprocess.CompletedProcess]:
    """Run ``cmd`` as a child process; (wall s, user CPU s of the child, the process)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime
    t = time.perf_counter()
    proc = subprocess.run(cmd, check=True, **kw)
    wall = time.perf_counter() - t
    return wall, resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime - before, proc


def run_ours(trace: str, policy: str, tree: str | None = None) -> dict:
    """One whole ``coflowemu run`` process on the zero-release instance (the code of the
    checkout ``tree`` if given, else this one)."""
    env = None if tree is None else {**os.environ, "PYTHONPATH": tree}
    wall, user, proc = timed(
        [COFLOWEMU, "run", trace, "--zero-release", "--rate", RATE, "--cores", "1",
         "--policy", policy, "--json", "--no-lp-bound"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    doc = json.loads(proc.stdout)
    cct = [c["cct"] for c in doc["coflows"]]
    return {"wall": wall, "user": user, "sim": doc["wall_seconds"],
            "cct": statistics.fmean(cct)}


def run_reference(binary: str, inp: str, ordering: str, allocation: str, tmp: str) -> dict:
    """One whole reference process; its mean CCT from its log's last line."""
    log = os.path.join(tmp, f"{ordering}-{allocation}.log")
    wall, user, _ = timed([binary, inp, log, ordering, allocation],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp)
    with open(log) as fh:
        rows = [r.split() for r in fh.read().splitlines() if r.strip()]
    cct = statistics.fmean(float(r[4]) for r in rows[:-1])
    return {"wall": wall, "user": user, "cct": cct}


def median(runs: list[dict]) -> dict:
    return {k: statistics.median(r[k] for r in runs) for k in runs[0]}


def measure(trace: str, names: list[str], reference: str | None, repeat: int,
            baseline: str | None = None) -> tuple[list, dict, dict, dict]:
    """Whole processes, interleaved, ``repeat`` times: the reference's counterparts of
    ``names`` (if ``reference``), each of ours, and each from the ``baseline`` checkout
    (if given). Returns ``(counterparts, ours, reference runs, baseline runs)``, the runs
    as lists of :func:`run_ours` / :func:`run_reference` dicts by policy or counterpart."""
    pairs = sorted({COUNTERPART.get(p, DEFAULT_COUNTERPART) for p in names})
    ours: dict[str, list] = {p: [] for p in names}
    base: dict[str, list] = {p: [] for p in names}
    ref: dict[tuple, list] = {c: [] for c in pairs}
    with tempfile.TemporaryDirectory() as tmp:
        inp = os.path.join(tmp, "fb2010-zero.txt")
        if reference:
            from emulate.io.traces import read_fb_trace
            from emulate.io.units import parse_rate
            write_reference_input(read_fb_trace(trace, zero_release=True,
                                                rate_bps=parse_rate(RATE)), inp)
        for rep in range(repeat):
            for c in pairs if reference else ():
                ref[c].append(run_reference(reference, inp, *c, tmp))
                print(f"  [{rep + 1}/{repeat}] reference {' '.join(c)}: "
                      f"{ref[c][-1]['wall']:.1f} s", file=sys.stderr, flush=True)
            for p in names:
                ours[p].append(run_ours(trace, p))
                print(f"  [{rep + 1}/{repeat}] {p}: {ours[p][-1]['wall']:.1f} s",
                      file=sys.stderr, flush=True)
                if baseline:
                    base[p].append(run_ours(trace, p, baseline))
                    print(f"  [{rep + 1}/{repeat}] {p} (baseline): "
                          f"{base[p][-1]['wall']:.1f} s", file=sys.stderr, flush=True)
    return pairs, ours, ref, base


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reference", help="a built Sincronia offlinesim binary")
    ap.add_argument("--trace", default=DEFAULT_TRACE)
    ap.add_argument("--policies", default=POLICIES)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--baseline", metavar="DIR",
                    help="another checkout of this project to run the policies from too")
    args = ap.parse_args()
    if not os.path.exists(args.trace):
        raise SystemExit(f"trace not found: {args.trace} (see README: The Facebook trace)")
    if args.reference and not os.access(args.reference, os.X_OK):
        raise SystemExit(f"reference not executable: {args.reference}")
    names = args.policies.split(",")
    pairs, ours, ref, base = measure(args.trace, names, args.reference, args.repeat,
                                     args.baseline)
    print(f"FB2010, releases at 0, 1 x 150-port switch at {RATE}; whole processes, median "
          f"of {args.repeat}, same run")
    if args.reference:
        print("\nreference (Sincronia offlinesim, g++ -O2):")
        for c in pairs:
            r = median(ref[c])
            print(f"  {' '.join(c):<10} wall {r['wall']:7.2f} s  user {r['user']:7.2f} s  "
                  f"mean CCT {r['cct']:9.2f} s")
    print(f"\n{'policy':<10}{'wall s':>8}{'user s':>8}{'sim s':>8}{'mean CCT':>10}"
          f"{'before':>10}" + (f"{'vs':>11}{'wall x':>8}{'user x':>8}" if args.reference
                               else ""))
    for p in names:
        r = median(ours[p])
        before = BEFORE.get(p)
        line = (f"{p:<10}{r['wall']:8.2f}{r['user']:8.2f}{r['sim']:8.2f}{r['cct']:10.2f}"
                f"{before if before is not None else float('nan'):10.2f}")
        if args.reference:
            c = COUNTERPART.get(p, DEFAULT_COUNTERPART)
            rr = median(ref[c])
            line += (f"{' '.join(c):>11}{r['wall'] / rr['wall']:8.2f}"
                     f"{r['user'] / rr['user']:8.2f}")
        print(line)
    if args.baseline:
        print(f"\nbaseline {args.baseline} (same run):")
        print(f"{'policy':<10}{'wall s':>8}{'user s':>8}{'sim s':>8}{'mean CCT':>10}"
              f"{'same CCT':>9}{'wall x':>8}{'user x':>8}")
        for p in names:
            r, b = median(ours[p]), median(base[p])
            print(f"{p:<10}{b['wall']:8.2f}{b['user']:8.2f}{b['sim']:8.2f}{b['cct']:10.2f}"
                  f"{str(b['cct'] == r['cct']):>9}{r['wall'] / b['wall']:8.2f}"
                  f"{r['user'] / b['user']:8.2f}")
    print("\n(wall x, user x: ours / the reference's (baseline: ours / the baseline's); the "
          "target is <= 0.5 in wall time. sim s: the simulator's own wall_seconds, without "
          "start-up and reading.)")


if __name__ == "__main__":
    main()
