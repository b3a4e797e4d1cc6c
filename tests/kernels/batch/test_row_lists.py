"""Each row's list of the pods bound there (``_candidates.row_push`` /
``row_low``, the victim search's in every batched engine): a row's
lower-priority bound pods and its lowest bound priority come from its own
list; pods gone for good are unlinked on the way, a pod a drain marks to
keep (neither bound nor gone) stays linked but is not read; the openb
engines' form (queue pods only) reads the same."""
import numpy as np

from tensorsched.kernels.batch import _candidates as RL

BOUND, GONE, KEPT, PENDING = RL.P_BOUND, RL.P_GONE, 7, 3


def _walk(head, nxt, i):
    out = []
    x = head[i]
    while x >= 0:
        out.append(int(x))
        x = nxt[x]
    return out


def _lists(rows):
    """(head, nxt) with ``rows`` [(row, pod), ...] pushed in order."""
    head = np.full(3, -1, np.int64)
    nxt = np.full(9, -7, np.int64)
    for i, k in rows:
        RL.row_push(i, k, head, nxt)
    return head, nxt


def test_a_rows_lower_pods_and_lowest_priority_from_its_list():
    # queue pods 0..5, the manifests' bound pods 6..8 (P = 6)
    prio = np.array([5, 1, 9, 3, 0, 2, 4, -1, 8], np.int64)
    pst = np.array([BOUND, BOUND, GONE, KEPT, BOUND, PENDING], np.int64)
    gone = np.array([0] * 6 + [0, RL.B_GONE, 2], np.int64)
    head, nxt = _lists([(0, 6), (0, 7), (1, 8), (0, 0), (0, 2), (1, 1), (0, 3), (2, 4)])
    slot = np.full(9, -9, np.int64)
    k, lowest = RL.row_low(0, 5, prio, pst, gone, head, nxt, slot, 2, True)
    # row 0: 3 (kept), 2 (gone), 0 (5), 7 (gone, -1), 6 (4): below 5 only pod 6
    assert (k, lowest) == (1, 4)
    assert slot[2] == 6 and (slot[:2] == -9).all() and (slot[3:] == -9).all()
    # the pods gone for good are off the list; the kept one stays, first
    assert _walk(head, nxt, 0) == [3, 0, 6]
    # a count alone (put False) writes no slot
    k, lowest = RL.row_low(1, 9, prio, pst, gone, head, nxt, slot, 0, False)
    assert (k, lowest) == (1, 1) and slot[0] == -9
    assert _walk(head, nxt, 1) == [1, 8]         # 8 marked to keep: linked, not read
    assert RL.row_low(2, 0, prio, pst, gone, head, nxt, slot, 0, True) == (0, 0)
    # the kept pod bound again (the drain done): read again
    pst[3] = BOUND
    assert RL.row_low(0, 4, prio, pst, gone, head, nxt, slot, 0, True) == (1, 3)
    assert slot[0] == 3


def test_an_empty_row_and_the_openb_form():
    prio = np.array([2, 7, 1], np.int64)
    pst = np.array([BOUND, GONE, BOUND], np.int64)
    head, nxt = _lists([(1, 0), (1, 1), (1, 2)])
    slot = np.zeros(3, np.int64)
    assert RL.row_low(0, 9, prio, pst, pst[:0], head, nxt, slot, 0, True) == (0, RL.LOW_NONE)
    assert RL.row_low(1, 9, prio, pst, pst[:0], head, nxt, slot, 0, True) == (2, 1)
    assert sorted(slot[:2].tolist()) == [0, 2]
    assert _walk(head, nxt, 1) == [2, 0]
    # every pod gone: the list empties
    pst[:] = GONE
    assert RL.row_low(1, 9, prio, pst, pst[:0], head, nxt, slot, 0, False) == (0, RL.LOW_NONE)
    assert head[1] == -1
