"""Array layouts shared by the cluster state and the kernels.

A caller (the framework's cluster state and query compiler) produces these
columns and a ``PodQuery``, and every kernel backend consumes both.  Nothing
here knows what a Pod object is.

Axes: N node rows, R resources, K label keys, WT/WI/WP 64-bit words of the
taint, image and host-port bitsets, S score slots.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

MAX_NODE_SCORE = 100
"""kube-scheduler's framework.MaxNodeScore."""

DEFAULT_MILLI_CPU_REQUEST = 100
"""Non-zero default for a container without a cpu request (millicores)."""
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024
"""Non-zero default for a container without a memory request (bytes)."""

# Resource registry: these four always occupy the first slots.
RES_CPU = 0
RES_MEMORY = 1
RES_EPHEMERAL_STORAGE = 2
RES_PODS = 3
FIXED_RESOURCES = ("cpu", "memory", "ephemeral-storage", "pods")

# ---------------------------------------------------------------------------
# Filter reasons: one int64 per node, 0 = feasible.
# Bits 0..15 are the built-in filters, 16..23 user scalar filters, and bit
# (INSUFFICIENT_SHIFT + r) means "Insufficient <resource r>".
# ---------------------------------------------------------------------------
R_UNSCHEDULABLE = np.int64(1 << 0)     # NodeUnschedulable
R_NODE_NAME = np.int64(1 << 1)         # NodeName
R_TAINT = np.int64(1 << 2)             # TaintToleration (NoSchedule/NoExecute)
R_ADDED_AFFINITY = np.int64(1 << 3)    # NodeAffinity, scheduler-enforced terms
R_NODE_AFFINITY = np.int64(1 << 4)     # NodeAffinity, pod selector / required terms
R_PREFILTER_NAMES = np.int64(1 << 5)   # outside NodeAffinity's PreFilter node set
R_PORTS = np.int64(1 << 6)             # NodePorts
R_TOO_MANY_PODS = np.int64(1 << 7)     # NodeResourcesFit, pod count
# Bits 8..11 belong to the built-in host filters (the volume plugins: claims
# and volumes are not node columns), so they take no user-filter slot; no
# kernel sets them (hence not R_*: the fused core does not re-declare them).
HOST_BIT_VOLUME_RESTRICTIONS = np.int64(1 << 8)
HOST_BIT_NODE_VOLUME_LIMITS = np.int64(1 << 9)
HOST_BIT_VOLUME_BINDING = np.int64(1 << 10)
HOST_BIT_VOLUME_ZONE = np.int64(1 << 11)
R_INVALID_ROW = np.int64(1 << 15)      # a free row (deleted node): never feasible
USER_FILTER_SHIFT = 16
MAX_USER_FILTERS = 8
INSUFFICIENT_SHIFT = 24
MAX_RESOURCES = 64 - INSUFFICIENT_SHIFT - 1   # 39 resources fit in the mask

# Which built-in checks run: bits of ``PodQuery.filter_flags``.
F_UNSCHEDULABLE = 1 << 0
F_NODE_NAME = 1 << 1
F_TAINT = 1 << 2
F_NODE_AFFINITY = 1 << 3
F_PORTS = 1 << 4
F_FIT = 1 << 5

# ---------------------------------------------------------------------------
# Score slots: raw (pre-normalization) per-plugin scores, int64 [N, S].
# ---------------------------------------------------------------------------
S_FIT = 0             # NodeResourcesFit (strategy in the query)
S_BALANCED = 1        # NodeResourcesBalancedAllocation
S_TAINT = 2           # TaintToleration: count of untolerated PreferNoSchedule taints
S_NODE_AFFINITY = 3   # NodeAffinity: sum of weights of matching preferred terms
S_IMAGE = 4           # ImageLocality (final, no normalization)
N_BUILTIN_SCORES = 5

# A score slot's normalization beyond DefaultNormalizeScore (modes 0 none,
# 1 default, 2 reverse): InterPodAffinity's min-max over the scored rows,
# where its raw score is a slot (the node-local batch kernels); the
# fused core's extremes start beyond every score at -/+ MINMAX_BIG.
NORM_MINMAX = 3
MINMAX_BIG = 1 << 62

# Fit scoring strategies.
STRATEGY_LEAST = 0
STRATEGY_MOST = 1
STRATEGY_RATIO = 2

# How a configured scoring resource reads the node and the pod.
RK_NONZERO = 0    # cpu, memory: non-zero-defaulted requests (ignored when a
                  # scorer asks for actual requests, see ``use_requested``)
RK_NATIVE = 1     # ephemeral-storage: always scored when allocatable > 0
RK_SCALAR = 2     # extended/hugepages: scored only when the pod requests it
RK_SKIP = 3       # pods or a name the registry does not know: never scored

# Selector requirement operators (node affinity programs).
OP_IN = 0
OP_NOT_IN = 1
OP_EXISTS = 2
OP_DOES_NOT_EXIST = 3
OP_GT = 4
OP_LT = 5
OP_INVALID = 6    # a requirement that failed to parse: its term never matches

PROG_SELECTOR = 0
PROG_REQUIRED = 1
PROG_ADDED = 2
PROG_PREFERRED = 3

LABEL_KEY_NAME = 0
"""Label column 0 holds each node's name, so matchFields on metadata.name is a
label requirement like any other."""
NAME_COLUMN_KEY = "#metadata.name"
"""The key of column 0: '#' cannot occur in a label key, so no node label
can collide with it."""


class NodeColumns(NamedTuple):
    """The per-node columns every kernel reads (host or device arrays).

    Shapes and units:
      allocatable, requested: [N, R] int64 (cpu millicores, bytes, counts);
        ``requested[:, RES_PODS]`` is the number of pods on the node.
      nonzero_requested: [N, 2] int64, cpu and memory with kube-scheduler's
        non-zero defaults (used by the Fit scorers).
      unschedulable: [N] bool, ``spec.unschedulable``.
      valid: [N] bool, False for a free row.
      label_vals: [N, K] int32 value id per key, -1 when absent.
      label_nums: [N, K] int64 integer value of the label (for Gt/Lt).
      label_isnum: [N, K] bool, the label value parses as an int64.
      taint_bits: [N, WT] int64 bitset over the taint table.
      image_bits: [N, WI] int64 bitset over the image table.
      port_bits: [N, WP] int64 bitset over the host-port table.
    """

    allocatable: np.ndarray
    requested: np.ndarray
    nonzero_requested: np.ndarray
    unschedulable: np.ndarray
    valid: np.ndarray
    label_vals: np.ndarray
    label_nums: np.ndarray
    label_isnum: np.ndarray
    taint_bits: np.ndarray
    image_bits: np.ndarray
    port_bits: np.ndarray


class SelectorProgram(NamedTuple):
    """An OR of terms, each an AND of label requirements, as flat arrays.

    Shapes: term_offsets [T+1] int64 (term t owns requirements
    term_offsets[t]:term_offsets[t+1]); term_weights [T] int64 (preferred
    terms; 1 otherwise); req_key [Q] int64 label key id (-1 = a key no node
    has); req_op [Q] int64 (OP_*); req_num [Q] int64 (Gt/Lt operand);
    val_offsets [Q+1] int64 into vals; vals [V] int64 value ids (ids of
    values no node has are dropped).  A term with no requirements never
    matches; zero terms means "nothing matches".
    """

    term_offsets: np.ndarray
    term_weights: np.ndarray
    req_key: np.ndarray
    req_op: np.ndarray
    req_num: np.ndarray
    val_offsets: np.ndarray
    vals: np.ndarray


class PodQuery(NamedTuple):
    """One pod (or one pod shape) compiled against the state's dictionaries.

    Shapes and units:
      filter_flags, score_flags: int64 bitmasks of enabled checks (F_*) and
        score slots (1 << S_*).
      request: [R] int64 actual requests (cpu millicores, bytes, counts);
        ``request[RES_PODS]`` is 0.
      nonzero_request: [2] int64 cpu/memory with non-zero defaults.
      requests_anything: bool, any of cpu, memory, ephemeral or a scalar > 0.
      fit_ignored: [R] bool, resources the Fit filter ignores.
      node_name_row: int64 row of spec.nodeName, -1 none, -2 unknown node.
      prefilter_rows: [N] bool rows allowed by NodeAffinity's PreFilter
        node-name set, or a [0] array meaning all rows.
      tolerates_unschedulable: bool.
      taint_reject: [WT] int64, NoSchedule/NoExecute taints the pod does not tolerate.
      taint_prefer: [WT] int64, PreferNoSchedule taints the pod does not tolerate.
      programs: the pod's four node-selector programs packed into one
        SelectorProgram; program p owns terms program_terms[p]:program_terms[p+1]
        ([5] int64), p = PROG_SELECTOR (spec.nodeSelector, one AND term),
        PROG_REQUIRED (required node affinity terms), PROG_ADDED (scheduler-
        enforced required terms), PROG_PREFERRED (pod + scheduler-enforced
        preferred terms, weighted).  The first three are checked only when
        the matching has_* flag is True (False = no constraint).
      port_conflicts: [WP] int64, table entries the pod's host ports collide with.
      fit_strategy: STRATEGY_*; fit_res [F] int64 resource ids; fit_kind [F]
        int64 RK_*; fit_weights [F] int64; shape_util/shape_score [P] int64
        (RequestedToCapacityRatio, score already scaled to 0..100).
      bal_res [B] int64, bal_kind [B] int64: BalancedAllocation resources.
      image_entries [E] int64 image table rows, image_scaled [E] int64
        (size * spread, per container occurrence); image_max int64
        (1000 MB x number of containers).
    """

    filter_flags: int
    score_flags: int
    request: np.ndarray
    nonzero_request: np.ndarray
    requests_anything: bool
    fit_ignored: np.ndarray
    node_name_row: int
    prefilter_rows: np.ndarray
    tolerates_unschedulable: bool
    taint_reject: np.ndarray
    taint_prefer: np.ndarray
    has_node_selector: bool
    has_required: bool
    has_added_required: bool
    programs: SelectorProgram
    program_terms: np.ndarray
    port_conflicts: np.ndarray
    fit_strategy: int
    fit_res: np.ndarray
    fit_kind: np.ndarray
    fit_weights: np.ndarray
    shape_util: np.ndarray
    shape_score: np.ndarray
    bal_res: np.ndarray
    bal_kind: np.ndarray
    image_entries: np.ndarray
    image_scaled: np.ndarray
    image_max: int


IMAGE_MIN_THRESHOLD = 23 * 1024 * 1024
"""ImageLocality: sums below this score 0 (bytes)."""
IMAGE_MAX_PER_CONTAINER = 1000 * 1024 * 1024
"""ImageLocality: the score saturates at this many bytes per container."""
