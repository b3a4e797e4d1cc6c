"""What a plugin may use of the scheduler running it (upstream's
framework.Handle, the part a plugin here needs): the clock, the cluster
state, the cluster's PodGroup objects, the pods waiting in Permit and the
calls that let them go or reject them, the pods still in the scheduling
queue, and the pods added to the state for the current cycle only.

A plugin that wants it has ``set_handle(handle)``; the Scheduler calls it
with itself (it implements ``Handle``) when it first uses the plugin's
profile.  A plugin reads nothing else of the scheduler.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable

from tensorsched.framework.records.records import PodRecord
from tensorsched.framework.state.cluster_state import ClusterState

from .clock import Clock


class WaitingPodView(Protocol):
    """A pod waiting in Permit (or PreBind), as a plugin sees it."""

    pod: PodRecord
    node: str


@runtime_checkable
class Handle(Protocol):
    """The scheduler as its plugins see it."""

    @property
    def clock(self) -> Clock:
        """The clock the scheduler reads time from (seconds)."""

    @property
    def state(self) -> ClusterState:
        """The cluster state the scheduler places pods in."""

    @property
    def pod_groups(self) -> Sequence:
        """The PodGroup objects loaded with the cluster (Coscheduling)."""

    @property
    def waiting(self) -> Mapping[str, WaitingPodView]:
        """Pod key -> the pod waiting in Permit or PreBind."""

    @property
    def cycle_nominated(self) -> Sequence[str]:
        """Keys of the pods nominated elsewhere that the current cycle added
        to the state on their nominated nodes (upstream's snapshot does not
        hold them)."""

    def queued_pods(self) -> list[PodRecord]:
        """The pods in the scheduling queue (active, backing off,
        unschedulable or in flight), in no particular order."""

    def allow(self, key: str, plugin: str) -> None:
        """Permit plugin ``plugin`` lets waiting pod ``key`` go."""

    def reject(self, key: str, plugin: str, message: str) -> None:
        """Reject waiting pod ``key`` (unreserved, forgotten, requeued)."""
