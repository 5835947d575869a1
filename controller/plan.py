"""Plans and the state a policy plans from: the one interface between policies and engines.

At every event (the run starts, coflows become ready, a coflow completes, a coflow crosses
a byte threshold the plan asked about, the plan's horizon is reached) an engine hands the
policy a :class:`State` and applies the :class:`Plan` it returns until the next event. The
simulator (``emulate.sim.flowsim``) and the SDN controller (``controller.app``) apply the same
plans, so a policy never knows which engine runs it.

A plan says, for every flow:

* ``core``: the core it is sent through. A flow that has sent bytes is pinned to its core
  (``State.core``); a plan that moves it is an error (no migration).
* ``rank``: its priority; lower is served first.
* ``rate_cap``: an optional cap in bits/s (``nan`` = none).

and, optionally ``coflow_order``: the plan ranks whole coflows in this order, flows of a coflow
by index (what :func:`coflow_order_plan` builds). It is only a hint that lets engines
sort flows in O(flows) instead of O(flows log flows); ``rank`` must agree with it.

A :class:`SparsePlan` (:class:`CoflowPlan`, by a coflow order; :class:`FlowOrderPlan`, by
the eligible flows in order) gives its order and caps over the flows that can send only
and builds ``rank`` and ``rate_cap`` for every flow when they are read: engines read the
order and the caps, so a plan costs its policy O(eligible flows), not a pass over every
flow of the workload (5.6 MB per array on FB2010, at each of a thousand plans).

For the whole fabric, how rates follow from ranks (``sharing``):

* ``"priority"``: work-conserving strict priority. Flows are taken in rank order (ties by
  flow index); each gets ``min(cap, free capacity of its input port, free capacity of its
  output port)`` on its core. With unit capacities and no caps this is exactly the
  preemptive priority-greedy matching of the coflow papers (algorithms.md 1.5). With
  ``backfill`` a second pass in rank order hands leftover capacity to flows regardless of
  their caps (Varys's backfilling).
* ``"fair"``: max-min fair sharing among all eligible flows on each core, each flow at most
  its cap (what per-flow TCP fair sharing converges to).

Rates are recomputed by the engine whenever a flow completes, with the same plan, so a
plan only changes at the events listed above. With ``rates_fixed`` the engine computes
the rates once when the plan is applied and keeps them until the next event: a finished
flow's capacity then idles until the policy is asked again (Varys re-allocates only at
coflow arrivals and completions). ``byte_limit`` (per coflow, bytes sent so far
at which to re-plan; ``inf`` = none) and ``horizon`` (an absolute time) let a policy ask
for extra events, e.g. Aalo's queue thresholds. ``keep_at_completion`` says the opposite:
the plan the policy would return when a coflow completes is this one less that coflow's
flows (a static order on one core, fair sharing), so an engine running on its own may keep
it through completions and ask again only at the other events (the simulator's
:meth:`~emulate.sim.flowsim.Simulator.run` does; a loop that watches completions, and the
controller, ask at every one).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numba
import numpy as np

from controller.indexing import no_wraparound
from controller.model import FlowArrays, Workload

# the kernels never index with a negative number
no_wraparound(__name__)

SHARINGS = ("priority", "fair")


class PlanError(RuntimeError):
    """A policy returned a plan the engine cannot apply."""


@dataclass
class Plan:
    """Per-flow core, rank and rate cap; see the module docstring."""

    core: np.ndarray
    rank: np.ndarray
    rate_cap: np.ndarray | None = None
    sharing: str = "priority"
    backfill: bool = True
    byte_limit: np.ndarray | None = None
    horizon: float = float("inf")
    coflow_order: np.ndarray | None = None
    rates_fixed: bool = False
    keep_at_completion: bool = False

    def __post_init__(self) -> None:
        # one dtype and layout for every reader (the numba kernels compile once for it)
        if self.coflow_order is not None:
            self.coflow_order = np.ascontiguousarray(self.coflow_order, dtype=np.int64)

    def flow_order(self, state: "State", flows: np.ndarray | None = None) -> np.ndarray:
        """``flows`` (default: the eligible ones) sorted by rank, ties by flow index
        (by index alone under fair sharing, which ranks do not order)."""
        by_coflow = (self.sharing != "fair" and self.coflow_order is not None
                     and len(self.coflow_order))
        want = None
        if flows is None:
            want = state.eligible
            if not by_coflow:
                flows = state.eligible_flows()
        if self.sharing == "fair":
            return flows if want is not None else np.sort(flows)
        if by_coflow:
            a = state.arrays
            if want is None:
                want = np.zeros(a.n_flows, dtype=np.bool_)
                want[flows] = True
            head = ordered_flows(self.coflow_order, a.coflow_ptr, a.coflow_flows, want,
                                 NO_SLOT, -1)
            if flows is None:
                # every eligible flow is in a coflow that is ready and not done (and each
                # such coflow has one): the order's flows are all of them if it lists
                # every such coflow (checked per coflow; listing or counting the eligible
                # flows is a pass over every flow of the workload at every plan)
                listed = np.zeros(a.n_coflows, dtype=np.bool_)
                listed[self.coflow_order] = True
                every = bool(listed[state.ready & ~state.done].all())
            else:
                every = len(head) == len(flows)
            if every:
                return head
            want = want.copy()
            want[head] = False
            rest = np.flatnonzero(want)
            return np.concatenate([head, rest[np.lexsort((rest, self.rank[rest]))]])
        return flows[np.lexsort((flows, self.rank[flows]))]

    def validate(self, state: "State") -> None:
        """Raise :class:`PlanError` unless the plan can be applied in ``state``."""
        a = state.arrays
        n = a.n_flows
        for name in ("core", "rank"):
            v = getattr(self, name)
            if not isinstance(v, np.ndarray) or v.shape != (n,):
                raise PlanError(f"plan.{name} must be a numpy array of {n} entries (one per flow)")
        if self.rate_cap is not None and (not isinstance(self.rate_cap, np.ndarray)
                                          or self.rate_cap.shape != (n,)):
            raise PlanError(f"plan.rate_cap must be None or a numpy array of {n} entries")
        if self.byte_limit is not None and (not isinstance(self.byte_limit, np.ndarray)
                                            or self.byte_limit.shape != (a.n_coflows,)):
            raise PlanError(f"plan.byte_limit must be None or an array of {a.n_coflows} entries")
        if self.sharing not in SHARINGS:
            raise PlanError(f"plan.sharing must be one of {SHARINGS}, got {self.sharing!r}")
        self._validate_cores(state)

    def _validate_cores(self, state: "State") -> None:
        a = state.arrays
        if a.cores == 1 and (self.core is single_core(a) or not self.core.any()):
            return  # every flow on the one core (where any flow that sent is pinned)
        bad, f = _check_cores(self.core, state.eligible_flows(), state.core,
                              state.flow_done, a.cores)
        if bad:
            raise PlanError(f"plan.core must be in 0..{a.cores - 1} for every eligible flow")
        if f >= 0:
            raise PlanError(
                f"plan moves flow {f} (coflow {state.workload.coflows[a.coflow[f]].id!r}) from "
                f"core {state.core[f]} to core {self.core[f]}: flows may not migrate")


def single_core(arrays: FlowArrays) -> np.ndarray:
    """A read-only int array of zeros, one per flow (every flow on core 0): the same
    array for the same ``arrays``, which :meth:`Plan.validate` accepts on a one-core
    fabric without a pass over the flows."""
    z = arrays.__dict__.get("_single_core")
    if z is None or len(z) != arrays.n_flows:
        z = np.zeros(arrays.n_flows, dtype=np.int64)
        z.flags.writeable = False
        arrays.__dict__["_single_core"] = z
    return z


@numba.njit(cache=True)
def _check_cores(core, eligible, pinned, done, cores):
    """(an eligible flow has a core out of range, first flow moved off its pinned core
    or -1), in one pass over the ``eligible`` flows (ascending; a flow that has sent and
    is not done is eligible)."""
    bad = False
    moved = -1
    for f in eligible:
        if core[f] < 0 or core[f] >= cores:
            bad = True
        if moved < 0 and pinned[f] >= 0 and core[f] != pinned[f] and not done[f]:
            moved = f
    return bad, moved


@numba.njit(cache=True)
def ordered_flows(order, ptr, flows, want, slot, want_slot):
    """The flows of the coflows ``order`` with ``want[f]``, coflow after coflow, by
    index inside (``ptr``, ``flows``: ``FlowArrays.coflow_ptr``, ``coflow_flows``); with
    ``want_slot`` >= 0 only those whose ``slot[f] >= 0`` is ``want_slot == 1`` (an
    engine's per-flow place, -1 for none; else ``slot`` is not read)."""
    n = 0
    for k in order:
        n += ptr[k + 1] - ptr[k]
    out = np.empty(n, dtype=np.int64)
    n = 0
    for k in order:
        for q in range(ptr[k], ptr[k + 1]):
            f = flows[q]
            if want[f] and (want_slot < 0 or (slot[f] >= 0) == (want_slot == 1)):
                out[n] = f
                n += 1
    return out[:n]


#: ``ordered_flows``'s ``slot`` when ``want_slot`` is -1
NO_SLOT = np.zeros(0, dtype=np.int64)


@dataclass
class State:
    """What a policy sees at an event. Arrays are indexed like ``workload.arrays``.

    Attributes
    ----------
    time : float
        Current time, seconds.
    event : str
        Why the policy is called: ``"start"``, ``"ready"`` (coflows became ready),
        ``"release"`` (coflows were released but wait for predecessors), ``"completion"``
        (a coflow completed), ``"byte_limit"``, ``"horizon"`` (the plan's horizon, or an
        outer loop's stop time).
    workload, arrays
        The workload and its flat view.
    remaining : float array per flow
        Bytes still to send.
    sent : float array per coflow
        Bytes the coflow has sent so far.
    flow_done : bool array per flow
    released : bool array per coflow
        Release time has passed (the coflow is known to an online policy).
    ready : bool array per coflow
        Released and every predecessor complete.
    done : bool array per coflow
    completion : float array per coflow (nan while running)
    eligible : bool array per flow
        The flow may send now: its coflow is ready and it has bytes left.
    core : int array per flow
        Core a started flow is pinned to, -1 while it has sent nothing.
    changed : int array, optional
        A hint: the flows whose ``remaining`` changed since the previous State the engine
        handed to this policy (ascending); None when the engine does not know. A policy
        that keeps values computed from ``remaining`` may update only these flows'.
    """

    time: float
    event: str
    workload: Workload
    arrays: FlowArrays
    remaining: np.ndarray
    sent: np.ndarray
    flow_done: np.ndarray
    released: np.ndarray
    ready: np.ndarray
    done: np.ndarray
    completion: np.ndarray
    eligible: np.ndarray
    core: np.ndarray
    changed: np.ndarray | None = None
    #: :meth:`eligible_flows`, once read
    _eligible_flows: np.ndarray | None = field(default=None, repr=False, compare=False)

    @property
    def active_coflows(self) -> np.ndarray:
        """Indices of coflows that are ready and not done."""
        return np.flatnonzero(self.ready & ~self.done)

    def eligible_flows(self) -> np.ndarray:
        """The eligible flows, by index (``np.flatnonzero(eligible)``), gathered from the
        ready coflows not done, where every eligible flow is: in proportion to their
        flows, not a pass over every flow of the workload (at every plan, a cost that a
        longer trace multiplies)."""
        if self._eligible_flows is None:
            a = self.arrays
            f = ordered_flows(self.active_coflows, a.coflow_ptr, a.coflow_flows,
                              self.eligible, NO_SLOT, -1)
            # (coflow after coflow, each one's flows by index: sorted already unless a
            # coflow took flows at run time, numbered after every other)
            self._eligible_flows = f if np.all(f[1:] > f[:-1]) else np.sort(f)
        return self._eligible_flows

    @property
    def known_coflows(self) -> np.ndarray:
        """Indices of coflows that are released and not done (what an online policy knows)."""
        return np.flatnonzero(self.released & ~self.done)


def coflow_order_plan(state: State, order, core: np.ndarray | None = None,
                      **kw) -> "CoflowPlan":
    """A priority plan that serves coflows in ``order`` (coflow indices, first = highest).

    Coflows not in ``order`` come after, by index. Inside a coflow flows are ranked by
    index (readers list a coflow's flows by (src, dst)). ``core`` defaults to the flow's
    pinned core, else core 0 (on one core the shared :func:`single_core`). The plan is a
    :class:`CoflowPlan` without caps: its ranks are only built if read (engines read the
    order), so past the cores it costs O(1), not a pass over every flow.
    """
    a = state.arrays
    order = np.asarray(order, dtype=np.int64)
    if core is None:
        core = (single_core(a) if a.cores == 1
                else np.maximum(np.asarray(state.core, dtype=np.int64), 0))
    return CoflowPlan(state, order, np.asarray(core, dtype=np.int64), **kw)


class SparsePlan(Plan):
    """A ``"priority"`` plan given by the flows it lists, in rank order, with rate caps
    on some of them (or none): :class:`CoflowPlan` (a coflow order) and
    :class:`FlowOrderPlan` (a flow order) say which flows and in what order.

    ``cap_flows`` (int array, in rank order) are capped at ``cap_values`` (bits/s); the
    other listed flows at 0, so they only take what is left (``backfill``). Without
    ``cap_flows`` nothing is capped. ``rank`` and ``rate_cap`` are built from these when
    first read (a pass over every flow); an engine that reads the order and ``cap_flows``
    does without them, so a plan costs the policy the flows it lists. The eligible flows
    are those of ``state`` (read when built).
    """

    def __init__(self, state: State, core: np.ndarray, *, cap_flows=None, cap_values=None,
                 **kw):
        self._eligible = state.eligible
        self._arrays = state.arrays
        self._rank = None
        self._rate_cap = None
        super().__init__(core=core, rank=None, **kw)
        self.cap_flows = None if cap_flows is None else np.asarray(cap_flows, dtype=np.int64)
        self.cap_values = (None if cap_values is None
                           else np.asarray(cap_values, dtype=np.float64))

    def _listed(self) -> np.ndarray:  # pragma: no cover - interface
        """Bool per flow: the flows the plan lists (whose cap is 0 unless given)."""
        raise NotImplementedError

    def _ranks(self) -> np.ndarray:  # pragma: no cover - interface
        """The dense ranks (read once, then kept)."""
        raise NotImplementedError

    def _validate_order(self, state: State) -> None:  # pragma: no cover - interface
        raise NotImplementedError

    @property
    def rank(self) -> np.ndarray:
        if self._rank is None:
            self._rank = self._ranks()
        return self._rank

    @rank.setter
    def rank(self, value) -> None:
        self._rank = value

    @property
    def rate_cap(self) -> np.ndarray | None:
        if self._rate_cap is None and getattr(self, "cap_flows", None) is not None:
            cap = np.full(self._arrays.n_flows, np.nan)
            cap[self._listed()] = 0.0
            cap[self.cap_flows] = self.cap_values
            self._rate_cap = cap
        return self._rate_cap

    @rate_cap.setter
    def rate_cap(self, value) -> None:
        self._rate_cap = value
        if value is not None:
            self.cap_flows = self.cap_values = None

    def validate(self, state: State) -> None:
        """As :meth:`Plan.validate`, on the order and the sparse caps."""
        a = state.arrays
        if not isinstance(self.core, np.ndarray) or self.core.shape != (a.n_flows,):
            raise PlanError(f"plan.core must be a numpy array of {a.n_flows} entries")
        self._validate_cores(state)   # (first: a grouped order reads the flows' cores)
        self._validate_order(state)
        if self.cap_flows is not None and (
                self.cap_values is None or self.cap_values.shape != self.cap_flows.shape
                or not np.all(self.cap_values >= 0)):
            raise PlanError("plan.cap_values must give a cap >= 0 to each of plan.cap_flows")
        if self.byte_limit is not None and (not isinstance(self.byte_limit, np.ndarray)
                                            or self.byte_limit.shape != (a.n_coflows,)):
            raise PlanError(f"plan.byte_limit must be None or an array of {a.n_coflows} entries")
        if self.sharing != "priority":
            raise PlanError(f"a {type(self).__name__} shares by priority, not {self.sharing!r}")


class CoflowPlan(SparsePlan):
    """A :class:`SparsePlan` given by a coflow order (``coflow_order``): it lists the
    eligible flows of the ordered coflows, coflow after coflow, by index inside."""

    def __init__(self, state: State, order, core: np.ndarray, **kw):
        super().__init__(state, core, coflow_order=order, **kw)

    def _ranks(self) -> np.ndarray:
        a = self._arrays
        order = self.coflow_order
        pos = np.full(a.n_coflows, -1.0)
        pos[order] = np.arange(len(order), dtype=np.float64)
        rank = np.full(a.n_flows, float(len(order) + 1))
        f = np.flatnonzero(self._eligible & (pos[a.coflow] >= 0))
        rank[f] = pos[a.coflow[f]] + f / float(a.n_flows + 1)
        return rank

    def _listed(self) -> np.ndarray:
        a = self._arrays
        ordered = np.zeros(a.n_coflows, dtype=np.bool_)
        ordered[self.coflow_order] = True
        return self._eligible & ordered[a.coflow]

    def _validate_order(self, state: State) -> None:
        n = state.arrays.n_coflows
        order = self.coflow_order
        if order.ndim != 1 or (len(order) and (order.min() < 0 or order.max() >= n)):
            raise PlanError(f"plan.coflow_order must list coflow indices in 0..{n - 1}")


class FlowOrderPlan(SparsePlan):
    """A :class:`SparsePlan` given by a flow order: ``flows``, every eligible flow once,
    highest priority first (for policies whose order no coflow order expresses, e.g.
    Weaver's per-core sub-coflows). Engines take ``flows`` as the order instead of
    sorting ranks. With ``grouped`` the list is sub-coflow after sub-coflow (a coflow's
    flows on one core, by index inside: :meth:`sub_coflows`), which lets an engine keep
    its state from plan to plan per sub-coflow (validation checks it)."""

    def __init__(self, state: State, flows, core: np.ndarray, *, grouped: bool = False,
                 **kw):
        self.flows = np.ascontiguousarray(flows, dtype=np.int64)
        self.grouped = bool(grouped)
        self._groups = None
        super().__init__(state, core, **kw)

    def sub_coflows(self) -> tuple[np.ndarray, np.ndarray]:
        """With ``grouped``: ``flows`` lists each sub-coflow's flows (a coflow's flows on
        one core, id ``coflow * cores + core``) together, by index inside, and an engine
        may key its state by sub-coflow from plan to plan. Returns ``(ids in order,
        bounds into flows)``; empty bounds if ``flows`` does not."""
        if self._groups is None or self._groups[0] is not self.core:
            a = self._arrays
            core = np.asarray(self.core, dtype=np.int64)
            self._groups = (self.core, _sub_coflows(
                self.flows, a.coflow, core, a.cores,
                np.zeros(a.n_coflows * a.cores, dtype=np.bool_)))
        return self._groups[1]

    def _ranks(self) -> np.ndarray:
        rank = np.full(self._arrays.n_flows, float(len(self.flows)))
        rank[self.flows] = np.arange(len(self.flows), dtype=np.float64)
        return rank

    def _listed(self) -> np.ndarray:
        listed = np.zeros(self._arrays.n_flows, dtype=np.bool_)
        listed[self.flows] = True
        return listed

    def _as_many_eligible(self, state: State) -> bool:
        """Whether ``flows`` lists as many flows as are eligible, each an eligible one."""
        f = self.flows
        return (f.ndim == 1 and len(f) == len(state.eligible_flows())
                and bool(np.all((f >= 0) & (f < state.arrays.n_flows)))
                and bool(state.eligible[f].all()))

    def flow_order(self, state: State, flows: np.ndarray | None = None) -> np.ndarray:
        if flows is None and self._as_many_eligible(state):
            return self.flows   # (validated: each once)
        return super().flow_order(state, flows)

    def _validate_order(self, state: State) -> None:
        """``flows`` lists every eligible flow once: as many as there are, each eligible,
        none twice. Grouped, the sub-coflows say none is twice (each sub-coflow once, by
        index inside, and a flow is in one sub-coflow), in O(flows listed); otherwise
        a mark per flow of the workload."""
        n = state.arrays.n_flows
        f = self.flows
        once = self._as_many_eligible(state)
        if once and not self.grouped:
            once = _each_eligible_once(f, state.eligible, np.zeros(n, dtype=np.bool_))
        if not once:
            raise PlanError("plan.flows must list every eligible flow once (and no other)")
        if self.grouped and len(f) and not len(self.sub_coflows()[1]):
            raise PlanError("plan.flows (grouped) must list each sub-coflow's flows (a "
                            "coflow's flows on one core) together, by index inside")


@numba.njit(cache=True)
def _each_eligible_once(flows, eligible, seen):
    """Whether ``flows`` are flow indices, each eligible and none twice (``seen``: all
    False, one per flow)."""
    n = eligible.shape[0]
    for f in flows:
        if f < 0 or f >= n or not eligible[f] or seen[f]:
            return False
        seen[f] = True
    return True


@numba.njit(cache=True)
def _sub_coflows(order, coflow, core, cores, seen):
    """The sub-coflows of ``order`` (a coflow's flows on one core, id ``coflow * cores +
    core``) if it lists each one's flows together and by index inside: ``(ids in order,
    bounds into order)``; else empty ``bounds``. ``seen`` (bool per id, all False) is
    left as found."""
    n = order.shape[0]
    ids = np.empty(n, dtype=np.int64)
    bounds = np.empty(n + 1, dtype=np.int64)
    g = 0
    ok = True
    for q in range(n):
        f = order[q]
        s = coflow[f] * cores + core[f]
        if q == 0 or s != ids[g - 1]:
            if seen[s]:
                ok = False
                break
            seen[s] = True
            ids[g] = s
            bounds[g] = q
            g += 1
        elif f <= order[q - 1]:
            ok = False
            break
    for i in range(g):
        seen[ids[i]] = False
    if not ok:
        return ids[:0], bounds[:0]
    bounds[g] = n
    return ids[:g], bounds[:g + 1]
