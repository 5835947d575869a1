"""The record of an emulated redundancy run: the simulator's records, measured.

The controller's :class:`~controller.redundancy.emulation.RedundancyEmulationRun` returns
what the agents reported (per job its departure, per copy and checkpoint interval its
machine, share, real start and stop, reported progress). :func:`redundancy_result` turns
that into the :class:`~emulate.sim.jobsim.JointResult` the simulator gives for the same
workload: per job ``arrival``, ``work``, ``completion``, ``flowtime`` (and the
simulator's ``simulated_flowtime``), ``mean_flowtime``, ``total_flowtime``; segment lines
of every copy cut at its machine's speed change points, their ``work`` integrated from
the speed process, and the speed process's own lines; plus ``simulator`` (its figures on
the same speed processes), ``flowtime_error`` (per job, against it) and
``progress_mismatch`` (largest difference between an agent's reported progress and the
speed process's integral over the copy's measured interval).

With checkpoint transfers the simulator's prediction is the run with the same transfers
(:func:`emulate.sim.redundancy.simulate_redundancy`), and the records add the network's:
every transfer coflow as the agents sent it (an abandoned one with the bytes its receiver
got, completing when it was abandoned; one that sent nothing left out), its flows'
segments from the receivers' counters, and ``transfers`` and ``checkpoint_cost`` as the
simulator has them.
"""
from __future__ import annotations

import numpy as np

from controller.jobmodels.redundancy import (RedundancyModel, has_transfers, job_records,
                                             segment_lines)
from controller.redundancy.emulation import flowtime_error
from controller.redundancy.simulator import Run

__all__ = ["redundancy_result"]


def redundancy_result(jw, policy: str, out: dict, wall: float, extra: dict):
    """The :class:`~emulate.sim.jobsim.JointResult` of an emulated redundancy run (from the
    controller's ``result()``), with the simulator's records and segment lines, and the
    per-job flowtime error against the simulator on the same speed processes."""
    from controller.compute.schedule import ComputeSchedule
    from controller.model import Coflow
    from emulate.sim.jobsim import joint_result, simulate_joint
    from controller.policyspec import split_policy
    compute = split_policy(policy).compute
    model = RedundancyModel(jw, compute)         # the instance, as on the controller
    inst = model.instance
    moving = has_transfers(jw)
    if moving:                                   # the simulator with the same transfers
        pred = simulate_joint(jw, policy).to_json()
        sim_flow = np.array([j["flowtime"] for j in pred["jobs"]])
        pos = {j["id"]: i for i, j in enumerate(pred["jobs"])}
        sim_flow = np.array([sim_flow[pos[jid]] for jid in inst.ids])
        sim_figures = {"mean_flowtime": pred["mean_flowtime"],
                       "total_flowtime": pred["total_flowtime"],
                       "checkpoints": pred["checkpoints"],
                       "transfers": pred["checkpoint_cost"]["transfers"]}
    else:
        sim = model.run
        sim_flow = sim.flowtime
        sim_figures = {"mean_flowtime": sim.mean_flowtime,
                       "total_flowtime": sim.total_flowtime, "checkpoints": sim.checkpoints}
    red = out["redundancy"]
    comp = np.array([np.nan if x is None else x for x in red["completion"]], float)
    c = {k: np.asarray(v) for k, v in red["copies"].items()}
    order = model.order                          # instance job -> compute task
    a = jw.compute.arrays
    tasks = (order[c["job"].astype(np.int64)] if len(c["job"]) else np.zeros(0, np.int64),
             c["machine"].astype(np.int64), c["start"].astype(float), c["end"].astype(float))
    sched = ComputeSchedule.from_segments(a, tasks, policy)
    stage = np.full(len(jw.stages), np.nan)
    stage[a.task_stage[order]] = comp
    speed = model.run.speed
    copies = {"job": c["job"].astype(np.int64), "copy": c["copy"].astype(np.int64),
              "machine": c["machine"].astype(np.int64), "start": c["start"].astype(float),
              "end": c["end"].astype(float), "share": c["share"].astype(float)}
    emu = Run(inst, model.run.policy, model.run.beta, speed, comp, int(red["checkpoints"]),
              int(np.sum((speed.time > 0) & (speed.time < np.nanmax(comp))))
              if len(comp) else 0, wall, copies, model.run.assign)
    # the agents' reported progress against the work the speed process gives
    integ = np.array([sh * speed.work(int(m), s, e) for m, s, e, sh in
                      zip(copies["machine"], copies["start"], copies["end"],
                          copies["share"])])
    mismatch = float(np.max(np.abs(integ - c["progress"]))) if len(integ) else 0.0
    flow = comp - inst.arrival
    jobs = job_records(jw, inst, order, comp)
    predicted = dict(zip(inst.ids, sim_flow))
    for rec in jobs:
        rec["simulated_flowtime"] = float(predicted[rec["id"]])
    last = float(np.nanmax(comp)) if len(comp) else 0.0
    extra = dict(extra)
    extra.update({
        "jobs": jobs, "mean_flowtime": float(np.mean(flow)) if len(flow) else 0.0,
        "total_flowtime": float(np.sum(flow)), **emu.summary(),
        "simulator": sim_figures,
        "flowtime_error": flowtime_error(flow, sim_flow),
        "progress_mismatch": mismatch,
        "past_speed_horizon": bool(last > red["speed_horizon"]),
    })
    net = _network(red, out) if moving else None
    if moving:
        extra["transfers"] = red["transfers"]
        extra["checkpoint_cost"] = {
            "transfers": len(red["transfers"]),
            "flows": sum(len(x["to"]) for x in red["transfers"]),
            "completed": sum(x["completion"] is not None for x in red["transfers"]),
            "abandoned": sum(x["abandoned"] is not None for x in red["transfers"]),
            "bytes_moved": float(np.sum(net["bytes"]))}
    empty = (np.zeros(0, np.int64),) * 2 + (np.zeros(0),) * 3
    if net is None:
        res = joint_result(jw, policy, sched, stage, [[], [], [], []], [], [], [], empty,
                           engine="mininet", wall=wall, events=int(red["checkpoints"]),
                           extra=extra)
    else:
        res = joint_result(jw, policy, sched, stage, net["flows"], net["done"],
                           net["release"], net["completion"], net["segments"],
                           engine="mininet", wall=wall, events=int(red["checkpoints"]),
                           extra=extra, coflows=[Coflow(i, ()) for i in net["ids"]])
    res.task_segments = segment_lines(emu, inst.ids, a.machine_ids)
    return res


def _network(red: dict, out: dict) -> dict:
    """The transfers' network records: each flow as far as its receiver got (an abandoned
    one ends when its coflow was abandoned), coflows that sent nothing left out."""
    n = red["network"]
    cof, src, dst, size = (np.asarray(x) for x in n["flows"])
    got = np.minimum(np.asarray(n["received"], float), size.astype(float))
    done = np.array([np.nan if x is None else x for x in out["flow_completion"]], float)
    cc = np.array([np.nan if x is None else x for x in out["coflow_completion"]], float)
    cut = np.isnan(done)
    done[cut] = cc[cof[cut].astype(np.int64)]
    nbytes = np.where(cut, got, size)
    keep = nbytes > 0
    kept = np.unique(cof[keep]).astype(np.int64)
    new_k = np.full(len(n["coflows"]), -1, dtype=np.int64)
    new_k[kept] = np.arange(len(kept))
    new_f = np.full(len(cof), -1, dtype=np.int64)
    new_f[keep] = np.arange(int(keep.sum()))
    s = out["segments"]
    f = np.asarray(s["flow"], dtype=np.int64)
    ok = new_f[f] >= 0 if len(f) else np.zeros(0, dtype=bool)
    segs = (new_f[f[ok]], np.asarray(s["core"])[ok], np.asarray(s["start"], float)[ok],
            np.asarray(s["end"], float)[ok], np.asarray(s["rate_bps"], float)[ok])
    return {"flows": (new_k[cof[keep].astype(np.int64)], src[keep], dst[keep], nbytes[keep]),
            "done": done[keep], "bytes": nbytes[keep], "release":
            np.asarray(n["release"], float)[kept], "completion": cc[kept],
            "ids": [n["coflows"][k] for k in kept], "segments": segs}
