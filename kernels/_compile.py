"""Compile a module of scalar per-node rules for one target.

The module's source is executed in a fresh namespace and each of its
functions is replaced by ``decorate(function)`` before anything is
compiled, so calls between its functions resolve to compiled code of the
same target (Numba resolves globals lazily, at the first compilation).  The
rule modules are ``fused._core``, ``victims._core`` (on top of the fused
rules) and ``gpu._core``.
"""

from __future__ import annotations

import inspect
import types
from typing import Callable

COMPILED = "__compiled_functions__"     # names a namespace's compiled functions


def module_functions(module) -> tuple[str, ...]:
    """Names of the functions ``module`` defines itself."""
    return tuple(name for name, obj in vars(module).items()
                 if isinstance(obj, types.FunctionType) and obj.__module__ == module.__name__)


def compile_module(module, decorate: Callable, base: dict | None = None) -> dict:
    """``module``'s namespace with every function decorated; on top of
    ``base`` (an already compiled namespace, e.g. the fused rules'), whose
    compiled functions the module's functions can call."""
    source = inspect.getsource(module)
    namespace: dict = {"__name__": f"{module.__name__}_compiled"}
    inherited = tuple((base or {}).get(COMPILED, ()))
    namespace.update({k: base[k] for k in inherited})
    exec(compile(source, module.__file__, "exec"), namespace)
    own = module_functions(module)
    for name in own:
        namespace[name] = decorate(namespace[name])
    namespace[COMPILED] = inherited + own
    return namespace
