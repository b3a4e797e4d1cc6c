"""The fused filter + score pass: every enabled built-in filter and score
for all nodes in one pass.  ``filters`` and ``scores`` are the array-namespace
twin (NumPy or CuPy); ``_core`` holds the per-node rules that ``_numba``
(``njit``, ``prange`` over nodes, with the per-row cache and the top-total
segment tree) and ``_cuda`` (one thread per node) compile; ``_cuda_run``
places a whole run of alike pods in one device launch (with ``_cuda_block``'s
block-wide reductions); ``stage_args`` declares the stage's node columns and
query fields once; ``backends`` binds one of them per Framework
(``make_backend``).
"""
