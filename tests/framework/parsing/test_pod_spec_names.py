"""Annotations, container port names, host ports held twice in a pod,
volume names and mounts, container names are refused at load as the API server refuses
them, naming the file, the object and the field; pods that repeat a
template are refused alike; a refused load or submit changes nothing."""

import copy
import textwrap

import pytest

from tensorsched.framework.errors import ManifestError
from tensorsched.framework.parsing.controllers import expand_workloads
from tensorsched.framework.parsing.manifests import load_objects, parse_objects, parse_pod
from tensorsched.framework.parsing.meta import TOTAL_ANNOTATION_SIZE_LIMIT, NameRules
from tensorsched.framework.parsing.pod_names import port_name_errors
from tensorsched.framework.parsing.pod_templates import PodTemplates
from tensorsched.framework.simulation.simulation import Simulation
from tensorsched.generators.clusters import node_dict, pod_dict

NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
        "status": {"allocatable": {"cpu": "4"}}}
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "shop"},
       "spec": {"containers": [{"name": "app", "image": "nginx:1.27",
                                "resources": {"requests": {"cpu": "100m"}}}]}}
LIMIT = TOTAL_ANNOTATION_SIZE_LIMIT


def refused(obj) -> ManifestError:
    with pytest.raises(ManifestError) as info:
        parse_objects([obj])
    return info.value


def annotated(obj, annotations):
    out = copy.deepcopy(obj)
    out["metadata"]["annotations"] = annotations
    return out


def with_spec(**spec):
    out = copy.deepcopy(POD)
    out["spec"].update(spec)
    return out


def container(**over):
    c = {"name": "app", "image": "nginx:1.27"}
    c.update(over)
    return c


# --------------------------------------------------------------------------
# annotations, on every kind


def deployment(annotations):
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "shop"},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"},
                                               "annotations": annotations},
                                  "spec": copy.deepcopy(POD["spec"])}}}


def claim_template(annotations):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": "gpu", "namespace": "shop"},
            "spec": {"metadata": {"annotations": annotations},
                     "spec": {"devices": {"requests": [
                         {"name": "r", "exactly": {"deviceClassName": "gpu"}}]}}}}


KINDS = [
    (NODE, "Node n1", "metadata.annotations"),
    (POD, "Pod shop/web", "metadata.annotations"),
    ({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
      "metadata": {"name": "high"}, "value": 10}, "PriorityClass high", "metadata.annotations"),
    ({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
      "metadata": {"name": "data", "namespace": "shop"}, "spec": {}},
     "PersistentVolumeClaim shop/data", "metadata.annotations"),
    ({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}},
     "Namespace shop", "metadata.annotations"),
]


@pytest.mark.parametrize("obj, ident, field", KINDS)
@pytest.mark.parametrize("annotations, words", [
    ({"ok": "1", "bad key": "x"}, ['Invalid value: "bad key"', "name part must consist of"]),
    ({"a/b/c": ""}, ['Invalid value: "a/b/c"', "a qualified name"]),
    ({"Example_.com/x": ""}, ["prefix part a lowercase RFC 1123 subdomain"]),
    ({"k": "v" * LIMIT}, [f"Too long: may not be more than {LIMIT} bytes",
                          f"got {LIMIT + 1}"]),
    # bytes, not characters: 2 bytes per 'é' in UTF-8
    ({"k": "é" * (LIMIT // 2)}, [f"got {LIMIT + 1}"]),
])
def test_bad_annotations_are_refused_on_every_kind(obj, ident, field, annotations, words):
    err = refused(annotated(obj, annotations))
    assert (err.obj, err.field) == (ident, field), str(err)
    for w in words:
        assert w in err.problem, str(err)


@pytest.mark.parametrize("obj, ident, field", KINDS)
def test_annotations_within_the_rules_load(obj, ident, field):
    # keys compared in lowercase (upper case allowed), a value any text,
    # exactly the limit in bytes
    ok = {"Example.com/Owner": "Team A, #1 ü", "k": "v" * (LIMIT - 1 - len("Example.com/Owner")
                                                          - len("Team A, #1 ü".encode()))}
    assert sum(len(k.encode()) + len(v.encode()) for k, v in ok.items()) == LIMIT
    parse_objects([annotated(obj, ok)])


def test_template_annotations_are_checked_where_they_are_written():
    with pytest.raises(ManifestError) as info:
        expand_workloads([deployment({"bad key": "x"})])
    assert (info.value.obj, info.value.field) == ("Deployment shop/web",
                                                  "spec.template.metadata.annotations")
    err = refused(claim_template({"bad key": "x"}))
    assert (err.obj, err.field) == ("ResourceClaimTemplate shop/gpu",
                                    "spec.metadata.annotations"), str(err)
    pods, _ = expand_workloads([deployment({"Example.com/Note": "x"})])
    parse_objects(pods + [claim_template({"note": "x"})])


def test_bad_annotations_in_a_file_name_the_file_and_document(tmp_path):
    f = tmp_path / "nodes.yaml"
    f.write_text(textwrap.dedent("""\
        kind: Node
        metadata: {name: ok}
        ---
        kind: Node
        metadata:
          name: worker-2
          annotations: {"team lead": ann}
    """))
    with pytest.raises(ManifestError) as info:
        parse_objects(load_objects(f))
    assert str(info.value).startswith(
        f'{f}#1: Node worker-2: metadata.annotations: Invalid value: "team lead"')


def pods_of_one_template(n, **spec):
    out = []
    for i in range(n):
        p = copy.deepcopy(POD)
        p["metadata"]["name"] = f"web-{i}"
        p["spec"].update(copy.deepcopy(spec))
        out.append(p)
    return out


@pytest.mark.parametrize("edit, field", [
    (lambda p: p["metadata"].update(annotations={"bad key": "x"}), "metadata.annotations"),
    (lambda p: p["metadata"].update(annotations={"k": "v" * LIMIT}), "metadata.annotations"),
    (lambda p: p["spec"]["volumes"].append({"name": "Cfg_2", "configMap": {"name": "c"}}),
     "spec.volumes[1].name"),
    (lambda p: p["spec"]["volumes"].append({"name": "cfg", "emptyDir": {}}),
     "spec.volumes[1].name"),
    (lambda p: p["spec"]["containers"][0]["volumeMounts"].append(
        {"name": "missing", "mountPath": "/x"}), "spec.containers[0].volumeMounts[1].name"),
    (lambda p: p["spec"]["containers"][0]["volumeMounts"].append(
        {"name": "cfg", "mountPath": "/etc/cfg"}),
     "spec.containers[0].volumeMounts[1].mountPath"),
])
def test_a_template_repeat_is_refused_as_parse_pod_refuses_it(edit, field):
    # the fields the template key leaves out (annotations, volumes the
    # plugins do not read, mounts) are checked on every repeat
    spec = {"volumes": [{"name": "cfg", "configMap": {"name": "c"}}],
            "containers": [container(volumeMounts=[{"name": "cfg", "mountPath": "/etc/cfg"}])]}
    pods = pods_of_one_template(5, **spec)
    edit(pods[3])
    with pytest.raises(ManifestError) as alone:
        parse_pod(pods[3])
    assert (alone.value.obj, alone.value.field) == ("Pod shop/web-3", field), str(alone.value)
    for parse in (lambda: parse_objects(pods),
                  lambda: PodTemplates(parse_pod).parse_columns(pods),
                  lambda: [PodTemplates(parse_pod).parse(p) for p in pods]):
        with pytest.raises(ManifestError) as info:
            parse()
        assert str(info.value) == str(alone.value)


def test_valid_repeats_with_their_own_volumes_still_share_their_template():
    pods = pods_of_one_template(6, containers=[container()])
    for i, p in enumerate(pods):     # kubectl's pods: a token volume each, mounted
        p["spec"]["volumes"] = [{"name": f"kube-api-access-{i}", "projected": {"sources": []}}]
        p["spec"]["containers"][0]["volumeMounts"] = [
            {"name": f"kube-api-access-{i}", "mountPath": "/var/run/secrets"}]
        p["metadata"]["annotations"] = {"example.com/n": str(i)}
    templates = PodTemplates(parse_pod)
    cols = templates.parse_columns(pods)
    assert templates.hits == 5 and len(cols.keys) == 6


# --------------------------------------------------------------------------
# container ports, names, volumes, mounts


@pytest.mark.parametrize("name, words", [
    ("http-metrics-port", "no more than 15 characters"),
    ("HTTP", "only lowercase letters (a-z), digits (0-9) and '-'"),
    ("web_ui", "only lowercase letters"),
    ("8080", "at least one letter (a-z)"),
    ("-http", "must not begin or end with '-'"),
    ("http-", "must not begin or end with '-'"),
    ("h--ttp", "must not contain two '-' in a row"),
])
def test_port_names_are_iana_service_names(name, words):
    err = refused(with_spec(containers=[container(ports=[
        {"containerPort": 80}, {"name": name, "containerPort": 81}])]))
    assert (err.obj, err.field) == ("Pod shop/web", "spec.containers[0].ports[1].name"), str(err)
    assert f'Invalid value: "{name}"' in err.problem and words in err.problem, str(err)


@pytest.mark.parametrize("name", ["http", "h2c", "web-ui-2", "a", "x" * 15, "1-a"])
def test_valid_port_names(name):
    assert port_name_errors(name) == ()


def test_port_names_are_unique_within_a_container_only():
    err = refused(with_spec(containers=[container(ports=[
        {"name": "http", "containerPort": 80}, {"name": "http", "containerPort": 81}])]))
    assert err.field == "spec.containers[0].ports[1].name", str(err)
    assert "Duplicate value: 'http' (also spec.containers[0].ports[0].name)" in err.problem
    # the API server compares a container's ports only: two containers may
    # both name a port "http"
    rec = parse_pod(with_spec(containers=[
        container(ports=[{"name": "http", "containerPort": 80}]),
        container(name="sidecar", ports=[{"name": "http", "containerPort": 81}])]))
    assert rec.name == "web"


def hp(host_port, protocol=None, ip=None, container_port=80):
    p = {"containerPort": container_port, "hostPort": host_port}
    if protocol is not None:
        p["protocol"] = protocol
    if ip is not None:
        p["hostIP"] = ip
    return p


@pytest.mark.parametrize("spec, field, key, holder", [
    # two ports of one container
    ({"containers": [container(ports=[hp(8080), hp(8080, container_port=81)])]},
     "spec.containers[0].ports[1].hostPort", "TCP//8080", "spec.containers[0].ports[0]"),
    # across the regular containers; the protocol defaults to TCP
    ({"containers": [container(ports=[hp(8080)]),
                     container(name="side", ports=[hp(8080, "TCP", container_port=81)])]},
     "spec.containers[1].ports[0].hostPort", "TCP//8080", "spec.containers[0].ports[0]"),
    ({"containers": [container(ports=[hp(53, "UDP", "10.0.0.1")]),
                     container(name="side", ports=[hp(53, "UDP", "10.0.0.1", 54)])]},
     "spec.containers[1].ports[0].hostPort", "UDP/10.0.0.1/53", "spec.containers[0].ports[0]"),
    # within one init container
    ({"initContainers": [container(name="init", ports=[hp(9000), hp(9000, "", "",
                                                                    container_port=81)])]},
     "spec.initContainers[0].ports[1].hostPort", "TCP//9000",
     "spec.initContainers[0].ports[0]"),
    # hostNetwork: an unset hostPort is the containerPort
    ({"hostNetwork": True,
      "containers": [container(ports=[{"containerPort": 8080}]),
                     container(name="side", ports=[hp(8080, container_port=8080)])]},
     "spec.containers[1].ports[0].hostPort", "TCP//8080", "spec.containers[0].ports[0]"),
])
def test_a_host_port_held_twice_in_a_pod_is_refused(spec, field, key, holder):
    err = refused(with_spec(**spec))
    assert (err.obj, err.field) == ("Pod shop/web", field), str(err)
    assert err.problem == (f"Duplicate value: '{key}' (protocol/hostIP/hostPort; "
                           f"also {holder}.hostPort)"), str(err)


def test_a_host_port_conflict_names_the_file(tmp_path):
    f = tmp_path / "pods.yaml"
    f.write_text(textwrap.dedent("""\
        kind: Pod
        metadata: {name: web, namespace: shop}
        spec:
          containers:
          - {name: app, image: nginx, ports: [{containerPort: 80, hostPort: 80}]}
          - {name: side, image: envoy, ports: [{containerPort: 81, hostPort: 80}]}
    """))
    with pytest.raises(ManifestError) as info:
        parse_objects(load_objects(f))
    assert str(info.value).startswith(
        f"{f}#0: Pod shop/web: spec.containers[1].ports[0].hostPort: "
        "Duplicate value: 'TCP//80'"), str(info.value)


def test_host_ports_the_api_server_lets_through():
    # the API server compares (protocol, hostIP as written, hostPort):
    # another protocol, another IP, "" against "0.0.0.0" (text, not
    # address), hostPort 0 or unset, and an init container against the
    # regular containers or another init container (they run one at a
    # time; sidecars too) all pass
    rec = parse_pod(with_spec(
        initContainers=[container(name="init", ports=[hp(8080), hp(8081)]),
                        container(name="init2", ports=[hp(8080)]),
                        container(name="proxy", restartPolicy="Always", ports=[hp(8080)])],
        containers=[container(ports=[hp(8080), hp(8080, "UDP", container_port=81),
                                     hp(8080, ip="10.0.0.1", container_port=82),
                                     hp(8080, ip="0.0.0.0", container_port=83),
                                     hp(0, container_port=84), {"containerPort": 85}]),
                    container(name="side", ports=[hp(0, container_port=84),
                                                  hp(8080, "SCTP", container_port=86)])]))
    assert rec.name == "web"
    # the records keep every host port the scheduler sees (the sidecar's too)
    assert sorted((h.protocol, h.host_ip, h.port) for h in rec.host_ports) == sorted([
        ("TCP", "0.0.0.0", 8080), ("UDP", "0.0.0.0", 8080), ("TCP", "10.0.0.1", 8080),
        ("TCP", "0.0.0.0", 8080), ("SCTP", "0.0.0.0", 8080), ("TCP", "0.0.0.0", 8080)])


def test_a_template_repeat_with_a_host_port_conflict_is_refused():
    pods = pods_of_one_template(4, containers=[container(ports=[hp(80), hp(80, container_port=81)])])
    with pytest.raises(ManifestError) as alone:
        parse_pod(pods[2])
    for parse in (lambda: parse_objects(pods),
                  lambda: PodTemplates(parse_pod).parse_columns(pods)):
        with pytest.raises(ManifestError) as info:
            parse()
        assert info.value.field == "spec.containers[0].ports[1].hostPort"
        assert info.value.problem == alone.value.problem


@pytest.mark.parametrize("spec, field, words", [
    ({"containers": [{"image": "nginx"}]}, "spec.containers[0].name", "Required value"),
    ({"containers": [container(), {"name": "", "image": "x"}]}, "spec.containers[1].name",
     "Required value"),
    ({"initContainers": [{"image": "busybox"}]}, "spec.initContainers[0].name",
     "Required value"),
    ({"volumes": [{"configMap": {"name": "c"}}]}, "spec.volumes[0].name", "Required value"),
    ({"volumes": [{"name": "Data_1", "emptyDir": {}}]}, "spec.volumes[0].name",
     'Invalid value: "Data_1"'),
    ({"volumes": [{"name": "data", "emptyDir": {}},
                  {"name": "data", "persistentVolumeClaim": {"claimName": "c"}}]},
     "spec.volumes[1].name", "Duplicate value: 'data' (also spec.volumes[0].name)"),
    ({"containers": [container(volumeMounts=[{"name": "logs", "mountPath": "/logs"}])]},
     "spec.containers[0].volumeMounts[0].name", "Not found: 'logs'"),
    ({"volumes": [{"name": "logs", "emptyDir": {}}],
      "initContainers": [container(name="init", volumeMounts=[{"mountPath": "/logs"}])]},
     "spec.initContainers[0].volumeMounts[0].name", "Required value"),
    ({"volumes": [{"name": "logs", "emptyDir": {}}],
      "containers": [container(volumeMounts=[{"name": "logs"}])]},
     "spec.containers[0].volumeMounts[0].mountPath", "Required value"),
    ({"volumes": [{"name": "a", "emptyDir": {}}, {"name": "b", "emptyDir": {}}],
      "containers": [container(volumeMounts=[{"name": "a", "mountPath": "/d"},
                                             {"name": "b", "mountPath": "/d"}])]},
     "spec.containers[0].volumeMounts[1].mountPath", 'Invalid value: "/d": must be unique'),
])
def test_container_names_volumes_and_mounts_are_refused(spec, field, words):
    err = refused(with_spec(**spec))
    assert (err.obj, err.field) == ("Pod shop/web", field), str(err)
    assert words in err.problem, str(err)


def test_valid_volumes_and_mounts_load():
    rec = parse_pod(with_spec(
        volumes=[{"name": "logs", "emptyDir": {}},
                 {"name": "data", "persistentVolumeClaim": {"claimName": "data"}}],
        initContainers=[container(name="init", volumeMounts=[
            {"name": "data", "mountPath": "/d"}])],
        containers=[container(volumeMounts=[{"name": "logs", "mountPath": "/logs"},
                                            {"name": "data", "mountPath": "/d"}]),
                    container(name="side", volumeMounts=[{"name": "logs", "mountPath": "/l"}])]))
    assert rec.name == "web"


def test_name_rules_off_let_nameless_containers_and_free_volume_names_through(monkeypatch):
    # (the golden cases' harness: upstream's Go tests leave container names
    # out and name volumes "PVC_1"); mounts, ports and uniqueness stay checked
    monkeypatch.setattr(NameRules, "enforced", False)
    rec = parse_pod(with_spec(containers=[{"resources": {}}],
                              volumes=[{"name": "PVC_1",
                                        "persistentVolumeClaim": {"claimName": "c"}}]))
    assert rec.name == "web"
    assert refused(with_spec(volumes=[{"name": "PVC_1", "emptyDir": {}},
                                      {"name": "PVC_1", "emptyDir": {}}])).field == \
        "spec.volumes[1].name"
    assert refused(with_spec(containers=[container(volumeMounts=[
        {"name": "x", "mountPath": "/x"}])])).field == "spec.containers[0].volumeMounts[0].name"


# --------------------------------------------------------------------------
# a refused operation changes nothing


@pytest.mark.parametrize("ports, field", [
    ([{"name": "HTTP", "containerPort": 80}], "spec.containers[0].ports[0].name"),
    ([hp(80), hp(80, container_port=81)], "spec.containers[0].ports[1].hostPort"),
])
def test_a_refused_submit_leaves_the_simulation_unchanged(ports, field):
    sim = Simulation([node_dict("n1", cpu="4", memory="16Gi")], backend="numpy", seed=1)
    good = pod_dict("good", cpu="1")
    bad = pod_dict("bad", cpu="1")
    bad["spec"]["containers"][0]["ports"] = ports
    agenda = list(sim.agenda)
    with pytest.raises(ManifestError) as info:
        sim.submit([good, bad])
    assert (info.value.obj, info.value.field) == ("Pod default/bad", field)
    assert list(sim.agenda) == agenda
    sim.step(until=10)
    assert not sim.cluster.state.pods           # the good pod did not arrive either
    sim.submit([good])
    sim.step(until=20)
    assert set(sim.cluster.state.pods) == {"default/good"}
