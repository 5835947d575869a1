"""Policy specs (controller.policyspec) and compute policies as plug-ins
(controller.compute: ComputePlanner, get_compute_policy by ``module:Class``)."""
from __future__ import annotations

import sys

import numpy as np
import pytest

from controller.compute import (ComputePlanner, ComputePolicyError, compute_policies,
                                get_compute_policy)
from controller.compute.model import Machine, Stage, Task
from controller.jobs import JointJob, JointWorkload, mapreduce_jobs
from controller.policies import PolicyError, available
from controller.policyspec import DEFAULT_COMPUTE, PolicySpec, split_policy
from emulate.sim.jobsim import simulate_joint
from topologies import Fabric

COMPUTE_PLUGIN = '''
import numpy as np
from controller.compute import ComputePlanner, ComputeSchedule
from controller.compute.packing import list_schedule


class HeaviestFirst(ComputePlanner):
    """Heaviest job first, every task on its fastest machine, preemptive."""
    preemptive = True
    pinned = True

    def plan(self, a, background=()):
        tasks = np.arange(a.n_tasks)
        prio = -a.job_weight[a.task_job]
        pk = list_schedule(a, tasks, a.fastest, a.pmin, prio, preemptive=True,
                           background=background)
        return ComputeSchedule.from_segments(a, pk.segments(), "heaviest-first")


class NotAPolicy:
    pass
'''

NETWORK_PLUGIN = '''
from controller.plan import coflow_order_plan
from controller.policies import Policy


class ByIndex(Policy):
    name = "by-index"

    def plan(self, state):
        return coflow_order_plan(state, list(range(state.arrays.n_coflows)))
'''


@pytest.fixture
def plugins(tmp_path, monkeypatch):
    """Two plug-in modules in the current directory, as a user would have them."""
    (tmp_path / "mycompute.py").write_text(COMPUTE_PLUGIN)
    (tmp_path / "mynetwork.py").write_text(NETWORK_PLUGIN)
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    for mod in ("mycompute", "mynetwork"):
        sys.modules.pop(mod, None)
    if str(tmp_path) in sys.path:
        sys.path.remove(str(tmp_path))


def no_coflows() -> JointWorkload:
    """Two single-stage jobs, no coflows: a workload for a compute policy alone."""
    m = [Machine("m0", 1.0), Machine("m1", 1.0)]
    stages = [Stage("j0.s", [Task("a", 0.6, {"m0": 2.0}), Task("b", 0.6, {"m0": 1.0,
                                                                         "m1": 3.0})]),
              Stage("j1.s", [Task("c", 0.5, {"m1": 2.0}, release=1.0)])]
    jobs = [JointJob("j0", ("j0.s",), (), (), 2.0), JointJob("j1", ("j1.s",), (), (), 1.0)]
    return JointWorkload(Fabric(2, 1, 8e6), m, stages, [], jobs)


# ------------------------------------------------------------------------------ split_policy
def test_a_spec_splits_at_its_first_plus_into_named_halves(plugins):
    assert split_policy("synchpack-3+lp-coflow") == PolicySpec("synchpack-3", "lp-coflow")
    assert split_policy("psrs+mynetwork:ByIndex") == PolicySpec("psrs", "mynetwork:ByIndex")
    spec = split_policy("mycompute:HeaviestFirst+sebf")
    assert (spec.compute, spec.network) == ("mycompute:HeaviestFirst", "sebf")
    assert split_policy("mycompute:HeaviestFirst+mynetwork:ByIndex") == (
        "mycompute:HeaviestFirst", "mynetwork:ByIndex")


def test_a_plain_name_is_a_network_policy_with_default_compute_or_a_compute_policy_alone(
        plugins):
    assert split_policy("sebf") == PolicySpec(DEFAULT_COMPUTE, "sebf")
    assert split_policy("mynetwork:ByIndex") == PolicySpec(DEFAULT_COMPUTE,
                                                           "mynetwork:ByIndex")
    for name in set(compute_policies()) - set(available()):
        assert split_policy(name) == PolicySpec(name, None)
    # a name of both registries is the network policy, as it always was
    assert split_policy("fifo") == PolicySpec(DEFAULT_COMPUTE, "fifo")
    assert split_policy("mycompute:HeaviestFirst") == PolicySpec("mycompute:HeaviestFirst",
                                                                 None)


@pytest.mark.parametrize("spec, message", [
    ("nope", "unknown policy 'nope'"),
    ("nope+sebf", "unknown compute policy 'nope'"),
    ("sebf+fair", "unknown compute policy 'sebf'"),
    ("+sebf", "no compute policy"),
    ("fifo+", "no network policy"),
    ("mycompute:NotAPolicy+sebf", "is not a compute policy"),
    ("mycompute:Missing+sebf", "cannot load"),
    ("nomodule:X", "cannot load"),
])
def test_bad_specs_are_user_errors_that_say_what_is_wrong(plugins, spec, message):
    with pytest.raises(PolicyError, match=message):
        split_policy(spec)


# ------------------------------------------------------------------------------ plug-ins
def test_a_compute_plugin_loads_by_module_and_class_with_its_declared_class(plugins):
    pol = get_compute_policy("mycompute:HeaviestFirst")
    assert pol.name == "mycompute:HeaviestFirst"
    assert (pol.preemptive, pol.migration, pol.pinned) == (True, False, True)
    assert pol.lower_bound == "lp3"
    assert pol.summary.startswith("Heaviest job first")
    w = mapreduce_jobs(0, n_jobs=3).compute
    s = pol.schedule(w)
    assert np.all(np.isfinite(s.task_completion))


@pytest.mark.parametrize("spec, message", [
    ("nope", "unknown compute policy 'nope'"),
    ("mycompute:Missing", "cannot load compute policy"),
    ("nomodule:HeaviestFirst", "cannot load compute policy"),
    ("mycompute:NotAPolicy", "is not a compute policy"),
])
def test_unknown_compute_policies_are_policy_errors(plugins, spec, message):
    with pytest.raises(ComputePolicyError, match=message) as e:
        get_compute_policy(spec)
    assert isinstance(e.value, PolicyError)


def test_a_compute_plugin_runs_a_joint_workload_with_a_network_policy(plugins):
    r = simulate_joint(mapreduce_jobs(1, n_jobs=2), "mycompute:HeaviestFirst+fair")
    assert r.compute_policy == "mycompute:HeaviestFirst" and r.network_policy == "fair"
    assert np.all(np.isfinite(r.job_completion))


def test_a_workload_without_coflows_runs_with_a_compute_policy_alone(plugins):
    w = no_coflows()
    for spec in ("synchpack-3", "psrs", "mycompute:HeaviestFirst"):
        r = simulate_joint(w, spec)
        assert r.network_policy is None
        assert np.all(r.job_completion >= r.job_release)
    # fifo: a on m0 [0, 2], b fits nowhere beside a -> m1 [0, 3]; c (at 1) waits for b: [3, 5]
    r = simulate_joint(w, "fifo+fair")
    assert r.job_completion.tolist() == pytest.approx([3.0, 5.0])
