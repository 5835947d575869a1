"""Checkpoint transfers: what a checkpoint costs when the state has to travel.

The paper's checkpoints are free: at an arrival or a departure every copy of a job
restarts from its most advanced copy's state, wherever it runs. Here a job may declare
its state's size, ``checkpoint_bytes`` (:attr:`controller.compute.model.Task.
checkpoint_bytes`), and the state then lives on machines and moves over the fabric:

* **who holds the state.** A job that has made no progress yet holds none: its first
  copies start anywhere at once (its input comes with the job). After an interval in
  which some copy gained work, the job's state is its best copy's: the machines whose
  copies reached that gain hold it, the best one (first in copy order) is the job's
  **leader**. After an interval with no gain (the job waited, or every copy did) the
  holders are unchanged. A machine that receives a transfer holds the state it carries;
* **a checkpoint's transfer.** When the policy (:mod:`controller.redundancy.policies`)
  places a copy of job ``j`` on a machine that neither holds ``j``'s state nor is
  receiving it, the state is sent from the leader's machine to it. All such machines of
  one job at one checkpoint form **one coflow**: one flow of ``checkpoint_bytes`` from
  the leader's host to each of them (machine ``i`` is the host on port ``i``), released
  at the checkpoint and scheduled by the run's network policy with every other coflow;
* **who waits.** A copy on a machine that holds the state starts at once (so the leader
  continues at once when it keeps its machine); a copy on any other machine starts when
  **its transfer coflow has completed**, not its own flow: the checkpoint is one coflow,
  and the network policies optimise coflow completion times, the unit this model hands
  them; per-flow resumption would let a coflow scheduler's deliberate delay of one flow
  idle its copy for nothing it optimised. (The copies of one checkpoint also restart
  from one consistent state together.) Until then the copy gains nothing;
* **abandoned transfers.** A transfer in flight carries the state of its checkpoint.
  At a later checkpoint where the job's state has advanced, or at the job's departure,
  it is superseded and abandoned (removed from the network; what it sent stays sent);
  while the state has not advanced it keeps going and its copies keep waiting for it;
* **index versus sticky.** With ``assign="index"`` (the default) the policy's machines
  are dealt out again at every checkpoint, so a job often lands on machines without its
  state and even loses its leader's machine (then all its copies wait); ``assign=
  "sticky"`` keeps a job on the machines it held, so fewer transfers.

A job with ``checkpoint_bytes`` 0 never transfers: it runs exactly as in the free model
(:func:`controller.redundancy.simulate`, the numba kernel, which this module's event
loop reproduces when nothing moves: the tests compare them).

:class:`CheckpointState` is this bookkeeping, shared by the simulator (:func:`simulate_
transfers`, here, with the network injected: :mod:`emulate.sim.redundancy` runs it on the
flow-level simulator) and the emulation controller (:mod:`controller.redundancy.
emulation`, real flows between the agents).
"""
from __future__ import annotations

import time as _time
from dataclasses import dataclass, field

import numpy as np

from controller.redundancy.policies import SRPT_ORDER, allocate, keep_machines, parse
from controller.redundancy.simulator import REL_TOL, Instance, Run, boundary, horizon_of

__all__ = ["Transfer", "CheckpointState", "simulate_transfers", "GAIN_TOL"]

#: copies whose gain is within this fraction of the best copy's hold the job's state too
GAIN_TOL = 1e-12


@dataclass
class Transfer:
    """One checkpoint transfer: job ``job``'s state from machine ``src`` to ``dst``.

    Attributes
    ----------
    id : int, its index in :attr:`CheckpointState.transfers`
    job : int, src : int, dst : list of int (machines), bytes : float (per flow)
    release : float, the checkpoint
    completion : float, when the coflow completed (nan: not, or abandoned)
    abandoned : float, when it was abandoned (nan: it was not)
    """

    id: int
    job: int
    src: int
    dst: list
    bytes: float
    release: float
    completion: float = float("nan")
    abandoned: float = float("nan")

    @property
    def in_flight(self) -> bool:
        return bool(np.isnan(self.completion) and np.isnan(self.abandoned))


@dataclass
class CheckpointState:
    """Where each job's checkpoint state is, and the transfers moving it (module
    docstring).

    Parameters
    ----------
    nbytes : float array, per job its ``checkpoint_bytes`` (0: free checkpoints)

    Attributes
    ----------
    holders : per job, the set of machines holding its state, or None (no progress
        yet: no state to move)
    leader : int array, per job the machine transfers are sent from (-1: none yet)
    transfers : list of :class:`Transfer`, in release order
    """

    nbytes: np.ndarray
    holders: list = field(init=False)
    leader: np.ndarray = field(init=False)
    transfers: list = field(init=False, default_factory=list)

    def __post_init__(self):
        self.nbytes = np.asarray(self.nbytes, dtype=np.float64)
        self.holders = [None] * len(self.nbytes)
        self.leader = np.full(len(self.nbytes), -1, dtype=np.int64)
        self._flight: list[list[Transfer]] = [[] for _ in range(len(self.nbytes))]

    def in_flight(self, j: int) -> list[Transfer]:
        """Job ``j``'s transfers in flight (each carrying its current state)."""
        return self._flight[j]

    def checkpoint(self, j: int, gains, t: float) -> list[Transfer]:
        """Job ``j``'s copies of the interval ending at ``t`` gained ``gains`` =
        [(machine, gain)] in copy order (the copies that never started included, gain 0).
        Updates its holders and leader; returns its transfers abandoned (the state they
        carry is superseded)."""
        best = max((g for _, g in gains), default=0.0)
        if best <= 0.0:
            return []
        keep = best * (1.0 - GAIN_TOL)
        held = [m for m, g in gains if g >= keep]
        self.holders[j] = set(held)
        self.leader[j] = held[0]
        return self.abandon(j, t)

    def abandon(self, j: int, t: float) -> list[Transfer]:
        """Abandon job ``j``'s transfers in flight (its state advanced, or it departed)."""
        out = self._flight[j]
        for x in out:
            x.abandoned = t
        self._flight[j] = []
        return out

    def place(self, j: int, machines, t: float) -> tuple[list, Transfer | None]:
        """Job ``j``'s copies at checkpoint ``t`` go to ``machines``: returns, per machine,
        the transfer its copy waits for (None: it starts at once), and the new transfer
        released now (None if none)."""
        held = self.holders[j]
        if self.nbytes[j] <= 0 or held is None:
            return [None] * len(machines), None
        waits, new = [], []
        for m in machines:
            if m in held:
                waits.append(None)
                continue
            x = next((x for x in self._flight[j] if m in x.dst), None)
            if x is None:
                new.append(m)
            waits.append(x)
        x = None
        if new:
            x = Transfer(len(self.transfers), j, int(self.leader[j]), new,
                         float(self.nbytes[j]), t)
            self.transfers.append(x)
            self._flight[j].append(x)
            waits = [x if w is None and m in new else w for w, m in zip(waits, machines)]
        return waits, x

    def arrived(self, x: Transfer, t: float) -> None:
        """Transfer ``x`` completed at ``t``: its machines hold the state."""
        x.completion = t
        self.holders[x.job] |= set(x.dst)
        self._flight[x.job].remove(x)

    def records(self, ids, machine_ids) -> list[dict]:
        """Per transfer ``{"coflow", "job", "release", "from", "to", "bytes",
        "completion", "abandoned"}`` (``completion`` None unless it completed,
        ``abandoned`` None unless it was)."""
        return [{"coflow": transfer_id(ids, x), "job": ids[x.job], "release": x.release,
                 "from": machine_ids[x.src], "to": [machine_ids[m] for m in x.dst],
                 "bytes": x.bytes,
                 "completion": None if np.isnan(x.completion) else x.completion,
                 "abandoned": None if np.isnan(x.abandoned) else x.abandoned}
                for x in self.transfers]


def transfer_id(ids, x: Transfer) -> str:
    """The coflow id of transfer ``x``: ``<job>.ckpt<n>`` (its ``n``-th of the run)."""
    return f"{ids[x.job]}.ckpt{x.id}"


def simulate_transfers(instance: Instance, policy: str, nbytes, network, *,
                       beta: float | None = None, assign: str | None = None,
                       slot: float | None = None):
    """Run ``instance`` under ``policy`` with checkpoint transfers (module docstring):
    exact and event-driven, the checkpoints (arrivals, departures) interleaved with the
    network's transfer completions.

    Parameters
    ----------
    instance : Instance
    policy, beta, assign, slot : as :func:`controller.redundancy.simulate` (with slots,
        a transfer completes when it does, and its copies start then, inside the slot)
    nbytes : float array, per job of ``instance`` its ``checkpoint_bytes``
    network : the fabric, with ``send(transfers, abandoned, t)`` (release the new
        :class:`Transfer` coflows and remove the abandoned ones at ``t``) and
        ``advance(until) -> (t, [Transfer])`` (run up to ``until`` or to the first
        completion of transfers in flight: the time reached and those completed)

    Returns
    -------
    (Run, CheckpointState) : the run with its copies recorded (a copy that waited starts
        when its transfer completed), and the transfers.

    Raises
    ------
    ValueError
        As :func:`~controller.redundancy.simulate`.
    """
    ch = parse(policy, beta=beta, assign=assign, slot=slot)
    b, slot, inst, wall = ch.beta, ch.slot, instance, _time.perf_counter()
    J, until = inst.n_jobs, horizon_of(instance)
    sp = inst.speed_until(until)
    N = sp.n
    code = ch.code
    srpt = code in SRPT_ORDER
    sticky = ch.assign == "sticky"
    state = CheckpointState(nbytes)
    work, arrival = inst.work, inst.arrival
    rem = work.astype(np.float64).copy()
    comp = np.full(J, np.nan)
    cap = N + J + 1
    cj, cm, cs = np.empty(cap, np.int64), np.empty(cap, np.int64), np.empty(cap)
    owner, head = np.full(N, -1, np.int64), np.full(J, -1, np.int64)
    link, phys = np.empty(N, np.int64), np.empty(N, np.int64)
    rec = {k: [] for k in ("job", "copy", "machine", "start", "end", "share")}
    active: list[int] = []
    copies: list[list] = []     # [job, copy, machine, share, start (nan: waits), transfer]
    dep = np.full(J, np.inf)
    nxt, t, checkpoints = 0, 0.0, 0

    def start(c, at):
        c[4] = at
        dep[c[0]] = min(dep[c[0]], sp.deliver(c[2], at, rem[c[0]] / c[3]))

    while nxt < J or active:
        if not active and arrival[nxt] > t:
            t, _ = network.advance(boundary(float(arrival[nxt]), slot))
        while nxt < J and arrival[nxt] <= t:
            active.append(nxt)
            nxt += 1
        # the interval that ends now: every copy's gain, the departures, the states
        gains: dict[int, list] = {}
        for j, k, m, sh, s0, _ in copies:
            g = 0.0
            end = min(t, dep[j])                  # (a departure inside a slot: its own)
            if not np.isnan(s0):
                g = sh * sp.work(m, s0, t)
                if end > s0:
                    for col, v in zip(rec.values(), (j, k, m, s0, end, sh)):
                        col.append(v)
            gains.setdefault(j, []).append((m, g))
        dropped = []
        for j, gs in gains.items():
            best = max(g for _, g in gs)
            if dep[j] <= t or rem[j] - best <= REL_TOL * work[j]:
                rem[j], comp[j] = 0.0, min(t, dep[j])
                dropped += state.abandon(j, t)
            else:
                rem[j] -= best
                dropped += state.checkpoint(j, gs, t)
            dep[j] = np.inf
        active = [j for j in active if np.isnan(comp[j])]
        checkpoints += bool(active)           # a decision (as the kernel counts them)
        if srpt:
            active.sort(key=lambda j: (rem[j], j))
        # the policy's copies, and where the state has to go
        order = np.asarray(active, dtype=np.int64)
        nc = allocate(code, order, len(order), N, b, cj, cm, cs)
        if sticky:
            keep_machines(nc, cj, cm, N, owner, head, link, phys)
        copies, new = [], []
        c = 0
        while c < nc:
            j = int(cj[c])
            e = c
            while e < nc and cj[e] == j:
                e += 1
            ms = [int(m) for m in cm[c:e]]
            waits, x = state.place(j, ms, t)
            if x is not None:
                new.append(x)
            for k, (m, w) in enumerate(zip(ms, waits)):
                copies.append([j, k, m, float(cs[c]), np.nan, w])
            c = e
        if new or dropped:
            network.send(new, dropped, t)
        for cp in copies:
            if cp[5] is None:
                start(cp, t)
        # run to the next checkpoint: the network's transfer completions start copies
        while True:
            tn = float(arrival[nxt]) if nxt < J else np.inf
            tn = boundary(min(tn, float(min((dep[j] for j in {cp[0] for cp in copies}),
                                            default=np.inf))), slot)
            waiting = any(cp[5] is not None for cp in copies)
            if tn == np.inf and not waiting:
                if copies or active:
                    raise ValueError("a job can never finish: every machine it may use has "
                                     "rate 0 for ever after its last change point")
                break
            if until < tn < np.inf and callable(inst.speed):   # draw the processes further
                until = max(2.0 * until, 2.0 * tn)
                sp = inst.speed_until(until)
                dep[:] = np.inf
                for cp in copies:
                    if not np.isnan(cp[4]):
                        start(cp, cp[4])
                continue
            u, arrived = network.advance(tn)
            for x in arrived:
                state.arrived(x, u)
                for cp in copies:
                    if cp[5] is x:
                        cp[5] = None
                        start(cp, u)
            if not arrived:
                t = u
                break
    end = float(np.nanmax(comp)) if J else 0.0
    sp = inst.speed_until(max(until, end))
    crossed = int(np.sum((sp.time > 0) & (sp.time < end)))
    recd = {k: np.asarray(v, dtype=np.int64 if k in ("job", "copy", "machine") else float)
            for k, v in rec.items()}
    order = np.lexsort((recd["copy"], recd["job"], recd["start"]))
    recd = {k: v[order] for k, v in recd.items()}
    run = Run(inst, ch.name, b, sp, comp, checkpoints, crossed,
              _time.perf_counter() - wall, recd, ch.assign, slot)
    return run, state
