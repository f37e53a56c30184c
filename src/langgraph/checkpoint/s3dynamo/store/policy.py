"""How a thread store places values and guards its commits: the settings it takes
(`Settings.inline_max`, `delta_max`, `object_cache_bytes`, `detect_concurrent_runs`),
grouped so that its parts take one argument for them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class StorePolicy:
    """`inline_max`: the largest sealed value kept in the record rather than an object;
    `delta_max`: the largest delta stored instead of a whole value; `cache_bytes`: the
    object bodies this process keeps; `detect_concurrent_runs`: whether a put continuing
    the latest it loaded commits only if the namespace did not move meanwhile."""

    inline_max: int
    delta_max: int
    cache_bytes: int
    detect_concurrent_runs: bool = True
