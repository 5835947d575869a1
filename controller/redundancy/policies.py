"""The policies of the redundancy model: who runs, on how many machines, with what share.

At every checkpoint (an arrival or a departure, algorithms.md 4.2) a policy looks at the
``n`` active jobs and the ``N`` machines and returns *copies*: ``(job, machine, share)``,
a job's copies all with the same share ``theta <= 1``, the shares on a machine summing to
at most 1. Jobs are given in the policy's order: by remaining work for the SRPT family
(smallest first, ties by arrival), by arrival for the others (oldest first, the newest
last). Machines are handed out in index order (machine 0 first) to the jobs in that
order: the policies do not know the machines' speeds (they are identically distributed,
the paper's assumption), so any fixed rule is one of the paper's.

``srpt+r`` (non-multitasking)
    ``n >= N``: the ``N`` jobs with least remaining work get a machine each, the rest
    wait. ``n < N``: every job gets ``floor(N/n)`` copies, the smallest job the rest,
    ``N - (n-1) floor(N/n)``. Ratio: ``(1+eps)``-speed ``O(1/eps)``-competitive.
``srpt``
    The ``min(n, N)`` jobs with least remaining work get one machine each.
``fair+r`` (multitasking; the reconstruction of algorithms.md 4.2)
    ``n >= N``: with ``q = floor(n/N)``, the newest ``N q`` jobs get one machine each,
    ``q`` jobs per machine with share ``1/q`` (machine ``i`` holds the ``i``-th block of
    ``q`` in arrival order); the oldest ``n mod N`` wait. ``n < N``: the newest job gets
    ``N - (n-1) floor(N/n)`` copies, every other ``floor(N/n)``, share 1. Ratio:
    ``(4+eps)``-speed ``O(1/eps)``.
``fair-share`` (our reading of "the same without redundancy")
    ``n >= N``: as ``fair+r`` (which runs no redundant copy there); ``n < N``: every job
    one machine, share 1.
``laps+r`` (parameter ``beta`` in (0, 1], default 0.5: ``laps+r@beta=0.3``)
    Only the ``k = ceil(beta n)`` newest jobs run. ``k <= N``: the ``k-1`` newest get
    ``floor(N/k)`` copies each, the oldest selected job the rest, share 1. ``k > N``:
    ``fair+r`` on the ``k`` newest (algorithms.md's acceptable reading: the paper's share
    formulas are illegible). Ratio: ``(2+2beta+2eps)``-speed ``O(1/(beta eps))``.
``laps``
    The ``k`` newest run: ``k <= N`` one machine each; ``k > N`` ``fair-share`` on them.

Which physical machine a copy gets is a second choice the paper leaves open. By default
(``assign="index"``) the policy's machine ``i`` is machine ``i``: at every checkpoint the
copies are dealt out again in index order, so a job may move (free: the state is cloned
anyway; with checkpoint transfers, not free: :mod:`controller.redundancy.transfers`).
With ``assign="sticky"`` (``srpt+r@assign=sticky``, :func:`keep_machines`) the same
copies are placed so
that a job keeps the machines it held where it can: each of the policy's machines (in
order) goes to a free machine its first job held in the last interval, else to the first
free machine.

:func:`allocate` is the one implementation (a numba function, called by the event
simulator's kernel and, from Python, by the tests).

References
----------
Xu, de Veciana, Lau, Zhou; algorithms.md 4.2 and 4.3.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numba
import numpy as np

__all__ = ["POLICIES", "SRPT_ORDER", "DEFAULT_BETA", "OPTIONS", "Choice", "policy_code",
           "allocate", "parse", "keep_machines", "copies"]

#: name -> (code used by the kernels, summary)
POLICIES = {
    "srpt+r": (0, "SRPT with redundancy: least remaining work first, spare machines as "
                  "copies"),
    "srpt": (1, "SRPT without redundancy: the N jobs with least remaining work"),
    "fair+r": (2, "Fair+R: machine sharing among the newest jobs, copies when n < N"),
    "fair-share": (3, "processor sharing without redundancy (fair+r with one copy)"),
    "laps+r": (4, "LAPS+R(beta): fair+r over the ceil(beta n) newest jobs (beta=0.5)"),
    "laps": (5, "LAPS(beta) without redundancy"),
}
#: codes whose jobs are ordered by remaining work (else by arrival)
SRPT_ORDER = (0, 1)
DEFAULT_BETA = 0.5


#: the options a policy takes in its name, ``srpt+r@assign=sticky@slot=1``
OPTIONS = ("beta", "assign", "slot")
ASSIGN = ("index", "sticky")


@dataclass(frozen=True)
class Choice:
    """A redundancy policy and its options (:func:`parse`).

    Attributes
    ----------
    name : str, one of :data:`POLICIES`
    beta : float, LAPS's fraction of the newest jobs served (``laps``, ``laps+r``; in
        (0, 1], default 0.5)
    assign : str, ``"index"`` (default) or ``"sticky"``: which physical machines the
        policy's copies get (module docstring)
    slot : float, 0 (default): decisions at the events, exact; ``s > 0``: slotted
        decisions, only at multiples of ``s`` (:mod:`controller.redundancy.simulator`)
    """

    name: str
    beta: float = DEFAULT_BETA
    assign: str = "index"
    slot: float = 0.0

    @property
    def code(self) -> int:
        return POLICIES[self.name][0]


def parse(policy: str, **given) -> Choice:
    """``"laps+r@beta=0.3@assign=sticky"`` -> :class:`Choice`; the options
    (:func:`controller.registry.parse_options`) are ``beta`` (``laps``, ``laps+r``),
    ``assign`` and ``slot``. ``given``: the same options as keywords (None: not given),
    for callers that hold them apart; one given both ways with two values is an error.

    Raises
    ------
    ValueError
        Unknown policy or option, a value out of range.
    """
    from controller.registry import parse_options
    name, options = parse_options(policy)
    if name not in POLICIES:
        raise ValueError(f"unknown redundancy policy {name!r}; known: {', '.join(POLICIES)} "
                         f"(options: laps+r@beta=0.3, srpt+r@assign=sticky, srpt+r@slot=1)")
    for key, value in given.items():
        if value is None:
            continue
        if key in options and options[key] != value:
            raise ValueError(f"{key} given twice for {name}: {options[key]!r} in "
                             f"{policy!r} and {value!r}")
        options[key] = value
    unknown = [k for k in options if k not in OPTIONS]
    if unknown:
        raise ValueError(f"{name} has no option {unknown[0]!r}; its options: "
                         f"{', '.join(OPTIONS)}")
    beta = options.get("beta", DEFAULT_BETA)
    if "beta" in options and not name.startswith("laps"):
        raise ValueError(f"{name} takes no beta (laps and laps+r do), got {policy!r}")
    if isinstance(beta, bool) or not isinstance(beta, (int, float)) or not 0 < beta <= 1:
        raise ValueError(f"beta of {name} must be in (0, 1], got {beta!r}")
    assign = options.get("assign", "index")
    if assign not in ASSIGN:
        raise ValueError(f"assign of {name} must be 'index' or 'sticky', got {assign!r}")
    slot = options.get("slot", 0.0)
    if "slot" in options and (isinstance(slot, bool) or not isinstance(slot, (int, float))
                              or not (math.isfinite(slot) and slot > 0)):
        raise ValueError(f"slot of {name} must be a time > 0, got {slot!r}")
    return Choice(name, float(beta), assign, float(slot))


def policy_code(name: str) -> int:
    return POLICIES[name][0]


@numba.njit(cache=True)
def _single(order, lo, hi, cj, cm, cs, nc):
    """One copy with share 1 for each job ``order[lo:hi]``, on machines 0, 1, ..."""
    for i in range(lo, hi):
        cj[nc] = order[i]
        cm[nc] = i - lo
        cs[nc] = 1.0
        nc += 1
    return nc


@numba.njit(cache=True)
def _spread(order, lo, hi, N, first_extra, cj, cm, cs, nc):
    """Jobs ``order[lo:hi]`` (k < N of them) share the ``N`` machines as copies:
    ``floor(N/k)`` each, the rest to the first (``first_extra``) or the last job."""
    k = hi - lo
    q = N // k
    extra = N - k * q
    m = 0
    for i in range(lo, hi):
        d = q
        if (first_extra and i == lo) or (not first_extra and i == hi - 1):
            d += extra
        for _ in range(d):
            cj[nc] = order[i]
            cm[nc] = m
            cs[nc] = 1.0
            nc += 1
            m += 1
    return nc


@numba.njit(cache=True)
def _share(order, lo, hi, N, cj, cm, cs, nc):
    """Jobs ``order[lo:hi]`` (k >= N of them) share the machines without copies: with
    ``q = floor(k/N)`` the newest ``N q`` get one machine each, ``q`` per machine."""
    k = hi - lo
    q = k // N
    first = hi - N * q
    for i in range(first, hi):
        cj[nc] = order[i]
        cm[nc] = (i - first) // q
        cs[nc] = 1.0 / q
        nc += 1
    return nc


@numba.njit(cache=True)
def allocate(code, order, n, N, beta, cj, cm, cs):
    """The copies of policy ``code`` for the active jobs ``order[:n]`` (module docstring;
    in the policy's order) on ``N`` machines, written to ``cj`` (job), ``cm`` (machine),
    ``cs`` (share); returns how many. Every served job's copies are consecutive."""
    nc = 0
    if n == 0:
        return 0
    if code == 0 or code == 1:                       # srpt+r, srpt
        if n >= N or code == 1:
            return _single(order, 0, min(n, N), cj, cm, cs, nc)
        return _spread(order, 0, n, N, True, cj, cm, cs, nc)
    lo = 0
    if code == 4 or code == 5:                       # laps: the ceil(beta n) newest
        k = int(math.ceil(beta * n - 1e-9))
        k = max(1, min(n, k))
        lo = n - k
        if k <= N:
            if code == 5:
                return _single(order, lo, n, cj, cm, cs, nc)
            return _spread(order, lo, n, N, True, cj, cm, cs, nc)
        return _share(order, lo, n, N, cj, cm, cs, nc)
    # fair+r (2), fair-share (3)
    if n >= N:
        return _share(order, 0, n, N, cj, cm, cs, nc)
    if code == 3:
        return _single(order, 0, n, cj, cm, cs, nc)
    return _spread(order, 0, n, N, False, cj, cm, cs, nc)


def copies(policy: str, order, N: int, beta: float | None = None) -> list[tuple]:
    """The copies ``(job, machine, share)`` of ``policy`` for the active jobs ``order`` (in
    the policy's order) on ``N`` machines: :func:`allocate` from Python."""
    ch = parse(policy)
    order = np.asarray(order, dtype=np.int64)
    cap = max(N, len(order)) + 1
    cj, cm, cs = np.empty(cap, np.int64), np.empty(cap, np.int64), np.empty(cap)
    nc = allocate(ch.code, order, len(order), N, ch.beta if beta is None else beta,
                  cj, cm, cs)
    return [(int(cj[c]), int(cm[c]), float(cs[c])) for c in range(nc)]


@numba.njit(cache=True)
def keep_machines(nc, cj, cm, N, owner, head, link, phys):
    """Re-place the copies ``cj, cm`` (``cm`` in the policy's machine order) on physical
    machines so that a job keeps the machines it held (``owner[m]``: the first job that
    held machine ``m`` in the last interval, -1 none); rewrites ``cm`` and ``owner``.
    ``head`` (per job, -1), ``link`` and ``phys`` (per machine) are scratch arrays."""
    for m in range(N):                          # each job's machines, as linked lists
        link[m] = -1
        phys[m] = -1
        j = owner[m]
        if j >= 0:
            link[m] = head[j]
            head[j] = m
    taken = np.zeros(N, np.bool_)
    first = np.full(N, -1, np.int64)            # the first job of each policy machine
    for c in range(nc):
        if first[cm[c]] < 0:
            first[cm[c]] = cj[c]
    for s in range(N):                          # keep what can be kept
        j = first[s]
        if j < 0:
            continue
        m = head[j]
        while m >= 0 and taken[m]:
            m = link[m]
        if m >= 0:
            phys[s] = m
            taken[m] = True
            head[j] = link[m]
    nxt = 0
    for s in range(N):                          # the rest in index order
        if first[s] >= 0 and phys[s] < 0:
            while taken[nxt]:
                nxt += 1
            phys[s] = nxt
            taken[nxt] = True
    for m in range(N):
        j = owner[m]
        if j >= 0:
            head[j] = -1
        owner[m] = -1
    for c in range(nc):
        cm[c] = phys[cm[c]]
        if owner[cm[c]] < 0:
            owner[cm[c]] = cj[c]
    return nc
