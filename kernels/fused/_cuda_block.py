"""Block-wide reductions and scans for one-block CUDA kernels, by warp shuffles.

A value is first combined inside each warp by shuffles (no shared memory,
no barrier), one value per warp goes to shared memory, and then every warp
combines those few values by shuffles again, so every thread ends with the
block's answer without a broadcast step: two barriers per reduction, no
thread looping over the other threads' partials.

Every thread of the block must call these functions the same number of
times with the same (uniform) arguments, and blocks are whole warps
(``THREADS`` a multiple of 32): the shuffles name every lane in the mask.
Counts are shuffled as int32 (one shuffle instead of two); scores as int64.

Numba's CUDA simulator has no shuffle intrinsics; under it the shuffles
are stand-ins with the intrinsics' answers for a whole converged warp
(written through the block's shared memory between barriers) and a warp is
4 threads, so the same shuffle code runs on both.  Import only after the cuda backend said yes.
"""

from __future__ import annotations

import threading

from numba import cuda, int32, int64

from tensorsched.kernels._deps import CUDA_SIMULATOR

# Under the simulator a "warp" is 4 threads: each shuffle stand-in costs it
# two block barriers over every thread, and 4-thread warps let small blocks
# of a few warps run the multi-warp code at a cost tests can pay.
WARP = 4 if CUDA_SIMULATOR else 32
WARP_STEPS = 2 if CUDA_SIMULATOR else 5      # log2(WARP)
MAX_WARPS = 32                  # warps of a block (1,024 threads at most on a GPU)
FULL_MASK = 0xFFFFFFFF
_SIM_LANES = 1024               # the stand-in's exchange buffer (threads per block)


if CUDA_SIMULATOR:
    _sim_turns = threading.local()          # the simulator runs a thread per CUDA thread

    @cuda.jit(device=True)
    def _sim_exchange(value, src, valid):
        """The stand-in for one shuffle: every thread publishes ``value``,
        then reads thread ``src``'s (its own value when not ``valid``).
        Two buffers used in turn need one barrier per exchange: a thread
        writes a buffer again only after the barrier of the exchange in
        between, which every reader of its last use has passed."""
        box = cuda.shared.array((2, _SIM_LANES), int64)
        t = cuda.threadIdx.x
        p = getattr(_sim_turns, "n", 0)     # exchanges this thread made: the same in all
        _sim_turns.n = p + 1
        p &= 1
        box[p, t] = value
        cuda.syncthreads()
        got = box[p, src] if valid else value
        return type(value)(got)

    @cuda.jit(device=True)
    def shfl_idx(mask, value, lane):
        t = cuda.threadIdx.x
        return _sim_exchange(value, t - t % WARP + lane, True)

    @cuda.jit(device=True)
    def shfl_up(mask, value, delta):
        t = cuda.threadIdx.x
        return _sim_exchange(value, t - delta, t % WARP >= delta)

    @cuda.jit(device=True)
    def shfl_xor(mask, value, lane_mask):
        t = cuda.threadIdx.x
        return _sim_exchange(value, t ^ lane_mask, True)
else:
    shfl_idx = cuda.shfl_sync
    shfl_up = cuda.shfl_up_sync
    shfl_xor = cuda.shfl_xor_sync


@cuda.jit(device=True)
def warp_max_shfl(v):
    """The warp's largest ``v``, in every lane (xor butterfly)."""
    for k in range(WARP_STEPS):
        o = shfl_xor(FULL_MASK, v, (WARP >> 1) >> k)
        if o > v:
            v = o
    return v


@cuda.jit(device=True)
def warp_min_shfl(v):
    """The warp's smallest ``v``, in every lane."""
    for k in range(WARP_STEPS):
        o = shfl_xor(FULL_MASK, v, (WARP >> 1) >> k)
        if o < v:
            v = o
    return v


@cuda.jit(device=True)
def warp_inclusive_sum32_shfl(v):
    """Lane l gets the sum of lanes 0..l's int32 ``v`` (Hillis-Steele)."""
    lane = cuda.threadIdx.x % WARP
    v = int32(v)
    for k in range(WARP_STEPS):
        d = 1 << k
        o = shfl_up(FULL_MASK, v, d)
        if lane >= d:
            v = int32(v + o)
    return v


warp_max = warp_max_shfl
warp_min = warp_min_shfl
warp_inclusive_sum32 = warp_inclusive_sum32_shfl


@cuda.jit(device=True)
def block_max(v, wbuf, n_warps):
    """The block's largest int64 ``v`` in every thread; ``wbuf`` [MAX_WARPS]
    int64 shared scratch."""
    lane = cuda.threadIdx.x % WARP
    v = warp_max(int64(v))
    if lane == 0:
        wbuf[cuda.threadIdx.x // WARP] = v
    cuda.syncthreads()
    w = wbuf[lane] if lane < n_warps else wbuf[0]
    v = warp_max(w)
    cuda.syncthreads()              # wbuf free for the next reduction
    return v


@cuda.jit(device=True)
def block_min(v, wbuf, n_warps):
    """The block's smallest int64 ``v`` in every thread; ``wbuf`` [MAX_WARPS]
    int64 shared scratch."""
    lane = cuda.threadIdx.x % WARP
    v = warp_min(int64(v))
    if lane == 0:
        wbuf[cuda.threadIdx.x // WARP] = v
    cuda.syncthreads()
    w = wbuf[lane] if lane < n_warps else wbuf[0]
    v = warp_min(w)
    cuda.syncthreads()              # wbuf free for the next reduction
    return v


@cuda.jit(device=True)
def block_min_max(lo, hi, wbuf, n_warps):
    """(block minimum of ``lo``, block maximum of ``hi``), int64, in every
    thread; ``wbuf`` [2, MAX_WARPS] int64 shared scratch."""
    lane = cuda.threadIdx.x % WARP
    warp = cuda.threadIdx.x // WARP
    lo = warp_min(int64(lo))
    hi = warp_max(int64(hi))
    if lane == 0:
        wbuf[0, warp] = lo
        wbuf[1, warp] = hi
    cuda.syncthreads()
    src = lane if lane < n_warps else 0
    lo = warp_min(wbuf[0, src])
    hi = warp_max(wbuf[1, src])
    cuda.syncthreads()
    return lo, hi


@cuda.jit(device=True)
def block_max_slots(vals, n, wbuf, n_warps):
    """``vals`` [>= n] int64 (a thread's local array) replaced by the
    block's maxima, slot by slot, in every thread; ``wbuf`` [S, MAX_WARPS]
    int64 shared scratch: two barriers for all the slots together."""
    lane = cuda.threadIdx.x % WARP
    warp = cuda.threadIdx.x // WARP
    for s in range(n):
        v = warp_max(vals[s])
        if lane == 0:
            wbuf[s, warp] = v
    cuda.syncthreads()
    src = lane if lane < n_warps else 0
    for s in range(n):
        vals[s] = warp_max(wbuf[s, src])
    cuda.syncthreads()


@cuda.jit(device=True)
def warp_argmax(key, row):
    """The warp's (largest ``key``, lowest ``row`` holding it), in every
    lane: the pair travels together, so one butterfly answers what a
    maximum and then a minimum among the maximum's holders would."""
    for k in range(WARP_STEPS):
        lane_mask = (WARP >> 1) >> k
        ok = shfl_xor(FULL_MASK, key, lane_mask)
        orow = shfl_xor(FULL_MASK, row, lane_mask)
        if ok > key or (ok == key and orow < row):
            key = ok
            row = orow
    return key, row


@cuda.jit(device=True)
def block_argmax(key, row, wbuf, n_warps):
    """(the block's largest int64 ``key``, the lowest int64 ``row`` among
    the threads holding it) in every thread; ``wbuf`` [2, MAX_WARPS] int64
    shared scratch.  Two barriers, where a block maximum followed by a
    block minimum over its holders takes four."""
    lane = cuda.threadIdx.x % WARP
    warp = cuda.threadIdx.x // WARP
    key, row = warp_argmax(int64(key), int64(row))
    if lane == 0:
        wbuf[0, warp] = key
        wbuf[1, warp] = row
    cuda.syncthreads()
    src = lane if lane < n_warps else 0     # a repeated warp's pair changes nothing
    key, row = warp_argmax(wbuf[0, src], wbuf[1, src])
    cuda.syncthreads()              # wbuf free for the next reduction
    return key, row


@cuda.jit(device=True)
def block_argmax_slots(key, row, vals, n, wpair, wslots, n_warps):
    """``block_argmax`` of (key, row) and ``block_max_slots`` of ``vals``
    [>= n] together, in the same two barriers: ``wpair`` [2, MAX_WARPS] and
    ``wslots`` [S, MAX_WARPS] int64 shared scratch."""
    lane = cuda.threadIdx.x % WARP
    warp = cuda.threadIdx.x // WARP
    key, row = warp_argmax(int64(key), int64(row))
    if lane == 0:
        wpair[0, warp] = key
        wpair[1, warp] = row
    for s in range(n):
        v = warp_max(vals[s])
        if lane == 0:
            wslots[s, warp] = v
    cuda.syncthreads()
    src = lane if lane < n_warps else 0
    key, row = warp_argmax(wpair[0, src], wpair[1, src])
    for s in range(n):
        vals[s] = warp_max(wslots[s, src])
    cuda.syncthreads()
    return key, row


@cuda.jit(device=True)
def block_scan32(v, wbuf, n_warps):
    """(sum of ``v`` over the threads before this one, the block's sum),
    int32 counts in thread order; ``wbuf`` [MAX_WARPS] int32 shared scratch."""
    lane = cuda.threadIdx.x % WARP
    warp = cuda.threadIdx.x // WARP
    v = int32(v)
    inc = warp_inclusive_sum32(v)
    if lane == WARP - 1:
        wbuf[warp] = inc
    cuda.syncthreads()
    w = wbuf[lane] if lane < n_warps else int32(0)
    w = warp_inclusive_sum32(w)            # lane l: warps 0..l together
    total = shfl_idx(FULL_MASK, w, n_warps - 1)
    before = shfl_idx(FULL_MASK, w, warp - 1 if warp > 0 else 0)
    if warp == 0:
        before = int32(0)
    cuda.syncthreads()
    return int32(before + inc - v), total
