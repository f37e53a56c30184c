"""Where a sealed blob goes: inline in its index record, or an object of its own. Pure.

A value whose sealed size is at most `inline_max` stays inside the record, as long as the
record's inline total stays within `ITEM_INLINE_BUDGET`, whatever `inline_max` is: records
stay far below DynamoDB's 400 KB item limit. Everything else becomes an object. The same
rule serves channel values (`put`) and pending writes (`put_writes`).

A changed channel value may instead be stored as a delta: a zstd frame compressed against
the channel's last full version, which is an object. The delta is used only when it fits
inline, so a read needs at most that one object plus the record, in the same wave, and
the chain is never longer than one: a delta that grows past `delta_max` (or `inline_max`,
if smaller) is replaced by a new full version, which the next deltas are made against.
"""

from __future__ import annotations

# Chosen from benchmarks/ (README, "Choosing inline_max"): an S3 PUT costs as much as
# 8 KB of DynamoDB writes, so values up to 8 KiB are cheaper inline, and they save a
# request each way. Larger settings lower latency further at a higher DynamoDB bill.
DEFAULT_INLINE_MAX = 8192
# Inline bytes allowed in one record, whatever inline_max is.
ITEM_INLINE_BUDGET = 64 * 1024
# Largest index record written: DynamoDB's item limit (400 KB) less some headroom.
# Records are kept below it by construction (inline budget) except for what LangGraph
# hands over whole: the checkpoint body and the metadata, refused past it.
ITEM_MAX = 400 * 1024 - 4096
# Regular writes of one call kept as attributes of their own; past this, they go to one
# bundle object, since DynamoDB caps an UpdateExpression at 4 KB.
MAX_WRITE_ATTRIBUTES = 64
# A changed value is tried as a delta against the channel's last full version (kept as an
# object) when that version's data is at most this large: the delta is kept only when it
# fits inline, and compressing against a larger dictionary costs more than it can save.
MAX_DELTA_BASE = 8 * 1024 * 1024
# Largest delta kept inline by default (`delta_max`); past it, the value is written whole
# and becomes the next base. The setting trades latency against the bill. A new full
# version is an S3 PUT on the put's critical path (30 ms in the latency model) and resets
# the delta; a delta is carried in every later record until the next full version, and a
# record is written in a transaction (2 write units per started KB), so a larger threshold
# means fewer PUTs, hence less latency, but more write units. Measured on W1 (40 turns,
# encrypted, one run beside DynamoDBSaver: benchmarks/delta_sweep/results.md):
#
#   delta_max  PUTs/invoke  latency-model ms/invoke  bill/month (10,000 chats)  stored
#   2 KiB      0.75         77.4                     $12.77                     1.90 MB
#   3 KiB      0.475        68.5                     $12.97                     1.46 MB
#   4 KiB      0.45         64.5                     $15.13                     1.55 MB
#   6 KiB      0.275        60.3                     $15.77                     1.32 MB
#   8 KiB      0.225        60.5                     $17.90                     1.39 MB
#   DynamoDBSaver           90.5                     $166.45                    19.2 MB
#
# 6 KiB is the default: the latency of 8 KiB, the fewest bytes stored, and a full
# history of W1 still in one Query page (at 8 KiB it takes two). 3 KiB costs 18% less
# and adds about 8 ms per chat turn. A read needs one full version plus one delta
# either way, in one wave.
DEFAULT_DELTA_MAX = 6144


class InlineBudget:
    """The inline room left in one record."""

    def __init__(self, inline_max: int, total: int = ITEM_INLINE_BUDGET) -> None:
        self.inline_max = inline_max
        self.left = total

    def take(self, blob: bytes, *, carried: bool = False) -> bool:
        """Reserve room for `blob` if it belongs inline; False means: make it an object.
        A value `carried` from the parent was inline there, so only the room counts."""
        if (carried or len(blob) <= self.inline_max) and len(blob) <= self.left:
            self.left -= len(blob)
            return True
        return False


def needs_bundle(regular_writes: int) -> bool:
    """Whether a task's regular writes go to one bundle object instead of attributes."""
    return regular_writes > MAX_WRITE_ATTRIBUTES
