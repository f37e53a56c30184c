"""The Lambda cold path: a fresh interpreter imports, builds a graph, serves one request.

    python benchmarks/cold_start.py --runs 15   # prints the medians; run.py calls measure()
    python benchmarks/cold_start.py --package --runs 11   # the shipped Lambda zips

Each sample is a new `python cold_start.py --child KIND` process. The handler kinds do
what a Lambda handler module does: import LangGraph and the saver, compile a two-node
`add_messages` graph with the saver, then invoke it once on a new thread. The child
imports nothing of the AWS SDK itself: each saver imports what it uses, when it uses it
(DynamoDBSaver imports boto3 with its package; s3dynamo imports botocore when it builds
its first client). The AWS savers talk to moto server over HTTP on 127.0.0.1 (the
package's `moto_serve.py`, one request at a time; started here, stopped at the end), so
moto's own import is in another process and not in the figures. The kinds:

- `InMemorySaver`: the baseline handler.
- `botocore floor`: the InMemorySaver handler that also, right after LangGraph's import,
  runs `import botocore.session` and builds ONE DynamoDB client
  (`botocore.session.get_session().create_client("dynamodb", region_name=...,
  endpoint_url=<moto server>)`, same environment as the others) and sends no request:
  the least any saver built on botocore must pay. Its `saver import` column holds that
  import and that client.
- `s3dynamo` (sealed, as production runs it) and `DynamoDBSaver` (with its S3 offload).

Times (ms, median of the runs):

- total: from just before the parent spawns the child to the first reply in the child
- interpreter: spawn to the first line of this file (Python start-up, `site`)
- imports: LangGraph, then the saver's module (each also timed apart)
- build: the saver and the compiled graph
- first request: the first `invoke`, with whatever the saver left for first use

`saver part` is everything after LangGraph's import (saver import, build, first
request): what a handler adds over the baseline is its `saver part` minus the
baseline's, which keeps the noise of the large, shared LangGraph import out of the
difference. Three timers split it further, wherever the work happens: `sdk_import`, wall
time importing boto3/botocore modules (a finder on `sys.meta_path` times each outermost
one); `clients`, wall time inside botocore's `create_client`; `requests`, wall time inside
API calls (moto server's answer included; summed over threads).

From the same round-robin runs (each a difference of medians, like `over InMemorySaver`):

- floor: median `saver part` of `botocore floor` minus InMemorySaver's.
- beyond the floor (per AWS saver): its median `saver part` minus `botocore floor`'s,
  what the saver costs over the least a botocore saver can cost.
- ratio: s3dynamo's beyond-floor figure over DynamoDBSaver's. Two forms are given: the
  ratio of medians (the two figures above divided), and the median of per-round ratios
  (in each round r, (s3dynamo_r - floor child_r) / (DynamoDBSaver_r - floor child_r) of
  the `saver part`s of that round's children; the median over the rounds).

Package import beyond its dependencies: a separate child kind (`package import`, also in
the round robin) imports the package's dependencies first (`langgraph.checkpoint.base`,
`langgraph.checkpoint.serde.jsonplus`, `zstandard`,
`cryptography.hazmat.primitives.ciphers.aead`; not botocore, which the package must not
import at import time), then times `import langgraph.checkpoint.s3dynamo` alone
(perf_counter; median of the runs). It records whether botocore (or boto3) is in
`sys.modules` afterwards, and which modules outside the package that import added.

`--package` measures the artefact users deploy instead: scripts/lambda_package.sh builds
four zips (`make lambda-package`'s, the same with the `vectors` extra's numpy, and
`cold_start_handler.py` with s3dynamo and with DynamoDBSaver, packaged the same way);
each is unzipped into a read-only copy, with and without its bytecode, and a fresh
`python3.12 -I -S -B` per sample, with only that copy and boto3 (installed for 3.12 and
compiled, as the runtime's copy) on its path, runs the init phase (`import app`) and a
first invocation against moto server. Times: interpreter (spawn to its first line),
init, first invocation, total. A floor row runs the s3dynamo handler's zip with
InMemorySaver, botocore's import and one DynamoDB client instead (`COLD_FLOOR=1`); each
handler zip beyond it is its total minus the floor's, and modelled its CPU minus the
floor's plus 10 ms a request. The children run as an on-demand function's
(`AWS_LAMBDA_INITIALIZATION_TYPE=on-demand`); the s3dynamo handler's zip also runs with
keys from the environment instead of KMS (the checkout's deployment).

The unmeasured first round also writes any missing bytecode caches (the children may
write them even if `PYTHONDONTWRITEBYTECODE` is set here), so no measured child compiles
a module: an installed package has its caches, pip compiles them.
"""

import time

STARTED = time.time()  # first statement: the end of interpreter start-up

import base64  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import re  # noqa: E402
import socket  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import urllib.request  # noqa: E402
from collections.abc import Iterator  # noqa: E402
from contextlib import contextmanager  # noqa: E402
from pathlib import Path  # noqa: E402
from types import SimpleNamespace  # noqa: E402
from typing import Any  # noqa: E402

FLOOR = "botocore floor"
SAVERS = ("InMemorySaver", FLOOR, "s3dynamo", "DynamoDBSaver")  # the handler kinds
AWS_SAVERS = ("s3dynamo", "DynamoDBSaver")
PACKAGE_IMPORT = "package import"  # the child kind that times the package's own import
PACKAGE = "langgraph.checkpoint.s3dynamo"
# What the package imports from outside itself, imported before it is timed. Not botocore:
# the package must not import the AWS SDK at import time (checked in the child).
PACKAGE_DEPENDENCIES = (
    "langgraph.checkpoint.base",
    "langgraph.checkpoint.serde.jsonplus",
    "zstandard",
    "cryptography.hazmat.primitives.ciphers.aead",
)
TABLE = "cold"
REQUEST_MS = 10  # the model's cost of one request: a round trip to DynamoDB in-region
# Fixed per benchmark, as a deployment's keys are: every child opens the same deployment.
SEALING_KEY = b"cold-start benchmark sealing key"  # 32 bytes: AES-256
NAMING_SECRET = b"cold-start benchmark naming secret"
BUCKET = "cold-start"
LGAWS_TABLE, LGAWS_BUCKET = "cold-lgaws", "cold-start-lgaws"
REGION = "us-east-1"
MOTO_SERVE = Path(__file__).parents[1] / "src/langgraph/checkpoint/s3dynamo/moto_serve.py"


# --- the child: one Lambda cold start ------------------------------------------------


def child(saver: str, spawned: float) -> dict[str, Any]:
    marks = {"spawned": spawned, "main": STARTED}
    timers: dict[str, Any] = {"clients": 0.0, "requests": 0.0, "request_count": 0, "ops": []}

    from typing import Annotated

    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.graph import END, START, StateGraph
    from langgraph.graph.message import add_messages
    from typing_extensions import TypedDict

    marks["langgraph"] = time.time()
    cpu_from = time.process_time()  # this process's CPU, every thread, from here on
    if saver != "InMemorySaver":
        _time_botocore(timers)  # imports nothing: patches botocore when it is imported
    if saver == FLOOR:  # the least a saver on botocore pays: its import and one client
        import botocore.session

        floor_client = botocore.session.get_session().create_client(
            "dynamodb", region_name=REGION, endpoint_url=os.environ["AWS_ENDPOINT_URL"]
        )
        assert floor_client.meta.region_name == REGION  # kept until the reply
    if saver == "s3dynamo":
        from langgraph.checkpoint.s3dynamo import S3DynamoSaver
    elif saver == "DynamoDBSaver":
        from langgraph_checkpoint_aws import DynamoDBSaver
    else:
        from langgraph.checkpoint.memory import InMemorySaver
    marks["imported"] = time.time()

    if saver == "s3dynamo":
        # Sealed, from the environment, as the README has it (`_child_env`).
        checkpointer: Any = S3DynamoSaver.from_env()
    elif saver == "DynamoDBSaver":
        checkpointer = DynamoDBSaver(
            table_name=LGAWS_TABLE,
            region_name=REGION,
            s3_offload_config={"bucket_name": LGAWS_BUCKET},
        )
    else:
        checkpointer = InMemorySaver()

    class State(TypedDict):
        messages: Annotated[list, add_messages]

    def understand(state: State) -> dict:
        return {"messages": [AIMessage(f"heard {len(state['messages'])} message(s)")]}

    def answer(state: State) -> dict:
        return {"messages": [AIMessage(f"answer to: {state['messages'][0].content}")]}

    builder = StateGraph(State)
    builder.add_node("understand", understand)
    builder.add_node("answer", answer)
    builder.add_edge(START, "understand")
    builder.add_edge("understand", "answer")
    builder.add_edge("answer", END)
    graph = builder.compile(checkpointer=checkpointer)
    marks["built"] = time.time()

    thread = {"configurable": {"thread_id": f"cold-{os.getpid()}-{time.time_ns()}"}}
    reply = graph.invoke({"messages": [HumanMessage("hello")]}, thread)
    assert reply["messages"][-1].content == "answer to: hello"
    marks["replied"] = time.time()
    saver_cpu = time.process_time() - cpu_from
    return {
        "saver_cpu": saver_cpu,
        "total": marks["replied"] - marks["spawned"],
        "interpreter": marks["main"] - marks["spawned"],
        "imports": marks["imported"] - marks["main"],
        "langgraph_import": marks["langgraph"] - marks["main"],
        "saver_import": marks["imported"] - marks["langgraph"],
        # All but interpreter start-up and LangGraph's import, which every handler
        # pays alike: the part of the total that depends on the saver.
        "saver_part": marks["replied"] - marks["langgraph"],
        "build": marks["built"] - marks["imported"],
        "first_request": marks["replied"] - marks["built"],
        **timers,
    }


def package_import_child() -> dict[str, Any]:
    """`import langgraph.checkpoint.s3dynamo` alone, after what it imports from outside."""
    import importlib

    for name in PACKAGE_DEPENDENCIES:
        importlib.import_module(name)
    before = set(sys.modules)
    started = time.perf_counter()
    importlib.import_module(PACKAGE)
    elapsed = time.perf_counter() - started
    added = set(sys.modules) - before
    return {
        "package_import": elapsed,
        "botocore_imported": "botocore" in sys.modules,
        "boto3_imported": "boto3" in sys.modules,
        "modules_added": len(added),
        # What the import added outside the package itself.
        "others_added": sorted(
            m for m in added if m != PACKAGE and not m.startswith(PACKAGE + ".")
        ),
    }


def _time_botocore(timers: dict[str, Any]) -> None:
    """Sum the wall time of the AWS SDK's import, of client creation and of API calls.

    Nothing is imported here: a finder on `sys.meta_path` times each outermost import of
    a boto3 or botocore module (`sdk_import`, wherever it happens: the saver's import or
    its first request) and patches `Session.create_client` and `BaseClient._make_api_call`
    (a perf_counter each) as soon as botocore defines them."""
    import importlib.abc
    import importlib.machinery
    import threading

    depth = threading.local()
    timers["sdk_import"] = 0.0

    def timed(original: Any, key: str) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                elapsed = time.perf_counter() - started
                timers[key] += elapsed
                if key == "requests":
                    timers["request_count"] += 1
                    service = args[0].meta.service_model.service_name
                    timers["ops"].append(f"{service}.{args[1]}")
                else:  # each client apart: `client dynamodb`, `client s3`
                    service = kwargs.get("service_name") or args[1]
                    timers[f"client {service}"] = timers.get(f"client {service}", 0) + elapsed

        return wrapper

    def patch(module: Any) -> None:
        if module.__name__ == "botocore.session":
            session = module.Session
            session.create_client = timed(session.create_client, "clients")
        elif module.__name__ == "botocore.client":
            client = module.BaseClient
            client._make_api_call = timed(client._make_api_call, "requests")

    class SdkImports(importlib.abc.MetaPathFinder):
        def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
            if name.partition(".")[0] not in ("boto3", "botocore"):
                return None
            spec = importlib.machinery.PathFinder.find_spec(name, path)
            if spec is None or spec.loader is None:
                return spec
            run = spec.loader.exec_module  # type: ignore[union-attr]

            def exec_module(module: Any) -> None:
                outermost = not getattr(depth, "n", 0)
                depth.n = getattr(depth, "n", 0) + 1
                started = time.perf_counter()
                try:
                    run(module)
                finally:
                    depth.n -= 1
                    if outermost:
                        timers["sdk_import"] += time.perf_counter() - started
                patch(module)

            spec.loader.exec_module = exec_module  # type: ignore[union-attr]
            return spec

    assert "botocore" not in sys.modules, "the SDK must not be imported before the timers"
    sys.meta_path.insert(0, SdkImports())


# --- the parent: moto server, resources, samples ---------------------------------------


@contextmanager
def moto_server() -> Iterator[str]:
    """moto server on a free loopback port, answering one request at a time; yields its URL.

    The package's `moto_serve.py`, run by its path (it imports only moto): moto's
    TransactWriteItems is not safe against a request changing the table meanwhile, and
    both AWS savers send requests from several threads (LangGraph's background puts)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    process = subprocess.Popen(
        [sys.executable, str(MOTO_SERVE), "127.0.0.1", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.time() + 60
        while True:
            try:
                urllib.request.urlopen(f"{url}/moto-api/", timeout=1).close()
                break
            except OSError:
                if process.poll() is not None or time.time() > deadline:
                    raise RuntimeError("moto server did not start") from None
                time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


def _child_env(url: str) -> dict[str, str]:
    # Bytecode caches allowed: the unmeasured round writes any that are missing, so no
    # measured child compiles a module (an installed package has them; pip compiles).
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("AWS_") and k != "PYTHONDONTWRITEBYTECODE"
    }
    env.update(
        AWS_ACCESS_KEY_ID="testing",
        AWS_SECRET_ACCESS_KEY="testing",
        AWS_DEFAULT_REGION=REGION,
        AWS_ENDPOINT_URL=url,  # every AWS client in the child goes to moto server
        LANGSMITH_TRACING="false",
        LANGCHAIN_TRACING_V2="false",
        # s3dynamo's settings, read by `S3DynamoSaver.from_env()` (the other kinds ignore them)
        S3DYNAMO_TABLE=TABLE,
        S3DYNAMO_BUCKET=BUCKET,
        S3DYNAMO_KEYS="k1:" + base64.b64encode(SEALING_KEY).decode(),
        S3DYNAMO_SECRET=NAMING_SECRET.decode(),
    )
    return env


def _create_resources(url: str) -> None:
    import boto3

    sys.path.insert(0, str(Path(__file__).parent))
    from savers import create_dynamodb_saver_resources

    from langgraph.checkpoint.s3dynamo import S3DynamoSaver

    session = boto3.session.Session(
        aws_access_key_id="testing", aws_secret_access_key="testing", region_name=REGION
    )

    def client(service: str) -> Any:
        return session.client(service, endpoint_url=url)

    # The same keys as every child: the deployment record setup() writes names them.
    S3DynamoSaver(
        table=TABLE,
        bucket=BUCKET,
        dynamodb_client=client("dynamodb"),
        s3_client=client("s3"),
        keys={"k1": SEALING_KEY},
        secret=NAMING_SECRET,
    ).setup()

    # Its own table: DynamoDBSaver's key schema is not s3dynamo's.
    endpoint = SimpleNamespace(client=client)  # all create_dynamodb_saver_resources uses
    create_dynamodb_saver_resources(LGAWS_TABLE, LGAWS_BUCKET, endpoint)


def _run_child(saver: str, env: dict[str, str], extra: tuple[str, ...] = ()) -> Any:
    spawned = time.time()
    done = subprocess.run(
        [sys.executable, *extra, __file__, "--child", saver, repr(spawned)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


def measure(runs: int) -> dict[str, Any]:
    """Median of `runs` fresh interpreters per child kind (ms), plus one `-X importtime`
    run per handler kind; the floor, each AWS saver beyond it and their ratio.

    One unmeasured round first, so every measured run finds the files in the OS cache."""
    kinds = (*SAVERS, PACKAGE_IMPORT)
    with moto_server() as url:
        _create_resources(url)
        env = _child_env(url)
        samples: dict[str, list[dict[str, Any]]] = {k: [] for k in kinds}
        for kind in kinds:  # one unmeasured round: the first run pays a cold disk cache
            _run_child(kind, env)
        for _ in range(runs):  # round robin, so drift on the machine hits all alike
            for kind in kinds:
                samples[kind].append(_run_child(kind, env)[0])
        imports = {
            saver: _import_times(_run_child(saver, env, ("-X", "importtime"))[1])
            for saver in SAVERS
        }
    package = samples.pop(PACKAGE_IMPORT)
    medians = {  # a key missing from a run (a client it did not build) counts as 0
        saver: {
            k: 1000 * statistics.median(s.get(k, 0) for s in runs_)
            for k in dict.fromkeys(k for s in runs_ for k in s if k != "ops")
        }
        for saver, runs_ in samples.items()
    }
    # The requests each saver sent, in order, from its first measured run (the same in all).
    requests = {saver: runs_[0].get("ops", []) for saver, runs_ in samples.items()}
    for figures in medians.values():
        figures["request_count"] /= 1000  # a count, not seconds
    return {
        "runs": runs,
        "medians": medians,
        "requests_sent": requests,
        "imports": imports,
        "floor": _floor(samples, medians),
        "package_import": {
            "median": 1000 * statistics.median(p["package_import"] for p in package),
            "runs_ms": [1000 * p["package_import"] for p in package],
            "dependencies": list(PACKAGE_DEPENDENCIES),
            "botocore_imported": any(p["botocore_imported"] for p in package),
            "boto3_imported": any(p["boto3_imported"] for p in package),
            "modules_added": statistics.median(p["modules_added"] for p in package),
            "others_added": sorted({m for p in package for m in p["others_added"]}),
        },
    }


def _floor(samples: dict[str, list[dict[str, Any]]], medians: dict) -> dict[str, Any]:
    """The botocore floor, each AWS saver beyond it, and the s3dynamo/DynamoDBSaver ratio.

    The figures are differences of the `saver part` medians; the ratio is given both as
    the ratio of those medians and as the median of the per-round ratios (round r's
    children only), with every round's figures kept."""
    part = {saver: medians[saver]["saver_part"] for saver in SAVERS}
    beyond = {saver: part[saver] - part[FLOOR] for saver in AWS_SAVERS}
    rounds = []
    for i in range(len(samples[FLOOR])):
        r = {saver: 1000 * samples[saver][i]["saver_part"] for saver in SAVERS}
        round_beyond = {saver: r[saver] - r[FLOOR] for saver in AWS_SAVERS}
        rounds.append(
            {
                "floor": r[FLOOR] - r["InMemorySaver"],
                **{f"{saver} beyond floor": v for saver, v in round_beyond.items()},
                "ratio": _ratio(round_beyond["s3dynamo"], round_beyond["DynamoDBSaver"]),
            }
        )
    ratios = [r["ratio"] for r in rounds if r["ratio"] is not None]
    # The model: CPU beyond the floor child's, plus REQUEST_MS a request (a round trip
    # within a region), so moto's own speed is out of the figure.
    cpu = {saver: medians[saver]["saver_cpu"] for saver in SAVERS}
    modelled = {
        saver: cpu[saver] - cpu[FLOOR] + REQUEST_MS * medians[saver]["request_count"]
        for saver in AWS_SAVERS
    }
    return {
        "floor": part[FLOOR] - part["InMemorySaver"],
        "floor_cpu": cpu[FLOOR] - cpu["InMemorySaver"],
        "beyond": beyond,
        "modelled": modelled,
        "modelled_ratio": _ratio(modelled["s3dynamo"], modelled["DynamoDBSaver"]),
        "ratio_of_medians": _ratio(beyond["s3dynamo"], beyond["DynamoDBSaver"]),
        "median_of_round_ratios": statistics.median(ratios) if ratios else None,
        "round_ratio_range": [min(ratios), max(ratios)] if ratios else None,
        "rounds": rounds,
    }


def _ratio(ours: float, theirs: float) -> float | None:
    return ours / theirs if theirs > 0 else None  # undefined if DynamoDBSaver's is not > 0


# Modules whose cumulative import time (ms, from `-X importtime`) is reported.
IMPORTS = (
    "langgraph.graph",
    "langchain_core.messages",
    "boto3",
    "botocore.config",
    "botocore.session",
    "botocore.client",
    "langgraph.checkpoint.s3dynamo",
    "langgraph.checkpoint.s3dynamo.backends.aws_clients",
    "zstandard",
    "cryptography.hazmat.primitives.ciphers.aead",
    "langgraph_checkpoint_aws",
)


def _import_times(stderr: str) -> dict[str, float]:
    """Cumulative ms of each module in IMPORTS, where it was first imported."""
    found: dict[str, float] = {}
    for line in stderr.splitlines():
        match = re.match(r"import time:\s+\d+ \|\s+(\d+) \|( *)(\S+)", line)
        if match and match.group(3) in IMPORTS and match.group(3) not in found:
            found[match.group(3)] = int(match.group(1)) / 1000
    return found


def summary(result: dict[str, Any]) -> list[str]:
    """Lines for a terminal (run.py prints them; report.py writes the same figures)."""
    medians = result["medians"]
    base = medians["InMemorySaver"]["saver_part"]
    out = [f"median of {result['runs']} fresh processes per child, round robin (ms):"]
    for saver, m in medians.items():
        parts = [f"imports {m['imports']:.0f}", f"CPU {m['saver_cpu']:.0f}"]
        if "sdk_import" in m:
            parts.append(f"SDK import {m['sdk_import']:.0f}")
            parts.append(f"clients {m['clients']:.0f}")
            parts.append(f"requests {m['requests']:.0f} ({m['request_count']:.0f})")
        out.append(
            f"{saver}: total {m['total']:.0f}, saver part {m['saver_part']:.0f} "
            f"(+{m['saver_part'] - base:.0f} over InMemorySaver); " + ", ".join(parts)
        )
    return out + floor_lines(result)


def floor_lines(result: dict[str, Any]) -> list[str]:
    """The floor, beyond-floor, ratio and package-import lines (also in results.md)."""
    out = []
    n = result["runs"]
    floor = result.get("floor")
    if floor:
        beyond = floor["beyond"]
        out += [
            f"botocore floor (import botocore.session + one DynamoDB client; median saver "
            f"part of the floor child - InMemorySaver's, {n} runs each): {floor['floor']:.0f} ms",
            f"beyond the floor (median saver part - the floor child's): s3dynamo "
            f"{beyond['s3dynamo']:.0f} ms, DynamoDBSaver {beyond['DynamoDBSaver']:.0f} ms",
            f"ratio s3dynamo/DynamoDBSaver beyond the floor: {_fmt(floor['ratio_of_medians'])}"
            f" (ratio of the medians; target: at most 0.5); "
            f"{_fmt(floor['median_of_round_ratios'])} (median of "
            f"the {len(floor['rounds'])} per-round ratios, range "
            + " to ".join(_fmt(x) for x in floor["round_ratio_range"] or [None, None])
            + ")",
            f"beyond the floor, modelled (median child CPU - the floor child's, + {REQUEST_MS} "
            f"ms a request): s3dynamo {floor['modelled']['s3dynamo']:.0f} ms, DynamoDBSaver "
            f"{floor['modelled']['DynamoDBSaver']:.0f} ms, ratio {_fmt(floor['modelled_ratio'])}"
            " (target: at most 0.5)",
        ]
    for saver, ops in result.get("requests_sent", {}).items():
        if ops:
            out.append(f"{saver} sent {len(ops)} requests: {', '.join(ops)}")
    package = result.get("package_import")
    if package:
        sdk = [m for m in ("botocore", "boto3") if package[f"{m}_imported"]]
        out.append(
            f"package import beyond its dependencies (import {PACKAGE} after "
            f"{', '.join(package['dependencies'])}; median of {n}): "
            f"{package['median']:.1f} ms; "
            + (
                f"it imported {' and '.join(sdk)}!"
                if sdk
                else "botocore not in sys.modules after it"
            )
        )
    return out


def _fmt(ratio: float | None) -> str:
    return "n/a" if ratio is None else f"{ratio:.2f}"


# --- the shipped artefact: the Lambda zip, run as the runtime runs it ------------------

ROOT = Path(__file__).resolve().parents[1]
PACKAGE_SCRIPT = ROOT / "scripts" / "lambda_package.sh"
HANDLER = Path(__file__).resolve().parent / "cold_start_handler.py"
APP_TABLE, APP_BUCKET = "cold-app", "cold-start-app"
APP_ZIP, S3DYNAMO_ZIP, LGAWS_ZIP = "app.py zip", "s3dynamo handler zip", "DynamoDBSaver handler zip"
# `make lambda-package EXTRAS=vectors`: the same agent with numpy in the zip.
APP_VECTORS_ZIP = "app.py zip with [vectors]"
UNPRIMED = f"{S3DYNAMO_ZIP}, bytecode, prime() not called"
# The s3dynamo handler zip run with COLD_FLOOR=1: botocore's import, one DynamoDB client,
# InMemorySaver; each handler zip's figures beyond it are what its saver adds.
ZIP_FLOOR = f"{FLOOR}: the handler with InMemorySaver, bytecode"
# The same zip with sealing keys and a naming secret from the environment, as the
# checkout's children run, instead of KMS: no KMS client, no Decrypt.
ENV_KEYS = f"{S3DYNAMO_ZIP}, bytecode, keys from the environment"
# What the DynamoDBSaver zip carries instead of this package (and langgraph, for the graph).
LGAWS_REQUIREMENTS = "langgraph-checkpoint-aws langgraph>=1.2"

# The runtime's side, run by Python 3.12 with -I -S -B: the unzipped task, then the
# runtime's boto3, on the path; init (`import app`: imports, the saver built and primed,
# the graph compiled), then the first invocation.
ARTEFACT_CHILD = """
import json, sys, time
main = time.time()
task, runtime, event = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
sys.path[:0] = [task, runtime]
import importlib.abc, importlib.machinery
sent = []
class CountRequests(importlib.abc.MetaPathFinder):  # wraps each API call once botocore loads
    def find_spec(self, name, path, target=None):
        if name != "botocore.client":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        load = spec.loader.exec_module
        def exec_module(module):
            load(module)
            call = module.BaseClient._make_api_call
            def counted(client, operation, params):
                sent.append(operation)
                return call(client, operation, params)
            module.BaseClient._make_api_call = counted
        spec.loader.exec_module = exec_module
        return spec
sys.meta_path.insert(0, CountRequests())
import app
init, init_cpu = time.time(), time.process_time()
reply = app.handler(event, None)
replied, cpu = time.time(), time.process_time()
assert reply["ok"], reply
print(json.dumps({"main": main, "init": init, "replied": replied, "init_cpu": init_cpu,
                  "cpu": cpu, "requests": len(sent), "ops": sent}))
"""


def runtime_python() -> str:
    """Python 3.12, the Lambda runtime's version, as scripts/lambda_package.sh finds it."""
    import glob
    import shutil

    pyenv = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    for candidate in (
        os.environ.get("CHECK_PYTHON"),
        shutil.which("python3.12"),
        *sorted(glob.glob(f"{pyenv}/versions/3.12*/bin/python3.12")),
    ):
        if (
            candidate
            and subprocess.run(
                [candidate, "-c", "import sys; assert sys.version_info[:2] == (3, 12)"],
                capture_output=True,
                check=False,
            ).returncode
            == 0
        ):
            return candidate
    raise SystemExit("no Python 3.12 (the Lambda runtime's version): set CHECK_PYTHON")


def build_artefacts(work: Path, python312: str) -> dict[str, Any]:
    """The four zips, each by scripts/lambda_package.sh (x86_64) with its self-check:
    `make lambda-package`'s own, with and without the `vectors` extra (numpy), the
    side-by-side handler with s3dynamo, and the same handler with DynamoDBSaver. Returns,
    per kind, its zip and the script's size lines."""
    builds = {
        APP_ZIP: {},
        APP_VECTORS_ZIP: {"LAMBDA_EXTRAS": "vectors"},
        S3DYNAMO_ZIP: {"LAMBDA_HANDLER": str(HANDLER)},
        LGAWS_ZIP: {"LAMBDA_HANDLER": str(HANDLER), "LAMBDA_REQUIREMENTS": LGAWS_REQUIREMENTS},
    }
    out: dict[str, Any] = {}
    for i, (kind, extra) in enumerate(builds.items()):
        zip_path = work / f"zip{i}" / "lambda_agent.zip"
        env = {
            **os.environ,
            **extra,
            "LAMBDA_ZIP": str(zip_path),
            "BUILD_DIR": str(work / "build"),
            "CHECK_PYTHON": python312,
            "PYTHON": os.environ.get("PYTHON", sys.executable),
        }
        done = subprocess.run(
            ["bash", str(PACKAGE_SCRIPT), "x86_64"], env=env, capture_output=True, text=True
        )
        if done.returncode != 0:
            raise SystemExit(f"{PACKAGE_SCRIPT} failed for {kind}:\n{done.stdout}{done.stderr}")
        out[kind] = {
            "zip": zip_path,
            "sizes": [
                line
                for line in done.stdout.splitlines()
                if line.startswith(("zipped:", "unzipped:", "runtime Python", "import check"))
            ],
        }
    return out


def _read_only_copy(source: Path, target: Path, bytecode: bool) -> Path:
    import shutil

    ignore = None if bytecode else shutil.ignore_patterns("__pycache__")
    shutil.copytree(source, target, ignore=ignore)
    # /var/task is read-only; as root this does not stop writes, -B does.
    for path in [target, *target.rglob("*")]:
        path.chmod(path.stat().st_mode & 0o555)
    return target


def _run_artefact(python312: str, task: Path, runtime: Path, env: dict, event: dict) -> dict:
    """One cold start of an unzipped task: its times (s), its CPU, the requests it sent."""
    spawned = time.time()
    done = subprocess.run(
        [
            python312,
            "-I",
            "-S",
            "-B",
            "-c",
            ARTEFACT_CHILD,
            str(task),
            str(runtime),
            json.dumps(event),
        ],
        env=env,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise RuntimeError(f"the handler of {task} failed:\n{done.stderr[-3000:]}")
    marks = json.loads(done.stdout.strip().splitlines()[-1])
    return {
        "total": marks["replied"] - spawned,
        "interpreter": marks["main"] - spawned,
        "init": marks["init"] - marks["main"],
        "first_invocation": marks["replied"] - marks["init"],
        # The process's CPU from its start (interpreter start-up included), every thread.
        "cpu": marks["cpu"],
        "init_cpu": marks["init_cpu"],
        "requests": marks["requests"] / 1000,  # a count: the medians scale by 1000
        "ops": marks["ops"],
    }


def measure_package(runs: int) -> dict[str, Any]:
    """The shipped zips' cold path, with and without their bytecode: median of `runs`
    fresh Python 3.12 processes per row, round robin after one unmeasured round."""
    import tempfile
    import zipfile

    import boto3

    python312 = runtime_python()
    version = subprocess.run(
        [python312, "-c", "import sys; print(sys.version.split()[0])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        built = build_artefacts(work, python312)
        # boto3 as the runtime provides it: for Python 3.12, compiled by it.
        runtime = work / "runtime"
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "--quiet",
                "--no-compile",
                "--target",
                str(runtime),
                "--platform",
                "manylinux2014_x86_64",
                "--python-version",
                "3.12",
                "--only-binary=:all:",
                "boto3",
            ],
            check=True,
            capture_output=True,
        )
        subprocess.run(
            [python312, "-I", "-m", "compileall", "-q", "-j", "0", str(runtime)],
            check=True,
            capture_output=True,
        )
        tasks: dict[str, Path] = {}
        for kind, b in built.items():
            unzipped = work / "unzipped" / kind.replace(" ", "_")
            with zipfile.ZipFile(b["zip"]) as zf:
                zf.extractall(unzipped)
            for bytecode in (True, False):
                row = f"{kind}, {'bytecode' if bytecode else 'no bytecode'}"
                target = work / "task" / row.replace(" ", "_").replace(",", "")
                tasks[row] = _read_only_copy(unzipped, target, bytecode)
        # The same zip as the row above it, with the saver left unprimed until the first
        # request: what prime() at module scope moves from the first invocation to init.
        tasks[UNPRIMED] = tasks[f"{S3DYNAMO_ZIP}, bytecode"]
        tasks[ZIP_FLOOR] = tasks[f"{S3DYNAMO_ZIP}, bytecode"]
        tasks[ENV_KEYS] = tasks[f"{S3DYNAMO_ZIP}, bytecode"]
        samples: dict[str, list[dict[str, float]]] = {row: [] for row in tasks}
        with moto_server() as url:
            session = boto3.session.Session(
                aws_access_key_id="testing", aws_secret_access_key="testing", region_name=REGION
            )
            kms = session.client("kms", endpoint_url=url)
            key = kms.create_key(Description="cold start")["KeyMetadata"]["Arn"]
            from langgraph.checkpoint.s3dynamo import S3DynamoSaver

            # As the Terraform example deploys it: keys from KMS, the keyring in the table.
            S3DynamoSaver(
                table=APP_TABLE,
                bucket=APP_BUCKET,
                kms_key_id=key,
                dynamodb_client=session.client("dynamodb", endpoint_url=url),
                s3_client=session.client("s3", endpoint_url=url),
                kms_client=kms,
            ).setup()
            _create_resources(url)  # the checkout's deployment (keys), and DynamoDBSaver's
            env = {  # what the function's environment would hold, pointed at moto server
                "PATH": os.environ.get("PATH", ""),
                "AWS_ACCESS_KEY_ID": "testing",
                "AWS_SECRET_ACCESS_KEY": "testing",
                "AWS_REGION": REGION,
                "AWS_DEFAULT_REGION": REGION,
                "AWS_ENDPOINT_URL": url,
                "S3DYNAMO_TABLE": APP_TABLE,
                "S3DYNAMO_BUCKET": APP_BUCKET,
                "S3DYNAMO_KMS_KEY_ID": key,
                "LGAWS_TABLE": LGAWS_TABLE,
                "LGAWS_BUCKET": LGAWS_BUCKET,
                "LANGSMITH_TRACING": "false",
                # As the runtime sets it for a function without SnapStart or provisioned
                # concurrency: init on the first request's path.
                "AWS_LAMBDA_INITIALIZATION_TYPE": "on-demand",
            }

            def event(row: str, n: int) -> dict[str, Any]:
                if row.startswith(APP_ZIP):
                    return {"action": "start", "message": "hello"}
                return {"thread_id": f"cold-{n}-{time.time_ns()}", "message": "hello"}

            def run(row: str, n: int) -> dict[str, float]:
                row_env = {
                    **env,
                    "COLD_PRIME": "0" if row == UNPRIMED else "1",
                    "COLD_FLOOR": "1" if row == ZIP_FLOOR else "0",
                }
                if row == ENV_KEYS:
                    del row_env["S3DYNAMO_KMS_KEY_ID"]
                    row_env.update(
                        S3DYNAMO_TABLE=TABLE,
                        S3DYNAMO_BUCKET=BUCKET,
                        S3DYNAMO_KEYS="k1:" + base64.b64encode(SEALING_KEY).decode(),
                        S3DYNAMO_SECRET=NAMING_SECRET.decode(),
                    )
                return _run_artefact(python312, tasks[row], runtime, row_env, event(row, n))

            for row in tasks:  # unmeasured: warms the OS file cache
                run(row, -1)
            for n in range(runs):
                for row in tasks:
                    samples[row].append(run(row, n))
    medians = {
        row: {k: 1000 * statistics.median(s[k] for s in rows) for k in rows[0] if k != "ops"}
        for row, rows in samples.items()
    }
    return {
        "runs": runs,
        "python": version,
        "medians": medians,
        "beyond_floor": _zips_beyond_floor(medians),
        "requests_sent": {row: rows[0]["ops"] for row, rows in samples.items()},
        "sizes": {kind: b["sizes"] for kind, b in built.items()},
    }


def _zips_beyond_floor(medians: dict[str, dict[str, float]]) -> dict[str, Any]:
    """Each handler zip (with bytecode; s3dynamo's primed and not) beyond the floor row:
    wall time and the model (CPU beyond the floor's, + REQUEST_MS a request), and primed
    s3dynamo's over DynamoDBSaver's."""
    floor = medians[ZIP_FLOOR]
    beyond = {}
    rows = {
        "s3dynamo": f"{S3DYNAMO_ZIP}, bytecode",
        "DynamoDBSaver": f"{LGAWS_ZIP}, bytecode",
        "s3dynamo, prime() not called": UNPRIMED,
        "s3dynamo, keys from the environment": ENV_KEYS,
    }
    for saver, row in rows.items():
        m = medians[row]
        beyond[saver] = {
            "total": m["total"] - floor["total"],
            "modelled": m["cpu"] - floor["cpu"] + REQUEST_MS * m["requests"],
        }
    return {
        **beyond,
        "ratio": _ratio(beyond["s3dynamo"]["total"], beyond["DynamoDBSaver"]["total"]),
        "modelled_ratio": _ratio(
            beyond["s3dynamo"]["modelled"], beyond["DynamoDBSaver"]["modelled"]
        ),
    }


def package_summary(result: dict[str, Any]) -> list[str]:
    out = [
        f"the shipped zips, unzipped read-only, run by Python {result['python']} -I -S -B with "
        f"boto3 as the runtime's copy, against moto server; median of {result['runs']} fresh "
        "processes per row, round robin (ms):"
    ]
    for row, m in result["medians"].items():
        out.append(
            f"{row}: total {m['total']:.0f} (interpreter {m['interpreter']:.0f}, init "
            f"{m['init']:.0f}, first invocation {m['first_invocation']:.0f}); CPU {m['cpu']:.0f} "
            f"(init {m['init_cpu']:.0f}); {m['requests']:.0f} requests; modelled (CPU + "
            f"{REQUEST_MS} ms a request) {m['cpu'] + REQUEST_MS * m['requests']:.0f}"
        )
    beyond = result["beyond_floor"]
    ours, theirs = beyond["s3dynamo"], beyond["DynamoDBSaver"]
    unprimed = beyond["s3dynamo, prime() not called"]
    env_keys = beyond["s3dynamo, keys from the environment"]
    out.append(
        f"beyond the floor row (handler zips with bytecode): s3dynamo {ours['total']:.0f} ms, "
        f"DynamoDBSaver {theirs['total']:.0f} ms of wall time (ratio {_fmt(beyond['ratio'])}); "
        f"modelled s3dynamo {ours['modelled']:.0f} ms, DynamoDBSaver {theirs['modelled']:.0f} "
        f"ms (ratio {_fmt(beyond['modelled_ratio'])}); s3dynamo with prime() not called "
        f"{unprimed['total']:.0f} ms, modelled {unprimed['modelled']:.0f} ms; with keys from "
        f"the environment {env_keys['total']:.0f} ms, modelled {env_keys['modelled']:.0f} ms"
    )
    for row, ops in result.get("requests_sent", {}).items():
        out.append(f"{row} sent: {', '.join(ops)}")
    for kind, lines in result["sizes"].items():
        out += [f"{kind}: {line}" for line in lines if line.startswith(("zipped", "unzipped"))]
    return out


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"] and sys.argv[2] == PACKAGE_IMPORT:
        print(json.dumps(package_import_child()))
    elif sys.argv[1:2] == ["--child"]:
        print(json.dumps(child(sys.argv[2], float(sys.argv[3]))))
    else:
        import argparse

        parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
        parser.add_argument("--runs", type=int, default=7)
        parser.add_argument(
            "--package",
            action="store_true",
            help="measure the shipped Lambda zips (built here) instead of the checkout",
        )
        args = parser.parse_args()
        if args.package:
            result = measure_package(args.runs)
            print("\n".join(package_summary(result)))
        else:
            result = measure(args.runs)
            print("\n".join(summary(result)))
        print(json.dumps(result, indent=1, default=str))
