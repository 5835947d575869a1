"""The controller's joint run: compute tasks on the hosts beside the coflows on the switches.

:class:`JointEmulationRun` extends the network run (:class:`controller.runtime.EmulationRun`)
to a :class:`~controller.jobs.JointWorkload` under ``compute+network``. The compute
policy runs in the controller, beside the network policy, through the same
:class:`~controller.jobrun.JobDriver` as the joint simulator, at the same joint events
(a job arrives; a stage some coflow waits for completes; a coflow some stage waits for
completes; everything the compute plan started has finished). What differs is where the
truth comes from:

* **tasks run on the hosts.** Each piece of the compute plan
  (:class:`~controller.jobmodel.Piece`: task, machine, start, end) is sent at its planned
  start to the agent of that machine's host (machine ``i`` is the host on port ``i``),
  which admits it against the host's capacity (the job model's, never exceeded; a piece
  that does not fit yet waits) and holds the piece's demand for its duration times the
  time scale (:mod:`emulate.mininet.slots`). A piece also waits until the model lets its task
  start after what has *really* completed (:meth:`JobModel.earliest_start
  <controller.jobmodel.JobModel.earliest_start>`: its predecessor stages), no other piece
  of the task is still running (unless the model runs tasks as gangs) and none planned
  before it still waits (a late report never lets precedence, "one machine at a time"
  or the order of a task's pieces break). At a joint event a preemptive policy's
  running pieces are stopped (the new plan continues the tasks), a non-preemptive
  policy's run to their end. A piece of a
  preemptive plan ends at its planned end even if it started late, and what it missed
  (or overran) is added to (taken from) the task's later pieces, so no lag builds up
  along a machine and every task still gets its whole work;
* **a stage completes when the agents report its last task done**, and only then are
  the coflows it produces opened: a shuffle's flows are made from the machines the
  agents report the producers finished on (not the plan's last piece: a late piece can
  end a task elsewhere) (:meth:`JobDriver.shuffle_flows`) and appended to the run's flows;
* **the network policy is restarted on the residual network** whenever a shuffle's
  flows appear (:class:`ResidualPolicy`: the known, unfinished coflows with the bytes
  their flows still have to send; started flows keep their core), as the joint
  simulator restarts its network simulator.

Records: the network run's (flows, segments from the receivers' counters) plus every task
segment as the agents ran it, stage completions as reported, and when each coflow opened;
the engine turns them into the same :class:`~emulate.sim.jobsim.JointResult` as the simulator.
"""
from __future__ import annotations

import dataclasses
import logging
import time
from collections import Counter

import numpy as np

from controller.jobrun import JobDriver, KeepCores, residual
from controller.jobs import JointWorkload
from controller.plan import Plan, PlanError, State
from controller.policies import Policy
from controller.runtime import EmulationRun, RunConfig

__all__ = ["JointEmulationRun", "ResidualPolicy"]

log = logging.getLogger("coflowemu.controller")


class ResidualPolicy(Policy):
    """The network policy of a joint run, on the residual network of the last restart.

    :meth:`restart` starts a fresh policy (``make_policy()``, wrapped in
    :class:`~controller.jobrun.KeepCores`) on the known coflows that are not complete,
    each with the flows that are not done and the bytes they have left; :meth:`plan`
    translates the run's state to that workload and the plan back to the run's flows.
    """

    def __init__(self, make_policy):
        self.make_policy = make_policy
        self.inner: Policy | None = None
        self.name = getattr(make_policy(), "name", "") or "network"
        self.restarts = 0

    def restart(self, run, known=None) -> None:
        """Restart on ``run``'s residual network: the coflows ``known`` (default: a joint
        run's, every one but the shuffles not yet opened) that are not done; the run's
        coflows are ``run.workload.coflows`` (a redundancy run appends its checkpoint
        transfers there)."""
        a = run.arrays
        if known is None:
            known = ~run.driver.is_shuffle | run.opened
        # a flow whose last bytes are in flight still needs its plan: at least 1 byte
        remaining = np.where(run.flow_done, 0.0,
                             np.maximum(a.size - run.estimated_rx(), 1.0))
        res = residual(run.jw, a.arcs, known & ~run.lifecycle.done, a.coflow, a.src, a.dst,
                       remaining, run.workload.coflows)
        self.local, self.gmap, self.cmap = res.workload, res.flows, res.coflows
        self.inner = KeepCores(self.make_policy())
        self.inner.start(self.local)
        self.restarts += 1

    def start(self, workload) -> None:
        """Nothing: the run calls :meth:`restart` (the first time before its clock starts)."""

    def plan(self, state: State) -> Plan:
        if self.inner is None:
            raise PlanError("the network policy was not started")
        g, c = self.gmap, self.cmap
        la = self.local.arrays
        local = State(time=state.time, event=state.event, workload=self.local, arrays=la,
                      remaining=np.maximum(state.remaining[g], 0.0), sent=state.sent[c],
                      flow_done=state.flow_done[g], released=state.released[c],
                      ready=state.ready[c], done=state.done[c],
                      completion=state.completion[c], eligible=state.eligible[g],
                      core=state.core[g])
        p = self.inner.plan(local)
        p.validate(local)
        n, nc = state.arrays.n_flows, state.arrays.n_coflows
        core = np.where(state.core >= 0, state.core, 0).astype(np.int64)
        core[g] = p.core
        rank = np.full(n, np.inf)
        rank[g] = p.rank
        cap = None
        if p.rate_cap is not None:
            cap = np.full(n, np.nan)
            cap[g] = p.rate_cap
        lim = None
        if p.byte_limit is not None:
            lim = np.full(nc, np.inf)
            lim[c] = p.byte_limit
        return Plan(core, rank, cap, p.sharing, p.backfill, lim, p.horizon, None,
                    p.rates_fixed)


@dataclasses.dataclass
class _Seg:
    """One segment of a compute plan, as planned and as run."""

    task: int
    machine: int
    start: float          # planned, workload s
    end: float
    last: bool            # the task's last segment in its plan
    plan: int             # compute plan sequence number
    state: str = "planned"  # planned, blocked, sent, running, done, dropped
    t_start: float = float("nan")   # as run, workload s
    cut: float = float("nan")       # compute time at which a re-plan preempted it
    extra: float = 0.0              # work (s) added to it: what earlier pieces missed


class JointEmulationRun(EmulationRun):
    """See the module docstring. ``compute`` names a compute policy; ``make_policy()``
    returns a fresh network policy."""

    def __init__(self, cfg: RunConfig, workload: JointWorkload, compute: str, make_policy,
                 switches=None):
        self.jw = workload
        self.compute = compute
        self.driver = JobDriver(workload, compute)
        self.residual = ResidualPolicy(make_policy)
        super().__init__(cfg, workload.network, self.residual, switches,
                         gated=np.flatnonzero(self.driver.gated))
        nc = len(workload.coflows)
        a = self.driver.a
        self.opened = np.zeros(nc, dtype=bool)
        self.open_time = np.array([c.release for c in workload.coflows], dtype=np.float64)
        self.segs: dict[int, _Seg] = {}
        self.n_state: Counter = Counter()            # segments per state
        self.n_sending = np.zeros(a.n_tasks, dtype=np.int64)   # sent or running, per task
        self.cplan = 0
        self.task_end = np.full(a.n_tasks, np.nan)      # completion as reported
        self.task_machine = np.full(a.n_tasks, -1, dtype=np.int64)   # ... and where
        self.ran: list[tuple[int, int, float, float]] = []
        self.blocked: list[int] = []
        self.debt = np.zeros(a.n_tasks)   # work the plan counts as done but was not run
        self._newly_done: list[int] = []
        self.joint_steps = 0
        self.t_joint = 0.0            # compute time of the last joint event
        self.hold_at = np.inf         # the current plan's next joint event (compute time)
        self.stats.update({"compute_plan_ms": [], "task_start_lag_ms": []})
        self.residual.restart(self)

    # ------------------------------------------------------------------ hooks
    def register_info(self, host: int) -> dict:
        drv = self.driver
        return {"capacity": drv.model.capacity(host)} if host < drv.a.n_machines else {}

    def prewarm_pairs(self) -> set:
        """Every ordered pair of machines: shuffles may connect any of them."""
        m = self.driver.a.n_machines
        return {(s, d) for s in range(m) for d in range(m) if s != d} | super().prewarm_pairs()

    def warm_up(self) -> None:
        """The network policy's warm-up, and a throwaway driver's plan at the first
        arrival: a compute policy imports its solver (scipy's LP for synchpack) or
        compiles on its first call, which inside the run started the first tasks 0.2 s
        late (0.9 s on a loaded CI machine: job 0 of the MapReduce test 11 % long)."""
        super().warm_up()
        try:
            drv = JobDriver(self.jw, self.compute)
            first = float(drv.job_arrival.min()) if len(drv.job_arrival) else 0.0
            drv.replan(first, np.full(len(self.jw.coflows), np.nan))
        except Exception as e:  # noqa: BLE001 - the real call will report it
            log.warning("compute policy warm-up failed: %s", e)

    def all_done(self) -> bool:
        return self.lifecycle.finished and not np.isnan(self.task_end).any()

    def busy(self) -> bool:
        n = self.n_state
        return super().busy() or n["sent"] + n["running"] + n["blocked"] > 0 or \
            any(t.kind in ("task_go", "joint") for t in self.timers)

    def on_t0(self) -> None:
        arrivals = set(np.unique(self.driver.job_arrival).tolist()) | {0.0}
        for r in sorted(arrivals):
            self._timer(self.at_w(float(r)), "joint", "arrival")

    def _coflow_done(self, k: int, tw: float) -> None:
        self._newly_done.append(k)
        super()._coflow_done(k, tw)

    # ------------------------------------------------------------------ API side
    def on_request(self, ch, msg: dict) -> None:
        op = msg["op"]
        if op not in ("task_started", "task_done"):
            return super().on_request(ch, msg)
        from controller.api import ApiError
        if ch.role != "agent":
            raise ApiError(f"{op}: only a registered agent may report tasks")
        seg = self.segs.get(msg["seg"])
        if seg is None or seg.machine != ch.host:
            raise ApiError(f"{op}: segment {msg['seg']} was not sent to host {ch.host}")
        if op == "task_started":
            self.events.put(("task_started", time.time(), (msg["seg"], msg["t"])))
        else:
            self.events.put(("task_done", time.time(), (msg["seg"], msg["t"], msg["stopped"])))
        ch.answer(msg["id"])

    # ------------------------------------------------------------------ events
    def _handle(self, batch, first: bool) -> bool:
        net, joint = [], False
        for ev in batch:
            kind, _, data = ev
            if kind == "task_started":
                sid, t = data
                seg = self.segs[sid]
                self._move(seg, "running")
                seg.t_start = self.now_w(t)
                self.stats["task_start_lag_ms"].append(
                    max(seg.t_start - seg.start, 0.0) * self.scale * 1e3)
            elif kind == "task_done":
                joint |= self._task_done(*data)
            elif kind == "task_go":
                sid, plan = data          # sid -1: only the blocked pieces are retried
                seg = self.segs.get(sid)
                if plan == self.cplan and seg is not None and seg.state == "planned":
                    self._dispatch(sid)
            elif kind == "joint":
                joint = True
            else:
                net.append(ev)
        self._newly_done = []
        if net:
            first = super()._handle(net, first)
        if any(self.driver.watch[k] for k in self._newly_done):
            joint = True
        if self.blocked:
            self._retry_blocked()
        if joint and not self.all_done():
            self._joint_step()
        return first

    def _task_done(self, sid: int, t: float, stopped: bool) -> bool:
        """A segment ended on its agent; True if that is a joint event."""
        seg = self.segs[sid]
        tw = self.now_w(t)
        ran = 0.0
        if seg.state == "running" and not np.isnan(seg.t_start) and tw > seg.t_start:
            self.ran.append((seg.task, seg.machine, seg.t_start, tw))
            ran = tw - seg.t_start
        cut = not np.isnan(seg.cut)
        if self.driver.model.preemptive and (cut or not seg.last):
            # (a cut piece may have run to its end before the stop reached the agent)
            self._owe(seg, ran)
        self.decision(event="task_segment_done", seg=sid, ran=ran, stopped=stopped,
                      cut=None if not cut else seg.cut, debt=float(self.debt[seg.task]))
        self._move(seg, "done")
        joint = False
        # a task completes with its last piece (a gang's: the last of them to end)
        if seg.last and not stopped and not cut and not self.n_sending[seg.task]:
            self.task_end[seg.task] = tw
            self.task_machine[seg.task] = seg.machine
            self.decision(event="task_done", task=self.driver.a.task_ids[seg.task],
                          machine=seg.machine, tw_done=tw)
            s = self.driver.a.task_stage[seg.task]
            if not np.isnan(self.task_end[self.driver.a.stage_tasks[s]]).any():
                self.decision(event="stage_done", stage=self.driver.a.stage_ids[s], tw_done=tw)
                joint = bool(self.driver.gates[s])
        # the plan ran out: nothing it started is still running or waiting to start
        n = self.n_state
        if n["planned"] + n["blocked"] + n["sent"] + n["running"] == 0:
            joint = True
        return joint

    # ------------------------------------------------------------------ compute
    def _joint_step(self) -> None:
        """Commit, settle, re-plan the compute side (module docstring).

        Non-preemptive policies: the compute side's clock stops at the plan's next joint
        event (``hold_at``): a stage the plan completes at ``X`` is reported a little
        after ``X``, and the simulator re-plans at ``X`` before it starts anything the
        plan starts at ``X`` (a task started is committed whole). So tasks planned from
        ``hold_at`` on wait, and the step commits and re-plans at ``min(now, hold_at)``;
        the network and the records keep real time. Preemptive policies commit at now: a
        piece started at ``X`` is cut a moment later, and what each piece really ran is
        accounted for (:meth:`_owe`).
        """
        drv = self.driver
        self.joint_steps += 1
        t = max(min(max(self.now_w(), 0.0), self.hold_at), self.t_joint)
        self.t_joint = t
        preemptive = drv.model.preemptive
        # what the commit below counts as run must run; what it cuts must stop
        tol = drv.tol
        for sid, seg in list(self.segs.items()):
            if seg.state == "planned" and seg.plan != self.cplan:
                continue
            if seg.state in ("planned", "blocked") and seg.start < t - tol:
                if preemptive and seg.end > t + tol:
                    seg.end, seg.last = t, False        # its part before the cut
                if seg.state == "planned":
                    self._dispatch(sid)
            elif seg.state in ("planned", "blocked"):
                self._move(seg, "dropped")              # not committed: re-planned below
            elif preemptive and seg.state in ("sent", "running") and seg.end > t + tol:
                seg.cut = t
                self.agents[seg.machine].send({"op": "task_stop", "id": 0, "seg": sid})
        self.blocked = [x for x in self.blocked if self.segs[x].state == "blocked"]
        drv.commit(t)
        drv.complete(self.task_end, t)
        done_at = drv.stage_done_at(self.task_end)
        drv.settle(t, np.where(np.isfinite(done_at), np.minimum(done_at, t), np.inf),
                   self.opened, self.lifecycle.completion, self._open, self.task_machine)
        tp = time.perf_counter()
        pieces = drv.replan(t, self.lifecycle.completion)
        self.stats["compute_plan_ms"].append((time.perf_counter() - tp) * 1e3)
        self.hold_at = np.inf
        if pieces is not None:
            self._follow(t, pieces)

    def _follow(self, t: float, pieces) -> None:
        """Send the new plan's pieces at their planned starts."""
        self.cplan += 1
        tol = self.driver.tol
        if not self.driver.model.preemptive:
            self.hold_at = self.driver.next_event(t)
        for p in pieces:
            seg = _Seg(p.task, p.machine, p.start, p.end, p.last, self.cplan)
            sid = len(self.segs)
            self.segs[sid] = seg
            self.n_state["planned"] += 1
            if seg.start >= self.hold_at - tol:
                continue                  # re-planned at that event
            if seg.start <= t + tol:
                self._dispatch(sid)
            else:
                self._timer(self.at_w(seg.start), "task_go", (sid, self.cplan))
        self.decision(event="compute_plan", seq=self.cplan, segments=len(pieces))

    def _move(self, seg: _Seg, state: str) -> None:
        sending = ("sent", "running")
        self.n_sending[seg.task] += (state in sending) - (seg.state in sending)
        self.n_state[seg.state] -= 1
        self.n_state[state] += 1
        seg.state = state

    def _owe(self, seg: _Seg, ran: float) -> None:
        """A piece of a preemptive plan that ended early or late: the plan counts it as
        run from its planned start to its end (or the cut), plus what it was given to
        make up; what it really ran differs by the latencies. The difference (as a
        fraction of the task) goes to the task's last piece."""
        p = self.driver.model.work(seg.task, seg.machine)
        end = seg.end if np.isnan(seg.cut) else min(seg.end, seg.cut)
        credited = max(0.0, end - seg.start) + seg.extra
        self.debt[seg.task] += (credited - ran) / p

    def _can_start(self, seg: _Seg) -> bool:
        # the model's precedence: predecessor stages complete (and, say, a delay after them)
        wait = self.driver.model.earliest_start(seg.task, self.task_end)
        if wait == np.inf:
            return False
        if np.isfinite(wait) and wait > self.now_w() + self.driver.tol:
            self._timer(self.at_w(wait), "task_go", (-1, seg.plan))   # retried then
            return False
        if self.n_sending[seg.task] and not self.driver.model.gang:
            return False
        # pieces of a task run in the plan's order: one waiting ahead keeps this one back
        # (else a late piece could end the task, and the earlier one run after it)
        return not any(o.task == seg.task and (o.plan, o.start) < (seg.plan, seg.start)
                       for o in (self.segs[b] for b in self.blocked))

    def _dispatch(self, sid: int) -> None:
        seg = self.segs[sid]
        if not self._can_start(seg):
            self._move(seg, "blocked")
            self.blocked.append(sid)
            return
        a, model = self.driver.a, self.driver.model
        self._move(seg, "sent")
        msg = {"op": "task_run", "id": 0, "seg": sid,
               "demand": model.demand(seg.task, seg.machine)}
        p = model.work(seg.task, seg.machine)
        if model.preemptive and not seg.last:
            # a piece ends when the plan says, even if it started late (no lag builds up
            # along a machine's pieces); what it missed is owed to the task's last piece,
            # what earlier pieces ran too much is taken off this one
            seg.extra = max(min(self.debt[seg.task], 0.0) * p, -(seg.end - seg.start))
            self.debt[seg.task] -= seg.extra / p
            length = seg.end - seg.start + seg.extra
            msg["until"] = self.at_w(seg.end + seg.extra)
        else:
            # the last piece (or a whole non-preemptive task) runs its length, plus what
            # the task's earlier pieces missed
            seg.extra = self.debt[seg.task] * p
            self.debt[seg.task] = 0.0
            length = max(0.0, seg.end - seg.start + seg.extra)
        msg["seconds"] = length * self.scale
        self.decision(event="task_run", seg=sid, task=a.task_ids[seg.task], machine=seg.machine,
                      plan=seg.plan, start=seg.start, end=seg.end, length=length, last=seg.last)
        self.agents[seg.machine].send(msg)

    def _retry_blocked(self) -> None:
        waiting, self.blocked = self.blocked, []
        for sid in waiting:
            if self.segs[sid].state == "blocked":
                self._move(self.segs[sid], "planned")
                self._dispatch(sid)

    def _open(self, ks, flows: dict) -> None:
        """Open coflows ``ks`` now (``flows[k]``: a shuffle's flows); re-plan the network."""
        t = max(self.now_w(), 0.0)
        restart = False
        for k in ks:
            self.opened[k] = True
            self.open_time[k] = max(self.open_time[k], t)
            if k in flows:
                new = [f for f in flows[k] if f.bytes > 0]
                if new:
                    self._add_flows(k, new)
                    restart = True
            self.lifecycle.open(k)
            self.decision(event="coflow_open", coflow=self.jw.coflows[k].id,
                          flows=len(flows.get(k, ())))
        if restart:
            self.residual.restart(self)
            self._make_ready()
            self._replan("start", time.time())
        elif self._make_ready():
            self._replan("ready", time.time())

    def _add_flows(self, k: int, flows) -> None:
        """Append coflow ``k``'s new flows to the run (flow indices never change)."""
        a = self.arrays
        n = len(flows)
        self.arrays = dataclasses.replace(
            a, src=np.concatenate([a.src, [f.src for f in flows]]).astype(np.int64),
            dst=np.concatenate([a.dst, [f.dst for f in flows]]).astype(np.int64),
            coflow=np.concatenate([a.coflow, np.full(n, k)]).astype(np.int64),
            size=np.concatenate([a.size, [float(f.bytes) for f in flows]]))
        self._grow_flows(n)
        self.lifecycle.add_flows(self.arrays, k, n)

    # ------------------------------------------------------------------ result
    def result(self) -> dict:
        out = super().result()
        a = self.arrays
        drv = self.driver
        sd = drv.stage_done_at(self.task_end)
        out["joint"] = {
            "flows": [a.coflow.tolist(), a.src.tolist(), a.dst.tolist(), a.size.tolist()],
            "coflow_release": self.open_time.tolist(),
            "tasks": [list(x) for x in zip(*self.ran)] if self.ran else [[], [], [], []],
            "stage_completion": [None if not np.isfinite(x) else float(x) for x in sd],
            "replans": drv.model.replans, "placement_probes": drv.probes,
            "network_restarts": self.residual.restarts, "joint_events": self.joint_steps,
        }
        return out

