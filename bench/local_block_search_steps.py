"""Serial steps of one PostFilter victim search in the node-local engines'
CUDA form: thread 0 alone (the CPU twin's ``_local_preempt.preempt_on``,
as the kernels ran it before) against the block's longest thread
(``local_preempt_cuda.block_preempt_on``: rows split over THREADS
threads).  A count, not a timing (no device here): a step is a bound pod
read on a row's list, or one unit of a row's search (its k lower-priority
pods taken off and put back, k^2 for their sort by importance); the block
form also pays its barriers (two block scans a visit round of THREADS
positions, five reductions for the pick), counted apart.  Random clusters
of full rows (``--pods`` pods of one core a row, random priorities and
start times); the preemptor asks 7.5 cores of 8, priority 3; the twin's
own ``victims_on`` / ``num_candidates`` / ``preempt_offset`` (``njit``)
decide where its visit ends.

python bench/local_block_search_steps.py [--rows 1000] [--pods 7] [--cases 8]
        [--threads 256] [--pct 10] [--least 100] [--out bench/results/X.json]
"""
from __future__ import annotations

import argparse

import numpy as np

from tensorsched.bench.harness import record_stamp, write_record

REQ = np.array([(1000, 1024, 0, 1), (7500, 2048, 0, 1)], np.int64)


def _case(rng, n, per_row):
    v = n * per_row + 1
    prio = rng.integers(0, 5, v).astype(np.int64)
    pstart = rng.choice(np.array([10, 20, 30], np.int64), v)
    krank = rng.permutation(v).astype(np.int64)
    preq = np.tile(REQ[0], (v, 1))
    head = np.full(n, -1, np.int64)
    nxt = np.full(v, -1, np.int64)
    for k in range(n * per_row):
        i = k // per_row
        head[i], nxt[k] = k, head[i]
    used = np.tile(REQ[0] * per_row, (n, 1))
    alloc = np.tile(np.array([8000, 8192, 0, per_row + 1], np.int64), (n, 1))
    return prio, pstart, krank, preq, head, nxt, used, alloc


def count(n, per_row, threads, pct, least, seed):
    """(serial steps, the block's longest thread's steps, visit rounds,
    rows the serial visit searched) of one search."""
    from tensorsched.kernels.batch.local_preempt import PREEMPT_NAMESPACE as ns
    rng = np.random.default_rng(seed)
    prio, pstart, krank, preq, head, nxt, used, alloc = _case(rng, n, per_row)
    j = n * per_row
    prio[j] = 3
    c_request = REQ
    c_any = np.ones(2, np.bool_)
    c_ign = np.zeros((2, 4), np.bool_)
    c_fit = np.ones(2, np.bool_)
    lens = np.zeros(n, np.int64)
    ks = np.zeros(n, np.int64)
    nvs = np.zeros(n, np.int64)
    left = np.zeros((2, 1), np.int64)
    vflag = np.zeros(j + 1, np.int64)
    stats = np.zeros(8, np.int64)
    for i in range(n):
        cur = []
        x = head[i]
        while x >= 0:
            lens[i] += 1
            if prio[x] < prio[j]:
                cur.append(x)
            x = nxt[x]
        ks[i] = len(cur)
        if cur:
            nvs[i] = ns["victims_on"](i, 1, len(cur), np.array(cur, np.int64), alloc, used,
                                      c_request, c_any, c_ign, c_fit, preq, prio, pstart, krank,
                                      stats, 0, np.zeros((j + 1, 1), np.int64), left, vflag)
    cap = ns["num_candidates"](n, pct, least)
    off = ns["preempt_offset"](seed, 1, n)
    found = 0
    visited = 0
    for t in range(n):
        visited += 1
        found += nvs[(off + t) % n] > 0
        if found >= 1 and min(found, cap) >= cap:
            break
    rows = [(off + t) % n for t in range(visited)]
    search = ks + ks * ks
    serial = int(lens.sum() + search[rows].sum())
    longest = max(int(lens[h::threads].sum() + search[h::threads].sum())
                  for h in range(min(threads, n)))
    return serial, longest, -(-n // threads), visited


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1000)
    ap.add_argument("--pods", type=int, default=7)
    ap.add_argument("--cases", type=int, default=8)
    ap.add_argument("--threads", type=int, default=256)
    ap.add_argument("--pct", type=int, default=10)
    ap.add_argument("--least", type=int, default=100)
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    runs = [count(a.rows, a.pods, a.threads, a.pct, a.least, s) for s in range(a.cases)]
    serial = [r[0] for r in runs]
    block = [r[1] for r in runs]
    record = {"bench": "local_block_search_steps", "backend": "count (no device)",
              "rows": a.rows, "pods_per_row": a.pods, "threads": a.threads, "pct": a.pct,
              "least": a.least, "serial_steps": serial, "block_longest_thread_steps": block,
              "visit_rounds": [r[2] for r in runs], "serial_rows_searched": [r[3] for r in runs],
              "block_barriers_per_search": ("a block scan a round for the potential rows, two"
                                            " a visit round, one sum and five top reductions,"
                                            " six plain barriers"),
              "serial_over_block": round(sum(serial) / max(sum(block), 1), 1),
              **record_stamp(0)}
    write_record(record, a.out)


if __name__ == "__main__":
    main()
