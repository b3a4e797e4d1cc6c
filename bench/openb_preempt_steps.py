"""The batched openb engine's CPU twin without a scenario, DefaultPreemption
on, timed alone, for a before / after comparison of its source in
separate processes (run this file with ``PYTHONPATH`` naming another
tree's package to time that one): ``openb_preempt``'s workload (30%
high-priority pods), every (policy, seed) run in one
``ts.simulate_batch(...)`` call, compiled (or loaded) first, then timed
``--repeat`` times; prints one JSON line: the CPU and wall seconds of
each call, the load average, and a digest of the runs' answers
(``openb_events_steps.digest``) for the equality of both sides.

python bench/openb_preempt_steps.py [--nodes 30] [--pods 8000] [--scale 30] [--stay 30]
        [--seeds 1-2] [--policies FGD,BestFit] [--grace 0] [--repeat 2]
"""
from tensorsched.bench.openb_events_steps import main as steps_main


def main(argv=None):
    """``openb_events_steps``' timing without a scenario."""
    return steps_main(argv, with_scenario=False, nodes=30, pods=8000, scale=30.0)


if __name__ == "__main__":
    main()
