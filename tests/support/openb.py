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


def with_durations(tw, every: int = 2):
    """``tw`` (a ``TraceWorkload``) with every ``every``-th pod that leaves
    leaving as long after its binding as it stayed after its arrival (a
    ``duration``, its absolute departure dropped)."""
    import numpy as np

    from tensorsched.topology.openb import batch as B
    leaves = np.flatnonzero(np.isfinite(tw.departure))[::every]
    dur = np.full(len(tw.arrival), np.inf)
    dur[leaves] = tw.departure[leaves] - tw.arrival[leaves]
    dep = tw.departure.copy()
    dep[leaves] = np.inf
    return B.TraceWorkload(tw.pods, tw.arrival, dep, tw.typical, dur)


def simulate_trace(inv, tw, policy: str, seed: int, interval: float | None = None,
                   config: dict | None = None, **options):
    """The ``Simulation`` that ``openb.batch.trace_batch`` reproduces for
    one run of ``tw`` (a ``TraceWorkload``) on ``inv``: (simulation, log,
    gpus) where ``log`` lists (time, pod index bound / -1 - index left,
    node index or -1) in the order the events happened and ``gpus`` maps a
    pod key to the GPU indices it was bound to; ``interval``: the GPU
    metrics sampled (``timeseries``); ``config``: a KubeSchedulerConfiguration
    instead of the experiment's (its GpuShareScore given the trace's
    typical pods; the tie labels set when OpenbTieRank scores); ``options``
    the Scheduler's."""
    import numpy as np
    import pyarrow as pa

    from tensorsched.framework.simulation.simulation import Simulation
    from tensorsched.topology.gpu import ANNO_GPU_COUNT, ANNO_GPU_MILLI, ANNO_GPU_MODEL
    from tensorsched.topology.gpu_table import GpuTable
    from tensorsched.topology.openb import batch as B
    from tensorsched.topology.openb import trace as T

    pods = tw.pods
    n = inv.n_nodes
    typical = T.typical_of(pods)
    if config is None:
        tie = None if policy == "Random" else B.tie_of(n, seed)
        config = T.openb_config(policy, typical, None if tie is None else n + 1)
    else:
        import copy
        config = copy.deepcopy(config)
        prof = config["profiles"][0]
        scores = prof["plugins"]["score"]["enabled"]
        tie = B.tie_of(n, seed) if any(p["name"] == T.NAME_TIE for p in scores) else None
        for pc in prof.get("pluginConfig", []):
            if pc["name"] == "GpuShareScore" and typical:
                pc["args"]["typicalPods"] = typical
    annos = []
    for j in range(len(pods)):
        num, milli = int(pods.num[j]), int(pods.milli[j])
        a = None
        if num and milli:
            a = [(ANNO_GPU_MILLI, str(milli)), (ANNO_GPU_COUNT, str(num))]
            if pods.spec[j]:
                a.append((ANNO_GPU_MODEL, pods.spec[j]))
        annos.append(a)
    dep = [float(d) if np.isfinite(d) else None for d in tw.departure]
    dur = [float(d) if np.isfinite(d) else None for d in tw.duration]
    table = pa.table({"name": pa.array(pods.names), "arrival": pa.array(tw.arrival),
                      "departure": pa.array(dep, pa.float64()),
                      "duration": pa.array(dur, pa.float64()),
                      "cpu": pa.array(pods.cpu), "memory": pa.array(pods.mem * 1048576),
                      "annotations": pa.array(annos, pa.map_(pa.string(), pa.string()))})
    if tw.rank is not None:         # PrioritySort: the higher priority first
        table = table.append_column("priority", pa.array(-np.asarray(tw.rank), pa.int32()))
    sim = Simulation(T.openb_node_objects(inv, tie), config, "numba",
                     seed, interval=interval,
                     metrics=T._sampled_metrics(typical) if interval else None,
                     registry=T.experiment_registry(), **options)
    index = {name: i for i, name in enumerate(pods.names)}
    node_index = {name: i for i, name in enumerate(inv.names)}
    log, gpus = [], {}

    def bound(e):
        gt = GpuTable.attached(sim.cluster.state)
        a = gt.alloc.get(e["pod"]) if gt is not None else None
        gpus[e["pod"]] = tuple(a.indices) if a is not None and a.indices else ()
        log.append((e["time"], index[e["pod"].split("/", 1)[1]], node_index[e["node"]]))

    def departed(e):
        log.append((e["time"], -1 - index[e["pod"].split("/", 1)[1]], -1))

    sim.on("Bound", bound)
    sim.on("Departed", departed)
    sim.submit(table)
    sim.run()
    return sim, log, gpus
