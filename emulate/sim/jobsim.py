"""The joint simulator: compute tasks and the network in one event loop.

A :class:`~controller.jobs.JointWorkload` runs under a *combined policy*
``compute+network`` (e.g. ``synchpack-3+lp-coflow``): the compute policy (registry
``controller.compute``) decides where and when tasks run, the network policy (registry
``controller.policies``) schedules the flows; :func:`controller.policyspec.split_policy`
splits the spec. A plain network policy name uses the compute policy
:data:`~controller.policyspec.DEFAULT_COMPUTE` (``fifo``); a plain compute policy name runs a
workload without coflows.

How the loop works
------------------
The compute half and the rules tying the halves are :class:`controller.jobrun.JobDriver`,
shared with the emulation (``controller.joint_runtime``), which runs the same steps at the
same events with tasks on real agents. Both sides advance to the next *joint event*, the
earliest of

* a job arriving (the release of its tasks);
* a stage completing that some coflow waits for (its shuffle opens);
* a coflow completing that some stage waits for (the stage becomes ready);

and at each event:

1. **Compute commits** what its current plan did up to now (the workload's job model,
   :mod:`controller.jobmodel`; under the default ``packing`` model,
   :class:`~controller.compute.online.Replanner`: preemptive policies cut running tasks
   and keep their remaining fraction, non-preemptive ones let started tasks run to
   their end as background occupancy).
2. **Stages** whose tasks are all complete are complete; **coflows** all of whose
   predecessor stages are complete are *opened*: released to the network
   (``Simulator.open``). A run-time shuffle's consumer tasks are placed first and its
   flows made from where its producers finished (the rule of ``controller.jobs``).
3. **Compute re-plans**: the model plans the ready work (packing: the policy's offline
   algorithm, ``ComputePolicy.plan``, on its residual instance): tasks of arrived jobs
   whose stages wait for no incomplete coflow (stages still waiting for other stages are
   included: the plan orders them). Between events the plan is followed as computed:
   event-driven policies (FIFO, Tetris, JSQ-MW) decide at every task completion inside
   it, the SynchPack algorithms and PSRS follow their orderings; re-planning at arrivals
   and at stage readiness is the policies' online rule (algorithms.md 2.8).

Tasks hold their size of the machine's capacity while they run (the compute engine,
``controller.compute.packing``, enforces packing, placement and precedence inside every
plan). A preemptive policy without migration keeps a task that has run on its machine in
later plans; a task placed for a shuffle runs only on that machine.

The network is the flow-level :class:`~emulate.sim.flowsim.Simulator` on the coflows known so
far. Coflows with predecessor stages are *gated*: they wait for ``open``. A shuffle's
flows exist only once it opens, so opening one restarts the simulator on the *residual*
network (remaining bytes of unfinished flows, the cores started flows are pinned to, the
bytes each coflow has sent, the current time) with a fresh network policy: offline
network policies (the LP ones) thus re-plan whenever a shuffle appears. A flow that has
sent keeps its core even where the restarted policy would put it elsewhere (no
migration). Coflow -> coflow precedence stays with the simulator.

Records: per task (machine it finished on, start, end, preemptions), per stage (ready,
start, completion), per coflow (release = when it was opened, completion), per job
(arrival, completion, weight), and with ``segments=True`` every flow segment and every
task segment (:meth:`JointResult.segment_dicts`).

Examples
--------
>>> from controller.jobs import mapreduce_jobs
>>> r = simulate_joint(mapreduce_jobs(0, n_jobs=2), "fifo+fair")
>>> [round(float(c), 3) for c in r.job_completion]
[21.054, 15.296]
"""
from __future__ import annotations

import time as _time
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from controller.compute.schedule import ComputeSchedule
from controller.jobrun import JobDriver, KeepCores, Residual, job_times, residual
from controller.jobs import JointWorkload
from controller.model import Coflow, Flow, Workload
from controller.policies import PolicyError, get_policy
from controller.policyspec import split_policy
from emulate.io.records import RunResult, Segments, atomic_write
from emulate.sim.flowsim import Simulator, StartPoint

__all__ = ["JointSimulator", "JointResult", "Network", "joint_result", "simulate_joint"]


class Network:
    """The fabric across shuffles: a Simulator over the coflows known so far.

    Besides the workload's coflows (a shuffle's flows added when it opens), a run may
    :meth:`add` coflows of its own at run time and :meth:`drop` unfinished ones (the
    redundancy model's checkpoint transfers, :mod:`emulate.sim.redundancy`): the
    simulator restarts on the residual network (:meth:`rebuild`). Per-coflow arrays are
    indexed by :attr:`coflows` (``jw.coflows`` first).
    """

    def __init__(self, jw: JointWorkload, make_policy, record: bool, gated: np.ndarray):
        self.jw = jw
        self.make_policy = make_policy
        self.record = record
        self.t = 0.0
        nc = len(jw.coflows)
        self.coflows = list(jw.coflows)
        self.gated = gated                         # waits for open()
        self.dropped = np.zeros(nc, dtype=bool)    # abandoned unfinished (drop())
        self.opened = np.zeros(nc, dtype=bool)
        self.known = np.zeros(nc, dtype=bool)      # flows known (in the simulator)
        self.release = np.array([c.release for c in jw.coflows], dtype=np.float64)
        self.completion = np.full(nc, np.nan)
        self.sent = np.zeros(nc)
        self.flows_of: list[list[int]] = [[] for _ in range(nc)]
        self.f_cof, self.f_src, self.f_dst, self.f_bytes = [], [], [], []
        self.f_rem = np.zeros(0)
        self.f_core = np.zeros(0, dtype=np.int64)
        self.f_done = np.zeros(0)
        self.segs = [[], [], [], [], []]
        self.sim: Simulator | None = None
        self.residual: Residual | None = None      # what the simulator runs on
        self.rebuilds = 0
        self.events = 0
        self.policy_calls = 0
        self.arcs = [(jw.coflow_index[a], jw.coflow_index[b]) for a, b in jw.network.precedence]
        for k, c in enumerate(jw.coflows):
            if c.id not in jw.shuffles:
                self._add(k, c.flows)

    # ---------------------------------------------------------------- bookkeeping
    def _add(self, k: int, flows) -> None:
        n0 = len(self.f_cof)
        for f in flows:
            if f.bytes > 0:
                self.flows_of[k].append(len(self.f_cof))
                self.f_cof.append(k)
                self.f_src.append(int(f.src))
                self.f_dst.append(int(f.dst))
                self.f_bytes.append(float(f.bytes))
        new = len(self.f_cof) - n0
        self.f_rem = np.concatenate([self.f_rem, self.f_bytes[n0:]])
        self.f_core = np.concatenate([self.f_core, np.full(new, -1, dtype=np.int64)])
        self.f_done = np.concatenate([self.f_done, np.full(new, np.nan)])
        self.known[k] = True

    def _harvest(self) -> list[int]:
        """Coflows the simulator completed since the last call."""
        sim = self.sim
        if sim is None:
            return []
        life, cof = sim.lifecycle, self.residual.coflows
        newly = np.flatnonzero(life.done & np.isnan(self.completion[cof]))
        out = []
        for n in newly:
            k = int(cof[n])
            self.completion[k] = life.completion[n]
            out.append(k)
        return out

    def _retire(self) -> list[int]:
        """Stop the simulator: keep its flows' state, segments and completions."""
        sim = self.sim
        if sim is None:
            return []
        done = self._harvest()
        res = sim.result()                      # closes running segments at sim.t
        g = self.residual.flows
        self.f_rem[g] = sim.rem
        self.f_core[g] = sim.pinned
        self.f_done[g] = sim.flow_completion
        self.sent[self.residual.coflows] = sim.sent
        if self.record and res.segments is not None:
            s = res.segments
            for col, v in zip(self.segs, (g[s.flow], s.core, s.start, s.end, s.rate_bps)):
                col.extend(v.tolist())
        self.events += sim.events
        self.policy_calls += sim.policy_calls
        self.sim = self.residual = None
        return done

    def _build(self) -> list[int]:
        """(Re)start the simulator on the residual network at ``self.t``."""
        done = self._retire()
        active = self.known & np.isnan(self.completion) & ~self.dropped
        if not active.any():
            return done
        res = residual(self.jw, self.arcs, active, np.asarray(self.f_cof, dtype=np.int64),
                       np.asarray(self.f_src, dtype=np.int64),
                       np.asarray(self.f_dst, dtype=np.int64),
                       np.where(np.isnan(self.f_done), self.f_rem, 0.0), self.coflows)
        held = self.gated & ~self.opened
        # resume: absolute time, cores of started flows, bytes each coflow has sent
        at = StartPoint(time=self.t, sent=self.sent[res.coflows],
                        pinned=self.f_core[res.flows])
        sim = Simulator(res.workload, KeepCores(self.make_policy()), segments=self.record,
                        gated=np.flatnonzero(held[res.coflows]), start_point=at)
        self.sim, self.residual = sim, res
        self.rebuilds += 1
        sim.start()
        return done + self._harvest()

    # ---------------------------------------------------------------- interface
    def start(self) -> list[int]:
        return self._build()

    def add(self, coflows) -> list[int]:
        """Release ``coflows`` (:class:`~controller.model.Coflow`, not the workload's) now;
        returns their indices. They run from the next :meth:`rebuild`."""
        ks = []
        for c in coflows:
            k = len(self.coflows)
            self.coflows.append(c)
            for name, v in (("gated", False), ("opened", True), ("known", False),
                            ("dropped", False), ("release", self.t),
                            ("completion", np.nan), ("sent", 0.0)):
                setattr(self, name, np.append(getattr(self, name), v))
            self.flows_of.append([])
            self._add(k, c.flows)
            ks.append(k)
        return ks

    def drop(self, ks) -> None:
        """Abandon unfinished coflows ``ks`` (what they sent stays sent); from the next
        :meth:`rebuild` they have no flows on the network."""
        self.dropped[np.asarray(ks, dtype=np.int64)] = True

    def rebuild(self) -> list[int]:
        """Restart the simulator on the residual network now (after :meth:`add` or
        :meth:`drop`); returns the coflows that completed meanwhile."""
        return self._build()

    def open(self, ks, flows: dict) -> list[int]:
        """Open coflows ``ks`` now; ``flows[k]`` gives the flows of a shuffle.

        Returns the coflows that completed at once (shuffles with nothing to send,
        coflows without flows)."""
        done = []
        rebuild = False
        for k in ks:
            self.opened[k] = True
            self.release[k] = max(self.release[k], self.t)
            if k in flows:
                self._add(k, flows[k])
                if self.flows_of[k]:
                    rebuild = True
                else:
                    self.completion[k] = self.release[k]
                    done.append(k)
        if rebuild:
            return done + self._build()
        if self.sim is not None:
            index = {int(k): n for n, k in enumerate(self.residual.coflows)}
            for k in ks:
                if k in index:
                    self.sim.open(index[k])
            done += self._harvest()
        return done

    def advance(self, until: float, watch: np.ndarray) -> list[int]:
        """Run the network up to ``until`` or until a coflow in ``watch`` completes.

        Returns the coflows completed meanwhile."""
        done: list[int] = []
        while self.t < until:
            if self.sim is not None and self.sim.finished:
                done += self._retire()
            if self.sim is None:
                if np.isfinite(until):
                    self.t = until
                elif not done:
                    left = [self.jw.coflows[k].id for k in np.flatnonzero(
                        np.isnan(self.completion))][:5]
                    raise RuntimeError(f"joint simulation stuck at t={self.t:g}: nothing "
                                       f"can run (unfinished coflows: {left})")
                break
            self.sim.step(until)
            self.t = self.sim.t
            new = self._harvest()
            done += new
            if any(watch[k] for k in new):
                break
        return done

    def finish(self) -> None:
        self._retire()


@dataclass
class JointResult:
    """The record of one joint run (times in seconds from the workload's time 0).

    Attributes
    ----------
    workload : JointWorkload
    policy, compute_policy, network_policy : str
    compute : ComputeSchedule
        Every task segment, over ``workload.compute.arrays``.
    network : RunResult
        Over the *realized* network workload: the coflows with the flows they had (a
        shuffle's as made at run time), each released when it was opened.
    stage_ready, stage_start, stage_completion : float arrays, per ``workload.stages``
    job_release, job_completion : float arrays, per ``workload.jobs``
    wall_seconds : float
    extra : dict (replans, placement probes, network restarts, policy calls, and what the
        job model adds: :meth:`JobModel.records <controller.jobmodel.JobModel.records>`)
    task_segments : list of dict or None
        The job model's own segment lines (:meth:`JobModel.segment_records
        <controller.jobmodel.JobModel.segment_records>`), written instead of the generic
        task lines; None: the generic ones.
    """

    workload: JointWorkload
    policy: str
    compute_policy: str
    network_policy: str
    compute: ComputeSchedule
    network: RunResult
    stage_ready: np.ndarray
    stage_start: np.ndarray
    stage_completion: np.ndarray
    job_release: np.ndarray
    job_completion: np.ndarray
    wall_seconds: float = 0.0
    extra: dict = field(default_factory=dict)
    task_segments: list | None = None

    @property
    def job_weight(self) -> np.ndarray:
        return np.array([j.weight for j in self.workload.jobs], dtype=np.float64)

    @property
    def total_weighted_job_completion(self) -> float:
        """``sum_j w_j C_j`` over jobs (absolute completion times)."""
        return float(np.dot(self.job_weight, self.job_completion))

    @property
    def total_weighted_job_delay(self) -> float:
        """``sum_j w_j (C_j - arrival_j)``."""
        return float(np.dot(self.job_weight, self.job_completion - self.job_release))

    @property
    def makespan(self) -> float:
        return float(self.job_completion.max()) if len(self.job_completion) else 0.0

    def task_records(self) -> list[dict]:
        """Per task (stage by stage): machine it finished on, start, end, preemptions.

        Under a job model whose tasks run as gangs without preemption (``moldable``), a
        task's segments are the machines it held at once: its record has ``allotment``
        (their number) and no preemptions."""
        from controller.jobmodel import get_job_model
        s, a, jw = self.compute, self.compute.arrays, self.workload
        model = get_job_model(jw.model)
        gangs = model.gang and not model.preemptive
        last = {}
        for k in np.argsort(s.end, kind="stable"):
            last[int(s.task[k])] = int(s.machine[k])
        out = []
        for st in jw.stages:
            for t in st.tasks:
                k = a.task_index[t.id]
                rec = {"id": t.id, "stage": st.id, "job": jw.job_of(st.id),
                       "machine": a.machine_ids[last[k]],
                       "start": float(s.task_start[k]), "end": float(s.task_completion[k]),
                       "preemptions": int(s.preemptions[k])}
                if gangs:
                    rec["allotment"], rec["preemptions"] = rec["preemptions"] + 1, 0
                out.append(rec)
        return out

    def to_json(self, lp_lower_bound: float | None = None, lp: str | None = None) -> dict:
        """The ``coflowemu run --json`` object of a joint run.

        The coflow-only keys (``coflows`` with ``release`` = when the coflow was opened,
        ``total_weighted_completion`` over coflows, ...) plus ``tasks``, ``stages``,
        ``jobs``, ``total_weighted_job_completion`` and ``makespan`` over jobs;
        ``lp_lower_bound`` is the compute LP ``lp`` (a lower bound on
        ``total_weighted_job_completion``).
        """
        jw = self.workload
        doc = self.network.to_json(lp_lower_bound)
        doc.update({
            "policy": self.policy, "compute_policy": self.compute_policy,
            "network_policy": self.network_policy, "workload": jw.name,
            "machines": len(jw.machines), "lp": lp,
            "makespan": self.makespan,
            "total_weighted_job_completion": self.total_weighted_job_completion,
            "total_weighted_job_delay": self.total_weighted_job_delay,
            "wall_seconds": self.wall_seconds,
            "tasks": self.task_records(),
            "stages": [{"id": s.id, "job": jw.job_of(s.id), "ready": float(r),
                        "start": float(b), "completion": float(c)}
                       for s, r, b, c in zip(jw.stages, self.stage_ready, self.stage_start,
                                             self.stage_completion)],
            "jobs": [{"id": j.id, "weight": j.weight, "release": float(r),
                      "completion": float(c)}
                     for j, r, c in zip(jw.jobs, self.job_release, self.job_completion)],
        })
        tasks_of = Counter(t["job"] for t in doc["tasks"])
        allot = {t["job"]: t["allotment"] for t in doc["tasks"]
                 if "allotment" in t and tasks_of[t["job"]] == 1}
        for j in doc["jobs"]:           # a job of one gang task holds its machines
            if j["id"] in allot:
                j["allotment"] = allot[j["id"]]
        doc.update(self.extra)
        return doc

    def segment_dicts(self) -> list[dict]:
        """Flow segments ``{"coflow", "src", "dst", "core", "start", "end", "rate_bps"}``
        (as ``RunResult.write_segments``) and task segments ``{"task", "machine",
        "start", "end"}``, sorted by start."""
        out = []
        net = self.network
        if net.segments is not None:
            a = net.workload.arrays
            ids = [c.id for c in net.workload.coflows]
            s = net.segments
            out += [{"coflow": ids[a.coflow[f]], "src": int(a.src[f]), "dst": int(a.dst[f]),
                     "core": int(h), "start": float(t0), "end": float(t1),
                     "rate_bps": float(r)}
                    for f, h, t0, t1, r in zip(s.flow, s.core, s.start, s.end, s.rate_bps)]
        out += self.compute.segments_as_dicts() if self.task_segments is None else \
            self.task_segments
        out.sort(key=lambda d: (d["start"], "coflow" not in d))
        return out

    def write_segments(self, path: str) -> int:
        """Write :meth:`segment_dicts` as JSON lines (atomically); returns how many."""
        import json
        if self.network.segments is None:
            raise ValueError("this run recorded no segments (run with segments=True)")
        lines = [json.dumps(d) for d in self.segment_dicts()]
        atomic_write(path, "\n".join(lines) + ("\n" if lines else ""))
        return len(lines)


class JointSimulator:
    """One joint run: a joint workload, a compute policy and a network policy.

    Parameters
    ----------
    workload : JointWorkload
    policy : str
        ``compute+network`` (see :func:`controller.policyspec.split_policy`).
    network_options : dict, optional
        Options of the network policy (e.g. ``mode``, ``objective``).
    segments : bool
        Record flow segments (task segments are always recorded).
    """

    def __init__(self, workload: JointWorkload, policy: str, *,
                 network_options: dict | None = None, segments: bool = False):
        self.jw = jw = workload
        self.policy = policy
        from controller.jobmodels.redundancy import has_transfers
        if has_transfers(workload):
            raise ValueError("a redundancy workload with checkpoint_bytes moves its "
                             "checkpoints on the network: run it with simulate_joint "
                             "(emulate.sim.redundancy.simulate_redundancy)")
        self.compute_name, self.network_name = split_policy(policy)
        opts = dict(network_options or {})
        if self.network_name is None and jw.coflows:
            raise PolicyError(f"{policy!r} is a compute policy only and the workload has "
                              f"{len(jw.coflows)} coflows; name both halves, e.g. "
                              f"{policy}+lp-coflow")
        if self.network_name is not None:
            get_policy(self.network_name, **opts)        # fail early on a bad name/option
        self._make_policy = lambda: get_policy(self.network_name, **opts)
        self.record = segments
        self.driver = JobDriver(jw, self.compute_name)
        self.net = Network(jw, self._make_policy, segments, self.driver.gated)
        self.events = 0
        self.t = 0.0

    def _open(self, ks, flows) -> None:
        self.net.open(ks, flows)

    def _settle(self, t: float) -> None:
        net = self.net
        self.driver.settle(t, self.driver.stage_done_at(), net.opened, net.completion,
                           self._open)

    def _finished(self) -> bool:
        return bool(self.driver.stage_done.all() and not np.isnan(self.net.completion).any())

    def run(self) -> JointResult:
        wall = _time.perf_counter()
        net, drv = self.net, self.driver
        t = 0.0
        net.start()
        self._settle(t)
        drv.replan(t, net.completion)
        limit = 20 * (drv.a.n_tasks + len(self.jw.coflows) + 10) ** 2
        while not self._finished():
            self.events += 1
            if self.events > limit:
                raise RuntimeError("joint simulation does not progress")
            t_stop = drv.next_event(t)
            if t_stop > t + drv.tol:
                net.advance(t_stop, drv.watch)
                t = max(t, net.t)
            else:
                t = max(t, t_stop)
            drv.commit(t)
            self._settle(t)
            drv.replan(t, net.completion)
        net.finish()
        self.t = t
        return self._result(_time.perf_counter() - wall)

    # ---------------------------------------------------------------- records
    def _result(self, wall: float) -> JointResult:
        net, drv = self.net, self.driver
        sched = drv.schedule(self.policy)
        segs = tuple(np.array(x) for x in net.segs) if self.record else None
        extra = {"replans": drv.model.replans, "placement_probes": drv.probes,
                 "network_restarts": net.rebuilds, "network_policy_calls": net.policy_calls,
                 "joint_events": self.events}
        extra.update(drv.model.records())
        res = joint_result(self.jw, self.policy, sched, drv.stage_completion,
                           (net.f_cof, net.f_src, net.f_dst, net.f_bytes), net.f_done,
                           net.release, net.completion, segs, engine="sim", wall=wall,
                           events=net.events, extra=extra)
        if self.record:
            res.task_segments = drv.model.segment_records()
        return res


def joint_result(jw: JointWorkload, policy: str, sched: ComputeSchedule,
                 stage_completion: np.ndarray, flows, flow_completion, coflow_release,
                 coflow_completion, segments, *, engine: str, wall: float, events: int,
                 extra: dict, coflows=None) -> JointResult:
    """The :class:`JointResult` of a run of either engine.

    ``flows`` = (coflow, src, dst, bytes) lists of every flow the run had (shuffles' as
    made at run time), ``flow_completion`` per flow, ``coflow_release`` (when opened) and
    ``coflow_completion`` per coflow of the run: ``coflows`` (default ``jw.coflows``; a
    run that released coflows of its own lists them after the workload's),
    ``segments`` = (flow, core, start, end, rate_bps) arrays over those flows or None;
    ``stage_completion`` in compute-stage order.
    """
    compute_name, network_name = split_policy(policy)
    f_cof, f_src, f_dst, f_bytes = (list(x) for x in flows)
    run_coflows = jw.coflows if coflows is None else coflows
    # the realized network: every coflow with the flows it had, released when opened
    by_cof: list[list[int]] = [[] for _ in run_coflows]
    for g, k in enumerate(f_cof):
        by_cof[int(k)].append(g)
    order = [g for gs in by_cof for g in gs]
    coflows = [Coflow(c.id, tuple(Flow(int(f_src[g]), int(f_dst[g]), float(f_bytes[g]))
                                  for g in gs),
                      release=float(coflow_release[k]), weight=c.weight)
               for k, (c, gs) in enumerate(zip(run_coflows, by_cof))]
    realized = Workload(jw.fabric, tuple(coflows), jw.network.precedence, (), name=jw.name)
    pos = np.empty(len(order), dtype=np.int64)
    pos[np.array(order, dtype=np.int64)] = np.arange(len(order))
    segs = None
    if segments is not None:
        f, h, t0, t1, r = (np.asarray(x) for x in segments)
        segs = Segments(pos[f.astype(np.int64)] if len(f) else f.astype(np.int64),
                        h.astype(np.int64), t0.astype(float), t1.astype(float),
                        r.astype(float))
    fc = np.empty(len(order))
    fc[pos] = np.asarray(flow_completion, dtype=float)
    run = RunResult(workload=realized, policy=network_name, engine=engine,
                    flow_completion=fc, coflow_completion=np.array(coflow_completion, float),
                    segments=segs, wall_seconds=wall, events=events)
    jt = job_times(jw, stage_completion, sched.task_start, run.coflow_completion)
    return JointResult(jw, policy, compute_name, network_name, sched, run, jt.stage_ready,
                       jt.stage_start, jt.stage_completion, jt.job_release, jt.job_completion,
                       wall, dict(extra))


def simulate_joint(workload: JointWorkload, policy: str, *, segments: bool = False,
                   network_options: dict | None = None) -> JointResult:
    """Run a joint workload under ``compute+network`` in the joint simulator.

    Parameters
    ----------
    workload : JointWorkload
    policy : str
        e.g. ``"synchpack-3+lp-coflow"``; a plain network policy name uses
        :data:`~controller.policyspec.DEFAULT_COMPUTE`, a plain compute policy name runs a
        workload without coflows.
    segments : bool
        Record flow segments (needed by ``--segments`` and the verifier).
    network_options : dict, optional
        Options of the network policy (``mode``, ``objective``).

    Returns
    -------
    JointResult

    A redundancy workload whose jobs move their checkpoints (``checkpoint_bytes``) runs
    in :func:`emulate.sim.redundancy.simulate_redundancy` (its transfers are coflows the
    redundancy model releases at run time).
    """
    from controller.jobmodels.redundancy import has_transfers
    if has_transfers(workload):
        from emulate.sim.redundancy import simulate_redundancy
        return simulate_redundancy(workload, policy, segments=segments,
                                   network_options=network_options)
    return JointSimulator(workload, policy, network_options=network_options,
                          segments=segments).run()
