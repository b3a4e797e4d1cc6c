"""ClusterState: nodes and bound pods as columns.

Nodes occupy rows of preallocated arrays that grow by doubling; a deleted
node leaves a free row (``valid`` False) that the next added node reuses, so
adding, updating or removing a node or a pod touches O(1) rows.  Labels are
dictionary-encoded per key; taints, images and host ports are global tables
with a per-node bitset (int64 words).  Every mutation validates first and
writes second, so a refused operation leaves the state as it was.

``version`` counts mutations; ``row_version[i]`` is the version that last
wrote node row i, so a device mirror re-uploads only rows newer than its copy;
``write_log`` lists the rows written in version order, so a reader finds
the rows written since its version without scanning every row.
``layout_version`` changes when arrays are reallocated (a full re-upload).
"""

from __future__ import annotations

import re

import numpy as np

from tensorsched.framework.errors import StateError
from tensorsched.framework.records.pod_columns import PodColumns
from tensorsched.framework.records.records import NodeRecord, PodRecord
from tensorsched.kernels import layout as L
from tensorsched.kernels.fused.source import LOG_READ_MAX, WriteLog

from .bound_pods import BoundPods, PodRow
from .derived import DerivedData
from .listeners import PodListeners, PodRestorer
from .tallies import ImageNameCounts, PriorityCounts
from .workload_index import WorkloadIndex

_INT64_LABEL = re.compile(r"[+-]?[0-9]+\Z")
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


def parse_label_int(value: str) -> int | None:
    """The label value as Go's strconv.ParseInt(v, 10, 64) reads it, or None."""
    if not _INT64_LABEL.match(value):
        return None
    n = int(value)
    return n if _INT64_MIN <= n <= _INT64_MAX else None


class ResourceRegistry:
    """Resource names <-> column ids; cpu, memory, ephemeral-storage, pods first."""

    def __init__(self) -> None:
        self.names: list[str] = list(L.FIXED_RESOURCES)
        self.index: dict[str, int] = {n: i for i, n in enumerate(self.names)}

    def __len__(self) -> int:
        return len(self.names)

    def get(self, name: str) -> int:
        return self.index.get(name, -1)

    def check_room(self, what: str, names) -> None:
        """Refuse (StateError naming ``what``), before anything is interned,
        an object whose resource ``names`` would overflow the registry (so
        a refused operation changes nothing)."""
        new = [n for n in dict.fromkeys(names) if n != "pods" and n not in self.index]
        if len(self) + len(new) > L.MAX_RESOURCES:
            bad = new[L.MAX_RESOURCES - len(self)]
            raise StateError(f"{what}: resource {bad!r}: more than {L.MAX_RESOURCES} "
                             "distinct resources are not supported")


class Dictionary:
    """A growing string -> dense id map."""

    def __init__(self, growth: list | None = None) -> None:
        self.ids: dict = {}
        self.items: list = []
        self.grown = False      # set on every new item; the state clears it
        self._growth = growth if growth is not None else [0]   # shared counter

    def intern(self, item) -> int:
        i = self.ids.get(item)
        if i is None:
            self.grown = True
            self._growth[0] += 1
            i = len(self.items)
            self.ids[item] = i
            self.items.append(item)
        return i

    def get(self, item) -> int:
        return self.ids.get(item, -1)

    def __len__(self) -> int:
        return len(self.items)


def _grow(a: np.ndarray, rows: int | None = None, cols: int | None = None, fill=0):
    """A copy of ``a`` enlarged to (rows, cols), new cells set to ``fill``."""
    shape = list(a.shape)
    if rows is not None:
        shape[0] = rows
    if cols is not None:
        shape[1] = cols
    out = np.full(shape, fill, dtype=a.dtype)
    out[tuple(slice(0, s) for s in a.shape)] = a
    return out


def _column_max(a: np.ndarray) -> np.ndarray:
    """The max of each column of ``a`` ([k, C] int64, k >= 1): [C] int64.
    Column by column (strided), which numpy does several times faster than
    ``a.max(axis=0)`` for the few columns a state has."""
    return np.fromiter((a[:, j].max() for j in range(a.shape[1])), a.dtype, a.shape[1])


def _check_priority(pod: PodRecord) -> None:
    """The bound-pod priority column is int64 (manifests hold it to int32;
    records built in code are checked here, before anything changes)."""
    if not _INT64_MIN <= (pod.priority or 0) <= _INT64_MAX:
        raise StateError(f"Pod {pod.key}: spec.priority: {pod.priority} is outside int64")


def _words(nbits: int) -> int:
    return max(1, (nbits + 63) // 64)


class _RowPodKeys:
    """``ClusterState.pods_on_node`` while pods of compiled runs wait to be
    written into it.  A run records its pods' keys and rows
    (``register_run``) and takes the list out of the state's ``__dict__``;
    the first read of ``pods_on_node`` after that comes here and writes
    the waiting runs' keys in order, puts the list back and returns it.
    Any other time the list is the instance's own attribute, read directly
    (a non-data descriptor is not asked then), so readers pay nothing, and
    a caller that never reads the per-row keys (a run of thousands of
    pods on as many rows) writes no per-row dict at all."""

    def __get__(self, state, owner=None):
        if state is None:
            return self
        on_node = state._on_node_held
        runs, state._on_node_runs = state._on_node_runs, []
        for keys, rows in runs:
            for key, row in zip(keys, rows.tolist()):
                on_node[row][key] = None
        state.__dict__["pods_on_node"] = on_node
        return on_node


class ClusterState:
    """Columnar nodes plus the pods bound (or assumed) on them.

    Shapes: allocatable/requested [N, R] int64 (N = row capacity), see
    ``tensorsched.kernels.layout.NodeColumns`` for every column.  Beside
    the columns: ``pods`` (the bound pods, ``bound_pods``), ``derived``
    (data derived from the state under declared keys, ``derived``),
    ``listeners`` and ``restorers`` (what follows its pods, through the
    protocols of ``listeners``).  It is the ``kernels.fused.source.
    ColumnSource`` the fused backends read.
    """

    pods_on_node = _RowPodKeys()      # read when runs' pods wait (its doc)

    def __init__(self, node_capacity: int = 64) -> None:
        cap = max(1, node_capacity)
        self.resources = ResourceRegistry()
        self._growth = [0]          # bumped by every dictionary of this state
        self._growth_seen = 0
        self.label_keys = Dictionary(self._growth)
        self.label_keys.intern(L.NAME_COLUMN_KEY)        # column LABEL_KEY_NAME
        self.label_values: list[Dictionary] = [Dictionary(self._growth)]
        self.taints = Dictionary(self._growth)           # (key, value, effect)
        self.images = Dictionary(self._growth)           # (name, size)
        self.image_name_nodes = ImageNameCounts()        # name -> nodes having it
        self.ports = Dictionary(self._growth)            # (protocol, ip, port)
        r = len(self.resources)
        self.allocatable = np.zeros((cap, 8), np.int64)
        self.requested = np.zeros((cap, 8), np.int64)
        self.nonzero_requested = np.zeros((cap, 2), np.int64)
        self.unschedulable = np.zeros(cap, np.bool_)
        self.valid = np.zeros(cap, np.bool_)
        self.label_vals = np.full((cap, 8), -1, np.int32)
        self.label_nums = np.zeros((cap, 8), np.int64)
        self.label_isnum = np.zeros((cap, 8), np.bool_)
        self.taint_bits = np.zeros((cap, 1), np.int64)
        self.image_bits = np.zeros((cap, 1), np.int64)
        self.port_bits = np.zeros((cap, 1), np.int64)
        self.port_counts: list[dict[int, int]] = [dict() for _ in range(cap)]
        self.row_version = np.zeros(cap, np.int64)
        # the rows written, in version order (readers find the rows written
        # since a version without scanning row_version)
        self.write_log = WriteLog()
        del r
        self.nodes: list[NodeRecord | None] = [None] * cap
        # each row's node name ([cap] object; None on a free row): a run's
        # rows read as names in one gather
        self.node_names = np.full(cap, None, dtype=object)
        self.node_rows: dict[str, int] = {}
        self.free_rows: list[int] = []
        self.n_rows = 0                                   # high-water mark
        self.pods = BoundPods()        # bound pods as columns (bound_pods.py)
        # ``PodListener``s told after a pod is added to or removed from a
        # node (derived indexes, e.g. per-domain pod counts, the GPU table).
        self.listeners = PodListeners()
        # Derived state that a remove_pod/restore_pod pair may not return
        # exactly (``PodRestorer``: the GPU table picks GPUs anew); a
        # temporary removal (preemption's victim search) checkpoints it.
        self.restorers: list[PodRestorer] = []
        # Services and controllers of the loaded objects (PodTopologySpread's
        # default constraints take their selectors).
        self.workloads: WorkloadIndex = WorkloadIndex()
        # Namespace name -> labels of the loaded Namespace objects (a pod
        # affinity term's namespaceSelector reads them, ``selectors.
        # namespace_labels_of``); namespaces without an object are absent.
        self.namespace_labels: dict[str, dict[str, str]] = {}
        # Memos and extensions by declared ``StateKey`` (``derived``).
        self.derived = DerivedData(self)
        # Bound pods per priority (preemption asks whether any is lower).
        self.priorities = PriorityCounts()
        # Keys of the pods on each row, in the order they came (a dict as an
        # ordered set: a third of a set's bytes at tens of pods a node);
        # compiled runs' pods are written on the next read (``_RowPodKeys``).
        self.pods_on_node: list[dict[str, None]] = [{} for _ in range(cap)]
        self._on_node_held: list[dict[str, None]] | None = None
        self._on_node_runs: list[tuple[list, np.ndarray]] = []
        self.version = 0
        self.pod_adds = 0       # pods ever accounted (removals leave it alone)
        self.layout_version = 0
        self.epoch = 0          # bumped when a table grows or the node set changes
        self._valid_rows_cache: tuple[int, np.ndarray] | None = None
        self._ceiling: tuple | None = None      # see _ceilings
        self._columns_cache: tuple | None = None
        # (pod table, resource count, {(requests, non-zero cpu, memory):
        # shape id or -1}, {pod class: (shape id or -1, its largest
        # value)}): ``_shape_id``
        self._shape_memo: tuple = (None, -1, {}, {})
        # ((layout_version, epoch, n_rows), an int no requested or non-zero
        # requested value of a live row exceeds) or None: ``_sum_room_bound``
        self._sum_top: tuple | None = None
        # False: every pod takes ``_check_sum_room``'s exact check (the
        # tests' oracle)
        self.bound_sum_room = True

    # --------------------------------------------------------- derived data
    def structure_tag(self) -> tuple:
        """Changes whenever a node's labels, the node set or a label
        dictionary may have changed (what node -> domain maps depend on)."""
        return (self.layout_version, self.epoch, self.n_rows)

    # ------------------------------------------------------------------ views
    @property
    def num_nodes(self) -> int:
        return len(self.node_rows)

    def columns(self) -> L.NodeColumns:
        """The node columns, trimmed to the rows in use (views, no copies;
        memoized until a row, key or table is added)."""
        # every dictionary of the state bumps ``_growth`` when it grows (a
        # label value too: a spare miss), so one counter stands for the
        # key, taint, image and port counts
        key = (self.layout_version, self.n_rows, len(self.resources.names), self._growth[0])
        cached = self._columns_cache
        if cached is not None and cached[0] == key:
            return cached[1]
        n = max(self.n_rows, 1)
        r = len(self.resources)
        k = len(self.label_keys)
        cols = L.NodeColumns(
            allocatable=self.allocatable[:n, :r], requested=self.requested[:n, :r],
            nonzero_requested=self.nonzero_requested[:n],
            unschedulable=self.unschedulable[:n], valid=self.valid[:n],
            label_vals=self.label_vals[:n, :k], label_nums=self.label_nums[:n, :k],
            label_isnum=self.label_isnum[:n, :k],
            taint_bits=self.taint_bits[:n, :_words(len(self.taints))],
            image_bits=self.image_bits[:n, :_words(len(self.images))],
            port_bits=self.port_bits[:n, :_words(len(self.ports))],
        )
        self._columns_cache = (key, cols)
        return cols

    def valid_rows(self) -> np.ndarray:
        """Rows of live nodes in row order, [N] int64 (cached per node set)."""
        # ``epoch`` changes whenever a node is added or removed; the node count
        # alone does not (remove one node, add one, remove another).
        key = (self.layout_version, self.epoch, self.n_rows)
        cached = self._valid_rows_cache
        if cached is None or cached[0] != key:
            rows = np.flatnonzero(self.valid[: self.n_rows]).astype(np.int64)
            self._valid_rows_cache = (key, rows)
            return rows
        return cached[1]

    def node_name(self, row: int) -> str:
        rec = self.nodes[row]
        return rec.name if rec is not None else f"<free row {row}>"

    def node(self, name: str) -> NodeRecord:
        return self.nodes[self.node_rows[name]]

    # --------------------------------------------------------------- capacity
    def _ensure_rows(self, need: int) -> None:
        cap = self.allocatable.shape[0]
        if need <= cap:
            return
        new = max(need, cap * 2)
        for name in ("allocatable", "requested", "nonzero_requested", "unschedulable",
                     "valid", "label_nums", "label_isnum", "taint_bits", "image_bits",
                     "port_bits", "row_version"):
            setattr(self, name, _grow(getattr(self, name), rows=new))
        self.label_vals = _grow(self.label_vals, rows=new, fill=-1)
        self.node_names = _grow(self.node_names, rows=new, fill=None)
        self.nodes.extend([None] * (new - cap))
        self.port_counts.extend(dict() for _ in range(new - cap))
        self.pods_on_node.extend({} for _ in range(new - cap))
        self.layout_version += 1

    def _ensure_cols(self, attr: str, need: int, fill=0) -> None:
        a = getattr(self, attr)
        if need > a.shape[1]:
            setattr(self, attr, _grow(a, cols=max(need, a.shape[1] * 2), fill=fill))
            self.layout_version += 1

    def intern_resource(self, name: str) -> int:
        i = self.resources.get(name)
        if i >= 0:
            return i
        if len(self.resources) >= L.MAX_RESOURCES:
            raise StateError(f"resource {name!r}: more than {L.MAX_RESOURCES} distinct "
                             "resources are not supported")
        i = len(self.resources)
        self.epoch += 1
        self.resources.names.append(name)
        self.resources.index[name] = i
        for attr in ("allocatable", "requested"):
            self._ensure_cols(attr, i + 1)
        return i

    def intern_label(self, key: str, value: str) -> tuple[int, int]:
        k = self.label_keys.intern(key)
        if k == len(self.label_values):
            self.label_values.append(Dictionary(self._growth))
            for attr, fill in (("label_vals", -1), ("label_nums", 0), ("label_isnum", False)):
                self._ensure_cols(attr, k + 1, fill)
        return k, self.label_values[k].intern(value)

    def intern_bit(self, table: Dictionary, attr: str, item) -> int:
        b = table.intern(item)
        self._ensure_cols(attr, _words(len(table)))
        return b

    def resource_vector(self, amounts: dict[str, int], intern: bool) -> np.ndarray:
        """[R] int64 from a name -> amount map (unknown names interned when
        ``intern``, otherwise they must already exist)."""
        idx = [(self.intern_resource(n) if intern else self.resources.get(n), v)
               for n, v in amounts.items() if n != "pods"]
        vec = np.zeros(len(self.resources), np.int64)
        for i, v in idx:
            if i >= 0:
                vec[i] = v
        return vec

    # ------------------------------------------------------------------ nodes
    def add_node(self, node: NodeRecord) -> int:
        """Add a node; returns its row.  A duplicate name raises StateError."""
        if node.name in self.node_rows:
            raise StateError(f"Node {node.name}: already in the cluster state")
        self.resources.check_room(f"Node {node.name}", node.allocatable)
        row = self.free_rows.pop() if self.free_rows else self.n_rows
        try:
            self._ensure_rows(row + 1)
            self._write_node_row(row, node)
        except Exception:
            if row < self.n_rows:
                self.free_rows.append(row)
            raise
        self.n_rows = max(self.n_rows, row + 1)
        self.node_rows[node.name] = row
        self.nodes[row] = node
        self.node_names[row] = node.name
        self.epoch += 1
        self._touch(row)
        return row

    def update_node(self, node: NodeRecord) -> int:
        """Replace a node's spec/status, keeping its pods; returns its row."""
        row = self.node_rows.get(node.name)
        if row is None:
            raise StateError(f"Node {node.name}: not in the cluster state")
        self.resources.check_room(f"Node {node.name}", node.allocatable)
        old = self.nodes[row]
        self.image_name_nodes.remove_node(old)
        self._write_node_row(row, node, keep_usage=True)
        self.nodes[row] = node
        self.epoch += 1
        self._touch(row)
        return row

    def remove_node(self, name: str) -> None:
        """Remove a node and the pods bound to it."""
        row = self.node_rows.get(name)
        if row is None:
            raise StateError(f"Node {name}: not in the cluster state")
        for key in list(self.pods_on_node[row]):
            self.remove_pod(key)
        self.image_name_nodes.remove_node(self.nodes[row])
        self.valid[row] = False
        self.allocatable[row] = 0
        self.requested[row] = 0
        self.nonzero_requested[row] = 0
        self.unschedulable[row] = False
        self.label_vals[row] = -1
        self.label_nums[row] = 0
        self.label_isnum[row] = False
        self.taint_bits[row] = 0
        self.image_bits[row] = 0
        self.port_bits[row] = 0
        self.port_counts[row] = {}
        self.nodes[row] = None
        self.node_names[row] = None
        del self.node_rows[name]
        self.free_rows.append(row)
        self.epoch += 1
        self._touch(row)

    def _write_node_row(self, row: int, node: NodeRecord, keep_usage: bool = False) -> None:
        # Intern first (may grow arrays), then write the row.
        alloc_idx = [(self.intern_resource(n), v) for n, v in node.allocatable.items()]
        labels = [self.intern_label(k, v) for k, v in node.labels.items()]
        name_val = self.intern_label(L.NAME_COLUMN_KEY, node.name)[1]
        taint_ids = [self.intern_bit(self.taints, "taint_bits",
                                      (t.key, t.value, t.effect)) for t in node.taints]
        image_ids = []
        names_seen = set()
        for img in node.images:
            for n in img.names:
                if n not in names_seen:
                    names_seen.add(n)
                    image_ids.append(self.intern_bit(self.images, "image_bits",
                                                      (n, img.size_bytes)))
        self.allocatable[row] = 0
        for i, v in alloc_idx:
            self.allocatable[row, i] = v
        if not keep_usage:
            self.requested[row] = 0
            self.nonzero_requested[row] = 0
            self.port_bits[row] = 0
            self.port_counts[row] = {}
        self.unschedulable[row] = node.unschedulable
        self.valid[row] = True
        self.label_vals[row] = -1
        self.label_nums[row] = 0
        self.label_isnum[row] = False
        self.label_vals[row, L.LABEL_KEY_NAME] = name_val
        for (k, v), value in zip(labels, node.labels.values()):
            self.label_vals[row, k] = v
            num = parse_label_int(value)
            if num is not None:
                self.label_nums[row, k] = num
                self.label_isnum[row, k] = True
        self.taint_bits[row] = 0
        for b in taint_ids:
            self.taint_bits[row, b >> 6] |= np.int64(1) << np.int64(b & 63)
        self.image_bits[row] = 0
        for b in image_ids:
            self.image_bits[row, b >> 6] |= np.int64(1) << np.int64(b & 63)
        self.image_name_nodes.add_node(names_seen)

    # ------------------------------------------------------------------- pods
    def add_pod(self, pod: PodRecord, node_name: str | None = None) -> int:
        """Account a pod on a node (``node_name`` or ``pod.node_name``)."""
        key = pod.key
        target = node_name or pod.node_name
        if key in self.pods:
            raise StateError(f"Pod {key}: already in the cluster state")
        row = self.node_rows.get(target)
        if row is None:
            raise StateError(f"Pod {key}: spec.nodeName: node {target!r} is not in "
                             "the cluster state")
        # A request the state has accounted before (every resource known:
        # nothing to intern, no room to check) has its shape id memoized.
        sid, largest = _shape_of(self, pod)
        if sid < 0:
            self.resources.check_room(f"Pod {key}", pod.requests)
        # a bound of every sum that clears the pod's largest value needs no
        # exact check (the bound then grows by that value: only this row grew)
        top = _sum_room_bound(self, largest) if sid >= 0 and self.bound_sum_room else None
        if top is None:
            _check_sum_room(self, pod, row)
        _check_priority(pod)
        if sid < 0:
            req = self.resource_vector(pod.requests, intern=True)
            req[L.RES_PODS] = 1
        else:
            req = self.pods.shapes[sid][0]
        port_ids = tuple(self.intern_bit(self.ports, "port_bits",
                                          (p.protocol, p.host_ip, p.port))
                         for p in pod.host_ports) if pod.host_ports else ()
        if req.shape[0] > self.requested.shape[1]:
            self._ensure_cols("requested", req.shape[0])
        if sid < 0:
            sid = self.pods.shape_of(req, pod.nonzero_cpu, pod.nonzero_memory)
        self._account(PodRow(pod, row, sid, self.pods.shapes[sid], port_ids))
        if top is not None:
            self._sum_top = top
        return row

    def _ceilings(self) -> tuple[np.ndarray, np.ndarray]:
        """Upper bounds of the requested ([R]) and non-zero requested ([2])
        columns over the live rows: exact when the rows or columns change,
        then raised as pods are accounted (never lowered when they leave,
        so a bound, which is all ``room_for`` needs, at O(R) per run)."""
        key = (self.layout_version, self.epoch, self.n_rows, self.requested.shape)
        c = self._ceiling
        if c is None or c[0] != key:
            n = max(self.n_rows, 1)
            c = (key, self.requested[:n].max(axis=0, initial=0),
                 self.nonzero_requested[:n].max(axis=0, initial=0))
            self._ceiling = c
        return c[1], c[2]

    def _raise_ceilings(self, rows) -> None:
        """``rows``: one row (int) or an array of rows just accounted (the
        bound of ``_sum_room_bound`` is made again on its next read)."""
        self._sum_top = None
        if self._ceiling is not None:
            _, req, nz = self._ceiling
            if not isinstance(rows, np.ndarray):
                np.maximum(req, self.requested[rows], out=req)
                np.maximum(nz, self.nonzero_requested[rows], out=nz)
            elif len(rows):
                if len(rows) * 4 >= self.n_rows > 1024:
                    # a run over most rows: every row read once, in order
                    # (the exact maxima, still a bound of the touched ones)
                    rows = slice(0, self.n_rows)
                elif len(rows) > 1024:
                    # a run puts many pods on each row: read each row once
                    # (a gather of every pod's row copies [k, R] values)
                    touched = np.zeros(max(self.n_rows, int(rows.max()) + 1), np.bool_)
                    touched[rows] = True
                    rows = np.flatnonzero(touched)
                np.maximum(req, _column_max(self.requested[rows]), out=req)
                np.maximum(nz, _column_max(self.nonzero_requested[rows]), out=nz)

    def room_for(self, request: np.ndarray, nonzero: np.ndarray, count: int) -> bool:
        """Whether ``count`` more pods of ``request`` ([R] int64) and non-zero
        request ([2] int64) on any one node keep its sums within int64 (a
        compiled run accounts pods without ``add_pod``'s per-pod check)."""
        r = min(request.shape[0], self.requested.shape[1])
        if request.shape[0] > self.requested.shape[1]:
            return False
        req_max, nz_max = self._ceilings()
        head_req = _INT64_MAX - req_max[:r]
        head_nz = _INT64_MAX - nz_max
        return bool((request[:r] <= head_req // max(count, 1)).all()
                    and (nonzero <= head_nz // max(count, 1)).all())

    def register_run(self, pods, rows: np.ndarray, request: np.ndarray,
                     nonzero: tuple[int, int]) -> None:
        """Record ``pods`` on ``rows`` ([len(pods)] int64) after a compiled run
        has already added their requests (``request`` [R] and ``nonzero``,
        the same for every pod of a run) to the requested columns (``pods``:
        records or ``PodColumns``, bound from their columns): the pod
        entries (their keys join the table's key index on its next read),
        the rows' pod sets (written on their next read: the run's ``rows``
        are kept until then, unchanged), one version bump and the
        listeners, in order.  The pods hold no host ports (runs refuse
        those)."""
        if not len(pods):
            return
        cols = PodColumns.from_records(pods)
        sid = self.pods.shape_of(np.array(request, np.int64), *nonzero)
        self.priorities.add_all(self.pods.priorities(self.pods.add_many(cols, rows, sid)))
        # the rows' key dicts are written when next read (``_RowPodKeys``)
        if not self._on_node_runs:
            self._on_node_held = self.__dict__.pop("pods_on_node")
        self._on_node_runs.append((cols.keys, rows))
        self._added_many(pods, rows)

    def register_block(self, pods: list[PodRecord], rows: np.ndarray, cls: np.ndarray,
                       requests: np.ndarray, nonzeros: np.ndarray) -> None:
        """Record unlike ``pods`` on ``rows`` ([len(pods)] int64) after a
        compiled block has already added their requests to the requested
        columns: pod i is of class ``cls[i]``, whose request is
        ``requests[c]`` [R] int64 and non-zero (cpu, memory) ``nonzeros[c]``.
        As ``register_run`` otherwise (pods of one class share a shape);
        the pods hold no host ports."""
        if not len(pods):
            return
        on_node = self.pods_on_node
        n_res = len(self.resources)
        used = np.unique(cls)
        sid_of = np.zeros(int(used[-1]) + 1, np.int32)
        for c in used.tolist():
            sid_of[c] = self.pods.shape_of(requests[c][:n_res].copy(),
                                           *(int(v) for v in nonzeros[c]))
        self.priorities.add_all(self.pods.priorities(self.pods.add_many(pods, rows, sid_of[cls])))
        for pod, row in zip(pods, rows.tolist()):
            on_node[row][pod.key] = None
        self._added_many(pods, rows)

    def _added_many(self, pods, rows: np.ndarray) -> None:
        """After ``pods`` were recorded on ``rows`` at once: the count of
        pods added, the ceilings, one version bump and the listeners (their
        form for many pods when they have one, which takes ``PodColumns``
        too), in order."""
        self.pod_adds += len(pods)
        self._raise_ceilings(rows)
        self.version += 1
        self.row_version[rows] = self.version
        if rows.shape[0] <= LOG_READ_MAX:
            once = np.unique(rows)
            self.write_log.add_many(once, np.full(once.shape[0], self.version, np.int64))
        else:
            self.write_log.restart(self.version)
        self.listeners.pods_added(pods, rows)

    def restore_pod(self, entry: PodRow) -> int:
        """Put back a pod that ``remove_pod`` returned, on the same row, as it
        was (its PodRow reused: nothing is re-interned or re-validated)."""
        key = entry.record.key
        if key in self.pods:
            raise StateError(f"Pod {key}: already in the cluster state")
        if not self.valid[entry.node_row]:
            raise StateError(f"Pod {key}: its node row {entry.node_row} is gone")
        self._account(entry)
        return entry.node_row

    def _account(self, entry: PodRow) -> None:
        """Add a pod's request, non-zero request and host ports to its row."""
        row, pod, req = entry.node_row, entry.record, entry.request
        self.requested[row, : req.shape[0]] += req
        self.nonzero_requested[row, 0] += entry.nonzero[0]
        self.nonzero_requested[row, 1] += entry.nonzero[1]
        self._raise_ceilings(row)
        counts = self.port_counts[row]
        for b in entry.port_ids:
            counts[b] = counts.get(b, 0) + 1
            self.port_bits[row, b >> 6] |= np.int64(1) << np.int64(b & 63)
        key = pod.key           # one string object for the table and the row's set
        self.pod_adds += 1
        prio = pod.priority or 0        # PriorityCounts.add, inline: once per pod
        self.priorities[prio] = self.priorities.get(prio, 0) + 1
        self.pods.add(pod, row, entry.shape_id, entry.port_ids, entry.slot)
        self.pods_on_node[row][key] = None
        self._touch(row)
        for fn in self.listeners.each:          # pod_added, inline: once per pod
            fn(pod, row, 1)

    def remove_pod(self, key: str) -> PodRow:
        """Release a pod's resources and ports on its node."""
        entry = self.pods.pop(key, None)
        if entry is None:
            raise StateError(f"Pod {key}: not in the cluster state")
        record, row = entry.record, entry.node_row
        prios, prio = self.priorities, record.priority or 0
        left = prios[prio] - 1          # PriorityCounts.remove, inline: once per pod
        if left:
            prios[prio] = left
        else:
            del prios[prio]
        req, (cpu, memory) = entry.shape
        self.requested[row, : req.shape[0]] -= req
        nonzero = self.nonzero_requested
        nonzero[row, 0] -= cpu
        nonzero[row, 1] -= memory
        if entry.port_ids:
            counts = self.port_counts[row]
            for b in entry.port_ids:
                counts[b] -= 1
                if counts[b] == 0:
                    del counts[b]
                    self.port_bits[row, b >> 6] &= ~(np.int64(1) << np.int64(b & 63))
        self.pods_on_node[row].pop(key, None)
        self._touch(row)
        for fn in self.listeners.each:          # pod_removed, inline: once per pod
            fn(record, row, -1)
        return entry

    def update_pod(self, pod: PodRecord, node_name: str | None = None) -> int:
        """Replace a bound pod (new requests, labels...); atomic."""
        old = self.pods.get(pod.key)
        if old is None:
            raise StateError(f"Pod {pod.key}: not in the cluster state")
        target = node_name or pod.node_name or self.node_name(old.node_row)
        if target not in self.node_rows:
            raise StateError(f"Pod {pod.key}: spec.nodeName: node {target!r} is not "
                             "in the cluster state")
        self.resources.check_room(f"Pod {pod.key}", pod.requests)
        _check_sum_room(self, pod, self.node_rows[target],
                        old if old.node_row == self.node_rows[target] else None)
        _check_priority(pod)
        self.remove_pod(pod.key)
        return self.add_pod(pod, target)

    def _touch(self, row: int) -> None:
        self.version += 1
        self.row_version[row] = self.version
        self.write_log.add(row, self.version)
        if self._growth[0] != self._growth_seen:
            self._growth_seen = self._growth[0]
            for t in (self.label_keys, self.taints, self.images, self.ports, *self.label_values):
                t.grown = False
            self.epoch += 1

    def pods_on(self, node_name: str) -> list[PodRecord]:
        row = self.node_rows[node_name]
        return [self.pods.record(k) for k in sorted(self.pods_on_node[row])]


def add_pods(state: ClusterState, pods, node_names) -> None:
    """``state.add_pod(pod, node)`` of each pair of ``pods`` and ``node_names``
    in order, at once where it may: the same columns, pod table (slots,
    bind order), counts and versions (``version`` one step per pod,
    each row's ``row_version`` the step of its last pod) as one call
    each.  The listeners are told after every pod is in, through their
    many-pod form (``PodListeners.pods_changed``); where that cannot
    hold (a listener without one, a pod with host ports, a resource or
    node the state does not know, a key bound or given twice, a sum
    near int64) they are added one at a time, a refusal as those calls
    refuse (the pods before the offending one stay added)."""
    pods = list(pods)
    names = list(node_names)
    got = _batch_rows(state, pods, names)
    if got is None:
        for pod, name in zip(pods, names):
            state.add_pod(pod, name)
        return
    rows, sids = got
    at = np.array(rows, np.int64)
    shape_at = np.array(sids, np.int64)
    shapes = state.pods.shapes
    used = list(dict.fromkeys(sids))
    for sid in used:
        req, nz = shapes[sid]
        if not state.room_for(req, np.array(nz, np.int64), len(pods)):
            for pod, name in zip(pods, names):     # near int64: add_pod's exact check
                state.add_pod(pod, name)
            return
    # The pods' shapes are few: each adds its count per row at once.
    requested, nonzero = state.requested, state.nonzero_requested
    for sid in used:
        req, nz = shapes[sid]
        on, count = np.unique(at[shape_at == sid], return_counts=True)
        requested[on, : req.shape[0]] += count[:, None] * req
        nonzero[on] += count[:, None] * np.array(nz, np.int64)
    table, prios, on_node = state.pods, state.priorities, state.pods_on_node
    for pod, row, sid in zip(pods, rows, sids):
        prio = pod.priority or 0
        prios[prio] = prios.get(prio, 0) + 1
        table.add(pod, row, sid)
        on_node[row][pod.key] = None
    state.pod_adds += len(pods)
    state._raise_ceilings(at)
    _touch_each(state, at)
    state.listeners.pods_changed(pods, at, 1)



def remove_pods(state: ClusterState, keys) -> None:
    """``state.remove_pod(key)`` of each of ``keys`` in order, at once where
    every listener has a many-pod form: the same columns, pod table,
    counts and versions as one call each, the listeners told after every
    pod is out (``PodListeners.pods_changed``).  Otherwise (a listener
    without that form, a key not bound or given twice) one at a time, a
    refusal as those calls refuse."""
    keys = list(keys)
    bound = state.pods
    if (not state.listeners.all_many() or len(set(keys)) != len(keys)
            or not all(key in bound for key in keys)):
        for key in keys:
            state.remove_pod(key)
        return
    prios, on_node, port_counts = state.priorities, state.pods_on_node, state.port_counts
    records, rows, sids = [], [], []
    for key in keys:
        entry = state.pods.pop(key)
        rec, row = entry.record, entry.node_row
        prios.remove(rec.priority or 0)
        if entry.port_ids:
            counts = port_counts[row]
            for b in entry.port_ids:
                counts[b] -= 1
                if counts[b] == 0:
                    del counts[b]
                    state.port_bits[row, b >> 6] &= ~(np.int64(1) << np.int64(b & 63))
        on_node[row].pop(key, None)
        records.append(rec)
        rows.append(row)
        sids.append(entry.shape_id)
    at = np.array(rows, np.int64)
    _release(state, at, sids)
    _touch_each(state, at)
    state.listeners.pods_changed(records, at, -1)



def _batch_rows(state: ClusterState, pods: list, names: list) -> tuple | None:
    """(node rows, shape ids) of ``pods`` when ``add_pods`` may add them
    at once (every listener has a many-pod form, no pod holds host
    ports, every pod is new, distinct, on a known node and asks for
    known resources within int64 priority), else None (one at a time)."""
    if len(pods) != len(names) or not state.listeners.all_many():
        return None
    rows, sids = [], []
    keys = set()
    node_rows, bound = state.node_rows, state.pods
    for pod, name in zip(pods, names):
        row = node_rows.get(name or pod.node_name)
        key = pod.key
        if (row is None or key in keys or key in bound or pod.host_ports
                or not _INT64_MIN <= (pod.priority or 0) <= _INT64_MAX):
            return None
        sid = _shape_id(state, pod)
        if sid < 0:
            return None
        keys.add(key)
        rows.append(row)
        sids.append(sid)
    return rows, sids


#: pod classes ``_shape_of`` keeps at most (each entry ~100 bytes)
_CLASS_MEMO_MAX = 1 << 16


def _shape_of(state: ClusterState, pod: PodRecord) -> tuple[int, int]:
    """(``_shape_id`` of ``pod``, the largest of its request values, its
    non-zero cpu and memory and 1), memoized per pod class (alike pods
    ask the same) for one pod table and resource count."""
    memo = state._shape_memo
    if memo[0] is not state.pods or memo[1] != len(state.resources):
        memo = state._shape_memo = (state.pods, len(state.resources), {}, {})
    cls = pod.pod_class
    by_class = memo[3]
    got = by_class.get(cls)
    if got is None:
        if len(by_class) >= _CLASS_MEMO_MAX:
            # pods read one by one each start a class of their own: the
            # memo is a cache, not a record of every pod ever bound
            by_class.clear()
        got = by_class[cls] = (_shape_id(state, pod),
                              max(1, pod.nonzero_cpu, pod.nonzero_memory,
                                  *pod.requests.values()))
    return got


def _sum_room_bound(state: ClusterState, largest: int) -> tuple | None:
    """The bound ``state._sum_top`` after a pod whose values are at most
    ``largest`` is accounted on one row, or None when that could take a
    sum past int64 (``_check_sum_room`` then decides).  The bound is made
    from the ceilings where they are kept, else from the columns (O(N R),
    once after a change of the rows or a run), and holds while every pod
    accounted raises it (``_raise_ceilings`` drops it otherwise)."""
    stamp = (state.layout_version, state.epoch, state.n_rows)
    got = state._sum_top
    if got is not None and got[0] == stamp:
        top = got[1]
    else:
        n = max(state.n_rows, 1)
        if state._ceiling is not None:
            req, nz = state._ceilings()
        else:
            req, nz = state.requested[:n], state.nonzero_requested[:n]
        top = max(int(req.max(initial=0)), int(nz.max(initial=0)))
    top += largest
    return (stamp, top) if top <= _INT64_MAX else None


def _shape_id(state: ClusterState, pod: PodRecord) -> int:
    """The pod table's shape id of ``pod``'s request as ``add_pod``
    accounts it; -1 when it asks for a resource the state does not know
    or a negative amount (memoized per requests, for one pod table and
    resource count)."""
    key = (tuple(pod.requests.items()), pod.nonzero_cpu, pod.nonzero_memory)
    memo = state._shape_memo
    if memo[0] is not state.pods or memo[1] != len(state.resources):
        memo = state._shape_memo = (state.pods, len(state.resources), {}, {})
    got = memo[2].get(key)
    if got is None:
        got = -1
        res = state.resources.index
        if (all(n in res and v >= 0 for n, v in key[0])
                and pod.nonzero_cpu >= 0 and pod.nonzero_memory >= 0):
            req = np.zeros(len(state.resources), np.int64)
            for n, v in key[0]:
                if n != "pods":
                    req[res[n]] = v
            req[L.RES_PODS] = 1
            got = state.pods.shape_of(req, pod.nonzero_cpu, pod.nonzero_memory)
        memo[2][key] = got
    return got


def _release(state: ClusterState, rows: np.ndarray, sids: list) -> None:
    """Take the requests of pods of shapes ``sids`` off ``rows`` ([k]
    int64): each shape its count per row at once."""
    shapes, requested, nonzero = state.pods.shapes, state.requested, state.nonzero_requested
    shape_at = np.array(sids, np.int64)
    for sid in dict.fromkeys(sids):
        req, nz = shapes[sid]
        on, count = np.unique(rows[shape_at == sid], return_counts=True)
        requested[on, : req.shape[0]] -= count[:, None] * req
        nonzero[on] -= count[:, None] * np.array(nz, np.int64)


def _touch_each(state: ClusterState, rows: np.ndarray) -> None:
    """``_touch`` of each of ``rows`` ([k] int64) in order: ``version``
    k steps on, each row stamped with the step of its last touch."""
    k = rows.shape[0]
    if not k:
        return
    base = state.version
    state._touch(int(rows[-1]))          # the growth check, the last stamp
    state.version = base + k
    last, at = np.unique(rows[::-1], return_index=True)
    state.row_version[last] = base + k - at
    if 1 < k <= LOG_READ_MAX:
        # each row once, at its last touch, in version order (the _touch
        # above logged the last row at base + 1, a version its row_version
        # holds only when k == 1: readers skip that entry)
        order = np.argsort(-at, kind="stable")
        state.write_log.add_many(last[order], base + k - at[order])
    elif k > LOG_READ_MAX:
        state.write_log.restart(state.version)


def _check_sum_room(state: ClusterState, pod: PodRecord, row: int,
                    minus: PodRow | None = None) -> None:
    """Refuse (StateError naming the pod and field, nothing changed) a pod
    whose requests would take the node's ``requested`` (or non-zero
    requested) sum past int64.  Upstream adds int64s (NodeInfo.Requested)
    and would silently wrap to a negative sum; neither wrapping nor
    saturating gives a meaningful fit, so the pod is refused."""
    def current(col: int, arr) -> int:
        got = int(arr[row, col]) if col < arr.shape[1] else 0
        if minus is not None:
            vec = minus.request if arr is state.requested else minus.nonzero
            got -= int(vec[col]) if col < len(vec) else 0
        return got

    for name, v in pod.requests.items():
        col = state.resources.get(name) if name in state.resources.index else None
        have = current(col, state.requested) if col is not None else 0
        if have + int(v) > _INT64_MAX:
            raise StateError(
                f"Pod {pod.key}: spec.containers[*].resources.requests.{name}: "
                f"{v} more on node {state.node_name(row)!r} (requested {have}) "
                "overflows int64")
    for col, (name, v) in enumerate((("cpu", pod.nonzero_cpu),
                                      ("memory", pod.nonzero_memory))):
        have = current(col, state.nonzero_requested)
        if have + int(v) > _INT64_MAX:
            raise StateError(
                f"Pod {pod.key}: spec.containers[*].resources.requests.{name}: "
                f"{v} more on node {state.node_name(row)!r} (non-zero requested "
                f"{have}) overflows int64")
