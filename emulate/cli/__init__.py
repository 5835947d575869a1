"""The ``coflowemu`` command line.

Commands: ``run`` (one policy, one engine), ``compare`` (several policies: table + CCT
CDF), ``bound`` (an LP lower bound), ``policies``, ``generate`` (a seeded synthetic
workload), ``gantt`` (timeline of a run's segments) and ``demo`` (the main job). The
emulation commands (``topo``, ``clean``, ``fidelity``) come from ``emulate.cli.emulation``
when its dependencies are installed.

Workloads are the project's JSON format or a Facebook coflow-benchmark trace (detected by
content). Bad input exits with code 2 and a message naming file, line and field.
"""
from __future__ import annotations

import atexit
import gc
import json
import math
import os
import sys
from dataclasses import replace

import click

from emulate.engines import EngineError, Interrupted, engines, is_joint
from emulate.io.generators import GeneratorError, kinds
from emulate.io.units import UnitError, parse_bytes, parse_rate

# Start-up time matters (scripts call the CLI in loops): numpy, numba, scipy, networkx
# and matplotlib are imported inside the commands that use them, not here.


def _fail(msg: str, code: int = 2):
    click.echo(f"coflowemu: error: {msg}", err=True)
    sys.exit(code)


def _user_errors() -> tuple:
    """Errors that mean bad input: one line and exit code 2 (imported on the error path
    only, so that a command that never loads a workload never imports the model)."""
    from controller.jobmodel import JobModelError
    from controller.model import WorkloadError
    from controller.policies import PolicyError
    from topologies.fabric import FabricError
    return (WorkloadError, PolicyError, JobModelError, UnitError, GeneratorError,
            FabricError, click.BadParameter)


class _Group(click.Group):
    """Turns user errors into a one-line message and exit code 2, never a traceback."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except Interrupted:
            _fail("interrupted; everything was cleaned up", 143)
        except KeyboardInterrupt:    # Ctrl-C: the engines clean up in their finally
            _fail("interrupted; everything was cleaned up", 130)
        except EngineError as e:
            _fail(str(e), 2 if e.setup else 1)
        except Exception as e:
            from controller.plan import PlanError
            if isinstance(e, click.UsageError) and not (
                    isinstance(e, click.BadParameter) and e.param is None):
                # click's own parsing errors (no such option, not an integer): one line too
                hint = f" (see {e.ctx.command_path} --help)" if e.ctx else ""
                _fail(e.format_message() + hint)
            if isinstance(e, _user_errors()):
                _fail(str(e))
            if isinstance(e, PlanError):
                _fail(f"policy error: {e}", 1)
            if isinstance(e, OSError):
                _fail(f"{e.filename or ''}: {e.strerror}" if e.filename else str(e))
            if isinstance(e, MemoryError):   # e.g. under a ulimit -v: one line, not a trace
                _fail("out of memory (the workload is too large for this machine's memory "
                      "limit)", 1)
            raise


#: glibc's mallopt parameters (malloc.h)
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3


def keep_freed_memory() -> bool:
    """Let glibc's malloc keep the memory a command frees instead of handing it back to
    the kernel at once; False where the C library has no ``mallopt``.

    Plans allocate per-flow arrays (5.6 MB each on FB2010) and drop them at the next plan.
    By default glibc maps such blocks, or returns the freed top of its heap to the kernel
    (above twice its dynamic threshold), and the next plan faults every page in again:
    ``weaver`` on 2 cores took 1.1M minor page faults and 3 s of system time in a 13 s
    process, 9.5 s without them (README: Simulator speed). A command is one process that
    ends when its work does, so nothing is gained by returning memory early: blocks up to
    glibc's largest threshold (32 MiB) come from the heap, and up to 1 GiB freed at its
    top stays there. (Dask's workers are processes of their own and keep their settings.)
    """
    import ctypes
    try:
        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(M_MMAP_THRESHOLD, 32 << 20)) and bool(mallopt(M_TRIM_THRESHOLD,
                                                                        1 << 30))


def one_blas_thread() -> None:
    """Let OpenBLAS start no threads of its own in this process and the processes it
    starts (unless ``OPENBLAS_NUM_THREADS`` is set already); call before numpy loads.

    numpy and scipy each load an OpenBLAS that starts a thread per extra CPU at load time,
    and those threads spin for a while before they sleep: in a ``coflowemu run`` on the
    2-core VM they took 0.2 s of CPU during start-up (``perf``), beside the command's own
    thread, while nothing here calls BLAS on more than a few hundred numbers (the LPs are
    HiGHS's, which does not use it). The user CPU of a one-coflow ``run`` went from
    0.96-1.25 s to 0.76-0.87 s (five runs each, alternated; README: Simulator speed).
    """
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def no_collection_at_exit() -> None:
    """Let the process end without the garbage collector walking every object left.

    At exit the interpreter runs its cyclic collector over all objects still alive; after
    a simulation those are mostly numba's (its compiler's registries, the kernels'
    libraries), and the walk took 0.25-0.35 s of a 2.5 s ``coflowemu run FB2010 --policy
    lcf --json``, for nothing: the process is ending. ``gc.freeze`` as the last exit
    handler (registered first: they run last to first) takes them out of its reach (0.04
    s); the other exit handlers and the modules' teardown run as before.
    """
    atexit.register(gc.freeze)


@click.group(cls=_Group)
@click.version_option("0.1.0", prog_name="coflowemu")
def main():
    """coflowemu: coflow scheduling on identical parallel networks, simulated or emulated."""
    no_collection_at_exit()
    one_blas_thread()
    keep_freed_memory()


# ------------------------------------------------------------------------ shared options
def workload_options(f):
    opts = [
        click.argument("workload", type=click.Path(dir_okay=False)),
        click.option("--cores", type=int, help="Number of parallel cores (overrides the file)."),
        click.option("--rate", "rate", help="Link rate, e.g. 1Gbps (overrides the file); "
                                            "run --engine mininet: auto (a time scale that "
                                            "fits what this machine forwards and lets the "
                                            "short flows last 80 ms on the wire)."),
        click.option("--hosts", type=int, help="FB trace: remap its ports onto this many hosts."),
        click.option("--min-mb", type=float, help="FB trace: drop coflows below this many MB."),
        click.option("--scale-bytes", type=float, help="FB trace: multiply every size."),
        click.option("--scale-time", type=float, help="FB trace: multiply every arrival time."),
        click.option("--zero-release", is_flag=True, default=None,
                     help="FB trace: release every coflow at time 0."),
        click.option("--limit", type=int, help="FB trace: keep only the first N coflows."),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


def load_workload(workload, cores=None, rate=None, hosts=None, min_mb=None,
                  scale_bytes=None, scale_time=None, zero_release=None, limit=None
                  ):
    """The workload in ``workload`` (a coflow :class:`~controller.model.Workload` or a
    joint workload), with the command line's overrides."""
    from emulate.io.traces import read_workload
    from topologies.fabric import MAX_CORES
    if cores is not None and not 1 <= cores <= MAX_CORES:
        raise click.BadParameter(f"--cores must be in 1..{MAX_CORES}, got {cores}")
    trace = {k: v for k, v in dict(hosts=hosts, min_mb=min_mb, scale_bytes=scale_bytes,
                                   scale_time=scale_time, zero_release=zero_release,
                                   limit=limit).items() if v is not None}
    return read_workload(workload, cores=cores,
                         rate_bps=parse_rate(rate) if rate is not None else None, **trace)


def policy_options(spec: str, mode: str | None, objective: str | None) -> dict:
    """``--mode``/``--objective`` for a policy that takes them (a name may carry its own
    options, ``lp-coflow@mode=online``: given both ways with two values is an error when
    the policy is made)."""
    from controller.policies.base import get_policy
    from controller.policies.base import policy_options as options_of
    takes = options_of(type(get_policy(spec)))   # an unknown name or option fails here
    return {key: value for key, value in (("mode", mode), ("objective", objective))
            if value is not None and key in takes}


# ------------------------------------------------------------------------ run
@main.command()
@workload_options
@click.option("--policy", "policy_spec", default="lp-coflow", show_default=True,
              help="Policy name (see `coflowemu policies`) or package.module:Class.")
@click.option("--engine", type=click.Choice(list(engines())), default="sim",
              show_default=True)
@click.option("--mode", type=click.Choice(["offline", "online"]),
              help="LP policies: solve once over the whole workload (offline, default) or "
                   "re-plan at every release (online).")
@click.option("--objective", type=click.Choice(["weighted", "jobs", "makespan"]),
              help="LP policies: what the LP minimises.")
@click.option("--time-scale", type=float, default=None,
              help="Mininet: stretch the workload's times by this factor.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option("--segments", "segments_path", type=click.Path(dir_okay=False),
              help="Write every constant-rate interval of every flow as JSON lines.")
@click.option("--lp-bound/--no-lp-bound", default=True, show_default=True,
              help="Compute the LP lower bound when cheap.")
def run(workload, cores, rate, hosts, min_mb, scale_bytes, scale_time, zero_release, limit,
        policy_spec, engine, mode, objective, time_scale, as_json, segments_path, lp_bound):
    """Run WORKLOAD under one policy and report completion times.

    On a joint workload (machines, stages and jobs: docs/jobs.md) the policy is
    compute+network, e.g. synchpack-3+lp-coflow (a plain network policy uses fifo for
    compute)."""
    from emulate.engines import RunOptions, get_engine
    if time_scale is not None and not (math.isfinite(time_scale) and time_scale > 0):
        raise click.BadParameter(f"--time-scale must be a finite number > 0, got {time_scale}")
    auto = rate is not None and rate.strip().lower() == "auto"
    if auto:
        if engine != "mininet":
            raise click.BadParameter("--rate auto chooses the emulation's time scale from "
                                     "what this machine forwards: it needs --engine mininet")
        if time_scale is not None:
            raise click.BadParameter("--rate auto chooses the time scale: drop --time-scale")
        rate = None
    w = load_workload(workload, cores, rate, hosts, min_mb, scale_bytes, scale_time,
                      zero_release, limit)
    rate_auto = None
    if auto:
        from emulate.cli.emulation import auto_choice
        choice, budget = auto_choice(w)
        time_scale = choice.time_scale
        rate_auto = {**choice.to_json(), "budget": budget.to_json()}
    opts = RunOptions(segments=bool(segments_path), progress=True,
                      policy_options=_network_options(w, policy_spec, mode, objective),
                      time_scale=1.0 if time_scale is None else time_scale)
    try:
        result = get_engine(engine).run(w, policy_spec, opts)
    except EngineError as e:
        if e.partial is not None and as_json:   # what finished, marked incomplete
            click.echo(json.dumps(e.partial.to_json()))
        raise
    if rate_auto is not None:
        extra = result.extra if not is_joint(w) else result.extra.setdefault("emulation", {})
        extra["rate_auto"] = rate_auto
    if is_joint(w):
        return _report_joint(w, result, policy_spec, engine, opts, as_json, segments_path,
                             lp_bound)
    if engine != "sim" and not as_json:
        from emulate.mininet.fidelity import against_simulator
        click.echo(against_simulator(result, policy_spec, opts.policy_options).format())
    from controller.lp.bound import lp_bound_for
    bound = lp_bound_for(result.workload) if lp_bound else None  # the instance simulated
    if segments_path:
        result.write_segments(segments_path)
    doc = result.to_json(bound)
    if as_json:
        click.echo(json.dumps(doc))
        return
    cct = result.cct
    click.echo(f"{doc['policy']} on {w.name} ({engine}): {len(cct)} coflows, "
               f"{w.fabric.cores} core(s)")
    click.echo(f"  mean CCT {cct.mean():.6g} s, max CCT {cct.max():.6g} s, "
               f"makespan {doc['makespan']:.6g} s")
    click.echo(f"  total weighted completion {doc['total_weighted_completion']:.6g}"
               + (f", LP lower bound {bound:.6g}" if bound is not None else ""))
    click.echo(f"  wall time {result.wall_seconds:.2f} s")


def _network_options(w, policy_spec: str, mode, objective) -> dict:
    """``mode``/``objective`` for the network half of ``policy_spec`` (``compute+network``
    on a joint workload; none for a compute policy alone)."""
    if not is_joint(w):
        return policy_options(policy_spec, mode, objective)
    from controller.policyspec import split_policy
    network = split_policy(policy_spec).network
    return policy_options(network, mode, objective) if network else {}


def _report_joint(w, result, policy_spec, engine, opts, as_json, segments_path, lp_bound):
    """``run``'s output on a joint workload: jobs, tasks, the compute LP bound; on the
    emulation also the per-job error against the joint simulator."""
    import numpy as np

    from controller.compute import get_compute_policy
    from controller.jobmodel import DEFAULT_MODEL
    from controller.jobs import compute_lower_bound
    from controller.policyspec import split_policy
    from emulate.engines import get_engine
    compute, _ = split_policy(policy_spec)
    # the compute LPs bound the packing model's schedules only
    lp = get_compute_policy(compute).lower_bound if w.model == DEFAULT_MODEL else None
    bound = None
    if lp and lp_bound and sum(len(s.tasks) for s in w.stages) <= 1000:
        bound = compute_lower_bound(w, lp).value
    if segments_path:
        result.write_segments(segments_path)
    doc = result.to_json(bound, lp.upper() if bound is not None else None)
    if w.model == "moldable":      # the two criteria of the bi-criteria paper
        doc["sum_weighted_completion"] = doc["total_weighted_job_completion"]
        if lp_bound:
            b = _moldable_bounds(w)
            doc["lower_bounds"] = {"minsum": b["minsum"], "makespan": b["makespan"]}
    if as_json:
        click.echo(json.dumps(doc))
        return
    jct = result.job_completion - result.job_release
    click.echo(f"{doc['policy']} on {w.name} (joint {engine}): {len(w.jobs)} jobs, "
               f"{len(w.stages)} stages, {len(doc['tasks'])} tasks, {len(w.coflows)} coflows, "
               f"{len(w.machines)} machines, {w.fabric.cores} core(s)")
    click.echo(f"  mean job time {jct.mean():.6g} s, max {jct.max():.6g} s, "
               f"makespan {doc['makespan']:.6g} s")
    click.echo(f"  total weighted job completion {doc['total_weighted_job_completion']:.6g}"
               + (f", {lp.upper()} lower bound {bound:.6g}" if bound is not None else ""))
    if "mean_flowtime" in doc:        # the redundancy model's objective
        click.echo(f"  mean flowtime {doc['mean_flowtime']:.6g}, total flowtime "
                   f"{doc['total_flowtime']:.6g} ({doc['checkpoints']} checkpoints)")
    if engine != "sim":
        sim = get_engine("sim").run(w, policy_spec, replace(opts, segments=False,
                                                            progress=False))
        sim_jct = sim.job_completion - sim.job_release
        err = jct / sim_jct - 1
        click.echo(f"  against the joint simulator: per-job time error median "
                   f"{np.median(np.abs(err)):.1%}, max {np.abs(err).max():.1%}; mean job "
                   f"time emulation/simulator {jct.mean() / sim_jct.mean():.3f}")
    click.echo(f"  wall time {result.wall_seconds:.2f} s")


# ------------------------------------------------------------------------ compare
@main.command()
@workload_options
@click.option("--policies", default="fifo,scf,sebf,sincronia,aalo,fair,lp-coflow,lp-flow",
              show_default=True, help="Comma-separated policy names.")
@click.option("--engine", type=click.Choice(list(engines())), default="sim",
              show_default=True)
@click.option("--mode", type=click.Choice(["offline", "online"]))
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False),
              help="Where to write the CCT CDF plot.  [default: OUT/cct-cdf.png]")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="results",
              show_default=True,
              help="The results store every run is written to (coflowemu results OUT).")
@click.option("--lp-bound/--no-lp-bound", default=True, show_default=True)
@click.option("--resume", is_flag=True,
              help="Read back runs already recorded in --out instead of running them again.")
@click.option("--json", "as_json", is_flag=True)
def compare(workload, cores, rate, hosts, min_mb, scale_bytes, scale_time, zero_release,
            limit, policies, engine, mode, plot_path, out_dir, lp_bound, resume, as_json):
    """Run several policies on WORKLOAD; print a table and write a CCT CDF plot.

    The runs are a sweep of one workload (docs/sweeps.md), run in this process: each
    run's rows are written to the results store OUT as it finishes."""
    from experiments.compare import ComparisonError, comparison_spec
    from experiments.compare import compare as run_compare
    from experiments.plots import cct_cdf
    from experiments.sweep.runner import SweepError
    w = load_workload(workload, cores, rate, hosts, min_mb, scale_bytes, scale_time,
                      zero_release, limit)            # bad input: exit 2 before any run
    if is_joint(w):
        raise click.BadParameter("compare takes coflow-only workloads; run a joint workload "
                                 "with `coflowemu run --policy compute+network` (or "
                                 "experiments/mapreduce.py for a comparison)")
    names = [p.strip() for p in policies.split(",") if p.strip()]
    trace = {k: v for k, v in dict(hosts=hosts, min_mb=min_mb, scale_bytes=scale_bytes,
                                   scale_time=scale_time, zero_release=zero_release,
                                   limit=limit).items() if v is not None}
    spec = comparison_spec(
        {"file": os.path.abspath(workload), "options": trace}, names,
        options={n: policy_options(n, mode, None) for n in names},
        fabric={k: v for k, v in (("cores", cores), ("rate", rate)) if v is not None},
        engines=(engine,), bound=lp_bound)
    try:
        cmp = run_compare(spec, out_dir, rerun=not resume)[engine]
    except SweepError as e:
        _fail(str(e), 2 if e.setup else 1)
    except ComparisonError as e:
        _fail(f"runs failed (recorded in {out_dir}): " + "; ".join(str(e).splitlines()), 1)
    plot_path = plot_path or os.path.join(out_dir, "cct-cdf.png")
    cct_cdf(cmp, plot_path)
    if as_json:
        click.echo(json.dumps(cmp.to_json()))
    else:
        click.echo(cmp.table())
        click.echo(f"CCT CDF written to {plot_path}")


# ------------------------------------------------------------------------ bound
@main.command()
@workload_options
@click.option("--lp", "lp", type=click.Choice(["flow", "coflow", "single", "synchpack-1",
                                               "synchpack-2", "synchpack-3", "moldable",
                                               "cls", "coge", "task-level"]),
              default="coflow", show_default=True,
              help="LP (1) flow level, LP (7) coflow level, LP (8) single core; on a joint "
                   "workload the compute LPs LP1, LP2, LP3 of SynchPack-1/2/3; on a "
                   "moldable workload its minsum LP and makespan bound; on an msjo "
                   "workload CLS-LPP, COGE (CND-LPP) or the task-level LP.")
@click.option("--tolerance", type=float, default=0.3, show_default=True,
              help="--lp coge: the constraint-generation tolerance e (0: no violated PGC "
                   "left).")
@click.option("--objective", type=click.Choice(["weighted", "jobs", "makespan"]),
              default="weighted", show_default=True)
@click.option("--json", "as_json", is_flag=True)
def bound(workload, cores, rate, hosts, min_mb, scale_bytes, scale_time, zero_release, limit,
          lp, tolerance, objective, as_json):
    """Solve an LP relaxation of WORKLOAD: a lower bound on the objective."""
    from controller.lp.coflow import solve_coflow_lp, solve_flow_lp
    w = load_workload(workload, cores, rate, hosts, min_mb, scale_bytes, scale_time,
                      zero_release, limit)
    model = w.model if is_joint(w) else None
    if lp == "coflow" and model in _MODEL_LP:     # the default --lp: the model's own bound
        lp = _MODEL_LP[model]
    if lp == "moldable":
        doc = _finite_bound(_moldable_bounds(w), workload)
        click.echo(json.dumps(doc) if as_json else
                   f"moldable: minsum LP {doc['minsum']:.8g}, makespan bound "
                   f"{doc['makespan']:.8g} ({doc['seconds']:.2f} s)")
        return
    if lp in ("cls", "coge", "task-level"):
        doc = _finite_bound(_msjo_bound(w, lp, tolerance), workload)
        click.echo(json.dumps(doc) if as_json else
                   f"{doc['name']} ({lp}): value {doc['value']:.8g} on "
                   f"{'sum_u w_u C_u' if lp == 'task-level' else 'sum_j w_j C_j'} "
                   f"({doc['rounds']} rounds, {doc['seconds']:.2f} s)")
        return
    if lp.startswith("synchpack") or is_joint(w):
        return _compute_bound(w, lp, objective, as_json)
    if not w.fabric.identical:
        raise click.BadParameter("the LPs assume identical cores; this fabric has core_rates "
                                 f"{w.fabric.core_rates}")
    m = 1 if lp == "single" else w.fabric.cores
    solve = solve_flow_lp if lp == "flow" else solve_coflow_lp
    res = solve(w.arrays, m, w.fabric.rate_bps, objective=objective)
    doc = {"lp": lp, "cores": m, "objective": objective, "value": res.value,
           "rounds": res.rounds, "cuts": res.details.cuts, "seconds": res.seconds,
           "status": res.status}
    _finite_bound(doc, workload)
    click.echo(json.dumps(doc) if as_json else
               f"LP ({ {'flow': 1, 'coflow': 7, 'single': 8}[lp] }) {objective}, "
               f"{m} core(s): value {res.value:.8g} ({res.rounds} rounds, "
               f"{res.details.cuts} cuts, {res.seconds:.2f} s)")


def _finite_bound(doc: dict, workload: str) -> dict:
    """``doc`` if every number in it is finite; else exit 1 with one line (a bound is never
    printed as NaN or Infinity, which are not JSON either)."""
    bad = {k: v for k, v in doc.items() if isinstance(v, float) and not math.isfinite(v)}
    if bad:
        _fail(f"{workload}: the LP gave {bad} (status {doc.get('status')!r}): the "
              f"workload's numbers are beyond what the solver can represent", 1)
    return doc


#: the lower bound ``bound`` computes for a workload of these job models without ``--lp``
_MODEL_LP = {"moldable": "moldable", "msjo": "cls"}


def _moldable_bounds(w) -> dict:
    """The two lower bounds of a moldable workload (algorithms.md 5.3): the minsum interval
    LP (on ``sum_i w_i C_i``) and the makespan bound (on ``C_max``)."""
    import time

    from controller.jobmodels.moldable import moldable_instance
    from controller.moldable.bounds import makespan_bound, minsum_lp
    if not (is_joint(w) and w.model == "moldable"):
        raise click.BadParameter("--lp moldable bounds moldable workloads (\"model\": "
                                 "\"moldable\"; coflowemu generate --kind moldable)")
    t = time.perf_counter()
    inst = moldable_instance(w)
    minsum, makespan = minsum_lp(inst), makespan_bound(inst)
    return {"lp": "moldable", "minsum": minsum.value, "makespan": makespan.value,
            "status": minsum.status, "seconds": time.perf_counter() - t}


def _msjo_bound(w, lp: str, tolerance: float) -> dict:
    """An LP lower bound of an msjo workload (algorithms.md 3): CLS-LPP and COGE's CND-LPP
    on ``sum_j w_j C_j``, the task-level LP on ``sum_u w_u C_u``."""
    from controller.jobmodels.msjo import msjo_cluster
    from controller.msjo.lp import solve_cls_lp, solve_coge, solve_task_lp
    if not (is_joint(w) and w.model == "msjo"):
        raise click.BadParameter(f"--lp {lp} bounds msjo workloads (\"model\": \"msjo\"; "
                                 f"coflowemu generate --kind msjo)")
    if not (math.isfinite(tolerance) and tolerance >= 0):
        raise click.BadParameter(f"--tolerance must be a finite number >= 0, got {tolerance}")
    a = msjo_cluster(w)[0].arrays
    res = {"cls": solve_cls_lp, "task-level": solve_task_lp}[lp](a) if lp != "coge" \
        else solve_coge(a, threshold=tolerance)
    return {"lp": lp, "name": res.lp, "value": res.value, "rounds": res.rounds,
            "seconds": res.seconds, "status": res.status,
            "objective": "tasks" if lp == "task-level" else "jobs"}


def _compute_bound(w, lp, objective, as_json):
    """``bound --lp synchpack-k`` on a joint workload: LP1/LP2/LP3 over its stages."""
    from controller.jobs import LOWER_BOUNDS, compute_lower_bound
    if not is_joint(w):
        raise click.BadParameter(f"--lp {lp} bounds joint workloads (machines, stages, "
                                 f"jobs: docs/jobs.md); this workload has coflows only")
    if w.model in _MODEL_LP:
        raise click.BadParameter(f"--lp {lp} bounds packing workloads; this is a {w.model} "
                                 f"workload: --lp {_MODEL_LP[w.model]}")
    if lp not in LOWER_BOUNDS:
        raise click.BadParameter(f"--lp {lp} bounds coflow-only workloads; for a joint "
                                 f"workload use --lp {' or '.join(LOWER_BOUNDS)}")
    if objective == "makespan":
        raise click.BadParameter("the compute LPs bound the weighted job completion "
                                 "(--objective weighted or jobs), not the makespan")
    res = compute_lower_bound(w, lp)
    doc = {"lp": lp, "name": res.lp, "objective": "jobs", "value": res.value,
           "seconds": res.seconds, "status": res.status, "variables": res.details.variables,
           "rows": res.details.rows}
    _finite_bound(doc, w.name)
    click.echo(json.dumps(doc) if as_json else
               f"{res.lp} ({lp}), weighted job completion: value {res.value:.8g} "
               f"({res.details.variables} variables, {res.details.rows} rows, "
               f"{res.seconds:.2f} s)")


# ------------------------------------------------------------------------ misc
@main.command()
def policies():
    """List the available policies (network, then compute for joint workloads)."""
    from controller.compute import compute_policies
    from controller.policies.base import catalogue
    for name, (_, summary) in catalogue().items():
        click.echo(f"{name:<14}{summary}")
    click.echo("\ncompute policies (joint workloads: --policy compute+network, e.g. "
               "synchpack-3+lp-coflow):")
    for name, p in compute_policies().items():
        click.echo(f"{name:<14}{p.summary}")
    from controller.jobmodel import DEFAULT_MODEL, job_models
    for model, cls in job_models().items():
        if model != DEFAULT_MODEL and not model.startswith("test-"):
            click.echo(f"\n{model} job model (\"model\": \"{model}\"; {cls.summary}):")
            click.echo("  ".join(cls.policies()))


@main.command()
@click.option("--kind", type=click.Choice(list(kinds())), default=None,
              help="What to generate (default: coflows; jobs with --jobs).")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--ports", type=int, default=8, show_default=True,
              help="Hosts (the machines of a joint workload).")
@click.option("--cores", type=int, default=2, show_default=True)
@click.option("--rate", default="1Gbps", show_default=True)
@click.option("--coflows", type=int, help="coflows: number of coflows [20].")
@click.option("--mean-size", help="coflows, jobs: mean bytes per coflow [2MB].")
@click.option("--chi", type=int, help="coflows: coflows on the longest precedence path "
                                      "(1 = no DAG) [1].")
@click.option("--jobs", type=int, help="jobs: number of multi-stage jobs (implies "
                                       "--kind jobs).")
@click.option("--load", type=float, help="coflows: offered load (arrival rate x mean size "
                                         "/ capacity); 0 = all at time 0 [0.7].")
@click.option("--param", "-p", "params", multiple=True, metavar="NAME=VALUE",
              help="A parameter of the kind (repeat; see --list-params).")
@click.option("--list-params", is_flag=True, help="Print the kind's parameters and exit.")
@click.option("--out", "out", type=click.Path(dir_okay=False))
def generate(kind, seed, ports, cores, rate, coflows, mean_size, chi, jobs, load, params,
             list_params, out):
    """Write a seeded synthetic workload (JSON) of one kind.

    Kinds: coflows (independent coflows, releases, DAG), jobs (multi-stage coflow jobs),
    mapreduce (joint: map -> shuffle -> reduce), google (joint, compute only),
    moldable (joint, moldable jobs: --policy demt), msjo (joint, MapReduce server jobs:
    --policy mars), redundancy (joint, jobs with work on machines of varying speed:
    --policy srpt+r)."""
    from emulate.io.generators import generate as make, params_of
    kind = kind or ("jobs" if jobs else "coflows")
    if list_params:
        for name, default in params_of(kind).items():
            click.echo(f"{name}={default!r}")
        return
    if out is None:
        raise click.UsageError("Missing option '--out'.")
    given = dict(p.split("=", 1) if "=" in p else (p, None) for p in params)
    bad = [k for k, v in given.items() if v is None]
    if bad:
        raise click.BadParameter(f"--param {bad[0]}: write NAME=VALUE")
    for key, value in (("coflows", coflows), ("chi", chi), ("load", load), ("jobs", jobs),
                       ("mean_bytes", parse_bytes(mean_size) if mean_size else None)):
        if value is not None:
            given[key] = value
    w = make(kind, seed=seed, ports=ports, cores=cores, rate_bps=parse_rate(rate),
             params=given)
    from emulate.io.traces import write_json
    write_json(w, out)
    if is_joint(w):
        click.echo(f"wrote {out}: {len(w.jobs)} jobs, {len(w.stages)} stages, "
                   f"{sum(len(s.tasks) for s in w.stages)} tasks, {len(w.coflows)} coflows, "
                   f"{len(w.machines)} machines")
    else:
        click.echo(f"wrote {out}: {len(w.coflows)} coflows, {w.arrays.n_flows} flows, "
                   f"{w.fabric.ports} ports, {w.fabric.cores} cores")


@main.command()
@click.argument("segments", type=click.Path(exists=True, dir_okay=False))
@click.option("--out", "out", type=click.Path(dir_okay=False), default="results/gantt.png",
              show_default=True)
@click.option("--by", type=click.Choice(["src", "dst"]), default="src", show_default=True,
              help="One row per input (src) or output (dst) port of each core.")
def gantt(segments, out, by):
    """Draw a per-core, per-port timeline of a run's SEGMENTS file."""
    from emulate.io.segments import read_segments
    from experiments.plots import gantt as draw
    segs = read_segments(segments, kind="flow")             # not task segments
    if not segs:
        raise click.BadParameter(f"{segments}: no flow segments to draw (write them with "
                                 f"`coflowemu run W --segments {segments}`)")
    draw(segs, out, by=by)
    click.echo(f"wrote {out} ({len(segs)} segments)")


@main.command()
@click.option("--seed", type=int, default=7, show_default=True)
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="results/demo",
              show_default=True)
def demo(seed, out_dir):
    """The main job: LP-based policies vs baselines on a seeded 2-core workload."""
    from experiments.demo import run_demo
    click.echo(run_demo(seed=seed, out_dir=out_dir))


@main.command("demo-emulation")
@click.option("--seed", type=int, default=7, show_default=True)
@click.option("--out", "out_dir", type=click.Path(file_okay=False),
              default="results/demo-emulation", show_default=True)
def demo_emulation(seed, out_dir):
    """The main job on real switches (root): the demo's comparison on Mininet."""
    if os.geteuid() != 0:
        _fail("demo-emulation builds a Mininet network: run it as root (make demo-emulation)")
    from experiments.demo import run_demo_emulation
    click.echo(run_demo_emulation(seed=seed, out_dir=out_dir))


def _add_emulation_commands():
    try:
        from emulate.cli.emulation import commands
    except ImportError:
        return
    for cmd in commands():
        main.add_command(cmd)


_add_emulation_commands()

from emulate.cli.sweep import commands as _sweep_commands  # noqa: E402 - sweep, results

for _cmd in _sweep_commands():
    main.add_command(_cmd)

if __name__ == "__main__":
    main()
