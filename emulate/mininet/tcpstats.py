"""What the emulated hosts' TCP stacks did: the counters the fluid simulator has no part of.

The simulator moves bytes as fluid at the rates a policy sets; on the switches the bytes
go as TCP segments, and TCP sometimes sends a segment twice. A retransmission costs link
time the simulator never spends, and a retransmission timeout stalls a flow for a whole
RTO. When an emulated coflow is late against the simulator, these counters say whether
TCP is why: each Mininet host is a network namespace of its own, created for the run,
so its kernel counters (``/proc/PID/net/snmp`` and ``/proc/PID/net/netstat`` read through
any process in it, here the host's shell) count that run's traffic and nothing else.

:func:`tcp_counters` sums them over the hosts: segments sent, segments retransmitted,
retransmission timeouts, tail-loss probes, and the recoveries Linux found spurious and
undid (an RTO proved spurious by a later ACK, reordering detected with D-SACK: packets of
a flow queued in two priority classes when its class changes), and the segments a
receiver dropped as old (PAWS: reordered behind a later segment whose TCP timestamp
advanced the receiver's; they are not SACKed, so only a retransmission repairs them).
"""
from __future__ import annotations

import contextlib

COUNTERS = {
    "out_segs": ("Tcp", "OutSegs"),
    "retrans_segs": ("Tcp", "RetransSegs"),
    "timeouts": ("TcpExt", "TCPTimeouts"),
    "loss_probes": ("TcpExt", "TCPLossProbes"),
    "spurious_rtos": ("TcpExt", "TCPSpuriousRTOs"),
    "dsack_undo": ("TcpExt", "TCPDSACKUndo"),
    "paws_drops": ("TcpExt", "PAWSEstab"),
}
"""Name in :func:`tcp_counters`'s result -> (table, field) in /proc's snmp/netstat."""


def parse_proc_tables(text: str) -> dict[tuple[str, str], int]:
    """``/proc/net/snmp`` or ``/proc/net/netstat`` text -> {(table, field): value}.

    Both files hold pairs of lines, ``Table: names...`` then ``Table: values...``."""
    out: dict[tuple[str, str], int] = {}
    lines = text.splitlines()
    for head, vals in zip(lines[::2], lines[1::2]):
        names, values = head.split(), vals.split()
        if not names or names[0] != values[0]:
            continue
        table = names[0].rstrip(":")
        for name, value in zip(names[1:], values[1:]):
            with contextlib.suppress(ValueError):
                out[(table, name)] = int(value)
    return out


def tcp_counters(pids) -> dict[str, int]:
    """The :data:`COUNTERS` summed over the namespaces of ``pids`` (one process per host).

    A host whose files cannot be read (it is gone) counts nothing."""
    total = dict.fromkeys(COUNTERS, 0)
    for pid in pids:
        tables: dict[tuple[str, str], int] = {}
        for name in ("snmp", "netstat"):
            with contextlib.suppress(OSError):
                with open(f"/proc/{int(pid)}/net/{name}") as fh:
                    tables.update(parse_proc_tables(fh.read()))
        for key, where in COUNTERS.items():
            total[key] += tables.get(where, 0)
    return total


def describe(c: dict[str, int]) -> str:
    """One line for a report."""
    share = c["retrans_segs"] / c["out_segs"] if c.get("out_segs") else 0.0
    return (f"TCP: {c['out_segs']} segments sent, {c['retrans_segs']} retransmitted "
            f"({share:.2%}), {c['timeouts']} timeouts ({c['spurious_rtos']} spurious), "
            f"{c['loss_probes']} loss probes, {c['dsack_undo']} D-SACK undos, "
            f"{c.get('paws_drops', 0)} dropped as old (PAWS)")
