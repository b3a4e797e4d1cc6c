"""Strict decoding of every kind read (``parsing.strict_fields``): a new
object with a field the API (Kubernetes 1.35's) does not have is refused as
``kubectl apply`` (``--validate=strict``) has the API server refuse it,
naming the file, the object and the field's path; a stored object
(``metadata.resourceVersion`` set: a dump) loads without the field, with a
warning line (``Objects.unknown_fields``) and a ``ts.UnknownFieldWarning``;
the tables are generated from the official client's models
(``api_fields_gen``) and hold what the API has."""

from __future__ import annotations

import copy
import re
import warnings
import zipfile
from pathlib import Path

import pytest
import yaml

import tensorsched as ts
from tensorsched.bench.ingest import replica_pods
from tensorsched.bench.strict_fields_load import running
from tensorsched.cli import main
from tensorsched.framework.errors import ManifestError
from tensorsched.framework.parsing import api_fields, api_fields_gen, dra
from tensorsched.framework.parsing.manifests import (
    OBJECT_KINDS,
    ignored_kinds_warning,
    load_objects,
    parse_objects,
    parse_pod,
)
from tensorsched.framework.parsing.pod_templates import PodTemplates
from tensorsched.framework.parsing.strict_fields import (
    KIND_STRUCTS,
    STRUCTS,
    UnknownFieldWarning,
    unknown_fields,
)
from tensorsched.framework.scheduler.cluster import build_cluster

REPO = Path(__file__).resolve().parents[3]


def pod():
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"},
            "spec": {
                "containers": [{"name": "a", "image": "x"},
                               {"name": "b", "image": "y",
                                "resources": {"limits": {"cpu": "1"}},
                                "env": [{"name": "E", "valueFrom": {"fieldRef": {
                                    "fieldPath": "metadata.name"}}}]}],
                "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}],
                "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [
                        {"key": "zone", "operator": "In", "values": ["a"]}]}]}}},
                "volumes": [{"name": "v", "csi": {
                    "driver": "csi.example.com",
                    "volumeAttributes": {"anyKey": "x", "Other.Key": "y"}}}]}}


def node():
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
            "spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]},
            "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}}}


def pdb():
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": "b", "namespace": "ns"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "a"}}}}


def stateful_set():
    return {"apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": "s", "namespace": "ns"},
            "spec": {"selector": {"matchLabels": {"app": "a"}}, "serviceName": "s",
                     "template": {"metadata": {"labels": {"app": "a"}},
                                  "spec": {"containers": [{"name": "c", "image": "x"}]}}}}


def pv():
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv"},
            "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                     "csi": {"driver": "csi.example.com", "volumeHandle": "h",
                             "volumeAttributes": {"k": "v"}}}}


def priority_class():
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": "high"}, "value": 1000}


def pod_group():
    return {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": "g", "namespace": "ns"}, "spec": {"minMember": 2}}


def service():
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "svc", "namespace": "ns"},
            "spec": {"selector": {"app": "a"}, "ports": [{"port": 80}]}}


def storage_class():
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": "sc"}, "provisioner": "csi.example.com"}


def namespace():
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}}


_AFFINITY = ("spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution."
             "nodeSelectorTerms.0.matchExpressions.0")

# (make, where: the dotted path to the mapping, list indices as numbers; the key added)
CASES = [
    (pod, "spec.tolerations.0", "efect"),
    (pod, "spec", "nodeselector"),
    (pod, "spec.containers.1.resources", "limitz"),
    (pod, "spec.containers.1.env.0.valueFrom.fieldRef", "fieldpath"),
    (pod, "spec.volumes.0.csi", "volumeAttributez"),
    (pod, _AFFINITY, "operater"),
    (pod, "metadata", "lables"),
    (pod, "", "Spec"),
    (node, "spec", "podCIDRz"),
    (node, "spec.taints.0", "efect"),
    (pdb, "spec", "minAvailible"),
    (pdb, "spec.selector", "matchLabel"),
    (stateful_set, "spec.template.spec.containers.0", "imagePullPolicyy"),
    (stateful_set, "spec", "replics"),
    (pv, "spec.csi", "volumeHandel"),
    (priority_class, "", "preemptionPolicyy"),
    (pod_group, "spec", "minMembers"),
    (service, "spec.ports.0", "targetport"),
    (storage_class, "", "allowVolumeExpansionn"),
    (namespace, "metadata", "annotation"),
]


def _at(obj, where):
    for part in where.split(".") if where else ():
        obj = obj[int(part)] if part.isdigit() else obj[part]
    return obj


def _path(where, field):
    out = ""
    for part in (where.split(".") if where else []) + [field]:
        out = f"{out}[{part}]" if part.isdigit() else (f"{out}.{part}" if out else part)
    return out


def _label(obj):
    meta = obj["metadata"]
    ns = f"{meta['namespace']}/" if "namespace" in meta else ""
    return f"{obj['kind']} {ns}{meta['name']}"


def _ids(case):
    return f"{case[0].__name__}-{case[2]}"


@pytest.mark.parametrize("make", sorted({c[0] for c in CASES}, key=lambda f: f.__name__))
def test_the_objects_of_every_case_load_as_written(make):
    obj = make()
    assert unknown_fields(obj, KIND_STRUCTS[obj["kind"]]) == []
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnknownFieldWarning)
        got = parse_objects([obj])
    assert got.unknown_fields == [] and ignored_kinds_warning(got) is None


@pytest.mark.parametrize("make, where, field", CASES, ids=[_ids(c) for c in CASES])
def test_a_new_object_with_an_unknown_field_is_refused_naming_file_object_and_path(
        tmp_path, make, where, field):
    obj = make()
    _at(obj, where)[field] = "1"
    file = tmp_path / "cluster.yaml"
    file.write_text(yaml.safe_dump_all([node() if make is not node else namespace(), obj]))
    with pytest.raises(ManifestError) as err:
        parse_objects(load_objects(file))
    assert str(err.value) == (f'{file}#1: {_label(obj)}: strict decoding error: '
                              f'unknown field "{_path(where, field)}"')


@pytest.mark.parametrize("make, where, field", CASES, ids=[_ids(c) for c in CASES])
def test_a_stored_object_with_an_unknown_field_loads_with_a_warning(make, where, field):
    obj = make()
    obj["metadata"]["resourceVersion"] = "42"
    _at(obj, where)[field] = "1"
    path = _path(where, field)
    with pytest.warns(UnknownFieldWarning) as caught:
        got = parse_objects([obj])
    line = (f'warning: {_label(obj)}: unknown field "{path}": tensorsched does not model it '
            "(a stored object, perhaps from a newer API server); read without")
    assert got.unknown_fields == [(_label(obj), None, [path])]
    assert ignored_kinds_warning(got).splitlines() == [line]
    (w,) = [w for w in caught if w.category is UnknownFieldWarning]
    assert str(w.message) == line and w.message.fields == ((_label(obj), None, [path]),)


def test_map_keys_are_free_and_every_unknown_field_is_named_in_document_order():
    obj = pod()
    obj["spec"]["volumes"][0]["csi"]["volumeAttributes"]["nodeselector"] = "free"
    obj["spec"]["containers"][1]["resources"]["limits"]["example.com/limitz"] = "1"
    assert unknown_fields(obj, "Pod") == []
    obj["spec"]["containers"][1]["resources"]["limitz"] = {}
    obj["spec"]["tolerations"][0]["efect"] = "NoSchedule"
    obj["spec"]["nodeselector"] = {}
    with pytest.raises(ManifestError) as err:
        parse_objects([obj])
    assert err.value.problem == (
        'strict decoding error: unknown field "spec.containers[1].resources.limitz", '
        'unknown field "spec.tolerations[0].efect", unknown field "spec.nodeselector"')


def test_free_form_values_are_not_looked_into():
    obj = stateful_set()
    obj["metadata"]["managedFields"] = [{"manager": "m", "operation": "Update",
                                         "fieldsType": "FieldsV1",
                                         "fieldsV1": {"f:spec": {"f:anything": {}}}}]
    obj["spec"]["volumeClaimTemplates"] = [{"metadata": {"name": "data"}, "spec": {
        "resources": {"requests": {"storage": "1Gi"}}, "accessModes": ["ReadWriteOnce"]}}]
    assert unknown_fields(obj, "StatefulSet") == []
    obj["spec"]["volumeClaimTemplates"][0]["spec"]["resources"]["request"] = {}
    assert unknown_fields(obj, "StatefulSet") == [
        "spec.volumeClaimTemplates[0].spec.resources.request"]


# --------------------------------------------------------------------------
# pods of one template: decoded once per shape, never letting a field through


def _pods(n, stored=False):
    out = []
    for i in range(n):
        p = pod()
        p["metadata"].update(name=f"p-{i}", uid=f"u-{i}")
        # a volume of its own, as kubectl's pods have: cheap keys miss
        p["spec"]["volumes"].append({"name": f"api-{i}", "projected": {"sources": []}})
        if stored:
            p["metadata"]["resourceVersion"] = str(i + 1)
        out.append(p)
    return out


@pytest.mark.parametrize("columns", [False, True])
@pytest.mark.parametrize("where, field", [
    ("spec.containers.1.env.0.valueFrom.fieldRef", "fieldpath"),   # not in the template key
    ("spec.volumes.1.projected", "source"),
    ("metadata", "lables"),
    ("", "stauts"),
])
def test_a_repeat_of_a_template_is_still_decoded_strictly(columns, where, field):
    pods = _pods(6)
    _at(pods[4], where)[field] = "1"
    templates = PodTemplates(parse_pod)
    message = f'Pod ns/p-4: strict decoding error: unknown field "{_path(where, field)}"'
    with pytest.raises(ManifestError, match=re.escape(message)):
        if columns:
            templates.parse_columns(pods)
        else:
            for p in pods:
                templates.parse(p)
    if not columns:
        assert templates.hits == 3      # the pods before it shared their template


def test_a_plain_repeat_with_an_unknown_metadata_field_is_refused():
    """Pods with one spec (no volume of their own) are plain repeats of the
    columns' fast branch: their keys are still compared."""
    pods = [pod() for _ in range(5)]
    for i, p in enumerate(pods):
        p["metadata"]["name"] = f"p-{i}"
    pods[3]["metadata"]["generatename"] = "p-"
    with pytest.raises(ManifestError, match=r'Pod ns/p-3: strict decoding error: unknown '
                                            r'field "metadata.generatename"'):
        ts.Scheduler(build_cluster([node()]), backend="numpy").schedule_pending(pods)


def test_stored_pods_of_a_template_with_an_unknown_field_are_each_warned():
    pods = _pods(4, stored=True)
    for p in pods:                      # in a part the template key covers
        p["spec"]["tolerations"][0]["tolerationSecondz"] = 1
    pods[2]["status"] = {"phase": "Pending", "newerField": 1}
    with pytest.warns(UnknownFieldWarning):
        got = parse_objects(pods)
    assert [(label, paths) for label, _, paths in got.unknown_fields] == [
        (f"Pod ns/p-{i}", ["spec.tolerations[0].tolerationSecondz"]
         + (["status.newerField"] if i == 2 else [])) for i in range(4)]
    # a new pod of the same spec is refused, after stored ones read
    new = copy.deepcopy(pods[0])
    del new["metadata"]["resourceVersion"]
    new["metadata"]["name"] = "p-new"
    with pytest.raises(ManifestError, match="Pod ns/p-new: strict decoding error"):
        parse_objects(pods + [new])


def test_a_new_pod_repeating_a_stored_pods_spec_is_refused():
    stored = pod()
    stored["metadata"]["resourceVersion"] = "1"
    stored["spec"]["containers"][0]["imagePullPolicyy"] = "Always"
    news = []
    for i in range(3):
        p = copy.deepcopy(stored)
        del p["metadata"]["resourceVersion"]
        p["metadata"]["name"] = f"n-{i}"
        news.append(p)
    with pytest.warns(UnknownFieldWarning), pytest.raises(
            ManifestError, match=r'Pod ns/n-0: strict decoding error: unknown field '
                                 r'"spec.containers\[0\].imagePullPolicyy"'):
        ts.Scheduler(build_cluster([node(), stored]), backend="numpy").schedule_pending(news)


# --------------------------------------------------------------------------
# the facade and the CLI


def test_build_cluster_warns_of_stored_objects_and_refuses_new_ones():
    stored = pod()
    stored["metadata"]["resourceVersion"] = "9"
    stored["spec"]["nodeselector"] = {"zone": "a"}
    with pytest.warns(ts.UnknownFieldWarning, match=r'Pod ns/p: unknown field '
                                                     r'"spec.nodeselector"') as caught:
        cluster = build_cluster([node(), stored])
    assert [w.message.fields for w in caught if w.category is ts.UnknownFieldWarning] == [
        (("Pod ns/p", None, ["spec.nodeselector"]),)]
    assert cluster.objects.unknown_fields == [("Pod ns/p", None, ["spec.nodeselector"])]
    assert len(cluster.pending) == 1     # read without the field: no selector
    del stored["metadata"]["resourceVersion"]
    with pytest.raises(ManifestError, match='unknown field "spec.nodeselector"'):
        build_cluster([node(), stored])


def test_the_cli_prints_each_stored_objects_line_once_and_refuses_a_new_one(tmp_path, capsys):
    stored = pod()
    stored["metadata"]["resourceVersion"] = "3"
    stored["spec"]["tolerations"][0]["efect"] = "NoSchedule"
    file = tmp_path / "cluster.yaml"
    file.write_text(yaml.safe_dump_all([node(), stored]))
    assert main(["schedule", "--cluster", str(file)]) == 0
    err = capsys.readouterr().err.splitlines()
    line = (f'warning: {file}#1: Pod ns/p: unknown field "spec.tolerations[0].efect": '
            "tensorsched does not model it (a stored object, perhaps from a newer API "
            "server); read without")
    assert err.count(line) == 1 and not [e for e in err if "UnknownFieldWarning" in e]
    del stored["metadata"]["resourceVersion"]
    file.write_text(yaml.safe_dump_all([node(), stored]))
    assert main(["schedule", "--cluster", str(file)]) == 2
    err = capsys.readouterr().err
    assert (f'{file}#1: Pod ns/p: strict decoding error: unknown field '
            '"spec.tolerations[0].efect"') in err
    assert "Traceback" not in err


def _objects_in(doc):
    """Every mapping of ``doc`` that is an object of a kind read (Lists'
    items, a trace step's ``create``...)."""
    if isinstance(doc, list):
        for v in doc:
            yield from _objects_in(v)
    elif isinstance(doc, dict):
        if doc.get("kind") in KIND_STRUCTS and isinstance(doc.get("metadata"), dict):
            yield doc
        else:
            for v in doc.values():
                yield from _objects_in(v)


def test_the_example_manifests_have_no_unknown_field():
    files = sorted(p for p in (REPO / "data").rglob("*") if p.suffix in (".yaml", ".json"))
    read = 0
    for f in files:
        for doc in yaml.safe_load_all(f.read_text()):
            for o in _objects_in(doc):
                assert unknown_fields(o, KIND_STRUCTS[o["kind"]]) == [], (f, o["metadata"])
                read += 1
    assert read >= 10


# --------------------------------------------------------------------------
# the tables


def test_every_kind_read_has_a_table_and_every_struct_named_exists():
    assert {k.kind for k, _ in OBJECT_KINDS} <= set(KIND_STRUCTS)
    assert set(KIND_STRUCTS.values()) <= set(STRUCTS)
    for fields in STRUCTS.values():
        for value in fields.values():
            assert value is None or value.removeprefix("[]").removeprefix("{}") in STRUCTS
    assert api_fields.CLIENT_VERSION == "35.0.0"


@pytest.mark.parametrize("struct, field, value", [
    ("Pod", "spec", "PodSpec"),
    ("PodSpec", "containers", "[]Container"),
    ("PodSpec", "nodeSelector", None),
    ("PodSpec", "overhead", None),
    ("Container", "resources", "ResourceRequirements"),
    ("ResourceRequirements", "limits", None),
    ("ResourceRequirements", "claims", "[]ResourceClaim(core)"),
    ("Volume", "csi", "CSIVolumeSource"),
    ("CSIVolumeSource", "volumeAttributes", None),
    ("Affinity", "nodeAffinity", "NodeAffinity"),
    ("NodeSelectorTerm", "matchExpressions", "[]NodeSelectorRequirement"),
    ("ObjectMeta", "managedFields", "[]ManagedFieldsEntry"),
    ("ManagedFieldsEntry", "fieldsV1", None),
    ("PodDisruptionBudgetSpec", "maxUnavailable", None),       # an IntOrString
    ("StatefulSetSpec", "volumeClaimTemplates", "[]PersistentVolumeClaim"),
    ("CounterSet", "counters", "{}Counter"),
    ("OpaqueDeviceConfiguration", "parameters", None),           # a RawExtension
    ("PodGroupSpec", "minResources", None),
])
def test_known_fields_resolve(struct, field, value):
    assert STRUCTS[struct][field] == value


def test_the_fields_the_dra_parser_refuses_as_later_than_135_are_known():
    later = {"ResourceSliceSpec": dra._LATER_SLICE_FIELDS, "Device": dra._LATER_DEVICE_FIELDS,
             "DeviceCounterConsumption": dra._LATER_CONSUMPTION_FIELDS,
             "ExactDeviceRequest": dra._LATER_REQUEST_FIELDS,
             "DeviceSubRequest": dra._LATER_REQUEST_FIELDS,
             "DeviceRequestAllocationResult": dra._LATER_RESULT_FIELDS}
    for struct, fields in later.items():
        for name, _gate in fields:
            assert name in STRUCTS[struct]
            assert name not in api_fields.STRUCTS[struct]     # not in 1.35's client


_MODEL = '''
class {name}(object):
    openapi_types = {types!r}
    attribute_map = {names!r}
'''


def _wheel(path, models):
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("kubernetes/__init__.py", '__version__ = "99.1.0"\n')
        for name, fields in models.items():
            types = {a: t for a, (t, _) in fields.items()}
            names = {a: j for a, (_, j) in fields.items()}
            z.writestr(f"kubernetes/client/models/{name.lower()}.py",
                       _MODEL.format(name=name, types=types, names=names))


def test_the_generator_writes_the_tables_form_from_the_models(tmp_path):
    wheel = tmp_path / "kubernetes-99.1.0-py2.py3-none-any.whl"
    _wheel(wheel, {
        "V1Thing": {"api_version": ("str", "apiVersion"), "spec": ("V1ThingSpec", "spec"),
                    "parts": ("list[V1Part]", "parts"), "by_name": ("dict(str, V1Part)", "byName"),
                    "raw": ("object", "raw"), "tags": ("list[str]", "tags"),
                    "ref": ("CoreV1Ref", "ref")},
        "V1ThingSpec": {"labels": ("dict(str, str)", "labels"), "res": ("ResourceV1Ref", "res")},
        "V1Part": {"size": ("int", "size")},
        "CoreV1Ref": {"name": ("str", "name")},
        "ResourceV1Ref": {"name": ("str", "name"), "uid": ("str", "uid")},
        "V1Unused": {"x": ("str", "x")},
    })
    version, models = api_fields_gen.read_models(wheel)
    structs, kinds = api_fields_gen.tables(models, {"Thing": "V1Thing"})
    assert version == "99.1.0" and kinds == {"Thing": "Thing"}
    assert structs == {
        "Part": {"size": None},
        "Ref(core)": {"name": None},
        "Ref(resource)": {"name": None, "uid": None},
        "Thing": {"apiVersion": None, "byName": "{}Part", "parts": "[]Part", "raw": None,
                  "ref": "Ref(core)", "spec": "ThingSpec", "tags": None},
        "ThingSpec": {"labels": None, "res": "Ref(resource)"},
    }
    text = api_fields_gen.render(version, structs, kinds)
    space: dict = {}
    exec(compile(text, "api_fields", "exec"), space)
    assert space["STRUCTS"] == structs and space["CLIENT_VERSION"] == "99.1.0"
    assert "generated" in text and "api_fields_gen" in text


def test_the_committed_module_is_the_generators_text():
    """What ``render`` writes from the committed tables is the committed
    module, byte for byte (no hand edit)."""
    text = api_fields_gen.render(api_fields.CLIENT_VERSION, api_fields.STRUCTS,
                                 api_fields.KIND_STRUCTS)
    assert text == (REPO / "framework/parsing/api_fields.py").read_text()


def test_a_simulations_added_node_and_submitted_pod_are_decoded_strictly():
    sim = ts.Simulation([node()], backend="numpy")
    agenda = list(sim.agenda)
    bad = node()
    bad["metadata"]["name"] = "n2"
    bad["status"]["allocatabel"] = {"cpu": "8"}
    with pytest.raises(ManifestError, match=r'Node n2: strict decoding error: unknown field '
                                            r'"status.allocatabel"'):
        sim.add_node(bad, at=5)
    p = pod()
    p["spec"]["containers"][0]["resources"] = {"request": {"cpu": "1"}}
    with pytest.raises(ManifestError, match=r'Pod ns/p: strict decoding error: unknown field '
                                            r'"spec.containers\[0\].resources.request"'):
        sim.submit([p], at=5)
    assert list(sim.agenda) == agenda


def test_the_load_benchmarks_dumps_have_no_unknown_field():
    pods = replica_pods(3)
    stored = running(pods)
    assert all(unknown_fields(p, "Pod") == [] for p in pods + stored)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnknownFieldWarning)
        got = parse_objects(copy.deepcopy(stored))
    assert [p.node_name for p in got.pods] == ["node-00000"] * 3


def test_stored_pods_read_outside_parse_objects_warn_once_a_call():
    """Stored pods handed to a scheduler or a simulation (not through
    ``parse_objects``) are read without their unknown fields, with one
    ``UnknownFieldWarning`` a call naming them; nothing stays remembered,
    so a later call of clean pods warns nothing."""
    stored = []
    for i in range(3):
        p = pod()
        p["metadata"].update(name=f"s-{i}", resourceVersion="7")
        p["spec"]["nodeselector"] = {"zone": "a"}
        stored.append(p)
    sched = ts.Scheduler(build_cluster([node()]), backend="numpy")
    with pytest.warns(UnknownFieldWarning) as caught:
        bindings, _ = sched.schedule_pending(stored)
    (w,) = [w for w in caught if w.category is UnknownFieldWarning]
    assert [f[0] for f in w.message.fields] == ["Pod ns/s-0", "Pod ns/s-1", "Pod ns/s-2"]
    assert all(f[2] == ["spec.nodeselector"] for f in w.message.fields)
    assert 'Pod ns/s-0: unknown field "spec.nodeselector"' in str(w.message)
    assert sorted(b.pod for b in bindings) == ["ns/s-0", "ns/s-1", "ns/s-2"]
    clean = pod()
    clean["metadata"]["name"] = "c"
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnknownFieldWarning)
        sched.schedule_pending([clean])
    sim = ts.Simulation([node()], backend="numpy")
    late = copy.deepcopy(stored[0])
    late["metadata"]["name"] = "late"
    with pytest.warns(UnknownFieldWarning, match=r'Pod ns/late: unknown field '
                                                 r'"spec.nodeselector"'):
        sim.submit([late], at=5)


def _stored(obj, name):
    obj["metadata"].update(name=name, resourceVersion="7")
    return obj


def test_a_read_that_fails_half_way_leaves_no_unknown_field_behind():
    """The unknown fields of the stored pods a failed read took in before
    its error belong to that read: a later call of clean pods warns of
    nothing, and the scheduler's pending pods are as they were."""
    first = _stored(pod(), "s-0")
    first["spec"]["nodeselector"] = {"zone": "a"}
    broken = pod()
    broken["metadata"]["name"] = "broken"
    broken["spec"]["priority"] = "high"
    sched = ts.Scheduler(build_cluster([node()]), backend="numpy")
    for read in (parse_objects, sched.schedule_pending):
        with pytest.raises(ManifestError, match="broken"):
            read([copy.deepcopy(first), copy.deepcopy(broken)])
    clean = pod()
    clean["metadata"]["name"] = "c"
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnknownFieldWarning)
        bindings, _ = sched.schedule_pending([clean])
        parse_objects([copy.deepcopy(clean)])
    assert [b.pod for b in bindings] == ["ns/c"]


def test_an_object_parsed_on_its_own_warns_at_once_and_is_not_kept():
    """A stored node a simulation adds (parsed on its own, outside any
    reading call) is warned of when it is read, naming it, once (not again
    as it joins), and not kept for whichever reading call comes next."""
    sim = ts.Simulation([node()], backend="numpy")
    late = _stored(node(), "n2")
    late["status"]["allocatabel"] = {"cpu": "8"}
    with pytest.warns(UnknownFieldWarning, match=r'Node n2: unknown field "status.allocatabel"'):
        sim.add_node(late, at=5)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnknownFieldWarning)
        sim.run(6)          # joins at 5 without a second warning
    assert "n2" in sim.cluster.state.node_rows
    clean = pod()
    clean["metadata"]["name"] = "c"
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnknownFieldWarning)
        got = parse_objects([clean])
    assert got.unknown_fields == []
