"""The kernel backends by name: a module of its own, without NumPy or
Numba, so that a command line or an argument check can name them without
loading the kernels (``fused.backends.make_backend`` builds them).

``auto`` is not a backend of its own: each stage resolves it
(``resolve_backend``) to ``cuda`` where a GPU is present and the stage is
one measured faster there, and to ``numba`` otherwise."""

KERNEL_BACKENDS = ("numpy", "numba", "cuda")
AUTO = "auto"
BACKENDS = KERNEL_BACKENDS + (AUTO,)

# The stages measured faster on the GPU than on the CPU's compiled kernels
# (one H200 against numba on its host; DESIGN.md "Where the GPU earns its
# place"): many independent clusters at once, alike runs placed as one sort,
# and the per-node victim search.  The fused cycle (one pod at a time, and
# runs with cross-node scores) stays on the CPU's compiled run: a stream of
# unlike pods is latency-bound on a GPU.
CYCLE, BATCH, SORT, VICTIMS = "cycle", "batch", "sort", "victims"
STAGES = (CYCLE, BATCH, SORT, VICTIMS)
GPU_STAGES = frozenset({BATCH, SORT, VICTIMS})


def resolve_backend(name: str, stage: str, gpu_present: bool) -> str:
    """The backend stage ``stage`` runs on when ``name`` was asked for:
    ``name`` itself unless it is ``auto``."""
    if name != AUTO:
        return name
    if stage not in STAGES:
        raise ValueError(f"unknown stage {stage!r}; one of {', '.join(STAGES)}")
    return "cuda" if gpu_present and stage in GPU_STAGES else "numba"
