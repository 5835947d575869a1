"""Priority classes: how a plan's ranks become DSCP marks and strict-priority HTB bands.

Switches have few queues; a plan ranks every flow. As Sincronia and Aalo do, the controller
maps the ordering onto the few classes the data plane has and re-maps at every event.

The data plane
--------------
Every link end (the host side, which is the core's input port, and the switch side, its
output port) carries the same HTB tree (:func:`htb_priority_tree`)::

    1:   htb root, default 1:10
    1:1  rate R+C  ceil R+C                   the link: the data's R, the ACKs' C = R/8
    1:10 rate C    ceil R+C  prio 0           control: unmarked packets (TCP ACKs, ARP)
    1:2  rate R    ceil R                     the data, all classes together
    1:11 rate ~0   ceil R    prio 0           data class 0 (highest)  DSCP 40  (in 1:2)
    1:12 rate ~0   ceil R    prio 1           data class 1            DSCP 41
    ...
    1:18 rate ~0   ceil R    prio 7           data class 7 (lowest)   DSCP 47
    1:19 rate D    ceil R    prio 7           drain: paused flows     DSCP 48

u32 filters send a packet to its data class by the DSCP in its TOS byte. Leaves are FIFOs
(this kernel has no SFQ/fq_codel: within a class, flows queue behind each other, which is
why the agents keep every flow's window small). Data classes have
a small guaranteed rate (:func:`data_guarantee`), so they live on borrowing from 1:2, which
HTB hands out in ``prio`` order: strict priority. A class alone still gets the whole data
rate (ceil R).

The acknowledgements have a budget of their own beside the data's R, so that the data has
all of R each way, as in the fluid model (which has no ACKs). With one rate for both, a
host that sent while it received on the same core paid for the ACKs of what it received
out of what it sent: a 20 Mbit/s flow each way took 4.095 s against 3.998 s alone (+2.4
%), at 1 Mbit/s 4.163 s against 3.989 s (+4.1 %; the receiver acknowledges every segment
there, 66 bytes per 1514). The control class's guaranteed C (:data:`CONTROL_SHARE`: R/8)
covers that, so ACKs and ARP are served before any data and a busy data class never
delays the acknowledgements of another flow.

A paused flow still has bytes in flight and in its socket (a receive window and up to
``NOTSENT_LOWAT`` unsent: about 24 kB at 20 Mbit/s, 11 kB at 1 Mbit/s). They go to the
drain class, below every data class. Where they can cross the link within
:data:`DRAIN_SECONDS` at :data:`DRAIN_SHARE` of it (:func:`drain_rate`: from about 5 Mbit/s)
that share D is guaranteed to them whatever runs above, so TCP's retransmission timer
backs off two or three times at most before their ACKs reset it; on slower links D is
~0, as for the data classes, and the drain class is a lowest class.

Starved there while the flow that preempted theirs ran (tests/test_emulation_jobs.py,
lp-single at 20 Mbit/s: 2.6 s), TCP timed them out again and again (``ss -ti``: backoff
up to 5, 32 times the timeout), and once resumed the flow waited seconds for a
retransmission: its 0.14 s remainder took 3.8-5.7 s in 3 of 20 runs beside two busy
loops, and two of the four tests that failed in CI on 2026-11-27 were this (a job 2.5 s
and 8.1 s late). Timeouts per run there beside two busy loops: 1-3 (mean 2.1, 8 runs, no
slow one) with a fiftieth guaranteed, 5-6 without. A larger share drains sooner but costs
the small flows that preempt: with a tenth (0.1 s at 20 Mbit/s, under TCP's shortest
timeout) the p90 per-coflow error on 4 x 2 at 20 Mbit/s rose in 8 of 8 runs (sincronia,
lp-flow, lp-single, scf; seeds 1, 2; e.g. lp-flow seed 1 52.5 % against 14.5 %); with a
fiftieth it went either way (4 lower, 4 higher: within what runs vary by). On 16 x 4 at
1 Mbit/s, where the drain would take 4.4 s, a fiftieth made TCP time out 1030 times
against 234 and lp-flow's p90 13.1 % against 7.7 % (sincronia: 586 against 163, 10.6 %
against 5.3 %; seed 1, one run each).

Who marks: the switch rule of a flow sets its DSCP (OpenFlow ``set_field ip_dscp``), which
the switch-side tree (downlink) acts on; the agent marks the same DSCP on its socket
(``IP_TOS``), which the host-side tree (uplink) acts on. Both come from the controller.

Mapping ranks to classes
------------------------
:func:`conflict_classes`: flows are taken in rank order; a flow's class is one more than
the largest class of any higher-ranked flow it shares a link with (same core, same input
or output port), 0 when it shares none, capped at the lowest class. This keeps the plan's
order between every pair of flows that actually compete, using as few classes as the
longest chain of competing flows needs; only chains longer than 8 merge their tail into
the lowest class (where TCP shares fairly). :func:`coflow_classes` is Sincronia's simpler
rule (the first coflows in order get a class each, the rest share the lowest), kept for
comparison.

Flows that preempt
------------------
A flow that is paused, or moved to a lower class, still has its bytes in flight queued in
its old class, and a leaf is a FIFO: a flow that starts on that link in the same class
waits for all of them (at 1 Mbit/s a receive window of four segments was 65 ms before the
new flow's first byte). So for plans without rate caps the controller runs the conflict
classes one lower (1 to 7) and keeps class 0 for a flow that starts or resumes where such
bytes may still be queued, if nothing ranked above it shares its links
(:func:`preempting_classes`): it then overtakes them, and no order between running flows
changes. Once they can have drained it goes back to its class (a move to a lower class
never puts a flow's own packets out of order). Capped flows are paced at their planned
rates, and MADD splits a port among long chains of flows that need every class: capped
plans keep the conflict classes as they are.
"""
from __future__ import annotations

import numpy as np

N_DATA_CLASSES = 8
"""HTB allows priorities 0..7; each data class has its own."""

RUN_CLASS = 1
"""The highest class of the conflict classes as the controller runs them; class 0 is kept
for flows that preempt (:func:`preempting_classes`)."""

DRAIN_CLASS = N_DATA_CLASSES
"""The class of paused flows (module docstring), below every data class, with a rate of
its own."""

DRAIN_SHARE = 0.02
"""The share of a link guaranteed to the drain class (where :func:`drain_rate` grants it).
What a paused flow leaves crosses the link at some time anyway; the share decides how
soon, and how much the flows above it slow down meanwhile (module docstring)."""

DRAIN_SECONDS = 1.0
"""How long what a paused flow leaves may take at :data:`DRAIN_SHARE` for the share to be
granted: TCP's timer then backs off two or three times (0.2, 0.4, 0.8 s) at most."""

DSCP_BASE = 40
"""Data class ``k`` is marked DSCP ``DSCP_BASE + k`` (the drain class too). DSCP 0
(unmarked) is control."""

CONTROL_SHARE = 0.125
"""Rate for unmarked (ACK/ARP) traffic beside the data's, as a share of the data's: two
ACKs of up to 94 bytes (SACK blocks) per 1514-byte frame received.

A receiver acknowledges each segment on arrival and, with a window of two segments, often
once more when its reader frees the buffer (the window doubles: a window update). At 1
Mbit/s and above the read mostly comes first (one ACK per segment, 4.4 % of the reverse
data); at 0.5 Mbit/s two ACKs per segment were the rule (250 ACKs for 174 segments, a
packet capture on the host), 8.7 %. With R/20 they queued behind each other in the
control class for up to 20 ms, the sender waited for the window update with one segment
sent, and a flow each way between two hosts at 0.5 Mbit/s took 4.44-4.52 s against 3.99 s
alone (three runs); with R/8, 3.99 s. On 8 x 2 at 0.5 Mbit/s (``--rate auto``) every
policy's mean CCT ratio was 1.01-1.16 with R/20."""

GUARANTEE_SHARE = 1e-3
"""A data class's guaranteed rate as a share of the link, up to :data:`GUARANTEE_MAX_BPS`
(:func:`data_guarantee`)."""

GUARANTEE_MAX_BPS = 8000
"""A data class's guaranteed rate on links of 8 Mbit/s and faster (:func:`data_guarantee`)."""

BURST_SECONDS = 0.004
"""HTB bucket size as time at the link rate (at least :data:`BURST_MIN_BYTES`).

What a link carries at once after an idle moment (the simulator has no such burst), and
also what HTB can make up when the kernel dequeues late. A 1 ms bucket (200 B at least)
made a chain of 5 kB flows at 2 Mbit/s exact at load 2.5, but lost link time on a busy
machine: 4 x 2 at 20 Mbit/s, fifo seed 1, two interleaved repeats at load 9.5-11: median
per-coflow error 24.7 / 24.3 % (mean CCT ratio 1.20 / 1.27) against 6.8 / 8.6 % (1.08 /
1.07) with this bucket; lp-coflow 16.1 / 29.5 % against 4.7 / 21.0 %.

HTB sends a packet whenever the bucket is not empty, so a flow starting on an idle link
gains the bucket plus one frame on the fluid model. A floor of four full frames (6056 B,
until 2026-11-26) was 48 ms of a 1 Mbit/s link: on 16 x 4 at 1 Mbit/s single-flow coflows
of 24 kB finished in 0.143 s against the simulator's 0.194 s (-26 %)."""

BURST_MIN_BYTES = 1514
"""Smallest HTB bucket: one full frame. Smaller (200 B) did as well for short flows but
cost long ones about 1 % of the link at 1 Mbit/s (sincronia, 16 x 4, seed 2: per-coflow
bias +2.2 % against +1.5 %, two interleaved repeats each)."""


def dscp_of(cls: int) -> int:
    if not 0 <= cls <= DRAIN_CLASS:
        raise ValueError(f"class must be in 0..{DRAIN_CLASS}, got {cls}")
    return DSCP_BASE + int(cls)


def tos_of(cls: int) -> int:
    """The IP TOS byte of data class ``cls`` (DSCP in the upper six bits, ECN 0)."""
    return dscp_of(cls) << 2


def drain_rate(rate_bps: float, leftover_bytes: float) -> float:
    """The drain class's guaranteed rate on a link of ``rate_bps`` when a paused flow
    leaves ``leftover_bytes`` (its window and unsent bytes): :data:`DRAIN_SHARE` of the
    link if that carries them across within :data:`DRAIN_SECONDS`, else 0 (module
    docstring)."""
    d = DRAIN_SHARE * rate_bps
    return d if leftover_bytes * 8.0 <= d * DRAIN_SECONDS else 0.0


def data_guarantee(rate_bps: float) -> int:
    """The guaranteed rate of each data class on a link of ``rate_bps``, in bit/s:
    :data:`GUARANTEE_SHARE` of the link, at most :data:`GUARANTEE_MAX_BPS`, at least 8
    (HTB's smallest).

    HTB serves a class within its guaranteed rate before any class that borrows, whatever
    the priorities, so each backlogged lower class takes its guarantee from the classes
    above it. 8 kbit/s (the value until 2026-11-28) was 1.6 % of a 0.5 Mbit/s link per
    class, up to 14 % with all nine: on 8 hosts x 2 cores at 0.5 Mbit/s (``--rate auto``)
    8 of 13 policies met the fidelity target with it, 12 of 13 with 1e-4 of the link.
    But 1e-4 (2 kbit/s) at 20 Mbit/s failed tests/test_emulation_jobs.py in two CI runs
    of two (a job 0.1-0.5 s late, never before); likely (not measured) because what a flow
    moved to a lower class gets there (a frame per 1.5 s at 8 kbit/s) keeps its
    acknowledgements and its retransmission timer going. So fast links keep 8 kbit/s (0.04
    % of 20 Mbit/s) and slow ones a thousandth: 11 of 13 against 9 of 13 on that 8 x 2
    seed, interleaved (docs/emulation-fidelity.md, "A thousandth of a slow link")."""
    return min(GUARANTEE_MAX_BPS, max(8, int(rate_bps * GUARANTEE_SHARE)))


def htb_priority_tree(intf: str, rate_bps: float,
                      leftover_bytes: float = float("inf")) -> list[str]:
    """``tc -batch`` lines installing the strict-priority tree above on ``intf``; a paused
    flow leaves ``leftover_bytes`` (:func:`drain_rate`; unknown: nothing guaranteed)."""
    r = int(round(rate_bps))
    ctl = max(int(r * CONTROL_SHARE), 8000)
    low = data_guarantee(r)
    drain = max(int(drain_rate(r, leftover_bytes)), low)
    # bucket: BURST_SECONDS of the link. A big bucket (Mininet uses 15 kB) lets a flow
    # that starts on an idle link go out at line rate for its first ten frames, making
    # short flows faster than the link rate allows.
    b = max(BURST_MIN_BYTES, int(r / 8 * BURST_SECONDS))
    opts = f"burst {b}b cburst {b}b"
    lines = [
        f"qdisc replace dev {intf} root handle 1: htb default 10",
        f"class add dev {intf} parent 1: classid 1:1 htb rate {r + ctl}bit "
        f"ceil {r + ctl}bit {opts}",
        f"class add dev {intf} parent 1:1 classid 1:10 htb rate {ctl}bit "
        f"ceil {r + ctl}bit prio 0 quantum 1514 {opts}",
        f"class add dev {intf} parent 1:1 classid 1:2 htb rate {r}bit ceil {r}bit {opts}",
    ]
    for k in range(N_DATA_CLASSES):
        lines.append(f"class add dev {intf} parent 1:2 classid 1:{11 + k} htb rate {low}bit "
                     f"ceil {r}bit prio {k} quantum 1514 {opts}")
    lines.append(f"class add dev {intf} parent 1:2 classid 1:{11 + DRAIN_CLASS} htb rate "
                 f"{drain}bit ceil {r}bit prio {N_DATA_CLASSES - 1} "
                 f"quantum 1514 {opts}")
    for k in range(DRAIN_CLASS + 1):
        lines.append(f"filter add dev {intf} parent 1: protocol ip prio 1 u32 "
                     f"match ip tos {tos_of(k):#04x} 0xfc flowid 1:{11 + k}")
    return lines


def conflict_classes(order: np.ndarray, src: np.ndarray, dst: np.ndarray, core: np.ndarray,
                     n_classes: int = N_DATA_CLASSES) -> np.ndarray:
    """Class per flow of ``order`` (flows, highest priority first); see the module docstring.

    Parameters
    ----------
    order : int array
        Flow indices in priority order.
    src, dst, core : int arrays indexed by flow

    Returns
    -------
    int array, ``classes[n]`` is the class of ``order[n]``.

    Examples
    --------
    >>> import numpy as np
    >>> src, dst, core = np.array([0, 0, 1, 2]), np.array([1, 2, 2, 3]), np.zeros(4, int)
    >>> conflict_classes(np.arange(4), src, dst, core).tolist()
    [0, 1, 2, 0]
    """
    top_in: dict[tuple[int, int], int] = {}
    top_out: dict[tuple[int, int], int] = {}
    out = np.zeros(len(order), dtype=np.int64)
    for n, f in enumerate(order):
        key_in, key_out = (int(core[f]), int(src[f])), (int(core[f]), int(dst[f]))
        c = max(top_in.get(key_in, -1), top_out.get(key_out, -1)) + 1
        c = min(c, n_classes - 1)
        out[n] = c
        top_in[key_in] = max(top_in.get(key_in, -1), c)
        top_out[key_out] = max(top_out.get(key_out, -1), c)
    return out


def coflow_classes(order: np.ndarray, coflow: np.ndarray,
                   n_classes: int = N_DATA_CLASSES) -> np.ndarray:
    """Sincronia's mapping: the i-th coflow in order gets class ``min(i, n_classes-1)``."""
    pos: dict[int, int] = {}
    out = np.zeros(len(order), dtype=np.int64)
    for n, f in enumerate(order):
        k = int(coflow[f])
        if k not in pos:
            pos[k] = len(pos)
        out[n] = min(pos[k], n_classes - 1)
    return out


def preempting_classes(base: np.ndarray, order: np.ndarray, src: np.ndarray,
                       dst: np.ndarray, core: np.ndarray, fresh: np.ndarray,
                       drain_in: np.ndarray, drain_out: np.ndarray) -> np.ndarray:
    """``base`` (the conflict classes of ``order``, run one lower: 1 and up) with class 0
    for the flows that preempt (see "Flows that preempt" above).

    Parameters
    ----------
    base : int array
        Class of ``order[n]``: :func:`conflict_classes` + 1.
    order : int array
        The running flows, highest priority first.
    src, dst, core : int arrays indexed by flow
    fresh : bool array
        ``fresh[n]``: ``order[n]`` starts or resumes now, or is in class 0 already (a flow
        already sending in a lower class is never moved up: its new packets would
        overtake its own).
    drain_in, drain_out : bool arrays (core, host)
        Links (a host's input to a core, a core's output to a host) where another flow's
        bytes may still be queued in the class the flow would start in.

    Returns
    -------
    int array: class of ``order[n]``.

    Examples
    --------
    >>> import numpy as np
    >>> src, dst, core = np.array([0, 1, 2]), np.array([1, 2, 3]), np.zeros(3, int)
    >>> busy = np.zeros((1, 4), bool); busy[0, 2] = True        # host 2's input
    >>> preempting_classes(np.array([1, 1, 1]), np.arange(3), src, dst, core,
    ...                    np.array([True, False, True]), busy, np.zeros((1, 4), bool)).tolist()
    [1, 1, 0]
    """
    h = core[order]
    boost = (fresh & (base == RUN_CLASS)
             & (drain_in[h, src[order]] | drain_out[h, dst[order]]))
    return np.where(boost, 0, base)
