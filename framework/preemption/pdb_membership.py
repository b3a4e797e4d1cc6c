"""The PodDisruptionBudgets over the bound pods, answered by pod class.

Whether a PDB covers a pod (``parsing.pdb.applies``) depends on the pod's
namespace and labels, which every pod of a class shares
(``records.pod_columns``), and on its name only through the PDB's
``status.disruptedPods`` (a few names).  So the selectors are evaluated
once per (PDB, bound pod class), not once per (PDB, pod), and
``disruptionsAllowed`` of a PDB the state holds no status for
(``parsing.pdb.disruptions_allowed``, the controller's rule) comes from the
classes' pod counts: expected = the pods of the classes it selects,
healthy = those less the terminating ones and the ones it names as
disrupted.  A victim table with PDBs at 10,000 nodes × 30 pods then costs
O(classes + terminating pods + named pods) a state change, not a record
built and every selector evaluated for each of the 300,000 bound pods.

The scalar rule stays in ``parsing.pdb`` (``applies``,
``disruptions_allowed``): it is what this module is tested against.
"""

from __future__ import annotations

from operator import is_not

import numpy as np

from tensorsched.framework.parsing.pdb import allowed_of_counts, compiled_pdb_selector
from tensorsched.framework.parsing.selectors import selector_matches
from tensorsched.framework.records.records import PodDisruptionBudgetRecord
from tensorsched.framework.state.bound_pods import BoundPods


class PdbMembership:
    """``pdbs`` (P of them) over a :class:`BoundPods` table.

    ``covers(bound)`` [C, P] bool: PDB p's namespace and selector take the
    pods of bound class c (a free class id: False), kept between calls and
    computed again only for class ids whose record changed (a freed id
    given to a new class); ``classes_matched`` counts the classes
    evaluated.  ``slot_words`` and ``allowed`` read it."""

    def __init__(self, pdbs) -> None:
        self.pdbs: tuple[PodDisruptionBudgetRecord, ...] = tuple(pdbs)
        self._selectors = [compiled_pdb_selector(p.selector) for p in self.pdbs]
        # per PDB the keys (namespace/name) it lists in disruptedPods
        self._disrupted = [frozenset(f"{p.namespace}/{name}" for name in p.disrupted_pods)
                           for p in self.pdbs]
        self._covers = np.zeros((0, len(self.pdbs)), np.bool_)
        self._recs: list = []       # class id -> the record its ``_covers`` row was computed for
        self.classes_matched = 0

    def covers(self, bound: BoundPods) -> np.ndarray:
        """[C, P] bool, C = the bound table's class ids (see the class doc)."""
        classes = bound.classes
        c = len(classes)
        if self._covers.shape[0] < c:
            grown = np.zeros((max(c, 2 * self._covers.shape[0]), len(self.pdbs)), np.bool_)
            grown[:self._covers.shape[0]] = self._covers
            self._covers = grown
            self._recs.extend([None] * (grown.shape[0] - len(self._recs)))
        recs = self._recs
        # the ids whose record is not the one their row was computed for,
        # found in one C-level pass
        changed = np.flatnonzero(np.fromiter(map(is_not, classes, recs), np.bool_, c))
        for cid in changed.tolist():
            rec = classes[cid]
            recs[cid] = rec
            self.classes_matched += 1
            row = self._covers[cid]
            row[:] = False
            if rec is None:
                continue
            labels = rec.labels or {}
            for p, (pdb, sel) in enumerate(zip(self.pdbs, self._selectors)):
                row[p] = (sel is not None and pdb.namespace == rec.namespace
                          and selector_matches(sel, labels))
        return self._covers[:c]

    def slot_words(self, bound: BoundPods, slots: np.ndarray, keys: list[str],
                   words: int) -> np.ndarray:
        """[k, words] int64: bit p of a pod's words set when PDB p covers
        it (``parsing.pdb.applies``), for the bound pods in ``slots`` [k]
        int64 whose keys are ``keys`` (the same k, in order)."""
        k = slots.shape[0]
        out = np.zeros((k, words), np.int64)
        if not self.pdbs or not k:
            return out
        hit = self.covers(bound)[bound.class_id[slots]]            # [k, P]
        for p, named in enumerate(self._disrupted):
            if named:       # a pod it names as disrupted is not its to count
                hit[np.fromiter(map(named.__contains__, keys), np.bool_, k), p] = False
        for p in np.flatnonzero(hit.any(axis=0)).tolist():
            out[hit[:, p], p >> 6] |= np.int64(1) << np.int64(p & 63)
        return out

    def allowed(self, bound: BoundPods) -> np.ndarray:
        """[P] int64 ``disruptionsAllowed`` of every PDB: its status's
        where it has one, else the controller's rule over the bound pods
        (``parsing.pdb.disruptions_allowed``) from class counts."""
        out = np.zeros(len(self.pdbs), np.int64)
        computed = [p for p, pdb in enumerate(self.pdbs) if pdb.disruptions_allowed is None]
        for p, pdb in enumerate(self.pdbs):
            if pdb.disruptions_allowed is not None:
                out[p] = int(pdb.disruptions_allowed)
        if not computed:
            return out
        pods, dying = bound.class_counts()
        cover = self.covers(bound)[:, computed]                     # [C, p']
        expected = pods @ cover
        healthy = expected - dying @ cover
        for j, p in enumerate(computed):
            named = [key for key in self._disrupted[p] if key in bound]
            if named:       # named pods it covers that are not terminating
                slots = bound.slots_of(named)
                on = cover[bound.class_id[slots], j] & ~bound.deleting[slots]
                healthy[j] -= int(on.sum())
            out[p] = allowed_of_counts(self.pdbs[p], int(expected[j]), int(healthy[j]))
        return out
