"""A state listener for tests that compare what the state told its
listeners: (key, row, delta) per pod, the many-pod form spelled out pod
by pod."""

from __future__ import annotations


class HeardPods:
    def __init__(self):
        self.events: list = []

    def on_pod(self, record, row, delta):
        self.events.append((record.key, int(row), delta))

    def on_pods(self, records, rows, delta):
        for rec, row in zip(records, rows.tolist()):
            self.on_pod(rec, row, delta)
