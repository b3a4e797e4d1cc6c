"""Every registered plugin implements the protocol of each extension point it
is registered for (upstream asserts the same with ``var _ framework.X = &P{}``),
and the capabilities the loop asks for are offered by the plugins that have them."""

from __future__ import annotations

import pytest

from tensorsched.framework.plugins import default_registry
from tensorsched.framework.runtime.plugin import (
    BindPlugin,
    CountProbePlugin,
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
)
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
