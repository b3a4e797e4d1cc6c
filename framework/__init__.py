"""State, plugins, profiles, scheduling loop and CLI.

``tensorsched.framework.explain(objects, pod, config=None, backend="numpy",
seed=0) -> dict`` is the library form of ``tensorsched explain``.
"""

from tensorsched.framework.scheduler.explain import explain

__all__ = ["explain"]
