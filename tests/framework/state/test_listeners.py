"""framework/state/listeners.py: a ClusterState tells its ``PodListener``s
of every pod added and removed, in the order they were added; a
``PodBatchListener`` takes a compiled run's pods at once, any other
listener pod by pod; what is not a listener is refused."""

from __future__ import annotations

import numpy as np
import pytest
from support.records import node, pod

from tensorsched.framework.state.cluster_state import ClusterState
from tensorsched.framework.state.listeners import (
    OnPod,
    PodBatchListener,
    PodListener,
    PodListeners,
    PodRestorer,
)


class Log:
    def __init__(self, name, log):
        self.name, self.log = name, log

    def on_pod(self, record, row, delta):
        self.log.append((self.name, record.key, row, delta))


class Batch(Log):
    def on_pods(self, records, rows, delta):
        self.log.append((self.name, [r.key for r in records], rows.tolist(), delta))


def test_listeners_are_told_in_order_after_each_change():
    st = ClusterState()
    st.add_node(node("n0"))
    st.add_node(node("n1"))
    log = []
    st.listeners.add(Log("a", log))
    st.listeners.add(OnPod(lambda r, row, d: log.append(("b", r.key, row, d))))
    st.add_pod(pod("p", "n1"))
    st.remove_pod("default/p")
    assert log == [("a", "default/p", 1, 1), ("b", "default/p", 1, 1),
                   ("a", "default/p", 1, -1), ("b", "default/p", 1, -1)]
    assert len(st.listeners) == 2


def test_a_run_goes_whole_to_batch_listeners_and_pod_by_pod_to_others():
    ls = PodListeners()
    log = []
    ls.add(Batch("bulk", log))
    ls.add(Log("one", log))
    pods = [pod("p0"), pod("p1")]
    ls.pods_added(pods, np.array([3, 4], np.int64))
    assert log == [("bulk", ["default/p0", "default/p1"], [3, 4], 1),
                   ("one", "default/p0", 3, 1), ("one", "default/p1", 4, 1)]


def test_what_is_not_a_listener_is_refused():
    with pytest.raises(TypeError, match="not a PodListener"):
        PodListeners().add(lambda r, row, d: None)


def test_the_state_extensions_implement_the_protocols():
    from tensorsched.framework.state.domain_counts import pod_count_index
    from tensorsched.framework.state.dra_claims import ClaimState
    from tensorsched.framework.state.volumes import volume_catalog
    from tensorsched.topology.gpu_table import GpuTable

    st = ClusterState()
    st.add_node(node("n0"))
    assert isinstance(pod_count_index(st), PodBatchListener)
    assert isinstance(volume_catalog(st), PodBatchListener)
    for restorer in (ClaimState.of(st), GpuTable.of(st)):
        assert isinstance(restorer, PodListener) and isinstance(restorer, PodRestorer)
    assert len(st.listeners) == 4 and len(st.restorers) == 2
