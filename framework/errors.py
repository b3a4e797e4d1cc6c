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
    ``source`` is where the object was read (``"<file>#<doc>"``) when it came
    from a file; the message then starts with it
    (``cluster.yaml#3: Pod shop/web: spec...cpu: invalid quantity 'abc'``).
    """

    def __init__(self, obj: str, field: str, problem: str, source: str | None = None):
        self.obj = obj
        self.field = field
        self.problem = problem
        self.source = source if source and source != obj else None
        where = f"{obj}: {field}" if field else obj
        if self.source:
            where = f"{self.source}: {where}"
        super().__init__(f"{where}: {problem}")

    def with_source(self, source: str | None) -> "ManifestError":
        """This error naming ``source`` (itself when it already names one,
        when ``source`` is empty or when it is the object's name)."""
        if not source or self.source or self.obj == source:
            return self
        return ManifestError(self.obj, self.field, self.problem, source)


class ConfigError(TensorschedError, ValueError):
    """An invalid KubeSchedulerConfiguration; ``field`` is the field path,
    e.g. ``profiles[0].plugins.score.enabled[1].weight``; ``source`` the
    file it was read from, when it was (the message then starts with it)."""

    def __init__(self, field: str, problem: str, source: str | None = None):
        self.field = field
        self.problem = problem
        self.source = source or None
        text = f"{field}: {problem}" if field else problem
        super().__init__(f"{source}: {text}" if source else text)

    def with_source(self, source: str | None) -> "ConfigError":
        """This error naming the file ``source`` (itself when it already names one)."""
        if not source or self.source:
            return self
        return ConfigError(self.field, self.problem, source)


class BackendError(TensorschedError, BackendUnavailable):
    """A backend that cannot run here (no GPU, missing package, unknown name)."""


class ArgumentError(TensorschedError, ValueError):
    """A bad argument to a public function: ``function: argument: problem``
    (the argument's name as the signature spells it, e.g.
    ``how_many_fit: limit: must be an integer >= 1, got -1``).  Raised
    before any work is done, so nothing has changed."""

    def __init__(self, function: str, argument: str, problem: str):
        self.function = function
        self.argument = argument
        self.problem = problem
        super().__init__(f"{function}: {argument}: {problem}")


class StateError(TensorschedError, ValueError):
    """An operation the cluster state refuses (duplicate node, unknown pod...).

    The state is unchanged when this is raised."""
