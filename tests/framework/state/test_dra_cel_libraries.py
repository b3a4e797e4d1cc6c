"""The CEL libraries of Kubernetes' base environment beyond the standard
ones, in DRA selectors: cel-go's sets extension, its two-variable
comprehensions and Kubernetes' lists and named-format libraries.  Answers are cel-go's (the
examples of its documentation), the column compiler agrees with cel-python
device by device, and the type check refuses what cel-go's checker does."""

from __future__ import annotations

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
D = f'device.attributes["{DRIVER}"]'
MODELS = ("a", "b", "c")


def _columns(devs):
    sl = parse_resource_slice({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s"},
        "spec": {"driver": DRIVER, "nodeName": "n",
                 "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
                 "devices": list(devs)}})
    return DeviceColumns([sl], ["n"])


def _answers(expr, cols):
    """Each device's answer (bool, or the error's message), the compiled
    column checked against cel-python's evaluation device by device."""
    sel = compile_selector(expr)
    check_types(expr)
    col = sel.evaluate(cols.values)
    out = []
    for row in range(cols.n):
        try:
            want = reference_matches(expr, *cols._cel_record(row))
        except ValueError as exc:
            assert col.error[row] >= 0, (expr, row, str(exc))
            out.append(col.messages[col.error[row]])
            continue
        assert col.error[row] < 0, (expr, row, col.messages[col.error[row]])
        assert bool(col.value[row]) == want, (expr, row)
        out.append(want)
    return sel, out


def _one(expr):
    """The answer of a selector that reads no device."""
    return _answers(expr, _columns([{"name": "d"}]))[1][0]


# --------------------------------------------------------------------------
# sets extension


@pytest.mark.parametrize("expr, want", [
    ("sets.contains([], [])", True),
    ("sets.contains([], [1])", False),
    ("sets.contains([1, 2, 3, 4], [2, 3])", True),
    ("sets.equivalent([], [])", True),
    ("sets.equivalent([1], [1, 1])", True),
    ("sets.equivalent([1, 2, 3], [3, 2, 1])", True),
    ("sets.equivalent([1, 2], [1])", False),
    ("sets.intersects([1], [])", False),
    ("sets.intersects([1], [1, 2])", True),
    ("sets.intersects([[1], [2, 3]], [[1, 2], [2, 3]])", True),
    ('sets.contains(["a", "b"], ["b"]) && !sets.intersects(["a"], ["b"])', True),
])
def test_sets_answer_as_cel_go(expr, want):
    assert _one(expr) is want


def _list_device(i, models):
    return {"name": f"d{i}", "attributes": {"models": {"strings": list(models)},
                                            "ids": {"ints": [len(models), 1]},
                                            "model": {"string": models[0] if models else ""}}}


list_devices = st.lists(st.lists(st.sampled_from(MODELS), max_size=3), min_size=1,
                        max_size=5).map(lambda ms: [_list_device(i, m) for i, m in enumerate(ms)])


@settings(max_examples=40, deadline=None)
@given(list_devices, st.sampled_from(("contains", "equivalent", "intersects")),
       st.lists(st.sampled_from(MODELS), max_size=3), st.booleans())
def test_sets_on_list_attributes_are_compiled_and_agree(devs, fn, wanted, flip):
    literal = "[" + ", ".join(f'"{m}"' for m in wanted) + "]"
    args = (literal, f"{D}.models") if flip else (f"{D}.models", literal)
    expr = f"sets.{fn}({args[0]}, {args[1]})"
    sel, got = _answers(expr, _columns(devs))
    assert sel.compiled            # one device value and a constant: a column
    for dev, answer in zip(devs, got):
        a, b = set(dev["attributes"]["models"]["strings"]), set(wanted)
        if flip:
            a, b = b, a
        want = {"contains": b <= a, "equivalent": a == b, "intersects": bool(a & b)}[fn]
        assert answer is want, (expr, dev)


def test_sets_of_a_value_that_is_no_list_is_an_error_for_that_device():
    cols = _columns([{"name": "d0", "attributes": {"models": {"strings": ["a"]}}},
                     {"name": "d1", "attributes": {"models": {"string": "a"}}}])
    _, got = _answers(f'sets.contains({D}.models, ["a"])', cols)
    assert got == [True, "no such overload: sets.contains(string, list)"]


@pytest.mark.parametrize("expr, words", [
    ('sets.contains([1], ["a"])',
     r"1:14: found no matching overload for 'sets.contains' applied to "
     r"'\(list\(int\), list\(string\)\)'"),
    ('sets.intersects(device.driver, ["a"])',
     r"'sets.intersects' applied to '\(string, list\(string\)\)'"),
    ('sets.equivalent([1], [1]) == 1', r"'_==_' applied to '\(bool, int\)'"),
])
def test_sets_type_errors(expr, words):
    compile_selector(expr)
    with pytest.raises(CelError, match=words):
        check_types(expr)


def test_sets_with_an_attribute_value_type_check():
    check_types(f'sets.contains({D}.models, ["a"])')
    check_types(f'sets.intersects([{D}.model, {D}.other], {D}.models)')


# --------------------------------------------------------------------------
# two-variable comprehensions


@pytest.mark.parametrize("expr, want", [
    ("[1, 2, 3].all(i, j, i < j)", True),
    ("{'hello': 'world', 'taco': 'taco'}.all(k, v, k != v)", False),
    ("{'h': ['hello', 'hi'], 'j': ['joke', 'jog']}.all(k, vals, vals.all(v, v.startsWith(k)))",
     True),
    ("{'greeting': 'hello', 'farewell': 'goodbye'}"
     ".exists(k, v, k.startsWith('good') || v.endsWith('bye'))", True),
    ("[1, 2, 4, 8, 16].exists(i, v, v == 1024 && i == 10)", False),
    ("[1, 2, 1, 3, 1, 4].existsOne(i, v, i == 1 || v == 1)", False),
    ("[1, 1, 2, 2, 3, 3].existsOne(i, v, i == 2 && v == 2)", True),
    ("{'i': 0, 'j': 1, 'k': 2}.existsOne(i, v, i == 'l' || v == 1)", True),
    ("[1, 1, 2].exists_one(i, v, v == 2)", True),
    ("[1, 2, 3].transformList(i, v, (i * v) + v) == [1, 4, 9]", True),
    ("[1, 2, 3].transformList(i, v, i % 2 == 0, (i * v) + v) == [1, 9]", True),
    ("{'greeting': 'hello', 'farewell': 'goodbye'}.transformList(k, _, k).size() == 2", True),
    ("[1, 2, 3].transformMap(i, v, (i * v) + v) == {0: 1, 1: 4, 2: 9}", True),
    ("[1, 2, 3].transformMap(i, v, i % 2 == 0, (i * v) + v) == {0: 1, 2: 9}", True),
    ("{'greeting': 'hello'}.transformMap(k, v, v + '!') == {'greeting': 'hello!'}", True),
    ("{'greeting': 'hello'}.transformMapEntry(k, v, {v: k}) == {'hello': 'greeting'}", True),
    ("[1, 2, 3].transformMapEntry(i, v, {v: i}) == {1: 0, 2: 1, 3: 2}", True),
    # false && error is false; the error alone is the answer otherwise
    ("[0, 1].all(i, v, 1 / v > 0 && false)", False),
])
def test_two_variable_comprehensions_answer_as_cel_go(expr, want):
    assert _one(expr) is want


@pytest.mark.parametrize("expr, error", [
    ("{'greeting': 'aloha', 'farewell': 'aloha'}"
     ".transformMapEntry(k, v, {v: k}).size() == 1", "insert failed: key aloha already exists"),
    ("[0, 1].all(i, v, 1 / v > 0)", "divide by zero"),
    ("[0, 1].existsOne(i, v, 1 / v > 0)", "divide by zero"),
])
def test_two_variable_comprehension_errors(expr, error):
    got = _one(expr)
    assert isinstance(got, str) and error in got


def test_two_variable_comprehensions_over_a_device():
    """A domain's attributes are a map (key, value); a list attribute a
    list (index, value); a string is no range (an error for the device)."""
    cols = _columns([
        {"name": "d0", "attributes": {"model": {"string": "H100"}, "index": {"int": 0},
                                      "models": {"strings": ["a", "b"]}}},
        {"name": "d1", "attributes": {"model": {"string": "A100"}, "models": {"string": "a"}}},
    ])
    cases = [
        (f'{D}.exists(k, v, k == "model" && v == "H100")', [True, False]),
        (f'{D}.transformList(k, v, k).size() == 3', [True, False]),
        (f'{D}.models.all(i, v, i == 0 || v != "a")',
         [True, "got 'types.String', expected iterable type"]),
        (f'{D}.transformMap(k, v, k == "model", v).size() == 1', [True, True]),
    ]
    for expr, want in cases:
        sel, got = _answers(expr, cols)
        assert not sel.compiled            # cel-python, once per distinct tuple
        assert got == want, expr


@pytest.mark.parametrize("expr, words", [
    ("[1].all(i, v, v)", r"1:8: found no matching overload for '_&&_' applied to "
                         r"'\(bool, int\)'"),
    ('[1].exists(i, v, v == "a")', r"'_==_' applied to '\(int, string\)'"),
    ('{"a": 1}.all(k, v, k == 1)', r"'_==_' applied to '\(string, int\)'"),
    ('["a"].transformList(i, v, v + i).size() == 1', r"'_\+_' applied to '\(string, int\)'"),
    ("[1].transformMapEntry(i, v, v).size() == 1", "'cel.@mapInsert'"),
    ('device.driver.all(i, v, true)', "expression of type 'string' cannot be range"),
])
def test_two_variable_comprehension_type_errors(expr, words):
    compile_selector(expr)
    with pytest.raises(CelError, match=words):
        check_types(expr)


@pytest.mark.parametrize("expr, words", [
    ("[1].all(i, 1, true)", "1:12: argument must be a simple name"),
    ("[1].transformList(i, v, w)", "1:25: undeclared reference to 'w'"),
])
def test_two_variable_comprehension_compile_errors(expr, words):
    with pytest.raises(CelError, match=words):
        compile_selector(expr)


# --------------------------------------------------------------------------
# Kubernetes' lists library


@pytest.mark.parametrize("expr, want", [
    ("[1, 2, 2, 3].isSorted() && !['b', 'a'].isSorted() && [].isSorted()", True),
    ("[1, 2, 3].sum() == 6 && [1.5, 2.0].sum() == 3.5 && [].sum() == 0", True),
    ("[3, 1, 2].min() == 1 && ['b', 'c', 'a'].max() == 'c'", True),
    ("[1, 2, 1].indexOf(1) == 0 && [1, 2, 1].lastIndexOf(1) == 2 && [1].indexOf(5) == -1",
     True),
    ('"abcb".lastIndexOf("b") == 3 && "abc".indexOf("c") == 2', True),
    ("[].min() == 1", "min called on empty list"),
])
def test_lists_library_answers(expr, want):
    assert _one(expr) == want


def test_lists_library_on_list_attributes():
    cols = _columns([_list_device(0, ["a", "c"]), _list_device(1, ["c", "a"])])
    _, got = _answers(f'{D}.models.isSorted() && {D}.ids.sum() == 3 && {D}.models.max() == "c"',
                      cols)
    assert got == [True, False]


@pytest.mark.parametrize("expr, words", [
    ('["a"].sum() == 1', r"'sum' applied to 'list\(string\)\.\(\)'"),
    ("[1].max() == 'a'", r"'_==_' applied to '\(int, string\)'"),
])
def test_lists_library_type_errors(expr, words):
    compile_selector(expr)
    with pytest.raises(CelError, match=words):
        check_types(expr)


# --------------------------------------------------------------------------
# Kubernetes' regex library


@pytest.mark.parametrize("expr, want", [
    ('"abc 123".find("[0-9]+") == "123" && "abc 123".find("xyz") == ""', True),
    ('"123 abc 456".findAll("[0-9]+") == ["123", "456"]', True),
    ('"123 abc 456".findAll("[0-9]+", 1) == ["123"] && "1 2".findAll("[0-9]", 0) == []', True),
    # Go's FindAllString: an empty match right after a match is left out
    ('"abc".findAll("b*") == ["", "b", ""]', True),
    ('"abc".find("(") == ""', "invalid regex"),
])
def test_regex_library_answers(expr, want):
    got = _one(expr)
    assert got == want if want is True else (isinstance(got, str) and want in got)


def test_find_on_an_attribute_is_compiled():
    cols = _columns([{"name": "d0", "attributes": {"model": {"string": "H100"}}},
                     {"name": "d1", "attributes": {"model": {"string": "A30"}}}])
    sel, got = _answers(f'{D}.model.find("[0-9]+") == "100"', cols)
    assert sel.compiled and got == [True, False]


def test_regex_library_type_errors():
    with pytest.raises(CelError, match=r"'findAll' applied to 'string.\(string, string\)'"):
        check_types('device.driver.findAll("a", "b").size() == 1')
    with pytest.raises(CelError, match=r"'_==_' applied to '\(list\(string\), int\)'"):
        check_types('device.driver.findAll("a") == 1')


# --------------------------------------------------------------------------
# the strings extension's format and strings.quote (version 2)


@pytest.mark.parametrize("expr", [
    # cel-go's documented examples
    '"this is a string: %s\\nand an integer: %d".format(["str", 42]) == '
    '"this is a string: str\\nand an integer: 42"',
    '"a double substituted with %%s: %s".format([64.2]) == "a double substituted with %s: 64.2"',
    '"%f".format([3.14]) == "3.140000"',
    '"scientific notation: %e".format([2.71828]) == '
    '"scientific notation: 2.718280\\u202f\\u00d7\\u202f10\\u2070\\u2070"',
    '"5 in binary: %b".format([5]) == "5 in binary: 101"',
    '"26 in hex: %x".format([26]) == "26 in hex: 1a" && "%X".format([26]) == "1A"',
    '"30 in octal: %o".format([30]) == "30 in octal: 36"',
    '"a map inside a list: %s".format([[1, 2, 3, {"a": "x", "b": "y", "c": "z"}]]) == '
    '"a map inside a list: [1, 2, 3, {\\"a\\":\\"x\\", \\"b\\":\\"y\\", \\"c\\":\\"z\\"}]"',
    '"true bool: %s - false bool: %s\\nbinary bool: %b".format([true, false, true]) == '
    '"true bool: true - false bool: false\\nbinary bool: 1"',
    # Go's shortest double for %s, 6 decimals inside a list, en-US grouping for %f
    '"%s %s %s".format([3.0, 1e8, [1.5]]) == "3 1e+08 [1.500000]"',
    '"%.2f".format([1234.5678]) == "1,234.57"',
    '"%x".format(["Hello"]) == "48656c6c6f"',
    # infinities and NaN (a double, or the strings cel-go takes for one):
    # the locale printer's symbols; %e hands its precision (6 by default)
    # to the printer as a width, so what is shorter is padded on the left
    '"%f".format([double("Infinity")]) == "\\u221e" && "%.2f".format(["-Infinity"]) == '
    '"-\\u221e" && "%f".format(["NaN"]) == "NaN"',
    '"%e".format([double("Infinity")]) == "     \\u221e"',
    '"%e".format(["-Infinity"]) == "    -\\u221e" && "%e".format([double("NaN")]) == "   NaN"',
    '"%.0e".format([1.0/0.0]) == "\\u221e" && "%.1e".format(["NaN"]) == "NaN"',
    '"%.20e".format([2.71828]) == "     2.718280\\u202f\\u00d7\\u202f10\\u2070\\u2070"',
    '"%.2e".format([1052.032911275]) == "1.052033\\u202f\\u00d7\\u202f10\\u2070\\u00b3"',
    # a list literal in format's arguments may mix types
    '"%s".format([[1, "a"]]) == "[1, \\"a\\"]"',
    'strings.quote("single-quote with \\"double quote\\"") == '
    '"\\"single-quote with \\\\\\"double quote\\\\\\"\\""',
    'strings.quote("two escape sequences \\a\\n") == "\\"two escape sequences \\\\a\\\\n\\""',
])
def test_format_and_quote_answer_as_cel_go(expr):
    assert _one(expr) is True


@pytest.mark.parametrize("expr, words", [
    ('"%d".format(["a"]) == ""',
     "1:14: decimal clause can only be used on integers, was given string"),
    ('"%s %s".format(["a"]) == ""', "1:15: index 1 out of range"),
    ('"%s".format(["a", "b"]) == ""',
     r"too many arguments supplied to string.format \(expected 1, got 2\)"),
    ('"%z".format([1]) == ""', 'unrecognized formatting clause "z"'),
    # an attribute value is any, which no clause takes (cel-go's validator)
    (f'"%s".format([{D}.model]) == "x"', "1:50: string clause can only be used on strings, "
                                         ".* was given google.protobuf.Any"),
    ('device.driver.format(1) == ""', r"'format' applied to 'string.\(int\)'"),
])
def test_format_refused_on_create(expr, words):
    compile_selector(expr)
    with pytest.raises(CelError, match=words):
        check_types(expr)


def test_format_errors_at_run_time():
    """A format string or arguments known only at run time: cel-go's
    runtime errors."""
    cols = _columns([{"name": "d0", "attributes": {"pattern": {"string": "%d-%d"}}},
                     {"name": "d1", "attributes": {"pattern": {"string": "%s"}}},
                     {"name": "d2", "attributes": {"pattern": {"string": "%d%"}}}])
    _, got = _answers(f'{D}.pattern.format([1, 2]) == "1-2"', cols)
    # an argument left over is the validator's, not an error at run time
    assert got == [True, False, "unexpected end of string"]


# --------------------------------------------------------------------------
# Kubernetes' IP and CIDR libraries


@pytest.mark.parametrize("expr", [
    # the libraries' documented examples
    "ip('127.0.0.1').family() == 4 && ip('::1').family() == 6",
    "isIP('127.0.0.1') && isIP('::1') && !isIP('127.0.0.256') && !isIP(':::1')",
    "ip.isCanonical('127.0.0.1') && ip.isCanonical('2001:db8::abcd') && "
    "!ip.isCanonical('2001:DB8::ABCD') && !ip.isCanonical('2001:db8::0:0:0:abcd')",
    "ip('0.0.0.0').isUnspecified() && ip('::').isUnspecified() && !ip('::1').isUnspecified()",
    "ip('127.0.0.1').isLoopback() && !ip('192.168.0.1').isLoopback() && ip('::1').isLoopback()",
    "ip('224.0.0.1').isLinkLocalMulticast() && !ip('224.0.1.1').isLinkLocalMulticast() && "
    "ip('ff02::1').isLinkLocalMulticast() && !ip('fd00::1').isLinkLocalMulticast()",
    "ip('169.254.169.254').isLinkLocalUnicast() && !ip('192.168.0.1').isLinkLocalUnicast() && "
    "ip('fe80::1').isLinkLocalUnicast() && !ip('fd80::1').isLinkLocalUnicast()",
    "ip('192.168.0.1').isGlobalUnicast() && !ip('255.255.255.255').isGlobalUnicast() && "
    "ip('2001:db8::abcd').isGlobalUnicast() && !ip('ff00::1').isGlobalUnicast()",
    "cidr('192.168.0.0/24').containsIP(ip('192.168.0.1')) && "
    "!cidr('192.168.0.0/24').containsIP('192.168.1.1')",
    "cidr('192.168.0.0/16').containsCIDR(cidr('192.168.10.0/24')) && "
    "!cidr('192.168.1.0/24').containsCIDR('192.168.2.0/24')",
    "cidr('192.168.0.1/24').ip() == ip('192.168.0.1') && cidr('::1/128').ip().family() == 6",
    "cidr('192.168.0.1/24').masked() == cidr('192.168.0.0/24') && "
    "cidr('192.168.0.1/24') != cidr('192.168.0.1/24').masked()",
    "cidr('192.168.0.0/16').prefixLength() == 16 && cidr('::1/128').prefixLength() == 128",
    "isCIDR('192.168.0.0/16') && !isCIDR('192.168.0.0/33') && !isCIDR('::1/129')",
    "string(ip('10.0.0.1')) == '10.0.0.1' && string(cidr('10.0.0.0/8')) == '10.0.0.0/8'",
])
def test_ip_and_cidr_answer_as_kubernetes(expr):
    assert _one(expr) is True


@pytest.mark.parametrize("text, words", [
    ("127.0.0.256", "parse error"),
    ("fe80::1%eth0", "with zone value is not allowed"),
    ("::ffff:1.2.3.4", "IPv4-mapped IPv6 address"),
    ("010.0.0.1", "parse error"),
])
def test_ip_refuses_what_netip_and_the_library_refuse(text, words):
    got = _one(f"ip('{text}').family() == 4")
    assert isinstance(got, str) and words in got


def test_ip_of_an_attribute_is_compiled():
    cols = _columns([{"name": f"d{i}", "attributes": {"addr": {"string": a}}}
                     for i, a in enumerate(("10.1.2.3", "fd00::1", "nope"))])
    sel, got = _answers(f"ip({D}.addr).family() == 4", cols)
    assert sel.compiled
    assert got[:2] == [True, False] and "parse error" in got[2]
    _, got = _answers(f"cidr('10.0.0.0/8').containsIP({D}.addr)", cols)
    assert got[:2] == [True, False] and "parse error" in got[2]


@pytest.mark.parametrize("expr, words", [
    ("cidr('1.0.0.0/8').containsIP(1)", r"'containsIP' applied to 'net.CIDR.\(int\)'"),
    ("ip('1.2.3.4').family() == 'a'", r"'_==_' applied to '\(int, string\)'"),
    ("device.driver.family() == 4", r"'family' applied to 'string.\(\)'"),
    ("ip('1.2.3.4')", "must evaluate to bool or the unknown type, not net.IP"),
])
def test_ip_and_cidr_type_errors(expr, words):
    compile_selector(expr)
    with pytest.raises(CelError, match=words):
        check_types(expr)


# --------------------------------------------------------------------------
# two-variable comprehensions against Python on random lists


_PREDICATES = {
    "i < v": lambda i, v: i < v,
    "v % 2 == 0": lambda i, v: v % 2 == 0,
    "i == v": lambda i, v: i == v,
}


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-3, 5), max_size=6), st.sampled_from(sorted(_PREDICATES)))
def test_two_variable_comprehensions_agree_with_python(items, predicate):
    p = _PREDICATES[predicate]
    pairs = list(enumerate(items))
    literal = "[" + ", ".join(map(str, items)) + "]"
    kept = [v * 10 + i for i, v in pairs if p(i, v)]
    want = {
        f"{literal}.all(i, v, {predicate})": all(p(i, v) for i, v in pairs),
        f"{literal}.exists(i, v, {predicate})": any(p(i, v) for i, v in pairs),
        f"{literal}.existsOne(i, v, {predicate})": sum(p(i, v) for i, v in pairs) == 1,
        f"{literal}.transformList(i, v, {predicate}, v * 10 + i) == "
        f"[{', '.join(map(str, kept))}]": True,
        f"{literal}.transformMap(i, v, {predicate}, v).size() == {len(kept)}": True,
    }
    for expr, answer in want.items():
        assert _one(expr) is answer, expr


# --------------------------------------------------------------------------
# Kubernetes' URL library


@pytest.mark.parametrize("expr", [
    # the library's documented examples
    "isURL('https://user:pass@example.com:80/path?query=val#fragment') && "
    "isURL('/absolute-path') && !isURL('https://a:b:c/') && !isURL('../relative-path')",
    "url('/path').getScheme() == '' && url('https://example.com/').getScheme() == 'https'",
    "url('https://example.com:80/').getHost() == 'example.com:80' && "
    "url('https://example.com/').getHost() == 'example.com' && "
    "url('https://[::1]:80/').getHost() == '[::1]:80' && url('https://[::1]/').getHost() == "
    "'[::1]' && url('/path').getHost() == ''",
    "url('https://example.com:80/').getHostname() == 'example.com' && "
    "url('https://127.0.0.1:80/').getHostname() == '127.0.0.1' && "
    "url('https://[::1]:80/').getHostname() == '::1' && url('/path').getHostname() == ''",
    "url('https://example.com:80/').getPort() == '80' && "
    "url('https://example.com/').getPort() == '' && url('/path').getPort() == ''",
    "url('https://example.com/path').getEscapedPath() == '/path' && "
    "url('https://example.com/path with spaces/').getEscapedPath() == '/path%20with%20spaces/' "
    "&& url('https://example.com').getEscapedPath() == ''",
    "url('https://example.com/path?k1=a&k2=b&k2=c').getQuery() == {'k1': ['a'], 'k2': ['b', 'c']}",
    "url('https://example.com/path?key with spaces=value with spaces').getQuery() == "
    "{'key with spaces': ['value with spaces']}",
    "url('https://example.com/path?').getQuery() == {} && "
    "url('https://example.com/path').getQuery() == {}",
])
def test_urls_answer_as_kubernetes(expr):
    assert _one(expr) is True


def test_url_of_an_attribute_is_compiled_and_its_errors_are_the_devices():
    cols = _columns([{"name": f"d{i}", "attributes": {"endpoint": {"string": u}}}
                     for i, u in enumerate(("https://svc:8443/v1", "../relative", "https://a:b:c/"))])
    sel, got = _answers(f"url({D}.endpoint).getPort() == '8443'", cols)
    assert sel.compiled
    assert got[0] is True
    assert "invalid URI for request" in got[1] and 'invalid port ":c" after host' in got[2]


def test_url_type_errors():
    with pytest.raises(CelError, match=r"'url' applied to '\(int\)'"):
        check_types("url(1).getHost() == ''")
    with pytest.raises(CelError, match="not kubernetes.URL"):
        check_types("url('/x')")


# --------------------------------------------------------------------------
# Kubernetes' named-format library (format.<name>().validate(s))

_LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or "
              "'-', and must start and end with an alphanumeric character (e.g. 'my-name',  or "
              "'123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
_SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                  "characters, '-' or '.', and must start and end with an alphanumeric character "
                  "(e.g. 'example.com', regex used for validation is "
                  "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
_DNS1035_MSG = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', "
                "start with an alphabetic character, and end with an alphanumeric character "
                "(e.g. 'my-name',  or 'abc-123', regex used for validation is "
                "'[a-z]([-a-z0-9]*[a-z0-9])?')")
_QUALIFIED_MSG = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must "
                  "start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  "
                  "or '123-abc', regex used for validation is "
                  "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")
_LABEL_VALUE_MSG = ("a valid label must be an empty string or consist of alphanumeric characters, "
                    "'-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
                    "'MyValue',  or 'my_value',  or '12345', regex used for validation is "
                    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")


def _cel_string(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


@pytest.mark.parametrize("call, problems", [
    # upstream's library tests (apiserver/pkg/cel/library/format_test.go)
    ('format.dns1123Label().validate("my-label-name")', None),
    ('format.dns1123Subdomain().validate("apiextensions.k8s.io")', None),
    ('format.qualifiedName().validate("apiextensions.k8s.io/v1beta1")', None),
    ('format.dns1123LabelPrefix().validate("my-label-prefix-")', None),
    ('format.dns1123SubdomainPrefix().validate("mysubdomain.prefix.-")', None),
    ('format.dns1035LabelPrefix().validate("my-label-prefix-")', None),
    ('format.uri().validate("http://example.com")', None),
    ('format.uuid().validate("123e4567-e89b-12d3-a456-426614174000")', None),
    ('format.byte().validate("aGVsbG8=")', None),
    ('format.date().validate("2021-01-01")', None),
    ('format.datetime().validate("2021-01-01T00:00:00Z")', None),
    ('format.dns1123Label().validate("contains a space")', [_LABEL_MSG]),
    ('format.dns1123Subdomain().validate("contains a space")', [_SUBDOMAIN_MSG]),
    ('format.dns1035Label().validate("contains a space")', [_DNS1035_MSG]),
    ('format.qualifiedName().validate("contains a space")', [_QUALIFIED_MSG]),
    ('format.dns1123LabelPrefix().validate("contains a space-")', [_LABEL_MSG]),
    ('format.dns1123SubdomainPrefix().validate("contains a space-")', [_SUBDOMAIN_MSG]),
    ('format.dns1035LabelPrefix().validate("contains a space-")', [_DNS1035_MSG]),
    ('format.dns1035Label().validate("my-label-name")', None),
    ('format.qualifiedName().validate("my.name")', None),
    ('format.byte().validate("aGVsbG8")', ["invalid base64"]),
    ('format.date().validate("2020-01-32")', ["invalid date"]),
    ('format.datetime().validate("2020-01-32T00:00:00Z")', ["invalid datetime"]),
    ('format.labelValue().validate("my-cool-label-Value")', None),
    ('format.labelValue().validate("my-cool-label-Value!!\\n\\n!!!")', [_LABEL_VALUE_MSG]),
    # derived by hand from the same rules
    ('format.named("dns1123Label").value().validate("UPPER")', [_LABEL_MSG]),
    ('format.dns1123Label().validate("' + "a" * 64 + '")', ["must be no more than 63 characters"]),
    ('format.dns1123LabelPrefix().validate("ab-")', None),       # masked to "aa"
    ('format.dns1123LabelPrefix().validate("-")', [_LABEL_MSG]),  # too short to mask
    ('format.uri().validate("x")', ['parse "x": invalid URI for request']),
    ('format.uri().validate("")', ['parse "": empty url']),
    ('format.uuid().validate("123E4567E89B12D3A456426614174000")', None),
    ('format.uuid().validate("123e4567-e89b-12d3-a456-42661417400")',
     ["does not match the UUID format"]),
    ('format.byte().validate("")', ["invalid base64"]),
    ('format.date().validate("2024-02-29")', None),
    ('format.date().validate("2023-02-29")', ["invalid date"]),
    ('format.date().validate("2023-13-01")', ["invalid date"]),
    ('format.datetime().validate("2021-01-01t23:59:59.5+01:00")', None),
    ('format.datetime().validate("2021-01-01T24:00:00Z")', ["invalid datetime"]),
    ('format.datetime().validate("2021-01-01")', ["invalid datetime"]),
])
def test_named_formats_validate_as_kubernetes(call, problems):
    want = "optional.none()" if problems is None else \
        "optional.of([" + ", ".join(_cel_string(p) for p in problems) + "])"
    assert _one(f"{call} == {want}") is True


def test_named_format_lookup_and_equality():
    """``format.named(n)`` has each constant format, equal to
    ``format.n()`` and to no other; an unknown name is none."""
    from tensorsched.framework.state.dra_cel_named_formats import FORMAT_NAMES

    assert _one('format.named("unknown").hasValue()') is False
    for a in FORMAT_NAMES:
        assert _one(f'format.named("{a}").hasValue() && '
                    f'format.named("{a}").value() == format.{a}()') is True
        for b in FORMAT_NAMES:
            if a != b:
                assert _one(f"format.{a}() == format.{b}()") is False


def test_named_format_of_an_attribute_answers_per_device():
    cols = _columns([{"name": "d0", "attributes": {"host": {"string": "gpu-0"}}},
                     {"name": "d1", "attributes": {"host": {"string": "GPU_0"}}},
                     {"name": "d2", "attributes": {"host": {"int": 3}}}])
    _, got = _answers(f"!format.dns1123Label().validate({D}.host).hasValue()", cols)
    assert got == [True, False, "no such overload: kubernetes.NamedFormat.validate(int)"]


@pytest.mark.parametrize("expr, words", [
    ('format.dns1123Label().validate(1).hasValue()',
     r"found no matching overload for 'validate' applied to 'kubernetes.NamedFormat.\(int\)'"),
    ('format.named(1).hasValue()', r"'format.named' applied to '\(int\)'"),
    ('format.uri().validate("x") == true', r"'_==_' applied to "
                                            r"'\(optional_type\(list\(string\)\), bool\)'"),
])
def test_named_format_type_errors(expr, words):
    compile_selector(expr)
    with pytest.raises(CelError, match=words):
        check_types(expr)


# --------------------------------------------------------------------------
# cel-go's lists extension (version 3)


@pytest.mark.parametrize("expr, want", [
    # cel-go's documented examples
    ("[1, 2, 2, 3, 3, 3].distinct() == [1, 2, 3]", True),
    ('["b", "b", "c", "a", "c"].distinct() == ["b", "c", "a"]', True),
    ("lists.range(5) == [0, 1, 2, 3, 4]", True),
    ("[5, 3, 1, 2].reverse() == [2, 1, 3, 5]", True),
    ("[1, 2, 3, 4].slice(1, 3) == [2, 3] && [1, 2, 3, 4].slice(2, 4) == [3, 4]", True),
    ("[[1], [2, 3], [4]].flatten() == [1, 2, 3, 4]", True),
    ("[dyn([1]), [2, dyn([3, 4])]].flatten() == [1, 2, dyn([3, 4])]", True),
    ("[[1], [], [], [3, 4]].flatten() == [1, 3, 4]", True),
    ("[dyn([1]), [2, dyn([3, dyn([4])])]].flatten(2) == [1, 2, 3, dyn([4])]", True),
    ("[3, 2, 1].sort() == [1, 2, 3]", True),
    ('["b", "c", "a"].sort() == ["a", "b", "c"]', True),
    # by hand from the same rules
    ("lists.range(0) == [] && lists.range(-2) == []", True),
    ("[dyn(1), dyn(1.0), dyn(1u)].distinct() == [1]", True),
    ("[3, 1, 2].sortBy(x, -x) == [3, 2, 1]", True),
    ('["bb", "a", "ccc"].sortBy(s, size(s)) == ["a", "bb", "ccc"]', True),
    # ties keep their order
    ('[{"n": "x", "k": "2"}, {"n": "y", "k": "1"}, {"n": "z", "k": "2"}].sortBy(p, p.k)'
     '.map(p, p.n) == ["y", "x", "z"]', True),
    ("[].sort() == [] && [].distinct() == [] && [].reverse() == []", True),
    ("[1, 2].slice(0, 0) == []", True),
    ("[1, 2].slice(1, 3) == []", "cannot slice(1, 3), list is length 2"),
    ("[1, 2].slice(2, 1) == []",
     "cannot slice(2, 1), start index must be less than or equal to end index"),
    ("[1, 2].slice(-1, 1) == []", "cannot slice(-1, 1), negative indexes not supported"),
    ("[[1], [2]].flatten(-1) == []", "level must be non-negative"),
    ("[dyn(1), dyn(1.5)].sort() == []", "list elements must have the same type"),
    ("[1, 2].sortBy(x, x == 1 ? dyn(1) : dyn(2.0)) == []",
     "list elements must have the same type"),
])
def test_lists_extension_answers_as_cel_go(expr, want):
    assert _one(expr) == want


def test_lists_extension_on_a_device():
    """``sortBy`` and ``slice`` over a list built from one attribute: one
    evaluation per distinct value, errors per device."""
    cols = _columns([{"name": "d0", "attributes": {"n": {"int": 2}}},
                     {"name": "d1", "attributes": {"n": {"int": 5}}},
                     {"name": "d2", "attributes": {"n": {"int": 0}}}])
    _, got = _answers(f"lists.range({D}.n).sortBy(i, -i).slice(0, 2) == [{D}.n - 1, {D}.n - 2]",
                      cols)
    assert got == [True, True, "cannot slice(0, 2), list is length 0"]


@pytest.mark.parametrize("expr, words", [
    ("[1, 2].flatten() == [1]", r"'flatten' applied to 'list\(int\).\(\)'"),
    ("[[1]].sort() == []", r"'sort' applied to 'list\(list\(int\)\).\(\)'"),
    ('[1, 2].slice("a", 1) == [1]', r"'slice' applied to 'list\(int\).\(string, int\)'"),
    ('lists.range("a") == []', r"'lists.range' applied to '\(string\)'"),
    ('"abc".reverse() == "cba"', r"'reverse' applied to 'string.\(\)'"),
    ("[1, 2].sortBy(x, [x]) == [1]",
     r"'@sortByAssociatedKeys' applied to 'list\(int\).\(list\(list\(int\)\)\)'"),
])
def test_lists_extension_type_errors(expr, words):
    compile_selector(expr)
    with pytest.raises(CelError, match=words):
        check_types(expr)
