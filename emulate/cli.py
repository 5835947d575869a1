"""The ``coflowemu`` command line.

Commands: ``run`` (one policy, one engine), ``compare`` (several policies: table + CCT
CDF), ``bound`` (an LP lower bound), ``policies``, ``generate`` (a seeded synthetic
workload), ``gantt`` (timeline of a run's segments) and ``demo`` (the main job). The
emulation commands (``topo``, ``clean``, ``fidelity``) come from ``emulate.cli_emulation``
when its dependencies are installed.

Workloads are the project's JSON format or a Facebook coflow-benchmark trace (detected by
content). Bad input exits with code 2 and a message naming file, line and field.
"""
from __future__ import annotations

import inspect
import json
import os
import sys

import click
import numpy as np

from controller.model import Workload, WorkloadError
from controller.plan import PlanError
from controller.policies import PolicyError, available, get_policy
from emulate.units import UnitError, parse_bytes, parse_duration, parse_rate

USER_ERRORS = (WorkloadError, PolicyError, UnitError, click.BadParameter)


def _fail(msg: str, code: int = 2):
    click.echo(f"coflowemu: error: {msg}", err=True)
    sys.exit(code)


class _Group(click.Group):
    """Turns user errors into a one-line message and exit code 2, never a traceback."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except USER_ERRORS as e:
            _fail(str(e))
        except PlanError as e:
            _fail(f"policy error: {e}", 1)
        except OSError as e:
            _fail(f"{e.filename or ''}: {e.strerror}" if e.filename else str(e))


@click.group(cls=_Group)
@click.version_option("0.1.0", prog_name="coflowemu")
def main():
    """coflowemu: coflow scheduling on identical parallel networks, simulated or emulated."""


# ------------------------------------------------------------------------ shared options
def workload_options(f):
    opts = [
        click.argument("workload", type=click.Path(dir_okay=False)),
        click.option("--cores", type=int, help="Number of parallel cores (overrides the file)."),
        click.option("--rate", "rate", help="Link rate, e.g. 1Gbps (overrides the file)."),
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
                  ) -> Workload:
    from emulate.traces import read_workload
    if cores is not None and cores < 1:
        raise click.BadParameter(f"--cores must be >= 1, got {cores}")
    trace = {k: v for k, v in dict(hosts=hosts, min_mb=min_mb, scale_bytes=scale_bytes,
                                   scale_time=scale_time, zero_release=zero_release,
                                   limit=limit).items() if v is not None}
    return read_workload(workload, cores=cores,
                         rate_bps=parse_rate(rate) if rate is not None else None, **trace)


def policy_options(spec: str, mode: str | None, objective: str | None) -> dict:
    """Pass ``mode``/``objective`` to policies that take them."""
    if ":" in spec:
        cls = type(get_policy(spec))
    else:
        cls = available().get(spec)
        if cls is None:
            get_policy(spec)  # raises the "unknown policy" error
    params = inspect.signature(cls.__init__).parameters
    takes_any = any(p.kind == p.VAR_KEYWORD for p in params.values()) and len(params) <= 2
    out = {}
    for key, value in (("mode", mode), ("objective", objective)):
        if value is not None and key in params and not takes_any:
            out[key] = value
    return out


def lp_bound_for(workload: Workload, *, max_flows: int = 5000):
    """A valid lower bound on sum w*C for every schedule, when cheap enough; else None.

    One core: LP (8) (coflow level, valid for any single-core schedule). Several cores:
    LP (1) (flow level, valid for every schedule that keeps a flow on one core) when the
    workload has at most ``max_flows`` flows.
    """
    from controller.lp.coflow import solve_coflow_lp, solve_flow_lp
    fab = workload.fabric
    if not fab.identical:
        return None
    if fab.cores == 1:
        return solve_coflow_lp(workload.arrays, 1, fab.rate_bps).value
    if workload.arrays.n_flows <= max_flows:
        return solve_flow_lp(workload.arrays, fab.cores, fab.rate_bps).value
    return None


# ------------------------------------------------------------------------ run
@main.command()
@workload_options
@click.option("--policy", "policy_spec", default="lp-coflow", show_default=True,
              help="Policy name (see `coflowemu policies`) or package.module:Class.")
@click.option("--engine", type=click.Choice(["sim", "mininet"]), default="sim",
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
    w = load_workload(workload, cores, rate, hosts, min_mb, scale_bytes, scale_time,
                      zero_release, limit)
    if not isinstance(w, Workload):
        return _run_joint(w, policy_spec, engine, mode, objective, as_json, segments_path,
                          lp_bound, time_scale)
    policy = get_policy(policy_spec, **policy_options(policy_spec, mode, objective))
    if engine == "sim":
        from emulate.sim import simulate
        result = simulate(w, policy, segments=bool(segments_path), progress=True)
    else:
        from emulate.cli_emulation import run_mininet
        kw = {} if time_scale is None else {"time_scale": time_scale}
        result = run_mininet(w, policy, segments=bool(segments_path), progress=True, **kw)
        if not as_json:
            from emulate.fidelity import against_simulator
            click.echo(against_simulator(
                result, get_policy(policy_spec, **policy_options(policy_spec, mode,
                                                                 objective))).format())
    bound = lp_bound_for(w) if lp_bound else None
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


def _run_joint(w, policy_spec, engine, mode, objective, as_json, segments_path, lp_bound,
               time_scale=None):
    """``run`` on a joint workload: the joint simulator (emulate.jobsim) or the emulation
    (tasks on the agents, controller.joint_runtime)."""
    from controller.compute import get_compute_policy
    from controller.jobs import compute_lower_bound
    from controller.policyspec import split_policy
    from emulate.jobsim import simulate_joint
    compute, network = split_policy(policy_spec)
    opts = policy_options(network, mode, objective) if network else {}
    if engine == "sim":
        result = simulate_joint(w, policy_spec, segments=bool(segments_path),
                                network_options=opts)
    else:
        from emulate.cli_emulation import run_mininet
        kw = {} if time_scale is None else {"time_scale": time_scale}
        result = run_mininet(w, policy_spec, segments=bool(segments_path), progress=True,
                             network_options=opts, **kw)
    lp = get_compute_policy(compute).lower_bound
    bound = None
    if lp_bound and sum(len(s.tasks) for s in w.stages) <= 1000:
        bound = compute_lower_bound(w, lp).value
    if segments_path:
        result.write_segments(segments_path)
    doc = result.to_json(bound, lp.upper() if bound is not None else None)
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
    if engine != "sim":
        sim = simulate_joint(w, policy_spec, network_options=opts)
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
@click.option("--engine", type=click.Choice(["sim", "mininet"]), default="sim",
              show_default=True)
@click.option("--mode", type=click.Choice(["offline", "online"]))
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False),
              help="Where to write the CCT CDF plot.  [default: OUT/cct-cdf.png]")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="results",
              show_default=True, help="Directory for per-run JSON records.")
@click.option("--lp-bound/--no-lp-bound", default=True, show_default=True)
@click.option("--resume", is_flag=True,
              help="Read back runs already recorded in --out instead of running them again.")
@click.option("--json", "as_json", is_flag=True)
def compare(workload, cores, rate, hosts, min_mb, scale_bytes, scale_time, zero_release,
            limit, policies, engine, mode, plot_path, out_dir, lp_bound, resume, as_json):
    """Run several policies on WORKLOAD; print a table and write a CCT CDF plot."""
    from experiments.compare import compare as do_compare
    from experiments.plots import cct_cdf
    w = load_workload(workload, cores, rate, hosts, min_mb, scale_bytes, scale_time,
                      zero_release, limit)
    if not isinstance(w, Workload):
        raise click.BadParameter("compare takes coflow-only workloads; run a joint workload "
                                 "with `coflowemu run --policy compute+network` (or "
                                 "experiments/mapreduce.py for a comparison)")
    names = [p.strip() for p in policies.split(",") if p.strip()]
    opts = {n: policy_options(n, mode, None) for n in names}
    plot_path = plot_path or os.path.join(out_dir or "results", "cct-cdf.png")
    bound = lp_bound_for(w) if lp_bound else None
    cmp = do_compare(w, names, engine=engine, lp_bound=bound, out_dir=out_dir,
                     progress=True, options_for=opts.get, resume=resume)
    if plot_path:
        cct_cdf(cmp, plot_path)
    if out_dir:
        from emulate.records import atomic_write
        atomic_write(os.path.join(out_dir, "compare.json"), json.dumps(cmp.to_json(), indent=1))
    if as_json:
        click.echo(json.dumps(cmp.to_json()))
    else:
        click.echo(cmp.table())
        if plot_path:
            click.echo(f"CCT CDF written to {plot_path}")


# ------------------------------------------------------------------------ bound
@main.command()
@workload_options
@click.option("--lp", "lp", type=click.Choice(["flow", "coflow", "single", "synchpack-1",
                                               "synchpack-2", "synchpack-3"]),
              default="coflow", show_default=True,
              help="LP (1) flow level, LP (7) coflow level, LP (8) single core; on a joint "
                   "workload the compute LPs LP1, LP2, LP3 of SynchPack-1/2/3.")
@click.option("--objective", type=click.Choice(["weighted", "jobs", "makespan"]),
              default="weighted", show_default=True)
@click.option("--json", "as_json", is_flag=True)
def bound(workload, cores, rate, hosts, min_mb, scale_bytes, scale_time, zero_release, limit,
          lp, objective, as_json):
    """Solve an LP relaxation of WORKLOAD: a lower bound on the objective."""
    from controller.lp.coflow import solve_coflow_lp, solve_flow_lp
    w = load_workload(workload, cores, rate, hosts, min_mb, scale_bytes, scale_time,
                      zero_release, limit)
    if lp.startswith("synchpack") or not isinstance(w, Workload):
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
    if as_json:
        click.echo(json.dumps(doc))
    else:
        click.echo(f"LP ({ {'flow': 1, 'coflow': 7, 'single': 8}[lp] }) {objective}, "
                   f"{m} core(s): value {res.value:.8g} ({res.rounds} rounds, "
                   f"{res.details.cuts} cuts, {res.seconds:.2f} s)")


def _compute_bound(w, lp, objective, as_json):
    """``bound --lp synchpack-k`` on a joint workload: LP1/LP2/LP3 over its stages."""
    from controller.jobs import LOWER_BOUNDS, compute_lower_bound
    if isinstance(w, Workload):
        raise click.BadParameter(f"--lp {lp} bounds joint workloads (machines, stages, "
                                 f"jobs: docs/jobs.md); this workload has coflows only")
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
    if as_json:
        click.echo(json.dumps(doc))
    else:
        click.echo(f"{res.lp} ({lp}), weighted job completion: value {res.value:.8g} "
                   f"({res.details.variables} variables, {res.details.rows} rows, "
                   f"{res.seconds:.2f} s)")


# ------------------------------------------------------------------------ misc
@main.command()
def policies():
    """List the available policies (network, then compute for joint workloads)."""
    from controller.compute import compute_policies
    for name, cls in available().items():
        click.echo(f"{name:<14}{cls.summary}")
    click.echo("\ncompute policies (joint workloads: --policy compute+network, e.g. "
               "synchpack-3+lp-coflow):")
    for name, p in compute_policies().items():
        click.echo(f"{name:<14}{p.summary}")


@main.command()
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--ports", type=int, default=8, show_default=True)
@click.option("--cores", type=int, default=2, show_default=True)
@click.option("--coflows", type=int, default=20, show_default=True)
@click.option("--rate", default="1Gbps", show_default=True)
@click.option("--mean-size", default="2MB", show_default=True,
              help="Mean bytes per coflow.")
@click.option("--chi", type=int, default=1, show_default=True,
              help="Coflows on the longest precedence path (1 = no DAG).")
@click.option("--jobs", type=int, default=0,
              help="Generate this many multi-stage jobs instead of independent coflows.")
@click.option("--load", type=float, default=0.7, show_default=True,
              help="Offered load (arrival rate x mean size / capacity); 0 = all at time 0.")
@click.option("--out", "out", type=click.Path(dir_okay=False), required=True)
def generate(seed, ports, cores, coflows, rate, mean_size, chi, jobs, load, out):
    """Write a seeded synthetic workload (JSON)."""
    from emulate.traces import multi_stage_jobs, random_workload, write_json
    rate_bps, mean = parse_rate(rate), parse_bytes(mean_size)
    if jobs:
        w = multi_stage_jobs(seed, ports=ports, cores=cores, jobs=jobs, rate_bps=rate_bps,
                             mean_bytes=mean)
    else:
        arrival = (load * ports * cores * rate_bps / 8.0 / mean) if load > 0 else 1e12
        w = random_workload(seed, ports=ports, cores=cores, coflows=coflows, rate_bps=rate_bps,
                            mean_bytes=mean, arrival_rate=arrival, chi=chi)
        if load <= 0:
            w = w.replace(coflows=tuple(type(c)(c.id, c.flows, 0.0, c.weight) for c in w.coflows))
    write_json(w, out)
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
    from experiments.plots import gantt as draw, read_segments
    try:
        segs = [s for s in read_segments(segments) if "coflow" in s]  # not task segments
    except ValueError as e:
        raise click.BadParameter(str(e)) from None
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
        from emulate.cli_emulation import commands
    except ImportError:
        return
    for cmd in commands():
        main.add_command(cmd)


_add_emulation_commands()

if __name__ == "__main__":
    main()
