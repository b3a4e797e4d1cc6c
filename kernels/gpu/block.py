"""Blocks of unlike pods placed in one compiled call under a GPU-sharing
profile (``_block.place_block``): NodeResourcesFit, GpuShareFit (with its
NVLink / NUMA constraints), GpuShareScore's policy, GpuTopologyScore and the
row-local built-in scores per pod over every node, the pod accounted on the
node it takes before the next one is scored.

``place_block`` (numba only) takes the columns as they are (the
ClusterState's resource columns, the GPU table's rows) and updates them in
place; see its doc for the argument shapes.
"""

from __future__ import annotations

from numba import njit

from tensorsched.kernels import layout as L
from tensorsched.kernels._compile import COMPILED, KEY, compile_module
from tensorsched.kernels.fused import _numba as _fused_numba
from tensorsched.kernels.fused.ties import TIE_RANK_BITS

from . import _block
from . import share as _share
from . import subsets as _subsets

EX_LEN = _block.EX_LEN
INHERITED = _block.INHERITED
FUSED = _block.FUSED


def _base() -> dict:
    base = {name: _share.core[name] for name in INHERITED}
    base.update({name: _fused_numba.core[name] for name in FUSED})
    keys = (_share.core.get(KEY), _fused_numba.core.get(KEY))
    base[KEY] = None if None in keys else "+".join(keys)
    base[COMPILED] = INHERITED + FUSED
    return base


assert (_block.RES_PODS, _block.R_TOO_MANY_PODS, _block.INSUFFICIENT_SHIFT) == (
    L.RES_PODS, int(L.R_TOO_MANY_PODS), L.INSUFFICIENT_SHIFT)
assert (_block.C_NUMA, _block.LEVEL, _block.MILLI) == (
    _share.core["C_NUMA"], _subsets.LEVEL, _share.MILLI)
assert (_block.MAX_NODE_SCORE, _block.TIE_RANK_BITS) == (L.MAX_NODE_SCORE, TIE_RANK_BITS)


_ns = compile_module(_block, njit, base=_base(), options={"nogil": True, "_nrt": False},
                     cache=True)
place_block = _ns["place_block"]

