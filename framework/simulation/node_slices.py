"""The ResourceSlices an added node publishes (``Simulation.add_node``'s
``slices``, a scenario's ``addNodes.slices``): checked when the call is
made, loaded into the cluster's DRA state just before the node joins (so
the pods its arrival sends back to the queue see its devices)."""

from __future__ import annotations

import copy
from collections.abc import Mapping

from tensorsched.framework.arguments import Arguments
from tensorsched.framework.errors import ManifestError
from tensorsched.framework.parsing.dra import API_VERSION, is_resource_v1, load_resource_slice
from tensorsched.framework.state.dra_claims import ClaimState

from .errors import SimulationError


def checked_slices(args: Arguments, slices, node: str) -> list[dict]:
    """``slices``: ResourceSlice dicts, each local to node ``node``, parsed
    as the cluster's are, their names distinct and not in the cluster's
    DRA state yet; the list, or an ArgumentError naming ``slices[i]``."""
    items = args.sequence("slices", slices, Mapping, "a ResourceSlice dict",
                          "ResourceSlice dicts")
    # published when the node joins: copies, the caller may change its dicts
    items = [copy.deepcopy(dict(o)) for o in items]
    names: set = set()
    for i, obj in enumerate(items):
        if obj.get("kind") != "ResourceSlice":
            raise args.error(f"slices[{i}].kind", f"must be ResourceSlice, got "
                             f"{obj.get('kind')!r}")
        if not is_resource_v1(obj):
            raise args.error(f"slices[{i}].apiVersion", f"must be {API_VERSION}, got "
                             f"{obj.get('apiVersion')!r}")
        try:
            rec = load_resource_slice(dict(obj))
        except ManifestError as exc:
            raise args.error(f"slices[{i}]", str(exc)) from None
        if rec.node_name != node:
            raise args.error(f"slices[{i}].spec.nodeName", f"must be the added node {node!r}, "
                             f"got {rec.node_name!r}")
        if rec.name in names:
            raise args.error(f"slices[{i}].metadata.name", f"ResourceSlice {rec.name!r} is "
                             "given twice")
        names.add(rec.name)
    return items


def load_slices(state, slices: list[dict]) -> None:
    """Publish ``slices`` (dicts ``checked_slices`` passed) in ``state``'s
    DRA state; a slice of that name already there is a SimulationError."""
    claims = ClaimState.of(state)
    have = {s.name for s in claims.slices}
    records = [load_resource_slice(o) for o in slices]
    for rec in records:
        if rec.name in have:
            raise SimulationError(f"ResourceSlice {rec.name}: already exists (AlreadyExists)")
    claims.load(slices=records)


def drop_node_slices(state, node: str) -> None:
    """A deleted node's own ResourceSlices go with it (the Node owns them:
    the garbage collector deletes them), so a node of that name may join
    again with its slices."""
    claims = ClaimState.attached(state)
    if claims is None:
        return
    keep = [s for s in claims.slices if s.node_name != node]
    if len(keep) != len(claims.slices):
        claims.slices[:] = keep
        claims.objects_version += 1     # the device columns are rebuilt
