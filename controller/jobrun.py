"""The compute half of a joint run, shared by the joint simulator and the emulation controller.

A joint run (:class:`~controller.jobs.JointWorkload` under ``compute+network``) has two
halves: the network (coflows, scheduled by a network policy) and the compute (tasks of
stages, scheduled by a compute policy of the workload's job model,
:mod:`controller.jobmodel`). :class:`JobDriver` holds the job model and the rules that tie
the halves together; it talks to the model only through :class:`~controller.jobmodel.JobModel`,
and the engines talk to the compute side only through the driver and that interface
(pieces to run, completions, capacities, demands and work). The engines supply the network
and the clock:

* the joint simulator (``emulate.sim.jobsim``) runs the network in the flow-level simulator
  and takes the compute plan as what happens;
* the emulation controller (``controller.joint_runtime``) runs the network on real
  switches and has the agents execute the compute plan on the hosts: a stage completes
  when the agents report its last task finished.

Both call the same methods at the same joint events (a job arrives, a stage that a
coflow waits for completes, a coflow that a stage waits for completes, the compute plan
runs out):

1. :meth:`JobDriver.commit` makes the current compute plan final up to now;
2. :meth:`JobDriver.settle` completes stages and opens the coflows whose producing
   stages are complete (placing a shuffle's consumer tasks first and making its flows
   from where the producers finished: the rule of ``controller.jobs``);
3. :meth:`JobDriver.replan` has the model plan the ready work: the pieces to run
   (:class:`~controller.jobmodel.Piece`).

A shuffle's flows exist only once it opens, so both engines then restart the network
policy on the *residual network* (:func:`residual`: the known coflows that are not
complete, each with the bytes its unfinished flows have left), wrapped in
:class:`KeepCores`: flows that have sent keep their core.
"""
from __future__ import annotations

import dataclasses

import networkx as nx
import numpy as np

from controller.compute.schedule import ComputeSchedule
from controller.jobmodel import JobModel, Piece, get_job_model
from controller.jobs import JointWorkload, shuffle_flows
from controller.model import Coflow, Flow, Job, Workload
from controller.policies import Policy

__all__ = ["JobDriver", "JobTimes", "KeepCores", "Residual", "job_times", "residual",
           "residual_network"]


class KeepCores(Policy):
    """A network policy restarted mid-run: flows that have sent keep their core.

    An offline policy plans its cores in ``start`` as if nothing had been sent; after a
    restart some flows are already pinned (no migration), and their core is restored in
    every plan. Everything else is the wrapped policy's.
    """

    def __init__(self, inner: Policy):
        self.inner = inner
        self.name = inner.name or type(inner).__name__

    def start(self, workload) -> None:
        self.workload = workload
        self.inner.start(workload)

    def plan(self, state):
        p = self.inner.plan(state)
        pinned = (state.core >= 0) & ~state.flow_done
        if isinstance(p.core, np.ndarray) and p.core.shape == pinned.shape and \
                (p.core[pinned] != state.core[pinned]).any():
            p = dataclasses.replace(p, core=np.where(pinned, state.core, p.core))
        return p


class JobDriver:
    """The compute policy's side of one joint run; see the module docstring.

    Parameters
    ----------
    workload : JointWorkload
    compute : str
        A compute policy of the workload's job model (``workload.model``).

    Attributes
    ----------
    model : JobModel, the compute plan being followed and the committed work
    a : ComputeArrays of ``workload.compute``, for its structure only (tasks, stages,
        jobs, machines and their indices); what a task needs of a machine is the model's
    tol : float, the model's time tolerance
    gated : bool per coflow, waits for producing stages (opened by :meth:`settle`)
    watch : bool per coflow, some stage waits for it (its completion is a joint event)
    gates : bool per compute stage, some coflow waits for it
    stage_done, stage_completion : per compute stage (``a.stage_ids`` order)
    """

    def __init__(self, workload: JointWorkload, compute: str):
        self.jw = jw = workload
        self.model: JobModel = get_job_model(jw.model)(jw, compute)
        a = self.a = jw.compute.arrays
        self.tol = self.model.tol
        sidx = {s: n for n, s in enumerate(a.stage_ids)}
        cidx = jw.coflow_index
        g = jw.dag
        kind = jw.node_kind
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
        self.gates = np.zeros(a.n_stages, dtype=bool)
        for ps in self.cof_stage_preds:
            self.gates[ps] = True
        self.stage_topo = [sidx[x] for x in nx.topological_sort(g) if kind[x] == "stage"]
        self.is_shuffle = np.array([c.id in jw.shuffles for c in jw.coflows], dtype=bool)
        self.stage_done = np.zeros(a.n_stages, dtype=bool)
        self.stage_completion = np.full(a.n_stages, np.nan)
        self.job_arrival = a.job_release
        self.probes = 0

    # ---------------------------------------------------------------- compute side
    def plannable(self, t: float, coflow_completion: np.ndarray) -> np.ndarray:
        """Tasks the compute policy may plan at ``t``: not done, of an arrived job, in a
        stage that waits for no incomplete coflow (directly or through stages)."""
        a = self.a
        blocked = np.zeros(a.n_stages, dtype=bool)
        for s in self.stage_topo:
            blocked[s] = (any(np.isnan(coflow_completion[k]) for k in self.stage_cof_preds[s])
                          or any(blocked[p] for p in self.stage_stage_preds[s]))
        arrived = self.job_arrival <= t + self.tol
        ok = np.isnan(self.model.completion) & ~blocked[a.task_stage] & arrived[a.task_job]
        return np.flatnonzero(ok)

    def stage_done_at(self, task_end: np.ndarray | None = None) -> np.ndarray:
        """Per stage: the completion of its last task, inf while some task is not complete.

        ``task_end`` per task (nan: not complete): the agents' reports (emulation);
        default, the model's committed completions (the plan taken as what happens)."""
        end = self.model.completion if task_end is None else task_end
        out = np.full(self.a.n_stages, np.inf)
        for s, ts in enumerate(self.a.stage_tasks):
            e = end[ts]
            if not np.isnan(e).any():
                out[s] = e.max() if len(e) else 0.0
        return out

    def finished_on(self) -> np.ndarray:
        """Per task: machine of its last committed segment (-1 if none)."""
        seg = self.model.segments()
        out = np.full(self.a.n_tasks, -1, dtype=np.int64)
        end = np.full(self.a.n_tasks, -np.inf)
        for tk, i, e in zip(seg[0], seg[1], seg[3]):
            if e >= end[tk]:
                end[tk], out[tk] = e, i
        return out

    def place(self, tasks: list[int], t: float, coflow_completion: np.ndarray) -> None:
        """Pin consumer ``tasks`` of shuffles opening at ``t`` to a machine each."""
        model = self.model
        tasks = [q for q in tasks if model.placement(q) < 0]
        # where the policy always runs a task (single-machine placement), it is placed
        fixed = {q: model.fixed_machine(q) for q in tasks}
        for q in tasks:
            if fixed[q] >= 0:
                model.pin(q, fixed[q])
        tasks = [q for q in tasks if fixed[q] < 0]
        if not tasks:
            return
        # look ahead: where would the policy run them if they could start now, beside the
        # ready work and the consumers already placed that still wait for their shuffle?
        placed = np.array([model.placement(q) for q in range(self.a.n_tasks)], dtype=np.int64)
        waiting = np.flatnonzero((placed >= 0) & np.isnan(model.completion))
        probe = np.union1d(np.union1d(self.plannable(t, coflow_completion), waiting), tasks)
        pieces = model.plan(t, probe, follow=False)
        self.probes += 1
        busy = np.zeros((self.a.n_tasks, self.a.n_machines))
        first = {}
        for p in pieces:
            busy[p.task, p.machine] += p.end - p.start
            first.setdefault(p.task, p.machine)
        for q in tasks:
            cands = np.flatnonzero(busy[q] >= busy[q].max() * (1 - 1e-9))
            model.pin(q, first[q] if first[q] in cands else int(cands[0]))

    def shuffle_flows(self, k: int, where: np.ndarray) -> tuple:
        """The flows of shuffle ``k`` now (its producers finished, consumers placed);
        ``where`` per task: the machine it finished on."""
        a, jw = self.a, self.jw
        producers = [(int(where[q]), jw.output_bytes.get(a.task_ids[q], 0.0))
                     for s in self.cof_stage_preds[k] for q in a.stage_tasks[s]]
        consumers = [self.model.placement(q) for s in self.cof_consumers[k]
                     for q in a.stage_tasks[s]]
        return shuffle_flows(producers, consumers)

    # ---------------------------------------------------------------- joint events
    def commit(self, t: float) -> None:
        """The current compute plan is final up to ``t``."""
        self.model.commit(t)

    def complete(self, task_end: np.ndarray, t: float) -> None:
        """What the agents finished is finished (``task_end`` per task, nan: not reported),
        whatever the model's plan still counts; a report after ``t`` counts at ``t``."""
        fin = np.flatnonzero(~np.isnan(task_end) & np.isnan(self.model.completion))
        if len(fin):
            self.model.complete(fin, np.minimum(task_end[fin], t))

    def schedule(self, name: str = "") -> ComputeSchedule:
        """The committed pieces as a schedule over ``workload.compute.arrays``."""
        return ComputeSchedule.from_segments(self.a, tuple(np.array(x) for x in
                                                           self.model.segments()),
                                             name, {"replans": self.model.replans})

    def settle(self, t: float, stage_done_at: np.ndarray, opened: np.ndarray,
               coflow_completion: np.ndarray, open_coflows,
               finished_on: np.ndarray | None = None) -> None:
        """Complete stages and open coflows, until nothing changes at ``t``.

        ``stage_done_at`` per stage is its completion (inf while running): the plan's
        (simulator) or the agents' reports (emulation), :meth:`stage_done_at`;
        ``finished_on`` per task, the
        machine it finished on, likewise (default: the plan's, :meth:`finished_on`; a
        producer's output is where it really finished, which on the emulation may differ
        from the plan's last piece). ``open_coflows(ks, flows)`` opens
        coflows ``ks`` on the network now (``flows[k]``: a shuffle's flows) and sets
        ``opened``; ``coflow_completion`` is read after it (a shuffle with nothing to send
        completes when it opens).
        """
        while True:
            newly = np.flatnonzero(~self.stage_done & (stage_done_at <= t + self.tol))
            self.stage_done[newly] = True
            self.stage_completion[newly] = stage_done_at[newly]
            ready = [k for k in np.flatnonzero(self.gated & ~opened)
                     if all(self.stage_done[s] for s in self.cof_stage_preds[k])]
            if not ready:
                return
            consumers = [q for k in ready if self.is_shuffle[k]
                         for s in self.cof_consumers[k] for q in self.a.stage_tasks[s]]
            self.place(consumers, t, coflow_completion)
            where = self.finished_on() if finished_on is None else finished_on
            flows = {k: self.shuffle_flows(k, where) for k in ready if self.is_shuffle[k]}
            open_coflows(ready, flows)

    def replan(self, t: float, coflow_completion: np.ndarray) -> tuple[Piece, ...] | None:
        """Plan the ready work at ``t`` (the new plan is followed until the next commit);
        returns its pieces sorted by start, or None when nothing is plannable."""
        tasks = self.plannable(t, coflow_completion)
        if len(tasks):
            return self.model.plan(t, tasks)
        return None

    def next_event(self, t: float) -> float:
        """The next joint event compute knows of: the projected completion of a stage
        some coflow waits for, the next job arrival, or the end of the current plan."""
        proj = self.model.projected_completion()
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


@dataclasses.dataclass(frozen=True)
class Residual:
    """The network a restarted network policy sees, and where its parts are in the run.

    Attributes
    ----------
    workload : Workload
        The residual network (:func:`residual_network`).
    flows : int array
        The run's index of each of its flows (its flow ``n`` is the run's ``flows[n]``).
    coflows : int array
        The run's index of each of its coflows.
    """

    workload: Workload
    flows: np.ndarray
    coflows: np.ndarray


def residual(jw: JointWorkload, arcs, active: np.ndarray, coflow: np.ndarray,
             src: np.ndarray, dst: np.ndarray, remaining: np.ndarray,
             run_coflows=None) -> Residual:
    """The residual network of a restart, the same for both engines (the joint simulator
    restarts its network simulator on it, the controller its network policy).

    Parameters
    ----------
    jw : JointWorkload
    arcs : iterable of (k, k') coflow index pairs, the coflow precedence
    active : bool array per coflow of ``jw.coflows``
        The coflows it has (known, a shuffle once opened, and not complete), each with its
        flows that have bytes left, in the run's order.
    coflow, src, dst : int arrays per run flow
    remaining : float array per run flow
        Bytes the flow still has to send; a flow with none (finished) is left out.
    run_coflows : list of Coflow, optional
        The run's coflows, ``active`` indexes them (default ``jw.coflows``; a run whose
        job model releases coflows of its own appends them: the redundancy model's
        checkpoint transfers).

    Returns
    -------
    Residual
    """
    coflows = np.flatnonzero(active)
    flows = np.flatnonzero(active[coflow] & (remaining > 0))
    flows = flows[np.argsort(coflow[flows], kind="stable")]
    left = {k: [] for k in coflows.tolist()}
    for g in flows.tolist():
        left[int(coflow[g])].append((src[g], dst[g], remaining[g]))
    return Residual(residual_network(jw, left, arcs, run_coflows), flows.astype(np.int64),
                    coflows)


def residual_network(jw: JointWorkload, left: dict, arcs, run_coflows=None) -> Workload:
    """The network a restarted network policy sees (built by :func:`residual`): coflow
    ``k`` (index in ``run_coflows``, default ``jw.coflows``) with the flows ``left[k]`` =
    [(src, dst, bytes still to send)], in that order; the coflow arcs ``(k, k')`` among
    them and each job's coflows among them."""
    run_coflows = jw.coflows if run_coflows is None else run_coflows
    coflows = []
    for k, flows in left.items():
        c = run_coflows[k]
        coflows.append(Coflow(c.id, tuple(Flow(int(s), int(d), float(b)) for s, d, b in flows),
                              release=c.release, weight=c.weight))
    arcs = [(jw.coflows[x].id, jw.coflows[y].id) for x, y in arcs if x in left and y in left]
    jobs = []
    for j in jw.network.jobs:
        keep = tuple(c for c in j.coflows if jw.coflow_index[c] in left)
        if keep:
            jobs.append(Job(j.id, keep, j.weight))
    return Workload(jw.fabric, tuple(coflows), tuple(arcs), tuple(jobs), name=jw.name)


@dataclasses.dataclass(frozen=True, eq=False)
class JobTimes:
    """When the stages and jobs of a joint run were ready, started and completed (seconds).

    Attributes
    ----------
    stage_ready : float array, per ``workload.stages``
        The latest of the job's arrival and the completions of the stage's predecessors
        (stages and coflows).
    stage_start : float array, per ``workload.stages``, when its first task started
    stage_completion : float array, per ``workload.stages``, when its last task finished
    job_release : float array, per ``workload.jobs``, the job's arrival
    job_completion : float array, per ``workload.jobs``
        The latest completion of its stages and coflows.
    """

    stage_ready: np.ndarray
    stage_start: np.ndarray
    stage_completion: np.ndarray
    job_release: np.ndarray
    job_completion: np.ndarray


def job_times(jw: JointWorkload, stage_completion: np.ndarray, task_start: np.ndarray,
              coflow_completion: np.ndarray) -> JobTimes:
    """The :class:`JobTimes` of a run: per stage ready, start, completion; per job arrival
    and completion.

    ``stage_completion`` is in ``jw.compute.arrays.stage_ids`` order, ``task_start`` per
    compute task, ``coflow_completion`` per ``jw.coflows``.
    """
    a = jw.compute.arrays
    sidx = {s: n for n, s in enumerate(a.stage_ids)}
    order = [sidx[s.id] for s in jw.stages]
    comp = np.asarray(stage_completion, dtype=float)[order]
    start = np.array([task_start[a.stage_tasks[s]].min() for s in order])
    done_at = {s.id: c for s, c in zip(jw.stages, comp)}
    done_at.update({c.id: x for c, x in zip(jw.coflows, coflow_completion)})
    arrival = {j: r for j, r in zip(a.job_ids, a.job_release)}
    ready = np.array([max([arrival[jw.job_of(s.id)]] +
                          [done_at[p] for p in jw.dag.predecessors(s.id)])
                      for s in jw.stages])
    jc = np.array([max(done_at[x] for x in j.stages + j.coflows) for j in jw.jobs])
    jr = np.array([arrival[j.id] for j in jw.jobs])
    return JobTimes(stage_ready=ready, stage_start=start, stage_completion=comp,
                    job_release=jr, job_completion=jc)
