"""A failed device-picked cycle's reasons come back in evaluation order:
over every row by two slices of the by-row copy (``rotated_reasons``),
equal to the index gather (``rotated``) they replace; the cuda backend's
diagnosis of pods that fit nowhere, after the start has rotated, is the
numba backend's."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.backends import needs_cuda

from tensorsched.framework.parsing.manifests import parse_pod
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.scheduler import Scheduler
from tensorsched.generators.clusters import node_dict, pod_dict
from tensorsched.kernels.fused.backends import rotated, rotated_reasons

BLOCK = [{"key": "dedicated", "value": "batch", "effect": "NoSchedule"}]
HALF = {"apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration", "percentageOfNodesToScore": 50}


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 64), st.data())
def test_rotated_reasons_equal_the_index_gather(n, data):
    by_row = np.array(data.draw(st.lists(st.integers(0, 2**40), min_size=n, max_size=n)),
                      np.int64)
    every = data.draw(st.booleans())
    rows = (np.arange(n, dtype=np.int64) if every else
            np.array(sorted(data.draw(st.sets(st.integers(0, n - 1), min_size=1))), np.int64))
    start = data.draw(st.integers(0, rows.shape[0] - 1))
    got, sliced = rotated_reasons(by_row, rows, start, n)
    assert sliced == (rows.shape[0] == n)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, np.take(by_row, rotated(rows, start)))


@pytest.mark.cudasim
@needs_cuda
def test_failed_cycles_diagnose_as_numba_with_sliced_reasons():
    nodes = [node_dict(f"n{i:03d}", cpu=("2", "4")[i % 2],
                       taints=BLOCK if i % 5 == 1 else None) for i in range(40)]
    # placements rotate the start; each huge pod fits nowhere after them
    pods = []
    for i in range(6):
        pods += [pod_dict(f"p{i}-{j}", cpu="500m", created=10 * i + j) for j in range(3)]
        pods.append(pod_dict(f"huge{i}", cpu="64", created=10 * i + 9))

    def play(backend):
        cluster = build_cluster(nodes, HALF)
        be = cluster.framework_for(parse_pod(pods[0]), backend).backend
        out = Scheduler(cluster, backend, seed=3, batch=False).schedule_pending(pods)[0]
        return [(b.pod, b.node, b.message) for b in out], be

    got, be = play("cuda")
    assert got == play("numba")[0]
    assert sum(node is None for _p, node, _m in got) == 6
    assert be.reasons_sliced == 6       # each failed cycle, over every row
