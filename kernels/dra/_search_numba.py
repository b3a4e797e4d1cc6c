"""``search.first_fit_search`` compiled for the CPU: ``_search_core``'s
rules under ``njit``, one node after another.  Serial on purpose: a pod's
pass is typically a few nodes (the rest is remembered) or microseconds per
thousand nodes, less than waking a thread pool.  The driver's parameter and
call lists come from ``search_args`` (nodes run one after another, so the
constraint and depth scratch is one shared row)."""

from __future__ import annotations

from numba import njit

from tensorsched.kernels._compile import KEY, compile_module, compile_source

from . import _search_core
from . import search_args

core = compile_module(_search_core, njit, options={"nogil": True}, cache=True)
search_node = core["search_node"]

_PARAMETERS = search_args.parameters()

# The driver compiles from its source text like the rules, so that its
# on-disk cache is keyed by the rules it calls too.
_DRIVE_SOURCE = f"""
def _drive({_PARAMETERS}):
    for node in range(out.shape[0]):
        out[node] = search_node(node, {search_args.call_arguments(own_rows=False)})
"""

_drive = compile_source(
    f"{__name__}._drive",
    _DRIVE_SOURCE,
    njit,
    ("_drive",),
    {"search_node": search_node},
    options={"nogil": True},
    cache=True,
    depends=(core[KEY],),
)["_drive"]


def first_fit_search_numba(*arrays_and_budget):
    """``search.first_fit_search``'s arrays (``search_args.INPUTS`` order)
    and budget -> (codes [N] int8, picks [N, max(T, 1)] int64)."""
    *arrays, budget = arrays_and_budget
    args = search_args.prepare(arrays, budget, per_node_scratch=False)
    _drive(*(args[name] for name in _PARAMETERS.split(", ")))
    return args["out"], args["picks"]
