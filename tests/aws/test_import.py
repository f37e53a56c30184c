"""Importing from AWS's DynamoDBSaver (langgraph-checkpoint-aws), the saver most users
move from, on the same AWS endpoints the tier runs on: with its S3 offload bucket and a
value large enough to be offloaded, every tuple and every state reads back as the
source's, and the thread goes on here."""

from __future__ import annotations

import os

from langchain_core.messages import HumanMessage

from langgraph.checkpoint.s3dynamo import S3DynamoSaver
from tests.support.graphs import converse, delta_graph
from tests.support.imports import dynamodb_saver, same_order, states
from tests.support.savers import Clients, make_saver
from tests.support.scenarios import SCENARIOS, Runner, chat_graph


def test_a_dynamodb_saver_thread_reads_back_whole(clients: Clients) -> None:
    source = dynamodb_saver(clients)
    for name in ("memory", "fork", "interrupt", "subgraph"):
        SCENARIOS[name](source, Runner("sync"), name)
    converse(delta_graph(source, 4), "delta", 6)
    # Over DynamoDBSaver's 350 KB offload threshold: this checkpoint lives in its bucket.
    big = os.urandom(300_000).hex()
    chat_graph(source).invoke(
        {"messages": [HumanMessage(big, id="big")]}, {"configurable": {"thread_id": "big"}}
    )

    saver: S3DynamoSaver = make_saver(clients)
    saver.setup()
    result = saver.ops.import_threads(source).result()
    assert result["conflicts"] == []
    for tid in ("memory", "fork", "interrupt", "subgraph", "delta", "big"):
        assert same_order(saver, tid) == same_order(source, tid), tid
    assert states(chat_graph(saver), "big") == states(chat_graph(source), "big")
    converse(delta_graph(saver, 4), "delta", 2, start=6)
    converse(delta_graph(source, 4), "delta", 2, start=6)
    config = {"configurable": {"thread_id": "delta"}}
    assert delta_graph(saver, 4).get_state(config).values == (
        delta_graph(source, 4).get_state(config).values
    )
