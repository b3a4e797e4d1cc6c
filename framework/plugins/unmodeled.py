"""Default plugins whose inputs tensorsched does not model yet.

* Volume plugins (VolumeRestrictions, NodeVolumeLimits, VolumeBinding,
  VolumeZone) need PersistentVolumes, claims, CSI nodes and storage classes,
  none of which are loaded: they accept every node and score nothing, which
  is exactly what they do upstream for pods without volumes claims.
* PodTopologySpread and InterPodAffinity are identities for pods that carry
  no spread constraints and no pod (anti-)affinity; for a pod that does, the
  PreFilter refuses the pod with an error instead of a wrong answer.
* DefaultPreemption (PostFilter) is not run yet: a pod that fits nowhere is
  reported unschedulable without attempting preemption.
"""

from ..errors import TensorschedError
from ..plugin import FusedFilter, Plugin
from ..status import SKIP, Status
from . import names


class UnsupportedPodError(TensorschedError):
    """A pod uses a scheduling feature tensorsched cannot evaluate yet."""


class _NeverRejects(Plugin, FusedFilter):
    """A filter with no kernel checks: it never rejects a node."""

    filter_flag = 0
    reason_bits = 0

    def explain_reasons(self, ctx, row, bits):
        return Status.OK


class VolumePlugin(_NeverRejects):
    """Accepts every node (no volume objects are modeled)."""

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


class PodConstraintPlugin(_NeverRejects):
    """PodTopologySpread / InterPodAffinity for pods that do not use them."""

    def __init__(self, name: str, uses):
        self.name = name
        self._uses = uses

    def pre_filter(self, ctx):
        if self._uses(ctx.pod):
            raise UnsupportedPodError(
                f"Pod {ctx.pod.key}: {self.name} constraints are not supported yet; "
                f"disable {self.name} in the profile to ignore them")
        return SKIP, None

    def pre_score(self, ctx):
        return SKIP


class DefaultPreemption(Plugin):
    name = names.DEFAULT_PREEMPTION

    def post_filter(self, ctx, diagnosis) -> Status:
        return SKIP


def _volume(name):
    return lambda args, handle: VolumePlugin(name)


def new_pod_topology_spread(args, handle):
    return PodConstraintPlugin(names.POD_TOPOLOGY_SPREAD, lambda p: bool(p.topology_spread))


def new_inter_pod_affinity(args, handle):
    return PodConstraintPlugin(names.INTER_POD_AFFINITY,
                               lambda p: bool(p.pod_affinity or p.pod_anti_affinity))


def new_default_preemption(args, handle):
    return DefaultPreemption()


FACTORIES = {
    names.VOLUME_RESTRICTIONS: _volume(names.VOLUME_RESTRICTIONS),
    names.NODE_VOLUME_LIMITS: _volume(names.NODE_VOLUME_LIMITS),
    names.VOLUME_BINDING: _volume(names.VOLUME_BINDING),
    names.VOLUME_ZONE: _volume(names.VOLUME_ZONE),
    names.POD_TOPOLOGY_SPREAD: new_pod_topology_spread,
    names.INTER_POD_AFFINITY: new_inter_pod_affinity,
    names.DEFAULT_PREEMPTION: new_default_preemption,
}
