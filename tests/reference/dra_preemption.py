"""SelectVictimsOnNode for a preemptor asking a DRA-served extended resource
(DRAExtendedResource on, DRAPreemption on), written for clarity.

The cluster model is small and explicit (``Node``, ``Bound``): nodes with
cpu, an optional extended resource in allocatable (``listed``: None = not
listed at all) and ``devices`` identical DRA devices of the class that
serves the resource; bound pods with cpu, an extended-resource request
``ext`` and whether they hold one device through a claim their spec names
(``claim``).  A bound pod's ``ext`` is served by DRA (a claim the scheduler
made for it, holding ``ext`` devices) on a node whose allocatable is 0 or
absent, by the node (a node resource) elsewhere.

Upstream's rules, in our words (kubernetes@04f5fdea):
* NodeResourcesFit (fit.go fitsRequest): cpu and the pod count as usual; the
  extended resource is checked against allocatable minus the pods' requests
  only where the node's allocatable lists it; where it does not, a
  DeviceClass serves it and the check is left to DynamicResources.
* DynamicResources Filter (filterExtendedResources): on a node whose
  allocatable for the resource is 0 (absent or listed as 0), the request is
  a claim for that many devices of the class, allocated from the node's
  free devices.
* The victim search (default_preemption.go SelectVictimsOnNode) takes the
  lower-priority pods off and runs every filter.  Taking a pod off frees
  its cpu and its extended-resource request as a node resource;
  DynamicResources' RemovePod (DRAPreemption) frees the devices of the
  claims the pod's spec names once every pod holding them is off, but not
  the devices of the claim made for its extended resources (the spec does
  not name it).
"""

from __future__ import annotations

from dataclasses import dataclass

from .oracle import _sort_by_importance, oracle_pick_one_node

__all__ = ["Bound", "Node", "oracle_dra_victims", "oracle_pick_one_node"]


@dataclass(frozen=True)
class Node:
    name: str
    cpu: int                    # millicores
    listed: int | None          # the extended resource in allocatable (None: absent)
    devices: int                # DRA devices of the serving class on the node
    pods: int = 110


@dataclass(frozen=True)
class Bound:
    name: str
    node: str
    prio: int
    cpu: int
    ext: int                    # extended resource requested
    claim: bool                 # holds one device through a claim its spec names
    start: int                  # start time (seconds), the tie-break of importance

    def dra_served(self, node: Node) -> bool:
        return self.ext > 0 and not node.listed


def _as_pod(b: Bound) -> dict:
    """The shape ``oracle._sort_by_importance`` reads."""
    return {"metadata": {"name": b.name, "namespace": "default"},
            "spec": {"priority": b.prio},
            "status": {"startTime": f"2024-01-01T00:00:{b.start:02d}Z"}, "_bound": b}


def _fits(pre_cpu: int, pre_ext: int, node: Node, on_node: list, remaining: list) -> bool:
    if len(remaining) + 1 > node.pods:
        return False
    if pre_cpu > node.cpu - sum(b.cpu for b in remaining):
        return False
    if node.listed is not None and pre_ext > node.listed - sum(b.ext for b in remaining):
        return False
    if pre_ext > 0 and not node.listed:
        # devices held: claims the remaining pods' specs name, and the
        # extended-resource claims of every pod on the node (never freed by
        # the dry run)
        held = sum(1 for b in remaining if b.claim)
        held += sum(b.ext for b in on_node if b.dra_served(node))
        if pre_ext > node.devices - held:
            return False
    return True


def oracle_dra_victims(pre_prio: int, pre_cpu: int, pre_ext: int, node: Node,
                       on_node: list) -> dict:
    """{"status": "ok" | "no_victims" | "unfit" | "none_left", "victims": [pod
    keys, most important first], "victim_pods", "num_pdb_violations" (0: no
    PDBs here), "filter_calls"} for one node, as
    ``oracle.oracle_select_victims_on_node`` reports it."""
    lower = [b for b in on_node if b.prio < pre_prio]
    if not lower:
        return {"status": "no_victims", "victims": [], "num_pdb_violations": 0,
                "filter_calls": 0}
    remaining = [b for b in on_node if b.prio >= pre_prio]
    calls = 1
    if not _fits(pre_cpu, pre_ext, node, on_node, remaining):
        return {"status": "unfit", "victims": [], "num_pdb_violations": 0,
                "filter_calls": calls}
    victims = []
    for pod in _sort_by_importance([_as_pod(b) for b in lower]):
        b = pod["_bound"]
        remaining.append(b)
        calls += 1
        if not _fits(pre_cpu, pre_ext, node, on_node, remaining):
            remaining.remove(b)
            victims.append(pod)
    if not victims:
        return {"status": "none_left", "victims": [], "num_pdb_violations": 0,
                "filter_calls": calls}
    return {"status": "ok", "victims": [f"default/{p['_bound'].name}" for p in victims],
            "victim_pods": victims, "num_pdb_violations": 0, "filter_calls": calls}
