"""Writes :mod:`.api_fields` (the field tables of every struct of the kinds
tensorsched reads) from the official Kubernetes Python client's wheel:
``python -m tensorsched.framework.parsing.api_fields_gen WHEEL [--output FILE]``.

The client has one model class per API struct, each with ``openapi_types``
(attribute -> a type string: ``'str'``, ``'list[V1Container]'``,
``'dict(str, V1Counter)'``, ``'object'``...) and ``attribute_map``
(attribute -> JSON field name).  The model files are read from the wheel
as text (``ast``: nothing of the client is imported or installed), every
struct reachable from a kind's root class is written in the form
:mod:`.strict_fields` compiles: field -> None (nothing to look into: a
scalar, a list or map of scalars, free-form ``object`` data such as a
Quantity, an IntOrString or a RawExtension), ``"Name"`` (a struct),
``"[]Name"`` (a list of structs) or ``"{}Name"`` (a map of string to
structs).

Struct names are the client's class names without their version prefix
(``V1PodSpec`` -> ``PodSpec``); two classes of one name (core's
``CoreV1ResourceClaim``, a container's reference to a pod's claim, and
resource.k8s.io's ``ResourceV1ResourceClaim``) keep the group: the kind's
own struct takes the plain name, the other ``ResourceClaim(core)``.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
import zipfile
from pathlib import Path

#: kind -> the client class of its object (the versions Kubernetes 1.35 serves)
KIND_CLASSES = {
    "Node": "V1Node",
    "Pod": "V1Pod",
    "PriorityClass": "V1PriorityClass",
    "PodDisruptionBudget": "V1PodDisruptionBudget",
    "Namespace": "V1Namespace",
    "Service": "V1Service",
    "ReplicationController": "V1ReplicationController",
    "ReplicaSet": "V1ReplicaSet",
    "StatefulSet": "V1StatefulSet",
    "PersistentVolume": "V1PersistentVolume",
    "PersistentVolumeClaim": "V1PersistentVolumeClaim",
    "StorageClass": "V1StorageClass",
    "CSINode": "V1CSINode",
    "CSIDriver": "V1CSIDriver",
    "CSIStorageCapacity": "V1CSIStorageCapacity",
    "VolumeAttachment": "V1VolumeAttachment",
    "DeviceClass": "V1DeviceClass",
    "ResourceSlice": "V1ResourceSlice",
    "ResourceClaim": "ResourceV1ResourceClaim",
    "ResourceClaimTemplate": "V1ResourceClaimTemplate",
}

MODELS = "kubernetes/client/models/"
_PREFIX = re.compile(r"^(?P<group>[A-Z][a-z]+)?V[0-9]+(?:(?:alpha|beta)[0-9]+)?(?=[A-Z])")
_SCALARS = {"str", "int", "float", "bool", "datetime", "date", "object", "bytearray", "file"}


def read_models(wheel: Path) -> tuple[str, dict[str, dict[str, tuple[str, str]]]]:
    """(client version, class name -> {attribute: (type string, JSON name)})
    of every model of the wheel."""
    models: dict[str, dict[str, tuple[str, str]]] = {}
    version = ""
    with zipfile.ZipFile(wheel) as z:
        for name in z.namelist():
            if name == "kubernetes/__init__.py":
                m = re.search(r'__version__\s*=\s*"([^"]+)"', z.read(name).decode())
                version = m.group(1) if m else ""
            if not (name.startswith(MODELS) and name.endswith(".py")):
                continue
            tree = ast.parse(z.read(name).decode("utf-8"), name)
            for node in tree.body:
                if isinstance(node, ast.ClassDef):
                    tables = _class_tables(node)
                    if tables is not None:
                        models[node.name] = tables
    if not version:
        raise SystemExit(f"{wheel}: no kubernetes/__init__.py __version__")
    return version, models


def _class_tables(node: ast.ClassDef) -> dict[str, tuple[str, str]] | None:
    found = {}
    for stmt in node.body:
        if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name)
                and stmt.targets[0].id in ("openapi_types", "attribute_map")):
            found[stmt.targets[0].id] = ast.literal_eval(stmt.value)
    if len(found) != 2:
        return None
    types, names = found["openapi_types"], found["attribute_map"]
    return {attr: (types[attr], names[attr]) for attr in types}


# the client's collection types and the tables' prefix for each
_COLLECTIONS = ((r"list\[(.+)\]", "[]"), (r"dict\(str, (.+)\)", "{}"))


def _value(type_string: str, models) -> str | None:
    """A field's value in the tables' form (see the module doc)."""
    t = type_string.strip()
    if t in _SCALARS:
        return None
    for pattern, prefix in _COLLECTIONS:
        m = re.fullmatch(pattern, t)
        if m:
            inner = _value(m.group(1), models)
            if inner is None:
                return None
            if inner.startswith(("[]", "{}")):
                raise ValueError(f"nested collection of structs: {type_string}")
            return prefix + inner
    if t not in models:
        raise ValueError(f"unknown type {type_string!r}")
    return t


def reachable(models, kind_classes=KIND_CLASSES) -> list[str]:
    """The classes reachable from the kinds' classes, in the order first met."""
    order: list[str] = []
    todo = list(kind_classes.values())
    seen = set(todo)
    while todo:
        cls = todo.pop(0)
        order.append(cls)
        for type_string, _ in models[cls].values():
            v = _value(type_string, models)
            if v is not None:
                sub = v.lstrip("[]{}")
                if sub not in seen:
                    seen.add(sub)
                    todo.append(sub)
    return order


def struct_names(classes: list[str], kind_classes=KIND_CLASSES) -> dict[str, str]:
    """Class -> struct name (module doc: the version prefix dropped; on a
    clash the kinds' own class keeps the plain name, the others add their
    group in parentheses)."""
    plain = {c: _PREFIX.sub("", c) for c in classes}
    out = {}
    roots = set(kind_classes.values())
    for c in classes:
        clash = [o for o in classes if plain[o] == plain[c]]
        if len(clash) == 1 or c in roots:
            out[c] = plain[c]
        else:
            group = _PREFIX.match(c).group("group") or "core"
            out[c] = f"{plain[c]}({group.lower()})"
    if len(set(out.values())) != len(out):
        raise ValueError("struct names clash")
    return out


def tables(models, kind_classes=KIND_CLASSES
           ) -> tuple[dict[str, dict[str, str | None]], dict[str, str]]:
    """(struct -> {JSON field: value}, kind -> struct), structs by name."""
    classes = reachable(models, kind_classes)
    names = struct_names(classes, kind_classes)
    structs = {}
    for c in sorted(classes, key=lambda c: names[c]):
        fields = {}
        for type_string, json_name in sorted(models[c].values(), key=lambda tv: tv[1]):
            v = _value(type_string, models)
            if v is not None:
                prefix = v[:2] if v.startswith(("[]", "{}")) else ""
                v = prefix + names[v[len(prefix):]]
            fields[json_name] = v
        structs[names[c]] = fields
    kinds = {kind: names[cls] for kind, cls in kind_classes.items()}
    return structs, kinds


def _q(value: str | None) -> str:
    """A string as Python source, in double quotes (None as None)."""
    return "None" if value is None else json.dumps(value)


def render(version: str, structs, kinds) -> str:
    """The text of :mod:`.api_fields`."""
    lines = [
        '"""The field names of every struct of the kinds tensorsched reads (Kubernetes',
        f"1.35), generated from the official Python client kubernetes=={version}'s",
        "models: do not edit.  Regenerate with",
        "``python -m tensorsched.framework.parsing.api_fields_gen",
        f"kubernetes-{version}-py2.py3-none-any.whl`` (the wheel is read, not installed).",
        "",
        "Each field's value: None (nothing to look into), ``\"Name\"`` (struct Name),",
        '``"[]Name"`` (a list of Name), ``"{}Name"`` (a map of string to Name);',
        ":mod:`.strict_fields` compiles and walks them.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        f"CLIENT_VERSION = {_q(version)}",
        "",
        "#: kind -> the struct of its object",
        "KIND_STRUCTS = {",
    ]
    lines += [f"    {_q(k)}: {_q(v)}," for k, v in kinds.items()]
    lines += ["}", "", "#: struct name -> {JSON field name: its value}",
              "STRUCTS: dict[str, dict[str, str | None]] = {"]
    for name, fields in structs.items():
        lines.append(f"    {_q(name)}: {{")
        for f, v in fields.items():
            lines.append(f"        {_q(f)}: {_q(v)},")
        lines.append("    },")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tensorsched.framework.parsing.api_fields_gen",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("wheel", type=Path, help="kubernetes-<version>-py2.py3-none-any.whl")
    ap.add_argument("--output", type=Path,
                    default=Path(__file__).resolve().parent / "api_fields.py")
    a = ap.parse_args(argv)
    version, models = read_models(a.wheel)
    text = render(version, *tables(models))
    if str(a.output) == "-":
        sys.stdout.write(text)
    else:
        a.output.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
