"""Pods that share a template are parsed once.

The pods of a ReplicaSet (a Job, a StatefulSet...) are identical but for a
few per-pod fields: ``metadata.name``, ``uid``, ``creationTimestamp``,
``deletionTimestamp``, ``spec.nodeName`` and ``status``.  :class:`PodTemplates`
parses the first pod of each template with ``parse_pod`` (validation,
effective requests, tolerations, affinity...) and builds every later pod of
that template as a copy of its record with the per-pod fields set: ``name``,
``uid``, ``creation_ns``, ``start_ns``, ``node_name``, ``phase``, ``deleting``
and ``obj``.  Pods of one template with equal annotations share one ``memo``
(what is derived from a pod and kept on its record -- its signature, spread
constraints, affinity terms, GPU ask -- reads only the fields the key covers
and the annotations), so those are worked out once per template.  ``manifests.parse_objects`` reads every Pod
through one, so ``build_cluster`` and the CLI share templates too.

The template key is exact: ``marshal`` (format 0) of everything ``parse_pod``
reads but the per-pod fields: ``kind``, ``metadata.namespace``, ``labels``,
``ownerReferences``, and every field of ``spec`` it reads but ``nodeName``
(``containers`` and ``initContainers`` down to the fields it reads:
``name``, ``image``, ``resources``, ``restartPolicy``, ``ports``; the
volumes the volume plugins read, ``volumes.read_volumes``), each with
``.get`` as ``parse_pod`` reads it.  ``marshal`` writes the exact type of
every value (``1``, ``1.0``, ``True``, ``"1"``, a list and a tuple differ; so
do an int and a str mapping key) and refuses subclasses and other types,
which are then parsed one by one; equal keys are therefore equal inputs to
``parse_pod``, and fields it does not read (annotations, configMap /
secret / projected volumes, the per-pod ``kube-api-access-*`` volume
mounts, ``managedFields``) do not split
templates.  (Measured on a kubectl pod: this key costs about 3 us,
``json.dumps`` of the spec 10 us, ``repr`` 8 us, ``parse_pod`` 47 us.)

The per-pod fields of a pod that hits a template are checked here; anything
unusual (a wrong type, a bad timestamp, a missing name) sends the pod
through ``parse_pod``, so the records and the errors (field paths,
``<file>#<doc>`` sources) are exactly ``parse_pod``'s.

Records are shared by value: pods of one template share their ``labels``,
``requests``, ``tolerations``... containers (records are read-only
everywhere; ``parse_pod`` itself already aliases ``node_affinity`` and the
spread constraints into ``obj``).
"""

from __future__ import annotations

import marshal
from collections.abc import Callable

import numpy as np

from .meta import SourcedObject, parse_timestamp
from .pod_columns import NO_EXTRAS, PodColumns, extras_of
from .records import PodClass, PodRecord
from .volumes import read_volumes

__all__ = ["PodTemplates", "template_key"]

#: ``spec`` fields ``parse_pod`` reads, but ``nodeName`` and the containers.
SPEC_KEYS = ("schedulerName", "priority", "priorityClassName", "preemptionPolicy",
             "hostNetwork", "overhead", "tolerations", "nodeSelector", "affinity",
             "topologySpreadConstraints", "schedulingGates", "resourceClaims")
_OBJ_TYPES = (dict, SourcedObject)


def _containers(value):
    """(name, image, resources, restartPolicy, ports) of every container;
    None for anything ``parse_pod`` would refuse or that is not a plain list of
    plain dicts (so the pod is parsed on its own)."""
    if value is None:
        return ()
    if type(value) is not list:
        return None
    out = []
    for c in value:
        if type(c) is not dict:
            return None
        g = c.get
        out.append((g("name"), g("image"), g("resources"), g("restartPolicy"), g("ports")))
    return out


def template_key(obj) -> bytes | None:
    """The exact template key of a Pod object (see the module doc), None
    when the pod is to be parsed on its own."""
    if type(obj) not in _OBJ_TYPES:
        return None
    meta = obj.get("metadata")
    spec = obj.get("spec")
    if type(meta) is not dict or type(spec) is not dict:
        return None
    containers = _containers(spec.get("containers"))
    init = _containers(spec.get("initContainers"))
    if containers is None or init is None:
        return None
    g = spec.get
    try:
        return marshal.dumps((obj.get("kind"), meta.get("namespace"), meta.get("labels"),
                              meta.get("ownerReferences"), containers, init,
                              [g(k) for k in SPEC_KEYS], read_volumes(g("volumes"))), 0)
    except (ValueError, TypeError, RecursionError):
        return None         # a type marshal refuses (subclass, object...): parse alone


def _annotations_key(obj) -> bytes | None:
    """The exact key of a pod's annotations (None: not shareable)."""
    try:
        return marshal.dumps(obj["metadata"].get("annotations"), 0)
    except (ValueError, TypeError, RecursionError, AttributeError, KeyError):
        return None


class _Unusual(Exception):
    """A per-pod field the fast path does not take: parse the pod alone."""


class PodTemplates:
    """Parses Pod objects, sharing the work of pods with the same template.

    ``parse(obj, where=None)`` returns exactly ``parse_pod(obj, where=where)``
    (equal records, the same errors), or ``finish`` of it when given.  One instance per set of objects:
    it keeps the template records it has seen (at most ``max_templates``;
    keys stop being computed when ``give_up_after`` pods in a row had a new
    template and none repeated)."""

    #: Share templates (``bench.ingest`` turns it off to time the pod-by-pod path).
    share = True
    max_templates = 10_000
    give_up_after = 2_048

    def __init__(self, parse_pod: Callable, finish: Callable | None = None):
        # ``finish(record) -> record`` completes a parsed pod (priority
        # resolution); a template's pods are copies of its finished record
        if finish is not None:
            self._parse_pod = lambda obj, *, where=None: finish(parse_pod(obj, where=where))
        else:
            self._parse_pod = parse_pod
        self._records: dict[bytes, PodRecord] = {}
        self._memos: dict[tuple, PodClass] = {}     # (template key, annotations) -> class
        self._times: dict[str, int] = {}
        self.hits = 0
        self.misses = 0
        self._on = self.share

    def parse(self, obj, *, where: str | None = None) -> PodRecord:
        if not self._on:
            return self._parse_pod(obj, where=where)
        key = template_key(obj)
        if key is not None:
            template = self._records.get(key)
            if template is not None:
                try:
                    record = self._from_template(template, obj)
                except _Unusual:
                    return self._parse_pod(obj, where=where)
                self.hits += 1
                self._share_memo(record, key, obj)
                return record
        record = self._parse_pod(obj, where=where)
        self.misses += 1
        if key is not None and len(self._records) < self.max_templates:
            self._records[key] = record
            self._share_memo(record, key, obj)
        if self.hits == 0 and self.misses >= self.give_up_after:
            self._on = False            # nothing repeats: stop paying for keys
        return record

    def _share_memo(self, record: PodRecord, key: bytes, obj) -> None:
        """Give ``record`` the memo of its template's pods with the same
        annotations (the first such pod's; at most 4 x max_templates kept)."""
        ann = _annotations_key(obj)
        if ann is None:
            return
        shared = self._memos.get((key, ann))
        if shared is not None:
            record.pod_class = shared
        elif len(self._memos) < 4 * self.max_templates:
            self._memos[(key, ann)] = record.pod_class

    def _time(self, value) -> int | None:
        if value is None:
            return None
        if type(value) is not str:
            raise _Unusual
        ns = self._times.get(value)
        if ns is None:
            try:
                ns = parse_timestamp(value)
            except ValueError:
                raise _Unusual from None
            if len(self._times) < 100_000:
                self._times[value] = ns
        return ns

    def _per_pod(self, obj) -> tuple:
        """``obj``'s per-pod fields, checked as parse_pod checks them
        (anything it would refuse raises _Unusual): (name, uid, creation_ns,
        start_ns, node_name, phase, deleting)."""
        meta = obj["metadata"]
        name = meta.get("name")
        uid = meta.get("uid")
        if type(name) is not str or not name or (uid is not None and type(uid) is not str):
            raise _Unusual
        node_name = obj["spec"].get("nodeName")
        if node_name is not None and type(node_name) is not str:
            raise _Unusual
        status = obj.get("status")
        if status is None:
            phase = start = None
        elif type(status) is dict or isinstance(status, dict):
            phase = status.get("phase")
            if phase is not None and type(phase) is not str:
                raise _Unusual
            start = self._time(status.get("startTime"))
        else:
            raise _Unusual
        creation = self._time(meta.get("creationTimestamp"))
        deletion = meta.get("deletionTimestamp")
        if deletion is not None:
            self._time(deletion)
        return (name, uid or "", creation or 0, start, node_name or "", phase or "",
                deletion is not None)

    def _from_template(self, template: PodRecord, obj) -> PodRecord:
        """``template`` with ``obj``'s per-pod fields (``_per_pod``)."""
        fields = template.__dict__.copy()
        (fields["name"], fields["uid"], fields["creation_ns"], fields["start_ns"],
         fields["node_name"], fields["phase"], fields["deleting"]) = self._per_pod(obj)
        fields["key"] = f"{fields['namespace']}/{fields['name']}"
        fields["obj"] = obj
        fields["pod_class"] = PodClass()
        record = _new(PodRecord)
        record.__dict__ = fields
        return record

    def parse_columns(self, objs) -> PodColumns:
        """``parse`` of each of ``objs`` (Pod objects, or records taken as
        they are), as :class:`PodColumns`: a pod whose template and
        annotations were seen gives its per-pod fields only (no record is
        built for it); the others are parsed to a record, which becomes its
        class when its memo is new.  Equal, pod for pod, to ``parse``."""
        keys, ids, creation, manifests, extras = [], [], [], [], {}
        classes: list[PodRecord] = []
        class_of: dict = {}                     # PodClass -> class id
        fast: dict[tuple, int] = {}             # (template key, annotations) -> class id
        per_pod = self._per_pod
        for i, obj in enumerate(objs):
            cid = None
            if self._on and not isinstance(obj, PodRecord):
                key = template_key(obj)
                cid = fast.get((key, _annotations_key(obj))) if key is not None else None
                if cid is not None:
                    try:
                        name, uid, born, start, node, phase, deleting = per_pod(obj)
                    except _Unusual:
                        cid = None
                    else:
                        self.hits += 1
                        keys.append(f"{classes[cid].namespace}/{name}")
                        extra = (uid, start, node, phase, deleting)
            if cid is None:
                record = obj if isinstance(obj, PodRecord) else self.parse(obj)
                cid = class_of.get(record.pod_class)
                if cid is None:
                    cid = class_of[record.pod_class] = len(classes)
                    classes.append(record)
                    if not isinstance(obj, PodRecord):
                        key = template_key(obj)
                        ann = _annotations_key(obj)
                        if (key is not None and ann is not None
                                and self._memos.get((key, ann)) is record.pod_class):
                            fast[(key, ann)] = cid
                keys.append(record.key)
                born, obj, extra = record.creation_ns or 0, record.obj, extras_of(record)
            ids.append(cid)
            creation.append(born)
            manifests.append(obj)
            if extra != NO_EXTRAS:
                extras[i] = extra
        return PodColumns(keys, np.array(ids, np.int32), classes,
                          np.array(creation, np.int64), manifests, extras)


_new = object.__new__
