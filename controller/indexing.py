"""Array indexes in compiled kernels, without Python's negative wraparound.

In Python ``a[-1]`` is the last element, and numba keeps that meaning for every index of
a signed integer type: each ``a[i]`` compiles to ``a[i + (i < 0) * len(a)]``, unless LLVM
proves ``i >= 0`` (an index from a ``range``, for one). The simulator's and the policies'
indexes are flows, pairs, ports, coflows and heap positions read from other arrays, which
it cannot prove; and the engines' kernels take dozens of arrays, so each array's length
lives on the stack and every index reads one. The kernels never index with a negative
number, so that work is wasted: sebf on FB2010 with every release at 0 took 15 % less CPU
without it (docs/simulator-speed.md, round 13), the same completions to the last bit.

Numba has no option to leave it out ("the compiler always adds it", numba issue #1533);
an unsigned index skips it (numba PR #929), but numba's arithmetic turns a mix of signed
and unsigned integers into floats, so every index would need a cast. Instead a module
calls :func:`no_wraparound` with its name before any of its functions compile, and numba
then compiles their indexes as given. What it changes is numba's ``fix_integer_index``
(the one place its array indexing applies the wraparound), for the registered modules'
functions only (told apart by their mangled LLVM names): other code keeps Python's
meaning. A negative index in a registered module reads or writes outside the array; the
tests run those modules' kernels with numba's bounds checks as well
(``tests/test_indexing.py``), which catch one.
"""
from __future__ import annotations

import numba.np.arrayobj as _arrayobj
from numba.core import types

#: numba's own ``fix_integer_index``, used for every function not registered (None if a
#: numba release renamed it: then nothing changes, and tests/test_indexing.py fails)
_NUMBA_FIX = getattr(_arrayobj, "fix_integer_index", None)
_NUMBA_FIX = getattr(_NUMBA_FIX, "numba_fix", _NUMBA_FIX)   # (this module reloaded)

#: mangled-name prefixes of the registered modules' functions
_PREFIXES: tuple[str, ...] = ()


def mangled_prefix(module: str) -> str:
    """The start of the LLVM name numba gives the functions of ``module`` (Itanium
    mangling of the dotted name: ``emulate.sim.capped`` -> ``_ZN7emulate3sim6capped``)."""
    return "_ZN" + "".join(f"{len(part)}{part}" for part in module.split("."))


def _fix_integer_index(context, builder, idxty, idx, size):
    if idxty.signed and builder.function.name.startswith(_PREFIXES):
        return context.cast(builder, idx, idxty, types.intp)
    return _NUMBA_FIX(context, builder, idxty, idx, size)


_fix_integer_index.numba_fix = _NUMBA_FIX


def no_wraparound(module: str) -> None:
    """Compile the functions of ``module`` (its ``__name__``) with their indexes as
    given: none of them may index with a negative number."""
    global _PREFIXES
    if mangled_prefix(module) not in _PREFIXES:
        _PREFIXES += (mangled_prefix(module),)
    if _NUMBA_FIX is not None:
        _arrayobj.fix_integer_index = _fix_integer_index


def registered(module: str) -> bool:
    """Whether ``module``'s functions compile without the wraparound."""
    return (mangled_prefix(module) in _PREFIXES
            and _arrayobj.fix_integer_index is _fix_integer_index)
