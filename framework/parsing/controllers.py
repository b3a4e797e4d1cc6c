"""Workload controllers expanded into the pods they would create.

``expand_workloads(objects)`` turns Deployments, ReplicaSets,
ReplicationControllers, StatefulSets and Jobs into Pod dicts named as their
controllers name them, each with ``ownerReferences`` to its controller (for
capacity planning: the pods a set of manifests would ask the scheduler to
place); bare Pods pass through.  Replicas:

- Deployment, ReplicaSet, ReplicationController, StatefulSet:
  ``spec.replicas`` (default 1);
- Job: ``spec.parallelism`` (default 1), at most ``spec.completions`` when
  set (the pods running at once); a suspended Job (``spec.suspend: true``)
  has none.

Names, labels and owners follow the controllers:

- Deployment ``web``: a ReplicaSet ``web-<hash>`` (``pod-template-hash``:
  FNV-32a of the template, encoded as ``rand.SafeEncodeString``) owning pods
  ``web-<hash>-<5 chars>``, labelled ``pod-template-hash: <hash>``;
- ReplicaSet / ReplicationController ``rs``: pods ``rs-<5 chars>``;
- StatefulSet ``db``: pods ``db-<ordinal>`` (``spec.ordinals.start``,
  default 0) with ``statefulset.kubernetes.io/pod-name`` and
  ``apps.kubernetes.io/pod-index``;
- Job ``batch``: pods ``batch-<5 chars>`` (``batch-<index>-<5 chars>`` for
  ``completionMode: Indexed``) with ``job-name``, ``controller-uid`` and
  their ``batch.kubernetes.io/`` forms.

The 5-character suffixes are drawn from upstream's alphabet
(``bcdfghjklmnpqrstvwxz2456789``) by a generator seeded with the
controller's kind, namespace and name, so an expansion is the same on every
run.  Every malformed field raises :class:`ManifestError` naming the file,
the object and the field (``Deployment shop/web: spec.replicas: must be >=
0, got -1``); a generated pod remembers its controller's file, so the
errors ``parse_pod`` raises about it name that file too.
"""

from __future__ import annotations

import copy
import json
import random
import uuid

from tensorsched.framework.arguments import Arguments
from tensorsched.framework.errors import ManifestError

from .meta import ObjectContext, SourcedObject, check_annotations, identity, source_of

__all__ = ["EXPANDED_KINDS", "expand_workloads", "replicas_of", "SAFE_ALPHABET"]

SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
INT32_MAX = (1 << 31) - 1
#: The most pods one ``expand_workloads`` call makes (every controller's
#: replicas together): each is a dict with its own copy of the template, so
#: 2**31 replicas ran for hours and out of memory; a scenario step's
#: ``replicas`` has the same bound.
MAX_EXPANDED_PODS = 1_000_000

#: kind -> (apiVersion of the owner reference, how replicas are read)
EXPANDED_KINDS = {
    "Deployment": "apps/v1",
    "ReplicaSet": "apps/v1",
    "StatefulSet": "apps/v1",
    "ReplicationController": "v1",
    "Job": "batch/v1",
}


def _fnv32a(data: bytes) -> int:
    h = 0x811C9DC5
    for b in data:
        h ^= b
        h = (h * 0x01000193) & 0xFFFFFFFF
    return h


def _safe_encode(text: str) -> str:
    return "".join(SAFE_ALPHABET[ord(c) % len(SAFE_ALPHABET)] for c in text)


def template_hash(template: dict) -> str:
    """A Deployment's ``pod-template-hash`` of ``template`` (FNV-32a of the
    template, SafeEncodeString of its decimal digits, as upstream encodes
    ``ComputeHash``; the hashed bytes are the template's canonical JSON)."""
    raw = json.dumps(template, sort_keys=True, separators=(",", ":"), default=str)
    return _safe_encode(str(_fnv32a(raw.encode())))


def _uid(kind: str, namespace: str, name: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"tensorsched:{kind}/{namespace}/{name}"))


def _int_field(ctx: ObjectContext, spec: dict, field: str, default: int) -> int:
    value = spec.get(field)
    if value is None:
        return default
    return ctx.integer(value, f"spec.{field}", lo=0, hi=INT32_MAX)


def replicas_of(obj: dict) -> int:
    """The number of pods ``obj`` (a kind of :data:`EXPANDED_KINDS`) runs."""
    kind = obj.get("kind")
    ctx, _, _, _ = identity(obj, kind, True, None)
    spec = ctx.mapping(obj.get("spec"), "spec")
    return _replicas(ctx, kind, spec)


def _replicas(ctx: ObjectContext, kind: str, spec: dict) -> int:
    if kind != "Job":
        return _int_field(ctx, spec, "replicas", 1)
    if ctx.boolean(spec.get("suspend"), "spec.suspend"):
        return 0
    parallelism = _int_field(ctx, spec, "parallelism", 1)
    if spec.get("completions") is None:
        return parallelism
    return min(parallelism, _int_field(ctx, spec, "completions", 1))


class _Suffixes:
    """Deterministic 5-character suffixes, unique per controller."""

    def __init__(self, seed: str):
        self._rng = random.Random(seed)
        self._seen: set[str] = set()

    def next(self) -> str:
        while True:
            s = "".join(self._rng.choice(SAFE_ALPHABET) for _ in range(5))
            if s not in self._seen:
                self._seen.add(s)
                return s


def _expand(obj: dict) -> list[dict]:
    kind = obj["kind"]
    ctx, _, namespace, name = identity(obj, kind, True, None)
    spec = ctx.mapping(obj.get("spec"), "spec")
    count = _replicas(ctx, kind, spec)
    if spec.get("template") is None:
        ctx.fail("spec.template", "required")
    template = ctx.mapping(spec.get("template"), "spec.template")
    tmeta = ctx.mapping(template.get("metadata"), "spec.template.metadata")
    labels = ctx.str_map(tmeta.get("labels"), "spec.template.metadata.labels")
    annotations = ctx.str_map(tmeta.get("annotations"), "spec.template.metadata.annotations")
    check_annotations(ctx, annotations, "spec.template.metadata.annotations")
    pod_spec = ctx.mapping(template.get("spec"), "spec.template.spec")
    if not pod_spec:
        ctx.fail("spec.template.spec", "required")
    source = source_of(obj)
    where = f"{source} ({kind} {namespace}/{name} spec.template)" if source else \
        f"{kind} {namespace}/{name} spec.template"
    owner_kind, owner_name, owner_api = kind, name, EXPANDED_KINDS[kind]
    extra_labels: dict[str, str] = {}
    prefix = name
    if kind == "Deployment":
        h = template_hash(template)
        owner_kind, owner_name, owner_api = "ReplicaSet", f"{name}-{h}", "apps/v1"
        extra_labels["pod-template-hash"] = h
        prefix = owner_name
    owner_uid = _uid(owner_kind, namespace, owner_name)
    if kind == "Job":
        extra_labels.update({"batch.kubernetes.io/controller-uid": owner_uid,
                             "batch.kubernetes.io/job-name": name,
                             "controller-uid": owner_uid, "job-name": name})
    indexed = kind == "Job" and spec.get("completionMode") == "Indexed"
    start = 0
    if kind == "StatefulSet":
        ordinals = ctx.mapping(spec.get("ordinals"), "spec.ordinals")
        start = _int_field(ctx, ordinals, "start", 0) if ordinals else 0
    suffixes = _Suffixes(f"{kind}/{namespace}/{name}")
    owner = {"apiVersion": owner_api, "kind": owner_kind, "name": owner_name,
             "uid": owner_uid, "controller": True, "blockOwnerDeletion": True}
    pods = []
    for i in range(count):
        pod_labels = {**labels, **extra_labels}
        pod_annotations = dict(annotations)
        if kind == "StatefulSet":
            pod_name = f"{name}-{start + i}"
            pod_labels["statefulset.kubernetes.io/pod-name"] = pod_name
            pod_labels["apps.kubernetes.io/pod-index"] = str(start + i)
        elif indexed:
            pod_name = f"{name}-{i}-{suffixes.next()}"
            pod_labels["batch.kubernetes.io/job-completion-index"] = str(i)
            pod_annotations["batch.kubernetes.io/job-completion-index"] = str(i)
        else:
            pod_name = f"{prefix}-{suffixes.next()}"
        meta = {"name": pod_name, "namespace": namespace, "labels": pod_labels,
                "ownerReferences": [dict(owner)]}
        if pod_annotations:
            meta["annotations"] = pod_annotations
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
               "spec": copy.deepcopy(pod_spec)}
        pods.append(SourcedObject(pod, where))
    return pods


def _check_total(objects) -> None:
    """Refuse, before any pod is made, controllers whose replicas add up
    past ``MAX_EXPANDED_PODS`` (the one that passes it named)."""
    total = 0
    for obj in objects:
        if isinstance(obj, dict) and obj.get("kind") in EXPANDED_KINDS:
            kind = obj["kind"]
            ctx, _, _, _ = identity(obj, kind, True, None)
            count = _replicas(ctx, kind, ctx.mapping(obj.get("spec"), "spec"))
            total += count
            if total > MAX_EXPANDED_PODS:
                field = "spec.parallelism" if kind == "Job" else "spec.replicas"
                before = f" ({total} with the workloads before it)" if total > count else ""
                ctx.fail(field, f"{count} pods{before}; workloads expand to at most "
                         f"{MAX_EXPANDED_PODS:,} pods")


def expand_workloads(objects) -> tuple[list[dict], dict[str, int]]:
    """(the pods ``objects`` would run, {kind: count} of the objects that are
    neither pods nor controllers of :data:`EXPANDED_KINDS`).  Pods pass
    through as they are (a Pod with ``spec.nodeName`` is refused: a workload
    pod is one to place)."""
    objects = Arguments("expand_workloads").sequence("objects", objects, items="object dicts")
    pods: list[dict] = []
    ignored: dict[str, int] = {}
    _check_total(objects)
    for index, obj in enumerate(objects):
        if not isinstance(obj, dict):
            raise ManifestError(f"objects#{index}", "", "expected an object (a mapping)")
        kind = obj.get("kind")
        if kind == "Pod":
            spec = obj.get("spec")
            if isinstance(spec, dict) and spec.get("nodeName"):
                ctx, _, _, _ = identity(obj, "Pod", True, None)
                ctx.fail("spec.nodeName", "a workload pod must be pending (no nodeName)")
            pods.append(obj)
        elif kind in EXPANDED_KINDS:
            pods.extend(_expand(obj))
        else:
            ignored[str(kind)] = ignored.get(str(kind), 0) + 1
    return pods, ignored
