"""Which checkpoint a run continues as the latest: what concurrent-run detection holds a
commit to.

Each namespace of a thread has a head, a control item naming its newest checkpoint,
and every `put` moves it in the same transaction as the checkpoint record. A put is
*held* (the transaction applies only if the head still names the put's parent) exactly
when the run making it continues that parent as the namespace's latest, as LangGraph
told the saver:

- the run loaded the namespace with ``get_tuple`` and no ``checkpoint_id`` ("the
  latest": how every LangGraph run, resume and ``update_state`` without an id starts)
  and got that parent (or found the namespace empty, for a parent of None); or
- the parent is the checkpoint the same run committed last in that namespace.

A load by id (``get_tuple`` with a ``checkpoint_id``: a replay, an ``update_state`` or
``__copy__`` fork, a subgraph resolved through ``checkpoint_map``) or by position
(``list``: how a replaying parent loads a subgraph's state from before the replay point)
says the run does not continue the latest, and clears the namespace's entry. Any other
put moves the head without condition.

The record is kept per execution context (`contextvars`), so a put sees what its own run
loaded and nothing another run did. Where "the run" lives, why a single writer is never
refused and why two runs continuing the same checkpoint are still told apart:
docs/RELIABILITY.md, "The run record in full".
"""

from __future__ import annotations

from contextvars import ContextVar

# A namespace found empty by a "latest" load: its first put has no parent.
EMPTY = ""
# Namespaces one context remembers; forgetting one only makes a put unheld.
LIMIT = 256

Key = tuple[int, str, str]  # (store id, thread name, namespace name)
# What a run continues in a namespace: the checkpoint it holds as the latest, and those
# it committed there since it loaded it, oldest first (what a refusal says is visible).
Continued = tuple[str, tuple[str, ...]]

_CONTINUED: ContextVar[dict[Key, Continued] | None] = ContextVar("s3dynamo_continued", default=None)


def loaded(key: Key, latest_id: str | None) -> None:
    """A load of the namespace by this context's run: `latest_id` is the checkpoint it
    got as the latest (`EMPTY` for an empty namespace), or None for a load by id or by
    position, which does not continue the latest."""
    record = dict(_CONTINUED.get() or {})
    record.pop(key, None)
    if latest_id is not None:
        record[key] = (latest_id, ())
        while len(record) > LIMIT:
            del record[next(iter(record))]
    _CONTINUED.set(record)


def loaded_thread(store: int, thread_name: str) -> None:
    """A load of every namespace of a thread by position (``list`` without a namespace)."""
    old = _CONTINUED.get()
    if old and any(k[0] == store and k[1] == thread_name for k in old):
        _CONTINUED.set({k: v for k, v in old.items() if k[:2] != (store, thread_name)})


def continues_latest(key: Key, parent_id: str | None) -> bool:
    """Whether a put on `parent_id` continues what this run holds as the namespace's
    latest: such a put is held to the head."""
    record = _CONTINUED.get()
    held = record.get(key) if record is not None else None
    return held is not None and held[0] == (parent_id or EMPTY)


def committed_by(key: Key) -> tuple[str, ...]:
    """The checkpoints this context's run committed in the namespace since it loaded
    it, oldest first: what of a refused run is visible."""
    record = _CONTINUED.get()
    held = record.get(key) if record is not None else None
    return held[1] if held is not None else ()


def committed(key: Key, checkpoint_id: str) -> None:
    """The run committed `checkpoint_id`: its next put there continues it. In place, so
    the run's other copies of this context see it; nothing if this context never loaded
    (direct use of `put` alone holds nothing)."""
    record = _CONTINUED.get()
    if record is not None:
        earlier = record.pop(key, ("", ()))[1]
        record[key] = (checkpoint_id, (*earlier, checkpoint_id))
        while len(record) > LIMIT:
            del record[next(iter(record))]
