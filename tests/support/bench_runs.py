"""A bench module run in a process of its own under Numba's CUDA simulator
(the modules wrap the simulator's kernels and the scheduler's functions,
so they do not run inside the test process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys


def bench_record(tmp_path, module: str, *args) -> dict:
    """The JSON record ``python -m tensorsched.bench.MODULE ARGS --output F``
    writes (raises CalledProcessError when it fails)."""
    out = tmp_path / "rec.json"
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
    subprocess.run([sys.executable, "-m", f"tensorsched.bench.{module}", *args,
                    "--output", str(out)], check=True, env=env, capture_output=True,
                   timeout=600)
    return json.loads(out.read_text())
