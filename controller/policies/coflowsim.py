"""CoflowSim's clairvoyant ordering heuristics: SCF, NCF and LCF.

Varys (Chowdhury, Zhong, Stoica, SIGCOMM 2014, Section 5.1 and the evaluation of ordering
heuristics) characterises a coflow by its *length* (its largest flow), *width* (how many
flows), *size* (total bytes) and *skew*; its reference simulator CoflowSim
(``coflowsim.utils.Constants.SHARING_ALGO``) names the orderings built on the first three:

* ``scf`` -- **Shortest** Coflow First: smallest *length* first, the size in bytes of the
  coflow's largest flow (CoflowSim: largest reducer's bytes / number of mappers, which on
  the FB trace is exactly the largest flow).
* ``ncf`` -- **Narrowest** Coflow First: smallest *width* first. Width is the number of
  flows (Varys's definition; default, ``width="flows"``). ``width="endpoints"`` gives
  CoflowSim's comparator instead: ``min(#senders, #receivers)``.
* ``lcf`` -- **Lightest** Coflow First: smallest *size* first, the total bytes of the
  coflow. (This is the order sometimes called "smallest coflow first"; CoflowSim's SCF is
  the *shortest*, by length.)

The fourth, smallest effective bottleneck (skew), is :mod:`controller.policies.sebf`.

Keys are *static* by default: computed from the coflow's original flows, as CoflowSim does
when it inserts a coflow into its sorted list (clairvoyant static keys are the convention
for these baselines). ``remaining=True`` recomputes them at every event from what is left
(length = largest remaining flow, width = unfinished flows, size = remaining bytes).

Everything else is :class:`~controller.policies.fifo.CoflowOrderPolicy`: the order is
taken over the ready coflows at every event (ties by index), rates follow the engine's
work-conserving strict priority (CoflowSim's "coflow-level" sharing with backfilling), and
with several cores flows take the least-loaded core (``controller.cores``).

References
----------
M. Chowdhury, Y. Zhong, I. Stoica. Efficient coflow scheduling with Varys. SIGCOMM 2014.
CoflowSim, https://github.com/coflow/coflowsim (``CoflowSimulator`` comparators).
"""
from __future__ import annotations

import numpy as np

from controller.plan import State
from controller.policies.base import PolicyError, register
from controller.policies.fifo import CoflowOrderPolicy


class _StaticOrRemaining(CoflowOrderPolicy):
    """A key from per-flow values: the original sizes, or the remaining bytes."""

    def __init__(self, remaining: bool = False):
        super().__init__()
        if not isinstance(remaining, (bool, np.bool_)):
            raise PolicyError(f"{self.name}: option remaining must be true or false, "
                              f"got {remaining!r}")
        self.remaining = bool(remaining)
        self.static_keys = not self.remaining
        self._static = None

    def start(self, workload):
        super().start(workload)
        a = workload.arrays
        self._static = self.per_coflow(a, np.ones(a.n_flows, dtype=np.bool_), a.size)

    def per_coflow(self, arrays, live: np.ndarray, size: np.ndarray) -> np.ndarray:
        raise NotImplementedError  # pragma: no cover

    def key(self, state: State, coflows: np.ndarray) -> np.ndarray:
        if not self.remaining:
            return self._static[coflows]
        live = state.eligible
        return self.per_coflow(state.arrays, live, state.remaining)[coflows]


@register
class Scf(_StaticOrRemaining):
    name = "scf"
    summary = "shortest coflow first: smallest largest-flow bytes (CoflowSim SCF)"

    def per_coflow(self, arrays, live, size):
        out = np.zeros(arrays.n_coflows)
        np.maximum.at(out, arrays.coflow[live], size[live])
        return out


@register
class Ncf(_StaticOrRemaining):
    name = "ncf"
    summary = "narrowest coflow first: fewest flows (CoflowSim NCF; width='endpoints' option)"

    def __init__(self, remaining: bool = False, width: str = "flows"):
        super().__init__(remaining=remaining)
        if width not in ("flows", "endpoints"):
            raise PolicyError(f"ncf: option width must be 'flows' or 'endpoints', "
                              f"got {width!r}")
        self.width = width

    def per_coflow(self, arrays, live, size):
        n = arrays.n_coflows
        k = arrays.coflow[live]
        if self.width == "flows":
            return np.bincount(k, minlength=n).astype(np.float64)
        senders = np.unique(k * arrays.ports + arrays.src[live]) // arrays.ports
        receivers = np.unique(k * arrays.ports + arrays.dst[live]) // arrays.ports
        return np.minimum(np.bincount(senders, minlength=n),
                          np.bincount(receivers, minlength=n)).astype(np.float64)


@register
class Lcf(_StaticOrRemaining):
    name = "lcf"
    summary = "lightest coflow first: smallest total bytes (CoflowSim LCF)"

    def per_coflow(self, arrays, live, size):
        return np.bincount(arrays.coflow[live], weights=size[live], minlength=arrays.n_coflows)
