"""The joint simulator: compute tasks and the network in one event loop.

A :class:`~controller.jobs.JointWorkload` runs under a *combined policy*
``compute+network`` (e.g. ``synchpack-3+lp-coflow``): the compute policy (registry
``controller.compute``) decides where and when tasks run, the network policy (registry
``controller.policies``) schedules the flows. A plain network policy name uses the compute
policy :data:`DEFAULT_COMPUTE` (``fifo``: arrival order, fastest machine with room,
non-preemptive; no LP, so a plain name stays cheap).

How the loop works
------------------
Both sides advance to the next *joint event*, the earliest of

* a job arriving (the release of its tasks);
* a stage completing that some coflow waits for (its shuffle opens);
* a coflow completing that some stage waits for (the stage becomes ready);

and at each event:

1. **Compute commits** what its current plan did up to now
   (:class:`~controller.compute.online.Replanner`: preemptive policies cut running tasks
   and keep their remaining fraction, non-preemptive ones let started tasks run to
   their end as background occupancy).
2. **Stages** whose tasks are all complete are complete; **coflows** all of whose
   predecessor stages are complete are *opened*: released to the network
   (``Simulator.open``). A run-time shuffle's consumer tasks are placed first and its
   flows made from where its producers finished (the rule of ``controller.jobs``).
3. **Compute re-plans**: the policy's offline algorithm (``ComputePolicy.plan``) runs on
   the residual instance of the ready work: tasks of arrived jobs whose stages wait for
   no incomplete coflow (stages still waiting for other stages are included: the plan
   orders them). Between events the plan is followed as computed: event-driven policies
   (FIFO, Tetris, JSQ-MW) decide at every task completion inside it, the SynchPack
   algorithms and PSRS follow their orderings; re-planning at arrivals and at stage
   readiness is the policies' online rule (algorithms.md 2.8).

Tasks hold their size of the machine's capacity while they run (the compute engine,
``controller.compute.packing``, enforces packing, placement and precedence inside every
plan). A preemptive policy without migration keeps a task that has run on its machine in
later plans; a task placed for a shuffle runs only on that machine.

The network is the flow-level :class:`~emulate.sim.Simulator` on the coflows known so
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

import dataclasses
import time as _time
from dataclasses import dataclass, field

import networkx as nx
import numpy as np

from controller.compute import ComputePolicy, compute_policies, get_compute_policy
from controller.compute.online import Replanner
from controller.compute.schedule import ComputeSchedule
from controller.jobs import JointWorkload, shuffle_flows
from controller.model import Coflow, Flow, Job, Workload
from controller.policies import Policy, PolicyError, available, get_policy
from emulate.records import RunResult, Segments, atomic_write
from emulate.sim import Simulator

__all__ = ["DEFAULT_COMPUTE", "split_policy", "JointSimulator", "JointResult",
           "simulate_joint"]

#: compute policy used when a joint workload is run under a plain network policy name
DEFAULT_COMPUTE = "fifo"


def split_policy(spec: str) -> tuple[str, str]:
    """``"compute+network"`` -> (compute, network); a plain network name gets
    :data:`DEFAULT_COMPUTE`.

    Raises
    ------
    PolicyError
        Unknown compute policy, or a plain name that is a compute policy only.
    """
    compute, plus, network = spec.partition("+")
    if not plus:
        compute, network = DEFAULT_COMPUTE, spec
        if ":" not in spec and spec not in available() and spec in compute_policies():
            raise PolicyError(f"{spec!r} is a compute policy; on a joint workload name both "
                              f"halves, e.g. {spec}+lp-coflow")
    if compute not in compute_policies():
        raise PolicyError(f"unknown compute policy {compute!r} in {spec!r}; known: "
                          f"{', '.join(compute_policies())}")
    if not network:
        raise PolicyError(f"no network policy in {spec!r} (compute+network, e.g. "
                          f"{compute}+lp-coflow)")
    return compute, network


class _KeepCores(Policy):
    """A network policy restarted mid-run: flows that have sent keep their core.

    An offline policy plans its cores in ``start`` as if nothing had been sent; after a
    restart some flows are already pinned (no migration), and their core is restored in
    every plan. Everything else is the wrapped policy's.
    """

    def __init__(self, inner: Policy):
        self.inner = inner
        self.name = inner.name or type(inner).__name__

    def start(self, workload: Workload) -> None:
        self.workload = workload
        self.inner.start(workload)

    def plan(self, state):
        p = self.inner.plan(state)
        pinned = (state.core >= 0) & ~state.flow_done
        if isinstance(p.core, np.ndarray) and p.core.shape == pinned.shape and \
                (p.core[pinned] != state.core[pinned]).any():
            p = dataclasses.replace(p, core=np.where(pinned, state.core, p.core))
        return p


class _Network:
    """The fabric across shuffles: a Simulator over the coflows known so far."""

    def __init__(self, jw: JointWorkload, make_policy, record: bool, gated: np.ndarray):
        self.jw = jw
        self.make_policy = make_policy
        self.record = record
        self.t = 0.0
        nc = len(jw.coflows)
        self.gated = gated                         # waits for open()
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
        self.local_flows = np.zeros(0, dtype=np.int64)
        self.local_cof = np.zeros(0, dtype=np.int64)
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
        newly = np.flatnonzero(sim.cdone & np.isnan(self.completion[self.local_cof]))
        out = []
        for n in newly:
            k = int(self.local_cof[n])
            self.completion[k] = sim.coflow_completion[n]
            out.append(k)
        return out

    def _retire(self) -> list[int]:
        """Stop the simulator: keep its flows' state, segments and completions."""
        sim = self.sim
        if sim is None:
            return []
        done = self._harvest()
        res = sim.result()                      # closes running segments at sim.t
        g = self.local_flows
        self.f_rem[g] = sim.rem
        self.f_core[g] = sim.pinned
        self.f_done[g] = sim.flow_completion
        self.sent[self.local_cof] = sim.sent
        if self.record and res.segments is not None:
            s = res.segments
            for col, v in zip(self.segs, (g[s.flow], s.core, s.start, s.end, s.rate_bps)):
                col.extend(v.tolist())
        self.events += sim.events
        self.policy_calls += sim.policy_calls
        self.sim = None
        return done

    def _build(self) -> list[int]:
        """(Re)start the simulator on the residual network at ``self.t``."""
        done = self._retire()
        jw = self.jw
        active = [k for k in range(len(jw.coflows))
                  if self.known[k] and np.isnan(self.completion[k])]
        if not active:
            return done
        pos = {k: n for n, k in enumerate(active)}
        coflows, local = [], []
        for k in active:
            c = jw.coflows[k]
            fl = [g for g in self.flows_of[k] if np.isnan(self.f_done[g]) and self.f_rem[g] > 0]
            local.extend(fl)
            coflows.append(Coflow(c.id, tuple(Flow(self.f_src[g], self.f_dst[g],
                                                   float(self.f_rem[g])) for g in fl),
                                  release=c.release, weight=c.weight))
        arcs = [(jw.coflows[a].id, jw.coflows[b].id) for a, b in self.arcs
                if a in pos and b in pos]
        jobs = []
        for j in jw.network.jobs:
            keep = tuple(c for c in j.coflows if jw.coflow_index[c] in pos)
            if keep:
                jobs.append(Job(j.id, keep, j.weight))
        w = Workload(jw.fabric, tuple(coflows), tuple(arcs), tuple(jobs), name=jw.name)
        gated = [pos[k] for k in active if self.gated[k] and not self.opened[k]]
        sim = Simulator(w, _KeepCores(self.make_policy()), segments=self.record, gated=gated)
        # resume: absolute time, cores of started flows, bytes each coflow has sent
        sim.t = self.t
        self.local_flows = np.array(local, dtype=np.int64)
        self.local_cof = np.array(active, dtype=np.int64)
        sim.pinned[:] = self.f_core[self.local_flows]
        sim.sent[:] = self.sent[self.local_cof]
        self.sim = sim
        self.rebuilds += 1
        sim.start()
        return done + self._harvest()

    # ---------------------------------------------------------------- interface
    def start(self) -> list[int]:
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
            index = {int(k): n for n, k in enumerate(self.local_cof)}
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
    extra : dict (replans, placement probes, network restarts, policy calls)
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
        """Per task (stage by stage): machine it finished on, start, end, preemptions."""
        s, a, jw = self.compute, self.compute.arrays, self.workload
        last = {}
        for k in np.argsort(s.end, kind="stable"):
            last[int(s.task[k])] = int(s.machine[k])
        out = []
        for st in jw.stages:
            for t in st.tasks:
                k = a.task_index[t.id]
                out.append({"id": t.id, "stage": st.id, "job": jw.job_of(st.id),
                            "machine": a.machine_ids[last[k]],
                            "start": float(s.task_start[k]), "end": float(s.task_completion[k]),
                            "preemptions": int(s.preemptions[k])})
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
        out += self.compute.segments_as_dicts()
        out.sort(key=lambda d: (d["start"], "task" in d))
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
        ``compute+network`` (see :func:`split_policy`).
    network_options : dict, optional
        Options of the network policy (e.g. ``mode``, ``objective``).
    segments : bool
        Record flow segments (task segments are always recorded).
    """

    def __init__(self, workload: JointWorkload, policy: str, *,
                 network_options: dict | None = None, segments: bool = False):
        self.jw = jw = workload
        self.policy = policy
        self.compute_name, self.network_name = split_policy(policy)
        self.cpol: ComputePolicy = get_compute_policy(self.compute_name)
        opts = dict(network_options or {})
        get_policy(self.network_name, **opts)            # fail early on a bad name/option
        self._make_policy = lambda: get_policy(self.network_name, **opts)
        self.record = segments
        cw = jw.compute
        a = self.a = cw.arrays
        self.tol = 1e-9 * max(1.0, float(a.proc[a.allowed].max()) if a.n_tasks else 1.0)
        self.rp = Replanner(a, self.cpol.plan, preemptive=self.cpol.preemptive,
                            keep_machine=not self.cpol.migration)
        sidx = {s: n for n, s in enumerate(a.stage_ids)}      # compute stage index
        cidx = jw.coflow_index
        g = jw.dag
        kind = jw.node_kind
        S, C = a.n_stages, len(jw.coflows)
        self.stage_cof_preds = [[cidx[p] for p in g.predecessors(sid) if kind[p] == "coflow"]
                                for sid in a.stage_ids]
        self.stage_stage_preds = [[sidx[p] for p in g.predecessors(sid) if kind[p] == "stage"]
                                  for sid in a.stage_ids]
        self.cof_stage_preds = [[sidx[p] for p in g.predecessors(c.id) if kind[p] == "stage"]
                                for c in jw.coflows]
        self.cof_consumers = [[sidx[s] for s in jw.consumer_stages(c.id)] for c in jw.coflows]
        self.gated = np.array([bool(p) for p in self.cof_stage_preds], dtype=bool)
        self.watch = np.array([any(kind[s] == "stage" for s in g.successors(c.id))
                               for c in jw.coflows], dtype=bool)
        self.gates = np.zeros(S, dtype=bool)                  # some coflow waits for it
        for ps in self.cof_stage_preds:
            self.gates[ps] = True
        self.stage_topo = [sidx[x] for x in nx.topological_sort(g) if kind[x] == "stage"]
        self.is_shuffle = np.array([c.id in jw.shuffles for c in jw.coflows], dtype=bool)
        self.stage_done = np.zeros(S, dtype=bool)
        self.stage_completion = np.full(S, np.nan)
        self.job_arrival = a.job_release
        self.net = _Network(jw, self._make_policy, segments, self.gated)
        self.probes = 0
        self.events = 0
        self.t = 0.0

    # ---------------------------------------------------------------- compute side
    def _plannable(self, t: float) -> np.ndarray:
        """Tasks the compute policy may plan at ``t``."""
        a, net = self.a, self.net
        blocked = np.zeros(a.n_stages, dtype=bool)
        for s in self.stage_topo:
            blocked[s] = (any(np.isnan(net.completion[k]) for k in self.stage_cof_preds[s])
                          or any(blocked[p] for p in self.stage_stage_preds[s]))
        arrived = self.job_arrival <= t + self.tol
        ok = ~self.rp.done & ~blocked[a.task_stage] & arrived[a.task_job]
        return np.flatnonzero(ok)

    def _finished_on(self) -> np.ndarray:
        """Per task: machine of its last committed segment (-1 if none)."""
        seg = self.rp.seg
        out = np.full(self.a.n_tasks, -1, dtype=np.int64)
        end = np.full(self.a.n_tasks, -np.inf)
        for tk, i, e in zip(seg[0], seg[1], seg[3]):
            if e >= end[tk]:
                end[tk], out[tk] = e, i
        return out

    def _place(self, tasks: list[int], t: float) -> None:
        """Pin consumer ``tasks`` of shuffles opening at ``t`` to a machine each."""
        rp = self.rp
        tasks = [q for q in tasks if rp.pinned[q] < 0]
        if not tasks:
            return
        if self.cpol.pinned:
            for q in tasks:
                rp.pin(q, int(rp.a.fastest[q]))
            return
        # look ahead: where would the policy run them if they could start now, beside the
        # ready work and the consumers already placed that still wait for their shuffle?
        waiting = np.flatnonzero((rp.pinned >= 0) & ~rp.done)
        probe = np.union1d(np.union1d(self._plannable(t), waiting), tasks)
        s = rp.plan_at(t, probe, follow=False)
        self.probes += 1
        orig = s.arrays.orig_task
        M = self.a.n_machines
        busy = np.zeros((self.a.n_tasks, M))
        first = {}
        for j in np.argsort(s.start, kind="stable"):
            tk, i = int(orig[s.task[j]]), int(s.machine[j])
            busy[tk, i] += s.end[j] - s.start[j]
            first.setdefault(tk, i)
        for q in tasks:
            cands = np.flatnonzero(busy[q] >= busy[q].max() * (1 - 1e-9))
            rp.pin(q, first[q] if first[q] in cands else int(cands[0]))

    def _shuffle_flows(self, k: int) -> tuple:
        a, jw = self.a, self.jw
        where = self._finished_on()
        producers = [(int(where[q]), jw.output_bytes.get(a.task_ids[q], 0.0))
                     for s in self.cof_stage_preds[k] for q in a.stage_tasks[s]]
        consumers = [int(self.rp.pinned[q]) for s in self.cof_consumers[k]
                     for q in a.stage_tasks[s]]
        return shuffle_flows(producers, consumers)

    # ---------------------------------------------------------------- the loop
    def _settle(self, t: float) -> None:
        """Complete stages, open coflows, until nothing changes at ``t``."""
        net = self.net
        while True:
            sdone = self.rp.stage_done_at()
            newly = np.flatnonzero(~self.stage_done & (sdone <= t + self.tol))
            self.stage_done[newly] = True
            self.stage_completion[newly] = sdone[newly]
            ready = [k for k in np.flatnonzero(self.gated & ~net.opened)
                     if all(self.stage_done[s] for s in self.cof_stage_preds[k])]
            if not ready:
                return
            consumers = [q for k in ready if self.is_shuffle[k]
                         for s in self.cof_consumers[k] for q in self.a.stage_tasks[s]]
            self._place(consumers, t)
            flows = {k: self._shuffle_flows(k) for k in ready if self.is_shuffle[k]}
            net.open(ready, flows)

    def _next_compute_event(self, t: float) -> float:
        """The next joint event compute knows of: the projected completion of a stage
        some coflow waits for, the next job arrival, or the end of the current plan."""
        proj = self.rp.projected_completion()
        a = self.a
        nxt = np.inf
        end = -np.inf
        for s in np.flatnonzero(~self.stage_done):
            c = proj[a.stage_tasks[s]].max()
            if self.gates[s]:
                nxt = min(nxt, c)
            if np.isfinite(c):
                end = max(end, c)
        later = self.job_arrival[self.job_arrival > t + self.tol]
        if len(later):
            nxt = min(nxt, float(later.min()))
        return min(nxt, end) if np.isfinite(end) else nxt

    def _finished(self) -> bool:
        return bool(self.stage_done.all() and not np.isnan(self.net.completion).any())

    def run(self) -> JointResult:
        wall = _time.perf_counter()
        net, rp = self.net, self.rp
        t = 0.0
        net.start()
        self._settle(t)
        self._replan(t)
        limit = 20 * (self.a.n_tasks + len(self.jw.coflows) + 10) ** 2
        while not self._finished():
            self.events += 1
            if self.events > limit:
                raise RuntimeError("joint simulation does not progress")
            t_stop = self._next_compute_event(t)
            if t_stop > t + self.tol:
                net.advance(t_stop, self.watch)
                t = max(t, net.t)
            else:
                t = max(t, t_stop)
            rp.commit(t)
            self._settle(t)
            self._replan(t)
        net.finish()
        self.t = t
        return self._result(_time.perf_counter() - wall)

    def _replan(self, t: float) -> None:
        tasks = self._plannable(t)
        if len(tasks):
            self.rp.plan_at(t, tasks)

    # ---------------------------------------------------------------- records
    def _result(self, wall: float) -> JointResult:
        jw, a, net = self.jw, self.a, self.net
        sched = self.rp.schedule(self.policy, {"replans": self.rp.replans})
        # the realized network: every coflow with the flows it had, released when opened
        coflows = []
        order = []
        for k, c in enumerate(jw.coflows):
            gs = net.flows_of[k]
            order.extend(gs)
            coflows.append(Coflow(c.id, tuple(Flow(net.f_src[g], net.f_dst[g], net.f_bytes[g])
                                              for g in gs),
                                  release=float(net.release[k]), weight=c.weight))
        realized = Workload(jw.fabric, tuple(coflows), jw.network.precedence, (),
                            name=jw.name)
        pos = np.empty(len(net.f_cof), dtype=np.int64)
        pos[np.array(order, dtype=np.int64)] = np.arange(len(order))
        segs = None
        if self.record:
            f, h, t0, t1, r = (np.array(x) for x in net.segs)
            segs = Segments(pos[f.astype(np.int64)] if len(f) else f.astype(np.int64),
                            h.astype(np.int64), t0.astype(float), t1.astype(float),
                            r.astype(float))
        flow_completion = np.empty(len(order))
        flow_completion[pos] = net.f_done
        run = RunResult(workload=realized, policy=self.network_name, engine="sim",
                        flow_completion=flow_completion, coflow_completion=net.completion.copy(),
                        segments=segs, wall_seconds=wall, events=net.events)
        # per stage (workload order) and job
        sidx = {s: n for n, s in enumerate(a.stage_ids)}
        order_s = [sidx[s.id] for s in jw.stages]
        comp = self.stage_completion[order_s]
        start = sched.task_start
        st_start = np.array([start[a.stage_tasks[s]].min() for s in order_s])
        done_at = {s.id: c for s, c in zip(jw.stages, comp)}
        done_at.update({c.id: x for c, x in zip(jw.coflows, net.completion)})
        jarr = {j: r for j, r in zip(a.job_ids, a.job_release)}
        ready = np.array([max([jarr[jw.job_of(s.id)]] +
                              [done_at[p] for p in jw.dag.predecessors(s.id)])
                          for s in jw.stages])
        jc = np.array([max(done_at[x] for x in j.stages + j.coflows) for j in jw.jobs])
        jr = np.array([jarr[j.id] for j in jw.jobs])
        extra = {"replans": self.rp.replans, "placement_probes": self.probes,
                 "network_restarts": net.rebuilds, "network_policy_calls": net.policy_calls,
                 "joint_events": self.events}
        return JointResult(jw, self.policy, self.compute_name, self.network_name, sched, run,
                           ready, st_start, comp, jr, jc, wall, extra)


def simulate_joint(workload: JointWorkload, policy: str, *, segments: bool = False,
                   network_options: dict | None = None) -> JointResult:
    """Run a joint workload under ``compute+network`` in the joint simulator.

    Parameters
    ----------
    workload : JointWorkload
    policy : str
        e.g. ``"synchpack-3+lp-coflow"``; a plain network policy name uses
        :data:`DEFAULT_COMPUTE`.
    segments : bool
        Record flow segments (needed by ``--segments`` and the verifier).
    network_options : dict, optional
        Options of the network policy (``mode``, ``objective``).

    Returns
    -------
    JointResult
    """
    return JointSimulator(workload, policy, network_options=network_options,
                          segments=segments).run()
