"""The names inside a pod spec that the API server checks, and the
references between them: a container port's ``name`` (an IANA service
name, unique among the container's ports), a volume's ``name`` (a DNS-1123
label, unique in the pod) and a volume mount's ``name`` (a volume of the
pod) and ``mountPath`` (set, unique in the container); and the host ports
two ports of a pod may not share (``check_host_port``).

``manifests.parse_pod`` raises the errors (``ManifestError`` naming the
field); ``unkeyed_fields_valid`` answers for the pod-template fast path
whether a pod's fields outside its template key (annotations, volumes the
volume plugins do not read, volume mounts) pass the same checks.
"""

from __future__ import annotations

import functools
import re

from .meta import (
    DNS1123_LABEL_MAX_LENGTH,
    NameRules,
    ObjectContext,
    annotations_valid,
    dns1123_label_errors,
    invalid_value,
)

__all__ = ["PORT_NAME_MAX_LENGTH", "port_name_errors", "check_port_names", "check_host_port",
           "check_volume_name", "check_volume_mounts", "unkeyed_fields_valid"]

#: The longest container port name (an IANA service name, RFC 6335).
PORT_NAME_MAX_LENGTH = 15
_PORT_NAME_CHARS = re.compile(r"[-a-z0-9]+")
_HAS_LETTER = re.compile(r"[a-z]")


@functools.lru_cache(maxsize=4096)
def port_name_errors(name: str) -> tuple[str, ...]:
    """The problems of ``name`` as a container port name (empty when
    valid): at most 15 characters, only lowercase letters, digits and '-',
    at least one letter, no '-' first, last or twice in a row (what the API
    server's IANA_SVC_NAME rule asks)."""
    errs = []
    if len(name) > PORT_NAME_MAX_LENGTH:
        errs.append(f"must be no more than {PORT_NAME_MAX_LENGTH} characters")
    if not _PORT_NAME_CHARS.fullmatch(name):
        errs.append("must contain only lowercase letters (a-z), digits (0-9) and '-'")
    if "--" in name:
        errs.append("must not contain two '-' in a row")
    if name.startswith("-") or name.endswith("-"):
        errs.append("must not begin or end with '-'")
    if not _HAS_LETTER.search(name):
        errs.append("must contain at least one letter (a-z)")
    return tuple(errs)


def check_port_names(ctx: ObjectContext, ports: list, path: str) -> None:
    """ManifestError for the first port of one container (``ports``, a
    list of mappings at ``path``) whose ``name`` is not a valid port name
    or repeats another port's of that container (the API server compares
    names within a container, not across the pod)."""
    seen: dict[str, int] = {}
    for j, p in enumerate(ports):
        name = ctx.string(p.get("name"), f"{path}[{j}].name")
        if not name:
            continue
        errs = port_name_errors(name)
        if errs:
            ctx.fail(f"{path}[{j}].name", invalid_value(name, list(errs)))
        if name in seen:
            ctx.fail(f"{path}[{j}].name",
                     f"Duplicate value: {name!r} (also {path}[{seen[name]}].name)")
        seen[name] = j


def check_host_port(ctx: ObjectContext, held: dict[tuple[str, str, int], str],
                    protocol: str, host_ip: str, host_port: int, path: str) -> None:
    """ManifestError when the port at ``path`` asks for a host port that an
    earlier port of the same group already holds; else records it in
    ``held`` ((protocol, hostIP, hostPort) -> the holder's path).

    The API server's rule: a port holds (protocol after defaulting to TCP,
    ``hostIP`` exactly as written, ``hostPort`` after the hostNetwork
    default); ``hostPort`` 0 holds nothing.  The group is every regular
    container of the pod together, and each init container on its own
    (init containers run one at a time, so the server compares an init
    container's ports with each other only, never with another container's,
    sidecars included).  ``hostIP`` is compared as text: "" and "0.0.0.0"
    are different keys here, though the scheduler treats both as every
    address."""
    if host_port == 0:
        return
    key = (protocol, host_ip, host_port)
    if key in held:
        ctx.fail(f"{path}.hostPort",
                 f"Duplicate value: '{protocol}/{host_ip}/{host_port}' (protocol/hostIP/hostPort; "
                 f"also {held[key]}.hostPort)")
    held[key] = path


def check_volume_name(ctx: ObjectContext, v: dict, i: int, seen: dict[str, int]) -> str:
    """The ``name`` of ``v``, ``spec.volumes[i]``: required, a DNS-1123
    label (when ``NameRules.enforced``), not one an earlier volume has
    (``seen``: name -> index, updated)."""
    path = f"spec.volumes[{i}]"
    name = ctx.string(v.get("name"), f"{path}.name")
    if not name:
        ctx.fail(f"{path}.name", "Required value")
    if NameRules.enforced:
        errs = dns1123_label_errors(name)
        if errs:
            ctx.fail(f"{path}.name", invalid_value(name, errs))
    if name in seen:
        ctx.fail(f"{path}.name",
                 f"Duplicate value: {name!r} (also spec.volumes[{seen[name]}].name)")
    seen[name] = i
    return name


def check_volume_mounts(ctx: ObjectContext, mounts, path: str, volumes) -> None:
    """A container's ``volumeMounts`` at ``path``: each a mapping whose
    ``name`` is one of ``volumes`` (the pod's volume names) and whose
    ``mountPath`` is set and not another mount's of this container."""
    paths: dict[str, int] = {}
    for j, m in enumerate(ctx.list(mounts, path)):
        mpath = f"{path}[{j}]"
        m = ctx.mapping(m, mpath)
        name = ctx.string(m.get("name"), f"{mpath}.name")
        if not name:
            ctx.fail(f"{mpath}.name", "Required value")
        if name not in volumes:
            ctx.fail(f"{mpath}.name", f"Not found: {name!r} (no volume of spec.volumes "
                     "has that name)")
        mount_path = ctx.string(m.get("mountPath"), f"{mpath}.mountPath")
        if not mount_path:
            ctx.fail(f"{mpath}.mountPath", "Required value")
        if mount_path in paths:
            ctx.fail(f"{mpath}.mountPath", invalid_value(
                mount_path, [f"must be unique (also {path}[{paths[mount_path]}].mountPath)"]))
        paths[mount_path] = j


#: A DNS-1123 label's pattern, without groups (a match is ASCII: its length
#: is its length in bytes).
_LABEL = re.compile(r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?").fullmatch


def _volume_names(volumes) -> set[str] | None:
    """The names of ``spec.volumes`` when each is valid and unique, else None."""
    if volumes is None:
        return set()
    if type(volumes) is not list:
        return None
    names: set[str] = set()
    free = not NameRules.enforced
    for v in volumes:
        name = v.get("name") if type(v) is dict else None
        if (type(name) is not str or not name or name in names
                or not (free or (_LABEL(name) and len(name) <= DNS1123_LABEL_MAX_LENGTH))):
            return None
        names.add(name)
    return names


def _mounts_valid(containers, names: set[str]) -> bool:
    """Whether every volume mount of ``containers`` passes ``check_volume_mounts``."""
    if containers is None:
        return True
    if type(containers) is not list:
        return False
    for c in containers:
        if type(c) is not dict:
            return False
        mounts = c.get("volumeMounts")
        if mounts is None:
            continue
        if type(mounts) is not list:
            return False
        paths = set()
        for m in mounts:
            if type(m) is not dict:
                return False
            name, mount_path = m.get("name"), m.get("mountPath")
            if (type(name) is not str or name not in names or type(mount_path) is not str
                    or not mount_path or mount_path in paths):
                return False
            paths.add(mount_path)
    return True


def unkeyed_fields_valid(obj: dict) -> bool:
    """Whether ``parse_pod`` takes the fields of Pod ``obj`` that its
    template key leaves out (``pod_templates.template_key``): the
    annotations, the volumes' names (of every volume, read by the plugins
    or not) and the containers' volume mounts.  A pod of a known template
    for which this is False is parsed alone, which names the problem."""
    meta, spec = obj["metadata"], obj["spec"]
    if not annotations_valid(meta.get("annotations")):
        return False
    names = _volume_names(spec.get("volumes"))
    return (names is not None and _mounts_valid(spec.get("containers"), names)
            and _mounts_valid(spec.get("initContainers"), names))
