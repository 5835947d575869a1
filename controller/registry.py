"""Registries: classes made available by name, the built-in ones imported on first use.

Network policies (:mod:`controller.policies`) and job models (:mod:`controller.jobmodel`)
are found by name. A class registers itself with its registry's :meth:`Registry.register`
decorator (it must have a ``name``); every module of the registry's package is imported
the first time the names are listed, so the built-in classes are there without a list
to keep up to date, and a user's class is there once its module is imported.
"""
from __future__ import annotations

import importlib
import pkgutil

__all__ = ["Registry", "parse_options"]


class Registry:
    """Named classes of one kind; see the module docstring.

    Parameters
    ----------
    kinds : str
        What is registered, plural, for messages (``"policies"``, ``"job models"``).
    package : str
        The package whose modules hold the built-in classes.
    error : type
        The exception raised for a class without a name or a name given twice.
    """

    def __init__(self, kinds: str, package: str, error: type):
        self.kinds = kinds
        self.package = package
        self.error = error
        self._classes: dict[str, type] = {}

    def register(self, cls):
        """Class decorator: make ``cls`` available by its ``name``."""
        if not cls.name:
            raise self.error(f"{cls.__name__} has no name")
        if cls.name in self._classes and self._classes[cls.name] is not cls:
            raise self.error(f"two {self.kinds} are named {cls.name!r}")
        self._classes[cls.name] = cls
        return cls

    def get(self, name: str) -> type | None:
        """The class registered as ``name`` so far (its module imported), or None."""
        return self._classes.get(name)

    def classes(self) -> dict[str, type]:
        """Name -> class of every registered class (built-in ones loaded), sorted by name."""
        pkg = importlib.import_module(self.package)
        for mod in pkgutil.iter_modules(pkg.__path__):
            importlib.import_module(f"{self.package}.{mod.name}")
        return dict(sorted(self._classes.items()))


def parse_options(spec: str) -> tuple[str, dict]:
    """Split a policy name with options, ``NAME@KEY=VALUE[@KEY=VALUE...]``, into the name
    and its options.

    Any policy name takes options this way wherever a name is accepted (``--policy``,
    ``compare --policies``, a sweep spec's ``specs``, each half of ``compute+network``):
    ``sebf@allocation=sincronia-offline``, ``lp-coflow@mode=online@objective=jobs``,
    ``srpt+r@assign=sticky+sebf``. A value is typed as it reads: ``true``/``false`` a
    bool, an integer an int, a number a float (``1e6``), anything else a string.

    Raises
    ------
    ValueError
        An empty name, an option without ``=`` or without a key, a key given twice.

    Examples
    --------
    >>> parse_options("aalo@first_threshold=1e6@queues=4")
    ('aalo', {'first_threshold': 1000000.0, 'queues': 4})
    >>> parse_options("sebf")
    ('sebf', {})
    """
    name, *items = spec.split("@")
    if not name:
        raise ValueError(f"no policy name before '@' in {spec!r}")
    options: dict = {}
    for item in items:
        key, eq, text = item.partition("=")
        key = key.strip()
        if not eq or not key.isidentifier():
            raise ValueError(f"policy option {item!r} in {spec!r}: write KEY=VALUE "
                             f"after '@' (e.g. lp-coflow@mode=online)")
        if key in options:
            raise ValueError(f"policy option {key!r} given twice in {spec!r}")
        options[key] = _typed(text.strip())
    return name, options


def _typed(text: str):
    """An option's value as it reads: bool, int, float, else the string."""
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text
