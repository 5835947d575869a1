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

import functools
import importlib
import os
import pkgutil
import sys
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:  # annotations only: the registry itself imports no numba
    from controller.model import Workload
    from controller.plan import Plan, State

from controller.registry import Registry, parse_options


class PolicyError(ValueError):
    """Unknown policy name or bad policy options."""


_POLICIES = Registry("policies", "controller.policies", PolicyError)


class Policy:
    """Base class: override :meth:`plan` (and :meth:`start` for offline work)."""

    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    #: the name and the options it was made with (``lp-coflow@mode=online``), set by
    #: :func:`get_policy`; records name the policy by it
    label: str = ""

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


@functools.cache
def catalogue() -> dict[str, tuple[str, str]]:
    """Built-in policies by name: ``(module, summary)``, read from the source of
    ``controller.policies`` without importing it.

    Importing every policy imports numba and the LP solver (about half a second); listing
    them (``coflowemu policies``) needs none of it, and :func:`get_policy` imports only the
    module that defines the policy asked for. A built-in policy is a class decorated with
    :func:`register` whose ``name`` and ``summary`` are string literals
    (``tests/test_baselines.py`` checks that this catalogue and the imported registry
    agree).
    """
    import ast

    import controller.policies as pkg
    out = {}
    for mod in pkgutil.iter_modules(pkg.__path__):
        path = os.path.join(pkg.__path__[0], f"{mod.name}.py")
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read(), path)
        for cls in tree.body:
            if not (isinstance(cls, ast.ClassDef) and any(
                    isinstance(d, ast.Name) and d.id == "register"
                    for d in cls.decorator_list)):
                continue
            attrs = {t.id: node.value.value for node in cls.body
                     if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
                     for t in node.targets if isinstance(t, ast.Name)}
            out[attrs["name"]] = (f"controller.policies.{mod.name}", attrs.get("summary", ""))
    return dict(sorted(out.items()))


def available() -> dict[str, type]:
    """Name -> class of every registered policy, sorted by name."""
    return _POLICIES.classes()


def load_class(spec: str, what: str = "policy") -> type:
    """The class ``package.module:Class`` names, the module imported as ``python -m`` would
    (the current directory first on the path after the installed packages).

    Shared by the network policies (:func:`get_policy`) and the compute policies
    (:func:`controller.compute.get_compute_policy`).

    Raises
    ------
    PolicyError
        ``cannot load {what} {spec!r}: ...`` when the module or the class is missing.
    """
    mod_name, _, cls_name = spec.partition(":")
    if os.getcwd() not in sys.path:
        sys.path.append(os.getcwd())  # like `python -m`: a module beside the user
    try:
        return getattr(importlib.import_module(mod_name), cls_name)
    except (ImportError, AttributeError, ValueError) as e:
        raise PolicyError(f"cannot load {what} {spec!r}: {e}") from None


def get_policy(spec: str, **options) -> Policy:
    """A new policy instance from a registered name or ``package.module:Class``, either
    with options ``NAME@KEY=VALUE...`` (:func:`controller.registry.parse_options`), merged
    with ``options``.

    Raises
    ------
    PolicyError
        An unknown name, a class that is not a policy, a malformed option, an option the
        policy does not take (naming those it takes), an option given twice with two
        values, a value the policy refuses.
    """
    try:
        spec, named = parse_options(spec)
    except ValueError as e:
        raise PolicyError(str(e)) from None
    for key, value in options.items():
        if key in named and named[key] != value:
            raise PolicyError(f"policy option {key!r} given twice: {named[key]!r} in the "
                              f"name, {value!r} as an option (e.g. --{key})")
    options = {**named, **options}
    if ":" in spec:
        cls = load_class(spec)
        if not (isinstance(cls, type) and issubclass(cls, Policy)):
            raise PolicyError(f"{spec!r} is not a policy: {spec.partition(':')[2]!r} must be "
                              f"a subclass of controller.policies.Policy (or a "
                              f"ComputePlanner with +network on a joint workload)")
        if cls.plan is Policy.plan:
            raise PolicyError(f"{spec!r} does not implement plan(state) (a policy overrides "
                              f"Policy.plan)")
    else:
        known = catalogue()
        if spec not in known:
            raise PolicyError(f"unknown policy {spec!r}; known: {', '.join(known)}")
        importlib.import_module(known[spec][0])   # registers its classes
        cls = _POLICIES.get(spec)
    unknown = [k for k in options if k not in policy_options(cls)]
    if unknown and not _takes_any(cls):
        takes = ", ".join(f"{k}={v!r}" for k, v in policy_options(cls).items()) or "none"
        raise PolicyError(f"policy {spec!r} has no option {unknown[0]!r}; its options: "
                          f"{takes}")
    policy = cls(**options)
    defaults = policy_options(cls)
    policy.label = (cls.name or spec) + "".join(f"@{k}={_text(v)}" for k, v in options.items()
                                  if k not in defaults or defaults[k] != v)
    return policy


def policy_label(policy) -> str:
    """What records call ``policy``: its :attr:`Policy.label` (name and options), else its
    name, else its class's name."""
    return getattr(policy, "label", "") or getattr(policy, "name", "") or \
        type(policy).__name__


def _text(value) -> str:
    """An option's value as :func:`~controller.registry.parse_options` reads it back."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def policy_options(cls: type) -> dict:
    """The options a policy class takes: its constructor's named parameters and their
    defaults (``None`` where a parameter has no default)."""
    import inspect
    params = list(inspect.signature(cls.__init__).parameters.values())[1:]
    return {p.name: (None if p.default is p.empty else p.default) for p in params
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


def _takes_any(cls: type) -> bool:
    """Whether a class's own constructor takes any keyword and names none (a user's
    ``__init__(self, **options)``): its options are its own business."""
    import inspect
    if cls.__init__ is Policy.__init__:
        return False
    params = inspect.signature(cls.__init__).parameters.values()
    return not policy_options(cls) and any(p.kind == p.VAR_KEYWORD for p in params)
