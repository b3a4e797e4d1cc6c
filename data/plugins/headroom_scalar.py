"""Example user plugin written as per-node scalar functions.

``GpuHeadroom`` rejects nodes whose free cpu after placing the pod would drop
below 10 % of allocatable, and scores nodes by the free cpu left (in whole
cores).  On the numba backend both functions are compiled into the fused
kernel pass; on numpy/cuda they run per node on the host.

Register and use it::

    from tensorsched.framework.plugins import in_tree_registry
    reg = in_tree_registry()
    reg.register("CpuHeadroom", new, {"filter", "score"})
    # then enable "CpuHeadroom" under filter/score in a KubeSchedulerConfiguration
"""

from tensorsched.framework.runtime.plugin import NORMALIZE_DEFAULT
from tensorsched.framework.runtime.user_plugins import ScalarPlugin

CPU = 0   # the cpu column of every resource row


def keeps_headroom(allocatable, requested, label_vals, request):
    free = allocatable[CPU] - requested[CPU] - request[CPU]
    return free * 10 >= allocatable[CPU]


def free_cores(allocatable, requested, label_vals, request):
    free = allocatable[CPU] - requested[CPU] - request[CPU]
    return max(free, 0) // 1000


def new(args, handle):
    return ScalarPlugin("CpuHeadroom", filter_fn=keeps_headroom, score_fn=free_cores,
                        normalize=NORMALIZE_DEFAULT,
                        reason="node(s) would keep less than 10% cpu headroom")
