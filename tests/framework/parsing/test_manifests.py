"""Loading and validating manifests (framework/manifests.py)."""

from __future__ import annotations

import copy
import json
import textwrap

import pytest

from tensorsched.framework.errors import ManifestError
from tensorsched.framework.parsing.manifests import (
    DEFAULT_MEMORY_REQUEST,
    Objects,
    load_objects,
    parse_node,
    parse_objects,
    parse_pdb,
    parse_pod,
    parse_priority_class,
    parse_timestamp,
)
from tensorsched.framework.records.records import HostPort, NodeImage, Taint, Toleration

Mi = 1024 * 1024
Gi = 1024 * Mi


# --------------------------------------------------------------------------
# fixtures (as kubectl prints them, trimmed)

KUBECTL_NODE = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {
        "name": "worker-1",
        "labels": {"kubernetes.io/hostname": "worker-1", "topology.kubernetes.io/zone": "us-east-1a"},
        "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
        "creationTimestamp": "2024-03-01T10:00:00Z",
        "resourceVersion": "123",
        "uid": "4f1c",
    },
    "spec": {
        "podCIDR": "10.244.1.0/24",
        "taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
                   {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute",
                    "timeAdded": "2024-03-01T10:00:00Z"}],
    },
    "status": {
        "capacity": {"cpu": "8", "memory": "32780340Ki", "pods": "110", "nvidia.com/gpu": "4",
                     "ephemeral-storage": "101430960Ki", "hugepages-2Mi": "0"},
        "allocatable": {"cpu": "7910m", "memory": "31629364Ki", "pods": "110", "nvidia.com/gpu": "4",
                        "ephemeral-storage": "93478772582", "hugepages-2Mi": "0"},
        "conditions": [{"type": "Ready", "status": "True"}],
        "images": [{"names": ["registry.k8s.io/pause@sha256:abc", "registry.k8s.io/pause:3.9"],
                    "sizeBytes": 321520}],
        "nodeInfo": {"kubeletVersion": "v1.30.0"},
    },
}

KUBECTL_POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "web-7d4b9c-abcde",
        "namespace": "shop",
        "uid": "8c0e-11",
        "labels": {"app": "web", "pod-template-hash": "7d4b9c"},
        "creationTimestamp": "2024-03-01T10:00:01Z",
        "ownerReferences": [{"kind": "ReplicaSet", "name": "web-7d4b9c", "uid": "x"}],
        "managedFields": [{"manager": "kube-controller-manager", "operation": "Update"}],
    },
    "spec": {
        "containers": [{
            "name": "web",
            "image": "nginx:1.25",
            "imagePullPolicy": "IfNotPresent",
            "ports": [{"containerPort": 80, "hostPort": 8080, "protocol": "TCP"},
                      {"containerPort": 9090, "name": "metrics", "protocol": "TCP"}],
            "resources": {"requests": {"cpu": "250m", "memory": "64Mi"},
                          "limits": {"cpu": "500m", "memory": "128Mi"}},
            "terminationMessagePath": "/dev/termination-log",
            "volumeMounts": [{"mountPath": "/var/run/secrets", "name": "kube-api-access", "readOnly": True}],
        }],
        "dnsPolicy": "ClusterFirst",
        "enableServiceLinks": True,
        "nodeName": "worker-1",
        "preemptionPolicy": "PreemptLowerPriority",
        "priority": 0,
        "restartPolicy": "Always",
        "schedulerName": "default-scheduler",
        "securityContext": {},
        "serviceAccountName": "default",
        "terminationGracePeriodSeconds": 30,
        "tolerations": [
            {"effect": "NoExecute", "key": "node.kubernetes.io/not-ready", "operator": "Exists",
             "tolerationSeconds": 300},
            {"effect": "NoExecute", "key": "node.kubernetes.io/unreachable", "operator": "Exists",
             "tolerationSeconds": 300},
        ],
        "volumes": [{"name": "kube-api-access", "projected": {"sources": []}}],
    },
    "status": {
        "phase": "Running",
        "startTime": "2024-03-01T10:00:02Z",
        "conditions": [{"type": "Ready", "status": "True"}],
        "containerStatuses": [{"name": "web", "ready": True, "restartCount": 0}],
        "qosClass": "Burstable",
    },
}


def pod(name="p", namespace=None, containers=None, init=None, **spec):
    """A small hand-written pod."""
    meta = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    s = {"containers": containers if containers is not None else [{"name": "c", "image": "busybox"}]}
    if init is not None:
        s["initContainers"] = init
    s.update(spec)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": s}


def ctr(name="c", requests=None, limits=None, **extra):
    c = {"name": name, "image": f"img/{name}"}
    res = {}
    if requests is not None:
        res["requests"] = requests
    if limits is not None:
        res["limits"] = limits
    if res:
        c["resources"] = res
    c.update(extra)
    return c


def expect_error(fn, obj, ident, field, *words):
    with pytest.raises(ManifestError) as info:
        fn(obj)
    err = info.value
    assert err.obj == ident, str(err)
    assert err.field == field, str(err)
    text = str(err)
    assert ident in text and field in text
    for w in words:
        assert w in err.problem, f"{w!r} not in {err.problem!r}"
    return err


def mutated(base, path, value):
    """Copy of base with the dotted/indexed path set to value (None deletes)."""
    obj = copy.deepcopy(base)
    parts = []
    for part in path.split("."):
        while "[" in part:
            head, rest = part.split("[", 1)
            if head:
                parts.append(head)
            idx, part = rest.split("]", 1)
            parts.append(int(idx))
        if part:
            parts.append(part)
    cur = obj
    for p in parts[:-1]:
        if isinstance(p, str) and p not in cur:
            cur[p] = {}
        cur = cur[p]
    if value is None:
        del cur[parts[-1]]
    else:
        cur[parts[-1]] = value
    return obj


# --------------------------------------------------------------------------
# load_objects


def test_load_single_yaml(tmp_path):
    f = tmp_path / "node.yaml"
    f.write_text(textwrap.dedent("""\
        apiVersion: v1
        kind: Node
        metadata:
          name: n1
          creationTimestamp: 2024-03-01T10:00:00Z
        status:
          capacity: {cpu: 4, memory: 8Gi}
    """))
    objs = load_objects(f)
    assert len(objs) == 1
    assert objs[0]["metadata"]["name"] == "n1"
    # unquoted timestamps stay strings (parsed to ns by parse_timestamp)
    assert objs[0]["metadata"]["creationTimestamp"] == "2024-03-01T10:00:00Z"
    assert objs[0]["status"]["capacity"]["cpu"] == 4


def test_load_multi_document_yaml_skips_empty_documents(tmp_path):
    f = tmp_path / "all.yml"
    f.write_text(textwrap.dedent("""\
        # leading comment
        ---
        apiVersion: v1
        kind: Node
        metadata: {name: n1}
        ---
        ---
        # only a comment
        ---
        apiVersion: v1
        kind: Pod
        metadata: {name: p1, namespace: ns}
        spec:
          containers: [{name: c, image: busybox}]
        ---
        apiVersion: v1
        kind: Namespace
        metadata: {name: ns}
    """))
    objs = load_objects(str(f))
    assert [o["kind"] for o in objs] == ["Node", "Pod", "Namespace"]


def test_load_kubectl_json_list(tmp_path):
    # what `kubectl get nodes,pods -A -o json` prints
    doc = {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""},
           "items": [KUBECTL_NODE, KUBECTL_POD]}
    f = tmp_path / "cluster.json"
    f.write_text(json.dumps(doc, indent=4))
    objs = load_objects(f)
    assert [o["kind"] for o in objs] == ["Node", "Pod"]
    parsed = parse_objects(objs)
    assert [n.name for n in parsed.nodes] == ["worker-1"]
    assert [p.key for p in parsed.pods] == ["shop/web-7d4b9c-abcde"]


def test_load_kubectl_yaml_list(tmp_path):
    # what `kubectl get pods -o yaml` prints: a List with items
    f = tmp_path / "pods.yaml"
    f.write_text(textwrap.dedent("""\
        apiVersion: v1
        items:
        - apiVersion: v1
          kind: Pod
          metadata:
            name: a
            namespace: default
            creationTimestamp: "2024-03-01T10:00:00Z"
          spec:
            containers:
            - name: c
              image: busybox
              resources:
                requests:
                  cpu: 100m
                  memory: "128974848"
        - apiVersion: v1
          kind: Pod
          metadata: {name: b, namespace: default}
          spec:
            containers: [{name: c, image: busybox}]
        kind: List
        metadata:
          resourceVersion: ""
    """))
    objs = load_objects(f)
    assert [o["metadata"]["name"] for o in objs] == ["a", "b"]
    a = parse_pod(objs[0])
    assert a.requests == {"cpu": 100, "memory": 128974848}


def test_load_typed_list_items_without_kind(tmp_path):
    # the API server's PodList (curl /api/v1/pods) leaves the items' kind out
    f = tmp_path / "podlist.json"
    f.write_text(json.dumps({"kind": "PodList", "apiVersion": "v1", "metadata": {},
                             "items": [{"metadata": {"name": "x"}, "spec": {"containers": []}}]}))
    objs = load_objects(f)
    assert objs[0]["kind"] == "Pod"
    assert parse_pod(objs[0]).name == "x"


def test_load_empty_list(tmp_path):
    f = tmp_path / "empty.yaml"
    f.write_text("apiVersion: v1\nkind: List\nitems: []\n")
    assert load_objects(f) == []


def test_load_directory_recursive_sorted(tmp_path):
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "deep").mkdir(parents=True)
    (tmp_path / "b" / "n2.yaml").write_text("kind: Node\nmetadata: {name: n2}\n")
    (tmp_path / "a" / "deep" / "n1.yml").write_text("kind: Node\nmetadata: {name: n1}\n")
    (tmp_path / "a" / "n0.json").write_text('{"kind": "Node", "metadata": {"name": "n0"}}')
    (tmp_path / "z.yaml").write_text("kind: Node\nmetadata: {name: n3}\n")
    (tmp_path / "README.md").write_text("not yaml: [")
    (tmp_path / "notes.txt").write_text("{{{")
    objs = load_objects(tmp_path)
    # a/deep/n1.yml < a/n0.json < b/n2.yaml < z.yaml
    assert [o["metadata"]["name"] for o in objs] == ["n1", "n0", "n2", "n3"]


def test_load_list_of_paths(tmp_path):
    (tmp_path / "one.yaml").write_text("kind: Node\nmetadata: {name: one}\n")
    d = tmp_path / "dir"
    d.mkdir()
    (d / "two.yaml").write_text("kind: Node\nmetadata: {name: two}\n")
    objs = load_objects([tmp_path / "one.yaml", str(d)])
    assert [o["metadata"]["name"] for o in objs] == ["one", "two"]


def test_load_errors_name_file_and_document(tmp_path):
    f = tmp_path / "bad.yaml"
    f.write_text("kind: Node\nmetadata: {name: ok}\n---\nkind: Node\nmetadata: {name: [unclosed\n")
    with pytest.raises(ManifestError) as info:
        load_objects(f)
    assert info.value.obj == f"{f}#1"
    assert "invalid YAML" in info.value.problem

    f = tmp_path / "scalar.yaml"
    f.write_text("kind: Node\nmetadata: {name: ok}\n---\njust a string\n")
    with pytest.raises(ManifestError) as info:
        load_objects(f)
    assert info.value.obj == f"{f}#1"
    assert "mapping" in info.value.problem and "a string" in info.value.problem

    f = tmp_path / "list.yaml"
    f.write_text("- kind: Node\n")
    with pytest.raises(ManifestError, match="mapping"):
        load_objects(f)

    f = tmp_path / "nokind.yaml"
    f.write_text("---\n---\napiVersion: v1\nmetadata: {name: x}\n")
    with pytest.raises(ManifestError) as info:
        load_objects(f)
    assert info.value.obj == f"{f}#1"  # doc 0 is the empty one between the two ---
    assert info.value.field == "kind"

    f = tmp_path / "bad.json"
    f.write_text('{"kind": "Node",')
    with pytest.raises(ManifestError) as info:
        load_objects(f)
    assert info.value.obj == f"{f}#0"
    assert "invalid JSON" in info.value.problem

    f = tmp_path / "items.json"
    f.write_text(json.dumps({"kind": "List", "items": [{"kind": "Node"}, 7]}))
    with pytest.raises(ManifestError) as info:
        load_objects(f)
    assert info.value.field == "items[1]"

    with pytest.raises(ManifestError, match="no such file"):
        load_objects(tmp_path / "missing.yaml")


def test_load_rejects_python_tags(tmp_path):
    f = tmp_path / "evil.yaml"
    f.write_text("kind: !!python/object/apply:os.system ['true']\n")
    with pytest.raises(ManifestError, match="invalid YAML"):
        load_objects(f)


# --------------------------------------------------------------------------
# timestamps


@pytest.mark.parametrize(
    "text, ns",
    [
        ("1970-01-01T00:00:00Z", 0),
        ("1970-01-01T00:00:01Z", 10**9),
        ("1970-01-01T00:00:01.5Z", 1_500_000_000),
        ("1970-01-01T00:00:00.000000001Z", 1),
        ("2024-03-01T10:00:00Z", 1709287200 * 10**9),
        ("2024-03-01T11:00:00+01:00", 1709287200 * 10**9),
        ("2024-03-01T05:30:00-04:30", 1709287200 * 10**9),
        ("2024-03-01T10:00:00.123456789Z", 1709287200 * 10**9 + 123456789),
        ("1969-12-31T23:59:59Z", -(10**9)),
    ],
)
def test_parse_timestamp(text, ns):
    assert parse_timestamp(text) == ns


@pytest.mark.parametrize(
    "bad",
    ["yesterday", "2024-03-01", "2024-03-01 10:00:00Z", "2024-13-01T00:00:00Z",
     "2024-02-30T00:00:00Z", "2024-03-01T10:00:00", "2024-03-01T10:00:00.Z",
     "2024-03-01T10:00:00.1234567891Z", "2024-03-01T25:00:00Z", 1709287200],
)
def test_parse_timestamp_invalid(bad):
    with pytest.raises(ValueError):
        parse_timestamp(bad)


# --------------------------------------------------------------------------
# Node


def test_parse_kubectl_node():
    n = parse_node(KUBECTL_NODE)
    assert n.name == "worker-1"
    assert n.labels["topology.kubernetes.io/zone"] == "us-east-1a"
    assert n.unschedulable is False
    assert n.taints == [Taint("dedicated", "gpu", "NoSchedule"),
                        Taint("node.kubernetes.io/unreachable", "", "NoExecute")]
    assert n.allocatable == {"cpu": 7910, "memory": 31629364 * 1024, "pods": 110, "nvidia.com/gpu": 4,
                             "ephemeral-storage": 93478772582, "hugepages-2Mi": 0}
    assert n.capacity["cpu"] == 8000
    assert n.capacity["memory"] == 32780340 * 1024
    assert n.images == [NodeImage(("registry.k8s.io/pause@sha256:abc", "registry.k8s.io/pause:3.9"), 321520)]
    assert n.obj is KUBECTL_NODE


def test_node_allocatable_falls_back_to_capacity():
    obj = {"kind": "Node", "metadata": {"name": "n"},
           "status": {"capacity": {"cpu": 2, "memory": "4Gi", "pods": 110}}}
    n = parse_node(obj)
    assert n.allocatable == n.capacity == {"cpu": 2000, "memory": 4 * Gi, "pods": 110}
    # per whole map: a present allocatable is used as written, even if it lacks keys
    obj["status"]["allocatable"] = {"cpu": "1500m"}
    n = parse_node(obj)
    assert n.allocatable == {"cpu": 1500}
    assert n.capacity["memory"] == 4 * Gi


def test_minimal_node():
    n = parse_node({"metadata": {"name": "bare"}})  # no kind: the caller chose parse_node
    assert (n.name, n.labels, n.taints, n.allocatable, n.capacity, n.images) == ("bare", {}, [], {}, {}, [])
    assert parse_node({"kind": "Node", "metadata": {"name": "u"}, "spec": {"unschedulable": True}}).unschedulable


@pytest.mark.parametrize(
    "path, value, field, words",
    [
        ("metadata.name", None, "metadata.name", ["required"]),
        ("metadata.name", 42, "metadata.name", ["string"]),
        ("metadata.labels.zone", 1, "metadata.labels.zone", ["string"]),
        ("metadata.labels", ["a"], "metadata.labels", ["mapping"]),
        ("spec.unschedulable", "yes", "spec.unschedulable", ["true or false"]),
        ("spec.taints", {"key": "a"}, "spec.taints", ["list"]),
        ("spec.taints[0].effect", "Sometimes", "spec.taints[0].effect", ["NoSchedule", "Sometimes"]),
        ("spec.taints[1].effect", None, "spec.taints[1].effect", ["required"]),
        ("spec.taints[0].key", None, "spec.taints[0].key", ["required"]),
        ("spec.taints[0].key", "", "spec.taints[0].key", ["empty"]),
        ("spec.taints[0].value", 3, "spec.taints[0].value", ["string"]),
        ("status.allocatable.cpu", "abc", "status.allocatable.cpu", ["abc"]),
        ("status.allocatable.memory", "5Kb", "status.allocatable.memory", ["5Kb"]),
        ("status.capacity.pods", "-1", "status.capacity.pods", ["non-negative"]),
        ("status.images[0].sizeBytes", "big", "status.images[0].sizeBytes", ["integer"]),
        ("status.images[0].names", "pause", "status.images[0].names", ["list"]),
        ("status", [], "status", ["mapping"]),
    ],
)
def test_node_errors(path, value, field, words):
    obj = mutated(KUBECTL_NODE, path, value)
    ident = "Node worker-1" if not path.startswith("metadata.name") else "Node <unnamed>"
    expect_error(parse_node, obj, ident, field, *words)


def test_node_error_quoted_label_key():
    # a label key that is not an identifier is written ["..."]
    obj = copy.deepcopy(KUBECTL_NODE)
    obj["metadata"]["labels"]["kubernetes.io/arch"] = None
    expect_error(parse_node, obj, "Node worker-1", 'metadata.labels["kubernetes.io/arch"]', "string", "null")


def test_node_quantity_beyond_int64():
    obj = mutated(KUBECTL_NODE, "status.capacity.memory", "10E")  # 1e19 bytes
    expect_error(parse_node, obj, "Node worker-1", "status.capacity.memory", "int64")


def test_pod_total_beyond_int64():
    obj = pod("big", containers=[ctr("a", {"memory": "5E"}), ctr("b", {"memory": "5E"})])
    expect_error(parse_pod, obj, "Pod default/big", "spec.containers[*].resources.requests.memory", "int64")


def test_node_error_extended_resource_path():
    obj = mutated(KUBECTL_NODE, "status.allocatable", {"nvidia.com/gpu": "four"})
    expect_error(parse_node, obj, "Node worker-1", 'status.allocatable["nvidia.com/gpu"]', "four")


def test_parse_node_on_a_pod_raises():
    expect_error(parse_node, KUBECTL_POD, "Pod web-7d4b9c-abcde", "kind", "expected Node")
    expect_error(parse_pod, KUBECTL_NODE, "Node worker-1", "kind", "expected Pod")


def test_unnamed_object_uses_where():
    with pytest.raises(ManifestError) as info:
        parse_node({"kind": "Node", "metadata": {}}, where="nodes.yaml#3")
    assert info.value.obj == "nodes.yaml#3"
    assert info.value.field == "metadata.name"


# --------------------------------------------------------------------------
# Pod: fields


def test_parse_kubectl_pod():
    p = parse_pod(KUBECTL_POD)
    assert (p.namespace, p.name, p.key, p.uid) == ("shop", "web-7d4b9c-abcde", "shop/web-7d4b9c-abcde", "8c0e-11")
    assert p.node_name == "worker-1"
    assert p.scheduler_name == "default-scheduler"
    assert p.priority == 0
    assert p.preemption_policy == "PreemptLowerPriority"
    assert p.labels == {"app": "web", "pod-template-hash": "7d4b9c"}
    assert p.creation_ns == 1709287201 * 10**9
    assert p.start_ns == 1709287202 * 10**9
    assert p.deleting is False
    assert p.phase == "Running"
    assert p.requests == {"cpu": 250, "memory": 64 * Mi}
    assert (p.nonzero_cpu, p.nonzero_memory) == (250, 64 * Mi)
    assert p.tolerations == [
        Toleration("node.kubernetes.io/not-ready", "Exists", "", "NoExecute"),
        Toleration("node.kubernetes.io/unreachable", "Exists", "", "NoExecute"),
    ]
    assert p.host_ports == [HostPort("TCP", "0.0.0.0", 8080)]  # 9090 has no hostPort
    assert p.images == ["nginx:1.25"]
    assert p.has_restartable_init is False
    assert p.scheduling_gates == []
    assert p.node_affinity is None and p.pod_affinity is None and p.pod_anti_affinity is None
    assert p.topology_spread == []


def test_pod_defaults():
    p = parse_pod({"kind": "Pod", "metadata": {"name": "bare"}})
    assert p.namespace == "default"
    assert p.key == "default/bare"
    assert p.uid == "" and p.node_name == "" and p.phase == ""
    assert p.scheduler_name == "default-scheduler"
    assert p.priority is None
    assert p.priority_class_name == ""
    assert p.preemption_policy == "PreemptLowerPriority"
    assert p.creation_ns == 0 and p.start_ns is None
    assert p.requests == {} and (p.nonzero_cpu, p.nonzero_memory) == (0, 0)
    assert p.images == [] and p.host_ports == [] and p.tolerations == []


def test_pod_fields_as_written():
    na = {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}]},
            {"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n1"]}]},
        ]},
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 10, "preference": {"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}},
        ],
    }
    anti = {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}]}
    spread = [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
               "labelSelector": {"matchLabels": {"app": "web"}}}]
    obj = pod(
        "p", "ns",
        containers=[ctr("a", image="app:1"), ctr("b", image="side:2", ports=[
            {"containerPort": 53, "hostPort": 53, "protocol": "UDP", "hostIP": "10.0.0.1"}])],
        init=[ctr("setup", image="init:0", ports=[{"containerPort": 7000, "hostPort": 7000}])],
        schedulerName="my-scheduler",
        priority=1000,
        priorityClassName="high",
        preemptionPolicy="Never",
        nodeSelector={"disk": "ssd"},
        tolerations=[{"key": "k", "value": "v", "effect": "NoSchedule"},  # operator "" -> Equal
                     {"operator": "Exists"}],
        affinity={"nodeAffinity": na, "podAntiAffinity": anti},
        topologySpreadConstraints=spread,
        schedulingGates=[{"name": "example.com/wait"}, {"name": "quota"}],
    )
    obj["metadata"]["deletionTimestamp"] = "2024-03-01T10:00:00Z"
    p = parse_pod(obj)
    assert p.scheduler_name == "my-scheduler"
    assert (p.priority, p.priority_class_name, p.preemption_policy) == (1000, "high", "Never")
    assert p.node_selector == {"disk": "ssd"}
    assert p.tolerations == [Toleration("k", "Equal", "v", "NoSchedule"), Toleration("", "Exists", "", "")]
    assert p.node_affinity == na and p.pod_anti_affinity == anti and p.pod_affinity is None
    assert p.topology_spread == spread
    assert p.scheduling_gates == ["example.com/wait", "quota"]
    assert p.deleting is True
    # images: containers then init containers, as written
    assert p.images == ["app:1", "side:2", "init:0"]
    # host ports: containers (and restartable init containers), protocol/hostIP
    # defaults; the ordinary init container "setup" has exited by then (GetHostPorts)
    assert p.host_ports == [HostPort("UDP", "10.0.0.1", 53)]


def test_host_network_defaults_host_port_to_container_port():
    obj = pod(containers=[ctr(ports=[{"containerPort": 80}, {"containerPort": 443, "hostPort": 8443}])],
              hostNetwork=True)
    assert parse_pod(obj).host_ports == [HostPort("TCP", "0.0.0.0", 80), HostPort("TCP", "0.0.0.0", 8443)]
    obj["spec"]["hostNetwork"] = False
    assert parse_pod(obj).host_ports == [HostPort("TCP", "0.0.0.0", 8443)]


def test_semantic_oddities_are_not_load_errors():
    # the API server takes these values; kube-scheduler treats the terms as
    # non-matching; they load fine (what it refuses: test_object_meta)
    na = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "cores", "operator": "Gt", "values": ["lots"]}]},
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["not a label!"]}]},
        {},
    ]}}
    p = parse_pod(pod(affinity={"nodeAffinity": na}))
    assert p.node_affinity == na


# --------------------------------------------------------------------------
# Pod: effective requests


def test_requests_init_container_max():
    obj = pod(containers=[ctr("a", {"cpu": "100m", "memory": "100Mi"}), ctr("b", {"cpu": "200m"})],
              init=[ctr("i1", {"cpu": "500m", "memory": "50Mi"}), ctr("i2", {"cpu": "100m", "memory": "300Mi"})])
    p = parse_pod(obj)
    # containers: cpu 100+200 = 300m, memory 100Mi
    # init steps: i1 (500m, 50Mi), i2 (100m, 300Mi) -> peak (500m, 300Mi)
    # total: cpu max(300, 500) = 500m; memory max(100Mi, 300Mi) = 300Mi
    assert p.requests == {"cpu": 500, "memory": 300 * Mi}
    # non-zero: b has no memory request -> 200Mi: containers (300m, 100Mi + 200Mi = 300Mi)
    # init steps (500m, 50Mi), (100m, 300Mi); total (500m, max(300Mi, 300Mi) = 300Mi)
    assert (p.nonzero_cpu, p.nonzero_memory) == (500, 300 * Mi)
    assert p.has_restartable_init is False


def test_requests_sidecar_accumulation():
    always = {"restartPolicy": "Always"}
    obj = pod(
        containers=[ctr("app", {"cpu": "1", "memory": "1Gi"})],
        init=[
            ctr("s1", {"cpu": "100m", "memory": "100Mi"}, **always),
            ctr("i1", {"cpu": "2", "memory": "50Mi"}),
            ctr("s2", {"cpu": "200m"}, **always),
            ctr("i2", {"cpu": "1500m"}),
        ],
    )
    p = parse_pod(obj)
    # containers: (1000m, 1024Mi)
    # s1 sidecar: total (1100m, 1124Mi); running sidecars (100m, 100Mi); step (100m, 100Mi)
    # i1: step = own + sidecars = (2000+100, 50Mi+100Mi) = (2100m, 150Mi)
    # s2 sidecar: total (1300m, 1124Mi); running sidecars (300m, 100Mi); step (300m, 100Mi)
    # i2: step = (1500+300, 0+100Mi) = (1800m, 100Mi)
    # init peak: cpu max(100, 2100, 300, 1800) = 2100m; memory max(100, 150, 100, 100) = 150Mi
    # total: cpu max(1300, 2100) = 2100m; memory max(1124Mi, 150Mi) = 1124Mi
    assert p.requests == {"cpu": 2100, "memory": 1124 * Mi}
    assert p.has_restartable_init is True
    # non-zero: s2 and i2 have no memory request -> 200Mi each
    # s1: total (1100m, 1124Mi), sidecars (100m, 100Mi)
    # i1: step (2100m, 150Mi)
    # s2: total (1300m, 1324Mi), sidecars (300m, 300Mi), step (300m, 300Mi)
    # i2: step (1500+300, 200Mi+300Mi) = (1800m, 500Mi)
    # total: cpu max(1300, 2100) = 2100m; memory max(1324Mi, 500Mi) = 1324Mi
    assert (p.nonzero_cpu, p.nonzero_memory) == (2100, 1324 * Mi)


def test_requests_sidecar_only_adds_to_total():
    obj = pod(containers=[ctr("app", {"cpu": "500m"})],
              init=[ctr("s", {"cpu": "250m", "example.com/dev": 1}, restartPolicy="Always")])
    # total cpu 500 + 250 = 750m; step (250m) does not exceed it; example.com/dev 1
    assert parse_pod(obj).requests == {"cpu": 750, "example.com/dev": 1}


def test_requests_overhead():
    obj = pod(containers=[ctr("a", {"cpu": "250m", "memory": "64Mi"})],
              overhead={"cpu": "100m", "memory": "32Mi", "pods": 1})
    p = parse_pod(obj)
    # (250m + 100m, 64Mi + 32Mi); "pods" is never a request
    assert p.requests == {"cpu": 350, "memory": 96 * Mi}
    # overhead is added to the non-zero totals too
    assert (p.nonzero_cpu, p.nonzero_memory) == (350, 96 * Mi)


def test_requests_overhead_after_init_max():
    obj = pod(containers=[ctr("a", {"cpu": "100m"})], init=[ctr("i", {"cpu": "1"})],
              overhead={"cpu": "50m"})
    # max(100m, 1000m) + 50m = 1050m
    assert parse_pod(obj).requests == {"cpu": 1050}


def test_limits_default_requests():
    obj = pod(containers=[
        ctr("a", requests={"cpu": "100m"}, limits={"cpu": "500m", "memory": "128Mi", "nvidia.com/gpu": 1}),
        ctr("b", limits={"cpu": "1"}),
    ], init=[ctr("i", limits={"memory": "1Gi"})])
    p = parse_pod(obj)
    # a: requests cpu 100m (kept), memory 128Mi and gpu 1 (from limits)
    # b: requests cpu 1 (from limits)
    # containers: cpu 1100m, memory 128Mi, gpu 1; init i: memory 1Gi (from limits)
    # total: cpu 1100m, memory max(128Mi, 1Gi) = 1Gi, gpu 1
    assert p.requests == {"cpu": 1100, "memory": Gi, "nvidia.com/gpu": 1}
    # non-zero: b has memory neither in requests nor limits -> 200Mi; i has no cpu -> 100m
    # containers: (1100m, 128Mi + 200Mi = 328Mi); init step (100m, 1Gi)
    assert (p.nonzero_cpu, p.nonzero_memory) == (1100, Gi)
    # the object itself is not modified
    assert "requests" not in obj["spec"]["containers"][1]["resources"]


def test_nonzero_defaults_missing_requests():
    obj = pod(containers=[ctr("a"), ctr("b", {"ephemeral-storage": "1Gi"})])
    p = parse_pod(obj)
    assert p.requests == {"ephemeral-storage": Gi}
    # two containers without cpu/memory: 2 * 100m, 2 * 200Mi
    assert (p.nonzero_cpu, p.nonzero_memory) == (200, 2 * DEFAULT_MEMORY_REQUEST)


def test_nonzero_zero_containers():
    p = parse_pod(pod(containers=[]))
    assert p.requests == {}
    assert (p.nonzero_cpu, p.nonzero_memory) == (0, 0)
    p = parse_pod(pod(containers=[], overhead={"cpu": "10m"}))
    # no container gets a default; only the overhead counts
    assert (p.requests, p.nonzero_cpu, p.nonzero_memory) == ({"cpu": 10}, 10, 0)


def test_nonzero_explicit_zero_stays_zero():
    obj = pod(containers=[ctr("a", {"cpu": "0", "memory": 0}), ctr("b", {"cpu": "0"})])
    p = parse_pod(obj)
    # explicit zeros are requests too (the keys are present)
    assert p.requests == {"cpu": 0, "memory": 0}
    # a: (0, 0) explicit; b: cpu 0 explicit, memory missing -> 200Mi
    assert (p.nonzero_cpu, p.nonzero_memory) == (0, 200 * Mi)


def test_nonzero_init_container_without_requests():
    obj = pod(containers=[ctr("a", {"cpu": "50m", "memory": "10Mi"})], init=[ctr("i")])
    p = parse_pod(obj)
    # requests: the init container asks for nothing -> (50m, 10Mi)
    assert p.requests == {"cpu": 50, "memory": 10 * Mi}
    # non-zero: init step (100m, 200Mi) beats (50m, 10Mi)
    assert (p.nonzero_cpu, p.nonzero_memory) == (100, 200 * Mi)


def test_requests_every_resource_named_but_never_pods():
    obj = pod(containers=[
        ctr("a", {"cpu": "1", "pods": "1", "example.com/foo": 0}),
        ctr("b", {"hugepages-2Mi": "4Mi"}, limits={"hugepages-2Mi": "4Mi", "pods": 2}),
    ])
    assert parse_pod(obj).requests == {"cpu": 1000, "example.com/foo": 0, "hugepages-2Mi": 4 * Mi}


def test_requests_rounded_to_milli_per_container_then_summed():
    # the API server rounds each ResourceList value up to a milli-unit
    # (0.5m -> 1m, 0.5 bytes -> 0.001), the scheduler sums exact quantities
    # and takes MilliValue()/Value() of the sum:
    # cpu 1m + 1m = 2m; memory 0.001 + 0.001 = 0.002 -> Value() = ceil = 1 byte
    obj = pod(containers=[ctr("a", {"cpu": "0.5m", "memory": "0.5"}), ctr("b", {"cpu": "0.5m", "memory": "0.5"})])
    assert parse_pod(obj).requests == {"cpu": 2, "memory": 1}
    # two 1.5-byte requests: 1.5 + 1.5 = 3 bytes (not ceil(1.5) + ceil(1.5) = 4)
    obj = pod(containers=[ctr("a", {"memory": "1.5"}), ctr("b", {"memory": "1.5"})])
    assert parse_pod(obj).requests["memory"] == 3


def test_yaml_numbers_as_quantities(tmp_path):
    f = tmp_path / "p.yaml"
    f.write_text(textwrap.dedent("""\
        kind: Pod
        metadata: {name: p}
        spec:
          containers:
          - name: c
            resources:
              requests: {cpu: 0.5, memory: 1e3, nvidia.com/gpu: 2}
    """))
    [obj] = load_objects(f)
    # cpu: 0.5 (float) -> 500m; memory: "1e3" (YAML 1.1 string) -> 1000 bytes
    assert parse_pod(obj).requests == {"cpu": 500, "memory": 1000, "nvidia.com/gpu": 2}


# --------------------------------------------------------------------------
# Pod: errors


BASE = pod(
    "web", "shop",
    containers=[ctr("a", {"cpu": "100m"}, limits={"memory": "1Gi"}, ports=[{"containerPort": 80, "hostPort": 80}]),
                ctr("b")],
    init=[ctr("i", {"memory": "10Mi"})],
    tolerations=[{"key": "k", "operator": "Equal", "value": "v"}, {"key": "x", "operator": "Exists"}],
    affinity={"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]},
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 5, "preference": {"matchExpressions": [{"key": "ssd", "operator": "Exists"}]}}],
    }},
)
NA = "spec.affinity.nodeAffinity"
REQ = f"{NA}.requiredDuringSchedulingIgnoredDuringExecution"
PREF = f"{NA}.preferredDuringSchedulingIgnoredDuringExecution"


@pytest.mark.parametrize(
    "path, value, field, words",
    [
        ("metadata.labels.app", 1, "metadata.labels.app", ["string", "1"]),
        ("metadata.labels.on", True, "metadata.labels.on", ["string"]),
        ("metadata.uid", 5, "metadata.uid", ["string"]),
        ("metadata.creationTimestamp", "yesterday", "metadata.creationTimestamp", ["RFC3339"]),
        ("metadata.deletionTimestamp", "2024-02-30T00:00:00Z", "metadata.deletionTimestamp", ["day"]),
        ("spec", "x", "spec", ["mapping"]),
        ("spec.containers", {"name": "a"}, "spec.containers", ["list"]),
        ("spec.containers[1]", "b", "spec.containers[1]", ["mapping"]),
        ("spec.containers[0].resources.requests.cpu", "abc", "spec.containers[0].resources.requests.cpu", ["abc"]),
        ("spec.containers[0].resources.requests.cpu", "1.2.3", "spec.containers[0].resources.requests.cpu", []),
        ("spec.containers[0].resources.limits.memory", "5Kb", "spec.containers[0].resources.limits.memory",
         ["5Kb"]),
        ("spec.containers[0].resources.requests.cpu", "-1", "spec.containers[0].resources.requests.cpu",
         ["non-negative"]),
        ("spec.containers[0].resources.requests.cpu", None, None, []),  # fine: limits-only is allowed
        ("spec.containers[0].resources.requests", ["cpu"], "spec.containers[0].resources.requests", ["mapping"]),
        ("spec.containers[1].resources", {"requests": {"memory": ""}}, "spec.containers[1].resources.requests.memory",
         ["empty"]),
        ("spec.initContainers[0].resources.requests.memory", "lots",
         "spec.initContainers[0].resources.requests.memory", ["lots"]),
        ("spec.overhead", {"cpu": "--1"}, "spec.overhead.cpu", ["--1"]),
        ("spec.containers[0].image", 7, "spec.containers[0].image", ["string"]),
        ("spec.containers[0].ports[0].hostPort", 70000, "spec.containers[0].ports[0].hostPort", ["65535"]),
        ("spec.containers[0].ports[0].hostPort", -1, "spec.containers[0].ports[0].hostPort", ["0..65535"]),
        ("spec.containers[0].ports[0].containerPort", 0, "spec.containers[0].ports[0].containerPort", ["1..65535"]),
        ("spec.containers[0].ports[0].containerPort", "80", "spec.containers[0].ports[0].containerPort",
         ["integer"]),
        ("spec.containers[0].ports[0].containerPort", None, "spec.containers[0].ports[0].containerPort",
         ["required"]),
        ("spec.containers[0].ports[0].protocol", "HTTP", "spec.containers[0].ports[0].protocol", ["TCP", "HTTP"]),
        ("spec.containers[0].ports[0].protocol", 0, "spec.containers[0].ports[0].protocol", ["string"]),
        ("spec.containers[0].ports[0].protocol", "", None, []),  # "" is TCP
        ("spec.preemptionPolicy", "", None, []),                 # "" is the default
        ("spec.preemptionPolicy", False, "spec.preemptionPolicy", ["string"]),
        ("spec.containers[0].ports[0].hostIP", 127, "spec.containers[0].ports[0].hostIP", ["string"]),
        ("spec.tolerations[0].operator", "Bogus", "spec.tolerations[0].operator", ["Exists", "Bogus"]),
        ("spec.tolerations[1].value", "v", "spec.tolerations[1].value", ["Exists"]),
        ("spec.tolerations[1].effect", "Sometimes", "spec.tolerations[1].effect", ["NoExecute"]),
        ("spec.tolerations[0].key", None, "spec.tolerations[0].operator", ["key is empty"]),
        ("spec.tolerations[0].tolerationSeconds", 30, "spec.tolerations[0].effect", ["NoExecute"]),
        ("spec.tolerations", {"key": "k"}, "spec.tolerations", ["list"]),
        ("spec.nodeSelector", {"disk": 1}, "spec.nodeSelector.disk", ["string"]),
        ("spec.priority", "high", "spec.priority", ["integer"]),
        ("spec.priority", True, "spec.priority", ["integer"]),
        ("spec.priority", 1.5, "spec.priority", ["integer"]),
        ("spec.priority", 2**31, "spec.priority", ["2147483647"]),
        ("spec.preemptionPolicy", "Sometimes", "spec.preemptionPolicy", ["Never"]),
        ("spec.schedulerName", ["x"], "spec.schedulerName", ["string"]),
        ("spec.nodeName", 3, "spec.nodeName", ["string"]),
        ("spec.hostNetwork", "true", "spec.hostNetwork", ["true or false"]),
        ("spec.schedulingGates", [{"name": ""}], "spec.schedulingGates[0].name", ["empty"]),
        ("spec.schedulingGates", ["gate"], "spec.schedulingGates[0]", ["mapping"]),
        ("spec.affinity", [], "spec.affinity", ["mapping"]),
        (f"{REQ}.nodeSelectorTerms", {"matchExpressions": []}, f"{REQ}.nodeSelectorTerms", ["list"]),
        (f"{REQ}.nodeSelectorTerms[0].matchExpressions[0].operator", "Like",
         f"{REQ}.nodeSelectorTerms[0].matchExpressions[0].operator", ["In", "Like"]),
        (f"{REQ}.nodeSelectorTerms[0].matchExpressions[0].operator", None,
         f"{REQ}.nodeSelectorTerms[0].matchExpressions[0].operator", ["required"]),
        (f"{REQ}.nodeSelectorTerms[0].matchExpressions[0].values", "a",
         f"{REQ}.nodeSelectorTerms[0].matchExpressions[0].values", ["list"]),
        (f"{REQ}.nodeSelectorTerms[0].matchExpressions[0].values", [1],
         f"{REQ}.nodeSelectorTerms[0].matchExpressions[0].values[0]", ["string"]),
        (f"{REQ}.nodeSelectorTerms[0].matchExpressions[0].key", None,
         f"{REQ}.nodeSelectorTerms[0].matchExpressions[0].key", ["required"]),
        (f"{REQ}.nodeSelectorTerms[0].matchExpressions", [["zone"]],
         f"{REQ}.nodeSelectorTerms[0].matchExpressions[0]", ["mapping"]),
        (f"{REQ}.nodeSelectorTerms[0].matchFields", {"key": "metadata.name"},
         f"{REQ}.nodeSelectorTerms[0].matchFields", ["list"]),
        (f"{REQ}.nodeSelectorTerms[0]", "zone=a", f"{REQ}.nodeSelectorTerms[0]", ["mapping"]),
        (f"{PREF}[0].weight", 0, f"{PREF}[0].weight", ["1..100"]),
        (f"{PREF}[0].weight", 101, f"{PREF}[0].weight", ["1..100"]),
        (f"{PREF}[0].weight", "5", f"{PREF}[0].weight", ["integer"]),
        (f"{PREF}[0].weight", None, f"{PREF}[0].weight", ["required"]),
        (f"{PREF}[0].preference", None, f"{PREF}[0].preference", ["required"]),
        (f"{PREF}[0].preference.matchExpressions[0].operator", "exists",
         f"{PREF}[0].preference.matchExpressions[0].operator", ["Exists"]),
        (PREF, {"weight": 1}, PREF, ["list"]),
        ("spec.topologySpreadConstraints", [{"maxSkew": 0, "topologyKey": "zone",
                                             "whenUnsatisfiable": "DoNotSchedule"}],
         "spec.topologySpreadConstraints[0].maxSkew", [">= 1"]),
        ("spec.topologySpreadConstraints", [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "Maybe"}],
         "spec.topologySpreadConstraints[0].whenUnsatisfiable", ["DoNotSchedule"]),
        ("spec.affinity.podAntiAffinity", {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "web"}}}]},
         "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey",
         ["required"]),
    ],
)
def test_pod_errors(path, value, field, words):
    obj = mutated(BASE, path, value)
    if field is None:
        parse_pod(obj)  # a valid variation
        return
    expect_error(parse_pod, obj, "Pod shop/web", field, *words)


def test_pod_base_is_valid():
    p = parse_pod(BASE)
    assert p.requests == {"cpu": 100, "memory": Gi}


def test_pod_name_errors():
    expect_error(parse_pod, mutated(BASE, "metadata.name", None), "Pod <unnamed>", "metadata.name", "required")
    expect_error(parse_pod, mutated(BASE, "metadata.name", ["web"]), "Pod <unnamed>", "metadata.name", "string")
    expect_error(parse_pod, mutated(BASE, "metadata.namespace", 3), "Pod web", "metadata.namespace", "string")
    expect_error(parse_pod, mutated(BASE, "metadata", "web"), "Pod <unnamed>", "metadata", "mapping")
    expect_error(parse_pod, "not a pod", "Pod <unnamed>", "", "mapping")


def test_label_key_path_is_quoted():
    obj = mutated(BASE, "metadata.labels", {"app.kubernetes.io/name": 5})
    expect_error(parse_pod, obj, "Pod shop/web", 'metadata.labels["app.kubernetes.io/name"]', "string")


def test_error_message_names_object_and_field():
    obj = mutated(BASE, "spec.containers[0].resources.requests.cpu", "abc")
    with pytest.raises(ManifestError) as info:
        parse_pod(obj)
    msg = str(info.value)
    assert msg.startswith("Pod shop/web: spec.containers[0].resources.requests.cpu: ")
    assert "'abc'" in msg
    assert isinstance(info.value, ValueError)


# --------------------------------------------------------------------------
# PriorityClass, PodDisruptionBudget


def test_parse_priority_class():
    pc = parse_priority_class({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                               "metadata": {"name": "high"}, "value": 1000000, "globalDefault": False,
                               "description": "high"})
    assert (pc.name, pc.value, pc.global_default, pc.preemption_policy) == (
        "high", 1000000, False, "PreemptLowerPriority")
    pc = parse_priority_class({"kind": "PriorityClass", "metadata": {"name": "batch"}, "value": -5,
                               "globalDefault": True, "preemptionPolicy": "Never"})
    assert (pc.value, pc.global_default, pc.preemption_policy) == (-5, True, "Never")


@pytest.mark.parametrize(
    "changes, field, words",
    [
        ({"value": None}, "value", ["required"]),
        ({"value": "1000"}, "value", ["integer"]),
        ({"value": 2**31}, "value", ["2147483647"]),
        ({"globalDefault": "yes"}, "globalDefault", ["true or false"]),
        ({"preemptionPolicy": "Always"}, "preemptionPolicy", ["Never"]),
    ],
)
def test_priority_class_errors(changes, field, words):
    obj = {"kind": "PriorityClass", "metadata": {"name": "high"}, "value": 10}
    for k, v in changes.items():
        if v is None:
            obj.pop(k)
        else:
            obj[k] = v
    expect_error(parse_priority_class, obj, "PriorityClass high", field, *words)


PDB = {
    "apiVersion": "policy/v1",
    "kind": "PodDisruptionBudget",
    "metadata": {"name": "web-pdb", "namespace": "shop"},
    "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "web"},
                                             "matchExpressions": [{"key": "tier", "operator": "In",
                                                                   "values": ["front"]}]}},
    "status": {"disruptionsAllowed": 1, "currentHealthy": 3, "desiredHealthy": 2, "expectedPods": 3,
               "disruptedPods": {"web-1": "2024-03-01T10:00:00Z"}},
}


def test_parse_pdb():
    b = parse_pdb(PDB)
    assert (b.namespace, b.name) == ("shop", "web-pdb")
    assert b.selector == PDB["spec"]["selector"]
    assert (b.min_available, b.max_unavailable, b.disruptions_allowed) == (2, None, 1)
    assert b.disrupted_pods == ("web-1",)
    b = parse_pdb({"kind": "PodDisruptionBudget", "metadata": {"name": "x"}, "spec": {"maxUnavailable": "25%"}})
    assert (b.namespace, b.selector, b.min_available, b.max_unavailable, b.disruptions_allowed,
            b.disrupted_pods) == ("default", None, None, "25%", None, ())


@pytest.mark.parametrize(
    "path, value, field, words",
    [
        ("spec.minAvailable", "half", "spec.minAvailable", ["percentage"]),
        ("spec.minAvailable", -1, "spec.minAvailable", [">= 0"]),
        ("spec.maxUnavailable", 1, "spec.maxUnavailable", ["both"]),
        ("spec.selector", "app=web", "spec.selector", ["mapping"]),
        ("spec.selector.matchExpressions[0].operator", "Gt", "spec.selector.matchExpressions[0].operator",
         ["Gt"]),
        ("spec.selector.matchLabels.app", 1, "spec.selector.matchLabels.app", ["string"]),
        ("status.disruptionsAllowed", "1", "status.disruptionsAllowed", ["integer"]),
        ("status.disruptedPods", {"web-1": "soon"}, "status.disruptedPods[\"web-1\"]", ["RFC3339"]),
    ],
)
def test_pdb_errors(path, value, field, words):
    expect_error(parse_pdb, mutated(PDB, path, value), "PodDisruptionBudget shop/web-pdb", field, *words)


# --------------------------------------------------------------------------
# parse_objects


def test_parse_objects_sorts_kinds_and_counts_ignored():
    objs = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}},
        KUBECTL_NODE,
        {"kind": "Node", "metadata": {"name": "worker-2"}},
        KUBECTL_POD,
        pod("web-7d4b9c-abcde", "other"),  # same name, other namespace: fine
        {"kind": "Service", "metadata": {"name": "web", "namespace": "shop"}},
        {"kind": "Service", "metadata": {"name": "db", "namespace": "shop"}},
        {"kind": "PriorityClass", "metadata": {"name": "high"}, "value": 100},
        PDB,
        {"kind": "List", "items": [{"kind": "ConfigMap", "metadata": {"name": "cm"}}]},
    ]
    out = parse_objects(objs)
    assert isinstance(out, Objects)
    assert [n.name for n in out.nodes] == ["worker-1", "worker-2"]
    assert [p.key for p in out.pods] == ["shop/web-7d4b9c-abcde", "other/web-7d4b9c-abcde"]
    assert [c.name for c in out.priority_classes] == ["high"]
    assert [b.name for b in out.pdbs] == ["web-pdb"]
    # Services are loaded (PodTopologySpread's default selector).
    assert [f"{s.namespace}/{s.name}" for s in out.services] == ["shop/web", "shop/db"]
    # Namespaces are loaded (a namespaceSelector reads their labels).
    assert [n.name for n in out.namespaces] == ["shop"]
    assert out.ignored_kinds == {"ConfigMap": 1}


def test_parse_objects_duplicates():
    with pytest.raises(ManifestError) as info:
        parse_objects([KUBECTL_NODE, {"kind": "Node", "metadata": {"name": "worker-1"}}])
    assert info.value.obj == "Node worker-1" and "duplicate" in info.value.problem
    with pytest.raises(ManifestError) as info:
        parse_objects([pod("a", "ns"), pod("b", "ns"), pod("a", "ns")])
    assert info.value.obj == "Pod ns/a" and "duplicate" in info.value.problem
    # namespace defaults to "default" before comparing
    with pytest.raises(ManifestError, match="duplicate"):
        parse_objects([pod("a"), pod("a", "default")])


def test_parse_objects_all_or_nothing_first_error():
    objs = [KUBECTL_NODE, mutated(BASE, "spec.priority", "x"), {"kind": "Node", "metadata": {"name": 5}}]
    with pytest.raises(ManifestError) as info:
        parse_objects(objs)
    assert (info.value.obj, info.value.field) == ("Pod shop/web", "spec.priority")


def test_parse_objects_unnamed_and_kindless():
    with pytest.raises(ManifestError) as info:
        parse_objects([KUBECTL_NODE, {"kind": "Node", "metadata": {}}], source="nodes.yaml")
    assert (info.value.obj, info.value.field) == ("nodes.yaml#1", "metadata.name")
    with pytest.raises(ManifestError) as info:
        parse_objects([{"metadata": {"name": "x"}}])
    assert (info.value.obj, info.value.field) == ("objects#0", "kind")


def test_load_then_parse_directory(tmp_path):
    (tmp_path / "nodes.yaml").write_text(textwrap.dedent("""\
        apiVersion: v1
        kind: Node
        metadata:
          name: n1
          labels: {zone: a}
        status:
          allocatable: {cpu: "4", memory: 16Gi, pods: "110"}
        ---
        apiVersion: v1
        kind: Node
        metadata:
          name: n2
        spec:
          taints:
          - {key: gpu, value: "true", effect: NoSchedule}
        status:
          capacity: {cpu: 8, memory: 32Gi}
    """))
    (tmp_path / "pods.json").write_text(json.dumps({"kind": "List", "apiVersion": "v1", "items": [
        pod("a", containers=[ctr("c", {"cpu": "1", "memory": "1Gi"})]),
        pod("b", containers=[ctr("c")], tolerations=[{"key": "gpu", "operator": "Exists"}]),
    ]}))
    out = parse_objects(load_objects(tmp_path))
    assert [n.name for n in out.nodes] == ["n1", "n2"]
    assert out.nodes[0].allocatable == {"cpu": 4000, "memory": 16 * Gi, "pods": 110}
    assert out.nodes[1].allocatable == {"cpu": 8000, "memory": 32 * Gi}
    assert out.nodes[1].taints == [Taint("gpu", "true", "NoSchedule")]
    assert [(p.key, p.requests) for p in out.pods] == [("default/a", {"cpu": 1000, "memory": Gi}),
                                                       ("default/b", {})]
    assert out.ignored_kinds == {}
