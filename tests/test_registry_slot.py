"""registry_slot: the default-registry hook the composition root fills."""

from __future__ import annotations

import pytest

import tensorsched  # noqa: F401  (installs the default factory)
from tensorsched import registry_slot


@pytest.fixture
def restore_factory():
    saved = registry_slot._factory
    yield
    registry_slot._factory = saved


def test_import_installs_a_factory_giving_fresh_registries():
    a, b = registry_slot.default_registry(), registry_slot.default_registry()
    assert a is not b


def test_install_replaces_the_factory(restore_factory):
    sentinel = object()
    registry_slot.install(lambda: sentinel)
    assert registry_slot.default_registry() is sentinel


def test_install_rejects_a_non_callable_and_keeps_the_old_factory(restore_factory):
    before = registry_slot._factory
    with pytest.raises(TypeError, match="callable"):
        registry_slot.install(42)
    assert registry_slot._factory is before


def test_without_a_factory_the_error_says_what_to_do(restore_factory):
    registry_slot._factory = None
    with pytest.raises(LookupError, match="registry="):
        registry_slot.default_registry()
