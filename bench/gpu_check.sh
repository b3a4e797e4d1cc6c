#!/usr/bin/env bash
# On a machine with a CUDA GPU (numba, numba-cuda, cupy, pyarrow, pyyaml,
# pytest, pytest-xdist and hypothesis preinstalled; no network):
#   1. the CUDA tests on the device (every `cudasim` test: the cuda backend
#      against numpy/numba and the scalar oracles), and the `gpu` tests
#      (the array-namespace kernels on CuPy arrays against NumPy);
#   2. the batched engines (bench/batch_check.py, cuda against numba in one
#      process, each part's answers compared, its JSON written after each
#      part, most telling first: the 1,020-run openb experiment, 4,096
#      basic clusters of 1,213 nodes, the vector environment of 4,096
#      environments, the node-local probe kernel and its trace form, the
#      openb engine with duration departures and priorities, its traces
#      with departures, how_many_fit of several templates, the openb engine
#      with DefaultPreemption: its victim search a thread per node);
#   3. the queue benchmarks on the cuda backend next to numba in the same
#      run (placements_sha256 must agree), most telling first.
# The project is laid out in a scratch folder (entry points too); wheels in
# .whl/ (say, a NumPy that the installed numba-cuda supports) install there.
# Everything stops at a deadline (GPU_CHECK_SECONDS, default 300) so the
# whole check fits one device command, and a second run fits the same
# 15 minutes of device time: ~3 min machine start + 2 x (300 s + ~30 s of
# interpreter starts, transfers and the overshoot of a step's last second)
# = ~14 min.  Run it with the command's own limit at GPU_CHECK_SECONDS + 60.
# The steps' budgets: the tests at most GPU_CHECK_TEST_SECONDS (90), the
# batched engines at most GPU_CHECK_BATCH_SECONDS (170; batch_check stops
# starting parts 10 s before), each queue benchmark at most
# GPU_CHECK_BENCH_SECONDS (120; a dry run under the simulator lifts it) and none
# started with under 20 s left.  A rerun can take what the first run left:
# GPU_CHECK_TEST_SECONDS=0 skips the tests, GPU_CHECK_BATCH_PARTS (say
# departures,fit_multi) runs those of batch_check's parts only, and
# GPU_CHECK_BATCH_SECONDS=$GPU_CHECK_SECONDS gives the batched engines all
# the time left (the queue benchmarks then skip), GPU_CHECK_BENCHES (say
# preemption-spread,preemption-antiaffinity) runs those queue benchmarks
# only.  What did not run says
# so: in bench.log and
# in gpu-check.json ("budgets", "skipped", batch-check's "not_run" and each
# part's "skipped").  Outputs (under $OUT, else bench/results/gpu-check):
# versions.log, tests.log, bench.log, gpu-check.json (every record, with
# "commit", "sources_sha256", "machine" (its GPUs from nvidia-smi -L) and
# each record's "backend").  A device gets a copy of the working tree
# without .git: give the commit as GPU_CHECK_COMMIT=<hash> (records whose
# own commit says "unknown" take it); "sources_sha256" names the tree run
# either way (bench/gpu_check_digest.py in a checkout gives its digest).
# Every step's timeout sends SIGKILL 10 s after its SIGTERM, so a hung
# step (a kernel that never returns) cannot hold the device past its budget.
# First a smoke kernel is compiled, launched and read back; where the cuda
# backend cannot run (no device, numba-cuda refusing the NumPy installed:
# carry a NumPy 2.4 wheel for the image's Python in .whl/) the script says
# why in versions.log and gpu-check.json and stops at once with exit 3.
# A dry run here: NUMBA_ENABLE_CUDASIM=1 GPU_CHECK_NODES=300 GPU_CHECK_DIV=100
# (tiny sizes throughout; the simulator is slow, so the tests time out);
# every part reached: add GPU_CHECK_SECONDS=4000 GPU_CHECK_BATCH_SECONDS=2000
# GPU_CHECK_BENCH_SECONDS=600 (~20 min on 2 loaded cores,
# bench/results/gpu-check-dryrun-cudasim.json);
# of the preemption benchmarks on counts alone, add GPU_CHECK_TEST_SECONDS=0
# GPU_CHECK_BATCH_SECONDS=0 GPU_CHECK_BENCHES=preemption-spread,preemption-antiaffinity
# (bench/results/gpu-check-dryrun-cudasim-preemption-counts.json).
set -uo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
deadline=${GPU_CHECK_SECONDS:-300}
test_budget=${GPU_CHECK_TEST_SECONDS:-90}
batch_max=${GPU_CHECK_BATCH_SECONDS:-170}
bench_max=${GPU_CHECK_BENCH_SECONDS:-120}
nodes=${GPU_CHECK_NODES:-10000}
div=${GPU_CHECK_DIV:-1}
py=${PYTHON:-python3}
out="${OUT:-bench/results/gpu-check}"
runs="$(mktemp -d)"
site="$(mktemp -d)"
mkdir -p "$out"

# The project without a build (the machine's setuptools may predate
# pyproject's metadata): its folders linked under $site as pyproject's
# package-dir maps them, and a dist-info with its entry points (the GPU
# plugins register through one).  Wheels in .whl/ install there first.
if compgen -G ".whl/*.whl" > /dev/null; then
  "$py" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$site" \
    .whl/*.whl || exit 1
fi
"$py" - "$site" <<'EOF' || exit 1
import os, shutil, sys, tomllib
site = sys.argv[1]
cfg = tomllib.load(open("pyproject.toml", "rb"))
project, dirs = cfg["project"], cfg["tool"]["setuptools"]["package-dir"]
shutil.copytree(dirs["tensorsched"], os.path.join(site, "tensorsched"))
for name, folder in dirs.items():
    if name != "tensorsched":
        os.symlink(os.path.abspath(folder), os.path.join(site, *name.split(".")))
info = os.path.join(site, f"tensorsched-{project['version']}.dist-info")
os.makedirs(info)
with open(os.path.join(info, "METADATA"), "w") as f:
    f.write(f"Metadata-Version: 2.1\nName: tensorsched\nVersion: {project['version']}\n")
with open(os.path.join(info, "entry_points.txt"), "w") as f:
    for group, points in project.get("entry-points", {}).items():
        f.write(f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in points.items()))
EOF
export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
# The golden cases live beside the checkout, which does not travel: copy
# them into .golden/ (git-ignored) and carry it, or the golden tests skip.
[ -d .golden ] && export TENSORSCHED_GOLDEN="$PWD/.golden"
export PYTHONUNBUFFERED=1

left() { echo $(( deadline - (SECONDS - start) )); }

# gpu-check.json: every record of $runs, the commit, the machine, the
# budgets and what was skipped or cut
record_all() {
"$py" - "$runs" "$out/gpu-check.json" "$deadline" "$test_budget" "$batch_max" \
  "$((SECONDS - start))" "$bench_max" <<'EOF'
import glob, hashlib, json, os, platform, subprocess, sys
runs, dest = sys.argv[1], sys.argv[2]
records = [json.load(open(p)) for p in sorted(glob.glob(runs + "/*.json"))]
versions = open(dest.rsplit("/", 1)[0] + "/versions.log").read().splitlines()
# The commit: GPU_CHECK_COMMIT (a device gets a copy of the working tree,
# without .git), else git's.  The sources' digest says which tree ran
# either way (bench/gpu_check_digest.py gives a checkout's).
commit = os.environ.get("GPU_CHECK_COMMIT") or subprocess.run(
    ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
commit = commit or "unknown"
for r in records:                   # a record's own commit is git's: unknown on a copy
    if r.get("commit") in (None, "", "unknown"):
        r["commit"] = commit
digest = subprocess.run([sys.executable, "bench/gpu_check_digest.py"], capture_output=True,
                        text=True).stdout.strip() or None
skipped = os.path.join(runs, "skipped.txt")
skipped = open(skipped).read().splitlines() if os.path.exists(skipped) else []
budgets = dict(zip(("deadline", "tests", "batch", "elapsed"), map(int, sys.argv[3:7])))
budgets["each_benchmark"] = int(sys.argv[7])
machine = {"node": platform.node(), "cpu": platform.machine(), "cpus": os.cpu_count(),
           "python": platform.python_version(),
           "gpus": [v for v in versions if v.startswith("GPU ")],
           "simulator": os.environ.get("NUMBA_ENABLE_CUDASIM", "") not in ("", "0")}
json.dump({"commit": commit, "sources_sha256": digest, "machine": machine,
           "versions": versions, "budgets": budgets, "skipped": skipped, "runs": records},
          open(dest, "w"), indent=1, sort_keys=True)
print(len(records), "runs recorded in", dest, "at commit", commit, "; skipped or cut:",
      len(skipped))
EOF
}


{
  nvidia-smi -L 2>&1 || true
  "$py" - <<'EOF'
import platform
from importlib.metadata import version, PackageNotFoundError
print("python", platform.python_version())
for name in ("numpy", "numba", "numba-cuda", "cupy-cuda13x", "cupy-cuda12x", "pyarrow",
             "hypothesis", "pytest"):
    try:
        print(name, version(name))
    except PackageNotFoundError:
        pass
import time
from tensorsched.kernels._deps import cuda_unavailable_reason
reason = cuda_unavailable_reason()
if reason is None:
    # one tiny kernel compiled, launched and read back: a driver that
    # refuses numba-cuda's PTX, or a broken toolkit, shows here in seconds
    t0 = time.perf_counter()
    try:
        import numpy as np
        from numba import cuda

        @cuda.jit
        def smoke(a):
            i = cuda.grid(1)
            if i < a.shape[0]:
                a[i] = 2 * i

        d = cuda.to_device(np.zeros(64, np.int64))
        smoke[1, 64](d)
        if d.copy_to_host().tolist() != list(range(0, 128, 2)):
            reason = "a smoke kernel ran but wrote wrong values"
        else:
            print(f"cuda smoke kernel: compiled, ran and read back in "
                  f"{time.perf_counter() - t0:.1f} s")
    except Exception as exc:
        reason = f"a smoke kernel failed: {type(exc).__name__}: {exc}"
from tensorsched.kernels._deps import cupy
# the sort path's device sort is CuPy's; without it run_sort sorts on the host
print("device sort:", "cupy" if cupy is not None else "none (run_sort sorts on the host)")
print("cuda backend:", reason or "available")
EOF
} 2>&1 | tee "$out/versions.log"

# Without a working cuda backend nothing here measures the device: stop
# now (exit 3), so a rerun (a NumPy wheel carried in .whl/, say) keeps the
# device time.
if ! grep -q "^cuda backend: available" "$out/versions.log"; then
  grep "^cuda backend:" "$out/versions.log" >> "$runs/skipped.txt"
  echo "stopped: the cuda backend cannot run (versions.log); nothing else ran" \
    | tee -a "$runs/skipped.txt"
  record_all
  exit 3
fi

echo "== tests (cudasim and gpu marks, on the device) =="
(( test_budget > $(left) )) && test_budget=$(left)
if (( test_budget >= 5 )); then
  timeout -k 10 "$test_budget" "$py" -m pytest -q -n 8 -m "cudasim or gpu" \
    -p no:cacheprovider --continue-on-collection-errors --tb=short -rfE 2>&1 \
    | tee "$out/tests.log" | tail -n 40
  tests_rc=${PIPESTATUS[0]}
  echo "tests exit: $tests_rc after $((SECONDS - start)) s"
  [[ "$tests_rc" = 124 || "$tests_rc" = 137 ]] \
    && echo "tests: cut at their budget of $test_budget s" >> "$runs/skipped.txt"
else
  echo "skipped tests: a budget of $test_budget s" | tee -a "$runs/skipped.txt"
fi

# workload pods [extra flags]: cuda first, then numba, same seed.
# GPU_CHECK_BENCHES (say preemption-spread,preemption-antiaffinity; run_sort
# names the sort path's benchmark) runs those only (a rerun, or a dry run
# of some under the simulator).
bench() {
  local workload=$1 pods=$(( $2 / div )) extra=${3:-}
  if [ -n "${GPU_CHECK_BENCHES:-}" ] && [[ ",$GPU_CHECK_BENCHES," != *",$workload,"* ]]; then
    return
  fi
  for backend in cuda numba; do
    local budget
    budget=$(left)
    if (( budget < 20 )); then
      echo "skipped $workload $backend: deadline" | tee -a "$runs/skipped.txt"
      continue
    fi
    (( budget > bench_max )) && budget=$bench_max
    local file="$runs/$workload-$pods-$backend${extra// /}.json"
    timeout -k 10 "$budget" "$py" -m tensorsched.cli bench --workload "$workload" --nodes "$nodes" \
      --pods "$pods" --backend "$backend" $extra --output "$file" > /dev/null 2>>"$out/bench.log" \
      || echo "FAILED $workload $backend $extra (exit $?)" | tee -a "$runs/skipped.txt"
    [ -f "$file" ] && "$py" -c "import json,sys; d=json.load(open(sys.argv[1])); \
print(d['workload'], d['backend'], 'batch' if d.get('batch') else 'no-batch', d['nodes'], 'x', d['pods'], \
d['pods_per_second'], 'pods/s p50', d.get('p50_us'), 'us', d['placements_sha256'][:12], \
d.get('device_counters', ''))" "$file"
  done
}

# The batched engines (bench/batch_check.py, its parts and sizes in its
# doc), cuda and numba in one process, answers compared (exit 1 when they
# differ); it stops starting parts 10 s before its budget.  The 17 traces
# live beside the checkout: copy ../shared/data/openb-gpu-trace to .openb/
# (git-ignored) and carry it; without it the repo's 6 traces run.
echo "== batched engines =="
batch_budget=$(left)
(( batch_budget > batch_max )) && batch_budget=$batch_max
if (( batch_budget >= 30 )); then
  if [ -d .openb ]; then
    batch_args=(--data .openb)
  else
    batch_args=(--traces cpu050,cpu100,default,gpushare40,gpuspec33,multigpu50)
  fi
  [ "$div" != 1 ] && batch_args+=(--tiny)
  [ -n "${GPU_CHECK_BATCH_PARTS:-}" ] && batch_args+=(--parts "$GPU_CHECK_BATCH_PARTS")
  timeout -k 10 "$batch_budget" "$py" -m tensorsched.bench.batch_check "${batch_args[@]}" \
    --seconds $(( batch_budget - 10 )) --out "$runs" 2>&1 | tee -a "$out/bench.log" \
    | grep -v '^ ' | tail -n 40
  batch_rc=${PIPESTATUS[0]}
  echo "batch check exit: $batch_rc after $((SECONDS - start)) s"
  [[ "$batch_rc" = 124 || "$batch_rc" = 137 ]] \
    && echo "batch check: cut at its budget of $batch_budget s" \
    >> "$runs/skipped.txt"
else
  echo "skipped batch check: deadline" | tee -a "$runs/skipped.txt"
fi

# the device runs' copies and launches a run (a run: the written rows'
# span, one packed copy up and one back, at most two launches), and a pod's
# rows re-tested, keys recomputed and full rescans in them (only the rows a
# placement changed, every row only where an extreme moved)
run_counters() {
  local f="$runs/$1-$(( $2 / div ))-cuda.json"
  [ -f "$f" ] && "$py" -c "import json,sys; d=json.load(open(sys.argv[1])); \
c=d.get('device_counters') or {}; r=max(d.get('compiled_runs') or 0, 1); \
p=max(c.get('run_pods') or 0, 1); \
print(d['workload'], 'runs on cuda:', d.get('compiled_runs'), 'runs of', d.get('mean_run_length'), \
'pods;', ', '.join(f'{k} {c[k] / r:.1f}' for k in ('copies', 'launches', 'bytes_uploaded') \
if k in c), 'a run (target: p50 <= 10 us a pod);', ', '.join(f'{k} {c[k] / p:.2f}' for k in \
('run_rows_recomputed', 'run_rows_rekeyed', 'run_full_scans') if k in c), 'a pod')" "$f"
}

# the device victim search's traffic a preemptor (the timed run's
# ``victim_device_counters``) and the two backends' digests side by side
victim_counters() {
  local c="$runs/$1-$(( $2 / div ))-cuda.json" n="$runs/$1-$(( $2 / div ))-numba.json"
  [ -f "$c" ] && "$py" -c "import json,sys,os; d=json.load(open(sys.argv[1])); \
c=d.get('victim_device_counters') or {}; p=max(d.get('preemptions') or 0, 1); \
o=json.load(open(sys.argv[2])) if os.path.exists(sys.argv[2]) else {}; \
print(d['workload'], 'on cuda a preemptor:', ', '.join(f'{k} {c[k] / p:.1f}' for k in \
('launches', 'copies', 'bytes_uploaded', 'copies_back', 'bytes_downloaded', 'counts_searches') \
if k in c), '; p50', d.get('p50_us'), 'us (target <= 1000); same placements as numba:', \
d['placements_sha256'] == o.get('placements_sha256'))" "$c" "$n"
}

echo "== benchmarks: $nodes nodes =="
{
  bench basic 100000
  bench spread 10000
  run_counters spread 10000
  bench antiaffinity 10000
  run_counters antiaffinity 10000
  bench gpu 2000
  bench basic 5000 --no-batch
  # the one-at-a-time cycle on cuda per pod: target p50 <= 200 us, one
  # launch and at most one copy up (the staged rows) a cycle, no row cache back
  f="$runs/basic-$(( 5000 / div ))-cuda--no-batch.json"
  [ -f "$f" ] && "$py" -c "import json,sys; d=json.load(open(sys.argv[1])); \
c=d.get('device_counters') or {}; p=max(d['pods'], 1); \
print('cycle on cuda: p50', d.get('p50_us'), 'us (target <= 200);', \
', '.join(f'{k} {c[k] / p:.2f}' for k in ('launches', 'copies', 'bytes_uploaded', \
'rows_downloaded') if k in c), 'a pod')" "$f"
  bench preemption 200
  # preemptors whose only host filters are PodTopologySpread /
  # InterPodAffinity: on cuda the victim search on counts, the visit and
  # the pick on the device (one thread per node, one copy back a
  # preemptor); same placements_sha256 as numba's search on counts
  bench preemption-spread 200
  victim_counters preemption-spread 200
  bench preemption-antiaffinity 200
  victim_counters preemption-antiaffinity 200
  bench basic 400000
  # the sort path of one run of alike pods on the device against numba's
  # (same placements asserted): issue target 40M pods/s at 400,000 pods
  budget=$(left)
  (( budget > bench_max )) && budget=$bench_max
  if [ -n "${GPU_CHECK_BENCHES:-}" ] && [[ ",$GPU_CHECK_BENCHES," != *",run_sort,"* ]]; then
    :   # not asked for
  elif (( budget >= 20 )); then
    timeout -k 10 "$budget" "$py" -m tensorsched.bench.run_sort --backend cuda --nodes "$nodes" \
      --pods $(( 100000 / div )) $(( 400000 / div )) --output "$runs/run-sort-cuda.json" \
      > /dev/null 2>>"$out/bench.log" || echo "FAILED run_sort cuda (exit $?)" \
      | tee -a "$runs/skipped.txt"
    f="$runs/run-sort-cuda.json"
    [ -f "$f" ] && "$py" -c "import json,sys; d=json.load(open(sys.argv[1])); \
[print('run_sort', d['backend'], d['nodes'], 'x', r['pods'], r['path'], \
r['sort_place_pods_per_cpu_second'], 'pods/CPU s (target 40M at 400,000); against', \
r['other'], r['compiled_run_place_pods_per_cpu_second'], '; same placements:', \
r['same_placements']) for r in d['runs']]" "$f"
  else
    echo "skipped run_sort cuda: deadline" | tee -a "$runs/skipped.txt"
  fi
  # DynamicResources' per-node search on the device (a GPU slice of 8 per
  # node, whole GPUs, MIG partitions, matchAttribute across two requests):
  # issue target <= 100 us a pod for the allocation pass at 10,000 nodes
  bench dra-gpu 2000
} 2>&1 | tee -a "$out/bench.log"

record_all
echo "done after $((SECONDS - start)) s"
