"""Names, namespaces, labels and int32 fields are refused at load as the API
server refuses them (ValidateObjectMeta, ValidateLabels, the PodSpec's
affinity and spread rules, the PDB's IntOrString), naming the file, the
object and the field; pods that repeat a template are checked alike."""

import copy
import re
import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tensorsched.framework.errors import ManifestError
from tensorsched.framework.parsing.manifests import load_objects, parse_objects, parse_pod
from tensorsched.framework.parsing.meta import (
    DNS1123_SUBDOMAIN_FMT,
    DNS1123_SUBDOMAIN_RE,
    NameRules,
    dns1035_label_errors,
    name_errors,
)
from tensorsched.framework.parsing.pod_templates import PodTemplates

INT32_MAX = 2**31 - 1

NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "labels": {"zone": "a"}},
        "status": {"allocatable": {"cpu": "4"}}}
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "shop"},
       "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}]}}
SUBDOMAIN = "a lowercase RFC 1123 subdomain must consist of"
LABEL = "a lowercase RFC 1123 label must consist of"


def refused(obj) -> ManifestError:
    with pytest.raises(ManifestError) as info:
        parse_objects([obj])
    return info.value


def with_meta(obj, **meta):
    out = copy.deepcopy(obj)
    out["metadata"].update(meta)
    return out


@pytest.mark.parametrize("obj, field, words", [
    (with_meta(NODE, name="Node_1"), "metadata.name", ['Invalid value: "Node_1"', SUBDOMAIN]),
    (with_meta(NODE, name="n" * 254), "metadata.name", ["must be no more than 253 characters"]),
    (with_meta(NODE, name="n1."), "metadata.name", [SUBDOMAIN]),
    (with_meta(POD, name="web_0"), "metadata.name", [SUBDOMAIN]),
    (with_meta(POD, namespace="Shop"), "metadata.namespace", ['Invalid value: "Shop"', LABEL]),
    (with_meta(POD, namespace="a.b"), "metadata.namespace", [LABEL]),
    ({"kind": "Namespace", "metadata": {"name": "team.a"}}, "metadata.name", [LABEL]),
    ({"kind": "Service", "metadata": {"name": "9web"}}, "metadata.name",
     ["a DNS-1035 label must consist of", "start with an alphabetic character"]),
    ({"kind": "PriorityClass", "metadata": {"name": "High"}, "value": 1}, "metadata.name",
     [SUBDOMAIN]),
    (with_meta(NODE, labels={"zone": "a", "bad key": "x"}), "metadata.labels",
     ['Invalid value: "bad key"', "name part must consist of"]),
    (with_meta(NODE, labels={"Example.com/zone": "a"}), "metadata.labels",
     ["prefix part " + SUBDOMAIN]),
    (with_meta(NODE, labels={"k" * 64: "a"}), "metadata.labels",
     ["name part must be no more than 63 characters"]),
    (with_meta(NODE, labels={"zone": "a b"}), 'metadata.labels.zone',
     ['Invalid value: "a b"', "a valid label must be an empty string or consist of"]),
    (with_meta(POD, labels={"app": "w" * 64}), "metadata.labels.app",
     ["must be no more than 63 characters"]),
])
def test_names_namespaces_and_labels_are_refused(obj, field, words):
    err = refused(obj)
    assert err.field == field, str(err)
    for w in words:
        assert w in err.problem, str(err)


def test_valid_names_and_labels_load():
    ok = [with_meta(NODE, name="ip-10-0-0-1.eu-west-1.compute.internal",
                    labels={"kubernetes.io/hostname": "ip-10-0-0-1", "node.kubernetes.io/x": "",
                            "A_b.c-D": "Z_9.x-Y"}),
          with_meta(POD, name="web-6d4cf56db6-t9w4n.x", namespace="kube-system",
                    labels={"app.kubernetes.io/name": "web"}),
          {"kind": "Namespace", "metadata": {"name": "a" * 63}},
          {"kind": "Service", "metadata": {"name": "web-1"}}]
    out = parse_objects(ok)
    assert len(out.nodes) == len(out.pods) == len(out.namespaces) == len(out.services) == 1


def test_name_rules_per_kind():
    assert name_errors("Pod", "a.b") == [] and name_errors("Namespace", "a.b") != []
    assert name_errors("Service", "a-b") == [] and dns1035_label_errors("1a") != []
    assert name_errors("NodeResourceTopology", "gpu-1.x") == []   # custom resources: subdomains


def test_a_bad_name_in_a_file_names_the_file_and_document(tmp_path):
    f = tmp_path / "nodes.yaml"
    f.write_text(textwrap.dedent("""\
        kind: Node
        metadata: {name: ok}
        ---
        kind: Node
        metadata: {name: Worker_2}
    """))
    with pytest.raises(ManifestError) as info:
        parse_objects(load_objects(f))
    assert str(info.value).startswith(f"{f}#1: Node Worker_2: metadata.name: Invalid value:")


def spec_pod(**spec):
    out = copy.deepcopy(POD)
    out["spec"].update(spec)
    return out


def spread(**over):
    c = {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
         "labelSelector": {"matchLabels": {"app": "web"}}}
    c.update(over)
    return c


def anti(**over):
    t = {"topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "web"}}}
    t.update(over)
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [t]}}


@pytest.mark.parametrize("spec, field, words", [
    ({"nodeSelector": {"disk type": "ssd"}}, "spec.nodeSelector", ['Invalid value: "disk type"']),
    ({"nodeSelector": {"disk": "ssd!"}}, "spec.nodeSelector.disk", ['Invalid value: "ssd!"']),
    # int32 fields: past the type's range refused, never saturated or wrapped
    ({"topologySpreadConstraints": [spread(maxSkew=2**31)]},
     "spec.topologySpreadConstraints[0].maxSkew",
     [f"must be <= {INT32_MAX} (an int32), got 2147483648"]),
    ({"topologySpreadConstraints": [spread(maxSkew=2**64 + 1)]},
     "spec.topologySpreadConstraints[0].maxSkew", ["an int32"]),
    ({"topologySpreadConstraints": [spread(minDomains=2**31)]},
     "spec.topologySpreadConstraints[0].minDomains", ["an int32"]),
    ({"topologySpreadConstraints": [spread(minDomains=0)]},
     "spec.topologySpreadConstraints[0].minDomains", [">= 1"]),
    ({"topologySpreadConstraints": [spread(minDomains=2, whenUnsatisfiable="ScheduleAnyway")]},
     "spec.topologySpreadConstraints[0].minDomains",
     ["can only use minDomains if whenUnsatisfiable=DoNotSchedule"]),
    ({"topologySpreadConstraints": [spread(topologyKey="my zone")]},
     "spec.topologySpreadConstraints[0].topologyKey", ['Invalid value: "my zone"']),
    ({"topologySpreadConstraints": [spread(matchLabelKeys=["app", "bad/key/x"])]},
     "spec.topologySpreadConstraints[0].matchLabelKeys[1]", ['Invalid value: "bad/key/x"']),
    ({"topologySpreadConstraints": [spread(), spread(maxSkew=2)]},
     "spec.topologySpreadConstraints[1]",
     ["Duplicate value: {zone, DoNotSchedule} (also spec.topologySpreadConstraints[0])"]),
    ({"affinity": anti(topologyKey="-zone")},
     "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey",
     ['Invalid value: "-zone"']),
    ({"affinity": anti(namespaces=["shop", "Shop_2"])},
     "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"
     ".namespaces[1]",
     ['Invalid value: "Shop_2"', LABEL]),
    ({"affinity": anti(matchLabelKeys=["a b"])},
     "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"
     ".matchLabelKeys[0]", ['Invalid value: "a b"']),
    ({"tolerations": [{"key": "k", "operator": "Exists", "effect": "NoExecute",
                       "tolerationSeconds": 2**63}]},
     "spec.tolerations[0].tolerationSeconds", ["must be in"]),
])
def test_pod_spec_fields_are_refused(spec, field, words):
    err = refused(spec_pod(**spec))
    assert (err.obj, err.field) == ("Pod shop/web", field), str(err)
    for w in words:
        assert w in err.problem, str(err)


def test_in_range_spec_fields_load():
    rec = parse_pod(spec_pod(
        nodeSelector={"example.com/disk": "ssd", "tier": ""},
        topologySpreadConstraints=[spread(maxSkew=INT32_MAX, minDomains=INT32_MAX),
                                   spread(whenUnsatisfiable="ScheduleAnyway")],
        tolerations=[{"key": "k", "operator": "Exists", "effect": "NoExecute",
                      "tolerationSeconds": -(2**63)}],
        affinity=anti(namespaces=["shop"], matchLabelKeys=["pod-template-hash"])))
    assert rec.topology_spread[0]["maxSkew"] == INT32_MAX


def pdb(**spec):
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": "web", "namespace": "shop"},
            "spec": {"selector": {"matchLabels": {"app": "web"}}, **spec}}


@pytest.mark.parametrize("obj, field, words", [
    (pdb(minAvailable=2**31), "spec.minAvailable", ["an int32"]),
    (pdb(maxUnavailable=2**40), "spec.maxUnavailable", ["an int32"]),
    (pdb(minAvailable="101%"), "spec.minAvailable", ["must not be greater than 100%"]),
    (pdb(maxUnavailable="1000%"), "spec.maxUnavailable", ["must not be greater than 100%"]),
    ({**pdb(minAvailable=1), "status": {"disruptionsAllowed": 2**31}},
     "status.disruptionsAllowed", ["an int32"]),
])
def test_pdb_int_or_percent_fields_are_refused(obj, field, words):
    err = refused(obj)
    assert (err.obj, err.field) == ("PodDisruptionBudget shop/web", field), str(err)
    for w in words:
        assert w in err.problem, str(err)


def test_pdb_bounds_load():
    second = {**pdb(maxUnavailable=INT32_MAX), "metadata": {"name": "b", "namespace": "shop"}}
    out = parse_objects([pdb(minAvailable="100%"), second])
    assert [p.min_available for p in out.pdbs] == ["100%", None]


@pytest.mark.parametrize("obj, field", [
    ({"kind": "Service", "metadata": {"name": "web"}, "spec": {"selector": {"app": "a b"}}},
     "spec.selector.app"),
    ({"kind": "ReplicationController", "metadata": {"name": "web"},
      "spec": {"selector": {"bad key": "x"}}}, "spec.selector"),
    ({"kind": "ReplicationController", "metadata": {"name": "web"},
      "spec": {"template": {"metadata": {"labels": {"app": "-x"}}}}},
     "spec.template.metadata.labels.app"),
])
def test_workload_selector_maps_are_labels(obj, field):
    err = refused(obj)
    assert err.field == field and "Invalid value" in err.problem, str(err)


def repeats(names):
    """Pods of one template (a plain repeat after the first: no status)."""
    out = []
    for n in names:
        p = copy.deepcopy(POD)
        p["metadata"]["name"] = n
        out.append(p)
    return out


@pytest.mark.parametrize("bad", ["Web-2", "web_2", "w" * 254, "web-2-"])
def test_a_template_repeat_with_a_bad_name_is_refused_as_parse_pod_refuses_it(bad):
    pods = repeats(["web-0", "web-1", bad, "web-3"])
    with pytest.raises(ManifestError) as want:
        parse_pod(pods[2])
    for parse in (lambda: PodTemplates(parse_pod).parse_columns(pods),
                  lambda: parse_objects(pods)):
        with pytest.raises(ManifestError) as got:
            parse()
        assert str(got.value) == str(want.value)
    # a repeat with a status takes the other branch: checked there too
    pods[2]["status"] = {"phase": "Pending"}
    with pytest.raises(ManifestError) as got:
        PodTemplates(parse_pod).parse_columns(pods)
    assert str(got.value) == str(want.value)


def test_template_repeats_with_valid_names_still_share_their_template():
    pods = repeats([f"web-{i}" for i in range(50)])
    templates = PodTemplates(parse_pod)
    cols = templates.parse_columns(pods)
    assert cols.keys == [f"shop/web-{i}" for i in range(50)] and len(cols.classes) == 1


@settings(max_examples=2000, deadline=None)
@given(st.text("ab09-._A", max_size=10))
def test_the_subdomain_match_is_upstreams_regex(name):
    # the capture-free form matched on each pod's name takes what upstream's takes
    assert (DNS1123_SUBDOMAIN_RE.fullmatch(name) is None) == (
        re.fullmatch(DNS1123_SUBDOMAIN_FMT, name) is None)


def priority_class(name, value, default=False):
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": name}, "value": value, "globalDefault": default}


@pytest.mark.parametrize("obj, field, words", [
    (priority_class("gold", 1_000_000_001), "value",
     "maximum allowed value of a user defined priority is 1000000000, got 1000000001"),
    (priority_class("gold", 2**31 - 1), "value", "maximum allowed value"),
    (priority_class("system-gold", 5), "metadata.name",
     "'system-gold' is not a known system priority class"),
    (priority_class("system-node-critical", 1000), "metadata.name",
     "'system-node-critical' must have value 2000001000"),
    (priority_class("system-cluster-critical", 2_000_000_000, True), "metadata.name",
     "not be the global default"),
])
def test_priority_class_values_are_refused_as_the_api_server_does(obj, field, words):
    err = refused(obj)
    assert err.field == field and words in err.problem, str(err)


def test_system_and_user_priority_classes_load():
    out = parse_objects([priority_class("system-node-critical", 2_000_001_000),
                         priority_class("system-cluster-critical", 2_000_000_000),
                         priority_class("gold", 1_000_000_000), priority_class("low", -(2**31))])
    assert [p.value for p in out.priority_classes] == [2_000_001_000, 2_000_000_000,
                                                        1_000_000_000, -(2**31)]


def tainted(*taints):
    out = copy.deepcopy(NODE)
    out["spec"] = {"taints": list(taints)}
    return out


@pytest.mark.parametrize("obj, field, words", [
    (tainted({"key": "gpu type", "effect": "NoSchedule"}), "spec.taints[0].key",
     'Invalid value: "gpu type"'),
    (tainted({"key": "gpu", "value": "a100 x8", "effect": "NoSchedule"}), "spec.taints[0].value",
     'Invalid value: "a100 x8"'),
    (tainted({"key": "gpu", "effect": "NoSchedule"},
             {"key": "gpu", "value": "x", "effect": "NoSchedule"}),
     "spec.taints[1]", "taints must be unique by key and effect pair (gpu:NoSchedule also "
     "spec.taints[0])"),
    (spec_pod(tolerations=[{"key": "gpu/x/y", "operator": "Exists"}]), "spec.tolerations[0].key",
     'Invalid value: "gpu/x/y"'),
    (spec_pod(tolerations=[{"key": "gpu", "value": "a b"}]), "spec.tolerations[0].value",
     'Invalid value: "a b"'),
    (spec_pod(schedulingGates=[{"name": "example.com/wait"}, {"name": "wait for it"}]),
     "spec.schedulingGates[1].name", 'Invalid value: "wait for it"'),
    (spec_pod(schedulingGates=[{"name": "wait"}, {"name": "wait"}]),
     "spec.schedulingGates[1].name", "Duplicate value: 'wait'"),
])
def test_taints_tolerations_and_gates_are_refused(obj, field, words):
    err = refused(obj)
    assert err.field == field and words in err.problem, str(err)


def test_taints_unique_by_key_and_effect_load():
    out = parse_objects([tainted({"key": "gpu", "effect": "NoSchedule"},
                                 {"key": "gpu", "value": "x", "effect": "NoExecute"})])
    assert [t.effect for t in out.nodes[0].taints] == ["NoSchedule", "NoExecute"]
    pod = parse_pod(spec_pod(tolerations=[{"key": "gpu", "value": "a100"},
                                          {"operator": "Exists"}],
                             schedulingGates=[{"name": "example.com/wait"}]))
    assert pod.scheduling_gates == ["example.com/wait"]


@pytest.mark.parametrize("spec, field, words", [
    ({"containers": [{"name": "Main"}]}, "spec.containers[0].name", 'Invalid value: "Main"'),
    ({"containers": [{"name": "a.b"}]}, "spec.containers[0].name", LABEL),
    ({"containers": [{"name": "app"}, {"name": "app"}]}, "spec.containers[1].name",
     "Duplicate value: 'app' (also spec.containers[0].name)"),
    ({"containers": [{"name": "app"}], "initContainers": [{"name": "app"}]},
     "spec.initContainers[0].name", "Duplicate value: 'app' (also spec.containers[0].name)"),
])
def test_container_names_are_dns_labels_unique_in_the_pod(spec, field, words):
    err = refused(spec_pod(**spec))
    assert err.field == field and words in err.problem, str(err)


def required_terms(*terms):
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": list(terms)}}}


REQ = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"


@pytest.mark.parametrize("terms, field, words", [
    ((), f"{REQ}.nodeSelectorTerms", "must have at least one node selector term"),
    (({"matchExpressions": [{"key": "zone", "operator": "In", "values": []}]},),
     f"{REQ}.nodeSelectorTerms[0].matchExpressions[0].values",
     "must be specified when `operator` is 'In' or 'NotIn'"),
    (({"matchExpressions": [{"key": "x", "operator": "Exists", "values": ["v"]}]},),
     f"{REQ}.nodeSelectorTerms[0].matchExpressions[0].values", "may not be specified"),
    (({"matchExpressions": [{"key": "cores", "operator": "Lt", "values": ["1", "2"]}]},),
     f"{REQ}.nodeSelectorTerms[0].matchExpressions[0].values", "single value"),
    (({}, {"matchExpressions": [{"key": "Bad Key/", "operator": "Exists"}]}),
     f"{REQ}.nodeSelectorTerms[1].matchExpressions[0].key", 'Invalid value: "Bad Key/"'),
    (({"matchFields": [{"key": "metadata.labels", "operator": "In", "values": ["n1"]}]},),
     f"{REQ}.nodeSelectorTerms[0].matchFields[0].key", "not a valid field selector key"),
    (({"matchFields": [{"key": "metadata.name", "operator": "Exists"}]},),
     f"{REQ}.nodeSelectorTerms[0].matchFields[0].operator", "not a valid selector operator"),
    (({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["a", "b"]}]},),
     f"{REQ}.nodeSelectorTerms[0].matchFields[0].values", "must be only one value"),
    (({"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["N1"]}]},),
     f"{REQ}.nodeSelectorTerms[0].matchFields[0].values[0]", SUBDOMAIN),
])
def test_node_selector_terms_are_refused_as_the_api_server_does(terms, field, words):
    err = refused(spec_pod(affinity=required_terms(*terms)))
    assert err.field == field and words in err.problem, str(err)


def test_preferred_terms_are_checked_alike():
    pref = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 1, "preference": {"matchExpressions": [{"key": "z", "operator": "NotIn"}]}}]}}
    err = refused(spec_pod(affinity=pref))
    assert err.field == ("spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuring"
                         "Execution[0].preference.matchExpressions[0].values"), str(err)


def test_name_rules_off_let_any_name_through_and_nothing_else(monkeypatch):
    # (the golden cases' harness: upstream's unit tests name objects freely)
    monkeypatch.setattr(NameRules, "enforced", False)
    out = parse_objects([with_meta(NODE, name="nodeA"), with_meta(POD, name="p_with_x")])
    assert [n.name for n in out.nodes] == ["nodeA"] and out.pods[0].name == "p_with_x"
    assert refused(with_meta(NODE, name="nodeB", labels={"a b": "x"})).field == "metadata.labels"
    assert refused(with_meta(POD, namespace="Shop")).field == "metadata.namespace"
