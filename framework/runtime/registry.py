"""Plugin registry: name -> (factory, extension points), plus the object
kinds out-of-tree plugin sets read.

A factory is ``factory(args, handle) -> plugin``.  Out-of-tree plugins are
added with ``register``; a duplicate name is an error.  A plugin set that
reads objects the core does not know (NodeResourceTopology) registers the
kind with ``register_kind``: ``build_cluster`` then parses those objects and
hands the records to the kind's ``attach(state, records)``.  A plugin set
whose plugins read asks that nothing else does (GPU asks in pod
annotations) says so with ``register_ask``, so a profile without them can
warn that it does not see those asks (``scheduler.profile_warnings``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from tensorsched.framework.errors import TensorschedError
from tensorsched.framework.parsing.meta import ObjectKind


@dataclass(frozen=True)
class InputAsk:
    """Something a pod may ask for that only ``plugin`` (enabled at
    ``point``) reads: a pod carrying any of ``annotations`` asks it;
    ``what`` words the ask for a warning ("GPUs")."""

    what: str
    plugin: str
    point: str
    annotations: tuple[str, ...]


class Registry:
    def __init__(self) -> None:
        self._factories: dict[str, Callable] = {}
        self._points: dict[str, frozenset[str]] = {}
        self._kinds: dict[str, tuple[ObjectKind, Callable | None]] = {}
        self._asks: list[InputAsk] = []

    def register_ask(self, ask: InputAsk) -> None:
        """Pods may ask ``ask``, which only its plugin reads."""
        if ask.plugin not in self._factories:
            raise TensorschedError(f"input ask of {ask.plugin!r}: the plugin is not registered")
        if ask not in self._asks:
            self._asks.append(ask)

    def asks(self) -> list[InputAsk]:
        """The registered asks, in registration order."""
        return list(self._asks)

    def register_kind(self, kind: ObjectKind, attach: Callable | None = None) -> None:
        """Read objects of ``kind`` with the cluster; ``attach(state,
        records)`` gives their records to a fresh state (before its nodes)."""
        if kind.kind in self._kinds:
            raise TensorschedError(f"object kind {kind.kind!r} is already registered")
        self._kinds[kind.kind] = (kind, attach)

    def object_kinds(self) -> list[ObjectKind]:
        return [k for k, _ in self._kinds.values()]

    def kind_attachers(self) -> list[tuple[str, Callable]]:
        """(kind, attach) of the registered kinds that attach records."""
        return [(k.kind, a) for k, a in self._kinds.values() if a is not None]

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
        for kind, attach in other._kinds.values():
            self.register_kind(kind, attach)
        for ask in other._asks:
            self.register_ask(ask)

    def plugin_points(self) -> dict[str, frozenset[str]]:
        """Every name -> the extension points it implements (for the config)."""
        return dict(self._points)

    def factory(self, name: str) -> Callable:
        return self._factories[name]

    def __contains__(self, name: str) -> bool:
        return name in self._factories
