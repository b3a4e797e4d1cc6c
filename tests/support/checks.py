"""Invariants of a Scheduler after any step: the state's requested columns
equal the sum over the pods it holds (nothing double-counted), and every
pod the test created is in exactly one place (nothing lost)."""

import numpy as np


def check(sched, expected_keys=(), deleted=()):
    st = sched.cluster.state
    req = np.zeros_like(st.requested)
    nz = np.zeros_like(st.nonzero_requested)
    for key, e in st.pods.items():
        req[e.node_row, : e.request.shape[0]] += e.request
        nz[e.node_row] += e.nonzero
        assert key in st.pods_on_node[e.node_row]
    assert np.array_equal(req, st.requested), "requested != sum of pods held"
    assert np.array_equal(nz, st.nonzero_requested)
    assert sum(len(s) for s in st.pods_on_node) == len(st.pods)
    q = sched.queue
    for key in expected_keys:
        if key in deleted:
            assert key not in st.pods and key not in q
            continue
        places = [key in st.pods, key in q]
        assert sum(places) == 1, f"{key}: in state {places[0]}, in queue {places[1]}"
        if key in sched.waiting:
            assert key in st.pods                 # assumed while waiting on Permit
    for key in sched.waiting:
        assert key not in q
    for key in q.infos:
        assert key not in st.pods
