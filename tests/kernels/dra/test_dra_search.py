"""The compiled allocation search on each target (numba; cuda under the
simulator or on a device) answers as the host search does, node by node,
with the same devices picked."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from support.backends import backend_params
from support.dra import CLASS, constrained_clusters
from support.launch_guard import device_arrays_only  # noqa: F401 (autouse)

from tensorsched.framework.state.dra_allocator import Allocator, DraFeatures
from tensorsched.kernels.dra import FIT, NO_FIT, UNDECIDED, first_fit_search


def run(cluster, engine):
    cols, claims, state, nodes = cluster
    alloc = Allocator(
        claims,
        classes=[CLASS],
        devices=cols,
        allocated=state,
        features=DraFeatures(partitionable_devices=True),
    )
    enc = alloc._encode()
    if enc is None:
        return None
    ptr, rows, _ = alloc._csr(nodes, nodes)
    code, picks = first_fit_search(
        ptr,
        rows,
        enc["status"],
        enc["counts"],
        enc["req_claim"],
        alloc.in_use_rows,
        enc["blocked"],
        enc["con_first"],
        enc["con_applies"],
        enc["con_code"],
        enc["con_kind"],
        *enc["counters"],
        engine=engine,
    )
    return alloc, nodes, code, picks


def check(cluster, engine):
    got = run(cluster, engine)
    if got is None:
        return
    alloc, nodes, code, picks = got
    for i, node in enumerate(nodes):
        want = alloc.allocate(node)
        assert code[i] in (FIT, NO_FIT, UNDECIDED)
        if code[i] == FIT:
            chosen = [alloc.columns.device_id(int(r)) for r in picks[i] if r >= 0]
            assert chosen == [r.device_id for a in want for r in a.results]
        elif code[i] == NO_FIT:
            assert want is None


@pytest.mark.parametrize("engine", [p for p in backend_params(("numba", "cuda"))])
def test_search_matches_the_host_search(engine):
    @settings(max_examples=25 if engine == "cuda" else 80, deadline=None)
    @given(constrained_clusters())
    def prop(cluster):
        check(cluster, engine)

    prop()


def test_unknown_engine_is_refused():
    z = np.zeros(0, np.int64)
    with pytest.raises(ValueError, match="unknown engine"):
        first_fit_search(
            np.zeros(1, np.int64),
            z,
            np.zeros((0, 0), np.int8),
            z,
            z,
            np.zeros(0, bool),
            np.zeros(0, bool),
            np.zeros(1, np.int64),
            np.zeros((0, 0), bool),
            np.zeros((0, 0), np.int64),
            z,
            np.zeros(1, np.int64),
            z,
            z,
            z,
            engine="opencl",
        )
