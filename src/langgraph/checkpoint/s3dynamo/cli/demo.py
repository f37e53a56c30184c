"""`s3dynamo demo` (and `make demo`): a small support agent run the way users run it.

A deterministic agent (no LLM) with a 147 kB order history in its state and a
human-approval interrupt, on a moto server on 127.0.0.1 (offline; no AWS account):

1. this process builds its saver with `S3DynamoSaver.from_env()` (the demo sets the
   environment: table, bucket, sealing keys, naming secret, endpoint) and runs two
   turns with `ainvoke`;
2. a second Python process, with only that environment, resumes the same thread: it
   remembers both turns, then pauses on the refund interrupt;
3. this process resumes the interrupt;
4. every byte in DynamoDB and S3 is searched for the conversation's text (none is
   there: sealed), and the `s3dynamo` command line is run on what the demo stored:
   `stats`, `history`, `show`, `diff`, `verify`.

It needs LangGraph, moto server and pytest: the `cli` and `testing` extras and
`langgraph` (`make demo` installs a smaller set: see the Makefile). With `--keep` the
server stays up afterwards so the commands, or the README's Quickstart with keys of
one's own, can be tried there; it prints the two `export` lines another shell needs.
"""

from __future__ import annotations

import asyncio
import os
import random
import shlex
import signal
import subprocess
import sys
import time
from typing import Annotated, Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import var_child_runnable_config
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Command, interrupt
from typing_extensions import TypedDict

from langgraph.checkpoint.s3dynamo import S3DynamoSaver

THREAD = "customer-42"
# What `--keep` prints for another shell, on two lines: what reaches the server (with a
# table, bucket and keys of one's own, as the README's s3dynamo.env keeps them), then the
# demo's own table, bucket and keys, to read what it stored.
REACH = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_S3",
    "AWS_ENDPOINT_URL_DYNAMODB",
)
DEMO_DATA = ("S3DYNAMO_TABLE", "S3DYNAMO_BUCKET", "S3DYNAMO_KEYS", "S3DYNAMO_SECRET")
SECRET_TEXT = b"blue kettle"
SECOND = "--second-process"
INSTALL = (
    'install what it needs with: pip install "langgraph-checkpoint-s3dynamo[cli,testing]" '
    'langgraph (from a clone: pip install ".[cli,testing]" langgraph, or make demo)'
)


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    order: dict[str, Any]
    refund_approved: bool


def build_graph(saver: S3DynamoSaver) -> Any:
    def load_order() -> dict[str, Any]:
        """The customer's order history: 147 kB as JSON, far over inline_max, so it lives
        in S3, stored once however many checkpoints point at it."""
        rng = random.Random(1001)
        skus = ["kettle-blue", "mug-set", "tea-sampler", "descaler", "filter-pack"]
        return {
            "customer": THREAD,
            "lines": [
                {
                    "sku": rng.choice(skus),
                    "qty": rng.randint(1, 4),
                    "price": round(rng.uniform(3, 90), 2),
                    "ordered": f"2026-{rng.randint(1, 11):02}-{rng.randint(1, 28):02}",
                }
                for _ in range(2000)
            ],
        }

    def agent(state: State) -> dict[str, Any]:
        asked = [str(m.content) for m in state["messages"] if m.type == "human"]
        reply = f"(turn {len(asked)}, pid {os.getpid()}) You have told me: " + "; ".join(asked)
        update: dict[str, Any] = {"messages": [AIMessage(reply)]}
        if not state.get("order"):
            update["order"] = load_order()
        return update

    def route(state: State) -> str:
        return "approve" if "refund" in str(state["messages"][-1].content).lower() else "agent"

    def approve(state: State, config: RunnableConfig) -> dict[str, Any]:
        # interrupt() reads the run's config from the context, which LangGraph cannot set
        # for a node of an async run before Python 3.11 (asyncio tasks take no context
        # there). This sync node runs in a copy of the context, so it seeds it here.
        if var_child_runnable_config.get() is None:
            var_child_runnable_config.set(config)
        decision = interrupt({"question": "Approve a refund for this customer?"})
        verdict = "approved" if decision == "yes" else "declined"
        return {
            "refund_approved": decision == "yes",
            "messages": [AIMessage(f"A supervisor {verdict} your refund.")],
        }

    g = StateGraph(State)
    g.add_node("agent", agent)
    g.add_node("approve", approve)
    g.add_conditional_edges(START, route, ["agent", "approve"])
    g.add_edge("agent", END)
    g.add_edge("approve", END)
    return g.compile(checkpointer=saver)


async def say(graph: Any, text: str) -> Any:
    config = {"configurable": {"thread_id": THREAD}}
    out = await graph.ainvoke({"messages": [HumanMessage(text)]}, config)
    print(f"  user:  {text}")
    if "__interrupt__" in out:
        print(f"  paused: {out['__interrupt__'][0].value['question']}")
    else:
        print(f"  agent: {out['messages'][-1].content}")
    return out


async def first_process() -> None:
    graph = build_graph(S3DynamoSaver.from_env())
    print(f"== process {os.getpid()}: two turns (S3DynamoSaver.from_env(), ainvoke)")
    await say(graph, "Hi, my order #1001 is late")
    await say(graph, "It was a blue kettle")


async def second_process() -> None:
    graph = build_graph(S3DynamoSaver.from_env())
    print(f"== process {os.getpid()} (a new Python process): the same thread, resumed")
    await say(graph, "Any update?")
    await say(graph, "I want a refund")


async def resume_interrupt() -> None:
    graph = build_graph(S3DynamoSaver.from_env())
    config = {"configurable": {"thread_id": THREAD}}
    print(f"== process {os.getpid()}: a supervisor answers the interrupt")
    state = await graph.aget_state(config)
    print(f"  waiting at: {', '.join(state.next)}")
    out = await graph.ainvoke(Command(resume="yes"), config)
    print(f"  agent: {out['messages'][-1].content}")


def cli_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "langgraph.checkpoint.s3dynamo.cli", *args]


def run_cli(*args: str) -> None:
    print(f"\n$ s3dynamo {shlex.join(args)}")
    sys.stdout.flush()
    env = {**os.environ, "COLUMNS": os.environ.get("COLUMNS", "80")}
    subprocess.run(cli_command(*args), env=env, check=False)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if SECOND in argv:
        asyncio.run(second_process())
        return 0
    keep = "--keep" in argv
    # SIGTERM unwinds like Ctrl-C, so the moto server stops with the demo.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        import moto.server  # noqa: F401

        from langgraph.checkpoint.s3dynamo.testing import Sandbox, moto_server
    except ImportError as exc:
        sys.stderr.write(f"s3dynamo demo: needs {exc.name}; {INSTALL}\n")
        return 2

    with moto_server() as url:
        sandbox = Sandbox(endpoint_url=url)
        for name, value in sandbox.environment().items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        sandbox.setup()
        print(f"moto server on {url}: table and bucket {sandbox.table}, sealing on\n")
        asyncio.run(first_process())
        sys.stdout.flush()
        subprocess.run(
            [sys.executable, "-m", "langgraph.checkpoint.s3dynamo.cli.demo", SECOND], check=True
        )
        asyncio.run(resume_interrupt())
        leaked = at_rest(sandbox.stored_bytes())
        for args in (("stats", THREAD), ("history", THREAD), ("show", THREAD), ("diff", THREAD)):
            run_cli(*args)
        run_cli("verify")
        afterwards(sandbox.environment(), keep)
    # The demo fails if anything it said is at rest is readable there.
    return 1 if leaked else 0


def at_rest(stored: list[bytes]) -> int:
    """Every stored byte searched for the conversation's text and the thread id: how
    many items and objects held either (none, sealed)."""
    print("\n== At rest: every DynamoDB item and S3 object, every byte")
    leaked = 0
    for needle in (SECRET_TEXT, THREAD.encode()):
        hits = sum(needle in blob for blob in stored)
        leaked += hits
        print(f"  {needle.decode()!r} found in {hits} of {len(stored)} items and objects")
    return leaked


def afterwards(env: dict[str, str | None], keep: bool) -> None:
    """With `--keep`, what reaches the server from another shell, then wait for Ctrl-C;
    else that the server stops with the demo."""
    if not keep:
        print(
            "\nThe moto server stops with the demo. `s3dynamo demo --keep` leaves it "
            "running to try the commands by hand."
        )
        return

    def exports(names: tuple[str, ...]) -> str:
        return " ".join(f"{k}={shlex.quote(env[k] or '')}" for k in names if env.get(k))

    print(
        "\nThe server stays up until Ctrl-C. In another shell, this reaches it (then "
        "your own table, bucket and keys work there, as in the README's s3dynamo.env):"
    )
    print(f"  export {exports(REACH)}")
    print("and this reads what the demo stored, with its own table, bucket and keys:")
    print(f"  export {exports(DEMO_DATA)}")
    print(f"  s3dynamo threads; s3dynamo history {THREAD}; s3dynamo show {THREAD}")
    sys.stdout.flush()
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    raise SystemExit(main())
