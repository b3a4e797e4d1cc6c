"""The CPU twin of the batched engine: ``_cluster.run_cluster`` (on the
rules of ``_rules``, inlined) compiled with ``njit``, one cluster per ``prange`` iteration (the machine's cores, or
``threads``), each with its own scratch allocated inside the iteration
(the per-(pod class, node) answer cache is [classes, nodes] per cluster:
memory grows with the threads, not with the batch)."""

from __future__ import annotations

import hashlib
import inspect
from contextlib import contextmanager

import numba
import numpy as np
from numba import njit

from tensorsched.kernels._compile import COMPILED, KEY, compile_module, module_functions
from tensorsched.kernels.fused import _core as _fused_core
from tensorsched.kernels.gpu import share as _share

from . import _candidates, _cluster, _driver, _env, _gpu_preempt, _queue, _rules
from .arrays import BatchArrays, BatchOutputs
from .preempt_arrays import BatchPreempt, check_terminating, termination_grace

_FROM_SHARE = ("gpu_fit", "node_frag", "affinity_tag", "select_gpus", "dotprod_node",
               "clustering_node", "packing_node", "bestfit_raw", "fgd_node")
_FROM_FUSED = ("tie_rank", "tie_key", "draw_index")   # the tie rule, Random's draw
AFF_TAGS = 18       # gpu._core.affinity_tag: 0 .. 17


def _base() -> dict:
    base = {name: _share.core[name] for name in _FROM_SHARE}
    # the tie rule, inlined here (it runs once per node)
    tie = {name: getattr(_fused_core, name) for name in _FROM_FUSED}
    base.update({name: njit(f, inline="always") for name, f in tie.items()})
    key = _share.core.get(KEY)
    src = hashlib.sha256("".join(inspect.getsource(f) for f in tie.values()).encode()).hexdigest()
    base[KEY] = None if key is None else f"{key}+{src}"
    base[COMPILED] = _FROM_SHARE + _FROM_FUSED
    return base


# Numba IR inlining (``inline="always"``) copies a body, with the bodies it
# inlines in turn, into every call site and compiles it there again.  The
# cluster loop keeps its rules and queue steps inlined (they run once per
# node, attempt or event); DefaultPreemption's steps (``_gpu_preempt``:
# once per preempting attempt, bind or eviction) call the ones they share
# with the loop instead of inlining a copy each (the large ones, and the
# ones several of them call): a third of the twin's cold compile.  The
# cold compile and warm runs: ``bench/batch_compile.py``.
COLD_CALLED = ("node_answer", "node_feasible", "release", "node_frag_of", "tree_refresh",
               "move", "move_all")


def _njit_rule(f, called=(), **options):
    """``njit`` inlining ``f`` at its call sites unless its name is in ``called``."""
    return njit(f, inline="never" if f.__name__ in called else "always", **options)


def _rules_and_queue(called: tuple) -> tuple:
    """``_rules`` and ``_queue`` compiled (the queue's namespace on the
    rules'), the steps named in ``called`` called, the others inlined
    (``called`` is in the cache key)."""
    opts = {"nogil": True, "called": tuple(sorted(called))}
    rules_ns = compile_module(_rules, _njit_rule, base=_base(), options=opts, cache=True)
    return rules_ns, compile_module(_queue, _njit_rule, base=rules_ns, options=opts, cache=True)


def loop_base(e_ns: dict, p_ns: dict) -> dict:
    """The namespace a cluster loop compiles on (this twin's, the node
    events' engine's): the loop's rules, queue and decision of ``e_ns``
    (inlined), the preemption's steps of ``p_ns`` (called: compiled once,
    shared by every loop), ``_candidates``' (the rows' lists of bound
    pods) among them."""
    own = module_functions(_gpu_preempt) + module_functions(_candidates)
    base = dict(e_ns)
    base.update({name: p_ns[name] for name in own})
    base[COMPILED] = tuple(e_ns[COMPILED]) + own
    base[KEY] = None if None in (e_ns[KEY], p_ns[KEY]) else f"{e_ns[KEY]}+{p_ns[KEY]}"
    return base


def compile_twin(cold_called: tuple | None = COLD_CALLED) -> tuple:
    """The twin's compiled namespaces (rules, queue, env, preemption,
    cluster) and its driver ``run_all``: the cluster loop with every rule
    and queue step inlined, the preemption's steps on their own copy of
    the rules and queue with the steps named in ``cold_called`` called
    (None: on the loop's, every step inlined: the twin up to 97712c8).
    Each choice compiles and caches on its own."""
    rules_ns, q_ns = _rules_and_queue(())
    # the vector environment's decision (``_env.decide``) is the cluster loop's too,
    # and its step goes through the same queue
    e_ns = compile_module(_env, njit, base=q_ns, options={"nogil": True}, cache=True)
    # DefaultPreemption in the cluster loop (``_gpu_preempt``; off per run by a flag)
    cold_ns = e_ns if cold_called is None else _rules_and_queue(cold_called)[1]
    # on numCandidates and the seeded offset (``_candidates``, the node-local engines' too)
    cand_ns = compile_module(_candidates, njit, base=cold_ns, options={"nogil": True}, cache=True)
    p_ns = compile_module(_gpu_preempt, njit, base=cand_ns, options={"nogil": True}, cache=True)
    c_ns = compile_module(_cluster, njit, base=loop_base(e_ns, p_ns), options={"nogil": True},
                          cache=True)
    run_all = compile_module(_driver, njit, base=c_ns,
                             options={"nogil": True, "parallel": True}, cache=True)["run_all"]
    return rules_ns, q_ns, e_ns, p_ns, c_ns, run_all


rules, queue_ns, env_ns, preempt_ns, _cluster_ns, _run_all = compile_twin()


@contextmanager
def run_by_run(threads: int | None):
    """Inside: Numba's ``prange`` on ``threads`` cores (None: Numba's, all of
    them), handing the runs out one by one (they differ in length); both
    settings restored on the way out."""
    old = numba.get_num_threads()
    if threads is not None:
        numba.set_num_threads(max(1, min(int(threads), numba.config.NUMBA_NUM_THREADS)))
    chunk = numba.get_parallel_chunksize()
    numba.set_parallel_chunksize(1)
    try:
        yield
    finally:
        numba.set_parallel_chunksize(chunk)
        numba.set_num_threads(old)


def run_batch(a: BatchArrays, threads: int | None = None, preempt: BatchPreempt | None = None,
              victim: np.ndarray | None = None, kernel=None,
              grace: np.ndarray | None = None) -> BatchOutputs:
    """Every run of ``a`` (checked first), on ``threads`` cores (default:
    Numba's, all of them); see ``arrays`` for the outputs.  ``preempt``:
    DefaultPreemption's inputs (``preempt_arrays``; None: no run
    preempts), each pod's evictions counted in ``victim`` [E] int64
    (zeros given).  ``kernel``: the driver to run (default this module's;
    ``compile_twin``'s for another choice of what is inlined).  ``grace``
    [B] the preempting runs' termination grace in seconds (None: 0, the
    victims leave at once)."""
    a.check()
    pre = BatchPreempt.off(a.n_runs) if preempt is None else preempt
    pre.check(a.n_runs, a.cls.shape[0])
    if victim is None:
        victim = np.zeros(a.cls.shape[0], np.int64)
    grace = termination_grace(grace, a.n_runs)
    over = np.zeros(a.n_runs, np.int64)
    out = BatchOutputs.empty(a.cls.shape[0], a.n_runs)
    run_all = _run_all if kernel is None else kernel
    with run_by_run(threads):
        run_all(a.n_nodes, a.gpu_count, a.model, a.cpu_cap, a.mem_cap, a.pods_cap, a.n_tree,
                a.t_lo, a.t_len, a.t_left, a.t_right, a.leaf_of, a.n_classes, a.c_cpu, a.c_mem,
                a.c_cpu_nz, a.c_num, a.c_milli, a.c_mask, a.n_typical, a.tp_cpu, a.tp_num,
                a.tp_milli, a.tp_mask, a.tp_freq, a.run_set, a.run_workload, a.policy, a.sel,
                a.seed_mix.astype(np.uint64), a.gpu_weight, a.static_total,
                a.backoff0.astype(np.float64), a.backoff_max.astype(np.float64),
                a.max_unsched.astype(np.float64), a.ev_off, a.ev_len, a.cls, a.u,
                a.arrive.astype(np.float64), a.depart.astype(np.float64),
                a.duration.astype(np.float64), a.rank.astype(np.int64), a.gpu_slots,
                out.node, out.gmask, out.bind, out.tries, out.log_t, out.log_pod,
                out.log_frag, out.n_log, out.frag0, out.end, *pre.inputs(), victim, grace,
                over)
    check_terminating(over)
    return out
