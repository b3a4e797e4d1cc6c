"""Loading many ResourceClaims with the static CEL cost check: CPU seconds
of ``ClaimState.load`` over ``--claims`` claims whose selectors repeat a
pool of ``--distinct`` expressions (as a dump of one workload's claims
does), this tree and a base tree, alternated in separate processes.

Each process builds its claims in memory, then times one ``load``
(``time.process_time``), which compiles, type-checks and (in this tree)
estimates every selector; compiling and estimating are memoized per
distinct expression.  The record also has, in one process of this tree,
the estimate of each distinct expression unmemoized (its first load's
cost) and the load with the estimate switched off, alternated with the
load as is, the memos emptied before each pass.

python -m tensorsched.bench.dra_cel_estimate_load --base-commit C [--rounds 3]
        [--claims 5000] [--distinct 40] [--output bench/results/dra-cel-estimate-load.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time

from tensorsched.bench.harness import alternated, base_tree, git_commit, machine_info, run_child
from tensorsched.framework.parsing.dra import parse_resource_claim
from tensorsched.framework.state import dra_cel, dra_claims
from tensorsched.framework.state.cluster_state import ClusterState

D = 'device.attributes["gpu.example.com"]'
C = 'device.capacity["gpu.example.com"]'
#: selector shapes of real drivers' examples; ``{i}`` makes each distinct
SHAPES = (
    f'{D}.model == "a100-{{i}}"',
    f'{C}.memory.compareTo(quantity("{{i}}Gi")) >= 0',
    f'{D}.driverVersion.isGreaterThan(semver("1.{{i}}.0"))',
    f'{D}.exists(k, k.startsWith("mig-{{i}}"))',
    f'cel.bind(g, {D}, g.model == "h100" && g.index < {{i}})',
    f'{D}.productName.matches("^NVIDIA .*{{i}}$") && {D}.uuid != "x"',
)


def _claims(count: int, distinct: int) -> list:
    exprs = [SHAPES[i % len(SHAPES)].format(i=i) for i in range(distinct)]
    out = []
    for n in range(count):
        obj = {"metadata": {"name": f"c{n}", "namespace": "ml"}, "spec": {"devices": {
            "requests": [{"name": "gpu", "exactly": {
                "deviceClassName": "gpu",
                "selectors": [{"cel": {"expression": exprs[n % distinct]}}]}}]}}}
        out.append(parse_resource_claim(obj))
    return out


def _clear() -> None:
    dra_cel.compile_selector.cache_clear()
    estimate = getattr(sys.modules.get("tensorsched.framework.state.dra_cel_estimate"),
                       "dra_max_cost", None)
    if estimate is not None:
        estimate.cache_clear()


def _load(claims) -> float:
    _clear()
    t0 = time.process_time()
    dra_claims.ClaimState.of(ClusterState()).load(claims=claims)
    return time.process_time() - t0


def _child(count: int, distinct: int) -> None:
    claims = _claims(count, distinct)
    print(json.dumps({"cpu_seconds": round(_load(claims), 4)}))


def _side_by_side(count: int, distinct: int, rounds: int) -> dict:
    """In this process: the load as is and with the estimate switched off,
    alternated; and each distinct expression's estimate unmemoized."""
    from tensorsched.framework.state import dra_cel_estimate

    claims = _claims(count, distinct)
    out = {"load": [], "load_without_estimate": []}
    # dra_claims imports the check where a selector is checked, so switching
    # it off in its own module switches it off for the load
    real = dra_cel_estimate.exceeds_cost_limit
    for _ in range(rounds):
        out["load"].append(round(_load(claims), 4))
        dra_cel_estimate.exceeds_cost_limit = lambda expr: False
        try:
            out["load_without_estimate"].append(round(_load(claims), 4))
        finally:
            dra_cel_estimate.exceeds_cost_limit = real
    exprs = sorted({c.requests[0].exactly.selectors[0] for c in claims})
    t0 = time.process_time()
    for e in exprs:
        dra_cel_estimate.estimate_cost(e)
    out["estimate_each_distinct_ms"] = round((time.process_time() - t0) / len(exprs) * 1e3, 3)
    return out


def _run(path: str | None, count: int, distinct: int) -> dict:
    return run_child("tensorsched.bench.dra_cel_estimate_load",
                     ["--child", "--claims", count, "--distinct", distinct], path)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m tensorsched.bench.dra_cel_estimate_load",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--base-commit")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--claims", type=int, default=5000)
    ap.add_argument("--distinct", type=int, default=40)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--output")
    a = ap.parse_args(argv)
    if a.child:
        _child(a.claims, a.distinct)
        return
    if not a.base_commit:
        ap.error("--base-commit is required")
    base = base_tree(a.base_commit, tempfile.mkdtemp(prefix="dra-cel-estimate-base-"))
    runs = alternated([("before", base), ("after", None)], a.rounds,
                      lambda path: _run(path, a.claims, a.distinct))
    summary = {side: min(r["cpu_seconds"] for r in runs[side]) for side in runs}
    same = _side_by_side(a.claims, a.distinct, a.rounds)
    summary.update({"load_min": min(same["load"]),
                    "load_without_estimate_min": min(same["load_without_estimate"]),
                    "estimate_each_distinct_ms": same["estimate_each_distinct_ms"]})
    record = {"benchmark": "dra_cel_estimate_load", "claims": a.claims,
              "distinct_expressions": a.distinct, "rounds": a.rounds,
              "what": "CPU seconds of one ClaimState.load over the claims (min over rounds)",
              "base_commit": a.base_commit, "commit": git_commit(),
              "machine": machine_info(), "backend": "python (loading only)",
              "min_cpu_seconds": summary, "runs": runs, "same_process_cpu_seconds": same}
    text = json.dumps(record, indent=2)
    if a.output:
        with open(a.output, "w") as f:
            f.write(text + "\n")
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
