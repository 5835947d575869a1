"""What the job-model tests share: ``coflowemu`` as a subprocess, a joint document
written with every task and job on a line of its own (so a reader's error names a line
one can find), and the controller's joint run with agents that only record.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

BIN = os.path.join(os.path.dirname(sys.executable), "coflowemu")


def coflowemu(*args, timeout=600) -> subprocess.CompletedProcess:
    """``coflowemu *args`` in a subprocess (no stdin), output captured as text."""
    return subprocess.run([BIN, *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def run_generated(directory, policy: str) -> tuple:
    """``coflowemu run directory/w.json --policy policy --json --segments ...``: the one
    JSON document it prints, the workload and the task segments (it must succeed)."""
    from emulate.io.traces import read_workload
    seg = directory / f"{policy}.jsonl"
    out = coflowemu("run", directory / "w.json", "--policy", policy, "--json",
                    "--segments", seg)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)                       # one JSON document, nothing else
    w = read_workload(str(directory / "w.json"))
    return doc, w, [json.loads(x) for x in seg.read_text().splitlines()]


def write_lines(path, doc: dict) -> None:
    """``doc`` as JSON with every task and every job on a line of its own (the line an
    error about it names)."""
    lines = ["{"]
    for key, value in doc.items():
        if key in ("stages", "jobs"):
            lines.append(f' "{key}": [')
            for s in value:
                if key == "stages":
                    lines.append(f'  {{"id": {json.dumps(s["id"])}, "tasks": [')
                    lines += [f"   {json.dumps(t)}," for t in s["tasks"]]
                    lines[-1] = lines[-1].rstrip(",")
                    lines.append("  ]},")
                else:
                    lines.append(f"  {json.dumps(s)},")
            lines[-1] = lines[-1].rstrip(",")
            lines.append(" ],")
        else:
            lines.append(f" {json.dumps(key)}: {json.dumps(value)},")
    lines[-1] = lines[-1].rstrip(",")
    lines.append("}")
    path.write_text("\n".join(lines) + "\n")


class RecordingAgent:
    """A host agent that records what the controller sends it."""

    def __init__(self):
        self.sent = []

    def send(self, msg):
        self.sent.append(msg)


def controller_run(tmp_path, workload, compute: str, network: str = "fifo"):
    """The controller's joint run of ``workload`` under ``compute`` (+ ``network``) with
    no network: one :class:`RecordingAgent` per machine; the clock started."""
    from controller.joint_runtime import JointEmulationRun
    from controller.policies import get_policy
    from controller.runtime import RunConfig

    n = len(workload.machines)
    cfg = RunConfig(run_dir=str(tmp_path), api_path=str(tmp_path / "api"), ofp_port=0,
                    n_hosts=n, n_cores=1)
    run = JointEmulationRun(cfg, workload, compute, lambda: get_policy(network))
    run.t0 = time.time()
    run.agents = {h: RecordingAgent() for h in range(n)}
    return run
