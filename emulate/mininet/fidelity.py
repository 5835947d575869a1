"""Fidelity: how closely the real emulation reproduces the simulator.

The same workload and policy run in both engines (:func:`measure`); the report gives, per
coflow, the relative CCT error ``|CCT_emulated / CCT_simulated - 1|`` and its median, p90
and max, and the links' utilisation in both runs:

* *payload* utilisation from the segments (simulated rates; for the emulation the rates
  measured from the receivers' byte counters), over every link of the fabric and the
  run's makespan;
* for the emulation, *wire* utilisation from the switch ports' byte counters (Ethernet
  frames, both directions, so headers and ACKs included) against the shaped link rate.

Target (issue 3): median < 5 %, p90 < 15 % on seeded workloads of 10-30 coflows,
4-8 hosts x 2 cores at 10-50 Mbit/s.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from controller.model import Workload
from emulate.io.records import RunResult
from emulate.mininet.tcpstats import describe as describe_tcp

TARGET_MEDIAN = 0.05
TARGET_P90 = 0.15


@dataclass
class FidelityReport:
    """Per-coflow CCT errors of an emulated run against the simulated one."""

    workload: Workload
    policy: str
    sim: RunResult
    emu: RunResult
    errors: np.ndarray = field(init=False)

    def __post_init__(self):
        self.errors = cct_errors(self.sim, self.emu)

    @property
    def median(self) -> float:
        return float(np.median(self.errors)) if self.errors.size else 0.0

    @property
    def p90(self) -> float:
        return float(np.percentile(self.errors, 90)) if self.errors.size else 0.0

    @property
    def max(self) -> float:
        return float(self.errors.max()) if self.errors.size else 0.0

    @property
    def bias(self) -> float:
        """Median of CCT_emulated / CCT_simulated - 1 (signed: > 0 means emulation slower)."""
        r = self.emu.cct / self.sim.cct - 1
        return float(np.median(r[np.isfinite(r)])) if r.size else 0.0

    def errors_above(self, wall_seconds: float = 0.1) -> np.ndarray:
        """Errors of the coflows whose simulated CCT lasts at least ``wall_seconds`` of
        emulated (wall) time: those not dominated by the control loop's milliseconds."""
        scale = self.emu.extra.get("time_scale", 1.0)
        s = self.sim.cct
        ok = s > 0
        return self.errors[(s[ok] * scale) >= wall_seconds]

    @property
    def meets_target(self) -> bool:
        return self.median < TARGET_MEDIAN and self.p90 < TARGET_P90

    def worst(self, n: int = 5) -> list[dict]:
        """The ``n`` coflows with the largest errors (id, width, bytes, both CCTs)."""
        w = self.workload
        out = []
        for k in np.argsort(-self.errors)[:n]:
            c = w.coflows[k]
            out.append({"coflow": c.id, "flows": len(c.flows), "bytes": c.total_bytes,
                        "cct_sim": float(self.sim.cct[k]), "cct_emu": float(self.emu.cct[k]),
                        "error": float(self.errors[k])})
        return out

    def to_json(self) -> dict:
        return {"workload": self.workload.name, "policy": self.policy,
                "coflows": len(self.workload.coflows),
                "hosts": self.workload.fabric.ports, "cores": self.workload.fabric.cores,
                "rate_bps": list(self.workload.fabric.rates),
                "time_scale": self.emu.extra.get("time_scale", 1.0),
                "cct_error": {"median": self.median, "p90": self.p90, "max": self.max,
                              "bias": self.bias},
                "meets_target": self.meets_target,
                "cct_error_ge_100ms": _stats(self.errors_above(0.1)),
                "utilisation": {"sim_payload": link_utilisation(self.sim),
                                "emu_payload": link_utilisation(self.emu),
                                "emu_wire": wire_utilisation(self.emu)},
                "makespan": {"sim": self.sim.makespan, "emu": self.emu.makespan},
                "worst": self.worst(),
                "tcp": self.emu.extra.get("tcp"),
                "controller": self.emu.extra.get("controller")}

    def format(self) -> str:
        u_s, u_e = link_utilisation(self.sim), link_utilisation(self.emu)
        wire = wire_utilisation(self.emu)
        lines = [
            f"fidelity  {self.workload.name}  policy {self.policy}  "
            f"({len(self.workload.coflows)} coflows, {self.workload.fabric.ports} hosts x "
            f"{self.workload.fabric.cores} cores, "
            f"{'/'.join(f'{r / 1e6:g}' for r in self.workload.fabric.rates)} Mbit/s, "
            f"time scale {self.emu.extra.get('time_scale', 1.0):g})",
            f"  per-coflow |CCT_emu/CCT_sim - 1|: median {self.median:6.2%}  "
            f"p90 {self.p90:6.2%}  max {self.max:6.2%}  (bias {self.bias:+.2%})  "
            f"target median<{TARGET_MEDIAN:.0%} p90<{TARGET_P90:.0%}: "
            f"{'met' if self.meets_target else 'NOT met'}",
            f"  makespan: sim {self.sim.makespan:.3f} s  emu {self.emu.makespan:.3f} s",
            f"  link utilisation (payload, mean/max over links): sim {u_s['mean']:.1%}/"
            f"{u_s['max']:.1%}  emu {u_e['mean']:.1%}/{u_e['max']:.1%}"
            + (f"   wire (port counters): {wire['mean']:.1%}/{wire['max']:.1%}" if wire
               else ""),
        ]
        tcp = self.emu.extra.get("tcp")
        if tcp:
            lines.append("  " + describe_tcp(tcp))
        long = self.errors_above(0.1)
        if long.size and long.size < self.errors.size:
            lines.append(f"  coflows lasting >= 100 ms ({long.size} of {self.errors.size}): "
                         f"median {np.median(long):6.2%}  p90 {np.percentile(long, 90):6.2%}")
        worst = self.worst(3)
        if worst and worst[0]["error"] > TARGET_MEDIAN:
            lines.append("  worst: " + "; ".join(
                f"{d['coflow']} ({d['flows']} flows, {d['bytes'] / 1e6:.2f} MB) "
                f"sim {d['cct_sim']:.3f} s emu {d['cct_emu']:.3f} s" for d in worst))
        return "\n".join(lines)


def _stats(e: np.ndarray) -> dict:
    if not e.size:
        return {"n": 0}
    return {"n": int(e.size), "median": float(np.median(e)),
            "p90": float(np.percentile(e, 90)), "max": float(e.max())}


def cct_errors(sim: RunResult, emu: RunResult) -> np.ndarray:
    """``|CCT_emu / CCT_sim - 1|`` per coflow with a positive simulated CCT."""
    s, e = sim.cct, emu.cct
    ok = s > 0
    return np.abs(e[ok] / s[ok] - 1.0)


def link_utilisation(r: RunResult) -> dict:
    """Payload bits carried per link / (link rate x makespan): mean and max over links."""
    w = r.workload
    a = w.arrays
    span = r.makespan
    if r.segments is None or span <= 0:
        return {"mean": float("nan"), "max": float("nan")}
    f, h = r.segments.flow, r.segments.core
    bits = r.segments.rate_bps * (r.segments.end - r.segments.start)
    m, n = w.fabric.cores, w.fabric.ports
    up = np.zeros((m, n))
    down = np.zeros((m, n))
    np.add.at(up, (h, a.src[f]), bits)
    np.add.at(down, (h, a.dst[f]), bits)
    cap = np.array(w.fabric.rates)[:, None] * span
    u = np.concatenate([(up / cap).ravel(), (down / cap).ravel()])
    return {"mean": float(u.mean()), "max": float(u.max())}


def wire_utilisation(r: RunResult) -> dict | None:
    """From the emulation's switch port counters: frame bits / (shaped rate x makespan)."""
    pb = r.extra.get("port_bytes")
    if pb is None or r.makespan <= 0:
        return None
    pb = np.asarray(pb, dtype=float)  # (core, host, [from host, to host])
    scale = r.extra.get("time_scale", 1.0)
    from emulate.mininet.engine import WIRE_OVERHEAD
    rates = np.array(r.workload.fabric.rates) / scale * WIRE_OVERHEAD
    span = r.makespan * scale  # wall seconds
    u = pb * 8 / (rates[:, None, None] * span)
    return {"mean": float(u.mean()), "max": float(u.max())}


def measure(workload: Workload, policy: str, *, time_scale: float = 1.0,
            policy_options: dict | None = None, **mininet_options) -> FidelityReport:
    """Run ``workload`` under ``policy`` in the simulator and on Mininet; the report.

    ``policy_options`` go to the policy in both engines (``mode``, ``objective``,
    ``first_threshold``, ...); ``mininet_options`` are the emulation engine's own options
    (``pause``, ...)."""
    from emulate.engines import RunOptions, get_engine
    po = dict(policy_options or {})
    sim = get_engine("sim").run(workload, policy, RunOptions(segments=True, policy_options=po))
    emu = get_engine("mininet").run(workload, policy, RunOptions(
        segments=True, time_scale=time_scale, policy_options=po,
        engine_options=mininet_options))
    return FidelityReport(workload, policy, sim, emu)


SIZE_BUCKETS_MB = (0.0, 0.5, 2.0, 8.0, float("inf"))
"""Coflow size buckets (total MB) of :func:`errors_by_size`."""


def errors_by_size(reports, edges=SIZE_BUCKETS_MB) -> list[dict]:
    """Per size bucket (coflow bytes): how many coflows, median and p90 error, pooled
    over ``reports`` (one :class:`FidelityReport` or several, e.g. seeds)."""
    if isinstance(reports, FidelityReport):
        reports = [reports]
    size, e = [], []
    for r in reports:
        mb = np.array([c.total_bytes for c in r.workload.coflows], float) / 1e6
        size.append(mb[r.sim.cct > 0])
        e.append(r.errors)
    size, e = np.concatenate(size), np.concatenate(e)
    return [{"lo_mb": lo, "hi_mb": hi, **_stats(e[(size >= lo) & (size < hi)])}
            for lo, hi in zip(edges[:-1], edges[1:])]


def mean_cct_ratio(report: FidelityReport) -> float:
    """Mean emulated CCT over mean simulated CCT."""
    return float(np.mean(report.emu.cct) / np.mean(report.sim.cct))


def against_simulator(result: RunResult, policy: str,
                      policy_options: dict | None = None) -> FidelityReport:
    """The report of an emulated ``result``: simulate the same workload under ``policy``
    (name or ``module:Class``, with the options the emulated run had) and compare.
    ``coflowemu run --engine mininet`` prints its :meth:`FidelityReport.format`."""
    from emulate.engines import RunOptions, get_engine
    sim = get_engine("sim").run(result.workload, policy, RunOptions(
        segments=True, policy_options=dict(policy_options or {})))
    return FidelityReport(result.workload, result.policy, sim, result)


def summarize(reports: list[FidelityReport]) -> dict:
    """Pooled per-coflow errors over several reports (e.g. seeds)."""
    e = np.concatenate([r.errors for r in reports]) if reports else np.zeros(0)
    return {"coflows": int(e.size),
            "median": float(np.median(e)) if e.size else 0.0,
            "p90": float(np.percentile(e, 90)) if e.size else 0.0,
            "max": float(e.max()) if e.size else 0.0}
