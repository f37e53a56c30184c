"""Pure functions that build and parse DynamoDB items. No I/O here.

A checkpoint item (sk = `<ns>#<checkpoint_id>`):

    c   B    sealed checkpoint body (everything but channel values, plus the parent id)
    m   B    sealed metadata
    t   B    sealed (thread id, namespace), so `list(None)` can name every thread
    rk  S    keyed hash of the run id (sparse index for `delete_for_runs`), if any
    o   SS   object leaves of the channel values kept in S3
    iv  M    small sealed channel values kept inline, keyed by a per-item channel tag

A writes item holds every write of one task at one checkpoint
(sk = `<ns>#<checkpoint_id>#<task>`):

    t        B    sealed (task id, task path)
    w<idx>   B|S  one write: the sealed (channel, value) inline, or the leaf of its object
    wb       S    leaf of a bundle object holding a task's regular writes, used when there
                  are more than fit one UpdateExpression (DynamoDB caps it at 4 KB)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from langgraph.checkpoint.s3dynamo.naming import SEPARATOR, parse_sk

Item = dict[str, Any]
WRITE_PREFIX = "w"
BUNDLE_ATTR = "wb"


@dataclass
class CheckpointRecord:
    pk: str
    sk: str
    body: bytes
    metadata: bytes
    thread_ref: bytes
    run_key: str | None = None
    objects: frozenset[str] = frozenset()
    inline: dict[str, bytes] = field(default_factory=dict)

    @property
    def ns_name(self) -> str:
        return parse_sk(self.sk)[0]

    @property
    def checkpoint_id(self) -> str:
        return parse_sk(self.sk)[1]


@dataclass
class WritesRecord:
    pk: str
    sk: str
    task_ref: bytes
    # idx -> sealed write (bytes) or object leaf (str)
    writes: dict[int, bytes | str] = field(default_factory=dict)
    bundle: str | None = None

    @property
    def checkpoint_id(self) -> str:
        return parse_sk(self.sk)[1]

    @property
    def owner_sk(self) -> str:
        """Sort key of the checkpoint item these writes belong to."""
        return owner_sk(self.sk)


def owner_sk(sk: str) -> str:
    """Sort key of the checkpoint an item belongs to: itself, or a writes item's owner."""
    return sk.rsplit(SEPARATOR, 1)[0] if sk.count(SEPARATOR) == 2 else sk


def checkpoint_item(rec: CheckpointRecord) -> Item:
    item: Item = {
        "pk": {"S": rec.pk},
        "sk": {"S": rec.sk},
        "c": {"B": rec.body},
        "m": {"B": rec.metadata},
        "t": {"B": rec.thread_ref},
    }
    if rec.run_key:
        item["rk"] = {"S": rec.run_key}
    if rec.objects:
        item["o"] = {"SS": sorted(rec.objects)}
    if rec.inline:
        item["iv"] = {"M": {tag: {"B": blob} for tag, blob in sorted(rec.inline.items())}}
    return item


def writes_item(rec: WritesRecord) -> Item:
    item: Item = {"pk": {"S": rec.pk}, "sk": {"S": rec.sk}, "t": {"B": rec.task_ref}}
    for idx, value in rec.writes.items():
        item[write_attr(idx)] = _write_value(value)
    return item


def write_attr(idx: int) -> str:
    return f"{WRITE_PREFIX}{idx}"


def _write_value(value: bytes | str) -> dict[str, Any]:
    return {"S": value} if isinstance(value, str) else {"B": value}


def writes_update(
    rec: WritesRecord, special: set[int]
) -> tuple[str, dict[str, str], dict[str, Any]]:
    """One UpdateItem that stores a whole `put_writes` call atomically: the first write
    of a regular index wins (`if_not_exists`), a special index (error, interrupt, ...)
    takes the last one."""
    names = {"#t": "t"}
    values: dict[str, Any] = {":t": {"B": rec.task_ref}}
    clauses = ["#t = if_not_exists(#t, :t)"]
    if rec.bundle is not None:
        names["#wb"], values[":wb"] = BUNDLE_ATTR, {"S": rec.bundle}
        clauses.append("#wb = if_not_exists(#wb, :wb)")
    for n, (idx, value) in enumerate(sorted(rec.writes.items())):
        names[f"#w{n}"] = write_attr(idx)
        values[f":w{n}"] = _write_value(value)
        if idx in special:
            clauses.append(f"#w{n} = :w{n}")
        else:
            clauses.append(f"#w{n} = if_not_exists(#w{n}, :w{n})")
    return "SET " + ", ".join(clauses), names, values


def is_writes_item(item: Item) -> bool:
    sk: str = item["sk"]["S"]
    return sk.count(SEPARATOR) == 2


def parse_checkpoint(item: Item) -> CheckpointRecord:
    return CheckpointRecord(
        pk=item["pk"]["S"],
        sk=item["sk"]["S"],
        body=bytes(item["c"]["B"]),
        metadata=bytes(item["m"]["B"]),
        thread_ref=bytes(item["t"]["B"]),
        run_key=item.get("rk", {}).get("S"),
        objects=frozenset(item.get("o", {}).get("SS", ())),
        inline={k: bytes(v["B"]) for k, v in item.get("iv", {}).get("M", {}).items()},
    )


def parse_writes(item: Item) -> WritesRecord:
    writes: dict[int, bytes | str] = {}
    for name, value in item.items():
        if name.startswith(WRITE_PREFIX) and name != BUNDLE_ATTR:
            writes[int(name[len(WRITE_PREFIX) :])] = (
                value["S"] if "S" in value else bytes(value["B"])
            )
    return WritesRecord(
        pk=item["pk"]["S"],
        sk=item["sk"]["S"],
        task_ref=bytes(item["t"]["B"]),
        writes=writes,
        bundle=item.get(BUNDLE_ATTR, {}).get("S"),
    )


def pack_bundle(writes: dict[int, bytes]) -> bytes:
    """Concatenate sealed writes as `idx | length | blob`; each keeps its own seal."""
    out = bytearray()
    for idx, blob in sorted(writes.items()):
        out += idx.to_bytes(4, "big", signed=True) + len(blob).to_bytes(4, "big") + blob
    return bytes(out)


def unpack_bundle(data: bytes) -> dict[int, bytes]:
    writes: dict[int, bytes] = {}
    pos = 0
    while pos < len(data):
        if pos + 8 > len(data):
            raise ValueError("bundle is truncated")
        idx = int.from_bytes(data[pos : pos + 4], "big", signed=True)
        size = int.from_bytes(data[pos + 4 : pos + 8], "big")
        blob = data[pos + 8 : pos + 8 + size]
        if len(blob) != size:
            raise ValueError("bundle is truncated")
        writes[idx] = blob
        pos += 8 + size
    return writes


def write_ref(leaf: str, channel_tag: str) -> str:
    """How a writes item points at a write kept in S3: the object leaf, then the keyed
    channel tag, so a reader can pick a channel's writes without fetching the others."""
    return f"{leaf}.{channel_tag}"


def split_write_ref(ref: str) -> tuple[str, str | None]:
    leaf, _, tag = ref.partition(".")
    return leaf, tag or None


def referenced_leaves(item: Item) -> set[str]:
    """Object leaves an item keeps alive (the mark phase of garbage collection)."""
    leaves = set(item.get("o", {}).get("SS", ()))
    for name, value in item.items():
        if name.startswith(WRITE_PREFIX) and "S" in value:
            leaves.add(split_write_ref(value["S"])[0])
    return leaves


def item_key(item: Item) -> Item:
    return {"pk": item["pk"], "sk": item["sk"]}


def item_size(item: Item) -> int:
    """Approximate billed size of an item (attribute names plus values)."""
    return sum(len(name) + _value_size(value) for name, value in item.items())


def _value_size(value: dict[str, Any]) -> int:
    ((kind, inner),) = value.items()
    if kind == "S":
        return len(inner.encode())
    if kind == "B":
        return len(inner)
    if kind == "SS":
        return sum(len(s.encode()) for s in inner)
    if kind == "M":
        return 3 + sum(len(k) + 1 + _value_size(v) for k, v in inner.items())
    return 8
