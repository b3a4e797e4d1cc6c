"""Bad manifest input is refused cleanly: one ManifestError naming the file
(and document), the object and the field; never a traceback, a hang, or a
value computed from nonsense."""

import copy
import json
import pickle
import textwrap

import pytest
import yaml

from tensorsched.framework.errors import ManifestError, StateError, TensorschedError
from tensorsched.framework.parsing.manifests import (
    MAX_DEPTH,
    Objects,
    ignored_kinds_warning,
    load_objects,
    parse_objects,
    parse_pod,
)
from tensorsched.framework.parsing.meta import SourcedObject
from tensorsched.framework.parsing.priorities import PriorityResolver
from tensorsched.generators.clusters import node_dict, pod_dict
from tensorsched.framework.scheduler.cluster import build_cluster

INT64_MAX = (1 << 63) - 1

CLUSTER = textwrap.dedent("""\
    apiVersion: v1
    kind: Node
    metadata: {name: n1}
    status: {allocatable: {cpu: "4", memory: 8Gi}}
    ---
    apiVersion: v1
    kind: Namespace
    metadata: {name: shop}
    ---
    ---
    apiVersion: v1
    kind: Pod
    metadata: {name: web, namespace: shop}
    spec:
      containers:
      - name: c
        resources: {requests: {cpu: abc}}
""")


def load_error(path, parse=True) -> ManifestError:
    with pytest.raises(ManifestError) as info:
        objs = load_objects(path)
        if parse:
            parse_objects(objs)
    assert isinstance(info.value, TensorschedError)
    return info.value


# --------------------------------------------------------------------------
# 1. errors name the file and document


def test_error_of_named_object_names_file_and_document(tmp_path):
    f = tmp_path / "cluster.yaml"
    f.write_text(CLUSTER)
    err = load_error(f)
    assert (err.obj, err.field, err.source) == (
        "Pod shop/web", "spec.containers[0].resources.requests.cpu", f"{f}#3")
    assert str(err) == (f"{f}#3: Pod shop/web: spec.containers[0].resources.requests.cpu: "
                        "invalid quantity 'abc': expected a number, e.g. '100m', '1.5Gi', '2e3'")


def test_parse_pod_of_a_loaded_object_names_its_source(tmp_path):
    f = tmp_path / "pod.json"
    bad = pod_dict("web", "shop", cpu="abc")
    f.write_text(json.dumps(bad))
    [obj] = load_objects(f)
    assert isinstance(obj, SourcedObject) and obj.source == f"{f}#0" and obj == bad
    with pytest.raises(ManifestError) as info:
        parse_pod(obj)
    assert str(info.value).startswith(
        f"{f}#0: Pod shop/web: spec.containers[0].resources.requests.cpu: invalid quantity")


def test_unnamed_objects_of_a_directory_are_file_and_document(tmp_path):
    (tmp_path / "a.yaml").write_text("kind: Node\nmetadata: {name: n1}\n")
    (tmp_path / "b.yaml").write_text("kind: Node\nmetadata: {name: n2}\n---\n"
                                     "kind: Pod\nmetadata: {namespace: x}\n")
    err = load_error(tmp_path)
    assert (err.obj, err.field, err.source) == (f"{tmp_path / 'b.yaml'}#1", "metadata.name", None)
    assert str(err) == f"{tmp_path / 'b.yaml'}#1: metadata.name: required"
    assert "objects#" not in str(err)


def test_list_items_are_named_by_index(tmp_path):
    f = tmp_path / "pods.json"
    f.write_text(json.dumps({"kind": "PodList", "items": [
        pod_dict("a"), {"metadata": {}}]}))
    err = load_error(f)
    assert (err.obj, err.field) == (f"{f}#0.items[1]", "metadata.name")
    f.write_text(json.dumps({"kind": "List", "items": [pod_dict("a"), pod_dict("b", cpu="-1")]}))
    err = load_error(f)
    assert str(err) == (f"{f}#0.items[1]: Pod default/b: spec.containers[0].resources.requests"
                        ".cpu: must be non-negative, got '-1'")


def test_duplicate_object_names_both_sources(tmp_path):
    (tmp_path / "a.yaml").write_text("kind: Node\nmetadata: {name: n1}\n")
    (tmp_path / "b.yaml").write_text("kind: Node\nmetadata: {name: n1}\n")
    err = load_error(tmp_path)
    assert (err.obj, err.field, err.source) == ("Node n1", "metadata.name", f"{tmp_path / 'b.yaml'}#0")
    assert f"({tmp_path / 'a.yaml'}#0)" in err.problem


def test_unknown_priority_class_names_the_source(tmp_path):
    f = tmp_path / "pod.yaml"
    f.write_text(yaml.safe_dump(pod_dict("web", spec={"priorityClassName": "gold"})))
    [rec] = parse_objects(load_objects(f)).pods
    with pytest.raises(ManifestError) as info:
        PriorityResolver().resolve(rec)
    assert str(info.value) == (f"{f}#0: Pod default/web: spec.priorityClassName: "
                               "no PriorityClass named 'gold'")


def test_plain_dicts_keep_unprefixed_messages_and_explicit_sources():
    bad = pod_dict("web", "shop", cpu="abc")
    with pytest.raises(ManifestError) as info:
        parse_objects([bad])
    assert str(info.value).startswith("Pod shop/web: spec.containers[0]")
    with pytest.raises(ManifestError) as info:
        parse_objects([node_dict("n"), bad], source="dump.yaml")
    assert str(info.value).startswith("dump.yaml#1: Pod shop/web: spec.containers[0]")
    with pytest.raises(ManifestError) as info:
        parse_objects([{"kind": "Pod", "metadata": {}}])
    assert str(info.value) == "objects#0: metadata.name: required"


def test_sourced_objects_behave_as_dicts():
    o = SourcedObject({"kind": "Node", "metadata": {"name": "n"}}, "f.yaml#2")
    assert o == {"kind": "Node", "metadata": {"name": "n"}} and isinstance(o, dict)
    for twin in (copy.deepcopy(o), copy.copy(o), pickle.loads(pickle.dumps(o))):
        assert twin == o and twin.source == "f.yaml#2" and isinstance(twin, SourcedObject)
    assert copy.deepcopy(o)["metadata"] is not o["metadata"]
    assert yaml.safe_load(yaml.safe_dump(o)) == o
    assert yaml.safe_load(yaml.dump(o, Dumper=yaml.CSafeDumper)) == o
    assert yaml.safe_load(yaml.dump(o)) == o
    assert json.loads(json.dumps(o)) == o


# --------------------------------------------------------------------------
# 2. duplicate keys


def test_duplicate_yaml_key_names_object_field_and_line(tmp_path):
    f = tmp_path / "dup.yaml"
    f.write_text("kind: Node\nmetadata: {name: n0}\n---\n"
                 "kind: Pod\nmetadata:\n  name: web\n  namespace: shop\n  labels:\n"
                 "    app: a\n    app: b\n")
    err = load_error(f, parse=False)
    assert str(err) == (f"{f}#1: Pod shop/web: metadata.labels.app: duplicate field 'app' "
                        "(line 10)")


def test_duplicate_top_level_key_without_a_name(tmp_path):
    f = tmp_path / "dup.yaml"
    f.write_text("kind: Pod\nkind: Node\n")
    err = load_error(f, parse=False)
    assert (err.obj, err.field, err.problem) == (f"{f}#0", "kind",
                                                 "duplicate field 'kind' (line 2)")


def test_duplicate_json_key_in_a_list_item(tmp_path):
    f = tmp_path / "dup.json"
    f.write_text('{"kind": "List", "items": [{"kind": "Node", "metadata": {"name": "n"}},'
                 ' {"kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": '
                 '[{"name": "c", "image": "a", "image": "b"}]}}]}')
    err = load_error(f, parse=False)
    assert str(err) == (f"{f}#0.items[1]: Pod p: spec.containers[0].image: "
                        "duplicate field 'image'")


def test_yaml_merge_keys_are_not_duplicates(tmp_path):
    f = tmp_path / "merge.yaml"
    f.write_text("kind: Node\nmetadata:\n  name: n\n  labels:\n"
                 "    <<: {zone: a, rack: r1}\n    zone: b\n")
    [obj] = load_objects(f)
    assert obj["metadata"]["labels"] == {"zone": "b", "rack": "r1"}


# --------------------------------------------------------------------------
# 3. depth, aliases, encodings


@pytest.mark.parametrize("text, suffix", [
    ("[" * 100_000 + "]" * 100_000, ".json"),
    ('{"a": ' * 100_000 + "1" + "}" * 100_000, ".json"),
    ("a: " + "[" * 100_000 + "]" * 100_000, ".yaml"),
    ("- " * 100_000 + "x", ".yaml"),
    ("a: " + "{a: " * 500 + "1" + "}" * 500, ".yaml"),
    ('{"a": ' + "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1) + "}", ".json"),
    ("kind: Pod\na: &a [*a]\n", ".yaml"),                      # an alias cycle
])
def test_deep_documents_are_refused(tmp_path, text, suffix):
    f = tmp_path / f"deep{suffix}"
    f.write_text(text)
    err = load_error(f, parse=False)
    assert str(err) == f"{f}#0: nested too deeply (more than {MAX_DEPTH} levels)"


def test_nesting_up_to_the_limit_loads(tmp_path):
    f = tmp_path / "ok.json"
    inner = "[" * (MAX_DEPTH - 2) + "]" * (MAX_DEPTH - 2)
    f.write_text('{"kind": "ConfigMap", "data": ' + inner + "}")
    assert len(load_objects(f)) == 1


def test_alias_bomb_is_refused(tmp_path):
    lines = ['a0: &a0 ["x", "x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    for i in range(1, 10):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    f = tmp_path / "bomb.yaml"
    f.write_text("kind: ConfigMap\n" + "\n".join(lines) + "\n")
    err = load_error(f, parse=False)
    assert err.obj == f"{f}#0" and "excessive aliasing" in err.problem


@pytest.mark.parametrize("name", ["bad.yaml", "bad.json"])
def test_non_utf8_file_is_refused_naming_it(tmp_path, name):
    f = tmp_path / name
    f.write_bytes(b"kind: Node\nmetadata: {name: \xff\xfe}\n")
    err = load_error(f, parse=False)
    assert str(err) == f"{f}: not UTF-8 text (byte 0xff at offset 28 cannot be decoded)"


def test_utf8_bom_is_dropped(tmp_path):
    f = tmp_path / "bom.json"
    f.write_bytes("\ufeff".encode() + json.dumps(node_dict("n")).encode())
    assert [o["metadata"]["name"] for o in load_objects(f)] == ["n"]


def test_json_nan_is_refused(tmp_path):
    f = tmp_path / "nan.json"
    f.write_text('{"kind": "Node", "x": NaN}')
    err = load_error(f, parse=False)
    assert (err.obj, err.problem) == (f"{f}#0", "invalid JSON: NaN is not a JSON value")


# --------------------------------------------------------------------------
# 4. kinds


@pytest.mark.parametrize("kind, right", [("pod", "Pod"), ("NODE", "Node"),
                                         ("namespace", "Namespace"), ("replicaset", "ReplicaSet")])
def test_case_typo_of_a_read_kind_is_refused(tmp_path, kind, right):
    f = tmp_path / "typo.yaml"
    f.write_text(f"kind: Node\nmetadata: {{name: n}}\n---\nkind: {kind}\nmetadata: {{name: x}}\n")
    err = load_error(f)
    assert str(err) == (f"{f}#1: {kind} x: kind: unknown kind {kind!r} "
                        f"(did you mean {right}? kinds are case-sensitive)")


def test_ignored_kinds_are_reported():
    objs = parse_objects([
        {"kind": "Deployment", "metadata": {"name": "d"}},
        {"kind": "ConfigMap", "metadata": {"name": "a"}},
        {"kind": "ConfigMap", "metadata": {"name": "b"}},
        {"kind": "Nodes", "metadata": {"name": "n"}},
        {"kind": "PodGroup", "apiVersion": "scheduling.volcano.sh/v1beta1",
         "metadata": {"name": "g"}},
        node_dict("n0"),
    ])
    assert objs.ignored() == [("ConfigMap", 2, None), ("Deployment", 1, None),
                              ("Nodes", 1, "Node"), ("PodGroup", 1, None)]
    assert ignored_kinds_warning(objs) == (
        "warning: ignored 5 objects of kinds tensorsched does not read: ConfigMap (2), "
        "Deployment (1), Nodes (1, did you mean Node?), PodGroup (1)")
    assert ignored_kinds_warning(parse_objects([node_dict("n0")])) is None
    assert ignored_kinds_warning(Objects(ignored_kinds={"Secret": 1})) == (
        "warning: ignored 1 object of kinds tensorsched does not read: Secret (1)")


# --------------------------------------------------------------------------
# 7. int64 overflow


@pytest.mark.parametrize("cpu, memory, field, problem", [
    ("1e16", None, "spec.containers[0].resources.requests.cpu",
     f"quantity '1e16' does not fit an int64 (more than {INT64_MAX} millicores)"),
    (None, "1e19", "spec.containers[0].resources.requests.memory",
     f"quantity '1e19' does not fit an int64 (more than {INT64_MAX} units)"),
    (None, "6E", "spec.containers[*].resources.requests.memory",
     "12000000000000000000 does not fit an int64"),           # two containers' sum
    (None, "9Ei", "spec.containers[*].resources.requests.memory",   # capped, then summed
     f"{2 * INT64_MAX} does not fit an int64"),
])
def test_quantities_and_sums_past_int64_are_refused(cpu, memory, field, problem):
    res = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    obj = pod_dict("web", cpu=None, memory=None)
    obj["spec"]["containers"] = [{"name": "a", "resources": {"requests": res}},
                                 {"name": "b", "resources": {"requests": res}}]
    with pytest.raises(ManifestError) as info:
        parse_pod(obj)
    assert (info.value.obj, info.value.field, info.value.problem) == ("Pod default/web", field,
                                                                       problem)


def test_node_limit_values_past_int64_are_refused():
    with pytest.raises(ManifestError) as info:
        parse_objects([node_dict("n", memory="1e30")])
    assert (info.value.field, info.value.problem) == (
        "status.capacity.memory", f"quantity '1e30' does not fit an int64 (more than "
                                  f"{INT64_MAX} units)")


def test_bound_pods_summing_past_int64_on_a_node_are_refused(recwarn):
    big = str(INT64_MAX // 1000)          # cores: the most millicores one pod may request
    pods = [pod_dict(n, cpu=big, memory=None, spec={"nodeName": "n"}) for n in ("a", "b")]
    with pytest.raises(StateError) as info:
        build_cluster([node_dict("n")] + pods)
    assert str(info.value) == (
        f"Pod default/b: spec.containers[*].resources.requests.cpu: {int(big) * 1000} more on "
        f"node 'n' (requested {int(big) * 1000}) overflows int64")
    cluster = build_cluster([node_dict("n")] + pods[:1])       # one fits
    state = cluster.state
    before = state.requested.copy()
    with pytest.raises(StateError):
        state.add_pod(cluster.resolve(pods[1]))
    assert (state.requested == before).all() and list(state.pods) == ["default/a"]
    assert not [w for w in recwarn if "overflow" in str(w.message)]


@pytest.mark.parametrize("text, problem", [
    ("kind: Node\nmetadata: {name: \x00}\n",
     "invalid YAML: unacceptable character #x0000: control characters are not allowed (line 2)"),
    ("kind: Node\nmetadata: {name: [unclosed\n",
     "invalid YAML: while parsing a flow sequence, did not find expected ',' or ']' "
     "(line 3, column 1)"),
])
def test_yaml_errors_are_one_line(tmp_path, text, problem):
    f = tmp_path / "bad.yaml"
    f.write_text(text)
    err = load_error(f, parse=False)
    assert (err.obj, err.problem) == (f"{f}#0", problem)
    assert "\n" not in str(err)
