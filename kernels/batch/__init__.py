"""Many independent clusters advanced by one kernel call (no Kubernetes
objects): B clusters with a leading cluster axis, each through its own
stream of arriving pods under the openb profile (NodeResourcesFit's cpu,
memory and pod count, GpuShareFit, GpuShareScore's six policies, a fixed
per-node tie rank, the seeded tie-break).

``_rules``: the per-node and per-pod rules in plain Python, compiled with ``njit``
for the CPU twin (``cpu``: ``prange`` over clusters) and with
``cuda.jit(device=True)`` for the CUDA kernel (``cuda``: one thread block
per cluster); ``pairwise``: the node-order summation tree both use to
total the cluster's fragmentation exactly as ``numpy.sum`` does.
"""
