"""Compile ``_fused_core`` for one target.

The core module's source is executed in a fresh namespace and each function
is replaced by ``decorate(function)`` before anything is compiled, so calls
between core functions resolve to compiled code of the same target (Numba
resolves globals lazily, at the first compilation).
"""

from __future__ import annotations

import inspect
import types
from typing import Callable

from . import _fused_core

CORE_FUNCTIONS = tuple(
    name for name, obj in vars(_fused_core).items()
    if isinstance(obj, types.FunctionType) and obj.__module__ == _fused_core.__name__
)


def compile_core(decorate: Callable) -> dict:
    """Return the core namespace with every core function decorated."""
    source = inspect.getsource(_fused_core)
    namespace: dict = {"__name__": f"{_fused_core.__name__}_compiled"}
    exec(compile(source, _fused_core.__file__, "exec"), namespace)
    for name in CORE_FUNCTIONS:
        namespace[name] = decorate(namespace[name])
    return namespace


def compile_module(module, decorate: Callable, base: dict) -> dict:
    """Compile another scalar core module the same way, on top of ``base``
    (an already compiled namespace, e.g. ``compile_core``'s): the module's
    functions can call every compiled function of ``base``."""
    source = inspect.getsource(module)
    namespace: dict = {"__name__": f"{module.__name__}_compiled"}
    namespace.update({k: v for k, v in base.items() if k in CORE_FUNCTIONS})
    exec(compile(source, module.__file__, "exec"), namespace)
    own = [name for name, obj in vars(module).items()
           if isinstance(obj, types.FunctionType) and obj.__module__ == module.__name__]
    for name in own:
        namespace[name] = decorate(namespace[name])
    return namespace
