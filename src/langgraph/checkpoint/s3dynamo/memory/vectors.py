"""Embeddings as the Store keeps them: int8 with a scale and a norm (a quarter of
float32's bytes, cosine within about 0.01 of float's), packed many to a blob, and scored
exactly against a query (numpy when installed, the `vectors` extra; else pure Python).

One packed blob (a vector log entry, or a segment) holds rows, each one vector of one
item: the item's sort key, the version its put drew, when it was written, the path it
embeds, and the vector; and markers, each an item deleted (its key, when). Layout, after
a JSON header line `{"f": 1, "d": dims, "p": [paths], "n": rows, "m": markers}`:
`n` fixed-size row records (`ROW`), then `n * d` int8 vector bytes, then `m` markers
(`MARKER`). The vectors are contiguous, so numpy scores them from the blob itself.
"""

from __future__ import annotations

import array
import heapq
import importlib
import json
import math
import struct
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from operator import mul
from typing import Any, NamedTuple

from langgraph.checkpoint.s3dynamo.errors import IntegrityError

ROW = struct.Struct("<22s12sqHff")
MARKER = struct.Struct("<22s12sq")
# Above this many float32 bytes a segment's vectors are not kept expanded in memory
# (numpy then expands them on each search); below, one matrix product scores them.
EXPANDED_MAX = 32 << 20


class Vec(NamedTuple):
    """One embedding: `data` int8 (`len` = dimensions), value = int8 * scale; `norm`
    is the original vector's length."""

    scale: float
    norm: float
    data: bytes

    def floats(self) -> list[float]:
        """The vector scaled to length 1 (as near as int8 keeps it)."""
        factor = self.scale / self.norm if self.norm else 0.0
        return [x * factor for x in array.array("b", self.data)]


class Row(NamedTuple):
    key: str
    version: str
    at_ms: int
    path: str
    vec: Vec


class Marker(NamedTuple):
    """An item deleted at `at_ms`: its rows written before then are gone."""

    key: str
    version: str
    at_ms: int


def encode(values: Sequence[float]) -> Vec:
    """An embedding as int8 with its scale (largest magnitude / 127) and norm."""
    floats = [float(x) for x in values]
    if not all(math.isfinite(x) for x in floats):
        raise ValueError("the embedding has a value that is not a finite number (nan or inf)")
    top = max((abs(x) for x in floats), default=0.0)
    scale = top / 127 if top else 1.0
    data = array.array("b", [round(x / scale) for x in floats]).tobytes()
    return Vec(scale, math.sqrt(sum(x * x for x in floats)), data)


def to_payload(vec: Vec) -> list[Any]:
    """How an item's payload keeps a vector (so the index can be rebuilt from items)."""
    return ["q8", vec.scale, vec.norm, vec.data]


def from_payload(stored: Any) -> Vec:
    """A vector as an item's payload keeps it: `to_payload`'s list, or, from the first
    layouts, little-endian float32 bytes or a list of floats."""
    if isinstance(stored, list | tuple) and len(stored) == 4 and stored[0] == "q8":
        return Vec(float(stored[1]), float(stored[2]), bytes(stored[3]))
    if isinstance(stored, bytes | bytearray):
        packed = array.array("f")
        packed.frombytes(bytes(stored))
        if sys.byteorder == "big":
            packed.byteswap()
        return encode(packed.tolist())
    return encode([float(x) for x in stored])


# ------------------------------------------------------------------ packing


def pack(rows: Sequence[Row], markers: Sequence[Marker] = ()) -> bytes:
    """Rows and markers as one blob (module docstring); all rows of one dimension."""
    dims = {len(r.vec.data) for r in rows}
    if len(dims) > 1:
        raise ValueError(f"vectors of {sorted(dims)} dimensions in one namespace's index")
    paths = sorted({r.path for r in rows})
    index = {p: i for i, p in enumerate(paths)}
    header = {"f": 1, "d": dims.pop() if dims else 0, "p": paths, "n": len(rows)}
    header["m"] = len(markers)
    out = bytearray(json.dumps(header).encode() + b"\n")
    for r in rows:
        out += ROW.pack(
            r.key.encode(), r.version.encode(), r.at_ms, index[r.path], r.vec.scale, r.vec.norm
        )
    for r in rows:
        out += r.vec.data
    for m in markers:
        out += MARKER.pack(m.key.encode(), m.version.encode(), m.at_ms)
    return bytes(out)


# Bytes of rows one blob of a log holds: well within an item's 400 KB sealed.
ENTRY_MAX = 256 << 10


def packs(rows: Sequence[Row], limit: int = ENTRY_MAX) -> list[bytes]:
    """Rows packed in order, in as few blobs as hold at most `limit` bytes of rows each
    (a batch of many embeddings, or an item of many chunks, takes several)."""
    parts: list[list[Row]] = []
    size = limit
    for row in rows:
        size += ROW.size + len(row.vec.data)
        if size > limit:
            parts.append([])
            size = ROW.size + len(row.vec.data)
        parts[-1].append(row)
    return [pack(part) for part in parts]


class Pack:
    """A packed blob opened: its rows' records, vectors and markers, and a scorer."""

    def __init__(self, payload: bytes, what: str) -> None:
        head, _, body = payload.partition(b"\n")
        try:
            header = json.loads(head)
            self.dims: int = int(header["d"])
            paths: list[str] = list(header["p"])
            n, m = int(header["n"]), int(header["m"])
            records = [ROW.unpack_from(body, i * ROW.size) for i in range(n)]
            start = n * ROW.size
            self.matrix = body[start : start + n * self.dims]
            start += n * self.dims
            marks = [MARKER.unpack_from(body, start + i * MARKER.size) for i in range(m)]
        except (ValueError, KeyError, TypeError, struct.error) as exc:
            raise IntegrityError(f"{what}: the vectors do not parse ({exc})") from exc
        self.keys = [r[0].decode() for r in records]
        self.versions = [r[1].rstrip(b"\0").decode() for r in records]
        self.times = [r[2] for r in records]
        self.paths = [paths[r[3]] for r in records]
        self.scales = [r[4] for r in records]
        self.norms = [r[5] for r in records]
        # A row's cosine with a unit query: its int8 dot product times scale / norm.
        self.factors = [(s / n) if n else 0.0 for s, n in zip(self.scales, self.norms, strict=True)]
        self.markers = [Marker(k.decode(), v.rstrip(b"\0").decode(), t) for k, v, t in marks]
        self._expanded: Any = None

    def __len__(self) -> int:
        return len(self.keys)

    @property
    def weight(self) -> int:
        """Bytes it takes in memory, about (the vectors expanded to float32 included)."""
        return 5 * len(self.matrix) + 200 * len(self.keys)

    def row(self, i: int) -> Row:
        d = self.dims
        vec = Vec(self.scales[i], self.norms[i], bytes(self.matrix[i * d : (i + 1) * d]))
        return Row(self.keys[i], self.versions[i], self.times[i], self.paths[i], vec)

    def scores(self, unit: Sequence[float]) -> Sequence[float]:
        """Every row's cosine with `unit` (a query of length 1)."""
        if not self.keys:
            return []
        if len(unit) != self.dims:
            raise ValueError(
                f"the query embedding has {len(unit)} dimensions and the namespace's stored "
                f"embeddings {self.dims}: the IndexConfig's dims (or its embedding model) "
                "changed since they were written; use the model they were written with"
            )
        np = _numpy()
        if np is not None:
            return self._numpy_scores(np, unit)
        d, mv = self.dims, memoryview(self.matrix).cast("b")
        dot = getattr(math, "sumprod", None)
        if dot is None:  # Python before 3.12
            return [
                sum(map(mul, unit, mv[i * d : (i + 1) * d])) * f for i, f in enumerate(self.factors)
            ]
        return [dot(unit, mv[i * d : (i + 1) * d]) * f for i, f in enumerate(self.factors)]

    def _numpy_scores(self, np: Any, unit: Sequence[float]) -> Sequence[float]:
        q = np.asarray(unit, dtype=np.float32)
        if self._expanded is None:
            ints = np.frombuffer(self.matrix, dtype=np.int8).reshape(len(self.keys), self.dims)
            factors = np.asarray(self.factors, dtype=np.float32)
            if 4 * len(self.matrix) > EXPANDED_MAX:
                return (ints @ q) * factors  # type: ignore[no-any-return]
            self._expanded = ints.astype(np.float32) * factors[:, None]
        return self._expanded @ q  # type: ignore[no-any-return]


# The first rows a search asks for are picked without sorting the rest (most searches
# want ten); only a search that reads past them sorts the whole pack.
FIRST_PICK = 64


def best_first(scores: Sequence[float]) -> Iterator[int]:
    """Row indices by descending score, lazily."""
    n = len(scores)
    if n == 0:
        return
    first = min(n, FIRST_PICK)
    np = _numpy()
    if np is not None and isinstance(scores, np.ndarray):
        negated = -scores
        top = np.argpartition(negated, first - 1)[:first] if first < n else np.arange(n)
        picked: list[int] = top[np.argsort(negated[top], kind="stable")].tolist()
        yield from picked
        if first < n:
            seen = set(picked)
            rest = np.argsort(negated, kind="stable").tolist()
            yield from (i for i in rest if i not in seen)
        return
    picked = heapq.nlargest(first, range(n), key=scores.__getitem__)
    yield from picked
    if first < n:
        seen = set(picked)
        rest = sorted(range(n), key=scores.__getitem__, reverse=True)
        yield from (i for i in rest if i not in seen)


def unit(query: Sequence[float]) -> list[float]:
    """A query scaled to length 1 (cosine against rows is then a dot product)."""
    floats = [float(x) for x in query]
    norm = math.sqrt(sum(x * x for x in floats)) or 1.0
    return [x / norm for x in floats]


_NUMPY: list[Any] = []


def _numpy() -> Any:
    """numpy, if installed (`pip install "langgraph-checkpoint-s3dynamo[vectors]"`),
    imported on the first search, not at import time (a handler pays only if it ranks)."""
    if not _NUMPY:
        try:
            _NUMPY.append(importlib.import_module("numpy"))
        except ImportError:
            _NUMPY.append(None)
    return _NUMPY[0]


def rows_of(key: str, version: str, at_ms: int, vectors: Mapping[str, Any]) -> list[Row]:
    """An item's rows, from the vectors its payload keeps (`to_payload`'s, or older)."""
    return [Row(key, version, at_ms, path, from_payload(v)) for path, v in vectors.items()]


def best(
    packs: Iterable[tuple[Pack, Sequence[float]]],
) -> dict[tuple[str, str], float]:
    """The best score of each (item key, version) over its rows (several paths, several
    packs)."""
    out: dict[tuple[str, str], float] = {}
    for p, scored in packs:
        for key, version, score in zip(p.keys, p.versions, scored, strict=True):
            s = float(score)
            kv = (key, version)
            if s > out.get(kv, -math.inf):
                out[kv] = s
    return out
