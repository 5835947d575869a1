"""Benchmark: time and memory to build and tear down the emulated fabric.

Measures, for each size, (1) the network alone (Mininet hosts, OVS bridges, links, the
strict-priority HTB trees on every link end, host configuration) and (2) the whole
emulation set-up of a run (controller process start, network, switches connected and
configured by the controller, one agent per host registered), then the teardown.

Memory, sampled every 0.1 s during the run: the peak resident set of the controller and
the sum of the agents' peaks, and how much ``ovs-vswitchd`` grew while the fabric existed
(its bridges, ports and their AF_PACKET rings in the userspace datapath). The machine is
shared: times are wall seconds, reported beside the load average.

With ``--forwarding SECONDS``, also what the switches forward on that fabric: the
calibration probe of ``--rate auto`` (4 TCP flows among 4 hosts on 2 cores,
``emulate.mininet.calibrate.measure_forwarding``) run on the fabric of each size (its
other ports idle), and the CPU ``ovs-vswitchd`` used meanwhile (user + system seconds per
second: 1.0 is one core busy). The userspace datapath's one forwarding thread polls every
port, so this shows whether the budget measured on 4 x 2 holds on a larger fabric.

Run as root::

    sudo .venv/bin/python benchmarks/emulation_build.py             # 4x2, 8x2, 16x4
    sudo .venv/bin/python benchmarks/emulation_build.py --sizes 16x4,32x4,64x2,32x8 \\
        --repeat 1 --forwarding 3 --json
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import threading
import time


def rss_mb(pid: int) -> float:
    """Resident set of ``pid`` in MB (0 when it is gone)."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    return 0.0


def vswitchd_pid() -> int | None:
    r = subprocess.run(["pidof", "ovs-vswitchd"], capture_output=True, text=True)
    pids = r.stdout.split()
    return int(pids[0]) if pids else None


class PeakRSS:
    """Samples the resident set of the processes ``pids()`` returns, every ``period`` s,
    keeping each one's peak."""

    def __init__(self, pids, period: float = 0.1):
        self.pids, self.period = pids, period
        self.peak: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            for pid in self.pids():
                self.peak[pid] = max(self.peak.get(pid, 0.0), rss_mb(pid))
            self._stop.wait(self.period)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of ``pid`` (every thread) so far."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def bench_forwarding(hosts: int, cores: int, seconds: float) -> dict:
    """The calibration probe on a ``hosts`` x ``cores`` fabric, and ovs-vswitchd's CPU
    over its busiest second (sampled every 0.1 s: the probe's traffic, not its build)."""
    from emulate.mininet.calibrate import measure_forwarding
    ovs = vswitchd_pid()
    samples, stop = [], threading.Event()

    def sample():
        while not stop.is_set():
            samples.append((time.perf_counter(), cpu_seconds(ovs)))
            stop.wait(0.1)
    th = threading.Thread(target=sample, daemon=True)
    th.start()
    try:
        b = measure_forwarding(seconds, hosts=hosts, cores=cores)
    finally:
        stop.set()
        th.join()
    busiest = 0.0
    for i, (t0, c0) in enumerate(samples):
        later = [(t, c) for t, c in samples[i:] if t - t0 >= 1.0]
        if later:
            busiest = max(busiest, (later[0][1] - c0) / (later[0][0] - t0))
    return {"forwarded_mbit": b.forwarded_bps / 1e6, "vswitchd_cpu": busiest,
            "datapath": b.datapath}


def bench_network(hosts: int, cores: int, rate: float) -> dict:
    from mininet.log import setLogLevel

    from controller.classes import htb_priority_tree
    from emulate.mininet.clean import leftovers
    from topologies.mininet_topo import ParallelTopo, build_network, stop_network
    setLogLevel("error")
    ovs = vswitchd_pid()
    before = rss_mb(ovs) if ovs else 0.0
    t = time.perf_counter()
    net = build_network(ParallelTopo(hosts=hosts, cores=cores, rates=(rate,) * cores), 6653,
                        qdisc=htb_priority_tree)
    built = time.perf_counter() - t
    grown = (rss_mb(ovs) - before) if ovs else float("nan")
    t = time.perf_counter()
    stop_network(net)
    down = time.perf_counter() - t
    left = leftovers()
    return {"build_s": built, "teardown_s": down, "vswitchd_growth_mb": grown,
            "clean": not left["bridges"] and not left["interfaces"]}


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

    def pids():
        return ([run.controller.pid] if run.controller is not None else []) + \
            [p.pid for p in run.agents]
    t = time.perf_counter()
    with PeakRSS(pids) as mem:
        result = run.run()
    total = time.perf_counter() - t
    tm = result.extra["timings"]
    ctl = run.controller.pid
    return {"controller_start_s": tm["controller_start_s"],
            "network_build_s": tm["network_build_s"], "agents_start_s": tm["agents_start_s"],
            "teardown_s": tm["teardown_s"], "run_total_s": total,
            "controller_rss_mb": mem.peak.get(ctl, 0.0),
            "agents_rss_mb": sum(v for k, v in mem.peak.items() if k != ctl),
            "makespan_s": result.makespan}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="4x2,8x2,16x4", help="HOSTSxCORES,...")
    p.add_argument("--rate", type=float, default=10e6, help="link rate, bit/s")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--forwarding", type=float, default=0.0, metavar="SECONDS",
                   help="also run the calibration probe for this long on each fabric")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    if os.geteuid() != 0:
        print("needs root", file=sys.stderr)
        return 2
    out = []
    for size in args.sizes.split(","):
        hosts, cores = (int(x) for x in size.lower().split("x"))
        load = os.getloadavg()[0]
        nets = [bench_network(hosts, cores, args.rate) for _ in range(args.repeat)]
        sess = [bench_session(hosts, cores, args.rate) for _ in range(args.repeat)]
        row = {"hosts": hosts, "cores": cores, "links": hosts * cores,
               "repeat": args.repeat, "load_avg": (load + os.getloadavg()[0]) / 2}
        for k in ("build_s", "teardown_s", "vswitchd_growth_mb"):
            row[f"network_{k}"] = statistics.median(r[k] for r in nets)
        row["network_clean"] = all(r["clean"] for r in nets)
        if args.forwarding > 0:
            row.update(bench_forwarding(hosts, cores, args.forwarding))
        for k in sess[0]:
            row[f"run_{k}" if not k.startswith("run_") else k] = statistics.median(
                r[k] for r in sess)
        out.append(row)
        if not args.json:
            print(f"{hosts:>3} hosts x {cores} cores: network build {row['network_build_s']:.2f} s"
                  f", teardown {row['network_teardown_s']:.2f} s, ovs-vswitchd +"
                  f"{row['network_vswitchd_growth_mb']:.0f} MB | in a run: controller up "
                  f"after {row['run_controller_start_s']:.2f} s (network built meanwhile in "
                  f"{row['run_network_build_s']:.2f} s), agents "
                  f"{row['run_agents_start_s']:.2f} s, teardown {row['run_teardown_s']:.2f} s,"
                  f" whole tiny run {row['run_total_s']:.2f} s; controller "
                  f"{row['run_controller_rss_mb']:.0f} MB, agents "
                  f"{row['run_agents_rss_mb']:.0f} MB (median of {args.repeat}, load avg "
                  f"{row['load_avg']:.1f})" + (
                      f"; forwards {row['forwarded_mbit']:.0f} Mbit/s ({row['datapath']} "
                      f"datapath, ovs-vswitchd {row['vswitchd_cpu']:.2f} CPU)"
                      if "forwarded_mbit" in row else ""), flush=True)
    if args.json:
        print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
