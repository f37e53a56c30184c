"""The cold-start benchmark's side-by-side Lambda handler (`cold_start.py --package`).

Packaged as `app.py` by scripts/lambda_package.sh, with s3dynamo (primed at module scope,
as the example is, unless COLD_PRIME=0) or with AWS's DynamoDBSaver and its S3 offload,
whichever the package carries; with COLD_FLOOR=1, the botocore floor instead (botocore's
import and one DynamoDB client, InMemorySaver keeping the state). At module scope, the
init phase: the saver and cold_start.py's two-node `add_messages` graph. Each invocation:
`{"thread_id": ..., "message": ...}` -> the graph's last reply.
"""

from __future__ import annotations

import importlib.util
import os
from typing import Annotated, Any

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict

if os.environ.get("COLD_FLOOR") == "1":
    # The floor row: the least a saver on botocore pays (its import and one DynamoDB
    # client, no request), with LangGraph's InMemorySaver keeping the state.
    import botocore.session
    from langgraph.checkpoint.memory import InMemorySaver

    _client = botocore.session.get_session().create_client("dynamodb")
    _saver: Any = InMemorySaver()
elif importlib.util.find_spec("langgraph.checkpoint.s3dynamo") is not None:
    from langgraph.checkpoint.s3dynamo import S3DynamoSaver

    _saver = S3DynamoSaver.from_env()
    # COLD_PRIME=0 leaves it to the first request (a row of cold_start.py --package).
    if os.environ.get("COLD_PRIME", "1") == "1":
        _saver.prime()
else:
    from langgraph_checkpoint_aws import DynamoDBSaver

    _saver = DynamoDBSaver(
        table_name=os.environ.get("LGAWS_TABLE", "cold-lgaws"),
        region_name=os.environ.get("AWS_REGION"),
        s3_offload_config={"bucket_name": os.environ.get("LGAWS_BUCKET", "cold-start-lgaws")},
    )


class State(TypedDict):
    messages: Annotated[list[Any], add_messages]


def understand(state: State) -> dict[str, Any]:
    return {"messages": [AIMessage(f"heard {len(state['messages'])} message(s)")]}


def answer(state: State) -> dict[str, Any]:
    return {"messages": [AIMessage(f"answer to: {state['messages'][0].content}")]}


_builder = StateGraph(State)
_builder.add_node("understand", understand)
_builder.add_node("answer", answer)
_builder.add_edge(START, "understand")
_builder.add_edge("understand", "answer")
_builder.add_edge("answer", END)
_graph = _builder.compile(checkpointer=_saver)


def get_graph() -> Any:
    return _graph


def handler(event: dict[str, Any], context: Any = None) -> dict[str, Any]:
    config = {"configurable": {"thread_id": event["thread_id"]}}
    reply = _graph.invoke({"messages": [HumanMessage(event["message"])]}, config)
    return {"ok": True, "reply": reply["messages"][-1].content}
