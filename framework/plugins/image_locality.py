"""ImageLocality: mirrors plugins/imagelocality/image_locality.go.

Sum over the pod's containers (and init containers) of the image size on the
node scaled by the fraction of nodes that have the image, clamped to
[23 MB, 1000 MB x containers] and mapped onto 0..100.  No normalization."""

from tensorsched.framework.config import plugin_names as names
from tensorsched.framework.runtime.plugin import NORMALIZE_NONE, FusedScore, Plugin
from tensorsched.kernels import layout as L


NAME = names.IMAGE_LOCALITY


class ImageLocality(Plugin, FusedScore):
    name = NAME
    score_slot = L.S_IMAGE
    normalize = NORMALIZE_NONE


def new(args, handle):
    return ImageLocality()
