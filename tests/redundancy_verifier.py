"""An independent check of a redundancy run's records (what ``coflowemu run --json
--segments`` writes under ``"model": "redundancy"``), from the records alone.

* every copy segment lies within its job's arrival and completion (nobody is served
  before its arrival, nor after it departed);
* at most ``N`` machines, and on every machine the shares of the copies running at any
  time sum to at most 1;
* checkpoints only at events: a copy segment starts and ends only at an event (an
  arrival or a departure, read off the job records; with slotted decisions, the end of
  the slot in which one happened, or the segment's own job's departure) or at a change
  point of its machine's speed;
* each job's work is completed at the machines' actual rates: each segment's work is
  re-integrated from the reported speed segments (share x integral of the rate), the
  job's gain between two consecutive events is its best copy's, and the gains add up to
  its work.

With checkpoint transfers (``transfers``: the run's records of them,
:mod:`controller.redundancy.transfers`), where each job's state is is re-derived from the
segments alone (none before the job's first gain; after an interval with a gain, the
machines whose copies reached the best gain; plus the destinations of each transfer
that completed), and:

* transfers happen only at checkpoints (an arrival or a departure), from a machine that
  holds the job's state to machines that do not;
* a copy runs only on a machine that holds its job's state when it starts: a copy that
  waits for a transfer gains no work until the transfer has arrived (an abandoned
  transfer never feeds a copy).

The transfers' flows themselves (bytes, rates, links) are the network verifier's
(``tests/verifier.py``, on the run's network records).
"""
from __future__ import annotations

from collections import defaultdict

import numpy as np


class RecordError(AssertionError):
    """The records break a rule of the model."""


def _rate_integral(points, a, b):
    """``integral_a^b rate`` from a machine's speed segments ``[(start, end, rate)]``."""
    total = 0.0
    for s, e, r in points:
        lo, hi = max(s, a), min(e, b)
        if hi > lo:
            total += r * (hi - lo)
    return total


def verify(jobs: list[dict], segments: list[dict], machines: int, *,
           tol: float = 1e-7, work_tol: float = 1e-6, transfers: list | None = None,
           slot: float | None = None, replay: bool = True) -> dict:
    """Raise :class:`RecordError` where the records break a rule (module docstring);
    return per job its re-integrated work.

    ``tol``: times match within ``tol x max(1, horizon)``; ``work_tol``: a job's
    re-integrated work matches its work within ``work_tol x max(1, work)`` (an emulated
    run passes its timing: a copy of a departed job runs on until its stop arrives).

    ``jobs``: ``{"id", "arrival", "work", "completion"}``; ``segments``: the copy lines
    ``{"job", "copy", "machine", "start", "end", "share", "work"}`` and the speed lines
    ``{"machine", "start", "end", "rate"}``; ``transfers``: ``{"coflow", "job",
    "release", "from", "to", "completion", "abandoned"}`` (module docstring); ``slot``:
    decisions only at the multiples of it that follow an arrival or a departure (a
    copy may also end at its own job's departure inside a slot). ``replay=False`` skips
    the replay of where each state is (its near-ties of gains need exact records, which
    an emulated run's are not) and keeps the direct rule: no copy of a job runs on a
    transfer's destination from the transfer's release to its completion."""
    copies = [s for s in segments if "job" in s]
    speed = defaultdict(list)
    for s in segments:
        if "rate" in s:
            speed[s["machine"]].append((s["start"], s["end"], s["rate"]))
    if len(speed) > machines:
        raise RecordError(f"{len(speed)} machines in the speed records, only {machines}")
    by_id = {j["id"]: j for j in jobs}
    horizon = max([j["completion"] for j in jobs], default=0.0)
    scale = max(1.0, horizon)
    events = np.unique([j["arrival"] for j in jobs] + [j["completion"] for j in jobs])
    if slot:                         # the decisions: the slot ends after the events
        events = np.unique(np.ceil(events / slot) * slot)
    change = {m: {s for s, _, _ in pts} | {e for _, e, _ in pts} for m, pts in speed.items()}

    transfers = transfers or []
    arrived = defaultdict(set)          # (job, machine) -> transfer completions
    for x in transfers:
        if x["completion"] is not None:
            for m in x["to"]:
                arrived[(x["job"], m)].add(x["completion"])

    def near_event(x):
        k = np.searchsorted(events, x)
        return any(abs(events[i] - x) <= tol * scale for i in (k - 1, k)
                   if 0 <= i < len(events))

    def at_event(x, m, job=None):
        return near_event(x) or any(abs(c - x) <= tol * scale for c in change.get(m, ())) \
            or any(abs(c - x) <= tol * scale for c in arrived.get((job, m), ()))

    per_machine = defaultdict(list)
    gains = defaultdict(lambda: defaultdict(float))      # (job, interval) -> copy -> work
    where = defaultdict(dict)                            # (job, interval) -> copy -> machine
    first = {}                                           # (job, interval, copy) -> start
    for s in copies:
        j = by_id.get(s["job"])
        if j is None:
            raise RecordError(f"segment of unknown job {s['job']!r}")
        if s["machine"] not in speed:
            raise RecordError(f"segment on machine {s['machine']!r} with no speed records")
        if s["start"] < j["arrival"] - tol * scale:
            raise RecordError(f"job {s['job']!r} served at {s['start']} before its arrival "
                              f"{j['arrival']}")
        if s["end"] > j["completion"] + tol * scale or s["end"] < s["start"]:
            raise RecordError(f"job {s['job']!r} segment [{s['start']}, {s['end']}] after "
                              f"its completion {j['completion']} or reversed")
        if not 0 < s["share"] <= 1 + tol:
            raise RecordError(f"share {s['share']} of job {s['job']!r} out of (0, 1]")
        for x in (s["start"], s["end"]):
            if x == s["end"] and abs(x - j["completion"]) <= tol * scale:
                continue                                  # its own departure
            if not at_event(x, s["machine"], s["job"] if x == s["start"] else None):
                raise RecordError(f"job {s['job']!r} copy {s['copy']} changes at {x}: neither "
                                  f"an arrival, a departure nor a speed change of "
                                  f"{s['machine']!r} (checkpoints only at events)")
        w = s["share"] * _rate_integral(speed[s["machine"]], s["start"], s["end"])
        if abs(w - s["work"]) > tol * max(1.0, w):
            raise RecordError(f"job {s['job']!r} segment reports work {s['work']}, the speed "
                              f"records give {w}")
        per_machine[s["machine"]].append((s["start"], s["end"], s["share"]))
        k = int(np.searchsorted(events, s["start"] + tol * scale, side="right")) - 1
        gains[(s["job"], k)][s["copy"]] += w
        where[(s["job"], k)][s["copy"]] = s["machine"]
        first[(s["job"], k, s["copy"])] = min(first.get((s["job"], k, s["copy"]), np.inf),
                                              s["start"])
    for m, iv in per_machine.items():
        cuts = sorted({x for a, b, _ in iv for x in (a, b)})
        for a, b in zip(cuts, cuts[1:]):
            mid = (a + b) / 2
            load = sum(sh for s, e, sh in iv if s <= mid < e)
            if load > 1 + 1e-9:
                raise RecordError(f"machine {m!r} shares sum to {load} on [{a}, {b}]")
    done = defaultdict(float)
    for (jid, _), per_copy in gains.items():
        done[jid] += max(per_copy.values())
    for j in jobs:
        if abs(done[j["id"]] - j["work"]) > work_tol * max(1.0, j["work"]):
            raise RecordError(f"job {j['id']!r} got {done[j['id']]} work at the machines' "
                              f"rates, its work is {j['work']}")
    if transfers:
        _check_waits(copies, transfers, tol * scale)
        if replay:
            _check_states(by_id, transfers, events, gains, where, first, near_event,
                          tol * scale)
    return dict(done)


def _check_waits(copies, transfers, ttol):
    """No copy of a job runs on a machine its transfer is bound for while the transfer
    is on its way (a copy there waits for the state)."""
    by = defaultdict(list)
    for s in copies:
        by[(s["job"], s["machine"])].append(s)
    for x in transfers:
        end = x["completion"] if x["completion"] is not None else x["abandoned"]
        for m in x["to"]:
            for s in by.get((x["job"], m), ()):
                if x["release"] + ttol < s["end"] and s["start"] < end - ttol:
                    raise RecordError(f"job {x['job']!r} copy {s['copy']} runs on {m!r} "
                                      f"[{s['start']}, {s['end']}] while its state is on "
                                      f"its way there (transfer {x['coflow']!r}, "
                                      f"{x['release']} to {end}): a copy waits for it")


def _check_states(by_id, transfers, events, gains, where, first, near_event, ttol):
    """The transfer rules (module docstring): replay, per job in time order, where its
    state is, and check every transfer and every copy's start against it."""
    timeline = defaultdict(list)       # job -> (time, order, kind, data)
    for (jid, k), per_copy in gains.items():
        # the interval's end: its gains decide the holders (at the next event)
        end = events[k + 1] if k + 1 < len(events) else np.inf
        timeline[jid].append((end, 1, "checkpoint", (per_copy, where[(jid, k)])))
    for (jid, k, c), s in first.items():
        timeline[jid].append((s + ttol, 3, "start", (where[(jid, k)][c], c, s)))
    for x in transfers:
        if x["job"] not in by_id:
            raise RecordError(f"transfer {x['coflow']!r} of unknown job {x['job']!r}")
        if not near_event(x["release"]):
            raise RecordError(f"transfer {x['coflow']!r} released at {x['release']}: not a "
                              f"checkpoint (an arrival or a departure)")
        timeline[x["job"]].append((x["release"], 2, "release", x))
        if x["completion"] is not None:
            timeline[x["job"]].append((x["completion"], 0, "arrived", x))
    for jid, items in timeline.items():
        held = None                                       # no state yet: anywhere
        for t, _, kind, data in sorted(items, key=lambda e: (e[0], e[1])):
            if kind == "arrived":
                held = (held or set()) | set(data["to"])
            elif kind == "checkpoint":
                per_copy, machine = data
                best = max(per_copy.values())
                if best > 0:
                    held = {machine[c] for c, g in per_copy.items()
                            if g >= best * (1 - 1e-9)}
            elif kind == "release":
                if held is None or data["from"] not in held:
                    raise RecordError(f"transfer {data['coflow']!r} of job {jid!r} at "
                                      f"{t}: from {data['from']!r}, which does not hold the "
                                      f"job's state (held by {sorted(held or [])})")
                if held & set(data["to"]):
                    raise RecordError(f"transfer {data['coflow']!r} of job {jid!r} at {t}: "
                                      f"to {sorted(held & set(data['to']))}, which hold "
                                      f"the state already")
            elif held is not None and data[0] not in held:
                m, c, s = data
                raise RecordError(f"job {jid!r} copy {c} runs on {m!r} from {s}, which does "
                                  f"not hold the job's state then (held by {sorted(held)}): "
                                  f"a copy waits for its transfer")


def run_records(run) -> tuple[list[dict], list[dict]]:
    """The job and segment records of a :class:`controller.redundancy.Run` (recorded), as
    the CLI writes them (machine ids are indices here)."""
    inst = run.instance
    jobs = [{"id": i, "arrival": float(a), "work": float(w), "completion": float(c)}
            for i, a, w, c in zip(inst.ids, inst.arrival, inst.work, run.completion)]
    s = run.segments()
    segs = [{"job": inst.ids[j], "copy": int(c), "machine": int(m), "start": float(a),
             "end": float(b), "share": float(sh), "work": float(w)}
            for j, c, m, a, b, sh, w in zip(s["job"], s["copy"], s["machine"], s["start"],
                                            s["end"], s["share"], s["work"])]
    until = max([j["completion"] for j in jobs], default=0.0)
    return jobs, segs + run.speed.segments(until)
