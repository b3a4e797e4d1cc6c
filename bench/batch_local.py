"""The node-local kernels' parts of ``bench/batch_check.py``: their inputs
(built once, outside the timings), one backend's run of them, and whether
two backends' answers are identical.

- ``probe``: the capacity probes' kernel (``LocalProber.batch`` then
  ``run_local_batch`` on numba, ``run_local_batch_cuda`` on cuda) on the
  affinity cluster of ``bench/ipa_static.py`` (``nodes`` basic nodes, a db
  pod every fourth node with preferred anti-affinity to web pods per node,
  a guard every tenth node with required anti-affinity to them:
  InterPodAffinity as static columns, filtering and scoring), ``probes``
  probes each of the nodes with bound pods and a seeded random ~90 % of
  the others (as ``nodes_to_add``'s probes, the kernel takes the bound
  pods' terms as constants: every probe holds them), scheduling ``pods``
  pods (every other one a web pod with preferred affinity to db zones, the
  others plain 250m / 512Mi); answers: each pod's node row, each probe's
  bound count.
- ``trace``: the node-local kernel's trace form (``sweep_local.run_setups``:
  one call of every configuration and seed) on two clusters: the sweep of
  ``bench/sweep_local.py`` (``nodes`` basic nodes, ``pods`` pods leaving at
  a time, its three default-profile configurations) and the affinity
  cluster fed ``pods`` web pods (``app=web``: the bound pods' terms select
  them) leaving a ``duration`` after their binding, under the same three
  configurations; ``seeds`` seeds each.  Answers: per run its nodes, bind
  times, attempts and change log.
- ``fit``: ``how_many_fit`` of three templates (100m / 500Mi, 500m / 1Gi,
  1 / 2Gi) on ``nodes`` basic nodes, filling the cluster and then as
  ``replicas`` (the fill's counts, the last template's plus five), through
  the batched node-local kernel (``backend``);
  answers: the two reports but their backend field.
"""

from __future__ import annotations

import copy
import tempfile
from pathlib import Path

import numpy as np
import yaml

from tensorsched.experiments import sweep_local as SL
from tensorsched.experiments.simulate_run import read_trace_file
from tensorsched.framework.capacity.batch_probe import LocalProber
from tensorsched.framework.capacity.common import bound_pods
from tensorsched.framework.capacity.fit import how_many_fit
from tensorsched.framework.parsing.manifests import load_objects, parse_objects
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.generators.clusters import basic, pod_dict
from tensorsched.kernels.batch.local_cpu import run_local_batch

from .ipa_static import CONFIG, affinity_cluster, web_template
from .sweep_local import write_inputs

TEMPLATES = (("100m", "500Mi"), ("500m", "1Gi"), ("1", "2Gi"))


def _device(backend: str):
    """The cuda module (imported only when asked: it refuses to import
    without a device or the simulator)."""
    if backend == "cuda":
        from tensorsched.kernels.batch import local_cuda, local_trace_cuda
        return local_cuda, local_trace_cuda
    return None


# ------------------------------------------------------------------ probe

def probe_inputs(nodes: int, probes: int, pods: int, seed: int = 0) -> tuple:
    """(the kernel's ``LocalBatch``, the part's sizes) of ``probe`` (module
    doc)."""
    cluster = build_cluster(affinity_cluster(nodes), CONFIG)
    web = web_template()
    objs = []
    for j in range(pods):
        if j % 2 == 0:
            d = copy.deepcopy(web)
            d["metadata"]["name"] = f"web-{j}"
            objs.append(d)
        else:
            objs.append(pod_dict(f"plain-{j}", cpu="250m", memory="512Mi"))
    recs = [cluster.resolve(p) for p in parse_objects(objs).pods]
    names = [n.name for n in cluster.objects.nodes]
    prober = LocalProber(cluster, list(cluster.objects.nodes), bound_pods(cluster), recs, seed)
    rng = np.random.default_rng(seed)
    # the nodes whose bound pods the terms read are in every probe (the
    # kernel takes them as constants); the others each in ~90 % of them
    held = {p.node_name for p in bound_pods(cluster)}
    node_sets = [[n for n in names if n in held or rng.random() < 0.9] for _ in range(probes)]
    batch, _orders = prober.batch(node_sets, [list(range(pods))] * probes)
    sizes = {"nodes": nodes, "probes": probes, "pods_per_probe": pods,
             "bound_pods": len(bound_pods(cluster)),
             "ipa_filtered_nodes": int((prober.base["static_bits"] != 0).any(axis=0).sum()),
             "node_rows": int(batch.node_rows.shape[0]), "attempts": probes * pods}
    return batch, sizes


def run_probe(backend: str, batch) -> tuple:
    """(answers, metrics) of one backend's call."""
    dev = _device(backend)
    res = dev[0].run_local_batch_cuda(batch) if dev else run_local_batch(batch)
    return (res.rows, res.bound), {"bound": int(res.bound.sum())}


def same_probe(x: tuple, y: tuple) -> bool:
    return all(np.array_equal(u, v) for u, v in zip(x, y))


# ------------------------------------------------------------------ trace

def _web_trace(path: Path, pods: int, seed: int = 0) -> None:
    """``pods`` web pods (``app=web``) a second apart, most leaving a
    duration after their binding."""
    rng = np.random.default_rng(seed)
    lines = ["name,arrival,duration,cpu,memory,labels"]
    for j in range(pods):
        stay = rng.choice([60, 600, 3600, -1])
        lines.append(f"w{j},{j},{'' if stay < 0 else int(stay)},"
                     f"{rng.choice(['100m', '500m', '1'])},{rng.choice(['256Mi', '1Gi'])},app=web")
    path.write_text("\n".join(lines) + "\n")


def trace_inputs(nodes: int, pods: int, seeds: int) -> tuple:
    """([(setups, seeds)] per cluster, the part's sizes) of ``trace``
    (module doc)."""
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(tmp)
        cluster, trace_path, configs = write_inputs(where, nodes, pods)
        cfgs = [yaml.safe_load(Path(c).read_text()) for c in configs]
        plain = load_objects(cluster)
        trace = read_trace_file(trace_path)
        _web_trace(where / "web.csv", pods)
        web = read_trace_file(str(where / "web.csv"))
    aff = affinity_cluster(nodes)
    groups = []
    for objs, tr in ((plain, trace), (aff, web)):
        setups = [SL.trace_setup(objs, c, tr) for c in cfgs]
        groups.append((setups, [list(range(seeds))] * len(setups)))
    runs = sum(len(s) * len(sd[0]) for s, sd in groups)
    sizes = {"clusters": ["basic", "affinity"], "nodes": nodes, "pods_per_run": pods,
             "configs": len(cfgs), "seeds": seeds, "runs": runs, "pods": runs * pods}
    return groups, sizes


def run_trace(backend: str, groups: list) -> tuple:
    """(answers, metrics) of one backend: one ``run_setups`` call per cluster."""
    got = [SL.run_setups(setups, seeds, backend=backend) for setups, seeds in groups]
    flat = [r for per_cluster in got for per_config in per_cluster for r in per_config]
    return flat, {"scheduled": int(sum(int((r.node >= 0).sum()) for r in flat)),
                  "attempts": int(sum(int(r.tries.sum()) for r in flat))}


def same_trace(xs: list, ys: list) -> bool:
    return len(xs) == len(ys) and all(
        np.array_equal(getattr(x, k), getattr(y, k), equal_nan=True)
        for x, y in zip(xs, ys) for k in ("node", "bind", "tries", "log_t", "log_pod")) and all(
        x.end == y.end for x, y in zip(xs, ys))


# ------------------------------------------------------------------ fit

def fit_inputs(nodes: int) -> tuple:
    """(cluster, templates, the part's sizes) of ``fit`` (module doc)."""
    node_objs, _ = basic(nodes, 0)
    cluster = build_cluster(node_objs, CONFIG)
    templates = [pod_dict(f"t-{cpu}-{mem}".lower(), cpu=cpu, memory=mem)   # a DNS-1123 name
                 for cpu, mem in TEMPLATES]
    return (cluster, templates), {"nodes": nodes, "templates": [f"{c}/{m}" for c, m in TEMPLATES]}


def _strip(doc: dict) -> dict:
    doc = copy.deepcopy(doc)
    doc["spec"].pop("backend", None)
    return doc


def run_fit(backend: str, inputs: tuple) -> tuple:
    """(answers, metrics) of one backend: the fill, then the replicas."""
    cluster, templates = inputs
    fill = how_many_fit(cluster, templates, backend=backend, seed=0).to_dict()
    counts = [t["count"] for t in fill["status"]["templates"]]
    replicas = counts[:-1] + [counts[-1] + 5]
    rep = how_many_fit(cluster, templates, replicas=replicas, backend=backend,
                       seed=0).to_dict()
    return ([_strip(fill), _strip(rep)],
            {"fill_total": fill["status"]["total"], "replicas": replicas,
             "replicas_fit": rep["status"]["fits"]})


def same_fit(x: list, y: list) -> bool:
    return x == y
