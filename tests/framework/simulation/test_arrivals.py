"""``TraceArrivals`` on its own: rows due at one time arrive together, with
their departures and durations; the next arrival is scheduled, a finished
trace dropped; ``arrives_before`` sees rows not yet arrived.  (Arrival
blocks against one arrival at a time: test_arrival_blocks.py.)"""

from __future__ import annotations

import math

import pyarrow as pa

from tensorsched.generators.clusters import node_dict
from tensorsched.framework.runtime.clock import SimulatedClock
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.simulation.agenda import Agenda
from tensorsched.framework.simulation.arrivals import TraceArrivals
from tensorsched.framework.simulation.series import TimeSeries
from tensorsched.framework.simulation.trace import trace_from_table


class _Unbatched:
    batch = False


def _arrivals(pending):
    agenda = Agenda()
    added = []

    def add_pods(recs, duration):
        added.append([r.key for r in recs])
        for r in recs:
            pending[r.key] = 0.0

    durations: dict = {}
    arr = TraceArrivals(agenda=agenda, push=agenda.push, add_pods=add_pods, pending=pending,
                        durations=durations, cluster=build_cluster([node_dict("n0")]),
                        scheduler=_Unbatched(), scheduler_event=lambda e: None,
                        series=TimeSeries(), clock=SimulatedClock())
    return arr, agenda, added, durations


TABLE = pa.table({"name": ["a", "b", "c", "d"], "arrival": [1.0, 3.0, 3.0, 8.0],
                  "departure": [4.0, None, None, None],
                  "duration": [None, 6.0, None, None],
                  "cpu": [100, 100, 100, 100]})


def test_rows_arrive_by_time_with_departures_and_durations():
    pending: dict = {}
    arr, agenda, added, durations = _arrivals(pending)
    arr.add(trace_from_table(TABLE), offset=10.0)
    assert agenda.head() == (11.0, "trace", 0)
    assert arr.arrives_before("default/c", 13.5) and not arr.arrives_before("default/c", 13.0)
    agenda.pop()
    arr.arrive(0)
    assert added == [["default/a"]]
    assert sorted(agenda) == [(13.0, "trace", 0),
                              (14.0, "depart", ("default/a", arr.lifetimes.of("default/a")))]
    assert agenda.pop() == ("trace", 0)
    arr.arrive(0)                                   # b and c share their arrival time
    assert added[-1] == ["default/b", "default/c"] and durations == {"default/b": 6.0}
    assert not arr.arrives_before("default/b", math.inf)
    agenda.pop()                                    # a departs (nothing to do here)
    assert agenda.head() == (18.0, "trace", 0)
    agenda.pop()
    arr.arrive(0)                                   # the last row: the trace is done
    assert added[-1] == ["default/d"] and len(agenda) == 0
    assert not arr.arrives_before("default/d", math.inf)


def test_no_block_without_batching():
    arr, agenda, added, _ = _arrivals({})
    arr.add(trace_from_table(TABLE), offset=0.0)
    assert arr.block(0, 1.0, math.inf, math.inf, math.inf, None) is False
    assert added == [] and agenda.head() == (1.0, "trace", 0)


def test_records_match_the_trace():
    arr, *_ = _arrivals({})
    trace = trace_from_table(TABLE)
    arr.add(trace, offset=0.0)
    assert [r.key for r in arr.records(0, 1, 3)] == ["default/b", "default/c"]
    assert [r.key for r in arr.records(0, 3, 4)] == ["default/d"]
