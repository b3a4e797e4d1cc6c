"""A sweep's results side by side: per metric and trace, the mean and
standard deviation over the seeds of each configuration (``comparison``),
as text (``format_comparison``) and as a bar chart (``plot_comparison``,
the ``plot`` extra)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from tensorsched.framework.arguments import Arguments
from tensorsched.topology.openb import replay as R

from .results import CONFIG_COLUMN, HEADLINE, SweepError


def _kind(table: pa.Table) -> str:
    return "experiment" if "policy" in table.column_names else "simulate"


def comparison(table: pa.Table, metrics=None) -> pa.Table:
    """Side by side: one row per (metric, trace), per config two columns
    ``<config>_mean`` and ``<config>_std`` (sample standard deviation over
    the seeds; null for one seed).  ``metrics``: numeric columns of the
    results (default ``HEADLINE``, all-null ones left out); traces and
    configs in the order of the table."""
    args = Arguments("sweep.comparison")
    args.instance("table", table, pa.Table, "the pyarrow.Table of run_sweep")
    metrics = args.names("metrics", metrics, optional=True)
    kind = _kind(table)
    by = CONFIG_COLUMN[kind]
    if metrics is None:
        metrics = [m for m in HEADLINE[kind] if table.column(m).null_count < table.num_rows]
    for m in metrics:
        if m not in table.column_names or not pa.types.is_integer(table.schema.field(m).type) \
                and not pa.types.is_floating(table.schema.field(m).type):
            raise SweepError(f"metric {m!r} is not a numeric column of the results")
    traces = list(dict.fromkeys(table.column("trace").to_pylist()))
    configs = list(dict.fromkeys(table.column(by).to_pylist()))
    keys = list(zip(table.column("trace").to_pylist(), table.column(by).to_pylist()))
    cols: dict = {"metric": [], "trace": []}
    for c in configs:
        cols[f"{c}_mean"], cols[f"{c}_std"] = [], []
    for m in metrics:
        values = table.column(m).to_pylist()
        cells: dict = {}
        for key, v in zip(keys, values):
            if v is not None:
                cells.setdefault(key, []).append(float(v))
        for t in traces:
            cols["metric"].append(m)
            cols["trace"].append(t)
            for c in configs:
                v = cells.get((t, c), [])
                cols[f"{c}_mean"].append(float(np.mean(v)) if v else None)
                cols[f"{c}_std"].append(float(np.std(v, ddof=1)) if len(v) > 1 else None)
    return pa.table({k: pa.array(v, pa.string() if k in ("metric", "trace") else pa.float64())
                     for k, v in cols.items()})


def _configs(cmp: pa.Table) -> list[str]:
    return [c[:-5] for c in cmp.column_names if c.endswith("_mean")]


def _cell(mean, std) -> str:
    if mean is None:
        return "-"
    return f"{mean:.2f}" if std is None else f"{mean:.2f} ± {std:.2f}"


def format_comparison(cmp: pa.Table, seeds: int | None = None) -> str:
    """The comparison as text: a block per metric, a line per trace, a
    column per config (``mean ± std``)."""
    args = Arguments("sweep.format_comparison")
    args.instance("cmp", cmp, pa.Table, "the pyarrow.Table of comparison()")
    args.integer("seeds", seeds, 1, optional=True)
    configs = _configs(cmp)
    d = cmp.to_pydict()
    traces = list(dict.fromkeys(d["trace"]))
    tw = max([len("trace")] + [len(t) for t in traces])
    over = f" over {seeds} seeds" if seeds else " over the seeds"
    lines: list[str] = []
    for m in dict.fromkeys(d["metric"]):
        idx = [i for i, x in enumerate(d["metric"]) if x == m]
        cells = [[_cell(d[f"{c}_mean"][i], d[f"{c}_std"][i]) for c in configs] for i in idx]
        widths = [max(len(c), *(len(r[k]) for r in cells)) for k, c in enumerate(configs)]
        if lines:
            lines.append("")
        lines.append(f"{m} (mean ± std{over})")
        lines.append("  ".join([f"{'trace':<{tw}}"] + [f"{c:>{w}}"
                                                       for c, w in zip(configs, widths)]))
        for i, r in zip(idx, cells):
            lines.append("  ".join([f"{d['trace'][i]:<{tw}}"]
                                   + [f"{x:>{w}}" for x, w in zip(r, widths)]))
    return "\n".join(lines)


def plot_comparison(cmp: pa.Table, path: str) -> str:
    """A PNG: a panel per metric, per trace a group of bars (one per
    config, its mean) with the standard deviation as error bars (the
    ``plot`` extra)."""
    args = Arguments("sweep.plot_comparison")
    args.instance("cmp", cmp, pa.Table, "the pyarrow.Table of comparison()")
    path = args.path("path", path)
    plt = R.pyplot()
    configs = _configs(cmp)
    d = cmp.to_pydict()
    metrics = list(dict.fromkeys(d["metric"]))
    traces = list(dict.fromkeys(d["trace"]))
    width = 0.8 / max(len(configs), 1)
    fig_w = max(6.0, 1.0 + len(traces) * (0.35 * len(configs) + 0.5))
    fig, axes = plt.subplots(len(metrics), 1, figsize=(fig_w, 2.8 * len(metrics)),
                             squeeze=False)
    x = np.arange(len(traces))
    def nan(v):
        return np.nan if v is None else v
    for ax, m in zip(axes[:, 0], metrics):
        idx = [d["trace"].index(t, d["metric"].index(m)) for t in traces]
        for k, c in enumerate(configs):
            means = [nan(d[f"{c}_mean"][i]) for i in idx]
            stds = [nan(d[f"{c}_std"][i]) for i in idx]
            ax.bar(x - 0.4 + width * (k + 0.5), means, width, yerr=stds, capsize=2, label=c)
        ax.set_ylabel(m, fontsize=8)
        ax.set_xticks(x)
        ax.set_xticklabels([t.replace("openb_pod_list_", "") for t in traces], rotation=30,
                           ha="right", fontsize=7)
        ax.grid(axis="y", alpha=0.3)
    axes[0, 0].legend(fontsize=7, ncol=min(len(configs), 6), loc="lower left",
                      bbox_to_anchor=(0, 1.02), frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
