"""Plots: CCT distributions of a comparison, per-core timelines (Gantt) of a run, and
ratios to a lower bound against a swept parameter.

Both write image files (PNG, or anything matplotlib infers from the suffix) with the
non-interactive Agg backend, atomically (a temporary file renamed into place).
"""
from __future__ import annotations

import json
import os
import tempfile

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


STALE_SECONDS = 60.0
"""A ``.tmp-*`` image older than this is a leftover of a killed plot (writing one takes
milliseconds: the figure is rendered in memory first)."""


def _save(fig, path: str) -> None:
    """Render ``fig`` in memory, then write it next to ``path`` and rename it into place.

    A kill while rendering (the slow part) leaves no file; a temporary file exists only
    for the milliseconds of one write, and one a kill left there anyway is removed by the
    next plot written to the same directory (:func:`remove_stale`).
    """
    import io
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    suffix = os.path.splitext(path)[1] or ".png"
    buf = io.BytesIO()
    try:
        fig.savefig(buf, dpi=120, bbox_inches="tight", format=suffix.lstrip(".") or "png")
    finally:
        plt.close(fig)
    remove_stale(d, suffix)
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-", suffix=suffix)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(buf.getbuffer())
        umask = os.umask(0)             # the mode a plain open gives, not mkstemp's 0600
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def remove_stale(directory: str, suffix: str) -> list[str]:
    """Remove ``.tmp-*<suffix>`` files older than :data:`STALE_SECONDS` in ``directory``
    (what killed plots left); returns their paths."""
    import glob
    import time
    gone = []
    for f in glob.glob(os.path.join(glob.escape(directory), f".tmp-*{suffix}")):
        try:
            if time.time() - os.stat(f).st_mtime > STALE_SECONDS:
                os.unlink(f)
                gone.append(f)
        except OSError:
            pass
    return gone


def cct_cdf(comparison, path: str, title: str | None = None) -> None:
    """CDF of coflow completion times of a :class:`~experiments.compare.Comparison`, one
    line per policy (log x axis)."""
    cdf(comparison.series, path, title=title or f"CCT CDF: {comparison.workload}")


def cdf(series: dict, path: str, *, title: str, xlabel: str = "coflow completion time (s)",
        ylabel: str = "fraction of coflows") -> None:
    """CDFs of completion times, one line per ``series`` key (log x axis)."""
    fig, ax = plt.subplots(figsize=(7, 4.5))
    colors = plt.get_cmap("tab20").colors
    styles = ["-", "--", "-.", ":"]
    for n, (label, values) in enumerate(series.items()):
        v = np.maximum(np.sort(np.asarray(values, dtype=float)), 1e-9)
        if not len(v):
            continue
        ax.step(v, np.arange(1, len(v) + 1) / len(v), where="post",
                color=colors[(2 * n) % 20 + (n // 10) % 2], linestyle=styles[n % 4],
                label=f"{label} (mean {np.mean(values):.3g} s)")
    ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    _save(fig, path)


def read_segments(path: str) -> list[dict]:
    """The JSON-lines segments file of ``coflowemu run --segments``."""
    out = []
    with open(path) as fh:
        for n, line in enumerate(fh, start=1):
            if line.strip():
                try:
                    out.append(json.loads(line))
                except json.JSONDecodeError as e:
                    raise ValueError(f"{path}:{n}: not a JSON line ({e.msg})") from None
    return out


def gantt(segments: list[dict], path: str, *, by: str = "src", title: str | None = None,
          max_coflows_in_legend: int = 20) -> None:
    """Per-core, per-port timeline: one row per (core, port), bars coloured by coflow."""
    if not segments:
        raise ValueError("no segments to draw")
    cores = sorted({s["core"] for s in segments})
    ports = sorted({s[by] for s in segments})
    coflows = list(dict.fromkeys(s["coflow"] for s in segments))
    cmap = plt.get_cmap("tab20")
    color = {c: cmap(i % 20) for i, c in enumerate(coflows)}
    rows = {(h, p): i for i, (h, p) in enumerate((h, p) for h in cores for p in ports)}
    fig, ax = plt.subplots(figsize=(10, max(2.5, 0.3 * len(rows) + 1)))
    peak = max(s["rate_bps"] for s in segments)
    for s in segments:
        y = rows[(s["core"], s[by])]
        ax.barh(y, s["end"] - s["start"], left=s["start"], height=0.8 * s["rate_bps"] / peak,
                color=color[s["coflow"]], edgecolor="none")
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([f"core {h} {'in' if by == 'src' else 'out'} {p}" for h, p in rows],
                       fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("time (s)")
    ax.set_title(title or "flows per core and port (bar height = rate)")
    handles = [plt.Rectangle((0, 0), 1, 1, color=color[c]) for c in coflows[:max_coflows_in_legend]]
    ax.legend(handles, coflows[:max_coflows_in_legend], fontsize=7, ncol=2,
              loc="upper left", bbox_to_anchor=(1.01, 1))
    _save(fig, path)


def ratio_sweep(panels: dict, path: str, *, xlabel: str, title: str | None = None,
                log: bool = True) -> None:
    """Ratio to a lower bound against a swept parameter, one panel per ``panels`` key.

    ``panels[name][algorithm]`` is a list of ``(x, ratio, low, high)`` (e.g. the ratio of
    sums over runs, and the smallest and largest per-run ratio): a line through the
    ratios with error bars from ``low`` to ``high``; log axes (ratios of very different
    sizes share a panel), x ticks at the swept values (linear axes with ``log=False``).
    """
    from matplotlib.ticker import NullFormatter, ScalarFormatter
    n = len(panels)
    cols = min(n, 4)
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.3 * rows), squeeze=False)
    colors = plt.get_cmap("tab10").colors
    for ax, (name, lines) in zip(axes.flat, panels.items()):
        for k, (algo, pts) in enumerate(lines.items()):
            x, r, lo, hi = (np.array(v, dtype=float) for v in zip(*pts))
            shift = (1 + 0.03 * (k - len(lines) / 2)) if log else 1.0
            ax.errorbar(x * shift, r, yerr=[r - lo, hi - r],
                        label=algo, color=colors[k % len(colors)], marker="o", ms=3,
                        capsize=2, lw=1)
        if log:
            ax.set_xscale("log")
            ax.set_yscale("log")
        xs = sorted({p[0] for pts in lines.values() for p in pts})
        ax.set_xticks(xs)
        for axis in (ax.xaxis, ax.yaxis):
            axis.set_major_formatter(ScalarFormatter())
            axis.set_minor_formatter(NullFormatter())
        ax.set_title(name, fontsize=9)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("ratio to the lower bound")
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=7)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    _save(fig, path)
