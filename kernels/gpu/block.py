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

from tensorsched.kernels._compile import COMPILED, KEY, compile_module
from tensorsched.kernels.fused import _numba as _fused

from . import _block
from . import share as _share

_INHERITED = ("model_ok", "gpu_fit", "affinity_tag", "score_node", "select_gpus")


def _base() -> dict:
    base = {name: _share.core[name] for name in _INHERITED}
    base["fit_reasons"] = _fused.core["fit_reasons"]
    keys = (_share.core.get(KEY), _fused.core.get(KEY))
    base[KEY] = None if None in keys else "+".join(keys)
    base[COMPILED] = (*_INHERITED, "fit_reasons")
    return base


_ns = compile_module(_block, njit, base=_base(), options={"nogil": True, "_nrt": False},
                     cache=True)
place_block = _ns["place_block"]
