"""The runtime cost limit of DRA selectors: costs counted as cel-go counts
them (the expected numbers are cel-go's own runtime-cost test cases, or
derived by hand from its rules where noted), an evaluation past
1,000,000 units a CEL runtime error for that device, and the allocator
reporting it as it reports any CEL runtime error."""

from __future__ import annotations

import pytest

from tensorsched.framework.parsing.dra import (
    parse_device_class,
    parse_resource_claim,
    parse_resource_slice,
)
from tensorsched.framework.state.dra_allocator import AllocationError, Allocator, DraFeatures
from tensorsched.framework.state.dra_cel import _activation, compile_selector
from tensorsched.framework.state.dra_cel_cost import COST_LIMIT, LIMIT_EXCEEDED
from tensorsched.framework.state.dra_cel_types import check_types
from tensorsched.framework.state.dra_devices import AllocatedState, DeviceColumns

DRIVER = "gpu.example.com"
D = f'device.attributes["{DRIVER}"]'


def _cost(expr: str, attrs: dict | None = None) -> int:
    program = compile_selector(expr).program
    return program.cost(_activation(DRIVER, False, {DRIVER: attrs or {}}, {}))


@pytest.mark.parametrize("expr, want", [
    # cel-go's interpreter/runtimecost_test.go (v0.26)
    ('[1, 2, 3].all(x, true)', 20),
    ("'123'.matches('[0-9]')", 2),
    # the global form is overload ``matches``, which neither cel-go's
    # tracker nor Kubernetes' estimator charges: 1 whatever the sizes
    ("matches('123', '[0-9]')", 1),
    (f"matches('{'a' * 100}', 'a+b+c+')", 1),
    (f"'{'a' * 100}'.matches('a+b+c+')", 11 * 2),
    ("false || false", 0),
    ("true && false", 0),
    ("1 < 2", 1),
    ("2 in [1, 2, 3]", 13),
    ("1 + 1 == 2", 2),
    ("true ? false : 1 > 3", 0),
    ("false ? false : 1 > 3", 1),
    ("size('123') == 3", 2),
    ("'12345678901234567890' == '123456789012345678901234567890'", 2),
    ("(1 > 2 ? 5 : 3) > 1", 2),
    ("(1 > 2 || 2 > 1) == true", 3),
    ("[{'k1': 1}, {'k2': 2}].all(x, true)", 77),
    ("[1,2,3,4,5].map(x, x).exists(x, x == 5) == true", 118),
    ("[1,2,3,4,5].map(x, [x, x]).all(y, y.all(y, y == 1))", 171),
    ("[1,2,3].all(i, i in [1,2,3].map(j, j + j))", 86),
    # the same cases compared with an empty list literal (10 more: the
    # literal; == of sizes 5 and 0 costs ceil(0.1 * 0) = 0)
    ("[1,2,3,4,5].filter(x, x % 2 == 0) == []", 62 + 10),
    ("[1,2,3,4,5].map(x, x) == []", 86 + 10),
    ("[1,2,3,4,5].map(x, x).filter(x, x % 2 == 0) == []", 138 + 10),
    ("[1,2,3,4,5].map(x, x).map(x, x) == []", 162 + 10),
    ("[1,2,3,4,5].map(x, [x, x]).filter(z, z.size() == 2) == []", 232 + 10),
    ("[1,2,3,4,5].map(x, x).map(x, x) + [1] == []", 173 + 10),
    # by hand: device.attributes["d"].n reads 4 units (variable, field,
    # index, field); a string == is a tenth of the shorter string
    (f"{D}.model == 'a100'", 4 + 1),
    (f"{D}.model.startsWith('nvidia') && {D}.n > 2", 4 + 2 + 4 + 1),
    # exists: 3 for the condition, 1 + the predicate per element, then the
    # condition once more before stopping at the first true
    ("[1, 2, 3].exists(x, x == 2)", 10 + 2 * (3 + 1 + 2) + 3 + 1),
    # exists_one: the predicate, 2 more where it holds, 2 for the result
    ("[1, 2, 3].exists_one(x, x > 1)", 10 + 3 * 2 + 2 * 2 + 2),
    # two-variable forms expand as their one-variable kin
    ("[1, 2, 3].all(i, v, v > i)", 10 + 3 * (2 + 1 + 3) + 1),
    ("{'a': 1}.transformMap(k, v, v + 1) == {'a': 2}", 30 + 30 + (3 + 2) + 1 + 30 + 1),
    # Kubernetes' estimator: lowerAscii a tenth of the string, the lists
    # extension's range its size + 11
    ("'ABCDEFGHIJK'.lowerAscii() == 'abcdefghijk'", 2 + 2),
    ("lists.range(5).size() == 5", 5 + 11 + 1 + 1),
    # presence tests are free (their operand is not)
    (f"has({D}.model)", 3),
    # cel.bind: 10 for its empty range, the init once, 1 per read
    ("cel.bind(x, 1, true)", 10),
    ("cel.bind(x, [1, 2, 3], x.size() == 3 && x[0] == 1)", 10 + 10 + (1 + 1 + 1) + (2 + 1)),
    ("cel.bind(a, [1], cel.bind(b, a + a, b.size() == 2))", 10 + 10 + 10 + 3 + 3),
    ("cel.bind(x, [1], true ? x : [2]) == [1]", 10 + 10 + 0 + 10 + 1),
])
def test_runtime_cost_as_cel_go(expr, want):
    assert _cost(expr, {"model": "nvidia-a100", "n": 3}) == want


#: each element costs 2 + 1 + 100 * 100 (a contains of two 1000-character
#: strings): 99 elements stay under the limit, 100 pass it
LONG = "a" * 1000
NESTED = "lists.range({n}).all(i, '" + LONG + "'.contains('" + LONG + "'))"


def _columns(values):
    sl = parse_resource_slice({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s"},
        "spec": {"driver": DRIVER, "nodeName": "n",
                 "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
                 "devices": [{"name": f"d{i}", "attributes": {"n": {"int": v}}}
                             for i, v in enumerate(values)]}})
    return DeviceColumns([sl], ["n"])


def test_the_limit_is_upstreams_and_passing_it_is_an_error_for_that_device():
    assert _cost(NESTED.format(n=99)) == 99 + 11 + 99 * (2 + 1 + 100 * 100) + 1 < COST_LIMIT
    assert _cost(NESTED.format(n=100)) > COST_LIMIT
    expr = NESTED.format(n=f"{D}.n")
    compile_selector(expr)
    check_types(expr)
    cols = _columns([99, 100, 99])
    col = compile_selector(expr).evaluate(cols.values)
    assert [bool(v) for v in col.value] == [True, False, True]
    assert list(col.error >= 0) == [False, True, False]
    assert col.messages[col.error[1]] == LIMIT_EXCEEDED


def test_the_limit_stops_the_evaluation_where_cel_go_stops():
    """Nothing absorbs the limit: ``expensive || true`` is the error; the
    right side of a decided ``&&`` / ``||`` is never evaluated."""
    big = NESTED.format(n=100)
    cols = _columns([1])
    for expr, want in ((f"{big} || true", LIMIT_EXCEEDED), (f"false && {big}", False),
                       (f"true || {big}", True), (f"true ? true : {big}", True)):
        col = compile_selector(expr).evaluate(cols.values)
        got = col.messages[col.error[0]] if col.error[0] >= 0 else bool(col.value[0])
        assert got == want, expr


def test_the_limit_is_passed_at_its_last_unit():
    """A contains of two 10,000-character strings costs 1000 * 1000: the
    limit reached, not passed; ``!`` adds the unit that passes it."""
    text = "b" * 10_000
    cols = _columns([1])
    for expr, error in ((f"'{text}'.contains('{text}')", False),
                        (f"!'{text}'.contains('{text}')", True)):
        assert _cost(expr) == COST_LIMIT + error
        col = compile_selector(expr).evaluate(cols.values)
        assert (col.error[0] >= 0) == error
        assert not error or col.messages[col.error[0]] == LIMIT_EXCEEDED


def test_lists_range_is_not_allocated_past_the_limit():
    """``lists.range`` of a huge size is the limit's error, not a
    billion-element list (cel-go's tracker charges its size)."""
    cols = _columns([1])
    col = compile_selector("lists.range(1000000000).size() > 0").evaluate(cols.values)
    assert col.messages[col.error[0]] == LIMIT_EXCEEDED


def test_the_allocator_reports_the_limit_as_a_cel_runtime_error():
    cls = parse_device_class({
        "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}})
    sl = parse_resource_slice({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s"},
        "spec": {"driver": DRIVER, "nodeName": "node-1",
                 "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
                 "devices": [{"name": "gpu-0", "attributes": {"n": {"int": 100}}}]}})
    claim = parse_resource_claim({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": "c", "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "r", "exactly": {
            "deviceClassName": "gpu", "count": 1,
            "selectors": [{"cel": {"expression": NESTED.format(n=f"{D}.n")}}]}}]}}})
    allocator = Allocator([claim], classes=[cls], devices=[sl], allocated=AllocatedState(),
                          features=DraFeatures.from_gates([]))
    with pytest.raises(AllocationError) as err:
        allocator.allocate(("node-1", {}))
    assert "selector #0" in str(err.value)
    assert f"CEL runtime error: {LIMIT_EXCEEDED}" in str(err.value)


def test_a_growing_replace_on_an_attribute_is_held_to_the_limit():
    """``replace`` can grow a string past any bound the expression sets
    (cel-go charges it by its input): such selectors are evaluated under the
    limit, not compiled into columns without it."""
    fill = "c" * 4000
    expr = f"{D}.model.replace('', '{fill}').contains('{fill}')"
    sel = compile_selector(expr)
    assert not sel.compiled
    sl = parse_resource_slice({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s"},
        "spec": {"driver": DRIVER, "nodeName": "n",
                 "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
                 "devices": [{"name": "d0", "attributes": {"model": {"string": "a" * 60}}},
                             {"name": "d1", "attributes": {"model": {"string": "a"}}}]}})
    col = sel.evaluate(DeviceColumns([sl], ["n"]).values)
    # 60 characters: a 244,060-character result, 24,406 * 400 units
    assert col.messages[col.error[0]] == LIMIT_EXCEEDED
    assert col.error[1] < 0 and bool(col.value[1])


@pytest.mark.parametrize("expr, want", [
    # by hand from cel-go's expansions of the other libraries' macros.
    # sortBy: the list 10, the keys (-x: 2 each), a bind (10, 1 read), a map
    # over the read (1 + 10 + 12 per element + 1), the sort's tracker
    # (int(3 * 3 * 2.0) + 11), then == of a 3-element literal (10 + 1)
    ("[3, 1, 2].sortBy(x, -x) == [3, 2, 1]", 10 + 6 + (10 + 1 + 1 + 10 + 36 + 1) + 29 + 11),
    # optMap: the target twice when it has a value (1 each), hasValue 1,
    # optional.of 1, the bind 10, value() 1, x + 1 2; == optional.of(3) 2
    ("optional.of(2).optMap(x, x + 1) == optional.of(3)", 1 + 1 + 1 + 10 + 1 + 1 + 2 + 2),
    ("optional.none().optMap(x, x + 1) == optional.none()", 1 + 1 + 1 + 1 + 1),
    ("optional.of(2).optFlatMap(x, optional.of(x)) == optional.of(2)",
     1 + 1 + 10 + 1 + 1 + (1 + 1) + 2),
    # or / orValue: nothing of their own
    ("optional.of(1).orValue(2) == 1", 1 + 1),
    ("optional.none().orValue(2) == 2", 1 + 1),
])
def test_runtime_cost_of_the_libraries_macros(expr, want):
    assert _cost(expr) == want
