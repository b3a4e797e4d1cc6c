"""Pods nominated to nodes by preemption (upstream's nominator): the
scheduling cycle counts them on their nodes, the queue keeps their records
up to date."""

from __future__ import annotations

from tensorsched.framework.records.records import PodRecord


class Nominator:
    """Pods nominated to nodes by preemption (upstream's nominator)."""

    def __init__(self) -> None:
        self.node_of: dict[str, str] = {}
        self.pods: dict[str, PodRecord] = {}
        self.by_node: dict[str, list[str]] = {}
        self.version = 0        # counts changes (a remembered failure's stamp)

    def __bool__(self) -> bool:
        return bool(self.node_of)

    def add(self, pod: PodRecord, node: str) -> None:
        self.delete(pod.key)
        self.version += 1
        self.node_of[pod.key] = node
        self.pods[pod.key] = pod
        self.by_node.setdefault(node, []).append(pod.key)

    def update(self, pod: PodRecord) -> None:
        if pod.key in self.pods:
            self.pods[pod.key] = pod
            self.version += 1

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

    def nominated_on(self, node: str) -> list[PodRecord]:
        return [self.pods[k] for k in self.by_node.get(node, ())]
