"""Benchmark: time to build and tear down the emulated fabric.

Measures, for each size, (1) the network alone (Mininet hosts, OVS bridges, links, the
strict-priority HTB trees on every link end, host configuration) and (2) the whole
emulation set-up of a run (controller process start, network, switches connected and
configured by the controller, one agent per host registered), then the teardown.

Run as root::

    sudo .venv/bin/python benchmarks/emulation_build.py             # 4x2, 8x2, 16x4
    sudo .venv/bin/python benchmarks/emulation_build.py --sizes 16x4 --repeat 5 --json
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time


def bench_network(hosts: int, cores: int, rate: float) -> dict:
    from mininet.log import setLogLevel

    from controller.classes import htb_priority_tree
    from emulate.mininet.clean import leftovers
    from topologies.mininet_topo import ParallelTopo, build_network, stop_network
    setLogLevel("error")
    t = time.perf_counter()
    net = build_network(ParallelTopo(hosts=hosts, cores=cores, rates=(rate,) * cores), 6653,
                        qdisc=htb_priority_tree)
    built = time.perf_counter() - t
    t = time.perf_counter()
    stop_network(net)
    down = time.perf_counter() - t
    left = leftovers()
    return {"build_s": built, "teardown_s": down, "clean": not left["bridges"]
            and not left["interfaces"]}


def bench_session(hosts: int, cores: int, rate: float) -> dict:
    """A whole (tiny) run: controller process (imports, policy start and warm-up) and the
    network built in parallel, agents, switches configured, connections opened, then the
    teardown."""
    from controller.model import Coflow, Flow, Workload
    from emulate.mininet.engine import MininetRun
    from topologies.fabric import Fabric
    # one tiny flow per host pair on a ring, so that every agent has work and the
    # controller opens its connections; the run itself takes milliseconds
    w = Workload(Fabric(hosts, cores, rate),
                 [Coflow("ring", [Flow(i, (i + 1) % hosts, 1000) for i in range(hosts)])])
    run = MininetRun(w, "fifo")
    t = time.perf_counter()
    result = run.run()
    total = time.perf_counter() - t
    tm = result.extra["timings"]
    return {"controller_start_s": tm["controller_start_s"],
            "network_build_s": tm["network_build_s"], "agents_start_s": tm["agents_start_s"],
            "teardown_s": tm["teardown_s"], "run_total_s": total,
            "makespan_s": result.makespan}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="4x2,8x2,16x4", help="HOSTSxCORES,...")
    p.add_argument("--rate", type=float, default=10e6, help="link rate, bit/s")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    if os.geteuid() != 0:
        print("needs root", file=sys.stderr)
        return 2
    out = []
    for size in args.sizes.split(","):
        hosts, cores = (int(x) for x in size.lower().split("x"))
        nets = [bench_network(hosts, cores, args.rate) for _ in range(args.repeat)]
        sess = [bench_session(hosts, cores, args.rate) for _ in range(args.repeat)]
        row = {"hosts": hosts, "cores": cores, "repeat": args.repeat,
               "load_avg": os.getloadavg()[0]}
        for k in ("build_s", "teardown_s"):
            row[f"network_{k}"] = statistics.median(r[k] for r in nets)
        row["network_clean"] = all(r["clean"] for r in nets)
        for k in sess[0]:
            row[f"run_{k}" if not k.startswith("run_") else k] = statistics.median(
                r[k] for r in sess)
        out.append(row)
        if not args.json:
            print(f"{hosts:>3} hosts x {cores} cores: network build {row['network_build_s']:.2f} s"
                  f", teardown {row['network_teardown_s']:.2f} s | in a run: controller up "
                  f"after {row['run_controller_start_s']:.2f} s (network built meanwhile in "
                  f"{row['run_network_build_s']:.2f} s), agents "
                  f"{row['run_agents_start_s']:.2f} s, teardown {row['run_teardown_s']:.2f} s,"
                  f" whole tiny run {row['run_total_s']:.2f} s (median of {args.repeat}, "
                  f"load avg {row['load_avg']:.1f})")
    if args.json:
        print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
