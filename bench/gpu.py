"""Helpers of ``tensorsched bench --workload gpu`` (``generators.gpu_clusters.gpu``)."""

from __future__ import annotations

import hashlib

from tensorsched.framework.parsing.manifests import parse_pod
from tensorsched.framework.runtime.blocks import place_block
from tensorsched.framework.runtime.plugin import CycleContext
from tensorsched.topology.gpu_table import GpuTable


def warm_up(cluster, fw, pod_objs, seed: int) -> None:
    """Compile every GPU pod shape's path (filter, scores, Reserve's pick)
    and the queue's compiled block outside the timed run; the state is left
    as it was."""
    state = cluster.state
    seen = set()
    node = state.node_name(int(state.valid_rows()[0]))
    for obj in pod_objs:
        annos = tuple(sorted((obj["metadata"].get("annotations") or {}).items()))
        req = tuple(sorted(obj["spec"]["containers"][0]["resources"]["requests"].items()))
        if (annos, req) in seen:
            continue
        seen.add((annos, req))
        warm = parse_pod(dict(obj, metadata=dict(obj["metadata"], name="warm-up-gpu")))
        fw.run_cycle(state, warm, seed=seed)
        fw.run_cycle(state, warm, seed=seed, want_scores=False)
        state.add_pod(warm, node)
        for p in fw.plugins_at("reserve"):
            p.reserve(CycleContext(state, warm, fw), node)
        for p in reversed(fw.plugins_at("reserve")):
            p.unreserve(CycleContext(state, warm, fw), node)
        state.remove_pod(warm.key)
    block = [parse_pod(dict(obj, metadata=dict(obj["metadata"], name=f"warm-up-block-{i}")))
             for i, obj in enumerate(pod_objs[:2])]
    got = place_block(fw, state, block, seed=seed, attempt=0, start_index=0,
                      stop_at_failure=True)
    for pod in block[:0 if got is None else got.rows.shape[0]]:
        state.remove_pod(pod.key)


def gpu_summary(cluster, bindings) -> dict:
    """GPU fields of the record: GPUs allocated, and a sha256 over the
    ordered (pod, node, GPU indices) placements; checks the table's
    invariants (nothing over-allocated)."""
    t = GpuTable.of(cluster.state)
    t.check()
    h = hashlib.sha256()
    milli = 0
    for b in bindings:
        a = t.alloc.get(b.pod) if b.node is not None else None
        idx = ",".join(str(g) for g in a.indices) if a is not None else ""
        if a is not None:
            milli += a.milli * len(a.indices)
        h.update(f"{b.pod} {b.node if b.node is not None else '-'} {idx}\n".encode())
    return {"gpu_placements_sha256": h.hexdigest(), "gpu_milli_allocated": milli,
            "gpus_total": int(t.count[:cluster.state.n_rows].sum())}
