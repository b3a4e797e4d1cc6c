"""DRA columns of a simulation's time series: how many of the devices the
cluster's ResourceSlices publish are allocated to resource claims.

``dra_metrics()`` -> ``{"dra_devices", "dra_devices_allocated",
"dra_alloc_pct"}`` (``Simulation(metrics=...)`` callables of the cluster):

- ``dra_devices``: the devices of the loaded slices, each (driver, pool,
  device) once;
- ``dra_devices_allocated``: those that allocated or in-flight claims hold,
  as the allocator counts them (a device shared by several claims, or by
  several shares of consumable capacity, counts once; admin-access results
  take no device);
- ``dra_alloc_pct``: ``dra_devices_allocated`` as % of ``dra_devices``
  (None while no slice publishes a device).

``Simulation`` adds these columns itself once its cluster has DRA objects
(DeviceClasses, ResourceSlices, claims or claim templates): when it is made,
or at the first sample after they arrive (nodes joining with slices,
scenario events); the rows sampled before then read ``DRA_BEFORE`` (no
device published, none allocated, no share), so every row has every column.
"""

from __future__ import annotations

from tensorsched.framework.state.dra_claims import ClaimState

__all__ = ["DRA_BEFORE", "DRA_COLUMNS", "dra_metrics", "has_dra_objects"]

#: the time-series columns of ``dra_metrics``
DRA_COLUMNS = ("dra_devices", "dra_devices_allocated", "dra_alloc_pct")
#: the columns' values while the cluster has no DRA objects
DRA_BEFORE = {"dra_devices": 0.0, "dra_devices_allocated": 0.0, "dra_alloc_pct": None}


def has_dra_objects(cluster) -> bool:
    """Whether ``cluster`` holds DRA objects (its state has a ClaimState)."""
    return ClaimState.attached(cluster.state) is not None


def device_counts(cluster) -> tuple[int, int]:
    """(devices published, devices allocated) of ``cluster`` now."""
    claims = ClaimState.attached(cluster.state)
    if claims is None or not claims.slices:
        return 0, 0
    ids = claims.columns().ids          # (driver, pool, device) -> rows
    held = {d for d in claims.in_use.exclusive if d in ids}
    held.update(d for d, _share in claims.in_use.shared if d in ids)
    return len(ids), len(held)


def dra_metrics() -> dict:
    """The DRA time-series columns (see the module doc); the counts are
    taken once per sample (the three columns share them)."""
    last: dict = {}

    def measured(cluster):
        claims = ClaimState.attached(cluster.state)
        key = (id(cluster), cluster.state.version,
               None if claims is None else (claims.objects_version, claims.in_use.version))
        if last.get("key") != key:
            last["key"], last["value"] = key, device_counts(cluster)
        return last["value"]

    def total(cluster):
        return measured(cluster)[0]

    def allocated(cluster):
        return measured(cluster)[1]

    def pct(cluster):
        n, used = measured(cluster)
        return 100.0 * used / n if n else None

    return {"dra_devices": total, "dra_devices_allocated": allocated, "dra_alloc_pct": pct}
