"""``runtime.clock``: a simulated clock moves only when told to and never
backwards; the monotonic clock follows the host and cannot be advanced."""

from __future__ import annotations

import pytest

from tensorsched.framework.runtime.clock import MonotonicClock, SimulatedClock


def test_a_simulated_clock_stands_still_until_advanced():
    c = SimulatedClock(5)
    assert c.now() == 5.0 and isinstance(c.now(), float) and c.simulated
    assert c.now() == c.now()
    c.advance(2.5)
    c.advance(0)
    assert c.now() == 7.5
    c.set(10)
    assert c.now() == 10.0
    c.set(10)                                    # setting the same time is not going back


def test_a_simulated_clock_never_goes_back():
    c = SimulatedClock(3)
    with pytest.raises(ValueError, match="cannot advance a clock by -1 seconds"):
        c.advance(-1)
    with pytest.raises(ValueError, match="cannot move the clock back from 3.0 to 2"):
        c.set(2)
    assert c.now() == 3.0                        # a refused move leaves it where it was


def test_the_monotonic_clock_follows_the_host_and_refuses_advance():
    c = MonotonicClock()
    a = c.now()
    assert c.now() >= a and not c.simulated
    with pytest.raises(TypeError, match="MonotonicClock cannot be advanced"):
        c.advance(1)
