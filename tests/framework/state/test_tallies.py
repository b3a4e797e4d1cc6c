"""framework/state/tallies.py: the state's image-name and priority counts
follow nodes and pods exactly (zero counts are absent)."""

from __future__ import annotations

import numpy as np
from support.records import node, pod

from tensorsched.framework.records.records import NodeImage
from tensorsched.framework.state.cluster_state import ClusterState
from tensorsched.framework.state.tallies import ImageNameCounts, PriorityCounts


def test_priority_counts():
    c = PriorityCounts()
    c.add(5)
    c.add_all(np.array([5, 1, 7, 7], np.int64))
    assert c == {5: 2, 1: 1, 7: 2}
    assert c.has_below(2) and not c.has_below(1)
    c.remove(1)
    assert c == {5: 2, 7: 2} and not c.has_below(5)


def test_image_name_counts():
    c = ImageNameCounts()
    n = node("n0", images=[NodeImage(["a", "b"], 1), NodeImage(["a"], 2)])
    c.add_node({"a", "b"})
    c.add_node({"a"})
    c.remove_node(n)
    assert c == {"a": 1}


def test_the_state_keeps_them():
    st = ClusterState()
    st.add_node(node("n0"))
    st.add_pod(pod("p", "n0", priority=3))
    st.add_pod(pod("q", "n0", priority=9))
    assert st.priorities == {3: 1, 9: 1} and st.priorities.has_below(4)
    st.remove_pod("default/p")
    assert not st.priorities.has_below(4)
