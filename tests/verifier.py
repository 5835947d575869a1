"""An independent schedule verifier for coflow runs (algorithms.md 1.12, tests 1).

Given a :class:`~controller.model.Workload` and the segments of a run (every interval
during which a flow sent at a constant rate on one core), :func:`verify_segments` checks
that the schedule is feasible and consistent with the completion times the engine
reported, and recomputes the objective from the segments alone:

* **links**: per core and per port (input and output separately), the sum of the rates of
  the segments active at any time is at most the core's rate (relative tolerance
  ``rtol``). Checked on every elementary interval between consecutive segment endpoints;
* **flows**: every flow of positive size sends on exactly one core (no migration), its
  segments do not overlap in time, and they integrate (``rate_bps / 8 x duration``) to
  its bytes (relative tolerance ``rtol``, plus what each segment sends in an ulp of its
  start and end times). Zero-byte flows must not send;
* **releases and precedence**: nothing of a coflow is sent before its release, nor before
  every direct predecessor in the DAG has completed;
* **completions**: each coflow's completion (as reported) equals the end of its last
  segment, and for a coflow without bytes its ready time
  ``max(release, completions of its predecessors)``; a reported flow completion equals
  the end of that flow's last segment;
* optionally (``indivisible=True``): all flows of a coflow use one core.

The flow numbering (one entry per flow of positive size, coflow by coflow, flows in their
listed order) is rebuilt here from the workload's coflows; nothing from the simulator
(``emulate.sim.flowsim``, ``emulate.sim.matching``) or from ``Workload.arrays`` is used.

Every violation raises :class:`AssertionError` with a message naming the coflow, flow,
core, port and time involved.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

#: relative tolerance on rates and bytes
RTOL = 1e-6


@dataclass(frozen=True)
class FlowRef:
    """One flow of positive size: its coflow (index and id) and endpoints."""

    coflow: int
    cid: str
    src: int
    dst: int
    bytes: float


@dataclass
class Verdict:
    """What the verifier recomputed from the segments.

    Attributes
    ----------
    objective : float
        ``sum_k weight_k x completion_k`` with completions taken from the segments.
    coflow_completion : float array per coflow (end of its last segment, or ready time)
    flow_completion : float array per flow of positive size
    ready : float array per coflow (``max(release, predecessors' completions)``)
    """

    objective: float
    coflow_completion: np.ndarray
    flow_completion: np.ndarray
    ready: np.ndarray


def flow_refs(workload) -> list[FlowRef]:
    """The flows of positive size, coflow by coflow, in the order the engines index them."""
    out = []
    for k, c in enumerate(workload.coflows):
        for f in c.flows:
            if f.bytes > 0:
                out.append(FlowRef(k, c.id, int(f.src), int(f.dst), float(f.bytes)))
    return out


def _topological(n: int, preds: list[list[int]]) -> list[int]:
    """Kahn's algorithm (the workload validated acyclicity; checked again here)."""
    succs = [[] for _ in range(n)]
    indeg = [len(p) for p in preds]
    for b, ps in enumerate(preds):
        for a in ps:
            succs[a].append(b)
    todo = [k for k in range(n) if indeg[k] == 0]
    out = []
    while todo:
        k = todo.pop()
        out.append(k)
        for s in succs[k]:
            indeg[s] -= 1
            if indeg[s] == 0:
                todo.append(s)
    assert len(out) == n, "precedence arcs form a cycle"
    return out


def _check_links(flows, fabric, flow, core, start, end, rate, rtol, ttol):
    """Sum of rates per (core, input port) and (core, output port) <= the core's rate."""
    for side, port_of in (("input", lambda f: flows[f].src), ("output", lambda f: flows[f].dst)):
        groups: dict[tuple[int, int], list[int]] = {}
        for s in range(len(flow)):
            groups.setdefault((int(core[s]), port_of(int(flow[s]))), []).append(s)
        for (h, p), idx in groups.items():
            idx = np.asarray(idx)
            cap = fabric.core_rate(h)
            s0, s1, r = start[idx], end[idx], rate[idx]
            # sweep: the load is constant between consecutive endpoints
            times = np.unique(np.concatenate([s0, s1]))
            if len(times) < 2:
                continue
            delta = np.zeros(len(times))
            np.add.at(delta, np.searchsorted(times, s0), r)
            np.add.at(delta, np.searchsorted(times, s1), -r)
            load = np.cumsum(delta)[:-1]  # on [times[q], times[q + 1])
            long_enough = np.diff(times) > ttol  # ignore float-noise slivers
            over = np.flatnonzero(long_enough & (load > cap * (1.0 + rtol)))
            if over.size:
                q = over[0]
                lo, hi = times[q], times[q + 1]
                mid = (lo + hi) / 2.0
                on = idx[(s0 < mid) & (s1 > mid)]
                who = sorted({f"{flows[int(flow[s])].cid}:{flows[int(flow[s])].src}->"
                              f"{flows[int(flow[s])].dst}" for s in on})
                raise AssertionError(
                    f"core {h} {side} port {p} carries {load[q]:.9g} bit/s during "
                    f"[{lo:.9g}, {hi:.9g}] > its rate {cap:.9g} bit/s "
                    f"(flows {', '.join(who)})")


def verify_segments(workload, segments, *, coflow_completion=None, flow_completion=None,
                    indivisible: bool = False, rtol: float = RTOL) -> Verdict:
    """Check a schedule given as segments; see the module docstring.

    Parameters
    ----------
    workload : Workload
    segments : object with arrays ``flow, core, start, end, rate_bps``
        ``flow`` indexes :func:`flow_refs` (the engines' flow numbering).
    coflow_completion : float array per coflow, optional
        The completions the engine reported; checked against the segments.
    flow_completion : float array per flow, optional
    indivisible : bool
        Also require one core per coflow.
    rtol : float
        Relative tolerance on rates and bytes.

    Returns
    -------
    Verdict

    Raises
    ------
    AssertionError
        On the first violation, with a message naming what, where and when.
    """
    fabric = workload.fabric
    flows = flow_refs(workload)
    nf, nc = len(flows), len(workload.coflows)
    flow = np.asarray(segments.flow, dtype=np.int64)
    core = np.asarray(segments.core, dtype=np.int64)
    start = np.asarray(segments.start, dtype=np.float64)
    end = np.asarray(segments.end, dtype=np.float64)
    rate = np.asarray(segments.rate_bps, dtype=np.float64)
    ns = len(flow)
    assert len(core) == len(start) == len(end) == len(rate) == ns, \
        "segment arrays have different lengths"
    horizon = max(1.0, float(np.max(np.abs(end))) if ns else 1.0)
    ttol = 1e-9 * horizon

    # ---------------------------------------------------------------- segment sanity
    for s in range(ns):
        f, h = int(flow[s]), int(core[s])
        if not 0 <= f < nf:
            raise AssertionError(f"segment {s} names flow {f}; the workload has flows 0..{nf - 1}")
        if not 0 <= h < fabric.cores:
            raise AssertionError(f"segment {s} (coflow {flows[f].cid!r} {flows[f].src}->"
                                 f"{flows[f].dst}) is on core {h}; the fabric has cores "
                                 f"0..{fabric.cores - 1}")
        if not (np.isfinite(start[s]) and np.isfinite(end[s]) and np.isfinite(rate[s])):
            raise AssertionError(f"segment {s} (coflow {flows[f].cid!r}) has a non-finite "
                                 f"start/end/rate: {start[s]}, {end[s]}, {rate[s]}")
        if end[s] < start[s]:
            raise AssertionError(f"segment {s} (coflow {flows[f].cid!r} {flows[f].src}->"
                                 f"{flows[f].dst}) ends at {end[s]:.9g} before it starts "
                                 f"at {start[s]:.9g}")
        if rate[s] < 0:
            raise AssertionError(f"segment {s} (coflow {flows[f].cid!r}) has negative rate "
                                 f"{rate[s]}")

    # ---------------------------------------------------------------- links
    _check_links(flows, fabric, flow, core, start, end, rate, rtol, ttol)

    # ---------------------------------------------------------------- flows
    by_flow = [[] for _ in range(nf)]
    for s in range(ns):
        if rate[s] > 0 and end[s] > start[s]:
            by_flow[int(flow[s])].append(s)
    fdone = np.full(nf, np.nan)
    fstart = np.full(nf, np.nan)
    fcore = np.full(nf, -1, dtype=np.int64)
    for f, segs in enumerate(by_flow):
        ref = flows[f]
        name = f"coflow {ref.cid!r} flow {ref.src}->{ref.dst}"
        if not segs:
            raise AssertionError(f"{name} ({ref.bytes:g} bytes) never sent")
        cores = sorted({int(core[s]) for s in segs})
        if len(cores) > 1:
            raise AssertionError(f"{name} migrates: it sends on cores {cores}")
        segs = sorted(segs, key=lambda s: (start[s], end[s]))
        for a, b in zip(segs, segs[1:]):
            if start[b] < end[a] - ttol:
                raise AssertionError(
                    f"{name} has overlapping segments [{start[a]:.9g}, {end[a]:.9g}] and "
                    f"[{start[b]:.9g}, {end[b]:.9g}] on core {cores[0]}")
        sent = float(sum(rate[s] / 8.0 * (end[s] - start[s]) for s in segs))
        # (and what a segment sends in an ulp of its end times: late in a long run the
        # times are that coarse, the bytes not)
        coarse = float(sum(rate[s] / 8.0 * (np.spacing(start[s]) + np.spacing(end[s]))
                           for s in segs))
        if abs(sent - ref.bytes) > rtol * ref.bytes + coarse:
            raise AssertionError(f"{name} sends {sent:.12g} bytes, its size is "
                                 f"{ref.bytes:.12g} bytes")
        fdone[f] = max(end[s] for s in segs)
        fstart[f] = min(start[s] for s in segs)
        fcore[f] = cores[0]

    # ---------------------------------------------------------------- releases, DAG
    index = {c.id: k for k, c in enumerate(workload.coflows)}
    preds = [[] for _ in range(nc)]
    for a, b in workload.precedence:
        preds[index[b]].append(index[a])
    flows_of = [[] for _ in range(nc)]
    for f, ref in enumerate(flows):
        flows_of[ref.coflow].append(f)
    done = np.full(nc, np.nan)
    ready = np.full(nc, np.nan)
    for k in _topological(nc, preds):
        c = workload.coflows[k]
        ready[k] = max([float(c.release)] + [done[p] for p in preds[k]])
        mine = flows_of[k]
        if not mine:
            done[k] = ready[k]
            continue
        first = min(fstart[f] for f in mine)
        if first < c.release - ttol:
            raise AssertionError(f"coflow {c.id!r} sends at {first:.9g}, before its release "
                                 f"{c.release:.9g}")
        for p in preds[k]:
            if first < done[p] - ttol:
                raise AssertionError(
                    f"coflow {c.id!r} sends at {first:.9g}, before its predecessor "
                    f"{workload.coflows[p].id!r} completes at {done[p]:.9g}")
        done[k] = max(fdone[f] for f in mine)
        if indivisible:
            used = sorted({int(fcore[f]) for f in mine})
            if len(used) > 1:
                raise AssertionError(f"coflow {c.id!r} uses cores {used}; indivisible "
                                     f"coflows use one core")

    # ---------------------------------------------------------------- reported times
    if coflow_completion is not None:
        got = np.asarray(coflow_completion, dtype=np.float64)
        assert got.shape == (nc,), f"coflow_completion has shape {got.shape}, expected ({nc},)"
        for k, c in enumerate(workload.coflows):
            tol = max(ttol, 1e-9 * abs(done[k]))
            if not np.isfinite(got[k]) or abs(got[k] - done[k]) > tol:
                what = ("the end of its last segment" if flows_of[k]
                        else "its ready time (it has no bytes)")
                raise AssertionError(f"coflow {c.id!r}: reported completion {float(got[k])!r}, "
                                     f"{what} is {done[k]:.12g}")
    if flow_completion is not None:
        got = np.asarray(flow_completion, dtype=np.float64)
        assert got.shape == (nf,), f"flow_completion has shape {got.shape}, expected ({nf},)"
        for f, ref in enumerate(flows):
            tol = max(ttol, 1e-9 * abs(fdone[f]))
            if not np.isfinite(got[f]) or abs(got[f] - fdone[f]) > tol:
                raise AssertionError(
                    f"coflow {ref.cid!r} flow {ref.src}->{ref.dst}: reported completion "
                    f"{float(got[f])!r}, the end of its last segment is {fdone[f]:.12g}")
    weights = np.array([c.weight for c in workload.coflows], dtype=np.float64)
    return Verdict(objective=float(np.dot(weights, done)) if nc else 0.0,
                   coflow_completion=done, flow_completion=fdone, ready=ready)


def verify(workload, result, *, indivisible: bool = False, rtol: float = RTOL) -> Verdict:
    """Check a :class:`~emulate.io.records.RunResult` recorded with ``segments=True``.

    Also checks that the run's ``total_weighted_completion`` equals the recomputed
    objective.
    """
    assert result.segments is not None, "the run recorded no segments (segments=True)"
    v = verify_segments(workload, result.segments, coflow_completion=result.coflow_completion,
                        flow_completion=result.flow_completion, indivisible=indivisible,
                        rtol=rtol)
    reported = result.total_weighted_completion
    assert abs(reported - v.objective) <= 1e-9 * max(1.0, abs(v.objective)), \
        f"reported total weighted completion {reported!r}, recomputed {v.objective!r}"
    return v


@dataclass
class SegmentArrays:
    """Segments as plain arrays (what :func:`read_segment_lines` returns)."""

    flow: np.ndarray
    core: np.ndarray
    start: np.ndarray
    end: np.ndarray
    rate_bps: np.ndarray


def read_segment_lines(workload, path: str) -> SegmentArrays:
    """Read a ``--segments`` JSON-lines file; flows are found by (coflow id, src, dst).

    Every line must have exactly the keys coflow, src, dst, core, start, end, rate_bps.
    """
    keys = {"coflow", "src", "dst", "core", "start", "end", "rate_bps"}
    index = {(r.cid, r.src, r.dst): f for f, r in enumerate(flow_refs(workload))}
    cols = {k: [] for k in ("flow", "core", "start", "end", "rate_bps")}
    with open(path) as fh:
        for n, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            d = json.loads(line)
            assert set(d) == keys, f"{path}:{n}: keys {sorted(d)}, expected {sorted(keys)}"
            flow_key = (d["coflow"], d["src"], d["dst"])
            assert flow_key in index, f"{path}:{n}: no flow {flow_key} of positive size"
            cols["flow"].append(index[flow_key])
            for k in ("core", "start", "end", "rate_bps"):
                cols[k].append(d[k])
    return SegmentArrays(np.array(cols["flow"], dtype=np.int64),
                         np.array(cols["core"], dtype=np.int64),
                         np.array(cols["start"], dtype=np.float64),
                         np.array(cols["end"], dtype=np.float64),
                         np.array(cols["rate_bps"], dtype=np.float64))
