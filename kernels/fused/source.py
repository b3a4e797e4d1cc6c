"""What the fused backends read of the node columns they evaluate.

``ColumnSource`` is the interface ``backends`` types its ``source``
argument against; the framework's ClusterState is one (the kernels do not
import the framework, so the interface is declared here, on the reading
side).  A backend keeps per-row caches and a device mirror keyed on the
three counters, so a source must move them whenever it writes.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from tensorsched.kernels import layout as L


@runtime_checkable
class ColumnSource(Protocol):
    """Node columns plus the counters that say which rows changed.

    ``version``: moves with every write to any row;
    ``row_version``: [N] int64 (N >= rows in ``columns()``), the ``version``
    that last wrote each row, so a mirror re-copies only rows newer than
    its copy; ``layout_version``: moves when the arrays are reallocated
    (every cached view and mirror is then rebuilt).  A source may name a
    ``cache_tag`` (hashable): its row caches are kept apart from those of
    sources without one (the state), whose counters it does not share."""

    version: int
    layout_version: int
    row_version: np.ndarray

    def columns(self) -> L.NodeColumns:
        """The node columns trimmed to the rows in use (views, no copies)."""
        ...
