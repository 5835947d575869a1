"""The LP yardstick's disk cache (controller.lp.bound): same bound, solved once per workload."""
from __future__ import annotations

import numpy as np
import pytest

import controller.lp.bound as bound
from controller.model import Coflow, Flow, Workload
from topologies.fabric import Fabric


def workload(seed: int, n: int = 40) -> Workload:
    rng = np.random.default_rng(seed)
    cfs = [Coflow(f"c{k}", tuple(Flow(int(s), int(d), float(rng.integers(1, 9)))
                                 for s, d in {(int(rng.integers(6)), int(rng.integers(6)))
                                              for _ in range(4)}),
                  release=float(rng.integers(0, 4)))
           for k in range(n)]
    return Workload(Fabric(ports=6, cores=1, rate_bps=8.0), tuple(cfs))


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("COFLOWEMU_CACHE", str(tmp_path))
    monkeypatch.setattr(bound, "CACHE_MIN_FLOWS", 1)
    return tmp_path / "lp-bounds"


def test_a_cached_bound_is_the_solved_one_and_is_not_solved_again(cache, monkeypatch):
    w = workload(0)
    value = bound.lp_bound_for(w, cache=False)
    assert bound.lp_bound_for(w) == value          # solved, written
    assert len(list(cache.glob("*.json"))) == 1
    monkeypatch.setattr(bound, "_solve", lambda *a: pytest.fail("solved again"))
    assert bound.lp_bound_for(w) == value          # read back


def test_another_workload_or_fabric_is_another_entry(cache):
    a, b = workload(0), workload(1)
    assert bound.lp_bound_for(a) != bound.lp_bound_for(b)
    faster = Workload(Fabric(ports=6, cores=1, rate_bps=16.0), a.coflows)
    assert bound.lp_bound_for(faster) == bound.lp_bound_for(faster, cache=False)
    assert bound.lp_bound_for(faster) < bound.lp_bound_for(a)
    assert len(list(cache.glob("*.json"))) == 3


def test_off_or_an_unwritable_cache_still_gives_the_bound(tmp_path, monkeypatch):
    w = workload(2)
    value = bound.lp_bound_for(w, cache=False)
    monkeypatch.setattr(bound, "CACHE_MIN_FLOWS", 1)
    monkeypatch.setenv("COFLOWEMU_CACHE", "off")
    assert bound.lp_bound_for(w) == value
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("COFLOWEMU_CACHE", str(blocker))   # a file: no directory in it
    assert bound.lp_bound_for(w) == value
    (tmp_path / "c" / "lp-bounds").mkdir(parents=True)
    monkeypatch.setenv("COFLOWEMU_CACHE", str(tmp_path / "c"))
    bound.lp_bound_for(w)
    entry, = (tmp_path / "c" / "lp-bounds").glob("*.json")
    entry.write_text("{not json")                  # a damaged entry is solved again
    assert bound.lp_bound_for(w) == value
