"""The victim search on counts (``victims._counts_core``) as a Numba CUDA
kernel: one thread per position of the visiting order, each running
``position_kind`` (the numba visit's per-node lines, ``visit_rows`` holds
them inline; compiled as a device function on top of the fused filter
core's device functions and the same rules the numba visit inlines), the
visit and the pick left to ``_pick_cuda.pick_kernel``.

Arguments (``counts_kernel``): the stage packed as the fused stage takes it
(three node packs and the query buffer, ``fused.stage_args``) and the
allocatable read (the pack's view or the nominated pods' lowered copy);
the resident pod tables (``device.DeviceVictims``); ``index`` [N, 3C + 1]
int64, the resident importance order, class ids, terminating flags and
alike tail per row (``INDEX_PARTS``); the probes' node and domain tables
(``on_counts.DeviceCounts``: resident, sent by the rows that change), from
which each thread works out its row's probe arrays; ``visit`` [M, 1], the
nodes the visit may reach, resident (position j is row ``visit[(offset +
j) % M]``: upstream's visit is a rotation of them from a seeded offset, so
a preemptor whose nodes are the last one's sends only the offset);
``per``, one int64 buffer the host packs per preemptor (``PER_SCALARS``,
the offset among them, then the ``PER_PARTS``: NodeResourcesFit's compared columns,
the conditions' codes, what a pod of each class counts for each condition,
the spread constraints' scalars); and ``work``, the scratch kept between
preemptors (``WORK_PARTS``).

What a slot counts for condition c (``match[c, j, s]`` of the numba visit)
is looked up on the device: ``class_match[c, cls[row, s]]`` (0 for an
empty slot), and for a PodTopologySpread constraint 0 for a terminating
pod (such a pod counts for no spread constraint; a class does not tell
it).  Each thread writes its own position's row of ``match`` only.

Codes: the pick reads ``stats[j, 0] == 0`` as "a candidate", so a
position the host filters reject (code 0 in the numba visit's stats) gets
``CODE_KIND_BASE - kind`` there; ``device.decode_code`` reads it back.
"""

from __future__ import annotations

import inspect
import struct

import numpy as np
from numba import cuda

from tensorsched.kernels._compile import compile_module, compile_source
from tensorsched.kernels.fused import _cuda as _fused_cuda
from tensorsched.kernels.fused import stage_args as SA

from . import _counts_core
from .on_counts import CODE_KIND_BASE   # stats[j, 0] = CODE_KIND_BASE - kind, host kinds

THREADS_PER_BLOCK = 128

core = compile_module(_counts_core, lambda f: cuda.jit(f, device=True), _fused_cuda.core)
position_kind = core["position_kind"]

# The per-preemptor buffer: scalars, then each part's (offset, rows, cols)
# and its values.  1-D parts have rows = 1.
PER_SCALARS = ("n_spread", "ia_self", "ia_first", "check_ports", "any_pdb", "offset")
PER_PARTS = (("fit_cols", 1), ("fit_want", 1), ("ia_code", 1), ("ia_pos", 1),
             ("class_match", 2), ("sp_scalars", 2))
# The scratch: (name, dimensions) over "m" positions, "k" fit columns + 1,
# "c" slots, "h" conditions (S + P), "S" spread constraints, "P" affinity
# conditions, "p" PDBs, "s" statistics.  The probes' per-row arrays
# (``on_counts.Counts``) are scratch too: each thread writes its own row.
WORK_PARTS = (("work_fit", ("m", "k")), ("limit", ("m", "k")), ("viol", ("m", "c")),
              ("is_victim", ("m", "c")), ("taken", ("m", "h")), ("left", ("m", "p")),
              ("victims", ("m", "c")), ("stats", ("m", "s")), ("bits_out", ("m",)),
              ("match", ("h", "m", "c")), ("sp_valid", ("m", "S")),
              ("sp_counted", ("m", "S")), ("sp_base", ("m", "S")), ("sp_bound", ("m", "S")),
              ("sp_other", ("m", "S")), ("sp_here", ("m", "S")), ("ia_valid", ("m", "P")),
              ("ia_base", ("m", "P")))
# The resident index table's columns: order [C], cls [C], dying [C], alike_from [1].
INDEX_PARTS = ("order", "cls", "dying", "alike_from")
_HEAD = 3


# The per-preemptor buffer's header (parts' offsets and shapes) by the
# parts' shapes: a preemptor's parts have the shapes the last one's had
# (the same conditions and classes) far more often than not, so the
# header is worked out once per shapes (``COUNTERS["per_layouts"]``).
_PER_LAYOUTS: dict = {}
_PER_LAYOUTS_MAX = 256          # shapes kept at most (then forgotten, all)
COUNTERS = {"per_layouts": 0}
_SCALARS = struct.Struct("=" + "q" * len(PER_SCALARS))    # native order, 8 bytes each
_I64 = np.dtype(np.int64)


def _per_layout(shapes: tuple) -> bytes:
    """The header [3 x parts] int64 (offset, rows, cols) of parts of
    ``shapes`` (by ``PER_PARTS``) as bytes, checked against their
    dimensions."""
    at = len(PER_SCALARS) + _HEAD * len(PER_PARTS)
    head = []
    for (name, nd), shape in zip(PER_PARTS, shapes):
        if len(shape) != nd:
            raise ValueError(f"per-preemptor part {name}: {len(shape)} dimensions, want {nd}")
        rows, cols = (1, shape[0]) if nd == 1 else shape
        head += (at, rows, cols)
        at += rows * cols
    if len(_PER_LAYOUTS) >= _PER_LAYOUTS_MAX:
        _PER_LAYOUTS.clear()
    got = _PER_LAYOUTS[shapes] = np.array(head, np.int64).tobytes()
    COUNTERS["per_layouts"] += 1
    return got


def pack_per(scalars: tuple, parts: tuple) -> np.ndarray:
    """The per-preemptor buffer [size] int64 (writable) from ``scalars``
    (ints or bools in ``PER_SCALARS`` order) and ``parts`` (integer or bool
    arrays in ``PER_PARTS`` order, of its dimensions): the scalars, the
    header (kept by the parts' shapes: ``_per_layout``), each part's
    values in C order.  Joined as bytes (a part's ``tobytes`` is C order
    whatever its dimensions): a few small parts, so per-call NumPy costs
    (reshape, concatenation's checks) are what this saves."""
    if len(scalars) != len(PER_SCALARS) or len(parts) != len(PER_PARTS):
        raise ValueError(f"per-preemptor buffer: {len(scalars)} scalars and {len(parts)} "
                         f"parts, want {len(PER_SCALARS)} and {len(PER_PARTS)}")
    parts = [a if isinstance(a, np.ndarray) and a.dtype == _I64 else _as_i64(name, a)
             for (name, _nd), a in zip(PER_PARTS, parts)]
    shapes = tuple([a.shape for a in parts])
    head = _PER_LAYOUTS.get(shapes)
    if head is None:
        head = _per_layout(shapes)
    try:
        first = _SCALARS.pack(*scalars)
    except struct.error:            # NumPy scalars: as Python ints
        first = _SCALARS.pack(*[int(v) for v in scalars])
    return np.frombuffer(bytearray().join([first, head] + [a.tobytes() for a in parts]),
                         np.int64)


def _as_i64(name: str, a) -> np.ndarray:
    """Part ``name`` as int64 (integers or bools only)."""
    a = np.asarray(a)
    if a.dtype.kind not in "biu":
        raise ValueError(f"per-preemptor part {name}: dtype {a.dtype}, want integers or bools")
    return a.astype(np.int64)


def work_layout(m: int, k: int, c: int, n_spread: int, n_ia: int, p: int,
                s: int) -> tuple[np.ndarray, int]:
    """(header [3 x parts] int64, buffer size) of the scratch for ``m``
    positions (3-D ``match``: rows h, then m * c)."""
    dims = {"m": m, "k": k, "c": c, "h": n_spread + n_ia, "S": n_spread, "P": n_ia, "p": p,
            "s": s}
    head = np.zeros((len(WORK_PARTS), _HEAD), np.int64)
    at = head.size
    for q, (_name, shape) in enumerate(WORK_PARTS):
        d = [dims[x] for x in shape]
        size = int(np.prod(d))
        head[q] = (at, d[0], size // d[0] if d[0] else 0)
        at += size
    return head.reshape(-1), at


def work_views(buf, head: np.ndarray) -> dict:
    """The 2-D views (rows, the rest) of a work buffer's parts by name."""
    out = {}
    for q, (name, _shape) in enumerate(WORK_PARTS):
        at, rows, cols = (int(v) for v in head[_HEAD * q:_HEAD * (q + 1)])
        out[name] = buf[at:at + rows * cols].reshape(rows, cols)
    return out


def _per_lines(indent: str) -> str:
    lines = [f"{name} = per[{k}]" for k, name in enumerate(PER_SCALARS)]
    for k, (name, nd) in enumerate(PER_PARTS):
        h = len(PER_SCALARS) + _HEAD * k
        span = f"per[per[{h}]:per[{h}] + per[{h + 1}] * per[{h + 2}]]"
        lines.append(f"{name} = {span}" if nd == 1 else
                     f"{name} = {span}.reshape((per[{h + 1}], per[{h + 2}]))")
    return "".join(f"{indent}{line}\n" for line in lines)


def _work_lines(indent: str) -> str:
    lines = []
    for q, (name, shape) in enumerate(WORK_PARTS):
        h = _HEAD * q
        span = f"work[work[{h}]:work[{h}] + work[{h + 1}] * work[{h + 2}]]"
        if len(shape) == 1:
            lines.append(f"{name} = {span}")
        elif len(shape) == 2:
            lines.append(f"{name} = {span}.reshape((work[{h + 1}], work[{h + 2}]))")
        else:                   # 3-D: (h, m, c), c the table's slots
            lines.append(f"{name} = {span}.reshape((work[{h + 1}], "
                         f"work[{h + 2}] // c_max, c_max))")
    return "".join(f"{indent}{line}\n" for line in lines)


def _stage_lines(indent: str) -> str:
    return "".join(line + "\n" for line in SA.unpack_source(indent).splitlines()
                   if not line.strip().startswith("allocatable ="))


_TEMPLATE = """
def counts_kernel(prio, node_i64, node_flags, label_vals, qbuf, allocatable, pod_count,
                  pod_prio, pod_start, pod_req, pod_ports, pod_pdb, pdb_allowed, index,
                  probe_nodes, probe_doms, visit, per, work):
    j = cuda.grid(1)
{per}    n_pos = visit.shape[0]
    if j >= n_pos:
        return
    c_max = (index.shape[1] - 1) // 3
{stage}{work}    pod_order = index[:, 0:c_max]
    row = visit[(offset + j) % n_pos, 0]
    # The probes' arrays of this row (``SpreadProbe.arrays``,
    # ``AffinityProbe.arrays``) from the node and domain tables.
    n_ia = ia_code.shape[0]
    for c in range(n_spread):
        d = probe_nodes[row, c]
        ok = d >= 0
        counted = ok and probe_nodes[row, n_spread + c] >= 0
        base = 0
        if ok:
            base = probe_doms[d, c]
        here = False
        other = 0
        if sp_scalars[c, 1] != 0:
            if ok:
                here = probe_doms[d, n_spread + c] != 0
            other = sp_scalars[c, 2]
            if here and base == sp_scalars[c, 2] and sp_scalars[c, 3] <= 1:
                other = sp_scalars[c, 4]
        if counted:
            base += probe_nodes[row, 2 * n_spread + c]
        sp_valid[j, c] = 1 if ok else 0
        sp_counted[j, c] = 1 if counted else 0
        sp_base[j, c] = base
        sp_bound[j, c] = sp_scalars[c, 0]
        sp_other[j, c] = other
        sp_here[j, c] = 1 if here else 0
    for c in range(n_ia):
        d = probe_nodes[row, 3 * n_spread + c]
        ia_valid[j, c] = 1 if d >= 0 else 0
        ia_base[j, c] = 0
        if d >= 0:
            ia_base[j, c] = probe_doms[d, 2 * n_spread + c]
    # What each slot of this position's row counts per condition.
    for h in range(match.shape[0]):
        for s in range(match.shape[2]):
            got = 0
            if s < c_max:
                k = index[row, c_max + s]
                if k >= 0 and not (h < n_spread and index[row, 2 * c_max + s] != 0):
                    got = class_match[h, k]
            match[h, j, s] = got
    static_flags = filter_flags & ~(F_PORTS | F_FIT)
    fit = (filter_flags & F_FIT) != 0
    monotone = True
    for h in range(ia_code.shape[0]):
        if ia_code[h] == 1:
            monotone = False
    kind = position_kind(j, row, {args})
    if kind != KIND_OK and stats[j, 0] == 0:
        stats[j, 0] = CODE_KIND_BASE - kind
"""

# position_kind's parameters as the kernel names them (the rest are names
# of the stage, the tables, ``per`` or ``work``).
_RENAME = {"alike_from": "index[:, 3 * c_max]", "cur": "victims[j]", "work": "work_fit[j]",
           "limit": "limit[j]", "viol": "viol[j]", "is_victim": "is_victim[j]",
           "taken": "taken[j]", "left": "left[j]", "ia_self": "ia_self != 0",
           "ia_first": "ia_first != 0", "check_ports": "check_ports != 0",
           "any_pdb": "any_pdb != 0"}
_ARGS = ", ".join(_RENAME.get(p, p)
                  for p in list(inspect.signature(_counts_core.position_kind).parameters)[2:])

def kernel_source() -> str:
    """The source ``counts_kernel`` is compiled from (one thread a
    position: ``j = cuda.grid(1)``, then ``if j >= n_pos: return``), for a
    host twin compiled from the same lines (``bench.preempt_host``'s
    stand-in of the launch); its names besides the parameters:
    ``position_kind``, ``F_PORTS``, ``F_FIT``, ``KIND_OK``,
    ``CODE_KIND_BASE``."""
    return _TEMPLATE.format(per=_per_lines("    "), stage=_stage_lines("    "),
                            work=_work_lines("    "), args=_ARGS)


counts_kernel = compile_source(
    f"{__name__}.kernel",
    kernel_source(),
    cuda.jit, ("counts_kernel",),
    namespace={"cuda": cuda, "position_kind": position_kind, "F_PORTS": _counts_core.F_PORTS,
               "F_FIT": _counts_core.F_FIT, "KIND_OK": _counts_core.KIND_OK,
               "CODE_KIND_BASE": CODE_KIND_BASE},
    filename="<victims counts kernel>")["counts_kernel"]


def launch(n_pos: int, prio: int, packs, qbuf, allocatable, tables, pdb_allowed, index,
           probe_nodes, probe_doms, visit, per, work) -> None:
    """``counts_kernel`` over ``n_pos`` positions (see the module doc)."""
    blocks = max(1, (n_pos + THREADS_PER_BLOCK - 1) // THREADS_PER_BLOCK)
    counts_kernel[blocks, THREADS_PER_BLOCK](np.int64(prio), *packs, qbuf, allocatable,
                                             *tables, pdb_allowed, index, probe_nodes,
                                             probe_doms, visit, per, work)
