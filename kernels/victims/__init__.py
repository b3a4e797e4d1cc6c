"""Preemption's victim search on every candidate node at once: ``search``
(SelectVictimsOnNode over the fused built-in filters; NumPy, ``_numba``
``prange``, ``_cuda`` one thread per node, one per-node source in ``_core``)
and ``on_counts`` (the same search replayed on per-domain counts for
PodTopologySpread / InterPodAffinity, the state untouched); ``pick``
(DryRunPreemption's visit and pickOneNodeForPreemption, array code;
``_pick_cuda`` on the device) and ``device`` (the search resident on a
CUDA device for one cluster).
"""
