"""Hand-made inputs of the batched node-local engine (``LocalBatch``):
three nodes (1000m, 1000m, 500m by default; 1Gi, 10 pods each), two pod
classes (400m, and 2000m that fits nowhere), NodeResourcesFit's
LeastAllocated score only, seed 7."""

import numpy as np

from tensorsched.kernels.batch.local_cpu import LocalBatch


def hand_batch(node_sets, pods, alloc_cpu=(1000, 1000, 500)):
    u = len(alloc_cpu)
    alloc = np.zeros((u, 4), np.int64)
    alloc[:, 0] = alloc_cpu
    alloc[:, 1] = 1 << 30
    alloc[:, 3] = 10
    c = 2
    req = np.zeros((c, 4), np.int64)
    req[:, 0] = (400, 2000)             # class 1 fits nowhere
    active = np.zeros((c, 6), np.bool_)
    active[:, 0] = True                 # NodeResourcesFit only
    weights = np.ones((c, 6), np.int64)
    ptr = np.cumsum([0] + [len(s) for s in node_sets])
    pptr = np.cumsum([0] + [len(p) for p in pods])
    return LocalBatch(
        alloc=alloc, used0=np.zeros_like(alloc), nz0=np.zeros((u, 2), np.int64),
        c_request=req, c_nonzero=req[:, :2].copy(), c_anything=np.ones(c, np.bool_),
        c_ignored=np.zeros((c, 4), np.bool_), c_fit_filter=np.ones(c, np.bool_),
        c_active=active, c_norm=np.zeros((c, 6), np.int64), c_weights=weights,
        static_bits=np.zeros((c, u), np.int64), static_raw=np.zeros((c, u, 3), np.int64),
        image_raw=np.zeros((1, c, u), np.int64), strategy=0,
        fit_res=np.array([0, 1]), fit_kind=np.array([0, 0]), fit_weights=np.array([1, 1]),
        shape_util=np.zeros(0, np.int64), shape_score=np.zeros(0, np.int64),
        bal_res=np.array([0, 1]), bal_kind=np.array([0, 0]), node_ptr=ptr,
        node_rows=np.asarray([x for s in node_sets for x in s], np.int64), pod_ptr=pptr,
        pod_cls=np.asarray([x for p in pods for x in p], np.int64),
        image_group=np.zeros(len(node_sets), np.int64),
        num_to_find=np.asarray([len(s) for s in node_sets], np.int64), seed=7)
