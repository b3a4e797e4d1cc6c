"""Every golden case of the node-level plugins through the project's real
``explain()`` (manifests -> ClusterState -> PodQuery -> fused kernels ->
Framework.run_cycle), on every backend.

The oracle is checked against the same cases in test_oracle_golden.py; here
the project itself must reproduce upstream's expectations exactly:

* filter cases: for each node, the rejecting plugin's code and reasons (or
  feasibility when upstream says Success);
* score cases: the plugin's normalized score per node (the profile has no
  filters, so every node is feasible and scored, which is how upstream's
  plugin tests call Score), or the plugin absent when PreScore says Skip;
* config_error cases: loading the configuration raises ConfigError naming
  the field.

Golden objects come from upstream Go tests where pods (and some nodes) have
no name; the API server requires one, and so does tensorsched's manifest
loader, so unnamed objects get a placeholder name.  This never changes an
outcome: the only nameless nodes are in NodeAffinity filter cases without
matchFields (checked below), so the node name is never read.
"""

from __future__ import annotations

import pytest
from support.backends import backend_params
from support.golden import (
    LEFT_OUT,
    golden_available,
    golden_profile_to_config,
    load_cases,
    named,
)

from tensorsched.framework.config.kube_config import load_config
from tensorsched.framework.errors import ConfigError
from tensorsched.framework.plugins import in_tree_registry
from tensorsched.framework.scheduler.explain import explain

# The cases left out are exactly those the golden loader marks with a
# skip_reason (support.golden.LEFT_OUT): every other filter / score /
# config_error case is expressible through explain.
_CASES = load_cases() if golden_available() else []
_EXPLAINABLE = [c for c in _CASES if c.kind in ("filter", "score", "config_error")]
_RUNNABLE = [c for c in _EXPLAINABLE if c.skip_reason is None]
_FILTER = [c for c in _RUNNABLE if c.kind == "filter"]
_SCORE = [c for c in _RUNNABLE if c.kind == "score"]
_CONFIG = [c for c in _RUNNABLE if c.kind == "config_error"]

needs_golden = pytest.mark.skipif(not golden_available(), reason="golden data not found")


def _ids(cases):
    return [c.id for c in cases]


@needs_golden
def test_left_out_is_exactly_the_skipped_cases():
    skipped = {c.id: c.skip_reason for c in _CASES if c.skip_reason}
    assert set(skipped) == set(LEFT_OUT)
    assert {c.id for c in _EXPLAINABLE} - {c.id for c in _RUNNABLE} == set(LEFT_OUT)
    assert len(_FILTER) + len(_SCORE) + len(_CONFIG) + len(LEFT_OUT) == len(_EXPLAINABLE)
    assert _FILTER and _SCORE and _CONFIG


@needs_golden
@pytest.mark.parametrize("backend", backend_params())
@pytest.mark.parametrize("case", _FILTER, ids=_ids(_FILTER))
def test_golden_filter_explain(case, backend):
    objects, pod, node = named(case)
    out = explain(objects, pod, golden_profile_to_config(case.profile), backend=backend)
    assert out["backend"] == backend
    for golden_node, want in case.expected["filter"].items():
        name = node(golden_node)
        if want is None:
            assert name in out["feasible"], out["filter"].get(name)
            assert name not in out["filter"]
        else:
            assert name not in out["feasible"]
            assert out["filter"][name] == want


@needs_golden
@pytest.mark.parametrize("backend", backend_params())
@pytest.mark.parametrize("case", _SCORE, ids=_ids(_SCORE))
def test_golden_score_explain(case, backend):
    objects, pod, node = named(case)
    plugin = case.plugin
    out = explain(objects, pod, golden_profile_to_config(case.profile), backend=backend)
    assert out["filter"] == {}
    nodes = [o["metadata"]["name"] for o in objects if o["kind"] == "Node"]
    assert out["feasible"] == nodes
    if case.expected["prescore_skip"]:
        assert all(plugin not in s for s in out["scores"].values()), out["scores"]
        assert all(t == 0 for t in out["total"].values())
    else:
        want = {node(n): s for n, s in case.expected["scores"].items()}
        got = {n: s[plugin] for n, s in out["scores"].items()}
        assert got == want
        assert out["total"] == want                     # weight 1, one plugin
        best = max(want.values())
        assert want[out["selected"]] == best


@needs_golden
@pytest.mark.parametrize("case", _CONFIG, ids=_ids(_CONFIG))
def test_golden_config_error_load_config(case):
    cfg = golden_profile_to_config(case.profile)
    with pytest.raises(ConfigError) as err:
        load_config(cfg, in_tree_registry().plugin_points())
    assert err.value.field.endswith("args." + case.expected["field"]), err.value.field


@needs_golden
@pytest.mark.parametrize("backend", backend_params())
@pytest.mark.parametrize("case", _CONFIG, ids=_ids(_CONFIG))
def test_golden_config_error_explain(case, backend):
    objects, pod, _ = named(case)
    with pytest.raises(ConfigError) as err:
        explain(objects, pod, golden_profile_to_config(case.profile), backend=backend)
    assert err.value.field.endswith("args." + case.expected["field"]), err.value.field
