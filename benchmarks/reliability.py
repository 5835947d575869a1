"""Reliability campaign: hundreds of bad inputs through the installed ``coflowemu``.

The input half of issue #19's campaign. Every input runs as a whole process of the
installed console script, the way a user's shell runs it, under a memory limit
(``RLIMIT_AS``, ``--memory-mb``) and a timeout (``--timeout``); each outcome is one of:

* **success** -- exit 0 (a mutation that is still a valid input);
* **clean error** -- exit 2, nothing on stdout, one stderr line ``coflowemu: error: ...``
  naming the file (or the bad option);
* **traceback** -- ``Traceback`` on stderr, or any other exit;
* **hang** -- still running at the timeout (killed);
* **memory kill** -- killed by a signal, or out of memory under the limit.

The inputs: the hand-made bad inputs of the issue (``tests/test_bad_inputs.py``) and
mutations drawn from the fuzz strategies (``tests/input_strategies.py``: coflow, multi-stage,
joint, moldable and msjo workloads, FB traces, segment files, command-line options),
derandomized so every run tries the same inputs. Targets: 0 tracebacks, 0 hangs,
0 memory kills.

:func:`input_campaign` returns the table's rows (one per family of inputs, dicts); the
fault campaign of the emulation (``benchmarks/faults.py``) returns rows of its own that
:func:`print_table` prints in the same table.

As root it then runs the fault campaign of the emulation (``benchmarks/faults.py``:
signals at build and mid-run, agents killed and stopped, the controller killed, fake
switches, bad API traffic, a deaf watcher; ``--quick-faults`` for CI's part, ``--no-faults``
to skip it) and prints its table under the inputs' one; the exit status is 1 if either
misses a target.

Run::

    sudo .venv/bin/python benchmarks/reliability.py [--n 300] [--timeout 60]
        [--memory-mb 4096] [--workers 2] [--quick-faults | --no-faults] [--json]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
BIN = os.path.join(os.path.dirname(sys.executable), "coflowemu")
OUTCOMES = ("successes", "clean errors", "tracebacks", "hangs", "memory kills")


# ---------------------------------------------------------------------------- inputs
def _draw(strategy, n: int) -> list:
    """``n`` examples of a hypothesis strategy, the same on every run."""
    from hypothesis import HealthCheck, Phase, given, settings
    out = []

    @settings(max_examples=n, derandomize=True, database=None, deadline=None,
              phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    @given(strategy)
    def collect(x):
        out.append(x)
    collect()
    return out[:n]


def inputs(n: int) -> list[dict]:
    """About ``n`` inputs: ``{"family", "files": {name: bytes}, "args"}`` (``{f}`` in
    args is the first file, ``{dir}`` the input's directory)."""
    import input_strategies as S
    from test_bad_inputs import CASES
    out = [{"family": "issue #19 cases", "files": {c.name: c.content if isinstance(
        c.content, bytes) else c.content.encode()}, "args": c.args} for c in CASES]
    share = max(1, (n - len(out)) // 5)
    for kind, data in _draw(S.mutated_json(), 2 * share):
        cmd = (["bound", "{f}", "--json"] if kind in ("coflows", "jobs") and len(data) % 3 == 0
               else ["run", "{f}", "--policy", S.POLICY[kind], "--json", "--no-lp-bound"])
        out.append({"family": f"{kind} JSON", "files": {"w.json": data}, "args": cmd})
    for data in _draw(S.mutated_trace(), share):
        out.append({"family": "FB trace", "files": {"t.txt": data},
                    "args": ["run", "{f}", "--policy", "sebf", "--json", "--no-lp-bound"]})
    for data in _draw(S.mutated_segments(), share // 2):
        out.append({"family": "segments", "files": {"s.jsonl": data},
                    "args": ["gantt", "{f}", "--out", "{dir}/g.png"]})
    valid = {"w.json": json.dumps(S.BASES["coflows"]).encode(), "t.txt": S.TRACE.encode()}
    for args, _ in _draw(S.cli_options(), n - len(out)):
        out.append({"family": "options", "files": dict(valid),
                    "args": [a.replace("{json}", "{dir}/w.json").replace("{trace}",
                                                                       "{dir}/t.txt")
                             for a in args]})
    return out


# ---------------------------------------------------------------------------- running
def _limit(memory_mb: int):
    def apply():
        os.setsid()
        limit = memory_mb * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    return apply


def run_one(item: dict, *, timeout: float, memory_mb: int) -> tuple[str, str]:
    """The outcome of one input (one of :data:`OUTCOMES`) and a line saying why."""
    with tempfile.TemporaryDirectory(prefix="cfe-rel-") as d:
        first = None
        for name, data in item["files"].items():
            path = os.path.join(d, name)
            first = first or path
            with open(path, "wb") as fh:
                fh.write(data)
        argv = [a.replace("{f}", first).replace("{dir}", d) for a in item["args"]]
        proc = subprocess.Popen([BIN, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                stdin=subprocess.DEVNULL, cwd=d, text=True,
                                preexec_fn=_limit(memory_mb))
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            return "hangs", f"{argv}: still running after {timeout:g} s"
    lines = err.strip().splitlines()
    if "Traceback" in err:
        return "tracebacks", f"{argv}: {lines[-1] if lines else ''}"
    if proc.returncode < 0 or "out of memory" in err:
        return "memory kills", f"{argv}: exit {proc.returncode} {err.strip()[:200]}"
    if proc.returncode == 0:
        return "successes", ""
    if (proc.returncode == 2 and not out and len(lines) == 1
            and lines[0].startswith("coflowemu: error: ")):
        return "clean errors", ""
    return "tracebacks", f"{argv}: exit {proc.returncode}, stderr {err.strip()[:200]!r}"


def input_campaign(n: int = 300, *, timeout: float = 60.0, memory_mb: int = 4096,
                   workers: int = 2) -> list[dict]:
    """Run about ``n`` bad inputs; one row per family: ``{"campaign": "inputs",
    "family", "tried", <each of OUTCOMES>, "failures": [why, ...]}`` plus a total row."""
    items = inputs(n)
    with ThreadPoolExecutor(workers) as pool:
        results = list(pool.map(lambda it: run_one(it, timeout=timeout, memory_mb=memory_mb),
                                items))
    rows: dict[str, dict] = {}
    for item, (outcome, why) in zip(items, results):
        row = rows.setdefault(item["family"], {"campaign": "inputs", "family": item["family"],
                                               "tried": 0, **dict.fromkeys(OUTCOMES, 0),
                                               "failures": []})
        row["tried"] += 1
        row[outcome] += 1
        if why:
            row["failures"].append(why)
    total = {"campaign": "inputs", "family": "all inputs", "tried": len(items),
             **{o: sum(r[o] for r in rows.values()) for o in OUTCOMES},
             "failures": [w for r in rows.values() for w in r["failures"]]}
    return [*rows.values(), total]


def print_table(rows: list[dict]) -> None:
    """One table of every row (the inputs' and any other campaign's): the columns are
    every numeric key, in the order first seen."""
    cols = []
    for r in rows:
        cols += [k for k, v in r.items() if isinstance(v, int) and k not in cols]
    width = max(len(f"{r['campaign']}: {r['family']}") for r in rows) + 2
    print(f"{'':<{width}}" + "".join(f"{c:>14}" for c in cols))
    for r in rows:
        print(f"{r['campaign'] + ': ' + r['family']:<{width}}"
              + "".join(f"{r.get(c, ''):>14}" for c in cols))
    for r in rows:
        if r["family"] != "all inputs":
            for why in r.get("failures", [])[:5]:
                print(f"  {r['family']}: {why}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=300, help="inputs to try (about)")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per input")
    ap.add_argument("--memory-mb", type=int, default=4096, help="RLIMIT_AS per input")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    which = ap.add_mutually_exclusive_group()
    which.add_argument("--quick-faults", action="store_true",
                       help="only CI's part of the fault campaign")
    which.add_argument("--no-faults", action="store_true",
                       help="skip the fault campaign (it needs root)")
    args = ap.parse_args()
    rows = input_campaign(args.n, timeout=args.timeout, memory_mb=args.memory_mb,
                          workers=args.workers)
    bad = rows[-1]["tracebacks"] + rows[-1]["hangs"] + rows[-1]["memory kills"]
    fault_rows = []
    if not args.no_faults and os.geteuid() == 0:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import faults
        fault_rows = faults.fault_campaign(args.quick_faults)
        bad += sum(r["runs"] - r["ended_cleanly"] + r["records_lost"] + r["takeovers"]
                   + r["leftovers_after_clean"] for r in fault_rows)
    elif not args.no_faults:
        print("reliability: the fault campaign needs root; inputs only", file=sys.stderr)
    if args.json:
        print(json.dumps({"inputs": rows, "faults": fault_rows}))
    else:
        print_table(rows)
        if fault_rows:
            print()
            print(faults.table(fault_rows))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
