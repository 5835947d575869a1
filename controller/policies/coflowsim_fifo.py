"""CoflowSim's FIFO, to compare with figures published from that simulator.

CoflowSim (``coflow/coflowsim``, Java; ``CoflowSimulator`` with ``SHARING_ALGO.FIFO``, the
default run ``java coflowsim.CoflowSim FIFO COFLOW-BENCHMARK trace``) is a time-stepped
simulator. Read from its source, it differs from our strict ``fifo`` in four ways:

**Its instance** (``CoflowBenchmarkTraceProducer``, ``Job.arrangeTasks``,
``ReduceTask``). A reducer's bytes are rounded up to whole MB (2^20 bytes), the reducers
of a port merged, the mappers of a port merged, and each reducer's bytes rounded up to a
multiple of ``#mapper ports`` MB and split evenly: every flow is a whole number of MB, at
least 1 MB (ours splits the trace's MB exactly). Its clock is in the trace's
milliseconds, but its port rate, ``RACK_BITS_PER_SEC = 2^30``, is per *1024* of them
(``SIMULATION_SECOND_MILLIS``): in seconds of the trace a port carries
``2^30 * 1000 / 1024`` bit/s.

**Admission.** Time advances by epochs of 10 of its seconds (10240 ms); at the start of
an epoch every coflow arriving before its *end* is admitted, so a coflow starts up to
10.24 s of trace time *before* its arrival, and its CCT (``simulatedFinishTime -
simulatedStartTime``) is measured from that admission.

**Rates** (``updateRatesDynamicAlpha``), recomputed only when coflows are admitted and
after a quantum in which a coflow finished; between, rates stay fixed and a finished
flow's capacity idles:

1. coflows in FIFO order (arrival, then trace order): the coflow's bottleneck ``α`` on
   the capacity earlier ones left, each flow at ``remaining * 8 / α`` bits/s (clipped to
   what its ports have left): MADD. A coflow one of whose loaded ports has at most
   ``ZERO = 1e-3`` bit/s left is *skipped*; a reducer whose port is full gets nothing.
2. the skipped coflows share what is left evenly per port.
3. what is still left goes flow by flow (reducer by reducer, mapper by mapper) to the
   coflows sorted by *deadline*: ``admission + α₀ / 2^27 * m * 1000`` ms, ``α₀`` the
   coflow's static bottleneck in bytes and ``m = 1 + U[0,1)`` drawn from
   ``java.util.Random(17)`` in arrival order -- even though deadlines are off
   (``considerDeadline = false``; its comment says the sort is then by arrival time, it is
   not), truncated to an ``int`` relative to the update's time.

**Time quanta and its arithmetic.** Within an epoch, time advances by quanta of 8 ms
(1 MB at a port's rate). CoflowSim keeps its own byte counts: every quantum it subtracts
each flow's ``rate / 8 * 8 / 1024`` bytes from the flow's bytes left and from its
reducer's running total (its bottleneck reads a receiver's load from that total, not
from the sum of the reducer's flows), drops a flow with at most ``ZERO`` bytes left,
finishes a reducer whose total is at most ``ZERO`` or which has no flow left, and
records a coflow's completion at the end of the quantum in which its last reducer
finished; after that quantum the rates are recomputed. Its decisions turn on those
floating-point residues: a port's capacity left after the MADD pass is compared with
``ZERO`` = 1e-3 bit/s, about ten thousand ulps of 2^30, which sums of hundreds of rates
computed from bytes a few ulps apart land on either side of. (FB2010, the update at
788.48 s: port 108 has 0.0015 bit/s left in CoflowSim and 2e-6 from the exact remaining
bytes; coflow 180, blocked, then shares port 89 among 119 flows in CoflowSim and 118 from
the exact bytes, and from there the runs drift apart: 153 of 526 CCTs differ.)

Here the same runs on the event-driven simulator:
:meth:`~controller.policies.fifo.Fifo.instance` builds CoflowSim's instance of a
workload (sizes, port rate, releases at admission), and the policy keeps CoflowSim's
byte counts beside the simulator's exact ones. At each of CoflowSim's updates it
allocates as above from CoflowSim's counts, then runs CoflowSim's quanta at those rates
in its arithmetic (:func:`coflowsim_quanta`) up to the quantum in which a coflow
finishes or the next admission, the plan's horizon; meanwhile the simulator moves every
flow exactly, capped at its rate without backfill. :meth:`reference_completions` gives
the completions CoflowSim records. Our exact completions of the same rates are close
but not equal: CoflowSim drops a flow with up to ``ZERO`` bytes left, and gives a
receiver a few bit/s more than its rate when a reducer's running total drifts below the
sum of its flows' bytes (float rounding over thousands of quanta), which the simulator
does not; a flow here can so be a few bytes behind, and one CoflowSim has dropped keeps
its last rate until it finishes, its coflow ranked first once CoflowSim has finished it
(on FB2010 every completion is within one quantum of CoflowSim's).

Equal to the reference's printed CCTs on random traces and on FB2010 (README "Beside
the reference simulators").

The issue that asked for this option (#18) read CoflowSim's FIFO as "MADD rates, the
rest by a deadline order, admission up to 10.24 s early, rates changed only at coflow
events": right, with the corrections above (the even split among skipped coflows, the
deadlines drawn at random, the 8 ms quanta, the CCT counted from the admission).

References
----------
M. Chowdhury, I. Stoica. Efficient coflow scheduling without prior knowledge (Aalo),
SIGCOMM 2015; CoflowSim, https://github.com/coflow/coflowsim
(``simulators/CoflowSimulator.java``, ``simulators/Simulator.java``).
"""
from __future__ import annotations

import dataclasses
import math

import numba
import numpy as np

from controller.indexing import no_wraparound
from controller.model import Coflow, Workload
from controller.plan import Plan, State
from controller.policies.portload import index_for, ordered_plan
from topologies.fabric import Fabric

# the kernels never index with a negative number
no_wraparound(__name__)

MB = 1048576
#: CoflowSim's constants: its port rate (bits per its second), its second in trace
#: milliseconds, its epoch (ms) and quantum (ms), and its threshold ``ZERO``
RACK_BITS_PER_SEC = 2.0 ** 30
SECOND_MS = 1024
EPOCH_MS = 10 * SECOND_MS
QUANTUM_MS = SECOND_MS // int(RACK_BITS_PER_SEC / 8 / MB)
ZERO = 1e-3
#: the seed of the deadline multipliers (``Simulator.mergeTasksByRack``)
DEADLINE_SEED = 17


def java_random_doubles(seed: int, n: int) -> np.ndarray:
    """The first ``n`` values of ``new java.util.Random(seed).nextDouble()``."""
    mask = (1 << 48) - 1
    s = (seed ^ 0x5DEECE66D) & mask
    out = np.empty(n)
    for k in range(n):
        s = (s * 0x5DEECE66D + 0xB) & mask
        hi = s >> 22
        s = (s * 0x5DEECE66D + 0xB) & mask
        out[k] = ((hi << 27) + (s >> 21)) * 2.0 ** -53
    return out


def admission_ms(arrival_ms: float) -> float:
    """The start of the epoch at which CoflowSim admits a coflow arriving at
    ``arrival_ms``: the last epoch start ``E`` with ``arrival <= E + EPOCH_MS``."""
    return max(0.0, math.ceil(arrival_ms / EPOCH_MS) - 1) * EPOCH_MS


def coflowsim_coflow(c: Coflow, release: float) -> tuple[Coflow, float]:
    """CoflowSim's flows of ``c`` (see the module docstring) released at ``release``,
    and its static bottleneck ``α₀`` in bytes (``Job.calcAlphaDeadline``)."""
    if len(c.src) == 0:
        return Coflow.from_arrays(c.id, c.src, c.dst, c.size, release=release,
                                  weight=c.weight), 0.0
    mappers = np.unique(c.src)
    rports, inv = np.unique(c.dst, return_inverse=True)
    red = np.bincount(inv, weights=c.size, minlength=len(rports))
    nm = len(mappers)
    whole_mb = np.ceil(np.floor(red) / MB)               # (long) bytes, up to 1 MB
    per_flow = np.maximum(np.ceil(whole_mb / nm), 1.0) * MB
    reducer_bytes = np.ceil(whole_mb / nm) * nm * MB
    src = np.tile(mappers, len(rports))
    dst = np.repeat(rports, nm)
    size = np.repeat(per_flow, nm)
    alpha = max(reducer_bytes.sum() / nm, reducer_bytes.max())
    return Coflow.from_arrays(c.id, src, dst, size, release=release, weight=c.weight), alpha


def coflowsim_instance(workload: Workload) -> tuple[Workload, np.ndarray]:
    """CoflowSim's instance of ``workload`` and each of its coflows' static ``α₀`` (bytes).

    Coflows in CoflowSim's order (by release, ties in workload order), released at their
    admission, each flow a whole number of MB, the fabric's rate scaled by 1000/1024
    (CoflowSim's second is 1024 ms of the trace).
    """
    if workload.precedence or workload.jobs:
        raise ValueError("allocation='coflowsim' simulates independent coflows (CoflowSim "
                         "has no precedence)")
    order = sorted(range(len(workload.coflows)), key=lambda k: workload.coflows[k].release)
    coflows, alpha = [], []
    for k in order:
        c = workload.coflows[k]
        cf, a = coflowsim_coflow(c, admission_ms(c.release * 1000.0) / 1000.0)
        coflows.append(cf)
        alpha.append(a)
    fab = workload.fabric
    fabric = Fabric(fab.ports, fab.cores, fab.rate_bps * 1000.0 / SECOND_MS)
    return (dataclasses.replace(workload, fabric=fabric, coflows=tuple(coflows)),
            np.asarray(alpha))


@numba.njit(cache=True, error_model="numpy")  # x / 0 is inf or nan, as in Java
def coflowsim_rates(flows, bounds, edf, src, dst, rem, recv_left, cap, ports):
    """One ``updateRatesDynamicAlpha`` of CoflowSim (bits per its second).

    ``flows[bounds[g]:bounds[g+1]]``: the unfinished flows of the ``g``-th coflow in FIFO
    order, reducer by reducer; ``edf``: the groups in deadline order; ``rem`` bytes per
    flow; ``recv_left`` per flow, the bytes its reducer has left as CoflowSim counts them
    (its own running total, not the sum of ``rem``); ``cap`` a port's rate. Returns the
    rate per position of ``flows``.
    """
    n = flows.shape[0]
    groups = bounds.shape[0] - 1
    rate = np.zeros(n)
    s_free = np.full(ports, cap)
    r_free = np.full(ports, cap)
    send = np.zeros(ports)
    recv = np.zeros(ports)
    s_used = np.zeros(ports)
    r_used = np.zeros(ports)
    skipped = np.zeros(groups, dtype=np.bool_)
    for g in range(groups):
        lo, hi = bounds[g], bounds[g + 1]
        for q in range(lo, hi):
            f = flows[q]
            send[src[f]] += rem[f]
            recv[dst[f]] = recv_left[f]
        alpha = 0.0
        for q in range(lo, hi):
            f = flows[q]
            i, j = src[f], dst[f]
            if (send[i] > 0 and s_free[i] <= ZERO) or (recv[j] > 0 and r_free[j] <= ZERO):
                skipped[g] = True
            alpha = max(alpha, send[i] * 8 / s_free[i], recv[j] * 8 / r_free[j])
        for q in range(lo, hi):
            f = flows[q]
            send[src[f]] = 0.0
            recv[dst[f]] = 0.0
        if skipped[g]:
            continue
        for q in range(lo, hi):
            f = flows[q]
            i, j = src[f], dst[f]
            if r_free[j] <= ZERO:
                continue
            r = rem[f] * 8 / alpha
            if r > s_free[i] or r > r_free[j]:
                r = min(s_free[i], r_free[j])
            rate[q] = r
            s_used[i] += r
            r_used[j] += r
        for q in range(lo, hi):
            f = flows[q]
            s_free[src[f]] -= s_used[src[f]]
            s_used[src[f]] = 0.0
            r_free[dst[f]] -= r_used[dst[f]]
            r_used[dst[f]] = 0.0
    # the skipped coflows share what is left evenly per port
    ns = np.zeros(ports, dtype=np.int64)
    nr = np.zeros(ports, dtype=np.int64)
    for g in range(groups):
        if skipped[g]:
            for q in range(bounds[g], bounds[g + 1]):
                f = flows[q]
                if r_free[dst[f]] > ZERO and s_free[src[f]] > ZERO:
                    ns[src[f]] += 1
                    nr[dst[f]] += 1
    for g in range(groups):
        if skipped[g]:
            for q in range(bounds[g], bounds[g + 1]):
                f = flows[q]
                i, j = src[f], dst[f]
                if r_free[j] <= ZERO or nr[j] == 0 or s_free[i] <= ZERO or ns[i] == 0:
                    continue
                r = min(s_free[i] / ns[i], r_free[j] / nr[j])
                rate[q] = r if r > ZERO else 0.0
                s_used[i] += rate[q]
                r_used[j] += rate[q]
    for p in range(ports):
        s_free[p] -= s_used[p]
        r_free[p] -= r_used[p]
    # what is left, flow by flow, to the coflows in deadline order
    for g in edf:
        for q in range(bounds[g], bounds[g + 1]):
            f = flows[q]
            i, j = src[f], dst[f]
            r = min(s_free[i], r_free[j])
            if r <= ZERO:
                r = 0.0
            rate[q] += r
            s_free[i] -= r
            r_free[j] -= r
    return rate


# ------------------------------------------------------------------ CoflowSim's quanta
# Every quantum CoflowSim subtracts from each live flow's bytes left (``x``) the same
# ``b = rate / 8 * 8 / 1024`` bytes, and from its reducer's running total (``left``) the
# ``b`` of each of the reducer's live flows in turn. Stepping quantum by quantum costs a
# pass over every live flow per 8 ms of trace (482 s of CPU for FB2010). But a double's
# subtraction is exact arithmetic on a grid: while ``x`` and ``x - b`` lie in the same
# binade ``[lo, 2 lo)`` of doubles, spaced ``u`` apart, ``fl(x - b) = x - d`` with ``d``
# the multiple of ``u`` nearest ``b`` (unless ``b`` lies halfway between two: then the
# rounding to even depends on ``x``). So a flow loses the same ``d`` per quantum, and
# a reducer's total the same sum of its flows' ``d`` (on its own grid), until a value
# leaves its binade, a flow comes to its last quantum or drops, or the reducer finishes:
# the quanta between such events are done at once, in integer units of ``u``, and the
# events one quantum at a time in CoflowSim's own order. The result is the same
# doubles, bit for bit, as stepping every quantum; the work is per event (a few per
# binade a value crosses, one per flow that finishes), not per quantum.
FOREVER = np.int64(1) << 62
#: the first horizon (quanta) within which a run looks for its end
SEARCH = 1 << 16
GRID = 2.0 ** 52   # the binade [lo, 2 lo) of doubles spaced u apart is [GRID u, 2 GRID u)


@numba.njit(cache=True)
def _grid(v):
    """The spacing ``u`` of the doubles in the binade of ``v`` (> 0)."""
    return math.ldexp(1.0, math.frexp(v)[1] - 53)


@numba.njit(cache=True)
def _nearest(b, u):
    """``b / u`` rounded to the nearest integer: what ``fl(x - b)`` takes off an ``x``
    of spacing ``u`` whose result stays in its binade; -1 when that is not one number
    (``b`` halfway between two multiples of ``u``, or too large for the binade)."""
    t = b / u
    if t >= GRID:
        return np.int64(-1)
    whole = math.floor(t)
    frac = t - whole
    if frac == 0.5:
        return np.int64(-1)
    return np.int64(whole) + (1 if frac > 0.5 else 0)


@numba.njit(cache=True)
def _down(v, u, d):
    """How many times ``d`` units of ``u`` can come off ``v`` (> 0, spacing ``u``) with
    every result exact in ``v``'s binade and above ``ZERO``: each exact difference then
    lies half a unit or more inside the binade, where it rounds to the grid."""
    if d == 0:
        return FOREVER
    floor = max(GRID + 1.0, math.floor(ZERO / u) + 1.0)
    units = v / u
    if units < floor + d:
        return np.int64(0)
    return np.int64(units - floor) // d


@numba.njit(cache=True)
def _up(a, u, d):
    """How many times ``d`` units of ``u`` can be added to ``a`` (> 0, spacing ``u``)
    with every result exact in ``a``'s binade (half a unit or more below its top)."""
    if d == 0:
        return FOREVER
    room = 2.0 * GRID - 1.0 - a / u
    if room < d:
        return np.int64(0)
    return np.int64(room) // d


@numba.njit(cache=True)
def _flow_ahead(x, bf, q):
    """A live flow with ``x`` bytes left and ``bf`` bytes per quantum, up to ``q`` quanta
    ahead, stopping before the quantum in which it would be dropped. Returns (bytes left,
    quanta run): fewer than ``q`` when the next quantum is its last."""
    k = np.int64(0)
    while k < q:
        u = _grid(x)
        d = _nearest(bf, u)
        if d >= 0:
            n = min(_down(x, u, d), q - k)
            if n > 0:
                x = (np.int64(x / u) - n * d) * u
                k += n
                continue
        y = x - min(bf, x)
        if y <= ZERO:
            return x, k
        x = y
        k += 1
    return x, k


@numba.njit(cache=True)
def _reducer_ahead(fl, rate, rem, alive, left, done, limit, to_done, fq, xf, bq, write):
    """One reducer's quanta, up to ``limit`` ahead in CoflowSim's arithmetic (see above).

    ``fl``: its flows in CoflowSim's order, ``left`` its running total, ``done`` whether
    it has finished. With ``to_done`` it stops in the quantum in which it finishes.
    Scratch per flow: ``fq`` the quantum in which it drops (``limit + 1``: not within
    ``limit``; 0: dropped before), ``xf`` its bytes left at the start of that quantum,
    or after ``limit`` quanta, ``bq`` its bytes a quantum (``rate / 8 * 8 / 1024``).
    With ``write`` the flows' ``rem`` and ``alive`` are brought to the end of the run.
    Returns (the running total at the end, the quantum in
    which the reducer finished (0: it had, or not within the run), the quantum in which its
    last flow with a rate drops (0: none has a rate; ``limit + 1``: not within), flows
    left).
    """
    step = QUANTUM_MS / SECOND_MS
    n = fl.shape[0]
    live = 0
    last = np.int64(0)
    for i in range(n):
        f = fl[i]
        if not alive[f]:
            fq[i] = 0
            continue
        live += 1
        bq[i] = rate[f] / 8 * step
        x, k = _flow_ahead(rem[f], bq[i], limit)
        xf[i] = x
        fq[i] = k + 1 if k < limit else limit + 1
        if rate[f] > 0:
            last = max(last, fq[i])
    finished = np.int64(0)
    if live == 0 or (to_done and done):
        return left, finished, last, live
    ev = np.sort(fq[:n])
    e = 0
    cur = np.int64(0)
    while cur < limit:
        while e < n and ev[e] <= cur:
            e += 1
        nxt = ev[e] if e < n else limit + 1
        span = min(nxt - 1, limit) - cur
        if span > 0:
            # quanta without a flow's last: the same b from every live flow
            run = np.int64(0)
            a = -left if done else left
            if a > 0.0:
                u = _grid(a)
                d = np.int64(0)
                for i in range(n):
                    if fq[i] > cur:
                        di = _nearest(bq[i], u)
                        if di < 0:
                            d = np.int64(-1)
                            break
                        d += di
                if d >= 0:
                    run = min(_up(a, u, d) if done else _down(a, u, d), span)
                    if run > 0:
                        units = np.int64(a / u) + (run * d if done else -run * d)
                        left = -(units * u) if done else units * u
                        cur += run
                        continue
        # one quantum as CoflowSim steps it
        q = cur + 1
        for i in range(n):
            if fq[i] < q:
                continue
            b = bq[i]
            if fq[i] == q:
                b = min(b, xf[i])
                live -= 1
            left -= b
            if (left <= ZERO or live == 0) and not done:
                done = True
                left = 0.0
                finished = q
        cur = q
        if to_done and finished:
            break
    if write:
        for i in range(n):
            f = fl[i]
            if fq[i] == 0:
                continue
            if fq[i] <= cur:
                rem[f] = xf[i] - min(bq[i], xf[i])
                alive[f] = False
            else:
                rem[f] = xf[i]
    return left, finished, last, live


@numba.njit(cache=True)
def coflowsim_quanta(kmax, reds, red_ptr, red_flows, red_coflow, rate, rem, alive, n_alive,
                     left, red_done, unfinished, finished_at):
    """CoflowSim's ``proceedFlowsInAllRacks`` at fixed rates, quantum after quantum, in
    its floating-point arithmetic, until a quantum in which a coflow finishes (or
    ``kmax`` quanta). Returns the number of quanta run.

    Each quantum every live flow of the reducers ``reds`` sends
    ``min(rate / 8 * 8 / 1024, rem)`` bytes (``rate`` in bits per its second),
    subtracted from its ``rem`` and from its reducer's own running total ``left``, in the
    reducer's flow order (``red_flows[red_ptr[r]:red_ptr[r+1]]``). A flow with at most
    ``ZERO`` bytes left is dropped; a reducer is done once its ``left`` is at most
    ``ZERO`` or it has no live flow (``left`` then reset to 0, as ``cleanupTask`` does);
    a coflow when ``unfinished`` (its reducers not done) reaches 0, and ``finished_at``
    gets the quanta run. The run also ends after a quantum in which no live flow has a
    rate. Updates the arrays in place.

    Reducers are independent, so each is run ahead on its own (the quanta between
    events at once, see above): first to find the quantum ``K`` in which the first
    coflow finishes (or nothing moves), within a horizon of :data:`SEARCH` quanta,
    then 16 times longer, and so on; then to ``K``.
    """
    if kmax <= 0:
        return np.int64(0)
    kmax = min(kmax, FOREVER)   # (a run without a next admission)
    width = 1
    for r in reds:
        width = max(width, red_ptr[r + 1] - red_ptr[r])
    fq = np.empty(width, dtype=np.int64)
    xf = np.empty(width)
    bq = np.empty(width)
    count = np.zeros(unfinished.shape[0], dtype=np.int64)
    latest = np.zeros(unfinished.shape[0], dtype=np.int64)
    # looked for within a horizon 16 times longer each round: where a rounding is a tie
    # (an amount halfway between two doubles) quanta are stepped one at a time, so the
    # work stays in proportion to the quanta run even then, not to a flow's whole life
    limit = min(kmax, np.int64(SEARCH))
    while True:
        count[:] = 0
        latest[:] = 0
        moving = np.int64(0)
        for r in reds:
            fl = red_flows[red_ptr[r]:red_ptr[r + 1]]
            _, fin, last, _ = _reducer_ahead(fl, rate, rem, alive, left[r], red_done[r],
                                             limit, True, fq, xf, bq, False)
            moving = max(moving, last)
            if fin:
                c = red_coflow[r]
                count[c] += 1
                latest[c] = max(latest[c], fin)
        stop = min(limit, moving + 1)   # the first quantum in which nothing moves
        for r in reds:
            c = red_coflow[r]
            if count[c] == unfinished[c] and count[c] > 0:
                stop = min(stop, latest[c])
        if stop < limit or limit == kmax:
            break
        limit = min(kmax, limit * 16)
    for r in reds:
        fl = red_flows[red_ptr[r]:red_ptr[r + 1]]
        total, fin, _, live = _reducer_ahead(fl, rate, rem, alive, left[r], red_done[r],
                                             stop, False, fq, xf, bq, True)
        left[r] = total
        n_alive[r] = live
        if fin:
            red_done[r] = True
            c = red_coflow[r]
            unfinished[c] -= 1
            if unfinished[c] == 0:
                finished_at[c] = stop
    return stop


class CoflowSimAllocation:
    """CoflowSim's FIFO allocation and clock, for :class:`~controller.policies.fifo.Fifo`
    with ``allocation="coflowsim"`` (one core)."""

    def __init__(self):
        self._kept: Plan | None = None
        #: how many times a flow CoflowSim had dropped was still unfinished here at one
        #: of its updates
        self.ghosts = 0

    def start(self, workload: Workload) -> None:
        fab = workload.fabric
        if fab.cores != 1:
            raise ValueError("allocation='coflowsim' simulates one switch (one core); the "
                             f"fabric has {fab.cores}")
        a = workload.arrays
        #: a port's rate in CoflowSim's units (bits per 1024 ms): 2^30 for its instance
        self.cap = fab.rate_bps * SECOND_MS / 1000.0
        self.quantum = QUANTUM_MS / 1000.0
        release = np.asarray([c.release for c in workload.coflows])
        self._release = release
        self._start_ms = np.round(release * 1000.0)
        self._deadline_ms = self._start_ms + static_alpha(a) / (self.cap / 8) * 1000.0 * (
            1.0 + java_random_doubles(DEADLINE_SEED, a.n_coflows))
        self._fifo = np.lexsort((np.arange(a.n_coflows), release))
        self._kept = None
        # CoflowSim's own bookkeeping, in its arithmetic (see coflowsim_quanta): bytes
        # left per flow and per reducer (a coflow's flows into one port), the flows it
        # still counts, the rates it set at its last update, and when
        key = a.coflow.astype(np.int64) * a.ports + a.dst
        reducers, self._red = np.unique(key, return_inverse=True)
        self._red_flows = np.argsort(self._red, kind="stable")
        self._red_ptr = np.searchsorted(self._red[self._red_flows],
                                        np.arange(len(reducers) + 1))
        self._red_coflow = reducers // a.ports
        self._rem = np.array(a.size, dtype=np.float64)
        self._left = np.bincount(self._red, weights=self._rem, minlength=len(reducers))
        self._alive = np.ones(a.n_flows, dtype=np.bool_)
        self._n_alive = np.bincount(self._red, minlength=len(reducers)).astype(np.int64)
        self._red_done = np.zeros(len(reducers), dtype=np.bool_)
        self._unfinished = np.bincount(self._red_coflow, minlength=a.n_coflows)
        #: per coflow, when CoflowSim records its completion (the end of the quantum in
        #: which its last reducer finished; nan until then)
        self.finish = np.full(a.n_coflows, np.nan)
        self._rate = np.zeros(a.n_flows)
        self._last_rate = np.zeros(a.n_flows)

    def reference_completions(self, completion: np.ndarray) -> np.ndarray:
        """Per coflow, when CoflowSim records its completion: the end of the quantum in
        which its own byte count ran out (:func:`coflowsim_quanta`). ``completion`` (our
        exact completions of the same run) falls in that quantum or, when CoflowSim
        dropped a flow with up to ``ZERO`` bytes left, a little after it."""
        if np.isnan(self.finish).any():
            raise ValueError("reference_completions: the run has not finished")
        return self.finish.copy()

    def plan(self, state: State, policy) -> Plan:
        t = state.time
        admitted = bool(np.any(state.ready & (np.abs(self._release - t) <= 1e-9)))
        kept = self._kept
        if kept is not None and not admitted and t < kept.horizon - 1e-9:
            return kept    # CoflowSim changes no rate before its next update
        a = state.arrays
        idx = index_for(policy, a)
        # CoflowSim's active coflows: admitted, with a reducer it has not finished
        fifo = self._fifo
        order = fifo[(self._release[fifo] <= t + 1e-9) & (self._unfinished[fifo] > 0)]
        flows, bounds = idx.gather(order, self._alive)
        # the update's time as CoflowSim's integer ms: an admission's epoch start, or the
        # start of the quantum after which a coflow left
        now_ms = round(t * 1000.0) - (0 if admitted else QUANTUM_MS)
        left = np.trunc(self._deadline_ms[order] - now_ms).astype(np.int64)
        edf = np.argsort(left, kind="stable")
        rate = coflowsim_rates(flows, bounds, edf, a.src, a.dst, self._rem,
                               self._left[self._red], self.cap, a.ports)
        live = fifo[state.ready[fifo] & ~state.done[fifo]]
        # coflows CoflowSim has finished that are not finished here (their flows a few
        # bytes behind, see below) go first: ranked in their FIFO place, behind coflows
        # that fill a port, they would wait for them (FB2010: coflow 362, 2e-6 bytes
        # short at 1945.64 s, waited 24 s on port 26)
        over = self._unfinished[live] == 0
        live = np.concatenate([live[over], live[~over]])
        plan, eflows, _ = ordered_plan(state, idx, live, backfill=False)
        cap = np.zeros(a.n_flows)
        cap[flows] = rate
        # a flow CoflowSim has dropped that is not finished here keeps its last rate
        # (in its coflow's place in the order): CoflowSim drops a flow with up to ZERO
        # bytes left, and can give a receiver a few bit/s more than its rate (its
        # reducers' running totals drift below the sum of their flows' bytes), which the
        # simulator does not, so a flow here can be a few bytes behind
        ghosts = eflows[~self._alive[eflows]]
        if len(ghosts):
            cap[ghosts] = self._last_rate[ghosts]
            self.ghosts += len(ghosts)
        # CoflowSim's quanta at these rates up to its next update: the end of the
        # quantum in which a coflow finishes, or the next admission
        nxt = self._release[self._release > t + 1e-9]
        kmax = (int(round((nxt.min() - t) / self.quantum)) if len(nxt)
                else np.iinfo(np.int64).max)
        finished_at = np.zeros(a.n_coflows, dtype=np.int64)
        self._rate[flows] = rate
        self._last_rate[flows] = rate
        coflowsim_quanta(kmax, np.unique(self._red[flows]), self._red_ptr,
                             self._red_flows, self._red_coflow, self._rate, self._rem,
                             self._alive, self._n_alive, self._left, self._red_done,
                             self._unfinished, finished_at)
        self._rate[flows] = 0.0
        gone = finished_at > 0
        self.finish[gone] = t + finished_at[gone] * self.quantum
        if gone.any():
            plan.horizon = float(self.finish[gone].max())
        # no backfill: every flow sends at its cap until the next plan whatever
        # completes, as in CoflowSim, where the caps fit the ports; where they do not (a
        # flow CoflowSim dropped that is not finished here, or CoflowSim's own rates a
        # little over a port's) the flows ranked last on the port are held below their
        # caps until a completion there frees room (the capped engine's first pass)
        plan.rate_cap = cap * 1000.0 / SECOND_MS
        self._kept = plan
        return plan

def static_alpha(arrays) -> np.ndarray:
    """Per coflow, CoflowSim's static bottleneck ``α₀`` in bytes: the larger of its
    bytes per mapper port (total / mapper ports) and its largest reducer port's bytes."""
    n, ports = arrays.n_coflows, arrays.ports
    co = arrays.coflow.astype(np.int64)
    total = np.bincount(co, weights=arrays.size, minlength=n)
    key, inv = np.unique(co * ports + arrays.dst, return_inverse=True)
    red = np.bincount(inv, weights=arrays.size)
    biggest = np.zeros(n)
    np.maximum.at(biggest, key // ports, red)
    nm = np.bincount(np.unique(co * ports + arrays.src) // ports, minlength=n)
    return np.maximum(total / np.maximum(nm, 1), biggest)
