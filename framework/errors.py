"""Errors raised at the edges: bad manifests, bad configurations, bad backends.

Every error names what it is about (an object as ``Kind ns/name`` or a
configuration field path) so a user can find the line to fix.
"""

from __future__ import annotations

from tensorsched.kernels._errors import BackendUnavailable


class TensorschedError(Exception):
    """Base class of every error tensorsched raises on purpose."""


class ManifestError(TensorschedError, ValueError):
    """A Kubernetes object that cannot be loaded.

    ``obj`` is ``"Kind namespace/name"`` (or ``"Kind name"`` for cluster-scoped
    objects, ``"<source>#<index>"`` when the object has no name yet) and
    ``field`` the field path, e.g. ``spec.containers[0].resources.requests.cpu``.
    """

    def __init__(self, obj: str, field: str, problem: str):
        self.obj = obj
        self.field = field
        self.problem = problem
        where = f"{obj}: {field}" if field else obj
        super().__init__(f"{where}: {problem}")


class ConfigError(TensorschedError, ValueError):
    """An invalid KubeSchedulerConfiguration; ``field`` is the field path,
    e.g. ``profiles[0].plugins.score.enabled[1].weight``."""

    def __init__(self, field: str, problem: str):
        self.field = field
        self.problem = problem
        super().__init__(f"{field}: {problem}" if field else problem)


class BackendError(TensorschedError, BackendUnavailable):
    """A backend that cannot run here (no GPU, missing package, unknown name)."""


class StateError(TensorschedError, ValueError):
    """An operation the cluster state refuses (duplicate node, unknown pod...).

    The state is unchanged when this is raised."""
