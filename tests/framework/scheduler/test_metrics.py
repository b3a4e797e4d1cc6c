"""MetricsRecorder: counters by result, per-plugin seconds, and the report
``Scheduler.metrics()`` gives (percentiles of the end-to-end latencies)."""

from tensorsched.framework.scheduler.metrics import MetricsRecorder


def test_report_counts_and_percentiles():
    m = MetricsRecorder()
    assert m.report({}, 0, 0, 0)["e2e_latency_seconds"] == {
        "count": 0, "p50": None, "p99": None, "max": None, "mean": None}
    m.result("scheduled")
    m.result("scheduled")
    m.result("error")
    m.time_plugin("Bind", "DefaultBinder", 0.25)
    m.time_plugin("Bind", "DefaultBinder", 0.5)
    m.timer.add("filter_score", 1.5)
    m.e2e_latencies.extend([3.0, 1.0, 2.0, 4.0])
    m.preemptions = 2
    m.evictions.append({"pod": "v"})
    r = m.report({"active": 1}, waiting=2, assumed=3, nominated=4)
    assert r["attempts"] == {"scheduled": 2, "error": 1}
    assert r["plugin_seconds"] == {"Bind/DefaultBinder": 0.75}
    assert r["stage_seconds"] == {"filter_score": 1.5}
    assert r["e2e_latency_seconds"] == {"count": 4, "p50": 3.0, "p99": 4.0, "max": 4.0,
                                        "mean": 2.5}
    assert (r["queue"], r["waiting_on_permit"], r["assumed_unconfirmed"],
            r["nominated"]) == ({"active": 1}, 2, 3, 4)
    assert (r["preemptions"], r["evictions"], r["bind_failures"]) == (2, 1, 0)
    r["attempts"]["scheduled"] = 99                     # a copy: the counters stay
    assert m.results["scheduled"] == 2
