"""Slices of the sample openb CSVs (data/openb/csv) for tests."""

from __future__ import annotations

from tensorsched.topology.openb import replay as R

NODES = "data/openb/csv/openb_node_list_gpu_node.csv"


def openb_slice(tmp_path, trace: str, n_nodes: int, n_pods: int,
                leave_every: int | None = None) -> tuple[str, str]:
    """(node CSV, pod CSV) paths of the first ``n_nodes`` GPU nodes and the
    first ``n_pods`` pods of trace ``trace``; with ``leave_every`` only one
    pod in that many keeps its ``deletion_time`` (the others never leave)."""
    out = []
    for src, dst, n in ((NODES, tmp_path / "nodes.csv", n_nodes),
                        (f"data/openb/csv/openb_pod_list_{trace}.csv", tmp_path / "pods.csv",
                         n_pods)):
        with open(src) as f:
            lines = f.readlines()[:n + 1]
        if leave_every is not None and "deletion_time" in lines[0]:
            col = lines[0].strip().split(",").index("deletion_time")
            for j in range(1, len(lines)):
                if j % leave_every:
                    cells = lines[j].rstrip("\n").split(",")
                    cells[col] = ""
                    lines[j] = ",".join(cells) + "\n"
        dst.write_text("".join(lines))
        out.append(str(dst))
    return out[0], out[1]


def read_openb_slice(tmp_path, trace: str, n_nodes: int, n_pods: int):
    """``openb_slice`` read: (GpuInventory, TracePods) as ``replay`` takes them."""
    nodes, pods = openb_slice(tmp_path, trace, n_nodes, n_pods)
    return R.read_openb_nodes(nodes), R.read_openb_pods(pods)
