"""PrioritySort: mirrors plugins/queuesort/priority_sort.go.

Higher priority first; equal priorities by earlier creation (queue) time."""

import numpy as np

from tensorsched.framework.config import plugin_names as names
from tensorsched.framework.records.pod_columns import PodColumns
from tensorsched.framework.runtime.plugin import Plugin


NAME = names.PRIORITY_SORT


def pod_priority(pod) -> int:
    return pod.priority if pod.priority is not None else 0


class PrioritySort(Plugin):
    name = NAME

    def less(self, a, b) -> bool:
        pa, pb = pod_priority(a), pod_priority(b)
        return pa > pb or (pa == pb and a.creation_ns < b.creation_ns)

    @staticmethod
    def sort_key(pod) -> tuple:
        """A key with the same order as ``less`` (for sorting many pods)."""
        return (-pod_priority(pod), pod.creation_ns)

    @staticmethod
    def sort_keys(pods: list) -> list:
        """``sort_key`` of each pod (the queue adds thousands at once; pods
        as columns are read from their columns)."""
        if isinstance(pods, PodColumns):
            return list(zip((-pods.priorities()).tolist(), pods.creation_ns.tolist()))
        return [(-(p.priority or 0), p.creation_ns) for p in pods]

    @staticmethod
    def sort_columns(pods) -> tuple[np.ndarray, np.ndarray] | None:
        """``sort_key`` of pods as columns, as columns: ([n] int64 minus the
        priority, [n] int64 creation ns), pod i's key being the tuple of the
        columns' i-th values; None for records."""
        if not isinstance(pods, PodColumns):
            return None
        return -pods.priorities(), np.asarray(pods.creation_ns, np.int64)


def new(args, handle):
    return PrioritySort()
