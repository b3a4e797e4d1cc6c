"""What ``tensorsched simulate`` writes besides the time series: the outcome
events streamed into ``events.parquet`` (``EventWriter``) and, with
``--plot``, ``simulation.png`` (``plot_simulation``, the ``plot`` extra)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from tensorsched.topology.openb import replay as R

__all__ = ["EVENT_ROWS", "EVENT_SCHEMA", "EventWriter", "plot_simulation"]

#: Events written to events.parquet (one row per outcome; Scheduled and
#: Arrived are counted in the time series instead).
EVENT_ROWS = ("Bound", "FailedScheduling", "Preempted", "BindFailed", "AssumeExpired",
              "Departed", "Deleted", "Evicted", "NodeAdded", "NodeUpdated", "NodeDeleted")
EVENT_SCHEMA = pa.schema([("time", pa.float64()), ("event", pa.string()), ("pod", pa.string()),
                          ("node", pa.string()), ("message", pa.string())])


class EventWriter:
    """Streams outcome events into a Parquet file, 64k rows at a time."""

    def __init__(self, path: str):
        self.path = path
        self.writer = pq.ParquetWriter(path, EVENT_SCHEMA)
        self.rows = 0
        self._cols: dict[str, list] = {n: [] for n in EVENT_SCHEMA.names}

    def __call__(self, e: dict) -> None:
        if e["event"] not in EVENT_ROWS:
            return
        c = self._cols
        c["time"].append(e["time"])
        c["event"].append(e["event"])
        c["pod"].append(e["pod"])
        c["node"].append(e["node"])
        c["message"].append(e["message"] or None)
        if len(c["time"]) >= 65536:
            self.flush()

    def flush(self) -> None:
        c = self._cols
        if c["time"]:
            self.writer.write_table(pa.table(c, schema=EVENT_SCHEMA))
            self.rows += len(c["time"])
            self._cols = {n: [] for n in EVENT_SCHEMA.names}

    def close(self) -> None:
        self.flush()
        self.writer.close()


def plot_simulation(ts: pa.Table, path: str) -> str:
    """Allocation, pending pods and GPU fragmentation over time, drawn into
    ``path`` (PNG); returns ``path``."""
    plt = R.pyplot()
    t = ts.column("time").to_numpy() / 3600.0
    panels = [("allocation (%)", [c for c in ("cpu_alloc_pct", "memory_alloc_pct",
                                               "gpu_alloc_pct", "dra_alloc_pct")
                                  if c in ts.column_names]),
              ("pending pods", ["pending"])]
    if "gpu_frag_pct" in ts.column_names:
        panels.append(("GPU fragmentation (% of capacity)", ["gpu_frag_pct"]))
    fig, axes = plt.subplots(len(panels), 1, figsize=(9, 2.6 * len(panels)), sharex=True,
                             squeeze=False)
    for ax, (title, cols) in zip(axes[:, 0], panels):
        for c in cols:
            v = ts.column(c).to_numpy(zero_copy_only=False).astype(float)
            ax.plot(t, v, lw=1.2, label=c)
        ax.set_ylabel(title)
        ax.grid(alpha=0.3)
        if len(cols) > 1:
            ax.legend(fontsize=7, loc="upper right")
    axes[-1, 0].set_xlabel("simulated time (hours)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
