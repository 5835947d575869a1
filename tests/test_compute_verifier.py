"""An independent verifier of compute schedules, its own tests, and every policy through it.

The verifier reads only the workload objects (``Task.placement``, ``Machine.capacity``,
``Stage.after``) and the id-based segments of a schedule; it shares no code with the
schedulers. It checks:

* every segment: known task, machine in the task's placement set, start >= release,
  positive length;
* a task never runs twice at once (never on two machines at once);
* the task's processing fractions ``sum (end - start) / p^machine`` sum to 1;
* capacity: at every time the sizes running on a machine sum to at most its capacity;
* class: non-preemptive -> one contiguous segment per task; no migration -> one machine
  per task; pinned -> the task's fastest machine;
* stage precedence: no task of a stage starts before every task of its predecessor
  stages has completed;
* the completion times and the objective the schedule reports.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.compute import compute_policies, get_compute_policy
from controller.compute.model import ComputeJob, ComputeWorkload, Machine, Stage, Task

TOL = 1e-6


class Infeasible(AssertionError):
    pass


def verify(w: ComputeWorkload, sched, *, preemptive=True, migration=True, pinned=False):
    """Check ``sched`` against ``w``; return the recomputed ``sum_j w_j C_j``."""
    segs = sched.segments_as_dicts()
    tasks = {t.id: t for j in w.jobs for s in j.stages for t in s.tasks}
    caps = {m.id: m.capacity[0] for m in w.machines}
    scale = max(1.0, max((s["end"] for s in segs), default=1.0))
    tol = TOL * scale
    by_task = {tid: [] for tid in tasks}
    for s in segs:
        if s["task"] not in tasks:
            raise Infeasible(f"unknown task {s['task']}")
        t = tasks[s["task"]]
        if s["machine"] not in t.placement:
            raise Infeasible(f"{t.id} runs on {s['machine']} outside its placement set")
        if t.size[0] > caps[s["machine"]] + tol:
            raise Infeasible(f"{t.id} is bigger than machine {s['machine']}")
        if s["start"] < t.release - tol:
            raise Infeasible(f"{t.id} starts at {s['start']} before its release {t.release}")
        if not s["end"] > s["start"]:
            raise Infeasible(f"{t.id}: empty or negative segment {s}")
        by_task[t.id].append(s)
    completion = {}
    for tid, ss in by_task.items():
        t = tasks[tid]
        if not ss:
            raise Infeasible(f"{tid} never runs")
        ss.sort(key=lambda s: s["start"])
        for a, b in zip(ss, ss[1:]):
            if b["start"] < a["end"] - tol:
                raise Infeasible(f"{tid} runs twice at once ({a['machine']}, {b['machine']})")
        work = sum((s["end"] - s["start"]) / t.placement[s["machine"]] for s in ss)
        if abs(work - 1.0) > 1e-6:
            raise Infeasible(f"{tid}: processing fractions sum to {work}, not 1")
        machines = {s["machine"] for s in ss}
        if not migration and len(machines) > 1:
            raise Infeasible(f"{tid} migrates between {sorted(machines)}")
        if not preemptive and len(ss) > 1:
            raise Infeasible(f"{tid} is preempted ({len(ss)} segments)")
        if pinned:
            pl = [m for m in t.placement if t.size[0] <= caps[m]]
            fastest = min(pl, key=lambda m: (t.placement[m], pl.index(m)))
            if machines != {fastest}:
                raise Infeasible(f"{tid} runs on {sorted(machines)}, not on its fastest "
                                 f"machine {fastest}")
        completion[tid] = ss[-1]["end"]
    for m, cap in caps.items():
        ev = []
        for s in segs:
            if s["machine"] == m:
                size = tasks[s["task"]].size[0]
                # (floating point: a task that ends within tol of another's start,
                # e.g. at 6.000000000000001 against 6.0 after re-plans, ends first)
                ev.append((s["end"] - tol, 0, -size))
                ev.append((s["start"], 1, size))
        ev.sort(key=lambda e: (e[0], e[1]))
        h = 0.0
        for x, _, d in ev:
            h += d
            if h > cap + 1e-6 * max(1.0, cap):
                raise Infeasible(f"machine {m} over capacity at {x}: {h} > {cap}")
    stage_done = {}
    for j in w.jobs:
        for s in j.stages:
            stage_done[s.id] = max(completion[t.id] for t in s.tasks)
    for j in w.jobs:
        for s in j.stages:
            for p in s.after:
                for t in s.tasks:
                    first = by_task[t.id][0]["start"]
                    if first < stage_done[p] - tol:
                        raise Infeasible(f"{t.id} starts at {first} before stage {p} "
                                         f"completes at {stage_done[p]}")
    job_c = np.array([max(stage_done[s.id] for s in j.stages) for j in w.jobs])
    if not np.allclose(job_c, sched.job_completion, rtol=1e-9, atol=tol):
        raise Infeasible("reported job completions differ from the segments")
    obj = float(sum(j.weight * c for j, c in zip(w.jobs, job_c)))
    if abs(obj - sched.weighted_completion) > 1e-7 * max(1.0, obj):
        raise Infeasible("reported objective differs from the segments")
    return obj


def verify_policy(w: ComputeWorkload, name: str, **options):
    """Run policy ``name`` on ``w`` (pinned if the policy pins) and verify it."""
    pol = get_compute_policy(name)
    inst = w.pinned() if pol.pinned else w
    s = pol.schedule(inst, **options)
    obj = verify(inst, s, preemptive=pol.preemptive, migration=pol.migration,
                 pinned=pol.pinned)
    return inst, s, obj


# ---------------------------------------------------------------------- random instances
@st.composite
def instances(draw, max_machines=3, max_jobs=4, max_tasks=3, max_p=6, releases=False,
              stages=False, integer=True):
    """Small random compute workloads (integer times and sizes)."""
    M = draw(st.integers(1, max_machines))
    caps = [draw(st.integers(2, 6)) for _ in range(M)]
    machines = [Machine(f"m{i}", (float(c),)) for i, c in enumerate(caps)]
    jobs = []
    for j in range(draw(st.integers(1, max_jobs))):
        n_st = draw(st.integers(1, 2)) if stages else 1
        rel = float(draw(st.integers(0, 8))) if releases else 0.0
        sts = []
        for s in range(n_st):
            ts = []
            for k in range(draw(st.integers(1, max_tasks))):
                ms = draw(st.lists(st.integers(0, M - 1), min_size=1, max_size=M, unique=True))
                size = draw(st.integers(1, max(caps[i] for i in ms)))
                pl = {f"m{i}": float(draw(st.integers(1, max_p))) for i in ms}
                ts.append(Task(f"j{j}s{s}t{k}", (float(size),), pl, rel))
            sts.append(Stage(f"j{j}s{s}", ts, after=(f"j{j}s{s - 1}",) if s else ()))
        jobs.append(ComputeJob(f"j{j}", sts, float(draw(st.integers(1, 5)))))
    return ComputeWorkload(machines, jobs)


ALL = sorted(compute_policies())
SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ---------------------------------------------------------------------- verifier tests
def _tiny():
    m = [Machine("m0", (2.0,)), Machine("m1", (2.0,))]
    t0 = Task("a", (2.0,), {"m0": 2.0, "m1": 4.0})
    t1 = Task("b", (1.0,), {"m0": 1.0}, release=1.0)
    return ComputeWorkload(m, [ComputeJob("j", [Stage("s", [t0]), Stage("r", [t1],
                                                                        after=("s",))])])


class _Fake:
    def __init__(self, segs, jc):
        self._s = segs
        self.job_completion = np.array(jc, float)
        self.weighted_completion = float(jc[0])

    def segments_as_dicts(self):
        return self._s


def _seg(t, m, s, e):
    return {"task": t, "machine": m, "start": s, "end": e}


def test_verifier_accepts_a_feasible_schedule():
    w = _tiny()
    ok = _Fake([_seg("a", "m0", 0, 2), _seg("b", "m0", 2, 3)], [3.0])
    assert verify(w, ok, preemptive=False, migration=False) == 3.0


@pytest.mark.parametrize("segs,kw,msg", [
    ([_seg("a", "m1", 0, 4), _seg("b", "m0", 1, 2)], {}, "before stage"),
    ([_seg("a", "m0", 0, 1), _seg("a", "m1", 1, 3), _seg("b", "m0", 3, 4)], {}, None),
    ([_seg("a", "m0", 0, 1), _seg("a", "m1", 1, 3), _seg("b", "m0", 3, 4)],
     {"migration": False}, "migrates"),
    ([_seg("a", "m0", 0, 1), _seg("a", "m0", 2, 3), _seg("b", "m0", 3, 4)],
     {"preemptive": False}, "preempted"),
    ([_seg("a", "m0", 0, 1), _seg("a", "m1", 0.5, 2.5), _seg("b", "m0", 3, 4)], {}, "twice"),
    ([_seg("a", "m0", 0, 1.5), _seg("b", "m0", 2, 3)], {}, "sum to"),
    ([_seg("a", "m0", 0, 2), _seg("b", "m1", 2, 3)], {}, "placement"),
    ([_seg("a", "m1", 0, 4), _seg("b", "m0", 4, 5)], {"pinned": True}, "fastest"),
])
def test_verifier_rejects_each_kind_of_violation(segs, kw, msg):
    w = _tiny()
    end = max(s["end"] for s in segs)
    fake = _Fake(segs, [end])
    if msg is None:
        verify(w, fake, **kw)
        return
    with pytest.raises(Infeasible, match=msg):
        verify(w, fake, **kw)


def test_verifier_rejects_over_capacity_and_early_release():
    m = [Machine("m0", (2.0,))]
    t0 = Task("a", (2.0,), {"m0": 2.0})
    t1 = Task("b", (1.0,), {"m0": 1.0}, release=1.0)
    w = ComputeWorkload(m, [ComputeJob("j", [Stage("s", [t0, t1])])])
    with pytest.raises(Infeasible, match="capacity"):
        verify(w, _Fake([_seg("a", "m0", 0, 2), _seg("b", "m0", 1, 2)], [2.0]))
    with pytest.raises(Infeasible, match="release"):
        verify(w, _Fake([_seg("a", "m0", 1, 3), _seg("b", "m0", 0, 1)], [3.0]))
    with pytest.raises(Infeasible, match="reported"):
        verify(w, _Fake([_seg("a", "m0", 0, 2), _seg("b", "m0", 2, 3)], [2.5]))


# ---------------------------------------------------------------------- every policy
@settings(max_examples=120, **SETTINGS)
@given(w=instances())
def test_every_policy_is_feasible_offline(w):
    for name in ALL:
        verify_policy(w, name)


@settings(max_examples=60, **SETTINGS)
@given(w=instances(releases=True, stages=True))
def test_every_policy_is_feasible_with_releases_and_stages(w):
    for name in ALL:
        verify_policy(w, name)


@settings(max_examples=60, **SETTINGS)
@given(w=instances(releases=True, stages=True), tau0=st.sampled_from([0.5, 2.0, 7.0]))
def test_every_online_policy_is_feasible(w, tau0):
    for name in ALL:
        opts = {"online": True}
        if name.startswith("synchpack"):
            opts["tau0"] = tau0
        verify_policy(w, name, **opts)


@settings(max_examples=40, **SETTINGS)
@given(w=instances(max_p=40, max_jobs=5), seed=st.integers(0, 3))
def test_non_integer_sizes_and_long_tasks_stay_feasible(w, seed):
    rng = np.random.default_rng(seed)
    jobs = [ComputeJob(j.id, [Stage(s.id, [Task(t.id, (t.size[0] * rng.uniform(0.5, 1.0),),
                                                 {m: p * rng.uniform(0.7, 1.3)
                                                  for m, p in t.placement.items()},
                                                 t.release) for t in s.tasks], s.after)
                              for s in j.stages], j.weight) for j in w.jobs]
    w2 = ComputeWorkload(w.machines, jobs)
    for name in ALL:
        verify_policy(w2, name)
