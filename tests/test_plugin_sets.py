"""The composition root's plugin sets and the slot the core reads them
through: ``import tensorsched`` installs ``plugin_sets.default_registry``
into ``registry_slot`` (loading nothing of the framework), clusters built
without a registry get it, and the framework names no plugin set or entry
point itself."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import tensorsched as ts
from tensorsched import plugin_sets, registry_slot
from tensorsched.framework.plugins import default_registry as core_default
from tensorsched.framework.plugins import in_tree_registry
from tensorsched.framework.runtime.registry import Registry
from tensorsched.framework.scheduler.cluster import build_cluster

ROOT = Path(__file__).resolve().parents[1]
NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}


def test_the_default_set_adds_coscheduling_and_the_installed_sets():
    reg = plugin_sets.default_registry()
    for name in ("Coscheduling", "GpuShareFit", "GpuShareScore", "GpuTopologyScore"):
        assert name in reg and name not in in_tree_registry()
    assert "NodeResourcesFit" in reg
    # the GPU set comes from its entry point, not from a name in the code
    assert [r.__module__ for r in plugin_sets.installed_plugin_sets()] == [
        "tensorsched.topology.plugins"]


def test_the_facade_and_the_core_default_are_the_composition_roots():
    assert ts.default_registry is plugin_sets.default_registry
    assert core_default().plugin_points() == plugin_sets.default_registry().plugin_points()


def test_a_cluster_without_registry_gets_the_installed_one(monkeypatch):
    made = []

    def factory():
        made.append(in_tree_registry())
        return made[-1]

    monkeypatch.setattr(registry_slot, "_factory", None)
    registry_slot.install(factory)
    cluster = build_cluster([NODE])
    assert made and cluster.registry is made[-1]
    assert build_cluster([NODE], registry=plugin_sets.default_registry()).registry is not made[-1]


def test_the_slot_refuses_what_it_cannot_call_and_says_when_empty(monkeypatch):
    with pytest.raises(TypeError, match="callable"):
        registry_slot.install("tensorsched.plugin_sets:default_registry")
    monkeypatch.setattr(registry_slot, "_factory", None)
    with pytest.raises(LookupError, match="pass registry="):
        registry_slot.default_registry()


def test_import_installs_the_default_without_loading_the_framework():
    code = ("import sys, tensorsched; from tensorsched import registry_slot as s; "
            "print(s._factory is not None, "
            "any(m.startswith('tensorsched.framework') for m in sys.modules)); "
            "print(type(s.default_registry()).__name__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT)
    assert out.stdout.split() == ["True", "False", Registry.__name__]


def test_the_framework_names_no_plugin_set_nor_entry_point():
    for path in (ROOT / "framework").rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                names = [node.id] if isinstance(node, ast.Name) else \
                    [node.attr] if isinstance(node, ast.Attribute) else []
            for name in names:
                assert not name.startswith(("tensorsched.topology", "tensorsched.plugin_sets",
                                            "importlib.metadata")) \
                    and name != "entry_points", f"{path.relative_to(ROOT)}:{node.lineno} {name}"
