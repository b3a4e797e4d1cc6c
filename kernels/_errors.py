"""The one error the kernels raise on purpose."""


class BackendUnavailable(RuntimeError):
    """A backend that cannot run here (unknown name, no GPU, no simulator)."""
