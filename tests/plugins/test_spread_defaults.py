"""PodTopologySpread's default constraints: the selector deduced from
Services / ReplicationControllers / ReplicaSets / StatefulSets
(``framework/workloads.py``, upstream ``helper.DefaultSelector``), System and
List defaulting in Filter and Score on every backend, against the oracle on
random clusters with Services and controllers, and incremental counts."""

from __future__ import annotations

import copy
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.backends import backend_params
from support.golden import golden_profile_to_config
from support.parity import (
    SETTINGS,
    check_against_oracle,
    cycle_answers,
    same_answers,
    spread_scenarios,
)

from tensorsched.framework.errors import ManifestError
from tensorsched.framework.parsing.manifests import parse_objects, parse_pod
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.explain import explain
from tensorsched.framework.scheduler.scheduler import Scheduler
from tensorsched.framework.state.workload_index import WorkloadIndex

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
SPREAD = "PodTopologySpread"


def _node(name, **labels):
    labels = {HOST: name, **labels}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
            "status": {"allocatable": {"cpu": "8", "memory": "8Gi", "pods": "110"}}}


def _pod(name, labels, node=None, ns="default", owner=None, spread=None):
    p = {"apiVersion": "v1", "kind": "Pod",
         "metadata": {"name": name, "namespace": ns, "labels": dict(labels)},
         "spec": {"containers": [{"name": "c", "image": "pause",
                                  "resources": {"requests": {"cpu": "10m"}}}]}}
    if node:
        p["spec"]["nodeName"] = node
    if owner:
        kind, oname = owner
        api = "v1" if kind == "ReplicationController" else "apps/v1"
        p["metadata"]["ownerReferences"] = [
            {"apiVersion": api, "kind": kind, "name": oname, "uid": f"uid-{oname}",
             "controller": True}]
    if spread:
        p["spec"]["topologySpreadConstraints"] = spread
    return p


def _service(name, selector, ns="default"):
    spec = {} if selector is None else {"selector": selector}
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name, "namespace": ns}, "spec": spec}


def _controller(kind, name, selector, ns="default"):
    api = "v1" if kind == "ReplicationController" else "apps/v1"
    return {"apiVersion": api, "kind": kind, "metadata": {"name": name, "namespace": ns},
            "spec": {"selector": selector}}


def _spread_only(args=None, filters=(SPREAD,)):
    prof = {"filters": list(filters), "scores": {SPREAD: 1}}
    if args is not None:
        prof["args"] = {SPREAD: args}
    return golden_profile_to_config(prof)


LIST_ZONE_HARD = {"defaultingType": "List", "defaultConstraints": [
    {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}]}


def _spread_scores(out):
    return {n: s.get(SPREAD) for n, s in out["scores"].items()}


# ---------------------------------------------------------------------------
# the golden case left out of podtopologyspread_scoring.json


@pytest.mark.parametrize("backend", backend_params())
def test_golden_system_defaulting_nodes_without_zone_pods_match_service(backend):
    """Upstream TestPodTopologySpreadScore, case "system defaulting, nodes
    don't have zone, pods match service"
    (kubernetes pkg/scheduler/framework/plugins/podtopologyspread/scoring_test.go;
    named in ../shared/golden/podtopologyspread_scoring.json "skipped"):
    System defaulting, four nodes with only a hostname label, matching pods
    spread 4/3/2/1, a Service selecting ``foo=""``; the zone constraint does
    not make the zone-less nodes ignored, so the scores are those of the
    hostname constraint alone."""
    nodes = [_node(f"node-{x}") for x in "abcd"]
    pods = [_pod(f"p-{x}{i}", {"foo": ""}, f"node-{x}")
            for x, n in zip("abcd", (4, 3, 2, 1)) for i in range(n)]
    svc = _service("svc", {"foo": ""})
    pod = _pod("p", {"foo": ""})
    out = explain(nodes + pods + [svc], pod, _spread_only({"defaultingType": "System"}, ()),
                  backend=backend)
    assert _spread_scores(out) == {"node-a": 44, "node-b": 66, "node-c": 77, "node-d": 100}
    # Without the Service the selector is empty: no default constraints.
    out = explain(nodes + pods, pod, _spread_only({"defaultingType": "System"}, ()),
                  backend=backend)
    assert set(_spread_scores(out).values()) == {None}


# ---------------------------------------------------------------------------
# behaviour


def _zoned_cluster(zones=3, per_zone=2):
    return [_node(f"n-{z}-{i}", **{ZONE: f"z{z}"}) for z in range(zones)
            for i in range(per_zone)]


@pytest.mark.parametrize("backend", backend_params())
def test_service_selected_pods_spread_by_default(backend):
    """A deployment-like set of identical pods selected by a Service spreads
    evenly over zones and hostnames under the System defaults alone (the
    only score plugin), whatever else runs on the nodes; without the
    Service nothing spreads them by zone (every node ties, and the tie rule
    fills the nodes with the fewest pods first)."""
    nodes = _zoned_cluster()
    pods = [_pod(f"web-{i}", {"app": "web", "pod-template-hash": "abc"}) for i in range(12)]
    others = [_pod(f"batch-{i}", {"app": "batch"}, node=f"n-0-{i % 2}") for i in range(4)]
    cfg = _spread_only(None, ("NodeResourcesFit",))

    def run(objects):
        cluster = build_cluster(objects, cfg)
        out = Scheduler(cluster, backend, 3).run(cluster.pending)
        assert all(b.node for b in out)
        return Counter(b.node for b in out)

    def zones(per_node):
        return sorted(Counter(n.split("-")[1] for n, c in per_node.items()
                              for _ in range(c)).values())

    per_node = run(nodes + others + pods + [_service("web", {"app": "web"})])
    assert sorted(per_node.values()) == [2] * 6
    assert zones(per_node) == [4, 4, 4]
    # No Service: PodTopologySpread Skips; zone z0's nodes already hold two
    # pods each, so the tie rule gives them fewer of the new ones.
    bare = run(nodes + others + pods)
    assert zones(bare) != [4, 4, 4] and bare["n-0-0"] + bare["n-0-1"] < 4


@pytest.mark.parametrize("backend", backend_params())
@pytest.mark.parametrize("owner", ["ReplicaSet", "StatefulSet", "ReplicationController",
                                   "Service"])
def test_list_defaulting_do_not_schedule_filters(backend, owner):
    """List defaulting with a DoNotSchedule default constraint filters: two
    matching pods in zone z0, none elsewhere, maxSkew 1."""
    nodes = _zoned_cluster(2, 1) + [_node("bare")]          # "bare" has no zone
    if owner == "Service":
        objs = [_service("db", {"app": "db"})]
        own = None
    elif owner == "ReplicationController":
        objs = [_controller(owner, "db", {"app": "db"})]
        own = (owner, "db")
    else:
        objs = [_controller(owner, "db", {"matchLabels": {"app": "db"}})]
        own = (owner, "db")
    existing = [_pod(f"db-{i}", {"app": "db"}, "n-0-0", owner=own) for i in range(2)]
    pod = _pod("db-new", {"app": "db"}, owner=own)
    out = explain(nodes + existing + objs, pod, _spread_only(LIST_ZONE_HARD), backend=backend)
    assert out["feasible"] == ["n-1-0"]
    assert out["filter"]["n-0-0"]["plugin"] == SPREAD
    assert out["filter"]["n-0-0"]["code"] == "Unschedulable"
    assert out["filter"]["bare"]["code"] == "UnschedulableAndUnresolvable"
    # Matched by nothing: no default constraints, every node fits.
    lone = _pod("other", {"app": "other"})
    out = explain(nodes + existing + objs, lone, _spread_only(LIST_ZONE_HARD), backend=backend)
    assert sorted(out["feasible"]) == ["bare", "n-0-0", "n-1-0"]


@pytest.mark.parametrize("backend", backend_params())
def test_own_constraints_ignore_defaults(backend):
    """A pod with topologySpreadConstraints of its own never gets defaults,
    even for the other action: its only (soft) constraint leaves Filter
    to nobody, although the List default would reject n-0-0."""
    nodes = _zoned_cluster(2, 1)
    svc = _service("db", {"app": "db"})
    existing = [_pod(f"db-{i}", {"app": "db"}, "n-0-0") for i in range(2)]
    own = [{"maxSkew": 1, "topologyKey": HOST, "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {"matchLabels": {"app": "nothing"}}}]
    pod = _pod("db-new", {"app": "db"}, spread=own)
    out = explain(nodes + existing + [svc], pod, _spread_only(LIST_ZONE_HARD), backend=backend)
    assert sorted(out["feasible"]) == ["n-0-0", "n-1-0"]
    assert _spread_scores(out) == {"n-0-0": 100, "n-1-0": 100}


@pytest.mark.parametrize("backend", backend_params())
def test_pod_matched_by_nothing_gets_no_defaults(backend):
    """Service in another namespace, Service selecting other labels, a
    selector-less Service, a non-controller owner reference, an owner of
    an unsupported apiVersion, a missing ReplicaSet: no default selector."""
    nodes = _zoned_cluster(2, 1)
    objs = [_service("s1", {"app": "db"}, ns="other"), _service("s2", {"app": "web"}),
            _service("s3", None),
            _controller("ReplicaSet", "rs-db", {"matchLabels": {"app": "db"}}, ns="other")]
    existing = [_pod(f"db-{i}", {"app": "db"}, "n-0-0") for i in range(2)]
    pod = _pod("db-new", {"app": "db"}, owner=("ReplicaSet", "rs-db"))
    pod["metadata"]["ownerReferences"] += [
        {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "x", "uid": "u"}]
    bad_api = _pod("db-old", {"app": "db"})
    bad_api["metadata"]["ownerReferences"] = [
        {"apiVersion": "extensions/v1beta1", "kind": "ReplicaSet", "name": "rs-db",
         "uid": "u", "controller": True}]
    for p in (pod, bad_api):
        out = explain(nodes + existing + objs, p, _spread_only(LIST_ZONE_HARD),
                      backend=backend)
        assert sorted(out["feasible"]) == ["n-0-0", "n-1-0"]
        assert set(_spread_scores(out).values()) == {None}


# ---------------------------------------------------------------------------
# DefaultSelector and loading


def _index(objects):
    objs = parse_objects(objects)
    return WorkloadIndex.from_objects(objs)


def test_default_selector_merges_services_and_controller():
    idx = _index([
        _service("a", {"app": "db"}), _service("b", {"tier": "be"}),
        _service("c", {"app": "db", "tier": "fe"}),            # does not match
        _service("d", {}),                                     # matches, adds nothing
        _controller("ReplicaSet", "rs", {"matchLabels": {"hash": "h"}, "matchExpressions": [
            {"key": "env", "operator": "NotIn", "values": ["dev"]}]}),
        _controller("ReplicationController", "rc", {"app": "other"}),
        _controller("StatefulSet", "ss", None),
        _controller("ReplicaSet", "bad", {"matchExpressions": [
            {"key": "env", "operator": "In", "values": []}]}),
    ])
    labels = {"app": "db", "tier": "be", "hash": "h"}
    sel = idx.default_selector(parse_pod(_pod("p", labels, owner=("ReplicaSet", "rs"))))
    assert sel == (("app", "In", ("db",)), ("env", "NotIn", ("dev",)),
                   ("hash", "In", ("h",)), ("tier", "In", ("be",)))
    # A ReplicationController's map is merged over the Services' (its value wins).
    sel = idx.default_selector(parse_pod(_pod("p", labels,
                                              owner=("ReplicationController", "rc"))))
    assert sel == (("app", "In", ("other",)), ("tier", "In", ("be",)))
    # A null selector, or one apimachinery rejects, adds nothing.
    assert idx.default_selector(parse_pod(_pod("p", {"x": "y"}, owner=("StatefulSet", "ss")))) == ()
    assert idx.default_selector(parse_pod(_pod("p", {"x": "y"}, owner=("ReplicaSet", "bad")))) == ()


def test_workload_objects_load_with_field_errors():
    rc = _controller("ReplicationController", "rc", None)
    rc["spec"]["template"] = {"metadata": {"labels": {"app": "x"}}}
    objs = parse_objects([_service("s", {"app": "x"}), rc,
                          _controller("ReplicaSet", "rs", {"matchLabels": {"app": "x"}}),
                          _controller("StatefulSet", "ss", {"matchLabels": {"app": "x"}}),
                          {"apiVersion": "apps/v1", "kind": "Deployment",
                           "metadata": {"name": "d"}}])
    assert [s.selector for s in objs.services] == [{"app": "x"}]
    assert objs.replication_controllers[0].selector == {"app": "x"}   # from the template
    assert objs.replica_sets[0].selector == {"matchLabels": {"app": "x"}}
    assert objs.stateful_sets[0].kind == "StatefulSet"
    assert objs.ignored_kinds == {"Deployment": 1}
    bad = [
        (_service("s", ["app"]), "Service default/s", "spec.selector"),
        (_service("s", {"app": 3}), "Service default/s", "spec.selector.app"),
        (_controller("ReplicationController", "rc", {"a": True}),
         "ReplicationController default/rc", "spec.selector.a"),
        (_controller("ReplicaSet", "rs", {"matchExpressions": [{"key": "a", "operator": "Is"}]}),
         "ReplicaSet default/rs", "spec.selector.matchExpressions[0].operator"),
        (_controller("StatefulSet", "ss", {"matchLabels": "a"}),
         "StatefulSet default/ss", "spec.selector.matchLabels"),
    ]
    for obj, ident, path in bad:
        with pytest.raises(ManifestError) as err:
            parse_objects([obj])
        assert ident in str(err.value) and path in str(err.value), str(err.value)
    with pytest.raises(ManifestError, match="duplicate Service"):
        parse_objects([_service("s", {}), _service("s", {})])
    p = _pod("p", {})
    p["metadata"]["ownerReferences"] = [{"kind": "ReplicaSet", "controller": "yes"}]
    with pytest.raises(ManifestError, match=r"metadata\.ownerReferences\[0\]\.controller"):
        parse_pod(p)


# ---------------------------------------------------------------------------
# oracle parity and incremental counts on random clusters with workloads

APPS = ("a", "b")


@st.composite
def workload_scenarios(draw, min_nodes=2, max_nodes=10):
    """spread_scenarios with no own constraints on the incoming pod, System
    or List defaults, Services and controllers selecting some pods, and the
    bound pods / incoming pod owned by them."""
    objects, pod, profile, seed = draw(spread_scenarios(min_nodes, max_nodes))
    pod = copy.deepcopy(pod)
    pod["spec"].pop("topologySpreadConstraints", None)
    ns = pod["metadata"]["namespace"]
    extra = []
    for i in range(draw(st.integers(0, 3))):
        sel = draw(st.sampled_from((None, {}, {"app": "a"}, {"app": "b"}, {"tier": "x"},
                                    {"app": "a", "tier": "y"})))
        extra.append(_service(f"svc-{i}", sel, draw(st.sampled_from((ns, "default", "other")))))
    owners = []
    for i, kind in enumerate(draw(st.lists(st.sampled_from(
            ("ReplicaSet", "StatefulSet", "ReplicationController")), max_size=2))):
        if kind == "ReplicationController":
            sel = {"app": draw(st.sampled_from(APPS))}
        else:
            sel = draw(st.sampled_from((None, {}, {"matchLabels": {"app": "a"}},
                                        {"matchExpressions": [{"key": "tier",
                                                               "operator": "Exists"}]},
                                        {"matchExpressions": [{"key": "app", "operator": "In",
                                                               "values": []}]})))
        extra.append(_controller(kind, f"ctl-{i}", sel, ns))
        owners.append((kind, f"ctl-{i}"))
    if owners and draw(st.booleans()):
        kind, name = draw(st.sampled_from(owners))
        pod["metadata"]["ownerReferences"] = [
            {"apiVersion": "v1" if kind == "ReplicationController" else "apps/v1",
             "kind": kind, "name": name, "uid": "u", "controller": draw(st.booleans())}]
    if draw(st.booleans()):
        cons = draw(st.lists(st.fixed_dictionaries({
            "maxSkew": st.integers(1, 3),
            "topologyKey": st.sampled_from(("zone", HOST, "rack")),
            "whenUnsatisfiable": st.sampled_from(("DoNotSchedule", "ScheduleAnyway"))}),
            min_size=1, max_size=2, unique_by=lambda c: (c["topologyKey"],
                                                         c["whenUnsatisfiable"])))
        for c in cons:
            if c["whenUnsatisfiable"] == "DoNotSchedule" and draw(st.booleans()):
                c["minDomains"] = draw(st.integers(1, 3))
            if draw(st.booleans()):
                c["nodeTaintsPolicy"] = "Honor"
        args = {"defaultingType": "List", "defaultConstraints": cons}
    else:
        args = {"defaultingType": "System"}
    if profile is None:
        profile = {"filters": ["TaintToleration", SPREAD], "scores": {SPREAD: 1}}
    profile = dict(profile, args=dict(profile.get("args") or {}, **{SPREAD: args}))
    if SPREAD not in profile["filters"]:
        profile["filters"] = list(profile["filters"]) + [SPREAD]
    # System defaults look for topology.kubernetes.io/zone: label some nodes.
    for o in objects:
        if o["kind"] == "Node" and "zone" in o["metadata"]["labels"] and draw(st.booleans()):
            o["metadata"]["labels"][ZONE] = o["metadata"]["labels"]["zone"]
    return objects + extra, pod, profile, seed


@settings(max_examples=150, **SETTINGS)
@given(workload_scenarios())
def test_default_constraints_numpy_and_numba_match_oracle(scenario):
    check_against_oracle(scenario, ("numpy", "numba"))


@pytest.mark.parametrize("backend", [p for p in backend_params() if p.values[0] == "cuda"])
@settings(max_examples=6, **SETTINGS)
@given(workload_scenarios(2, 4))
def test_default_constraints_cudasim_match_oracle(backend, scenario):
    check_against_oracle(scenario, ("numpy", backend))


@settings(max_examples=30, **SETTINGS)
@given(workload_scenarios(), st.lists(st.tuples(st.booleans(), st.integers(0, 50)),
                                      min_size=1, max_size=8),
       st.sampled_from(("numpy", "numba")))
def test_default_constraint_cycles_after_binds_and_deletes_equal_fresh(scenario, ops, backend):
    """Counts under the default selector stay incremental: after binding
    copies of the incoming pod and deleting pods, a cycle answers as on a
    cluster built fresh from the same objects."""
    objects, pod, profile, seed = scenario
    # PodTopologySpread alone: InterPodAffinity's own incremental path is
    # checked by test_incremental_constraints.py.
    profile = dict(profile, filters=[f for f in profile["filters"] if f != "InterPodAffinity"],
                   scores={SPREAD: 1})
    config = golden_profile_to_config(profile)
    others = [o for o in objects if o["kind"] != "Pod"]
    bound = {f'{o["metadata"].get("namespace", "default")}/{o["metadata"]["name"]}': o
             for o in objects if o["kind"] == "Pod"}
    cluster = build_cluster(objects, config)
    state = cluster.state
    rec = parse_pod(pod)
    cycle_answers(cluster, rec, backend, seed)
    names = [state.node_name(int(r)) for r in state.valid_rows()]
    for added, (add, x) in enumerate(ops):
        if add or not state.pods:
            node = names[x % len(names)]
            p = copy.deepcopy(pod)
            p["metadata"]["name"] = f"new-{added}"
            p["spec"]["nodeName"] = node
            r = parse_pod(p)
            state.add_pod(r, node)
            bound[r.key] = p
        else:
            key = sorted(state.pods)[x % len(state.pods)]
            state.remove_pod(key)
            bound.pop(key)
        got = cycle_answers(cluster, rec, backend, seed)
        fresh = build_cluster(others + list(bound.values()), config)
        same_answers(got, cycle_answers(fresh, parse_pod(pod), backend, seed))
