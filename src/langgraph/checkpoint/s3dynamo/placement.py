"""Where a sealed blob goes: inline in its index record, or an object of its own. Pure.

A value whose sealed size is at most `inline_max` stays inside the record, as long as the
record's inline total stays within `ITEM_INLINE_BUDGET`, whatever `inline_max` is: records
stay far below DynamoDB's 400 KB item limit. Everything else becomes an object. The same
rule serves channel values (`put`) and pending writes (`put_writes`).

A changed channel value may instead be stored as a delta: a zstd frame compressed against
the channel's last full version, which is an object. The delta is used only when it fits
inline, so a read needs at most that one object plus the record, in the same wave, and
the chain is never longer than one: a delta that grows past `DELTA_MAX` (or `inline_max`,
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
# Largest delta kept inline; past it, the value is written whole and becomes the next base.
# A delta is smaller than `inline_max` for a reason of its own: it grows with every change
# since its base and is carried in every later record until the next full version, and a
# checkpoint record is written in a transaction (2 write units per started KB). A new
# full version costs one S3 PUT ($0.005 per 1,000, the price of 8 write units) and resets
# the delta. With g the delta's growth per checkpoint, a threshold T costs per checkpoint
# about 8 * g / T (PUTs) + 2 * T / 2 (the average delta carried, in write units), least at
# T = sqrt(8 g): about 2.4 KB for the benchmark chat (W1, g ~ 0.7 KB sealed), less once
# the 1 KB rounding of each record is counted. Measured on W1 (benchmarks/billing.py, 40
# turns, encrypted, monthly bill of 10,000 chats kept a month): 8 KiB $17.88, 4 KiB
# $15.10, 3 KiB $12.90, 2 KiB $12.74, 1.5 KiB $12.43, 1.25 KiB $12.36, 1 KiB $13.33.
# The bill is least from 1.25 to 2 KiB, but each new full version is the whole value, so a
# lower threshold stores more: W1's bytes (`record_size` of the items plus the objects,
# 40 turns, in memory) are 1.41 MB at 8 KiB, 1.57 MB at 4 KiB, 1.48 MB at 3 KiB, 1.92 MB
# at 2 KiB, 2.14 MB at 1.5 KiB. 3 KiB keeps the stored bytes near their least and the
# bill within 5% of its least. A read still needs one full version plus one delta, in one
# wave.
DELTA_MAX = 3072


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
