"""A loaded cluster: the columnar state, the scheduler configuration, and
one compiled Framework per (profile, backend)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field

from tensorsched.framework.arguments import MAX_OBJECTS, Arguments
from tensorsched.framework.config.kube_config import SchedulerConfig, load_config
from tensorsched.framework.config.plugin_args import FEATURE_GATES, DynamicResourcesArgs
from tensorsched.framework.errors import StateError
from tensorsched.framework.parsing.dra_validation import gates_in_force
from tensorsched.framework.parsing.manifests import Objects, parse_objects, parse_pod
from tensorsched.framework.records.pod_columns import PodColumns
from tensorsched.framework.parsing.pod_templates import PodTemplates
from tensorsched.framework.parsing.priorities import PriorityResolver
from tensorsched.framework.parsing.strict_fields import collect_unknown, warn_collected
from tensorsched.framework.records.records import PodRecord
from tensorsched.framework.preemption.evaluator import PodTable
from tensorsched.framework.runtime.framework import Framework
from tensorsched.framework.runtime.registry import Registry
from tensorsched.framework.state.cluster_state import ClusterState
from tensorsched.framework.state.volumes import install_catalog
from tensorsched.framework.state.dra_cel_required import require_cel
from tensorsched.framework.state.dra_claims import ClaimState
from tensorsched.framework.state.dra_bound import adopt_bound_pods
from tensorsched.framework.state.dra_search import features_of_gates
from tensorsched.framework.state.workload_index import WorkloadIndex
from tensorsched.registry_slot import default_registry

TERMINAL_PHASES = ("Succeeded", "Failed")


def pod_from(pod) -> PodRecord:
    """A PodRecord from a record or a Pod dict (a stored one read without
    fields the API lacks: an ``UnknownFieldWarning``)."""
    if isinstance(pod, PodRecord):
        return pod
    with collect_unknown() as found:
        record = parse_pod(pod)
    warn_collected(found, stacklevel=2)
    return record


def pods_from(pods, resolve=None) -> list[PodRecord]:
    """``pod_from`` of each, Pod dicts of one template parsed once
    (``PodTemplates``: equal records, the same errors); with ``resolve``
    (``Cluster.resolve``) the parsed records come with their priority
    resolved, once per template (records passed in are left as they are)."""
    templates = PodTemplates(parse_pod, finish=resolve)
    with collect_unknown() as found:
        records = [p if isinstance(p, PodRecord) else templates.parse(p) for p in pods]
    warn_collected(found, stacklevel=2)     # stored pods read without unknown fields
    return records


def pod_columns_from(pods, resolve=None) -> PodColumns:
    """``pods_from`` as :class:`PodColumns` (what ``Scheduler.schedule_pending``
    queues): pods of a template seen before give their per-pod fields only,
    no record each (``PodTemplates.parse_columns``)."""
    if isinstance(pods, PodColumns):
        return pods
    with collect_unknown() as found:
        columns = PodTemplates(parse_pod, finish=resolve).parse_columns(pods)
    warn_collected(found, stacklevel=2)     # stored pods read without unknown fields
    return columns


@dataclass
class Cluster:
    state: ClusterState
    config: SchedulerConfig
    registry: Registry
    objects: Objects
    pending: list[PodRecord] = field(default_factory=list)
    frameworks: dict = field(default_factory=dict)     # (profile, backend) -> Framework
    resolver: PriorityResolver = field(default_factory=PriorityResolver)
    _pod_table: object = None

    def resolve(self, pod) -> PodRecord:
        """A PodRecord (from a record or a Pod dict) with its priority and
        preemption policy resolved against the loaded PriorityClasses."""
        return self.resolver.resolve(pod_from(pod))

    def pod_table(self):
        """The preemption victim table of this cluster's state (kept in step
        with the state by row version), with the loaded PDBs."""
        if self._pod_table is None:
            self._pod_table = PodTable(self.state, self.objects.pdbs)
        return self._pod_table

    def framework_for(self, pod: PodRecord, backend: str) -> Framework:
        """The Framework of the pod's profile (``spec.schedulerName``)."""
        profile = self.config.profile_for(pod.scheduler_name)
        key = (profile.scheduler_name, backend)
        fw = self.frameworks.get(key)
        if fw is None:
            fw = Framework(profile, backend, self.registry,
                           self.config.percentage_of_nodes_to_score)
            self.frameworks[key] = fw
        return fw


def check_cluster_inputs(args: Arguments, objects, config, registry=None):
    """``objects`` (a list of object dicts, or ``Objects``), ``config`` and
    ``registry`` as ``build_cluster`` takes them, checked in the name of
    ``args``'s function; ``objects`` as a list."""
    if not isinstance(objects, Objects):
        objects = args.sequence("objects", objects, items="object dicts (load_manifests)",
                                limit=MAX_OBJECTS)
    args.instance("config", config, (Mapping, str, os.PathLike, SchedulerConfig),
                  "a KubeSchedulerConfiguration (a dict or a path) or None", optional=True)
    args.instance("registry", registry, Registry, "a Registry (default_registry()) or None",
                  optional=True)
    return objects


def check_pod(args: Arguments, pod, name: str = "pod"):
    """A pod argument: a Pod dict or a PodRecord (its fields are the
    parser's to check)."""
    return args.instance(name, pod, (Mapping, PodRecord), "a Pod dict or a PodRecord")


def check_feature_gates(args: Arguments, gates, config=None) -> dict[str, bool] | None:
    """A ``feature_gates`` argument: None, or a mapping of known gate names
    (``plugin_args.FEATURE_GATES``) to bools, as a dict; it goes with a
    configuration file or dict (a loaded ``SchedulerConfig`` has its own)."""
    gates = args.mapping("feature_gates", gates, optional=True,
                         what="a mapping of feature gate names to true or false")
    if gates is None:
        return None
    if isinstance(config, SchedulerConfig):
        raise args.error("feature_gates", "goes with a configuration file or dict; a loaded "
                         "SchedulerConfig has its own (load_config(..., feature_gates=...))")
    for name, on in gates.items():
        if name not in FEATURE_GATES:
            raise args.error("feature_gates", f"unknown feature gate {name!r} "
                             f"(known: {', '.join(sorted(FEATURE_GATES))})")
        if not isinstance(on, bool):
            raise args.error(f"feature_gates[{name!r}]", f"must be True or False, got {on!r}")
    return dict(gates)


def _dra_gates(cfg: SchedulerConfig) -> tuple[str, ...] | None:
    """The DRA gates on in ``cfg`` (every profile's DynamicResources args
    carry the same); None: no profile has the plugin, the defaults."""
    for prof in cfg.profiles:
        for a in prof.args.values():
            if isinstance(a, DynamicResourcesArgs):
                return a.feature_gates
    return None


def _dra_features(cfg: SchedulerConfig):
    """The allocator's switches under the DRA gates ``cfg`` was loaded with
    (every profile's DynamicResources args carry the same); None: defaults."""
    for prof in cfg.profiles:
        for a in prof.args.values():
            if isinstance(a, DynamicResourcesArgs):
                return features_of_gates(a.feature_gates)
    return None


def build_cluster(objects, config=None, registry: Registry | None = None,
                  feature_gates: Mapping[str, bool] | None = None) -> Cluster:
    """Parse object dicts (or take parsed ``Objects``) and load them into a
    fresh state: every node, then every pod bound with spec.nodeName (pods in
    a terminal phase hold nothing and are skipped).  Unbound pods become
    ``pending``.  Without ``registry``: the installed default
    (``registry_slot``; ``import tensorsched`` installs the composition
    root's ``plugin_sets.default_registry``).  ``feature_gates``: gate name
    -> on, over upstream's defaults (kube-scheduler's ``--feature-gates``;
    ``plugin_args.FEATURE_GATES`` lists them), with ``config`` a file, dict
    or None.  Any error leaves nothing behind."""
    args = Arguments("build_cluster")
    objects = check_cluster_inputs(args, objects, config, registry)
    feature_gates = check_feature_gates(args, feature_gates, config)
    registry = registry or default_registry()
    cfg = load_config(config, registry.plugin_points(), feature_gates) if not isinstance(
        config, SchedulerConfig) else config
    if isinstance(objects, Objects):
        objs = objects
    else:
        with gates_in_force(_dra_gates(cfg)):    # the API server's checks read a few
            objs = parse_objects(objects, kinds=registry.object_kinds())
    resolver = PriorityResolver(objs.priority_classes)
    state = ClusterState(node_capacity=max(len(objs.nodes), 1))
    state.workloads = WorkloadIndex.from_objects(objs)      # PodTopologySpread defaults
    state.namespace_labels = objs.namespace_labels()         # namespaceSelector
    install_catalog(state, objs)                              # claims, volumes, CSI nodes
    for kind, attach in registry.kind_attachers():            # e.g. NRTs for the GPU table
        attach(state, objs.extra.get(kind, []))
    for node in objs.nodes:
        with _named_source(node):
            state.add_node(node)
    if (objs.device_classes or objs.resource_slices or objs.resource_claims
            or objs.resource_claim_templates):
        require_cel(objs.device_classes, objs.resource_claims, objs.resource_claim_templates)
        ClaimState.of(state).load(objs.device_classes, objs.resource_slices,
                                  objs.resource_claim_templates, objs.resource_claims)
    pending = []
    for pod in objs.pods:
        pod = resolver.resolve(pod)
        if pod.phase in TERMINAL_PHASES:
            continue
        if pod.node_name:
            with _named_source(pod):
                if pod.node_name not in state.node_rows:
                    raise StateError(f"Pod {pod.key}: spec.nodeName: node {pod.node_name!r} "
                                     "is not in the cluster")
                state.add_pod(pod)
        else:
            pending.append(pod)
    claims = ClaimState.attached(state)
    if claims is not None:      # bound pods hold their claims' devices (DRA)
        adopt_bound_pods(claims, [p for p in objs.pods
                                  if p.node_name and p.phase not in TERMINAL_PHASES],
                         _dra_features(cfg))
    return Cluster(state, cfg, registry, objs, pending, resolver=resolver)


@contextmanager
def _named_source(record):
    """A StateError about ``record`` names the file it was read from."""
    try:
        yield
    except StateError as exc:
        source = getattr(record.obj, "source", None)
        if not source:
            raise
        raise StateError(f"{source}: {exc}") from exc
