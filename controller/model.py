"""The workload model: flows, coflows, precedence between coflows, multi-stage jobs.

A *flow* moves ``bytes`` from server ``src`` to server ``dst`` (ports of the fabric). A
*coflow* is a set of flows that finish together: its completion time is that of its last
flow. It has a ``release`` time (seconds; no flow of it may send before) and a ``weight``
for the weighted completion-time objective. At most one flow per ``(src, dst)`` pair in a
coflow (its demand matrix has one entry there).

``precedence`` is a DAG over coflows: an arc ``(a, b)`` means no flow of ``b`` may send
before every flow of ``a`` has finished. A *job* is a weighted set of coflows (a
multi-stage job, the arcs between its coflows given in ``precedence``); its completion
time is that of its last coflow.

Everything is validated on construction. Errors are :class:`WorkloadError`, which names
where (file, line, coflow) and which field was wrong.

Limits: a flow's ``bytes`` at most ``MAX_BYTES`` (1e18, an exabyte), a ``release`` (and
every other time of a workload) at most ``MAX_SECONDS`` (1e15 s: beyond it a float64
clock cannot resolve 1/8 s), a ``weight`` at most ``MAX_WEIGHT`` (1e9). Larger values
are input mistakes (a size in the wrong unit, a timestamp in ns), and beyond them the
LPs and the simulator's clock lose all precision or overflow (``bytes: 1e308`` once made
the LP bound NaN); the fabric's limits are in :mod:`topologies.fabric`.

The simulator, the LPs and the policies work on :class:`FlowArrays`, the flat numpy view
of a workload (one row per flow with positive size), built once by
:meth:`Workload.arrays`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from topologies.fabric import Fabric

if TYPE_CHECKING:
    import networkx as nx


#: the largest values a workload may hold (see the module docstring)
MAX_BYTES = 1e18
MAX_SECONDS = 1e15
MAX_WEIGHT = 1e9


class WorkloadError(ValueError):
    """Bad workload input: says what was wrong, where, and what is allowed."""

    def __init__(self, message: str, *, source: str | None = None, line: int | None = None,
                 field: str | None = None):
        self.message = message
        self.source = source
        self.line = line
        self.field = field
        super().__init__(str(self))

    def located(self, source: str | None = None, line: int | None = None) -> "WorkloadError":
        """The same error with a file (and line) filled in where it had none."""
        return WorkloadError(self.message, source=self.source or source,
                             line=self.line if self.line is not None else line,
                             field=self.field)

    def __str__(self) -> str:
        where = ""
        if self.source:
            where = self.source + (f":{self.line}" if self.line is not None else "") + ": "
        elif self.line is not None:
            where = f"line {self.line}: "
        fld = f"{self.field}: " if self.field else ""
        return f"{where}{fld}{self.message}"


@dataclass(frozen=True)
class Flow:
    """``bytes`` from port ``src`` to port ``dst``."""

    src: int
    dst: int
    bytes: float


class Coflow:
    """A set of flows that complete together, released at ``release`` seconds.

    ``Coflow(id, flows, release=0.0, weight=1.0)`` from :class:`Flow` objects, or
    :meth:`Coflow.from_arrays` from numpy arrays of sources, destinations and sizes (a
    trace's million flows are then never Python objects: :attr:`flows` is built on first
    use). ``src``, ``dst`` and ``size`` are the flows as read-only arrays. A few flows
    are validated one by one; many (more than ``_FEW``) at once over arrays, and walked
    one by one only when that check fails, to name the first bad flow. Immutable; equal
    when id, release, weight and flows are.
    """

    __slots__ = ("id", "release", "weight", "_flows", "_src", "_dst", "_size")
    _FEW = 64

    def __init__(self, id: str, flows=(), release: float = 0.0, weight: float = 1.0):
        flows = tuple(flows)
        _set(self, id=id, release=release, weight=weight, _flows=flows, _src=None,
             _dst=None, _size=None)
        self._check_fields()
        if len(flows) <= self._FEW:       # the arrays are made when first asked for
            if not _check_flows_each(id, flows):
                raise WorkloadError(f"coflow {id!r}: its flows are not valid", field="flows")
            return
        try:
            src = np.fromiter((f.src for f in flows), dtype=np.int64, count=len(flows))
            dst = np.fromiter((f.dst for f in flows), dtype=np.int64, count=len(flows))
            size = np.fromiter((f.bytes for f in flows), dtype=np.float64, count=len(flows))
            ports = {type(f.src) for f in flows} | {type(f.dst) for f in flows}
            sizes = {type(f.bytes) for f in flows}
            if bool in ports | sizes or any(not issubclass(k, (int, np.integer))
                                            for k in ports) or any(
                    not issubclass(k, (int, float, np.integer, np.floating)) for k in sizes):
                raise TypeError
        except (AttributeError, TypeError, ValueError, OverflowError):
            _check_flows_each(id, flows)     # names the first bad flow
            raise WorkloadError(f"coflow {id!r}: its flows are not valid", field="flows") \
                from None
        self._set_arrays(src, dst, size)

    @classmethod
    def from_arrays(cls, id: str, src, dst, size, release: float = 0.0,
                    weight: float = 1.0) -> "Coflow":
        """A coflow of flows ``src[i] -> dst[i]`` of ``size[i]`` bytes (array-likes of one
        length; ports integers, sizes numbers). Validated as the constructor validates."""
        self = object.__new__(cls)
        _set(self, id=id, release=release, weight=weight, _flows=None, _src=None, _dst=None,
             _size=None)
        self._check_fields()
        src, dst, size = (np.asarray(x) for x in (src, dst, size))
        if not (len(src) == len(dst) == len(size)) or not (
                np.issubdtype(src.dtype, np.integer) and np.issubdtype(dst.dtype, np.integer)
                and (np.issubdtype(size.dtype, np.floating)
                     or np.issubdtype(size.dtype, np.integer))):
            raise WorkloadError(f"coflow {id!r}: src, dst and size must be arrays of one "
                                f"length (integer ports, numeric sizes)", field="flows")
        self._set_arrays(src.astype(np.int64), dst.astype(np.int64),
                         size.astype(np.float64))
        return self

    def _check_fields(self):
        cid = self.id
        if not isinstance(cid, str) or not cid:
            raise WorkloadError("coflow id must be a non-empty string", field="id")
        _check_number(self.release, f"coflow {cid!r}", "release", minimum=0.0,
                      maximum=MAX_SECONDS)
        _check_number(self.weight, f"coflow {cid!r}", "weight", minimum=0.0,
                      maximum=MAX_WEIGHT)

    def _set_arrays(self, src, dst, size):
        """Check the flows over arrays; on a failure, walk them to name the first bad one."""
        ok = (len(size) == 0 or (
            src.min() >= 0 and dst.min() >= 0 and np.isfinite(size).all()
            and size.min() >= 0.0 and size.max() <= MAX_BYTES))
        if ok and len(size) > 1:
            order = np.lexsort((dst, src))
            s, d = src[order], dst[order]
            ok = not ((s[1:] == s[:-1]) & (d[1:] == d[:-1])).any()
        if not ok:
            flows = self._flows if self._flows is not None else _flows_of(src, dst, size)
            _check_flows_each(self.id, flows)
            raise WorkloadError(f"coflow {self.id!r}: its flows are not valid", field="flows")
        self._store(src, dst, size)

    def _store(self, src, dst, size):
        size = size + 0.0                                 # -0.0 stored as 0.0
        for a in (src, dst, size):
            a.setflags(write=False)
        _set(self, _src=src, _dst=dst, _size=size)

    def _arrays(self):
        if self._size is None:
            f = self._flows
            self._store(np.array([x.src for x in f], dtype=np.int64),
                        np.array([x.dst for x in f], dtype=np.int64),
                        np.array([x.bytes for x in f], dtype=np.float64))

    @property
    def src(self) -> np.ndarray:
        """Source port of every flow (read-only int64)."""
        self._arrays()
        return self._src

    @property
    def dst(self) -> np.ndarray:
        """Destination port of every flow (read-only int64)."""
        self._arrays()
        return self._dst

    @property
    def size(self) -> np.ndarray:
        """Bytes of every flow (read-only float64)."""
        self._arrays()
        return self._size

    @property
    def flows(self) -> tuple[Flow, ...]:
        """The flows as :class:`Flow` objects (built on first use for a coflow made
        :meth:`from_arrays`)."""
        if self._flows is None:
            _set(self, _flows=_flows_of(self.src, self.dst, self.size))
        return self._flows

    @property
    def max_port(self) -> int:
        """The largest port a flow names (-1 without flows)."""
        if not len(self):
            return -1
        if self._size is None:
            return max(max(f.src, f.dst) for f in self._flows)
        return int(max(self._src.max(), self._dst.max()))

    @property
    def total_bytes(self) -> float:
        if self._flows is not None:
            return float(sum(f.bytes for f in self._flows))
        return float(sum(self.size.tolist()))

    def __len__(self) -> int:
        return len(self._flows) if self._flows is not None else len(self._size)

    def __setattr__(self, name, value):
        raise AttributeError(f"Coflow is immutable (cannot set {name!r})")

    def __eq__(self, other):
        if not isinstance(other, Coflow):
            return NotImplemented
        return (self.id == other.id and self.release == other.release
                and self.weight == other.weight and np.array_equal(self.src, other.src)
                and np.array_equal(self.dst, other.dst)
                and np.array_equal(self.size, other.size))

    def __hash__(self):
        return hash((self.id, self.release, self.weight, self.src.tobytes(),
                     self.dst.tobytes(), self.size.tobytes()))

    def __repr__(self):
        return (f"Coflow(id={self.id!r}, flows={self.flows!r}, release={self.release!r}, "
                f"weight={self.weight!r})")

    def __reduce__(self):
        return (_coflow_from_state, (self.id, self.src, self.dst, self.size, self.release,
                                     self.weight, self._flows))


def _set(obj, **values):
    for k, v in values.items():
        object.__setattr__(obj, k, v)


def _flows_of(src, dst, size) -> tuple[Flow, ...]:
    return tuple(map(Flow, src.tolist(), dst.tolist(), size.tolist()))


def _coflow_from_state(id, src, dst, size, release, weight, flows):
    """Unpickle a :class:`Coflow` (already validated when it was made)."""
    c = object.__new__(Coflow)
    _set(c, id=id, _src=src, _dst=dst, _size=size, release=release, weight=weight,
         _flows=flows)
    return c


def _check_flows_each(cid: str, flows) -> bool:
    """Walk ``flows`` one by one; raise a :class:`WorkloadError` naming the first bad one
    (a port that is not a non-negative integer, a size out of range, a repeated pair), or
    return True."""
    seen = set()
    for n, f in enumerate(flows):
        where = f"coflow {cid!r} flows[{n}]"
        if not isinstance(f, Flow):
            raise WorkloadError(f"{where} must be a Flow, got {f!r}", field="flows")
        for name in ("src", "dst"):
            v = getattr(f, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
                raise WorkloadError(f"{where}: port must be a non-negative integer, got "
                                    f"{_short(v)}", field=name)
            if v >= 2**62:
                raise WorkloadError(f"{where}: port {_short(v)} out of range", field=name)
        _check_number(f.bytes, where, "bytes", minimum=0.0, maximum=MAX_BYTES)
        if (f.src, f.dst) in seen:
            raise WorkloadError(
                f"{where}: duplicate flow {f.src}->{f.dst} (at most one flow per "
                f"(src, dst) in a coflow; merge their bytes)", field="flows")
        seen.add((f.src, f.dst))
    return True


@dataclass(frozen=True)
class Job:
    """A multi-stage job: a weighted set of coflows; completes with its last coflow."""

    id: str
    coflows: tuple[str, ...]
    weight: float = 1.0

    def __post_init__(self):
        object.__setattr__(self, "coflows", tuple(self.coflows))
        _check_number(self.weight, f"job {self.id!r}", "weight", minimum=0.0,
                      maximum=MAX_WEIGHT)


@dataclass(frozen=True)
class Workload:
    """Coflows on a fabric, with precedence arcs and jobs. Validated on construction."""

    fabric: Fabric
    coflows: tuple[Coflow, ...]
    precedence: tuple[tuple[str, str], ...] = ()
    jobs: tuple[Job, ...] = ()
    name: str = "workload"

    def __post_init__(self):
        object.__setattr__(self, "coflows", tuple(self.coflows))
        object.__setattr__(self, "precedence", _arcs(self.precedence))
        object.__setattr__(self, "jobs", tuple(self.jobs))
        ids = {}
        for n, c in enumerate(self.coflows):
            if c.id in ids:
                raise WorkloadError(f"duplicate coflow id {c.id!r} (coflows[{ids[c.id]}] and "
                                    f"coflows[{n}])", field="id")
            ids[c.id] = n
            if len(c) and c.max_port >= self.fabric.ports:
                for k, (s, d) in enumerate(zip(c.src.tolist(), c.dst.tolist())):
                    for name, port in (("src", s), ("dst", d)):
                        if port >= self.fabric.ports:
                            raise WorkloadError(
                                f"coflow {c.id!r} flows[{k}]: port {port} out of range "
                                f"(the fabric has ports 0..{self.fabric.ports - 1})",
                                field=name)
        first_at = {}
        for n, arc in enumerate(self.precedence):
            for end in arc:
                if not isinstance(end, str):
                    raise WorkloadError(f"precedence[{n}]: coflow ids must be strings, got "
                                        f"{end!r}", field="precedence")
                if end not in ids:
                    raise WorkloadError(f"precedence[{n}] names unknown coflow {end!r}",
                                        field="precedence")
            if arc[0] == arc[1]:
                raise WorkloadError(f"precedence[{n}]: coflow {arc[0]!r} precedes itself",
                                    field="precedence")
            if arc in first_at:
                raise WorkloadError(f"precedence[{n}] repeats the arc {list(arc)!r} of "
                                    f"precedence[{first_at[arc]}] (give each arc once)",
                                    field="precedence")
            first_at[arc] = n
        if self.precedence:
            self._check_acyclic()
        job_ids = set()
        owner = {}
        for n, j in enumerate(self.jobs):
            if j.id in job_ids:
                raise WorkloadError(f"duplicate job id {j.id!r}", field="jobs")
            job_ids.add(j.id)
            for cid in j.coflows:
                if not isinstance(cid, str):
                    raise WorkloadError(f"job {j.id!r}: coflow ids must be strings, got {cid!r}",
                                        field="coflows")
                if cid not in ids:
                    raise WorkloadError(f"job {j.id!r} names unknown coflow {cid!r}",
                                        field="coflows")
                if cid in owner:
                    raise WorkloadError(f"coflow {cid!r} is in jobs {owner[cid]!r} and {j.id!r} "
                                        f"(a coflow belongs to one job)", field="coflows")
                owner[cid] = j.id

    def _check_acyclic(self) -> None:
        import networkx as nx  # here, not at import: commands without a DAG start faster
        g = self.dag
        if not nx.is_directed_acyclic_graph(g):
            cycle = " -> ".join(a for a, _ in nx.find_cycle(g))
            raise WorkloadError(f"precedence has a cycle: {cycle} -> ...", field="precedence")

    # ------------------------------------------------------------------ derived views
    @cached_property
    def index(self) -> dict[str, int]:
        """Coflow id -> position in :attr:`coflows`."""
        return {c.id: n for n, c in enumerate(self.coflows)}

    @cached_property
    def dag(self) -> "nx.DiGraph":
        """Precedence DAG over coflow ids (a ``networkx.DiGraph``)."""
        import networkx as nx
        g = nx.DiGraph()
        g.add_nodes_from(c.id for c in self.coflows)
        g.add_edges_from(self.precedence)
        return g

    @cached_property
    def chi(self) -> int:
        """Number of coflows on the longest path of the DAG (1 without precedence)."""
        return max(self.chain_lengths, default=0)

    @cached_property
    def chain_lengths(self) -> np.ndarray:
        """Per coflow: number of coflows on the longest DAG path ending at it (chi_k)."""
        if not self.precedence:
            return np.ones(len(self.coflows), dtype=np.int64)
        import networkx as nx
        depth = {}
        for cid in nx.topological_sort(self.dag):
            depth[cid] = 1 + max((depth[p] for p in self.dag.predecessors(cid)), default=0)
        return np.array([depth[c.id] for c in self.coflows], dtype=np.int64)

    @cached_property
    def topo_rank(self) -> np.ndarray:
        """Per coflow: position in a deterministic topological order (ties by index)."""
        if not self.precedence:
            return np.arange(len(self.coflows), dtype=np.int64)
        import networkx as nx
        order = nx.lexicographical_topological_sort(self.dag, key=lambda c: self.index[c])
        rank = np.empty(len(self.coflows), dtype=np.int64)
        for r, cid in enumerate(order):
            rank[self.index[cid]] = r
        return rank

    @cached_property
    def arrays(self) -> "FlowArrays":
        return FlowArrays.from_workload(self)

    def replace(self, **changes) -> "Workload":
        fields = dict(fabric=self.fabric, coflows=self.coflows, precedence=self.precedence,
                      jobs=self.jobs, name=self.name)
        fields.update(changes)
        return Workload(**fields)


@dataclass(frozen=True, eq=False)
class FlowArrays:
    """Flat numpy view of a workload: one row per flow of positive size.

    Attributes
    ----------
    src, dst, coflow : int64 arrays, one entry per flow
    size : float64 bytes per flow
    release, weight : float64 per coflow
    n_coflows, ports, cores : ints
    preds : list (per coflow) of int arrays of direct predecessors
    succs : list (per coflow) of int arrays of direct successors
    arcs : (E, 2) int array of coflow index pairs
    job_of : int64 per coflow, job index or -1
    job_weight : float64 per job
    """

    src: np.ndarray
    dst: np.ndarray
    coflow: np.ndarray
    size: np.ndarray
    release: np.ndarray
    weight: np.ndarray
    n_coflows: int
    ports: int
    cores: int
    arcs: np.ndarray
    job_of: np.ndarray
    job_weight: np.ndarray
    preds: list = field(repr=False)
    succs: list = field(repr=False)

    @classmethod
    def from_workload(cls, w: Workload) -> "FlowArrays":
        cs = w.coflows
        keep = [c.size > 0 for c in cs]
        src = np.concatenate([c.src[k] for c, k in zip(cs, keep)] or [np.zeros(0, np.int64)])
        dst = np.concatenate([c.dst[k] for c, k in zip(cs, keep)] or [np.zeros(0, np.int64)])
        size = np.concatenate([c.size[k] for c, k in zip(cs, keep)] or [np.zeros(0)])
        cof = np.repeat(np.arange(len(cs), dtype=np.int64),
                        [int(k.sum()) for k in keep]) if cs else np.zeros(0, np.int64)
        n = len(w.coflows)
        arcs = np.array([(w.index[a], w.index[b]) for a, b in w.precedence],
                        dtype=np.int64).reshape(-1, 2)
        preds = [[] for _ in range(n)]
        succs = [[] for _ in range(n)]
        for a, b in arcs:
            preds[b].append(a)
            succs[a].append(b)
        job_of = np.full(n, -1, dtype=np.int64)
        for g, j in enumerate(w.jobs):
            for cid in j.coflows:
                job_of[w.index[cid]] = g
        return cls(
            src=src, dst=dst, coflow=cof, size=size,
            release=np.array([c.release for c in w.coflows], dtype=np.float64),
            weight=np.array([c.weight for c in w.coflows], dtype=np.float64),
            n_coflows=n, ports=w.fabric.ports, cores=w.fabric.cores, arcs=arcs,
            job_of=job_of, job_weight=np.array([j.weight for j in w.jobs], dtype=np.float64),
            preds=[np.array(p, dtype=np.int64) for p in preds],
            succs=[np.array(s, dtype=np.int64) for s in succs])

    @property
    def n_flows(self) -> int:
        return len(self.size)

    @cached_property
    def coflow_ptr(self) -> np.ndarray:
        """CSR pointers: the flows of coflow ``k`` are ``coflow_flows[ptr[k]:ptr[k+1]]``."""
        return np.concatenate([[0], np.cumsum(np.bincount(self.coflow,
                                                          minlength=self.n_coflows))])

    @cached_property
    def coflow_flows(self) -> np.ndarray:
        """Flow indices grouped by coflow, ascending inside each coflow."""
        return np.argsort(self.coflow, kind="stable")

    def flows_of(self, k: int) -> np.ndarray:
        """Indices of the flows of coflow ``k`` (ascending)."""
        return self.coflow_flows[self.coflow_ptr[k]:self.coflow_ptr[k + 1]]

    @cached_property
    def pair_index(self) -> tuple[np.ndarray, np.ndarray]:
        """The (src, dst) pairs of the flows: ``(keys, of)``, ``keys`` the distinct
        ``src * ports + dst`` ascending and ``of[f]`` the index of flow ``f``'s key in
        ``keys`` (``np.unique(..., return_inverse=True)``; by a table of every
        ``ports**2`` key instead of a sort when that table has at most four entries per
        flow, or 2^20)."""
        key = self.src * self.ports + self.dst
        if self.ports ** 2 > max(4 * len(key), 1 << 20):
            keys, of = np.unique(key, return_inverse=True)
            return keys, of.astype(np.int64).reshape(-1)
        used = np.zeros(self.ports ** 2, dtype=np.bool_)
        used[key] = True
        return np.flatnonzero(used), (np.cumsum(used) - 1)[key]


def _arcs(arcs) -> tuple:
    """``arcs`` as a tuple of pairs, or a :class:`WorkloadError` naming the first item that
    is not a pair (``precedence[n]``)."""
    if isinstance(arcs, (str, bytes)) or not hasattr(arcs, "__iter__"):
        raise WorkloadError(f"precedence must be a list of [before, after] pairs, got "
                            f"{arcs!r}", field="precedence")
    out = []
    for n, arc in enumerate(arcs):
        if isinstance(arc, (str, bytes, dict)) or not isinstance(arc, (list, tuple)) \
                or len(arc) != 2:
            raise WorkloadError(f"precedence[{n}] must be a pair [before, after] of coflow "
                                f"ids, got {arc!r}", field="precedence")
        out.append(tuple(arc))
    return tuple(out)


def _check_number(value, where: str, name: str, minimum: float | None = None,
                  maximum: float | None = None):
    """``value`` is a finite real number in ``[minimum, maximum]`` (integers of any size
    are compared exactly: ``10**400`` is out of range, not an overflow)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise WorkloadError(f"{where}: {name} must be a number, got {value!r}", field=name)
    if isinstance(value, (float, np.floating)) and not math.isfinite(value):
        raise WorkloadError(f"{where}: {name} must be finite, got {value!r}", field=name)
    if minimum is not None and value < minimum:
        raise WorkloadError(f"{where}: {name} must be >= {minimum:g}, got {_short(value)}",
                            field=name)
    if maximum is not None and value > maximum:
        raise WorkloadError(f"{where}: {name} must be at most {maximum:g}, got "
                            f"{_short(value)}", field=name)


def _short(value) -> str:
    """``value`` for a message: a huge integer as its float approximation."""
    if isinstance(value, (int, np.integer)) and abs(int(value)) > 10**15:
        big = abs(int(value))
        return (f"{float(value):.3g}" if big < 10**308
                else f"an integer of about {int(big.bit_length() * 0.30103) + 1} digits")
    return repr(value)


def check_jobs(jobs, cls: type) -> None:
    """Every item of ``jobs`` is a ``cls`` and no two share an ``id`` (the models'
    constructors; raises :class:`WorkloadError` with field ``jobs`` or ``id``)."""
    seen = set()
    for j in jobs:
        if not isinstance(j, cls):
            raise WorkloadError(f"jobs must hold {cls.__name__} objects, got "
                                f"{type(j).__name__}", field="jobs")
        if j.id in seen:
            raise WorkloadError(f"job {j.id!r}: duplicate job id", field="id")
        seen.add(j.id)
