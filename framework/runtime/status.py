"""Status codes and per-cycle diagnosis, as kube-scheduler's framework has them."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum


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


@dataclass
class Diagnosis:
    """Why a pod did not fit: per-node statuses plus any PreFilter message."""

    num_all_nodes: int
    node_statuses: dict[str, Status] = field(default_factory=dict)
    pre_filter_msg: str = ""
    post_filter_msg: str = ""

    def message(self) -> str:
        """kube-scheduler's FitError text: '0/N nodes are available: ...'."""
        msg = f"0/{self.num_all_nodes} nodes are available:"
        if self.pre_filter_msg:
            msg += f" {self.pre_filter_msg}."
        else:
            counts: dict[str, int] = {}
            for st in self.node_statuses.values():
                for r in st.reasons:
                    counts[r] = counts.get(r, 0) + 1
            parts = sorted(f"{n} {r}" for r, n in counts.items())
            if parts:
                msg += f" {', '.join(parts)}."
        if self.post_filter_msg:
            msg += f" {self.post_filter_msg}."
        return msg
