"""Whether a ``bench`` size fits in this machine's memory, known before
anything of that size is built.

A run holds, per node, its manifest (the synthetic workload's Node, with
its ResourceSlices for the DRA workloads) and its row of the cluster
state's node columns; per pod, its manifest and its rows of the pending and
bound pod columns.  The manifests' bytes per node and per pod are measured
on two tiny instances of the same workload (so per-node extras such as the
preemption workloads' bound victims count with the nodes); the columns'
bytes per row are read from the arrays of an empty ``ClusterState`` and
``BoundPods``, twice over: a column grows by doubling, and the copy and the
original are alive together while it grows.
"""

from __future__ import annotations

import os
import sys

import numpy as np

from tensorsched import synthetic
from tensorsched.framework.errors import TensorschedError
from tensorsched.framework.state.bound_pods import BoundPods
from tensorsched.framework.state.cluster_state import ClusterState

__all__ = ["available_memory_bytes", "bytes_per_row", "check_bench_size"]

#: a column is copied when it grows: the old and the new array at once
_GROWTH = 2
#: the tiny instances measured: (nodes, pods) and one more of each
_BASE = 4


def available_memory_bytes() -> int | None:
    """Memory the system can give a new process without swapping, in bytes
    (``MemAvailable`` of /proc/meminfo, else free pages); None where
    neither is known."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, AttributeError):
        return None


def _deep_size(obj, seen: set) -> int:
    """Bytes of a manifest (dicts, lists, strings, numbers), each object
    counted once."""
    if id(obj) in seen:
        return 0
    seen.add(id(obj))
    size = sys.getsizeof(obj)
    if isinstance(obj, dict):
        size += sum(_deep_size(k, seen) + _deep_size(v, seen) for k, v in obj.items())
    elif isinstance(obj, (list, tuple)):
        size += sum(_deep_size(x, seen) for x in obj)
    return size


def _manifest_bytes(workload: str, nodes: int, pods: int) -> int:
    node_objs, pod_objs = synthetic.workload(workload, nodes, pods, 0)
    return _deep_size((node_objs, pod_objs), set())


def _column_bytes(obj) -> float:
    """Bytes per row of ``obj``'s row-indexed arrays (those as long as its
    ``valid`` or ``node_row`` column)."""
    arrays = [v for v in vars(obj).values() if isinstance(v, np.ndarray) and v.ndim]
    rows = max(a.shape[0] for a in arrays)
    return sum(a.nbytes for a in arrays if a.shape[0] == rows) / rows


def bytes_per_row(workload: str) -> tuple[float, float]:
    """(bytes a node, bytes a pod) a ``workload`` run holds (module doc)."""
    base = _manifest_bytes(workload, _BASE, _BASE)
    per_node = (_manifest_bytes(workload, 2 * _BASE, _BASE) - base) / _BASE
    per_pod = (_manifest_bytes(workload, _BASE, 2 * _BASE) - base) / _BASE
    node_cols = _column_bytes(ClusterState())
    pod_cols = _column_bytes(BoundPods())
    # a pending pod is a row of the pending columns and then of the bound ones
    return (max(per_node, 0.0) + _GROWTH * node_cols,
            max(per_pod, 0.0) + 2 * _GROWTH * pod_cols)


def _gib(n: float) -> str:
    return f"{n / 2**30:,.1f} GiB"


def check_bench_size(workload: str, nodes: int, pods: int, available=None) -> None:
    """TensorschedError when ``nodes`` and ``pods`` would not fit in the
    memory available (``available`` bytes; default: the machine's), naming
    the flag that asks for the most and the estimate."""
    available = available_memory_bytes() if available is None else available
    if available is None:
        return
    node_b, pod_b = bytes_per_row(workload)
    need = nodes * node_b + pods * pod_b
    if need <= available:
        return
    parts = sorted([(nodes * node_b, f"--nodes {nodes}", f"{node_b:,.0f} bytes a node"),
                    (pods * pod_b, f"--pods {pods}", f"{pod_b:,.0f} bytes a pod")],
                   reverse=True)
    raise TensorschedError(
        f"bench --workload {workload}: {parts[0][1]} with {parts[1][1]} would hold about "
        f"{_gib(need)} ({parts[0][2]}, {parts[1][2]}), more than the {_gib(available)} "
        f"of memory available")
