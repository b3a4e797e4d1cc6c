"""The pods nominated to nodes that one scheduling cycle counts, by node row.

Upstream (``RunFilterPluginsWithNominatedPods`` / ``addGENominatedPods`` in
the framework runtime): when node N is filtered for pod P, the pods
nominated to N whose priority is at least P's (never P itself) are added to
a copy of N's NodeInfo and of the PreFilter cycle state (each PreFilter
extension's AddPod: PodTopologySpread bumps the count of N's topology
values for them); the filters run with them and, when any were added, once
more without them, and N passes only if both pass.  Pods nominated to other
nodes do not count for N.

A host filter that applies this rule itself reads ``nominated_pods(ctx)``
(put in ``CycleContext.data`` by the cycle: ``Framework.run_cycle``'s
``nominated``) and says so with ``counts_nominated_per_node(ctx) -> bool``;
the cycle then leaves the state as it is instead of adding the nominated
pods to it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

#: the ``CycleContext.data`` key of a cycle's ``NominatedPods``
NOMINATED_PODS = "nominated_pods"


class NominatedPods:
    """``by_row``: node row -> the PodRecords nominated to that node that
    the cycle counts there (priority >= the scheduled pod's, not the pod
    itself, not bound yet), in nomination order; rows without any are
    absent.  Given as a mapping, or as ``make() -> mapping``, called on
    first use (a cycle whose plugins never ask pays nothing)."""

    __slots__ = ("_by_row", "_make")

    def __init__(self, by_row: Mapping[int, tuple] | None = None,
                 make: Callable[[], Mapping[int, tuple]] | None = None):
        self._by_row = dict(by_row) if by_row is not None else None
        self._make = make if by_row is None else None
        if self._by_row is None and self._make is None:
            self._by_row = {}

    @property
    def by_row(self) -> dict:
        if self._by_row is None:
            self._by_row = dict(self._make())
            self._make = None
        return self._by_row

    def __bool__(self) -> bool:
        return bool(self.by_row)

    def on_row(self, row: int) -> tuple:
        """The pods counted on ``row`` (empty when none)."""
        return self.by_row.get(row, ())


def nominated_pods(ctx) -> NominatedPods | None:
    """The cycle's ``NominatedPods`` (None: the cycle did not hand them over;
    any nominated pods are then in the state itself)."""
    return ctx.data.get(NOMINATED_PODS)
