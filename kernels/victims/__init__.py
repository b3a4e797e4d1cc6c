"""Preemption's victim search on every candidate node at once: ``search``
(SelectVictimsOnNode over the fused built-in filters; NumPy, ``_numba``
``prange``, ``_cuda`` one thread per node, one per-node source in ``_core``)
and ``on_counts`` (the same search on counts: the built-in filters once per
node, the reprieve on the node's requested column, its pods' ports and, for
PodTopologySpread / InterPodAffinity, per-domain counts, the state
untouched; with DryRunPreemption's visit and the pick in the same compiled
pass, ``_counts_core``); ``pick``
(DryRunPreemption's visit and pickOneNodeForPreemption, array code;
``_pick_cuda`` on the device), ``device`` (the search resident on a
CUDA device for one cluster), ``table_rows`` (a victim table's rows
written, and packed for the device, in one compiled pass each) and
``statuses`` (a failed cycle's status codes and helpful rows).
"""
