"""The compiled allocation search's arguments, declared once.

``INPUTS`` are ``search.first_fit_search``'s arrays (name, dtype), in its
order; ``RULE_ARGS`` the parameters of the per-node rule
``_search_core.search_node`` after ``node``, each with its role:

- ``input``: one of ``INPUTS``;
- ``derived``: computed from the inputs once per call (``req_of``: the
  request of each depth, ``total``: the depths) or passed through
  (``budget``);
- ``shared``: scratch whose cells belong to one node each (``taken`` per
  candidate entry, ``used`` per node-local counter slot), one array for all;
- ``own``: scratch with one row per node (``picks``, the answer, always; the
  constraint and depth scratch on a device, where nodes run at once; the CPU
  driver runs nodes one after another and shares one row).

Everything else is generated from these lists: ``prepare`` (the call's
arguments by name: inputs coerced to their dtypes, derived values, scratch
and outputs allocated), ``parameters`` / ``call_arguments`` (the drivers'
parameter and call lists: ``_search_numba`` and ``_search_cuda`` write no
argument list by hand), checked against the rule's signature at import.
"""

from __future__ import annotations

import inspect

import numpy as np

from . import _search_core

__all__ = ["INPUTS", "RULE_ARGS", "OUTPUTS", "prepare", "parameters", "call_arguments"]

I64, I8, BOOL = np.int64, np.int8, np.bool_

#: ``first_fit_search``'s arrays, in its order
INPUTS = (
    ("ptr", I64), ("rows", I64), ("status", I8), ("counts", I64), ("req_claim", I64),
    ("in_use", BOOL), ("blocked", BOOL), ("con_first", I64), ("con_applies", BOOL),
    ("con_code", I64), ("con_kind", I64), ("ctr_ptr", I64), ("ctr_slot", I64),
    ("ctr_amt", I64), ("slot_cap", I64),
)
_INPUT_NAMES = tuple(name for name, _ in INPUTS)

#: the driver's outputs: ``out`` [N] int8 codes, ``picks`` [N, T] int64 rows
OUTPUTS = ("out", "picks")

_ROLES = {name: "input" for name in _INPUT_NAMES}
_ROLES.update(req_of="derived", total="derived", budget="derived", taken="shared",
              used="shared", con_count="own", con_stack="own", pos="own", picks="own")

#: (parameter, role) of ``search_node`` after ``node``, in its order
RULE_ARGS = tuple((name, _ROLES.get(name, "?"))
                  for name in list(inspect.signature(_search_core.search_node).parameters)[1:])
_unknown = [name for name, role in RULE_ARGS if role == "?"]
if _unknown:
    raise AssertionError(f"search_node reads {_unknown}, not declared in search_args")

_NAMES = tuple(name for name, _ in RULE_ARGS)


def prepare(arrays, budget: int, per_node_scratch: bool) -> dict:
    """The arguments of one call by name: ``arrays`` (``INPUTS`` order)
    coerced to their dtypes, ``req_of`` / ``total`` / ``budget``, the
    scratch (``per_node_scratch``: the ``own`` scratch with a row per node,
    else one row shared) and the outputs ``out`` [N] int8 and ``picks``
    [N, max(T, 1)] int64 (-1)."""
    args = {name: np.ascontiguousarray(a, dtype)
            for (name, dtype), a in zip(INPUTS, arrays)}
    counts = args["counts"]
    n = args["ptr"].shape[0] - 1
    total = int(counts.sum())
    width = max(total, 1)
    n_con = max(args["con_code"].shape[0], 1)
    rows_of = max(n, 1) if per_node_scratch else 1
    # ``out`` / ``picks`` have exactly N rows: the drivers loop over them
    args.update(
        req_of=np.repeat(np.arange(counts.shape[0], dtype=I64), counts),
        total=total,
        budget=int(budget),
        taken=np.zeros(max(args["rows"].shape[0], 1), BOOL),
        used=np.zeros(max(args["slot_cap"].shape[0], 1), I64),
        con_count=np.zeros((rows_of, n_con), I64),
        con_stack=np.zeros((rows_of, n_con, width), I64),
        pos=np.zeros((rows_of, width + 1), I64),
        out=np.empty(n, I8),
        picks=np.full((n, width), -1, I64),
    )
    return args


def parameters() -> str:
    """The drivers' parameter list: the outputs, then the rule's arguments."""
    return ", ".join(OUTPUTS + tuple(name for name in _NAMES if name not in OUTPUTS))


def call_arguments(own_rows: bool) -> str:
    """The rule's call list after ``node`` inside a driver: ``own`` scratch
    indexed by ``node`` (``own_rows``; ``picks`` always), row 0 otherwise."""
    out = []
    for name, role in RULE_ARGS:
        if role == "own":
            out.append(f"{name}[node]" if own_rows or name == "picks" else f"{name}[0]")
        else:
            out.append(name)
    return ", ".join(out)
