"""PodDisruptionBudgets as preemption sees them.

Matching (upstream's filterPodsWithPDBViolation): a PDB applies to a pod in
the same namespace whose labels its selector matches; an empty or missing
selector matches nothing; a pod named in ``status.disruptedPods`` is
ignored by that PDB.

``disruptionsAllowed`` as the disruption controller would publish it
(pkg/controller/disruption): ``status.disruptionsAllowed`` when the object
has one; otherwise computed over the matching pods the state holds (a
simulator has no workload controllers, so the expected count is the number
of matching pods):
  maxUnavailable (int or %, percentages rounded up):
      desiredHealthy = max(0, expected - maxUnavailable)
  minAvailable int: desiredHealthy = minAvailable
  minAvailable %: desiredHealthy = ceil(minAvailable% * expected)
  neither: expected = 0
  currentHealthy = matching pods that are not terminating and not in
  disruptedPods; allowed = currentHealthy - desiredHealthy, or 0 when that
  is negative or expected <= 0.
"""

from __future__ import annotations

from tensorsched.framework.records.records import PodDisruptionBudgetRecord, PodRecord
from .selectors import EVERYTHING, NOTHING, compile_selector, selector_matches


def compiled_pdb_selector(selector: dict | None) -> tuple | None:
    """A PDB's ``spec.selector`` compiled (``selectors.compile_selector``),
    or None where it selects nothing by preemption's rule
    (filterPodsWithPDBViolation): a nil or empty selector selects nothing
    (where a LabelSelector elsewhere selects everything)."""
    reqs = compile_selector(selector)
    return None if reqs in (NOTHING, EVERYTHING) else reqs


def pdb_selects(selector: dict | None, labels: dict) -> bool:
    """Whether a PDB's ``spec.selector`` selects a pod with ``labels``
    (``compiled_pdb_selector``'s rule)."""
    reqs = compiled_pdb_selector(selector)
    return reqs is not None and selector_matches(reqs, labels)


def applies(pdb: PodDisruptionBudgetRecord, pod: PodRecord) -> bool:
    """The PDB counts this pod's eviction (namespace, selector, not disrupted)."""
    return (pdb.namespace == pod.namespace and pod.name not in pdb.disrupted_pods
            and pdb_selects(pdb.selector, pod.labels))


def _scaled(value, total: int) -> int:
    if isinstance(value, str):
        pct = int(value[:-1])
        return -(-pct * total // 100)       # rounded up
    return int(value)


def disruptions_allowed(pdb: PodDisruptionBudgetRecord, pods) -> int:
    """``status.disruptionsAllowed``, or the controller's rule over ``pods``
    (an iterable of PodRecords bound in the cluster)."""
    if pdb.disruptions_allowed is not None:
        return int(pdb.disruptions_allowed)
    reqs = compiled_pdb_selector(pdb.selector)          # compiled once, not per pod
    matching = [] if reqs is None else [p for p in pods if p.namespace == pdb.namespace
                                        and selector_matches(reqs, p.labels)]
    healthy = sum(1 for p in matching if not p.deleting and p.name not in pdb.disrupted_pods)
    return allowed_of_counts(pdb, len(matching), healthy)


def allowed_of_counts(pdb: PodDisruptionBudgetRecord, matching: int, healthy: int) -> int:
    """The controller's ``disruptionsAllowed`` (module doc) of a PDB without
    a status value, from its ``matching`` pods (the expected count) and the
    ``healthy`` ones among them (not terminating, not named disrupted)."""
    if pdb.max_unavailable is not None:
        expected = matching
        desired = max(0, expected - _scaled(pdb.max_unavailable, expected))
    elif pdb.min_available is not None:
        expected = matching
        desired = _scaled(pdb.min_available, expected)
    else:
        expected, desired = 0, 0
    allowed = healthy - desired
    return allowed if expected > 0 and allowed > 0 else 0
