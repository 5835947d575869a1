"""Online re-planning: epochs, arrivals, background occupancy, and the engine's guards."""
from __future__ import annotations

import numpy as np
import pytest

from controller.compute import get_compute_policy, psrs, synchpack2, synchpack3
from controller.compute.generators import google_like, mapreduce_like
from controller.compute.model import ComputeJob, ComputeWorkload, Machine, Stage, Task
from controller.compute.online import epoch_boundaries
from controller.compute.packing import Packer, PackingError
from test_compute_verifier import verify, verify_policy


def test_epoch_lengths_double():
    b = epoch_boundaries(3.0, 2.0, 100.0)
    assert np.allclose(np.diff(b), 3.0 * 2.0 ** np.arange(len(b) - 1))
    assert b[-2] <= 100.0 < b[-1]


@pytest.mark.parametrize("name", ["synchpack-1", "synchpack-2", "synchpack-3"])
def test_online_synchpack_starts_a_job_only_at_the_first_boundary_after_its_arrival(name):
    w = google_like(12, 3, seed=3, mean_interarrival=15.0)
    pol = get_compute_policy(name)
    inst = w.pinned() if pol.pinned else w
    s = pol.schedule(inst, online=True, tau0=7.0)
    verify(inst, s, preemptive=pol.preemptive, migration=pol.migration, pinned=pol.pinned)
    b = epoch_boundaries(7.0, 2.0, 1e9)
    a = s.arrays
    for j in range(a.n_jobs):
        first = min(s.task_start[t] for st in a.job_stages[j] for t in a.stage_tasks[st])
        boundary = b[np.searchsorted(b, a.job_release[j] - 1e-9)]
        assert first >= boundary - 1e-9


def test_preemptive_online_equals_offline_when_the_first_epoch_covers_everything():
    w = google_like(8, 3, seed=4).pinned()
    off = synchpack3.schedule(w)
    on = synchpack3.schedule(w, online=True, tau0=1e9)
    assert on.weighted_completion == pytest.approx(off.weighted_completion)
    assert on.info["replans"] == 1


def test_preemptive_replanning_at_every_boundary_stays_feasible_and_finishes():
    w = google_like(10, 3, seed=5).pinned()
    s = synchpack3.schedule(w, online=True, tau0=0.5)
    verify(w, s, preemptive=True, migration=False, pinned=True)
    assert s.info["replans"] > 5


def test_non_preemptive_online_lets_running_tasks_finish_across_boundaries():
    w = google_like(10, 3, seed=6, mean_interarrival=5.0)
    s = synchpack2.schedule(w, online=True, tau0=3.0)
    verify(w, s, preemptive=False, migration=False)
    b = epoch_boundaries(3.0, 2.0, s.makespan)
    crossing = [(st, en) for st, en in zip(s.start, s.end)
                if np.any((b > st + 1e-9) & (b < en - 1e-9))]
    assert crossing, "some task should run across a boundary"


def test_psrs_replans_at_every_arrival():
    w = google_like(9, 3, seed=7, mean_interarrival=10.0)
    s = psrs.schedule(w.pinned())
    assert s.info["replans"] == len(np.unique([j.release for j in w.jobs]))
    off = psrs.schedule(google_like(9, 3, seed=7).pinned())
    assert off.info["replans"] == 1


def test_psrs_replans_when_a_reduce_stage_becomes_ready():
    w = mapreduce_like(3, 3, seed=2)
    _, s, _ = verify_policy(w, "psrs")
    assert s.info["replans"] == 1 + 3


def test_psrs_preempts_for_a_wide_task_that_would_wait_too_long():
    def w_of(weights):
        tasks = [("x", 3.0, 50.0), ("a", 6.0, 10.0), ("c", 6.0, 20.0), ("b", 8.0, 2.0)]
        return ComputeWorkload([Machine("m0", (10.0,))], [
            ComputeJob(n, [Stage(n + "s", [Task(n, (a,), {"m0": p})])], wt)
            for (n, a, p), wt in zip(tasks, weights)])
    # Smith order x, a, c, b: x [0,50], a [0,10], c [10,30] (t = 10); the wide b would wait
    # until 50 > 10 + 1 x 2, so at t = 10 x is preempted, c shifted, b runs in [10, 12]
    w = w_of([1000.0, 300.0, 480.0, 1.0])
    s = psrs.schedule(w)
    verify(w, s, preemptive=True, migration=False, pinned=True)
    assert s.preemptions.tolist() == [1, 0, 0, 0]
    assert s.task_completion.tolist() == pytest.approx([52.0, 10.0, 32.0, 12.0])
    # with a large enough wait factor b waits instead
    s2 = psrs.schedule(w, wait_factor=100.0)
    assert s2.preemptions.sum() == 0 and s2.task_start[3] == pytest.approx(50.0)


def test_packer_refuses_rules_that_break_capacity_placement_or_precedence():
    w = ComputeWorkload([Machine("m0", (2.0,)), Machine("m1", (2.0,))], [ComputeJob("j", [
        Stage("s", [Task("a", (2.0,), {"m0": 1.0}), Task("b", (1.0,), {"m0": 1.0})]),
        Stage("r", [Task("c", (1.0,), {"m1": 1.0})], after=("s",))])])
    a = w.arrays
    pk = Packer(a)
    with pytest.raises(PackingError, match="does not fit"):
        pk.run(lambda p: [p.item_on(0, 0), p.item_on(1, 0)], preemptive=True)
    with pytest.raises(PackingError, match="placement"):
        Packer(a).run(lambda p: [p.item_on(0, 1)], preemptive=True)
    with pytest.raises(PackingError, match="not available"):
        Packer(a).run(lambda p: [p.item_on(2, 1)], preemptive=True)
    with pytest.raises(PackingError, match="never starts"):
        Packer(a).run(lambda p: [], preemptive=True)
