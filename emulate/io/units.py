"""Human units on the command line: rates (``1Gbps``), sizes (``100MB``), times (``10ms``).

Rates are decimal (``1Gbps`` = 1e9 bit/s; ``Gibps`` = 2^30); a capital ``B`` means bytes
(``1GBps`` = 8e9 bit/s, ``1MiBps`` = 8 x 2^20 bit/s). Sizes: ``KB/MB/GB`` are
decimal, ``KiB/MiB/GiB`` binary, a bare number is bytes. Times: ``us``, ``ms``, ``s``,
``min``; a bare number is seconds.

>>> parse_rate("1Gbps"), parse_rate("50Mbit"), parse_rate("1e9")
(1000000000.0, 50000000.0, 1000000000.0)
>>> parse_rate("1GiBps"), parse_rate("2MB/s")
(8589934592.0, 16000000.0)
>>> parse_bytes("100MB"), parse_bytes("1MiB")
(100000000.0, 1048576.0)
>>> parse_duration("10ms")
0.01
"""
from __future__ import annotations

import re

_NUM = r"([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*"

_RATE = {"": 1, "bps": 1, "bit": 1, "b/s": 1,
         "kbps": 1e3, "kbit": 1e3, "mbps": 1e6, "mbit": 1e6, "gbps": 1e9, "gbit": 1e9,
         "tbps": 1e12, "kibps": 2**10, "mibps": 2**20, "gibps": 2**30}
_BYTES = {"": 1, "b": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}
_TIME = {"": 1, "s": 1, "sec": 1, "ms": 1e-3, "us": 1e-6, "ns": 1e-9, "min": 60, "h": 3600}


class UnitError(ValueError):
    """A value with an unknown unit or no number."""


def _parse(text, table, what: str, example: str) -> float:
    if isinstance(text, (int, float)):
        return float(text)
    m = re.fullmatch(_NUM + r"([A-Za-z/]*)", str(text).strip())
    if not m or m.group(2).lower() not in table:
        raise UnitError(f"cannot read {text!r} as a {what} (e.g. {example}; units: "
                        f"{', '.join(k for k in table if k)})")
    return float(m.group(1)) * table[m.group(2).lower()]


def parse_rate(text) -> float:
    """Bits per second (a capital ``B``, as in ``MBps`` or ``MB/s``, means bytes)."""
    m = re.fullmatch(_NUM + r"([kKmMgGtT]?i?)B(ps|/s)", str(text).strip())
    if m:
        return 8.0 * _parse(f"{m.group(1)}{m.group(2)}bps", _RATE, "rate", "1Gbps")
    return _parse(text, _RATE, "rate", "1Gbps, 50Mbps")


def parse_bytes(text) -> float:
    """Bytes."""
    return _parse(text, _BYTES, "size", "100MB, 1MiB")


def parse_duration(text) -> float:
    """Seconds."""
    return _parse(text, _TIME, "duration", "10ms, 2s")
