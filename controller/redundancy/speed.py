"""Machine speed: piecewise-constant rate processes and the work they deliver.

A machine of the redundancy model (algorithms.md 4.1) does not serve at a fixed rate: its
*speed* ``r_m(t)`` is a piecewise-constant process, and the work it delivers between
``t1`` and ``t2`` is the cumulative work ``S_m(t1, t2) = integral of r_m``. Three kinds:

* **constant** (every machine without a ``speed``, and every existing workload): one
  change point at 0, rate ``rate`` (default 1);
* **AP/UP alternation** (the paper's simulations, algorithms.md 4.4): *available*
  periods (AP) and *unavailable* periods (UP) alternate; a period's length is
  Gamma(shape, scale) of its kind and its rate uniform in its kind's range. Defaults: AP
  rate U[0.5, 1.5], UP rate U[0, 0.2], AP length Gamma(0.5, 100), UP length Gamma(0.5,
  20). The rates are then **normalised to mean rate 1**: divided by the process's
  long-run mean rate, which renewal-reward gives analytically,
  ``c = (E[L_AP] E[R_AP] + E[L_UP] E[R_UP]) / (E[L_AP] + E[L_UP])`` (0.85 with the
  defaults), so every machine's expected rate is 1 whatever its sampled path (a path is
  not rescaled by its own average, which would bias short runs). The peak rate is
  ``ap_rate[1] / c`` (1.765 with the defaults). The first period is an AP with
  probability ``E[L_AP] / (E[L_AP] + E[L_UP])`` (the fraction of time in AP) and has a
  full period's length. Each machine has its own seed; the path is drawn in blocks of
  :data:`BLOCK` periods, so its prefix does not depend on how far it is drawn;
* **trace**: a file of change points ``time rate`` per line (``#`` comments), the first at
  time 0, times increasing, rates >= 0.

After its last change point a machine keeps its last rate.

Representation
--------------
:class:`Speed` holds the change points of all machines in one flat layout (CSR):
machine ``m``'s points are ``time[ptr[m]:ptr[m+1]]`` with ``rate`` and ``cum`` (the
cumulative work ``S_m(0, time[k])`` at each point), all numpy arrays, so that the event
simulator's kernels (:mod:`controller.redundancy.simulator`) read them directly. The
cumulative work :func:`cumulative` and its inverse :func:`time_to_deliver` (the time at
which ``w`` more work has been delivered from ``t``) are numba functions on that layout.

The **speedup function** of ``d`` copies over an interval of length ``tau`` is
``h(d, tau) = E[max_{l<=d} S_l(t, t + tau)] / tau`` (Assumption 2); Lemma 2 bounds it by
``min(d, peak)``. :func:`speedup` estimates it by Monte Carlo.

References
----------
Xu, de Veciana, Lau, Zhou, "Online Job Scheduling with Redundancy and Opportunistic
Checkpointing: A Speedup-Function-Based Analysis"; algorithms.md sections 4.1 and 4.4.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Mapping, Sequence

import numba
import numpy as np

from controller.model import WorkloadError

__all__ = ["Speed", "ApUp", "constant", "ap_up", "from_points", "read_trace", "speed_of",
           "cumulative", "time_to_deliver", "speedup", "BLOCK", "AP_UP_DEFAULTS"]

#: periods drawn at a time for an AP/UP path (its prefix is independent of its length)
BLOCK = 256

#: the paper's AP/UP defaults (algorithms.md 4.4)
AP_UP_DEFAULTS = {"ap_rate": (0.5, 1.5), "up_rate": (0.0, 0.2),
                  "ap_length": (0.5, 100.0), "up_length": (0.5, 20.0)}


@dataclass(frozen=True)
class ApUp:
    """Parameters of an AP/UP speed process (module docstring).

    Attributes
    ----------
    ap_rate, up_rate : (low, high), the uniform range of a period's rate before
        normalisation
    ap_length, up_length : (shape, scale), the Gamma law of a period's length
    normalise : bool, divide the rates by the long-run mean rate (:attr:`mean_rate`)
    """

    ap_rate: tuple[float, float] = AP_UP_DEFAULTS["ap_rate"]
    up_rate: tuple[float, float] = AP_UP_DEFAULTS["up_rate"]
    ap_length: tuple[float, float] = AP_UP_DEFAULTS["ap_length"]
    up_length: tuple[float, float] = AP_UP_DEFAULTS["up_length"]
    normalise: bool = True

    def __post_init__(self):
        for name in ("ap_rate", "up_rate", "ap_length", "up_length"):
            v = getattr(self, name)
            if (isinstance(v, (str, bytes)) or not isinstance(v, Sequence) or len(v) != 2
                    or any(isinstance(x, bool) or not isinstance(x, (int, float))
                           or not math.isfinite(x) for x in v)):
                raise WorkloadError(f"speed {name} must be a pair of numbers, got {v!r}",
                                    field="speed")
            object.__setattr__(self, name, (float(v[0]), float(v[1])))
        for name in ("ap_rate", "up_rate"):
            lo, hi = getattr(self, name)
            if not 0 <= lo <= hi:
                raise WorkloadError(f"speed {name} must be a range 0 <= low <= high, got "
                                    f"{[lo, hi]}", field="speed")
        for name in ("ap_length", "up_length"):
            if not min(getattr(self, name)) > 0:
                raise WorkloadError(f"speed {name} must be (shape, scale) > 0, got "
                                    f"{list(getattr(self, name))}", field="speed")
        if not self.raw_mean_rate > 0:
            raise WorkloadError("speed: the AP/UP rates have mean 0 (no machine ever works)",
                                field="speed")

    @property
    def raw_mean_rate(self) -> float:
        """The long-run mean rate before normalisation (renewal-reward)."""
        la = self.ap_length[0] * self.ap_length[1]
        lu = self.up_length[0] * self.up_length[1]
        return (la * sum(self.ap_rate) / 2 + lu * sum(self.up_rate) / 2) / (la + lu)

    @property
    def scale(self) -> float:
        """What the sampled rates are divided by (1 without normalisation)."""
        return self.raw_mean_rate if self.normalise else 1.0

    @property
    def mean_rate(self) -> float:
        """The long-run mean rate of the process (1 when normalised)."""
        return self.raw_mean_rate / self.scale

    @property
    def peak(self) -> float:
        """The peak rate ``Delta``."""
        return max(self.ap_rate[1], self.up_rate[1]) / self.scale

    @property
    def ap_fraction(self) -> float:
        la = self.ap_length[0] * self.ap_length[1]
        return la / (la + self.up_length[0] * self.up_length[1])

    def path(self, seed: int, until: float) -> tuple[np.ndarray, np.ndarray]:
        """One machine's change points ``(times, rates)`` from 0 past ``until``."""
        rng = np.random.default_rng(seed)
        ap = rng.random() < self.ap_fraction
        times, rates, t = [np.zeros(1)], [], 0.0
        while True:
            kind = (np.arange(BLOCK) + (0 if ap else 1)) % 2 == 0     # True: an AP
            shape = np.where(kind, self.ap_length[0], self.up_length[0])
            scale = np.where(kind, self.ap_length[1], self.up_length[1])
            length = rng.gamma(shape, scale)
            lo = np.where(kind, self.ap_rate[0], self.up_rate[0])
            hi = np.where(kind, self.ap_rate[1], self.up_rate[1])
            rates.append(rng.uniform(lo, hi) / self.scale)
            ends = t + np.cumsum(length)
            times.append(ends)
            t = float(ends[-1])
            if t > until:
                break
        t_all = np.concatenate(times)[:-1]
        r_all = np.concatenate(rates)
        # a Gamma(0.5) length can vanish in floating point: such a period has no effect
        live = np.append(t_all[1:] > t_all[:-1], True)
        t_all, r_all = t_all[live], r_all[live]
        keep = np.searchsorted(t_all, until, side="right") + 1      # one point past until
        return t_all[:keep], r_all[:keep]


@dataclass(frozen=True, eq=False)
class Speed:
    """The speed processes of ``n`` machines as change points (module docstring).

    Attributes
    ----------
    ptr : int array (n + 1,), machine ``m``'s points are ``ptr[m]:ptr[m+1]``
    time, rate, cum : float arrays, per change point: its time (the first of each machine
        is 0), the rate from it to the next, the work delivered from 0 to it
    peak : float, the largest rate any machine can have (of the model, not the path)
    specs : tuple, per machine the spec it came from (None: constant 1), for records
    """

    ptr: np.ndarray
    time: np.ndarray
    rate: np.ndarray
    cum: np.ndarray
    peak: float = 1.0
    specs: tuple = ()

    @property
    def n(self) -> int:
        return len(self.ptr) - 1

    @property
    def constant(self) -> bool:
        """Every machine has one rate for ever."""
        return bool(np.all(np.diff(self.ptr) == 1))

    def points(self, m: int) -> tuple[np.ndarray, np.ndarray]:
        """Machine ``m``'s change points ``(times, rates)``."""
        s = slice(self.ptr[m], self.ptr[m + 1])
        return self.time[s], self.rate[s]

    def work(self, m: int, t1: float, t2: float) -> float:
        """``S_m(t1, t2)``: the work machine ``m`` delivers from ``t1`` to ``t2``."""
        return cumulative(self.ptr, self.time, self.rate, self.cum, m, t2) - \
            cumulative(self.ptr, self.time, self.rate, self.cum, m, t1)

    def deliver(self, m: int, t: float, w: float) -> float:
        """The time at which machine ``m`` has delivered ``w`` more work from ``t`` (inf
        if it never does)."""
        return time_to_deliver(self.ptr, self.time, self.rate, self.cum, m, t, w)

    def segments(self, until: float) -> list[dict]:
        """The constant-rate intervals ``{"machine", "start", "end", "rate"}`` of every
        machine up to ``until`` (the records of a run)."""
        out = []
        for m in range(self.n):
            t, r = self.points(m)
            keep = t < until
            ends = np.minimum(np.append(t[1:], np.inf), until)[keep]
            out += [{"machine": m, "start": float(a), "end": float(b), "rate": float(x)}
                    for a, b, x in zip(t[keep], ends, r[keep])]
        return out


def from_points(points: Sequence[tuple[np.ndarray, np.ndarray]], peak: float | None = None,
                specs: tuple = ()) -> Speed:
    """A :class:`Speed` from per-machine change points ``(times, rates)`` (checked: the
    first time 0, increasing, rates >= 0)."""
    ptr = np.zeros(len(points) + 1, dtype=np.int64)
    ts, rs, cs = [], [], []
    for m, (t, r) in enumerate(points):
        t, r = np.asarray(t, dtype=np.float64), np.asarray(r, dtype=np.float64)
        if len(t) == 0 or len(t) != len(r) or t[0] != 0 or np.any(np.diff(t) <= 0) \
                or np.any(r < 0) or not np.all(np.isfinite(r)):
            raise ValueError(f"machine {m}: change points must start at 0, increase, and "
                             f"have finite rates >= 0")
        ts.append(t)
        rs.append(r)
        cs.append(np.concatenate([[0.0], np.cumsum(r[:-1] * np.diff(t))]))
        ptr[m + 1] = ptr[m] + len(t)
    cat = (lambda xs: np.concatenate(xs) if xs else np.zeros(0))
    rate = cat(rs)
    return Speed(ptr, cat(ts), rate, cat(cs),
                 float(rate.max()) if peak is None and len(rate) else (peak or 1.0),
                 tuple(specs) or (None,) * len(points))


def constant(n: int, rate: float = 1.0) -> Speed:
    """``n`` machines at ``rate`` for ever."""
    return from_points([(np.zeros(1), np.full(1, float(rate)))] * n, peak=float(rate))


def ap_up(seeds: Sequence[int], until: float, params: ApUp | None = None) -> Speed:
    """AP/UP machines, one per seed, drawn past ``until``."""
    p = params or ApUp()
    return from_points([p.path(int(s), until) for s in seeds], peak=p.peak)


# ------------------------------------------------------------------------ workload specs
def read_trace(path: str) -> tuple[np.ndarray, np.ndarray]:
    """A machine's change points from a trace file: ``time rate`` per line.

    Raises
    ------
    WorkloadError
        Naming the file, the line and the field (``time`` or ``rate``).
    """
    try:
        with open(path) as fh:
            lines = fh.read().splitlines()
    except OSError as e:
        raise WorkloadError(f"cannot read speed trace: {e.strerror}", source=path,
                            field="trace") from None
    times, rates = [], []
    for n, line in enumerate(lines, 1):
        text = line.split("#", 1)[0].split()
        if not text:
            continue
        if len(text) != 2:
            raise WorkloadError(f"a speed trace line is 'time rate', got {line.strip()!r}",
                                source=path, line=n, field="time")
        try:
            t, r = float(text[0]), float(text[1])
        except ValueError:
            raise WorkloadError(f"'time rate' must be two numbers, got {line.strip()!r}",
                                source=path, line=n, field="time") from None
        if not math.isfinite(t) or (times and t <= times[-1]) or (not times and t != 0):
            raise WorkloadError(f"change point times must start at 0 and increase, got {t!r}"
                                + (f" after {times[-1]!r}" if times else ""),
                                source=path, line=n, field="time")
        if not (math.isfinite(r) and r >= 0):
            raise WorkloadError(f"a rate must be a finite number >= 0, got {text[1]!r}",
                                source=path, line=n, field="rate")
        times.append(t)
        rates.append(r)
    if not times:
        raise WorkloadError("a speed trace needs at least one change point 'time rate'",
                            source=path, line=max(1, len(lines)), field="time")
    return np.array(times), np.array(rates)


def check_spec(spec, machine: str, base: str | None = None) -> dict:
    """A machine's ``speed`` entry, checked and normalised: ``{"model": "ap-up", ...,
    "seed": s}`` (parameters as :class:`ApUp`), ``{"trace": FILE}`` (a path relative to
    ``base``, the workload file's directory, made absolute; the file is read to check
    it) or ``{"rate": r}`` (constant).

    Raises
    ------
    WorkloadError
        Field ``speed`` naming the machine (a trace file's own errors name that file).
    """
    where = f"machine {machine!r} speed"
    if not isinstance(spec, Mapping):
        raise WorkloadError(f"{where} must be an object: {{\"model\": \"ap-up\", ..., "
                            f"\"seed\": s}}, {{\"trace\": FILE}} or {{\"rate\": r}}; got "
                            f"{spec!r}", field="speed")
    spec = dict(spec)
    kinds = [k for k in ("model", "trace", "rate") if k in spec]
    if len(kinds) != 1:
        raise WorkloadError(f"{where} gives exactly one of \"model\", \"trace\" or \"rate\"; "
                            f"got keys {sorted(spec)}", field="speed")
    if "trace" in spec:
        if set(spec) != {"trace"} or not isinstance(spec["trace"], str) or not spec["trace"]:
            raise WorkloadError(f"{where}: {{\"trace\": FILE}} takes a file name and nothing "
                                f"else, got {spec!r}", field="speed")
        path = spec["trace"]
        if base is not None and not os.path.isabs(path):
            path = os.path.normpath(os.path.join(base, path))
        if not os.path.isfile(path):
            raise WorkloadError(f"{where}: no trace file {path!r}", field="speed")
        read_trace(path)
        return {"trace": path}
    if "rate" in spec:
        r = spec["rate"]
        if set(spec) != {"rate"} or isinstance(r, bool) or not isinstance(r, (int, float)) \
                or not (math.isfinite(r) and r > 0):
            raise WorkloadError(f"{where}: {{\"rate\": r}} takes a number > 0, got {spec!r}",
                                field="speed")
        return {"rate": float(r)}
    if spec["model"] != "ap-up":
        raise WorkloadError(f"{where}: unknown speed model {spec['model']!r}; known: ap-up",
                            field="speed")
    allowed = {"model", "seed", "normalise", *AP_UP_DEFAULTS}
    extra = sorted(set(spec) - allowed)
    if extra:
        raise WorkloadError(f"{where}: unknown key {extra[0]!r}; an ap-up speed takes "
                            f"{', '.join(sorted(allowed))}", field="speed")
    seed = spec.get("seed")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise WorkloadError(f"{where}: an ap-up speed needs an integer \"seed\" >= 0, got "
                            f"{seed!r}", field="speed")
    if not isinstance(spec.get("normalise", True), bool):
        raise WorkloadError(f"{where}: \"normalise\" must be true or false", field="speed")
    try:
        ApUp(**{k: v for k, v in spec.items() if k in AP_UP_DEFAULTS or k == "normalise"})
    except WorkloadError as e:
        raise WorkloadError(f"machine {machine!r} {e.message}", field="speed") from None
    return spec


def speed_of(specs: Sequence[Mapping | None], until: float) -> Speed:
    """The :class:`Speed` of machines given by checked specs (:func:`check_spec`; None:
    constant 1), drawn past ``until``."""
    points, peak = [], 0.0
    for spec in specs:
        if spec is None:
            points.append((np.zeros(1), np.ones(1)))
            peak = max(peak, 1.0)
        elif "trace" in spec:
            points.append(read_trace(spec["trace"]))
            peak = max(peak, float(points[-1][1].max()))
        elif "rate" in spec:
            points.append((np.zeros(1), np.full(1, spec["rate"])))
            peak = max(peak, spec["rate"])
        else:
            p = ApUp(**{k: v for k, v in spec.items()
                        if k in AP_UP_DEFAULTS or k == "normalise"})
            points.append(p.path(spec["seed"], until))
            peak = max(peak, p.peak)
    return from_points(points, peak=peak, specs=tuple(specs))


# ------------------------------------------------------------------------ kernels
@numba.njit(cache=True)
def cumulative(ptr, time, rate, cum, m, t):
    """``S_m(0, t)``: the work machine ``m`` has delivered by ``t``."""
    lo, hi = ptr[m], ptr[m + 1]
    k = lo + np.searchsorted(time[lo:hi], t, side="right") - 1
    if k < lo:
        k = lo
    return cum[k] + rate[k] * (t - time[k])


@numba.njit(cache=True)
def time_to_deliver(ptr, time, rate, cum, m, t, w):
    """The least ``u >= t`` with ``S_m(t, u) >= w`` (inf if machine ``m`` never delivers
    ``w`` more): the inverse of the cumulative work."""
    if w <= 0:
        return t
    return reach(time, rate, cum, ptr[m], ptr[m + 1], t,
                 cumulative(ptr, time, rate, cum, m, t) + w)


@numba.njit(cache=True)
def reach(time, rate, cum, lo, hi, t, target):
    """The least ``u >= t`` at which the cumulative work of the machine whose segments are
    ``lo:hi`` reaches ``target`` (inf if it never does); ``t`` lies in segment ``lo`` or
    later."""
    # the first segment whose end value reaches the target (the last one never ends)
    k = lo + np.searchsorted(cum[lo + 1:hi], target, side="left")
    if rate[k] <= 0:
        return np.inf
    u = time[k] + (target - cum[k]) / rate[k]
    if u < t:
        u = t
    if k + 1 < hi and u > time[k + 1]:
        u = time[k + 1]
    return u


def speedup(speed: Speed, d: int, tau: float, samples: int, rng: np.random.Generator,
            until: float) -> tuple[float, float]:
    """Monte-Carlo estimate of ``h(d, tau)`` (module docstring) and its standard error:
    ``samples`` draws of ``d`` distinct machines of ``speed`` and a start uniform in
    ``[0, until - tau]``, each the best copy's work over ``tau`` divided by ``tau``."""
    vals = np.empty(samples)
    for k in range(samples):
        ms = rng.choice(speed.n, size=d, replace=False)
        t0 = rng.uniform(0, until - tau)
        vals[k] = max(speed.work(int(m), t0, t0 + tau) for m in ms) / tau
    return float(vals.mean()), float(vals.std(ddof=1) / math.sqrt(samples))
