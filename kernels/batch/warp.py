"""Block-wide reductions of the batched CUDA kernels (a thread block per
cluster, its threads over the cluster's nodes): warp shuffles, then each
warp's partial through shared memory, reduced again by every warp; every
thread gets the answer.  ``cuda`` (the openb engine), ``env_cuda`` (its
vector environment) and ``local_cuda`` (the node-local engine) share them.

Shapes: ``buf`` is shared scratch [3, THREADS] (the simulator's shuffles go
through it), ``sh`` shared [WARPS, 3] int64 (the warps' partials).  Under
Numba's CUDA simulator, which has no warp shuffles, the shuffles go through
``buf`` with the block's barriers (every thread takes the same path through
the reductions, so both forms run the same algorithm), and a "warp" is 8
threads of a 16-thread block (an emulated shuffle costs a barrier there).
Importing this module without a device or the simulator raises
``BackendUnavailable``.
"""

from __future__ import annotations

from tensorsched.kernels._deps import CUDA_SIMULATOR, cuda_unavailable_reason
from tensorsched.kernels._errors import BackendUnavailable

_reason = cuda_unavailable_reason()
if _reason is not None:
    raise BackendUnavailable(f"backend 'cuda' cannot run: {_reason}")

from numba import cuda  # noqa: E402

LANES = 8 if CUDA_SIMULATOR else 32
THREADS = 16 if CUDA_SIMULATOR else 256
WARPS = THREADS // LANES
FULL = 0xFFFFFFFF
#: below every real total: the top of no row
NEG = -(1 << 62)
BIG = 1 << 62


if CUDA_SIMULATOR:
    @cuda.jit(device=True)
    def shfl_down3(x, y, z, off, buf):
        """Lane + ``off``'s x, y, z (a lane past the warp keeps its own)."""
        t = cuda.threadIdx.x
        buf[0, t] = x
        buf[1, t] = y
        buf[2, t] = z
        cuda.syncthreads()
        if (t % LANES) + off < LANES:
            x, y, z = buf[0, t + off], buf[1, t + off], buf[2, t + off]
        cuda.syncthreads()
        return x, y, z

    @cuda.jit(device=True)
    def shfl_up(v, d, buf):
        """Lane - ``d``'s v (lanes below ``d`` keep their own)."""
        t = cuda.threadIdx.x
        buf[0, t] = v
        cuda.syncthreads()
        if (t % LANES) >= d:
            v = buf[0, t - d]
        cuda.syncthreads()
        return v
else:
    @cuda.jit(device=True)
    def shfl_down3(x, y, z, off, buf):
        return (cuda.shfl_down_sync(FULL, x, off), cuda.shfl_down_sync(FULL, y, off),
                cuda.shfl_down_sync(FULL, z, off))

    @cuda.jit(device=True)
    def shfl_up(v, d, buf):
        return cuda.shfl_up_sync(FULL, v, d)


@cuda.jit(device=True)
def top_combine(t1, c1, r1, t2, c2, r2):
    """Two (top, how many have it, the lowest of them) partials as one."""
    if t2 > t1:
        return t2, c2, r2
    if t2 == t1:
        return t1, c1 + c2, min(r1, r2)
    return t1, c1, r1


@cuda.jit(device=True)
def warp_top(t, c, r, buf):
    """(the largest t, how many lanes have it, the lowest r among them)
    over a warp, by shuffles down."""
    off = LANES // 2
    while off > 0:
        t2, c2, r2 = shfl_down3(t, c, r, off, buf)
        t, c, r = top_combine(t, c, r, t2, c2, r2)
        off //= 2
    return t, c, r


@cuda.jit(device=True)
def warp_sum_min_max(a, lo, hi, buf):
    """(sum of a, min of lo, max of hi) over a warp, in its lane 0, by
    shuffles down."""
    off = LANES // 2
    while off > 0:
        a2, lo2, hi2 = shfl_down3(a, lo, hi, off, buf)
        a += a2
        lo = min(lo, lo2)
        hi = max(hi, hi2)
        off //= 2
    return a, lo, hi


@cuda.jit(device=True)
def warp_scan(x, buf):
    """The inclusive prefix sum of x over a warp (lane k: the sum over
    lanes 0..k), by shuffles up."""
    lane = cuda.threadIdx.x % LANES
    d = 1
    while d < LANES:
        y = shfl_up(x, d, buf)
        if lane >= d:
            x += y
        d *= 2
    return x


@cuda.jit(device=True)
def block_scan(x, buf, sh):
    """(the inclusive prefix sum of x over the block in thread order, the
    block's total): each warp's scan, the warps' totals scanned by every
    warp through ``sh[:, 0:2]``; every thread gets both (a barrier after
    the last read of ``sh``)."""
    tid = cuda.threadIdx.x
    lane = tid % LANES
    warp = tid // LANES
    x = warp_scan(x, buf)
    if lane == LANES - 1:
        sh[warp, 0] = x
    cuda.syncthreads()
    w = sh[lane, 0] if lane < WARPS else 0
    w = warp_scan(w, buf)
    if lane < WARPS:
        sh[lane, 1] = w             # every warp writes the same scan
    cuda.syncthreads()
    before = sh[warp - 1, 1] if warp > 0 else 0
    total = sh[WARPS - 1, 1]
    # the next reduction's first writes to ``sh`` wait for every read here
    # (on a device a warp runs ahead: ``block_top`` after a scan, in
    # ``cuda.block_post_filter``, writes ``sh`` before its first barrier)
    cuda.syncthreads()
    return before + x, total


@cuda.jit(device=True)
def block_top(t, c, r, buf, sh):
    """``warp_top`` over the block: each warp's lane 0 to shared memory,
    the partials reduced again by every warp; every thread gets it."""
    tid = cuda.threadIdx.x
    lane = tid % LANES
    warp = tid // LANES
    t, c, r = warp_top(t, c, r, buf)
    if lane == 0:
        sh[warp, 0] = t
        sh[warp, 1] = c
        sh[warp, 2] = r
    cuda.syncthreads()
    if lane < WARPS:
        t, c, r = sh[lane, 0], sh[lane, 1], sh[lane, 2]
    else:
        t, c, r = NEG, 0, BIG
    t, c, r = warp_top(t, c, r, buf)
    if tid == 0:
        sh[0, 0] = t
        sh[0, 1] = c
        sh[0, 2] = r
    cuda.syncthreads()
    t, c, r = sh[0, 0], sh[0, 1], sh[0, 2]
    cuda.syncthreads()
    return t, c, r


@cuda.jit(device=True)
def block_sum_min_max(a, lo, hi, buf, sh):
    """(sum of a, min of lo, max of hi) over the block, as ``block_top``."""
    tid = cuda.threadIdx.x
    lane = tid % LANES
    warp = tid // LANES
    a, lo, hi = warp_sum_min_max(a, lo, hi, buf)
    if lane == 0:
        sh[warp, 0] = a
        sh[warp, 1] = lo
        sh[warp, 2] = hi
    cuda.syncthreads()
    if lane < WARPS:
        a, lo, hi = sh[lane, 0], sh[lane, 1], sh[lane, 2]
    else:
        a, lo, hi = 0, BIG, -BIG
    a, lo, hi = warp_sum_min_max(a, lo, hi, buf)
    if tid == 0:
        sh[0, 0] = a
        sh[0, 1] = lo
        sh[0, 2] = hi
    cuda.syncthreads()
    a, lo, hi = sh[0, 0], sh[0, 1], sh[0, 2]
    cuda.syncthreads()
    return a, lo, hi
