"""MarS, T-MarS and SO-MarS: the LP-based MSJO schedulers of Ling et al.

MarS (Section 3.4, Algorithm 2; algorithms.md 3.4) -- :func:`mars`
    Solve CND-LPP by COGE (:func:`~controller.msjo.lp.solve_coge`), order the tasks by
    LP middle finish time ``M_u = S_u^LP + p_u/2`` (ties: map first, then index; maps
    precede their reduces because (2) makes ``M_v > M_u``), and list-schedule strictly in
    that order: each task on the machine free earliest, at ``max(earliest start, e_m)``,
    no backfilling (:func:`~controller.msjo.schedule.list_schedule`).
    **Theorem 3: ``C_j <= 3 C_j^LP`` for every job**, when every map of a job is shorter
    than each of its reduces and COGE ended with no violated PGC (``threshold=0``, or
    ``details.violated == 0``); then ``sum w_j C_j <= 3 CND <= 3 OPT``.

T-MarS (Section 4, Algorithm 3; algorithms.md 3.5) -- :func:`t_mars`
    Solve the task-level LP (11)-(13) (:func:`~controller.msjo.lp.solve_task_lp`);
    bucket the tasks by LP completion into doubling intervals ``B_n = {u : t_{n-1} <
    C_u^LP <= t_n}``, ``t_n = tau 2^{n-1}``; give block ``n`` the window ``(tbar_{n-1},
    tbar_n]``, ``tbar_n = tau + sum_{k<=n} (t_k + a_k)``, ``a_n = p(B_n)/|M|``, and
    Graham-list-schedule ``B_n`` in ``C^LP`` order from ``tbar_{n-1}``
    (:func:`~controller.msjo.schedule.graham_schedule`). Every task ends inside its
    block and **``C_u <= 7 C_u^LP``** (Theorem 5).

    Our readings: the paper's time unit is ``t_0 = 1``; we take ``tau = min_u C_u^LP``
    (the same algorithm in units of ``tau``), so the bound also holds when tasks are
    shorter than one second. The Graham step is the paper's own (Lemma 4): whenever a
    machine is idle the first available task of the list starts, which is what the
    block-length argument needs (algorithms.md's strict-order reading could leave a
    machine idle while a later task is available and overrun the block).

SO-MarS (Section 5.3; algorithms.md 3.6) -- :func:`so_mars`
    Semi-online: jobs become known at the end of the batch interval in which they are
    released. At each decision time ``t = k * interval`` MarS plans the *residual
    instance* (every known task not yet started, releases raised to ``t``, reduces
    whose maps already started released when those maps' outputs arrive, machines
    free when their started tasks end); the tasks the plan starts before the next
    decision time are committed, the rest are planned again then. After the last
    arrival the whole plan is committed.

References
----------
Ling et al., Algorithms 2 and 3, Theorems 3 and 5, Section 5.3.
"""
from __future__ import annotations


import numpy as np

from controller.msjo.lp import middle_order, solve_coge, solve_task_lp
from controller.msjo.model import Cluster, Job, MSJOArrays, Task
from controller.msjo.schedule import MSJOSchedule, graham_schedule, list_schedule, retime

__all__ = ["mars", "t_mars", "so_mars", "TMarSBlocks", "t_mars_blocks"]


def mars(a: MSJOArrays, *, threshold: float = 0.3, lp=None, machine_ready=None,
         max_rounds: int = 200) -> MSJOSchedule:
    """MarS: COGE, then strict list scheduling in LP middle-finish-time order.

    Parameters
    ----------
    a : MSJOArrays
    threshold : float, COGE's stop threshold ``e`` (0.3 in the paper; 0 for Theorem 3)
    lp : LPResult or None, a CND-LPP (or CLS-LPP) result to reuse
    machine_ready : float array or None, per machine, when it is first free

    Returns
    -------
    MSJOSchedule
        ``info``: ``lp`` (value), ``lp_name``, ``rounds``, ``violated`` (PGCs left, if
        COGE), ``lp_seconds``.
    """
    if lp is None:
        lp = solve_coge(a, threshold=threshold, max_rounds=max_rounds)
    order = middle_order(a, lp.solution.start)
    info = {"lp": lp.value, "lp_name": lp.lp, "rounds": lp.rounds,
            "lp_seconds": lp.seconds,
            "violated": getattr(lp.details, "violated", None)}
    return list_schedule(a, order, machine_ready=machine_ready, policy="mars", info=info)


class TMarSBlocks:
    """T-MarS's doubling blocks.

    Attributes
    ----------
    tau : float, the time unit (``min C^LP``)
    block : int array, per task its block ``n >= 1``
    t : float array, ``t_n`` (index ``n``; ``t[0] = tau``)
    a : float array, ``a_n = p(B_n)/|M|`` (``a[0] = 0``)
    bounds : float array, ``tbar_n`` (``bounds[0] = tau``): block ``n`` is
        ``(bounds[n-1], bounds[n]]``
    """

    def __init__(self, tau, block, t, a, bounds):
        self.tau, self.block, self.t, self.a, self.bounds = tau, block, t, a, bounds


def t_mars_blocks(a: MSJOArrays, completion) -> TMarSBlocks:
    """Bucket tasks by LP completion ``C^LP`` into T-MarS's doubling blocks."""
    c = np.asarray(completion, dtype=np.float64)
    tau = float(c.min()) if len(c) else 1.0
    ratio = np.maximum(c / tau, 1.0)
    block = np.maximum(1, np.ceil(np.log2(ratio) - 1e-12).astype(np.int64) + 1)
    # guard against rounding: C in (t_{n-1}, t_n]
    t_of = lambda n: tau * 2.0 ** (n - 1)
    block = np.where(c > t_of(block) * (1 + 1e-12), block + 1, block)
    block = np.where((block > 1) & (c <= t_of(block - 1)), block - 1, block)
    N = int(block.max()) if len(block) else 1
    t = np.array([tau] + [t_of(n) for n in range(1, N + 1)])
    an = np.zeros(N + 1)
    np.add.at(an, block, a.length / a.machines)
    bounds = tau + np.concatenate(([0.0], np.cumsum(t[1:] + an[1:])))
    return TMarSBlocks(tau, block, t, an, bounds)


def t_mars(a: MSJOArrays, *, lp=None, compact: bool = True) -> MSJOSchedule:
    """T-MarS: the task-level LP, doubling blocks, Graham list scheduling in each.

    Parameters
    ----------
    a : MSJOArrays
    lp : LPResult or None, a task-level LP result to reuse
    compact : bool
        Left-shift the block schedule (every machine keeps its task sequence, each task
        starts as soon as its machine, release and maps allow;
        :func:`~controller.msjo.schedule.retime` with ``keep_machines``). No task ends
        later, so Theorem 5's ``C_u <= 7 C_u^LP`` still holds, but tasks leave their
        blocks' windows. Our addition: the blocks idle machines until each window opens,
        which the paper's measured ratios (1.03 at 100 tasks) do not show.

    Returns
    -------
    MSJOSchedule
        ``info``: ``lp`` (value), ``lp_name``, ``rounds``, ``lp_seconds``, ``blocks`` (a
        :class:`TMarSBlocks`), ``lp_completion`` (per task ``C^LP``), ``block_start``
        (per task, its start in the block schedule before compaction).
    """
    if lp is None:
        lp = solve_task_lp(a)
    c = lp.solution.completion
    b = t_mars_blocks(a, c)
    order = np.lexsort((np.arange(a.n_tasks), ~a.is_map, c))
    start = np.full(a.n_tasks, np.nan)
    machine = np.full(a.n_tasks, -1, dtype=np.int64)
    free = np.zeros(a.machines)
    jready = np.full(a.n_jobs, -np.inf)
    for n in range(1, len(b.t)):
        tasks = np.flatnonzero(b.block == n)
        if len(tasks) == 0:
            continue
        np.maximum(free, b.bounds[n - 1], out=free)
        graham_schedule(a, order, tasks=tasks, begin=b.bounds[n - 1], machine_ready=free,
                        job_ready=jready, start=start, machine=machine)
    info = {"lp": lp.value, "lp_name": lp.lp, "rounds": lp.rounds, "lp_seconds": lp.seconds,
            "blocks": b, "lp_completion": c, "block_start": start.copy()}
    s = MSJOSchedule(a, machine, start, "t-mars", info)
    return retime(a, s, keep_machines=True) if compact else s


def so_mars(a: MSJOArrays, *, interval: float = 50.0, threshold: float = 0.3,
            max_rounds: int = 200) -> MSJOSchedule:
    """SO-MarS: MarS re-run at the end of every batch interval on the residual instance.

    Parameters
    ----------
    a : MSJOArrays
    interval : float > 0, the batch interval (seconds)
    threshold : float, COGE's ``e``

    Returns
    -------
    MSJOSchedule
        ``info``: ``replans`` (MarS runs), ``lp_seconds`` (their total LP time).
    """
    if not interval > 0:
        raise ValueError(f"interval must be > 0, got {interval!r}")
    n = a.n_tasks
    start = np.full(n, np.nan)
    machine = np.full(n, -1, dtype=np.int64)
    last_release = float(a.job_release.max()) if a.n_jobs else 0.0
    replans, lp_seconds = 0, 0.0
    k = 1
    while np.isnan(start).any():
        t = k * interval
        k += 1
        known = a.job_release[a.job] <= t + 1e-9
        todo = np.flatnonzero(np.isnan(start) & known)
        if len(todo) == 0:
            continue
        final = t >= last_release
        res, back = _residual(a, todo, start, t)
        free = np.full(a.machines, t)
        done = ~np.isnan(start)
        np.maximum.at(free, machine[done], start[done] + a.length[done])
        plan = mars(res, threshold=threshold, machine_ready=free, max_rounds=max_rounds)
        replans += 1
        lp_seconds += plan.info["lp_seconds"]
        commit = np.ones(len(back), bool) if final else plan.start < t + interval
        start[back[commit]] = plan.start[commit]
        machine[back[commit]] = plan.machine[commit]
    return MSJOSchedule(a, machine, start, "so-mars", {"replans": replans,
                                                       "lp_seconds": lp_seconds})


def _residual(a: MSJOArrays, todo, start, t: float):
    """The residual instance at time ``t`` of the tasks ``todo`` (not started yet).

    Returns ``(arrays, back)``: ``back[i]`` is the original index of residual task ``i``.
    """
    todo = set(int(u) for u in todo)
    ready = a.job_map_finish(np.where(np.isnan(start), -np.inf, start))
    jobs, back = [], []
    for j in range(a.n_jobs):
        us = [u for u in range(a.job_start[j], a.job_start[j + 1]) if u in todo]
        if not us:
            continue
        maps, reds = [], []
        for u in us:
            w = float(a.weight[u])
            if a.is_map[u]:
                maps.append(Task(float(a.length[u]), float(a.delay[u]), w,
                                 max(t, float(a.release[u]))))
            else:
                reds.append(Task(float(a.length[u]), 0.0, w,
                                 max(t, float(a.release[u]), float(ready[j]))))
        back += [u for u in us if a.is_map[u]] + [u for u in us if not a.is_map[u]]
        jobs.append(Job(a.job_ids[j], tuple(maps), tuple(reds), t, float(a.job_weight[j])))
    return Cluster(a.machines, tuple(jobs)).arrays, np.asarray(back, dtype=np.int64)
