"""The yardstick: the LP lower bound every run of a coflow workload is compared with.

``run``, ``compare``, the demo and the experiments report a schedule's total weighted
completion time beside a lower bound valid for *every* schedule of the workload, whatever
the policy: LP (8) on one core (coflow level, exact and cheap), LP (1) on several
identical cores (flow level: valid for every schedule that keeps a flow on one core)
while the workload is small enough for it to be cheap. Heterogeneous cores have no bound
here (the LPs assume identical cores).

Examples
--------
Two coflows on one port pair at 1 byte/s, sizes 2 and 1: the best order sends the smaller
first (completions 1 and 3), and LP (8) is exact here:

>>> from controller.model import Coflow, Flow, Workload
>>> from topologies import Fabric
>>> w = Workload(Fabric(ports=2, cores=1, rate_bps=8.0),
...              [Coflow("big", [Flow(0, 1, 2.0)]), Coflow("small", [Flow(0, 1, 1.0)])])
>>> round(lp_bound_for(w), 6)
4.0
"""
from __future__ import annotations

import hashlib
import json
import os

import numpy as np

from controller.lp.coflow import solve_coflow_lp, solve_flow_lp
from controller.model import Workload

#: workloads with at least this many flows keep their bound in the cache (below, the LP
#: takes well under a second)
CACHE_MIN_FLOWS = 10_000


def cache_dir() -> str | None:
    """Where bounds are kept: ``$COFLOWEMU_CACHE`` (``off`` disables the cache), else
    ``$XDG_CACHE_HOME/coflowemu`` or ``~/.cache/coflowemu``."""
    root = os.environ.get("COFLOWEMU_CACHE")
    if root == "off":
        return None
    if not root:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"),
                                                                 ".cache")
        root = os.path.join(base, "coflowemu")
    return os.path.join(root, "lp-bounds")


def _key(workload: Workload, max_flows: int) -> str:
    """A digest of everything the bound depends on."""
    a = workload.arrays
    fab = workload.fabric
    h = hashlib.sha256(repr(("lp_bound_for/1", fab.ports, fab.cores, tuple(fab.rates),
                             max_flows)).encode())
    for x in (a.src, a.dst, a.coflow, a.size, a.release, a.weight, a.job_of, a.job_weight):
        h.update(np.ascontiguousarray(x).tobytes())
    h.update(repr(sorted(getattr(workload, "precedence", ()) or ())).encode())
    return h.hexdigest()


def lp_bound_for(workload: Workload, *, max_flows: int = 5000,
                 cache: bool = True) -> float | None:
    """A lower bound on ``sum_k w_k C_k`` of every schedule, when cheap enough; else None.

    Parameters
    ----------
    workload : Workload
    max_flows : int
        LP (1) on several cores is solved only up to this many flows.

    cache : bool
        Keep the bound of a workload of at least :data:`CACHE_MIN_FLOWS` flows on disk
        (:func:`cache_dir`), keyed by a digest of the fabric, every flow, release, weight
        and arc: on FB2010 the LP takes 1.3-2 s, reading it back a few ms, so comparing
        policies on one trace solves it once.

    Returns
    -------
    float or None
        LP (8) on one core; LP (1) on several identical cores up to ``max_flows`` flows;
        ``None`` otherwise (heterogeneous cores, or too large).
    """
    fab = workload.fabric
    if not fab.identical:
        return None
    where = cache_dir() if cache and workload.arrays.n_flows >= CACHE_MIN_FLOWS else None
    if where is None:
        return _solve(workload, max_flows)
    path = os.path.join(where, _key(workload, max_flows) + ".json")
    try:
        with open(path) as fh:
            return json.load(fh)["bound"]
    except (OSError, ValueError, KeyError, TypeError):
        pass
    value = _solve(workload, max_flows)
    try:  # written atomically; a cache that cannot be written is no cache
        os.makedirs(where, exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as fh:
            json.dump({"bound": value, "workload": workload.name}, fh)
        os.replace(tmp, path)
    except OSError:
        pass
    return value


def _solve(workload: Workload, max_flows: int) -> float | None:
    fab = workload.fabric
    if fab.cores == 1:
        return solve_coflow_lp(workload.arrays, 1, fab.rate_bps).value
    if workload.arrays.n_flows <= max_flows:
        return solve_flow_lp(workload.arrays, fab.cores, fab.rate_bps).value
    return None
