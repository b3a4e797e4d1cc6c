"""A cluster with CEL device selectors is refused, naming the object and
field, when cel-python (the ``dra`` extra) is missing; with it, it loads."""

from __future__ import annotations

from pathlib import Path

import pytest

from tensorsched.framework.errors import ManifestError
from tensorsched.framework.parsing.manifests import load_objects
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.state import dra_cel_required

EXAMPLE = Path(__file__).resolve().parents[3] / "data" / "examples" / "dra" / "cluster.yaml"

CLAIM = {
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
    "metadata": {"namespace": "ml", "name": "two-gpus"},
    "spec": {"devices": {"requests": [
        {"name": "plain", "exactly": {"deviceClassName": "plain"}},
        {"name": "gpu", "firstAvailable": [
            {"name": "big", "deviceClassName": "plain",
             "selectors": [{"cel": {"expression": "device.driver == 'gpu.example.com'"}}]}]},
    ]}},
}
PLAIN_CLASS = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
               "metadata": {"name": "plain"}, "spec": {}}


def test_the_example_cluster_loads_with_cel():
    assert dra_cel_required.cel_available()
    build_cluster(load_objects(str(EXAMPLE)), None)


def test_without_cel_the_first_selector_is_named(monkeypatch):
    monkeypatch.setattr(dra_cel_required, "cel_available", lambda: False)
    with pytest.raises(ManifestError) as err:
        build_cluster(load_objects(str(EXAMPLE)), None)
    assert err.value.obj.startswith(("DeviceClass ", "ResourceClaim"))
    assert err.value.field.endswith(".cel.expression")
    assert "tensorsched[dra]" in str(err.value)


def test_without_cel_a_subrequest_selector_is_named(monkeypatch):
    monkeypatch.setattr(dra_cel_required, "cel_available", lambda: False)
    with pytest.raises(ManifestError) as err:
        build_cluster([PLAIN_CLASS, CLAIM], None)
    assert err.value.obj == "ResourceClaim ml/two-gpus"
    assert err.value.field == "spec.devices.requests[1].firstAvailable[0].selectors[0].cel.expression"


def test_without_cel_objects_without_selectors_load(monkeypatch):
    monkeypatch.setattr(dra_cel_required, "cel_available", lambda: False)
    build_cluster([PLAIN_CLASS], None)
