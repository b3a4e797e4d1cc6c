"""Strict decoding of every kind tensorsched reads: a field the API does not
have is found here, as the API server's strict decoder finds it
(``kubectl``'s default ``--validate=strict``).

The API server matches a JSON key to a field by its exact spelling (case
counts: ``nodeselector`` is no ``nodeSelector``), and with strict field
validation refuses an object that has a key no field takes, naming every
such key by its path: ``strict decoding error: unknown field
"spec.tolerations[0].efect"`` (list entries as ``[i]``, map entries as
``.key``; at most 100 named).

How tensorsched meets one (:func:`refuse_unknown_fields`): a new object (a
manifest, no ``metadata.resourceVersion``, ``dra_validation.stored_object``)
is refused in those words; a stored object (a dump, perhaps from a newer API
server that has fields 1.35 lacks) is read without the field, and the fields
are collected by the reading call (:func:`collect_unknown`):
``manifests.parse_objects`` lists them in ``Objects.unknown_fields`` (one
warning line per object, :func:`warning_line`, which the CLI prints) and
warns once per call with an :class:`UnknownFieldWarning`
(``tensorsched.UnknownFieldWarning``); the readers of pods outside it (a
scheduler's and a simulation's pending pods) warn the same way once per call
(:func:`warn_collected`); an object parsed on its own, outside any such call
(a node a simulation adds), warns at once.

The tables (:data:`STRUCTS`) are :mod:`.api_fields`, generated from the
official Python client's models of Kubernetes 1.35, and two hand-written
additions: the PodGroup of scheduler-plugins (a CRD, in no client), and the
``resource.k8s.io/v1`` fields the DRA parser knows beyond 1.35's (the list
attributes it reads, and the fields it refuses in its own words as added
after 1.35: ``dra._LATER_*``).  Each field's value is None (nothing to look
into: a scalar, a list of scalars, free-form data such as a Quantity, an
IntOrString, a RawExtension or an opaque configuration's ``parameters``),
``"Name"`` (a struct), ``"[]Name"`` (a list of structs) or ``"{}Name"`` (a
map of string to structs).  Map keys are free (labels, ``volumeAttributes``).

Cost: the common case, nothing unknown, is one key-set comparison per
mapping (:func:`known`), no path built; paths are built only for an object
that has an unknown field.  Repeats are looked into once per shape by the
callers: a ResourceSlice's devices (``dra``), a pod's template
(``pod_templates``, with :data:`POD_BUT_TEMPLATE` and :data:`POD_BUT_SPEC`
for the parts of a repeat its keys do not cover).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import replace

from .api_fields import KIND_STRUCTS as _API_KINDS
from .api_fields import STRUCTS as _API_STRUCTS
from .dra_validation import stored_object
from .meta import ObjectContext, identity

__all__ = [
    "STRUCTS",
    "KIND_STRUCTS",
    "MAX_NAMED",
    "UnknownFieldWarning",
    "compiled",
    "but",
    "known",
    "known_as",
    "unknown_fields",
    "unknown_fields_message",
    "refuse_unknown_fields",
    "remember",
    "remembered",
    "take_remembered",
    "warn_collected",
    "collect_unknown",
    "warning_line",
    "strict_kind",
]

#: at most this many unknown fields named in one message (the decoder's cap)
MAX_NAMED = 100


class UnknownFieldWarning(UserWarning):
    """Stored objects were read without fields the API (Kubernetes 1.35's)
    does not have: ``fields`` is ((object label, its source or None, the
    fields' paths), ...), one entry per object; the message has one line
    per object (the CLI's words)."""

    def __init__(self, message: str, fields: tuple = ()):
        super().__init__(message)
        self.fields = fields


# scheduler-plugins' PodGroup (scheduling.x-k8s.io/v1alpha1, a CRD): its Go
# types, written out (no client has them)
_POD_GROUP = {
    "PodGroup": {"apiVersion": None, "kind": None, "metadata": "ObjectMeta",
                 "spec": "PodGroupSpec", "status": "PodGroupStatus"},
    "PodGroupSpec": {"minMember": None, "minResources": None, "scheduleTimeoutSeconds": None},
    "PodGroupStatus": {"phase": None, "occupiedBy": None, "running": None, "succeeded": None,
                       "failed": None, "scheduleStartTime": None},
}

# resource.k8s.io/v1 fields the DRA parser knows that 1.35's client lacks:
# the list forms of an attribute (behind DRAListTypeAttributes, read), and
# the fields added after 1.35 (``dra._LATER_*``: refused with their own words)
_DRA_BEYOND_135 = {
    "DeviceAttribute": ("ints", "bools", "strings", "versions"),
    "ResourceSliceSpec": ("partitionTypeAttribute", "skipNodeOperations"),
    "Device": ("nodeAllocatableResources",),
    "DeviceCounterConsumption": ("compatibilityGroups",),
    "ExactDeviceRequest": ("derivedAttributes",),
    "DeviceSubRequest": ("derivedAttributes",),
    "DeviceRequestAllocationResult": ("skipNodeOperations",),
}


def _tables() -> dict[str, dict[str, str | None]]:
    out = {name: dict(fields) for name, fields in _API_STRUCTS.items()}
    out.update(_POD_GROUP)
    for name, fields in _DRA_BEYOND_135.items():
        out[name].update(dict.fromkeys(fields))
    return out


#: struct name -> {JSON field name: its value} (see the module doc)
STRUCTS: dict[str, dict[str, str | None]] = _tables()

#: the struct of each kind's object
KIND_STRUCTS: dict[str, str] = {**_API_KINDS, "PodGroup": "PodGroup"}

#: the kinds whose objects live in a namespace (their label is ``Kind ns/name``)
NAMESPACED = frozenset({
    "Pod", "PodDisruptionBudget", "PodGroup", "Service", "ReplicationController",
    "ReplicaSet", "StatefulSet", "PersistentVolumeClaim", "CSIStorageCapacity",
    "ResourceClaim", "ResourceClaimTemplate"})

_STRUCT, _LIST, _MAP = range(3)


#: at most this many key tuples remembered per struct (``_Struct.shapes``)
MAX_SHAPES = 4096


class _Struct:
    """A struct of STRUCTS, compiled: ``fields`` (name -> None, or (shape,
    the field's _Struct)), ``keys`` (its field names), ``children`` (name
    -> (shape, _Struct) of the fields that hold structs) and ``shapes``:
    the keys of a mapping met (a tuple, in its order) -> False when one is
    no field, else ``(name, shape, its _Struct's shapes, its _Struct)`` of
    its keys that hold structs.  Mappings of one struct mostly come with the same keys in the
    same order (an API server writes them so), so a mapping costs a tuple
    of its keys and a lookup: no set is built."""

    __slots__ = ("fields", "keys", "children", "shapes")

    def __init__(self):
        self.fields: dict = {}
        self.keys: frozenset = frozenset()
        self.children: dict = {}
        self.shapes: dict = {}


def _finish(s: _Struct) -> None:
    s.shapes = {}


def _shape(keys: tuple, s: _Struct):
    """``s.shapes``'s entry for a mapping with ``keys`` (remembered)."""
    if not s.keys.issuperset(keys):
        got = False
    else:
        children = s.children
        got = tuple((k, children[k][0], children[k][1]) for k in keys if k in children)
    if len(s.shapes) < MAX_SHAPES:
        s.shapes[keys] = got
    return got


def _compile(structs: dict) -> dict[str, _Struct]:
    out = {name: _Struct() for name in structs}
    for name, fields in structs.items():
        s = out[name]
        for field, value in fields.items():
            if value is None:
                s.fields[field] = None
            elif value.startswith("[]"):
                s.fields[field] = (_LIST, out[value[2:]])
            elif value.startswith("{}"):
                s.fields[field] = (_MAP, out[value[2:]])
            else:
                s.fields[field] = (_STRUCT, out[value])
        s.keys = frozenset(s.fields)
        s.children = {f: v for f, v in s.fields.items() if v is not None}
        _finish(s)
    return out


_COMPILED = _compile(STRUCTS)


def compiled(struct: str) -> _Struct:
    """The compiled struct ``struct`` (for :func:`known_as`, :func:`but`)."""
    return _COMPILED[struct]


def _known(value: dict, s: _Struct) -> bool:
    """Whether every key of ``value`` (a mapping of struct ``s``) and of its
    nested structs is a field: the common case, answered without building
    any path (a tuple of the keys and a lookup per mapping, ``_Struct``;
    only the struct fields present are looked into)."""
    keys = tuple(value)
    kids = s.shapes.get(keys)
    if kids is None:
        kids = _shape(keys, s)
    if kids is False:
        return False
    return not kids or _kids_known(value, kids)


def _kids_known(value: dict, kids: tuple) -> bool:
    """``_known`` of the struct fields ``kids`` of ``value`` (its shape's
    entry: ``(field, shape, the field's struct)``); a mapping without
    struct fields costs no call."""
    for field, shape, sub in kids:
        v = value[field]
        if shape == _STRUCT:
            if isinstance(v, dict) and not _known(v, sub):
                return False
        elif shape == _LIST:
            if type(v) is not list:
                continue
            for item in v:
                if isinstance(item, dict) and not _known(item, sub):
                    return False
        elif isinstance(v, dict):
            for item in v.values():
                if isinstance(item, dict) and not _known(item, sub):
                    return False
    return True


def _walk(value: dict, s: _Struct, path: str, out: list) -> None:
    """Append to ``out`` the path of every key of ``value`` (a mapping of
    struct ``s``) and of its nested structs that no field takes, in
    document order.  Values of the wrong type are passed by (the parser
    names them)."""
    prefix = f"{path}." if path else ""
    fields = s.fields
    children = s.children
    for key, v in value.items():
        if type(key) is not str or key not in fields:
            out.append(f"{prefix}{key}")
            continue
        child = children.get(key)
        if child is None or v is None:
            continue
        shape, sub = child
        if shape == _STRUCT:
            if isinstance(v, dict):
                _walk(v, sub, f"{prefix}{key}", out)
        elif shape == _LIST:
            if isinstance(v, list):
                for i, item in enumerate(v):
                    if isinstance(item, dict):
                        _walk(item, sub, f"{prefix}{key}[{i}]", out)
        elif isinstance(v, dict):
            for k, item in v.items():
                if isinstance(item, dict):
                    _walk(item, sub, f"{prefix}{key}.{k}", out)


def but(s: _Struct, field: str, inner: _Struct | None = None) -> _Struct:
    """``s`` whose ``field`` is not looked into (``inner``: is looked into
    as that struct instead).  Its keys stay ``s``'s: a key no field takes
    is still found."""
    out = _Struct()
    out.fields, out.keys = s.fields, s.keys
    out.children = {f: v for f, v in s.children.items() if f != field}
    if inner is not None:
        out.children[field] = (s.children[field][0], inner)
    _finish(out)
    return out


def known(value, struct: str) -> bool:
    """Whether ``value`` (an object of struct ``struct``) has no key the
    API lacks (:func:`unknown_fields` empty), answered cheaply."""
    return not isinstance(value, dict) or _known(value, _COMPILED[struct])


def known_as(value, s: _Struct) -> bool:
    """:func:`known` with a compiled struct (one of :func:`but`'s)."""
    return not isinstance(value, dict) or _known(value, s)


def unknown_fields(value, struct: str, path: str = "") -> list[str]:
    """The paths of the keys in ``value`` (an object of struct ``struct``,
    e.g. ``"Pod"``, found at ``path``) that the API has no field for, in
    document order; [] when ``value`` is not a mapping."""
    out: list[str] = []
    if isinstance(value, dict):
        s = _COMPILED[struct]
        if not _known(value, s):
            _walk(value, s, path, out)
    return out


def unknown_fields_message(paths) -> str:
    """The API server's words for ``paths`` (at most :data:`MAX_NAMED`)."""
    return "strict decoding error: " + ", ".join(
        f'unknown field "{p}"' for p in list(paths)[:MAX_NAMED])


# Stored objects read with fields the API lacks, collected per reading call
# (``collect_unknown``): id(obj) -> (obj, their paths); the object is kept
# so that its id is not reused while the call runs.  A context variable, so
# threads and nested calls each collect their own.
_COLLECTED: ContextVar[dict | None] = ContextVar("tensorsched_unknown_fields", default=None)


@contextmanager
def collect_unknown() -> Iterator[dict]:
    """Collect the unknown fields of the stored objects read inside the
    block: yields ``{id(obj): (obj, paths)}``, filled by
    :func:`refuse_unknown_fields` and read with :func:`take_remembered` /
    :func:`warn_collected`.  Dropped at the block's end, so a call that
    fails half-way leaves nothing behind."""
    found: dict = {}
    token = _COLLECTED.set(found)
    try:
        yield found
    finally:
        _COLLECTED.reset(token)


def remember(obj, paths: list[str]) -> None:
    """Stored ``obj``'s unknown fields, for the reading call collecting them
    (:func:`collect_unknown`); read outside any such call (a single node or
    pod parsed on its own) they are warned of at once."""
    found = _COLLECTED.get()
    if found is None:
        _warn([(obj, paths)], stacklevel=4)
    else:
        found[id(obj)] = (obj, paths)


def remembered(obj) -> list[str]:
    """The unknown fields collected of stored ``obj`` ([] when none)."""
    found = _COLLECTED.get()
    got = found.get(id(obj)) if found else None
    return got[1] if got is not None and got[0] is obj else []


def take_remembered(obj) -> list[str]:
    """The unknown fields :func:`refuse_unknown_fields` found in stored
    ``obj`` during the collecting call, forgotten here ([] when none)."""
    found = _COLLECTED.get()
    if not found:
        return []
    got = found.get(id(obj))
    if got is None or got[0] is not obj:
        return []
    del found[id(obj)]
    return got[1]


def warn_collected(found: dict, stacklevel: int = 2) -> None:
    """One :class:`UnknownFieldWarning` naming every stored object in
    ``found`` (a :func:`collect_unknown` block's) not taken yet: the pods read
    outside ``parse_objects`` (``Scheduler.schedule_pending``,
    ``Simulation.submit``, ``Scheduler.add_pod``), which takes its own.
    Nothing found (the usual case): one test."""
    if found:
        _warn(list(found.values()), stacklevel=stacklevel + 1)
        found.clear()


def _warn(objects: list, stacklevel: int) -> None:
    """The :class:`UnknownFieldWarning` of ``objects`` [(obj, paths)]."""
    fields = []
    for obj, paths in objects:
        meta = obj.get("metadata") if isinstance(obj, dict) else None
        meta = meta if isinstance(meta, dict) else {}
        name = f"{meta.get('namespace')}/{meta.get('name')}" if meta.get("namespace") \
            else f"{meta.get('name')}"
        fields.append((f"{obj.get('kind') or 'object'} {name}", None, paths))
    warnings.warn(UnknownFieldWarning("\n".join(warning_line(*f) for f in fields),
                                      tuple(fields)), stacklevel=stacklevel + 1)


def refuse_unknown_fields(ctx: ObjectContext, obj: dict, kind: str,
                          clean: bool | None = None) -> None:
    """Refuse a new object (a manifest: no ``metadata.resourceVersion``) of
    kind ``kind`` that has a field the API does not have, as the API
    server's strict decoding does; a stored object's such fields are
    collected (:func:`collect_unknown`).  ``clean``: the caller's
    :func:`known` of ``obj`` when it has it (None: asked here)."""
    struct = KIND_STRUCTS[kind]
    if clean is None:
        clean = known(obj, struct)
    if clean:
        return
    paths = unknown_fields(obj, struct)
    if not stored_object(obj):
        ctx.fail("", unknown_fields_message(paths))
    remember(obj, paths)


def warning_line(label: str, source: str | None, paths: list[str]) -> str:
    """The warning line of a stored object (``label``: ``Kind ns/name``)
    read without its unknown fields ``paths``."""
    where = f"{source}: {label}" if source and source != label else label
    noun = "field" if len(paths) == 1 else "fields"
    named = ", ".join(f'"{p}"' for p in paths[:MAX_NAMED])
    return (f"warning: {where}: unknown {noun} {named}: tensorsched does not model "
            f"{'it' if len(paths) == 1 else 'them'} (a stored object, perhaps from a newer "
            "API server); read without")


def strict_kind(kind):
    """``kind`` (a ``meta.ObjectKind``) whose objects are decoded strictly
    before they are parsed (:func:`refuse_unknown_fields`).  The common
    case costs one :func:`known`; the object's identity (its label, and the
    errors about its kind or name, which come first) is worked out only
    when something is unknown."""
    struct = _COMPILED[KIND_STRUCTS[kind.kind]]
    parse, name, namespaced = kind.parse, kind.kind, kind.kind in NAMESPACED

    def load(obj, *, where: str | None = None):
        if isinstance(obj, dict) and not _known(obj, struct):
            ctx = identity(obj, name, namespaced, where)[0]
            refuse_unknown_fields(ctx, obj, name, False)
        return parse(obj, where=where)

    load.__doc__ = f"``{getattr(parse, '__name__', 'parse')}``, decoded strictly first."
    return replace(kind, parse=load)
