"""The fabric: an identical parallel network.

A fabric has ``cores`` network cores, each a non-blocking ``ports x ports`` switch. Server
``i`` has one uplink to every core (input port ``i`` of that core) and one downlink from
every core (output port ``i``). Every link of core ``h`` runs at ``rate_bps[h]`` bits per
second; an identical parallel network has the same rate on every core, a heterogeneous
one (``core_rates``) a rate per core.

Limits
------
A fabric is checked before anything is sized by it: ``ports`` in ``1..MAX_PORTS``
(4,096), ``cores`` in ``1..MAX_CORES`` (64), every rate a finite number of bits per
second in ``MIN_RATE_BPS..MAX_RATE_BPS`` (1 bit/s .. 1e15 bit/s, a petabit). Larger
values are input mistakes (a fabric of 10^9 ports once asked for terabytes), not
experiments: FB2010 tiled ten times is 1,500 ports.

Examples
--------
>>> Fabric(ports=4, cores=2, rate_bps=1e9).core_rate(1)
1000000000.0
>>> Fabric(ports=4, cores=2, rate_bps=1e9, core_rates=(1e9, 4e8)).core_rate(1)
400000000.0
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass


class FabricError(ValueError):
    """A fabric parameter is out of range."""


#: the largest fabric accepted (see the module docstring's "Limits")
MAX_PORTS = 4096
MAX_CORES = 64
MIN_RATE_BPS = 1.0
MAX_RATE_BPS = 1e15


def _rate_ok(r) -> bool:
    return (not isinstance(r, bool) and isinstance(r, numbers.Real)
            and MIN_RATE_BPS <= r <= MAX_RATE_BPS)


@dataclass(frozen=True)
class Fabric:
    """``cores`` identical (or per-core rated) non-blocking switches of ``ports`` ports."""

    ports: int
    cores: int = 1
    rate_bps: float = 1e9
    core_rates: tuple[float, ...] | None = None

    def __post_init__(self):
        if not isinstance(self.ports, int) or isinstance(self.ports, bool) or self.ports < 1:
            raise FabricError(f"fabric.ports must be a positive integer, got {self.ports!r}")
        if self.ports > MAX_PORTS:
            raise FabricError(f"fabric.ports must be at most {MAX_PORTS}, got {self.ports!r}")
        if not isinstance(self.cores, int) or isinstance(self.cores, bool) or self.cores < 1:
            raise FabricError(f"fabric.cores must be a positive integer, got {self.cores!r}")
        if self.cores > MAX_CORES:
            raise FabricError(f"fabric.cores must be at most {MAX_CORES}, got {self.cores!r}")
        allowed = f"a number of bits/s in {MIN_RATE_BPS:g}..{MAX_RATE_BPS:g}"
        if not _rate_ok(self.rate_bps):
            raise FabricError(f"fabric.rate_bps must be {allowed}, got {self.rate_bps!r}")
        if self.core_rates is not None:
            if isinstance(self.core_rates, (str, bytes)):
                raise FabricError(f"fabric.core_rates must be a list of numbers (bits/s), "
                                  f"got {self.core_rates!r}")
            try:
                rates = tuple(self.core_rates)
            except TypeError:
                raise FabricError(f"fabric.core_rates must be a list of numbers (bits/s), "
                                  f"got {self.core_rates!r}") from None
            if len(rates) != self.cores:
                raise FabricError(
                    f"fabric.core_rates has {len(rates)} entries for {self.cores} cores")
            for h, r in enumerate(rates):
                if not _rate_ok(r):
                    raise FabricError(f"fabric.core_rates[{h}] must be {allowed}, got {r!r}")
            object.__setattr__(self, "core_rates", tuple(float(r) for r in rates))

    def core_rate(self, core: int) -> float:
        """Link rate of ``core`` in bits per second."""
        return float(self.core_rates[core] if self.core_rates else self.rate_bps)

    @property
    def rates(self) -> tuple[float, ...]:
        """Link rate of every core, bits per second."""
        return tuple(self.core_rate(h) for h in range(self.cores))

    @property
    def identical(self) -> bool:
        """True when every core has the same rate."""
        return len(set(self.rates)) == 1

    def with_(self, **changes) -> "Fabric":
        """A copy with some fields replaced (``core_rates`` dropped when ``cores`` changes)."""
        fields = dict(ports=self.ports, cores=self.cores, rate_bps=self.rate_bps,
                      core_rates=self.core_rates)
        if "cores" in changes and "core_rates" not in changes:
            fields["core_rates"] = None
        if "rate_bps" in changes and "core_rates" not in changes:
            fields["core_rates"] = None
        fields.update(changes)
        return Fabric(**fields)
