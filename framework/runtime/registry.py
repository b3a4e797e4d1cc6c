"""Plugin registry: name -> (factory, extension points).

A factory is ``factory(args, handle) -> plugin``.  Out-of-tree plugins are
added with ``register``; a duplicate name is an error."""

from __future__ import annotations

from typing import Callable

from tensorsched.framework.errors import TensorschedError


class Registry:
    def __init__(self) -> None:
        self._factories: dict[str, Callable] = {}
        self._points: dict[str, frozenset[str]] = {}

    def register(self, name: str, factory: Callable, points) -> None:
        if name in self._factories:
            raise TensorschedError(f"plugin {name!r} is already registered")
        self._factories[name] = factory
        self._points[name] = frozenset(points)

    def unregister(self, name: str) -> None:
        if name not in self._factories:
            raise TensorschedError(f"plugin {name!r} is not registered")
        del self._factories[name]
        del self._points[name]

    def merge(self, other: "Registry") -> None:
        for name in other._factories:
            self.register(name, other._factories[name], other._points[name])

    def plugin_points(self) -> dict[str, frozenset[str]]:
        """Every name -> the extension points it implements (for the config)."""
        return dict(self._points)

    def factory(self, name: str) -> Callable:
        return self._factories[name]

    def __contains__(self, name: str) -> bool:
        return name in self._factories
