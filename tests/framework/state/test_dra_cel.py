"""The CEL column compiler against cel-python's own evaluation.

Random devices (attributes of every type under a few names, some missing,
capacities) and random selector expressions of the forms drivers and users
write: each device's compiled answer (value, or error) must be what
cel-python says for that device alone."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tensorsched.framework.parsing.dra import parse_resource_slice
from tensorsched.framework.state.dra_cel import (
    CelError,
    compile_selector,
    reference_matches,
)
from tensorsched.framework.state.dra_cel_types import check_types
from tensorsched.framework.state.dra_devices import DeviceColumns

DRIVER = "gpu.example.com"
ATTR_NAMES = ("model", "index", "numa", "healthy", "version")
STRINGS = ("H200", "A100", "a-1", "")
VERSIONS = ("1.0.0", "1.2.3", "2.0.0-rc.1")
QUANTITIES = ("0", "1", "40Gi", "80Gi", "141Gi", "500m")


def attribute():
    return st.one_of(
        st.sampled_from(STRINGS).map(lambda v: {"string": v}),
        st.integers(-2, 3).map(lambda v: {"int": v}),
        st.booleans().map(lambda v: {"bool": v}),
        st.sampled_from(VERSIONS).map(lambda v: {"version": v}),
    )


def device(i):
    return st.fixed_dictionaries(
        {
            "name": st.just(f"dev-{i}"),
            "attributes": st.dictionaries(st.sampled_from(ATTR_NAMES), attribute(), max_size=4),
            "capacity": st.dictionaries(
                st.sampled_from(("memory", "cores")),
                st.sampled_from(QUANTITIES).map(lambda q: {"value": q}),
                max_size=2,
            ),
        }
    )


devices = st.integers(1, 6).flatmap(lambda n: st.tuples(*[device(i) for i in range(n)]))


LITERALS = (
    st.sampled_from(STRINGS).map(lambda v: f'"{v}"'),
    st.integers(-2, 3).map(str),
    st.sampled_from(("true", "false")),
)


def literal():
    return st.one_of(*LITERALS)


def literal_list():
    """A list literal of one element type (Kubernetes refuses mixed ones)."""
    return st.one_of(*[st.lists(lit, min_size=1, max_size=3) for lit in LITERALS])


def attr_ref():
    return st.one_of(
        st.sampled_from(ATTR_NAMES).map(lambda n: f'device.attributes["{DRIVER}"].{n}'),
        st.sampled_from(ATTR_NAMES).map(lambda n: f'device.attributes["{DRIVER}"]["{n}"]'),
        st.just('device.attributes["other.example.com"].model'),
    )


def comparison():
    cap = st.sampled_from(("memory", "cores")).map(lambda n: f'device.capacity["{DRIVER}"].{n}')
    return st.one_of(
        st.tuples(attr_ref(), st.sampled_from(("==", "!=", "<", "<=", ">", ">=")), literal()).map(
            " ".join
        ),
        st.tuples(attr_ref(), literal_list()).map(
            lambda t: f"{t[0]} in [{', '.join(t[1])}]"
        ),
        attr_ref().map(lambda a: f'{a}.matches("^[Aa]")'),
        attr_ref().map(lambda a: f'{a}.startsWith("H")'),
        st.tuples(cap, st.sampled_from(QUANTITIES), st.sampled_from((">=", "<", "=="))).map(
            lambda t: f'{t[0]}.compareTo(quantity("{t[1]}")) {t[2]} 0'
        ),
        st.tuples(cap, st.sampled_from(QUANTITIES)).map(
            lambda t: f'{t[0]}.isGreaterThan(quantity("{t[1]}"))'
        ),
        st.sampled_from(VERSIONS).map(
            lambda v: f'device.attributes["{DRIVER}"].version.isGreaterThan(semver("{v}"))'
        ),
        st.tuples(cap, st.integers(0, 2)).map(lambda t: f"{t[0]}.asInteger() >= {t[1]}"),
        st.tuples(cap, st.sampled_from(QUANTITIES)).map(
            lambda t: f'{t[0]}.sub(quantity("{t[1]}")).sign() >= 0'
        ),
        st.integers(0, 2).map(lambda m: f'device.attributes["{DRIVER}"].version.major() == {m}'),
        st.sampled_from((DRIVER, "other")).map(lambda d: f'device.driver == "{d}"'),
        st.just("device.allowMultipleAllocations"),
        st.just(f'device.attributes["{DRIVER}"].healthy'),
        # the strings extension
        attr_ref().map(lambda a: f'{a}.lowerAscii().startsWith("h")'),
        attr_ref().map(lambda a: f'{a}.indexOf("0") >= 0'),
        attr_ref().map(lambda a: f'{a}.substring(1) == "200"'),
    )


expressions = st.recursive(
    comparison(),
    lambda inner: st.one_of(
        st.tuples(inner, st.sampled_from(("&&", "||")), inner).map(
            lambda t: f"({t[0]}) {t[1]} ({t[2]})"
        ),
        inner.map(lambda e: f"!({e})"),
    ),
    max_leaves=4,
)


# forms cel-python evaluates (once per distinct tuple of what they read)
evaluated = st.one_of(
    st.sampled_from(ATTR_NAMES).map(lambda n: f'"{n}" in device.attributes["{DRIVER}"]'),
    st.sampled_from(ATTR_NAMES).map(
        lambda n: f'device.attributes["{DRIVER}"].exists(k, k == "{n}")'),
    st.tuples(st.sampled_from(ATTR_NAMES), expressions).map(
        lambda t: f'("{t[0]}" in device.attributes["{DRIVER}"]) || ({t[1]})'),
)


def columns_of(devs):
    sl = parse_resource_slice(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": "s"},
            "spec": {
                "driver": DRIVER,
                "nodeName": "n",
                "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
                "devices": list(devs),
            },
        }
    )
    return DeviceColumns([sl], ["n"])


def check_against_reference(expr, cols):
    sel = compile_selector(expr)
    col = sel.evaluate(cols.values)
    for row in range(cols.n):
        want_error = None
        try:
            want = reference_matches(expr, *cols._cel_record(row))
        except ValueError as exc:
            want_error = str(exc)
        if want_error is not None:
            assert col.error[row] >= 0, (expr, row, want_error)
        else:
            assert col.error[row] < 0, (expr, row, col.messages[col.error[row]])
            assert bool(col.value[row]) == want, (expr, row)
    return sel


@settings(max_examples=150, deadline=None)
@given(devices, expressions)
def test_compiled_selectors_agree_with_cel_python(devs, expr):
    sel = check_against_reference(expr, columns_of(devs))
    assert sel.compiled, expr  # every generated form takes the column path


@settings(max_examples=40, deadline=None)
@given(
    devices,
    st.sampled_from(
        (
            f'device.attributes["{DRIVER}"].index < device.attributes["{DRIVER}"].numa',
            f'device.attributes["{DRIVER}"].model + "x" == "H200x"',
            f'size(device.attributes["{DRIVER}"].model) > 2',
        )
    ),
)
def test_other_expressions_evaluate_once_per_distinct_tuple(devs, expr):
    sel = check_against_reference(expr, columns_of(devs))
    assert not sel.compiled


def test_one_evaluation_per_distinct_value():
    """Devices of one model share the table entry the gather reads."""
    slices = [
        parse_resource_slice(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceSlice",
                "metadata": {"name": f"s{k}"},
                "spec": {
                    "driver": DRIVER,
                    "nodeName": f"n{k}",
                    "pool": {"name": f"p{k}", "generation": 1, "resourceSliceCount": 1},
                    "devices": [
                        {
                            "name": f"d{i}",
                            "attributes": {"model": {"string": "H200" if i % 2 else "A100"}},
                        }
                        for i in range(100)
                    ],
                },
            }
        )
        for k in range(10)
    ]
    cols = DeviceColumns(slices, [f"n{k}" for k in range(10)])
    ids, table = cols.values.leaf(("attr", f"{DRIVER}/model"))
    assert sorted(table) == ["A100", "H200"] and ids.shape == (1000,)
    col = compile_selector(f'device.attributes["{DRIVER}"].model == "H200"').evaluate(cols.values)
    assert np.array_equal(col.value, np.arange(1000) % 2 == 1)


@pytest.mark.parametrize(
    "expr, words",
    [
        ("noSuchVar", "undeclared reference to 'noSuchVar'"),
        ("device.driver ==", "Syntax error"),
        ("1", "must evaluate to bool"),
        ("device.nosuchfield == 1", "1:8: undefined field 'nosuchfield'"),
        ('device.driver == "a" || device.atributes["a"].x', "undefined field 'atributes'"),
        ('device.?nosuchfield.hasValue()', "1:9: undefined field 'nosuchfield'"),
    ],
)
def test_compile_errors(expr, words):
    with pytest.raises(CelError, match=words):
        compile_selector(expr)


@settings(max_examples=60, deadline=None)
@given(devices, evaluated)
def test_evaluated_forms_agree_with_cel_python(devs, expr):
    check_against_reference(expr, columns_of(devs))


@pytest.mark.parametrize("expr, want", [
    # ``key in map`` asks for a key (cel-go), of one domain or of the domains
    ('"model" in device.attributes["gpu.example.com"]', [True, False]),
    ('"gpu.example.com" in device.attributes', [True, True]),
    ('"memory" in device.capacity["gpu.example.com"]', [True, False]),
    # comprehension macros bind their variable
    ('[1, 2].exists(k, k == 2)', [True, True]),
    ('device.attributes["gpu.example.com"].exists(k, k == "model")', [True, False]),
    ('device.attributes["gpu.example.com"].all(k, k != "model")', [False, True]),
    # optional field selection, as upstream's "no such key" hint suggests
    ('device.attributes["gpu.example.com"].?model.orValue("") == ""', [False, True]),
    ('device.attributes["gpu.example.com"].?model.hasValue()', [True, False]),
    ('device.capacity["gpu.example.com"].?memory.orValue(quantity("0"))'
     '.isGreaterThan(quantity("1Gi"))', [True, False]),
    ('device.attributes["gpu.example.com"].?model.orValue("x").startsWith("N") || '
     'device.attributes["gpu.example.com"].index > 2', [True, True]),
    ('device.attributes["gpu.example.com"][?"model"].orValue("") == ""', [False, True]),
    # Kubernetes' CEL environment has the strings extension
    ('device.attributes["gpu.example.com"].index == 3 || '
     'device.attributes["gpu.example.com"].model.lowerAscii() == "nvidia h100"', [True, True]),
    ('device.attributes["gpu.example.com"].model.split(" ")[1] == "H100"', [True, "error"]),
    ('device.attributes["gpu.example.com"].model.substring(0, 6).upperAscii() == "NVIDIA"',
     [True, "error"]),
    ('device.attributes["gpu.example.com"].model.indexOf("H1") == 7', [True, "error"]),
    ('device.attributes["gpu.example.com"].model.charAt(20) == ""', ["error", "error"]),
    ('["a", "b"].join("-") == "a-b" && " x ".trim() == "x"', [True, True]),
])
def test_map_membership_macros_and_string_functions(expr, want):
    cols = columns_of([
        {"name": "d0", "attributes": {"model": {"string": "NVIDIA H100"}, "index": {"int": 0}},
         "capacity": {"memory": {"value": "80Gi"}}},
        {"name": "d1", "attributes": {"index": {"int": 3}}},
    ])
    col = check_against_reference(expr, cols).evaluate(cols.values)
    got = ["error" if col.error[i] >= 0 else bool(col.value[i]) for i in range(2)]
    assert got == want


@pytest.mark.parametrize("expr", [
    "device.allowMultipleAllocations",
    '[1, 2].exists(device, device > 1)',          # a macro variable may be named device
    'has(device.attributes["a"].x) && device.capacity["a"].m.isInteger()',
])
def test_the_device_fields_compile(expr):
    compile_selector(expr)


def test_runtime_errors_follow_cel_rules():
    cols = columns_of([{"name": "d", "attributes": {"model": {"string": "H200"}}}])

    def run(expr):
        col = compile_selector(expr).evaluate(cols.values)
        return col.messages[col.error[0]] if col.error[0] >= 0 else bool(col.value[0])

    assert run(f'device.attributes["{DRIVER}"].missing == 1') == "no such key: missing"
    assert run(f'device.attributes["{DRIVER}"].missing == 1 || true') is True
    assert run(f'false && device.attributes["{DRIVER}"].missing == 1') is False
    assert run(f'device.attributes["{DRIVER}"].model == 1') is False  # heterogeneous ==
    assert "no such overload" in run(f'device.attributes["{DRIVER}"].model < 1')
    assert (
        run(f'device.capacity["{DRIVER}"].memory.compareTo(quantity("1")) > 0')
        == "no such key: memory"
    )


def test_quantity_and_semver_compare_exactly():
    cols = columns_of(
        [
            {
                "name": "d",
                "capacity": {"memory": {"value": "80Gi"}},
                "attributes": {"v": {"version": "1.10.0"}},
            }
        ]
    )
    yes = [
        f'device.capacity["{DRIVER}"].memory.compareTo(quantity("80Gi")) == 0',
        f'device.capacity["{DRIVER}"].memory.isGreaterThan(quantity("85899345919"))',
        f'device.attributes["{DRIVER}"].v.isGreaterThan(semver("1.9.0"))',
    ]
    for expr in yes:
        assert compile_selector(expr).evaluate(cols.values).value[0], expr
    assert Fraction(80 * 2**30) == cols.values.leaf(("cap", f"{DRIVER}/memory"))[1][0].value


@settings(max_examples=30, deadline=None)
@given(devices)
def test_cel_bind_is_expanded(devs):
    expr = f'cel.bind(d, device.attributes["{DRIVER}"], d.model == "H200" || d.index > 1)'
    assert check_against_reference(expr, columns_of(devs)).compiled


# --------------------------------------------------------------------------
# type checking (what the API server's checker refuses on create)


@pytest.mark.parametrize(
    "expr, words",
    [
        # device.driver is a string, allowMultipleAllocations a bool
        ("device.driver == 1", "1:15: found no matching overload for '_==_' applied to "
                               r"'\(string, int\)'"),
        ('device.driver != true', r"'_!=_' applied to '\(string, bool\)'"),
        ('device.allowMultipleAllocations == "true"', r"'_==_' applied to '\(bool, string\)'"),
        ("device.driver < 3", r"'_<_' applied to '\(string, int\)'"),
        ('device.driver in [1, 2]', r"'@in' applied to '\(string, list\(int\)\)'"),
        # list and map literals are homogeneous (the base environment's validator)
        ('device.driver in [1, "gpu"]', "1:22: expected type 'int' but found 'string'"),
        ('device.driver in "gpu"', r"'@in' applied to '\(string, string\)'"),
        # capacities are quantities: compared with their methods, not operators
        (f'device.capacity["{DRIVER}"].memory >= 1', r"'_>=_' applied to '\(kubernetes.Quantity, int\)'"),
        (f'device.capacity["{DRIVER}"].memory == "40Gi"',
         r"'_==_' applied to '\(kubernetes.Quantity, string\)'"),
        (f'device.capacity["{DRIVER}"].memory < quantity("1Gi")',
         r"'_<_' applied to '\(kubernetes.Quantity, kubernetes.Quantity\)'"),
        # a function with a receiver or arguments no overload takes
        ('device.driver.isGreaterThan(quantity("1"))',
         r"'isGreaterThan' applied to 'string.\(kubernetes.Quantity\)'"),
        ('device.driver.startsWith(1)', r"'startsWith' applied to 'string.\(int\)'"),
        (f'device.capacity["{DRIVER}"].memory.startsWith("4")',
         r"'startsWith' applied to 'kubernetes.Quantity.\(string\)'"),
        (f'device.capacity["{DRIVER}"].memory.isGreaterThan(semver("1.0.0"))',
         r"'isGreaterThan' applied to 'kubernetes.Quantity.\(kubernetes.Semver\)'"),
        ('quantity(1).isInteger()', r"'quantity' applied to '\(int\)'"),
        ('device.driver + 1 == "a1"', r"'_\+_' applied to '\(string, int\)'"),
        ('!device.driver', r"'!_' applied to '\(string\)'"),
        ('b"gpu" == device.driver', r"'_==_' applied to '\(bytes, string\)'"),
        ('device.driver == "a" && 1 == 1 || device.driver', r"'_\|\|_' applied to '\(bool, string\)'"),
        ('cel.bind(d, device.driver, d == 2)', r"'_==_' applied to '\(string, int\)'"),
        # the result must be bool
        ("device.driver", "must evaluate to bool or the unknown type, not string"),
        (f'device.capacity["{DRIVER}"].memory', "not kubernetes.Quantity"),
        ('device.driver.size()', "not int"),
        (f'device.attributes["{DRIVER}"]', r"not map\(string, google.protobuf.Any\)"),
    ],
)
def test_type_errors(expr, words):
    """cel-python compiles these (no checker); the type check refuses them
    with cel-go's words (a list literal of mixed types is list(dyn))."""

    compile_selector(expr)
    if words is None:
        check_types(expr)
        return
    with pytest.raises(CelError, match=words):
        check_types(expr)


@pytest.mark.parametrize(
    "expr",
    [
        # attribute values are dynamic: any comparison or call passes the checker
        f'device.attributes["{DRIVER}"].model == 1',
        f'device.attributes["{DRIVER}"].model > "A"',
        f'device.attributes["{DRIVER}"].model.startsWith("H") && device.driver == "d"',
        f'device.attributes["{DRIVER}"].version.isGreaterThan(semver("1.0.0"))',
        f'device.attributes["{DRIVER}"].healthy',
        f'device.attributes["{DRIVER}"]["model"] in ["H200", "A100"]',
        f'device.attributes["{DRIVER}"].index + 1 == 2.0',
        f'device.attributes["{DRIVER}"].exists(k, k == "model")',
        f'"memory" in device.capacity["{DRIVER}"]',
        f'has(device.attributes["{DRIVER}"].model) ? device.attributes["{DRIVER}"].model == "x"'
        ' : device.driver == "d"',
        f'device.capacity["{DRIVER}"].memory.compareTo(quantity("40Gi")) >= 0',
        f'device.capacity["{DRIVER}"].memory.add(1).isLessThan(quantity("1Gi"))',
        f'device.capacity["{DRIVER}"].memory == quantity("40Gi")',
        f'device.capacity["{DRIVER}"].memory.asApproximateFloat() > 1.5',
        'device.driver.size() > 3 && device.driver.matches("^gpu")',
        "device.allowMultipleAllocations",
        'cel.bind(d, device.driver, d == "x")',
        f'device.attributes["{DRIVER}"].?model.orValue("") == ""',
        '1 < 2.0',                        # cross-type numeric ordering, as Kubernetes
        '[1, 2].indexOf(2) == 1',         # Kubernetes' lists library
        f'device.attributes["{DRIVER}"].model.indexOf("H") == 0',
    ],
)
def test_well_typed_selectors_pass(expr):

    check_types(expr)


@settings(max_examples=200, deadline=None)
@given(st.one_of(expressions, evaluated))
def test_generated_selectors_are_well_typed(expr):
    """The forms the column compiler is tested on all type-check."""

    check_types(expr)


# --------------------------------------------------------------------------
# optional syntax and values (cel-go's optional library, which Kubernetes'
# base environment enables): parsed, evaluated on both paths, type-checked

D = f'device.attributes["{DRIVER}"]'
C = f'device.capacity["{DRIVER}"]'


def _two_devices():
    return columns_of([
        {"name": "d0", "attributes": {"model": {"string": "NVIDIA H100"}, "index": {"int": 0}},
         "capacity": {"memory": {"value": "80Gi"}}},
        {"name": "d1", "attributes": {"index": {"int": 3}}},
    ])


@pytest.mark.parametrize("expr, want, compiled", [
    # selection / index on a missing key: optional.none()
    (f'{D}.?model.orValue("") == ""', [False, True], True),
    (f'{D}[?"model"].orValue("") == ""', [False, True], True),
    (f'{D}.?model.hasValue()', [True, False], True),
    (f'{D}[?"model"].hasValue() || {D}.index > 2', [True, True], True),
    (f'{C}.?memory.orValue(quantity("0")).isGreaterThan(quantity("1Gi"))', [True, False], True),
    # value() of none is a runtime error: the device does not match
    (f'{D}.?model.value() == "NVIDIA H100"', [True, "optional.none() dereference"], True),
    (f'{D}.?model.value() == "x" || true', [True, True], True),
    # an unknown domain is an empty map, there for [?...] as for [...]
    ('device.attributes[?"other.example.com"].hasValue()', [True, True], False),
    ('device.attributes[?"other.example.com"].?model.hasValue()', [False, False], False),
    # selection after an optional one is optional too
    (f'{D}.?model.x.hasValue()', [False, False], False),
    (f'{D}.?index.orValue(9) < 3', [True, False], True),
    # the library's functions and methods
    ('optional.of(1).value() == 1 && !optional.none().hasValue()', [True, True], False),
    ('optional.ofNonZeroValue("").hasValue() || optional.ofNonZeroValue(0).hasValue()',
     [False, False], False),
    ('optional.ofNonZeroValue([1]).hasValue()', [True, True], False),
    (f'{D}.?model.or(optional.of("x")).value() == "x"', [False, True], False),
    (f'{D}.?model.or({D}.?index).hasValue()', [True, True], False),
    (f'{D}.?model.optMap(m, m.size()).orValue(0) > 3', [True, False], False),
    (f'{D}.?index.optFlatMap(i, i > 1 ? optional.of(i) : optional.none()).hasValue()',
     [False, True], False),
    ('[1, 2].first().value() == 1 && [1, 2].last() == optional.of(2) && '
     '![].first().hasValue()', [True, True], False),
    (f'optional.unwrap([{D}.?model, {D}.?model]).size() == 2', [True, False], False),
    (f'[{D}.?model, optional.none()].unwrapOpt().size() == 1', [True, False], False),
    # optional entries of list and map literals
    # entries of one type: orValue of an attribute's optional is an attribute value
    (f'[?{D}.?model, {D}.?model.orValue("y")].size() == 2', [True, False], False),
    (f'{{?"a": {D}.?model, "b": {D}.?model.orValue("c")}}.size() == 2', [True, False],
     False),
    (f'{D}.?model == optional.none()', [False, True], False),
    # orValue's argument is evaluated only when needed
    (f'{D}.?index.orValue({D}.missing) >= 0', [True, True], False),
])
def test_optional_forms(expr, want, compiled):
    cols = _two_devices()
    sel = check_against_reference(expr, cols)
    assert sel.compiled == compiled
    col = sel.evaluate(cols.values)
    got = [col.messages[col.error[i]] if col.error[i] >= 0 else bool(col.value[i])
           for i in range(2)]
    assert got == want
    check_types(expr)


optional_comparisons = st.one_of(
    st.tuples(st.sampled_from(ATTR_NAMES), literal(), literal()).map(
        lambda t: f'{D}.?{t[0]}.orValue({t[1]}) == {t[2]}'),
    st.tuples(st.sampled_from(ATTR_NAMES), literal()).map(
        lambda t: f'{D}[?"{t[0]}"].orValue({t[1]}) != {t[1]}'),
    st.sampled_from(ATTR_NAMES).map(lambda n: f'{D}.?{n}.hasValue()'),
    st.sampled_from(ATTR_NAMES).map(lambda n: f'{D}.?{n}.value() == 1'),
    st.sampled_from(("memory", "cores")).map(
        lambda n: f'{C}.?{n}.orValue(quantity("1")).isLessThan(quantity("40Gi"))'),
)


@settings(max_examples=80, deadline=None)
@given(devices, st.tuples(optional_comparisons, expressions,
                          st.sampled_from(("&&", "||"))).map(
    lambda t: f"({t[0]}) {t[2]} ({t[1]})"))
def test_optional_columns_agree_with_cel_python(devs, expr):
    """x.?f on one domain compiles to a column (an optional per distinct
    value) and agrees with cel-python's evaluation."""
    assert check_against_reference(expr, columns_of(devs)).compiled
    check_types(expr)


@settings(max_examples=40, deadline=None)
@given(devices, st.sampled_from(ATTR_NAMES).flatmap(lambda n: st.sampled_from((
    f'{D}.?{n}.or(optional.of(1)).value() == 1',
    f'[?{D}.?{n}].size() == 1',
    f'{D}.?{n}.optMap(v, v == 1).orValue(false)',
))))
def test_optional_forms_evaluated_once_per_tuple_agree(devs, expr):
    assert not check_against_reference(expr, columns_of(devs)).compiled


@pytest.mark.parametrize("expr, words", [
    # an optional is not its value: methods and operators need value()/orValue()
    (f'{D}.?model.startsWith("N")',
     r"'startsWith' applied to 'optional_type\(any\)\.\(string\)'"),
    (f'{D}.?model == "x"', r"'_==_' applied to '\(optional_type\(any\), string\)'"),
    ('device.driver.hasValue()', r"'hasValue' applied to 'string.\(\)'"),
    (f'{C}.?memory.orValue(1).isInteger()',
     r"'orValue' applied to 'optional_type\(kubernetes.Quantity\)\.\(int\)'"),
    (f'{D}.?model', r"must evaluate to bool or the unknown type, not optional_type\(google.protobuf.Any\)"),
    ('optional.of(device.driver).value() == 1', r"'_==_' applied to '\(string, int\)'"),
    ('[?device.driver].size() == 1',
     "1:9: expected type 'optional_type\\(string\\)' but found 'string'"),
    ('device.driver.?x.hasValue()', "1:14: type 'string' does not support field selection"),
    ('device.driver.x == 1', "1:14: type 'string' does not support field selection"),
])
def test_optional_type_errors(expr, words):
    compile_selector(expr)
    with pytest.raises(CelError, match=words):
        check_types(expr)


def test_optional_syntax_errors_are_refused():
    for expr in (f'{D}.?', f'{D}[?]', '{?: 1}', f'{D}.??model'):
        with pytest.raises(CelError, match="Syntax error"):
            compile_selector(expr)


# --------------------------------------------------------------------------
# nested list literals and comprehension macros (cel-go's checker and the
# base environment's homogeneous-literal validator)


@pytest.mark.parametrize("expr, words", [
    ('[1, "a"].all(x, x > 0)', "1:5: expected type 'int' but found 'string'"),
    ('[[1], ["a"]].size() == 2', r"1:7: expected type 'list\(int\)' but found 'list\(string\)'"),
    ('[[1, "a"]].size() == 1', "1:6: expected type 'int' but found 'string'"),
    ('{"a": 1, "b": "x"}.size() == 2', "1:15: expected type 'int' but found 'string'"),
    ('device.driver.exists(x, x == "a")',
     "1:7: expression of type 'string' cannot be range of a comprehension "
     r"\(must be list, map, or dynamic\)"),
    ('[1, 2].all(x, x == "a")', r"1:17: found no matching overload for '_==_' applied to "
                                r"'\(int, string\)'"),
    ('[1, 2].exists(x, x + 1)', r"1:14: found no matching overload for '_\|\|_' applied to "
                                r"'\(bool, int\)'"),
    ('[device.driver].map(x, x + 1).size() == 1', r"'_\+_' applied to '\(string, int\)'"),
    (f'{C}.all(k, k > 1)', r"'_>_' applied to '\(string, int\)'"),
    (f'{C}.exists(k, {C}[k].startsWith("1"))', r"'startsWith' applied to 'kubernetes.Quantity.\(string\)'"),
])
def test_macro_and_nested_literal_type_errors(expr, words):
    compile_selector(expr)
    with pytest.raises(CelError, match=words):
        check_types(expr)


@pytest.mark.parametrize("expr, at, words", [
    # an attribute value is ``any`` to cel-go's literal validator: a type
    # of its own, never the same as a literal's
    (f'[{D}.model, "x"].size() == 2', '"x"', "expected type 'any' but found 'string'"),
    (f'["x", {D}.model].size() == 2', ".model", "expected type 'string' but found 'any'"),
    (f'{D}.model in [{D}.index, 1]', "1]", "expected type 'any' but found 'int'"),
    (f'{{"a": {D}.model, "b": 1}}.size() == 2', "1}", "expected type 'any' but found 'int'"),
    (f'[?{D}.?model, "y"].size() == 2', '"y"', "expected type 'any' but found 'string'"),
    (f'optional.unwrap([{D}.?model, optional.of("z")]).size() == 2', "optional.of",
     r"expected type 'optional_type\(any\)' but found 'optional_type\(string\)'"),
])
def test_attribute_values_beside_literals_are_refused(expr, at, words):
    """cel-go's checker (any is dyn to it) accepts the list; the base
    environment's homogeneous-literal validator then refuses it, at the
    first entry whose type differs from the first entry's."""
    compile_selector(expr)
    column = expr.index(at) + 1
    with pytest.raises(CelError, match=f"<input>:1:{column}: {words}"):
        check_types(expr)


@pytest.mark.parametrize("expr", [
    f'[{D}.model, {D}.index].size() == 2',
    f'{D}.model in ["a", "b"]',
    f'[{D}.model, {D}.?index.orValue(1)].exists(x, x == 1)',
    f'{{"a": {D}.model, "b": {D}.index}}.size() == 2',
])
def test_attribute_values_together_type_check(expr):
    check_types(expr)


def test_type_errors_print_types_as_cel_go_does():
    """any for attribute values, Kubernetes' object types by their names,
    null for the null literal."""
    for expr, words in (
        (f'{D}.model.startsWith(1)', r"1:44: .*'startsWith' applied to 'any.\(int\)'"),
        (f'-{D} == 1', r"'-_' applied to '\(map\(string, any\)\)'"),
        ('device + 1 == 2', r"'_\+_' applied to '\(kubernetes.DRADevice, int\)'"),
        ('device.driver < null', r"'_<_' applied to '\(string, null\)'"),
        (f'{C}.memory.isLessThan({D}.version) && {C}.memory.major() > 1',
         r"'major' applied to 'kubernetes.Quantity.\(\)'"),
    ):
        with pytest.raises(CelError, match=words):
            check_types(expr)
    with pytest.raises(CelError, match="not null_type"):
        compile_selector("null")


@pytest.mark.parametrize("expr", [
    # attribute values are dynamic: a comprehension over one type-checks
    f'{D}.model.exists(x, x == 1)',
    f'{C}.exists(k, {C}[k].isGreaterThan(quantity("1")))',
    f'{C}.filter(k, k.startsWith("m")).size() > 0',
    '[[1], [2, 3]].all(l, l.size() > 0)',
    '[1, 2].map(x, x * 2).exists(y, y == 4)',
])
def test_macro_bodies_that_type_check(expr):
    check_types(expr)


def test_a_comprehension_over_a_value_that_is_no_list_is_an_error():
    """cel-go ranges over lists and maps only; a string attribute is an
    error for the device (cel-python alone would walk its characters)."""
    cols = _two_devices()
    col = compile_selector(f'{D}.model.exists(x, x == "N")').evaluate(cols.values)
    assert [col.messages[col.error[i]] for i in range(2)] == [
        "got 'types.String', expected iterable type", "no such key: model"]


@pytest.mark.parametrize("expr, words", [
    ('device.attributes[1].size() > 0', r"1:18: found no matching overload for '_\[_\]' "
                                        r"applied to '\(map\(string, map\(string, any\)\), int\)'"),
    ('[1, 2][1u] == 1', r"'_\[_\]' applied to '\(list\(int\), uint\)'"),
    ('{"a": 1}[1] == 1', r"'_\[_\]' applied to '\(map\(string, int\), int\)'"),
])
def test_index_type_errors(expr, words):
    compile_selector(expr)
    with pytest.raises(CelError, match=words):
        check_types(expr)


@pytest.mark.parametrize("expr, words", [
    (f'{D}.?model.optMap(1, 2).hasValue()',
     "1:52: optMap\\(\\) variable name must be a simple identifier"),
    ('[1].all(1, true)', "1:9: argument must be a simple name"),
])
def test_macro_variables_must_be_names(expr, words):
    with pytest.raises(CelError, match=words):
        compile_selector(expr)


@pytest.mark.parametrize("expr", [
    f'{D}.?model.orValue()',
    f'{D}.model.startsWith()',
    f'{D}.model.startsWith("N", 1)',
    'quantity() == quantity("1")',
])
def test_calls_with_a_wrong_argument_count_are_no_overload(expr):
    """Not a crash of the column compiler: cel-python's answer, no such
    overload, for every device that has the value."""
    col = compile_selector(expr).evaluate(_two_devices().values)
    assert (col.error >= 0).all()
    assert col.messages[col.error[0]] == "no such overload"
