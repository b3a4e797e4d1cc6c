"""``kernels._compile``: the numba kernels compile once per machine; it writes each
compiled source (the rule modules, the generated fused passes, the victim
pass) to the cache dir under a key of its text, options, dependencies and
toolchain, and Numba keeps the machine code next to it.  A second process
loads it instead of compiling; a changed source gets a new key; a cache dir
that cannot be written compiles in memory as before."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from numba import njit
from numba.core.caching import NullCache

from tensorsched.kernels import _compile
from tensorsched.kernels._compile import KEY, LazyNjit, cache_key, compile_source
from tensorsched.kernels.fused._numba import _user_function_key, build_fused_pass

DATA = Path(__file__).resolve().parents[2] / "data" / "plugins"

# One explain on the numba backend, then the cache statistics of every
# dispatcher of the fused stage (rules, passes) and the victim search.
_PROBE = textwrap.dedent("""
    import json
    import os
    import tensorsched as ts
    from tensorsched.kernels._compile import cache_dir
    from tensorsched.kernels.fused import _numba as FN
    from tensorsched.kernels.victims import _numba as VN

    nodes, pods = ts.synthetic.workload("basic", 6, 2, 0)
    out = ts.explain(nodes, pods[0], backend="numba")
    hits = misses = 0
    seen = set()
    for d in [*vars(FN).values(), *FN.core.values(), *vars(VN).values(), *VN.core.values()]:
        st = getattr(d, "stats", None)
        if id(d) in seen or not hasattr(st, "cache_hits"):
            continue
        seen.add(id(d))
        hits += sum(st.cache_hits.values())
        misses += sum(st.cache_misses.values())
    files = sorted(os.listdir(os.path.join(cache_dir(), "numba")))
    print(json.dumps({"hits": hits, "misses": misses, "out": out, "files": files}))
""")


def _probe(cache: Path) -> dict:
    env = dict(os.environ, TENSORSCHED_CACHE_DIR=str(cache))
    env.pop("NUMBA_CACHE_DIR", None)
    env.pop("NUMBA_DISABLE_JIT", None)
    res = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True,
                         text=True, timeout=600, check=False)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_a_second_process_loads_the_compiled_kernels(tmp_path):
    cold = _probe(tmp_path)
    assert cold["misses"] > 0 and cold["hits"] == 0
    assert any(f.startswith("fused__core-") for f in cold["files"])
    assert sum(f.startswith("fused__numba_fused_pass-") for f in cold["files"]) == 2
    assert (tmp_path / "numba" / "__pycache__").is_dir()
    warm = _probe(tmp_path)
    assert warm["misses"] == 0 and warm["hits"] > 0
    assert warm["out"] == cold["out"]
    assert warm["files"] == cold["files"]


def test_the_key_follows_source_options_dependencies():
    base = cache_key("def f(x):\n    return x\n", njit, {"nogil": True}, ("a",))
    assert base == cache_key("def f(x):\n    return x\n", njit, {"nogil": True}, ("a",))
    assert base != cache_key("def f(x):\n    return x + 1\n", njit, {"nogil": True}, ("a",))
    assert base != cache_key("def f(x):\n    return x\n", njit, {"nogil": False}, ("a",))
    assert base != cache_key("def f(x):\n    return x\n", njit, {"nogil": True}, ("b",))


def _tiny(source, **kw):
    return compile_source("tensorsched.kernels.test_tiny", source, njit, ("f",),
                          options={"nogil": True}, **kw)


def test_compiled_source_is_written_once_and_a_changed_one_anew(tmp_path, monkeypatch):
    monkeypatch.setenv(_compile.CACHE_DIR_ENV, str(tmp_path))
    ns = _tiny("def f(x):\n    return x * 3\n", cache=True)
    assert isinstance(ns[KEY], str)
    assert ns["f"](2) == 6
    files = sorted((tmp_path / "numba").glob("*.py"))
    assert [p.name for p in files] == [f"test_tiny-{ns[KEY][:24]}.py"]
    assert any((tmp_path / "numba" / "__pycache__").glob("test_tiny-*.nbi"))
    # Written once: the same source again keeps the file (and its stamp,
    # which Numba's index records).
    stamp = files[0].stat().st_mtime_ns
    again = _tiny("def f(x):\n    return x * 3\n", cache=True)
    assert again[KEY] == ns[KEY] and files[0].stat().st_mtime_ns == stamp
    assert again["f"](2) == 6
    changed = _tiny("def f(x):\n    return x * 4\n", cache=True)
    assert changed[KEY] != ns[KEY] and changed["f"](2) == 8
    assert len(list((tmp_path / "numba").glob("*.py"))) == 2
    # A damaged file is replaced by the source.
    files[0].write_text("garbage")
    assert _tiny("def f(x):\n    return x * 3\n", cache=True)["f"](2) == 6
    assert files[0].read_text() == "def f(x):\n    return x * 3\n"
    assert not list((tmp_path / "numba").glob(".tmp-*"))


def test_an_unwritable_cache_dir_compiles_in_memory(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv(_compile.CACHE_DIR_ENV, str(blocker / "sub"))
    ns = _tiny("def f(x):\n    return x * 5\n", cache=True)
    assert ns[KEY] is None and ns["f"](2) == 10
    # ... and so does anything that depends on an in-memory namespace.
    monkeypatch.setenv(_compile.CACHE_DIR_ENV, str(tmp_path / "ok"))
    dep = compile_source("tensorsched.kernels.test_dep", "def g(x):\n    return f(x) + 1\n",
                         njit, ("g",), {"f": ns["f"]}, cache=True, depends=(ns[KEY],))
    assert dep[KEY] is None and dep["g"](2) == 11
    assert not (tmp_path / "ok").exists()


def test_numba_without_a_place_for_its_index_compiles_in_memory(tmp_path, monkeypatch):
    monkeypatch.setenv(_compile.CACHE_DIR_ENV, str(tmp_path))

    def refusing(f, cache=False, **options):
        if cache:
            raise RuntimeError("cannot cache function 'f': no locator available")
        return njit(f, **options)
    refusing.__qualname__ = "refusing"
    ns = compile_source("tensorsched.kernels.test_refused", "def f(x):\n    return x - 1\n",
                        refusing, ("f",), cache=True)
    assert ns[KEY] is None and ns["f"](2) == 1


def _plugin_module(name):
    spec = importlib.util.spec_from_file_location(name, DATA / "headroom_scalar.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_user_function_keys(monkeypatch):
    mod = _plugin_module("headroom_scalar_key")
    # Not importable by name (not in sys.modules): a cached pass could not
    # rebuild its environment, so the pass compiles in memory.
    assert _user_function_key(mod.keeps_headroom) is None
    monkeypatch.setitem(sys.modules, "headroom_scalar_key", mod)
    key = _user_function_key(mod.keeps_headroom)
    assert isinstance(key, str)
    assert key == _user_function_key(njit(mod.keeps_headroom))
    assert key != _user_function_key(mod.free_cores)
    ns: dict = {}
    exec("def h(a, r, l, q):\n    return True\n", ns)     # no source file
    assert _user_function_key(ns["h"]) is None


def test_a_pass_with_importable_user_functions_is_cached(tmp_path, monkeypatch):
    monkeypatch.setenv(_compile.CACHE_DIR_ENV, str(tmp_path))
    mod = _plugin_module("headroom_scalar_pass")
    loose = build_fused_pass((mod.keeps_headroom,), (mod.free_cores,))
    assert isinstance(loose._cache, NullCache)
    monkeypatch.setitem(sys.modules, "headroom_scalar_pass", mod)
    fn = build_fused_pass((mod.free_cores,), (mod.keeps_headroom,), by_row=True)
    assert not isinstance(fn._cache, NullCache)
    assert Path(fn.py_func.__code__.co_filename).parent == tmp_path / "numba"


@pytest.mark.parametrize("writers", [2])
def test_concurrent_writers_agree(tmp_path, writers):
    # Several processes compiling the same source at once: each ends with
    # the file in place and a working function; no temporary file is left.
    code = textwrap.dedent("""
        from numba import njit
        from tensorsched.kernels._compile import compile_source, KEY
        ns = compile_source("tensorsched.kernels.test_race", "def f(x):\\n    return x + 7\\n",
                            njit, ("f",), cache=True)
        assert ns[KEY] is not None
        print(ns["f"](1))
    """)
    env = dict(os.environ, TENSORSCHED_CACHE_DIR=str(tmp_path))
    procs = [subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(writers)]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        assert out.strip() == "8"
    assert len(list((tmp_path / "numba").glob("test_race-*.py"))) == 1
    assert not list((tmp_path / "numba").glob(".tmp-*"))


def test_the_cache_dir_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv(_compile.CACHE_DIR_ENV, str(tmp_path / "mine"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert _compile.cache_dir() == str(tmp_path / "mine")
    monkeypatch.delenv(_compile.CACHE_DIR_ENV)
    assert _compile.cache_dir() == str(tmp_path / "xdg" / "tensorsched")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert _compile.cache_dir() == str(tmp_path / "home" / ".cache" / "tensorsched")


def test_module_functions_are_the_modules_own():
    names = _compile.module_functions(_compile)
    assert "compile_source" in names and "cache_key" in names
    assert all(getattr(_compile, n).__module__ == _compile.__name__ for n in names)
    assert "njit" not in _compile.module_functions(sys.modules[__name__])  # imported here


def test_in_memory_compilation_decorates_only_the_named_functions():
    calls = []

    def decorate(fn, **options):
        calls.append((fn.__name__, options))
        return lambda *a: ("decorated", fn(*a))

    ns = compile_source("demo", "def f(x):\n    return g(x) + 1\ndef g(x):\n    return 2 * x\n",
                        decorate, ["f"], namespace={}, options={"fastmath": True})
    assert calls == [("f", {"fastmath": True})]
    assert ns["f"](3) == ("decorated", 7) and ns["g"](3) == 6 and ns[KEY] is None


def _twice(x):
    return 2 * x


def test_lazy_njit_compiles_at_the_first_read_once():
    calls = []

    def build(jit):
        calls.append(1)
        return {"twice": jit(_twice)}

    host = LazyNjit(build)
    assert calls == []                      # importing a module that holds one compiles nothing
    assert host.twice(21) == 42 and host.twice(4) == 8
    assert calls == [1]
    with pytest.raises(AttributeError, match="thrice"):
        host.thrice
    assert calls == [1]
