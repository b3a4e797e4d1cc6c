"""Template sharing in parse_objects (framework/parsing/pod_templates.py):
records and errors exactly those of parse_pod, pod by pod."""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tensorsched.framework.capacity.common import pod_copies
from tensorsched.framework.errors import ManifestError
from tensorsched.framework.parsing import pod_templates
from tensorsched.framework.parsing.manifests import load_objects, parse_objects, parse_pod
from tensorsched.framework.parsing.pod_templates import PodTemplates, template_key
from tensorsched.framework.parsing.priorities import PriorityResolver

BASE = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "web-0", "namespace": "shop", "uid": "u-0",
        "labels": {"app": "web", "pod-template-hash": "7d4b9c"},
        "annotations": {"a": "b"},
        "creationTimestamp": "2024-03-01T10:00:01Z",
        "ownerReferences": [{"kind": "ReplicaSet", "name": "web-7d4b9c", "uid": "x",
                             "controller": True}],
    },
    "spec": {
        "containers": [{
            "name": "web", "image": "nginx:1.25",
            "ports": [{"containerPort": 80, "hostPort": 8080}],
            "resources": {"requests": {"cpu": "250m", "memory": "64Mi"},
                          "limits": {"cpu": "500m", "memory": "128Mi"}},
            "volumeMounts": [{"mountPath": "/var/run/secrets", "name": "kube-api-access-0"}],
        }],
        "initContainers": [{"name": "side", "image": "envoy", "restartPolicy": "Always",
                            "resources": {"requests": {"cpu": "10m"}}}],
        "priority": 0,
        "schedulerName": "default-scheduler",
        "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoExecute",
                         "tolerationSeconds": 300}],
        "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 10, "podAffinityTerm": {"topologyKey": "zone",
                                               "labelSelector": {"matchLabels": {"app": "web"}}}}]}},
        "volumes": [{"name": "kube-api-access-0", "projected": {"sources": []}}],
    },
    "status": {"phase": "Pending"},
}

# (path, values): places and values a pod may differ in, valid or not
VARIATIONS = [
    (("metadata", "name"), ["web-1", "web-2", "", None, 5]),
    (("metadata", "uid"), ["u-1", None, 7, ""]),
    (("metadata", "creationTimestamp"), ["2024-03-01T10:00:02Z", "2024-03-01T10:00:02.5+01:00",
                                         None, "yesterday", 12]),
    (("metadata", "deletionTimestamp"), ["2024-03-01T11:00:00Z", "bad"]),
    (("metadata", "namespace"), ["shop", "", None, "other", 3]),
    (("metadata", "labels"), [{"app": "web"}, {"app": 1}, {1: "web"}, {"1": "web"}, {True: "x"},
                              {"true": "x"}, None, "x"]),
    (("metadata", "ownerReferences"), [[], [{"kind": 5}], ({"kind": "ReplicaSet"},), None]),
    (("metadata", "annotations"), [{"x": "y"}, None]),
    (("metadata",), [None, "m"]),
    (("kind",), ["Pod", "Node", None]),
    (("spec", "nodeName"), ["n1", "n2", "", None, 1]),
    (("spec", "priority"), [0, 1, True, 1.0, None, 2**40, "1"]),
    (("spec", "schedulerName"), ["other", "", None]),
    (("spec", "preemptionPolicy"), ["Never", "never", ""]),
    (("spec", "hostNetwork"), [True, False, 1]),
    (("spec", "containers", 0, "resources", "requests", "cpu"),
     ["250m", "1", 1, 1.5, "abc", -1, "0.25", True]),
    (("spec", "containers", 0, "ports", 0, "hostPort"), [0, 8081, 70000, None]),
    (("spec", "containers", 0, "volumeMounts", 0, "name"), ["kube-api-access-1", "kube-api-access-2"]),
    (("spec", "containers", 0, "image"), ["nginx:1.26", 5]),
    (("spec", "containers"), [[], None, "c", ({"name": "t"},), [5]]),
    (("spec", "initContainers", 0, "restartPolicy"), ["Always", "OnFailure", None]),
    (("spec", "tolerations", 0, "operator"), ["Exists", "Equal", "bad"]),
    (("spec", "volumes", 0, "name"), ["kube-api-access-1", "kube-api-access-2"]),
    (("spec",), [None, [], "s"]),
    (("status",), [None, {}, "s", {"phase": "Running", "startTime": "2024-03-01T10:00:05Z"},
                   {"phase": 5}, {"startTime": "never"}]),
]
DELETE = object()


def _set(obj, path, value):
    node = obj
    for p in path[:-1]:
        node = node[p]
    if value is DELETE:
        node.pop(path[-1], None)
    else:
        node[path[-1]] = copy.deepcopy(value)


@st.composite
def pod_lists(draw):
    pods = []
    for i in range(draw(st.integers(1, 12))):
        pod = copy.deepcopy(BASE)
        pod["metadata"]["name"] = f"web-{i}"
        for k in draw(st.lists(st.integers(0, len(VARIATIONS) - 1), max_size=3)):
            path, values = VARIATIONS[k]
            try:
                _set(pod, path, draw(st.sampled_from(values + [DELETE])))
            except (KeyError, IndexError, TypeError, AttributeError):
                pass            # the path was replaced by an earlier variation
        if i and draw(st.booleans()):      # a repeat of an earlier pod, renamed
            pod = copy.deepcopy(pods[draw(st.integers(0, i - 1))])
            if isinstance(pod.get("metadata"), dict):
                pod["metadata"]["name"] = f"web-{i}"
        pods.append(pod)
    return pods


class share_templates:
    """PodTemplates.share set to ``on`` inside the block."""

    def __init__(self, on):
        self.on = on

    def __enter__(self):
        self.old = PodTemplates.share
        PodTemplates.share = self.on

    def __exit__(self, *exc):
        PodTemplates.share = self.old


def _outcome(fn):
    try:
        return "ok", fn()
    except ManifestError as exc:
        return "error", str(exc)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pod_lists())
def test_templates_give_parse_pod_records_and_errors(pods):
    cache = PodTemplates(parse_pod)
    for i, pod in enumerate(pods):
        where = f"pods.yaml#{i}"
        assert _outcome(lambda p=pod, w=where: cache.parse(p, where=w)) == \
            _outcome(lambda p=pod, w=where: parse_pod(p, where=w))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pod_lists())
def test_parse_objects_equals_one_by_one(pods):
    shared = _outcome(lambda: parse_objects(pods, source="pods.yaml").pods)
    with share_templates(False):
        alone = _outcome(lambda: parse_objects(pods, source="pods.yaml").pods)
    assert shared == alone


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pod_lists())
def test_columns_equal_the_records_pod_for_pod(pods):
    """``parse_columns`` (no record for a pod whose template and annotations
    were seen) gives what ``parse`` gives: equal records, shared memos, the
    same errors; records passed in are taken as they are."""
    records = _outcome(lambda: [PodTemplates(parse_pod).parse(p) for p in pods])
    columns = PodTemplates(parse_pod)
    got = _outcome(lambda: columns.parse_columns(pods))
    assert got[0] == records[0]
    if got[0] == "error":
        assert got == records
        return
    cols, recs = got[1], records[1]
    assert list(cols) == recs and cols.keys == [r.key for r in recs]
    memos = {}
    for r, c in zip(recs, cols):       # memos shared exactly as parse shares them
        assert memos.setdefault(id(r.memo), id(c.memo)) == id(c.memo)
    again = PodTemplates(parse_pod).parse_columns([*recs[:1], *pods[1:]])
    assert again[0] is not recs[0] and again[0] == recs[0] and list(again)[1:] == recs[1:]


def _replicas(n):
    out = []
    for i in range(n):
        pod = copy.deepcopy(BASE)
        pod["metadata"].update(name=f"web-{i}", uid=f"u-{i}",
                               creationTimestamp=f"2024-03-01T10:00:{i % 60:02d}Z")
        pod["spec"]["nodeName"] = f"node-{i % 3}" if i % 2 else None
        pod["spec"]["volumes"][0]["name"] = f"kube-api-access-{i}"
        pod["spec"]["containers"][0]["volumeMounts"][0]["name"] = f"kube-api-access-{i}"
        out.append(pod)
    return out


def test_replicas_share_one_template_and_a_memo_per_annotations():
    pods = _replicas(50)
    for i, p in enumerate(pods):
        if i % 10 == 9:                 # what GPU plugins read: the memo must differ
            p["metadata"]["annotations"] = {"alibabacloud.com/gpu-milli": str(i)}
    cache = PodTemplates(parse_pod)
    records = [cache.parse(p) for p in pods]
    assert cache.misses == 1 and cache.hits == 49
    assert records == [parse_pod(p) for p in pods]
    assert [r.obj for r in records] == pods and records[3].obj is pods[3]
    records[0].memo["x"] = 1
    plain = [r for i, r in enumerate(records) if i % 10 != 9]
    assert all(r.memo is records[0].memo for r in plain)
    annotated = [r.memo for i, r in enumerate(records) if i % 10 == 9]
    assert all(m == {} for m in annotated) and len({id(m) for m in annotated}) == 5

    # as columns: one class per memo, a record built only for each class's first pod
    cache = PodTemplates(parse_pod)
    cols = cache.parse_columns(pods)
    assert cache.misses == 1 and cache.hits == 49 and len(cols.classes) == 6
    assert list(cols) == records and cols.manifests[3] is pods[3]
    assert sorted(cols.extras) == list(range(50))       # uid on every pod


def test_key_tells_types_apart():
    def key(path, value):
        pod = copy.deepcopy(BASE)
        _set(pod, path, value)
        return template_key(pod)
    labels = ("metadata", "labels")
    assert key(labels, {1: "a"}) != key(labels, {"1": "a"}) != key(labels, {True: "a"})
    assert key(("spec", "priority"), 1) != key(("spec", "priority"), True)
    assert key(("spec", "priority"), 1) != key(("spec", "priority"), 1.0)
    assert key(("spec", "tolerations"), []) != key(("spec", "tolerations"), ())
    # per-pod fields and fields parse_pod does not read do not split templates
    assert key(("spec", "nodeName"), "a") == key(("spec", "nodeName"), "b")
    assert key(("spec", "volumes"), []) == key(("metadata", "annotations"), {"z": "1"})

    class Str(str):
        pass
    assert key(("spec", "schedulerName"), Str("x")) is None


def test_load_objects_errors_name_the_document(tmp_path):
    pods = _replicas(5)
    pods[3]["status"] = {"startTime": "never"}
    path = tmp_path / "pods.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": pods}))
    objs = load_objects(path)
    with pytest.raises(ManifestError) as shared:
        parse_objects(objs)
    with share_templates(False), pytest.raises(ManifestError) as alone:
        parse_objects(objs)
    assert str(shared.value) == str(alone.value)
    assert str(shared.value).startswith(f"{path}#0.items[3]: Pod shop/web-3: status.startTime:")
    # the same 100 replicas in YAML give the records pod by pod
    path = tmp_path / "pods.yaml"
    import yaml
    path.write_text(yaml.safe_dump_all(_replicas(100)))
    objs = load_objects(path)
    records = parse_objects(objs).pods
    assert records == [parse_pod(o) for o in objs]


def test_module_is_used_by_parse_objects(monkeypatch):
    calls = []
    orig = pod_templates.PodTemplates.parse

    def spy(self, obj, *, where=None):
        calls.append(obj)
        return orig(self, obj, where=where)
    monkeypatch.setattr(pod_templates.PodTemplates, "parse", spy)
    assert len(parse_objects(_replicas(3)).pods) == 3 and len(calls) == 3


def test_fast_copies_carry_their_own_key():
    """Records made by copying a template's fields (templates, capacity's
    pod copies, a resolved priority) have their own ``namespace/name`` key
    (the key is part of record equality, so the equality tests above check
    it for the table and template paths too)."""
    cache = PodTemplates(parse_pod)
    recs = [cache.parse(p, where="x") for p in _replicas(3)]
    assert [r.key for r in recs] == [f"{r.namespace}/web-{i}" for i, r in enumerate(recs)]
    copies = pod_copies(recs[0], ["a", "b"])
    assert [c.key for c in copies] == [f"{recs[0].namespace}/a", f"{recs[0].namespace}/b"]
    recs[1].priority = None
    resolved = PriorityResolver().resolve(recs[1])
    assert resolved is not recs[1] and resolved.key == recs[1].key


# pods as the basic workload writes them: no status, the creation time of the
# API server's shape (read after the pass), a repeat's keys from its cheap key
BARE = {"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default", "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "c", "image": "pause",
                                 "resources": {"requests": {"cpu": "100m"}}}]}}
BARE_VARIATIONS = [
    (("metadata", "creationTimestamp"), ["2026-01-01T00:00:59Z", "2026-01-01T00:01:00Z",
                                         "2026-02-30T00:00:00Z", "2026-01-01T00:00:00.5Z",
                                         "yesterday", "", 5, None, "2026-01-01T00:00:60Z",
                                         "1969-12-31T23:59:59Z"]),
    (("metadata", "uid"), ["u", 3, None, ""]),
    (("metadata", "name"), ["", None, 4]),
    (("metadata", "deletionTimestamp"), ["2026-01-01T00:00:00Z", "bad"]),
    (("spec", "nodeName"), ["n1", 1]),
    (("spec", "containers", 0, "resources", "requests", "cpu"), ["1", 1, True, "bad"]),
    (("spec", "priority"), [1, True, 1.0]),
    (("status",), [{"phase": "Running"}, {"startTime": "never"}, "s"]),
]


@st.composite
def bare_pod_lists(draw):
    pods = []
    for i in range(draw(st.integers(1, 14))):
        pod = copy.deepcopy(BARE)
        pod["metadata"]["name"] = f"p-{i}"
        pod["metadata"]["creationTimestamp"] = f"2026-01-01T00:00:{i:02d}Z"
        if draw(st.integers(0, 3)) == 0:
            path, values = draw(st.sampled_from(BARE_VARIATIONS))
            _set(pod, path, draw(st.sampled_from(values + [DELETE])))
        pods.append(pod)
    return pods


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(bare_pod_lists())
def test_bare_repeats_as_columns_equal_one_at_a_time(pods):
    """The repeats read through their cheap key, their creation times after
    the pass: the records, and the first error, are one at a time's (a bad
    creation time of a repeat before another bad pod is the error)."""
    one = _outcome(lambda: [parse_pod(p) for p in pods])
    cache = PodTemplates(parse_pod)
    got = _outcome(lambda: cache.parse_columns(pods))
    assert got[0] == one[0]
    if got[0] == "error":
        assert got == one
    else:
        assert list(got[1]) == one[1]
        assert got[1].creation_ns.tolist() == [r.creation_ns or 0 for r in one[1]]


def test_a_bad_creation_time_of_a_repeat_comes_before_a_later_error():
    pods = [copy.deepcopy(BARE) for _ in range(4)]
    for i, p in enumerate(pods):
        p["metadata"].update(name=f"p-{i}", creationTimestamp=f"2026-01-01T00:00:0{i}Z")
    pods[1]["metadata"]["creationTimestamp"] = "2026-02-30T00:00:00Z"
    pods[3]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "bad"
    with pytest.raises(ManifestError) as exc:
        PodTemplates(parse_pod).parse_columns(pods)
    assert "p-1" in str(exc.value) and "creationTimestamp" in str(exc.value)
    pods[1]["metadata"]["creationTimestamp"] = "2026-01-01T00:00:01.5+01:00"
    with pytest.raises(ManifestError) as exc:
        PodTemplates(parse_pod).parse_columns(pods)
    assert "p-3" in str(exc.value)
    del pods[3]
    cols = PodTemplates(parse_pod).parse_columns(pods)
    assert cols.creation_ns.tolist() == [parse_pod(p).creation_ns for p in pods]


def test_cheap_keys_are_dropped_when_templates_repeat_without_them():
    """kubectl's pods name a volume of their own: their cheap keys never
    repeat, the template key finds the template, and after ``cheap_grace``
    such pods the cheap keys are no longer computed; records unchanged."""
    pods = _replicas(PodTemplates.cheap_grace + 20)
    cache = PodTemplates(parse_pod)
    cols = cache.parse_columns(pods)
    assert not cache._cheap_on and cache.misses == 1
    assert list(cols) == [parse_pod(p) for p in pods]
    bare = [copy.deepcopy(BARE) for _ in range(200)]
    for i, p in enumerate(bare):
        p["metadata"]["name"] = f"p-{i}"
    cache = PodTemplates(parse_pod)
    cols = cache.parse_columns(bare)
    assert cache._cheap_on and cache._cheap_hits >= 199 and len(cols.classes) == 1
    assert cache.hits == 199 and cache.misses == 1


def test_cheap_key_is_exact():
    def key(path, value):
        pod = copy.deepcopy(BASE)
        _set(pod, path, value)
        return pod_templates.cheap_key(pod)
    base = pod_templates.cheap_key(BASE)
    assert key(("metadata", "name"), "other") == base == key(("spec", "nodeName"), "n9")
    assert key(("metadata", "creationTimestamp"), "x") == base
    assert key(("spec", "priority"), True) != key(("spec", "priority"), 1) != base
    assert key(("spec", "priority"), 1.0) != key(("spec", "priority"), 1)
    assert key(("metadata", "annotations"), {"a": "c"}) != base
    assert key(("metadata", "labels"), {1: "web"}) != key(("metadata", "labels"), {"1": "web"})

    class Str(str):
        pass
    assert key(("spec", "schedulerName"), Str("x")) is None
    assert pod_templates.cheap_key(dict(BASE, spec=[])) is None
