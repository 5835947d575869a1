"""The life of a coflow in a run: released, ready, complete; and which flows may send.

A coflow is

* **released** at its release time. A *gated* coflow (a shuffle whose producing compute
  stage has not finished) is released only once the run opens it
  (:meth:`~CoflowLifecycle.open`), at its release time if that is later;
* **ready** once it is released and every predecessor coflow is complete;
* **complete** once every one of its flows has sent its last byte, or, if it has no bytes
  to send, as soon as it is ready. Its completion takes one predecessor off each of its
  successors, which may become ready at once (and, empty, complete at once: a chain of
  empty coflows completes in one go).

A flow is **eligible** (its bytes may be sent) while its coflow is ready and it has bytes
left: release times and precedence are enforced by the engine, whatever the policy says.

:class:`CoflowLifecycle` keeps this for both engines, and builds the
:class:`~controller.plan.State` a policy plans from. The simulator (``emulate.sim.flowsim``) and
the controller (``controller.runtime``) differ only in how they learn of what happens and
what time it is: the simulator's compiled loop finishes flows itself (it decrements
:attr:`~CoflowLifecycle.left` and stamps :attr:`~CoflowLifecycle.completion`) and hands the
coflows it finished to :meth:`~CoflowLifecycle.complete`; the controller reports each flow
an agent finished (:meth:`~CoflowLifecycle.finish_flow`). Every time is the engine's, in
workload seconds, passed in.

Examples
--------
>>> from controller.model import Coflow, Flow, Workload
>>> from topologies import Fabric
>>> w = Workload(Fabric(ports=2, cores=1), [Coflow("a", [Flow(0, 1, 5.0)]), Coflow("e", []),
...              Coflow("b", [Flow(1, 0, 5.0)], release=2.0)], [("a", "e"), ("e", "b")])
>>> life = CoflowLifecycle(w.arrays)
>>> life.release_due(0.0)
>>> life.make_ready(0.0, flow_done=np.zeros(2, dtype=bool))
True
>>> life.ready.tolist(), life.eligible.tolist()
([True, False, False], [True, False])
>>> life.finish_flow(0, 1.5)     # "a" completes, "e" (empty) with it; "b" is not released
True
>>> life.make_ready(1.5, flow_done=np.array([True, False]))
True
>>> life.completion.tolist(), life.next_release_time
([1.5, 1.5, nan], 2.0)
"""
from __future__ import annotations

import numpy as np

from controller.model import FlowArrays, Workload
from controller.plan import State

__all__ = ["CoflowLifecycle"]


class CoflowLifecycle:
    """Releases, readiness and completion of the coflows of one run; see the module
    docstring.

    Parameters
    ----------
    arrays : FlowArrays
        The run's flows and coflows.
    gated : iterable of int, optional
        Coflows released only once :meth:`open` is called for them.
    on_complete : callable, optional
        ``on_complete(k, t)`` is called when coflow ``k`` completes at ``t`` (the
        controller's decision log).

    Attributes
    ----------
    released, ready, done : bool arrays, per coflow
    completion : float array, per coflow; its completion time (NaN until complete)
    left : int array, per coflow; its flows that have not finished
    preds_left : int array, per coflow; its predecessor coflows that are not complete
    eligible : bool array, per flow; kept up to date (its coflow ready, it not finished)
    gated : bool array, per coflow; waits for :meth:`open`
    """

    def __init__(self, arrays: FlowArrays, gated=None, on_complete=None):
        a = self.arrays = arrays
        nc = a.n_coflows
        self.released = np.zeros(nc, dtype=np.bool_)
        self.ready = np.zeros(nc, dtype=np.bool_)
        self.done = np.zeros(nc, dtype=np.bool_)
        self.completion = np.full(nc, np.nan)
        self.left = np.bincount(a.coflow, minlength=nc).astype(np.int64)
        self.preds_left = np.array([len(p) for p in a.preds], dtype=np.int64)
        self.eligible = np.zeros(a.n_flows, dtype=np.bool_)
        self.gated = np.zeros(nc, dtype=np.bool_)
        if gated is not None:
            self.gated[np.asarray(list(gated), dtype=np.int64)] = True
        self.on_complete = on_complete
        self._release_order = np.argsort(a.release, kind="stable")
        self._next_release = 0
        self._due = np.zeros(nc, dtype=np.bool_)  # release_due has reached it

    @property
    def finished(self) -> bool:
        """Every coflow is complete."""
        return bool(self.done.all())

    @property
    def next_release_time(self) -> float:
        """The earliest release time :meth:`release_due` has not reached (inf if none)."""
        ro = self._release_order
        n = self._next_release
        return float(self.arrays.release[ro[n]]) if n < len(ro) else np.inf

    # ---------------------------------------------------------------- events
    def release_due(self, t: float) -> None:
        """Release the coflows whose release time is at most ``t`` (a gated one waits
        for :meth:`open`)."""
        release = self.arrays.release
        ro = self._release_order
        while self._next_release < len(ro) and release[ro[self._next_release]] <= t:
            k = ro[self._next_release]
            self.released[k] = not self.gated[k]
            self._due[k] = True
            self._next_release += 1

    def open(self, k: int) -> bool:
        """Open gated coflow ``k``: released now if :meth:`release_due` has reached its
        release time, else when it does. Returns whether it was gated."""
        if not self.gated[k]:
            return False
        self.gated[k] = False
        if self._due[k]:
            self.released[k] = True
        return True

    def make_ready(self, t: float, flow_done: np.ndarray) -> bool:
        """Mark ready the released coflows whose predecessors are all complete, and their
        flows not ``flow_done`` eligible; complete at ``t`` those with nothing to send,
        cascading to their successors. Returns whether any coflow became ready."""
        changed = False
        frontier = np.flatnonzero(self.released & ~self.ready & (self.preds_left == 0))
        while frontier.size:
            nxt = []
            for k in frontier:
                self.ready[k] = True
                fl = self.arrays.flows_of(k)
                self.eligible[fl] = ~flow_done[fl]
                changed = True
                if self.left[k] == 0:
                    nxt.extend(self.complete(k, t))
            frontier = np.unique(np.array(
                [k for k in nxt if self.released[k] and not self.ready[k]
                 and self.preds_left[k] == 0], dtype=np.int64))
        return changed

    def complete(self, k: int, t: float) -> list[int]:
        """Coflow ``k`` is complete (at ``t`` unless its completion is already stamped):
        its successors have one predecessor less. Returns them ([] if ``k`` was already
        complete)."""
        if self.done[k]:
            return []
        self.done[k] = True
        if np.isnan(self.completion[k]):
            self.completion[k] = t
        succ = self.arrays.succs[k]
        self.preds_left[succ] -= 1
        if self.on_complete is not None:
            self.on_complete(int(k), t)
        return list(succ)

    @property
    def n_eligible(self) -> int:
        """How many flows are eligible, counted per coflow (a ready coflow not done has
        its flows left eligible): no pass over every flow of the workload."""
        return int(self.left[self.ready & ~self.done].sum())

    def finish_flow(self, f: int, t: float) -> bool:
        """Flow ``f`` sent its last byte at ``t``; returns whether its coflow completed."""
        self.eligible[f] = False
        k = self.arrays.coflow[f]
        self.left[k] -= 1
        if self.left[k] == 0:
            self.complete(k, t)
            return True
        return False

    def add_flows(self, arrays: FlowArrays, k: int, n: int) -> None:
        """``arrays`` are the run's flows with ``n`` new ones of coflow ``k`` appended (a
        shuffle's, made when it opens); they are eligible once ``k`` is ready."""
        self.arrays = arrays
        self.left[k] += n
        self.eligible = np.concatenate([self.eligible, np.full(n, bool(self.ready[k]))])

    def add_coflows(self, arrays: FlowArrays, n: int) -> None:
        """``arrays`` are the run's flows with ``n`` new coflows (and their flows) appended,
        released now, without predecessors (coflows a run makes at run time: the
        redundancy model's checkpoint transfers); they are ready after
        :meth:`make_ready`."""
        self.arrays = arrays
        nf = len(arrays.size) - len(self.eligible)
        grow = {"released": True, "ready": False, "done": False, "completion": np.nan,
                "preds_left": 0, "gated": False, "_due": True}
        for name, v in grow.items():
            old = getattr(self, name)
            setattr(self, name, np.concatenate([old, np.full(n, v, dtype=old.dtype)]))
        self.left = np.concatenate([self.left, np.bincount(
            arrays.coflow[-nf:] - (arrays.n_coflows - n), minlength=n).astype(np.int64)
            if nf else np.zeros(n, dtype=np.int64)])
        self.eligible = np.concatenate([self.eligible, np.zeros(nf, dtype=np.bool_)])

    # ---------------------------------------------------------------- the policy's view
    def state(self, time: float, event: str, workload: Workload, remaining: np.ndarray,
              sent: np.ndarray, flow_done: np.ndarray, core: np.ndarray, *,
              copy: bool = False) -> State:
        """The :class:`~controller.plan.State` at ``time`` after ``event``.

        ``remaining`` per flow, ``sent`` per coflow, ``flow_done`` and ``core`` per flow
        come from the engine. With ``copy`` the State holds copies of every array (the
        controller's: its arrays change under a policy that keeps the State), else the
        engine's own arrays (the simulator's, which never change during a policy call),
        ``eligible`` included: a copy of it was a pass over every flow of the workload at
        every plan (10 % of sincronia's time on FB2010 repeated ten times in time), and
        what a plan reads of it (a :class:`~controller.plan.CoflowPlan`'s ranks and caps,
        built when first read) is read before the engine runs.
        """
        c = (lambda x: x.copy()) if copy else (lambda x: x)
        return State(time=time, event=event, workload=workload, arrays=self.arrays,
                     remaining=remaining, sent=c(sent), flow_done=c(flow_done),
                     released=c(self.released), ready=c(self.ready), done=c(self.done),
                     completion=c(self.completion), eligible=c(self.eligible),
                     core=c(core))
