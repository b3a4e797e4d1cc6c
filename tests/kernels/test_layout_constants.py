"""kernels/fused/_core.py re-declares layout constants as plain ints (device
code cannot read NumPy-typed globals); the two are kept in step by hand.
Every module-level UPPER_CASE constant of the core must be a plain int equal
to the constant of the same name in kernels/layout.py, which must define it."""

from __future__ import annotations

import ast
import inspect
import re

import pytest

from tensorsched.kernels import layout as L
from tensorsched.kernels._compile import compile_module
from tensorsched.kernels.fused import _core

UPPER = re.compile(r"^[A-Z][A-Z0-9_]*$")

def core_constants() -> dict:
    """Module-level UPPER_CASE assignments of _fused_core, read from its source."""
    tree = ast.parse(inspect.getsource(_core))
    names = []
    for node in tree.body:
        if isinstance(node, ast.Assign):
            names += [t.id for t in node.targets if isinstance(t, ast.Name) and UPPER.match(t.id)]
    return {n: getattr(_core, n) for n in names}


CONSTS = core_constants()


def test_the_groups_are_all_there():
    prefixes = ("R_", "F_", "RES_", "RK_", "OP_", "STRATEGY_")
    for p in prefixes:
        assert any(n.startswith(p) for n in CONSTS), p
    assert {"MAX_NODE_SCORE", "INSUFFICIENT_SHIFT"} <= set(CONSTS)
    # Every layout constant of these families is re-declared by the core
    # (OP_INVALID excepted: the core treats any other operator as invalid).
    for name, value in vars(L).items():
        if name.startswith(("R_", "F_", "RK_", "OP_", "STRATEGY_")) and name != "OP_INVALID" \
                and UPPER.match(name):
            assert name in CONSTS, f"{name} is not re-declared in _fused_core"
            assert CONSTS[name] == int(value)


@pytest.mark.parametrize("name", sorted(CONSTS))
def test_core_constant_equals_layout(name):
    value = CONSTS[name]
    # Plain Python ints (not NumPy scalars, not bools) for device code.
    assert type(value) is int, (name, type(value))
    assert hasattr(L, name), f"kernels/layout.py does not define {name} (re-declared in " \
                             "kernels/fused/_core.py)"
    other = getattr(L, name)
    assert int(other) == value, f"{name}: _fused_core {value} != layout {other}"


def test_compiled_namespace_keeps_the_values():
    # compile_module re-executes the source; the constants the compiled
    # functions read are the same values.
    ns = compile_module(_core, lambda f: f)
    assert {n: ns[n] for n in CONSTS} == CONSTS


def test_op_invalid_is_no_core_operator():
    core_ops = {v for n, v in CONSTS.items() if n.startswith("OP_")}
    assert int(L.OP_INVALID) not in core_ops


def test_hardcoded_score_slots_and_flags():
    # node_raw_scores writes raw_out[j, 0..4] under score_flags bits 1, 2, 4, 8, 16.
    assert (L.S_FIT, L.S_BALANCED, L.S_TAINT, L.S_NODE_AFFINITY, L.S_IMAGE) == (0, 1, 2, 3, 4)
    assert L.N_BUILTIN_SCORES == 5
    # Reason bits and the Insufficient range do not overlap the user filter bits.
    builtin = [int(getattr(L, n)) for n in vars(L) if n.startswith("R_")]
    assert all(b < (1 << L.USER_FILTER_SHIFT) for b in builtin)
    assert L.USER_FILTER_SHIFT + L.MAX_USER_FILTERS <= CONSTS["INSUFFICIENT_SHIFT"]
    # The last resource's bit (24 + 38 = 62) stays below the sign bit.
    assert CONSTS["INSUFFICIENT_SHIFT"] + L.MAX_RESOURCES - 1 < 63
