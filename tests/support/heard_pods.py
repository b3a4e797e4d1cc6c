"""For tests that compare two scheduler runs: a state listener recording
what the state told its listeners ((key, row, delta) per pod, the
many-pod form spelled out pod by pod), every event, and the bound pods'
table and columns."""

from __future__ import annotations


class HeardPods:
    def __init__(self):
        self.events: list = []

    def on_pod(self, record, row, delta):
        self.events.append((record.key, int(row), delta))

    def on_pods(self, records, rows, delta):
        for rec, row in zip(records, rows.tolist()):
            self.on_pod(rec, row, delta)


def watch(sched, listen: bool) -> tuple[HeardPods, list]:
    """A ``HeardPods`` on ``sched``'s state and, with ``listen``, every
    event it sends as a sorted tuple of its fields (a subscriber changes
    which events are built, so runs are compared with and without one)."""
    heard = HeardPods()
    sched.cluster.state.listeners.add(heard)
    events: list = []
    if listen:
        sched.subscribe("*", lambda e: events.append(tuple(sorted(
            (k, tuple(v) if isinstance(v, list) else v) for k, v in e.items()))))
    return heard, events


def bound_state(state) -> dict:
    """The bound pods of ``state`` (a ClusterState): keys, records and rows,
    each row's pods, requested columns, priorities and the pods added."""
    table = state.pods
    return {"bound": list(table), "records": [(r, row) for r, row in table.bound()],
            "on_node": [list(d) for d in state.pods_on_node[: state.n_rows]],
            "requested": state.requested[: state.n_rows].tolist(),
            "priorities": dict(state.priorities), "pod_adds": state.pod_adds}
