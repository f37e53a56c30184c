"""The thread catalog's items, in plain typed values: a catalog entry, its back-reference
in the thread's control partition, and the record saying a field's catalog is complete.
No I/O; where each lives is `layout.py`'s, how each is written `store/format.py`'s.

A catalog entry says that a thread has had a value of a declared metadata field (or, under
the token of nothing, that the thread exists): partition `<prefix><token>~t!`, sort key
the thread's name, holding the thread id sealed and bound to both keys, so an entry moved
to another value or another thread does not open. Its back-reference, keys only, lets the
thread's deletion find the entry without a Scan. What the entries reveal:
docs/SECURITY.md, "The thread catalog".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from langgraph.checkpoint.s3dynamo.equality import canonical
from langgraph.checkpoint.s3dynamo.errors import IntegrityError, InvalidConfigError
from langgraph.checkpoint.s3dynamo.format.layout import (
    NAME_LENGTH,
    catalog_pk,
    catalog_record,
    catalog_ref_sk,
    catalog_ref_token,
    catalog_token,
    control_pk,
    thread_of,
)
from langgraph.checkpoint.s3dynamo.format.records import ControlRecord
from langgraph.checkpoint.s3dynamo.table import Item, ItemKey, Value, key_of, keyed

# The fields LangGraph's server adds to every checkpoint's metadata, which the word
# `langgraph` stands for among the declared fields (`Settings.catalog_fields`).
LANGGRAPH_FIELDS = ("user_id", "assistant_id", "graph_id")
LANGGRAPH_WORD = "langgraph"
# At most this many declared fields: a thread's first put writes two items per field (and
# two for the deployment's list) in its commit, which holds at most 100.
MAX_FIELDS = 20
# Attribute of an entry: the thread id, sealed.
THREAD = "c"


class CatalogEntry(NamedTuple):
    """One entry: `key` is (the value's partition, the thread's name); `sealed` the thread
    id sealed for those keys (`Codec.seal_catalog`)."""

    key: ItemKey
    sealed: bytes

    @property
    def thread_name(self) -> str:
        return self.key.sk

    @property
    def token(self) -> str:
        return catalog_token(self.key.pk)

    @property
    def ref(self) -> ItemKey:
        return ref_key(self.thread_name, self.token)


def entry_key(thread_name: str, token: str) -> ItemKey:
    """Where a thread's entry under `token` lives, in the thread's deployment."""
    return ItemKey(catalog_pk(thread_name[:-NAME_LENGTH], token), thread_name)


def ref_key(thread_name: str, token: str) -> ItemKey:
    return ItemKey(control_pk(thread_name), catalog_ref_sk(token))


def entry_of_ref(ref: ItemKey) -> ItemKey | None:
    """The entry a back-reference points at; None for another control item."""
    token = catalog_ref_token(ref.sk)
    return None if token is None else entry_key(thread_of(ref.pk), token)


def entry_items(entries: Iterable[CatalogEntry]) -> list[Item]:
    """Each entry and its back-reference, as the items they are stored as."""
    out: list[Item] = []
    for entry in entries:
        out.append(keyed(entry.key, **{THREAD: entry.sealed}))
        out.append(keyed(entry.ref))
    return out


def entry_from(item: Mapping[str, Value]) -> CatalogEntry:
    """The entry an item holds; one without its sealed thread id is an `IntegrityError`."""
    key = key_of(item)
    sealed = item.get(THREAD)
    if not isinstance(sealed, bytes):
        raise IntegrityError(
            f"catalog entry {key.sk!r} of partition {key.pk!r} holds no sealed thread id; it "
            "was altered or written by something else"
        )
    return CatalogEntry(key, sealed)


def complete_record(field_token: str) -> ControlRecord:
    """The deployment record saying every thread has its entries under a field's values
    (`field_token`: the field's own token)."""
    return ControlRecord(catalog_record(field_token), {})


# ------------------------------------------------------------------ declared values


def declared_fields(fields: Iterable[str]) -> tuple[str, ...]:
    """The fields as declared, the word `langgraph` standing for LangGraph's server's
    three, each once, in the order given."""
    out: list[str] = []
    for field in fields:
        out += LANGGRAPH_FIELDS if field == LANGGRAPH_WORD else (field,)
    return tuple(dict.fromkeys(out))


def refuse_misspelled_fields(name: str, fields: Iterable[str]) -> None:
    """`InvalidConfigError` for a field that is `langgraph`, or one of LangGraph's
    server's fields, spelled in another case or with `-` for `_` (`LangGraph`,
    `User_ID`): metadata keys are case-sensitive, so it would file under a key no
    checkpoint has. Did you mean names the one meant."""
    for one in fields:
        for known in (LANGGRAPH_WORD, *LANGGRAPH_FIELDS):
            if one != known and one.lower().replace("-", "_") == known:
                what = (
                    "the word for LangGraph's server's user_id, assistant_id and graph_id"
                    if known == LANGGRAPH_WORD
                    else "the metadata key LangGraph's server writes"
                )
                raise InvalidConfigError(
                    f"{name}: got {one!r}; did you mean {known!r} ({what})? Metadata keys are "
                    f"case-sensitive: {one!r} would file threads under a key no checkpoint has"
                )


def declared_values(metadata: Mapping[str, Any] | None, fields: Iterable[str]) -> dict[str, str]:
    """Field -> canonical text of each declared field the metadata holds a value of that a
    token can stand for (a scalar or a list of them: `equality.canonical`); a dict, None
    or an absent field has none."""
    out: dict[str, str] = {}
    if not isinstance(metadata, Mapping):
        return out
    for field in fields:
        if field in metadata and (text := canonical(metadata[field])) is not None:
            out[field] = text
    return out
