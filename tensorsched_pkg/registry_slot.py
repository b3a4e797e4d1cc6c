"""The declared hook through which the core gets its default plugin
registry: the composition root (``tensorsched/__init__``) installs a
factory at import; ``build_cluster`` and the rest of the core call
``default_registry()`` when no registry is passed, so the core never names
a plugin set nor loads an entry point.

Stands below every other package (stdlib only): importing it costs nothing,
so ``import tensorsched`` stays cheap and loads no framework module.
"""

from __future__ import annotations

from collections.abc import Callable

_factory: Callable | None = None


def install(factory: Callable) -> None:
    """Make ``factory() -> Registry`` the default registry of every cluster
    built without one (the composition root does this once, at import)."""
    global _factory
    if not callable(factory):
        raise TypeError(f"a default registry factory is callable, got {factory!r}")
    _factory = factory


def default_registry():
    """A fresh default Registry from the installed factory."""
    if _factory is None:
        raise LookupError("no default plugin registry is installed (import tensorsched "
                          "installs it); pass registry= explicitly")
    return _factory()
