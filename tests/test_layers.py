"""Every module of the installed ``tensorsched`` sits in a layer of an
import-linter layers contract (pyproject.toml): a module no contract names
could import anything, and ``lint-imports`` would not notice."""

from __future__ import annotations

import pkgutil
import tomllib
from pathlib import Path

import tensorsched

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def _layers() -> dict[str, set[str]]:
    """container -> the modules its layers contracts name as layers."""
    with open(PYPROJECT, "rb") as f:
        contracts = tomllib.load(f)["tool"]["importlinter"]["contracts"]
    layers: dict[str, set[str]] = {}
    for c in contracts:
        if c["type"] != "layers":
            continue
        for container in c["containers"]:
            named = layers.setdefault(container, set())
            for layer in c["layers"]:
                for tail in layer.replace(":", "|").split("|"):
                    named.add(f"{container}.{tail.strip().strip('()')}")
    return layers


def _modules() -> list[str]:
    return [m.name for m in pkgutil.walk_packages(tensorsched.__path__, "tensorsched.")]


def uncovered(modules, layers: dict[str, set[str]]) -> list[str]:
    """The modules that some container holding them does not put in a
    layer (a container itself needs no layer of its own contracts)."""
    def inside(name: str, prefix: str) -> bool:
        return name == prefix or name.startswith(prefix + ".")

    def covered(name: str) -> bool:
        holders = [c for c in layers if inside(name, c) and name != c]
        return bool(holders) and all(any(inside(name, m) for m in layers[c])
                                     for c in holders)
    return [m for m in modules if m not in layers and not covered(m)]


def test_every_module_is_in_a_layer():
    layers = _layers()
    modules = _modules()
    # the walk sees the whole package (sub-packages mapped from other folders too)
    assert {"tensorsched.cli", "tensorsched.experiments.sweep", "tensorsched.registry_slot",
            "tensorsched.framework.simulation.simulation",
            "tensorsched.topology.openb.replay"} <= set(modules)
    assert uncovered(modules, layers) == []


def test_a_module_outside_every_layer_is_found():
    # a stray top-level module, and one inside the framework but in none
    # of the framework's own layers
    assert uncovered(["tensorsched.stray", "tensorsched.framework.stray.inner",
                      "tensorsched.framework.plugins.node_name"],
                     _layers()) == ["tensorsched.stray", "tensorsched.framework.stray.inner"]
