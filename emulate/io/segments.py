"""The segments file: every constant-rate interval of a run, one JSON object per line.

``coflowemu run --segments PATH`` writes it (:meth:`emulate.io.records.RunResult.write_segments`,
and for a joint run also the compute tasks' intervals); ``coflowemu gantt`` draws it. A
*flow segment* is ``{"coflow": id, "src": port, "dst": port, "core": h, "start": s,
"end": s, "rate_bps": r}``: flow ``src -> dst`` of the coflow sent at ``r`` bits/s on core
``h`` from ``start`` to ``end`` (seconds). A *task segment* is ``{"task": id, "machine":
id, "start": s, "end": s, ...}``.

:func:`read_segments` checks every line before anything is drawn: an object, the keys of
its kind, ports and cores non-negative integers, times finite with ``0 <= start <= end``,
rates finite and >= 0. A bad line is a :class:`~controller.model.WorkloadError` naming the
file, the line and the field.
"""
from __future__ import annotations

import json
import math

from controller.model import MAX_SECONDS, WorkloadError

__all__ = ["read_segments"]

_FLOW_KEYS = ("coflow", "src", "dst", "core", "start", "end", "rate_bps")
_TASK_KEYS = ("task", "machine", "start", "end")


def read_segments(path: str, *, kind: str | None = None) -> list[dict]:
    """The segments of ``path`` (``kind="flow"`` or ``"task"``: only those), validated.

    Raises
    ------
    WorkloadError
        The file cannot be read, is not UTF-8 JSON lines, or a line is not a segment
        (file, line, field; see the module docstring).
    """
    from emulate.io.traces import read_text
    out = []
    for n, line in enumerate(read_text(path, "segments file").splitlines(), start=1):
        if not line.strip():
            continue

        def bad(field, msg):
            return WorkloadError(msg, source=path, line=n, field=field)

        try:
            seg = json.loads(line)
        except json.JSONDecodeError as e:
            raise bad(None, f"not a JSON line ({e.msg}, column {e.colno})") from None
        except (RecursionError, ValueError) as e:
            raise bad(None, f"not a JSON line ({type(e).__name__})") from None
        if not isinstance(seg, dict):
            raise bad(None, f"a segment must be a JSON object, got {_brief(seg)}")
        is_task = "task" in seg and "coflow" not in seg
        for key in _TASK_KEYS if is_task else _FLOW_KEYS:
            if key not in seg:
                raise bad(key, f"missing {key!r} (a {'task' if is_task else 'flow'} segment "
                               f"has {', '.join(_TASK_KEYS if is_task else _FLOW_KEYS)})")
        if is_task:
            for key in ("task", "machine"):
                if not isinstance(seg[key], str):
                    raise bad(key, f"{key!r} must be an id (a string), got {_brief(seg[key])}")
        else:
            if not isinstance(seg["coflow"], str):
                raise bad("coflow", f"'coflow' must be an id (a string), got "
                                    f"{_brief(seg['coflow'])}")
            for key in ("src", "dst", "core"):
                v = seg[key]
                if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < 2**31:
                    raise bad(key, f"{key!r} must be an integer >= 0, got {_brief(v)}")
            _number(seg, "rate_bps", bad, 0.0, math.inf)
        _number(seg, "start", bad, 0.0, MAX_SECONDS)
        _number(seg, "end", bad, 0.0, MAX_SECONDS)
        if seg["end"] < seg["start"]:
            raise bad("end", f"'end' {seg['end']!r} is before 'start' {seg['start']!r}")
        if kind is None or (kind == "task") == is_task:
            out.append(seg)
    return out


def _number(seg, key, bad, lo, hi):
    v = seg[key]
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not (
            math.isfinite(v) and lo <= v <= hi):
        allowed = f">= {lo:g}" + ("" if hi == math.inf else f" and at most {hi:g}")
        raise bad(key, f"{key!r} must be a finite number {allowed}, got {_brief(v)}")


def _brief(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
