#!/usr/bin/env bash
# On a machine with a CUDA GPU (numba, numba-cuda and cupy preinstalled, no
# network): run the CUDA tests on the real device, then the basic benchmark on
# the cuda backend at 10,000 nodes, next to numba for the hash.  Installs
# nothing from the network; finishes well within 10 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD/.gpu-path${PYTHONPATH:+:$PYTHONPATH}"
mkdir -p .gpu-path/tensorsched
# Map the code folders into the package without pip (no network there).
for f in tensorsched_pkg/*.py; do cp "$f" .gpu-path/tensorsched/; done
for d in kernels framework topology bench; do ln -sfn "$PWD/$d" ".gpu-path/tensorsched/$d"; done
out="${OUT:-bench/results}"
mkdir -p "$out"
unset NUMBA_ENABLE_CUDASIM
timeout 300 python -m pytest -q -m cudasim -p no:cacheprovider 2>&1 | tail -n 15
for backend in cuda numba; do
  timeout 240 python -m tensorsched.cli bench --workload basic --nodes 10000 \
    --pods 2000 --backend "$backend" --output "$out/basic-10000-$backend-gpu.json" | tail -n 12
done
