"""Pods nominated to nodes by preemption (upstream's nominator): the
scheduling cycle counts them on their nodes, the queue keeps their records
up to date.  Per priority threshold it keeps the requested columns with
them counted (``nominated_overlay``), told of every change."""

from __future__ import annotations

from collections import OrderedDict

from tensorsched.framework.records.records import PodRecord

from .nominated_overlay import NominatedOverlay


class Nominator:
    """Pods nominated to nodes by preemption (upstream's nominator)."""

    #: overlays kept (one per priority threshold a cycle asked for)
    MAX_OVERLAYS = 4

    def __init__(self) -> None:
        self.node_of: dict[str, str] = {}
        self.pods: dict[str, PodRecord] = {}
        self.by_node: dict[str, list[str]] = {}
        self.version = 0        # counts changes (a remembered failure's stamp)
        self._overlays: OrderedDict[int, NominatedOverlay] = OrderedDict()

    def __bool__(self) -> bool:
        return bool(self.node_of)

    def _touch(self, node: str) -> None:
        for ov in self._overlays.values():
            ov.touch(node)

    def add(self, pod: PodRecord, node: str) -> None:
        self.delete(pod.key)
        self.version += 1
        self.node_of[pod.key] = node
        self.pods[pod.key] = pod
        self.by_node.setdefault(node, []).append(pod.key)
        self._touch(node)

    def update(self, pod: PodRecord) -> None:
        if pod.key in self.pods:
            self.pods[pod.key] = pod
            self.version += 1
            self._touch(self.node_of[pod.key])

    def delete(self, key: str) -> None:
        node = self.node_of.pop(key, None)
        if node is None:
            return
        self.version += 1
        self.pods.pop(key, None)
        keys = self.by_node.get(node, [])
        if key in keys:
            keys.remove(key)
        if not keys:
            self.by_node.pop(node, None)
        self._touch(node)

    def nominated_on(self, node: str) -> list[PodRecord]:
        return [self.pods[k] for k in self.by_node.get(node, ())]

    def overlay(self, threshold: int) -> NominatedOverlay:
        """The requested columns with the nominated pods of priority >=
        ``threshold`` counted (kept for the last few thresholds asked)."""
        got = self._overlays.get(threshold)
        if got is None:
            got = self._overlays[threshold] = NominatedOverlay(self, threshold)
            while len(self._overlays) > self.MAX_OVERLAYS:
                self._overlays.popitem(last=False)
        else:
            self._overlays.move_to_end(threshold)
        return got
