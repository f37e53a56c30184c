"""Filter tokens: an equality filter on a field the Store declares (`filter_fields`) finds
its items without reading the namespace.

For each declared field whose value a put's value has (and whose value is a scalar or a
list of them), one token item, keys only, written before the item: `~x<token>#<ms>#<key>`,
where `<token>` is a keyed hash of (space, namespace, field, the value's canonical text)
and `<ms>` the item's write time, so a Query of one token's range newest first, with a
small limit, finds the newest items that had that value. The items are then read and
checked against the whole filter: a token whose item changed since (a later put deletes
the old one once committed, unless a crash came first) is passed over.

A namespace's tokens of a field are trusted once its completeness item
(`~x<field token>!`) says every item of it has them: written with the tokens of the items
a first search by that field found in the namespace (that search reads the namespace
once), and known to this process from then on. Every process writing the namespace must
declare the field (a process that does not writes no token for it).

What they reveal: which items of a namespace share a value of a declared field, and when
each was written; not the value, nor the field (docs/SECURITY.md, "Filter tokens").
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from langgraph.checkpoint.s3dynamo.blobs.steps import Batch as BatchStep
from langgraph.checkpoint.s3dynamo.blobs.steps import Steps
from langgraph.checkpoint.s3dynamo.equality import canonical
from langgraph.checkpoint.s3dynamo.format.layout import (
    TOKEN_MARK,
    token_item_key,
    token_prefix,
    token_sk,
)
from langgraph.checkpoint.s3dynamo.format.records import ItemKey
from langgraph.checkpoint.s3dynamo.memory import reads
from langgraph.checkpoint.s3dynamo.memory.names import Names
from langgraph.checkpoint.s3dynamo.memory.rows import Batch, Found, IndexItem, Namespace, index_item

# A token's range ends below this (after `#`, the 13-digit ms, `#`, the key).
TOP = "\uffff"


def at_path(value: Any, path: str) -> Any:
    """A filter key's value: the key itself if present, else a dotted path into nested
    dicts (as LangGraph's SQL stores read `"user.level"`)."""
    if not isinstance(value, dict):
        return None
    if path in value:
        return value[path]
    head, dot, rest = path.partition(".")
    return at_path(value.get(head), rest) if dot else None


def equality(filter_value: Any) -> Any:
    """The value an equality filter asks for (`x`, or `{"$eq": x}`), else a marker."""
    if isinstance(filter_value, dict):
        if set(filter_value) == {"$eq"}:
            return filter_value["$eq"]
        return NOT_EQUALITY
    return filter_value


NOT_EQUALITY = object()


class FilterTokens:
    """The filter tokens of one space's namespaces, for the fields it declares; each read
    and write a protocol (`blobs/steps.py`)."""

    def __init__(self, names: Names, fields: Sequence[str]) -> None:
        self.names = names
        self.fields = list(dict.fromkeys(fields))
        # (partition, field token) known to be complete: it never becomes incomplete.
        self._complete: set[tuple[str, str]] = set()
        self._lock = threading.Lock()

    def _token(self, namespace: Namespace, field: str, text: str) -> str:
        return self.names.namer.memory_token(self.names.space, namespace, field, text)

    def _field(self, namespace: Namespace, field: str) -> str:
        return self.names.namer.memory_token(self.names.space, namespace, field, "")

    # ------------------------------------------------------------ writing

    def keys_of(
        self, namespace: Namespace, pk: str, sk: str, at_ms: int, value: Any
    ) -> list[ItemKey]:
        """The token keys of one item's value."""
        out = []
        for field in self.fields:
            text = canonical(at_path(value, field)) if _has(value, field) else None
            if text is not None:
                out.append(ItemKey(pk, token_sk(self._token(namespace, field, text), at_ms, sk)))
        return out

    def entries(self, batch: Batch, values: Sequence[Any]) -> list[IndexItem]:
        """The tokens of a put's items (written before the items)."""
        return [
            IndexItem(key)
            for row, value in zip(batch.rows, values, strict=True)
            for key in self.keys_of(batch.namespace, batch.pk, row.key.sk, row.updated_ms, value)
        ]

    def stale(
        self, namespace: Namespace, replaced: Iterable[tuple[Found, Any]], keep: Iterable[IndexItem]
    ) -> list[ItemKey]:
        """The tokens of replaced values (item opened, its value) that the new ones do
        not repeat: deleted once the put is committed."""
        kept = {i.key for i in keep}
        old = [
            key
            for f, value in replaced
            for key in self.keys_of(namespace, f.row.key.pk, f.row.key.sk, f.updated_ms, value)
        ]
        return [k for k in old if k not in kept]

    # ------------------------------------------------------------ searching

    def usable(self, filter: Mapping[str, Any]) -> tuple[str, str] | None:
        """(field, canonical text) of a declared field the filter asks to equal a value a
        token can stand for; None when it names none."""
        for field in self.fields:
            if field in filter:
                wanted = equality(filter[field])
                text = None if wanted is NOT_EQUALITY else canonical(wanted)
                if text is not None:
                    return field, text
        return None

    def complete(self, namespace: Namespace, field: str) -> Steps[bool]:
        """Whether every item of the namespace has its tokens of `field` (one Query the
        first time this process asks; known from then on)."""
        pk, ftoken = self.names.pk(namespace), self._field(namespace, field)
        with self._lock:
            if (pk, ftoken) in self._complete:
                return True
        sk = _complete_sk(ftoken)
        found = yield from reads.index_items(pk, (sk, sk), consistent=True)
        if found:
            with self._lock:
                self._complete.add((pk, ftoken))
        return bool(found)

    def backfill(
        self, namespace: Namespace, field: str, found: Sequence[tuple[Found, Any]]
    ) -> Steps[None]:
        """Write the tokens of `field` of every item (opened, its value) a read of the whole
        namespace found, then the item saying the field's tokens are complete."""
        pk, ftoken = self.names.pk(namespace), self._field(namespace, field)
        only = FilterTokens(self.names, [field])
        puts = [
            IndexItem(k)
            for f, value in found
            for k in only.keys_of(namespace, pk, f.row.key.sk, f.updated_ms, value)
        ]
        yield BatchStep(puts=[index_item(i) for i in puts])
        yield BatchStep(puts=[index_item(IndexItem(ItemKey(pk, _complete_sk(ftoken))))])
        with self._lock:
            self._complete.add((pk, ftoken))

    def newest(
        self, namespace: Namespace, field: str, text: str, count: int, after: str | None
    ) -> Steps[list[tuple[int, str, str]]]:
        """Up to `count` tokens of one value, newest first, strictly older than the token
        `after`: (write time, item sort key, token sort key)."""
        prefix = token_prefix(self._token(namespace, field, text))
        found = yield from reads.index_items(
            self.names.pk(namespace),
            (prefix, prefix + TOP),
            descending=True,
            limit=count,
            after=after,
        )
        return [(*token_item_key(i.key.sk), i.key.sk) for i in found]

    @staticmethod
    def delete(keys: Sequence[ItemKey]) -> BatchStep:
        """The step deleting tokens (in full batches; none: no request)."""
        return BatchStep(deletes=keys)


def _complete_sk(field_token: str) -> str:
    return f"{TOKEN_MARK}{field_token}!"


def _has(value: Any, path: str) -> bool:
    """Whether `value` holds `path` at all (a None there is a value a filter can ask for)."""
    if not isinstance(value, dict):
        return False
    if path in value:
        return True
    head, dot, rest = path.partition(".")
    return dot != "" and _has(value.get(head), rest)
