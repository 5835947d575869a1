"""Benchmark: the controller's reaction time, from an event to rules installed.

Runs seeded workloads on the emulation and reports, over every event the controller
handled (coflow releases, flow and coflow completions):

* ``event_to_signal_ms``: the event reached the controller (a release timer fired, an
  agent's completion report arrived) -> every start/pause/update signal sent to agents;
* ``event_to_rules_ms``: the same event -> every switch whose rules changed has answered
  the barrier that follows the rule changes (the rules are installed);
* ``policy_ms``: time inside ``policy.plan(state)``;
* ``handoff_ms``: the last byte of a flow arriving -> the first byte of the flow its
  completion let start being written (the control loop as the flows see it).

Run as root::

    sudo .venv/bin/python benchmarks/emulation_controller.py
    sudo .venv/bin/python benchmarks/emulation_controller.py --policies fifo --hosts 16 \\
        --rate 5 --json
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys

import numpy as np


def handoffs(decisions_path: str) -> list[float]:
    """Completion -> next flow's first write, ms, from a run's decision log."""
    rows = [json.loads(line) for line in open(decisions_path)]
    last_done, pending, out = None, {}, []
    for r in rows:
        if r["event"] == "flow_done":
            last_done = r["tw_done"]
        elif r["event"] == "apply" and r["why"] in ("flow_completion", "completion"):
            for f, *_ in r["launch"]:
                if last_done is not None:
                    pending[f] = last_done
        elif r["event"] == "flow_started" and r["flow"] in pending:
            out.append((r["tw_started"] - pending.pop(r["flow"])) * 1e3)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--policies", default="fifo,lp-coflow")
    p.add_argument("--seeds", default="1,2")
    p.add_argument("--hosts", type=int, default=8)
    p.add_argument("--rate", type=float, default=10.0, help="Mbit/s")
    p.add_argument("--coflows", type=int, default=30)
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    if os.geteuid() != 0:
        print("needs root", file=sys.stderr)
        return 2
    from emulate.mininet.engine import run_mininet
    from emulate.io.traces import random_workload
    out = []
    for policy in args.policies.split(","):
        agg: dict[str, list] = {}
        for seed in (int(s) for s in args.seeds.split(",")):
            w = random_workload(seed, ports=args.hosts, cores=2, coflows=args.coflows,
                                rate_bps=args.rate * 1e6)
            r = run_mininet(w, policy, keep_dir=True)
            c = r.extra["controller"]
            for k in ("event_to_signal_ms", "event_to_rules_ms", "policy_ms"):
                agg.setdefault(k, []).append(c[k])
            agg.setdefault("handoff", []).extend(
                handoffs(os.path.join(r.extra["run_dir"], "decisions.jsonl")))
            shutil.rmtree(r.extra["run_dir"], ignore_errors=True)  # the copied logs
            agg.setdefault("events", []).append(r.events)
        row = {"policy": policy, "hosts": args.hosts, "cores": 2, "rate_mbit": args.rate,
               "events": int(sum(agg["events"])), "load_avg": os.getloadavg()[0]}
        for k in ("event_to_signal_ms", "event_to_rules_ms", "policy_ms"):
            row[k] = {"median": float(np.median([x["median"] for x in agg[k]])),
                      "p90": float(np.max([x["p90"] for x in agg[k]])),
                      "max": float(np.max([x["max"] for x in agg[k]]))}
        h = np.array(agg["handoff"])
        row["handoff_ms"] = {"median": float(np.median(h)), "p90": float(np.percentile(h, 90)),
                             "max": float(h.max())} if h.size else {}
        out.append(row)
        if not args.json:
            print(f"{policy:10s} {row['events']} events on {args.hosts}x2 @ {args.rate:g} Mbit/s "
                  f"(load avg {row['load_avg']:.1f})")
            for k in ("event_to_signal_ms", "event_to_rules_ms", "policy_ms", "handoff_ms"):
                v = row[k]
                if v:
                    print(f"    {k:20s} median {v['median']:7.2f}  p90 {v['p90']:7.2f}  "
                          f"max {v['max']:7.2f}")
    if args.json:
        print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
