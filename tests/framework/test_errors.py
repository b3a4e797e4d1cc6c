"""``framework.errors``: every error names what it is about, its message
leads with the source file when there is one, and ``with_source`` adds a
source only once."""

from __future__ import annotations

import pytest

from tensorsched.framework.errors import (
    ArgumentError, BackendError, ConfigError, ManifestError, StateError, TensorschedError)
from tensorsched.kernels._errors import BackendUnavailable


@pytest.mark.parametrize("cls", [ManifestError, ConfigError, ArgumentError, StateError])
def test_input_errors_are_value_errors_and_tensorsched_errors(cls):
    assert issubclass(cls, TensorschedError) and issubclass(cls, ValueError)


def test_backend_error_is_the_kernels_backend_unavailable():
    assert issubclass(BackendError, BackendUnavailable)
    assert issubclass(BackendError, TensorschedError)


def test_manifest_error_message_names_object_field_and_source():
    err = ManifestError("Pod shop/web", "spec.containers[0].resources.requests.cpu",
                        "invalid quantity 'abc'")
    assert str(err) == "Pod shop/web: spec.containers[0].resources.requests.cpu: invalid quantity 'abc'"
    assert err.source is None
    sourced = err.with_source("cluster.yaml#3")
    assert str(sourced) == ("cluster.yaml#3: Pod shop/web: spec.containers[0].resources"
                            ".requests.cpu: invalid quantity 'abc'")
    assert (sourced.obj, sourced.field, sourced.problem) == (err.obj, err.field, err.problem)


def test_manifest_error_without_field_names_only_the_object():
    assert str(ManifestError("Node a", "", "duplicate")) == "Node a: duplicate"


def test_manifest_error_with_source_keeps_the_first_and_ignores_the_object_name():
    err = ManifestError("Pod a/b", "f", "p", source="one.yaml#0")
    assert err.with_source("two.yaml#1") is err
    assert err.with_source("") is err and err.with_source(None) is err
    bare = ManifestError("x.yaml#2", "", "no name")
    assert bare.with_source("x.yaml#2") is bare        # would repeat itself
    # a source equal to the object is dropped at construction too
    assert ManifestError("x.yaml#2", "", "p", source="x.yaml#2").source is None
    assert str(ManifestError("x.yaml#2", "", "p", source="x.yaml#2")) == "x.yaml#2: p"


def test_config_error_message_and_with_source():
    err = ConfigError("profiles[0].plugins.score.enabled[1].weight", "must be > 0")
    assert str(err) == "profiles[0].plugins.score.enabled[1].weight: must be > 0"
    sourced = err.with_source("sched.yaml")
    assert str(sourced) == "sched.yaml: profiles[0].plugins.score.enabled[1].weight: must be > 0"
    assert sourced.with_source("other.yaml") is sourced
    assert err.with_source(None) is err
    assert str(ConfigError("", "not a mapping", source="s.yaml")) == "s.yaml: not a mapping"
    assert ConfigError("f", "p", source="").source is None


def test_argument_error_fields():
    err = ArgumentError("how_many_fit", "limit", "must be an integer >= 1, got -1")
    assert str(err) == "how_many_fit: limit: must be an integer >= 1, got -1"
    assert (err.function, err.argument) == ("how_many_fit", "limit")
