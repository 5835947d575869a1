"""The LP solver: HiGHS, with nothing written to standard output.

Two doors: :func:`new_highs`, a ``highspy`` instance for the cutting-plane loops that add
rows and re-solve from the previous basis (the coflow and MSJO LPs), and
:func:`solve_linprog`, one ``scipy.optimize.linprog(method="highs")`` call for the LPs
built whole (the compute LPs, the moldable minsum LP), which raises :class:`LPError`
unless the solution is optimal.

HiGHS prints a banner (``Running HiGHS 1.16.0 ... Copyright ...``) from C++ straight to
file descriptor 1 when a solver object is created, before any option (``output_flag``)
can be set. Python-level redirection (``contextlib.redirect_stdout``) does not see it,
and a command's ``--json`` output would no longer be one JSON document. So
:func:`new_highs` points descriptor 1 at ``/dev/null`` while the object is constructed,
then restores it, and turns the solver's own logging off.

Examples
--------
>>> h = new_highs()          # prints nothing, on any descriptor
>>> h.getOptionValue("output_flag")[1]
False
"""
from __future__ import annotations

import os
import sys
import threading

import time

import highspy

_FD_LOCK = threading.Lock()  # one redirection of descriptor 1 at a time in this process


def new_highs() -> highspy.Highs:
    """A new ``highspy.Highs`` with output off, created without writing to stdout."""
    with _FD_LOCK:
        sys.stdout.flush()  # what Python buffered belongs on the real stdout
        saved = os.dup(1)
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, 1)
            h = highspy.Highs()
        finally:
            os.dup2(saved, 1)
            os.close(saved)
            os.close(devnull)
    h.setOptionValue("output_flag", False)
    return h


class LPError(RuntimeError):
    """The LP solver did not return an optimal solution."""


def solve_linprog(c, A_ub, b_ub, A_eq, b_eq, bounds, name: str):
    """``linprog(method="highs")`` with presolve; returns ``(result, seconds)``.

    Raises
    ------
    LPError
        Naming the LP ``name``, when HiGHS's status is not optimal.
    """
    from scipy.optimize import linprog  # here: scipy takes 0.3 s to import
    t0 = time.perf_counter()
    res = linprog(c, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=b_eq, bounds=bounds,
                  method="highs", options={"presolve": True})
    secs = time.perf_counter() - t0
    if res.status != 0:
        raise LPError(f"{name}: solver status {res.status}: {res.message}")
    return res, secs
