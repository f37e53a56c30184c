"""Growing values stored as deltas against the channel's last full version: a long chat
reads back exactly as LangGraph's own saver gives it, through copy, rotation and
re-encryption, prune and garbage collection, and a read never needs a second wave."""

from __future__ import annotations

import random
from collections import Counter
from datetime import timedelta
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from langgraph.checkpoint.s3dynamo.blobs.objects import ObjectIO
from langgraph.checkpoint.s3dynamo.errors import InvalidConfigError
from langgraph.checkpoint.s3dynamo.format.records import record_item
from langgraph.checkpoint.s3dynamo.table import item_size
from tests.support.chats import WORDS, _config, chat, graph, view
from tests.support.savers import MemorySaver, delta_values, memory_saver

SECRET = b"naming secret, 16+ bytes"


def _deltas(saver: MemorySaver, tid: str) -> int:
    """How many checkpoints of a thread hold a value stored as a delta."""
    return len({(s.entry.ns, s.entry.checkpoint_id) for s in delta_values(saver, tid)})


@pytest.mark.slow
def test_a_long_chat_is_mostly_deltas_and_reads_back_exactly() -> None:
    saver = memory_saver(secret=SECRET)
    ours, theirs = chat(saver, "t", 200), chat(InMemorySaver(), "t", 200)
    # 200 turns change the message list 400 times; a full copy is written only when the
    # delta against the last one outgrows inline_max.
    assert _deltas(saver, "t") > 350 and len(saver.objects.blobs) < 40
    expected = theirs.get_state(_config("t")).values
    assert ours.get_state(_config("t")).values == expected
    # A process that never saw the thread reads it the same, in one wave.
    cold = memory_saver(saver.index, saver.objects, keys=saver.parts.sealer.keyring, secret=SECRET)
    waves: list[int] = []
    real_fetch = ObjectIO.fetch

    def counting(objects: ObjectIO, needed: Any, **kw: Any) -> dict[str, bytes]:
        waves.append(len(needed))
        return real_fetch(objects, needed, **kw)

    ObjectIO.fetch = counting  # type: ignore[method-assign]
    try:
        assert graph(cold).get_state(_config("t")).values == expected
        assert len(waves) == 1
        # Every checkpoint of the history reads back as LangGraph's own saver has it.
        got = [
            len(s.values.get("messages", ())) for s in graph(cold).get_state_history(_config("t"))
        ]
        want = [len(s.values.get("messages", ())) for s in theirs.get_state_history(_config("t"))]
        assert got == want
    finally:
        ObjectIO.fetch = real_fetch  # type: ignore[method-assign]


def test_deltas_survive_copy_rotation_prune_and_gc() -> None:
    old_key, new_key = {"k1": b"1" * 32}, {"k2": b"2" * 32}
    saver = memory_saver(keys=old_key, secret=SECRET)
    chat(saver, "t", 60)
    expected = view(chat(InMemorySaver(), "t", 60), "t")
    ports = (saver.index, saver.objects)

    saver.copy_thread("t", "copy")
    rotated = memory_saver(*ports, keys={**new_key, **old_key}, secret=SECRET)
    assert rotated.ops.reencrypt() > 0
    only_new = memory_saver(*ports, keys=new_key, secret=SECRET)
    assert view(graph(only_new), "t") == expected
    assert view(graph(only_new), "copy") == expected

    plan = only_new.ops.plan_garbage_collection(grace=timedelta(0))
    assert plan.execute() == 0  # every base is referenced
    only_new.prune(["t"], strategy="keep_latest")
    latest = graph(only_new).get_state(_config("t"))
    assert [m.content for m in latest.values["messages"]] == expected[0][0]
    only_new.ops.plan_garbage_collection(grace=timedelta(0)).execute()
    fresh = memory_saver(*ports, keys=new_key, secret=SECRET)
    assert graph(fresh).get_state(_config("t")).values == latest.values
    # The chat goes on after all of that, on deltas again.
    g = graph(fresh)
    g.invoke({"messages": [HumanMessage("one more", id="h-last")]}, _config("copy"))
    assert len(g.get_state(_config("copy")).values["messages"]) == 122


def test_full_history_of_a_delta_channel_thread_reads_the_index_a_fixed_number_of_times() -> None:
    """Each snapshot's DeltaChannel history walks to the seed; the ancestors a walk opened
    are kept, so the index is read about twice however long the history is."""
    from tests.support.graphs import converse, delta_graph

    for turns in (10, 40):
        saver = memory_saver(secret=SECRET)
        g = delta_graph(saver)
        converse(g, "t", turns)
        # The same deployment in another process.
        fresh = memory_saver(
            saver.index, saver.objects, keys=saver.parts.sealer.keyring, secret=SECRET
        )
        saver.index.calls.clear()
        history = list(delta_graph(fresh).get_state_history(_config("t")))
        assert len(history) == 3 * turns
        assert saver.index.calls == {"Query": 2}, turns
        ours = [s.values for s in history]
        theirs = delta_graph(InMemorySaver())
        converse(theirs, "t", turns)
        assert ours == [s.values for s in theirs.get_state_history(_config("t"))]


def _varied(seed: int, words: int) -> str:
    """Prose that compresses like real text (about 2 to 3 times), unlike `prose`."""
    rng = random.Random(seed)
    vocabulary = ["".join(rng.choice("etaoinshrdlucmfwyp") for _ in range(n)) for n in (3, 5, 7)]
    vocabulary += [f"{w}{rng.randrange(1000)}" for w in WORDS]
    return " ".join(rng.choice(vocabulary) for _ in range(words))


def _modelled_write_units(saver: MemorySaver, tid: str) -> int:
    """What writing the thread's checkpoints cost, as DynamoDB and S3 bill it: a record
    put in a transaction is 2 write units per started KB, and an S3 PUT costs what 8 write
    units do (see placement.DEFAULT_DELTA_MAX)."""
    store = saver.store
    units = sum(2 * -(-item_size(record_item(e.record)) // 1024) for e in store.entries(tid))
    return units + 8 * len(saver.objects.blobs)


def test_delta_max_trades_s3_puts_against_write_units() -> None:
    def run(**settings: Any) -> tuple[MemorySaver, list[int]]:
        saver = memory_saver(secret=SECRET, **settings)
        g = graph(saver)
        for i in range(30):
            text = _varied(i, 150)
            g.invoke({"messages": [HumanMessage(text, id=f"h-{i}")]}, _config("t"))
        deltas = [len(s.blob or b"") for s in delta_values(saver, "t")]
        return saver, deltas

    default, deltas = run()
    assert (
        len(deltas) > 30
        and max(deltas) <= default.settings.delta_max <= default.settings.inline_max
    )
    cheaper, small_deltas = run(delta_max=3072)
    assert len(small_deltas) > 30 and max(small_deltas) <= 3072 < max(deltas)
    # A lower delta_max writes more full versions (S3 PUTs, latency) and carries less
    # in each record: fewer write units in all.
    assert len(cheaper.objects.blobs) > len(default.objects.blobs)
    assert _modelled_write_units(cheaper, "t") < 0.95 * _modelled_write_units(default, "t")
    # Both read back the same.
    assert (
        graph(cheaper).get_state(_config("t")).values
        == graph(default).get_state(_config("t")).values
    )


def test_full_history_of_a_delta_channel_thread_opens_each_write_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Kept ancestors hold their writes opened: a full history read decrypts and
    decompresses each stored write once (`Codec.write_data`), though the listing returns
    it as a pending write and every snapshot's walk passes it, and deserializes only the
    writes returned, each walk and each tuple into new objects."""
    from langgraph.checkpoint.s3dynamo.keys.codec import Codec
    from langgraph.checkpoint.s3dynamo.keys.identities import WriteAt
    from tests.support.graphs import converse, delta_graph

    saver = memory_saver(secret=SECRET)
    converse(delta_graph(saver), "t", 30)
    fresh = memory_saver(saver.index, saver.objects, keys=saver.parts.sealer.keyring, secret=SECRET)
    opened: list[tuple[str, str, int]] = []
    real = Codec.write_data

    def counting(codec: Codec, at: WriteAt, *a: Any) -> Any:
        opened.append((at.checkpoint_id, at.task_id, at.idx))
        return real(codec, at, *a)

    monkeypatch.setattr(Codec, "write_data", counting)
    walks: list[Any] = []
    real_history = fresh.get_delta_channel_history

    def keep(*args: Any, **kwargs: Any) -> Any:
        walks.append(real_history(*args, **kwargs))
        return walks[-1]

    monkeypatch.setattr(fresh, "get_delta_channel_history", keep)
    history = list(delta_graph(fresh).get_state_history(_config("t")))
    stored = sum(len(w.writes) for e in fresh.store.entries("t") for w in e.writes)
    assert len(history) == 90 and len(walks) > 80
    assert max(Counter(opened).values()) == 1 and len(opened) == stored
    # No two walks share a value object.
    seen: set[int] = set()
    for walk in walks:
        for _, _, value in walk["messages"]["writes"]:
            assert id(value) not in seen
        seen |= {id(v) for _, _, v in walk["messages"]["writes"]}


def test_delta_max_zero_stores_whole_values_and_a_negative_one_is_refused() -> None:
    saver = memory_saver(delta_max=0)
    g = graph(saver)
    for i in range(6):
        g.invoke({"messages": [HumanMessage(_varied(i, 150), id=f"h-{i}")]}, _config("t"))
    assert not delta_values(saver, "t")
    assert len(g.get_state(_config("t")).values["messages"]) == 12
    with pytest.raises(InvalidConfigError, match="delta_max must be >= 0 bytes"):
        memory_saver(delta_max=-1)
