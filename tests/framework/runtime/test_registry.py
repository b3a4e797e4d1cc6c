"""``runtime.registry``: plugins, object kinds and input asks registered
once each; a duplicate or a dangling name is a TensorschedError naming it;
``merge`` adds another registry's entries with the same checks."""

from __future__ import annotations

import pytest

from tensorsched.framework.errors import TensorschedError
from tensorsched.framework.parsing.meta import ObjectKind
from tensorsched.framework.runtime.registry import InputAsk, Registry

KIND = ObjectKind("Widget", lambda obj, where=None: obj, lambda r: r["name"], "Widget {}")
OTHER = ObjectKind("Gadget", lambda obj, where=None: obj, lambda r: r["name"], "Gadget {}")


def factory(args, handle):
    return object()


def test_register_and_look_up_plugins():
    r = Registry()
    r.register("A", factory, ["filter", "score", "filter"])
    assert "A" in r and "B" not in r
    assert r.factory("A") is factory
    assert r.plugin_points() == {"A": frozenset({"filter", "score"})}
    r.plugin_points()["A"] = frozenset()                 # a copy: the registry keeps its own
    assert r.plugin_points()["A"] == {"filter", "score"}


def test_duplicates_and_unknown_names_are_refused_by_name():
    r = Registry()
    r.register("A", factory, ["filter"])
    with pytest.raises(TensorschedError, match="plugin 'A' is already registered"):
        r.register("A", factory, ["score"])
    assert r.plugin_points()["A"] == {"filter"}          # unchanged by the refusal
    with pytest.raises(TensorschedError, match="plugin 'B' is not registered"):
        r.unregister("B")
    r.unregister("A")
    assert "A" not in r and r.plugin_points() == {}
    with pytest.raises(KeyError):
        r.factory("A")


def test_object_kinds_and_their_attachers():
    r = Registry()
    attach = lambda state, records: None                 # noqa: E731
    r.register_kind(KIND, attach)
    r.register_kind(OTHER)
    assert r.object_kinds() == [KIND, OTHER]
    assert r.kind_attachers() == [("Widget", attach)]
    with pytest.raises(TensorschedError, match="object kind 'Widget' is already registered"):
        r.register_kind(KIND)


def test_input_asks_need_their_plugin_and_are_kept_once_in_order():
    r = Registry()
    ask = InputAsk("GPUs", "Gpu", "filter", ("example.com/gpu",))
    with pytest.raises(TensorschedError, match="input ask of 'Gpu': the plugin is not registered"):
        r.register_ask(ask)
    r.register("Gpu", factory, ["filter"])
    second = InputAsk("GPU memory", "Gpu", "filter", ("example.com/gpu-mem",))
    r.register_ask(ask)
    r.register_ask(second)
    r.register_ask(ask)
    assert r.asks() == [ask, second]
    r.asks().clear()
    assert len(r.asks()) == 2


def test_merge_adds_everything_and_refuses_a_clash():
    base, extra = Registry(), Registry()
    base.register("A", factory, ["filter"])
    extra.register("B", factory, ["score"])
    extra.register_kind(KIND)
    ask = InputAsk("things", "B", "score", ("x",))
    extra.register_ask(ask)
    base.merge(extra)
    assert set(base.plugin_points()) == {"A", "B"}
    assert base.object_kinds() == [KIND] and base.asks() == [ask]
    clash = Registry()
    clash.register("A", factory, ["bind"])
    with pytest.raises(TensorschedError, match="'A' is already registered"):
        base.merge(clash)
