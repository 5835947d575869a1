"""Joint compute-and-network runs: an independent verifier, every compute+network pair
through it, a hand-computed example, and the JSON extension's errors.

The verifier (:func:`verify_joint`) reads only the workload's own fields (machines,
``Task.placement``/``size``/``release``, coflows, job arcs, shuffles, ``output_bytes``) and
the public outputs of a run (``JointResult.to_json()`` and the ``--segments`` dicts). It
shares no code with the joint simulator, the compute engine or ``controller.jobs``; the
network half is checked by the coflow verifier (``tests/verifier.py``) against a realized
workload rebuilt here. It checks:

* every task segment: a machine of the task's placement set that is big enough, not
  before the task's release; per task no two segments at once (never two machines at
  once), fractions ``sum length / p^machine`` = 1; non-preemptive policies: one piece;
  no migration: one machine; single-machine placement: the task's fastest machine;
* capacity: on every machine, at all times, the sizes of the running tasks sum to at
  most its capacity;
* shuffles: a consumer task runs on one machine; the shuffle's flows are exactly the rule
  of docs/jobs.md recomputed from where the producers finished and the consumers ran;
* precedence: for every job arc ``a -> b``, ``b`` starts (first task segment or first
  flow segment) after ``a`` completes; a coflow with producing stages is released when
  the last of them completes: its bytes are sent only after that;
* the network: link rates, bytes, no flow migration, releases, coflow precedence and
  completions (``verify_segments``);
* the reported tasks, stages, coflows, jobs and objective agree with the segments.
"""
from __future__ import annotations

import json
import zlib
from collections import defaultdict
from dataclasses import replace

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.compute import compute_policies
from controller.compute.model import Machine, Stage, Task
from controller.jobs import JointJob, JointWorkload, compute_lower_bound, mapreduce_jobs
from controller.model import Coflow, Flow, Workload, WorkloadError
from controller.policies import PolicyError, available, get_policy
from emulate.cli import main
from controller.policyspec import DEFAULT_COMPUTE, split_policy
from emulate.io.traces import joint_to_dict, read_json, read_workload, write_json
from emulate.sim.flowsim import simulate
from emulate.sim.jobsim import simulate_joint
from topologies import Fabric
from verifier import flow_refs, verify_segments

TOL = 1e-6
COMPUTE = list(compute_policies())
NETWORK = list(available())
PAIRS = [f"{c}+{n}" for c in COMPUTE for n in NETWORK]


# ------------------------------------------------------------------------------ verifier
class _Segs:
    def __init__(self, rows):
        self.flow = np.array([r[0] for r in rows], dtype=np.int64)
        self.core = np.array([r[1] for r in rows], dtype=np.int64)
        self.start = np.array([r[2] for r in rows], dtype=np.float64)
        self.end = np.array([r[3] for r in rows], dtype=np.float64)
        self.rate_bps = np.array([r[4] for r in rows], dtype=np.float64)


def verify_joint(w: JointWorkload, doc: dict, segs: list[dict], *, preemptive: bool,
                 migration: bool, pinned: bool, measured: float = 0.0) -> float:
    """Check a joint run (see the module docstring); return the recomputed
    ``sum_j w_j C_j``. Raises AssertionError naming the violation.

    ``measured`` > 0: a run on the emulation, whose times are measured. Capacity,
    placement, one machine at a time, precedence and the shuffle rule hold exactly as in
    the simulator; what is measured may be off by a bounded amount: a task's work by
    ``measured`` (relative: timers), a coflow opens at most ``measured`` x the makespan
    after its stages complete (the controller's reaction), and the flow segments (from
    receivers' byte counters) are checked for the flows they belong to, not for rates.
    """
    port = {m.id: i for i, m in enumerate(w.machines)}
    caps = {m.id: m.capacity for m in w.machines}
    tasks = {t.id: t for s in w.stages for t in s.tasks}
    stage_tasks = {s.id: [t.id for t in s.tasks] for s in w.stages}
    kind = {s.id: "stage" for s in w.stages} | {c.id: "coflow" for c in w.coflows}
    tsegs = [d for d in segs if "task" in d]
    fsegs = [d for d in segs if "coflow" in d]
    assert len(tsegs) + len(fsegs) == len(segs), "a segment is neither a task nor a flow"
    scale = max([1.0] + [d["end"] for d in segs])
    tol = TOL * scale

    # ---- task segments
    by_task = defaultdict(list)
    for d in tsegs:
        assert set(d) == {"task", "machine", "start", "end"}, f"task segment keys {sorted(d)}"
        t = tasks.get(d["task"])
        assert t is not None, f"segment of unknown task {d['task']!r}"
        m = d["machine"]
        assert m in t.placement, f"{t.id} runs on {m}, outside its placement set"
        assert all(sz <= (caps[m][k] if k < len(caps[m]) else 0.0) + 1e-12
                   for k, sz in enumerate(t.size)), f"{t.id} is bigger than machine {m}"
        assert d["start"] >= t.release - tol, f"{t.id} starts before its release"
        assert d["end"] > d["start"], f"{t.id}: empty segment {d}"
        by_task[t.id].append(d)
    tstart, tend, tlast = {}, {}, {}
    for tid, t in tasks.items():
        ss = sorted(by_task[tid], key=lambda d: d["start"])
        assert ss, f"task {tid} never runs"
        for a, b in zip(ss, ss[1:]):
            assert b["start"] >= a["end"] - tol, \
                f"{tid} runs twice at once (on {a['machine']} and {b['machine']})"
        work = sum((d["end"] - d["start"]) / t.placement[d["machine"]] for d in ss)
        assert abs(work - 1.0) <= max(1e-6, measured), \
            f"{tid}: its fractions sum to {work}, not 1"
        machines = {d["machine"] for d in ss}
        merged = 1 + sum(1 for a, b in zip(ss, ss[1:])
                         if b["machine"] != a["machine"] or b["start"] > a["end"] + tol)
        if not preemptive:
            assert merged == 1, f"{tid} is preempted ({len(ss)} pieces)"
        if not migration:
            assert len(machines) == 1, f"{tid} migrates between {sorted(machines)}"
        if pinned:
            ok = [m for m in t.placement if t.size[0] <= caps[m][0]]
            fastest = min(ok, key=lambda m: (t.placement[m], ok.index(m)))
            assert machines == {fastest}, f"{tid} runs on {sorted(machines)}, not {fastest}"
        tstart[tid], tend[tid] = ss[0]["start"], max(d["end"] for d in ss)
        tlast[tid] = max(ss, key=lambda d: d["end"])["machine"]
    # ---- capacity (first resource) on every elementary interval
    for m in port:
        mine = [d for d in tsegs if d["machine"] == m]
        times = sorted({x for d in mine for x in (d["start"], d["end"])})
        for lo, hi in zip(times, times[1:]):
            if hi - lo <= tol:
                continue
            mid = (lo + hi) / 2
            load = sum(tasks[d["task"]].size[0] for d in mine if d["start"] < mid < d["end"])
            assert load <= caps[m][0] * (1 + 1e-9) + 1e-9, \
                f"machine {m} holds {load} > capacity {caps[m][0]} during [{lo}, {hi}]"
    stage_done = {s: max(tend[t] for t in ts) for s, ts in stage_tasks.items()}
    stage_start = {s: min(tstart[t] for t in ts) for s, ts in stage_tasks.items()}

    # ---- the realized network, rebuilt from the rule and the task segments
    preds = defaultdict(list)
    succs = defaultdict(list)
    arcs = [tuple(a) for j in w.jobs for a in j.arcs] + [tuple(a) for a in w.precedence]
    for a, b in arcs:
        preds[b].append(a)
        succs[a].append(b)
    coflows = []
    for c in w.coflows:
        producers = [p for p in preds[c.id] if kind[p] == "stage"]
        release = max([c.release] + [stage_done[p] for p in producers])
        if c.id in w.shuffles:
            cons = [t for s in succs[c.id] if kind[s] == "stage" for t in stage_tasks[s]]
            for t in cons:
                ms = {d["machine"] for d in by_task[t]}
                assert len(ms) == 1, f"consumer {t} of shuffle {c.id} runs on {sorted(ms)}"
            demand = defaultdict(float)
            for s in producers:
                for p in stage_tasks[s]:
                    for r in cons:
                        src, dst = port[tlast[p]], port[by_task[r][0]["machine"]]
                        if src != dst:
                            demand[(src, dst)] += w.output_bytes.get(p, 0.0) / len(cons)
            flows = tuple(Flow(s, d, b) for (s, d), b in sorted(demand.items()) if b > 0)
        else:
            flows = c.flows
        coflows.append(Coflow(c.id, flows, release=release, weight=c.weight))
    coflow_arcs = [(a, b) for a, b in arcs if kind[a] == kind[b] == "coflow"]
    realized = Workload(w.fabric, tuple(coflows), tuple(dict.fromkeys(coflow_arcs)))
    refs = flow_refs(realized)
    index = {(r.cid, r.src, r.dst): f for f, r in enumerate(refs)}
    rows = []
    for d in fsegs:
        key = (d["coflow"], d["src"], d["dst"])
        assert key in index, f"flow {key} is not in the realized network (shuffle rule)"
        rows.append((index[key], d["core"], d["start"], d["end"], d["rate_bps"]))
    reported = {c["id"]: c for c in doc["coflows"]}
    for c in realized.coflows:
        lag = reported[c.id]["release"] - c.release
        assert -tol <= lag <= max(tol, measured * scale), \
            f"coflow {c.id} released at {reported[c.id]['release']}, its stages done at " \
            f"{c.release}"
    if measured:
        # (every segment belongs to a realized flow: checked above; a flow that ends
        # between two counter readings may have no measured segment of its own)
        cof_done = {c.id: float(reported[c.id]["completion"]) for c in realized.coflows}
        for c in realized.coflows:   # bytes go only after the coflow is opened
            first = min([d["start"] for d in fsegs if d["coflow"] == c.id], default=np.inf)
            assert first >= reported[c.id]["release"] - tol, f"{c.id} sends before opening"
    else:
        verdict = verify_segments(realized, _Segs(rows), coflow_completion=np.array(
            [reported[c.id]["completion"] for c in realized.coflows]))
        cof_done = {c.id: float(x) for c, x in zip(realized.coflows, verdict.coflow_completion)}
    cof_start = defaultdict(lambda: np.inf)
    for d in fsegs:
        cof_start[d["coflow"]] = min(cof_start[d["coflow"]], d["start"])

    # ---- precedence through stages and coflows
    done_at = stage_done | cof_done
    for a, b in arcs:
        if kind[b] == "stage":
            first = stage_start[b]
        else:
            first = min(cof_start[b], cof_done[b])
        assert first >= done_at[a] - tol, f"{b} starts at {first} before {a} completes " \
                                          f"at {done_at[a]}"

    # ---- reported records
    for rec in doc["tasks"]:
        tid = rec["id"]
        assert rec["machine"] == tlast[tid], f"{tid}: reported machine {rec['machine']}"
        assert abs(rec["start"] - tstart[tid]) <= tol and abs(rec["end"] - tend[tid]) <= tol
    assert {r["id"] for r in doc["tasks"]} == set(tasks)
    for rec in doc["stages"]:
        assert abs(rec["completion"] - stage_done[rec["id"]]) <= tol, rec
    objective = 0.0
    jobs = {j["id"]: j for j in doc["jobs"]}
    for j in w.jobs:
        c = max(done_at[x] for x in j.stages + j.coflows)
        assert abs(jobs[j.id]["completion"] - c) <= tol, \
            f"job {j.id}: reported {jobs[j.id]['completion']}, its last node ends at {c}"
        objective += j.weight * c
    assert abs(doc["total_weighted_job_completion"] - objective) <= 1e-9 * max(1, objective)
    return objective


def run_and_verify(w: JointWorkload, policy: str):
    r = simulate_joint(w, policy, segments=True)
    doc = json.loads(json.dumps(r.to_json()))
    p = compute_policies()[split_policy(policy)[0]]
    obj = verify_joint(w, doc, r.segment_dicts(), preemptive=p.preemptive,
                       migration=p.migration, pinned=p.pinned)
    return r, doc, obj


# ------------------------------------------------------------------------------ instances
def with_extras(w: JointWorkload) -> JointWorkload:
    """Every other kind of node and arc, on top of MapReduce jobs:

    * job 0 reads its input first: a fixed coflow ``in`` (port 1 -> 0) before its map;
    * job 0 writes its output after its last stage: a fixed coflow ``out``, followed by a
      coflow ``ack`` (coflow -> coflow arc);
    * a direct stage -> stage arc from job 0's map to its last stage (when it has two);
    * a background coflow in no job, released at 0.5, that ``out`` must wait for (a
      ``precedence`` arc from outside the job).
    """
    j0 = w.jobs[0]
    first, last = j0.stages[0], j0.stages[-1]
    cin = Coflow(f"{j0.id}.in", (Flow(1, 0, 2e5),))
    out = Coflow(f"{j0.id}.out", (Flow(1, 0, 3e5), Flow(0, 1, 1e5)), weight=j0.weight)
    ack = Coflow(f"{j0.id}.ack", (Flow(0, 1, 5e4),), weight=j0.weight)
    bg = Coflow("background", (Flow(0, 1, 2e5),), release=0.5)
    arcs = j0.arcs + ((cin.id, first), (last, out.id), (out.id, ack.id))
    if len(j0.stages) > 2:
        arcs += ((first, last),)
    jobs = (replace(j0, coflows=j0.coflows + (cin.id, out.id, ack.id), arcs=arcs),
            ) + w.jobs[1:]
    return replace(w, coflows=w.coflows + (cin, out, ack, bg), jobs=jobs,
                   precedence=(("background", out.id),))


@st.composite
def mapreduce_instances(draw, salt: int = 0):
    """Small random MapReduce workloads (``salt`` varies the seeds between tests)."""
    w = mapreduce_jobs(
        draw(st.integers(0, 2**31 - 1)) ^ salt, n_jobs=draw(st.integers(1, 4)),
        ports=draw(st.integers(2, 4)), cores=draw(st.integers(1, 2)), rate_bps=8e6,
        n_map=(1, 3), n_reduce=(1, 2), map_seconds=2.0, reduce_seconds=2.0,
        map_size=draw(st.sampled_from([0.3, 0.6])), reduce_size=draw(st.sampled_from([0.3, 0.7])),
        n_local=1, second_round=draw(st.sampled_from([0.0, 0.5])),
        mean_interarrival=draw(st.sampled_from([None, 1.0])), map_output_bytes=1e6)
    return with_extras(w) if draw(st.booleans()) else w


@pytest.mark.parametrize("pair", PAIRS)
@settings(max_examples=4, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_compute_network_pair_gives_verified_joint_schedules(pair, data):
    run_and_verify(data.draw(mapreduce_instances(zlib.crc32(pair.encode()))), pair)


def test_lp_bounds_are_below_every_verified_joint_schedule_of_their_class():
    for seed in range(3):
        w = with_extras(mapreduce_jobs(seed, n_jobs=3, ports=4, cores=2, rate_bps=8e6,
                                       n_map=(1, 3), n_reduce=(1, 2), map_seconds=2.0,
                                       reduce_seconds=2.0, n_local=1))
        lp = {k: compute_lower_bound(w, k).value for k in ("lp1", "lp2", "lp3")}
        for c, p in compute_policies().items():
            _, _, obj = run_and_verify(w, f"{c}+sebf")
            assert lp["lp1"] <= obj * (1 + 1e-9)
            assert lp[p.lower_bound] <= obj * (1 + 1e-9), (c, p.lower_bound)


# ------------------------------------------------------------------------------ by hand
def hand_example() -> JointWorkload:
    """Two ports, one 1 MB/s core, two machines of capacity 1.

    j0 (weight 2): map a (0.6, m0 only, 2 s, writes 2 MB), b (0.6, m0 or m1, 3 s, writes
    1 MB) -> shuffle -> reduce r (0.5, either machine, 4 s).
    j1 (weight 1), arrives at 1: c (0.5, m1 only, 2 s) -> fixed coflow out: 1 -> 0, 0.5 MB.
    """
    m = [Machine("m0", 1.0), Machine("m1", 1.0)]
    stages = [Stage("j0.map", [Task("a", 0.6, {"m0": 2.0}), Task("b", 0.6, {"m0": 3.0,
                                                                             "m1": 3.0})]),
              Stage("j0.reduce", [Task("r", 0.5, {"m0": 4.0, "m1": 4.0})]),
              Stage("j1.s", [Task("c", 0.5, {"m1": 2.0}, release=1.0)])]
    coflows = [Coflow("j0.shuffle", ()), Coflow("j1.out", (Flow(1, 0, 5e5),))]
    jobs = [JointJob("j0", ("j0.map", "j0.reduce"), ("j0.shuffle",),
                     (("j0.map", "j0.shuffle"), ("j0.shuffle", "j0.reduce")), 2.0),
            JointJob("j1", ("j1.s",), ("j1.out",), (("j1.s", "j1.out"),), 1.0)]
    return JointWorkload(Fabric(2, 1, 8e6), m, stages, coflows, jobs,
                         shuffles={"j0.shuffle"}, output_bytes={"a": 2e6, "b": 1e6})


@pytest.mark.parametrize("network", ["fair", "fifo", "sebf"])
def test_hand_computed_fifo_example(network):
    # fifo: a -> m0 [0, 2]; b does not fit beside a on m0 -> m1 [0, 3]; c (arrives at 1)
    # does not fit beside b on m1 -> [3, 5]. The map stage ends at 3: the shuffle opens;
    # r is placed where fifo would start it now: the fastest machine with room, m0. a's
    # 2 MB stay on m0 (local read); b's 1 MB goes 1 -> 0 at 1 MB/s: [3, 4]; r runs [4, 8].
    # c ends at 5: j1.out (0.5 MB, 1 -> 0) runs [5, 5.5].
    w = hand_example()
    r, doc, obj = run_and_verify(w, f"fifo+{network}")
    t = {d["id"]: d for d in doc["tasks"]}
    assert [(t[x]["machine"], t[x]["start"], t[x]["end"]) for x in "abcr"] == [
        ("m0", 0.0, 2.0), ("m1", 0.0, 3.0), ("m1", 3.0, 5.0), ("m0", pytest.approx(4.0),
                                                               pytest.approx(8.0))]
    cf = {c["id"]: c for c in doc["coflows"]}
    assert (cf["j0.shuffle"]["release"], cf["j0.shuffle"]["completion"]) == (3.0, 4.0)
    assert (cf["j1.out"]["release"], cf["j1.out"]["completion"]) == (5.0, 5.5)
    flows = [(d["src"], d["dst"]) for d in r.segment_dicts() if d.get("coflow") == "j0.shuffle"]
    assert set(flows) == {(1, 0)}
    assert [j["completion"] for j in doc["jobs"]] == [pytest.approx(8.0), 5.5]
    assert obj == pytest.approx(2 * 8.0 + 5.5)
    st_ = {s["id"]: s for s in doc["stages"]}
    assert st_["j0.reduce"]["ready"] == pytest.approx(4.0)


def test_hand_example_under_synchpack3_runs_b_on_its_first_listed_machine():
    # single-machine placement: b's fastest machines tie, the first listed (m0) wins; a and
    # b (0.6 each) cannot share m0, so one waits; r also goes to m0 (its first listed).
    w = hand_example()
    r, doc, _ = run_and_verify(w, "synchpack-3+fair")
    t = {d["id"]: d for d in doc["tasks"]}
    assert t["b"]["machine"] == t["a"]["machine"] == t["r"]["machine"] == "m0"
    # everything of j0 is on m0: the shuffle is all local and ends when it opens
    cf = {c["id"]: c for c in doc["coflows"]}
    assert cf["j0.shuffle"]["completion"] == cf["j0.shuffle"]["release"] == 5.0
    assert t["r"]["start"] == pytest.approx(5.0)


# ------------------------------------------------------------------------------ the verifier fails
@pytest.fixture(scope="module")
def good_run():
    w = hand_example()
    r = simulate_joint(w, "fifo+fair", segments=True)
    return w, json.loads(json.dumps(r.to_json())), r.segment_dicts()


def _mutated(segs, pred, **change):
    out = []
    for d in segs:
        d = dict(d)
        if pred(d):
            d.update(change)
        out.append(d)
    return out


@pytest.mark.parametrize("case, match", [
    ("reduce before shuffle", "starts at .* before j0.shuffle completes"),
    ("flow before map done", "before|release"),
    ("capacity", "holds .* > capacity"),
    ("placement", "outside its placement set"),
    ("wrong destination", "not in the realized network|consumer"),
    ("preempted", "is preempted"),
    ("two at once", "runs twice at once"),
    ("unfinished", "fractions sum"),
])
def test_verifier_rejects_each_kind_of_violation(good_run, case, match):
    w, doc, segs = good_run
    np_kw = dict(preemptive=False, migration=False, pinned=False)
    if case == "reduce before shuffle":
        segs = _mutated(segs, lambda d: d.get("task") == "r", start=3.5, end=7.5)
    elif case == "flow before map done":
        segs = _mutated(segs, lambda d: d.get("coflow") == "j0.shuffle", start=2.5, end=3.5)
    elif case == "capacity":
        segs = _mutated(segs, lambda d: d.get("task") == "c", start=2.0, end=4.0)
    elif case == "placement":
        segs = _mutated(segs, lambda d: d.get("task") == "c", machine="m0")
    elif case == "wrong destination":
        segs = _mutated(segs, lambda d: d.get("task") == "r", machine="m1")
    elif case == "preempted":
        segs = [x for d in segs for x in (
            [dict(d, end=5.0), dict(d, start=5.5, end=8.5)] if d.get("task") == "r" else [d])]
    elif case == "two at once":
        segs = [x for d in segs for x in (
            [dict(d, end=6.0), dict(d, machine="m1", start=5.0, end=7.0)]
            if d.get("task") == "r" else [d])]
        np_kw = dict(preemptive=True, migration=True, pinned=False)
    elif case == "unfinished":
        segs = _mutated(segs, lambda d: d.get("task") == "a", end=1.5)
    with pytest.raises(AssertionError, match=match):
        verify_joint(w, doc, segs, **np_kw)
    verify_joint(w, doc, good_run[2], preemptive=False, migration=False, pinned=False)


# ------------------------------------------------------------------------------ consistency
def test_without_coflows_joint_fifo_and_tetris_np_are_the_compute_policies_themselves():
    w = mapreduce_jobs(4, n_jobs=5, ports=4, mean_interarrival=1.5)
    only = JointWorkload(w.fabric, w.machines, w.stages, (),
                         [JointJob(j.id, j.stages, (), (), j.weight) for j in w.jobs])
    for name in ("fifo", "tetris-np"):
        r = simulate_joint(only, f"{name}+fair")
        ref = compute_policies()[name].schedule(only.compute)
        got, want = r.compute.segments_as_dicts(), ref.segments_as_dicts()
        assert [(d["task"], d["machine"]) for d in got] == [(d["task"], d["machine"])
                                                            for d in want]
        assert [x for d in got for x in (d["start"], d["end"])] == pytest.approx(
            [x for d in want for x in (d["start"], d["end"])], rel=1e-12, abs=1e-9)


def test_without_arcs_the_network_part_is_the_coflow_simulator_run():
    w = with_extras(mapreduce_jobs(2, n_jobs=2, ports=4))
    fixed = tuple(c if c.id not in w.shuffles else Coflow(c.id, (Flow(0, 2, 4e5), Flow(1, 2, 2e5)),
                                                          c.release, c.weight)
                  for c in w.coflows)
    free = JointWorkload(w.fabric, w.machines, w.stages, fixed,
                         [JointJob(j.id, j.stages, j.coflows, (), j.weight) for j in w.jobs])
    for net in ("sebf", "lp-coflow", "fair"):
        r = simulate_joint(free, f"fifo+{net}")
        ref = simulate(free.network, get_policy(net))
        assert r.network.coflow_completion.tolist() == pytest.approx(
            ref.coflow_completion.tolist(), rel=1e-12)


def test_shuffle_carries_every_producer_byte_that_is_not_read_locally():
    w = mapreduce_jobs(5, n_jobs=4, ports=4, second_round=1.0)
    r, doc, _ = run_and_verify(w, "tetris-np+sebf")
    sent = defaultdict(float)
    for d in r.segment_dicts():
        if "coflow" in d:
            sent[d["coflow"]] += d["rate_bps"] / 8 * (d["end"] - d["start"])
    tasks = {t["id"]: t for t in doc["tasks"]}
    for c in w.coflows:
        prod = [t.id for s in w.stages if (s.id, c.id) in w.jobs[int(c.id[1:].split(".")[0])].arcs
                for t in s.tasks]
        cons = [t.id for s in w.stages if (c.id, s.id) in w.jobs[int(c.id[1:].split(".")[0])].arcs
                for t in s.tasks]
        remote = sum(w.output_bytes[p] * sum(tasks[q]["machine"] != tasks[p]["machine"]
                                             for q in cons) / len(cons) for p in prod)
        assert sent[c.id] == pytest.approx(remote, rel=1e-6)


def test_policy_names():
    assert split_policy("synchpack-3+lp-coflow") == ("synchpack-3", "lp-coflow")
    assert split_policy("sebf") == (DEFAULT_COMPUTE, "sebf")
    assert split_policy("psrs+mymod:MyPolicy") == ("psrs", "mymod:MyPolicy")
    assert split_policy("synchpack-3") == ("synchpack-3", None)
    assert split_policy("synchpack-3").network is None
    with pytest.raises(PolicyError, match="is a compute policy"):
        simulate_joint(hand_example(), "synchpack-3")
    with pytest.raises(PolicyError, match="unknown policy 'nope'"):
        split_policy("nope")
    with pytest.raises(PolicyError, match="unknown compute policy 'nope'"):
        split_policy("nope+sebf")
    with pytest.raises(PolicyError, match="unknown policy"):
        simulate_joint(hand_example(), "fifo+nope")


# ------------------------------------------------------------------------------ JSON and CLI
def test_joint_json_round_trips_and_coflow_only_files_stay_coflow_only(tmp_path):
    w = with_extras(mapreduce_jobs(3, n_jobs=3))
    p = tmp_path / "w.json"
    write_json(w, str(p))
    back = read_workload(str(p))
    assert isinstance(back, JointWorkload)
    assert joint_to_dict(back) == joint_to_dict(w)
    r1 = simulate_joint(w, "psrs+sebf")
    r2 = simulate_joint(back, "psrs+sebf")
    assert r1.job_completion.tolist() == r2.job_completion.tolist()
    q = tmp_path / "c.json"
    write_json(w.network.replace(coflows=w.coflows[-2:], jobs=(), precedence=()), str(q))
    assert type(read_json(str(q))) is Workload


def test_cli_runs_a_joint_workload_with_json_segments_and_bound(tmp_path):
    p, seg = tmp_path / "w.json", tmp_path / "seg.jsonl"
    w = hand_example()
    write_json(w, str(p))
    runner = CliRunner()
    res = runner.invoke(main, ["run", str(p), "--policy", "fifo+fair", "--json",
                               "--segments", str(seg)])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["policy"] == "fifo+fair" and doc["lp"] == "LP2"
    assert doc["lp_lower_bound"] <= doc["total_weighted_job_completion"]
    assert doc["total_weighted_job_completion"] == pytest.approx(21.5)
    lines = [json.loads(x) for x in seg.read_text().splitlines()]
    assert {"task", "machine", "start", "end"} in [set(d) for d in lines]
    verify_joint(w, doc, lines, preemptive=False, migration=False, pinned=False)
    res = runner.invoke(main, ["bound", str(p), "--lp", "synchpack-3", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["value"] <= 21.5
    res = runner.invoke(main, ["bound", str(p), "--lp", "flow"])
    assert res.exit_code == 2 and "--lp synchpack-1" in res.output
    res = runner.invoke(main, ["run", str(p), "--policy", "synchpack-3"])
    assert res.exit_code == 2 and "synchpack-3+lp-coflow" in res.output


# ------------------------------------------------------------------------------ bad input
GOOD = {
    "fabric": {"ports": 2, "cores": 1, "rate_bps": 8e6},
    "machines": [{"id": "m0", "capacity": [1.0]}, {"id": "m1", "capacity": 1.0}],
    "stages": [
        {"id": "map", "tasks": [{"id": "map0", "size": 0.5, "placement": {"m0": 2.0},
                                 "output_bytes": 1e6}]},
        {"id": "reduce", "tasks": [{"id": "red0", "size": 0.5,
                                    "placement": {"m0": 3.0, "m1": 3.0}}]}],
    "coflows": [{"id": "shuffle", "shuffle": True}],
    "jobs": [{"id": "j0", "weight": 2.0, "stages": ["map", "reduce"], "coflows": ["shuffle"],
              "arcs": [["map", "shuffle"], ["shuffle", "reduce"]]}],
}


def _bad(tmp_path, change):
    doc = json.loads(json.dumps(GOOD))
    change(doc)
    p = tmp_path / "bad.json"
    text = json.dumps(doc, indent=1)
    p.write_text(text)
    with pytest.raises(WorkloadError) as e:
        read_workload(str(p))
    return e.value, text, str(p)


def _line(text, needle):
    return next(n for n, ln in enumerate(text.splitlines(), 1) if needle in ln)


def test_the_good_document_reads_and_runs(tmp_path):
    p = tmp_path / "good.json"
    p.write_text(json.dumps(GOOD))
    w = read_json(str(p))
    assert isinstance(w, JointWorkload) and w.jobs[0].coflows == ("shuffle",)
    assert w.coflows[0].weight == 2.0                  # a job's coflow defaults to its weight
    r = simulate_joint(w, "fifo+fair")
    assert r.job_completion.tolist() == [pytest.approx(2.0 + 3.0)]   # red0 on m0: local


@pytest.mark.parametrize("change, field, needle, message", [
    (lambda d: d["stages"][0]["tasks"][0].update(size=1.5), "size", '"id": "map0"',
     "bigger than every machine of its placement set"),
    (lambda d: d["stages"][0]["tasks"][0].update(placement={}), "placement", '"id": "map0"',
     "empty placement set"),
    (lambda d: d["stages"][1]["tasks"][0]["placement"].update(m7=1.0), "placement",
     '"id": "red0"', "unknown machine 'm7'"),
    (lambda d: d["stages"][1]["tasks"][0]["placement"].update(m1="fast"), "placement",
     '"id": "red0"', "must be a processing time"),
    (lambda d: d["jobs"][0]["arcs"].append(["map", "sort"]), "arcs", '"id": "j0"',
     "unknown stage or coflow 'sort'"),
    (lambda d: d["jobs"][0].update(stages=["map", "reduce", "combine"]), "stages",
     '"id": "j0"', "unknown stage 'combine'"),
    (lambda d: d["jobs"][0]["arcs"].append(["reduce", "map"]), "arcs", '"id": "j0"',
     "cycle"),
    (lambda d: d["jobs"][0].update(stages=["map"], arcs=[["map", "shuffle"]]), "stages",
     '"id": "reduce"', "belongs to no job"),
    (lambda d: d["coflows"][0].update(flows=[{"src": 0, "dst": 1, "bytes": 5}]), "flows",
     '"id": "shuffle"', "is a shuffle and lists flows"),
    (lambda d: d["jobs"][0].update(arcs=[["shuffle", "reduce"]]), "arcs", '"id": "shuffle"',
     "no producing stage"),
    (lambda d: d["machines"].append({"id": "m2"}), "machines", '"machines"',
     "3 machines but the fabric has 2 ports"),
    (lambda d: d["stages"][0]["tasks"][0].update(output_bytes=-1), "output_bytes",
     '"id": "map0"', "must be >= 0"),
    (lambda d: d["stages"][0].update(after=["reduce"]), "after", '"id": "map"',
     "give precedence as job arcs"),
    (lambda d: d["machines"][0].update(capacity="big"), "capacity", '"id": "m0"',
     "must be a number or a non-empty list"),
    (lambda d: d["jobs"][0].pop("stages"), "stages", '"id": "j0"', "missing field 'stages'"),
    (lambda d: d.update(stages=[]), "stages", '"id": "j0"', "unknown stage 'map'"),
    (lambda d: d["coflows"].append({"id": "map", "flows": []}), "id", '"id": "map"',
     "names a stage and a coflow"),
])
def test_bad_joint_documents_name_file_line_and_field(tmp_path, change, field, needle,
                                                      message):
    e, text, path = _bad(tmp_path, change)
    assert message in e.message, e.message
    assert e.field == field
    assert e.source == path
    assert e.line == _line(text, needle), (str(e), needle)
    assert str(e).startswith(f"{path}:{e.line}: ")


# ------------------------------------------------------------------------------ experiment
def test_mapreduce_experiment_writes_every_row_and_replayable_workloads(tmp_path):
    from experiments.mapreduce import Config, run
    cfg = Config(jobs=3, seeds=(0,), settings=("batch",), compute=("fifo", "psrs"),
                 network=("fair",), out=str(tmp_path / "out"),
                 write_workloads=str(tmp_path / "w"))
    rows, text = run(cfg, verbose=False)
    assert [r["pair"] for r in rows] == ["fifo+fair", "psrs+fair"]
    saved = json.loads((tmp_path / "out" / "mapreduce.json").read_text())["rows"]
    assert saved == json.loads(json.dumps(rows))
    assert (tmp_path / "out" / "mapreduce.md").read_text().strip() == text.strip()
    w = read_workload(str(tmp_path / "w" / "mapreduce-batch-s0.json"))
    assert simulate_joint(w, "psrs+fair").total_weighted_job_completion == \
        rows[1]["weighted_completion"]
    best = min(rows, key=lambda r: r["weighted_completion"])
    assert f"{best['weighted_completion']:.1f}*" in text
    assert all(r["lp1"] <= r["weighted_completion"] for r in rows)


def test_job_times_name_every_stage_and_job_time_and_order_them():
    from controller.jobrun import JobTimes, job_times
    w = hand_example()
    r = simulate_joint(w, "fifo+fair")
    jt = job_times(w, r.compute.stage_completion, r.compute.task_start,
                   r.network.coflow_completion)
    assert isinstance(jt, JobTimes)
    assert np.array_equal(jt.stage_completion, r.stage_completion)
    assert np.array_equal(jt.job_completion, r.job_completion)
    assert np.all(jt.stage_ready <= jt.stage_start + 1e-9)
    assert np.all(jt.stage_start <= jt.stage_completion)
    assert np.all(jt.job_release <= jt.job_completion)
