"""Warnings when a profile cannot see what the pods ask.

A run can give a plausible answer to the wrong question: pods that ask for
GPUs in openb-style annotations, scheduled by a profile without the GPU
plugins, land as if they asked for none; pods that request an extended
resource no node offers, or that a profile does not check, fit nowhere or
anywhere.  :func:`profile_warnings` names each case once per profile, with
the plugin to enable:

- a registered :class:`~tensorsched.framework.runtime.registry.InputAsk`
  (a plugin set's ask, e.g. GPU annotations -> ``GpuShareFit``) carried by
  pods whose profile does not enable its plugin;
- an extended resource (a name with a ``/``, or ``hugepages-*``) requested
  by pods when no node offers it (``status.allocatable``): they fit
  nowhere;
- requests of pods whose profile does not enable ``NodeResourcesFit`` at
  Filter, or whose ``NodeResourcesFit`` args ignore the resource: nothing
  checks them against the nodes.

What the pods ask is counted first (:class:`Asks`), from records
(:func:`asks_of_pods`) or from columns (a trace computes its own), per
profile name.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from tensorsched.framework.config import plugin_names
from tensorsched.framework.config.kube_config import UnknownProfileError
from tensorsched.framework.runtime.registry import InputAsk

from .cluster import Cluster

__all__ = ["Asks", "asks_of_pods", "is_extended_resource", "profile_warnings"]

FIT = plugin_names.NODE_RESOURCES_FIT


def is_extended_resource(name: str) -> bool:
    """An extended resource (``example.com/foo``, ``nvidia.com/gpu``) or a
    huge-page size: what nodes may or may not offer."""
    return "/" in name or name.startswith("hugepages-")


@dataclass
class Asks:
    """Per profile name (``spec.schedulerName``): how many pods carry each
    registered ask (an ``InputAsk``), and how many request each resource
    (> 0)."""

    by_ask: dict[str, Counter] = field(default_factory=dict)
    by_resource: dict[str, Counter] = field(default_factory=dict)

    def add(self, other: Asks) -> Asks:
        for mine, theirs in ((self.by_ask, other.by_ask),
                             (self.by_resource, other.by_resource)):
            for profile, counts in theirs.items():
                mine.setdefault(profile, Counter()).update(counts)
        return self


def asks_of_pods(pods, asks: list[InputAsk]) -> Asks:
    """The asks of pod records (their ``obj`` annotations and requests)."""
    out = Asks()
    for pod in pods:
        name = pod.scheduler_name or "default-scheduler"
        annos = ((pod.obj or {}).get("metadata") or {}).get("annotations") or {}
        if annos:
            hit = [a for a in asks if any(k in annos for k in a.annotations)]
            if hit:
                out.by_ask.setdefault(name, Counter()).update(hit)
        reqs = [r for r, v in pod.requests.items() if v > 0]
        if reqs:
            out.by_resource.setdefault(name, Counter()).update(reqs)
    return out


def _offered(cluster: Cluster) -> set[str]:
    """The resources some node of the cluster offers (allocatable > 0)."""
    state = cluster.state
    rows = state.valid_rows()
    if rows.size == 0:
        return set()
    alloc = state.columns().allocatable[rows]
    names = state.resources.names
    have = np.flatnonzero((alloc > 0).any(axis=0)).tolist()
    return {names[c] for c in have if c < len(names)}


def _ignored_by_fit(profile, resource: str) -> bool:
    args = profile.args.get(FIT)
    if args is None:
        return False
    if resource in args.ignored_resources:
        return True
    group = resource.split("/", 1)[0] if "/" in resource else None
    return group is not None and group in args.ignored_resource_groups


def profile_warnings(cluster: Cluster, asks: Asks) -> list[str]:
    """One ``warning: ...`` line per profile and blind spot (see the module
    doc), in a stable order; [] when every profile sees what its pods ask."""
    offered = _offered(cluster)
    lines = []
    profiles = sorted(set(asks.by_ask) | set(asks.by_resource))
    for name in profiles:
        try:
            profile = cluster.config.profile_for(name)
        except UnknownProfileError:
            continue        # refused where the pods are scheduled, with its own message
        for ask, n in sorted(asks.by_ask.get(name, Counter()).items(),
                             key=lambda item: (item[0].plugin, item[0].what)):
            if ask.plugin not in profile.names(ask.point):
                lines.append(
                    f"warning: {n} pod(s) ask for {ask.what} ({', '.join(ask.annotations)}), "
                    f"which profile {name} does not read: they are placed as if they asked "
                    f"for none; enable the {ask.plugin} plugin ({ask.point}) in the profile")
        requested = asks.by_resource.get(name, Counter())
        checks = FIT in profile.names("filter")
        if requested and not checks:
            what = ", ".join(sorted(requested))
            lines.append(f"warning: profile {name} does not enable NodeResourcesFit at "
                         f"filter: the requests of its pods ({what}) are not checked "
                         "against the nodes; enable the NodeResourcesFit plugin")
        for resource, n in sorted(requested.items()):
            if not is_extended_resource(resource):
                continue
            if checks and _ignored_by_fit(profile, resource):
                lines.append(f"warning: {n} pod(s) request {resource}, which profile {name}'s "
                             "NodeResourcesFit args ignore (ignoredResources / "
                             "ignoredResourceGroups): nothing checks it against the nodes")
            elif resource not in offered:
                lines.append(f"warning: {n} pod(s) request {resource}, which no node offers "
                             f"(status.allocatable): they fit nowhere"
                             + ("" if checks else " once NodeResourcesFit checks them"))
    return lines
