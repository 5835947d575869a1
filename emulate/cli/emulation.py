"""Command-line commands of the real emulation: ``topo``, ``clean``, ``fidelity``.

``emulate.cli`` adds :func:`commands` to ``coflowemu`` (``coflowemu run --engine mininet``
goes through :mod:`emulate.engines`). All of them need root and the system set-up of
``scripts/setup-system.sh``; without it they say so and exit with code 2 (the engine's
errors become messages in ``emulate.cli``).

Examples
--------
::

    sudo coflowemu topo --hosts 4 --cores 2 --rate 50Mbps
    sudo coflowemu fidelity --random 1 --hosts 8 --cores 2 --coflows 20 --rate 10Mbps \\
        --policy fifo --policy lp-coflow
    sudo coflowemu fidelity workload.json --policy sincronia --time-scale 2 --json
    sudo coflowemu clean
"""
from __future__ import annotations

import json
import sys

import click

from emulate.io.units import parse_bytes, parse_rate


@click.command()
@click.option("--hosts", type=int, default=4, show_default=True)
@click.option("--cores", type=int, default=2, show_default=True)
@click.option("--rate", default="50Mbps", show_default=True, help="Link rate of every core.")
@click.option("--core-rates", help="Comma-separated rate per core (overrides --rate).")
@click.option("--datapath", type=click.Choice(["kernel", "user"]),
              help="OVS datapath (default: kernel when its module exists).")
def topo(hosts, cores, rate, core_rates, datapath):
    """Open the Mininet CLI on the emulated fabric, controller running.

    Host h<i> has address 10.<c>.0.<i> on core switch cfe<c> (e.g. `h1 ping 10.2.0.2`
    goes through cfe2). Marked traffic gets strict priority: `h1 iperf3 -c 10.1.0.2 -S 0xa0` is class
    0 (highest), -S 0xbc class 7. Everything is removed when you leave the CLI.
    """
    from mininet.cli import CLI

    from emulate.mininet.engine import open_topology
    from topologies.fabric import Fabric
    rates = tuple(parse_rate(r) for r in core_rates.split(",")) if core_rates else None
    fabric = Fabric(ports=hosts, cores=cores, rate_bps=parse_rate(rate), core_rates=rates)
    with open_topology(fabric, datapath=datapath, quiet=False) as net:
        click.echo(f"fabric: {hosts} hosts x {cores} cores at "
                   f"{', '.join(f'{r / 1e6:g}' for r in fabric.rates)} Mbit/s; h<i> on "
                   f"switch cfe<c> is 10.<c>.0.<i>; `exit` removes everything")
        CLI(net)


@click.command()
@click.option("--force", is_flag=True, help="Also clean runs whose engine is still alive.")
def clean(force):
    """Remove what crashed emulation runs left (our OVS bridges, processes, run dirs)."""
    import os
    if os.geteuid() != 0:
        click.echo("coflowemu: error: clean needs root", err=True)
        sys.exit(2)
    from emulate.mininet.clean import clean as do_clean
    removed = do_clean(force=force)
    n = sum(len(v) for v in removed.values())
    for k, v in removed.items():
        if v:
            click.echo(f"removed {k}: {' '.join(map(str, v))}")
    if not n:
        click.echo("nothing to clean")


@click.command()
@click.argument("workload", required=False, type=click.Path(dir_okay=False))
@click.option("--policy", "policies", multiple=True, default=["fifo"], show_default=True,
              help="Policy (repeat for several).")
@click.option("--random", "seed", type=int, help="Use a seeded synthetic workload instead.")
@click.option("--hosts", type=int, default=8, show_default=True, help="--random: hosts.")
@click.option("--cores", type=int, default=2, show_default=True)
@click.option("--coflows", type=int, default=20, show_default=True, help="--random: coflows.")
@click.option("--rate", default=None, help="Link rate (default: the file's; 10Mbps for "
                                           "--random); auto: the largest 1-2-5 rate (--random)"
                                           " or the time scale (a file) that fits what this "
                                           "machine forwards and lets the short flows "
                                           "last 80 ms on the wire.")
@click.option("--mean-size", default="2MB", show_default=True,
              help="--random: mean bytes per coflow.")
@click.option("--time-scale", type=float, default=None,
              help="Run the emulation this many times slower than the workload (default 1).")
@click.option("--json", "as_json", is_flag=True,
              help='One JSON object: {"reports": [one per policy], "summary": pooled}.')
def fidelity(workload, policies, seed, hosts, cores, coflows, rate, mean_size, time_scale,
             as_json):
    """Run a workload in the simulator and on Mininet; print per-coflow CCT errors.

    The error of a coflow is |CCT_emulated / CCT_simulated - 1|; the report gives its
    median, p90 and max, and link utilisation in both engines.
    """
    from emulate.mininet.fidelity import measure, summarize
    if (workload is None) == (seed is None):
        raise click.UsageError("give a WORKLOAD file or --random SEED")
    auto = rate is not None and rate.strip().lower() == "auto"
    if auto and time_scale is not None:
        raise click.BadParameter("--rate auto chooses the time scale: drop --time-scale")
    if auto:
        rate = None
    if seed is not None:
        from emulate.io.traces import random_workload

        def make(r):
            return random_workload(seed, ports=hosts, cores=cores, coflows=coflows,
                                   rate_bps=r, mean_bytes=parse_bytes(mean_size))
        w = make(parse_rate(rate or "10Mbps"))
    else:
        from emulate.io.traces import read_workload
        w = read_workload(workload, cores=cores,
                          rate_bps=parse_rate(rate) if rate else None)
    rate_auto = None
    if auto:
        choice, budget = auto_choice(w, rate_free=seed is not None)
        if choice.rate_chosen:     # generated again: its arrivals follow from the rate
            w = make(choice.rates_bps[0])
        time_scale = choice.time_scale
        rate_auto = {**choice.to_json(), "budget": budget.to_json()}
    time_scale = 1.0 if time_scale is None else time_scale
    reports = []
    for name in policies:
        rep = measure(w, name, time_scale=time_scale)
        reports.append(rep)
        if not as_json:
            click.echo(rep.format())
    s = summarize(reports)
    if as_json:
        doc = {"reports": [r.to_json() for r in reports], "summary": s}
        if rate_auto is not None:
            doc["rate_auto"] = rate_auto
        click.echo(json.dumps(doc))
    elif len(reports) > 1:
        click.echo(f"all policies: {s['coflows']} coflows, median {s['median']:.2%}, "
                   f"p90 {s['p90']:.2%}, max {s['max']:.2%}")


def auto_choice(w, *, rate_free: bool = False):
    """``--rate auto``: this machine's forwarding budget (cached or measured, see
    :mod:`emulate.mininet.calibrate`) and the rate / time scale chosen for ``w``; both are
    printed on stderr. (choice, budget)"""
    from emulate.mininet.calibrate import choose, forwarding_budget, probe_fabric
    from emulate.mininet.engine import preflight
    preflight()
    budget = forwarding_budget(fabric=probe_fabric(w))
    try:
        choice = choose(w, budget.budget_bps, rate_free=rate_free)
    except ValueError as e:
        raise click.BadParameter(str(e)) from None
    click.echo(f"coflowemu: {budget.describe()}", err=True)
    click.echo(f"coflowemu: {choice.describe()}", err=True)
    return choice, budget


def commands() -> list:
    """The click commands ``emulate.cli`` adds to ``coflowemu``."""
    return [topo, clean, fidelity]
