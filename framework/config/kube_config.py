"""KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) loading.

``load_config`` reads a configuration (a YAML/JSON file, a mapping, or None
for the defaults), applies kube-scheduler's defaulting and merging rules
(1.31/1.32) and validates everything; what it returns is final: every
profile has, per extension point, the ordered list of enabled plugins, the
score weights, and the decoded args of its plugins. Any problem is a
``ConfigError`` naming the field path (``profiles[0].plugins.score.enabled[1].weight``);
nothing half-built escapes.

The rules, as upstream:

- defaults are one multiPoint list (``DEFAULT_PLUGINS``); a profile's
  ``plugins`` is merged into them point by point: ``disabled`` drops default
  plugins (``"*"`` drops them all), an ``enabled`` entry naming a default
  plugin replaces it in place (so its weight is the new entry's), other
  enabled entries are appended in order;
- multiPoint expansion, per extension point P: skipped if P disables ``"*"``;
  each multiPoint plugin that implements P and is not disabled at P is
  enabled there, unless P's own ``enabled`` list names it (an override).
  Final order at P: the overrides (in P's order), then the multiPoint
  plugins, then P's other plugins;
- score weights: the score list's own entry wins over the multiPoint one;
  a weight of 0 (or unset) becomes 1;
- exactly one queueSort plugin, at least one bind plugin per profile; the
  queueSort configuration must be the same for all profiles.

Deviations, on purpose: a negative weight is rejected (upstream lets it
invert the scores); extenders are not supported (rejected when non-empty).
"""

from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass, field
from typing import Any, Mapping

from tensorsched.framework.arguments import Arguments, shown
from tensorsched.framework.errors import ConfigError, TensorschedError
from tensorsched.framework.parsing.manifests import (
    DocumentError,
    check_shape,
    parse_yaml_documents,
    read_text,
)

from . import plugin_names
from .plugin_args import API_VERSION, decode_args, default_args, duration_seconds, has_args_decoder
from .plugin_args import feature_gates as feature_gates_in_force

KIND = "KubeSchedulerConfiguration"
DEFAULT_SCHEDULER_NAME = "default-scheduler"
DEFAULT_PERCENTAGE_OF_NODES_TO_SCORE = 0  # 0: adaptive (5%..50% by cluster size)

# Extension points, in the order a pod meets them.
POINTS: tuple[str, ...] = (
    "preEnqueue", "queueSort", "preFilter", "filter", "postFilter", "preScore",
    "score", "reserve", "permit", "preBind", "bind", "postBind",
)
MULTI_POINT = "multiPoint"

# The default plugin set (one multiPoint list) and the weights it gives.
DEFAULT_PLUGINS: tuple[tuple[str, int | None], ...] = (
    (plugin_names.SCHEDULING_GATES, None),
    (plugin_names.PRIORITY_SORT, None),
    (plugin_names.NODE_UNSCHEDULABLE, None),
    (plugin_names.NODE_NAME, None),
    (plugin_names.TAINT_TOLERATION, 3),
    (plugin_names.NODE_AFFINITY, 2),
    (plugin_names.NODE_PORTS, None),
    (plugin_names.NODE_RESOURCES_FIT, 1),
    (plugin_names.VOLUME_RESTRICTIONS, None),
    (plugin_names.NODE_VOLUME_LIMITS, None),
    (plugin_names.VOLUME_BINDING, None),
    (plugin_names.VOLUME_ZONE, None),
    (plugin_names.POD_TOPOLOGY_SPREAD, 2),
    (plugin_names.INTER_POD_AFFINITY, 2),
    # DynamicResourceAllocation on (GA since 1.34): before DefaultPreemption, so
    # that PostFilter frees an idle claim before it evicts a pod
    (plugin_names.DYNAMIC_RESOURCES, None),
    (plugin_names.DEFAULT_PREEMPTION, None),
    (plugin_names.NODE_RESOURCES_BALANCED_ALLOCATION, 1),
    (plugin_names.IMAGE_LOCALITY, 1),
    (plugin_names.DEFAULT_BINDER, None),
)

# Extension points each default plugin implements upstream.
DEFAULT_PLUGIN_POINTS: dict[str, frozenset[str]] = {
    plugin_names.SCHEDULING_GATES: frozenset({"preEnqueue"}),
    plugin_names.PRIORITY_SORT: frozenset({"queueSort"}),
    plugin_names.NODE_UNSCHEDULABLE: frozenset({"filter"}),
    plugin_names.NODE_NAME: frozenset({"filter"}),
    plugin_names.TAINT_TOLERATION: frozenset({"filter", "preScore", "score"}),
    plugin_names.NODE_AFFINITY: frozenset({"preFilter", "filter", "preScore", "score"}),
    plugin_names.NODE_PORTS: frozenset({"preFilter", "filter"}),
    plugin_names.NODE_RESOURCES_FIT: frozenset({"preFilter", "filter", "preScore", "score"}),
    plugin_names.VOLUME_RESTRICTIONS: frozenset({"preFilter", "filter"}),
    plugin_names.NODE_VOLUME_LIMITS: frozenset({"preFilter", "filter"}),
    plugin_names.VOLUME_BINDING: frozenset({"preFilter", "filter", "reserve", "preBind",
                                            "preScore", "score"}),
    plugin_names.VOLUME_ZONE: frozenset({"preFilter", "filter"}),
    plugin_names.POD_TOPOLOGY_SPREAD: frozenset({"preFilter", "filter", "preScore", "score"}),
    plugin_names.INTER_POD_AFFINITY: frozenset({"preFilter", "filter", "preScore", "score"}),
    plugin_names.DEFAULT_PREEMPTION: frozenset({"postFilter"}),
    plugin_names.NODE_RESOURCES_BALANCED_ALLOCATION: frozenset({"preScore", "score"}),
    plugin_names.IMAGE_LOCALITY: frozenset({"score"}),
    plugin_names.DEFAULT_BINDER: frozenset({"bind"}),
    plugin_names.DYNAMIC_RESOURCES: frozenset({"preEnqueue", "preFilter", "filter",
                                               "postFilter", "score", "reserve", "preBind"}),
}

# Plugins removed from kube-scheduler (invalid in config v1).
REMOVED_PLUGINS = frozenset({"AzureDiskLimits", "CinderLimits", "EBSLimits", "GCEPDLimits"})

_TOP_FIELDS = (
    "apiVersion", "kind", "parallelism", "leaderElection", "clientConnection",
    "enableProfiling", "enableContentionProfiling", "percentageOfNodesToScore",
    "podInitialBackoffSeconds", "podMaxBackoffSeconds", "profiles", "extenders",
    "delayCacheUntilActive",
)
_PROFILE_FIELDS = ("schedulerName", "percentageOfNodesToScore", "plugins", "pluginConfig")
# component-base's LeaderElectionConfiguration and ClientConnectionConfiguration
# (read strictly, validated as kube-scheduler validates them, otherwise unused)
_LEADER_ELECTION_FIELDS = ("leaderElect", "leaseDuration", "renewDeadline", "retryPeriod",
                           "resourceLock", "resourceName", "resourceNamespace")
_CLIENT_CONNECTION_FIELDS = ("kubeconfig", "acceptContentTypes", "contentType", "qps", "burst")
# kube-scheduler's defaults for a zero (unset) leader election duration, seconds
_LEASE_DEFAULTS = {"leaseDuration": 15.0, "renewDeadline": 10.0, "retryPeriod": 2.0}
_INT32_MAX = 2**31 - 1
_FLOAT32_MAX = 3.4028234663852886e38
_INT64_MAX = 2**63 - 1


class UnknownProfileError(TensorschedError, KeyError):
    """No profile has the scheduler name asked for."""

    def __init__(self, scheduler_name: str, known: tuple[str, ...]):
        self.scheduler_name = scheduler_name
        self.known = known
        super().__init__(scheduler_name)

    def __str__(self) -> str:
        return f"no profile with schedulerName {self.scheduler_name!r} (profiles: {', '.join(self.known)})"


@dataclass(frozen=True)
class PluginRef:
    """A plugin enabled at an extension point. ``weight`` is the effective
    score weight (>= 1) at ``score``, 0 at every other point."""

    name: str
    weight: int = 0


@dataclass(frozen=True)
class Profile:
    scheduler_name: str
    percentage_of_nodes_to_score: int | None  # None: the configuration's value
    # extension point name (POINTS, every one present) -> final ordered enabled plugins
    plugins: dict[str, tuple[PluginRef, ...]]
    # plugin name -> decoded args (defaults filled in), for each plugin enabled
    # at some point that has args (a built-in args type, a registered decoder,
    # or a raw pluginConfig mapping for an out-of-tree plugin)
    args: dict[str, object] = field(default_factory=dict)

    def names(self, point: str) -> tuple[str, ...]:
        return tuple(p.name for p in self.plugins[point])

    def score_weights(self) -> dict[str, int]:
        return {p.name: p.weight for p in self.plugins["score"]}


@dataclass(frozen=True)
class SchedulerConfig:
    profiles: tuple[Profile, ...]
    percentage_of_nodes_to_score: int | None
    pod_initial_backoff_seconds: int = 1
    pod_max_backoff_seconds: int = 10
    parallelism: int = 16

    def profile_for(self, scheduler_name: str) -> Profile:
        for p in self.profiles:
            if p.scheduler_name == scheduler_name:
                return p
        raise UnknownProfileError(scheduler_name, tuple(p.scheduler_name for p in self.profiles))


# --------------------------------------------------------------------------
# reading


def _config_path(path) -> str:
    """Keys and list indices -> ``profiles[0].pluginConfig[1].args``."""
    out = ""
    for p in path:
        if isinstance(p, int) and not isinstance(p, bool):
            out = f"{out}[{p}]"
        else:
            out = f"{out}.{p}" if out else str(p)
    return out


def _read_file(source) -> dict:
    """A configuration file, strictly (the manifests' reader: UTF-8, one
    document, no duplicate keys, bounded nesting and aliases); every problem
    is one ConfigError naming the file."""
    name = os.fspath(source)
    try:
        text = read_text(source)
        docs = parse_yaml_documents(text)        # JSON is YAML
    except DocumentError as exc:
        problem = exc.problem
        if problem.startswith("invalid YAML: "):
            problem = "not valid YAML/JSON: " + problem[len("invalid YAML: "):]
        elif problem.startswith("cannot read file: "):
            problem = "cannot read file: " + problem[len("cannot read file: "):]
        if exc.line is not None:
            problem = f"{problem} (line {exc.line})"
        raise ConfigError(_config_path(exc.path), problem, name) from None
    docs = [d for _, d in docs if d is not None]
    if len(docs) > 1:
        raise ConfigError("", f"must hold one object, got {len(docs)} documents", name)
    data = docs[0] if docs else {}
    if not isinstance(data, Mapping):
        raise ConfigError("", f"must hold one object (a mapping), got {type(data).__name__}",
                          name)
    return dict(data)


def _read(source: Any) -> dict:
    if source is None:
        return {"apiVersion": API_VERSION, "kind": KIND}
    if isinstance(source, Mapping):
        try:
            check_shape(dict(source))
        except DocumentError as exc:
            raise ConfigError("", exc.problem) from None
        return dict(source)
    if isinstance(source, (str, os.PathLike)):
        return _read_file(source)
    raise Arguments("load_config").error(
        "source", f"must be a path, a mapping or None, got {shown(source)}")


# --------------------------------------------------------------------------
# field helpers


def _mapping(raw: Any, path: str) -> dict:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ConfigError(path, f"must be an object, got {type(raw).__name__}")
    return dict(raw)


def _only(raw: Mapping, allowed: tuple[str, ...], path: str) -> None:
    for k in raw:
        if k not in allowed:
            where = f"{path}.{k}" if path else str(k)
            raise ConfigError(where, f"unknown field (known: {', '.join(allowed)})")


def _list(raw: Any, path: str) -> list:
    if raw is None:
        return []
    if not isinstance(raw, (list, tuple)):
        raise ConfigError(path, f"must be a list, got {type(raw).__name__}")
    return list(raw)


def _int(raw: Any, path: str, lo: int, hi: int) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int):
        raise ConfigError(path, f"must be an integer, got {raw!r}")
    if raw < lo or raw > hi:
        raise ConfigError(path, f"{raw} not in valid range [{lo}, {hi}]")
    return raw


def _percentage(raw: Any, path: str) -> int | None:
    if raw is None:
        return None
    if isinstance(raw, bool) or not isinstance(raw, int):
        raise ConfigError(path, f"must be an integer, got {raw!r}")
    if not 0 <= raw <= 100:
        raise ConfigError(path, f"{raw} not in valid range [0-100]")
    return raw


# --------------------------------------------------------------------------
# plugins


@dataclass(frozen=True)
class _Entry:
    name: str
    weight: int  # 0 = unset
    path: str  # where it was written ("" for a default)


def _parse_plugin_list(raw: Any, path: str, disabled: bool) -> list[_Entry]:
    out = []
    for j, item in enumerate(_list(raw, path)):
        p = f"{path}[{j}]"
        m = _mapping(item, p)
        _only(m, ("name", "weight"), p)
        name = m.get("name")
        if not isinstance(name, str) or not name:
            raise ConfigError(f"{p}.name", "required: a non-empty plugin name")
        weight = 0
        if m.get("weight") is not None:
            weight = _int(m["weight"], f"{p}.weight", -(2**31), _INT32_MAX)
            if weight < 0 and not disabled:
                raise ConfigError(f"{p}.weight", f"{weight}: weight must not be negative")
        out.append(_Entry(name, weight, p))
    return out


def _check_known(e: _Entry, plugin_points: Mapping[str, frozenset[str]]) -> None:
    if e.name in plugin_points:
        return
    if e.name in REMOVED_PLUGINS:
        raise ConfigError(f"{e.path}.name", f"{e.name!r} was removed; invalid in {API_VERSION}")
    raise ConfigError(f"{e.path}.name", f"unknown plugin {e.name!r}")


def _merge(defaults: list[_Entry], enabled: list[_Entry], disabled: set[str]) -> list[_Entry]:
    """Upstream mergePluginSet for one point: defaults first (minus disabled,
    re-enabled ones replaced in place by the custom entry), then custom
    entries that replaced nothing, in their order."""
    last_custom = {e.name: j for j, e in enumerate(enabled)}  # a later duplicate wins
    replaced: set[int] = set()
    out: list[_Entry] = []
    if "*" not in disabled:
        for d in defaults:
            if d.name in disabled:
                continue
            j = last_custom.get(d.name)
            if j is not None:
                replaced.add(j)
                out.append(enabled[j])
            else:
                out.append(d)
    out.extend(e for j, e in enumerate(enabled) if j not in replaced)
    return out


def _build_plugins(
    ppath: str, raw_plugins: Any, plugin_points: Mapping[str, frozenset[str]]
) -> tuple[dict[str, tuple[PluginRef, ...]], list[_Entry], dict[str, list[_Entry]]]:
    """Returns (final lists per point, merged multiPoint list, per-point enabled lists)."""
    plugins = _mapping(raw_plugins, ppath)
    _only(plugins, POINTS + (MULTI_POINT,), ppath)

    enabled: dict[str, list[_Entry]] = {}
    disabled: dict[str, set[str]] = {}
    for point in POINTS + (MULTI_POINT,):
        sp = f"{ppath}.{point}"
        s = _mapping(plugins.get(point), sp)
        _only(s, ("enabled", "disabled"), sp)
        enabled[point] = _parse_plugin_list(s.get("enabled"), f"{sp}.enabled", False)
        disabled[point] = {e.name for e in _parse_plugin_list(s.get("disabled"), f"{sp}.disabled", True)}

    # names: every enabled plugin must exist and implement the point it is listed under
    for e in enabled[MULTI_POINT]:
        _check_known(e, plugin_points)
    for point in POINTS:
        seen: set[str] = set()
        for e in enabled[point]:
            _check_known(e, plugin_points)
            if point not in plugin_points[e.name]:
                raise ConfigError(
                    f"{e.path}.name", f"plugin {e.name!r} does not implement the {point} extension point"
                )
            if e.name in seen:
                raise ConfigError(f"{e.path}.name", f"plugin {e.name!r} already enabled at {point}")
            seen.add(e.name)

    defaults = [_Entry(n, w or 0, "") for n, w in DEFAULT_PLUGINS]
    multi = _merge(defaults, enabled[MULTI_POINT], disabled[MULTI_POINT])
    for e in multi:
        if e.name not in plugin_points:  # only a default can get here
            raise ConfigError(f"{ppath}.{MULTI_POINT}", f"default plugin {e.name!r} is not registered")

    final: dict[str, tuple[PluginRef, ...]] = {}
    for point in POINTS:
        own = enabled[point]
        own_names = {e.name for e in own}
        if "*" in disabled[point]:
            ordered = list(own)
        else:
            overrides: set[str] = set()
            from_multi: list[_Entry] = []
            taken: set[str] = set()
            for e in multi:
                if point not in plugin_points[e.name] or e.name in disabled[point]:
                    continue
                if e.name in own_names:
                    overrides.add(e.name)
                    continue
                if e.name in taken:
                    where = f"{e.path}.name" if e.path else f"{ppath}.{MULTI_POINT}.enabled"
                    raise ConfigError(where, f"plugin {e.name!r} already enabled at {point} through multiPoint")
                taken.add(e.name)
                from_multi.append(e)
            ordered = (
                [e for e in own if e.name in overrides]
                + from_multi
                + [e for e in own if e.name not in overrides]
            )
        final[point] = tuple(PluginRef(e.name, 0) for e in ordered)

    # score weights: the score list's own entry first, then multiPoint; 0 -> 1
    weights: dict[str, int] = {}
    for e in enabled["score"] + multi:
        weights.setdefault(e.name, e.weight or 1)
    final["score"] = tuple(PluginRef(r.name, weights[r.name]) for r in final["score"])
    return final, multi, enabled


def _build_profile(
    i: int, raw: Any, plugin_points: Mapping[str, frozenset[str]], n_profiles: int,
    gates: Mapping[str, bool] | None = None,
) -> tuple[Profile, dict[str, int]]:
    path = f"profiles[{i}]"
    m = _mapping(raw, path)
    _only(m, _PROFILE_FIELDS, path)

    name = m.get("schedulerName")
    if name is None and n_profiles == 1:
        name = DEFAULT_SCHEDULER_NAME
    if name is None or name == "":
        raise ConfigError(f"{path}.schedulerName", "required")
    if not isinstance(name, str):
        raise ConfigError(f"{path}.schedulerName", f"must be a string, got {name!r}")
    pct = _percentage(m.get("percentageOfNodesToScore"), f"{path}.percentageOfNodesToScore")

    final, _multi, _enabled = _build_plugins(f"{path}.plugins", m.get("plugins"), plugin_points)

    # pluginConfig: decoded and validated even for plugins not enabled (then unused)
    decoded: dict[str, object] = {}
    config_index: dict[str, int] = {}
    cp = f"{path}.pluginConfig"
    for j, item in enumerate(_list(m.get("pluginConfig"), cp)):
        p = f"{cp}[{j}]"
        c = _mapping(item, p)
        _only(c, ("name", "args"), p)
        pname = c.get("name")
        if not isinstance(pname, str) or not pname:
            raise ConfigError(f"{p}.name", "required: a non-empty plugin name")
        if pname in config_index:
            raise ConfigError(p, f"duplicate pluginConfig for {pname!r} (first at {cp}[{config_index[pname]}])")
        if pname in REMOVED_PLUGINS:
            raise ConfigError(p, f"{pname!r} was removed; invalid in {API_VERSION}")
        config_index[pname] = j
        decoded[pname] = decode_args(pname, c.get("args"), f"{p}.args", gates)

    enabled_names: list[str] = []
    for point in POINTS:
        for r in final[point]:
            if r.name not in enabled_names:
                enabled_names.append(r.name)
    args: dict[str, object] = {}
    for n in enabled_names:
        if n in decoded:
            if decoded[n] is not None:
                args[n] = decoded[n]
        elif has_args_decoder(n):
            args[n] = default_args(n, gates)

    ppath = f"{path}.plugins"
    if len(final["queueSort"]) != 1:
        raise ConfigError(
            f"{ppath}.queueSort",
            f"exactly one queueSort plugin is required, got {len(final['queueSort'])}"
            + (f" ({', '.join(r.name for r in final['queueSort'])})" if final["queueSort"] else ""),
        )
    if not final["bind"]:
        raise ConfigError(f"{ppath}.bind", "at least one bind plugin is required")
    prof = Profile(name, pct, final, args)
    return prof, config_index


def _queue_sort_section(raw_profile: Any) -> Any:
    """The profile's own queueSort section, normalized for comparison."""
    plugins = (raw_profile or {}).get("plugins") or {}
    s = plugins.get("queueSort") or {}
    return (
        [(e.get("name"), e.get("weight") or 0) for e in (s.get("enabled") or [])],
        sorted(e.get("name") for e in (s.get("disabled") or [])),
    )


def _check_top_level(raw: Mapping) -> None:
    """None; ConfigError for a bad apiVersion/kind, an unknown or ill-typed field, extenders."""
    for k in raw:
        if not isinstance(k, str):
            raise ConfigError("", f"field name {k!r} is not a string")
    api = raw.get("apiVersion")
    if api is None:
        raise ConfigError("apiVersion", f"required: must be {API_VERSION!r}")
    if api != API_VERSION:
        raise ConfigError("apiVersion", f"unsupported {api!r}: must be {API_VERSION!r}")
    kind = raw.get("kind")
    if kind != KIND:
        raise ConfigError("kind", f"must be {KIND!r}, got {kind!r}")
    _only(raw, _TOP_FIELDS, "")

    _check_leader_election(_mapping(raw.get("leaderElection"), "leaderElection"))
    _check_client_connection(_mapping(raw.get("clientConnection"), "clientConnection"))
    for k in ("enableProfiling", "enableContentionProfiling", "delayCacheUntilActive"):
        if raw.get(k) is not None and not isinstance(raw[k], bool):
            raise ConfigError(k, f"must be a boolean, got {raw[k]!r}")
    if _list(raw.get("extenders"), "extenders"):
        raise ConfigError("extenders", "scheduler extenders are not supported")


def _string(raw: Mapping, key: str, path: str) -> None:
    if raw.get(key) is not None and not isinstance(raw[key], str):
        raise ConfigError(f"{path}.{key}", f"must be a string, got {raw[key]!r}")


def _check_leader_election(le: dict) -> None:
    """leaderElection read strictly (its fields and their types), then as
    kube-scheduler validates it once defaulted: with leaderElect on (the
    default) every duration positive and leaseDuration > renewDeadline."""
    path = "leaderElection"
    _only(le, _LEADER_ELECTION_FIELDS, path)
    elect = le.get("leaderElect")
    if elect is not None and not isinstance(elect, bool):
        raise ConfigError(f"{path}.leaderElect", f"must be a boolean, got {elect!r}")
    for k in ("resourceLock", "resourceName", "resourceNamespace"):
        _string(le, k, path)
    seconds = {}
    for k, default in _LEASE_DEFAULTS.items():
        v = 0.0 if le.get(k) is None else duration_seconds(le[k], f"{path}.{k}")
        seconds[k] = default if v == 0 else v       # a zero Duration is unset
    if elect is False:
        return
    for k, v in seconds.items():
        if v <= 0:
            raise ConfigError(f"{path}.{k}",
                              f"Invalid value: {le[k]!r}: must be greater than zero")
    if seconds["leaseDuration"] <= seconds["renewDeadline"]:
        raise ConfigError(f"{path}.leaseDuration",
                          f"Invalid value: {le.get('leaseDuration', '15s')!r}: must be greater "
                          f"than renewDeadline ({le.get('renewDeadline', '10s')})")


def _check_client_connection(cc: dict) -> None:
    """clientConnection read strictly; qps a finite number, burst an int32 >= 0."""
    path = "clientConnection"
    _only(cc, _CLIENT_CONNECTION_FIELDS, path)
    for k in ("kubeconfig", "acceptContentTypes", "contentType"):
        _string(cc, k, path)
    qps = cc.get("qps")
    if qps is not None and (isinstance(qps, bool) or not isinstance(qps, (int, float))
                            or not math.isfinite(qps) or abs(qps) > _FLOAT32_MAX):
        raise ConfigError(f"{path}.qps", f"must be a number (a float32), got {qps!r}")
    if cc.get("burst") is not None:
        burst = _int(cc["burst"], f"{path}.burst", -(2**31), _INT32_MAX)
        if burst < 0:
            raise ConfigError(f"{path}.burst", f"Invalid value: {burst}: must be non-negative")


def _global_settings(raw: Mapping) -> dict[str, int]:
    """SchedulerConfig kwargs: parallelism, percentage_of_nodes_to_score, backoffs (seconds)."""
    parallelism = 16 if raw.get("parallelism") is None else _int(
        raw["parallelism"], "parallelism", -(2**31), _INT32_MAX
    )
    if parallelism <= 0:
        raise ConfigError(
            "parallelism", f"{parallelism}: should be an integer value greater than zero"
        )
    pct = _percentage(raw.get("percentageOfNodesToScore"), "percentageOfNodesToScore")
    if pct is None:
        pct = DEFAULT_PERCENTAGE_OF_NODES_TO_SCORE
    initial = 1 if raw.get("podInitialBackoffSeconds") is None else _int(
        raw["podInitialBackoffSeconds"], "podInitialBackoffSeconds", -(2**63), _INT64_MAX
    )
    maximum = 10 if raw.get("podMaxBackoffSeconds") is None else _int(
        raw["podMaxBackoffSeconds"], "podMaxBackoffSeconds", -(2**63), _INT64_MAX
    )
    if initial <= 0:
        raise ConfigError("podInitialBackoffSeconds", f"{initial}: must be greater than 0")
    if maximum < initial:
        raise ConfigError(
            "podMaxBackoffSeconds",
            f"{maximum}: must be greater than or equal to podInitialBackoffSeconds ({initial})",
        )
    return dict(parallelism=parallelism, percentage_of_nodes_to_score=pct,
                pod_initial_backoff_seconds=initial, pod_max_backoff_seconds=maximum)


def _build_profiles(
    raw_profiles: list, plugin_points: Mapping[str, frozenset[str]],
    gates: Mapping[str, bool] | None = None,
) -> tuple[list[Profile], list[dict[str, int]]]:
    """(profiles, per profile: plugin name -> its pluginConfig index), scheduler names unique."""
    profiles: list[Profile] = []
    config_indexes: list[dict[str, int]] = []
    seen: dict[str, int] = {}
    for i, rp in enumerate(raw_profiles):
        prof, idx = _build_profile(i, rp, plugin_points, len(raw_profiles), gates)
        if prof.scheduler_name in seen:
            first = seen[prof.scheduler_name]
            raise ConfigError(
                f"profiles[{i}].schedulerName",
                f"duplicate value {prof.scheduler_name!r} (also profiles[{first}].schedulerName)",
            )
        seen[prof.scheduler_name] = i
        profiles.append(prof)
        config_indexes.append(idx)
    return profiles, config_indexes


def _check_shared_queue_sort(
    raw_profiles: list, profiles: list[Profile], config_indexes: list[dict[str, int]]
) -> None:
    """None; ConfigError unless every profile has profile 0's queueSort section, plugin, args."""
    # all profiles share one queue: same queueSort section, plugin and args
    canon = _queue_sort_section(raw_profiles[0])
    qs0 = profiles[0].plugins["queueSort"][0].name
    for i in range(1, len(profiles)):
        if (_queue_sort_section(raw_profiles[i]) != canon
                or profiles[i].plugins["queueSort"][0].name != qs0):
            raise ConfigError(f"profiles[{i}].plugins.queueSort",
                              "must be the same for all profiles")
        a0 = profiles[0].args.get(qs0)
        if profiles[i].args.get(qs0) != a0:
            j = config_indexes[i].get(qs0)
            where = (f"profiles[{i}].pluginConfig[{j}].args" if j is not None
                     else f"profiles[{i}].pluginConfig")
            raise ConfigError(
                where, f"args of queueSort plugin {qs0!r} must be the same for all profiles"
            )


def load_config(
    source: Any, plugin_points: Mapping[str, frozenset[str]] = DEFAULT_PLUGIN_POINTS,
    feature_gates: Mapping[str, bool] | None = None,
) -> SchedulerConfig:
    """Load, default, merge and validate a KubeSchedulerConfiguration.

    ``source``: a path to a YAML or JSON file, a mapping, or None (the
    defaults: one ``default-scheduler`` profile with the default plugins).
    ``plugin_points``: every known plugin name -> the extension points it
    implements (a superset of ``DEFAULT_PLUGIN_POINTS`` for out-of-tree plugins).
    ``feature_gates``: gate name -> on (kube-scheduler's ``--feature-gates``;
    ``plugin_args.FEATURE_GATES`` lists the known ones and their defaults),
    e.g. ``{"StorageCapacityScoring": True}`` lets VolumeBinding's args carry
    a ``shape`` and turns its capacity score on.
    Raises ``ConfigError`` naming the field path of the first problem."""
    raw = _read(source)
    try:
        _check_top_level(raw)
        settings = _global_settings(raw)
        raw_profiles = _list(raw.get("profiles"), "profiles") or [{}]
        gates = feature_gates_in_force(feature_gates)
        profiles, config_indexes = _build_profiles(raw_profiles, plugin_points, gates)
        _check_shared_queue_sort(raw_profiles, profiles, config_indexes)
    except ConfigError as exc:
        # errors of a file name it
        raise exc.with_source(os.fspath(source) if isinstance(source, (str, os.PathLike))
                              else None) from None
    return SchedulerConfig(profiles=tuple(profiles), **settings)


# --------------------------------------------------------------------------
# printing


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w[:1].upper() + w[1:] for w in rest)


def _jsonable(v: Any) -> Any:
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return {_camel(f.name): _jsonable(getattr(v, f.name)) for f in dataclasses.fields(v)}
    if isinstance(v, Mapping):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    return repr(v)


def profile_to_dict(profile: Profile) -> dict:
    """A JSON-friendly view of a final profile (for printing and debugging)."""
    return {
        "schedulerName": profile.scheduler_name,
        "percentageOfNodesToScore": profile.percentage_of_nodes_to_score,
        "plugins": {
            point: [
                {"name": r.name, "weight": r.weight} if point == "score" else {"name": r.name}
                for r in profile.plugins[point]
            ]
            for point in POINTS
        },
        "pluginConfig": [{"name": n, "args": _jsonable(a)} for n, a in sorted(profile.args.items())],
    }
