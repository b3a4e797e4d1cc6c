"""DRA objects need the CEL library: refused when they are loaded without it.

Device selectors (DeviceClass ``spec.selectors``, a claim's or claim
template's ``exactly`` / ``firstAvailable`` selectors) are CEL expressions,
parsed with cel-python, which the ``dra`` extra installs.  Without it every
pod asking for such devices would fail each cycle with a compile error
dressed as a scheduling outcome; a cluster that has them is refused when it
is built instead, naming the first object and field that needs the library.
"""

from __future__ import annotations

import importlib.util

from tensorsched.framework.errors import ManifestError
from tensorsched.framework.parsing.meta import source_of

__all__ = ["cel_available", "require_cel"]

INSTALL = "CEL device selectors need the cel-python package: pip install 'tensorsched[dra]'"


def cel_available() -> bool:
    """Whether cel-python (import name ``celpy``) is installed."""
    return importlib.util.find_spec("celpy") is not None


def _request_selectors(requests, base: str):
    """(field path, expression) of each CEL selector of a claim's requests."""
    for j, req in enumerate(requests):
        if req.exactly is not None:
            for i, sel in enumerate(req.exactly.selectors):
                if sel:
                    yield f"{base}.requests[{j}].exactly.selectors[{i}].cel.expression", sel
        for k, sub in enumerate(req.first_available):
            for i, sel in enumerate(sub.selectors):
                if sel:
                    yield (f"{base}.requests[{j}].firstAvailable[{k}].selectors[{i}]"
                           ".cel.expression"), sel


def _first_selector(device_classes, claims, templates):
    """(object, field, source) of the first CEL selector, or None."""
    for dc in device_classes:
        for i, sel in enumerate(dc.selectors):
            if sel:
                return (f"DeviceClass {dc.name}", f"spec.selectors[{i}].cel.expression",
                        source_of(dc.obj))
    for claim in claims:
        for path, _ in _request_selectors(claim.requests, "spec.devices"):
            return f"ResourceClaim {claim.namespace}/{claim.name}", path, source_of(claim.obj)
    for tpl in templates:
        for path, _ in _request_selectors(tpl.claim.requests, "spec.spec.devices"):
            return (f"ResourceClaimTemplate {tpl.namespace}/{tpl.name}", path,
                    source_of(tpl.obj))
    return None


def require_cel(device_classes, claims, templates) -> None:
    """Raise ManifestError naming the first DeviceClass, ResourceClaim or
    ResourceClaimTemplate with a CEL selector when cel-python is missing."""
    if cel_available():
        return
    first = _first_selector(device_classes, claims, templates)
    if first is not None:
        obj, path, source = first
        raise ManifestError(obj, path, INSTALL, source)
