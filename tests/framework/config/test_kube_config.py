"""KubeSchedulerConfiguration loading: defaults, merging, multiPoint, args, validation."""

from __future__ import annotations

import json

import pytest

from tensorsched.framework.config.kube_config import (
    DEFAULT_PLUGIN_POINTS,
    POINTS,
    PluginRef,
    SchedulerConfig,
    UnknownProfileError,
    load_config,
    profile_to_dict,
)
from tensorsched.framework.config.plugin_args import (
    DefaultPreemptionArgs,
    InterPodAffinityArgs,
    NodeAffinityArgs,
    NodeResourcesBalancedAllocationArgs,
    NodeResourcesFitArgs,
    PodTopologySpreadArgs,
    ResourceSpec,
    ScoringStrategy,
    TopologySpreadConstraint,
    UtilizationShapePoint,
    decode_args,
    default_args,
    register_args_decoder,
)
from tensorsched.framework.errors import ConfigError, TensorschedError

API = "kubescheduler.config.k8s.io/v1"

DEFAULT_FILTERS = (
    "NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity", "NodePorts",
    "NodeResourcesFit", "VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding",
    "VolumeZone", "PodTopologySpread", "InterPodAffinity", "DynamicResources",
)
DEFAULT_PREFILTERS = (
    "NodeAffinity", "NodePorts", "NodeResourcesFit", "VolumeRestrictions", "NodeVolumeLimits",
    "VolumeBinding", "VolumeZone", "PodTopologySpread", "InterPodAffinity", "DynamicResources",
)
DEFAULT_SCORES = (
    ("TaintToleration", 3), ("NodeAffinity", 2), ("NodeResourcesFit", 1), ("VolumeBinding", 1),
    ("PodTopologySpread", 2), ("InterPodAffinity", 2), ("DynamicResources", 1),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
)

# an out-of-tree plugin for tests: filter + score
POINTS_WITH_CUSTOM = {
    **DEFAULT_PLUGIN_POINTS,
    "GpuShare": frozenset({"preFilter", "filter", "score", "reserve"}),
    "OtherSort": frozenset({"queueSort"}),
    "OtherBinder": frozenset({"bind"}),
}


def cfg(*profiles, **top):
    d = {"apiVersion": API, "kind": "KubeSchedulerConfiguration", **top}
    if profiles:
        d["profiles"] = list(profiles)
    return d


def one(plugins=None, plugin_config=None, **extra):
    p = dict(extra)
    if plugins is not None:
        p["plugins"] = plugins
    if plugin_config is not None:
        p["pluginConfig"] = plugin_config
    return load_config(cfg(p), POINTS_WITH_CUSTOM).profiles[0]


def err(source, points=POINTS_WITH_CUSTOM) -> ConfigError:
    with pytest.raises(ConfigError) as ei:
        load_config(source, points)
    return ei.value


def field_of(source, points=POINTS_WITH_CUSTOM) -> str:
    return err(source, points).field


# --------------------------------------------------------------------------
# defaults


def test_defaults_none_source():
    c = load_config(None, DEFAULT_PLUGIN_POINTS)
    assert isinstance(c, SchedulerConfig)
    assert len(c.profiles) == 1
    p = c.profiles[0]
    assert p.scheduler_name == "default-scheduler"
    assert p.percentage_of_nodes_to_score is None
    assert c.percentage_of_nodes_to_score == 0
    assert (c.pod_initial_backoff_seconds, c.pod_max_backoff_seconds, c.parallelism) == (1, 10, 16)
    assert set(p.plugins) == set(POINTS)


def test_default_filter_order():
    p = load_config(None, DEFAULT_PLUGIN_POINTS).profiles[0]
    assert p.names("filter") == DEFAULT_FILTERS
    assert p.names("preFilter") == DEFAULT_PREFILTERS
    assert all(r.weight == 0 for r in p.plugins["filter"])


def test_default_score_order_and_weights():
    p = load_config(None, DEFAULT_PLUGIN_POINTS).profiles[0]
    assert tuple((r.name, r.weight) for r in p.plugins["score"]) == DEFAULT_SCORES
    assert p.plugins["score"][0] == PluginRef("TaintToleration", 3)


def test_default_other_points():
    p = load_config(None, DEFAULT_PLUGIN_POINTS).profiles[0]
    assert p.names("preEnqueue") == ("SchedulingGates", "DynamicResources")
    assert p.names("queueSort") == ("PrioritySort",)
    # DynamicResources first: an idle claim is freed before a pod is evicted
    assert p.names("postFilter") == ("DynamicResources", "DefaultPreemption")
    assert p.names("preScore") == (
        "TaintToleration", "NodeAffinity", "NodeResourcesFit", "VolumeBinding",
        "PodTopologySpread", "InterPodAffinity", "NodeResourcesBalancedAllocation",
    )
    assert p.names("reserve") == ("VolumeBinding", "DynamicResources")
    assert p.names("preBind") == ("VolumeBinding", "DynamicResources")
    assert p.names("bind") == ("DefaultBinder",)
    assert p.names("permit") == ()
    assert p.names("postBind") == ()


def test_default_args():
    p = load_config(None, DEFAULT_PLUGIN_POINTS).profiles[0]
    assert p.args["NodeResourcesFit"] == NodeResourcesFitArgs()
    fit = p.args["NodeResourcesFit"]
    assert fit.scoring_strategy.type == "LeastAllocated"
    assert fit.scoring_strategy.resources == (ResourceSpec("cpu", 1), ResourceSpec("memory", 1))
    assert p.args["NodeResourcesBalancedAllocation"].resources == (ResourceSpec("cpu", 1), ResourceSpec("memory", 1))
    assert p.args["DefaultPreemption"] == DefaultPreemptionArgs(10, 100)
    assert p.args["InterPodAffinity"] == InterPodAffinityArgs(1, False)
    assert p.args["PodTopologySpread"] == PodTopologySpreadArgs((), "System")
    assert p.args["NodeAffinity"] == NodeAffinityArgs(None)
    assert "TaintToleration" not in p.args


def test_empty_dict_profile_and_empty_profiles_equal_defaults():
    d = load_config(None, DEFAULT_PLUGIN_POINTS)
    assert load_config(cfg(), DEFAULT_PLUGIN_POINTS) == d
    assert load_config(cfg({}), DEFAULT_PLUGIN_POINTS) == d
    assert load_config(cfg({"plugins": {}}), DEFAULT_PLUGIN_POINTS) == d


def test_default_plugin_points_cover_upstream_defaults():
    assert set(DEFAULT_PLUGIN_POINTS) == {
        "SchedulingGates", "PrioritySort", "NodeUnschedulable", "NodeName", "TaintToleration",
        "NodeAffinity", "NodePorts", "NodeResourcesFit", "VolumeRestrictions", "NodeVolumeLimits",
        "VolumeBinding", "VolumeZone", "PodTopologySpread", "InterPodAffinity", "DefaultPreemption",
        "NodeResourcesBalancedAllocation", "ImageLocality", "DefaultBinder", "DynamicResources",
    }
    assert DEFAULT_PLUGIN_POINTS["NodeResourcesFit"] == {"preFilter", "filter", "preScore", "score"}
    assert DEFAULT_PLUGIN_POINTS["TaintToleration"] == {"filter", "preScore", "score"}
    assert DEFAULT_PLUGIN_POINTS["DefaultBinder"] == {"bind"}
    assert DEFAULT_PLUGIN_POINTS["PrioritySort"] == {"queueSort"}
    for pts in DEFAULT_PLUGIN_POINTS.values():
        assert pts <= set(POINTS)


def test_load_yaml_and_json_files(tmp_path):
    y = tmp_path / "c.yaml"
    y.write_text(
        f"""apiVersion: {API}
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: bin-packing
    plugins:
      score:
        disabled:
          - name: NodeResourcesBalancedAllocation
    pluginConfig:
      - name: NodeResourcesFit
        args:
          scoringStrategy:
            type: MostAllocated
"""
    )
    c = load_config(str(y), DEFAULT_PLUGIN_POINTS)
    p = c.profile_for("bin-packing")
    assert "NodeResourcesBalancedAllocation" not in p.names("score")
    assert p.args["NodeResourcesFit"].scoring_strategy.type == "MostAllocated"
    j = tmp_path / "c.json"
    j.write_text(json.dumps(cfg({"schedulerName": "x"})))
    assert load_config(j, DEFAULT_PLUGIN_POINTS).profiles[0].scheduler_name == "x"


def test_yaml_duplicate_key_rejected(tmp_path):
    y = tmp_path / "c.yaml"
    y.write_text(f"apiVersion: {API}\nkind: KubeSchedulerConfiguration\nparallelism: 2\nparallelism: 3\n")
    e = err(str(y))
    assert "duplicate field 'parallelism'" in e.problem


def test_missing_file_is_config_error(tmp_path):
    e = err(str(tmp_path / "nope.yaml"))
    assert "cannot read" in e.problem


# --------------------------------------------------------------------------
# merging: disable, re-enable, custom, multiPoint


def test_disable_one_filter():
    p = one({"filter": {"disabled": [{"name": "NodePorts"}]}})
    assert "NodePorts" not in p.names("filter")
    assert "NodePorts" in p.names("preFilter")  # only disabled at filter


def test_disable_star_at_score_keeps_explicit():
    p = one({"score": {"disabled": [{"name": "*"}], "enabled": [{"name": "ImageLocality", "weight": 5}]}})
    assert p.plugins["score"] == (PluginRef("ImageLocality", 5),)
    assert p.names("filter") == DEFAULT_FILTERS


def test_multipoint_disable_star_then_enable():
    p = one(
        {
            "multiPoint": {
                "disabled": [{"name": "*"}],
                "enabled": [{"name": "PrioritySort"}, {"name": "DefaultBinder"}, {"name": "NodeResourcesFit", "weight": 4}],
            }
        }
    )
    assert p.names("filter") == ("NodeResourcesFit",)
    assert p.names("preFilter") == ("NodeResourcesFit",)
    assert p.plugins["score"] == (PluginRef("NodeResourcesFit", 4),)
    assert p.names("postFilter") == ()
    assert p.names("preEnqueue") == ()
    assert set(p.args) == {"NodeResourcesFit"}


def test_multipoint_expands_custom_plugin_at_every_point_it_implements():
    p = one({"multiPoint": {"enabled": [{"name": "GpuShare", "weight": 7}]}})
    assert p.names("preFilter")[-1] == "GpuShare"
    assert p.names("filter") == DEFAULT_FILTERS + ("GpuShare",)
    assert p.plugins["score"][-1] == PluginRef("GpuShare", 7)
    assert p.names("reserve") == ("VolumeBinding", "DynamicResources", "GpuShare")
    assert "GpuShare" not in p.names("bind")


def test_multipoint_reenable_default_replaces_in_place_with_new_weight():
    # upstream: the custom entry replaces the default one, weight included
    p = one({"multiPoint": {"enabled": [{"name": "TaintToleration"}, {"name": "NodeAffinity", "weight": 9}]}})
    scores = tuple((r.name, r.weight) for r in p.plugins["score"])
    assert scores[0] == ("TaintToleration", 1)  # unset weight -> 1, not the default 3
    assert scores[1] == ("NodeAffinity", 9)
    assert p.names("filter") == DEFAULT_FILTERS  # order unchanged


def test_multipoint_disabled_then_enabled_moves_to_end():
    p = one({"multiPoint": {"disabled": [{"name": "NodeAffinity"}], "enabled": [{"name": "NodeAffinity", "weight": 2}]}})
    assert p.names("filter")[-1] == "NodeAffinity"
    assert p.names("filter").count("NodeAffinity") == 1


def test_multipoint_disabled_plugin_dropped_everywhere():
    p = one({"multiPoint": {"disabled": [{"name": "VolumeBinding"}]}})
    for point in POINTS:
        assert "VolumeBinding" not in p.names(point)
    assert "VolumeBinding" not in p.args


def test_per_point_override_runs_first():
    # a plugin listed at a point overrides its multiPoint entry: overrides first
    p = one({"filter": {"enabled": [{"name": "InterPodAffinity"}]}})
    assert p.names("filter")[0] == "InterPodAffinity"
    assert p.names("filter")[1:] == tuple(n for n in DEFAULT_FILTERS if n != "InterPodAffinity")


def test_per_point_custom_plugin_appended_after_multipoint():
    p = one({"filter": {"enabled": [{"name": "GpuShare"}]}})
    assert p.names("filter") == DEFAULT_FILTERS + ("GpuShare",)
    assert "GpuShare" not in p.names("score")  # per-point only


def test_override_order_and_custom_order():
    p = one({"filter": {"enabled": [{"name": "GpuShare"}, {"name": "NodePorts"}, {"name": "NodeName"}]}})
    rest = tuple(n for n in DEFAULT_FILTERS if n not in ("NodePorts", "NodeName"))
    assert p.names("filter") == ("NodePorts", "NodeName") + rest + ("GpuShare",)


def test_reorder_by_disabling_star_at_point():
    p = one({"filter": {"disabled": [{"name": "*"}], "enabled": [{"name": "NodeResourcesFit"}, {"name": "NodeName"}]}})
    assert p.names("filter") == ("NodeResourcesFit", "NodeName")


def test_score_weight_per_point_takes_precedence():
    p = one({"score": {"enabled": [{"name": "ImageLocality", "weight": 10}]}})
    w = p.score_weights()
    assert w["ImageLocality"] == 10
    assert p.names("score")[0] == "ImageLocality"  # override first
    assert w["TaintToleration"] == 3


def test_score_weight_zero_becomes_one():
    p = one({"score": {"enabled": [{"name": "TaintToleration", "weight": 0}]}})
    assert p.score_weights()["TaintToleration"] == 1
    p = one({"multiPoint": {"enabled": [{"name": "GpuShare"}]}})
    assert p.score_weights()["GpuShare"] == 1


def test_weight_ignored_outside_score():
    p = one({"filter": {"enabled": [{"name": "GpuShare", "weight": 5}]}})
    assert p.plugins["filter"][-1] == PluginRef("GpuShare", 0)


def test_replace_queue_sort_and_binder():
    p = one(
        {
            "queueSort": {"disabled": [{"name": "*"}], "enabled": [{"name": "OtherSort"}]},
            "bind": {"disabled": [{"name": "DefaultBinder"}], "enabled": [{"name": "OtherBinder"}]},
        }
    )
    assert p.names("queueSort") == ("OtherSort",)
    assert p.names("bind") == ("OtherBinder",)


def test_two_binders_allowed():
    p = one({"bind": {"enabled": [{"name": "OtherBinder"}]}})
    assert p.names("bind") == ("DefaultBinder", "OtherBinder")


def test_disabling_unknown_plugin_is_accepted():
    # as upstream (a removed plugin may still be named in disabled)
    p = one({"filter": {"disabled": [{"name": "EBSLimits"}]}})
    assert p.names("filter") == DEFAULT_FILTERS


# --------------------------------------------------------------------------
# args


def test_args_decoding_node_resources_fit_rtcr():
    p = one(
        plugin_config=[
            {
                "name": "NodeResourcesFit",
                "args": {
                    "apiVersion": API,
                    "kind": "NodeResourcesFitArgs",
                    "ignoredResources": ["example.com/foo"],
                    "ignoredResourceGroups": ["example.org"],
                    "scoringStrategy": {
                        "type": "RequestedToCapacityRatio",
                        "resources": [{"name": "cpu", "weight": 3}, {"name": "nvidia.com/gpu"}],
                        "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]},
                    },
                },
            }
        ]
    )
    a = p.args["NodeResourcesFit"]
    assert a.ignored_resources == ("example.com/foo",)
    assert a.ignored_resource_groups == ("example.org",)
    s = a.scoring_strategy
    assert s.type == "RequestedToCapacityRatio"
    assert s.resources == (ResourceSpec("cpu", 3), ResourceSpec("nvidia.com/gpu", 1))
    assert s.requested_to_capacity_ratio.shape == (UtilizationShapePoint(0, 0), UtilizationShapePoint(100, 10))


def test_args_resource_weight_zero_defaults_to_one():
    # upstream v1 defaulting: weight unset or 0 -> 1
    a = decode_args("NodeResourcesFit", {"scoringStrategy": {"type": "LeastAllocated", "resources": [{"name": "cpu", "weight": 0}]}}, "x")
    assert a.scoring_strategy.resources == (ResourceSpec("cpu", 1),)


def test_args_empty_resources_get_defaults():
    a = decode_args("NodeResourcesFit", {"scoringStrategy": {"type": "MostAllocated"}}, "x")
    assert a.scoring_strategy == ScoringStrategy("MostAllocated")


def test_args_for_other_plugins():
    p = one(
        plugin_config=[
            {"name": "DefaultPreemption", "args": {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 5}},
            {"name": "InterPodAffinity", "args": {"hardPodAffinityWeight": 0, "ignorePreferredTermsOfExistingPods": True}},
            {
                "name": "PodTopologySpread",
                "args": {
                    "defaultingType": "List",
                    "defaultConstraints": [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule"}],
                },
            },
            {
                "name": "NodeAffinity",
                "args": {
                    "addedAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [{"matchExpressions": [{"key": "pool", "operator": "In", "values": ["a"]}]}]
                        },
                        "preferredDuringSchedulingIgnoredDuringExecution": [
                            {"weight": 10, "preference": {"matchExpressions": [{"key": "ssd", "operator": "Exists"}]}}
                        ],
                    }
                },
            },
            {"name": "NodeResourcesBalancedAllocation", "args": {"resources": [{"name": "nvidia.com/gpu", "weight": 1}]}},
        ]
    )
    assert p.args["DefaultPreemption"] == DefaultPreemptionArgs(0, 5)
    assert p.args["InterPodAffinity"] == InterPodAffinityArgs(0, True)
    assert p.args["PodTopologySpread"] == PodTopologySpreadArgs(
        (TopologySpreadConstraint(1, "topology.kubernetes.io/zone", "DoNotSchedule"),), "List"
    )
    req = p.args["NodeAffinity"].added_affinity["requiredDuringSchedulingIgnoredDuringExecution"]
    assert req["nodeSelectorTerms"][0]["matchExpressions"][0]["values"] == ["a"]
    assert p.args["NodeResourcesBalancedAllocation"] == NodeResourcesBalancedAllocationArgs((ResourceSpec("nvidia.com/gpu", 1),))


def test_args_for_plugin_not_enabled_are_validated_but_unused():
    p = one(
        {"multiPoint": {"disabled": [{"name": "DefaultPreemption"}]}},
        [{"name": "DefaultPreemption", "args": {"minCandidateNodesAbsolute": 7}}],
    )
    assert "DefaultPreemption" not in p.args
    e = err(cfg({"plugins": {"multiPoint": {"disabled": [{"name": "DefaultPreemption"}]}},
                 "pluginConfig": [{"name": "DefaultPreemption", "args": {"minCandidateNodesAbsolute": -1}}]}))
    assert e.field == "profiles[0].pluginConfig[0].args.minCandidateNodesAbsolute"


def test_out_of_tree_args_kept_raw_and_registered_decoder():
    p = one({"multiPoint": {"enabled": [{"name": "GpuShare"}]}}, [{"name": "GpuShare", "args": {"anything": [1, 2]}}])
    assert p.args["GpuShare"] == {"anything": [1, 2]}

    def decode(raw, path):
        raw = dict(raw or {})
        n = raw.pop("slots", 4)
        if raw:
            raise ConfigError(f"{path}.{next(iter(raw))}", "unknown field")
        if n <= 0:
            raise ConfigError(f"{path}.slots", "must be > 0")
        return ("GpuTopologyArgs", n)

    register_args_decoder("GpuTopology", decode)
    pts = {**POINTS_WITH_CUSTOM, "GpuTopology": frozenset({"filter"})}
    c = load_config(cfg({"plugins": {"filter": {"enabled": [{"name": "GpuTopology"}]}}}), pts)
    assert c.profiles[0].args["GpuTopology"] == ("GpuTopologyArgs", 4)
    assert default_args("GpuTopology") == ("GpuTopologyArgs", 4)
    bad = cfg({"plugins": {"filter": {"enabled": [{"name": "GpuTopology"}]}},
               "pluginConfig": [{"name": "GpuTopology", "args": {"slots": 0}}]})
    assert field_of(bad, pts) == "profiles[0].pluginConfig[0].args.slots"
    with pytest.raises(ValueError):
        register_args_decoder("NodeResourcesFit", decode)


def test_default_args_function():
    assert default_args("NodeResourcesFit") == NodeResourcesFitArgs()
    assert default_args("TaintToleration") is None
    assert default_args("SomethingElse") is None


def test_profile_to_dict_is_json():
    p = one({"multiPoint": {"enabled": [{"name": "GpuShare", "weight": 2}]}})
    d = profile_to_dict(p)
    s = json.loads(json.dumps(d))
    assert s["schedulerName"] == "default-scheduler"
    assert s["plugins"]["score"][0] == {"name": "TaintToleration", "weight": 3}
    assert [x["name"] for x in s["plugins"]["filter"]] == list(DEFAULT_FILTERS) + ["GpuShare"]
    fit = next(x for x in s["pluginConfig"] if x["name"] == "NodeResourcesFit")
    assert fit["args"]["scoringStrategy"]["type"] == "LeastAllocated"


# --------------------------------------------------------------------------
# several profiles


def test_several_profiles():
    c = load_config(
        cfg(
            {"schedulerName": "default-scheduler"},
            {
                "schedulerName": "spread",
                "percentageOfNodesToScore": 50,
                "plugins": {"score": {"disabled": [{"name": "*"}], "enabled": [{"name": "PodTopologySpread", "weight": 1}]}},
            },
            percentageOfNodesToScore=30,
            podInitialBackoffSeconds=2,
            podMaxBackoffSeconds=20,
            parallelism=4,
        ),
        DEFAULT_PLUGIN_POINTS,
    )
    assert [p.scheduler_name for p in c.profiles] == ["default-scheduler", "spread"]
    assert c.percentage_of_nodes_to_score == 30
    assert (c.pod_initial_backoff_seconds, c.pod_max_backoff_seconds, c.parallelism) == (2, 20, 4)
    s = c.profile_for("spread")
    assert s.percentage_of_nodes_to_score == 50
    assert s.score_weights() == {"PodTopologySpread": 1}
    assert c.profile_for("default-scheduler").score_weights()["TaintToleration"] == 3


def test_profile_for_unknown_name():
    c = load_config(None, DEFAULT_PLUGIN_POINTS)
    with pytest.raises(UnknownProfileError) as ei:
        c.profile_for("nope")
    assert isinstance(ei.value, TensorschedError) and isinstance(ei.value, KeyError)
    assert "nope" in str(ei.value)


def test_several_profiles_need_names():
    assert field_of(cfg({"schedulerName": "a"}, {})) == "profiles[1].schedulerName"


def test_profiles_same_explicit_queue_sort_ok():
    qs = {"queueSort": {"disabled": [{"name": "*"}], "enabled": [{"name": "OtherSort"}]}}
    c = load_config(cfg({"schedulerName": "a", "plugins": qs}, {"schedulerName": "b", "plugins": qs}), POINTS_WITH_CUSTOM)
    assert [p.names("queueSort") for p in c.profiles] == [("OtherSort",), ("OtherSort",)]


# --------------------------------------------------------------------------
# invalid configurations: each names its field


@pytest.mark.parametrize(
    "source, field",
    [
        ({"apiVersion": "kubescheduler.config.k8s.io/v1beta3", "kind": "KubeSchedulerConfiguration"}, "apiVersion"),
        ({"kind": "KubeSchedulerConfiguration"}, "apiVersion"),
        ({"apiVersion": API, "kind": "Pod"}, "kind"),
        (cfg(foo=1), "foo"),
        (cfg({"schedulerName": "a", "bogus": True}), "profiles[0].bogus"),
        (cfg({"plugins": {"filters": {}}}), "profiles[0].plugins.filters"),
        (cfg({"plugins": {"filter": {"enable": []}}}), "profiles[0].plugins.filter.enable"),
        (cfg({"plugins": {"filter": {"enabled": [{"name": "NodePorts", "wieght": 1}]}}}), "profiles[0].plugins.filter.enabled[0].wieght"),
        (cfg({"pluginConfig": [{"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated", "extra": 1}}}]}),
         "profiles[0].pluginConfig[0].args.scoringStrategy.extra"),
        (cfg({"pluginConfig": [{"name": "InterPodAffinity", "args": {"hardPodAffinityWeigth": 1}}]}),
         "profiles[0].pluginConfig[0].args.hardPodAffinityWeigth"),
    ],
)
def test_bad_version_kind_and_unknown_fields(source, field):
    assert field_of(source) == field


def test_unknown_plugin():
    assert field_of(cfg({"plugins": {"score": {"enabled": [{"name": "ImageLocality"}, {"name": "Nope"}]}}})) == (
        "profiles[0].plugins.score.enabled[1].name"
    )
    assert field_of(cfg({"plugins": {"multiPoint": {"enabled": [{"name": "Nope"}]}}})) == (
        "profiles[0].plugins.multiPoint.enabled[0].name"
    )
    e = err(cfg({"plugins": {"filter": {"enabled": [{"name": "EBSLimits"}]}}}))
    assert e.field == "profiles[0].plugins.filter.enabled[0].name" and "removed" in e.problem


def test_negative_weight():
    assert field_of(cfg({"plugins": {"score": {"enabled": [{"name": "ImageLocality", "weight": 2}, {"name": "NodeAffinity", "weight": -1}]}}})) == (
        "profiles[0].plugins.score.enabled[1].weight"
    )
    assert field_of(cfg({"plugins": {"multiPoint": {"enabled": [{"name": "GpuShare", "weight": -3}]}}})) == (
        "profiles[0].plugins.multiPoint.enabled[0].weight"
    )


def test_weight_not_an_int32():
    assert field_of(cfg({"plugins": {"score": {"enabled": [{"name": "ImageLocality", "weight": "5"}]}}})) == (
        "profiles[0].plugins.score.enabled[0].weight"
    )
    assert field_of(cfg({"plugins": {"score": {"enabled": [{"name": "ImageLocality", "weight": 2**31}]}}})) == (
        "profiles[0].plugins.score.enabled[0].weight"
    )


def test_plugin_at_point_it_does_not_implement():
    e = err(cfg({"plugins": {"score": {"enabled": [{"name": "NodePorts"}]}}}))
    assert e.field == "profiles[0].plugins.score.enabled[0].name"
    assert "does not implement the score" in e.problem


def test_duplicate_plugin_at_point():
    assert field_of(cfg({"plugins": {"filter": {"enabled": [{"name": "GpuShare"}, {"name": "GpuShare"}]}}})) == (
        "profiles[0].plugins.filter.enabled[1].name"
    )


def test_duplicate_plugin_in_multipoint():
    assert field_of(cfg({"plugins": {"multiPoint": {"enabled": [{"name": "GpuShare"}, {"name": "GpuShare"}]}}})).startswith(
        "profiles[0].plugins.multiPoint.enabled["
    )


def test_no_queue_sort_after_disabling():
    e = err(cfg({"plugins": {"queueSort": {"disabled": [{"name": "*"}]}}}))
    assert e.field == "profiles[0].plugins.queueSort"
    assert field_of(cfg({"plugins": {"multiPoint": {"disabled": [{"name": "PrioritySort"}]}}})) == "profiles[0].plugins.queueSort"


def test_two_queue_sorts():
    assert field_of(cfg({"plugins": {"queueSort": {"enabled": [{"name": "OtherSort"}]}}})) == "profiles[0].plugins.queueSort"


def test_no_bind_plugin():
    e = err(cfg({"plugins": {"bind": {"disabled": [{"name": "DefaultBinder"}]}}}))
    assert e.field == "profiles[0].plugins.bind"
    assert field_of(cfg({"plugins": {"multiPoint": {"disabled": [{"name": "*"}], "enabled": [{"name": "PrioritySort"}]}}})) == (
        "profiles[0].plugins.bind"
    )


def test_duplicate_scheduler_name():
    assert field_of(cfg({"schedulerName": "a"}, {"schedulerName": "b"}, {"schedulerName": "a"})) == "profiles[2].schedulerName"


def test_queue_sort_must_match_across_profiles():
    qs = {"queueSort": {"disabled": [{"name": "*"}], "enabled": [{"name": "OtherSort"}]}}
    assert field_of(cfg({"schedulerName": "a"}, {"schedulerName": "b", "plugins": qs})) == "profiles[1].plugins.queueSort"


def test_duplicate_plugin_config():
    e = err(cfg({"pluginConfig": [{"name": "NodeResourcesFit"}, {"name": "InterPodAffinity"}, {"name": "NodeResourcesFit"}]}))
    assert e.field == "profiles[0].pluginConfig[2]"


@pytest.mark.parametrize(
    "top, field",
    [
        ({"percentageOfNodesToScore": 101}, "percentageOfNodesToScore"),
        ({"percentageOfNodesToScore": -1}, "percentageOfNodesToScore"),
        ({"podInitialBackoffSeconds": 0}, "podInitialBackoffSeconds"),
        ({"podInitialBackoffSeconds": 5, "podMaxBackoffSeconds": 4}, "podMaxBackoffSeconds"),
        ({"parallelism": 0}, "parallelism"),
        ({"extenders": [{"urlPrefix": "http://x"}]}, "extenders"),
    ],
)
def test_bad_top_level_values(top, field):
    assert field_of(cfg(**top)) == field


def test_profile_percentage_out_of_range():
    assert field_of(cfg({"percentageOfNodesToScore": 101})) == "profiles[0].percentageOfNodesToScore"


def test_percentage_bounds_ok():
    c = load_config(cfg({"percentageOfNodesToScore": 0}, percentageOfNodesToScore=100), DEFAULT_PLUGIN_POINTS)
    assert c.percentage_of_nodes_to_score == 100 and c.profiles[0].percentage_of_nodes_to_score == 0


def fit_args(strategy):
    return cfg({"pluginConfig": [{"name": "NodeResourcesFit", "args": {"scoringStrategy": strategy}}]})


SS = "profiles[0].pluginConfig[0].args.scoringStrategy"


@pytest.mark.parametrize(
    "strategy, field",
    [
        ({"type": "RequestedToCapacityRatio"}, SS + ".requestedToCapacityRatio"),
        ({"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {"shape": []}}, SS + ".requestedToCapacityRatio.shape"),
        ({"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {"shape": [{"utilization": 50, "score": 1}, {"utilization": 50, "score": 2}]}},
         SS + ".requestedToCapacityRatio.shape[1].utilization"),
        ({"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 11}]}},
         SS + ".requestedToCapacityRatio.shape[0].score"),
        ({"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {"shape": [{"utilization": 101, "score": 1}]}},
         SS + ".requestedToCapacityRatio.shape[0].utilization"),
        ({"type": "MostAllocated", "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 1}]}}, SS + ".requestedToCapacityRatio"),
        ({"type": "LeastAllocated", "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 101}]}, SS + ".resources[1].weight"),
        ({"type": "LeastAllocated", "resources": [{"name": "cpu", "weight": -1}]}, SS + ".resources[0].weight"),
        ({"type": "Balanced"}, SS + ".type"),
        ({"resources": [{"name": "cpu"}]}, SS + ".type"),
        ({"type": "MostAllocated", "resources": [{"weight": 1}]}, SS + ".resources[0].name"),
    ],
)
def test_bad_scoring_strategy(strategy, field):
    assert field_of(fit_args(strategy)) == field


def pc(name, args):
    return cfg({"pluginConfig": [{"name": name, "args": args}]})


A = "profiles[0].pluginConfig[0].args"


@pytest.mark.parametrize(
    "name, args, field",
    [
        ("NodeResourcesFit", {"ignoredResources": ["bad name!"]}, A + ".ignoredResources[0]"),
        ("NodeResourcesFit", {"ignoredResourceGroups": ["example.com/x"]}, A + ".ignoredResourceGroups[0]"),
        ("NodeResourcesFit", {"kind": "InterPodAffinityArgs"}, A + ".kind"),
        ("NodeResourcesBalancedAllocation", {"resources": [{"name": "cpu", "weight": 2}]}, A + ".resources[0].weight"),
        ("NodeResourcesBalancedAllocation", {"resources": [{"name": "cpu"}, {"name": "cpu"}]}, A + ".resources[1].name"),
        ("DefaultPreemption", {"minCandidateNodesPercentage": 101}, A + ".minCandidateNodesPercentage"),
        ("DefaultPreemption", {"minCandidateNodesAbsolute": -1}, A + ".minCandidateNodesAbsolute"),
        ("DefaultPreemption", {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0}, A + ".minCandidateNodesPercentage"),
        ("InterPodAffinity", {"hardPodAffinityWeight": 101}, A + ".hardPodAffinityWeight"),
        ("InterPodAffinity", {"hardPodAffinityWeight": -1}, A + ".hardPodAffinityWeight"),
        ("PodTopologySpread", {"defaultConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]},
         A + ".defaultingType"),
        ("PodTopologySpread", {"defaultingType": "Sometimes"}, A + ".defaultingType"),
        # a value that is no string is refused (it read as System: any falsy value did)
        ("PodTopologySpread", {"defaultingType": 0}, A + ".defaultingType"),
        ("PodTopologySpread", {"defaultingType": False}, A + ".defaultingType"),
        ("PodTopologySpread", {"defaultingType": []}, A + ".defaultingType"),
        ("PodTopologySpread", {"defaultingType": {}}, A + ".defaultingType"),
        ("PodTopologySpread", {"defaultingType": "List", "defaultConstraints": [{"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]},
         A + ".defaultConstraints[0].maxSkew"),
        ("PodTopologySpread", {"defaultingType": "List", "defaultConstraints": [{"maxSkew": 1, "whenUnsatisfiable": "DoNotSchedule"}]},
         A + ".defaultConstraints[0].topologyKey"),
        ("PodTopologySpread", {"defaultingType": "List", "defaultConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "Maybe"}]},
         A + ".defaultConstraints[0].whenUnsatisfiable"),
        ("PodTopologySpread", {"defaultingType": "List", "defaultConstraints": [
            {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"a": "b"}}}]},
         A + ".defaultConstraints[0].labelSelector"),
        ("PodTopologySpread", {"defaultingType": "List", "defaultConstraints": [
            {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"},
            {"maxSkew": 2, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]},
         A + ".defaultConstraints[1]"),
        ("NodeAffinity", {"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}},
         A + ".addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"),
        ("NodeAffinity", {"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "a", "operator": "Near", "values": ["x"]}]}]}}},
         A + ".addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator"),
        ("NodeAffinity", {"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "a", "operator": "In"}]}]}}},
         A + ".addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values"),
        ("NodeAffinity", {"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["x"]}]}]}}},
         A + ".addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values[0]"),
        ("NodeAffinity", {"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.labels", "operator": "In", "values": ["x"]}]}]}}},
         A + ".addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchFields[0].key"),
        ("NodeAffinity", {"addedAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 0, "preference": {"matchExpressions": [{"key": "a", "operator": "Exists"}]}}]}},
         A + ".addedAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight"),
        ("NodeAffinity", {"addedAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 101, "preference": {}}]}},
         A + ".addedAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight"),
        ("NodeAffinity", {"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]}]}}},
         A + ".addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values"),
        ("NodeAffinity", {"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchLabels": {}}]}}},
         A + ".addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchLabels"),
        ("VolumeBinding", {"bindTimeoutSeconds": -1}, A + ".bindTimeoutSeconds"),
    ],
)
def test_bad_plugin_args(name, args, field):
    assert field_of(pc(name, args)) == field


def test_plugin_config_for_removed_plugin():
    assert field_of(pc("EBSLimits", {})) == "profiles[0].pluginConfig[0]"


def test_error_message_contains_field():
    e = err(cfg(percentageOfNodesToScore=101))
    assert str(e).startswith("percentageOfNodesToScore: ")
