"""A cluster with CEL device selectors is refused, naming the object and
field, when cel-python (the ``dra`` extra) is missing; with it, it loads."""

from __future__ import annotations

from pathlib import Path

import subprocess
import sys

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


# cel-python and what it brings (lark, re2, pendulum, jmespath) made
# unimportable, as on a machine with only the required dependencies
_WITHOUT_CEL = """
import sys, importlib.abc
class NotInstalled(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split('.')[0] in ('celpy', 'lark', 're2', 'pendulum', 'jmespath'):
            raise ModuleNotFoundError(f"No module named {name!r}")
sys.meta_path.insert(0, NotInstalled())
from tensorsched.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_the_readme_first_command_runs_without_the_dra_extra(tmp_path):
    """``pip install . && tensorsched schedule``: the required dependencies
    alone schedule the sample workload (no DRA object in it)."""
    run = subprocess.run([sys.executable, "-c", _WITHOUT_CEL, "schedule"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "-> node-" in run.stdout and "No module named" not in run.stderr
