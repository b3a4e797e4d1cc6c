"""The scheduler package's shape, checked on its source: collaborators
instead of mixins (no class with two of our classes as bases, none over 30
methods), no private attribute read across modules from or into it, and
modules that import one another one way only (a pod's path reads top-down,
never back into a module it came from)."""

import ast
import pathlib

import pytest

import tensorsched.framework.scheduler as scheduler_pkg

SCHEDULER = pathlib.Path(scheduler_pkg.__file__).resolve().parent
REPO = SCHEDULER.parent.parent
SOURCES = [p for d in ("framework", "kernels", "topology", "tensorsched_pkg", "bench")
           for p in sorted((REPO / d).rglob("*.py"))]
# namedtuple's API: public although spelled with an underscore
NAMEDTUPLE = {"_replace", "_fields", "_asdict", "_make"}
MAX_METHODS = 30


def _tree(path: pathlib.Path) -> ast.Module:
    return ast.parse(path.read_text(), str(path))


def _modules():
    return sorted(SCHEDULER.glob("*.py"))


def _private_reads(tree: ast.Module):
    """``obj._name`` reads where obj is not self/cls (dunders and the
    namedtuple API aside): (line, text, name)."""
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and node.attr.startswith("_")
                and not node.attr.startswith("__") and node.attr not in NAMEDTUPLE
                and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))):
            yield node.lineno, ast.unparse(node), node.attr


def _own_privates(tree: ast.Module) -> set:
    """Private names a module's classes define (methods, ``self._x``)."""
    out = set()
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        for node in ast.walk(cls):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out.add(node.name)
            elif (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                  and node.value.id == "self" and isinstance(node.ctx, ast.Store)):
                out.add(node.attr)
    return {n for n in out if n.startswith("_") and not n.startswith("__")}


def test_source_tree_found():
    assert (SCHEDULER / "scheduler.py").is_file() and len(SOURCES) > 100


@pytest.mark.parametrize("path", _modules(), ids=lambda p: p.name)
def test_no_private_reads_from_the_scheduler(path):
    got = [f"{path.name}:{line}: {text}" for line, text, _ in _private_reads(_tree(path))]
    assert not got, "private attributes of other objects read:\n" + "\n".join(got)


def test_no_private_reads_into_the_scheduler():
    """A private name that only scheduler classes define is read nowhere
    else (on an object other than self)."""
    defined_here, defined_elsewhere = set(), set()
    trees = {p: _tree(p) for p in SOURCES}
    for path, tree in trees.items():
        (defined_here if path.parent == SCHEDULER else defined_elsewhere).update(
            _own_privates(tree))
    only_here = defined_here - defined_elsewhere
    got = [f"{path.relative_to(REPO)}:{line}: {text}"
           for path, tree in trees.items() if path.parent != SCHEDULER
           for line, text, name in _private_reads(tree) if name in only_here]
    assert not got, "scheduler privates read from outside:\n" + "\n".join(got)


def _classes():
    for path in _modules():
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.ClassDef):
                yield path, node


def test_no_class_over_30_methods():
    big = {f"{p.name}:{c.name}": n for p, c in _classes()
           if (n := sum(isinstance(b, (ast.FunctionDef, ast.AsyncFunctionDef))
                        for b in c.body)) > MAX_METHODS}
    assert not big, f"classes with over {MAX_METHODS} methods: {big}"


def test_no_class_has_two_of_our_classes_as_bases():
    ours = set()
    for path in _modules():
        tree = _tree(path)
        ours.update(n.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "")
                                                     .startswith("tensorsched")):
                ours.update(a.asname or a.name for a in node.names)
    mixed = [f"{p.name}:{c.name}" for p, c in _classes()
             if sum(isinstance(b, ast.Name) and b.id in ours for b in c.bases) > 1]
    assert not mixed, f"classes built from several of ours: {mixed}"


def _imports_within():
    """module name -> the sibling modules it imports (``from .x import``)."""
    graph = {}
    for path in _modules():
        deps = set()
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
                deps.add(node.module.split(".")[0])
        graph[path.stem] = deps
    return graph


def test_modules_import_each_other_one_way():
    graph = _imports_within()
    seen, on_path = set(), []

    def visit(m):
        if m in on_path:
            raise AssertionError("import cycle: " + " -> ".join(on_path[on_path.index(m):]
                                                               + [m]))
        if m in seen:
            return
        on_path.append(m)
        for d in sorted(graph.get(m, ())):
            visit(d)
        on_path.pop()
        seen.add(m)

    for m in sorted(graph):
        visit(m)
    # the facade sits on top: no collaborator imports it
    assert not [m for m, deps in graph.items() if "scheduler" in deps]


def test_the_checks_catch_what_they_look_for():
    bad = ast.parse("def f(q):\n    return q._infos, self._ok, t._replace()\n")
    assert [name for _, _, name in _private_reads(bad)] == ["_infos"]
    tree = ast.parse("class A:\n    def _x(self):\n        self._y = 1\n")
    assert _own_privates(tree) == {"_x", "_y"}
