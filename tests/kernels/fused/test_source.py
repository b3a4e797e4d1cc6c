"""kernels/fused/source.py: ``ColumnSource`` names what the fused backends
read of a column source: ClusterState and the tests' array source are
sources; an object lacking one of the counters is not."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.kernel_inputs import Source

from tensorsched.framework.parsing.manifests import parse_node
from tensorsched.generators.clusters import node_dict
from tensorsched.framework.state.cluster_state import ClusterState
from tensorsched.kernels.fused import backends as fused
from tensorsched.kernels.fused.backends import written_rows
from tensorsched.kernels.fused.source import LOG_READ_MAX, ColumnSource, WriteLog


def test_cluster_state_is_a_column_source():
    st = ClusterState()
    st.add_node(parse_node(node_dict("n0")))
    assert isinstance(st, ColumnSource)
    cols = st.columns()
    assert st.row_version.shape[0] >= cols.allocatable.shape[0]
    assert isinstance(Source(cols), ColumnSource)


def test_a_source_without_row_versions_is_not_one():
    class NoRows:
        version = 0
        layout_version = 0

        def columns(self):
            return None

    assert not isinstance(NoRows(), ColumnSource)


def test_backends_type_their_source_argument():
    for cls in (fused.NumpyBackend, fused.NumbaBackend, fused.CudaBackend):
        assert cls.evaluate.__annotations__["source"] == "ColumnSource"


# ---------------------------------------------------------------- write log
def _scan(state, n, seen):
    return np.flatnonzero(state.row_version[:n] > seen)


def _check_log(state, backend_kernels):
    """For every version ``seen`` up to now: the rows the write log gives
    (where it can say) are the scan's, ascending, each once."""
    n = state.columns().allocatable.shape[0]
    out = np.zeros(max(n, LOG_READ_MAX), np.int64)
    said = 0
    for seen in range(state.version + 1):
        log = state.write_log
        k = backend_kernels.logged_rows(log.rows, log.versions, log.length, log.floor, seen,
                                        state.row_version, LOG_READ_MAX, out)
        want = _scan(state, n, seen)
        if k >= 0:
            said += 1
            assert out[:k].tolist() == want.tolist(), (seen, state.version)
        got = written_rows(backend_kernels, state, n, seen, out)
        assert out[:got].tolist() == want.tolist()
    return said


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.tuples(st.sampled_from(["one", "many", "remove", "node"]),
                          st.lists(st.integers(0, 7), min_size=1, max_size=12)),
                min_size=1, max_size=14),
       st.integers(16, 40))
def test_the_write_log_gives_the_scans_rows(ops, limit):
    """ClusterState's write log against the scan of ``row_version`` over
    random pod adds (one at a time and in batches), batch removals and
    node adds, with a small log (it starts over when full)."""
    from tensorsched.framework.parsing.manifests import parse_pod
    from tensorsched.framework.state.cluster_state import add_pods, remove_pods
    from tensorsched.generators.clusters import pod_dict
    from tensorsched.kernels.fused import _numba as numba_kernels

    st_ = ClusterState()
    st_.write_log = WriteLog(limit)
    for i in range(8):
        st_.add_node(parse_node(node_dict(f"n{i}", cpu="64", pods="500")))
    names = [f"n{i}" for i in range(8)]
    bound = []
    said = 0
    for t, (kind, rows) in enumerate(ops):
        if kind == "one":
            key = f"p{t}-0"
            st_.add_pod(parse_pod(pod_dict(key, cpu="10m")), names[rows[0]])
            bound.append(f"default/{key}")
        elif kind == "many":
            pods = [parse_pod(pod_dict(f"p{t}-{j}", cpu="10m")) for j in range(len(rows))]
            add_pods(st_, pods, [names[r] for r in rows])
            bound += [p.key for p in pods]
        elif kind == "remove" and bound:
            gone = bound[: len(rows)]
            del bound[: len(rows)]
            remove_pods(st_, gone)
        else:
            st_.add_node(parse_node(node_dict(f"x{t}", cpu="4")))
        said += _check_log(st_, numba_kernels)
    assert said > 0


def test_a_batch_larger_than_a_reader_takes_starts_the_log_over():
    log = WriteLog()
    log.add(3, 1)
    log.add_many(np.arange(5, dtype=np.int64), np.full(5, 2, np.int64))
    assert log.length == 6 and log.floor == 0
    log.restart(9)
    assert log.length == 0 and log.floor == 9
    small = WriteLog(16)
    for v in range(1, 40):
        small.add(v % 5, v)
    assert small.length <= 16 and small.floor >= 39 - 16
    assert small.versions[:small.length].tolist() == sorted(small.versions[:small.length])
