"""The rooms a newcomer lives in, checked on the installed source (the
package folders as ``git ls-files`` lists them, tests left out):

(a) no class has more than ``MAX_METHODS`` methods;
(b) no mixins sharing one ``self``: no class has two or more bases defined
    in this project, Protocols, ABCs and exceptions excepted (interfaces,
    not state);
(c) no private attribute read across modules: ``expr._name`` where
    ``expr`` is not ``self``/``cls``, ``_name`` is not a namedtuple /
    dataclass helper and not defined in the reading module; and no
    ``from x import _name`` of another module's private name.  Two rules
    say what is not ours to police or is private by design:
    - names of third-party libraries are theirs: ``argparse._StoreAction``
      (an attribute of a module imported from outside the project) and
      ``from numba.core import _x`` are not counted;
    - a package's own twins are package-private: ``from . import _cuda``
      (a private module or name imported from the reader's own package,
      as kernels/fused/backends.py imports ``_numba``/``_cuda``) is allowed,
      and so is a twin module (``_core``/``_numba``/``_cuda``/``_block``...)
      imported from a sibling package of the same top-level folder (the
      victims twins compile on the fused twins' device functions); a
      private module imported across top-level folders
      (bench importing a kernels twin) still counts;
(d) a module alias (``import x as K``) means one module across the tree,
    tests included;
(e) the core (runtime, preemption, scheduler, state) spells no plugin name;
(f) the README Layout has a row for every package folder.

The ``PENDING`` lists (``file:name`` entries) are empty: every rule holds.
A violation not listed fails, and so does a listed one that no longer
occurs, so the lists can only stay empty or shrink.
"""

from __future__ import annotations

import ast
import builtins
import re
import subprocess
from collections import defaultdict
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# folder -> import name (pyproject.toml's package-dir)
PACKAGE_DIRS = {"tensorsched_pkg": "tensorsched", "kernels": "tensorsched.kernels",
                "framework": "tensorsched.framework", "topology": "tensorsched.topology",
                "bench": "tensorsched.bench"}
MAX_METHODS = 30
TUPLE_HELPERS = {"_replace", "_fields", "_asdict", "_make", "_field_defaults"}
INTERFACE_BASES = {"Protocol", "ABC", "Generic", "NamedTuple", "TypedDict", "Enum", "IntEnum",
                   "IntFlag", "Flag"}
CORE = ("framework/runtime/", "framework/preemption/", "framework/scheduler/",
        "framework/state/")

# (a) classes over MAX_METHODS methods: file:class
PENDING_LARGE_CLASSES: set[str] = set()
# (b) classes with two or more project bases that are not interfaces: file:class
PENDING_MIXINS: set[str] = set()
# (c) private names read across modules: file:_name
PENDING_PRIVATE_READS: set[str] = set()


@lru_cache(maxsize=1)
def _source_files() -> tuple[str, ...]:
    try:
        out = subprocess.run(["git", "ls-files", "--", *PACKAGE_DIRS], cwd=ROOT, text=True,
                             capture_output=True, check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):       # a copy without git
        out = [str(p.relative_to(ROOT)) for d in PACKAGE_DIRS for p in (ROOT / d).rglob("*")]
    return tuple(sorted(f for f in out if f.endswith(".py") and (ROOT / f).is_file()))


@lru_cache(maxsize=None)
def _tree(path: str) -> ast.Module:
    return ast.parse((ROOT / path).read_text(encoding="utf-8"), path)


def _module_name(path: str) -> str:
    top, _, rest = path.partition("/")
    parts = [PACKAGE_DIRS[top], *rest[:-3].split("/")]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _absolute(path: str, node: ast.ImportFrom) -> str:
    """The module an ``from ... import`` reads from, made absolute."""
    if not node.level:
        return node.module or ""
    package = _module_name(path).split(".")
    if not path.endswith("__init__.py"):
        package.pop()
    base = package[: len(package) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def _check(found: set[str], pending: set[str], what: str) -> None:
    new = sorted(found - pending)
    gone = sorted(pending - found)
    assert not new, f"{what}: new violations (fix them): {new}"
    assert not gone, f"{what}: fixed, remove from PENDING: {gone}"


# ------------------------------------------------------------------ classes

def _classes():
    """(path, module, ClassDef) of every class of the source, nested ones too."""
    for path in _source_files():
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.ClassDef):
                yield path, _module_name(path), node


@lru_cache(maxsize=1)
def _class_index() -> dict[tuple[str, str], tuple[str, ast.ClassDef]]:
    return {(mod, c.name): (path, c) for path, mod, c in _classes()}


@lru_cache(maxsize=None)
def _imports(path: str) -> dict[str, str]:
    """Local name -> dotted origin (``module`` or ``module.name``) of a file."""
    out = {}
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Import):
            for a in node.names:
                top = a.name.split(".")[0]
                out[a.asname or top] = a.name if a.asname else top
        elif isinstance(node, ast.ImportFrom):
            mod = _absolute(path, node)
            for a in node.names:
                out[a.asname or a.name] = f"{mod}.{a.name}"
    return out


def _resolve(path: str, expr: ast.expr):
    """The project class a base expression names, as (module, name), or its
    bare name (str) when it is not one of ours."""
    if isinstance(expr, ast.Subscript):
        expr = expr.value
    dotted = []
    while isinstance(expr, ast.Attribute):
        dotted.append(expr.attr)
        expr = expr.value
    if not isinstance(expr, ast.Name):
        return None
    dotted.append(expr.id)
    dotted.reverse()
    mod = _module_name(path)
    if len(dotted) == 1 and (mod, dotted[0]) in _class_index():
        return mod, dotted[0]
    origin = _imports(path).get(dotted[0])
    if origin is None:
        return dotted[-1]
    full = ".".join([origin, *dotted[1:]])
    owner, _, name = full.rpartition(".")
    return (owner, name) if (owner, name) in _class_index() else name


def _is_exception(key, seen=()) -> bool:
    if isinstance(key, str):
        obj = getattr(builtins, key, None)
        return isinstance(obj, type) and issubclass(obj, BaseException)
    if key is None or key in seen:
        return False
    path, cls = _class_index()[key]
    return any(_is_exception(_resolve(path, b), (*seen, key)) for b in cls.bases)


def _is_interface(key) -> bool:
    """A Protocol or an ABC (it names ``Protocol``/``ABC`` among its own
    bases, or ``metaclass=ABCMeta``), or an exception."""
    if _is_exception(key):
        return True
    if not isinstance(key, tuple):
        return key in INTERFACE_BASES
    path, cls = _class_index()[key]
    if any(isinstance(k.value, ast.Name) and k.value.id == "ABCMeta"
           for k in cls.keywords if k.arg == "metaclass"):
        return True
    return any(_resolve(path, b) in INTERFACE_BASES for b in cls.bases)


def test_no_class_has_too_many_methods():
    found = set()
    for path, _, cls in _classes():
        methods = [n for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        if len(methods) > MAX_METHODS:
            found.add(f"{path}:{cls.name}")
    _check(found, PENDING_LARGE_CLASSES, f"classes over {MAX_METHODS} methods")


def test_no_mixins_share_state():
    found = set()
    for path, _, cls in _classes():
        ours = [k for k in (_resolve(path, b) for b in cls.bases)
                if isinstance(k, tuple) and not _is_interface(k)]
        if len(ours) >= 2:
            found.add(f"{path}:{cls.name}")
    _check(found, PENDING_MIXINS, "classes with two or more project bases")


# ---------------------------------------------------------- private reads

def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


@lru_cache(maxsize=None)
def _defined_here(path: str) -> frozenset[str]:
    """The private names a module defines: functions, classes, assigned
    names and attributes, parameters, import aliases."""
    names = set()
    for node in ast.walk(_tree(path)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.attr)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.alias):
            names.add(node.asname or node.name)
        elif isinstance(node, ast.keyword) and node.arg:
            names.add(node.arg)                 # namedtuple/dataclass fields built by call
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and node.value.isidentifier():
            names.add(node.value)               # __slots__, namedtuple field lists
    return frozenset(n for n in names if _private(n))


def _top_folder(module: str) -> str | None:
    """The source folder (a key of ``PACKAGE_DIRS``) holding a dotted module of
    ours, or None for a module of another project."""
    best = None
    for folder, name in PACKAGE_DIRS.items():
        if (module == name or module.startswith(name + ".")) and (
                best is None or len(name) > len(PACKAGE_DIRS[best])):
            best = folder
    return best


def _is_private_module(package: str, name: str) -> bool:
    """Whether ``package.name`` is a module (file or folder) of our source."""
    folder = _top_folder(package)
    if folder is None:
        return False
    rest = package[len(PACKAGE_DIRS[folder]):].lstrip(".").split(".")
    base = ROOT.joinpath(folder, *[r for r in rest if r])
    return base.joinpath(name + ".py").is_file() or base.joinpath(name, "__init__.py").is_file()


def _private_reads(path: str) -> set[str]:
    own = _defined_here(path)
    imports = _imports(path)
    package = _module_name(path)
    if not path.endswith("__init__.py"):
        package = package.rpartition(".")[0]
    top = path.partition("/")[0]
    out = set()
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) \
                and _private(node.attr) and node.attr not in TUPLE_HELPERS:
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                continue
            if isinstance(node.value, ast.Name) and node.value.id in imports \
                    and _top_folder(imports[node.value.id]) is None:
                continue                        # a third-party library's name
            if node.attr not in own:
                out.add(node.attr)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            if isinstance(node, ast.Import):    # import a.b._c [as x]
                pairs = [a.name.rpartition(".")[::2] for a in node.names]
            else:
                pairs = [(_absolute(path, node), a.name) for a in node.names]
            for source, name in pairs:
                if _top_folder(source) is None or not _private(name) or source == package:
                    continue                    # theirs, public, or of the reader's own package
                if _is_private_module(source, name) and _top_folder(source) == top:
                    continue                    # a twin of a sibling package
                out.add(name)
    return out


def test_no_private_attribute_is_read_across_modules():
    found = {f"{path}:{name}" for path in _source_files() for name in _private_reads(path)}
    _check(found, PENDING_PRIVATE_READS, "private names read across modules")


# ------------------------------------------------------------ vocabulary

_ALIAS = re.compile(r"^[A-Z]{1,3}$")


def _test_files() -> list[str]:
    return sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests").rglob("*.py"))


def test_each_module_alias_means_one_module():
    meanings: dict[str, set[str]] = defaultdict(set)
    for path in [*_source_files(), *_test_files()]:
        tree = ast.parse((ROOT / path).read_text(encoding="utf-8"), path)
        for node in ast.walk(tree):
            pairs = []
            if isinstance(node, ast.Import):
                pairs = [(a.name, a.asname) for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _absolute(path, node) if not path.startswith("tests/") else (
                    node.module or "")
                pairs = [(f"{base}.{a.name}", a.asname) for a in node.names]
            for module, alias in pairs:
                if alias and _ALIAS.match(alias):
                    meanings[alias].add(module.split("tensorsched.")[-1])
    clashes = {a: sorted(m) for a, m in meanings.items() if len(m) > 1}
    assert not clashes, f"aliases with several meanings: {clashes}"


def _code_strings(tree: ast.Module) -> set[str]:
    """String constants of a module that are not docstrings."""
    docs = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                docs.add(id(body[0].value))
    return {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)
            and isinstance(n.value, str) and id(n) not in docs}


def test_the_core_spells_no_plugin_name():
    from tensorsched.framework.config import plugin_names

    names = {v for k, v in vars(plugin_names).items() if k.isupper() and isinstance(v, str)}
    names |= {"Coscheduling", "GpuShareFit", "GpuShareScore", "GpuTopologyScore"}
    spelled = {f"{path}:{s}" for path in _source_files() if path.startswith(CORE)
               for s in _code_strings(_tree(path)) & names}
    assert not spelled, f"plugin names in the core (declare a capability instead): {spelled}"


def test_readme_layout_has_every_package_folder():
    """Each package folder has a row, or is named (``name/``) in its parent's."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    layout = text[text.index("## Layout"):]
    rows = {m.group(1): m.group(0)
            for m in re.finditer(r"^\| `([^`]+?)/?`.*$", layout, flags=re.M)}
    folders = {str(Path(f).parent) for f in _source_files() if f.endswith("__init__.py")}
    missing = []
    for folder in sorted(folders):
        parent, _, name = folder.rpartition("/")
        if folder in rows or (parent in rows and f"`{name}/`" in rows[parent]):
            continue
        if folder in PACKAGE_DIRS and any(r.startswith(folder + "/") for r in rows):
            continue
        missing.append(folder)
    assert not missing, f"README Layout lacks rows for {missing}"
