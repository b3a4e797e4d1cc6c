"""The fused stage's declared inputs: the packed form the cuda kernels take
(node packs + one query buffer) unpacks, by the generated source, into
exactly the arguments the numba kernels take; the generated parameter lists
cover every argument the per-node rules read."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from support.kernel_inputs import cols, compiled, query, stage_case, state_of

from tensorsched.kernels.fused import _core
from tensorsched.kernels.fused import stage_args as SA


def _unpacked(c, q) -> dict:
    """Every stage name bound by ``unpack_source`` over NumPy packs."""
    node_i64, node_flags, label_vals = SA.pack_nodes(c)
    env = {"node_i64": node_i64, "node_flags": node_flags, "label_vals": label_vals,
           "qbuf": SA.pack_query(c, q)}
    exec(SA.unpack_source(""), env)
    return env


def _check_round_trip(c, q):
    env = _unpacked(c, q)
    for name, want in zip(SA.STAGE_NAMES, SA.host_args(c, q)):
        got = env[name]
        if isinstance(want, np.ndarray):
            assert got.shape == want.shape, name
            assert np.array_equal(got, want.astype(got.dtype)), name
            assert np.array_equal(got.astype(want.dtype), want), name
        else:
            assert got == want, name


def test_round_trip_with_empty_label_and_bitset_columns():
    c = cols(3, req=[[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]], taints=[[1], [0], [3]],
             unsched=[True, False, True])
    assert c.label_vals.shape[1] == 0
    _check_round_trip(c, query(request=[100, 0, 0, 0], taint_prefer=[0b11]))


@settings(max_examples=15, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(stage_case())
def test_round_trip_on_random_clusters(case):
    objs, pod, filters, scores, strategy, _s, _f = case
    state = state_of(objs)
    q = compiled(state, pod, filter_flags=filters, score_flags=scores, fit_strategy=strategy,
                 shape=((0, 10), (50, 3), (100, 0)))
    _check_round_trip(state.columns(), q)


def test_a_dirty_span_packs_as_the_rows_of_the_whole():
    c = cols(5, req=[[i, 2 * i, 0, 1] for i in range(5)], taints=[[i] for i in range(5)])
    whole = SA.pack_nodes(c)
    for part, full in zip(SA.pack_nodes(c, 1, 4), whole):
        assert np.array_equal(part, full[1:4]) and part.flags.c_contiguous


def test_generated_lists_name_what_the_rules_read():
    for fn, leading in ((_core.node_reasons, 1), (_core.node_raw_scores, 3)):
        names = SA.call_arguments(fn, leading).split(", ")
        assert names == list(inspect.signature(fn).parameters)[leading:]
        assert set(names) <= set(SA.STAGE_NAMES)
    assert SA.PARAMETERS.split(", ") == list(SA.STAGE_NAMES)

    def reads_more(i, allocatable, not_declared):
        return 0
    with pytest.raises(AssertionError, match="not_declared"):
        SA.call_arguments(reads_more, 1)
