"""A CEL selector nested deeper than the walkers' stack allows is refused
when it is compiled (a ManifestError naming the object and the field, exit
status 2 on the CLI), never a bare RecursionError at load or in the middle
of a scheduling cycle; every form nested up to the bound compiles and
evaluates."""

from __future__ import annotations

import copy
import os

import pytest

from tensorsched.cli import main
from tensorsched.framework.errors import ManifestError
from tensorsched.framework.parsing.manifests import load_objects
from tensorsched.framework.scheduler.explain import explain
from tensorsched.framework.state.dra_cel import CelError, compile_selector
from tensorsched.framework.state.dra_cel_syntax import MAX_TREE_DEPTH, _parser, tree_depth

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "..", "data", "examples", "dra")
MATCH = "device.driver == 'gpu.nvidia.com'"

#: forms nested ``k`` times, each matching the example's GPUs
NESTED = {
    "parentheses": lambda k: "(" * k + MATCH + ")" * k,
    "macros": lambda k: "".join(f"[1].all(x{i}, " for i in range(k)) + MATCH + ")" * k,
    "calls": lambda k: "int(" * k + "1" + ")" * k + f" == 1 && {MATCH}",
    "maps": lambda k: "{1:" * k + "1" + "}" * k + f" != {{}} && {MATCH}",
    "lists": lambda k: "[" * k + "1" + "]" * k + "[0]" * k + f" == 1 && {MATCH}",
    "negations": lambda k: "-(" * k + "1" + ")" * k + f" != 0 && {MATCH}",
    "sums": lambda k: "'a'" + "+'a'" * k + f" != '' && {MATCH}",
    "ternaries": lambda k: "(true ? " * k + MATCH + " : false)" * k,
}


def _depth(expr: str) -> int:
    return tree_depth(_parser().parse(expr))


def _deepest(form) -> tuple[str, str]:
    """``form`` nested as deep as the bound lets it, and once more."""
    k = 1
    while _depth(form(k + 1)) <= MAX_TREE_DEPTH:
        k += 1
    return form(k), form(k + 1)


def _cluster(expr: str) -> list[dict]:
    objs = copy.deepcopy(load_objects(os.path.join(DATA, "cluster.yaml")))
    for o in objs:
        if o["kind"] == "DeviceClass":
            o["spec"]["selectors"] = [{"cel": {"expression": expr}}]
    return objs


def _pod() -> dict:
    return load_objects(os.path.join(DATA, "gpu-pod.yaml"))[0]


@pytest.mark.parametrize("expr", ["(" * 3000 + "true" + ")" * 3000, "!" * 4000 + "true",
                                  "[" * 2000 + "]" * 2000 + " == []",
                                  "(" * 400 + "true" + ")" * 400])
def test_too_deep_is_a_compile_error(expr):
    with pytest.raises(CelError, match=r"^compilation failed: ERROR: <input>: expression "
                       r"recursion limit exceeded: nested \d+ levels deep, at most "
                       f"{MAX_TREE_DEPTH}"):
        compile_selector(expr)


@pytest.mark.timeout(120)
def test_too_deep_selector_is_refused_naming_the_object_and_field():
    with pytest.raises(ManifestError) as exc:
        explain(_cluster("(" * 400 + MATCH + ")" * 400), _pod(), backend="numpy")
    assert exc.value.obj == "DeviceClass gpu.nvidia.com"
    assert exc.value.field == "spec.selectors[0].cel.expression"
    assert "expression recursion limit exceeded" in str(exc.value)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("form", sorted(NESTED))
def test_every_form_nested_to_the_bound_compiles_and_evaluates(form):
    # the deepest of each form: through the allocator's evaluation of the
    # selector on every device (a cycle), not only its compilation
    deepest, past = _deepest(NESTED[form])
    record = explain(_cluster(deepest), _pod(), backend="numpy")
    assert record["selected"] in ("gpu-1", "gpu-2")
    with pytest.raises(ManifestError, match="recursion limit exceeded"):
        explain(_cluster(past), _pod(), backend="numpy")


@pytest.mark.timeout(120)
def test_cli_names_the_file_and_exits_2(tmp_path, capsys):
    import yaml
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all(_cluster("(" * 400 + MATCH + ")" * 400)))
    assert main(["explain", "--cluster", str(path), "--pod",
                 os.path.join(DATA, "gpu-pod.yaml")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"tensorsched: error: {path}#") and "Traceback" not in err
    assert "DeviceClass gpu.nvidia.com: spec.selectors[0].cel.expression" in err
    assert "recursion limit exceeded" in err
