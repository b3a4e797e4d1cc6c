"""Label selectors are validated as apimachinery does
(metav1validation.ValidateLabelSelector, util/validation IsQualifiedName /
IsValidLabelValue), with upstream's messages, wherever objects carry one."""

import copy
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tensorsched.framework.errors import ManifestError
from tensorsched.framework.parsing.manifests import parse_objects, parse_pdb, parse_pod
from tensorsched.framework.parsing.meta import (
    is_label_value,
    is_qualified_name,
    label_value_errors,
    qualified_name_errors,
)
from tensorsched.generators.clusters import pod_dict
from tensorsched.framework.parsing.workloads import parse_replica_set, parse_stateful_set

NAME_MSG = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must start "
            "and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
            "'123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")
VALUE_MSG = ("a valid label must be an empty string or consist of alphanumeric characters, '-', "
             "'_' or '.', and must start and end with an alphanumeric character (e.g. "
             "'MyValue',  or 'my_value',  or '12345', regex used for validation is "
             "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")
PREFIX_MSG = ("prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
              "characters, '-' or '.', and must start and end with an alphanumeric character "
              "(e.g. 'example.com', regex used for validation is "
              "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")

# reference: the regexes of k8s.io/apimachinery/pkg/util/validation, Go-anchored
_NAME = re.compile(r"\A([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]\Z")
_VALUE = re.compile(r"\A(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?\Z")
_SUBDOMAIN = re.compile(r"\A[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z")


def ref_qualified(key: str) -> bool:
    parts = key.split("/")
    if len(parts) > 2:
        return False
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix or len(prefix.encode()) > 253 or not _SUBDOMAIN.match(prefix):
            return False
    name = parts[-1]
    return 0 < len(name.encode()) <= 63 and bool(_NAME.match(name))


def ref_value(v: str) -> bool:
    return len(v.encode()) <= 63 and bool(_VALUE.match(v))


ALPHABET = st.sampled_from(list("aZ09-_./ \n\tä"))
TEXT = st.text(ALPHABET, max_size=80) | st.text(max_size=10)


@settings(max_examples=400, deadline=None)
@given(TEXT)
def test_validators_agree_with_reference_regexes(s):
    assert is_qualified_name(s) == ref_qualified(s)
    assert (not qualified_name_errors(s)) == ref_qualified(s)
    assert is_label_value(s) == ref_value(s)
    assert (not label_value_errors(s)) == ref_value(s)


@settings(max_examples=200, deadline=None)
@given(st.from_regex(r"\A([a-z0-9]{1,10}\.){0,3}[a-z0-9]{1,10}/[A-Za-z0-9]([-A-Za-z0-9_.]{0,20}[A-Za-z0-9])?\Z"))
def test_generated_valid_keys_pass(key):
    assert qualified_name_errors(key) == []


def test_messages_are_upstreams():
    assert qualified_name_errors("bad key") == [NAME_MSG]
    assert label_value_errors("{{.bad-value.}}") == [VALUE_MSG]
    assert label_value_errors("a" * 64) == ["must be no more than 63 characters"]
    assert qualified_name_errors("x" * 64) == ["name part must be no more than 63 characters"]
    assert qualified_name_errors("") == ["name part must be non-empty", NAME_MSG]
    assert qualified_name_errors("/a") == ["prefix part must be non-empty"]
    assert qualified_name_errors("Example.com/a") == [PREFIX_MSG]
    assert qualified_name_errors("a" * 254 + "/a") == [
        "prefix part must be no more than 253 characters"]
    assert qualified_name_errors("a/b/c")[0].startswith(
        "a qualified name must consist of alphanumeric characters")
    assert qualified_name_errors("a/b/c")[0].endswith(
        "with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')")
    assert label_value_errors("abc\n") == [VALUE_MSG]       # Go's $ is the end of text


REQ = "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"
PREF = "spec.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm"
SPREAD = "spec.topologySpreadConstraints[0]"


def _pod(selector, where="anti", field="labelSelector"):
    term = {"topologyKey": "kubernetes.io/hostname", field: selector}
    if where == "anti":
        spec = {"affinity": {"podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [term]}}}
    elif where == "pref":
        spec = {"affinity": {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 1, "podAffinityTerm": term}]}}}
    else:
        spec = {"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone",
                                               "whenUnsatisfiable": "DoNotSchedule",
                                               "labelSelector": selector}]}
    return pod_dict("web", "shop", spec=spec)


def expr(key="app", operator="In", values=("a",)):
    e = {"key": key, "operator": operator}
    if values is not None:
        e["values"] = list(values)
    return {"matchExpressions": [e]}


@pytest.mark.parametrize("where, field, selector, path, problem", [
    # the example: a required anti-affinity value that is no label value
    ("anti", "labelSelector", expr(values=["{{.bad-value.}}"]),
     f"{REQ}.labelSelector.matchExpressions[0].values[0]",
     f'Invalid value: "{{{{.bad-value.}}}}": {VALUE_MSG}'),
    ("anti", "labelSelector", expr(key="bad key"), f"{REQ}.labelSelector.matchExpressions[0].key",
     f'Invalid value: "bad key": {NAME_MSG}'),
    ("anti", "labelSelector", expr(values=[]), f"{REQ}.labelSelector.matchExpressions[0].values",
     "Required value: must be specified when `operator` is 'In' or 'NotIn'"),
    ("anti", "labelSelector", expr(operator="NotIn", values=None),
     f"{REQ}.labelSelector.matchExpressions[0].values",
     "Required value: must be specified when `operator` is 'In' or 'NotIn'"),
    ("anti", "namespaceSelector", expr(operator="Exists"),
     f"{REQ}.namespaceSelector.matchExpressions[0].values",
     "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"),
    ("anti", "namespaceSelector", expr(operator="Gt", values=["1"]),
     f"{REQ}.namespaceSelector.matchExpressions[0].operator",
     'Invalid value: "Gt": not a valid selector operator'),
    ("anti", "namespaceSelector", expr(operator="in"),
     f"{REQ}.namespaceSelector.matchExpressions[0].operator",
     'Invalid value: "in": not a valid selector operator'),
    ("pref", "labelSelector", {"matchLabels": {"app": "a b"}}, f"{PREF}.labelSelector.matchLabels.app",
     f'Invalid value: "a b": {VALUE_MSG}'),
    ("pref", "labelSelector", {"matchLabels": {"-app": "a"}}, f"{PREF}.labelSelector.matchLabels",
     f'Invalid value: "-app": {NAME_MSG}'),
    ("pref", "namespaceSelector", {"matchLabels": {"team": "x" * 64}},
     f"{PREF}.namespaceSelector.matchLabels.team",
     f'Invalid value: "{"x" * 64}": must be no more than 63 characters'),
    ("spread", "labelSelector", expr(key="example.com/"),
     f"{SPREAD}.labelSelector.matchExpressions[0].key",
     'Invalid value: "example.com/": name part must be non-empty; ' + NAME_MSG),
    ("spread", "labelSelector", expr(operator="DoesNotExist", values=["x"]),
     f"{SPREAD}.labelSelector.matchExpressions[0].values",
     "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"),
])
def test_pod_selectors_are_validated(where, field, selector, path, problem):
    with pytest.raises(ManifestError) as info:
        parse_objects([_pod(selector, where, field)])
    assert (info.value.obj, info.value.field, info.value.problem) == ("Pod shop/web", path, problem)


def test_valid_selectors_load():
    for sel in ({}, {"matchLabels": {"app.kubernetes.io/name": "web", "empty": ""}},
                expr(operator="Exists", values=None), expr(operator="DoesNotExist", values=[]),
                expr(operator="NotIn", values=["a", "b_c.D-1"])):
        for where in ("anti", "pref", "spread"):
            parse_pod(_pod(copy.deepcopy(sel), where))


def test_bad_anti_affinity_never_lets_the_pod_schedule(backend):
    from tensorsched.framework import explain
    from tensorsched.generators.clusters import node_dict
    with pytest.raises(ManifestError) as info:
        explain([node_dict("n0")], _pod(expr(values=["{{.bad-value.}}"])), backend=backend)
    assert info.value.field == f"{REQ}.labelSelector.matchExpressions[0].values[0]"


PDB = {"kind": "PodDisruptionBudget", "metadata": {"name": "p", "namespace": "shop"},
       "spec": {"minAvailable": 1, "selector": expr(values=["ok"])}}


@pytest.mark.parametrize("selector, path, problem", [
    (expr(values=["not ok"]), "spec.selector.matchExpressions[0].values[0]",
     f'Invalid value: "not ok": {VALUE_MSG}'),
    (expr(values=[]), "spec.selector.matchExpressions[0].values",
     "Required value: must be specified when `operator` is 'In' or 'NotIn'"),
    ({"matchLabels": {"a/b/c": "x"}}, "spec.selector.matchLabels", None),
])
def test_pdb_selector_is_validated(selector, path, problem):
    obj = copy.deepcopy(PDB)
    obj["spec"]["selector"] = selector
    with pytest.raises(ManifestError) as info:
        parse_pdb(obj)
    assert (info.value.obj, info.value.field) == ("PodDisruptionBudget shop/p", path)
    if problem:
        assert info.value.problem == problem


@pytest.mark.parametrize("parse, kind", [(parse_replica_set, "ReplicaSet"),
                                         (parse_stateful_set, "StatefulSet")])
def test_controller_selectors_are_validated(parse, kind):
    obj = {"kind": kind, "metadata": {"name": "c", "namespace": "shop"},
           "spec": {"selector": expr(key="bad key")}}
    with pytest.raises(ManifestError) as info:
        parse(obj)
    assert (info.value.obj, info.value.field, info.value.problem) == (
        f"{kind} shop/c", "spec.selector.matchExpressions[0].key",
        f'Invalid value: "bad key": {NAME_MSG}')
    obj["spec"]["selector"] = expr(operator="Like")
    with pytest.raises(ManifestError) as info:
        parse(obj)
    assert info.value.problem == 'Invalid value: "Like": not a valid selector operator'
    # In without values is kept (the workload index drops a selector that
    # LabelSelectorAsSelector rejects, as DefaultSelector does)
    obj["spec"]["selector"] = expr(values=[])
    assert parse(obj).selector == expr(values=[])
