"""Default plugins whose inputs tensorsched does not model yet.

* Volume plugins (VolumeRestrictions, NodeVolumeLimits, VolumeBinding,
  VolumeZone) need PersistentVolumes, claims, CSI nodes and storage classes,
  none of which are loaded: they accept every node and score nothing, which
  is exactly what they do upstream for pods without volumes claims.
* (PodTopologySpread and InterPodAffinity are modeled: see
  pod_topology_spread.py and inter_pod_affinity.py.)
* (DefaultPreemption is modeled: see default_preemption.py and
  framework/preemption/.)
"""

from tensorsched.framework.errors import TensorschedError
from tensorsched.framework.runtime.plugin import FusedFilter, FusedScore, Plugin
from tensorsched.framework.runtime.status import SKIP, Status

from . import names


class UnsupportedPodError(TensorschedError):
    """A pod uses a scheduling feature tensorsched cannot evaluate yet."""


class _NeverRejects(Plugin, FusedFilter):
    """A filter with no kernel checks: it never rejects a node."""

    filter_flag = 0
    reason_bits = 0

    def explain_reasons(self, ctx, row, bits):
        return Status.OK


class VolumePlugin(_NeverRejects, FusedScore):
    """Accepts every node and scores none (no volume objects are modeled):
    its PreScore skips, and it has no slot in the fused pass (score_slot -1)."""

    run_safe = True             # Reserve and PreBind accept at once and hold nothing

    def __init__(self, name: str):
        self.name = name

    def pre_filter(self, ctx):
        return SKIP, None

    def pre_score(self, ctx):
        return SKIP

    def reserve(self, ctx, node_name):
        return Status.OK

    def unreserve(self, ctx, node_name):
        return None

    def pre_bind(self, ctx, node_name):
        return Status.OK


def _volume(name):
    return lambda args, handle: VolumePlugin(name)


FACTORIES = {
    names.VOLUME_RESTRICTIONS: _volume(names.VOLUME_RESTRICTIONS),
    names.NODE_VOLUME_LIMITS: _volume(names.NODE_VOLUME_LIMITS),
    names.VOLUME_BINDING: _volume(names.VOLUME_BINDING),
    names.VOLUME_ZONE: _volume(names.VOLUME_ZONE),
}
