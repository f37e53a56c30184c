"""The one retry policy of the retries the library makes itself, above botocore's.

botocore retries each request on its own (throttling, transient errors: its `standard`
mode, `max_attempts`). Above it the library tries again only for what botocore cannot
see, counting its tries with `tries` (the lease, whose wait is bounded by time instead,
pauses by `Backoff` itself):
- items a BatchWriteItem or BatchGetItem left unprocessed (throttled): at most
  `UNPROCESSED_ATTEMPTS` tries;
- a write that lost to a concurrent one (a transaction cancelled only by a conflict
  with another in flight or by throttling of its items, which botocore does not retry;
  the deployment record replaced on its version; a re-encryption whose records changed
  under it): `CONFLICT_ATTEMPTS`;
- a thread lease someone else holds: until the caller's `wait` runs out.
Every pause is `Backoff`'s: doubling from `FIRST` up to `CAP`, each drawn between half and
all of it, so that writers that collided do not collide again in step. docs/RELIABILITY.md,
"Retries"; no other module sleeps to retry (the architecture test checks it).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator

from langgraph.checkpoint.s3dynamo import telemetry

# Seconds. The first pause, and the longest.
FIRST = 0.05
CAP = 1.0
# Tries, the first included: throttling passes within a few seconds of pauses; a
# conflict that persists through five means a writer that will not stop.
UNPROCESSED_ATTEMPTS = 8
CONFLICT_ATTEMPTS = 5


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


def tries(limit: int, sleep: Callable[[float], None] | None = None) -> Iterator[int]:
    """Tries 1 to `limit` of one operation, pausing as `Backoff` says (with `sleep`, else
    `time.sleep`) before each one but the first. The caller stops at the first that
    succeeds; when they run out, it raises its own error, naming `limit`."""
    wait = Backoff()
    for attempt in range(1, limit + 1):
        if attempt > 1:
            (sleep or time.sleep)(wait.pause())
        yield attempt
