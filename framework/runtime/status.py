"""Status codes and per-cycle diagnosis, as kube-scheduler's framework has them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import IntEnum

import numpy as np


class Code(IntEnum):
    """Result codes; the order and meaning match upstream's iota enum."""

    SUCCESS = 0
    ERROR = 1                              # internal error: the pod is retried with backoff
    UNSCHEDULABLE = 2                      # may fit after other pods go (preemption may help)
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3     # nothing short of a cluster change helps
    WAIT = 4                               # Permit: hold the pod
    SKIP = 5                               # PreFilter/PreScore: skip this plugin for the pod
    PENDING = 6                            # waiting on an external condition

    @property
    def wire_name(self) -> str:
        """The name explain and the golden files use."""
        return _WIRE[self]


_WIRE = {
    Code.SUCCESS: "Success", Code.ERROR: "Error", Code.UNSCHEDULABLE: "Unschedulable",
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE: "UnschedulableAndUnresolvable", Code.WAIT: "Wait",
    Code.SKIP: "Skip", Code.PENDING: "Pending",
}


@dataclass(frozen=True)
class Status:
    """A code, the reasons that explain it, and the plugin that returned it."""

    code: Code = Code.SUCCESS
    reasons: tuple[str, ...] = ()
    plugin: str = ""
    # Whether the code is SUCCESS, set once: the loop asks it per pod.
    ok: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "ok", self.code == Code.SUCCESS)

    @property
    def rejected(self) -> bool:
        return self.code in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)

    def with_plugin(self, name: str) -> "Status":
        return Status(self.code, self.reasons, name)


Status.OK = Status()          # type: ignore[attr-defined]
SKIP = Status(Code.SKIP)


class NodeStatuses(Mapping):
    """The rejected nodes of a cycle as columns: node ``nodes[rows[i]]``
    was rejected with ``table[ids[i]]``.  Reads as a ``{node name: Status}``
    mapping; the names are looked up only when someone iterates it (the
    FailedScheduling message needs only the counts per status).

    ``rows`` [K] int64 node rows; ``ids`` [K] int64 indexes into ``table``
    (the distinct statuses, each used at least once); ``nodes``: the
    cluster's node records at the cycle (row -> record with ``.name``)."""

    def __init__(self, rows=None, ids=None, table=(), nodes=()):
        self.rows = np.zeros(0, np.int64) if rows is None else rows
        self.ids = np.zeros(0, np.int64) if ids is None else ids
        self.table = list(table)
        self._nodes = nodes
        self._dict: dict | None = None if rows is not None else {}

    def _as_dict(self) -> dict:
        if self._dict is None:
            nodes, table = self._nodes, self.table
            self._dict = {nodes[r].name: table[i]
                          for r, i in zip(self.rows.tolist(), self.ids.tolist())}
        return self._dict

    def __getitem__(self, name):
        return self._as_dict()[name]

    def __iter__(self):
        return iter(self._as_dict())

    def __len__(self) -> int:
        return len(self._dict) if self._dict is not None else int(self.ids.shape[0])

    def counts(self) -> list[tuple[Status, int]]:
        """(status, number of nodes) for each distinct status."""
        n = np.bincount(self.ids, minlength=len(self.table)) if len(self.table) else []
        return [(st, int(c)) for st, c in zip(self.table, n) if c]

    def plugins(self) -> set[str]:
        """The plugins that rejected at least one node."""
        return {st.plugin for st, _ in self.counts() if st.plugin}


@dataclass
class Diagnosis:
    """Why a pod did not fit: per-node statuses plus any PreFilter message."""

    num_all_nodes: int
    node_statuses: NodeStatuses = field(default_factory=NodeStatuses)
    pre_filter_msg: str = ""
    post_filter_msg: str = ""

    def message(self) -> str:
        """kube-scheduler's FitError text: '0/N nodes are available: ...'."""
        msg = f"0/{self.num_all_nodes} nodes are available:"
        if self.pre_filter_msg:
            msg += f" {self.pre_filter_msg}."
        else:
            counts: dict[str, int] = {}
            for st, n in self.node_statuses.counts():
                for r in st.reasons:
                    counts[r] = counts.get(r, 0) + n
            parts = sorted(f"{n} {r}" for r, n in counts.items())
            if parts:
                msg += f" {', '.join(parts)}."
        if self.post_filter_msg:
            # the PostFilter plugins' message as they gave it (preemption's
            # ends with its own period; a plugin's Error text, "not found",
            # has none), as upstream appends it
            msg += f" {self.post_filter_msg}"
        return msg
