"""DRA kinds (resource.k8s.io/v1) load like every other kind: records with
the fields the allocator reads, and a ManifestError naming object and field
for malformed input."""

import copy
import textwrap
from fractions import Fraction

import pytest

from tensorsched.framework.errors import ManifestError
from tensorsched.framework.parsing.dra import (
    node_selector_matches,
    parse_resource_claim,
    parse_resource_slice,
)
from tensorsched.framework.records.dra_records import AttrValue, format_quantity
from tensorsched.framework.parsing.manifests import ignored_kinds_warning, load_objects, parse_objects
from tensorsched.framework.parsing.semver import parse_semver

CLUSTER = textwrap.dedent("""\
    apiVersion: resource.k8s.io/v1
    kind: DeviceClass
    metadata: {name: gpu.example.com}
    spec:
      selectors:
      - cel: {expression: 'device.driver == "gpu.example.com"'}
      config:
      - opaque: {driver: gpu.example.com, parameters: {mode: shared}}
    ---
    apiVersion: resource.k8s.io/v1
    kind: ResourceSlice
    metadata: {name: node-1-gpus}
    spec:
      driver: gpu.example.com
      nodeName: node-1
      pool: {name: node-1, generation: 3, resourceSliceCount: 1}
      devices:
      - name: gpu-0
        attributes:
          model: {string: H200}
          index: {int: 0}
          driverVersion: {version: 1.2.3-rc.1}
          links: {strings: [a, b]}
        capacity:
          memory: {value: 141Gi}
        taints: [{key: broken, effect: NoSchedule}]
    ---
    apiVersion: resource.k8s.io/v1
    kind: ResourceClaim
    metadata: {name: train, namespace: ml}
    spec:
      devices:
        requests:
        - name: gpus
          exactly:
            deviceClassName: gpu.example.com
            count: 2
            selectors:
            - cel: {expression: 'device.attributes["gpu.example.com"].model == "H200"'}
            tolerations: [{key: broken, operator: Exists}]
        - name: any
          firstAvailable:
          - {name: big, deviceClassName: gpu.example.com, allocationMode: All}
          - {name: small, deviceClassName: gpu.example.com}
        constraints:
        - {requests: [gpus], matchAttribute: gpu.example.com/numa}
    ---
    apiVersion: resource.k8s.io/v1
    kind: ResourceClaimTemplate
    metadata: {name: one-gpu, namespace: ml}
    spec:
      metadata: {labels: {team: a}}
      spec:
        devices:
          requests:
          - name: gpu
            exactly: {deviceClassName: gpu.example.com}
    ---
    apiVersion: resource.k8s.io/v1beta1
    kind: ResourceClaim
    metadata: {name: old, namespace: ml}
    spec: {}
""")


@pytest.fixture
def objects(tmp_path):
    path = tmp_path / "dra.yaml"
    path.write_text(CLUSTER)
    return parse_objects(load_objects(path))


def test_records_carry_what_the_allocator_reads(objects):
    (cls,) = objects.device_classes
    assert cls.selectors == ('device.driver == "gpu.example.com"',)
    assert cls.config[0].parameters == {"mode": "shared"}
    (sl,) = objects.resource_slices
    assert (sl.driver, sl.pool.name, sl.pool.generation, sl.pool.resource_slice_count) == (
        "gpu.example.com",
        "node-1",
        3,
        1,
    )
    dev = sl.devices[0]
    assert dev.attributes["index"] == AttrValue("int", 0)
    assert dev.attributes["links"] == AttrValue("strings", ("a", "b"))
    assert dev.capacity["memory"].value == 141 * 2**30
    assert dev.taints[0].effect == "NoSchedule"
    (claim,) = objects.resource_claims  # the v1beta1 claim is not read
    assert objects.ignored_kinds == {"ResourceClaim": 1}
    assert claim.key == "ml/train"
    gpus, anyreq = claim.requests
    assert (gpus.exactly.count, gpus.exactly.allocation_mode) == (2, "ExactCount")
    assert gpus.exactly.tolerations[0].operator == "Exists"
    assert [s.name for s in anyreq.first_available] == ["big", "small"]
    assert anyreq.first_available[1].count == 1  # defaulted
    assert claim.constraints[0].match_attribute == "gpu.example.com/numa"
    (tmpl,) = objects.resource_claim_templates
    made = tmpl.instantiate("ml", "pod-a-gpu", uid="u1")
    assert made.key == "ml/pod-a-gpu" and made.requests == tmpl.claim.requests
    assert made.allocation is None and tmpl.labels == {"team": "a"}


def _slice():
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": "s"},
        "spec": {
            "driver": "d",
            "nodeName": "n",
            "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": "dev", "capacity": {"mem": {"value": "1Gi"}}}],
        },
    }


@pytest.mark.parametrize(
    "edit, field, words",
    [
        (lambda s: s["spec"].update(driver="Bad_Driver"), "spec.driver", "RFC 1123 subdomain"),
        (lambda s: s["spec"].update(driver="d" * 64), "spec.driver",
         "Too long: may not be more than 63 bytes"),
        (
            lambda s: s["spec"]["devices"][0].update(name="GPU 0"),
            "spec.devices[0].name",
            "RFC 1123 label",
        ),
        (
            lambda s: s["spec"].update(devices=[{"name": f"d{i}"} for i in range(129)]),
            "spec.devices",
            "at most 128",
        ),
    ],
)
def test_names_follow_upstream_rules(edit, field, words):
    obj = _slice()
    edit(obj)
    with pytest.raises(ManifestError) as err:
        parse_resource_slice(obj)
    assert err.value.field == field and words in str(err.value)


@pytest.mark.parametrize(
    "edit, field, words",
    [
        (lambda s: s["spec"].pop("driver"), "spec.driver", "Required value"),
        (
            lambda s: s["spec"]["pool"].pop("resourceSliceCount"),
            "spec.pool.resourceSliceCount",
            "Invalid value: 0: must be greater than zero",
        ),
        (lambda s: s["spec"].update(allNodes=True), "spec", "exactly one of"),
        (
            lambda s: s["spec"]["devices"][0]["capacity"]["mem"].update(value="1Gx"),
            "spec.devices[0].capacity.mem.value",
            "1Gx",
        ),
        (
            lambda s: s["spec"]["devices"][0].update(attributes={"a": {"int": 1, "string": "x"}}),
            "spec.devices[0].attributes.a",
            "exactly one value",
        ),
        (
            lambda s: s["spec"]["devices"][0].update(attributes={"v": {"version": "01.0.0"}}),
            "spec.devices[0].attributes.v.version",
            "semver",
        ),
        (
            lambda s: s["spec"]["devices"][0].update(taints=[{"key": "k", "effect": "Sometimes"}]),
            "spec.devices[0].taints[0].effect",
            "NoSchedule",
        ),
        (
            lambda s: s["spec"]["devices"][0].update(nodeName="n"),
            "spec.devices[0]",
            "perDeviceNodeSelection",
        ),
    ],
)
def test_bad_slices_name_object_and_field(edit, field, words):
    obj = _slice()
    edit(obj)
    with pytest.raises(ManifestError) as err:
        parse_resource_slice(obj)
    assert err.value.field == field and "ResourceSlice s" in str(err.value)
    assert words in str(err.value)


def _claim(requests):
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "c", "namespace": "ns"},
        "spec": {"devices": {"requests": requests}},
    }


@pytest.mark.parametrize(
    "requests, field, words",
    [
        ([{"name": "r"}], "spec.devices.requests[0]", "exactly one of"),
        (
            [{"name": "r", "firstAvailable": []}],
            "spec.devices.requests[0]",
            "exactly one of",
        ),
        (
            [{"name": "r", "exactly": {"deviceClassName": "c", "count": 0}}],
            "spec.devices.requests[0].exactly.count",
            "Invalid value: 0: must be greater than zero",
        ),
        (
            [{"name": "r", "exactly": {"deviceClassName": "c", "allocationMode": "Some"}}],
            "spec.devices.requests[0].exactly.allocationMode",
            "ExactCount",
        ),
        (
            [
                {"name": "r", "exactly": {"deviceClassName": "c"}},
                {"name": "r", "exactly": {"deviceClassName": "c"}},
            ],
            "spec.devices.requests[1]",
            'Duplicate value: "r"',
        ),
        (
            [
                {
                    "name": "r",
                    "firstAvailable": [
                        {"name": f"s{i}", "deviceClassName": "c"} for i in range(9)
                    ],
                }
            ],
            "spec.devices.requests[0].firstAvailable",
            "Too many: 9: must have at most 8 items",
        ),
    ],
)
def test_bad_claims_name_object_and_field(requests, field, words):
    with pytest.raises(ManifestError) as err:
        parse_resource_claim(_claim(requests))
    assert err.value.field == field and "ResourceClaim ns/c" in str(err.value)
    assert words in str(err.value)


def test_api_invalid_parts_the_allocator_answers_are_kept():
    """An empty selector, an empty constraint and an attribute without a value
    load (upstream's allocator reports them, with its own messages)."""
    obj = _claim([{"name": "r", "exactly": {"deviceClassName": "", "selectors": [{}]}}])
    obj["spec"]["devices"]["constraints"] = [{}]
    claim = parse_resource_claim(obj)
    assert claim.requests[0].exactly.selectors == (None,)
    assert claim.constraints[0].match_attribute is None
    s = _slice()
    s["spec"]["devices"][0]["attributes"] = {"a": {}}
    assert parse_resource_slice(s).devices[0].attributes["a"].kind == "none"


def test_duplicate_slice_names_are_refused_in_one_set():
    with pytest.raises(ManifestError, match="duplicate ResourceSlice"):
        parse_objects([_slice(), copy.deepcopy(_slice())])


def test_node_selector_matching():
    s = _slice()
    del s["spec"]["nodeName"]
    s["spec"]["nodeSelector"] = {
        "nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]},
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n9"]}]},
        ]
    }
    sel = parse_resource_slice(s).node_selector
    assert node_selector_matches(sel, "n1", {"zone": "a"})
    assert node_selector_matches(sel, "n9", {})
    assert not node_selector_matches(sel, "n1", {"zone": "b"})


def test_semver_and_quantity_text():
    assert parse_semver("1.2.3-rc.1") < parse_semver("1.2.3") < parse_semver("1.10.0")
    assert parse_semver("1.0.0-2") < parse_semver("1.0.0-a")
    with pytest.raises(ValueError):
        parse_semver("1.02.0")
    assert [format_quantity(Fraction(v)) for v in (4 * 2**30, 3, 0, Fraction(1, 2))] == [
        "4Gi",
        "3",
        "0",
        "500m",
    ]


def test_devices_of_one_shape_are_checked_once_and_keep_their_names():
    dev = {"attributes": {"model": {"string": "h100"}, "index": {"int": 0},
                          "v": {"version": "1.2.3"}},
           "capacity": {"mem": {"value": "80Gi"}}}
    obj = _slice()
    obj["spec"]["devices"] = [dict(copy.deepcopy(dev), name=f"gpu-{i}") for i in range(3)]
    first = parse_resource_slice(obj).devices
    again = parse_resource_slice(copy.deepcopy(obj)).devices
    assert [d.name for d in first] == [d.name for d in again] == ["gpu-0", "gpu-1", "gpu-2"]
    assert all(d.attributes == first[0].attributes and d.capacity == first[0].capacity
               for d in first + again)
    assert first[0].attributes["v"] == AttrValue("version", "1.2.3")
    # a known shape still has its name checked, and a value seen as valid
    # under one field is checked anew under another
    bad = copy.deepcopy(obj)
    bad["spec"]["devices"][1]["name"] = "Not_A_Label"
    with pytest.raises(ManifestError) as err:
        parse_resource_slice(bad)
    assert err.value.field == "spec.devices[1].name"
    bad = copy.deepcopy(obj)
    bad["spec"]["devices"][2]["attributes"]["v"] = {"version": "h100"}
    with pytest.raises(ManifestError) as err:
        parse_resource_slice(bad)
    assert err.value.field == "spec.devices[2].attributes.v.version"


def _template(requests, constraints=()):
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "t", "namespace": "ns"},
        "spec": {"spec": {"devices": {"requests": requests,
                                      "constraints": list(constraints)}}},
    }


_ONE = {"name": "a", "exactly": {"deviceClassName": "c"}}
_SUBS = {"name": "b", "firstAvailable": [{"name": "big", "deviceClassName": "c"},
                                         {"name": "small", "deviceClassName": "c"}]}


@pytest.mark.parametrize(
    "requests, constraints, field, words",
    [
        ([{"name": "a", "exactly": {"deviceClassName": "c", "allocationMode": "All",
                                    "count": 2}}], (),
         "devices.requests[0].exactly.count", "must not be specified when allocationMode is 'All'"),
        ([{"name": "b", "firstAvailable": [{"name": "s", "deviceClassName": "c",
                                            "allocationMode": "All", "count": 1}]}], (),
         "devices.requests[0].firstAvailable[0].count", "allocationMode is 'All'"),
        ([{"name": "b", "firstAvailable": [{"name": "s", "deviceClassName": "c"},
                                           {"name": "s", "deviceClassName": "c"}]}], (),
         "devices.requests[0].firstAvailable[1]", 'Duplicate value: "s"'),
        ([{"name": "b", "firstAvailable": [{"name": "Big_One", "deviceClassName": "c"}]}], (),
         "devices.requests[0].firstAvailable[0].name", "Big_One"),
        ([_ONE, _SUBS], [{"requests": ["a", "nope"], "matchAttribute": "d.example/numa"}],
         "devices.constraints[0].requests[1]", "must be the name of a request in the claim"),
        ([_ONE, _SUBS], [{"requests": ["a", "b/medium"], "matchAttribute": "d.example/numa"}],
         "devices.constraints[0].requests[1]", "b/medium"),
        ([_ONE, _SUBS], [{"requests": ["a", "b"], "matchAttribute": "numa"}],
         "devices.constraints[0].matchAttribute",
         "a fully qualified name must be a domain and a name separated by a slash"),
        ([_ONE, _SUBS], [{"distinctAttribute": "/numa"}],
         "devices.constraints[0].distinctAttribute", "the domain must not be empty"),
    ],
)
def test_claims_read_as_a_cluster_get_the_api_servers_checks(requests, constraints, field,
                                                              words):
    """What the API server refuses and upstream's allocator tests still build
    (so ``parse_*`` keeps it) is refused when claims are read as a cluster,
    for claims and templates alike; the parser alone still takes it."""
    template = _template(requests, constraints)
    with pytest.raises(ManifestError) as err:
        parse_objects([template])
    assert err.value.field == f"spec.spec.{field}" and "ResourceClaimTemplate ns/t" in str(err.value)
    assert words in str(err.value)
    claim = _claim(requests)
    claim["spec"]["devices"]["constraints"] = list(constraints)
    with pytest.raises(ManifestError) as err:
        parse_objects([claim])
    assert err.value.field == f"spec.{field}"
    parse_resource_claim(claim)


def test_constraints_naming_requests_and_subrequests_load():
    parse_objects([_template([_ONE, _SUBS], [
        {"requests": ["a", "b/big"], "matchAttribute": "d.example/numa"},
        {"requests": ["b"], "distinctAttribute": "d.example/pcieRoot"},
        {"matchAttribute": "d.example/numa"}])])


def test_a_device_named_twice_in_one_slice_is_refused_when_read_as_a_cluster():
    s = _slice()
    s["spec"]["devices"].append(copy.deepcopy(s["spec"]["devices"][0]))
    with pytest.raises(ManifestError) as err:
        parse_objects([s])
    assert err.value.field == "spec.devices[1]" and 'Duplicate value: "dev"' in str(err.value)
    assert len(parse_resource_slice(s).devices) == 2       # the allocator's invalid pool


def test_a_read_kind_in_another_version_is_named_with_its_version():
    """DeviceClass / ResourceSlice / ... of resource.k8s.io/v1beta1 are kinds
    tensorsched reads, only not in that version: the warning says which
    version it got and which one it reads (the other ignored kinds keep
    their line)."""
    old = [{"apiVersion": f"resource.k8s.io/{v}", "kind": k, "metadata": {"name": f"x-{v}"}}
           for k, v in (("DeviceClass", "v1beta1"), ("ResourceSlice", "v1beta2"),
                        ("ResourceSlice", "v1beta2"))]
    objects = parse_objects(old + [{"apiVersion": "v1", "kind": "ConfigMap",
                                    "metadata": {"name": "c"}}])
    assert ignored_kinds_warning(objects).splitlines() == [
        "warning: ignored 1 object of kinds tensorsched does not read: ConfigMap (1)",
        "warning: ignored 3 objects of an apiVersion tensorsched does not read: "
        "DeviceClass resource.k8s.io/v1beta1 (1): only resource.k8s.io/v1 is read; "
        "ResourceSlice resource.k8s.io/v1beta2 (2): only resource.k8s.io/v1 is read"]
    assert ignored_kinds_warning(parse_objects(old[:1])) == (
        "warning: ignored 1 object of an apiVersion tensorsched does not read: "
        "DeviceClass resource.k8s.io/v1beta1 (1): only resource.k8s.io/v1 is read")
