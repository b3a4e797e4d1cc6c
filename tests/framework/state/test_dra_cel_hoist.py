"""Device-independent subexpressions of a selector: evaluated once per
expression, charged on every evaluation as cel-go charges them, and the
same answers and costs as evaluating them in place."""

from __future__ import annotations

import pytest
from test_dra_cel_cost import DRIVER, _columns

from tensorsched.framework.state.dra_cel import _activation, compile_selector
from tensorsched.framework.state.dra_cel_cost import (
    COST_LIMIT,
    LIMIT_EXCEEDED,
    CostEvaluator,
    CostLimitExceeded,
    CostTracker,
)
from tensorsched.framework.state.dra_cel_fast import FastRunner, _Compiler
from tensorsched.framework.state.dra_cel_hoist import constant_roots
from tensorsched.framework.state.dra_cel_syntax import BindExpr, BindRead

D = f'device.attributes["{DRIVER}"]'
L10 = "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]"
#: 3 deep over 10-element literals: 6,551 units, the same for every device
CUBE = f"{L10}.all(a, {L10}.all(b, {L10}.all(c, c < 100)))"


def _in_place(expr: str, n: int, limit=float("inf")):
    """(value or error text, cost) with nothing hoisted: the reference."""
    program = compile_selector(expr).program
    tracker = CostTracker(limit)
    ev = CostEvaluator(ast=program.ast, activation=program.new_activation(), tracker=tracker)
    try:
        value = ev.evaluate(_activation(DRIVER, False, {DRIVER: {"n": n}}, {}))
    except CostLimitExceeded:
        return LIMIT_EXCEEDED, None
    except Exception as exc:  # noqa: BLE001 - a CEL error is an answer here
        value = type(exc).__name__
    return value, tracker.cost


def _top(node):
    """Below the grammar's one-child chain."""
    while len(node.children) == 1:
        node = node.children[0]
    return node


def test_the_roots_are_the_largest_parts_that_read_no_device_and_no_outer_variable():
    program = compile_selector(f"{D}.n > 0 && [1, 2].all(x, x > 0 && [3].all(y, y > x))")
    roots = constant_roots(program.program.ast)
    # the whole .all(x, ...) reads only its own x: one root; nothing inside it
    assert len(roots) == 1 and _top(roots[0]).data == "member_dot_arg"
    # a body reading the outer variable is not a root; its list literal is
    roots = constant_roots(compile_selector(f"[{D}.n].all(x, [1, 2].exists(y, y == x))")
                           .program.ast)
    assert len(roots) == 1 and "exists" not in str(roots[0])
    # literals alone are left in place, and so is what holds a bind's
    # expansion or read (the bind charges them)
    assert constant_roots(compile_selector(f"{D}.n == 1").program.ast) == []
    roots = constant_roots(compile_selector("cel.bind(x, [1, 2], x.size() == 2)").program.ast)
    assert not any(isinstance(t, (BindExpr, BindRead)) for r in roots for t in r.iter_subtrees())


@pytest.mark.parametrize("closures", [True, False])
def test_a_device_independent_part_is_evaluated_once_for_all_devices(closures, monkeypatch):
    calls = []
    for owner, name in ((CostEvaluator, "standalone"), (_Compiler, "standalone")):
        def counting(self, tree, limit, real=getattr(owner, name)):
            calls.append(tree)
            return real(self, tree, limit)
        monkeypatch.setattr(owner, name, counting)
    monkeypatch.setattr(FastRunner, "closures", closures)
    # an expression of its own (compile_selector keeps one program per text)
    expr = f"{D}.n > 2 && {CUBE} && {int(closures)} == {int(closures)}"
    sel = compile_selector(expr)
    col = sel.evaluate(_columns([1, 3, 4, 5, 6]).values)
    assert [bool(v) for v in col.value] == [False, True, True, True, True]
    # each of its two parts (the cube, ``k == k``) once, for five devices
    assert len(constant_roots(sel.program.ast)) == 2
    assert len(calls) == len({id(c) for c in calls}) == 2


@pytest.mark.parametrize("expr", [
    f"{D}.n > 2 && {CUBE}",
    f"{CUBE} && {D}.n > 2",
    f"{D}.n > 2 || {CUBE}",
    f"{D}.n > 2 ? {CUBE} : [1, 2].exists(x, x == 3)",
    f"[{D}.n, 2].all(x, x > 0 && {CUBE})",
    f"[{D}.n, 2].map(x, [1, 2, 3].filter(y, y > 1)).size() == 2",
    f"[1, 2, 3].exists_one(x, x == {D}.n) || [1, 2].map(x, x * 2) == [2, 4]",
    f"{D}.n / ([1].size() - 1) == 0 || true",
    f"has({{'a': 1}}.a) && {D}.n >= 1",
    f"'abc'.matches('^a') == ({D}.n == 3)",
    f"[1, 2, 3].all(i, v, v > i) && {D}.n < 10",
    f"[1, 2].all(x, x / 0 > 1) || {D}.n > 0",
])
@pytest.mark.parametrize("n", [1, 3])
def test_hoisted_answers_and_costs_are_those_of_the_evaluation_in_place(expr, n):
    program = compile_selector(expr).program
    context = _activation(DRIVER, False, {DRIVER: {"n": n}}, {})
    for _ in range(2):                      # first evaluation, then from the store
        try:
            got = program.evaluate(context)
        except Exception as exc:  # noqa: BLE001
            got = type(exc).__name__
        assert (got, program.cost(context)) == _in_place(expr, n), expr


def test_the_limit_trips_on_a_stored_part_as_it_would_in_place():
    """A constant part that alone passes the limit, and one that passes it
    only after what the device part spent, are the limit's error on every
    evaluation, not only on the first."""
    big = "lists.range(100).all(i, '" + "a" * 1000 + "'.contains('" + "a" * 1000 + "'))"
    near = "lists.range(99).all(i, '" + "a" * 1000 + "'.contains('" + "a" * 1000 + "'))"
    assert _in_place(near, 1)[1] < COST_LIMIT
    pad = f"[{D}.n].all(x, x > 0) && " * 1
    for expr in (big, f"{D}.n > 0 && {big}", f"{pad}'{'z' * 100000}'.size() > 0 && {near}"):
        col = compile_selector(expr).evaluate(_columns([1, 2, 3]).values)
        want = _in_place(expr, 1, COST_LIMIT)[0]
        got = [col.messages[e] if e >= 0 else bool(v) for v, e in zip(col.value, col.error)]
        assert got == [want if want == LIMIT_EXCEEDED else bool(want)] * 3, expr
