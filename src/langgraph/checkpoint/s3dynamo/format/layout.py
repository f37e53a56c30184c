"""Where everything is stored: the grammar of every partition key, sort key and object
key, in one place. Pure string functions; `naming.py` makes the names that go in them.

Index (one table, partition key `pk`, sort key `sk`):

    pk = <thread>            sk = <ns>#<checkpoint id>          checkpoint record
    pk = <thread>            sk = <ns>#<checkpoint id>#<task>   a task's pending writes there
    pk = <thread>            sk = <ns>#\uffff<operation>        a mark: what an operation in
                                                                progress hides of the namespace
    pk = <thread>!           sk = head#<ns>                     id of the namespace's newest
                                                                checkpoint (or a tombstone)
    pk = <thread>!           sk = lease|loan#..|borrow#..|cat#..   its lease, sharing, catalog refs
    pk = <prefix><token>~t!  sk = <thread>                      a catalog entry (below)
    pk = <prefix>#s3dynamo   sk = deployment | keyring | ..     the deployment's own records
    pk = <prefix>~uploads#<n>!  sk = <ms>#<nonce>               an upload intent (below)

`<thread>` is `<prefix><name>`: the deployment's prefix (empty by default; a tenant's,
such as `tenant-42/`, on a shared table) and the keyed hash of the thread id. `<ns>` is
the keyed hash of the namespace. Hashes are urlsafe base64, which never holds `#` or `!`,
so a Query over a thread's partition never meets its control items, and no thread
partition is a deployment's. Checkpoint ids are time-ordered: a descending Query over
`<ns>#` meets the namespace's marks first (`\uffff` sorts above every checkpoint id),
then the newest checkpoint, right after its own writes records.
Scans keep what `scope_of` maps to the prefix (not the journal nor the catalog, read by key).

Objects (one bucket): `<thread>/<leaf>`, so `<prefix><name>/<leaf>`: a leaf is the keyed
hash of a value's (thread, namespace, channel, version) or of a large write's identity,
so a thread's and a deployment's objects share a key prefix. A writes record points at
a write kept as an object with `<leaf>.<channel tag>`."""

from __future__ import annotations

import calendar
import re
import time
import zlib

# The storage format this grammar, the envelope (`blobs/sealing.py`) and the records
# (`format/records.py`) make up, the newest this release reads and writes;
# recorded in the deployment record, whose absence of the field means 1 (docs/FORMAT.md).
# Format 2 adds copies that share their source's objects; a deployment stays format 1,
# which every release since 0.2.0 reads, until its first such copy.
STORAGE_FORMAT = 2
SHARING_FORMAT = 2

SEPARATOR = "#"
# Above every checkpoint id, so an open-ended range needs no id to bound it.
TOP = "\uffff"

# A deployment's own records (the deployment record, the KMS keyring) live in the
# partition `<prefix>#s3dynamo`: `deployment_pk(prefix)`.
DEPLOYMENT_SUFFIX = "#s3dynamo"
DEPLOYMENT_RECORD = "deployment"
KEYRING_RECORD = "keyring"

# A thread's control items: `<thread>!` (thread names never contain "!").
CONTROL_SUFFIX = "!"
HEAD_PREFIX = "head#"
LEASE_SK = "lease"
# Sharing between a copy and its source: the lender's loans, the borrower's borrowings.
LOAN_PREFIX = "loan#"
BORROW_PREFIX = "borrow#"

# A head under this name (which no namespace has: namespace names are base64url) marks a
# `keep_latest` retention sweep in progress on the thread, so that an interrupted one is
# finished by the next sweep (`ops/retention.py`).
PRUNING_HEAD = "~pruning"
# A head set to `~<seconds>` marks a namespace whose thread retention is removing (or
# removed then): a commit that expects a parent is refused, a new thread may start.
# Checkpoint ids never begin with "~". After the time, TOMBSTONE_SEAL and a MAC under the
# naming key over the head's keys and that time (`Namer.tombstone`): a table writer
# without the keys cannot make one (docs/SECURITY.md, "Tombstones"); an earlier
# release's has none.
TOMBSTONE_MARK = "~"
TOMBSTONE_SEAL = "#"

# A mark's sort key: `<ns>#` + MARK + the operation that set it (records.Mark).
MARK = TOP
MARK_OPERATIONS = ("copy", "delete", "prune", "runs")

# One name as `naming.py` makes a thread name or a leaf: 16 bytes, urlsafe base64, no
# padding. The last character carries 2 data bits and 4 zero bits: A, Q, g or w.
NAME = re.compile(r"[A-Za-z0-9_-]{21}[AQgw]")
NAME_LENGTH = 22


# ------------------------------------------------------------------ sort keys


def checkpoint_sk(ns_name: str, checkpoint_id: str) -> str:
    return f"{ns_name}{SEPARATOR}{checkpoint_id}"


def writes_sk(ns_name: str, checkpoint_id: str, task_name: str) -> str:
    return f"{ns_name}{SEPARATOR}{checkpoint_id}{SEPARATOR}{task_name}"


def namespace_prefix(ns_name: str) -> str:
    """The sort-key prefix of every record of one namespace."""
    return ns_name + SEPARATOR


def namespace_range(ns_name: str, upper_id: str | None) -> tuple[str, str]:
    """Sort keys of a namespace's records from its start up to checkpoint `upper_id`
    (inclusive of its record, not of its writes), or to its end (its marks included)."""
    upper = checkpoint_sk(ns_name, upper_id) if upper_id else ns_name + SEPARATOR + TOP + TOP
    return namespace_prefix(ns_name), upper


def mark_sk(ns_name: str, operation: str) -> str:
    """Where an operation's mark over a namespace lives: above all of its records."""
    if operation not in MARK_OPERATIONS:
        raise ValueError(f"unknown mark operation {operation!r}; expected one of {MARK_OPERATIONS}")
    return f"{ns_name}{SEPARATOR}{MARK}{operation}"


def is_mark_key(sk: str) -> bool:
    return SEPARATOR + MARK in sk


def mark_operation(sk: str) -> str:
    return sk.rpartition(SEPARATOR + MARK)[2]


def parse_sk(sk: str) -> tuple[str, str, str | None]:
    """Split a sort key into (namespace name, checkpoint id, task name or None)."""
    parts = sk.split(SEPARATOR)
    if len(parts) == 2:
        return parts[0], parts[1], None
    return parts[0], parts[1], parts[2]


def is_record_key(sk: str) -> bool:
    """Whether a sort key in a thread's partition is a checkpoint's or a writes record's
    (a mark's is not; nor is an item s3dynamo never writes there)."""
    return sk.count(SEPARATOR) in (1, 2) and not is_mark_key(sk)


def is_writes_key(sk: str) -> bool:
    return sk.count(SEPARATOR) == 2


def owner_sk(sk: str) -> str:
    """Sort key of the checkpoint a record belongs to: itself, or a writes record's owner."""
    return sk.rsplit(SEPARATOR, 1)[0] if is_writes_key(sk) else sk


# ------------------------------------------------------------------ deployments


def deployment_pk(prefix: str) -> str:
    """Partition of a deployment's own records (deployment record, keyring)."""
    return prefix + DEPLOYMENT_SUFFIX


def is_deployment_pk(pk: str) -> bool:
    return pk.endswith(DEPLOYMENT_SUFFIX)


def scope_of(pk: str) -> str | None:
    """The prefix of the deployment a partition belongs to (thread records, a thread's
    control items, or the deployment's own records); None for a partition no deployment
    writes. Exact: a thread name has a fixed length and alphabet, so no partition of
    prefix `a/` is taken for one of prefix `a/b`."""
    if is_deployment_pk(pk):
        return pk[: -len(DEPLOYMENT_SUFFIX)]
    name = pk[: -len(CONTROL_SUFFIX)] if pk.endswith(CONTROL_SUFFIX) else pk
    if len(name) >= NAME_LENGTH and NAME.fullmatch(name[-NAME_LENGTH:]):
        return name[:-NAME_LENGTH]
    return None


# --------------------------------------------------------------- control items


def control_pk(thread_name: str) -> str:
    """Partition of a thread's control items (heads and lease)."""
    return thread_name + CONTROL_SUFFIX


def is_control_pk(pk: str) -> bool:
    return pk.endswith(CONTROL_SUFFIX)


def thread_of(pk: str) -> str:
    """The thread name a partition belongs to, records or control items."""
    return pk[: -len(CONTROL_SUFFIX)] if is_control_pk(pk) else pk


def head_sk(ns_name: str) -> str:
    return HEAD_PREFIX + ns_name


def head_namespace(sk: str) -> str | None:
    """The namespace name a head item's sort key names; None for another control item."""
    return sk[len(HEAD_PREFIX) :] if sk.startswith(HEAD_PREFIX) else None


def tombstone(at: float) -> str:
    """A head for a namespace deleted at `at` (seconds, to the millisecond: a guard
    compares it with a checkpoint's time). Ten digits of seconds until 2286, so
    tombstones sort as their times; one of an earlier build has no fraction."""
    return f"{TOMBSTONE_MARK}{at:.3f}"


def sealed_tombstone(time_text: str, mac: str) -> str:
    """A tombstone's time text (`tombstone`) and its MAC: it still sorts as its time."""
    return f"{time_text}{TOMBSTONE_SEAL}{mac}"


def tombstone_parts(head: str) -> tuple[str, str | None]:
    """(time text, MAC or None: an earlier release's, or forged) of a tombstone head."""
    text, seal, mac = head.partition(TOMBSTONE_SEAL)
    return text, (mac if seal else None)


def tombstone_time(head: str | None) -> int | None:
    """When a tombstone head was set (0 for one whose time is no number); None for a head
    naming a checkpoint (or none)."""
    if head is None or not head.startswith(TOMBSTONE_MARK):
        return None
    try:
        return int(float(tombstone_parts(head)[0][len(TOMBSTONE_MARK) :]))
    except ValueError:
        return 0


# ------------------------------------------------------------- shared objects
#
# A copy (`copy_thread`) shares its source's objects instead of writing them again: its
# records name a shared object by its whole key, `<lender>/<leaf>` where they name an own
# object by `<leaf>` (`shared_leaf`); the lender's control partition holds a loan naming
# those leaves (in parts of `records.LOAN_PART_LEAVES`), which every deletion of the
# lender's objects honours, and the borrower's a borrowing naming the lender, so its own
# deletion ends the loan (docs/RELIABILITY.md, "Copies share objects").


def loan_sk(borrower: str, part: int) -> str:
    """One part of the loan of a thread's objects to `borrower` (a thread name)."""
    return f"{LOAN_PREFIX}{borrower}{SEPARATOR}{part:03d}"


def loans_prefix(borrower: str | None = None) -> str:
    """Sort-key prefix of a lender's loans (to one borrower, or all)."""
    return LOAN_PREFIX if borrower is None else f"{LOAN_PREFIX}{borrower}{SEPARATOR}"


def loan_borrower(sk: str) -> str:
    return sk[len(LOAN_PREFIX) :].rpartition(SEPARATOR)[0]


def borrow_sk(lender: str) -> str:
    return f"{BORROW_PREFIX}{lender}"


def borrow_lender(sk: str) -> str | None:
    """The lender a borrowing's sort key names; None for another control item."""
    return sk[len(BORROW_PREFIX) :] if sk.startswith(BORROW_PREFIX) else None


def shared_leaf(lender: str, leaf: str) -> str:
    """How a record names an object of another thread it shares: the object's key.
    An own leaf never holds `/`."""
    return object_key(lender, leaf)


def split_shared(leaf: str) -> tuple[str, str] | None:
    """(lender, leaf) of a shared leaf; None for an own leaf."""
    lender, slash, own = leaf.rpartition("/")
    return (lender, own) if slash else None


# ------------------------------------------------------- the idle-period index

# A thread's head items (or, with concurrent-run detection off, its checkpoint records)
# carry `<day>#<shard>`: the UTC day of the write and a shard of the thread's name, the
# partition key of the sparse index retention Queries (docs/FORMAT.md, "The idle
# index"). 32 shards: see docs/SCALE.md for the per-partition write arithmetic.
IDLE_SHARDS = 32
_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
_DAY = 86_400


def idle_day(seconds: int) -> int:
    """The UTC day (days since the epoch) of a time in seconds."""
    return seconds // _DAY


def day_text(day: int) -> str:
    """A day as the index spells it: `20261201`."""
    return time.strftime("%Y%m%d", time.gmtime(day * _DAY))


def idle_partition(day: int, shard: int) -> str:
    return f"{day_text(day)}{SEPARATOR}{shard:02d}"


def idle_key(pk: str, seconds: int) -> str:
    """The index key of a thread's item (either of its partitions) written at `seconds`."""
    name = thread_of(pk)[-NAME_LENGTH:]
    return idle_partition(idle_day(seconds), _ALPHABET.find(name[:1]) % IDLE_SHARDS)


def day_of_idle_key(key: str) -> int:
    """The day an index key names (the inverse of `idle_key`'s day)."""
    stamp = time.strptime(key.partition(SEPARATOR)[0], "%Y%m%d")
    return calendar.timegm(stamp) // _DAY


# -------------------------------------------------------------------- objects


def object_key(owner: str, leaf: str) -> str:
    """An object of the partition `owner` (a thread name, or a Store or cache
    namespace's partition), which carries its deployment's prefix, so its objects share it."""
    return f"{owner}/{leaf}"


def owner_prefix(owner: str) -> str:
    """Key prefix shared by every object of one owner (a thread's, a namespace's)."""
    return f"{owner}/"


def deployment_of(owner: str) -> str:
    """The prefix of the deployment an owner of objects (a thread name, a memory
    partition) belongs to."""
    scope = memory_scope(owner)
    return scope[0] if scope is not None else owner[:-NAME_LENGTH]


def split_object_key(prefix: str, key: str) -> tuple[str, str] | None:
    """(thread name, leaf) of a key the deployment of this prefix could have written,
    else None."""
    if not key.startswith(prefix):
        return None
    name, slash, leaf = key[len(prefix) :].partition("/")
    if slash and NAME.fullmatch(name) and NAME.fullmatch(leaf):
        return prefix + name, leaf
    return None


def object_scope(key: str) -> str | None:
    """The prefix of the deployment that could have written an object key (as
    `scope_of` for partitions); None for a key no deployment writes."""
    thread_key, slash, leaf = key.rpartition("/")
    if not slash or not NAME.fullmatch(leaf):
        return None
    return scope_of(thread_key)


# ------------------------------------------------------------ upload journal
#
# An intent names objects a write is about to upload (its commit deletes it) or a change
# leaves unreferenced, in one of JOURNAL_SHARDS partitions `<prefix>~uploads#<shard>!`
# chosen by the owner's name; incremental garbage collection reads them (`ops/gc.py`,
# docs/RELIABILITY.md). The sort key is the intent's time in milliseconds (13 digits)
# and a nonce, so "older than the grace" is one key range. The `~` keeps `scope_of` and
# `memory_scope` from mapping these partitions to a thread or a memory space; the final
# `!` makes the Scans of thread records skip them. 32 shards: docs/SCALE.md.
JOURNAL_SHARDS = 32
JOURNAL_MARK = "~uploads#"


def journal_pk(prefix: str, shard: int) -> str:
    """Partition of one shard of a deployment's upload journal."""
    return f"{prefix}{JOURNAL_MARK}{shard:02d}{CONTROL_SUFFIX}"


def journal_pk_of(owner: str) -> str:
    """The journal shard an owner's intents go to (its deployment's, by the owner's
    hash): a thread's, or a Store or cache namespace's."""
    return journal_pk(deployment_of(owner), zlib.crc32(owner.encode()) % JOURNAL_SHARDS)


def prefix_of(pk: str) -> str | None:
    """The prefix of the deployment that writes partition `pk`, whatever it holds (a
    thread's records or control items, the deployment's records, a memory partition, a
    shard of its upload journal); None for a partition no deployment writes."""
    scopes = (scope_of(pk), (memory_scope(pk) or (None,))[0], journal_scope(pk))
    return next((scope for scope in scopes if scope is not None), None)


def journal_scope(pk: str) -> str | None:
    """The prefix of the deployment a shard of whose upload journal is `pk`, else None."""
    head, mark, shard = pk.rpartition(JOURNAL_MARK)
    if mark and len(shard) == 3 and shard[:2].isdigit() and shard[2] == CONTROL_SUFFIX:
        return head
    return None


def intent_sk(at_ms: int, nonce: str) -> str:
    return f"{at_ms:013d}{SEPARATOR}{nonce}"


def intent_time(sk: str) -> int:
    """When an intent was written (ms since the epoch), from its sort key."""
    return int(sk.partition(SEPARATOR)[0])


def intents_before(at_ms: int) -> str:
    """Every intent written before `at_ms` has a sort key below this one."""
    return f"{at_ms:013d}"


def write_ref(leaf: str, channel_tag: str) -> str:
    """How a writes record points at a write kept as an object: the leaf, then the keyed
    channel tag, so a reader can pick a channel's writes without fetching the others."""
    return f"{leaf}.{channel_tag}"


def split_write_ref(ref: str) -> tuple[str, str | None]:
    # From the right: a shared leaf starts with its lender's name, whose prefix may hold ".".
    leaf, dot, tag = ref.rpartition(".")
    return (leaf, tag or None) if dot else (ref, None)


# ------------------------------------------------------------- long-term memory
#
# The Store's items and the node cache's entries (`memory/`), beside threads in the same
# table and bucket. A space is "m" (the Store) or "c" (the node cache).
#
#   pk = <prefix><ns>~<space>!    sk = <key>    one item: its sealed payload, or the leaf
#                                               of its object; expiry in clear
#   pk = <prefix><ns>~<space>!    sk = ~        descendants mark (Store only): some
#                                               namespace below <ns> is or was in the
#                                               directory; no attributes
#   pk = <prefix>~<space>~dir!    sk = <ns>     directory: one entry per namespace that
#                                               has (or may have) items; sealed namespace
#
# `<ns>` and `<key>` are keyed hashes of the space and the namespace tuple (and of the
# key), 16 bytes as thread names. The `~` keeps `scope_of` from mapping these partitions
# to any thread (the name before `!` never ends in 22 name characters), so retention's
# thread sweep and garbage collection pass them by; the final `!` makes the Scans of
# thread records (this release's and 0.2.0's) skip them as they skip control items.
# Objects: `<prefix><ns>~<space>!/<leaf>` (`object_key` of the partition), which
# `split_object_key` refuses.

MEMORY_SPACES = ("m", "c")
STORE_SPACE, CACHE_SPACE = MEMORY_SPACES
MEMORY_MARK = "~"
DIRECTORY_MARK = "~dir"
# Sort key of a namespace partition's descendants mark: `~` sorts after every item's
# (URL-safe base64, "-" to "z") sort key; `ITEM_SK_RANGE` takes in every item, not the mark,
# and `SEARCH_SK_RANGE` every item and the mark, nothing of the indexes below.
DESCENDANTS_SK = "~"
ITEM_SK_RANGE = ("-", "{")
SEARCH_SK_RANGE = ("-", DESCENDANTS_SK)
#
# A Store namespace's partition also holds what lets a search read what it returns, not
# what the namespace holds (`memory/vector_index.py`, `memory/tokens.py`), above the mark:
#
#   sk = ~i                     the vector manifest: the sealed names of the namespace's
#                               vector segments (objects `<pk>/<leaf>`), and a generation
#   sk = ~v<ms>#<nonce>         a vector log entry: the sealed vectors of items written
#                               since the segments were built (or the keys of items deleted)
#   sk = ~x<token>#<ms>#<key>   a filter token: item <key>, written at <ms>, had the value
#                               of a declared field that <token> names (a keyed hash of
#                               field and value); no attributes
#   sk = ~x<field token>!       the tokens of a declared field are complete
MANIFEST_SK = "~i"
LOG_MARK = "~v"
TOKEN_MARK = "~x"
# The descendants mark, the manifest and the log, in one Query: nothing else sorts
# between them.
VECTOR_SK_RANGE = (DESCENDANTS_SK, "~w")


def memory_pk(prefix: str, ns_name: str, space: str) -> str:
    """Partition of one namespace's items in a space."""
    return f"{prefix}{ns_name}{MEMORY_MARK}{space}{CONTROL_SUFFIX}"


def directory_pk(prefix: str, space: str) -> str:
    """Partition of a space's namespace directory."""
    return f"{prefix}{MEMORY_MARK}{space}{DIRECTORY_MARK}{CONTROL_SUFFIX}"


def memory_scope(pk: str) -> tuple[str, str, str | None] | None:
    """(prefix, space, namespace name, or None for the directory) of a memory partition;
    None for any other partition."""
    if not pk.endswith(CONTROL_SUFFIX):
        return None
    head = pk[: -len(CONTROL_SUFFIX)]
    directory = head.endswith(DIRECTORY_MARK)
    if directory:
        head = head[: -len(DIRECTORY_MARK)]
    if len(head) < 2 or head[-2] != MEMORY_MARK or head[-1] not in MEMORY_SPACES:
        return None
    head, space = head[:-2], head[-1]
    if directory:
        return head, space, None
    if len(head) < NAME_LENGTH or not NAME.fullmatch(head[-NAME_LENGTH:]):
        return None
    return head[:-NAME_LENGTH], space, head[-NAME_LENGTH:]


def is_memory_pk(pk: str) -> bool:
    """A partition of the Store or the node cache (items or directory)."""
    return memory_scope(pk) is not None


def token_prefix(token: str) -> str:
    """Sort-key prefix of every filter token of one (field, value) in a partition."""
    return f"{TOKEN_MARK}{token}{SEPARATOR}"


def token_sk(token: str, at_ms: int, key: str) -> str:
    """A filter token of item `key` written at `at_ms`: newest last within its prefix."""
    return f"{token_prefix(token)}{at_ms:013d}{SEPARATOR}{key}"


def is_token_of(sk: str, keys: set[str]) -> bool:
    """Whether a filter token's sort key names one of the item sort keys `keys` (tokens
    only: a field's completeness item ends in `!`)."""
    return not sk.endswith("!") and sk.rpartition(SEPARATOR)[2] in keys


def token_item_key(sk: str) -> tuple[int, str]:
    """(write time in ms, item sort key) of a filter token's sort key."""
    _, at, key = sk.rsplit(SEPARATOR, 2)
    return int(at), key


def log_sk(at_ms: int, nonce: str) -> str:
    """A vector log entry's sort key: its write time, then a nonce."""
    return f"{LOG_MARK}{at_ms:013d}{SEPARATOR}{nonce}"


def is_log_sk(sk: str) -> bool:
    return sk.startswith(LOG_MARK)


def log_time(sk: str) -> tuple[int, str]:
    """(write time in ms, nonce) of a vector log entry's sort key."""
    at, _, nonce = sk[len(LOG_MARK) :].partition(SEPARATOR)
    return int(at), nonce


# ------------------------------------------------------------- the thread catalog
#
# Threads found by a value of a declared metadata field, and every thread of the
# deployment, without a Scan (`store/catalog.py`, docs/FORMAT.md "The thread catalog"):
#
#   pk = <prefix><token>~t!   sk = <thread>        a catalog entry: the thread has had the
#                                                  value <token> names (a keyed hash of the
#                                                  field and the value; of nothing: every
#                                                  thread); its id sealed, bound to both keys
#   pk = <thread>!            sk = cat#<token>     the entry's back-reference, keys only, so
#                                                  a thread's deletion finds its entries
#   pk = <prefix>#s3dynamo    sk = catalog#<token> the catalog of a field (of <token>, the
#                                                  keyed hash of the field alone) is complete
#
# The `~t` keeps `scope_of` and `memory_scope` from mapping an entry partition to a thread
# or a memory space (the name before `!` never ends in 22 name characters, nor in `~m` or
# `~c`), so no thread Scan, sweep or collection takes one for a thread's; the final `!`
# makes the Scans of thread records (this release's and earlier ones') skip it as a
# control partition. Older releases never read these partitions.
CATALOG_MARK = "~t"
CATALOG_REF = "cat#"
CATALOG_RECORD = "catalog#"


def catalog_pk(prefix: str, token: str) -> str:
    """Partition of the catalog entries of one value (or of every thread)."""
    return f"{prefix}{token}{CATALOG_MARK}{CONTROL_SUFFIX}"


def is_catalog_pk(pk: str) -> bool:
    return pk.endswith(CATALOG_MARK + CONTROL_SUFFIX)


def catalog_scope(pk: str) -> str | None:
    """The prefix of the deployment a catalog partition belongs to; None for another."""
    head = pk[: -len(CATALOG_MARK + CONTROL_SUFFIX)]
    ours = is_catalog_pk(pk) and len(head) >= NAME_LENGTH and NAME.fullmatch(head[-22:])
    return head[:-NAME_LENGTH] if ours else None


def catalog_token(pk: str) -> str:
    """The token a catalog entry partition is named by."""
    return pk[: -len(CATALOG_MARK + CONTROL_SUFFIX)][-NAME_LENGTH:]


def catalog_ref_sk(token: str) -> str:
    """Sort key, in a thread's control partition, of its entry under `token`."""
    return CATALOG_REF + token


def catalog_ref_token(sk: str) -> str | None:
    """The token a back-reference's sort key names; None for another control item."""
    return sk[len(CATALOG_REF) :] if sk.startswith(CATALOG_REF) else None


def catalog_record(field_token: str) -> str:
    """Name, in the deployment's partition, of the record saying a field's catalog is
    complete."""
    return CATALOG_RECORD + field_token


# A data subject's partitions (`~s!`) and the key table's: `format/subject_records.py`.
