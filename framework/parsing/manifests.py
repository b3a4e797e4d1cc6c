"""Loading and validating Kubernetes manifests into records.

``load_objects`` reads files as ``kubectl get ... -o yaml|json`` prints them
(single objects, multi-document YAML, ``kind: List`` / ``*List``); the
``parse_*`` functions turn one object dict into a validated record of
:mod:`tensorsched.framework.records.records`; ``parse_objects`` does a whole set,
all-or-nothing.

Every problem raises :class:`~tensorsched.framework.errors.ManifestError`
naming the object (``"Pod ns/name"``, ``"Node name"``, or ``"<file>#<doc>"``
before the object has a name) and the field path
(``spec.containers[0].resources.requests.cpu``; map keys that are not plain
identifiers are written ``metadata.labels["kubernetes.io/hostname"]``).

API-server defaulting that real (``kubectl get``) objects already carry but
hand-written manifests may lack is applied here, so both give the same record:

* every ResourceList value (requests, limits, overhead, capacity,
  allocatable) is rounded up to a whole milli-unit (``SetDefaults_ResourceList``);
* a container's ``requests`` takes ``limits[r]`` for every resource ``r`` it
  limits but does not request (``SetDefaults_Pod``);
* ``status.allocatable`` is ``status.capacity`` when absent (``SetDefaults_NodeStatus``);
* with ``spec.hostNetwork: true`` a port without ``hostPort`` gets
  ``hostPort = containerPort`` (``SetDefaults_Pod``);
* ``schedulerName`` defaults to ``default-scheduler``, ``preemptionPolicy`` to
  ``PreemptLowerPriority``, a port's protocol to TCP and its hostIP to 0.0.0.0.

Node selector terms are validated as the API server validates a pod's
(``In`` without values, ``Exists`` with some, ``Gt`` with two, a key that
is no qualified name, an empty ``nodeSelectorTerms`` are refused); values
it does not check (``Gt`` with a non-integer value, an ``In`` value that
is no label value) are kept as written: such a term just never matches, as
in kube-scheduler.  Structural errors (wrong types,
unknown enum values, missing required keys) are load errors, and so is every
LabelSelector (pod (anti-)affinity labelSelector / namespaceSelector, spread
constraints, PDBs, ReplicaSets, StatefulSets) that apimachinery's
``ValidateLabelSelector`` refuses, with its messages (``meta.validate_label_selector``),
and what the API server's object validation refuses: names, namespaces and
labels (``meta.check_object_meta``), a ``nodeSelector`` that is no label map,
affinity and spread topology keys and label keys that are not qualified
names, a term's namespaces that are not DNS labels, spread constraints
repeated or with minDomains under ScheduleAnyway, and int32 fields past int32
(``maxSkew``, ``minDomains``, a PDB's counts; its percentages above 100%).

Files are read strictly (``load_objects``): UTF-8 only, no duplicate keys,
nesting at most :data:`MAX_DEPTH` deep, no YAML alias bombs; every object
remembers its ``<file>#<doc>`` (a :class:`~.meta.SourcedObject`) and every
error about it starts with that.  A case typo of a kind that is read
(``kind: pod``) is an error; other unread kinds are counted
(``Objects.ignored_kinds``, :func:`ignored_kinds_warning`).
"""

from __future__ import annotations

import difflib
import gc
import json
import os
import re
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from tensorsched.framework.arguments import Arguments
from tensorsched.framework.errors import ManifestError

from .meta import (
    NameRules,
    ObjectContext,
    ObjectKind,
    SourcedObject,
    canonical,
    check_labels,
    dns1123_label_errors,
    identity,
    invalid_value,
    join_path,
    label_value_errors,
    parse_timestamp,
    qualified_name_errors,
    source_of,
    type_name,
    unset_if_empty,
    validate_label_selector,
)
from .dra import OBJECT_KINDS as DRA_KINDS
from tensorsched.framework.records.dra_records import (
    DeviceClassRecord,
    ResourceClaimRecord,
    ResourceClaimTemplateRecord,
    ResourceSliceRecord,
)
from .node_selectors import check_node_selector_term
from .pod_claims import parse_pod_claims
from .pod_names import check_host_port, check_port_names, check_volume_mounts
from .pod_templates import PodTemplates
from .podgroups import PodGroup, is_coscheduling_pod_group, parse_pod_group
from tensorsched.framework.records.records import (
    HostPort,
    NamespaceRecord,
    NodeImage,
    NodeRecord,
    PodDisruptionBudgetRecord,
    PodRecord,
    PriorityClassRecord,
    Taint,
    Toleration,
)
from .quantity import INT64_MAX, INT64_MIN
from .selectors import NS_NAME_LABEL
from .strict_fields import (UnknownFieldWarning, collect_unknown, refuse_unknown_fields,
                            strict_kind, take_remembered, warning_line)
from .volumes import VOLUME_KINDS, parse_pod_volumes, remember_pod_volumes
from .workloads import OBJECT_KINDS as WORKLOAD_KINDS
from .workloads import ControllerRecord, ServiceRecord

__all__ = [
    "Objects",
    "load_objects",
    "parse_objects",
    "parse_node",
    "parse_pod",
    "parse_priority_class",
    "parse_pdb",
    "parse_namespace",
    "parse_timestamp",
    "ignored_kinds_warning",
    "read_text",
    "parse_yaml_documents",
    "parse_json_document",
    "check_shape",
    "DocumentError",
    "MAX_DEPTH",
    "DEFAULT_MILLI_CPU_REQUEST",
    "DEFAULT_MEMORY_REQUEST",
    "MANIFEST_SUFFIXES",
]

#: kube-scheduler's defaults for a container without a cpu / memory request
#: (pkg/scheduler/util: DefaultMilliCPURequest, DefaultMemoryRequest).
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
TOLERATION_OPERATORS = ("", "Equal", "Exists")
PROTOCOLS = ("TCP", "UDP", "SCTP")
PREEMPTION_POLICIES = ("PreemptLowerPriority", "Never")
WHEN_UNSATISFIABLE = ("DoNotSchedule", "ScheduleAnyway")
INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1



# --------------------------------------------------------------------------
# YAML / JSON loading (shared with ``config.kube_config``)

#: Deepest nesting a manifest or configuration document may have.  kubectl's
#: objects nest about 15 levels; deeper documents are refused before any code
#: walks them recursively (Python's recursion limit; YAML alias cycles).
MAX_DEPTH = 128
#: The largest image ``status.images[].sizeBytes`` read (1 PiB): ImageLocality
#: scales sizes through a float and sums them per pod in int64, which a
#: size near 2**63 overflowed (a bare OverflowError at the first explain).
MAX_IMAGE_BYTES = 1 << 50
_MERGE_TAG = "tag:yaml.org,2002:merge"


class DocumentError(ValueError):
    """A file or document that cannot be read as YAML/JSON: ``problem``, and
    where: ``index`` (document), ``path`` (keys and list indices down to the
    offending value), ``line`` (1-based, YAML only)."""

    def __init__(self, problem: str, index: int | None = None, path: tuple = (),
                 line: int | None = None):
        super().__init__(problem)
        self.problem = problem
        self.index = index
        self.path = tuple(path)
        self.line = line


def _make_loader():
    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class _Loader(base):  # type: ignore[misc, valid-type]
        """SafeLoader that keeps timestamps as strings (RFC3339 is parsed
        exactly, to the nanosecond, by this module) and records duplicate
        keys (``duplicates``: (mapping, key, line)) instead of keeping the
        last value silently."""

        def __init__(self, stream):
            super().__init__(stream)
            self.duplicates: list = []

    def construct_mapping(loader, node):
        data: dict = {}
        yield data          # filled after its parent: no recursion per level
        seen = set()
        for key_node, _ in node.value:
            if key_node.tag == _MERGE_TAG:
                continue    # merged keys may be overridden (YAML merge rules)
            key = loader.construct_object(key_node)
            try:
                if key in seen:
                    loader.duplicates.append((data, key, key_node.start_mark.line + 1))
                seen.add(key)
            except TypeError:
                pass        # unhashable: construct_mapping reports it
        data.update(loader.construct_mapping(node))

    _Loader.yaml_implicit_resolvers = {
        first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
        for first, resolvers in base.yaml_implicit_resolvers.items()
    }
    _Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, construct_mapping)
    return _Loader


_YamlLoader = _make_loader()


def read_text(path) -> str:
    """A file's text (UTF-8, a leading byte-order mark dropped);
    :class:`DocumentError` when it cannot be read or is not UTF-8."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise DocumentError(f"cannot read file: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DocumentError(f"not UTF-8 text (byte 0x{data[exc.start]:02x} at offset "
                            f"{exc.start} cannot be decoded)") from None
    return text[1:] if text.startswith("\ufeff") else text


def _path_to(root, target) -> tuple | None:
    """The keys / indices from ``root`` down to the container ``target``."""
    stack = [(root, ())]
    seen = set()
    while stack:
        node, path = stack.pop()
        if node is target:
            return path
        if id(node) in seen:
            continue
        seen.add(id(node))
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for k, v in items:
            if isinstance(v, (dict, list)):
                stack.append((v, path + (k,)))
    return None


def check_shape(doc, index: int | None = None, budget: int = 50_000_000) -> None:
    """Refuse a document nested deeper than :data:`MAX_DEPTH` (or with an
    alias cycle), or whose YAML aliases expand it past ``budget`` values."""
    stack = [(doc, 1)]
    count = 0
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if depth > MAX_DEPTH:
            raise DocumentError(f"nested too deeply (more than {MAX_DEPTH} levels)", index)
        count += len(children)
        if count > budget:
            raise DocumentError("too many values once YAML aliases are expanded "
                                "(excessive aliasing)", index)
        for c in children:
            if isinstance(c, (dict, list)):
                stack.append((c, depth + 1))


def _duplicate_error(doc, duplicates: list, index: int | None) -> DocumentError:
    container, key, line = duplicates[0]
    path = _path_to(doc, container)
    return DocumentError(f"duplicate field {key!r}", index, (path or ()) + (key,), line)


def parse_yaml_documents(text: str) -> list[tuple[int, object]]:
    """(index, document) of every document of a YAML stream (empty ones as
    None), strictly: duplicate keys, nesting deeper than :data:`MAX_DEPTH`
    and alias bombs are :class:`DocumentError`, as is invalid YAML."""
    loader = _YamlLoader(text)
    budget = 4 * len(text) + 100_000
    out = []
    index = 0
    # The cyclic GC would walk every object built so far, again and again,
    # while a large dump loads (most of the time of a 100,000-pod file).
    collecting = gc.isenabled()
    gc.disable()
    try:
        while True:
            try:
                if not loader.check_data():
                    break
                doc = loader.get_data()
            except RecursionError:
                raise DocumentError(f"nested too deeply (more than {MAX_DEPTH} levels)",
                                    index) from None
            except yaml.YAMLError as exc:
                if "maximum nesting depth" in str(exc):
                    raise DocumentError(f"nested too deeply (more than {MAX_DEPTH} levels)",
                                        index) from None
                raise DocumentError(f"invalid YAML: {_yaml_problem(exc, text)}", index) from None
            check_shape(doc, index, budget)
            if loader.duplicates:
                raise _duplicate_error(doc, loader.duplicates, index)
            out.append((index, doc))
            index += 1
    finally:
        loader.dispose()
        if collecting:
            gc.enable()
    return out


def _yaml_problem(exc: yaml.YAMLError, text: str) -> str:
    """A YAML error on one line, with the line (and column) it is at."""
    if isinstance(exc, yaml.reader.ReaderError):
        line = text.count("\n", 0, max(exc.position, 0)) + 1
        char = exc.character if isinstance(exc.character, int) else ord(exc.character[:1] or "?")
        return f"unacceptable character #x{char:04x}: {exc.reason} (line {line})"
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem:
        out = ", ".join(p for p in (exc.context, exc.problem) if p)
        mark = exc.problem_mark or exc.context_mark
        if mark is not None:
            out += f" (line {mark.line + 1}, column {mark.column + 1})"
        return " ".join(out.split())
    return " ".join(str(exc).split())


def _json_constant(name: str):
    raise DocumentError(f"invalid JSON: {name} is not a JSON value", 0)


def parse_json_document(text: str) -> object:
    """One JSON document, strictly (duplicate keys, NaN/Infinity, nesting
    deeper than :data:`MAX_DEPTH` are :class:`DocumentError`)."""
    duplicates: list = []

    def pairs(items):
        out = dict(items)
        if len(out) != len(items):          # rare: find the first repeated key
            seen: set = set()
            for k, _ in items:
                if k in seen:
                    duplicates.append((out, k, None))
                    break
                seen.add(k)
        return out

    try:
        doc = json.loads(text, object_pairs_hook=pairs, parse_constant=_json_constant)
    except RecursionError:
        raise DocumentError(f"nested too deeply (more than {MAX_DEPTH} levels)", 0) from None
    except json.JSONDecodeError as exc:
        raise DocumentError(f"invalid JSON: {exc}", 0) from None
    check_shape(doc, 0)
    if duplicates:
        raise _duplicate_error(doc, duplicates, 0)
    return doc


def field_path(path) -> str:
    """Keys and list indices -> ``spec.containers[0].name`` (see ``join_path``)."""
    out = ""
    for p in path:
        out = f"{out}[{p}]" if isinstance(p, int) and not isinstance(p, bool) else join_path(out, str(p))
    return out


def _manifest_files(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(
            p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in MANIFEST_SUFFIXES
        )
    return [path]


def _object_label(obj) -> str | None:
    """``Kind ns/name`` (``Kind name`` without a namespace) of a raw object."""
    if not isinstance(obj, dict):
        return None
    kind, meta = obj.get("kind"), obj.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    if not (isinstance(kind, str) and kind and isinstance(name, str) and name):
        return None
    ns = meta.get("namespace")
    return f"{kind} {ns}/{name}" if isinstance(ns, str) and ns else f"{kind} {name}"


def _document_error(source: str, exc: DocumentError, doc=None) -> ManifestError:
    """A DocumentError of ``source`` (a file) as a ManifestError naming the
    document, the object (when the path leads into a named one) and the field."""
    where = source if exc.index is None else f"{source}#{exc.index}"
    path = exc.path
    # Down through List items to the object the path is in.
    while (isinstance(doc, dict) and len(path) >= 2 and path[0] == "items"
           and isinstance(doc.get("items"), list) and isinstance(path[1], int)):
        where = f"{where}.items[{path[1]}]"
        doc, path = doc["items"][path[1]], path[2:]
    problem = exc.problem if exc.line is None else f"{exc.problem} (line {exc.line})"
    label = _object_label(doc) if path else None
    if label:
        return ManifestError(label, field_path(path), problem, where)
    return ManifestError(where, field_path(path), problem)


def _read_documents(path: Path) -> list[tuple[int, object]]:
    """(index, document) pairs of one file; empty documents included as None."""
    source = str(path)
    try:
        text = read_text(path)
        if path.suffix.lower() == ".json":
            return [(0, parse_json_document(text))] if text.strip() else []
        return parse_yaml_documents(text)
    except DocumentError as exc:
        raise _document_error(source, exc, _reparse_loose(path, exc)) from None


def _reparse_loose(path: Path, exc: DocumentError):
    """The document a duplicate-field error is in, read without the strict
    checks (to name the object it belongs to); None otherwise."""
    if not exc.path or exc.index is None:
        return None
    try:
        text = read_text(path)
        if path.suffix.lower() == ".json":
            return json.loads(text)
        for i, doc in enumerate(yaml.load_all(text, Loader=_LooseLoader)):
            if i == exc.index:
                return doc
    except Exception:  # noqa: BLE001 -- only used to word an error better
        return None
    return None


class _LooseLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """A plain safe loader (the last of duplicate keys wins)."""


def _flatten(doc: object, where: str, field_prefix: str = "",
             item_sources: bool = False) -> list[tuple[dict, str]]:
    """One document -> its (object, source) pairs (a ``List`` / ``*List``
    gives its items, named ``<where>.items[i]``)."""
    if not isinstance(doc, dict):
        raise ManifestError(where, field_prefix, f"expected an object (a mapping), got {type_name(doc)}")
    kind = doc.get("kind")
    if kind is None or kind == "":
        raise ManifestError(where, join_path(field_prefix, "kind"), "missing (every object needs a kind)")
    if not isinstance(kind, str):
        raise ManifestError(where, join_path(field_prefix, "kind"), f"must be a string, got {type_name(kind)}")
    if kind == "List" or (kind.endswith("List") and "items" in doc):
        items = doc.get("items")
        if items is None:
            return []
        if not isinstance(items, list):
            raise ManifestError(where, join_path(field_prefix, "items"), f"must be a list, got {type_name(items)}")
        item_kind = kind[: -len("List")] if kind != "List" else None
        out: list[tuple[dict, str]] = []
        for j, item in enumerate(items):
            item_field = f"{join_path(field_prefix, 'items')}[{j}]"
            if item_kind and isinstance(item, dict) and not item.get("kind"):
                # typed lists from the API (PodList, ...) leave the items' kind out
                item = {"kind": item_kind, **item}
            out.extend(_flatten(item, where, item_field, item_sources))
        return out
    return [(doc, f"{where}.{field_prefix}" if field_prefix and item_sources else where)]


def load_objects(path) -> list[dict]:
    """Every Kubernetes object in ``path``.

    ``path`` is a file, a directory (searched recursively for ``*.yaml``,
    ``*.yml`` and ``*.json``, in sorted path order) or a list of those.  A
    file is read as JSON when it ends in ``.json``, else as (multi-document)
    YAML, strictly: a duplicate key, nesting deeper than :data:`MAX_DEPTH`,
    YAML aliases that expand without bound, or text that is not UTF-8 is an
    error.  Empty documents are skipped; ``kind: List`` and typed lists
    (``PodList``...) are replaced by their items.  A file that cannot be read
    or parsed, a document that is not a mapping, or an object without a kind
    raises :class:`ManifestError` naming ``<file>#<document index>``; nothing
    is returned then.

    Every object is a :class:`~.meta.SourcedObject` (a dict) that remembers
    its ``<file>#<document>`` (``.items[i]`` for an item of a List): every
    later error about it (``parse_objects``, ``parse_pod``) names it.
    """
    args = Arguments("load_manifests")
    if isinstance(path, (str, os.PathLike)):
        paths = [Path(args.path("path", path))]
    else:
        given = args.sequence("path", path, item="a path", items="paths (or one path)")
        paths = [Path(args.path(f"path[{i}]", p)) for i, p in enumerate(given)]
    objects: list[dict] = []
    for top in paths:
        if not top.exists():
            raise ManifestError(str(top), "", "no such file or directory")
        for file in _manifest_files(top):
            for index, doc in _read_documents(file):
                if doc is None:
                    continue
                for obj, where in _flatten(doc, f"{file}#{index}", item_sources=True):
                    objects.append(SourcedObject(obj, where))
    return objects


# --------------------------------------------------------------------------
# Node


def parse_node(obj: dict, *, where: str | None = None) -> NodeRecord:
    """A Node object -> :class:`NodeRecord` (validated).

    ``where`` names the object in errors raised before its name is known
    (e.g. ``"nodes.yaml#3"``).  An object without ``kind`` is taken to be a
    Node; any other kind is an error.
    """
    ctx, meta, _, name = identity(obj, "Node", False, where)
    refuse_unknown_fields(ctx, obj, "Node")     # strict decoding first, as the API server
    labels = ctx.str_map(meta.get("labels"), "metadata.labels")
    spec = ctx.mapping(obj.get("spec"), "spec")
    status = ctx.mapping(obj.get("status"), "status")

    unschedulable = ctx.boolean(spec.get("unschedulable"), "spec.unschedulable")
    taints = []
    seen: dict[tuple[str, str], int] = {}
    for i, t in enumerate(ctx.list(spec.get("taints"), "spec.taints")):
        path = f"spec.taints[{i}]"
        t = ctx.mapping(t, path)
        key = ctx.string(t.get("key"), f"{path}.key", required=True)
        _label_key(ctx, key, f"{path}.key")
        value = ctx.string(t.get("value"), f"{path}.value")
        _label_value(ctx, value, f"{path}.value")
        if t.get("effect") is None:
            ctx.fail(f"{path}.effect", "required (NoSchedule, PreferNoSchedule or NoExecute)")
        effect = ctx.enum(t.get("effect"), f"{path}.effect", TAINT_EFFECTS)
        if (key, effect) in seen:       # validateNodeTaints
            ctx.fail(path, f"Duplicate value: taints must be unique by key and effect pair "
                     f"({key}:{effect} also spec.taints[{seen[key, effect]}])")
        seen[key, effect] = i
        taints.append(Taint(key=key, value=value, effect=effect))

    capacity_q = ctx.quantity_map(status.get("capacity"), "status.capacity")
    if status.get("allocatable") is None:
        allocatable_q, alloc_path = capacity_q, "status.capacity"
    else:
        allocatable_q = ctx.quantity_map(status.get("allocatable"), "status.allocatable")
        alloc_path = "status.allocatable"
    capacity = canonical(ctx, capacity_q, "status.capacity")
    allocatable = canonical(ctx, allocatable_q, alloc_path)

    images = []
    for i, img in enumerate(ctx.list(status.get("images"), "status.images")):
        path = f"status.images[{i}]"
        img = ctx.mapping(img, path)
        names = ctx.str_list(img.get("names"), f"{path}.names")
        size = img.get("sizeBytes")
        size = 0 if size is None else ctx.integer(size, f"{path}.sizeBytes", lo=0,
                                                  hi=MAX_IMAGE_BYTES)
        images.append(NodeImage(names=tuple(names), size_bytes=size))

    return NodeRecord(
        name=name,
        labels=labels,
        unschedulable=unschedulable,
        taints=taints,
        allocatable=allocatable,
        capacity=capacity,
        images=images,
        obj=obj,
    )


# --------------------------------------------------------------------------
# Pod: containers and effective requests


@dataclass
class _Container:
    requests: dict[str, int]        # milli-units, after limits-as-requests defaulting, "pods" dropped
    restartable: bool               # init container with restartPolicy: Always


def _parse_container(ctx: ObjectContext, c, path: str, init: bool, host_network: bool,
                     images: list[str], host_ports: list[HostPort],
                     held_ports: dict, names: dict[str, str], volumes: set[str]) -> _Container:
    """One container; ``names`` (container name -> its path) of the pod's
    containers so far: a name is required (when ``NameRules.enforced``:
    upstream's Go tests leave it out), a DNS-1123 label, unique among the
    pod's containers and init containers; ``volumes`` the names of the
    pod's volumes, which its volume mounts name; ``held_ports`` the host
    ports its ports may not repeat (``pod_names.check_host_port``)."""
    c = ctx.mapping(c, path)
    name = ctx.string(c.get("name"), f"{path}.name")
    if not name and NameRules.enforced:
        ctx.fail(f"{path}.name", "Required value")
    if name:
        errs = dns1123_label_errors(name)
        if errs:
            ctx.fail(f"{path}.name", invalid_value(name, errs))
        if name in names:
            ctx.fail(f"{path}.name", f"Duplicate value: {name!r} (also {names[name]}.name)")
        names[name] = path
    image = ctx.string(c.get("image"), f"{path}.image")
    if image:
        images.append(image)

    resources = ctx.mapping(c.get("resources"), f"{path}.resources")
    requests = ctx.quantity_map(resources.get("requests"), f"{path}.resources.requests")
    limits = ctx.quantity_map(resources.get("limits"), f"{path}.resources.limits")
    for name, q in limits.items():  # SetDefaults_Pod: requests default to limits
        requests.setdefault(name, q)
    requests.pop("pods", None)

    # Only an init container with restartPolicy Always is a sidecar; other
    # values (container restart rules) do not change scheduling.
    restart_policy = ctx.string(c.get("restartPolicy"), f"{path}.restartPolicy")

    ports = [ctx.mapping(p, f"{path}.ports[{j}]")
             for j, p in enumerate(ctx.list(c.get("ports"), f"{path}.ports"))]
    check_port_names(ctx, ports, f"{path}.ports")
    for j, p in enumerate(ports):
        ppath = f"{path}.ports[{j}]"
        if p.get("containerPort") is None:
            ctx.fail(f"{ppath}.containerPort", "required")
        container_port = ctx.integer(p.get("containerPort"), f"{ppath}.containerPort", 1, 65535)
        host_port = p.get("hostPort")
        host_port = 0 if host_port is None else ctx.integer(host_port, f"{ppath}.hostPort", 0, 65535)
        protocol = ctx.enum(unset_if_empty(p.get("protocol")), f"{ppath}.protocol", PROTOCOLS, "TCP")
        written_ip = ctx.string(p.get("hostIP"), f"{ppath}.hostIP")
        host_ip = written_ip or "0.0.0.0"
        if host_port == 0 and host_network:
            host_port = container_port
        check_host_port(ctx, held_ports, protocol, written_ip, host_port, ppath)
        # GetHostPorts: regular containers and restartable (sidecar) init
        # containers only; an ordinary init container has exited by then.
        if host_port > 0 and (not init or restart_policy == "Always"):
            host_ports.append(HostPort(protocol=protocol, host_ip=host_ip, port=host_port))
    check_volume_mounts(ctx, c.get("volumeMounts"), f"{path}.volumeMounts", volumes)

    return _Container(requests=requests, restartable=init and restart_policy == "Always")


def _add(into: dict[str, int], other: Mapping[str, int]) -> None:
    for k, v in other.items():
        into[k] = into.get(k, 0) + v


def _max(into: dict[str, int], other: Mapping[str, int]) -> None:
    for k, v in other.items():
        if k not in into or v > into[k]:
            into[k] = v


def _aggregate(containers: list[_Container], init_containers: list[_Container],
               overhead: Mapping[str, int],
               non_missing: Mapping[str, int] | None = None) -> dict[str, int]:
    """component-helpers ``PodRequests`` (sidecars on, no pod-level resources),
    in milli-units."""

    def effective(c: _Container) -> dict[str, int]:
        reqs = dict(c.requests)
        if non_missing:
            for k, v in non_missing.items():
                reqs.setdefault(k, v)  # only a *missing* key; an explicit 0 stays 0
        return reqs

    total: dict[str, int] = {}
    for c in containers:
        _add(total, effective(c))
    sidecars: dict[str, int] = {}
    init_peak: dict[str, int] = {}
    for c in init_containers:
        reqs = effective(c)
        if c.restartable:
            _add(total, reqs)
            _add(sidecars, reqs)
            step = dict(sidecars)
        else:
            step = dict(reqs)
            _add(step, sidecars)
        _max(init_peak, step)
    _max(total, init_peak)
    _add(total, overhead)
    return total


def _pod_requests(containers: list[_Container], init_containers: list[_Container],
                  overhead: Mapping[str, int]) -> tuple[dict[str, int], int, int]:
    """(requests, nonzero cpu, nonzero memory) in exact milli-units.

    ``requests`` follows ``PodRequests``: the sum over regular containers; each
    init container in order contributes a step value (a restartable one: the
    running sum of restartable init containers including itself, which is also
    added to the total; any other: its own requests plus that running sum);
    the total is the per-resource max of the sum and every step; then
    ``spec.overhead`` is added.  The non-zero variant is the same with a
    missing cpu (memory) request read as 100m (200Mi) in every container.
    """
    requests = _aggregate(containers, init_containers, overhead)
    nonzero = _aggregate(containers, init_containers, overhead, {
        "cpu": DEFAULT_MILLI_CPU_REQUEST,
        "memory": DEFAULT_MEMORY_REQUEST * 1000,
    })
    return requests, nonzero.get("cpu", 0), nonzero.get("memory", 0)


# --------------------------------------------------------------------------
# Pod: scheduling constraints


def _validate_node_affinity(ctx: ObjectContext, na, path: str) -> dict | None:
    if na is None:
        return None
    na = ctx.mapping(na, path)
    req_path = f"{path}.requiredDuringSchedulingIgnoredDuringExecution"
    required = na.get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is not None:
        required = ctx.mapping(required, req_path)
        terms_path = f"{req_path}.nodeSelectorTerms"
        terms = ctx.list(required.get("nodeSelectorTerms"), terms_path)
        if not terms:
            ctx.fail(terms_path, "Required value: must have at least one node selector term")
        for i, term in enumerate(terms):
            check_node_selector_term(ctx, term, f"{terms_path}[{i}]")
    pref_path = f"{path}.preferredDuringSchedulingIgnoredDuringExecution"
    for i, pref in enumerate(ctx.list(na.get("preferredDuringSchedulingIgnoredDuringExecution"), pref_path)):
        ppath = f"{pref_path}[{i}]"
        pref = ctx.mapping(pref, ppath)
        if pref.get("weight") is None:
            ctx.fail(f"{ppath}.weight", "required (1..100)")
        ctx.integer(pref.get("weight"), f"{ppath}.weight", 1, 100)
        if pref.get("preference") is None:
            ctx.fail(f"{ppath}.preference", "required")
        check_node_selector_term(ctx, pref.get("preference"), f"{ppath}.preference")
    return na




def _validate_pod_affinity(ctx: ObjectContext, pa, path: str) -> dict | None:
    """podAffinity / podAntiAffinity: structure only, kept as written."""
    if pa is None:
        return None
    pa = ctx.mapping(pa, path)

    def term(t, tpath):
        t = ctx.mapping(t, tpath)
        key = ctx.string(t.get("topologyKey"), f"{tpath}.topologyKey", required=True)
        _label_key(ctx, key, f"{tpath}.topologyKey")
        validate_label_selector(ctx, t.get("labelSelector"), f"{tpath}.labelSelector")
        validate_label_selector(ctx, t.get("namespaceSelector"), f"{tpath}.namespaceSelector")
        for j, ns in enumerate(ctx.str_list(t.get("namespaces"), f"{tpath}.namespaces")):
            errs = dns1123_label_errors(ns)
            if errs:
                ctx.fail(f"{tpath}.namespaces[{j}]", invalid_value(ns, errs))
        for name in ("matchLabelKeys", "mismatchLabelKeys"):
            for j, k in enumerate(ctx.str_list(t.get(name), f"{tpath}.{name}")):
                _label_key(ctx, k, f"{tpath}.{name}[{j}]")

    req_path = f"{path}.requiredDuringSchedulingIgnoredDuringExecution"
    for i, t in enumerate(ctx.list(pa.get("requiredDuringSchedulingIgnoredDuringExecution"), req_path)):
        term(t, f"{req_path}[{i}]")
    pref_path = f"{path}.preferredDuringSchedulingIgnoredDuringExecution"
    for i, w in enumerate(ctx.list(pa.get("preferredDuringSchedulingIgnoredDuringExecution"), pref_path)):
        wpath = f"{pref_path}[{i}]"
        w = ctx.mapping(w, wpath)
        if w.get("weight") is None:
            ctx.fail(f"{wpath}.weight", "required (1..100)")
        ctx.integer(w.get("weight"), f"{wpath}.weight", 1, 100)
        if w.get("podAffinityTerm") is None:
            ctx.fail(f"{wpath}.podAffinityTerm", "required")
        term(w.get("podAffinityTerm"), f"{wpath}.podAffinityTerm")
    return pa


def _int32(ctx: ObjectContext, value, path: str, lo: int) -> int:
    """An int32 field with a floor: ``value`` when an integer in
    lo..INT32_MAX, else ManifestError (past int32 the API server's decoder
    refuses it; nothing here saturates or wraps)."""
    value = ctx.integer(value, path, lo=lo)
    if value > INT32_MAX:
        ctx.fail(path, f"must be <= {INT32_MAX} (an int32), got {value}")
    return value


def _label_value(ctx: ObjectContext, value: str, path: str) -> None:
    """``IsValidLabelValue`` (a taint's value, an Equal toleration's)."""
    errs = label_value_errors(value)
    if errs:
        ctx.fail(path, invalid_value(value, errs))


def _label_key(ctx: ObjectContext, key: str, path: str) -> None:
    """``ValidateLabelName``: ``key`` a qualified name (a topologyKey, a
    matchLabelKeys entry), else ManifestError at ``path``."""
    errs = qualified_name_errors(key)
    if errs:
        ctx.fail(path, invalid_value(key, errs))


def _validate_spread(ctx: ObjectContext, value, path: str) -> list[dict]:
    """topologySpreadConstraints as the API server validates them: maxSkew
    and minDomains int32 >= 1 (minDomains with DoNotSchedule only),
    qualified topologyKey and matchLabelKeys, no two constraints with one
    {topologyKey, whenUnsatisfiable}."""
    out = []
    seen: dict[tuple[str, str], int] = {}
    for i, c in enumerate(ctx.list(value, path)):
        cpath = f"{path}[{i}]"
        c = ctx.mapping(c, cpath)
        if c.get("maxSkew") is None:
            ctx.fail(f"{cpath}.maxSkew", "required (an integer >= 1)")
        _int32(ctx, c.get("maxSkew"), f"{cpath}.maxSkew", 1)
        key = ctx.string(c.get("topologyKey"), f"{cpath}.topologyKey", required=True)
        _label_key(ctx, key, f"{cpath}.topologyKey")
        if c.get("whenUnsatisfiable") is None:
            ctx.fail(f"{cpath}.whenUnsatisfiable", "required (DoNotSchedule or ScheduleAnyway)")
        when = ctx.enum(c.get("whenUnsatisfiable"), f"{cpath}.whenUnsatisfiable",
                        WHEN_UNSATISFIABLE)
        if (key, when) in seen:
            ctx.fail(cpath, f"Duplicate value: {{{key}, {when}}} (also {path}[{seen[key, when]}])")
        seen[key, when] = i
        validate_label_selector(ctx, c.get("labelSelector"), f"{cpath}.labelSelector")
        if c.get("minDomains") is not None:
            _int32(ctx, c.get("minDomains"), f"{cpath}.minDomains", 1)
            if when != "DoNotSchedule":
                ctx.fail(f"{cpath}.minDomains",
                         "can only use minDomains if whenUnsatisfiable=DoNotSchedule")
        for j, k in enumerate(ctx.str_list(c.get("matchLabelKeys"), f"{cpath}.matchLabelKeys")):
            _label_key(ctx, k, f"{cpath}.matchLabelKeys[{j}]")
        for key in ("nodeAffinityPolicy", "nodeTaintsPolicy"):
            if c.get(key) is not None:
                ctx.enum(c.get(key), f"{cpath}.{key}", ("Honor", "Ignore"))
        out.append(c)
    return out


def _validate_owner_references(ctx: ObjectContext, value, path: str) -> None:
    """metadata.ownerReferences: structure only (PodTopologySpread's default
    selector follows the controller, see ``workloads.controller_of``)."""
    for i, ref in enumerate(ctx.list(value, path)):
        rpath = f"{path}[{i}]"
        ref = ctx.mapping(ref, rpath)
        for key in ("apiVersion", "kind", "name", "uid"):
            ctx.string(ref.get(key), f"{rpath}.{key}")
        for key in ("controller", "blockOwnerDeletion"):
            ctx.boolean(ref.get(key), f"{rpath}.{key}")


def _parse_tolerations(ctx: ObjectContext, value, path: str) -> list[Toleration]:
    out = []
    for i, t in enumerate(ctx.list(value, path)):
        tpath = f"{path}[{i}]"
        t = ctx.mapping(t, tpath)
        key = ctx.string(t.get("key"), f"{tpath}.key")
        if key:
            _label_key(ctx, key, f"{tpath}.key")
        operator = ctx.enum(t.get("operator"), f"{tpath}.operator", TOLERATION_OPERATORS) or "Equal"
        val = ctx.string(t.get("value"), f"{tpath}.value")
        if operator == "Equal":
            _label_value(ctx, val, f"{tpath}.value")
        effect = ctx.enum(t.get("effect"), f"{tpath}.effect", ("",) + TAINT_EFFECTS)
        if operator == "Exists" and val:
            ctx.fail(f"{tpath}.value", f"must be empty when operator is Exists, got {val!r}")
        if not key and operator != "Exists":
            ctx.fail(f"{tpath}.operator", "must be Exists when key is empty (that tolerates every taint)")
        if t.get("tolerationSeconds") is not None:
            ctx.integer(t.get("tolerationSeconds"), f"{tpath}.tolerationSeconds",
                        INT64_MIN, INT64_MAX)
            if effect != "NoExecute":
                ctx.fail(f"{tpath}.effect", "must be NoExecute when tolerationSeconds is set")
        out.append(Toleration(key=key, operator=operator, value=val, effect=effect))
    return out


def _pod_metadata(ctx: ObjectContext, meta: dict) -> dict:
    """PodRecord kwargs from metadata: labels, uid, creation_ns (ns, 0 if unset), deleting."""
    labels = ctx.str_map(meta.get("labels"), "metadata.labels")
    uid = ctx.string(meta.get("uid"), "metadata.uid")
    creation = ctx.timestamp(meta.get("creationTimestamp"), "metadata.creationTimestamp")
    deletion = ctx.timestamp(meta.get("deletionTimestamp"), "metadata.deletionTimestamp")
    _validate_owner_references(ctx, meta.get("ownerReferences"), "metadata.ownerReferences")
    return dict(labels=labels, uid=uid, creation_ns=creation or 0, deleting=deletion is not None)


def _pod_queueing(ctx: ObjectContext, spec: dict) -> dict:
    """PodRecord kwargs node_name, scheduler_name, priority(_class_name), preemption_policy."""
    node_name = ctx.string(spec.get("nodeName"), "spec.nodeName")
    scheduler_name = ctx.string(spec.get("schedulerName"), "spec.schedulerName")
    priority = spec.get("priority")
    if priority is not None:
        priority = ctx.integer(priority, "spec.priority", INT32_MIN, INT32_MAX)
    priority_class_name = ctx.string(spec.get("priorityClassName"), "spec.priorityClassName")
    preemption_policy = ctx.enum(unset_if_empty(spec.get("preemptionPolicy")),
                                 "spec.preemptionPolicy", PREEMPTION_POLICIES,
                                 "PreemptLowerPriority")
    return dict(node_name=node_name, scheduler_name=scheduler_name or "default-scheduler",
                priority=priority, priority_class_name=priority_class_name,
                preemption_policy=preemption_policy)


def _pod_resources(ctx: ObjectContext, spec: dict, volumes: set[str]) -> dict:
    """PodRecord kwargs from containers + overhead; requests and nonzero_* in
    canonical units; ``volumes`` the names of the pod's volumes."""
    host_network = ctx.boolean(spec.get("hostNetwork"), "spec.hostNetwork")
    images: list[str] = []
    init_images: list[str] = []
    host_ports: list[HostPort] = []
    names: dict[str, str] = {}
    # Host ports may not repeat across the regular containers, nor within
    # one init container (pod_names.check_host_port).
    held_ports: dict = {}
    containers = [
        _parse_container(ctx, c, f"spec.containers[{i}]", False, host_network, images,
                         host_ports, held_ports, names, volumes)
        for i, c in enumerate(ctx.list(spec.get("containers"), "spec.containers"))
    ]
    init_containers = [
        _parse_container(ctx, c, f"spec.initContainers[{i}]", True, host_network, init_images,
                         host_ports, {}, names, volumes)
        for i, c in enumerate(ctx.list(spec.get("initContainers"), "spec.initContainers"))
    ]
    overhead = ctx.quantity_map(spec.get("overhead"), "spec.overhead")
    overhead.pop("pods", None)

    requests_q, nonzero_cpu_q, nonzero_mem_q = _pod_requests(containers, init_containers, overhead)
    total_path = "spec.containers[*].resources.requests"
    requests = canonical(ctx, requests_q, total_path)
    nonzero = canonical(ctx, {"cpu": nonzero_cpu_q, "memory": nonzero_mem_q}, total_path)
    return dict(requests=requests, nonzero_cpu=nonzero["cpu"], nonzero_memory=nonzero["memory"],
                host_ports=host_ports, images=images + init_images,
                has_restartable_init=any(c.restartable for c in init_containers))


def _pod_constraints(ctx: ObjectContext, spec: dict) -> dict:
    """PodRecord kwargs restricting nodes: tolerations, selector, affinities, spread, gates."""
    tolerations = _parse_tolerations(ctx, spec.get("tolerations"), "spec.tolerations")
    node_selector = ctx.str_map(spec.get("nodeSelector"), "spec.nodeSelector")
    check_labels(ctx, node_selector, "spec.nodeSelector")
    affinity = ctx.mapping(spec.get("affinity"), "spec.affinity")
    node_affinity = _validate_node_affinity(ctx, affinity.get("nodeAffinity"),
                                            "spec.affinity.nodeAffinity")
    pod_affinity = _validate_pod_affinity(ctx, affinity.get("podAffinity"),
                                          "spec.affinity.podAffinity")
    pod_anti_affinity = _validate_pod_affinity(ctx, affinity.get("podAntiAffinity"),
                                               "spec.affinity.podAntiAffinity")
    topology_spread = _validate_spread(ctx, spec.get("topologySpreadConstraints"),
                                       "spec.topologySpreadConstraints")
    claims = parse_pod_claims(ctx, spec)
    gates = []
    for i, g in enumerate(ctx.list(spec.get("schedulingGates"), "spec.schedulingGates")):
        g = ctx.mapping(g, f"spec.schedulingGates[{i}]")
        name = ctx.string(g.get("name"), f"spec.schedulingGates[{i}].name", required=True)
        _label_key(ctx, name, f"spec.schedulingGates[{i}].name")    # a qualified name
        if name in gates:
            ctx.fail(f"spec.schedulingGates[{i}].name", f"Duplicate value: {name!r}")
        gates.append(name)
    return dict(tolerations=tolerations, node_selector=node_selector, node_affinity=node_affinity,
                pod_affinity=pod_affinity, pod_anti_affinity=pod_anti_affinity,
                topology_spread=topology_spread, scheduling_gates=gates,
                resource_claims=claims)


def parse_pod(obj: dict, *, where: str | None = None) -> PodRecord:
    """A Pod object -> :class:`PodRecord` (validated).

    Effective requests follow kube-scheduler (component-helpers ``PodRequests``
    with sidecar containers, see :func:`_pod_requests`), after the API server's
    defaulting: a container's ``resources.requests[r]`` is ``limits[r]`` when
    it limits ``r`` without requesting it (``kubectl get`` output already has
    this, hand-written manifests often do not), and every quantity is rounded
    up to a milli-unit.  ``requests`` has a key for every resource named by
    any container or the overhead (even at 0) but never ``pods``.

    Not modelled: pod-level ``spec.resources`` (the PodLevelResources
    feature, which replaces the container sum for cpu/memory/hugepages when
    set), in-place resize status, DRA claims.  ``spec.resources`` is ignored.
    """
    ctx, meta, namespace, name = identity(obj, "Pod", True, where)
    refuse_unknown_fields(ctx, obj, "Pod")      # strict decoding first, as the API server
    # The helpers run in field order so the first bad field is the one reported.
    metadata = _pod_metadata(ctx, meta)
    spec = ctx.mapping(obj.get("spec"), "spec")
    status = ctx.mapping(obj.get("status"), "status")
    queueing = _pod_queueing(ctx, spec)
    # volumes before containers (PodSpec's field order): mounts name them
    vols = parse_pod_volumes(ctx, name, spec.get("volumes"))
    resources = _pod_resources(ctx, spec, {v.name for v in vols})
    constraints = _pod_constraints(ctx, spec)
    phase = ctx.string(status.get("phase"), "status.phase")
    start = ctx.timestamp(status.get("startTime"), "status.startTime")
    record = PodRecord(namespace=namespace, name=name, phase=phase, start_ns=start,
                       **metadata, **queueing, **resources, **constraints, obj=obj)
    # the plugins read them during scheduling: parsed here once, not again
    remember_pod_volumes(record, vols)
    return record


# --------------------------------------------------------------------------
# PriorityClass, PodDisruptionBudget


#: The PriorityClasses the API server keeps for itself (name -> value), and
#: the highest value any other may have.
SYSTEM_PRIORITY_CLASSES = {"system-node-critical": 2_000_001_000,
                           "system-cluster-critical": 2_000_000_000}
HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000


def _check_priority_value(ctx: ObjectContext, name: str, value: int, default: bool) -> None:
    """``ValidatePriorityClass``: a ``system-`` name is one of the system
    classes, with its value and not the global default; any other class's
    value is at most ``HIGHEST_USER_DEFINABLE_PRIORITY``."""
    if name.startswith("system-"):
        want = SYSTEM_PRIORITY_CLASSES.get(name)
        if want is None or want != value or default:
            why = (f"{name!r} is not a known system priority class" if want is None else
                   f"{name!r} must have value {want} and not be the global default")
            ctx.fail("metadata.name", "Forbidden: priority class names with 'system-' prefix "
                     f"are reserved for system use only: {why}")
    elif value > HIGHEST_USER_DEFINABLE_PRIORITY:
        ctx.fail("value", "Forbidden: maximum allowed value of a user defined priority is "
                 f"{HIGHEST_USER_DEFINABLE_PRIORITY}, got {value}")


def parse_priority_class(obj: dict, *, where: str | None = None) -> PriorityClassRecord:
    """A scheduling.k8s.io PriorityClass -> :class:`PriorityClassRecord`."""
    ctx, _, _, name = identity(obj, "PriorityClass", False, where)
    if obj.get("value") is None:
        ctx.fail("value", "required (an integer)")
    value = ctx.integer(obj.get("value"), "value", INT32_MIN, INT32_MAX)
    global_default = ctx.boolean(obj.get("globalDefault"), "globalDefault")
    _check_priority_value(ctx, name, value, global_default)
    policy = ctx.enum(unset_if_empty(obj.get("preemptionPolicy")), "preemptionPolicy",
                      PREEMPTION_POLICIES, "PreemptLowerPriority")
    return PriorityClassRecord(name=name, value=value, global_default=global_default,
                               preemption_policy=policy, obj=obj)


_PERCENT = re.compile(r"[0-9]+%")


def _int_or_percent(ctx: ObjectContext, value, path: str) -> int | str | None:
    """A PDB's minAvailable / maxUnavailable (an IntOrString) as the API
    server takes it: an int32 >= 0, or a percentage of at most 100%."""
    if value is None:
        return None
    if isinstance(value, str):
        if not _PERCENT.fullmatch(value):
            ctx.fail(path, f"must be an integer or a percentage like '50%', got {value!r}")
        if int(value[:-1]) > 100:
            ctx.fail(path, f"Invalid value: {value!r}: must not be greater than 100%")
        return value
    return _int32(ctx, value, path, 0)


def parse_pdb(obj: dict, *, where: str | None = None) -> PodDisruptionBudgetRecord:
    """A policy/v1 PodDisruptionBudget -> :class:`PodDisruptionBudgetRecord`."""
    ctx, _, namespace, name = identity(obj, "PodDisruptionBudget", True, where)
    spec = ctx.mapping(obj.get("spec"), "spec")
    status = ctx.mapping(obj.get("status"), "status")
    selector = validate_label_selector(ctx, spec.get("selector"), "spec.selector")
    min_available = _int_or_percent(ctx, spec.get("minAvailable"), "spec.minAvailable")
    max_unavailable = _int_or_percent(ctx, spec.get("maxUnavailable"), "spec.maxUnavailable")
    if min_available is not None and max_unavailable is not None:
        ctx.fail("spec.maxUnavailable", "minAvailable and maxUnavailable cannot both be set")
    allowed = status.get("disruptionsAllowed")
    if allowed is not None:
        allowed = _int32(ctx, allowed, "status.disruptionsAllowed", 0)
    disrupted = ctx.mapping(status.get("disruptedPods"), "status.disruptedPods")
    for pod_name, when in disrupted.items():
        if not isinstance(pod_name, str):
            ctx.fail("status.disruptedPods", f"keys must be pod names, got {pod_name!r}")
        ctx.timestamp(when, join_path("status.disruptedPods", pod_name))
    return PodDisruptionBudgetRecord(
        namespace=namespace,
        name=name,
        selector=selector,
        min_available=min_available,
        max_unavailable=max_unavailable,
        disruptions_allowed=allowed,
        disrupted_pods=tuple(disrupted),
        obj=obj,
    )


# --------------------------------------------------------------------------
# whole sets


@dataclass
class Objects:
    """The records of a set of objects; other kinds are counted, not kept
    (``ignored_kinds``; :func:`ignored_kinds_warning` words them)."""

    nodes: list[NodeRecord] = field(default_factory=list)
    pods: list[PodRecord] = field(default_factory=list)
    priority_classes: list[PriorityClassRecord] = field(default_factory=list)
    pdbs: list[PodDisruptionBudgetRecord] = field(default_factory=list)
    pod_groups: list[PodGroup] = field(default_factory=list)        # Coscheduling
    # PodTopologySpread's default selector (``objects.workloads``)
    services: list[ServiceRecord] = field(default_factory=list)
    replication_controllers: list[ControllerRecord] = field(default_factory=list)
    replica_sets: list[ControllerRecord] = field(default_factory=list)
    stateful_sets: list[ControllerRecord] = field(default_factory=list)
    # Records of the kinds a caller adds (``parse_objects(kinds=...)``,
    # e.g. NodeResourceTopology from the GPU plugin set), by kind.
    extra: dict[str, list] = field(default_factory=dict)
    ignored_kinds: dict[str, int] = field(default_factory=dict)
    # Namespaces (InterPodAffinity's namespaceSelector reads their labels).
    namespaces: list[NamespaceRecord] = field(default_factory=list)
    # ignored kind -> a kind that is read and spelled closely ("Nodes" -> "Node")
    ignored_suggestions: dict[str, str] = field(default_factory=dict)
    # (kind, apiVersion, the apiVersion read) -> objects of a read kind in
    # another version (resource.k8s.io/v1beta1), also in ``ignored_kinds``
    ignored_versions: dict[tuple[str, str, str], int] = field(default_factory=dict)
    # Storage (``objects.volumes``): what the four volume plugins read.
    persistent_volumes: list = field(default_factory=list)
    persistent_volume_claims: list = field(default_factory=list)
    storage_classes: list = field(default_factory=list)
    csi_nodes: list = field(default_factory=list)
    csi_drivers: list = field(default_factory=list)
    csi_storage_capacities: list = field(default_factory=list)
    volume_attachments: list = field(default_factory=list)
    # Dynamic Resource Allocation (resource.k8s.io/v1), in input order
    device_classes: list[DeviceClassRecord] = field(default_factory=list)
    resource_slices: list[ResourceSliceRecord] = field(default_factory=list)
    resource_claims: list[ResourceClaimRecord] = field(default_factory=list)
    resource_claim_templates: list[ResourceClaimTemplateRecord] = field(default_factory=list)
    # stored objects read without fields the API does not have (new ones are
    # refused): (label "Kind ns/name", source or None, the fields' paths), in
    # input order (``strict_fields``; the warnings' lines)
    unknown_fields: list[tuple[str, str | None, list[str]]] = field(default_factory=list)

    def ignored(self) -> list[tuple[str, int, str | None]]:
        """(kind, objects, a read kind it may be a typo of) of every ignored
        kind, by kind."""
        return [(k, n, self.ignored_suggestions.get(k))
                for k, n in sorted(self.ignored_kinds.items())]

    def namespace_labels(self) -> dict[str, dict[str, str]]:
        """Namespace name -> its labels (``kubernetes.io/metadata.name`` included)."""
        return {ns.name: dict(ns.labels) for ns in self.namespaces}


def ignored_kinds_warning(objects: Objects) -> str | None:
    """One line naming every kind that was read but ignored, with counts
    (and "did you mean" for near misses of a kind that is read), and one
    naming the apiVersion of objects of a read kind in a version that is
    not (``DeviceClass resource.k8s.io/v1beta1 (1): only resource.k8s.io/v1
    is read``); None when nothing was ignored.  For the CLI to print on
    stderr."""
    by_version: dict[str, int] = {}
    for (kind, _api, _reads), n in objects.ignored_versions.items():
        by_version[kind] = by_version.get(kind, 0) + n
    ignored = [(k, n - by_version.get(k, 0), hint) for k, n, hint in objects.ignored()
               if n > by_version.get(k, 0)]
    lines = []
    if ignored:
        total = sum(n for _, n, _ in ignored)
        parts = [f"{k} ({n}" + (f", did you mean {hint}?" if hint else "") + ")"
                 for k, n, hint in ignored]
        noun = "object" if total == 1 else "objects"
        lines.append(f"warning: ignored {total} {noun} of kinds tensorsched does not read: "
                     + ", ".join(parts))
    if objects.ignored_versions:
        total = sum(objects.ignored_versions.values())
        parts = [f"{kind} {api} ({n}): only {reads} is read"
                 for (kind, api, reads), n in sorted(objects.ignored_versions.items())]
        noun = "object" if total == 1 else "objects"
        lines.append(f"warning: ignored {total} {noun} of an apiVersion tensorsched does not "
                     "read: " + "; ".join(parts))
    lines += unknown_field_lines(objects)       # stored objects' fields not modelled
    return "\n".join(lines) or None


def unknown_field_lines(objects: Objects) -> list[str]:
    """One warning line per stored object of ``objects`` read without
    fields the API (Kubernetes 1.35's) does not have
    (``Objects.unknown_fields``); new objects with such fields were refused."""
    return [warning_line(label, source, paths)
            for label, source, paths in objects.unknown_fields]


def parse_namespace(obj: dict, *, where: str | None = None) -> NamespaceRecord:
    """A v1 Namespace -> :class:`NamespaceRecord` (``metadata.labels``, with
    ``kubernetes.io/metadata.name: <name>`` set as the API server sets it)."""
    ctx, meta, _, name = identity(obj, "Namespace", False, where)    # labels checked there
    labels = ctx.str_map(meta.get("labels"), "metadata.labels")
    labels = {**labels, NS_NAME_LABEL: name}     # SetDefaults_Namespace overwrites it
    return NamespaceRecord(name=name, labels=labels, obj=obj)


#: The kinds every cluster reads, with the ``Objects`` field each fills; all
#: decoded strictly (``strict_fields``: nodes and pods in ``parse_node`` and
#: ``parse_pod``, which a simulation's events read too, and, for repeats of
#: a pod template, ``pod_templates``; DRA's by their loaders).
OBJECT_KINDS = (
    (ObjectKind("Node", parse_node, lambda r: r.name, "Node {}"), "nodes"),
    (ObjectKind("Pod", parse_pod, lambda r: r.key, "Pod {}"), "pods"),
    (ObjectKind("PriorityClass", parse_priority_class, lambda r: r.name, "PriorityClass {}"),
     "priority_classes"),
    (ObjectKind("PodDisruptionBudget", parse_pdb, lambda r: f"{r.namespace}/{r.name}",
                "PodDisruptionBudget {}"), "pdbs"),
    (ObjectKind("PodGroup", parse_pod_group, lambda r: r.full_name, "PodGroup {}",
                accepts=is_coscheduling_pod_group), "pod_groups"),
    (ObjectKind("Namespace", parse_namespace, lambda r: r.name, "Namespace {}"), "namespaces"),
    *WORKLOAD_KINDS,
    *VOLUME_KINDS,
)
OBJECT_KINDS = tuple((k if k.kind in ("Node", "Pod") else strict_kind(k), bucket)
                     for k, bucket in OBJECT_KINDS) + tuple(DRA_KINDS)


def _near_kind(kind: str, known) -> str | None:
    close = difflib.get_close_matches(kind, list(known), n=1, cutoff=0.8)
    return close[0] if close else None


def parse_objects(objs: Iterable[dict], *, source: str | None = None,
                  kinds: Iterable[ObjectKind] = ()) -> Objects:
    """Parse every object; all or nothing.

    The kinds of ``OBJECT_KINDS`` (Nodes, Pods, PriorityClasses,
    PodDisruptionBudgets, PodGroups of scheduling.x-k8s.io, Namespaces and
    the workloads: Services, ReplicationControllers, ReplicaSets,
    StatefulSets, and DRA's DeviceClasses, ResourceSlices, ResourceClaims and
    ResourceClaimTemplates of resource.k8s.io/v1) and the extra ``kinds`` (into ``Objects.extra``) become
    records; any other kind (Deployment, ConfigMap, ...) is counted in
    ``ignored_kinds``, except a read kind spelled in another case
    (``kind: pod``), which is an error ("did you mean Pod?").  ``List``
    objects are expanded.  The first malformed object, or a second object
    with the name of an earlier one (same kind; namespace/name for
    namespaced kinds), raises :class:`ManifestError`; nothing is returned then.

    Errors name where the object was read: its ``<file>#<doc>`` for objects
    of ``load_objects``, else ``<source>#<index>`` when ``source`` is given
    (objects without a name are ``objects#<index>`` otherwise).

    Objects are decoded strictly, as ``kubectl apply`` (``--validate=strict``)
    has the API server decode them: a new object (no
    ``metadata.resourceVersion``) with a field the API (Kubernetes 1.35's)
    does not have is refused (``strict decoding error: unknown field
    "spec.tolerations[0].efect"``); a stored object (a dump) is read without
    it, listed in ``Objects.unknown_fields``, and one
    :class:`~.strict_fields.UnknownFieldWarning` per call names them all.
    """
    out = Objects()
    table: dict[str, tuple[ObjectKind, list]] = {
        k.kind: (k, getattr(out, bucket)) for k, bucket in OBJECT_KINDS}
    for k in kinds:
        if k.kind in table:
            raise ValueError(f"kind {k.kind!r} is already read by parse_objects")
        table[k.kind] = (k, out.extra.setdefault(k.kind, []))
    by_lower = {k.lower(): k for k in table}
    seen: dict[str, dict[str, str | None]] = {kind: {} for kind in table}
    # Pods of one template (a ReplicaSet's...) are parsed once (pod_templates).
    pod_kind = table["Pod"][0]
    pods = PodTemplates(parse_pod) if pod_kind.parse is parse_pod else None
    with collect_unknown():     # the stored objects' unknown fields, this call's only
        for index, raw in enumerate(objs):
            origin = source_of(raw) or (f"{source}#{index}" if source else None)
            for obj, where in _flatten(raw, origin or f"objects#{index}"):
                obj_source = source_of(obj) or (where if origin else None)
                kind = obj["kind"]
                entry = table.get(kind)
                if entry is None and kind.lower() in by_lower:
                    right = by_lower[kind.lower()]
                    raise ManifestError(_object_label(obj) or where, "kind",
                                        f"unknown kind {kind!r} (did you mean {right}? "
                                        "kinds are case-sensitive)", obj_source)
                if entry is None or (entry[0].accepts is not None and not entry[0].accepts(obj)):
                    out.ignored_kinds[kind] = out.ignored_kinds.get(kind, 0) + 1
                    if entry is not None and entry[0].reads:
                        v = (kind, str(obj.get("apiVersion")), entry[0].reads)
                        out.ignored_versions[v] = out.ignored_versions.get(v, 0) + 1
                    hint = _near_kind(kind, table) if entry is None else None
                    if hint:
                        out.ignored_suggestions[kind] = hint
                    continue
                spec, bucket = entry
                try:
                    if spec is pod_kind and pods is not None:
                        record = pods.parse(obj, where=where)
                    else:
                        record = spec.parse(obj, where=where)
                except ManifestError as exc:
                    raise exc.with_source(obj_source) from None
                except RecursionError:
                    raise ManifestError(where, "", f"nested too deeply (more than {MAX_DEPTH} "
                                        "levels)") from None
                key = spec.key(record)
                if key in seen[kind]:
                    first = seen[kind][key]
                    also = f" ({first})" if first else ""
                    raise ManifestError(spec.label.format(key), "metadata.name",
                                        f"duplicate {kind} (another object already has this "
                                        f"name{also})", obj_source)
                seen[kind][key] = obj_source
                bucket.append(record)
                unknown = take_remembered(obj)
                if unknown:
                    out.unknown_fields.append((spec.label.format(key), obj_source, unknown))
    if out.unknown_fields:
        warnings.warn(UnknownFieldWarning("\n".join(unknown_field_lines(out)),
                                          tuple(out.unknown_fields)), stacklevel=2)
    return out
