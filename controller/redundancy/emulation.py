"""The redundancy model on the emulation: copies on the agents, decisions in the controller.

A ``"model": "redundancy"`` workload run with ``--engine mininet`` (a compute policy
alone, ``srpt+r``, ``fair+r``, ...: the jobs move no data) does not replay the simulator's
plan. :class:`RedundancyEmulationRun` is a narrow path beside the joint runtime
(:mod:`controller.joint_runtime`, whose pieces are fixed-demand stretches of known length:
a copy's length depends on its machine's speed, which only the agent follows in real
time):

* **the agents run the copies.** Machine ``i`` is the host on port ``i``; its agent gets
  the machine's speed process at registration and runs each copy against it in (scaled)
  real time (:mod:`emulate.mininet.copies`: a copy's progress is ``share x integral of
  the rate`` over the wall time it ran). A copy that covers its job's remaining work
  reports ``copy_done`` with the instant it did: that is the job's departure;
* **the controller decides at the events it sees**: an arrival (a timer at its workload
  time) or a departure *as reported*. At each it performs the **checkpoint**: it stops
  every running copy, each agent answers with its copy's progress at that instant, the
  job's remaining work drops by its best copy's progress (the most advanced copy's state
  becomes every copy's), and the policy re-decides with the same kernel as the simulator
  (:func:`controller.redundancy.policies.allocate`) on the state it knows: the jobs that
  have arrived and not departed, ordered by the remaining work it computed from the
  reports (SRPT) or by arrival. The new copies start when their agents get them.

With checkpoint transfers (jobs with ``checkpoint_bytes``, run under ``compute+network``,
:mod:`controller.redundancy.transfers`) the checkpoint also decides where each job's
state must go: each transfer is released as a coflow of real flows between the agents
(appended to the run's network at run time, the network policy restarted on the
residual network as the joint runtime does for shuffles, enforced on the switches like
any coflow); a copy that needs the state starts when its transfer's coflow has
completed (the receivers' reports); a superseded transfer is abandoned (its flows paused
at their senders for good, their connections not reused).

What the emulation costs beside the simulator: the wall time between an event and the new
copies' start (the machines idle meanwhile), a copy's run after the departure of its job
until its stop arrives (wasted), and the agent's wake-up lateness (reported, not counted
as work). The records are the simulator's (:mod:`controller.jobmodels.redundancy`): per
job ``arrival``, ``work``, ``completion``, ``flowtime``; copy segments cut at the speed
change points, their ``work`` integrated from the speed process (and checked against the
agents' reported progress: ``progress_mismatch``); plus the simulator's prediction for
the same speed processes and the per-job flowtime error against it
(:func:`emulate.mininet.redundancy.redundancy_result` makes them from :meth:`result`).

The speed process sent to an agent ends at a horizon well past the simulator's last
departure (the last rate holds beyond it); the run says if the emulation went past it.
"""
from __future__ import annotations

import time

import numpy as np

from controller.jobmodels.redundancy import RedundancyModel, checkpoint_sizes
from controller.redundancy.policies import SRPT_ORDER, allocate, keep_machines, parse
from controller.redundancy.simulator import Run
from controller.redundancy.speed import Speed, from_points
from controller.joint_runtime import ResidualPolicy
from controller.redundancy.transfers import CheckpointState, Transfer, transfer_id
from controller.classes import DRAIN_CLASS, tos_of
from controller.runtime import IDLE, PAUSED, EmulationRun, RunAborted, RunConfig

__all__ = ["RedundancyEmulationRun", "emulated_policy", "flowtime_error", "speed_horizon",
           "agent_speeds"]

ANSWER_TIMEOUT = 5.0
"""Seconds an agent has to answer ``copy_run`` / ``copy_stop`` before the run fails."""


def speed_horizon(run: Run) -> float:
    """How far the agents get the speed processes: three times the simulator's last
    departure, plus 100 (the emulation's departures lag the simulator's by its latency)."""
    end = float(np.max(run.completion)) if len(run.completion) else 0.0
    return 3.0 * end + 100.0


def agent_speeds(run: Run) -> Speed:
    """The speed processes the agents get: ``run``'s up to :func:`speed_horizon`.

    Raises
    ------
    WorkloadError
        A machine has too many change points for one message to its agent (the API's
        :data:`~controller.api.MAX_LINE`): shorten the workload or lengthen the periods.
    """
    import json

    from controller.api import MAX_LINE
    from controller.model import WorkloadError
    horizon = speed_horizon(run)
    pts = []
    for m in range(run.speed.n):
        t, r = run.speed.points(m)
        keep = t < horizon
        pts.append((t[keep], r[keep]))
        size = len(json.dumps({"speed": [t[keep].tolist(), r[keep].tolist()]}))
        if size > MAX_LINE - 1024:
            raise WorkloadError(
                f"machine {m}: {int(keep.sum())} speed change points up to t={horizon:g} do "
                f"not fit in one message to its agent ({size} bytes, at most "
                f"{MAX_LINE - 1024}); emulate a shorter workload or longer speed periods",
                field="speed")
    return from_points(pts, peak=run.speed.peak)


def emulated_policy(policy: str):
    """The :class:`~controller.redundancy.policies.Choice` of a policy the emulation runs.

    Raises
    ------
    PolicyError
        A bad policy or option, or ``slot`` (slotted decisions are the simulator's: the
        emulation decides at the events it sees)."""
    from controller.policies import PolicyError
    try:
        ch = parse(policy)
    except ValueError as e:
        raise PolicyError(str(e)) from None
    if ch.slot:
        raise PolicyError(f"{policy!r}: slotted decisions (slot) are the simulator's; the "
                          f"emulation decides at the events it sees")
    return ch


class RedundancyEmulationRun(EmulationRun):
    """See the module docstring. ``workload``: a JointWorkload of the redundancy model;
    ``policy``: one of its policies with its options (``srpt+r``, ``laps+r@beta=0.3``,
    ``srpt+r@assign=sticky``; slotted decisions are the simulator's only)."""

    def __init__(self, cfg: RunConfig, workload, policy: str, make_policy=None,
                 switches=None):
        self.jw = workload
        self.model = RedundancyModel(workload, policy)     # the simulator's prediction
        ch = emulated_policy(policy)
        self.beta, self.code, self.sticky = ch.beta, ch.code, ch.assign == "sticky"
        self.policy_name = policy
        inst = self.model.instance
        self.arrival, self.work = inst.arrival, inst.work
        n, N = inst.n_jobs, self.model.run.speed.n
        self.N = N
        self.horizon = speed_horizon(self.model.run)
        self.speed = agent_speeds(self.model.run)
        self.ckpt = CheckpointState(checkpoint_sizes(workload, self.model.order))
        self.transfers = bool(np.any(self.ckpt.nbytes > 0))
        if self.transfers and make_policy is None:
            from controller.policies import PolicyError
            raise PolicyError(f"{policy!r} names no network policy, and the workload's jobs "
                              f"move their checkpoints (checkpoint_bytes): name one, e.g. "
                              f"{policy}+sebf")
        net = ResidualPolicy(make_policy) if self.transfers else policy
        super().__init__(cfg, workload.network, net, switches)
        self.residual = net if self.transfers else None
        self.coflow_of: dict[int, int] = {}    # transfer -> the run's coflow
        self.transfer_of: dict[int, Transfer] = {}   # the run's coflow -> transfer
        self.waiting: dict[int, list] = {}     # transfer -> [(job, copy, machine, share)]
        self._arrived: list[int] = []          # coflows completed during a network step
        self.rem = inst.work.astype(np.float64).copy()
        self.arrived = np.zeros(n, dtype=bool)
        self.done = np.zeros(n, dtype=bool)
        self.comp = np.full(n, np.nan)
        self.live: dict[int, tuple] = {}   # seg -> (job, copy, machine, share, t_start wall)
        self.copies: list[tuple] = []      # (job, copy, machine, start, end, share, progress)
        self.nseg = 0
        self.checkpoints = 0
        cap = max(N, n) + 1
        self._cj, self._cm = np.empty(cap, np.int64), np.empty(cap, np.int64)
        self._cs = np.empty(cap)
        self._owner, self._head = np.full(N, -1, np.int64), np.full(n, -1, np.int64)
        self._link, self._phys = np.empty(N, np.int64), np.empty(N, np.int64)
        self.stats.update({"checkpoint_ms": [], "copy_late_ms": [], "arrival_lag_ms": [],
                           "departure_lag_ms": []})

    # ------------------------------------------------------------------ hooks
    def register_info(self, host: int) -> dict:
        if host >= self.N:
            return {}
        t, r = self.speed.points(host)
        return {"speed": [t.tolist(), r.tolist()]}

    def warm_up(self) -> None:
        """Compile the policy kernel before the clock starts; with transfers, have a fresh
        network policy plan a two-flow transfer once (a policy compiles or builds caches
        on its first call: inside the run that delayed the first transfer by a second)."""
        cj, cm, cs = self._cj, self._cm, self._cs
        allocate(self.code, np.arange(min(2, len(self.rem)), dtype=np.int64),
                 min(2, len(self.rem)), self.N, self.beta, cj, cm, cs)
        keep_machines(0, cj, cm, self.N, self._owner.copy(), self._head.copy(),
                      self._link, self._phys)
        if self.transfers and self.N > 1:
            from controller import rates
            from controller.lifecycle import CoflowLifecycle
            from controller.model import Coflow, Flow, Workload
            rates.warm_up()
            w = Workload(self.workload.fabric, (Coflow("warm-up", (Flow(0, 1, 1e6),
                                                                   Flow(1, 0, 1e6))),))
            a = w.arrays
            life = CoflowLifecycle(a)
            life.release_due(0.0)
            life.make_ready(0.0, np.zeros(a.n_flows, dtype=bool))
            st = life.state(0.0, "start", w, a.size.copy(), np.zeros(a.n_coflows),
                            np.zeros(a.n_flows, dtype=bool), np.full(a.n_flows, -1))
            p = self.residual.make_policy()
            p.start(w)
            p.plan(st).validate(st)

    def all_done(self) -> bool:
        return bool(self.done.all())

    def busy(self) -> bool:
        return bool(self.live) or any(t.kind == "arrival" for t in self.timers) or \
            super().busy()

    def prewarm_pairs(self) -> set:
        """With transfers, every ordered pair of machines (a state may go anywhere)."""
        n = self.N if self.transfers else 0
        return {(s, d) for s in range(n) for d in range(n) if s != d}

    def _coflow_done(self, k: int, tw: float) -> None:
        self._arrived.append(k)
        super()._coflow_done(k, tw)

    def on_t0(self) -> None:
        for r in np.unique(self.arrival).tolist():
            self._timer(self.at_w(float(r)), "arrival", float(r))

    def on_request(self, ch, msg: dict) -> None:
        if msg["op"] != "copy_done":
            return super().on_request(ch, msg)
        from controller.api import ApiError
        if ch.role != "agent":
            raise ApiError("copy_done: only a registered agent may report copies")
        self.events.put(("copy_done", time.time(),
                         (ch.host, msg["seg"], msg["t"], msg["progress"], msg["late"])))
        ch.answer(msg["id"])

    # ------------------------------------------------------------------ events
    def _handle(self, batch, first: bool) -> bool:
        other, event = [], False
        for ev in batch:
            kind, _, data = ev
            if kind == "arrival":
                new = (self.arrival <= data) & ~self.arrived
                self.arrived |= self.arrival <= data
                if new.any():
                    self.stats["arrival_lag_ms"].append(
                        (time.time() - self.at_w(data)) * 1e3)
                    event = True
            elif kind == "copy_done":
                host, seg, t, progress, late = data
                if seg in self.live and self.live[seg][2] == host:
                    self.stats["copy_late_ms"].append(late * 1e3)
                    self.stats["departure_lag_ms"].append((time.time() - t) * 1e3)
                    self._end_copy(seg, t, progress, True)
                    event = True
            elif kind != "release":       # the network's events (transfers), the rest
                other.append(ev)
        if other:
            first = super()._handle(other, first)
        if self._arrived:
            self._transfers_arrived()
        if event:
            self._checkpoint()
        return first

    def _end_copy(self, seg: int, t: float, progress: float, finished: bool) -> None:
        j, c, m, share, t_start = self.live.pop(seg)
        self.copies.append((j, c, m, self.now_w(t_start), self.now_w(t), share,
                            float(progress)))
        if finished and not self.done[j]:
            self.done[j] = True
            self.comp[j] = self.now_w(t)
            self.rem[j] = 0.0
            self.decision(event="departure", job=self.model.instance.ids[j],
                          tw_done=self.comp[j], machine=m)

    def _ask(self, msgs: list[tuple[int, dict]]) -> list[dict]:
        """Send requests to agents, wait for every answer (in order)."""
        reqs = [(host, self.agents[host].request_async(msg)) for host, msg in msgs]
        out = []
        deadline = time.time() + ANSWER_TIMEOUT
        for host, req in reqs:
            ans = self.agents[host].wait(*req, timeout=max(0.0, deadline - time.time()))
            if not ans or not ans.get("ok"):
                raise RunAborted(f"the agent of host {host} did not run a copy: {ans}")
            out.append(ans)
        return out

    def _checkpoint(self) -> None:
        """Stop the running copies, clone the best one's state, re-decide (module
        docstring); with transfers, send the state where it is missing."""
        tp = time.perf_counter()
        self.checkpoints += 1
        tw = max(self.now_w(), 0.0)
        segs = list(self.live)
        answers = self._ask([(self.live[s][2], {"op": "copy_stop", "seg": s}) for s in segs])
        gains: dict[int, list] = {}
        for s, ans in zip(segs, answers):
            j, c, m = self.live[s][:3]
            gains.setdefault(j, []).append((c, m, float(ans["progress"])))
            self._end_copy(s, float(ans["t"]), float(ans["progress"]), bool(ans["finished"]))
        abandoned = []
        for j, gs in gains.items():
            if not self.done[j]:
                self.rem[j] = max(self.rem[j] - max(g for _, _, g in gs), 0.0)
                abandoned += self.ckpt.checkpoint(j, [(m, g) for _, m, g in sorted(gs)], tw)
        for j in np.flatnonzero(self.done):
            abandoned += self.ckpt.abandon(int(j), tw)
        active = np.flatnonzero(self.arrived & ~self.done)
        if self.code in SRPT_ORDER:      # least remaining first, ties: earlier arrival
            active = active[np.lexsort((active, self.rem[active]))]
        nc = allocate(self.code, active.astype(np.int64), len(active), self.N, self.beta,
                      self._cj, self._cm, self._cs)
        if self.sticky:
            keep_machines(nc, self._cj, self._cm, self.N, self._owner, self._head,
                          self._link, self._phys)
        now, new, ncopy = [], [], {}
        self.waiting = {}
        for j in dict.fromkeys(int(x) for x in self._cj[:nc]):
            sel = np.flatnonzero(self._cj[:nc] == j)
            ms = [int(m) for m in self._cm[sel]]
            waits, x = self.ckpt.place(j, ms, tw)
            if x is not None:
                new.append(x)
            for c, (m, w) in enumerate(zip(ms, waits)):
                cp = (j, c, m, float(self._cs[sel[c]]))
                if w is None:
                    now.append(cp)
                else:
                    self.waiting.setdefault(w.id, []).append(cp)
        self._start(now)
        if new or abandoned:
            self._send(new, abandoned, tw)
        self.stats["checkpoint_ms"].append((time.perf_counter() - tp) * 1e3)
        self.decision(event="checkpoint", jobs=len(active), copies=nc, transfers=len(new),
                      abandoned=len(abandoned))

    def _start(self, copies) -> None:
        """Start ``copies`` = [(job, copy, machine, share)] on their agents now."""
        msgs, meta = [], []
        for j, c, m, sh in copies:
            seg = self.nseg
            self.nseg += 1
            msgs.append((m, {"op": "copy_run", "seg": seg, "share": sh,
                             "work": float(self.rem[j]), "t0": self.t0,
                             "scale": self.scale}))
            meta.append((seg, j, c, m, sh))
        for (seg, j, c, m, sh), ans in zip(meta, self._ask(msgs)):
            self.live[seg] = (j, c, m, sh, float(ans["t"]))

    # ------------------------------------------------------------------ transfers
    def _send(self, new, abandoned, tw: float) -> None:
        """Release the transfers ``new`` as coflows (real flows between the agents, from
        the leader's host to each destination's) and abandon ``abandoned`` (their flows
        paused at their agents for good), then restart the network policy on what is
        left."""
        from controller.model import Coflow, Flow, FlowArrays, Workload
        for x in abandoned:
            k = self.coflow_of[x.id]
            live = [int(f) for f in self.arrays.flows_of(k) if not self.flow_done[f]]
            updates: dict[int, list] = {}
            for f in live:
                self.lifecycle.eligible[f] = False
                if self.status[f] != IDLE:           # its connection is not reused
                    self.status[f], self.est_rate[f] = PAUSED, 0.0
                    updates.setdefault(int(self.arrays.src[f]), []).append(
                        {"flow": f, "tos": tos_of(DRAIN_CLASS), "paused": True,
                         "pace_bps": None})
            for host, items in updates.items():
                self.agents[host].send({"op": "update", "id": 0, "flows": items})
            self.lifecycle.complete(k, tw)
            self.decision(event="transfer_abandoned", coflow=self.workload.coflows[k].id,
                          flows=len(live))
        if new:
            ids = self.model.instance.ids
            w = self.workload
            cofs = [Coflow(transfer_id(ids, x), tuple(Flow(x.src, d, x.bytes) for d in x.dst),
                           release=tw) for x in new]
            k0 = len(w.coflows)
            self.workload = Workload(w.fabric, tuple(w.coflows) + tuple(cofs), w.precedence,
                                     w.jobs, name=w.name)
            n0 = self.arrays.n_flows
            self.arrays = FlowArrays.from_workload(self.workload)
            self._grow_flows(self.arrays.n_flows - n0)
            self.lifecycle.add_coflows(self.arrays, len(cofs))
            for i, x in enumerate(new):
                self.coflow_of[x.id], self.transfer_of[k0 + i] = k0 + i, x
                self.decision(event="transfer", coflow=cofs[i].id, src=x.src, dst=x.dst,
                              bytes=x.bytes)
        self.residual.restart(self, np.ones(self.arrays.n_coflows, dtype=bool))
        self._make_ready()
        if (~self.lifecycle.done).any():
            self._replan("start", time.time())

    def _transfers_arrived(self) -> None:
        """Transfers whose coflow completed: their machines hold the state, the copies
        waiting for them start now."""
        arrived, self._arrived = self._arrived, []
        start = []
        for k in arrived:
            x = self.transfer_of.get(k)
            if x is None or not x.in_flight:
                continue                              # abandoned (or not a transfer)
            self.ckpt.arrived(x, float(self.lifecycle.completion[k]))
            start += self.waiting.pop(x.id, [])
        self._start(start)

    # ------------------------------------------------------------------ result
    def result(self) -> dict:
        out = super().result()
        cols = list(zip(*self.copies)) if self.copies else [[]] * 7
        out["redundancy"] = {
            "completion": [None if np.isnan(x) else float(x) for x in self.comp],
            "copies": {k: [float(x) if k in ("start", "end", "share", "progress") else
                           int(x) for x in v]
                       for k, v in zip(("job", "copy", "machine", "start", "end", "share",
                                        "progress"), cols)},
            "checkpoints": self.checkpoints,
            "speed_horizon": self.horizon,
            "transfers": self.ckpt.records(self.model.instance.ids,
                                            self.jw.compute.arrays.machine_ids),
        }
        if self.transfers:
            a = self.arrays
            out["redundancy"]["network"] = {
                "coflows": [c.id for c in self.workload.coflows],
                "release": [float(c.release) for c in self.workload.coflows],
                "flows": [a.coflow.tolist(), a.src.tolist(), a.dst.tolist(),
                          a.size.tolist()],
                "received": self.rx.tolist()}
        return out


def flowtime_error(emulated: np.ndarray, simulated: np.ndarray) -> dict:
    """Per-job flowtime error of the emulation against the simulator (workload units, and
    relative to the simulator's flowtime): median and max of the absolute values, and the
    mean signed error (the emulation's latency makes it positive)."""
    d = np.asarray(emulated, float) - np.asarray(simulated, float)
    if not len(d):
        return {"median": 0.0, "max": 0.0, "mean": 0.0, "median_rel": 0.0, "max_rel": 0.0}
    rel = np.abs(d) / np.maximum(np.asarray(simulated, float), 1e-12)
    return {"median": float(np.median(np.abs(d))), "max": float(np.max(np.abs(d))),
            "mean": float(np.mean(d)), "median_rel": float(np.median(rel)),
            "max_rel": float(np.max(rel))}
