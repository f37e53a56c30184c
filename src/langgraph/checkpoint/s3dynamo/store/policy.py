"""How a thread store builds deltas, guards its commits and files its threads: the
settings it takes beyond the blob engine's (`Settings.delta_max`,
`detect_concurrent_runs`, `catalog_fields`), grouped so that its parts take one argument
for them."""

from __future__ import annotations

from typing import NamedTuple


class StorePolicy(NamedTuple):
    """`delta_max`: the largest delta stored instead of a whole value;
    `detect_concurrent_runs`: whether a put continuing the latest it loaded commits only
    if the namespace did not move meanwhile; `catalog_fields`: the metadata fields the
    thread catalog files threads by (`store/catalog.py`)."""

    delta_max: int
    detect_concurrent_runs: bool = True
    catalog_fields: tuple[str, ...] = ()
