"""Backoff between retries of a request the server did not answer.

50 ms doubling to 1 s: short enough that a restarted server is found
within a second of coming back, long enough that a dead one costs a
handful of connection attempts per second. The sleep is an Event wait so
a stopping worker is never held by it.
"""

import random
import threading

FIRST_S = 0.05
CAP_S = 1.0


class Backoff:
    """Delays for successive failures: 50 ms, 100 ms, ... capped at 1 s,
    each with up to 20 % jitter so many workers do not retry in step."""

    def __init__(self, first=FIRST_S, cap=CAP_S):
        self.first = first
        self.cap = cap
        self._next = first

    @property
    def fresh(self):
        """True until the first delay since the last reset."""
        return self._next == self.first

    def reset(self):
        self._next = self.first

    def next_delay(self):
        delay = self._next
        self._next = min(self.cap, self._next * 2)
        return delay * random.uniform(0.8, 1.0)

    def sleep(self, stop=None):
        """Sleeps the next delay; returns early (True) when ``stop`` (an
        Event) is set."""
        delay = self.next_delay()
        if stop is None:
            threading.Event().wait(delay)
            return False
        return stop.wait(delay)
