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

A repeat is found through its *cheap key* first (``cheap_key``: one
``marshal`` of the whole spec and the keyed metadata, no walk in Python),
which gives its template and annotations keys from a dict; pods whose
cheap keys never repeat although their templates do (kubectl's, each with
a volume of its own) stop computing it.  ``parse_columns`` reads a repeat's
creation time with the others' after the pass (``stamps.utc_seconds``), so a
pod of a template seen before costs one marshal, a few dict lookups and
appends (about 2.4 us of CPU a pod through ``schedule_pending``, 7.5 before).

The per-pod fields of a pod that hits a template are checked here; anything
unusual (a wrong type, a bad timestamp, a missing or invalid name) sends the pod
through ``parse_pod``, so the records and the errors (field paths,
``<file>#<doc>`` sources) are exactly ``parse_pod``'s.  So do the fields
``parse_pod`` checks but the template key leaves out (annotations, volume
names, volume mounts: ``pod_names.unkeyed_fields_valid``), checked for
every hit but a plain repeat, whose cheap key covers them.

Strict decoding (:mod:`.strict_fields`) follows the same split: ``parse_pod``
decodes a template's first pod whole; a later pod of the template is
decoded but for what its template key covers by value (``POD_BUT_TEMPLATE``:
the owner references, the tolerations, affinity, spread constraints,
scheduling gates, claims, and the containers' resources and ports; every
mapping's keys are still compared), and a plain repeat but for its spec and
owner references, which its cheap key covers (the keys of the object and
its metadata, and the managed fields, are).  So a template whose first pod
is stored with an unknown field in a covered part is not shared (its pods
are parsed alone), nor does a pod with an unknown field give plain repeats:
a new pod never passes on a stored pod's check.  A stored pod's unknown
fields are remembered for the warnings (``strict_fields.remember``); a new
pod's send it through ``parse_pod``, which refuses it in the API server's
words.

Records are shared by value: pods of one template share their ``labels``,
``requests``, ``tolerations``... containers (records are read-only
everywhere; ``parse_pod`` itself already aliases ``node_affinity`` and the
spread constraints into ``obj``).
"""

from __future__ import annotations

import marshal
import re
from collections.abc import Callable

import numpy as np

from .meta import (
    DNS1123_SUBDOMAIN_MAX_LENGTH,
    DNS1123_SUBDOMAIN_RE,
    SourcedObject,
    parse_timestamp,
    parse_utc_second,
)
from tensorsched.framework.records.pod_columns import NO_EXTRAS, PodColumns, extras_of
from tensorsched.framework.records.records import PodClass, PodRecord
from .dra_validation import stored_object
from .pod_names import unkeyed_fields_valid
from .stamps import utc_seconds
from .strict_fields import but, compiled, known_as, remember, remembered, unknown_fields
from .volumes import read_volumes

__all__ = ["PodTemplates", "cheap_key", "template_key"]

#: ``spec`` fields ``parse_pod`` reads, but ``nodeName`` and the containers.
SPEC_KEYS = ("schedulerName", "priority", "priorityClassName", "preemptionPolicy",
             "hostNetwork", "overhead", "tolerations", "nodeSelector", "affinity",
             "topologySpreadConstraints", "schedulingGates", "resourceClaims")
_OBJ_TYPES = (dict, SourcedObject)


def _pod_but(spec_fields: tuple, container_fields: tuple):
    """The compiled Pod struct without the owner references, ``spec_fields``
    of the spec and ``container_fields`` of every (init) container."""
    container = compiled("Container")
    for f in container_fields:
        container = but(container, f)
    spec = compiled("PodSpec")
    for f in spec_fields:
        spec = but(spec, f)
    spec = but(but(spec, "containers", container), "initContainers", container)
    meta = but(compiled("ObjectMeta"), "ownerReferences")
    return but(but(compiled("Pod"), "spec", spec), "metadata", meta)


#: what ``template_key`` leaves out, for strict decoding (the module doc)
POD_BUT_TEMPLATE = _pod_but(("tolerations", "affinity", "topologySpreadConstraints",
                             "schedulingGates", "resourceClaims"), ("resources", "ports"))
#: what a plain repeat's cheap key leaves out: all but the spec and owner references
POD_BUT_SPEC = but(but(compiled("Pod"), "spec"), "metadata",
                   but(compiled("ObjectMeta"), "ownerReferences"))
_POD_KEYS = compiled("Pod").keys
_META_KEYS = compiled("ObjectMeta").keys
#: an unknown field's path in a part ``template_key`` covers by value
_IN_TEMPLATE = re.compile(
    r"metadata\.ownerReferences\[|spec\.(?:tolerations|affinity|topologySpreadConstraints"
    r"|schedulingGates|resourceClaims)[.\[]|spec\.(?:initContainers|containers)\[[0-9]+\]"
    r"\.(?:resources|ports)[.\[]")


def _template_shareable(obj) -> bool:
    """Whether parsed ``obj`` may be a template: no unknown field remembered
    of it in a part its template key covers (``_IN_TEMPLATE``)."""
    paths = remembered(obj)
    return not paths or not any(_IN_TEMPLATE.match(p) for p in paths)


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
        # stored or new: a new pod's claim entries are decoded strictly
        return marshal.dumps((obj.get("kind"), meta.get("namespace"), meta.get("labels"),
                              meta.get("ownerReferences"), bool(meta.get("resourceVersion")),
                              containers, init,
                              list(map(g, SPEC_KEYS)), read_volumes(g("volumes"))), 0)
    except (ValueError, TypeError, RecursionError):
        return None         # a type marshal refuses (subclass, object...): parse alone


def _annotations_key(obj) -> bytes | None:
    """The exact key of a pod's annotations (None: not shareable)."""
    try:
        return marshal.dumps(obj["metadata"].get("annotations"), 0)
    except (ValueError, TypeError, RecursionError, AttributeError, KeyError):
        return None


def cheap_key(obj) -> bytes | None:
    """A key that is cheap to compute: ``marshal`` of everything
    ``template_key`` and ``_annotations_key`` read, taken whole (the ``spec``
    but its ``nodeName``, ``kind``, and the metadata's ``namespace``,
    ``labels``, ``ownerReferences``, ``annotations``).  Equal cheap keys
    are equal inputs to both, so they give equal template and annotations
    keys; the converse does not hold (a field ``parse_pod`` does not read
    differs, e.g. per-pod volume names): such pods miss it and take the
    template key.  None when marshal refuses a value."""
    if type(obj) not in _OBJ_TYPES:
        return None
    meta = obj.get("metadata")
    spec = obj.get("spec")
    if type(meta) is not dict or type(spec) is not dict:
        return None
    return _cheap_key(obj, meta, spec)


def _cheap_key(obj, meta: dict, spec: dict) -> bytes | None:
    """``cheap_key`` of ``obj`` given its metadata and spec (plain dicts)."""
    if "nodeName" in spec:
        spec = spec.copy()
        del spec["nodeName"]
    g = meta.get
    try:
        return _dumps((obj.get("kind"), g("namespace"), g("labels"), g("ownerReferences"),
                       g("annotations"), bool(g("resourceVersion")), spec), 0)
    except (ValueError, TypeError, RecursionError):
        return None


_dumps = marshal.dumps
#: A pod's name is a DNS-1123 subdomain (with the length checked beside it);
#: a repeat whose name is not goes through ``parse_pod``, which refuses it.
_valid_name = DNS1123_SUBDOMAIN_RE.fullmatch


class _Unusual(Exception):
    """A per-pod field the fast path does not take: parse the pod alone."""


class PodTemplates:
    """Parses Pod objects, sharing the work of pods with the same template.

    ``parse(obj, where=None)`` returns exactly ``parse_pod(obj, where=where)``
    (equal records, the same errors), or ``finish`` of it when given.  One instance per set of objects:
    it keeps the template records it has seen (at most ``max_templates``;
    keys stop being computed when ``give_up_after`` pods in a row had a new
    template and none repeated).

    A pod's keys are found through its ``cheap_key`` first (one ``marshal``
    of the spec and a dict lookup); cheap keys stop being computed when,
    past ``cheap_grace`` pods, more repeats of a template missed them than
    hit them (every pod names a volume of its own, say)."""

    #: Share templates (``bench.ingest`` turns it off to time the pod-by-pod path).
    share = True
    max_templates = 10_000
    give_up_after = 2_048
    cheap_grace = 64

    def __init__(self, parse_pod: Callable, finish: Callable | None = None):
        # ``finish(record) -> record`` completes a parsed pod (priority
        # resolution); a template's pods are copies of its finished record
        if finish is not None:
            self._parse_pod = lambda obj, *, where=None: finish(parse_pod(obj, where=where))
        else:
            self._parse_pod = parse_pod
        self._records: dict[bytes, PodRecord] = {}
        self._memos: dict[tuple, PodClass] = {}     # (template key, annotations) -> class
        self._cheap: dict[bytes, tuple] = {}    # cheap key -> (template key, annotations)
        self._cheap_on = True
        self._cheap_hits = self._cheap_missed = 0
        self._times: dict[str, int] = {}
        self._deferred_bad = False
        self.hits = 0
        self.misses = 0
        self._on = self.share

    def _keys(self, obj, ck: bytes | None | bool = True) -> tuple:
        """(cheap key, template key, annotations key) of ``obj``; the cheap
        key None when not computed, the others None when not shareable.
        ``ck``: its cheap key when already computed (None: none)."""
        if ck is True:
            ck = cheap_key(obj) if self._cheap_on else None
        if ck is not None:
            known = self._cheap.get(ck)
            if known is not None:
                self._cheap_hits += 1
                return (ck, *known)
        key = template_key(obj)
        ann = _annotations_key(obj) if key is not None else None
        if ck is not None and key is not None and ann is not None:
            if (key, ann) in self._memos:
                self._cheap_missed += 1         # a repeat the cheap key did not see
                if (self._cheap_missed > self.cheap_grace
                        and self._cheap_missed > self._cheap_hits):
                    self._cheap_on = False
            if len(self._cheap) < 4 * self.max_templates:
                self._cheap[ck] = (key, ann)
        return ck, key, ann

    def parse(self, obj, *, where: str | None = None) -> PodRecord:
        if not self._on:
            return self._parse_pod(obj, where=where)
        _, key, ann = self._keys(obj)
        if key is not None:
            template = self._records.get(key)
            if template is not None:
                try:
                    record = self._from_template(template, obj)
                except _Unusual:
                    return self._parse_pod(obj, where=where)
                self.hits += 1
                self._share_memo(record, key, ann)
                return record
        record = self._parse_pod(obj, where=where)
        self.misses += 1
        if (key is not None and len(self._records) < self.max_templates
                and _template_shareable(obj)):
            self._records[key] = record
            self._share_memo(record, key, ann)
        if self.hits == 0 and self.misses >= self.give_up_after:
            self._on = False            # nothing repeats: stop paying for keys
        return record

    def _share_memo(self, record: PodRecord, key: bytes, ann: bytes | None) -> None:
        """Give ``record`` the memo of its template's pods with the same
        annotations (``ann``: their key; the first such pod's memo; at most
        4 x max_templates kept)."""
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
        ns = parse_utc_second(value)        # the API server's shape: no memo needed
        if ns is not None:
            return ns
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
        start_ns, node_name, phase, deleting).  Decoded strictly but for
        what the template key covers (``POD_BUT_TEMPLATE``): a stored pod's
        unknown fields are remembered, a new pod's raise _Unusual
        (``parse_pod`` refuses it)."""
        if not known_as(obj, POD_BUT_TEMPLATE):
            if not stored_object(obj):
                raise _Unusual
            remember(obj, unknown_fields(obj, "Pod"))
        meta = obj["metadata"]
        name = meta.get("name")
        uid = meta.get("uid")
        if type(name) is not str or not name or (uid is not None and type(uid) is not str):
            raise _Unusual
        if _valid_name(name) is None or len(name) > DNS1123_SUBDOMAIN_MAX_LENGTH:
            raise _Unusual          # parse_pod names the rule it breaks
        if not unkeyed_fields_valid(obj):
            raise _Unusual          # annotations, volume names, mounts: likewise
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
        class when its memo is new.  Equal, pod for pod, to ``parse``.

        A repeat costs its cheap key, a dict lookup and its per-pod fields
        (read here, with ``_per_pod``'s checks, for a pod with no status and
        no deletion timestamp, its creation time parsed with the others'
        after the pass, ``stamps.utc_seconds``; by ``_per_pod`` for the
        others).  When one of those creation times is not a valid
        timestamp, or the pass fails while some are pending, the pass runs
        again reading each on the spot: the records and the first error are
        then exactly those of one at a time."""
        objs = objs if isinstance(objs, list) else list(objs)
        try:
            out = self._columns(objs, defer=True)
        except Exception:
            if self._deferred_bad:
                return self._columns(objs, defer=False)
            raise
        return out if out is not None else self._columns(objs, defer=False)

    def _columns(self, objs: list, defer: bool) -> PodColumns | None:
        """``parse_columns``'s pass; None when a deferred creation time is
        not valid (``defer``: read the repeats' creation times after it).

        A *plain repeat* (its cheap key seen, a valid name, no status, no
        deletion timestamp, no node name, a uid and a creation time that
        are None or strings) takes the loop's first branch and ``continue``s:
        the cheap key written inline and five appends.  Any other pod takes
        the general branch below it (``_per_pod``'s checks, or a parse)."""
        n = len(objs)
        keys, ids, extras = [], [], {}
        creation = [0] * n                      # set for the general branch's pods
        manifests = objs.copy()                 # ... and their records' objects
        classes: list[PodRecord] = []
        class_of: dict = {}                     # PodClass -> class id
        fast: dict[tuple, int] = {}             # (template key, annotations) -> class id
        seen: dict[bytes, tuple] = {}           # cheap key -> (class id, "namespace/")
        stamps: list[str] = []                  # deferred creation times ...
        at: list[int] = []                      # ... and their positions
        self._deferred_bad = False
        per_pod, utc_second, obj_types, dumps = self._per_pod, parse_utc_second, _OBJ_TYPES, _dumps
        valid_name, max_name = _valid_name, DNS1123_SUBDOMAIN_MAX_LENGTH
        str_type = str
        # strict decoding of a plain repeat: its keys (its spec was decoded)
        pod_keys, meta_keys, but_spec = _POD_KEYS, _META_KEYS, POD_BUT_SPEC
        # counts of the general branch's pods (the plain repeats are the rest)
        slow = slow_hits = slow_known = flushed = 0
        last_ck = last_known = None             # the previous plain repeat's
        on, cheap_on = self._on, self._cheap_on     # read again after each slow path
        try:
            for i, obj in enumerate(objs):
                ck = known = None
                if on and type(obj) in obj_types:
                    meta = obj.get("metadata")
                    spec = obj.get("spec")
                    if cheap_on and type(meta) is dict and type(spec) is dict:
                        if "nodeName" in spec:
                            ck = _cheap_key(obj, meta, spec)
                            known = seen.get(ck)
                        else:
                            g = meta.get
                            try:    # _cheap_key, inline
                                ck = dumps((obj.get("kind"), g("namespace"), g("labels"),
                                            g("ownerReferences"), g("annotations"), spec), 0)
                            except (ValueError, TypeError, RecursionError):
                                ck = None
                            if ck == last_ck:
                                known = last_known
                            else:
                                known = seen.get(ck)
                            if known is not None:
                                name = g("name")
                                uid = g("uid")
                                stamp = g("creationTimestamp")
                                if (type(name) is str_type and valid_name(name)
                                        and len(name) <= max_name
                                        and (uid is None or type(uid) is str_type)
                                        and "status" not in obj
                                        and "deletionTimestamp" not in meta
                                        and obj.keys() <= pod_keys
                                        and (meta.keys() <= meta_keys
                                             and "managedFields" not in meta
                                             or known_as(obj, but_spec))):
                                    if stamp is None:
                                        born = 0
                                    elif type(stamp) is not str_type:
                                        born = None
                                    elif defer:
                                        born = 0
                                        stamps.append(stamp)
                                        at.append(i)
                                    else:
                                        born = utc_second(stamp)
                                    if born is not None:    # a plain repeat
                                        ids.append(known[0])
                                        keys.append(known[1] + name)
                                        if born:
                                            creation[i] = born
                                        last_ck, last_known = ck, known
                                        if uid:
                                            extras[i] = (uid, None, "", "", False)
                                        continue
                # the general branch: anything but a plain repeat
                nfast = i - slow
                slow += 1
                cid = last_ck = None
                if known is not None:
                    slow_known += 1
                elif on and type(obj) in obj_types:
                    self._cheap_hits += nfast + slow_known - flushed
                    flushed = nfast + slow_known
                    _, key, ann = self._keys(obj, ck)
                    cheap_on = self._cheap_on
                    cid = fast.get((key, ann)) if key is not None else None
                if known is not None or cid is not None:
                    try:        # a repeat with a status, a deletion, odd fields...
                        name, uid, born, start, node, phase, deleting = per_pod(obj)
                    except _Unusual:
                        cid = None
                    else:
                        if cid is None:
                            cid = known[0]
                        elif ck is not None and not remembered(obj):
                            seen[ck] = (cid, f"{classes[cid].namespace}/")
                        slow_hits += 1
                        keys.append(f"{classes[cid].namespace}/{name}")
                        extra = (uid, start, node, phase, deleting)
                if cid is None:
                    self._cheap_hits += nfast + slow_known - flushed
                    flushed = nfast + slow_known
                    record = obj if isinstance(obj, PodRecord) else self.parse(obj)
                    on, cheap_on = self._on, self._cheap_on
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
                                if ck is not None and not remembered(obj):
                                    seen[ck] = (cid, f"{record.namespace}/")
                    keys.append(record.key)
                    born, obj, extra = record.creation_ns or 0, record.obj, extras_of(record)
                ids.append(cid)
                creation[i] = born
                manifests[i] = obj
                if extra != NO_EXTRAS:
                    extras[i] = extra
        except Exception:
            self._deferred_bad = bool(stamps) and self._read_stamps(stamps) is None
            raise
        nfast = n - slow
        self.hits += nfast + slow_hits
        self._cheap_hits += nfast + slow_known - flushed
        creation = np.array(creation, np.int64)
        if stamps:
            ns = self._read_stamps(stamps)
            if ns is None:
                return None
            creation[np.array(at, np.int64)] = ns
        return PodColumns(keys, np.array(ids, np.int32), classes, creation, manifests, extras)

    def _read_stamps(self, stamps: list[str]):
        """[n] int64 ns of the creation times ``stamps`` (``stamps.utc_seconds``,
        the other shapes one by one), None when one is not valid."""
        ns, ok = utc_seconds(stamps)
        if not ok.all():
            try:
                other = [self._time(stamps[j]) for j in np.flatnonzero(~ok).tolist()]
            except _Unusual:
                return None
            ns = ns.astype(object)
            ns[~ok] = other
        return ns


_new = object.__new__
