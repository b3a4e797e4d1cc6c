"""kernels.dra.search_args: the search's arguments declared once and the
drivers generated from them (the engines' own answers are checked against
the host search in test_dra_search.py)."""

from __future__ import annotations

import inspect

import numpy as np

from tensorsched.kernels.dra import _search_core, search, search_args


def test_inputs_are_first_fit_searchs_parameters_in_order():
    params = list(inspect.signature(search.first_fit_search).parameters)
    assert params[: len(search_args.INPUTS)] == [name for name, _ in search_args.INPUTS]


def test_every_rule_argument_has_a_role_and_the_call_follows_the_rule():
    rule = list(inspect.signature(_search_core.search_node).parameters)[1:]
    assert [name for name, _ in search_args.RULE_ARGS] == rule
    serial = search_args.call_arguments(own_rows=False).split(", ")
    parallel = search_args.call_arguments(own_rows=True).split(", ")
    for (name, role), a, b in zip(search_args.RULE_ARGS, serial, parallel):
        if role == "own":
            assert b == f"{name}[node]"
            assert a == (f"{name}[node]" if name == "picks" else f"{name}[0]")
        else:
            assert a == b == name
    assert set(search_args.parameters().split(", ")) == set(rule) | set(search_args.OUTPUTS)


def test_prepare_coerces_and_sizes_the_scratch():
    # two nodes, three candidate entries, one request of 2, one constraint
    arrays = ([0, 2, 3], [0, 1, 2], np.ones((1, 3)), [2], [0], [0, 0, 1], [0, 0, 0],
              [0, 1], np.ones((1, 1)), np.zeros((1, 3)), [0], np.zeros(4), [], [], [])
    for per_node, rows in ((True, 2), (False, 1)):
        got = search_args.prepare(arrays, 50, per_node)
        for name, dtype in search_args.INPUTS:
            assert got[name].dtype == dtype and got[name].flags.c_contiguous
        assert got["total"] == 2 and got["budget"] == 50
        assert got["req_of"].tolist() == [0, 0]
        assert got["out"].shape == (2,) and got["picks"].shape == (2, 2)
        assert (got["picks"] == -1).all()
        assert got["con_count"].shape == (rows, 1)
        assert got["con_stack"].shape == (rows, 1, 2)
        assert got["pos"].shape == (rows, 3)
        assert got["taken"].shape == (3,) and got["used"].shape == (1,)
