"""The kernel backends by name: a module of its own, without NumPy or
Numba, so that a command line or an argument check can name them without
loading the kernels (``fused.backends.make_backend`` builds them)."""

BACKENDS = ("numpy", "numba", "cuda")
