"""What every object parser shares: typed field accessors that name the
object and field path in errors (``ObjectContext``), identity and metadata
checks, quantities in canonical units, RFC3339 timestamps and LabelSelector
validation.  ``manifests``, ``podgroups``, ``workloads`` and out-of-tree
object kinds (``topology.nrt``) parse with these.
"""

from __future__ import annotations

import copy
import functools
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

import yaml

from tensorsched.framework.errors import ManifestError

from .quantity import INT64_MAX, INT64_MIN, quantity_milli

LABEL_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


@dataclass(frozen=True)
class ObjectKind:
    """How ``manifests.parse_objects`` reads one kind of object.

    ``parse(obj, where=...)`` returns its record (or raises ManifestError);
    ``key(record)`` must be unique among the objects of this kind (the
    duplicate error shows ``label.format(key)``); ``accepts(obj)``, when set,
    tells objects of this kind name that belong to another API group apart
    (they are counted as ignored); ``reads``, when set, is the apiVersion
    ``accepts`` takes (the ignored-objects warning names it)."""

    kind: str
    parse: Callable
    key: Callable
    label: str
    accepts: Callable | None = None
    reads: str | None = None

# --------------------------------------------------------------------------
# small typed accessors; each raises ManifestError(ident, field, problem)

_SIMPLE_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def join_path(base: str, key: str) -> str:
    if _SIMPLE_KEY.fullmatch(key):
        return f"{base}.{key}" if base else key
    return f"{base}[{json.dumps(key)}]"


def type_name(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


class SourcedObject(dict):
    """An object dict read from a file (``manifests.load_objects``):
    ``source`` is ``"<file>#<document>"`` (``"<file>#<document>.items[i]"``
    for an item of a List), named by every error about the object."""

    __slots__ = ("source",)

    def __init__(self, data=(), source: str = ""):
        super().__init__(data)
        self.source = source

    def __reduce__(self):
        return (SourcedObject, (dict(self), self.source))

    def __copy__(self):
        return SourcedObject(self, self.source)

    def __deepcopy__(self, memo):
        out = SourcedObject((), self.source)
        memo[id(self)] = out
        for k, v in self.items():
            out[copy.deepcopy(k, memo)] = copy.deepcopy(v, memo)
        return out


# Dumped as plain mappings by every PyYAML dumper (safe or not, C or Python).
for _representer in (yaml.representer.SafeRepresenter, yaml.representer.Representer):
    _representer.add_representer(SourcedObject, yaml.representer.SafeRepresenter.represent_dict)


def source_of(obj) -> str | None:
    """Where ``obj`` was read (``"<file>#<doc>"``), None when not from a file."""
    return obj.source or None if isinstance(obj, SourcedObject) else None


class ObjectContext:
    """The object being parsed: its identity (and, for an object read from
    a file, its source) for error messages."""

    __slots__ = ("ident", "source")

    def __init__(self, ident: str, source: str | None = None):
        self.ident = ident
        self.source = source

    def fail(self, path: str, problem: str):
        raise ManifestError(self.ident, path, problem, self.source)

    def mapping(self, value, path: str) -> dict:
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.fail(path, f"must be a mapping, got {type_name(value)}")
        return value

    def list(self, value, path: str) -> list:
        if value is None:
            return []
        if not isinstance(value, list):
            self.fail(path, f"must be a list, got {type_name(value)}")
        return value

    def string(self, value, path: str, default: str = "", required: bool = False) -> str:
        if value is None:
            if required:
                self.fail(path, "required")
            return default
        if not isinstance(value, str):
            self.fail(path, f"must be a string, got {type_name(value)}")
        if required and value == "":
            self.fail(path, "must not be empty")
        return value

    def integer(self, value, path: str, lo: int | None = None, hi: int | None = None) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(path, f"must be an integer, got {type_name(value)} {value!r}")
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            if hi is None:
                self.fail(path, f"must be >= {lo}, got {value}")
            if lo is None:
                self.fail(path, f"must be <= {hi}, got {value}")
            self.fail(path, f"must be in {lo}..{hi}, got {value}")
        return value

    def boolean(self, value, path: str, default: bool = False) -> bool:
        if value is None:
            return default
        if not isinstance(value, bool):
            self.fail(path, f"must be true or false, got {type_name(value)} {value!r}")
        return value

    def enum(self, value, path: str, allowed: tuple[str, ...], default: str = "") -> str:
        text = self.string(value, path, default=default)
        if text not in allowed:
            shown = ", ".join(repr(a) if a == "" else a for a in allowed)
            self.fail(path, f"must be one of {shown}, got {text!r}")
        return text

    def str_map(self, value, path: str) -> dict[str, str]:
        m = self.mapping(value, path)
        out: dict[str, str] = {}
        for k, v in m.items():
            if not isinstance(k, str):
                self.fail(path, f"keys must be strings, got {type_name(k)} {k!r}")
            if not isinstance(v, str):
                self.fail(join_path(path, k), f"must be a string, got {type_name(v)} {v!r} (quote it in YAML)")
            out[k] = v
        return out

    def str_list(self, value, path: str) -> list[str]:
        items = self.list(value, path)
        for i, v in enumerate(items):
            if not isinstance(v, str):
                self.fail(f"{path}[{i}]", f"must be a string, got {type_name(v)} {v!r}")
        return list(items)

    def quantity_map(self, value, path: str) -> dict[str, int]:
        """A ResourceList: name -> non-negative quantity in milli-units.

        The API server rounds every ResourceList value up to a whole
        milli-unit, so integer milli-units hold it exactly and sums of them
        are the exact sums upstream computes."""
        m = self.mapping(value, path)
        out: dict[str, int] = {}
        for k, v in m.items():
            if not isinstance(k, str) or not k:
                self.fail(path, f"resource names must be non-empty strings, got {k!r}")
            try:
                m = quantity_milli(v)
            except ValueError as exc:
                self.fail(join_path(path, k), str(exc))
            if m < 0:
                self.fail(join_path(path, k), f"must be non-negative, got {v!r}")
            # One value must fit the state's int64 unit (millicores for cpu,
            # whole units otherwise); upstream's int64 accessors would wrap.
            if (m if k == "cpu" else -(-m // 1000)) > INT64_MAX:
                unit = "millicores" if k == "cpu" else "units"
                self.fail(join_path(path, k),
                          f"quantity {v!r} does not fit an int64 (more than {INT64_MAX} {unit})")
            out[k] = m
        return out

    def timestamp(self, value, path: str) -> int | None:
        if value is None:
            return None
        try:
            return parse_timestamp(value)
        except ValueError as exc:
            self.fail(path, str(exc))


def unset_if_empty(value):
    """"" means unset for defaulted enum fields (as in Go's zero value)."""
    return None if value == "" else value


def canonical(ctx: ObjectContext, millis: Mapping[str, int], path: str) -> dict[str, int]:
    """milli-units -> canonical units: cpu stays in millicores, anything else
    is ``Quantity.Value()``, the ceiling of the whole units."""
    out = {}
    for name, m in millis.items():
        v = m if name == "cpu" else -(-m // 1000)
        if v > INT64_MAX:
            # A sum (the pod's containers, overhead...) past int64: upstream
            # adds int64s and would wrap; refused here.
            ctx.fail(join_path(path, name), f"{v} does not fit an int64")
        out[name] = v
    return out


# --------------------------------------------------------------------------
# timestamps

_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|([+-])(\d{2}):(\d{2}))"
)
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


#: ``"00"``..``"59"`` -> the second (ASCII digits only, as the pattern's
#: ``\d`` would take other scripts' digits too: those take the long way).
_SECONDS = {f"{s:02d}": s for s in range(60)}


@functools.lru_cache(maxsize=4096)
def minute_ns(prefix: str) -> int | None:
    """ns of ``prefix + ":00Z"`` (prefix ``YYYY-MM-DDTHH:MM``), None when
    that is not a valid timestamp."""
    try:
        return _parse_any(prefix + ":00Z")
    except ValueError:
        return None


def parse_utc_second(value: str) -> int | None:
    """``parse_timestamp`` of a ``YYYY-MM-DDTHH:MM:SSZ`` string (what the API
    server writes), the minute parsed once per distinct minute; None for
    any other shape or an invalid one (``parse_timestamp`` then decides).

    Exact: when ``prefix:00Z`` parses, the pattern has matched ``prefix``
    as the date, hour and minute (16 characters, no room for spaces), so
    ``prefix:SSZ`` with SS in 00-59 parses to the same minute plus SS."""
    if len(value) != 20 or value[19] != "Z" or value[16] != ":":
        return None
    second = _SECONDS.get(value[17:19])
    if second is None:
        return None
    minute = minute_ns(value[:16])
    if minute is None:
        return None
    ns = minute + second * 1_000_000_000
    # the last minute int64 reaches (2262-04-11T23:47) ends at :16
    return ns if ns <= INT64_MAX else None


def parse_timestamp(value) -> int:
    """RFC3339 (``2024-05-01T10:00:00Z``, optional fraction up to ns, ``Z`` or
    ``+hh:mm``) -> integer nanoseconds since the Unix epoch.  A ``datetime``
    (naive = UTC) is accepted too.  ValueError past what int64 ns hold
    (before 1677-09-21T00:12:43.145224192Z, after 2262-04-11T23:47:16.854775807Z):
    the state keeps times as int64."""
    if type(value) is str:
        ns = parse_utc_second(value)
        if ns is not None:
            return ns
    return _parse_any(value)


def _parse_any(value) -> int:
    """``parse_timestamp`` the long way (every accepted shape)."""
    if isinstance(value, datetime):
        dt = value if value.tzinfo else value.replace(tzinfo=timezone.utc)
        delta = dt - _EPOCH
        return _in_int64(value, (delta.days * 86400 + delta.seconds) * 10**9
                         + delta.microseconds * 1000)
    if not isinstance(value, str):
        raise ValueError(f"must be an RFC3339 timestamp string, got {type_name(value)} {value!r}")
    m = _RFC3339.fullmatch(value.strip())
    if m is None:
        raise ValueError(f"invalid RFC3339 timestamp {value!r} (expected e.g. 2024-05-01T10:00:00Z)")
    year, month, day, hour, minute, second = (int(g) for g in m.group(1, 2, 3, 4, 5, 6))
    frac = m.group(7) or ""
    if m.group(8) == "Z":
        offset = timedelta(0)
    else:
        oh, om = int(m.group(10)), int(m.group(11))
        if oh > 23 or om > 59:
            raise ValueError(f"invalid RFC3339 timestamp {value!r}: bad UTC offset")
        offset = timedelta(hours=oh, minutes=om)
        if m.group(9) == "-":
            offset = -offset
    try:
        dt = datetime(year, month, day, hour, minute, second, tzinfo=timezone(offset))
    except ValueError as exc:
        raise ValueError(f"invalid RFC3339 timestamp {value!r}: {exc}") from None
    delta = dt - _EPOCH
    seconds = delta.days * 86400 + delta.seconds
    return _in_int64(value, seconds * 10**9 + int(frac.ljust(9, "0") or "0"))


def _in_int64(value, ns: int) -> int:
    """``ns``, or ValueError when int64 nanoseconds cannot hold it."""
    if not INT64_MIN <= ns <= INT64_MAX:
        raise ValueError(f"timestamp {str(value)!r} is out of range: int64 nanoseconds since "
                         "the epoch reach 1677-09-21T00:12:43.145224192Z .. "
                         "2262-04-11T23:47:16.854775807Z")
    return ns


# --------------------------------------------------------------------------
# identity and metadata


def identity(obj, kind: str, namespaced: bool, where: str | None) -> tuple[ObjectContext, dict, str, str]:
    """(ctx, metadata, namespace, name); checks kind, metadata.name/namespace.

    An object without ``kind`` is taken to be of the expected kind (the
    caller chose the parser); a different kind is an error.  An object read
    from a file (:class:`SourcedObject`) names its source in every error;
    ``where`` (else the source) names it before its name is known."""
    source = source_of(obj)
    fallback = where or source or f"{kind} <unnamed>"
    if not isinstance(obj, dict):
        raise ManifestError(fallback, "", f"expected an object (a mapping), got {type_name(obj)}")
    meta = obj.get("metadata")
    if meta is not None and not isinstance(meta, dict):
        raise ManifestError(fallback, "metadata", f"must be a mapping, got {type_name(meta)}",
                            source)
    meta = meta or {}
    name = meta.get("name")
    actual = obj.get("kind")
    if actual is not None and actual != kind:
        named = isinstance(actual, str) and isinstance(name, str) and name
        raise ManifestError(f"{actual} {name}" if named else fallback, "kind",
                            f"expected {kind}, got {actual!r}", source)
    if name is None or name == "":
        raise ManifestError(fallback, "metadata.name", "required", source)
    if not isinstance(name, str):
        raise ManifestError(fallback, "metadata.name",
                            f"must be a string, got {type_name(name)} {name!r}", source)
    namespace = ""
    if namespaced:
        namespace = meta.get("namespace")
        if namespace is None or namespace == "":
            namespace = "default"
        elif not isinstance(namespace, str):
            raise ManifestError(f"{kind} {name}", "metadata.namespace",
                                f"must be a string, got {type_name(namespace)} {namespace!r}",
                                source)
        ctx = ObjectContext(f"{kind} {namespace}/{name}", source)
    else:
        ctx = ObjectContext(f"{kind} {name}", source)
    check_object_meta(ctx, kind, meta, name, namespace if namespaced else None)
    return ctx, meta, namespace, name


class NameRules:
    """Whether ``metadata.name`` is held to its kind's rule (``enforced``,
    True), and so are the names inside a pod spec that upstream's Go tests
    also write freely: a container's name is required, a volume's name is
    a DNS-1123 label (``pod_names``).  Upstream's Go unit tests build
    objects without the API server and name them freely (``nodeA``,
    ``p_with_nominated_node``, volume ``PVC_1``, containers without a
    name); the harness that replays those cases (the golden cases) turns
    the name rules off while it builds their clusters.  Namespaces, labels,
    annotations and every other field (a container name that is given,
    unique volume names, mounts naming a volume, port names) are checked
    either way."""

    enforced = True


def check_object_meta(ctx: ObjectContext, kind: str, meta: dict, name: str,
                      namespace: str | None) -> None:
    """What the API server's ``ValidateObjectMeta`` refuses in an object
    that has a string name: a name its kind does not allow (``NAME_RULES``;
    a DNS-1123 subdomain for every other kind), a namespace that is not a
    DNS-1123 label, labels that are not a map of qualified names to label
    values.  ``namespace`` None for a cluster-scoped object."""
    errs = name_errors(kind, name) if NameRules.enforced else None
    if errs:
        ctx.fail("metadata.name", invalid_value(name, errs))
    if namespace is not None and namespace != "default":
        errs = dns1123_label_errors(namespace)
        if errs:
            ctx.fail("metadata.namespace", invalid_value(namespace, errs))
    labels = meta.get("labels")
    if labels:
        check_labels(ctx, ctx.str_map(labels, "metadata.labels"), "metadata.labels")
    annotations = meta.get("annotations")
    if annotations:
        check_annotations(ctx, ctx.str_map(annotations, "metadata.annotations"),
                          "metadata.annotations")


#: The most bytes an object's annotations may hold, keys and values together
#: (the API server's ``TotalAnnotationSizeLimitB``, 256 KiB).
TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024


@functools.lru_cache(maxsize=65536)
def annotation_key_errors(key: str) -> tuple[str, ...]:
    """The problems of ``key`` as an annotation key (empty when valid): a
    qualified name once lowercased (case does not matter in an annotation
    key, as it does in a label key).  Cached: a cluster repeats its keys."""
    return tuple(qualified_name_errors(key.lower()))


def annotations_size(annotations: Mapping[str, str]) -> int:
    """Bytes of ``annotations`` as the API server counts them: every key's
    and every value's length in UTF-8."""
    return sum(_go_len(k) + _go_len(v) for k, v in annotations.items())


def check_annotations(ctx: ObjectContext, annotations: Mapping[str, str], path: str) -> None:
    """ManifestError at ``path`` for annotations the API server refuses: a
    key that is not a qualified name (compared in lowercase), or more than
    ``TOTAL_ANNOTATION_SIZE_LIMIT`` bytes of keys and values together;
    ``annotations`` a map of strings (``ObjectContext.str_map``)."""
    for k in annotations:
        errs = annotation_key_errors(k)
        if errs:
            ctx.fail(path, invalid_value(k, list(errs)))
    size = annotations_size(annotations)
    if size > TOTAL_ANNOTATION_SIZE_LIMIT:
        ctx.fail(path, f"Too long: may not be more than {TOTAL_ANNOTATION_SIZE_LIMIT} bytes "
                 f"(keys and values together, 256 KiB), got {size}")


def annotations_valid(annotations) -> bool:
    """Whether ``check_annotations`` takes ``annotations`` (None: none),
    without naming the problem: the pod-template fast path asks, and a pod
    it refuses is parsed alone, which names it."""
    if annotations is None:
        return True
    if type(annotations) is not dict:
        return False
    size = 0
    for k, v in annotations.items():
        if type(k) is not str or type(v) is not str or annotation_key_errors(k):
            return False
        size += len(k) + len(v)
    # a character is at most 4 bytes in UTF-8: short ones need no encoding
    return (size <= TOTAL_ANNOTATION_SIZE_LIMIT // 4
            or annotations_size(annotations) <= TOTAL_ANNOTATION_SIZE_LIMIT)



# --------------------------------------------------------------------------
# label keys, label values and LabelSelectors, as apimachinery validates them
# (util/validation IsQualifiedName / IsValidLabelValue / IsDNS1123Subdomain,
# metav1validation.ValidateLabelSelector), with upstream's messages.  Go's
# regexps are anchored with ^...$ that never match before a trailing newline:
# ``fullmatch`` here.

QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
QUALIFIED_NAME_MAX_LENGTH = 63
LABEL_VALUE_FMT = f"({QUALIFIED_NAME_FMT})?"
LABEL_VALUE_MAX_LENGTH = 63
DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_SUBDOMAIN_FMT = DNS1123_LABEL_FMT + "(\\." + DNS1123_LABEL_FMT + ")*"
DNS1123_SUBDOMAIN_MAX_LENGTH = 253

QUALIFIED_NAME_RE = re.compile(QUALIFIED_NAME_FMT)
LABEL_VALUE_RE = re.compile(LABEL_VALUE_FMT)
# the same language as DNS1123_SUBDOMAIN_FMT without capture groups (each
# pod's name is matched: about 15% faster)
DNS1123_SUBDOMAIN_RE = re.compile(
    "[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*")

_QUALIFIED_NAME_MSG = ("must consist of alphanumeric characters, '-', '_' or '.', and must "
                       "start and end with an alphanumeric character")
_LABEL_VALUE_MSG = ("a valid label must be an empty string or consist of alphanumeric "
                    "characters, '-', '_' or '.', and must start and end with an "
                    "alphanumeric character")
_DNS1123_SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case "
                          "alphanumeric characters, '-' or '.', and must start and end with "
                          "an alphanumeric character")


def _regex_error(msg: str, fmt: str, *examples: str) -> str:
    """apimachinery's RegexError text."""
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


#: apimachinery's RegexError text, for other modules' formats.
regex_error = _regex_error


def _max_len_error(n: int) -> str:
    return f"must be no more than {n} characters"


def _go_len(value: str) -> int:
    return len(value.encode("utf-8", "surrogatepass"))   # Go's len(): bytes


def dns1123_subdomain_errors(value: str) -> list[str]:
    """``IsDNS1123Subdomain``: the problems of ``value`` (empty when valid)."""
    errs = []
    if _go_len(value) > DNS1123_SUBDOMAIN_MAX_LENGTH:
        errs.append(_max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH))
    if not DNS1123_SUBDOMAIN_RE.fullmatch(value):
        errs.append(_regex_error(_DNS1123_SUBDOMAIN_MSG, DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errs


DNS1123_LABEL_MAX_LENGTH = 63
_DNS1123_LABEL_RE = re.compile(DNS1123_LABEL_FMT)
_DNS1123_LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric "
                      "characters or '-', and must start and end with an alphanumeric character")


def dns1123_label_errors(value: str) -> list[str]:
    """``IsDNS1123Label``: the problems of ``value`` (empty when valid)."""
    errs = []
    if _go_len(value) > DNS1123_LABEL_MAX_LENGTH:
        errs.append(_max_len_error(DNS1123_LABEL_MAX_LENGTH))
    if not _DNS1123_LABEL_RE.fullmatch(value):
        errs.append(_regex_error(_DNS1123_LABEL_MSG, DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errs


def qualified_name_errors(value: str) -> list[str]:
    """``IsQualifiedName`` (a label key, a resource name): ``[prefix/]name``,
    prefix a DNS-1123 subdomain, name at most 63 characters matching
    ``QUALIFIED_NAME_FMT``.  The problems, in upstream's words (empty when valid)."""
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend("prefix part " + m for m in dns1123_subdomain_errors(prefix))
    else:
        return ["a qualified name " + _regex_error(_QUALIFIED_NAME_MSG, QUALIFIED_NAME_FMT,
                                                   "MyName", "my.name", "123-abc")
                + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    if not name:
        errs.append("name part must be non-empty")
    elif _go_len(name) > QUALIFIED_NAME_MAX_LENGTH:
        errs.append("name part " + _max_len_error(QUALIFIED_NAME_MAX_LENGTH))
    if not QUALIFIED_NAME_RE.fullmatch(name):
        errs.append("name part " + _regex_error(_QUALIFIED_NAME_MSG, QUALIFIED_NAME_FMT,
                                                "MyName", "my.name", "123-abc"))
    return errs


def label_value_errors(value: str) -> list[str]:
    """``IsValidLabelValue``: the problems of ``value`` (empty when valid)."""
    errs = []
    if _go_len(value) > LABEL_VALUE_MAX_LENGTH:
        errs.append(_max_len_error(LABEL_VALUE_MAX_LENGTH))
    if not LABEL_VALUE_RE.fullmatch(value):
        errs.append(_regex_error(_LABEL_VALUE_MSG, LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs


DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
_DNS1035_LABEL_RE = re.compile(DNS1035_LABEL_FMT)
_DNS1035_LABEL_MSG = ("a DNS-1035 label must consist of lower case alphanumeric characters or "
                      "'-', start with an alphabetic character, and end with an alphanumeric "
                      "character")


def dns1035_label_errors(value: str) -> list[str]:
    """``IsDNS1035Label`` (a Service's name): the problems of ``value``."""
    errs = []
    if _go_len(value) > DNS1123_LABEL_MAX_LENGTH:
        errs.append(_max_len_error(DNS1123_LABEL_MAX_LENGTH))
    if not _DNS1035_LABEL_RE.fullmatch(value):
        errs.append(_regex_error(_DNS1035_LABEL_MSG, DNS1035_LABEL_FMT, "my-name", "abc-123"))
    return errs


#: The kinds whose ``metadata.name`` is not a DNS-1123 subdomain (every
#: other kind's, custom resources' too, is: ``NameIsDNSSubdomain``).
NAME_RULES: dict[str, Callable[[str], list[str]]] = {
    "Namespace": dns1123_label_errors,
    "Service": dns1035_label_errors,
}


def name_errors(kind: str, name: str) -> list[str]:
    """The problems of ``name`` as the ``metadata.name`` of a ``kind``
    (empty when valid); a valid DNS-1123 subdomain costs one match."""
    rule = NAME_RULES.get(kind)
    if rule is not None:
        return rule(name)
    if DNS1123_SUBDOMAIN_RE.fullmatch(name) and len(name) <= DNS1123_SUBDOMAIN_MAX_LENGTH:
        return []
    return dns1123_subdomain_errors(name)


@functools.lru_cache(maxsize=65536)
def _label_errors(key: str, value: str) -> tuple[bool, tuple[str, ...]]:
    """(the key is at fault, its problems), else (False, the value's);
    both empty for a valid label.  Cached: a cluster repeats its labels."""
    errs = qualified_name_errors(key)
    if errs:
        return True, tuple(errs)
    return False, tuple(label_value_errors(value))


def check_labels(ctx: ObjectContext, labels: Mapping[str, str], path: str) -> None:
    """ManifestError at ``path`` (a bad key) or ``path["key"]`` (a bad
    value) for the first label ``ValidateLabels`` refuses; ``labels`` a
    map of strings (``ObjectContext.str_map``)."""
    for k, v in labels.items():
        on_key, errs = _label_errors(k, v)
        if errs:
            if on_key:
                ctx.fail(path, invalid_value(k, list(errs)))
            ctx.fail(join_path(path, k), invalid_value(v, list(errs)))


def is_qualified_name(value) -> bool:
    return isinstance(value, str) and not qualified_name_errors(value)


def is_label_value(value) -> bool:
    return isinstance(value, str) and not label_value_errors(value)


def invalid_value(value, errs: list[str]) -> str:
    """field.Invalid's text: ``Invalid value: "v": problem[; problem]``."""
    return f"Invalid value: {json.dumps(value, ensure_ascii=False)}: " + "; ".join(errs)


def duplicate_value(value) -> str:
    """field.Duplicate's text: ``Duplicate value: "v"`` (Go's quoting)."""
    return f"Duplicate value: {json.dumps(value, ensure_ascii=False)}"


def unsupported_value(value, supported) -> str:
    """field.NotSupported's text: ``Unsupported value: "v": supported
    values: "a", "b"`` (``supported`` in the order upstream lists them)."""
    shown = ", ".join(json.dumps(s, ensure_ascii=False) for s in supported)
    return (f"Unsupported value: {json.dumps(value, ensure_ascii=False)}: "
            f"supported values: {shown}")


LABEL_SELECTOR_OPERATORS_MSG = "not a valid selector operator"


def validate_label_selector(ctx: ObjectContext, sel, path: str,
                            values_required: bool = True) -> dict | None:
    """A metav1.LabelSelector: structure, then ``ValidateLabelSelector``
    (keys qualified names, values label values, In/NotIn with values,
    Exists/DoesNotExist without, no other operator).  The selector as written.

    ``values_required=False`` lets In/NotIn go without values (for the
    workload selectors, whose index treats a selector that
    ``LabelSelectorAsSelector`` rejects as adding nothing, see
    ``state.workload_index``)."""
    if sel is None:
        return None
    sel = ctx.mapping(sel, path)
    labels_path = f"{path}.matchLabels"
    for k, v in ctx.str_map(sel.get("matchLabels"), labels_path).items():
        errs = qualified_name_errors(k)
        if errs:
            ctx.fail(labels_path, invalid_value(k, errs))
        errs = label_value_errors(v)
        if errs:
            ctx.fail(join_path(labels_path, k), invalid_value(v, errs))
    exprs_path = f"{path}.matchExpressions"
    for i, req in enumerate(ctx.list(sel.get("matchExpressions"), exprs_path)):
        rpath = f"{exprs_path}[{i}]"
        req = ctx.mapping(req, rpath)
        key = ctx.string(req.get("key"), f"{rpath}.key", required=req.get("key") is None)
        op = req.get("operator")
        if op is None:
            ctx.fail(f"{rpath}.operator", "required (" + ", ".join(LABEL_SELECTOR_OPERATORS) + ")")
        op = ctx.string(op, f"{rpath}.operator")
        values = ctx.str_list(req.get("values"), f"{rpath}.values")
        if op in ("In", "NotIn"):
            if not values and values_required:
                ctx.fail(f"{rpath}.values",
                         "Required value: must be specified when `operator` is 'In' or 'NotIn'")
        elif op in ("Exists", "DoesNotExist"):
            if values:
                ctx.fail(f"{rpath}.values", "Forbidden: may not be specified when `operator` "
                         "is 'Exists' or 'DoesNotExist'")
        else:
            ctx.fail(f"{rpath}.operator", invalid_value(op, [LABEL_SELECTOR_OPERATORS_MSG]))
        errs = qualified_name_errors(key)
        if errs:
            ctx.fail(f"{rpath}.key", invalid_value(key, errs))
        for j, v in enumerate(values):
            errs = label_value_errors(v)
            if errs:
                ctx.fail(f"{rpath}.values[{j}]", invalid_value(v, errs))
    return sel
