"""Pure array kernels: no Kubernetes objects, nothing else of tensorsched.

- ``layout``: the node columns and the compiled pod query every kernel reads,
  reason bits, score slots and other constants;
- ``fused``: the fused filter + score pass (NumPy twin, Numba, CUDA);
- ``victims``: preemption's victim search on all nodes at once;
- ``domains``: per-domain counts, skews and normalizations for
  PodTopologySpread / InterPodAffinity, and the host-plugin stage;
- ``domain_rules``: the per-domain filter rules a compiled run keeps current;
- ``gpu``: GPU sharing policies, NVLink/NUMA subset search, GPU blocks;
- ``volumes``: PersistentVolume matching for every node (VolumeBinding);
- ``dra``: the DRA allocator's per-node feasibility pass and search;
- ``batch``: many independent openb clusters advanced by one call, and the
  vectorized environment's step;
- ``backend_names``: the backends by name (no NumPy, for argument checks);
- ``_backend`` (array namespace), ``_deps`` (optional CUDA), ``_compile``
  (a per-node rule module or generated pass compiled for a target; the njit
  ones are kept on disk, compiled once per machine), ``_errors``.
"""
