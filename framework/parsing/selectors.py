"""Label selectors and pod affinity terms over pods' labels (host side).

A compiled selector is a hashable tuple of requirements, so equal selectors
share one per-node count array (see ``state.domain_counts``):

* ``None`` selector (``labelSelector: null``) matches nothing
  (``labels.Nothing()``), ``{}`` matches everything;
* requirements are (key, op, values) with op In / NotIn / Exists /
  DoesNotExist, ``matchLabels`` entries being ``In`` with one value, as
  apimachinery's ``LabelSelectorAsSelector`` builds them.

A ``namespaceSelector`` is matched against the labels of the namespace
(upstream's ``GetNamespaceLabelsSnapshot``): those of its loaded Namespace
object (``kubernetes.io/metadata.name=<name>`` included, as the API server
sets it), given as a name -> labels mapping (``ClusterState.namespace_labels``).
A namespace without a loaded object has only ``kubernetes.io/metadata.name``
(upstream's lister would not find it and see no labels at all; kept so that
clusters dumped without their Namespaces still select by name).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from tensorsched.framework.records.records import MemoKey

NS_NAME_LABEL = "kubernetes.io/metadata.name"


def namespace_labels_of(namespace: str, table: Mapping | None = None) -> Mapping:
    """The labels of ``namespace``: its entry of ``table`` (name -> labels),
    else only ``kubernetes.io/metadata.name``."""
    got = table.get(namespace) if table else None
    return got if got is not None else {NS_NAME_LABEL: namespace}

NOTHING = ("nothing",)
EVERYTHING = ()


def compile_selector(sel: dict | None, extra: tuple = ()) -> tuple:
    """A LabelSelector dict -> hashable requirements (see module doc)."""
    if sel is None:
        return NOTHING
    reqs = []
    for k, v in sorted((sel.get("matchLabels") or {}).items()):
        reqs.append((k, "In", (v,)))
    for e in sel.get("matchExpressions") or []:
        reqs.append((e.get("key", ""), e.get("operator", ""),
                     tuple(sorted(set(e.get("values") or ())))))
    return tuple(sorted(set(reqs) | set(extra)))


def selector_matches(sel: tuple, labels: dict) -> bool:
    if sel == NOTHING:
        return False
    for key, op, values in sel:
        has = key in labels
        if op == "In":
            if not has or labels[key] not in values:
                return False
        elif op == "NotIn":
            if has and labels[key] in values:
                return False
        elif op == "Exists":
            if not has:
                return False
        elif op == "DoesNotExist":
            if has:
                return False
        else:
            return False
    return True


@dataclass(frozen=True)
class AffinityTerm:
    """A PodAffinityTerm of some pod, resolved (upstream's ``AffinityTerm``):
    namespaces (the owner's own when neither namespaces nor a selector is
    given), namespace selector, label selector, topology key; ``weight`` for
    preferred terms (1 for required ones)."""

    namespaces: frozenset
    ns_selector: tuple
    selector: tuple
    topology_key: str
    weight: int = 1

    def matches(self, namespace: str, labels: dict, ns_labels: Mapping | None = None) -> bool:
        """A pod in ``namespace`` with ``labels`` matches the term
        (upstream ``AffinityTerm.Matches``); ``ns_labels`` maps namespace
        names to their labels (see :func:`namespace_labels_of`)."""
        if namespace in self.namespaces or (
                self.ns_selector != NOTHING and selector_matches(
                    self.ns_selector, namespace_labels_of(namespace, ns_labels))):
            return selector_matches(self.selector, labels)
        return False


def affinity_term(owner_ns: str, term: dict, weight: int = 1) -> AffinityTerm:
    namespaces = frozenset(term.get("namespaces") or ())
    ns_sel_raw = term.get("namespaceSelector")
    if not namespaces and ns_sel_raw is None:
        namespaces = frozenset((owner_ns,))
    return AffinityTerm(namespaces, compile_selector(ns_sel_raw),
                        compile_selector(term.get("labelSelector")),
                        term.get("topologyKey", ""), int(weight))


def required_terms(owner_ns: str, aff: dict | None) -> tuple:
    return tuple(affinity_term(owner_ns, t)
                 for t in (aff or {}).get("requiredDuringSchedulingIgnoredDuringExecution") or ())


def preferred_terms(owner_ns: str, aff: dict | None) -> tuple:
    return tuple(affinity_term(owner_ns, w.get("podAffinityTerm") or {}, w.get("weight", 0))
                 for w in (aff or {}).get("preferredDuringSchedulingIgnoredDuringExecution") or ())


AFFINITY_TERMS = MemoKey("affinity_terms", __name__,
                         "the pod's resolved affinity terms by kind (``pod_terms``)")


def pod_terms(record) -> dict:
    """The pod's resolved affinity terms by kind (memoized on the record):
    req_aff, req_anti, pref_aff, pref_anti."""
    got = record.memo.get(AFFINITY_TERMS)
    if got is None:
        ns = record.namespace
        got = {"req_aff": required_terms(ns, record.pod_affinity),
               "req_anti": required_terms(ns, record.pod_anti_affinity),
               "pref_aff": preferred_terms(ns, record.pod_affinity),
               "pref_anti": preferred_terms(ns, record.pod_anti_affinity)}
        record.memo[AFFINITY_TERMS] = got
    return got
