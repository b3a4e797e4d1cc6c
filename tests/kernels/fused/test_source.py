"""kernels/fused/source.py: ``ColumnSource`` names what the fused backends
read of a column source: ClusterState and the tests' array source are
sources; an object lacking one of the counters is not."""

from __future__ import annotations

from support.kernel_inputs import Source

from tensorsched.framework.parsing.manifests import parse_node
from tensorsched.generators.clusters import node_dict
from tensorsched.framework.state.cluster_state import ClusterState
from tensorsched.kernels.fused import backends as fused
from tensorsched.kernels.fused.source import ColumnSource


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
