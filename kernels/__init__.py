"""Pure array kernels: no Kubernetes objects, nothing else of tensorsched.

- ``layout``: the node columns and the compiled pod query every kernel reads,
  reason bits, score slots and other constants;
- ``fused``: the fused filter + score pass (NumPy twin, Numba, CUDA);
- ``victims``: preemption's victim search on all nodes at once;
- ``domains``: per-domain counts, skews and normalizations for
  PodTopologySpread / InterPodAffinity, and the host-plugin stage;
- ``gpu``: GPU sharing policies and NVLink/NUMA subset search;
- ``_backend`` (array namespace), ``_deps`` (optional CUDA), ``_compile``
  (one per-node rule module compiled for a target), ``_errors``.
"""
