"""--rate auto: the choice of rate and time scale from a forwarding budget, and the
per-machine cache of the calibration figure (no root, no network; the measurement itself
is exercised by tests/test_emulation_policies.py as root)."""
from __future__ import annotations

import json
import time

import pytest

from controller.model import Coflow, Flow, Workload
from emulate.mininet.calibrate import (FLOW_TIME_S, Budget, choose, machine, nice_floor,
                                       read_cache, short_flow_bits, with_rates, write_cache)
from emulate.mininet.engine import WIRE_OVERHEAD, offered_load_bps
from topologies.fabric import Fabric


def spread(hosts, cores, rate, core_rates=None, used=None, size=1e8):
    """One coflow with a flow of ``size`` bytes out of each of ``used`` (default all) hosts
    (100 MB: long enough at every rate here that only the budget limits the choice)."""
    used = hosts if used is None else used
    return Workload(Fabric(ports=hosts, cores=cores, rate_bps=rate, core_rates=core_rates),
                    [Coflow("c", [Flow(i, (i + 1) % used, size) for i in range(used)])])


@pytest.mark.parametrize("x, want", [(1.0, 1.0), (1.99, 1.0), (2.0, 2.0), (4.9, 2.0),
                                     (5.0, 5.0), (9.99, 5.0), (10.0, 10.0), (73e6, 50e6),
                                     (2.5e6, 2e6), (0.3, 0.2)])
def test_nice_floor_is_the_largest_1_2_5_value_not_above(x, want):
    assert nice_floor(x) == pytest.approx(want)


@pytest.mark.parametrize("hosts, cores, rate, budget", [
    (4, 2, 20e6, 200e6), (16, 4, 10e6, 200e6), (16, 4, 1e9, 150e6), (8, 2, 10e6, 200e6),
    (32, 4, 100e6, 60e6), (4, 1, 1e6, 200e6)])
def test_a_kept_rate_gets_the_smallest_power_of_two_time_scale_inside_the_budget(
        hosts, cores, rate, budget):
    w = spread(hosts, cores, rate)
    c = choose(w, budget)
    assert not c.rate_chosen and c.rates_bps == w.fabric.rates
    s = c.time_scale
    assert s >= 1 and s == 2 ** round(__import__("math").log2(s))
    # inside the budget, and the next faster power of two would not be
    assert c.offered_bps == pytest.approx(offered_load_bps(w, s)) and c.offered_bps <= budget
    if s > 1:
        assert offered_load_bps(w, s / 2) > budget
    # worst case by hand: every host's uplinks busy, frames not payload
    assert c.offered_bps == pytest.approx(hosts * cores * rate / s * WIRE_OVERHEAD)
    assert c.wire_bps == tuple(r / s for r in w.fabric.rates)


def test_16x4_at_10_mbits_needs_a_time_scale_of_4_on_a_200_mbit_budget():
    # 16 x 4 x 10 Mbit/s x 1514/1448 = 669 Mbit/s: /2 = 335, /4 = 167 <= 200
    assert choose(spread(16, 4, 10e6), 200e6).time_scale == 4


def test_only_the_hosts_a_workload_uses_count():
    assert choose(spread(16, 4, 10e6, used=4), 200e6).time_scale == 1


@pytest.mark.parametrize("hosts, cores, budget, want", [
    (4, 2, 200e6, 20e6),     # 200 / (8 x 1.046) = 23.9 -> 20
    (16, 4, 200e6, 2e6),     # 200 / (64 x 1.046) = 2.99 -> 2
    (8, 2, 200e6, 10e6),     # 11.95 -> 10
    (4, 2, 1e9, 100e6)])     # 119.5 -> 100
def test_a_free_rate_is_the_largest_1_2_5_rate_inside_the_budget_at_time_scale_1(
        hosts, cores, budget, want):
    w = spread(hosts, cores, 1e9)
    c = choose(w, budget, rate_free=True)
    assert c.rate_chosen and c.time_scale == 1.0
    assert c.rates_bps == (want,) * cores
    w2 = with_rates(w, c.rates_bps)
    assert w2.fabric.rates == c.rates_bps
    assert offered_load_bps(w2) == pytest.approx(c.offered_bps) and c.offered_bps <= budget
    # the next 1-2-5 value up would not fit
    up = {1: 2, 2: 5, 5: 10}[int(str(int(want / 10 ** (len(str(int(want))) - 1))))]
    bigger = want / int(str(int(want))[0]) * up
    assert offered_load_bps(with_rates(w, (bigger,) * cores)) > budget


def test_heterogeneous_cores_keep_their_ratio_when_the_rate_is_chosen():
    w = spread(4, 2, 30e6, core_rates=(30e6, 10e6))
    c = choose(w, 200e6, rate_free=True)
    assert c.rates_bps[0] == nice_floor(c.rates_bps[0])
    assert c.rates_bps[0] / c.rates_bps[1] == pytest.approx(3.0)
    assert c.offered_bps <= 200e6


def test_a_workload_far_beyond_the_budget_is_refused_with_what_to_do():
    with pytest.raises(ValueError, match="--rate"):
        choose(spread(64, 8, 100e9), 1e6)


# ------------------------------------------------------------- the control loop's limit
def sized(sizes, hosts=4, cores=2, rate=20e6):
    """One coflow per flow size, each from host i to host i + 1 (mod hosts)."""
    return Workload(Fabric(ports=hosts, cores=cores, rate_bps=rate),
                    [Coflow(f"c{k}", [Flow(k % hosts, (k + 1) % hosts, b)])
                     for k, b in enumerate(sizes)])


def test_short_flows_lower_a_free_rate_below_what_the_budget_allows():
    # 10 kB flows: 80 ms on the wire at 1 Mbit/s; the budget alone would give 20 Mbit/s
    w = sized([10e3] * 20)
    c = choose(w, 200e6, rate_free=True)
    assert c.rates_bps == (1e6, 1e6) and c.time_scale == 1
    assert c.short_flow_bits == 80e3 and c.short_flow_s == pytest.approx(FLOW_TIME_S)
    # the budget still binds when the flows are long
    assert choose(sized([1e8] * 20), 200e6, rate_free=True).rates_bps == (20e6, 20e6)
    doc = c.to_json()
    assert doc["short_flow_bytes"] == 10e3 and doc["flow_time_s"] == FLOW_TIME_S
    assert "10 kB) last 80 ms on the wire" in c.describe()


def test_short_flows_raise_a_kept_rates_time_scale_to_the_next_power_of_two():
    # 10 kB at 20 Mbit/s: 4 ms; 80 ms needs a slow-down of 20 -> 32
    c = choose(sized([10e3] * 20), 200e6)
    assert c.rates_bps == (20e6, 20e6) and c.time_scale == 32
    assert c.short_flow_s >= FLOW_TIME_S > c.short_flow_bits * 16 / 20e6
    assert c.offered_bps == pytest.approx(offered_load_bps(sized([10e3] * 20), 32))


def test_the_tenth_percentile_decides_not_the_few_smallest_flows():
    few_tiny = [100.0] * 5 + [1e8] * 95         # 5 % of the flows: not counted
    assert short_flow_bits(sized(few_tiny)) == 8e8
    assert choose(sized(few_tiny), 200e6).time_scale == 1
    many_tiny = [100.0] * 20 + [1e8] * 80       # 20 %: they decide
    assert short_flow_bits(sized(many_tiny)) == 800.0
    # empty flows do not count; a workload of nothing but empty flows has no short flow
    assert short_flow_bits(sized([0.0] * 50 + [1e8] * 50)) == 8e8
    assert short_flow_bits(sized([0.0] * 3)) is None
    assert choose(sized([0.0] * 3), 200e6).short_flow_s is None


def test_the_flows_time_scale_stops_at_the_largest_allowed_without_refusing():
    c = choose(sized([100.0] * 20, rate=1e9), 200e6, max_time_scale=64)
    assert c.time_scale == 64 and c.short_flow_s < FLOW_TIME_S
    assert "(wanted: 80)" in c.describe()


def budget(**kw):
    d = dict(forwarded_bps=360e6, budget_bps=180e6, datapath="user", machine=machine(),
             measured_at=time.time(), load=0.5)
    d.update(kw)
    return Budget(**d)


def test_the_cached_figure_is_used_for_this_machine_and_datapath_only_while_fresh(tmp_path):
    path = str(tmp_path / "cache" / "forwarding.json")
    b = budget()
    write_cache(b, path)
    got = read_cache(path, datapath="user")
    assert got is not None and got.source == "cached" and got.budget_bps == 180e6
    assert read_cache(path, datapath="kernel") is None                 # other datapath
    assert read_cache(path, datapath="user", now=b.measured_at + 2 * 86400) is None  # stale
    write_cache(budget(datapath="kernel", forwarded_bps=800e6, budget_bps=400e6), path)     # both kept
    assert read_cache(path, datapath="user").budget_bps == 180e6
    assert read_cache(path, datapath="kernel").budget_bps == 400e6
    # another machine's figure (a copied cache file) is not used
    doc = json.load(open(path))
    doc["user"]["machine"]["host"] = "elsewhere"
    json.dump(doc, open(path, "w"))
    assert read_cache(path, datapath="user") is None
    # a damaged file is a cache miss, never an error
    open(path, "w").write("{not json")
    assert read_cache(path, datapath="user") is None
    assert list((tmp_path / "cache").iterdir()) == [tmp_path / "cache" / "forwarding.json"]


def test_the_choice_and_the_budget_say_what_they_chose():
    c = choose(spread(16, 4, 10e6), 200e6)
    doc = c.to_json()
    assert doc["time_scale"] == 4 and doc["wire_bps"] == [2.5e6] * 4
    assert "time scale 4" in c.describe() and "2.5 Mbit/s" in c.describe()
    j = budget().to_json()
    assert j["measured_at"].endswith("Z") and j["budget_bps"] == 180e6
    assert "180 Mbit/s" in budget().describe()


@pytest.mark.parametrize("extra, says", [
    ([], "needs --engine mininet"),
    (["--engine", "mininet", "--time-scale", "2"], "drop --time-scale")])
def test_rate_auto_misuse_is_one_error_line_and_exit_2(tmp_path, extra, says):
    import os
    import subprocess
    import sys
    from emulate.io.traces import write_json
    path = tmp_path / "w.json"
    write_json(spread(4, 2, 20e6), str(path))
    r = subprocess.run([os.path.join(os.path.dirname(sys.executable), "coflowemu"), "run",
                        str(path), "--rate", "auto", *extra], capture_output=True, text=True)
    assert r.returncode == 2 and r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], r.stderr


# ------------------------------------------------------------------ the kernel datapath
def test_the_kernel_datapath_is_chosen_where_its_module_is_or_loads(monkeypatch):
    """topologies.mininet_topo.choose_datapath, as scripts/setup-system.sh decides: the
    kernel datapath when the openvswitch module is loaded or modprobe loads it, the
    userspace one otherwise (this VM: no module, 'user')."""
    import subprocess

    import topologies.mininet_topo as topo
    loaded = {"now": False}
    monkeypatch.setattr(topo.os.path, "isdir",
                        lambda p: loaded["now"] and p == "/sys/module/openvswitch")
    monkeypatch.setattr(topo.shutil, "which", lambda name: "/sbin/modprobe")

    def modprobe(cmd, **kw):
        assert cmd == ["modprobe", "openvswitch"]
        loaded["now"] = loads
        return subprocess.CompletedProcess(cmd, 0 if loads else 1)
    monkeypatch.setattr(topo.subprocess, "run", modprobe)
    loads = False
    assert topo.choose_datapath() == "user"
    loads = True
    assert topo.choose_datapath() == "kernel"            # loaded by modprobe
    assert topo.choose_datapath() == "kernel"            # already loaded


def test_rate_auto_takes_the_figure_of_the_datapath_the_run_uses(monkeypatch, tmp_path):
    """The calibration cache has one figure per datapath; ``forwarding_budget`` looks up
    (or measures, with that datapath) the one ``choose_datapath`` gives, which is the one
    the engine builds its switches with."""
    import emulate.mininet.calibrate as cal
    import topologies.mininet_topo as topo
    path = str(tmp_path / "forwarding.json")
    write_cache(budget(datapath="user", forwarded_bps=412e6, budget_bps=206e6), path)
    measured = []

    def measure(seconds, *, datapath, hosts, cores):
        assert (hosts, cores) == (4, 2)
        measured.append(datapath)
        return budget(datapath=datapath, forwarded_bps=4e9, budget_bps=2e9)
    monkeypatch.setattr(cal, "measure_forwarding", measure)
    monkeypatch.setattr(topo, "choose_datapath", lambda: "user")
    b = cal.forwarding_budget(path=path)
    assert (b.datapath, b.budget_bps, b.source, measured) == ("user", 206e6, "cached", [])
    monkeypatch.setattr(topo, "choose_datapath", lambda: "kernel")
    b = cal.forwarding_budget(path=path)                 # no kernel figure yet: measured
    assert (b.datapath, b.budget_bps, measured) == ("kernel", 2e9, ["kernel"])
    b = cal.forwarding_budget(path=path)                 # and kept beside the user one
    assert (b.source, measured) == ("cached", ["kernel"])
    assert read_cache(path, datapath="user").budget_bps == 206e6
    # the choice follows the figure: 16 x 4 at 10 Mbit/s needs no time scale at 2 Gbit/s
    assert choose(spread(16, 4, 10e6), b.budget_bps).time_scale == 1
    assert choose(spread(16, 4, 10e6), 206e6).time_scale == 4


def test_the_figure_is_kept_per_fabric_size_and_a_run_probes_its_own(monkeypatch, tmp_path):
    """The userspace datapath's one thread polls every port: the budget of a 4 x 2 probe
    would overbook a larger fabric, so a run's figure comes from a probe on its own size
    (at least 4 x 2) and is cached under that size."""
    import emulate.mininet.calibrate as cal
    from emulate.mininet.calibrate import cache_key, probe_fabric
    assert probe_fabric(spread(32, 4, 1e6)) == (32, 4)
    assert probe_fabric(spread(2, 1, 1e6)) == (4, 2)          # the smallest probe
    assert cache_key("user") == "user" and cache_key("user", (32, 4)) == "user 32x4"
    path = str(tmp_path / "forwarding.json")
    write_cache(budget(forwarded_bps=387e6, budget_bps=193.5e6), path)
    probed = []

    def measure(seconds, *, datapath, hosts, cores):
        probed.append((hosts, cores))
        return budget(forwarded_bps=164e6, budget_bps=82e6, fabric=(hosts, cores))
    monkeypatch.setattr(cal, "measure_forwarding", measure)
    b = cal.forwarding_budget(datapath="user", fabric=(32, 4), path=path)
    assert (b.budget_bps, b.fabric, probed) == (82e6, (32, 4), [(32, 4)])
    b = cal.forwarding_budget(datapath="user", fabric=(32, 4), path=path)
    assert (b.source, probed) == ("cached", [(32, 4)])         # kept under its size
    assert cal.forwarding_budget(datapath="user", path=path).budget_bps == 193.5e6
    assert read_cache(path, datapath="user", fabric=(16, 4)) is None
    assert "on 32 x 4" in b.describe()
    # 32 x 4 at 1 Mbit/s offers 134 Mbit/s: inside 4 x 2's budget, not inside 32 x 4's
    w = spread(32, 4, 1e6)
    assert choose(w, 193.5e6).time_scale == 1 and choose(w, 82e6).time_scale == 2
