"""framework/state/derived.py: memos and extensions are kept by declared
``StateKey`` (one object per key), a memo empties when its tag changes,
parts of one key are separate, an extension is built once, and a free
string is refused."""

from __future__ import annotations

import pytest

from tensorsched.framework.errors import StateError
from tensorsched.framework.state.cluster_state import ClusterState
from tensorsched.framework.state.derived import StateKey

A = StateKey("test.a", __name__, "anything")
B = StateKey("test.a", __name__, "another key with the same name")


def test_memo_is_kept_per_tag_and_emptied_when_it_changes():
    d = ClusterState().derived
    m = d.memo(A, tag=1)
    m["x"] = 1
    assert d.memo(A, tag=1) is m
    assert d.memo(A, tag=2) == {}
    assert d.memo(A, tag=2) is not m


def test_keys_compare_by_identity_and_parts_are_separate():
    d = ClusterState().derived
    d.memo(A)["x"] = 1
    assert d.memo(B) == {}                  # same name, another declaration
    d.memo(A, part="p")["y"] = 2
    assert d.memo(A) == {"x": 1} and d.memo(A, part="p") == {"y": 2}
    assert d.memo(A, part="q") == {}


def test_extension_built_once_with_the_state():
    st = ClusterState()
    built = []

    def build(state):
        built.append(state)
        return object()

    assert st.derived.extension_if_any(A) is None
    got = st.derived.extension(A, build)
    assert st.derived.extension(A, build) is got and built == [st]
    assert st.derived.extension_if_any(A) is got
    other = object()
    st.derived.install(A, other)
    assert st.derived.extension(A, build) is other and len(built) == 1


@pytest.mark.parametrize("bad", ["test.a", ("test", "a"), None])
def test_a_key_not_declared_is_refused(bad):
    d = ClusterState().derived
    with pytest.raises(StateError, match="not a StateKey"):
        d.memo(bad)
    with pytest.raises(StateError, match="not a StateKey"):
        d.extension(bad, lambda s: object())
    with pytest.raises(StateError, match="not a StateKey"):
        d.install(bad, object())


def test_every_declared_key_of_the_library_is_unique():
    """Each key the library declares has its own name (so messages and a
    grep tell them apart)."""
    import importlib
    import pkgutil

    import tensorsched.framework as fw
    import tensorsched.topology as topo

    keys = {}
    mods = [*pkgutil.walk_packages(fw.__path__, "tensorsched.framework."),
            *pkgutil.walk_packages(topo.__path__, "tensorsched.topology.")]
    for mod in mods:
        m = importlib.import_module(mod.name)
        for v in vars(m).values():
            if type(v) is StateKey and v.owner == m.__name__:
                assert v.name not in keys, (v, keys.get(v.name))
                keys[v.name] = v
    assert {"pod_count_index", "node_domains", "dra_claims", "volumes", "gpu_table",
            "spread_policy_masks", "volumes.kept"} <= set(keys)
