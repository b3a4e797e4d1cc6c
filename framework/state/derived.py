"""Data derived from a ClusterState, kept beside it under declared keys.

Two kinds, both in ``ClusterState.derived`` (a :class:`DerivedData`):

* a *memo*: a dict its owner fills, emptied whenever the tag it is asked
  with differs from the last one (the tag names what the data depends
  on, e.g. ``state.structure_tag()`` for maps from node rows to label
  domains);
* an *extension*: a long-lived object built once by ``build(state)`` that
  follows the state (an index kept in step by the state's listeners, the
  claim state, the GPU table).

Every key is a :class:`StateKey` defined once, as a module constant beside
the code that writes under it, with its owner and what it holds: grep the
constant's name to find the writer and every reader.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, TypeVar

from tensorsched.framework.errors import StateError

T = TypeVar("T")


@dataclass(frozen=True, eq=False)
class StateKey:
    """The name of one memo or extension kept beside a ClusterState.

    ``name``: unique, for messages and debugging; ``owner``: the module
    that writes it (its ``__name__``); ``holds``: what the memo's dict or
    the extension is.  Keys compare by identity (each is one object)."""

    name: str
    owner: str
    holds: str

    def __repr__(self) -> str:
        return f"StateKey({self.name!r}, owner={self.owner})"


def _checked(key) -> StateKey:
    if type(key) is not StateKey:
        raise StateError(f"derived data key {key!r}: not a StateKey (declare the key once, "
                         "beside its owner)")
    return key


class DerivedData:
    """The memos and extensions of one ClusterState, by ``StateKey``."""

    def __init__(self, state) -> None:
        self._state = state
        self._memos: dict = {}          # key or (key, part) -> (tag, dict)
        self._extensions: dict[StateKey, object] = {}

    def memo(self, key: StateKey, tag=None, part=None) -> dict:
        """The memo ``key`` (``part``: one of several the owner keeps under
        one key, e.g. one per plugin instance), a dict emptied whenever
        ``tag`` differs from the last call's."""
        slot = key if part is None else (key, part)
        got = self._memos.get(slot)
        if got is None:
            _checked(key)
        if got is None or got[0] != tag:
            got = (tag, {})
            self._memos[slot] = got
        return got[1]

    def extension(self, key: StateKey, build: Callable[..., T]) -> T:
        """The extension ``key``, built by ``build(state)`` on first use."""
        got = self._extensions.get(key)
        if got is None:
            got = build(self._state)
            self._extensions[_checked(key)] = got
        return got

    def extension_if_any(self, key: StateKey):
        """The extension ``key`` if it was built, else None."""
        return self._extensions.get(key)

    def install(self, key: StateKey, extension: object) -> None:
        """Keep ``extension`` under ``key`` (built by the caller, e.g. from
        loaded objects), replacing any built before."""
        self._extensions[_checked(key)] = extension
