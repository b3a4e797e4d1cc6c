"""StorageCapacityScoring from a KubeSchedulerConfiguration file: VolumeBinding's
``shape`` in pluginConfig and the feature gate, as kube-scheduler takes them."""

from __future__ import annotations

import pytest

from tensorsched.framework.config.kube_config import load_config
from tensorsched.framework.config.plugin_args import (
    DEFAULT_CAPACITY_SHAPE,
    UtilizationShapePoint,
    VolumeBindingArgs,
)
from tensorsched.framework.errors import ConfigError
from tensorsched.framework.config import plugin_names as names
from tensorsched.framework.plugins import default_registry
from tensorsched.framework.scheduler.cluster import build_cluster

CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: VolumeBinding
    args:
      bindTimeoutSeconds: 300
      shape:
      - {utilization: 0, score: 0}
      - {utilization: 40, score: 3}
      - {utilization: 100, score: 10}
"""
ON = {"StorageCapacityScoring": True}


def _file(tmp_path, text=CONFIG):
    p = tmp_path / "sched.yaml"
    p.write_text(text)
    return p


def _volume_binding(cfg):
    cluster = build_cluster([], cfg)
    pod = cluster.resolve({"apiVersion": "v1", "kind": "Pod",
                           "metadata": {"name": "p", "namespace": "default"},
                           "spec": {"containers": [{"name": "c", "image": "i"}]}})
    return cluster.framework_for(pod, "numpy").plugins[names.VOLUME_BINDING]


def test_file_shape_reaches_the_plugin_with_the_gate_on(tmp_path):
    cfg = load_config(_file(tmp_path), default_registry().plugin_points(), feature_gates=ON)
    args = cfg.profiles[0].args[names.VOLUME_BINDING]
    P = UtilizationShapePoint
    assert args == VolumeBindingArgs(300, (P(0, 0), P(40, 3), P(100, 10)), True)
    plugin = _volume_binding(cfg)
    assert plugin.capacity_scoring
    assert plugin.shape_util.tolist() == [0, 40, 100]
    assert plugin.shape_score.tolist() == [0, 30, 100]      # scores on upstream's 0..100


def test_gate_on_without_shape_takes_upstreams_default(tmp_path):
    cfg = load_config(None, feature_gates=ON)
    assert cfg.profiles[0].args[names.VOLUME_BINDING].shape == DEFAULT_CAPACITY_SHAPE \
        == (UtilizationShapePoint(0, 10), UtilizationShapePoint(100, 0))
    assert _volume_binding(cfg).shape_score.tolist() == [100, 0]


def test_gate_off_keeps_the_score_off_and_refuses_a_shape(tmp_path):
    assert not _volume_binding(load_config(None)).capacity_scoring
    with pytest.raises(ConfigError) as e:
        load_config(_file(tmp_path))
    msg = str(e.value)
    assert "sched.yaml" in msg and "profiles[0].pluginConfig[0].args.shape" in msg
    assert "StorageCapacityScoring" in msg


@pytest.mark.parametrize("shape,field,problem", [
    ("[]", "args.shape", "at least one point"),
    ("[{utilization: 50, score: 1}, {utilization: 50, score: 2}]", "shape[1].utilization",
     "increasing order"),
    ("[{utilization: 101, score: 1}]", "shape[0].utilization", "[0, 100]"),
    ("[{utilization: 10, score: 11}]", "shape[0].score", "[0, 10]"),
])
def test_bad_shapes_name_the_field(tmp_path, shape, field, problem):
    text = CONFIG.split("      shape:")[0] + f"      shape: {shape}\n"
    with pytest.raises(ConfigError) as e:
        load_config(_file(tmp_path, text), feature_gates=ON)
    assert field in str(e.value) and problem in str(e.value)


def test_unknown_gate_is_refused():
    with pytest.raises(ConfigError, match="unrecognized feature gate: NoSuchGate"):
        load_config(None, feature_gates={"NoSuchGate": True})
    with pytest.raises(ConfigError, match="true or false"):
        load_config(None, feature_gates={"StorageCapacityScoring": "yes"})
