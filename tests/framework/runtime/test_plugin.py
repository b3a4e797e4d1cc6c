"""``runtime.plugin``: every registered plugin implements the protocol of each extension point it
is registered for (upstream asserts the same with ``var _ framework.X = &P{}``),
and the capabilities the loop asks for are offered by the plugins that have them."""

from __future__ import annotations

import pytest

from tensorsched.framework.plugins import default_registry
from tensorsched.framework.runtime.plugin import (
    NORMALIZE_NONE,
    BindPlugin,
    CountProbePlugin,
    CycleContext,
    FilterPlugin,
    FusedFilter,
    FusedScore,
    PermitPlugin,
    PodIndependentWhen,
    PostBindPlugin,
    PostFilterPlugin,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    ScorePlugin,
    sign_value,
)
from tensorsched.framework.runtime.status import Status
from tensorsched.framework.scheduler.cluster import build_cluster

PROTOCOLS = {
    "preEnqueue": (PreEnqueuePlugin,), "queueSort": (QueueSortPlugin,),
    "preFilter": (PreFilterPlugin,), "filter": (FilterPlugin, FusedFilter),
    "postFilter": (PostFilterPlugin,), "preScore": (PreScorePlugin,),
    "score": (ScorePlugin, FusedScore), "reserve": (ReservePlugin,),
    "permit": (PermitPlugin,), "preBind": (PreBindPlugin,), "bind": (BindPlugin,),
    "postBind": (PostBindPlugin,),
}
REGISTRY = default_registry()


def _plugin(name):
    """The plugin as a profile builds it (every point it registers enabled)."""
    points = REGISTRY.plugin_points()[name]
    plugins = {p: {"enabled": [{"name": name}]} for p in points if p != "queueSort"}
    config = {"apiVersion": "kubescheduler.config.k8s.io/v1",
              "kind": "KubeSchedulerConfiguration",
              "profiles": [{"schedulerName": "default-scheduler", "plugins": plugins}]}
    if "queueSort" in points:
        config["profiles"][0]["plugins"]["queueSort"] = {
            "disabled": [{"name": "*"}], "enabled": [{"name": name}]}
    cluster = build_cluster([], config)
    fw = cluster.framework_for(type("P", (), {"scheduler_name": "default-scheduler"}), "numpy")
    return fw.plugins[name], points


@pytest.mark.parametrize("name", sorted(REGISTRY.plugin_points()))
def test_plugin_implements_its_points(name):
    plugin, points = _plugin(name)
    assert plugin.name == name
    for point in points:
        assert isinstance(plugin, PROTOCOLS[point]), f"{name} at {point}"


def test_capabilities_are_offered_by_protocol():
    assert isinstance(_plugin("PodTopologySpread")[0], CountProbePlugin)
    assert isinstance(_plugin("InterPodAffinity")[0], CountProbePlugin)
    assert isinstance(_plugin("GpuShareFit")[0], PodIndependentWhen)
    # a plain filter offers neither
    assert not isinstance(_plugin("NodeResourcesFit")[0], CountProbePlugin)


def test_always_unresolvable_is_declared_by_the_plugins_upstream_marks():
    """Preemption leaves out the nodes these filters reject (upstream's
    UnschedulableAndUnresolvable): the plugins say so, the evaluator reads
    the capability."""
    marked = sorted(n for n in REGISTRY.plugin_points()
                    if getattr(_plugin(n)[0], "always_unresolvable", False))
    assert marked == ["NodeAffinity", "NodeName", "NodeUnschedulable", "TaintToleration"]


# ------------------------------------------------------------- the module's own helpers

def test_sign_value_is_equal_only_for_equal_values():
    assert sign_value(None) == sign_value({}) == sign_value([]) == ""
    a = {"x": [1, 2], "y": "z"}
    assert sign_value(a) == sign_value({"x": [1, 2], "y": "z"})
    assert sign_value(a) != sign_value({"x": [1, 3], "y": "z"})
    hash(sign_value(a))
    # key order may sign apart (a shorter run), never alike for unequal values
    assert sign_value({"a": 1, "b": 2}) != sign_value({"a": 2, "b": 1})


def test_sign_value_falls_back_to_sorted_json_for_what_marshal_refuses():
    class Labels(dict):
        pass

    one, two = Labels(b=1, a=2), Labels(a=2, b=1)
    assert sign_value(one) == sign_value(two) == '{"a": 2, "b": 1}'


def test_fused_bases_sign_nothing_and_the_filter_must_explain():
    with pytest.raises(TypeError):
        FusedFilter()

    class Explains(FusedFilter):
        def explain_reasons(self, ctx, row, bits):
            return Status()

    assert Explains().sign(object()) == ()
    assert (Explains.filter_flag, Explains.always_unresolvable) == (0, False)
    score = FusedScore()
    assert score.sign(object()) == () and score.query_options() == {}
    assert score.normalize == NORMALIZE_NONE and score.score_slot == -1


def test_protocols_are_checked_by_method_names():
    class Gate:
        def pre_enqueue(self, pod):
            return Status()

    class Sorter:
        def less(self, a, b):
            return True

    assert isinstance(Gate(), PreEnqueuePlugin) and not isinstance(Gate(), QueueSortPlugin)
    assert isinstance(Sorter(), QueueSortPlugin) and not isinstance(Sorter(), FilterPlugin)


def test_a_cycle_context_starts_with_its_own_data():
    a = CycleContext(state=None, pod=None, framework=None)
    b = CycleContext(state=None, pod=None, framework=None)
    a.data["P"] = 1
    assert b.data == {} and a.bound_node is None
