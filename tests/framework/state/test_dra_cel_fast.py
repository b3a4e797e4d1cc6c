"""The closure evaluator (``dra_cel_fast``) against ``CostEvaluator``:
the same value or error message and the same cost units on random
expressions and devices, the escapes to ``CostEvaluator`` included; and the
time a selector near the cost limit takes, bounded."""

from __future__ import annotations

import random
import time

import pytest

from tensorsched.bench.dra_cel_before_after import DRIVER, SELECTORS, nested
from tensorsched.framework.errors import ManifestError
from tensorsched.framework.parsing.dra import parse_device_class, parse_resource_slice
from tensorsched.framework.state.cluster_state import ClusterState
from tensorsched.framework.state.dra_cel import (
    _activation,
    _celpy_functions,
    _celpy_message,
    _environment,
    compile_selector,
    expand_binds,
    parse_expression,
)
from tensorsched.framework.state.dra_cel_cost import (
    COST_LIMIT,
    LIMIT_EXCEEDED,
    CostEvaluator,
    CostLimitExceeded,
    CostTracker,
)
from tensorsched.framework.state.dra_cel_estimate import (
    TOO_COMPLEX,
    estimate_cost,
    exceeds_cost_limit,
)
from tensorsched.framework.state.dra_cel_fast import FastRunner
from tensorsched.framework.state.dra_claims import ClaimState
from tensorsched.framework.state.dra_devices import DeviceColumns

D = f'device.attributes["{DRIVER}"]'
DEVICES = [
    (DRIVER, False, {DRIVER: {"n": 3, "model": "a100", "tags": ("x", "y")}}, {}),
    ("other.example.com", True, {DRIVER: {"n": -7, "model": "h100-80gb"}}, {}),
    (DRIVER, False, {}, {}),
]

_LEAVES = ["0", "1", "3", "-2", "9223372036854775807", "2.5", "'a100'", "'h'", "true",
           "false", "null", f"{D}.n", f"{D}.model", "device.driver",
           "device.allowMultipleAllocations", f"{D}.missing", f"{D}.tags",
           "[1, 2, 3]", "[]", "['a100', 'x']", "{'a': 1}.a", "{'a': 1}.b", "size('abc')",
           f"{D}.model.startsWith('a')", "[1, 2][5]", "[3, 1][0]"]
_BINARY = ["+", "-", "*", "/", "%", "<", "<=", ">", ">=", "==", "!=", "in", "&&", "||"]
_MACROS = ["all", "exists", "exists_one", "map", "filter"]


def _expr(rng: random.Random, depth: int, names: list) -> str:
    if depth <= 0 or rng.random() < 0.25:
        pool = _LEAVES + names * 4
        return rng.choice(pool)
    kind = rng.random()
    if kind < 0.45:
        return (f"({_expr(rng, depth - 1, names)} {rng.choice(_BINARY)} "
                f"{_expr(rng, depth - 1, names)})")
    if kind < 0.55:
        return f"{rng.choice(['!', '-'])}{_expr(rng, depth - 1, names)}"
    if kind < 0.65:
        return (f"({_expr(rng, depth - 1, names)} ? {_expr(rng, depth - 1, names)} : "
                f"{_expr(rng, depth - 1, names)})")
    if kind < 0.9:
        var = f"v{len(names)}"
        target = rng.choice(["[1, 2, 3]", "[0, -1]", f"[{D}.n, 2]", "{'a': 1, 'b': 2}",
                             f"{D}.tags", "'abc'", _expr(rng, depth - 1, names)])
        body = _expr(rng, depth - 1, names + [var])
        return f"{target}.{rng.choice(_MACROS)}({var}, {body})"
    return f"[{_expr(rng, depth - 1, names)}, {_expr(rng, depth - 1, names)}]"


def _describe(value):
    if isinstance(value, Exception):
        return ("error", _celpy_message(value))
    return ("value", type(value).__name__, repr(value))


def _outcome(run):
    """What ``run()`` -> (value, cost) gave, as comparable text."""
    try:
        value, cost = run()
    except CostLimitExceeded:
        return LIMIT_EXCEEDED
    except Exception as exc:  # noqa: BLE001 - the error is the outcome compared
        return ("raised", type(exc).__name__, _celpy_message(exc))
    return (*_describe(value), cost)


def _both(expr: str, device):
    tree = expand_binds(parse_expression(expr))
    program = _environment().program(tree, functions=_celpy_functions())
    assert isinstance(program, FastRunner)
    context = _activation(*device)
    fast = _outcome(lambda: program._run(context, COST_LIMIT))

    def reference():
        tracker = CostTracker(COST_LIMIT)
        ev = CostEvaluator(ast=program.ast, activation=program.new_activation(),
                           tracker=tracker)
        try:
            value = ev.evaluate(context)
        except Exception as exc:  # noqa: BLE001 - CEL errors are values here
            if type(exc).__name__ != "CELEvalError":
                raise
            value = exc
        return value, tracker.cost
    return fast, _outcome(reference)


@pytest.mark.parametrize("seed", range(8))
def test_closures_answer_and_charge_as_cost_evaluator(seed):
    rng = random.Random(seed)
    checked = 0
    while checked < 60:
        expr = _expr(rng, 3, [])
        try:
            compile_selector(expr)
        except Exception:  # noqa: BLE001 - only expressions that compile are compared
            continue
        checked += 1
        for device in DEVICES:
            fast, ref = _both(expr, device)
            assert fast == ref, (expr, device)


@pytest.mark.parametrize("expr", [
    # errors folded into comprehensions, overflow, division by zero, bad types
    "[1, 2].all(x, x / 0 > 1) || true",
    "[9223372036854775807].map(x, x + 1) == []",
    "[1, 2].exists_one(x, x % 0 == 1)",
    "['a', 1].filter(x, x > 0) == [1]",
    f"[{D}.n].all(x, x > 0 ? x : 'a') == true",
    # escapes: method calls, map literals, optionals, has, binds, two-variable forms
    f"[{D}.model].all(m, m.startsWith('a') && has({D}.n))",
    "cel.bind(x, [1, 2], x.all(y, y > 0))",
    "[1, 2, 3].all(i, v, v > i)",
    f"{D}.?model.orValue('z') == 'a100'",
    "{'a': [1, 2]}.a.map(x, x * 2) == [2, 4]",
    "dyn(1) + 2 == 3",
    f"[{D}.model].exists(d, d.startsWith('a')) && 'abc'.size() == 3",
    # a field of a list: the closures start again on CostEvaluator
    "[1].all(x, [x].y == 1)",
    "[1].all(x, [x].y == 1) || true",
])
def test_chosen_forms_answer_and_charge_as_cost_evaluator(expr):
    for device in DEVICES:
        fast, ref = _both(expr, device)
        assert fast == ref, (expr, device)


# the nested-comprehension selectors of ``bench/dra_cel_before_after.py``:
# under the API's cost estimate (accepted by the API server and evaluated by
# cel-go to true), and one over it (refused on load; a stored object that
# skipped validation meets the runtime limit)
CONST = SELECTORS["const"]
DEVICE = SELECTORS["device"]
OVER = nested("a + b + c + d + e < 100")


def _slice_columns(nodes: int):
    slices = [parse_resource_slice({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
        "metadata": {"name": f"s{n}"},
        "spec": {"driver": DRIVER, "nodeName": f"n{n}",
                 "pool": {"name": f"n{n}", "generation": 1, "resourceSliceCount": 1},
                 "devices": [{"name": f"gpu-{i}", "attributes": {"index": {"int": i}}}
                             for i in range(8)]}}) for n in range(nodes)]
    return DeviceColumns(slices, [f"n{n}" for n in range(nodes)])


def test_the_estimates_are_upstreams_for_the_nested_selectors():
    """cel-go's estimate of a comprehension: its range, then per element
    the loop condition (2) and step (1 + the predicate); a list literal 10:
    each level 11 + 10 * (3 + inner)."""
    assert estimate_cost(CONST).max == 655_551
    assert estimate_cost(DEVICE).max == 855_569
    assert estimate_cost(OVER).max == 1_455_551
    assert not exceeds_cost_limit(CONST) and not exceeds_cost_limit(DEVICE)
    assert exceeds_cost_limit(OVER)
    store = ClaimState.of(ClusterState())
    with pytest.raises(ManifestError) as err:
        store.load([parse_device_class({"metadata": {"name": "gpu"}, "spec": {
            "selectors": [{"cel": {"expression": OVER}}]}})])
    assert err.value.problem == TOO_COMPLEX
    store.load([parse_device_class({"metadata": {"name": "gpu"}, "spec": {
        "selectors": [{"cel": {"expression": DEVICE}}]}})])


@pytest.mark.timeout(120)
def test_the_accepted_nested_selectors_are_true_on_every_device_in_seconds():
    """cel-python's tree walk took 13 s and more per device for these (one
    evaluation per distinct index: minutes for a node of 8); the bound is
    generous for a shared 2-core machine."""
    cols = _slice_columns(4)
    start = time.perf_counter()
    for expr in (CONST, DEVICE):
        col = compile_selector(expr).evaluate(cols.values)
        assert (col.error < 0).all() and col.value.all(), expr
    assert time.perf_counter() - start < 30
    # the units are cel-go's: the worst case the estimate allows, all true
    assert compile_selector(CONST).program.cost(_activation(*DEVICES[0])) == 655_551
    assert compile_selector(DEVICE).program.cost(
        _activation(DRIVER, False, {DRIVER: {"index": 3}}, {})) == 855_569


@pytest.mark.timeout(120)
def test_the_refused_selector_meets_the_runtime_limit_as_a_non_match_in_seconds():
    """Evaluated anyway (a stored object is not validated again): cel-go
    aborts at 1,000,000 units; the device does not match and the error is
    upstream's."""
    cols = _slice_columns(1)
    start = time.perf_counter()
    col = compile_selector(OVER).evaluate(cols.values)
    assert not col.value.any() and (col.error >= 0).all()
    assert {col.messages[e] for e in col.error} == {LIMIT_EXCEEDED}
    assert time.perf_counter() - start < 30
