"""Coscheduling (out of tree): members wait in Permit until the group's
quorum is reserved, else all are rejected and their reservations released;
QueueSort keeps the group together; PreFilter needs minMember pods and
minResources of free capacity; PostFilter rejects the gang (and backs it
off) when a member fails; PodGroup objects come from the manifests."""

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs
from reference.coscheduling_gap import resource_gap as reference_gap
from support.checks import check

from tensorsched.framework.errors import ConfigError, ManifestError
from tensorsched.framework.parsing.manifests import parse_objects
from tensorsched.generators.clusters import node_dict, pod_dict
from tensorsched.framework.plugins import coscheduling as C
from tensorsched.framework.plugins import in_tree_registry
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.scheduler import Scheduler

CFG = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
       "profiles": [{"schedulerName": "default-scheduler", "plugins": {
           "queueSort": {"enabled": [{"name": "Coscheduling"}],
                         "disabled": [{"name": "PrioritySort"}]},
           "preFilter": {"enabled": [{"name": "Coscheduling"}]},
           "reserve": {"enabled": [{"name": "Coscheduling"}]},
           "permit": {"enabled": [{"name": "Coscheduling"}]}},
           "pluginConfig": [{"name": "Coscheduling",
                             "args": {"permitWaitingTimeSeconds": 10}}]}]}


def _registry():
    """The in-tree plugins plus Coscheduling (an out-of-tree registration)."""
    reg = in_tree_registry()
    C.register(reg)
    return reg


def _member(name, group, created, cpu="1", min_member=None):
    labels = {C.POD_GROUP_LABEL: group}
    if min_member is not None:
        labels[C.MIN_MEMBER_LABEL] = str(min_member)
    return pod_dict(name, cpu=cpu, memory="1Mi", created=created, labels=labels)


def _sched(nodes, groups=()):
    assert "Coscheduling" not in in_tree_registry()          # out of tree
    sched = Scheduler(build_cluster(nodes, CFG, _registry()))
    _ = sched.queue                                           # builds the frameworks
    plugin = next(iter(sched.cluster.frameworks.values())).plugins["Coscheduling"]
    for g in groups:
        plugin.add_pod_group(g)
    return sched, plugin


def _pg(name, min_member, timeout=None):
    spec = {"minMember": min_member}
    if timeout is not None:
        spec["scheduleTimeoutSeconds"] = timeout
    return {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default",
                         "creationTimestamp": "2024-01-01T00:00:00Z"}, "spec": spec}


def test_gang_waits_for_quorum_then_binds_together():
    sched, _ = _sched([node_dict(f"n{i}", cpu="2") for i in range(2)], [_pg("g", 3)])
    ev = []
    sched.subscribe("Bound", ev.append)
    keys = []
    # lone pod created between the members: the group still pops together
    for name, created in (("g0", 0), ("g1", 2), ("g2", 4)):
        sched.add_pod(_member(name, "g", created))
        keys.append(f"default/{name}")
    sched.add_pod(pod_dict("lone", cpu="100m", memory="1Mi", created=1))
    keys.append("default/lone")
    order = []
    for _ in range(2):
        b = sched.schedule_one()
        order.append(b.pod)
        assert b.node is None and "waiting" in b.message
        check(sched, keys)
    assert len(sched.waiting) == 2
    b = sched.schedule_one()                     # the third reaches minMember: all allowed
    order.append(b.pod)
    assert b.node is not None
    check(sched, keys)
    assert not sched.waiting
    assert sorted(e["pod"] for e in ev) == keys[:3]
    assert order == keys[:3]
    assert sched.schedule_one().pod == "default/lone"
    check(sched, keys)


def test_gang_timeout_rejects_all_and_releases():
    sched, _ = _sched([node_dict("n0", cpu="2")], [_pg("g", 3, timeout=5)])
    keys = []
    for i in range(3):
        sched.add_pod(_member(f"g{i}", "g", i))
        keys.append(f"default/g{i}")
    st = sched.cluster.state
    sched.schedule_one()
    sched.schedule_one()
    assert len(sched.waiting) == 2 and st.requested[0, 0] == 2000
    b = sched.schedule_one()                     # no room for the third
    assert b.node is None and "Insufficient cpu" in b.message
    check(sched, keys)
    sched.advance(5)                             # timeout: every member rejected, released
    assert not sched.waiting and not st.pods and st.requested[0, 0] == 0
    check(sched, keys)
    assert all(k in sched.queue for k in keys)
    # room appears: the whole gang binds
    sched.add_node(node_dict("n1", cpu="2"))
    sched.run_until_idle()
    assert all(k in st.pods for k in keys)
    check(sched, keys)


def test_unreserve_of_one_member_rejects_waiting_siblings():
    sched, _plugin = _sched([node_dict("n0", cpu="4")], [_pg("g", 3)])
    for i in range(3):
        sched.add_pod(_member(f"g{i}", "g", i))
    keys = [f"default/g{i}" for i in range(3)]
    sched.schedule_one()
    sched.schedule_one()
    assert len(sched.waiting) == 2
    first = sched.waiting_pods()[0]
    sched.reject(first, "Coscheduling", "test")   # its Unreserve rejects the sibling
    assert not sched.waiting and not sched.cluster.state.pods
    check(sched, keys)


def test_prefilter_needs_min_member_pods_label_min_member():
    sched, _ = _sched([node_dict("n0", cpu="8")])
    sched.add_pod(_member("a", "h", 0, min_member=2))
    b = sched.schedule_one()
    assert b.node is None and "cannot find enough sibling pods" in b.message
    assert sched.queue.infos["default/a"].unschedulable_plugins == {"Coscheduling"}
    sched.add_pod(_member("b", "h", 1, min_member=2))       # an UnscheduledPod/Add event
    sched.run_until_idle()
    st = sched.cluster.state
    assert "default/a" in st.pods and "default/b" in st.pods
    check(sched, ["default/a", "default/b"])


# ------------------------------------------------ PodGroup objects, loaded


def _cfg(post_filter=True, **args):
    """CFG plus Coscheduling at postFilter (after DefaultPreemption) and args."""
    cfg = copy.deepcopy(CFG)
    prof = cfg["profiles"][0]
    if post_filter:
        prof["plugins"]["postFilter"] = {"enabled": [{"name": "Coscheduling"}]}
    prof["pluginConfig"][0]["args"].update(args)
    return cfg


def _built(objects, cfg):
    """A Scheduler on a cluster built from objects (PodGroups included) and
    its Coscheduling plugin; nothing handed over by hand."""
    sched = Scheduler(build_cluster(objects, cfg, _registry()))
    _ = sched.queue
    return sched, next(iter(sched.cluster.frameworks.values())).plugins["Coscheduling"]


def _pg_res(name, min_member, **min_resources):
    pg = _pg(name, min_member)
    pg["spec"]["minResources"] = min_resources
    return pg


def test_pod_groups_loaded_from_manifests_and_handed_to_plugin():
    volcano = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
               "metadata": {"name": "v"}, "spec": {"minMember": 1}}
    objs = [node_dict("n0", cpu="4"), _pg_res("g", 3, cpu="1500m", memory="1Gi"), volcano,
            *(_member(f"g{i}", "g", i) for i in range(3))]
    parsed = parse_objects(objs)
    assert parsed.ignored_kinds == {"PodGroup": 1}            # another API group's PodGroup
    (pg,) = parsed.pod_groups
    assert (pg.full_name, pg.min_member, pg.min_resources, pg.timeout) == \
        ("default/g", 3, {"cpu": 1500, "memory": 2**30}, None)
    sched, plugin = _built(objs, _cfg())
    assert plugin.groups[("default", "g")].min_member == 3
    keys = [f"default/g{i}" for i in range(3)]
    for p in sched.cluster.pending:
        sched.add_pod(p)
    sched.run_until_idle()
    assert all(k in sched.cluster.state.pods for k in keys) and not sched.waiting
    check(sched, keys)


@pytest.mark.parametrize("spec, field, problem", [
    ({"minMember": 0}, "spec.minMember", "must be a positive integer, got 0"),
    ({"minMember": "3"}, "spec.minMember", "must be a positive integer, got '3'"),
    ({}, "spec.minMember", "must be a positive integer, got nothing"),
    ({"minMember": 2, "scheduleTimeoutSeconds": -1}, "spec.scheduleTimeoutSeconds",
     "must be a non-negative integer, got -1"),
    ({"minMember": 2, "minResources": {"cpu": "lots"}}, "spec.minResources.cpu", None),
    ({"minMember": 2, "minResources": [1]}, "spec.minResources", "must be a mapping, got a list"),
])
def test_malformed_pod_group_names_the_field(spec, field, problem):
    obj = _pg("g", 1)
    obj["spec"] = spec
    with pytest.raises(ManifestError) as err:
        parse_objects([node_dict("n0"), obj])
    assert (err.value.obj, err.value.field) == ("PodGroup default/g", field)
    if problem is not None:
        assert str(err.value) == f"PodGroup default/g: {field}: {problem}"


# ------------------------------------------------ PreFilter: minResources
def test_prefilter_min_resources_against_free_capacity():
    """Free cpu summed over nodes: 2 + (2 - 1) = 3 cpu < 4 -> unresolvable
    (no preemption of the low-priority pod); the group's own bound member
    counts as free, so 4 cpu fit once it is there."""
    other = pod_dict("other", cpu="1", memory="1Mi", priority=0, spec={"nodeName": "n1"})
    objs = [node_dict("n0", cpu="2"), node_dict("n1", cpu="2"), other,
            _pg_res("g", 2, cpu="4")]
    sched, plugin = _built(objs, _cfg())
    st = sched.cluster.state
    sched.add_pod(_member("g0", "g", 0, cpu="500m"))
    sched.add_pod(_member("g1", "g", 1, cpu="500m"))
    keys = ["default/other", "default/g0", "default/g1"]
    b = sched.schedule_one()
    assert b.node is None and b.message.startswith(
        "0/2 nodes are available: resource gap: cpu=1000m.")
    assert not sched.evictions and "default/other" in st.pods          # no preemption
    assert sched.queue.infos["default/g0"].unschedulable_plugins == {"Coscheduling"}
    assert ("default", "g") not in plugin.permitted
    check(sched, keys)
    # pods are part of the demand too: minMember pods must have room
    assert plugin.resource_gap(st, C.PodGroup("default", "x", 300, min_resources={})) == \
        {"pods": 300 - 219}
    # a resource no node has: nothing free (a zero demand is met, as upstream)
    assert plugin.resource_gap(st, C.PodGroup("default", "x", 1, min_resources={
        "example.com/foo": 2, "example.com/bar": 0})) == {"example.com/foo": 2}
    # a member bound on n1 in place of "other": its 500m counts as free for the group
    sched.delete_pod("default/other")
    bound = _member("g2", "g", 2, cpu="500m")
    bound["spec"]["nodeName"] = "n1"
    sched.add_pod(bound)
    keys = keys[1:] + ["default/g2"]
    assert plugin.resource_gap(st, plugin.groups[("default", "g")]) == {}
    sched.run_until_idle()
    assert all(k in st.pods for k in keys) and not sched.waiting
    check(sched, keys)


def test_prefilter_min_resources_cached_for_permit_wait():
    """A group that passed the check is not checked again for
    permitWaitingTimeSeconds (upstream's permittedPG)."""
    objs = [node_dict("n0", cpu="4"), _pg_res("g", 2, cpu="3")]
    sched, plugin = _built(objs, _cfg(permitWaitingTimeSeconds=10))
    st = sched.cluster.state
    for i in range(2):
        sched.add_pod(_member(f"g{i}", "g", i))
    keys = ["default/g0", "default/g1"]
    b = sched.schedule_one()                         # g0 passes, waits in Permit
    assert "waiting" in b.message and plugin.permitted[("default", "g")] == 10.0
    sched.add_pod(pod_dict("hog", cpu="2", memory="1Mi", spec={"nodeName": "n0"}))
    # 4 - 2 (hog) = 2 free (+1 for g0, a member) < 3, but the cached pass holds
    b = sched.schedule_one()
    assert b.node == "n0" and not sched.waiting and st.requested[0, 0] == 4000
    check(sched, keys)
    assert plugin.resource_gap(st, plugin.groups[("default", "g")]) == {"cpu": 1000}


# ------------------------------------------------ PostFilter
def test_postfilter_rejects_gang_releases_and_backs_off():
    objs = [node_dict("n0", cpu="2"), _pg("g", 3)]
    sched, plugin = _built(objs, _cfg(podGroupBackoffSeconds=5))
    st = sched.cluster.state
    keys = [f"default/g{i}" for i in range(3)]
    for i in range(3):
        sched.add_pod(_member(f"g{i}", "g", i))
    failed = []
    sched.subscribe("FailedScheduling", failed.append)
    for _ in range(2):
        assert "waiting" in sched.schedule_one().message
        check(sched, keys)
    assert len(sched.waiting) == 2 and st.requested[0, 0] == 2000
    b = sched.schedule_one()                         # g2: no room, gang 2/3 -> all rejected
    assert b.pod == "default/g2" and b.node is None
    assert b.message == (
        "0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, "
        "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming "
        "pod., PodGroup default/g gets rejected due to Pod g2 is unschedulable even after "
        "PostFilter")
    assert not sched.waiting and not st.pods and st.requested[0, 0] == 0    # released
    assert sorted(e["pod"] for e in failed) == keys
    # one waiting member rejected here; its Unreserve rejects the other
    assert {e["message"] for e in failed[:2]} == {
        "optimistic rejection in PostFilter",
        "rejection in Unreserve: a member of pod group default/g was rejected"}
    assert plugin.backed_off[("default", "g")] == 5.0
    check(sched, keys)
    # within the backoff a member fails fast, holding nothing
    sched.advance(1.0)
    b = sched.schedule_one()
    assert b.node is None and "podGroup default/g failed recently" in b.message
    assert not st.pods
    check(sched, keys)
    # room appears after the backoff: the gang binds
    sched.advance(10.0)
    sched.add_node(node_dict("n1", cpu="2"))
    sched.run_until_idle()
    assert all(k in st.pods for k in keys) and not sched.waiting
    check(sched, keys)


def test_postfilter_leaves_gang_within_ten_percent_of_quorum():
    """9 of 10 members reserved (gap 10%): the 10th failing rejects nobody;
    a lone pod gets upstream's "can not find pod group"."""
    objs = [node_dict("n0", cpu="950m"), _pg("g", 10)]
    sched, _ = _built(objs, _cfg(podGroupBackoffSeconds=5))
    keys = [f"default/g{i}" for i in range(10)]
    for i in range(10):
        sched.add_pod(_member(f"g{i}", "g", i, cpu="100m"))
    for _ in range(9):
        sched.schedule_one()
    assert len(sched.waiting) == 9
    b = sched.schedule_one()
    assert b.node is None and "PodGroup" not in b.message
    assert len(sched.waiting) == 9
    check(sched, keys)
    sched.add_pod(pod_dict("lone", cpu="1", memory="1Mi", created=20))
    b = sched.schedule_one()
    assert b.pod == "default/lone" and b.message.endswith(
        "No preemption victims found for incoming pod., can not find pod group")
    check(sched, keys + ["default/lone"])


def test_permit_rejects_a_pod_of_a_missing_group():
    """Labelled with a group that has no PodGroup object (and no min-member
    label): Permit is Unschedulable "PodGroup not found", as upstream; the
    reservation is released and the pod stays pending."""
    nodes = [node_dict("n1", cpu="4")]
    p = pod_dict("orphan", cpu="1")
    p["metadata"]["labels"] = {C.POD_GROUP_LABEL: "nowhere"}
    solo = pod_dict("solo", cpu="1", created=1)
    sched = Scheduler(build_cluster(nodes, CFG, _registry()))
    sched.add_pod(p)
    sched.add_pod(solo)
    out = {b.pod: b for b in sched.run_until_idle()}
    check(sched, ["default/orphan", "default/solo"])
    assert out["default/orphan"].node is None
    assert "PodGroup not found" in out["default/orphan"].message
    assert out["default/solo"].node == "n1"
    assert "default/orphan" not in sched.cluster.state.pods
    # rejected inside the scheduling cycle: it waits in the unschedulable pool
    # (upstream moves the others after requeueing it), it is not retried
    assert sched.queue.infos["default/orphan"].where == "unschedulable"
    assert sched.metrics()["attempts"].get("unschedulable") == 1


# ------------------------------------------------ args: validated, never a spinning loop

ARGS_PATH = "profiles[0].pluginConfig[0].args"


@pytest.mark.parametrize("args, field, text", [
    ({"permitWaitingTimeSeconds": -1}, "permitWaitingTimeSeconds", "greater than or equal to 0"),
    ({"permitWaitingTimeSeconds": "x"}, "permitWaitingTimeSeconds", "integer"),
    ({"permitWaitingTimeSeconds": 0.5}, "permitWaitingTimeSeconds", "integer"),
    ({"permitWaitingTimeSeconds": True}, "permitWaitingTimeSeconds", "integer"),
    ({"permitWaitingTimeSeconds": 10**30}, "permitWaitingTimeSeconds", "at most"),
    ({"podGroupBackoffSeconds": -5}, "podGroupBackoffSeconds", "greater than or equal to 0"),
    ({"podGroupBackoffSecs": 5}, "podGroupBackoffSecs", "unknown field"),
])
def test_invalid_args_are_refused_with_the_field_path(args, field, text):
    cfg = _cfg(post_filter=False)
    cfg["profiles"][0]["pluginConfig"][0]["args"] = args
    with pytest.raises(ConfigError) as exc:
        build_cluster([node_dict("n0", cpu="4")], cfg, _registry())
    assert exc.value.field == f"{ARGS_PATH}.{field}" and text in exc.value.problem


@pytest.mark.parametrize("value, got", [(1e300, "1e+300"), (10**30, "1e+30"),
                                        (9223372037, "9223372037")])
def test_a_huge_wait_is_shown_readably(value, got):
    cfg = _cfg(post_filter=False)
    cfg["profiles"][0]["pluginConfig"][0]["args"] = {"permitWaitingTimeSeconds": value}
    with pytest.raises(ConfigError) as exc:
        build_cluster([node_dict("n0", cpu="4")], cfg, _registry())
    assert exc.value.problem == f"must be at most 9223372036 seconds, got {got}"


def test_args_not_a_mapping_refused():
    cfg = _cfg(post_filter=False)
    cfg["profiles"][0]["pluginConfig"][0]["args"] = "lots"
    with pytest.raises(ConfigError) as exc:
        build_cluster([node_dict("n0", cpu="4")], cfg, _registry())
    assert exc.value.field == ARGS_PATH


def test_raw_args_given_to_the_plugin_are_checked_too():
    with pytest.raises(ConfigError, match="permitWaitingTimeSeconds"):
        C.Coscheduling({"permitWaitingTimeSeconds": -3})
    assert C.Coscheduling({"permitWaitingTimeSeconds": 7}).permit_timeout == 7.0


@pytest.mark.timeout(30)
@pytest.mark.parametrize("post_filter", [False, True])
def test_zero_wait_means_the_default_and_the_gang_binds(post_filter):
    """permitWaitingTimeSeconds 0 is upstream's "unset" (GetWaitTimeDuration
    falls back to 60s): members wait for their siblings instead of being
    rejected at once over and over until the cycle cap."""
    objs = [node_dict("n0", cpu="4"), _pg("g", 3)] + [_member(f"g{i}", "g", i) for i in range(3)]
    sched, plugin = _built(objs, _cfg(post_filter=post_filter, permitWaitingTimeSeconds=0))
    assert plugin.permit_timeout == C.DEFAULT_PERMIT_WAITING_SECONDS
    for p in sched.cluster.pending:
        sched.add_pod(p)
    sched.run_until_idle(max_cycles=1000)
    st = sched.cluster.state
    assert all(f"default/g{i}" in st.pods for i in range(3)) and not sched.waiting
    assert sched.clock.now() == 0.0


@pytest.mark.timeout(60)
def test_gang_that_can_never_reach_quorum_stops_the_run():
    """Room for two members of a gang of three: kube-scheduler would retry
    forever; the simulated run stops once no pod was bound for the stall
    horizon, with every member's last outcome."""
    cfg = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
           "profiles": [{"schedulerName": "default-scheduler", "plugins": {
               "multiPoint": {"enabled": [{"name": "Coscheduling"}]},
               "queueSort": {"disabled": [{"name": "*"}], "enabled": [{"name": "Coscheduling"}]}}}]}
    group = {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
             "metadata": {"name": "g", "namespace": "default"}, "spec": {"minMember": 3}}
    pods = [pod_dict(f"m{i}", cpu="3", labels={"scheduling.x-k8s.io/pod-group": "g"})
            for i in range(3)]
    sched = Scheduler(build_cluster([node_dict("a", cpu="4"), node_dict("b", cpu="4"), group],
                                    cfg, _registry()))
    outcomes, _ = sched.schedule_pending(pods)
    assert sorted(b.pod for b in outcomes) == ["default/m0", "default/m1", "default/m2"]
    assert all(b.node is None for b in outcomes)
    assert sched.clock.now() <= 2 * sched.stall_horizon()
    assert not sched.cluster.state.pods          # nothing left assumed


@settings(max_examples=40, deadline=None)
@given(hs.lists(hs.tuples(hs.integers(0, 3), hs.sampled_from(["g", "h", None]),
                          hs.sampled_from(["100m", "500m", "1"]), hs.booleans()),
                max_size=14),
       hs.integers(1, 6), hs.sampled_from(["1", "3", "6"]), hs.integers(0, 4))
def test_resource_gap_by_class_equals_the_pod_by_pod_read(pods, min_member, cpu, nominated):
    """Random bound pods of two groups and none on four nodes, some
    removed again (their slots and classes freed), and pods the cycle
    added to the state (``cycle_nominated``): the check's gap equals the
    scalar reference's, which reads every bound pod on its own."""
    objs = [node_dict(f"n{i}", cpu="2") for i in range(4)] + [_pg_res("g", min_member, cpu=cpu)]
    sched, plugin = _built(objs, _cfg())
    st = sched.cluster.state
    for i, (node, group, req, removed) in enumerate(pods):
        obj = pod_dict(f"p{i}", cpu=req, memory="1Mi",
                       labels={C.POD_GROUP_LABEL: group} if group else None,
                       spec={"nodeName": f"n{node}"})
        sched.add_pod(obj)
    for i, (_, _, _, removed) in enumerate(pods):
        if removed:
            sched.delete_pod(f"default/p{i}")
    bound = sorted(st.pods)
    plugin.handle.cycle_nominated = bound[:nominated]
    for pg in (plugin.groups[("default", "g")],
               C.PodGroup("default", "h", min_member, min_resources={"cpu": 2500})):
        assert plugin.resource_gap(st, pg) == reference_gap(plugin, st, pg)
