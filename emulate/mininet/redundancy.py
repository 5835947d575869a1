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
"""
from __future__ import annotations

import numpy as np

from controller.jobmodels.redundancy import RedundancyModel
from controller.redundancy.emulation import flowtime_error
from controller.redundancy.simulator import Run

__all__ = ["redundancy_result"]


def redundancy_result(jw, policy: str, out: dict, wall: float, extra: dict):
    """The :class:`~emulate.sim.jobsim.JointResult` of an emulated redundancy run (from the
    controller's ``result()``), with the simulator's records and segment lines, and the
    per-job flowtime error against the simulator on the same speed processes."""
    from controller.compute.schedule import ComputeSchedule
    from emulate.sim.jobsim import joint_result
    model = RedundancyModel(jw, policy)          # the simulator's run, as on the controller
    inst, sim = model.instance, model.run
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
    speed = sim.speed
    copies = {"job": c["job"].astype(np.int64), "copy": c["copy"].astype(np.int64),
              "machine": c["machine"].astype(np.int64), "start": c["start"].astype(float),
              "end": c["end"].astype(float), "share": c["share"].astype(float)}
    emu = Run(inst, sim.policy, sim.beta, speed, comp, int(red["checkpoints"]),
              int(np.sum((speed.time > 0) & (speed.time < np.nanmax(comp))))
              if len(comp) else 0, wall, copies)
    # the agents' reported progress against the work the speed process gives
    integ = np.array([sh * speed.work(int(m), s, e) for m, s, e, sh in
                      zip(copies["machine"], copies["start"], copies["end"],
                          copies["share"])])
    mismatch = float(np.max(np.abs(integ - c["progress"]))) if len(integ) else 0.0
    flow = comp - inst.arrival
    ids, mids = inst.ids, a.machine_ids
    jobs = []
    for j, jid in enumerate(ids):
        jobs.append({"id": jid, "weight": 1.0, "release": float(inst.arrival[j]),
                     "arrival": float(inst.arrival[j]), "work": float(inst.work[j]),
                     "completion": float(comp[j]), "flowtime": float(flow[j]),
                     "simulated_flowtime": float(sim.flowtime[j])})
    weights = {j.id: j.weight for j in jw.jobs}
    for rec in jobs:
        rec["weight"] = weights.get(rec["id"], 1.0)
    last = float(np.nanmax(comp)) if len(comp) else 0.0
    extra = dict(extra)
    extra.update({
        "jobs": jobs, "mean_flowtime": float(np.mean(flow)) if len(flow) else 0.0,
        "total_flowtime": float(np.sum(flow)), "checkpoints": int(red["checkpoints"]),
        "speed_change_points": emu.crossed,
        "beta": sim.beta if sim.policy.startswith("laps") else None,
        "simulator": {"mean_flowtime": sim.mean_flowtime,
                      "total_flowtime": sim.total_flowtime, "checkpoints": sim.checkpoints},
        "flowtime_error": flowtime_error(flow, sim.flowtime),
        "progress_mismatch": mismatch,
        "past_speed_horizon": bool(last > red["speed_horizon"]),
    })
    empty = [[], [], [], []]
    res = joint_result(jw, policy, sched, stage, empty, [], [], [],
                       (np.zeros(0, np.int64),) * 2 + (np.zeros(0),) * 3,
                       engine="mininet", wall=wall, events=int(red["checkpoints"]),
                       extra=extra)
    s = emu.segments()
    segs = [{"job": ids[j], "copy": int(k), "machine": mids[m], "start": float(x),
             "end": float(y), "share": float(sh), "work": float(w)}
            for j, k, m, x, y, sh, w in zip(s["job"], s["copy"], s["machine"], s["start"],
                                            s["end"], s["share"], s["work"])]
    # the speed records cover every copy (the last ones are stopped after the last departure)
    until = max([last] + [float(x) for x in s["end"]])
    segs += [dict(d, machine=mids[d["machine"]]) for d in speed.segments(until)]
    res.task_segments = segs
    return res
