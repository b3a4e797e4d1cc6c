"""Counters a ClusterState keeps of its nodes and pods, for quick questions.

* :class:`ImageNameCounts`: image name -> how many nodes have it
  (ImageLocality spreads an image's score by it);
* :class:`PriorityCounts`: priority -> how many bound pods have it
  (preemption asks whether any bound pod is below a priority).

Both are dicts of what they count (absent: zero), so readers use them as
plain mappings; the state changes them through their methods only.
"""

from __future__ import annotations

import numpy as np

from tensorsched.framework.records.records import NodeRecord


def image_names(node: NodeRecord) -> set[str]:
    """Every name of every image the node reports (each counted once)."""
    return {n for img in node.images for n in img.names}


class ImageNameCounts(dict):
    """image name -> number of nodes that report it (> 0)."""

    def add_node(self, names) -> None:
        """A node with the image names ``names`` (distinct) was written."""
        for n in names:
            self[n] = self.get(n, 0) + 1

    def remove_node(self, node: NodeRecord) -> None:
        """Node ``node`` was removed or is about to be rewritten."""
        for name in image_names(node):
            left = self.get(name, 0) - 1
            if left > 0:
                self[name] = left
            else:
                self.pop(name, None)


class PriorityCounts(dict):
    """priority (int) -> number of bound pods of that priority (> 0)."""

    def add(self, priority: int) -> None:
        self[priority] = self.get(priority, 0) + 1

    def add_all(self, priorities: np.ndarray) -> None:
        """One pod more for each entry of ``priorities`` ([k] int64), in
        one pass in NumPy."""
        values, n = np.unique(priorities, return_counts=True)
        for prio, c in zip(values.tolist(), n.tolist()):
            self[prio] = self.get(prio, 0) + c

    def remove(self, priority: int) -> None:
        left = self[priority] - 1
        if left:
            self[priority] = left
        else:
            del self[priority]

    def has_below(self, priority: int) -> bool:
        """Whether any counted pod has a priority lower than ``priority``."""
        return any(p < priority for p in self)
