"""``parsing.selectors``: a compiled LabelSelector matches exactly the
labels apimachinery's selector matches (null matches nothing, ``{}``
everything), equal selectors compile to one key, and affinity terms
resolve their namespaces as upstream's ``AffinityTerm`` does."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from tensorsched.framework.parsing import selectors as SEL
from tensorsched.framework.parsing.manifests import parse_pod
from tensorsched.generators.clusters import pod_dict

KEYS = ["a", "b", "c"]
VALUES = ["x", "y"]


def reference_matches(sel: dict | None, labels: dict) -> bool:
    """A LabelSelector read as the API documents it, straight off the dict."""
    if sel is None:
        return False
    for k, v in (sel.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for e in sel.get("matchExpressions") or ():
        key, op, values = e["key"], e["operator"], e.get("values") or []
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


labels_st = st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=3)
expr_st = st.one_of(
    st.builds(lambda k, op, vs: {"key": k, "operator": op, "values": vs},
              st.sampled_from(KEYS), st.sampled_from(["In", "NotIn"]),
              st.lists(st.sampled_from(VALUES), min_size=1, max_size=2)),
    st.builds(lambda k, op: {"key": k, "operator": op},
              st.sampled_from(KEYS), st.sampled_from(["Exists", "DoesNotExist"])))
selector_st = st.one_of(st.none(), st.fixed_dictionaries(
    {}, optional={"matchLabels": labels_st, "matchExpressions": st.lists(expr_st, max_size=3)}))


@settings(max_examples=30)
@given(selector_st, labels_st)
def test_compiled_selector_matches_as_the_api_reads_it(sel, labels):
    assert SEL.selector_matches(SEL.compile_selector(sel), labels) == reference_matches(sel, labels)


def test_null_matches_nothing_and_empty_matches_everything():
    assert SEL.compile_selector(None) == SEL.NOTHING
    assert SEL.compile_selector({}) == SEL.EVERYTHING
    assert not SEL.selector_matches(SEL.NOTHING, {})
    assert SEL.selector_matches(SEL.EVERYTHING, {"a": "x"})


def test_equal_selectors_compile_to_one_hashable_key():
    one = SEL.compile_selector({"matchLabels": {"b": "y", "a": "x"},
                              "matchExpressions": [{"key": "c", "operator": "In",
                                                    "values": ["y", "x", "x"]}]})
    two = SEL.compile_selector({"matchExpressions": [{"key": "c", "operator": "In",
                                                    "values": ["x", "y"]},
                                                   {"key": "a", "operator": "In",
                                                    "values": ["x"]}],
                              "matchLabels": {"b": "y"}})
    assert one == two and hash(one) == hash(two)
    assert {one: 1}[two] == 1


def test_extra_requirements_are_added_and_an_unknown_operator_matches_nothing():
    sel = SEL.compile_selector({}, extra=(("a", "Exists", ()),))
    assert not SEL.selector_matches(sel, {}) and SEL.selector_matches(sel, {"a": "x"})
    bad = SEL.compile_selector({"matchExpressions": [{"key": "a", "operator": "Gt",
                                                    "values": ["1"]}]})
    assert not SEL.selector_matches(bad, {"a": "2"})


def test_namespace_labels_default_to_the_name_label():
    assert SEL.namespace_labels_of("ns") == {SEL.NS_NAME_LABEL: "ns"}
    assert SEL.namespace_labels_of("ns", {"other": {}}) == {SEL.NS_NAME_LABEL: "ns"}
    assert SEL.namespace_labels_of("ns", {"ns": {"team": "a"}}) == {"team": "a"}


def test_a_term_without_namespaces_or_selector_is_the_owners_namespace():
    term = SEL.affinity_term("shop", {"labelSelector": {"matchLabels": {"app": "web"}},
                                    "topologyKey": "zone"})
    assert term.namespaces == frozenset({"shop"}) and term.ns_selector == SEL.NOTHING
    assert term.topology_key == "zone" and term.weight == 1
    assert term.matches("shop", {"app": "web"})
    assert not term.matches("other", {"app": "web"})
    assert not term.matches("shop", {"app": "db"})


def test_a_namespace_selector_matches_by_namespace_labels():
    term = SEL.affinity_term("shop", {"labelSelector": {},
                                    "namespaceSelector": {"matchLabels": {"team": "a"}}})
    assert term.namespaces == frozenset()            # not the owner's by default
    table = {"ns1": {"team": "a"}, "ns2": {"team": "b"}}
    assert term.matches("ns1", {}, table) and not term.matches("ns2", {}, table)
    assert not term.matches("shop", {}, table)
    every = SEL.affinity_term("shop", {"labelSelector": {}, "namespaceSelector": {}})
    assert every.matches("anywhere", {})
    by_name = SEL.affinity_term("shop", {"labelSelector": {}, "namespaceSelector": {
        "matchLabels": {SEL.NS_NAME_LABEL: "ns3"}}})
    assert by_name.matches("ns3", {}) and not by_name.matches("ns4", {})


def test_listed_namespaces_and_a_selector_are_alternatives():
    term = SEL.affinity_term("shop", {"namespaces": ["x"], "labelSelector": {},
                                    "namespaceSelector": {"matchLabels": {"team": "a"}}})
    assert term.matches("x", {}) and term.matches("y", {}, {"y": {"team": "a"}})
    assert not term.matches("shop", {})


def test_required_and_preferred_terms_and_their_weights():
    aff = {"requiredDuringSchedulingIgnoredDuringExecution": [
               {"labelSelector": {}, "topologyKey": "zone"}],
           "preferredDuringSchedulingIgnoredDuringExecution": [
               {"weight": 7, "podAffinityTerm": {"labelSelector": {}, "topologyKey": "host"}}]}
    (req,) = SEL.required_terms("ns", aff)
    (pref,) = SEL.preferred_terms("ns", aff)
    assert (req.topology_key, req.weight) == ("zone", 1)
    assert (pref.topology_key, pref.weight) == ("host", 7)
    assert SEL.required_terms("ns", None) == () == SEL.preferred_terms("ns", {})


def test_pod_terms_are_sorted_by_kind_and_memoized():
    term = {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "zone"}
    rec = parse_pod(pod_dict("p", namespace="ns", spec={"affinity": {
        "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}}))
    got = SEL.pod_terms(rec)
    assert got["req_aff"] == () == got["pref_aff"] == got["pref_anti"]
    assert got["req_anti"][0].namespaces == frozenset({"ns"})
    assert SEL.pod_terms(rec) is got
