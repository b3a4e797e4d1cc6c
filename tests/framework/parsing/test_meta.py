"""``parsing.meta``: the accessors every object parser shares.  Each
accessor returns the value in its parsed form or raises a ManifestError
naming the object, the field path and the source file; timestamps are
integer nanoseconds since the epoch; identity checks kind, name and
namespace.  (Label key / value validation against upstream's regexes and
messages is in test_label_selectors.py.)"""

from __future__ import annotations

import copy
import pickle
from datetime import datetime, timedelta, timezone

import pytest
import yaml
from hypothesis import given, settings, strategies as st

from tensorsched.framework.errors import ManifestError
from tensorsched.framework.parsing import meta as M
from tensorsched.framework.parsing.quantity import INT64_MAX

CTX = M.ObjectContext("Pod ns/p", "f.yaml#2")


def failure(call, *args, **kwargs) -> ManifestError:
    with pytest.raises(ManifestError) as info:
        call(*args, **kwargs)
    return info.value


def test_join_path_quotes_keys_that_are_not_identifiers():
    assert M.join_path("", "spec") == "spec"
    assert M.join_path("spec", "nodeName") == "spec.nodeName"
    assert M.join_path("metadata.labels", "app.kubernetes.io/name") == \
        'metadata.labels["app.kubernetes.io/name"]'
    assert M.join_path("a", "1x") == 'a["1x"]'


@pytest.mark.parametrize("value, name", [(None, "null"), (True, "a boolean"), (3, "an integer"),
                                         (1.5, "a number"), ("s", "a string"), ([], "a list"),
                                         ({}, "a mapping"), ((), "tuple")])
def test_type_name_in_yaml_words(value, name):
    assert M.type_name(value) == name


def test_sourced_object_keeps_its_source_through_copies_and_pickles():
    obj = M.SourcedObject({"kind": "Pod", "spec": {"a": [1]}}, "c.yaml#0")
    assert M.source_of(obj) == "c.yaml#0"
    assert M.source_of({"kind": "Pod"}) is None
    assert M.source_of(M.SourcedObject({})) is None          # an empty source is none
    for twin in (copy.copy(obj), copy.deepcopy(obj), pickle.loads(pickle.dumps(obj))):
        assert twin == obj and twin.source == "c.yaml#0" and isinstance(twin, M.SourcedObject)
    deep = copy.deepcopy(obj)
    deep["spec"]["a"].append(2)
    assert obj["spec"]["a"] == [1]
    assert yaml.safe_load(yaml.safe_dump(obj)) == dict(obj)
    assert yaml.safe_load(yaml.dump(obj)) == dict(obj)


def test_a_failure_names_object_field_and_source():
    err = failure(CTX.fail, "spec.x", "bad")
    assert (err.obj, err.field, err.problem, err.source) == ("Pod ns/p", "spec.x", "bad",
                                                             "f.yaml#2")
    assert str(err) == "f.yaml#2: Pod ns/p: spec.x: bad"


def test_mapping_list_and_string():
    assert CTX.mapping(None, "m") == {} and CTX.mapping({"a": 1}, "m") == {"a": 1}
    assert failure(CTX.mapping, [1], "spec.m").problem == "must be a mapping, got a list"
    assert CTX.list(None, "l") == [] and CTX.list([1], "l") == [1]
    assert failure(CTX.list, "x", "l").problem == "must be a list, got a string"
    assert CTX.string(None, "s", default="d") == "d"
    assert failure(CTX.string, None, "s", required=True).problem == "required"
    assert failure(CTX.string, "", "s", required=True).problem == "must not be empty"
    assert failure(CTX.string, 3, "s").problem == "must be a string, got an integer"


def test_integer_bounds_messages():
    assert CTX.integer(5, "n", 0, 10) == 5
    assert failure(CTX.integer, True, "n").problem == "must be an integer, got a boolean True"
    assert failure(CTX.integer, "5", "n").problem == "must be an integer, got a string '5'"
    assert failure(CTX.integer, -1, "n", 0).problem == "must be >= 0, got -1"
    assert failure(CTX.integer, 11, "n", None, 10).problem == "must be <= 10, got 11"
    assert failure(CTX.integer, 11, "n", 0, 10).problem == "must be in 0..10, got 11"


def test_boolean_and_enum():
    assert CTX.boolean(None, "b", default=True) is True and CTX.boolean(False, "b") is False
    assert failure(CTX.boolean, "true", "b").problem == "must be true or false, got a string 'true'"
    assert CTX.enum(None, "e", ("A", "B"), default="A") == "A"
    err = failure(CTX.enum, "C", "e", ("", "A"))
    assert err.problem == "must be one of '', A, got 'C'"


def test_str_map_and_str_list_name_the_bad_entry():
    assert CTX.str_map({"a": "b"}, "metadata.labels") == {"a": "b"}
    err = failure(CTX.str_map, {"app.io/x": 1}, "metadata.labels")
    assert err.field == 'metadata.labels["app.io/x"]' and "(quote it in YAML)" in err.problem
    assert failure(CTX.str_map, {1: "a"}, "m").problem == "keys must be strings, got an integer 1"
    assert CTX.str_list(["a"], "l") == ["a"]
    assert failure(CTX.str_list, ["a", 2], "args").field == "args[1]"


def test_quantity_map_in_milli_units():
    got = CTX.quantity_map({"cpu": "250m", "memory": "1Ki", "example.com/gpu": 2}, "r")
    assert got == {"cpu": 250, "memory": 1024 * 1000, "example.com/gpu": 2000}
    assert failure(CTX.quantity_map, {"cpu": "-1"}, "r").field == "r.cpu"
    assert "non-negative" in failure(CTX.quantity_map, {"cpu": "-1"}, "r").problem
    assert failure(CTX.quantity_map, {"cpu": "abc"}, "r").field == "r.cpu"
    assert "resource names must be non-empty" in failure(CTX.quantity_map, {"": "1"}, "r").problem
    # cpu is kept in millicores, others in whole units: both must fit an int64
    assert failure(CTX.quantity_map, {"cpu": str(INT64_MAX)}, "r").problem.endswith(
        "millicores)")
    assert CTX.quantity_map({"memory": str(INT64_MAX)}, "r")["memory"] == INT64_MAX * 1000


def test_canonical_turns_milli_units_into_whole_units_rounding_up():
    assert M.canonical(CTX, {"cpu": 1500, "memory": 1001, "pods": 3000}, "r") == \
        {"cpu": 1500, "memory": 2, "pods": 3}
    err = failure(M.canonical, CTX, {"cpu": INT64_MAX + 1}, "spec.overhead")
    assert err.field == "spec.overhead.cpu" and "does not fit an int64" in err.problem


def test_unset_if_empty():
    assert M.unset_if_empty("") is None and M.unset_if_empty("x") == "x"
    assert M.unset_if_empty(None) is None


@settings(max_examples=30)
@given(st.datetimes(min_value=datetime(1900, 1, 1), max_value=datetime(2200, 1, 1)),
       st.integers(-23 * 60, 23 * 60), st.integers(0, 10 ** 9 - 1))
def test_rfc3339_text_is_nanoseconds_since_the_epoch(when, offset_min, nanos):
    when = when.replace(microsecond=0)
    tz = timezone(timedelta(minutes=offset_min))
    local = when.replace(tzinfo=tz)
    sign = "-" if offset_min < 0 else "+"
    hh, mm = divmod(abs(offset_min), 60)
    text = local.strftime("%Y-%m-%dT%H:%M:%S") + f".{nanos:09d}{sign}{hh:02d}:{mm:02d}"
    expected = int(local.timestamp()) * 10 ** 9 + nanos
    assert M.parse_timestamp(text) == expected
    assert M.parse_timestamp(local) == int(local.timestamp()) * 10 ** 9


def test_timestamps_short_fractions_naive_datetimes_and_errors():
    assert M.parse_timestamp("1970-01-01T00:00:01.5Z") == 1_500_000_000
    assert M.parse_timestamp("1970-01-01T00:00:00Z") == 0
    assert M.parse_timestamp(datetime(1970, 1, 1, 0, 0, 2)) == 2 * 10 ** 9     # naive = UTC
    for bad in ("2024-05-01 10:00:00Z", "2024-13-01T00:00:00Z", "2024-05-01T10:00:00+24:00",
                "2024-05-01T10:00:00.1234567890Z"):
        with pytest.raises(ValueError, match="invalid RFC3339 timestamp"):
            M.parse_timestamp(bad)
    with pytest.raises(ValueError, match="got an integer 5"):
        M.parse_timestamp(5)
    assert CTX.timestamp(None, "t") is None
    assert failure(CTX.timestamp, "yesterday", "metadata.creationTimestamp").field == \
        "metadata.creationTimestamp"



@pytest.mark.parametrize("text", ["2262-04-11T23:47:17Z", "2262-04-12T00:00:00Z",
                                  "2262-04-11T23:47:16.854775808Z", "9999-12-31T23:59:59Z",
                                  "2262-04-11T23:00:00-01:00", "1677-09-21T00:12:43Z",
                                  "1677-09-21T00:12:43.145224191Z", "0001-01-01T00:00:00Z"])
def test_timestamps_past_int64_nanoseconds_are_refused(text):
    # the state keeps times as int64 ns: 1677-09-21 .. 2262-04-11 only
    with pytest.raises(ValueError, match="out of range"):
        M.parse_timestamp(text)
    assert M.parse_utc_second(text) is None
    assert failure(CTX.timestamp, text, "metadata.creationTimestamp").field == \
        "metadata.creationTimestamp"


def test_timestamps_at_the_int64_edges_are_exact():
    assert M.parse_timestamp("2262-04-11T23:47:16.854775807Z") == INT64_MAX
    assert M.parse_timestamp("2262-04-11T23:47:16Z") == INT64_MAX - 854_775_807
    assert M.parse_timestamp("1677-09-21T00:12:43.145224192Z") == -INT64_MAX - 1
    with pytest.raises(ValueError, match="out of range"):
        M.parse_timestamp(datetime(9999, 1, 1))

def test_identity_of_namespaced_and_cluster_objects():
    ctx, meta, ns, name = M.identity({"kind": "Pod", "metadata": {"name": "p"}}, "Pod", True, None)
    assert (ctx.ident, ns, name, meta) == ("Pod default/p", "default", "p", {"name": "p"})
    ctx, _, ns, _ = M.identity({"metadata": {"name": "n", "namespace": "x"}}, "Node", False, None)
    assert (ctx.ident, ns) == ("Node n", "")


def test_identity_errors_name_the_source_before_the_name_is_known():
    src = M.SourcedObject({"kind": "Pod", "metadata": {}}, "a.yaml#4")
    err = failure(M.identity, src, "Pod", True, None)
    assert (err.obj, err.field, err.problem) == ("a.yaml#4", "metadata.name", "required")
    err = failure(M.identity, {"metadata": {"name": 3}}, "Pod", True, "#7")
    assert (err.obj, err.field) == ("#7", "metadata.name") and "an integer 3" in err.problem
    err = failure(M.identity, {"kind": "Node", "metadata": {"name": "n"}}, "Pod", True, None)
    assert (err.obj, err.field, err.problem) == ("Node n", "kind", "expected Pod, got 'Node'")
    assert failure(M.identity, [1], "Pod", True, None).obj == "Pod <unnamed>"
    assert failure(M.identity, {"metadata": []}, "Pod", True, None).field == "metadata"
    err = failure(M.identity, {"metadata": {"name": "p", "namespace": 1}}, "Pod", True, None)
    assert (err.obj, err.field) == ("Pod p", "metadata.namespace")


def test_dns1123_checks_and_invalid_value_text():
    assert M.dns1123_subdomain_errors("a.b-c") == []
    assert M.dns1123_label_errors("my-name") == []
    assert len(M.dns1123_label_errors("a.b")) == 1
    assert M.dns1123_label_errors("a" * 64)[0] == "must be no more than 63 characters"
    assert M.dns1123_subdomain_errors("A")[0].startswith("a lowercase RFC 1123 subdomain")
    assert M.invalid_value("é", ["x", "y"]) == 'Invalid value: "é": x; y'


def test_validate_label_selector_paths_and_the_values_rule():
    assert M.validate_label_selector(CTX, None, "s") is None
    ok = {"matchExpressions": [{"key": "a", "operator": "In", "values": ["x"]}]}
    assert M.validate_label_selector(CTX, ok, "spec.selector") is ok
    no_values = {"matchExpressions": [{"key": "a", "operator": "In"}]}
    err = failure(M.validate_label_selector, CTX, no_values, "spec.selector")
    assert err.field == "spec.selector.matchExpressions[0].values"
    assert M.validate_label_selector(CTX, no_values, "s", values_required=False) is no_values
    err = failure(M.validate_label_selector, CTX, {"matchExpressions": [{"key": "a"}]}, "s")
    assert err.field == "s.matchExpressions[0].operator" and err.problem.startswith("required")
    err = failure(M.validate_label_selector, CTX,
                  {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]}, "s")
    assert err.problem.startswith("Forbidden")
    err = failure(M.validate_label_selector, CTX, {"matchLabels": {"a": "b c"}}, "s")
    assert err.field == "s.matchLabels.a"
