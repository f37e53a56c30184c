"""Deterministic embeddings for the Store's tests: a text's vector is random, seeded by
the text, so scores lie far apart and int8 keeps their exact order."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Sequence


def random_embedding(dims: int) -> Callable[[Sequence[str]], list[list[float]]]:
    """An embedding function of `dims` dimensions, as an `IndexConfig`'s `embed`."""

    def embed(texts: Sequence[str]) -> list[list[float]]:
        out = []
        for text in texts:
            rng = random.Random(hashlib.sha256(text.encode()).digest())
            out.append([rng.gauss(0, 1) for _ in range(dims)])
        return out

    return embed
