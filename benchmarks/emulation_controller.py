"""Benchmark: the controller's reaction time and where a flow hand-off's time goes.

Runs seeded workloads on the emulation and reports, over every event the controller
handled (coflow releases, flow and coflow completions):

* ``event_to_signal_ms``: the event reached the controller (a release timer fired, an
  agent's completion report arrived) -> every start/pause/update signal sent to agents;
* ``event_to_rules_ms``: the same event -> every switch whose rules changed has answered
  the barrier that follows the rule changes (the rules are installed);
* ``policy_ms``: time inside ``policy.plan(state)``;
* a *hand-off* (a flow ``X`` completes, the controller's answer launches flow ``Y``),
  in stages measured on the machine's monotonic clock (every process of a run is on
  it; stamps from the agents' messages and the decision log):

  ``report``  X's last byte at its receiver -> the report reaches the controller;
  ``queue``   -> the controller's main loop takes it;
  ``decide``  -> bookkeeping, the policy (at a coflow completion), the rates, and every
              agent's signal sent;
  ``deliver`` -> Y's sender agent has the ``start``;
  ``write``   -> Y's connection writes Y's first byte;
  ``wire``    -> Y's first byte reaches its receiver;
  ``total``   X's last byte -> Y's first byte (the sum), and beside it ``rules``: the
              loop took the event -> the rule changes are acknowledged by the switches
              (not on the flows' path: signals go first);

* the fidelity of each run against the simulator: per-coflow error median / p90 and the
  median error by coflow size (what the hand-off costs the small coflows).

The load average is printed with each row: on a busy machine every stage waits for a
CPU. Run as root (under the Mininet lock when others share the machine)::

    sudo .venv/bin/python benchmarks/emulation_controller.py
    sudo .venv/bin/python benchmarks/emulation_controller.py --policies fifo --hosts 16 \\
        --cores 4 --rate 2 --json
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys

import numpy as np


STAGES = ("report", "queue", "decide", "deliver", "write", "wire")
"""A hand-off's stages, in order (their sum is ``total``); ``rules`` runs beside them."""


def handoffs(decisions_path: str) -> list[dict]:
    """Every hand-off of a run, from its decision log: ms per stage (see the module
    docstring). A hand-off is a flow ``Y`` launched by the controller's answer to a batch
    of events holding a flow completion (``X``: of the batch's completions the first
    that reached the controller)."""
    rows = [json.loads(line) for line in open(decisions_path)]
    done = {r["flow"]: r for r in rows if r["event"] == "flow_done"}
    started = {r["flow"]: r for r in rows if r["event"] == "flow_started"}
    rules = {r["token"]: r["m"] for r in rows if r["event"] == "rules_installed" and "m" in r}
    by_loop: dict[float, list] = {}
    for r in done.values():
        if "m_loop" in r and "m_recv" in r:
            by_loop.setdefault(r["m_loop"], []).append(r)
    out = []
    for r in rows:
        if r["event"] != "apply" or r["why"] not in ("flow_completion", "completion"):
            continue
        batch = by_loop.get(r.get("m_loop"))
        if not batch:
            continue
        x = min(batch, key=lambda d: d["m_recv"])
        for f, *_ in r["launch"]:
            y, yd = started.get(f), done.get(f)
            if y is None or yd is None or "m_cmd" not in y or "m_first" not in yd:
                continue
            m = [x["m_done"], x["m_recv"], r["m_loop"], r["m_signal"], y["m_cmd"],
                 y["m_write"], yd["m_first"]]
            h = {s: (b - a) * 1e3 for s, a, b in zip(STAGES, m[:-1], m[1:])}
            h["total"] = (m[-1] - m[0]) * 1e3
            if r.get("rules") in rules:
                h["rules"] = (rules[r["rules"]] - r["m_loop"]) * 1e3
            out.append(h)
    return out


def summary(values) -> dict:
    v = np.asarray(values, dtype=float)
    if not v.size:
        return {}
    return {"median": float(np.median(v)), "p90": float(np.percentile(v, 90)),
            "max": float(v.max()), "n": int(v.size)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--policies", default="fifo,lp-coflow,sebf")
    p.add_argument("--seeds", default="1,2")
    p.add_argument("--hosts", type=int, default=8)
    p.add_argument("--cores", type=int, default=2)
    p.add_argument("--rate", type=float, default=10.0, help="Mbit/s")
    p.add_argument("--coflows", type=int, default=30)
    p.add_argument("--mean-mb", type=float, default=2.0, help="mean MB per coflow")
    p.add_argument("--json", action="store_true", help="one JSON document on stdout")
    args = p.parse_args(argv)
    if os.geteuid() != 0:
        print("needs root", file=sys.stderr)
        return 2
    from emulate.io.traces import random_workload
    from emulate.mininet.engine import run_mininet
    from emulate.mininet.fidelity import against_simulator, errors_by_size
    out = []
    for policy in args.policies.split(","):
        agg: dict[str, list] = {}
        loads, reports = [], []
        for seed in (int(s) for s in args.seeds.split(",")):
            w = random_workload(seed, ports=args.hosts, cores=args.cores,
                                coflows=args.coflows, rate_bps=args.rate * 1e6,
                                mean_bytes=args.mean_mb * 1e6)
            loads.append(os.getloadavg()[0])
            r = run_mininet(w, policy, keep_dir=True)
            c = r.extra["controller"]
            for k in ("event_to_signal_ms", "event_to_rules_ms", "policy_ms"):
                agg.setdefault(k, []).append(c[k])
            agg.setdefault("handoff", []).extend(
                handoffs(os.path.join(r.extra["run_dir"], "decisions.jsonl")))
            shutil.rmtree(r.extra["run_dir"], ignore_errors=True)  # the copied logs
            agg.setdefault("events", []).append(r.events)
            agg.setdefault("flows", []).append(w.arrays.n_flows)
            reports.append(against_simulator(r, policy))
            loads.append(os.getloadavg()[0])
        e = np.concatenate([rep.errors for rep in reports])
        row = {"policy": policy, "hosts": args.hosts, "cores": args.cores,
               "rate_mbit": args.rate, "events": int(sum(agg["events"])),
               "flows": int(sum(agg["flows"])),
               "load": [min(loads), max(loads)],
               "cct_error": {"median": float(np.median(e)),
                             "p90": float(np.percentile(e, 90))},
               "error_by_size": errors_by_size(reports)}
        for k in ("event_to_signal_ms", "event_to_rules_ms", "policy_ms"):
            row[k] = {"median": float(np.median([x["median"] for x in agg[k]])),
                      "p90": float(np.max([x["p90"] for x in agg[k]])),
                      "max": float(np.max([x["max"] for x in agg[k]]))}
        hs = agg["handoff"]
        row["handoff_ms"] = {k: summary([h[k] for h in hs if k in h])
                             for k in (*STAGES, "total", "rules")}
        out.append(row)
        if not args.json:
            print(f"{policy:10s} {row['events']} events, {row['flows']} flows on "
                  f"{args.hosts}x{args.cores} @ {args.rate:g} Mbit/s, {args.coflows} coflows "
                  f"x {len(reports)} seeds (load {row['load'][0]:.1f}-{row['load'][1]:.1f})")
            for k in ("event_to_signal_ms", "event_to_rules_ms", "policy_ms"):
                v = row[k]
                print(f"    {k:20s} median {v['median']:7.2f}  p90 {v['p90']:7.2f}  "
                      f"max {v['max']:7.2f}")
            print(f"    hand-off, ms ({row['handoff_ms']['total'].get('n', 0)} hand-offs)")
            for k, v in row["handoff_ms"].items():
                if v:
                    print(f"      {k:8s} median {v['median']:7.2f}  p90 {v['p90']:7.2f}  "
                          f"max {v['max']:7.2f}")
            print(f"    per-coflow error: median {row['cct_error']['median']:.1%}  p90 "
                  f"{row['cct_error']['p90']:.1%}; median by size "
                  + "  ".join(f"{b['lo_mb']:g}-{b['hi_mb']:g} MB: {b['median']:.1%} "
                              f"({b['n']})" for b in row["error_by_size"] if b["n"]))
    if args.json:
        print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
