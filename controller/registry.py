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

__all__ = ["Registry"]


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
