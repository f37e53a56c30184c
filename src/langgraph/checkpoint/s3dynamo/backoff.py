"""The one backoff policy of the retries the library makes itself.

botocore retries each request on its own (throttling, transient errors: its `standard`
mode, `max_attempts`). Above it the library waits and tries again in four places only,
each for a reason botocore cannot see: a BatchWriteItem or BatchGetItem that left items
unprocessed, a transaction cancelled only by a conflict with another in flight (botocore
does not retry cancellations), and a thread lease someone else holds. All four wait as
`Backoff` says: doubling from `FIRST` up to `CAP`, each pause drawn between half and all
of it, so that writers that collided do not collide again in step. How many times each tries is the
caller's (an operation's own limit), not the policy's.
"""

from __future__ import annotations

import random

from langgraph.checkpoint.s3dynamo import telemetry

# Seconds. The first pause, and the longest.
FIRST = 0.05
CAP = 1.0


class Backoff:
    """Pauses before each retry of one operation: `FIRST`, doubling, at most `CAP`,
    each with jitter."""

    def __init__(self) -> None:
        self._delay = FIRST

    def pause(self) -> float:
        """Seconds to wait before the next try."""
        telemetry.add("retries")
        pause = self._delay * random.uniform(0.5, 1.0)
        self._delay = min(self._delay * 2, CAP)
        return pause
