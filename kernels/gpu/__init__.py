"""GPU-sharing and GPU-topology array math (no Kubernetes objects): the six
openb score policies and GPU selection (``share``), and NVLink/NUMA subset
search (``subsets``), from one per-node source (``_core``) compiled with
``njit`` and as CUDA device functions (``_cuda``), with NumPy twins; and
``block`` (``_block`` compiled): a batch of unlike pods placed one after
another in one call under a GPU-sharing profile (the openb arrival path).
"""
