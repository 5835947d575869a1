"""The msjo job model on the real emulation: Mininet, the controller and the hosts' agents.

Needs root (network namespaces, OVS); skipped otherwise. Two small workloads of
``coflowemu generate --kind msjo`` on 4 hosts x 2 cores x 20 Mbit/s (3 jobs, 14 tasks,
about 7 s each): one whose shuffles are real coflows (``mars+sebf``), one with shuffle
delays and no coflows (``mars+fair``: the delays are kept by the controller from the
agents' reports). What the agents report running must pass the msjo verifier's rules
(every task once in one piece of its length, one task per machine at a time, a reduce
after its shuffle coflow or after its maps' ends plus their delays), and every job's time
must be within 10 % of the joint simulator's. Nothing of ours is left behind.
"""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

from test_jobmodel_msjo import verify, verify_shuffled

pytestmark = pytest.mark.skipif(os.geteuid() != 0,
                                reason="the Mininet emulation needs root (namespaces, OVS)")

MEASURED = 0.02   # s: slack of the agents' reported times




def workload(shuffled: bool):
    from emulate.io.generators import generate
    p = {"scenario": "random", "n_jobs": 3, "mean_maps": 4.0, "length_scale": 0.1}
    p.update({"shuffle_bytes": 1e6} if shuffled else {"delay_factor": 0.3})
    return generate("msjo", seed=3, ports=4, cores=2, rate_bps=20e6, params=p)


@pytest.mark.parametrize("shuffled, pair", [(True, "mars+sebf"), (False, "mars+fair")],
                         ids=["shuffle-coflows", "delays"])
def test_msjo_jobs_run_on_the_agents_by_the_verifiers_rules_and_as_simulated(
        system, shuffled, pair):
    from emulate.mininet.clean import leftovers
    from emulate.mininet.engine import run_mininet
    from emulate.sim.jobsim import simulate_joint
    w = workload(shuffled)
    assert bool(w.coflows) == shuffled
    sim = simulate_joint(w, pair)
    emu = run_mininet(w, pair)
    assert emu.network.engine == "mininet"
    doc = json.loads(json.dumps(emu.to_json()))
    segs = emu.segment_dicts()
    if shuffled:
        verify_shuffled(doc, segs, w, tol=MEASURED)
        assert all(c["cct"] > 0 for c in doc["coflows"])
    else:
        verify([d for d in segs if "task" in d], w, tol=MEASURED)
    err = (emu.job_completion - emu.job_release) / (sim.job_completion - sim.job_release) - 1
    assert np.abs(err).max() < 0.10, err
    assert emu.extra["emulation"]["api_errors"] == 0
    assert leftovers(settled=True) == {"bridges": [], "interfaces": [], "run_dirs": []}
