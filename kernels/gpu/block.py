"""Blocks of unlike pods placed in one compiled call under a GPU-sharing
profile (``_block.place_block``): NodeResourcesFit, GpuShareFit and
GpuShareScore's policy per pod over every node, the pod accounted on the
node it takes before the next one is scored.

``place_block`` takes the columns as they are (the ClusterState's resource
columns, the GPU table's rows) and updates them in place; see its doc for
the argument shapes.
"""

from __future__ import annotations

from numba import njit

from tensorsched.kernels import layout as L
from tensorsched.kernels._compile import COMPILED, KEY, compile_module

from . import _block
from . import share as _share

_INHERITED = ("model_ok", "gpu_fit", "affinity_tag", "score_node", "select_gpus")


def _base() -> dict:
    base = {name: _share.core[name] for name in _INHERITED}
    base[KEY] = _share.core.get(KEY)
    base[COMPILED] = _INHERITED
    return base


assert (_block.RES_PODS, _block.R_TOO_MANY_PODS, _block.INSUFFICIENT_SHIFT) == (
    L.RES_PODS, int(L.R_TOO_MANY_PODS), L.INSUFFICIENT_SHIFT)


_ns = compile_module(_block, njit, base=_base(), options={"nogil": True, "_nrt": False},
                     cache=True)
place_block = _ns["place_block"]
