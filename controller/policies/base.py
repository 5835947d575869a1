"""The policy interface and the registry of policies.

A policy decides, at every event, which core each flow takes and in what order (or at what
rate) flows send: it turns a :class:`~controller.plan.State` into a
:class:`~controller.plan.Plan`. Engines call::

    policy = get_policy("sebf")          # or "mypkg.mod:MyPolicy"
    policy.start(workload)               # once, before time 0 (offline policies solve here)
    plan = policy.plan(state)            # at every event

Built-in policies register themselves with :func:`register`; every module in
``controller.policies`` is imported on first lookup. A user's policy is any class with
``start`` and ``plan`` (subclassing :class:`Policy` is easiest), loaded by dotted path.
"""
from __future__ import annotations

import importlib
import os
import sys
from typing import ClassVar

from controller.model import Workload
from controller.plan import Plan, State
from controller.registry import Registry

class PolicyError(ValueError):
    """Unknown policy name or bad policy options."""


_POLICIES = Registry("policies", "controller.policies", PolicyError)


class Policy:
    """Base class: override :meth:`plan` (and :meth:`start` for offline work)."""

    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""

    def __init__(self, **options):
        if options:
            raise PolicyError(f"policy {self.name or type(self).__name__!r} takes no options "
                              f"{sorted(options)}")

    def start(self, workload: Workload) -> None:
        """Called once before the run starts."""
        self.workload = workload

    def plan(self, state: State) -> Plan:  # pragma: no cover - interface
        raise NotImplementedError


def register(cls):
    """Class decorator: make a policy available by its ``name``."""
    return _POLICIES.register(cls)


def available() -> dict[str, type]:
    """Name -> class of every registered policy, sorted by name."""
    return _POLICIES.classes()


def get_policy(spec: str, **options) -> Policy:
    """A new policy instance from a registered name or ``package.module:Class``."""
    if ":" in spec:
        mod_name, _, cls_name = spec.partition(":")
        if os.getcwd() not in sys.path:
            sys.path.append(os.getcwd())  # like `python -m`: a module beside the user
        try:
            cls = getattr(importlib.import_module(mod_name), cls_name)
        except (ImportError, AttributeError) as e:
            raise PolicyError(f"cannot load policy {spec!r}: {e}") from None
    else:
        reg = available()
        if spec not in reg:
            raise PolicyError(f"unknown policy {spec!r}; known: {', '.join(reg)}")
        cls = reg[spec]
    return cls(**options)
