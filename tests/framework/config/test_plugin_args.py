"""plugin_args: built-in plugins' args decoded strictly, defaulted and
validated as upstream, each problem a ConfigError naming the full field
path; out-of-tree args kept raw unless a decoder is registered."""

from __future__ import annotations

import re

import pytest

from tensorsched.framework.config import plugin_args
from tensorsched.framework.config.plugin_args import (
    DefaultPreemptionArgs,
    ResourceSpec,
    decode_args,
    default_args,
    has_args_decoder,
    register_args_decoder,
)
from tensorsched.framework.errors import ArgumentError, ConfigError

P = "profiles[0].pluginConfig[0].args"


def test_fit_defaults_and_zero_weight_becomes_one():
    d = default_args("NodeResourcesFit")
    assert d.scoring_strategy.type == "LeastAllocated"
    assert d.scoring_strategy.resources == (ResourceSpec("cpu", 1), ResourceSpec("memory", 1))
    got = decode_args("NodeResourcesFit", {"scoringStrategy": {
        "type": "MostAllocated", "resources": [{"name": "cpu", "weight": 0}]}}, P)
    assert got.scoring_strategy.type == "MostAllocated"
    assert got.scoring_strategy.resources == (ResourceSpec("cpu", 1),)


@pytest.mark.parametrize("raw,field,problem", [
    ({"bogus": 1}, "bogus", "unknown field"),
    ({"scoringStrategy": {"type": "Nope"}}, "scoringStrategy.type", "unsupported value 'Nope'"),
    ({"scoringStrategy": {"type": "LeastAllocated",
                          "resources": [{"name": "cpu", "weight": 101}]}},
     "scoringStrategy.resources[0].weight", "resource weight of cpu not in valid range (0, 100]"),
])
def test_fit_errors_name_the_full_path(raw, field, problem):
    with pytest.raises(ConfigError) as exc:
        decode_args("NodeResourcesFit", raw, P)
    assert f"{P}.{field}" in str(exc.value)
    assert problem in str(exc.value)


def test_default_preemption_range_checked():
    assert decode_args("DefaultPreemption", None, P) == DefaultPreemptionArgs(10, 100)
    with pytest.raises(ConfigError, match=r"args\.minCandidateNodesPercentage: 101 not in"):
        decode_args("DefaultPreemption", {"minCandidateNodesPercentage": 101}, P)


def test_decoding_does_not_touch_the_input():
    raw = {"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "cpu"}]}}
    decode_args("NodeResourcesFit", raw, P)
    assert raw == {"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "cpu"}]}}


def test_out_of_tree_args_stay_raw_copies():
    raw = {"a": [1]}
    got = decode_args("OutOfTreeX", raw, P)
    assert got == raw and got is not raw and got["a"] is not raw["a"]
    assert default_args("OutOfTreeX") is None
    with pytest.raises(ConfigError, match=re.escape(f"{P}: must be an object, got list")):
        decode_args("OutOfTreeX", [1], P)


def test_registered_decoder_failures_become_config_errors(monkeypatch):
    monkeypatch.setattr(plugin_args, "_DECODERS", dict(plugin_args._DECODERS))

    def decoder(raw, path):
        return (raw or {})["limit"] + 1           # KeyError / TypeError on bad input

    register_args_decoder("OutOfTreeDecoded", decoder)
    assert has_args_decoder("OutOfTreeDecoded")
    assert decode_args("OutOfTreeDecoded", {"limit": 2}, P) == 3
    with pytest.raises(ConfigError, match=r"invalid OutOfTreeDecoded args.*KeyError"):
        decode_args("OutOfTreeDecoded", {}, P)


def test_builtin_decoders_cannot_be_replaced():
    with pytest.raises(ArgumentError,
                       match="^register_args_decoder: name: plugin 'NodeResourcesFit' is built in"):
        register_args_decoder("NodeResourcesFit", lambda raw, path: raw)
    with pytest.raises(ArgumentError, match="^register_args_decoder: fn: must be callable, got int"):
        register_args_decoder("OutOfTreeY", 3)
    assert not has_args_decoder("OutOfTreeY")
