"""How a thread store builds deltas and guards its commits: the settings it takes beyond
the blob engine's (`Settings.delta_max`, `detect_concurrent_runs`), grouped so that its
parts take one argument for them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class StorePolicy:
    """`delta_max`: the largest delta stored instead of a whole value;
    `detect_concurrent_runs`: whether a put continuing the latest it loaded commits only
    if the namespace did not move meanwhile."""

    delta_max: int
    detect_concurrent_runs: bool = True
