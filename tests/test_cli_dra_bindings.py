"""``schedule --output``: a binding of a pod with ResourceClaims lists the
devices each claim was allocated (``"claims"``), as ``explain`` shows them."""

from __future__ import annotations

import json

from tensorsched.cli import main

CLUSTER = "data/examples/dra/cluster.yaml"


def test_bindings_carry_each_claims_devices(tmp_path):
    out = tmp_path / "bindings.json"
    assert main(["schedule", "--cluster", CLUSTER, "--output", str(out)]) == 0
    bindings = {b["pod"]: b for b in json.loads(out.read_text())["bindings"]}
    assert "claims" not in bindings["shop/web-0"]                     # no claims
    assert bindings["ml/finetune-2"]["node"] is None
    assert "claims" not in bindings["ml/finetune-2"]                  # not placed
    taken = []
    for key in ("ml/train-0", "ml/train-1", "ml/train-2", "ml/finetune-0", "ml/finetune-1"):
        b = bindings[key]
        claims = b["claims"]
        assert list(claims) == [f"{key}-gpu"]
        for results in claims.values():
            for r in results:
                assert r["pool"] == b["node"] and r["driver"] == "gpu.nvidia.com"
                taken.append((r["pool"], r["device"]))
    # one GPU per training pod, two per fine-tune pod, none given twice
    assert len(taken) == 3 + 2 * 2 == len(set(taken))
