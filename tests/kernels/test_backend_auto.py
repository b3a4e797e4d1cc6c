"""``--backend auto``: each stage resolves it (the GPU for the stages
measured faster there when a GPU is present, numba otherwise), the CLI and
the facade accept it, and explain says which backend ran."""

import json

import pytest
import yaml

from tensorsched.cli import main
from tensorsched.framework.parsing.manifests import parse_pod
from tensorsched.generators.clusters import node_dict, pod_dict, sample
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.explain import explain_pod
from tensorsched.framework.scheduler.scheduler import Scheduler
from tensorsched.kernels import backend_names as BN
from tensorsched.kernels._deps import gpu_present
from tensorsched.kernels.fused.backends import resolve_backend


def test_auto_follows_this_machine():
    # Numba's CUDA simulator is no GPU: without a device every stage is numba
    gpu = gpu_present()
    assert {s: resolve_backend("auto", s) for s in BN.STAGES} == {
        s: BN.resolve_backend("auto", s, gpu) for s in BN.STAGES}
    assert resolve_backend("auto", BN.CYCLE) == "numba"
    if not gpu:
        assert {resolve_backend("auto", s) for s in BN.STAGES} == {"numba"}


def test_auto_schedules_as_numba_and_explain_says_numba_ran():
    nodes, pods = sample(seed=4, nodes=6, pods=10)
    placed = {}
    for backend in ("numba", "auto"):
        cluster = build_cluster(nodes + pods)
        sched = Scheduler(cluster, backend, seed=2)
        placed[backend] = [(b.pod, b.node) for b in sched.run(cluster.pending)]
        fw = cluster.framework_for(parse_pod(pod_dict("probe")), backend)
        assert fw.backend_name == "numba"
        assert fw.backend_for(BN.VICTIMS) == ("cuda" if backend == "auto" and gpu_present()
                                              else "numba")
    assert placed["auto"] == placed["numba"]
    cluster = build_cluster(nodes)
    auto = explain_pod(cluster, pods[0], backend="auto")
    assert auto.pop("backend") == "numba" and auto.pop("requested_backend") == "auto"
    numba = explain_pod(cluster, pods[0], backend="numba")
    assert "requested_backend" not in numba
    numba.pop("backend")
    assert auto == numba


def test_cli_accepts_auto_and_names_the_backend_that_ran(tmp_path, capsys):
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(yaml.safe_dump_all([node_dict("a", cpu="2"), node_dict("b", cpu="8")]))
    pod = tmp_path / "pod.yaml"
    pod.write_text(yaml.safe_dump_all([pod_dict("web", cpu="3")]))
    assert main(["explain", "--cluster", str(cluster), "--pod", str(pod),
                 "--backend", "auto"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["backend"] == "numba" and out["requested_backend"] == "auto"
    assert out["selected"] == "b"
    assert main(["explain", "--cluster", str(cluster), "--pod", str(pod), "--backend", "auto",
                 "--format", "table"]) == 0
    assert "backend numba (auto)" in capsys.readouterr().out
    assert main(["schedule", "--cluster", str(cluster), "--pods", str(pod),
                 "--backend", "auto"]) == 0
    assert "backend numba (auto)" in capsys.readouterr().err
