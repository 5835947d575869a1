"""The simulator of a redundancy run whose checkpoints move bytes (``checkpoint_bytes``).

A ``"model": "redundancy"`` workload whose jobs declare a checkpoint size runs under
``compute+network`` (``srpt+r+sebf``, ``fair+r+fair``, ...): the redundancy policy
decides the copies at every checkpoint, and the state each checkpoint has to move is a
coflow that the network policy schedules with the others
(:mod:`controller.redundancy.transfers`: the semantics and the event loop). This module
gives that loop its network, the flow-level simulator of the joint runs
(:class:`emulate.sim.jobsim.Network`: restarted on the residual network whenever a
transfer is released or abandoned, started flows keeping their cores), and turns the
run into the :class:`~emulate.sim.jobsim.JointResult` of ``coflowemu run``: the
redundancy records (per job its flowtime, the copies' and the speed process's segments)
beside the network's (every transfer coflow with its CCT, its flows' segments), and
``transfers`` (per transfer its job, checkpoint, source and destination machines, bytes,
completion or abandonment), ``checkpoint_cost`` (transfers, bytes moved, the mean
flowtime against the same run with free checkpoints).

An abandoned transfer is in the network records with the bytes it had sent, each flow
completing when it sent its last byte; one that sent nothing is not (it never put a byte
on the wire).
"""
from __future__ import annotations

import time as _time

import numpy as np

from controller.model import Coflow, Flow
from controller.redundancy.transfers import CheckpointState, Transfer, simulate_transfers, \
    transfer_id

__all__ = ["TransferNetwork", "simulate_redundancy", "checkpoint_cost"]


class TransferNetwork:
    """The fabric of :func:`~controller.redundancy.transfers.simulate_transfers`: the
    transfers as coflows on :class:`~emulate.sim.jobsim.Network` (machine ``i`` is the
    host on port ``i``).

    Parameters
    ----------
    jw : JointWorkload, make_policy : callable returning a fresh network policy
    record : bool, keep the flows' segments
    ids : job ids of the instance (the coflows are named ``<job>.ckpt<n>``)
    """

    def __init__(self, jw, make_policy, record: bool, ids):
        from emulate.sim.jobsim import Network
        self.net = Network(jw, make_policy, record, np.zeros(len(jw.coflows), dtype=bool))
        self.net.start()
        self.ids = ids
        self.transfer: dict[int, Transfer] = {}    # network coflow -> transfer
        self.k_of: dict[int, int] = {}             # transfer -> network coflow
        self.flying: set[int] = set()              # network coflows in flight

    def send(self, new, abandoned, t: float) -> None:
        net = self.net
        if abandoned:
            net.drop([self.k_of[x.id] for x in abandoned])
            self.flying -= {self.k_of[x.id] for x in abandoned}
        ks = net.add([Coflow(transfer_id(self.ids, x),
                             tuple(Flow(x.src, d, x.bytes) for d in x.dst), release=t)
                      for x in new])
        for k, x in zip(ks, new):
            self.transfer[k], self.k_of[x.id] = x, k
        self.flying |= set(ks)
        net.rebuild()

    def advance(self, until: float) -> tuple[float, list]:
        net = self.net
        watch = np.zeros(len(net.coflows), dtype=bool)
        watch[list(self.flying)] = True
        done = [k for k in net.advance(until, watch) if k in self.flying]
        self.flying -= set(done)
        return net.t, [self.transfer[k] for k in done]


def simulate_redundancy(jw, policy: str, *, segments: bool = False,
                        network_options: dict | None = None):
    """Run the redundancy workload ``jw`` with checkpoint transfers under
    ``compute+network``; the :class:`~emulate.sim.jobsim.JointResult` (module docstring).

    Raises
    ------
    PolicyError
        No network policy in ``policy`` (the transfers need one), or a bad one.
    """
    from controller.jobmodels.redundancy import (RedundancyModel, checkpoint_sizes,
                                                 job_records, redundancy_instance,
                                                 segment_lines)
    from controller.policies import PolicyError, get_policy
    from controller.policyspec import split_policy
    from controller.redundancy.simulator import simulate
    compute, network = split_policy(policy)
    if network is None:
        raise PolicyError(f"{policy!r} names no network policy, and the workload's jobs move "
                          f"their checkpoints (checkpoint_bytes) over the fabric: name one, "
                          f"e.g. {policy}+sebf")
    opts = dict(network_options or {})
    get_policy(network, **opts)                          # fail early on a bad name/option
    RedundancyModel.check_policy(compute)
    wall = _time.perf_counter()
    inst, order = redundancy_instance(jw)
    nbytes = checkpoint_sizes(jw, order)
    # (segments always: an abandoned flow's last byte is the end of its last segment)
    net = TransferNetwork(jw, lambda: get_policy(network, **opts), True, inst.ids)
    try:
        run, state = simulate_transfers(inst, compute, nbytes, net)
    except ValueError as e:
        from controller.model import WorkloadError
        raise WorkloadError(f"workload {jw.name!r} under {compute}: {e}",
                            field="speed") from None
    net.net.finish()
    free = simulate(inst, compute)                       # the same, checkpoints free
    extra = {"jobs": job_records(jw, inst, order, run.completion),
             "mean_flowtime": run.mean_flowtime, "total_flowtime": run.total_flowtime,
             **run.summary()}
    extra["transfers"] = state.records(inst.ids, jw.compute.arrays.machine_ids)
    extra["checkpoint_cost"] = checkpoint_cost(state, run, free, net.net)
    res = _joint_result(jw, policy, run, order, net.net, _time.perf_counter() - wall, extra,
                        segments)
    if segments:
        res.task_segments = segment_lines(run, inst.ids, jw.compute.arrays.machine_ids)
    return res


def checkpoint_cost(state: CheckpointState, run, free, net) -> dict:
    """What the checkpoints cost: transfers released, completed and abandoned, bytes put
    on the wire (an abandoned transfer's as far as it got), and the mean flowtime against
    ``free`` (the same instance and policy with free checkpoints)."""
    xs = state.transfers
    moved = float(sum(b - r for b, r in zip(net.f_bytes, net.f_rem)))
    return {"transfers": len(xs), "flows": int(sum(len(x.dst) for x in xs)),
            "completed": int(sum(not np.isnan(x.completion) for x in xs)),
            "abandoned": int(sum(not np.isnan(x.abandoned) for x in xs)),
            "bytes_moved": moved,
            "free_mean_flowtime": free.mean_flowtime,
            "flowtime_ratio": run.mean_flowtime / free.mean_flowtime
            if free.mean_flowtime > 0 else 1.0}


def _joint_result(jw, policy, run, order, net, wall, extra, segments):
    """The JointResult: the copies as the compute schedule, the network's coflows (an
    abandoned transfer as far as it got; one that sent nothing left out)."""
    from controller.compute.schedule import ComputeSchedule
    from emulate.sim.jobsim import joint_result
    a = jw.compute.arrays
    c = run.copies
    sched = ComputeSchedule.from_segments(
        a, (order[c["job"]], c["machine"], c["start"], c["end"]), policy)
    stage = np.full(a.n_stages, np.nan)
    stage[a.task_stage[order]] = run.completion
    f, h, t0, t1, r = (np.asarray(x) for x in net.segs)
    f = f.astype(np.int64)
    cof = np.asarray(net.f_cof, dtype=np.int64)
    last = np.full(len(cof), -np.inf)
    np.maximum.at(last, f, t1)
    done = net.f_done.copy()
    cut = net.dropped[cof] & np.isnan(done)          # abandoned while unfinished
    done[cut] = last[cut]
    nbytes = np.where(cut, np.asarray(net.f_bytes) - net.f_rem, np.asarray(net.f_bytes))
    keep = nbytes > 0
    kept_k = np.unique(cof[keep])
    new_k = np.full(len(net.coflows), -1, dtype=np.int64)
    new_k[kept_k] = np.arange(len(kept_k))
    new_f = np.full(len(cof), -1, dtype=np.int64)
    new_f[keep] = np.arange(int(keep.sum()))
    end = np.full(len(net.coflows), -np.inf)
    np.maximum.at(end, cof[keep], done[keep])
    completion = np.where(net.dropped, end, net.completion)[kept_k]
    flows = (new_k[cof[keep]], np.asarray(net.f_src)[keep], np.asarray(net.f_dst)[keep],
             nbytes[keep])
    segs = None
    if segments:
        ok = new_f[f] >= 0 if len(f) else np.zeros(0, dtype=bool)
        segs = (new_f[f[ok]], h[ok], t0[ok], t1[ok], r[ok])
    return joint_result(jw, policy, sched, stage, flows, done[keep], net.release[kept_k],
                        completion, segs, engine="sim", wall=wall, events=net.events,
                        extra=extra, coflows=[net.coflows[k] for k in kept_k])
