"""The scripts under ``benchmarks/`` as modules, for the tests that check their parts.

The scripts are not a package: each is loaded from its file by name, once per process
(``sys.modules`` keeps it under ``benchmarks.NAME``, apart from any module of the same
name on ``sys.path``).
"""
from __future__ import annotations

import importlib.util
import os
import sys

BENCHMARKS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                          "benchmarks")


def benchmark(name: str):
    """``benchmarks/NAME.py``, loaded (once) as a module."""
    key = f"benchmarks.{name}"
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            key, os.path.join(BENCHMARKS, name + ".py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules[key] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[key]
            raise
    return sys.modules[key]
