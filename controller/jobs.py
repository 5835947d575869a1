"""Joint workloads: multi-stage jobs whose nodes are compute stages and coflows.

A datacenter job computes, moves data, computes again: a map stage, a shuffle, a reduce
stage. A :class:`JointWorkload` puts both halves of such jobs on one fabric:

* **machines** are the fabric's hosts: ``machines[i]`` is the host on port ``i`` (a fabric
  may have more ports than machines: hosts without compute). Each has a capacity vector
  (:class:`~controller.compute.model.Machine`; the first resource is packed).
* **stages** are sets of compute tasks (:class:`~controller.compute.model.Stage`): a task
  needs ``size`` of a machine while it runs, may run only on the machines of its
  placement set, for the processing time given there. A stage completes with its last
  task.
* **coflows** are the network's (:class:`~controller.model.Coflow`), with flows between
  ports, a release and a weight.
* **jobs** (:class:`JointJob`) own stages and coflows and give the *arcs* of their DAG:
  ``[a, b]`` means ``b`` may not start before ``a`` completes, whatever ``a`` and ``b``
  are. Stage -> coflow: the coflow is released (opened to the network) only when the stage
  has completed. Coflow -> stage: no task of the stage starts before the coflow's last
  flow has finished. Stage -> stage and coflow -> coflow: plain precedence. A job
  completes when its last node does; the objective is ``sum_j w_j C_j`` over jobs.

Shuffles: endpoints decided at run time
---------------------------------------
A coflow listed in ``shuffles`` has no flows in the workload: they are made when it is
opened, from where its producing tasks ran and where its consuming tasks will run.

* *Producers*: the tasks of the stages with an arc into the shuffle. Producer task ``p``
  wrote ``output_bytes[p]`` bytes (0 if not given) on the machine where it **finished**
  (its last segment; only a migrating policy can run a task on several machines).
* *Consumers*: the tasks of the stages the shuffle has an arc to. When the shuffle opens,
  every consumer task not yet placed is **placed**: the compute policy plans the tasks
  that are ready plus the consumers as if they could start now, and each consumer is
  pinned to the machine on which that plan runs most of it (single-machine-placement
  policies: its fastest machine). A pinned task runs only there.
* *Flows*: each producer's bytes are split evenly over the consumer tasks (hash
  partitioning); ``b(p -> r) = output_bytes[p] / #consumers`` goes from the machine of
  ``p`` to the machine of ``r``. Bytes are summed per (source, destination) machine pair;
  a pair on one machine is a local read and sends nothing. A shuffle whose bytes are all
  local (or zero) completes the moment it opens. See :func:`shuffle_flows`.

A coflow with flows in the workload (not in ``shuffles``) keeps its endpoints; if it has
predecessor stages it is likewise held back until they complete.

Validation
----------
Everything is checked on construction, with :class:`~controller.model.WorkloadError`
naming what was wrong and the field: a task bigger than every machine in its placement
set, an empty placement set, an unknown machine, more machines than ports, a stage or
coflow an arc or job names that does not exist (or belongs to another job), a stage in no
job or in two, a cycle through stages and coflows, a shuffle without a producing or a
consuming stage or with flows of its own, ``output_bytes`` for an unknown task.

The compute part is available as :attr:`JointWorkload.compute` (a
:class:`~controller.compute.model.ComputeWorkload` in which every stage is ``after`` the
stages it depends on directly or through coflows of its job) and the network part as
:attr:`JointWorkload.network` (a :class:`~controller.model.Workload`; shuffles have no
flows there). The JSON form is documented in ``docs/jobs.md`` and read by
``emulate.io.traces``.

Examples
--------
>>> from controller.compute.model import Machine, Stage, Task
>>> from controller.model import Coflow
>>> from topologies import Fabric
>>> m = [Machine("m0", 1.0), Machine("m1", 1.0)]
>>> mp = Stage("map", [Task("map0", 0.5, {"m0": 2.0})])
>>> rd = Stage("reduce", [Task("red0", 0.5, {"m0": 3.0, "m1": 3.0})])
>>> w = JointWorkload(Fabric(2, 1, 8e6), m, [mp, rd], [Coflow("shuffle", ())],
...                   [JointJob("j0", ("map", "reduce"), ("shuffle",),
...                             (("map", "shuffle"), ("shuffle", "reduce")))],
...                   shuffles={"shuffle"}, output_bytes={"map0": 1e6})
>>> w.compute.jobs[0].stages[1].after
('map',)
>>> shuffle_flows([(0, 1e6)], [1])
(Flow(src=0, dst=1, bytes=1000000.0),)
"""
from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import Iterable, Mapping

import networkx as nx
import numpy as np

from controller.compute.model import ComputeJob, ComputeWorkload, Machine, Stage, Task
from controller.jobmodel import DEFAULT_MODEL
from controller.model import (MAX_BYTES, MAX_WEIGHT, Coflow, Flow, Job, Workload, WorkloadError,
                              _arcs, _check_number)
from topologies.fabric import Fabric

__all__ = ["JointJob", "JointWorkload", "shuffle_flows", "mapreduce_jobs", "compute_lower_bound",
           "LOWER_BOUNDS"]


@dataclass(frozen=True)
class JointJob:
    """A weighted job: its stages, its coflows and the arcs of its DAG.

    ``arcs`` are ``(before, after)`` pairs of stage or coflow ids of this job. ``priority``
    is a label (like :attr:`ComputeJob.priority`); it does not enter the algorithms.
    """

    id: str
    stages: tuple[str, ...]
    coflows: tuple[str, ...] = ()
    arcs: tuple[tuple[str, str], ...] = ()
    weight: float = 1.0
    priority: int = 0

    def __post_init__(self):
        if not isinstance(self.id, str) or not self.id:
            raise WorkloadError(f"job id must be a non-empty string, got {self.id!r}",
                                field="id")
        object.__setattr__(self, "stages", tuple(self.stages))
        object.__setattr__(self, "coflows", tuple(self.coflows))
        arcs = []
        for n, arc in enumerate(self.arcs):
            if not isinstance(arc, (list, tuple)) or len(arc) != 2:
                raise WorkloadError(f"job {self.id!r} arcs[{n}] must be a pair [before, after], "
                                    f"got {arc!r}", field="arcs")
            if tuple(arc) in arcs:
                raise WorkloadError(f"job {self.id!r} arcs[{n}] repeats the arc {list(arc)!r} "
                                    f"of arcs[{arcs.index(tuple(arc))}] (give each arc once)",
                                    field="arcs")
            arcs.append(tuple(arc))
        object.__setattr__(self, "arcs", tuple(arcs))
        _check_number(self.weight, f"job {self.id!r}", "weight", minimum=0.0,
                      maximum=MAX_WEIGHT)
        if not self.weight > 0:
            raise WorkloadError(f"job {self.id!r}: weight must be > 0, got {self.weight!r}",
                                field="weight")
        if not self.stages:
            raise WorkloadError(f"job {self.id!r} has no stages (a job of coflows only "
                                f"belongs in the coflow-only format)", field="stages")


@dataclass(frozen=True, eq=False)
class JointWorkload:
    """Machines, stages, coflows and the jobs that tie them; see the module docstring.

    Attributes
    ----------
    fabric : Fabric
    machines : tuple of Machine, ``machines[i]`` on port ``i``
    stages : tuple of Stage (``Stage.after`` must be empty: precedence is in job arcs)
    coflows : tuple of Coflow (shuffles with no flows)
    jobs : tuple of JointJob
    shuffles : frozenset of coflow ids whose flows are made at run time
    output_bytes : mapping task id -> bytes the task writes for the shuffles after it
    precedence : extra coflow -> coflow arcs (as in the coflow-only format; may cross jobs)
    name : str
    model : str
        The job model its compute half runs under (:mod:`controller.jobmodel`): what a
        task needs of a machine and which compute policies plan it. Default
        ``"packing"``: tasks packed into machine capacities. The model checks the
        workload on construction (``"moldable"``: every task has a ``moldable`` table,
        :class:`~controller.compute.model.Task`; other models: none has).
    """

    fabric: Fabric
    machines: tuple[Machine, ...]
    stages: tuple[Stage, ...]
    coflows: tuple[Coflow, ...]
    jobs: tuple[JointJob, ...]
    shuffles: frozenset = frozenset()
    output_bytes: Mapping[str, float] = field(default_factory=dict)
    precedence: tuple[tuple[str, str], ...] = ()
    name: str = "joint"
    model: str = DEFAULT_MODEL

    def __post_init__(self):
        for attr in ("machines", "stages", "coflows", "jobs"):
            object.__setattr__(self, attr, tuple(getattr(self, attr)))
        object.__setattr__(self, "shuffles", frozenset(self.shuffles))
        object.__setattr__(self, "precedence", _arcs(self.precedence))
        if not isinstance(self.fabric, Fabric):
            raise WorkloadError(f"fabric must be a Fabric, got {self.fabric!r}", field="fabric")
        if not self.machines:
            raise WorkloadError("a joint workload needs at least one machine", field="machines")
        if not isinstance(self.model, str) or not self.model:
            raise WorkloadError(f"model must name a job model, got {self.model!r}",
                                field="model")
        if len(self.machines) > self.fabric.ports:
            raise WorkloadError(
                f"{len(self.machines)} machines but the fabric has {self.fabric.ports} ports "
                f"(machines[i] is the host on port i)", field="machines")
        self._check_ids()
        self._check_jobs()
        self._check_shuffles()
        out = {}
        tasks = self.task_stage
        for tid, b in dict(self.output_bytes).items():
            if tid not in tasks:
                raise WorkloadError(f"output_bytes names unknown task {tid!r}",
                                    field="output_bytes")
            _check_number(b, f"task {tid!r}", "output_bytes", minimum=0.0, maximum=MAX_BYTES)
            out[tid] = float(b)
        object.__setattr__(self, "output_bytes", MappingProxyType(out))
        # the two halves validate themselves (ports, sizes, placement, machines)
        self.network  # noqa: B018
        self.compute  # noqa: B018
        self._check_model()

    def _check_model(self):
        """The job model's own rules (:meth:`JobModel.check_workload
        <controller.jobmodel.JobModel.check_workload>`); a name no model has is reported
        when the workload is run."""
        from controller.jobmodel import JobModelError, get_job_model
        try:
            model = get_job_model(self.model)
        except JobModelError:
            return
        model.check_workload(self)

    def _check_ids(self):
        seen: dict[str, str] = {}
        for kind, objs in (("stage", self.stages), ("coflow", self.coflows)):
            cls = Stage if kind == "stage" else Coflow
            for n, o in enumerate(objs):
                if not isinstance(o, cls):
                    raise WorkloadError(f"{kind}s[{n}] must be a {cls.__name__}, got {o!r}",
                                        field=f"{kind}s")
                if o.id in seen:
                    what = "two stages" if seen[o.id] == kind == "stage" else (
                        "two coflows" if seen[o.id] == kind else "a stage and a coflow")
                    raise WorkloadError(f"id {o.id!r} names {what} (stage and coflow ids "
                                        f"must all differ)", field="id")
                seen[o.id] = kind
        for s in self.stages:
            if s.after:
                raise WorkloadError(f"stage {s.id!r}: give precedence as job arcs, not "
                                    f"Stage.after", field="after")

    def _check_jobs(self):
        kind = self.node_kind
        owner: dict[str, str] = {}
        job_ids = set()
        for j in self.jobs:
            if not isinstance(j, JointJob):
                raise WorkloadError(f"jobs must be JointJob objects, got {j!r}", field="jobs")
            if j.id in job_ids:
                raise WorkloadError(f"duplicate job id {j.id!r}", field="jobs")
            job_ids.add(j.id)
            for what, ids in (("stage", j.stages), ("coflow", j.coflows)):
                for x in ids:
                    if kind.get(x) != what:
                        raise WorkloadError(f"job {j.id!r} names unknown {what} {x!r}",
                                            field=f"{what}s")
                    if x in owner:
                        raise WorkloadError(f"{what} {x!r} is in jobs {owner[x]!r} and {j.id!r} "
                                            f"(a {what} belongs to one job)", field=f"{what}s")
                    owner[x] = j.id
            for n, (a, b) in enumerate(j.arcs):
                for end in (a, b):
                    if end not in kind:
                        raise WorkloadError(f"job {j.id!r} arcs[{n}] names unknown stage or "
                                            f"coflow {end!r}", field="arcs")
                    if owner.get(end) != j.id:
                        raise WorkloadError(
                            f"job {j.id!r} arcs[{n}]: {kind[end]} {end!r} is not a node of job "
                            f"{j.id!r} (arcs join stages and coflows of their own job)",
                            field="arcs")
                if a == b:
                    raise WorkloadError(f"job {j.id!r} arcs[{n}]: {a!r} precedes itself",
                                        field="arcs")
        for s in self.stages:
            if s.id not in owner:
                raise WorkloadError(f"stage {s.id!r} belongs to no job", field="stages")
        for n, arc in enumerate(self.precedence):
            if any(not isinstance(x, str) or kind.get(x) != "coflow" for x in arc):
                raise WorkloadError(f"precedence[{n}] must be a pair of coflow ids, got "
                                    f"{list(arc)!r}", field="precedence")
            if arc in self.precedence[:n]:
                raise WorkloadError(f"precedence[{n}] repeats the arc {list(arc)!r} (give "
                                    f"each arc once)", field="precedence")
        g = self.dag
        if not nx.is_directed_acyclic_graph(g):
            cyc = [a for a, _ in nx.find_cycle(g)]
            who = owner.get(cyc[0])
            where = f"job {who!r}: " if who and all(owner.get(x) == who for x in cyc) else ""
            raise WorkloadError(f"{where}arcs form a cycle {' -> '.join(cyc)} -> {cyc[0]}",
                                field="arcs")
        object.__setattr__(self, "_owner", owner)

    def _check_shuffles(self):
        kind = self.node_kind
        for cid in sorted(self.shuffles):
            if kind.get(cid) != "coflow":
                raise WorkloadError(f"shuffles names unknown coflow {cid!r}", field="shuffles")
            c = self.coflows[self.coflow_index[cid]]
            if c.flows:
                raise WorkloadError(f"shuffle {cid!r} lists flows; a shuffle's flows are made "
                                    f"at run time (give flows or make it a shuffle, not both)",
                                    field="flows")
            if not self.producer_stages(cid):
                raise WorkloadError(f"shuffle {cid!r} has no producing stage (needs an arc "
                                    f"[stage, {cid!r}])", field="arcs")
            if not self.consumer_stages(cid):
                raise WorkloadError(f"shuffle {cid!r} has no consuming stage (needs an arc "
                                    f"[{cid!r}, stage])", field="arcs")

    # ------------------------------------------------------------------ views
    @cached_property
    def node_kind(self) -> dict[str, str]:
        """Node id -> "stage" or "coflow"."""
        out = {s.id: "stage" for s in self.stages}
        out.update({c.id: "coflow" for c in self.coflows})
        return out

    @cached_property
    def stage_index(self) -> dict[str, int]:
        return {s.id: n for n, s in enumerate(self.stages)}

    @cached_property
    def coflow_index(self) -> dict[str, int]:
        return {c.id: n for n, c in enumerate(self.coflows)}

    @cached_property
    def machine_index(self) -> dict[str, int]:
        """Machine id -> its port."""
        return {m.id: n for n, m in enumerate(self.machines)}

    @cached_property
    def task_stage(self) -> dict[str, str]:
        """Task id -> id of its stage."""
        return {t.id: s.id for s in self.stages for t in s.tasks}

    @cached_property
    def dag(self) -> nx.DiGraph:
        """Every stage and coflow, with every job arc and every precedence arc."""
        g = nx.DiGraph()
        g.add_nodes_from(self.node_kind)
        for j in self.jobs:
            g.add_edges_from(j.arcs)
        g.add_edges_from(self.precedence)
        return g

    def job_of(self, node: str) -> str | None:
        """Id of the job owning a stage or coflow (None for a coflow in no job)."""
        return self._owner.get(node)

    def producer_stages(self, cid: str) -> list[str]:
        """Stages with an arc into coflow ``cid`` (its producers), in stage order."""
        return sorted((p for p in self.dag.predecessors(cid) if self.node_kind[p] == "stage"),
                      key=self.stage_index.get)

    def consumer_stages(self, cid: str) -> list[str]:
        """Stages coflow ``cid`` has an arc to (its consumers), in stage order."""
        return sorted((p for p in self.dag.successors(cid) if self.node_kind[p] == "stage"),
                      key=self.stage_index.get)

    @cached_property
    def network(self) -> Workload:
        """The coflows on the fabric: coflow -> coflow arcs of jobs and ``precedence``;
        each job with coflows as a :class:`~controller.model.Job`. Shuffles have no flows."""
        arcs = list(self.precedence)
        for j in self.jobs:
            arcs += [a for a in j.arcs
                     if self.node_kind[a[0]] == self.node_kind[a[1]] == "coflow"]
        jobs = tuple(Job(j.id, j.coflows, j.weight) for j in self.jobs if j.coflows)
        return Workload(self.fabric, self.coflows, tuple(dict.fromkeys(arcs)), jobs,
                        name=self.name)

    @cached_property
    def compute(self) -> ComputeWorkload:
        """The stages as compute jobs: a stage is ``after`` every stage of its job it
        depends on, directly or through coflows (so the compute LPs see the whole chain)."""
        g = self.dag
        kind = self.node_kind
        by_id = {s.id: s for s in self.stages}
        jobs = []
        for j in self.jobs:
            stages = []
            for sid in j.stages:
                after, todo, seen = [], list(g.predecessors(sid)), set()
                while todo:
                    x = todo.pop()
                    if x in seen:
                        continue
                    seen.add(x)
                    if kind[x] == "stage":
                        if self._owner.get(x) == j.id:
                            after.append(x)
                    else:
                        todo.extend(g.predecessors(x))
                after = sorted(set(after), key=self.stage_index.get)
                stages.append(Stage(sid, by_id[sid].tasks, tuple(after)))
            jobs.append(ComputeJob(j.id, stages, j.weight, j.priority))
        return ComputeWorkload(self.machines, jobs, name=self.name)

    @property
    def total_weight(self) -> float:
        return float(sum(j.weight for j in self.jobs))


def shuffle_flows(producers: Iterable[tuple[int, float]], consumers: Iterable[int]
                  ) -> tuple[Flow, ...]:
    """The flows of a shuffle (the rule of the module docstring).

    Parameters
    ----------
    producers : iterable of (port, output bytes), one per producing task
        The port of the machine where the task finished.
    consumers : iterable of port, one per consuming task
        The port of the machine the task is placed on.

    Returns
    -------
    tuple of Flow, sorted by (src, dst): each producer's bytes split evenly over the
    consumer tasks, summed per port pair; same-port pairs (local reads) and empty pairs
    are left out.
    """
    consumers = list(consumers)
    demand: dict[tuple[int, int], float] = defaultdict(float)
    if not consumers:
        return ()
    for src, b in producers:
        share = float(b) / len(consumers)
        for dst in consumers:
            if int(src) != int(dst) and share > 0:
                demand[(int(src), int(dst))] += share
    return tuple(Flow(s, d, b) for (s, d), b in sorted(demand.items()))


# ---------------------------------------------------------------------------- generator
def mapreduce_jobs(seed=0, *, n_jobs: int = 12, ports: int = 8, cores: int = 2,
                   rate_bps: float = 10e6, capacity: float = 1.0, n_map=(2, 6),
                   n_reduce=(1, 3), map_seconds: float = 4.0, reduce_seconds: float = 6.0,
                   sigma: float = 0.5, map_size: float = 0.3, reduce_size: float = 0.4,
                   n_local: int = 2, alpha: float = 2.0, map_output_bytes: float = 2e6,
                   second_round: float = 0.3, mean_interarrival: float | None = 2.0,
                   weights: tuple[float, float] | None = (1.0, 10.0),
                   name: str | None = None) -> JointWorkload:
    """Seeded MapReduce-style jobs: map -> shuffle -> reduce (-> shuffle -> reduce).

    Every port hosts a machine of ``capacity`` (one resource). Job ``j`` arrives at a
    Poisson time (mean gap ``mean_interarrival`` seconds; all at 0 if None) and has

    * a map stage of ``n_map`` tasks (uniform in the range): each reads its input on
      ``n_local`` random machines (processing time log-normal around ``map_seconds``) and
      may run on any other machine ``alpha`` times slower (data read remotely); it writes
      ``map_output_bytes`` x log-normal(0, 0.5) bytes for the shuffle;
    * a shuffle (run-time endpoints, see the module docstring);
    * a reduce stage of ``n_reduce`` tasks that may run on any machine at the same speed
      (they pull from every map). Their placement lists the machines in a random order:
      single-machine-placement policies (SynchPack-3, PSRS) use the first, a random home;
    * with probability ``second_round`` a second shuffle and reduce stage (the reducers
      write half their input size each).

    Task sizes are log-normal around ``map_size`` / ``reduce_size`` x capacity. Job
    weights are uniform in ``weights`` (1 if None); a shuffle has its job's weight.
    The defaults suit the emulation too: 8 hosts x 2 cores x 10 Mbit/s (design.md: keep
    the total offered rate within ~200 Mbit/s).
    """
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    machines = [Machine(f"m{i}", (float(capacity),)) for i in range(ports)]
    ids = [m.id for m in machines]

    def duration(median):
        return float(max(1.0, round(median * math.exp(sigma * rng.standard_normal()), 1)))

    def size(median):
        return round(float(np.clip(median * math.exp(0.3 * rng.standard_normal()), 0.02,
                                   0.95)) * capacity, 4)

    stages, coflows, jobs, out = [], [], [], {}
    shuffles = set()
    t = 0.0
    for j in range(n_jobs):
        if mean_interarrival and j:
            t += float(rng.exponential(mean_interarrival))
        release = round(t, 3)
        w = 1.0 if weights is None else round(float(rng.uniform(*weights)), 3)
        maps = []
        for k in range(int(rng.integers(n_map[0], n_map[1] + 1))):
            p = duration(map_seconds)
            order = rng.permutation(ports)
            pl = {ids[i]: p for i in order[:n_local]}
            pl.update({ids[i]: float(math.ceil(alpha * p * 10) / 10) for i in order[n_local:]})
            tid = f"j{j}.map{k}"
            maps.append(Task(tid, (size(map_size),), pl, release))
            out[tid] = round(map_output_bytes * math.exp(0.5 * rng.standard_normal()))
        rounds = 2 if rng.random() < second_round else 1
        st = [Stage(f"j{j}.map", maps)]
        cf, arcs = [], []
        prev = st[0]
        for r in range(rounds):
            suffix = "" if r == 0 else str(r + 1)
            reds = []
            for k in range(int(rng.integers(n_reduce[0], n_reduce[1] + 1))):
                p = duration(reduce_seconds)
                tid = f"j{j}.reduce{suffix}.{k}" if suffix else f"j{j}.reduce{k}"
                reds.append(Task(tid, (size(reduce_size),),
                                 {ids[i]: p for i in rng.permutation(ports)}, release))
            if r + 1 < rounds:
                into = sum(out[t_.id] for t_ in prev.tasks)
                for t_ in reds:
                    out[t_.id] = round(0.5 * into / len(reds))
            red = Stage(f"j{j}.reduce{suffix}", reds)
            sh = Coflow(f"j{j}.shuffle{suffix}", (), release=release, weight=w)
            shuffles.add(sh.id)
            cf.append(sh)
            arcs += [(prev.id, sh.id), (sh.id, red.id)]
            st.append(red)
            prev = red
        stages += st
        coflows += cf
        jobs.append(JointJob(f"j{j}", tuple(s.id for s in st), tuple(c.id for c in cf),
                             tuple(arcs), w))
    return JointWorkload(Fabric(ports, cores, rate_bps), machines, stages, coflows, jobs,
                         shuffles=shuffles, output_bytes=out,
                         name=name or f"mapreduce-s{seed}-p{ports}-m{cores}-j{n_jobs}")


def joint_from_compute(cw: ComputeWorkload, fabric: Fabric, *,
                       name: str | None = None) -> JointWorkload:
    """A compute workload as a joint workload with no coflows: machine ``i`` on port ``i``,
    each compute job a joint job whose arcs are its stages' ``after`` lists.

    Such a workload runs with a compute policy alone (``--policy synchpack-3``); its
    :attr:`JointWorkload.compute` is ``cw`` again (same jobs, stages, tasks, weights).
    """
    stages, jobs = [], []
    for j in cw.jobs:
        stages += [Stage(s.id, s.tasks) for s in j.stages]
        arcs = tuple((a, s.id) for s in j.stages for a in s.after)
        jobs.append(JointJob(j.id, tuple(s.id for s in j.stages), (), arcs, j.weight,
                             j.priority))
    return JointWorkload(fabric, cw.machines, stages, (), jobs, name=name or cw.name)


# ---------------------------------------------------------------------------- bounds
#: the compute LP of each SynchPack algorithm (``coflowemu bound --lp synchpack-k``)
LOWER_BOUNDS = {"synchpack-1": "lp1", "synchpack-2": "lp2", "synchpack-3": "lp3"}


def compute_lower_bound(w: JointWorkload, lp: str = "lp1", *, eps: float = 0.25):
    """A compute LP over the joint workload's stages: a lower bound on ``sum_j w_j C_j``.

    The LP sees every stage ``after`` the stages it depends on through coflows, a job's
    weight on its last stages, and no network time; every joint schedule's tasks form a
    feasible compute schedule of that instance, and a job completes no earlier than its
    last stage, so the value bounds the joint objective of every schedule of the LP's
    class: ``lp1`` every schedule, ``lp2`` schedules without migration, ``lp3`` schedules
    that run every task on its fastest machine (SynchPack-3, PSRS).

    Parameters
    ----------
    w : JointWorkload
    lp : "lp1", "lp2", "lp3" (or "synchpack-1|2|3")
    eps : interval growth of LP1

    Returns
    -------
    controller.lp.result.LPResult
        ``lp`` is ``"LP1"``, ``"LP2"`` or ``"LP3"``; ``solution`` a
        :class:`~controller.lp.result.StageSolution`, ``details`` the LP's size.
    """
    from controller.compute.lp import lp1, lp2, lp3
    lp = LOWER_BOUNDS.get(lp, lp)
    a = w.compute.arrays
    if lp == "lp1":
        return lp1(a, eps)
    if lp == "lp2":
        return lp2(a)
    if lp == "lp3":
        return lp3(a)
    raise ValueError(f"unknown compute LP {lp!r}; known: lp1, lp2, lp3, "
                     f"{', '.join(LOWER_BOUNDS)}")
