"""Storage objects as kube-scheduler's volume plugins read them.

PersistentVolume, PersistentVolumeClaim, StorageClass (storage.k8s.io),
CSINode, CSIDriver, CSIStorageCapacity and VolumeAttachment become records;
a pod's ``spec.volumes`` become :class:`PodVolume` entries
(:func:`pod_volumes`).  Storage sizes are bytes (``Quantity.Value()``).

Only the fields the four volume plugins (VolumeBinding, VolumeZone,
NodeVolumeLimits, VolumeRestrictions) read are kept; the rest of each
object is left as written (``obj``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tensorsched.framework.errors import ManifestError

from .meta import ObjectContext, ObjectKind, identity, validate_label_selector
from .pod_names import check_volume_name
from .quantity import int_value, parse_quantity
from tensorsched.framework.records.records import MemoKey

ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
ANN_BETA_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"
ANN_MIGRATED_PLUGINS = "storage.alpha.kubernetes.io/migrated-plugins"
NO_PROVISIONER = "kubernetes.io/no-provisioner"
INT32_MAX = (1 << 31) - 1

ACCESS_MODES = ("ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod")
VOLUME_MODES = ("Filesystem", "Block")
BINDING_MODES = ("Immediate", "WaitForFirstConsumer")
CLAIM_PHASES = ("Pending", "Bound", "Lost")
VOLUME_PHASES = ("Pending", "Available", "Bound", "Released", "Failed")

# In-tree volume sources whose CSI migration is GA: the plugin name, its CSI
# driver, and the field of the source that becomes the CSI volume handle.
MIGRATABLE = {
    "awsElasticBlockStore": ("kubernetes.io/aws-ebs", "ebs.csi.aws.com", "volumeID"),
    "gcePersistentDisk": ("kubernetes.io/gce-pd", "pd.csi.storage.gke.io", "pdName"),
    "azureDisk": ("kubernetes.io/azure-disk", "disk.csi.azure.com", "diskURI"),
    "cinder": ("kubernetes.io/cinder", "cinder.csi.openstack.org", "volumeID"),
}
IN_TREE_TO_CSI = {plugin: driver for plugin, driver, _ in MIGRATABLE.values()}
# Volume source kinds a PV or a pod volume may name (the first key found wins).
SOURCE_KINDS = ("csi", *MIGRATABLE, "rbd", "iscsi", "hostPath", "local", "nfs")


def _bytes(ctx: ObjectContext, value, path: str) -> int:
    try:
        q = parse_quantity(value)
    except (ValueError, TypeError, ArithmeticError) as exc:
        raise ManifestError(ctx.ident, path, f"invalid quantity {value!r}: {exc}",
                            ctx.source) from None
    if q < 0:
        ctx.fail(path, f"must not be negative, got {value!r}")
    return int_value(q)


def _access_modes(ctx: ObjectContext, value, path: str) -> tuple[str, ...]:
    modes = ctx.str_list(value, path)
    for i, m in enumerate(modes):
        if m not in ACCESS_MODES:
            ctx.fail(f"{path}[{i}]", f"unsupported value {m!r} (one of {', '.join(ACCESS_MODES)})")
    return tuple(modes)


def _node_selector_terms(ctx: ObjectContext, value, path: str) -> list[dict]:
    """NodeSelectorTerms, checked for shape (the selector compiler reads them)."""
    terms = ctx.list(value, path)
    for i, t in enumerate(terms):
        t = ctx.mapping(t, f"{path}[{i}]")
        for part in ("matchExpressions", "matchFields"):
            for j, e in enumerate(ctx.list(t.get(part), f"{path}[{i}].{part}")):
                epath = f"{path}[{i}].{part}[{j}]"
                e = ctx.mapping(e, epath)
                ctx.string(e.get("key"), f"{epath}.key", required=True)
                ctx.string(e.get("operator"), f"{epath}.operator", required=True)
                ctx.str_list(e.get("values"), f"{epath}.values")
    return terms


def _source(ctx: ObjectContext, spec: dict, path: str) -> tuple[str, dict]:
    """(kind, body) of the first volume source in ``spec`` ("" when none
    the plugins read)."""
    for kind in SOURCE_KINDS:
        if spec.get(kind) is not None:
            return kind, ctx.mapping(spec[kind], f"{path}.{kind}")
    return "", {}


# --------------------------------------------------------------------------
# PersistentVolume


@dataclass
class PersistentVolumeRecord:
    name: str
    labels: dict[str, str]
    capacity: int                     # spec.capacity.storage, bytes (0 absent)
    access_modes: tuple[str, ...]
    volume_mode: str                  # Filesystem (default) | Block
    storage_class: str                # "" = no class
    claim_ref: tuple | None           # (namespace, name, uid) of spec.claimRef
    node_affinity: list | None        # spec.nodeAffinity.required.nodeSelectorTerms
    phase: str
    deleting: bool
    source_kind: str                  # csi, awsElasticBlockStore, hostPath, ... ("" other)
    source: dict = field(repr=False, default_factory=dict)
    obj: dict = field(repr=False, default_factory=dict)

    def csi_id(self, migrated: bool) -> tuple[str, str] | None:
        """(driver, volume handle) the volume counts as against CSI attach
        limits: a CSI source, or a migratable in-tree one when ``migrated``."""
        if self.source_kind == "csi":
            return self.source.get("driver", ""), self.source.get("volumeHandle", "")
        got = MIGRATABLE.get(self.source_kind)
        if got is not None and migrated:
            return got[1], str(self.source.get(got[2], ""))
        return None


def parse_persistent_volume(obj: dict, *, where: str | None = None) -> PersistentVolumeRecord:
    ctx, meta, _, name = identity(obj, "PersistentVolume", False, where)
    labels = ctx.str_map(meta.get("labels"), "metadata.labels")
    spec = ctx.mapping(obj.get("spec"), "spec")
    status = ctx.mapping(obj.get("status"), "status")
    cap = ctx.mapping(spec.get("capacity"), "spec.capacity")
    capacity = _bytes(ctx, cap["storage"], "spec.capacity.storage") if "storage" in cap else 0
    modes = _access_modes(ctx, spec.get("accessModes"), "spec.accessModes")
    mode = ctx.enum(spec.get("volumeMode"), "spec.volumeMode", VOLUME_MODES, "Filesystem")
    cls = ctx.string(spec.get("storageClassName"), "spec.storageClassName")
    ref = spec.get("claimRef")
    claim_ref = None
    if ref is not None:
        ref = ctx.mapping(ref, "spec.claimRef")
        claim_ref = (ctx.string(ref.get("namespace"), "spec.claimRef.namespace") or "default",
                     ctx.string(ref.get("name"), "spec.claimRef.name"),
                     ctx.string(ref.get("uid"), "spec.claimRef.uid"))
    na = ctx.mapping(spec.get("nodeAffinity"), "spec.nodeAffinity")
    terms = None
    if na.get("required") is not None:
        req = ctx.mapping(na["required"], "spec.nodeAffinity.required")
        terms = _node_selector_terms(ctx, req.get("nodeSelectorTerms"),
                                     "spec.nodeAffinity.required.nodeSelectorTerms")
    phase = ctx.string(status.get("phase"), "status.phase")
    kind, body = _source(ctx, spec, "spec")
    return PersistentVolumeRecord(
        name=name, labels=labels, capacity=capacity, access_modes=modes, volume_mode=mode,
        storage_class=cls, claim_ref=claim_ref, node_affinity=terms, phase=phase,
        deleting=meta.get("deletionTimestamp") is not None, source_kind=kind, source=body,
        obj=obj)


# --------------------------------------------------------------------------
# PersistentVolumeClaim


@dataclass
class PersistentVolumeClaimRecord:
    namespace: str
    name: str
    uid: str
    volume_name: str                  # spec.volumeName ("" unbound)
    storage_class: str                # beta annotation, else spec.storageClassName ("" none)
    has_class: bool                   # a class name was written (even "")
    access_modes: tuple[str, ...]
    volume_mode: str
    request: int                      # spec.resources.requests.storage, bytes (0 absent)
    selector: dict | None
    phase: str
    annotations: dict[str, str]
    controller_uid: str               # uid of the controlling ownerReference ("" none)
    obj: dict = field(repr=False, default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def bind_completed(self) -> bool:
        return ANN_BIND_COMPLETED in self.annotations


def parse_persistent_volume_claim(obj: dict, *, where: str | None = None
                                  ) -> PersistentVolumeClaimRecord:
    ctx, meta, namespace, name = identity(obj, "PersistentVolumeClaim", True, where)
    annotations = ctx.str_map(meta.get("annotations"), "metadata.annotations")
    uid = ctx.string(meta.get("uid"), "metadata.uid")
    controller = ""
    for i, ref in enumerate(ctx.list(meta.get("ownerReferences"), "metadata.ownerReferences")):
        ref = ctx.mapping(ref, f"metadata.ownerReferences[{i}]")
        if ctx.boolean(ref.get("controller"), f"metadata.ownerReferences[{i}].controller"):
            controller = ctx.string(ref.get("uid"), f"metadata.ownerReferences[{i}].uid")
    spec = ctx.mapping(obj.get("spec"), "spec")
    status = ctx.mapping(obj.get("status"), "status")
    raw_cls = spec.get("storageClassName")
    cls = ctx.string(raw_cls, "spec.storageClassName")
    has_class = raw_cls is not None
    if ANN_BETA_STORAGE_CLASS in annotations:
        cls, has_class = annotations[ANN_BETA_STORAGE_CLASS], True
    res = ctx.mapping(spec.get("resources"), "spec.resources")
    reqs = ctx.mapping(res.get("requests"), "spec.resources.requests")
    request = (_bytes(ctx, reqs["storage"], "spec.resources.requests.storage")
               if "storage" in reqs else 0)
    return PersistentVolumeClaimRecord(
        namespace=namespace, name=name, uid=uid,
        volume_name=ctx.string(spec.get("volumeName"), "spec.volumeName"),
        storage_class=cls, has_class=has_class,
        access_modes=_access_modes(ctx, spec.get("accessModes"), "spec.accessModes"),
        volume_mode=ctx.enum(spec.get("volumeMode"), "spec.volumeMode", VOLUME_MODES,
                             "Filesystem"),
        request=request,
        selector=validate_label_selector(ctx, spec.get("selector"), "spec.selector"),
        phase=ctx.string(status.get("phase"), "status.phase"),
        annotations=annotations, controller_uid=controller, obj=obj)


# --------------------------------------------------------------------------
# StorageClass, CSINode, CSIDriver, CSIStorageCapacity, VolumeAttachment


@dataclass
class StorageClassRecord:
    name: str
    provisioner: str
    binding_mode: str                 # Immediate | WaitForFirstConsumer | "" (unset)
    allowed_topologies: list          # [[(key, (values...)), ...] per term]
    obj: dict = field(repr=False, default_factory=dict)

    @property
    def provisionable(self) -> bool:
        return self.provisioner not in ("", NO_PROVISIONER)


def parse_storage_class(obj: dict, *, where: str | None = None) -> StorageClassRecord:
    ctx, _, _, name = identity(obj, "StorageClass", False, where)
    mode = ctx.enum(obj.get("volumeBindingMode"), "volumeBindingMode", ("", *BINDING_MODES))
    terms = []
    for i, t in enumerate(ctx.list(obj.get("allowedTopologies"), "allowedTopologies")):
        t = ctx.mapping(t, f"allowedTopologies[{i}]")
        reqs = []
        for j, e in enumerate(ctx.list(t.get("matchLabelExpressions"),
                                       f"allowedTopologies[{i}].matchLabelExpressions")):
            p = f"allowedTopologies[{i}].matchLabelExpressions[{j}]"
            e = ctx.mapping(e, p)
            reqs.append((ctx.string(e.get("key"), f"{p}.key", required=True),
                         tuple(ctx.str_list(e.get("values"), f"{p}.values"))))
        terms.append(reqs)
    return StorageClassRecord(name=name, provisioner=ctx.string(obj.get("provisioner"),
                                                                "provisioner"),
                              binding_mode=mode, allowed_topologies=terms, obj=obj)


@dataclass
class CSINodeRecord:
    name: str                         # the node's name
    limits: dict[str, int | None]     # driver -> allocatable.count (None: no limit)
    migrated: frozenset               # in-tree plugin names migrated on this node
    obj: dict = field(repr=False, default_factory=dict)


def parse_csi_node(obj: dict, *, where: str | None = None) -> CSINodeRecord:
    ctx, meta, _, name = identity(obj, "CSINode", False, where)
    ann = ctx.str_map(meta.get("annotations"), "metadata.annotations")
    migrated = frozenset(p.strip() for p in ann.get(ANN_MIGRATED_PLUGINS, "").split(",")
                         if p.strip())
    spec = ctx.mapping(obj.get("spec"), "spec")
    limits: dict[str, int | None] = {}
    for i, d in enumerate(ctx.list(spec.get("drivers"), "spec.drivers")):
        p = f"spec.drivers[{i}]"
        d = ctx.mapping(d, p)
        driver = ctx.string(d.get("name"), f"{p}.name", required=True)
        alloc = ctx.mapping(d.get("allocatable"), f"{p}.allocatable")
        count = alloc.get("count")
        if count is not None:
            count = ctx.integer(count, f"{p}.allocatable.count", lo=0)
            if count > INT32_MAX:       # an int32 in the API: a larger one does not decode
                ctx.fail(f"{p}.allocatable.count",
                         f"must be <= {INT32_MAX} (an int32), got {count}")
        limits[driver] = count
    return CSINodeRecord(name=name, limits=limits, migrated=migrated, obj=obj)


@dataclass
class CSIDriverRecord:
    name: str
    storage_capacity: bool            # spec.storageCapacity
    obj: dict = field(repr=False, default_factory=dict)


def parse_csi_driver(obj: dict, *, where: str | None = None) -> CSIDriverRecord:
    ctx, _, _, name = identity(obj, "CSIDriver", False, where)
    spec = ctx.mapping(obj.get("spec"), "spec")
    return CSIDriverRecord(name, ctx.boolean(spec.get("storageCapacity"), "spec.storageCapacity"),
                           obj)


@dataclass
class CSIStorageCapacityRecord:
    namespace: str
    name: str
    storage_class: str
    node_topology: dict | None        # a LabelSelector; None selects no node
    capacity: int | None              # bytes, None when unset
    maximum_volume_size: int | None
    obj: dict = field(repr=False, default_factory=dict)


def parse_csi_storage_capacity(obj: dict, *, where: str | None = None
                               ) -> CSIStorageCapacityRecord:
    ctx, _, namespace, name = identity(obj, "CSIStorageCapacity", True, where)
    cap, mx = obj.get("capacity"), obj.get("maximumVolumeSize")
    return CSIStorageCapacityRecord(
        namespace=namespace, name=name,
        storage_class=ctx.string(obj.get("storageClassName"), "storageClassName",
                                 required=True),
        node_topology=validate_label_selector(ctx, obj.get("nodeTopology"), "nodeTopology"),
        capacity=None if cap is None else _bytes(ctx, cap, "capacity"),
        maximum_volume_size=None if mx is None else _bytes(ctx, mx, "maximumVolumeSize"),
        obj=obj)


@dataclass
class VolumeAttachmentRecord:
    name: str
    node_name: str
    pv_name: str                      # spec.source.persistentVolumeName ("" inline)
    obj: dict = field(repr=False, default_factory=dict)


def parse_volume_attachment(obj: dict, *, where: str | None = None) -> VolumeAttachmentRecord:
    ctx, _, _, name = identity(obj, "VolumeAttachment", False, where)
    spec = ctx.mapping(obj.get("spec"), "spec")
    src = ctx.mapping(spec.get("source"), "spec.source")
    return VolumeAttachmentRecord(
        name=name, node_name=ctx.string(spec.get("nodeName"), "spec.nodeName", required=True),
        pv_name=ctx.string(src.get("persistentVolumeName"), "spec.source.persistentVolumeName"),
        obj=obj)


def _storage_api(obj) -> bool:
    api = obj.get("apiVersion") if isinstance(obj, dict) else None
    return api is None or (isinstance(api, str) and api.startswith("storage.k8s.io/"))


#: (kind, Objects field) of the storage kinds every cluster reads.
VOLUME_KINDS = (
    (ObjectKind("PersistentVolume", parse_persistent_volume, lambda r: r.name,
                "PersistentVolume {}"), "persistent_volumes"),
    (ObjectKind("PersistentVolumeClaim", parse_persistent_volume_claim, lambda r: r.key,
                "PersistentVolumeClaim {}"), "persistent_volume_claims"),
    (ObjectKind("StorageClass", parse_storage_class, lambda r: r.name, "StorageClass {}",
                accepts=_storage_api), "storage_classes"),
    (ObjectKind("CSINode", parse_csi_node, lambda r: r.name, "CSINode {}",
                accepts=_storage_api), "csi_nodes"),
    (ObjectKind("CSIDriver", parse_csi_driver, lambda r: r.name, "CSIDriver {}",
                accepts=_storage_api), "csi_drivers"),
    (ObjectKind("CSIStorageCapacity", parse_csi_storage_capacity,
                lambda r: f"{r.namespace}/{r.name}", "CSIStorageCapacity {}",
                accepts=_storage_api), "csi_storage_capacities"),
    (ObjectKind("VolumeAttachment", parse_volume_attachment, lambda r: r.name,
                "VolumeAttachment {}", accepts=_storage_api), "volume_attachments"),
)


# --------------------------------------------------------------------------
# a pod's volumes

VOL_CLAIM = "claim"            # persistentVolumeClaim
VOL_EPHEMERAL = "ephemeral"    # generic ephemeral volume: claim <pod>-<volume>
VOL_OTHER = "other"            # anything else (emptyDir, configMap, in-tree sources...)


@dataclass(frozen=True)
class PodVolume:
    """One entry of ``spec.volumes``.  ``kind`` is VOL_CLAIM / VOL_EPHEMERAL
    (``claim`` names the claim) or VOL_OTHER with ``source_kind`` (the
    in-tree source: gcePersistentDisk, awsElasticBlockStore, rbd, iscsi,
    ..., "" for the rest) and its ``source`` body; ``read_only`` is the
    source's readOnly."""

    name: str
    kind: str
    claim: str = ""
    source_kind: str = ""
    source: tuple = ()              # the source body's items, sorted (hashable)
    read_only: bool = False

    def field(self, key: str, default=None):
        return dict(self.source).get(key, default)


_POD_VOLUMES_MEMO = MemoKey("objects.pod_volumes", __name__,
                            "(pod name, the pod's volumes as read) (``remember_pod_volumes``)")


def _freeze(value):
    if isinstance(value, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    return value


# volume sources the plugins read; any other volume (configMap, secret,
# projected, emptyDir...) is kept as VOL_OTHER with no source
READ_SOURCES = ("persistentVolumeClaim", "ephemeral", "gcePersistentDisk",
                "awsElasticBlockStore", "rbd", "iscsi", "azureDisk", "cinder", "csi")
_READ_SET = frozenset(READ_SOURCES)


def read_volumes(volumes):
    """The part of ``spec.volumes`` the volume plugins read (and
    ``parse_pod_volumes`` validates): the entries with a source of
    READ_SOURCES, and anything that is not a mapping.  Pods equal in it
    are equal to the plugins (``pod_templates`` keys templates on it)."""
    if type(volumes) is not list:
        return volumes
    # a volume naming none of the sources (kubectl's kube-api-access, a
    # configMap...) is left out by one C-level test of its keys
    return [v for v in volumes
            if type(v) is not dict or not _READ_SET.isdisjoint(v)
            and any(v.get(k) is not None for k in READ_SOURCES)]


def parse_pod_volumes(ctx: ObjectContext, pod_name: str, volumes) -> tuple[PodVolume, ...]:
    """``spec.volumes`` -> PodVolumes.  Every volume's name is checked
    (``pod_names.check_volume_name``: required, a DNS-1123 label, unique);
    the volumes the plugins read are validated (claim name, readOnly), the
    others only need to be mappings."""
    out = []
    seen: dict[str, int] = {}
    for i, v in enumerate(ctx.list(volumes, "spec.volumes")):
        p = f"spec.volumes[{i}]"
        v = ctx.mapping(v, p)
        name = check_volume_name(ctx, v, i, seen)
        if not any(v.get(k) is not None for k in READ_SOURCES):
            out.append(PodVolume(name, VOL_OTHER))
            continue
        if v.get("persistentVolumeClaim") is not None:
            src = ctx.mapping(v["persistentVolumeClaim"], f"{p}.persistentVolumeClaim")
            claim = ctx.string(src.get("claimName"), f"{p}.persistentVolumeClaim.claimName",
                               required=True)
            ro = ctx.boolean(src.get("readOnly"), f"{p}.persistentVolumeClaim.readOnly")
            out.append(PodVolume(name, VOL_CLAIM, claim, read_only=ro))
        elif v.get("ephemeral") is not None:
            ctx.mapping(v["ephemeral"], f"{p}.ephemeral")
            out.append(PodVolume(name, VOL_EPHEMERAL, f"{pod_name}-{name}"))
        else:
            kind = next(k for k in READ_SOURCES[2:] if v.get(k) is not None)
            body = ctx.mapping(v[kind], f"{p}.{kind}")
            ro = ctx.boolean(body.get("readOnly"), f"{p}.{kind}.readOnly")
            out.append(PodVolume(name, VOL_OTHER, source_kind=kind, source=_freeze(body),
                                 read_only=ro))
    return tuple(out)


def pod_volumes(pod) -> tuple[PodVolume, ...]:
    """The PodVolumes of a PodRecord (parsed once per pod; ``parse_pod``
    has validated them)."""
    memo = pod.pod_class.memo
    got = memo.get(_POD_VOLUMES_MEMO)
    if got is None or got[0] != pod.name:
        # the memo is shared by pods of one template: ephemeral claim names
        # carry the pod's name, so the entry remembers whose it is
        spec = pod.obj.get("spec") if isinstance(pod.obj, dict) else None
        raw = spec.get("volumes") if isinstance(spec, dict) else None
        vols = parse_pod_volumes(ObjectContext(f"Pod {pod.key}"), pod.name, raw) if raw else ()
        got = memo[_POD_VOLUMES_MEMO] = (pod.name, vols)
    return got[1]


def remember_pod_volumes(pod, vols: tuple[PodVolume, ...]) -> None:
    """Keep ``vols`` (``parse_pod_volumes`` of ``pod``'s own spec) as what
    ``pod_volumes`` answers for it."""
    pod.memo[_POD_VOLUMES_MEMO] = (pod.name, vols)


def carry_pod_volumes(src: dict, dst: dict) -> None:
    """Copy the volumes ``remember_pod_volumes`` kept in memo ``src`` into
    ``dst``, the memo of a copy of the same pod (its priority resolved):
    the spec is the same, so the parse holds there too."""
    got = src.get(_POD_VOLUMES_MEMO)
    if got is not None:
        dst.setdefault(_POD_VOLUMES_MEMO, got)


def has_claims(vols) -> bool:
    return any(v.kind != VOL_OTHER for v in vols)
