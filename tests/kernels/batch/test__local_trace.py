"""The node-local engine's trace form (``kernels/batch/_local_trace.py``,
run by ``local_cpu.run_local_trace``) on hand-made inputs: a pod that fits
nowhere waits in the unschedulable pool until a bound pod leaves, then
binds at that departure; a departure before a pod binds deletes it; a seed
per cluster (the tie rule's); a departure giving a node back its tie rank; the checks naming a bad array; the queue's slots as
``_queue`` numbers them.  Equality with the Simulation on random clusters
and traces is tests/experiments/test_sweep_local.py."""

import numpy as np
import pytest

from tensorsched.kernels.batch import _local_trace, _queue
from tensorsched.kernels.batch.local_cpu import LocalTrace, run_local_trace
from tensorsched.kernels.fused import ties

from support.local_batches import hand_batch as _batch


def _trace(arrive, depart, seeds=(7,), node_sets=([0],), alloc_cpu=(1000, 1000, 500)):
    pods = [[0] * len(arrive)] * len(node_sets)
    b = _batch(list(node_sets), pods, alloc_cpu)
    k = len(node_sets)
    return LocalTrace(b, np.tile(np.asarray(arrive, np.float64), k),
                      np.tile(np.asarray(depart, np.float64), k), np.asarray(seeds, np.int64))


def test_a_waiting_pod_binds_when_a_pod_leaves():
    # node 0 (1000m) takes two 400m pods; the third waits until pod 0 leaves at 50
    inf = np.inf
    res = run_local_trace(_trace([0, 1, 2], [50, inf, inf]))
    assert res.node.tolist() == [0, 0, 0]
    assert res.bind.tolist() == [0.0, 1.0, 50.0]
    assert res.tries.tolist() == [1, 1, 2]
    m = int(res.n_log[0])
    assert res.log_pod[:m].tolist() == [0, 1, -1, 2]
    assert res.log_t[:m].tolist() == [0.0, 1.0, 50.0, 50.0]
    assert res.end[0] == 50.0


def test_a_pending_pod_that_departs_is_deleted_and_seeds_are_per_cluster():
    inf = np.inf
    res = run_local_trace(_trace([0, 0, 0], [inf, inf, 3]))
    assert res.node.tolist() == [0, 0, -1] and np.isnan(res.bind[2])
    # two equal nodes, one pod, two clusters with their own seeds: each
    # takes the tie rule's pick under its own seed
    two = run_local_trace(_trace([0], [inf], seeds=(3, 4), node_sets=([0, 1], [0, 1])))
    rows = np.arange(2)
    assert two.node.tolist() == [ties.pick_tied(ties.seed_mix(s), rows, np.zeros(2, np.int64))
                                 for s in (3, 4)]


def test_a_departure_moves_the_nodes_tie_rank():
    # two equal nodes (1000m): pod 0 binds, leaves at 5; pod 1 arrives at
    # 10 on two empty nodes again: the tie rule on (0 pods, 0 pods), not on
    # the pod count pod 0 left behind
    inf = np.inf
    res = run_local_trace(_trace([0, 10], [5, inf], seeds=(9,), node_sets=([0, 1],)))
    first = ties.pick_tied(ties.seed_mix(9), np.arange(2), np.zeros(2, np.int64))
    assert res.node.tolist() == [first, first]


def test_bad_traces_are_named():
    t = _trace([0, 1], [5, 5])
    with pytest.raises(ValueError, match="seeds"):
        run_local_trace(t._replace(seeds=np.zeros(3, np.int64)))
    with pytest.raises(ValueError, match="arrive/depart"):
        run_local_trace(t._replace(depart=np.array([5.0, 0.5])))
    with pytest.raises(ValueError, match="arrival order"):
        run_local_trace(t._replace(arrive=np.array([3.0, 1.0])))


def test_the_queue_slots_are_the_queues():
    assert (_local_trace.Q_DONE, _local_trace.Q_DEPART) == (_queue.DONE, _queue.DEPART)
    assert (_local_trace.Q_POD, _local_trace.Q_NOW) == (_queue.QI_POD, _queue.QF_NOW)
