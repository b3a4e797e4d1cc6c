"""tensorsched: Kubernetes scheduling decisions as array kernels.

The code lives in three top-level folders mapped into this namespace:
``tensorsched.kernels`` (array math), ``tensorsched.framework`` (state,
plugins, profiles, CLI) and ``tensorsched.topology`` (GPU/NUMA models).
"""

__version__ = "0.1.0"
