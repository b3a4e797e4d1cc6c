"""The victim search as a Numba CUDA kernel: one thread per candidate node,
running ``victims._core.victims_node`` compiled as a device function on top
of the fused filter core's device functions (``fused._cuda.core``).

``victims_kernel`` takes the node columns and the query packed as the fused
stage takes them (``fused.stage_args``: three node packs and one query
buffer, the cuda backend's device mirror), the per-call scratch in one
buffer (``WORK_PARTS``, header first), the resident pod tables and the
visiting order as a resident base and an offset (position j is row
``visit[(offset + j) % M, 0]``: upstream's visit is a rotation of the
candidate nodes from a seeded offset, so a preemptor whose nodes are the
last one's sends only the offset): sixteen arguments where the columns one
by one took 45 (numba-cuda pays microseconds per array argument at each
launch).  ``allocatable`` comes
apart: a view of the pack, or the lifted copy of host filters
(``framework.preemption.filter_hooks``).  The kernel is generated from the
declared lists (``stage_args.unpack_source``, ``WORK_PARTS`` and
``victims_node``'s parameters)."""

from __future__ import annotations

import inspect

import numpy as np
from numba import cuda

from tensorsched.kernels._compile import compile_module, compile_source
from tensorsched.kernels.fused import _cuda as _fused_cuda
from tensorsched.kernels.fused import stage_args as SA

from . import _core as _victims_core

THREADS_PER_BLOCK = 128

core = compile_module(_victims_core, lambda f: cuda.jit(f, device=True), _fused_cuda.core)
victims_node = core["victims_node"]

# The search's scratch in one int64 buffer: (name, rows: "n" node rows or
# "m" positions, columns: "r" resources, "wp" port words, "c" pod slots,
# "p" PDBs, "s" statistics).  Header: offset, rows, columns of each part.
WORK_PARTS = (("work_req", "n", "r"), ("work_ports", "n", "wp"), ("save_ports", "n", "wp"),
              ("order", "m", "c"), ("flags", "m", "c"), ("pdb_left", "m", "p"),
              ("victims", "m", "c"), ("stats", "m", "s"))
_WORK_HEAD = 3


def work_layout(n: int, m: int, r: int, wp: int, c: int, p: int,
                s: int) -> tuple[np.ndarray, int]:
    """(header [3 x parts] int64: each part's offset into the buffer and its
    shape, the buffer's size) for ``m`` positions over ``n`` node rows
    (``s`` statistics a position: ``search.N_STATS``)."""
    dims = {"n": n, "m": m, "r": r, "wp": wp, "c": c, "p": p, "s": s}
    head = np.zeros((len(WORK_PARTS), _WORK_HEAD), np.int64)
    at = head.size
    for k, (_name, rows, cols) in enumerate(WORK_PARTS):
        head[k] = (at, dims[rows], dims[cols])
        at += dims[rows] * dims[cols]
    return head.reshape(-1), at


def work_views(buf, head: np.ndarray) -> dict:
    """The parts of a work buffer (device or host) by name: 2-D views."""
    out = {}
    for k, (name, _r, _c) in enumerate(WORK_PARTS):
        at, rows, cols = (int(v) for v in head[_WORK_HEAD * k:_WORK_HEAD * (k + 1)])
        out[name] = buf[at:at + rows * cols].reshape(rows, cols)
    return out


_TEMPLATE = """
def victims_kernel(visit, offset, prio, node_i64, node_flags, label_vals, qbuf, allocatable,
                   pod_count, pod_prio, pod_start, pod_req, pod_ports, pod_pdb, pdb_allowed,
                   work):
    j = cuda.grid(1)
    n_pos = visit.shape[0]
    if j >= n_pos:
        return
{unpack}    victims_node(j, visit[(offset + j) % n_pos, 0], {args})
"""


def _work_lines(indent: str) -> str:
    lines = []
    for k, (name, _r, _c) in enumerate(WORK_PARTS):
        h = _WORK_HEAD * k
        lines.append(f"{name} = work[work[{h}]:work[{h}] + work[{h + 1}] * work[{h + 2}]]"
                     f".reshape((work[{h + 1}], work[{h + 2}]))")
    return "".join(f"{indent}{line}\n" for line in lines)


def _stage_lines(indent: str) -> str:
    """The fused stage's names from the packs, but ``allocatable`` (the
    kernel's own argument)."""
    return "".join(line + "\n" for line in SA.unpack_source(indent).splitlines()
                   if not line.strip().startswith("allocatable ="))


_ARGS = ", ".join(list(inspect.signature(_victims_core.victims_node).parameters)[2:])
victims_kernel = compile_source(
    f"{__name__}.kernel",
    _TEMPLATE.format(unpack=_stage_lines("    ") + _work_lines("    "), args=_ARGS),
    cuda.jit, ("victims_kernel",), namespace={"cuda": cuda, "victims_node": victims_node},
    filename="<victims kernel>")["victims_kernel"]


_HOST_TEMPLATE = """
def {name}(visit, offset, prio, node_i64, node_flags, label_vals, qbuf, allocatable,
           pod_count, pod_prio, pod_start, pod_req, pod_ports, pod_pdb, pdb_allowed, work):
    n_pos = visit.shape[0]
{unpack}    for j in range(n_pos):
        victims_node(j, visit[(offset + j) % n_pos, 0], {args})
"""


def host_loop_source(name: str) -> str:
    """``victims_kernel``'s body as the source of a host function ``name``
    (the kernel's parameters): the same unpacking of the packs and the work
    buffer, then ``victims_node`` position after position, for a host twin
    compiled beside it (``bench.preempt_host``'s stand-in of the launch)."""
    return _HOST_TEMPLATE.format(name=name, unpack=_stage_lines("    ") + _work_lines("    "),
                                 args=_ARGS)


def pack_stage(cols, q) -> SA.DeviceStage:
    """A ``stage_args.DeviceStage`` uploaded from host columns ``cols`` and
    query ``q`` (its bitsets as wide as the columns': ``search.pad_query``);
    the cuda backend's ``device_stage`` serves the scheduler from its
    mirror instead."""
    packs = tuple(cuda.to_device(a) for a in SA.pack_nodes(cols))
    spans, _, _ = SA.node_packs([getattr(cols, n).shape for n in SA.NODE_NAMES])
    lo, hi = spans[SA.NODE_NAMES.index("allocatable")]
    return SA.DeviceStage(packs, cuda.to_device(SA.pack_query(cols, q)), packs[0][:, lo:hi])


def launch(n_rows: int, visit, offset: int, prio: int, packs, qbuf, allocatable, tables,
           pdb_allowed, work) -> None:
    """``victims_kernel`` over the ``n_rows`` positions of the visiting
    order ``visit`` [n_rows, 1] (device) rotated by ``offset``; ``packs`` the
    device node packs, ``qbuf`` the packed query (``stage_args``),
    ``tables`` the six resident pod tables, ``work`` a buffer laid out by
    ``work_layout`` (header written)."""
    blocks = max(1, (n_rows + THREADS_PER_BLOCK - 1) // THREADS_PER_BLOCK)
    victims_kernel[blocks, THREADS_PER_BLOCK](visit, np.int64(offset), np.int64(prio), *packs,
                                              qbuf, allocatable, *tables, pdb_allowed, work)
