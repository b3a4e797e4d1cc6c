"""Plugin contracts: one Protocol per extension point (kube-scheduler's
``framework/interface.go``), plus the hooks that let a plugin run inside the
fused kernel stages.

Filter and Score plugins answer for all evaluated nodes at once: ``rows`` is
an [M] int64 array of node rows of ``ctx.state`` in evaluation order.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

from .status import Status

if TYPE_CHECKING:   # pragma: no cover
    from .framework import CycleContext

NORMALIZE_NONE = 0
NORMALIZE_DEFAULT = 1      # DefaultNormalizeScore(100, reverse=False)
NORMALIZE_REVERSE = 2      # DefaultNormalizeScore(100, reverse=True)


class Plugin:
    """Base class: every plugin has a unique ``name``."""

    name: str = ""


@runtime_checkable
class PreEnqueuePlugin(Protocol):
    """Gate a pod before it enters the active queue (SUCCESS or UNSCHEDULABLE)."""

    def pre_enqueue(self, pod) -> Status: ...


@runtime_checkable
class QueueSortPlugin(Protocol):
    """Order pods in the active queue: True when ``a`` goes before ``b``."""

    def less(self, a, b) -> bool: ...


@runtime_checkable
class PreFilterPlugin(Protocol):
    """Once per pod before Filter.  Returns (status, node names or None): a
    rejection fails every node, SKIP disables the plugin's Filter for the
    pod, a name set restricts the nodes evaluated."""

    def pre_filter(self, ctx: "CycleContext") -> tuple[Status, set[str] | None]: ...


@runtime_checkable
class FilterPlugin(Protocol):
    """Per node feasibility.  Array plugins return [M] bool (True = fits);
    fused plugins set ``filter_flag`` and explain bits via ``reasons``."""

    def filter(self, ctx: "CycleContext", rows: np.ndarray) -> np.ndarray: ...


@runtime_checkable
class PostFilterPlugin(Protocol):
    """Runs when no node fits (e.g. preemption)."""

    def post_filter(self, ctx: "CycleContext", diagnosis) -> Status: ...


@runtime_checkable
class PreScorePlugin(Protocol):
    """Once per pod before Score; SKIP leaves the plugin out of scoring."""

    def pre_score(self, ctx: "CycleContext") -> Status: ...


@runtime_checkable
class ScorePlugin(Protocol):
    """Raw scores of the feasible nodes, [M] int64; ``normalize`` is one of
    the NORMALIZE_* modes applied over the scored nodes."""

    normalize: int

    def score(self, ctx: "CycleContext", rows: np.ndarray) -> np.ndarray: ...


@runtime_checkable
class ReservePlugin(Protocol):
    """Claim (reserve) or release (unreserve) what the pod needs on a node."""

    def reserve(self, ctx: "CycleContext", node_name: str) -> Status: ...

    def unreserve(self, ctx: "CycleContext", node_name: str) -> None: ...


@runtime_checkable
class PermitPlugin(Protocol):
    """Allow, reject or hold (WAIT) a reserved pod before binding."""

    def permit(self, ctx: "CycleContext", node_name: str) -> Status: ...


@runtime_checkable
class PreBindPlugin(Protocol):
    def pre_bind(self, ctx: "CycleContext", node_name: str) -> Status: ...


@runtime_checkable
class BindPlugin(Protocol):
    """Bind the pod; SKIP passes to the next bind plugin."""

    def bind(self, ctx: "CycleContext", node_name: str) -> Status: ...


@runtime_checkable
class PostBindPlugin(Protocol):
    def post_bind(self, ctx: "CycleContext", node_name: str) -> None: ...


class FusedFilter(ABC):
    """A built-in filter evaluated inside the fused kernel pass.

    ``filter_flag`` enables its checks (``layout.F_*``); ``reason_bits`` are
    the reason bits it owns; ``explain_reasons`` turns a node's bits into
    (code, reasons) text, only at the edge."""

    filter_flag: int = 0
    reason_bits: int = 0

    @abstractmethod
    def explain_reasons(self, ctx: "CycleContext", row: int, bits: int) -> Status:
        """The rejection of node ``row`` given its reason bits (a non-zero
        subset of ``reason_bits``)."""


class FusedScore:
    """A built-in score computed inside the fused kernel pass (``score_slot``)."""

    score_slot: int = -1
    normalize: int = NORMALIZE_NONE

    def query_options(self) -> dict:
        """QueryOptions fields this plugin sets from its args."""
        return {}
