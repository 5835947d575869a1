"""Compile the numba kernels once, at set-up, so that no run pays for it.

The simulator's inner loops, the plan checks and several policies' hot paths are numba
kernels compiled with ``cache=True``: the first process that calls a kernel compiles it
(seconds each, tens of seconds in all) and writes the machine code next to the module
(``__pycache__/*.nbi``, ``*.nbc``); every later process loads it in milliseconds. Without a
warm-up the first ``make demo`` on a fresh clone showed ``sebf`` at 26 s and ``lp-flow``
at 16 s of "wall time": compilation, not simulation.

``python -m emulate.sim.warmup`` (run by ``make demo`` and ``make test``) drives every
code path that has a kernel, with the argument types real runs use: every network policy
on a small 2-core workload with releases and a DAG and on a 1-core one (the priority
matching, the capped backfill, fair sharing by pairs, the LP policies' list scheduling),
the rescan that recomputes every rate at each completion (a user policy's caps or byte
limits on fair sharing take it; the tests check the incremental engines against it), the
emulation controller's rate kernels (:func:`controller.rates.warm_up`, which every
emulated run calls before it starts), the policy options whose kernels the defaults do
not reach (:data:`OPTION_PATHS`: CoflowSim's quanta, Sincronia's offline MADD, and an
order by remaining bytes, which re-keys the matching's pairs as flows progress: 10 s of
compiling for the first ``scf@remaining=true`` run without it), a small joint workload
under every compute policy, and the redundancy model's checkpoint simulator. It prints
what it compiled and the time it took (about 180 s on a 2-core VM from a fresh clone,
the most of it aalo's and fair's first kernels, 50-60 s each; sebf's 32 s); a second run
only loads the cache (about 3 s).
"""
from __future__ import annotations

import sys
import time


#: (policy, option, value, workloads): options whose kernels the defaults do not reach
OPTION_PATHS = (
    ("fifo", "allocation", "coflowsim", slice(1, 2)),         # CoflowSim's quanta (one core)
    ("sebf", "allocation", "sincronia-offline", slice(1, 2)),  # Sincronia's MADD (one core)
    ("scf", "remaining", True, slice(0, 2)),  # an order that changes as bytes go: re-keyed pairs
)


def warm_up(stream=sys.stderr) -> float:
    """Run every kernel once; returns the wall seconds it took."""
    from controller import rates
    from controller.compute import compute_policies
    from controller.jobs import mapreduce_jobs
    from controller.policies import available, get_policy
    from emulate.engines import RunOptions, get_engine
    from emulate.io.traces import random_workload
    from emulate.sim.flowsim import Simulator

    t0 = time.perf_counter()
    sim = get_engine("sim")
    workloads = [random_workload(0, ports=6, cores=2, coflows=12, chi=2),
                 random_workload(1, ports=4, cores=1, coflows=8)]
    for name in available():
        t = time.perf_counter()
        for w in workloads:
            sim.run(w, name, RunOptions(segments=True))
        _report(name, time.perf_counter() - t, stream)
    t = time.perf_counter()        # the rescan: rates from scratch at every completion
    for name in ("sebf", "fair"):  # (caps and byte limits; plain fair sharing)
        for w in workloads:
            Simulator(w, get_policy(name), segments=True, incremental=False).run()
    _report("the rescan", time.perf_counter() - t, stream)
    t = time.perf_counter()        # the emulation controller's rate kernels
    rates.warm_up()
    _report("the controller's rates", time.perf_counter() - t, stream)
    for name, option, value, on in OPTION_PATHS:
        t = time.perf_counter()
        for w in workloads[on]:
            sim.run(w, name, RunOptions(policy_options={option: value}))
        _report(f"{name}@{option}={value}", time.perf_counter() - t, stream)
    joint = mapreduce_jobs(0, n_jobs=2, ports=4)
    for name in compute_policies():
        t = time.perf_counter()
        sim.run(joint, f"{name}+sebf", RunOptions(segments=True))
        _report(f"{name}+sebf", time.perf_counter() - t, stream)
    import numpy as np

    from controller.redundancy import Instance, simulate
    from controller.redundancy.speed import constant, time_to_deliver
    t = time.perf_counter()        # the redundancy model's checkpoint kernel
    sp = constant(2)
    simulate(Instance(np.zeros(3), np.ones(3), sp), "srpt+r", record=True)
    time_to_deliver(sp.ptr, sp.time, sp.rate, sp.cum, 0, 0.0, 1.0)
    _report("redundancy", time.perf_counter() - t, stream)
    return time.perf_counter() - t0


def _report(what: str, seconds: float, stream) -> None:
    if seconds > 1.0:  # compiled now (loading from the cache takes milliseconds)
        print(f"warm-up: {what} compiled in {seconds:.1f} s", file=stream)


if __name__ == "__main__":
    seconds = warm_up()
    print(f"warm-up: numba kernels compiled or loaded from the cache in {seconds:.1f} s",
          file=sys.stderr)
