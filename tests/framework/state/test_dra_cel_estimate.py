"""The API server's static cost estimate of DRA selectors: cel-go's
estimator test cases (checker/cost_test.go, v0.26) that our CEL subset
expresses, Kubernetes' DRA compiler's expected estimates
(dynamic-resource-allocation/cel/compile_test.go), the limit at its edge,
and a selector over the limit refused on load as upstream refuses it."""

from __future__ import annotations

import math
import textwrap

import pytest
from celpy.evaluation import CELEvalError
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from tensorsched.cli import main
from tensorsched.framework.errors import ManifestError
from tensorsched.framework.parsing.dra import (
    parse_device_class,
    parse_resource_claim,
    parse_resource_claim_template,
)
from tensorsched.framework.state.cluster_state import ClusterState
from tensorsched.framework.state.dra_cel import _activation, compile_selector
from tensorsched.framework.state.dra_cel_estimate import (
    MAX_UINT64,
    TOO_COMPLEX,
    CostEstimate,
    dra_max_cost,
    dra_size_of,
    estimate_cost,
    exceeds_cost_limit,
)
from tensorsched.framework.state.dra_cel_types import check_types
from tensorsched.framework.state.dra_cel_values import COST_LIMIT
from tensorsched.framework.state.dra_claims import ClaimState

D = 'device.attributes["dra.example.com"]'
C = 'device.capacity["dra.example.com"]'


def _hints(hints: dict):
    """cel-go's test size estimator: a hinted path's size is 0 to the hint."""
    def size_of(path):
        hint = hints.get(".".join(path))
        return None if hint is None else (0, hint)
    return size_of


LIST = "list(dyn)"
NESTED_MAP = "map(string, map(string, dyn))"


@pytest.mark.parametrize("expr, variables, hints, want", [
    ('"Hello World!"', {}, {}, (0, 0)),
    ("input", {"input": "list(int)"}, {}, (1, 1)),
    ("input['key']", {"input": "map(string, string)"}, {}, (2, 2)),
    # presence tests cost nothing (Kubernetes' PresenceTestHasCost(false))
    ("has(input.testAttr.nestedAttr)", {"input": NESTED_MAP}, {}, (2, 2)),
    ("[1, 2, 3]", {}, {}, (10, 10)),
    ('{"a": 1, "b": 2, "c": 3}', {}, {}, (30, 30)),
    ("input.all(x, true)", {"input": LIST}, {"input": 100}, (2, 302)),
    ("input.all(x, x.all(y, true))", {"input": "list(list(dyn))"},
     {"input": 50, "input.@items": 10}, (2, 1752)),
    ("[1, 2, 3].all(x, true)", {}, {}, (20, 20)),
    ("input.matches('[0-9]')", {"input": "string"}, {"input": 500}, (3, 103)),
    ("'123'.matches('[0-9]')", {}, {}, (2, 2)),
    # the global form is another overload, which the estimator leaves at 1
    ("matches(input, '[0-9]')", {"input": "string"}, {"input": 500}, (2, 2)),
    ("true || false", {}, {}, (0, 0)),
    ("a || b || c || d", dict.fromkeys("abcd", "bool"), {}, (1, 4)),
    ("true && false", {}, {}, (0, 0)),
    ("a && b && c && d", dict.fromkeys("abcd", "bool"), {}, (1, 4)),
    *[(f"{e}", {}, {}, (1, 1)) for e in ("1 < 2", "1 <= 2", "1 == 2", "2 > 1", "2 >= 1",
                                         "1 + 1", "1 - 1", "1 / 1", "1 * 1", "1 % 1")],
    ("2 in [1, 2, 3]", {}, {}, (13, 13)),
    ("true ? 1 : 2", {}, {}, (0, 0)),
    ('size("123")', {}, {}, (1, 1)),
    ('size(b"123")', {}, {}, (1, 1)),
    ("string(input)", {"input": "bytes"}, {"input": 500}, (1, 51)),
    ("string(input) == string(input)", {"input": "bytes"}, {"input": 500}, (3, 152)),
    ("bytes(input)", {"input": "string"}, {"input": 500}, (1, 51)),
    ("bytes(input) == bytes(input)", {"input": "string"}, {"input": 500}, (3, 302)),
    ("string(1)", {}, {}, (1, 1)),
    ("input.contains(arg1)", {"input": "string", "arg1": "string"},
     {"input": 500, "arg1": 500}, (2, 2502)),
    ("input.matches('\\\\d+a\\\\d+b')", {"input": "string"}, {"input": 500}, (3, 103)),
    ("input.startsWith(arg1)", {"input": "string", "arg1": "string"}, {"arg1": 500}, (2, 52)),
    ("input.endsWith(arg1)", {"input": "string", "arg1": "string"}, {"arg1": 500}, (2, 52)),
    ("input.size()", {"input": "string"}, {}, (2, 2)),
    ("size(input)", {"input": "string"}, {}, (2, 2)),
    ("(x > 2 ? input1 : input2).all(y, true)", {"x": "int", "input1": LIST, "input2": LIST},
     {"input1": 1, "input2": 1}, (4, 7)),
    ("input.all(k, input[k].all(x, true))", {"input": NESTED_MAP},
     {"input": 5, "input.@values": 10}, (2, 187)),
    ("input.all(k, k.contains(k))", {"input": NESTED_MAP},
     {"input": 5, "input.@keys": 10}, (2, 32)),
    ("input.all(k, input[k].all(k, true) && k.contains(k))", {"input": NESTED_MAP},
     {"input": 2, "input.@values": 2, "input.@keys": 5}, (2, 34)),
    ("(list1 + list2).all(x, true)", {"list1": "list(int)", "list2": "list(int)"},
     {"list1": 10, "list2": 10}, (4, 64)),
    ('"abcdefg".contains(str1 + str2)', {"str1": "string", "str2": "string"},
     {"str1": 10, "str2": 10}, (2, 6)),
    ("list1.size() == list2.size()", {"list1": "list(int)", "list2": "list(int)"}, {}, (5, 5)),
    ("x > y ? list1.size() : list2.size()",
     {"x": "int", "y": "int", "list1": "list(int)", "list2": "list(int)"}, {}, (5, 5)),
    ("([x, y] + list1 + list2).size()",
     {"x": "int", "y": "int", "list1": "list(int)", "list2": "list(int)"},
     {"list1": 10, "list2": 20}, (17, 17)),
    ("[list1, list2].exists(l, l.exists(v, v.startsWith('hi')))",
     {"list1": "list(string)", "list2": "list(string)"},
     {"list1": 10, "list1.@items": 64, "list2": 20, "list2.@items": 128}, (21, 265)),
    ('str1.endsWith("abcdefghijklmnopqrstuvwxyz") == str2.endsWith("abcdefghijklmnopqrstuvwxyz")',
     {"str1": "string", "str2": "string"}, {}, (9, 9)),
    ("((5 != 6) == (1 == 2)) == ((3 <= 4) == (9 != 9))", {}, {}, (7, 7)),
    ("[1,2,3,4,5].filter(x, x % 2 == 0)", {}, {}, (41, 101)),
    ("[1,2,3,4,5].map(x, x)", {}, {}, (86, 86)),
    ("[1,2,3,4,5].map(x, x).filter(x, x % 2 == 0)", {}, {}, (117, 177)),
    ("[1,2,3,4,5].map(x, x).exists(x, x == 5) == true", {}, {}, (108, 118)),
    ("[1,2,3,4,5].map(x, x).map(x, x)", {}, {}, (162, 162)),
    ("[1,2,3,4,5].map(x, x)[4]", {}, {}, (87, 87)),
    ("[[1,2],[1,2],[1,2],[1,2],[1,2]][4]", {}, {}, (61, 61)),
    ("{'a': [1,2], 'b': [1,2], 'c': [1,2], 'd': [1,2], 'e': [1,2]}.b", {}, {}, (81, 81)),
    ("[[1, 1], [2, 2], [3, 3], [4, 4], [5, 5]].all(y, y.all(y, y == 1))", {}, {}, (76, 136)),
    ("[1,2,3,4,5].map(x, [x, x]).all(y, y.all(y, y == 1))", {}, {}, (157, 217)),
    ('["a", "ab", "abc", "abcd", "abcde"].map(x, [x, x]).all(y, y.all(y, y.startsWith(\'a\')))',
     {}, {}, (157, 217)),
    ("input.map(x, [x, x]).all(y, y.all(y, y.startsWith('a')))", {"input": "list(string)"},
     {"input": 5, "input.@items": 10}, (13, 208)),
    ("[1,2,3,4,5].map(x, x).map(x, x) + [1]", {}, {}, (173, 173)),
    ("[1,2,3].all(i, i in [1,2,3].map(j, j + j))", {}, {}, (20, 230)),
    ("dyn([1,2,3]).all(i, i in dyn([1,2,3]).map(j, j + j))", {}, {}, (21, 234)),
    ("{'hello': 'hi'}['hello'] != {'hello': 'bye'}['hello']", {}, {}, (63, 63)),
    ("['hello', 'hi'][0] != ['hello', 'bye'][1]", {}, {}, (23, 23)),
    ("self.val1 != self.val2", {"self": "map(string, bool)"}, {}, (5, 5)),
    ("self.val1 != true", {"self": "map(string, bool)"}, {}, (3, 3)),
    ("self.val1 == 1.0", {"self": "map(string, double)"}, {}, (3, 3)),
])
def test_cel_go_estimates(expr, variables, hints, want):
    assert estimate_cost(expr, variables, _hints(hints)) == CostEstimate(*want)


@pytest.mark.parametrize("expr, want", [
    # Kubernetes' compile_test.go (DRAListTypeAttributes off: attribute
    # values at most 64 long)
    (f"{D}.noSuchAttr.isGreaterThan(quantity(\"0\"))", 6),
    (f'{D}["noSuchAttr"].isGreaterThan(quantity("0"))', 6),
    ('"no-such-domain" in device.attributes', 3),
    ('device.driver == ""', 2),
    ('device.driver == "dra.example.com"', 4),
    (f"{D}.name", 4),
    (f'{D}["name"]', 4),
    ('cel.bind(dra, device.attributes["dra.example.com"], dra.name)', 15),
    (f"{D}.name > 0", 5),
    (f'{D}.name == "fish"', 5),
    (f"{D}.name.exists(x, x > 0)", 5 + (3 + 3) * 64),
    (f'{D}.names.all(x, x != "")', 5 + (2 + 2) * 64),
    (f'{D}.names.all(x, x.isGreaterThan(semver("0.0.1")))', 5 + (2 + 4) * 64),
    (f"{D}.names.size() == 2", 6),
    (f"1 in {D}.names", 4 + 64),
    (f'{D}.name.isGreaterThan(semver("0.0.1"))', 6),
    (f'{D}.name.isGreaterThan(semver("v0.0.1", true)) && isSemver("v1.0.0", true)', 7),
    (f'{C}.name.isGreaterThan(quantity("1Ki"))', 6),
    (f'"name" in {C} && {C}.name.isGreaterThan(quantity("1Ki"))', 10),
    (f'!("name" in {C}) || {C}.name.isGreaterThan(quantity("1Ki"))', 11),
    (f"""
{C}.quantity.isGreaterThan(quantity("1Ki")) &&
{D}.bool &&
{D}.int > 0 &&
{D}.string == "fish" &&
{D}.version.isGreaterThan(semver("0.0.1")) &&
{C}["quantity"].isGreaterThan(quantity("1Ki")) &&
{D}["bool"] &&
{D}["int"] > 0 &&
{D}["string"] == "fish" &&
{D}["version"].isGreaterThan(semver("0.0.1"))
""", 52),
    (f"{D}.a && {D}.b && {D}.c", 12),
    ('device.attributes.exists_one(x, x == "dra.example.com")', 164),
    (f'{D}.exists_one(x, x == "services")', 133),
    (f'{D}.services.split("example").size() >= 2', 19),
    (f'{D}.services.matches("[^a]?sym")', 18),
    ('device.capacity.exists_one(x, x == "dra.example.com")', 164),
    (f'{C}.exists_one(x, x == "memory")', 133),
    ("device.allowMultipleAllocations == true", 3),
    # the validation tests' "CEL-cost" selector: over the limit
    ("[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(x, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(y, "
     "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z2, "
     "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z3, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z4, "
     "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z5, int('1'.find('[0-9]*')) < 100)))))))", 85555551),
])
def test_kubernetes_dra_estimates(expr, want):
    compile_selector(expr)
    check_types(expr)
    assert dra_max_cost(expr) == want
    assert exceeds_cost_limit(expr) == (want > COST_LIMIT)


@pytest.mark.parametrize("expr, want", [
    # format's list may mix types (the checker exempts it): 1 for a tenth
    # of the 5-character format, 10 + 2 for the list
    ('"%s-%d".format([device.driver, 3]) != ""', 13),
    # Kubernetes' join and isSorted price a literal list's strings by the
    # list's path, which a literal has not: unbounded
    ('["a", "b"].join(",") == "a,b"', None),
    ('["b", "a"].isSorted()', None),
    ("[1, 2].isSorted()", 12),
    # the global quantity() has no Kubernetes estimate (only its method
    # form would): cel-go's 1
    ('quantity("1Gi").isInteger()', 2),
    ('cidr("10.0.0.0/8").containsIP(ip("10.1.1.1"))', 6),
    ("[1, 2, 3].sortBy(x, -x)[0] == 3", 106),
    ("lists.range(3).size() == 3", 16),
    # sort: n^2 comparisons at 2 each (2.1 for strings; a dynamic element
    # type may be either), 1 for the call, 10 for the list
    ("[3, 1].sort()[0] == 1", 10 + 4 * 2 + 11 + 1 + 1),
    ('["b", "a"].sort()[0] == "a"', 10 + math.ceil(4 * 2.1) + 11 + 1 + 1),
    (f"[{D}.a, {D}.b].sort().size() == 2", 10 + 8 + math.ceil(4 * 2.1) + 11 + 1 + 1),
    # a conversion's result has its type's size: two ints compare for 1
    (f"int({D}.a) == int({D}.b)", 4 + 1 + 4 + 1 + 1),
    # of a dynamic value, every conversion's overload: bytes' a tenth of the
    # 64-character bound at most, the others 1
    (f'string({D}.a) == "x"', 4 + 7 + 1),
    (f"lists.range({D}.n).size() == 3", None),
])
def test_library_estimates(expr, want):
    compile_selector(expr)
    check_types(expr)
    cost = dra_max_cost(expr)
    if want is None:
        assert cost > 10**18
    else:
        assert cost == want


def test_the_size_bounds_follow_the_api_limits():
    assert dra_size_of(("device", "driver")) == (0, 63)
    assert dra_size_of(("device", "attributes")) == (0, 32)
    assert dra_size_of(("device", "attributes", "@keys")) == (0, 63)
    assert dra_size_of(("device", "attributes", "@values", "@keys")) == (0, 32)
    assert dra_size_of(("device", "attributes", "@values", "model")) == (0, 64)
    assert dra_size_of(("device", "attributes", "@values", "@values")) == (0, 64)
    # a capacity has no declared bound: by index 0, by name none
    assert dra_size_of(("device", "capacity", "@values", "@values")) == (0, 0)
    assert dra_size_of(("device", "capacity", "@values", "memory")) is None
    assert dra_size_of(("device", "attributes", "model")) is None
    assert dra_size_of(("other",)) is None


def test_two_quantities_compared_with_equality_are_priced_unbounded():
    """Neither side of ``==`` has a known size: cel-go charges a tenth of
    2**64 - 1, far past the limit (``compareTo`` is the way)."""
    expr = f'{C}.memory == quantity("1Gi")'
    assert dra_max_cost(expr) > COST_LIMIT
    assert not exceeds_cost_limit(f'{C}.memory.compareTo(quantity("1Gi")) == 0')


def _nested(n: int) -> str:
    """``n`` levels of ``all`` over a 10-element list around ``1 < 2``:
    each level 11 + 10 * (3 + inner), the innermost 1."""
    ten = "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]"
    expr = "1 < 2"
    for i in range(n):
        expr = f"{ten}.all(v{i}, {expr})"
    return expr


def _at_cost(extra: int) -> str:
    """A selector of estimated cost 999,741 + ``extra``: 180 loops over
    three nested levels (11 + 180 * (3 + 5,551) = 999,731), then ``1 in``
    a list of ``extra`` elements (10 + ``extra``)."""
    outer = "[" + ", ".join(["0"] * 180) + f"].all(w, {_nested(3)})"
    return outer + " && 1 in [" + ", ".join(["1"] * extra) + "]"


def test_just_under_and_just_over_the_limit():
    assert dra_max_cost(_nested(3)) == 5551
    assert dra_max_cost(_at_cost(259)) == COST_LIMIT
    assert not exceeds_cost_limit(_at_cost(259))
    assert dra_max_cost(_at_cost(260)) == COST_LIMIT + 1
    assert exceeds_cost_limit(_at_cost(260))
    assert dra_max_cost(_nested(5)) == 555_551
    assert dra_max_cost(_nested(7)) == 55_555_551


def test_the_estimate_bounds_the_runtime_cost():
    """On a device with the largest values the API allows, the runtime
    tracker's cost stays within the estimate."""
    attrs = {f"a{i:02d}" + "x" * 29: "v" * 64 for i in range(32)}
    attrs["model"] = "m" * 64
    for expr in (f'{D}.model == "a100"', f"{D}.exists(k, k.startsWith(\"a\"))",
                 f'{D}.model.matches("^m+$")', f'{D}.model.split("m").size() > 2',
                 'device.attributes.all(d, d.size() > 0)'):
        program = compile_selector(expr).program
        actual = program.cost(_activation("dra.example.com", False, {"dra.example.com": attrs},
                                          {}))
        assert actual <= dra_max_cost(expr), expr


def _class(expr: str) -> dict:
    return {"metadata": {"name": "gpu"}, "spec": {"selectors": [
        {"cel": {"expression": 'device.driver == "dra.example.com"'}},
        {"cel": {"expression": expr}}]}}


def test_a_selector_over_the_limit_is_refused_on_load_and_nothing_is_kept():
    store = ClaimState.of(ClusterState())
    with pytest.raises(ManifestError) as err:
        store.load([parse_device_class(_class(_nested(7)))])
    assert err.value.obj == "DeviceClass gpu"
    assert err.value.field == "spec.selectors[1].cel.expression"
    assert err.value.problem == TOO_COMPLEX == "Forbidden: too complex, exceeds cost limit"
    assert not store.classes and not store.claims and not store.templates
    store.load([parse_device_class(_class(_nested(5)))])
    assert "gpu" in store.classes


@pytest.mark.parametrize("which, label, field", [
    ("class", "DeviceClass gpu", "spec.selectors[0].cel.expression"),
    ("template", "ResourceClaimTemplate ml/one", "spec.spec.devices.requests[0].exactly"
                                                 ".selectors[0].cel.expression"),
    ("claim", "ResourceClaim ml/c", "spec.devices.requests[0].firstAvailable[0]"
                                    ".selectors[0].cel.expression"),
])
def test_every_kind_with_selectors_is_checked(which, label, field):
    """DeviceClasses, templates and claims (a subrequest's selectors too):
    the first over the limit refused, nothing of the batch kept."""
    def sel(on):
        return [{"cel": {"expression": _nested(7) if on else _nested(5)}}]

    cls = {"metadata": {"name": "gpu"}, "spec": {"selectors": sel(which == "class")}}
    template = {"metadata": {"name": "one", "namespace": "ml"}, "spec": {"spec": {
        "devices": {"requests": [{"name": "a", "exactly": {
            "deviceClassName": "gpu", "selectors": sel(which == "template")}}]}}}}
    claim = {"metadata": {"name": "c", "namespace": "ml"}, "spec": {
        "devices": {"requests": [{"name": "a", "firstAvailable": [
            {"name": "x", "deviceClassName": "gpu", "selectors": sel(which == "claim")}]}]}}}
    store = ClaimState.of(ClusterState())
    with pytest.raises(ManifestError) as err:
        store.load([parse_device_class(cls)], [], [parse_resource_claim_template(template)],
                   [parse_resource_claim(claim)])
    assert (err.value.obj, err.value.field, err.value.problem) == (label, field, TOO_COMPLEX)
    assert not store.classes and not store.templates and not store.claims


def test_the_cli_refuses_the_manifest_naming_file_object_and_field(tmp_path, capsys):
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(textwrap.dedent(f"""\
        apiVersion: v1
        kind: Node
        metadata: {{name: n1}}
        status: {{allocatable: {{cpu: '8', memory: 32Gi, pods: '110'}}}}
        ---
        apiVersion: resource.k8s.io/v1
        kind: ResourceClaim
        metadata: {{name: big, namespace: ml}}
        spec:
          devices:
            requests:
            - name: gpu
              exactly:
                deviceClassName: gpu
                selectors:
                - cel: {{expression: '{_nested(7)}'}}
        """))
    assert main(["schedule", "--cluster", str(cluster)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "cluster.yaml" in err[0] and "ResourceClaim ml/big" in err[0]
    assert ("spec.devices.requests[0].exactly.selectors[0].cel.expression: "
            "Forbidden: too complex, exceeds cost limit") in err[0]


def test_unbounded_sizes_saturate():
    """Two strings of unknown size: a tenth of 2**64 - 1 in float64, as
    cel-go rounds it (its "type literal equality cost" case)."""
    assert estimate_cost("x == y", {"x": "string", "y": "string"}, _hints({})) == \
        CostEstimate(3, 1844674407370955266)
    assert estimate_cost("x + y", {"x": "list(int)", "y": "list(int)"}, _hints({})).max == 3
    assert MAX_UINT64 == 2**64 - 1


# --------------------------------------------------------------------------
# the estimate bounds every evaluation within the API's limits

NAMES = ("model", "index", "uuid", "healthy")
TEXT = "abmH0,"


def _attr_ref():
    return st.sampled_from(NAMES).flatmap(lambda n: st.sampled_from(
        (f"{D}.{n}", f'{D}["{n}"]')))


def _leaf():
    lit = st.text(TEXT, max_size=8).map(lambda s: f'"{s}"')
    return st.one_of(
        st.tuples(_attr_ref(), st.sampled_from(("==", "!=", "<", ">=")), lit).map(" ".join),
        st.tuples(_attr_ref(), st.integers(-1, 3)).map(lambda t: f"{t[0]} == {t[1]}"),
        st.tuples(_attr_ref(), st.sampled_from((
            '.matches("^[ab]+")', '.startsWith("a")', '.endsWith("0")', '.contains("bm")',
            '.lowerAscii().size() > 2', '.split(",").size() > 1', '.indexOf("a") >= 0',
            '.substring(1) == "b"', '.size() > 3'))).map("".join),
        st.tuples(_attr_ref(), st.lists(lit, min_size=1, max_size=3)).map(
            lambda t: f"{t[0]} in [{', '.join(t[1])}]"),
        st.sampled_from(NAMES).map(lambda n: f'"{n}" in {D}'),
        st.sampled_from((
            f'{D}.exists(k, k.startsWith("a"))',
            f'{D}.exists_one(k, k == "model")',
            'device.attributes.all(d, d.size() > 0)',
            f'{D}.all(k, v, k.size() > 0)',
            f'cel.bind(a, {D}, a.model == "x" || a.uuid.endsWith("0"))',
            "[1, 2, 3].map(x, x * 2).exists(y, y == 4)",
            "[1, 2, 3].filter(x, x > 1).size() == 2",
            'device.driver == "dra.example.com"',
            f'{D}.?model.orValue("") == ""',
        )),
    )


selectors = st.recursive(
    _leaf(),
    lambda inner: st.one_of(
        st.tuples(inner, st.sampled_from(("&&", "||")), inner).map(
            lambda t: f"({t[0]}) {t[1]} ({t[2]})"),
        inner.map(lambda e: f"!({e})"),
        st.tuples(inner, inner, inner).map(lambda t: f"({t[0]}) ? ({t[1]}) : ({t[2]})"),
    ),
    max_leaves=4,
)

#: a device with attributes of the largest sizes the API allows (values of
#: 64 characters, 32 attributes in the domain, names of 32 characters)
_value = st.one_of(st.text(TEXT, min_size=0, max_size=64), st.integers(-1, 3), st.booleans())
devices = st.tuples(
    st.dictionaries(st.sampled_from(NAMES), _value, max_size=4),
    st.integers(0, 28),
)


@settings(max_examples=150, deadline=None)
@given(selectors, devices)
def test_the_estimate_bounds_every_evaluation(expr, device):
    compile_selector(expr)
    check_types(expr)
    named, filler = device
    attrs = {f"a{i:02d}" + "x" * 29: "m" * 64 for i in range(filler)}
    attrs.update(named)
    program = compile_selector(expr).program
    context = _activation("dra.example.com", False, {"dra.example.com": attrs}, {})
    value, actual = program._run(context, float("inf"))
    # an evaluation that fails (a missing attribute, no overload for the
    # values) is not compared: there the runtime tracker charges the failed
    # call by the values it met, cel-go by the overload its checker chose
    assume(not isinstance(value, CELEvalError))
    estimate = estimate_cost(expr)
    assert actual <= estimate.max, (expr, actual, estimate)
