"""The error a simulation input that cannot be applied raises."""

from __future__ import annotations

from tensorsched.framework.errors import TensorschedError


class SimulationError(TensorschedError, ValueError):
    """A simulation input that cannot be applied."""
