"""The cuda backend's ``device_stage`` (the victim search's view of the
node packs) sends the rows written since the mirror's version alone: one
staged copy and one write launch (``_cuda.staged_write_kernel``), not the
span from the lowest written row to the highest; and it hands back the
same stage object while the packs and the query buffer are the same.
Under Numba's CUDA simulator: after random binds, removals and node
updates, the packs equal the host columns and exactly the written rows
went up; every launch takes device arrays only."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from support.backends import needs_cuda
from support.launch_guard import device_arrays_only  # noqa: F401 (autouse)

from tensorsched.framework.parsing.manifests import parse_node, parse_pod
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.state.query import QueryOptions, compile_query
from tensorsched.generators.clusters import node_dict, pod_dict

pytestmark = [pytest.mark.cudasim, needs_cuda]

N = 40


def _setup():
    cluster = build_cluster([node_dict(f"n{i:03d}", cpu="8", labels={"zone": f"z{i % 3}"})
                             for i in range(N)])
    state = cluster.state
    be = cluster.framework_for(parse_pod(pod_dict("probe")), "cuda").backend
    q = compile_query(state, parse_pod(pod_dict("probe", cpu="100m")), QueryOptions())
    return state, be, q


def _assert_level(be, state):
    cols = state.columns()
    for f, host in zip(cols._fields, cols):
        assert (be.device_column(f) == host).all(), f


def _written_after(state, version) -> int:
    n = state.columns().allocatable.shape[0]
    return int(np.count_nonzero(state.row_version[:n] > version))


def test_two_far_apart_rows_send_two_rows_not_the_span():
    """Rows 1 and N - 2 written: two rows go up (the span would be N - 2),
    one copy, one launch; nothing written: nothing sent, the same stage."""
    state, be, q = _setup()
    first = be.device_stage(state, q)
    before = (be.rows_uploaded, be.copies, be.launches)
    state.add_pod(parse_pod(pod_dict("a", cpu="1")), "n001")
    state.add_pod(parse_pod(pod_dict("b", cpu="2")), f"n{N - 2:03d}")
    got = be.device_stage(state, q)
    assert (be.rows_uploaded - before[0], be.copies - before[1],
            be.launches - before[2]) == (2, 1, 1)
    assert got is first
    _assert_level(be, state)
    again = (be.rows_uploaded, be.copies, be.launches)
    assert be.device_stage(state, q) is first
    assert (be.rows_uploaded, be.copies, be.launches) == again


_op = st.one_of(
    st.tuples(st.just("bind"), st.integers(0, N - 1), st.integers(1, 900)),
    st.tuples(st.just("remove"), st.integers(0, 60), st.just(0)),
    st.tuples(st.just("label"), st.integers(0, N - 1), st.integers(0, 5)),
    st.tuples(st.just("stage"), st.just(0), st.just(0)))


@settings(max_examples=25, deadline=None)
@given(ops=st.lists(_op, min_size=1, max_size=25))
def test_random_writes_leave_the_packs_level_sending_the_written_rows(ops):
    """Binds, removals and node relabels between stages: each stage sends
    exactly the rows written since the last one (the host's row versions
    say which) and the packs equal the host columns."""
    state, be, q = _setup()
    be.device_stage(state, q)
    seen = state.version
    bound = []
    made = 0
    for what, a, b in ops:
        if what == "bind":
            made += 1
            pod = parse_pod(pod_dict(f"p{made}", cpu=f"{b}m"))
            state.add_pod(pod, f"n{a:03d}")
            bound.append(pod.key)
        elif what == "remove" and bound:
            state.remove_pod(bound.pop(a % len(bound)))
        elif what == "label":
            state.update_node(parse_node(node_dict(f"n{a:03d}", cpu="8",
                                                   labels={"zone": f"z{b}"})))
        else:
            expect = _written_after(state, seen)
            sent = be.stage_rows_sent
            be.device_stage(state, q)
            assert be.stage_rows_sent - sent == expect
            seen = state.version
            _assert_level(be, state)
    expect = _written_after(state, seen)
    sent = be.stage_rows_sent
    be.device_stage(state, q)
    assert be.stage_rows_sent - sent == expect
    _assert_level(be, state)
