"""Cold start: a fresh interpreter imports a saver, builds it, reads an empty thread.

Run by `run.py` as `python cold_start.py SAVER` in a subprocess, several times. The
child prints one JSON line of timings in seconds. moto (the in-process fake AWS) and
the creation of the table and bucket are timed apart, and the time moto spends
answering the first request is subtracted, so `saver` is about the saver alone:
importing its module, creating its boto3 clients and the saver, and one `get_tuple`.
`boto3` is the import of boto3 itself, which any AWS saver pays as well.
"""

from __future__ import annotations

import importlib.util
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

TABLE = "cold"
BUCKET = "cold-start"


def _create_resources(saver: str) -> None:
    # A separate botocore session: its loader caches (service models, endpoint rules)
    # are its own, so the saver's clients still load theirs from scratch.
    import boto3

    session = boto3.session.Session(region_name="us-east-1")
    if saver == "s3dynamo":
        schema = _load_s3dynamo_schema()
        session.client("dynamodb").create_table(**schema.table_definition(TABLE))
        session.client("s3").create_bucket(Bucket=BUCKET)
    else:
        from savers import create_dynamodb_saver_resources

        create_dynamodb_saver_resources(TABLE, BUCKET, session)


def _load_s3dynamo_schema() -> Any:
    # Load schema.py by path: importing it as a submodule would run the package's
    # __init__, importing the saver before its import is timed.
    package = importlib.util.find_spec("langgraph.checkpoint.s3dynamo")
    assert package and package.submodule_search_locations
    path = Path(next(iter(package.submodule_search_locations))) / "schema.py"
    spec = importlib.util.spec_from_file_location("s3dynamo_schema", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _build_saver(saver: str) -> Any:
    if saver == "s3dynamo":
        import boto3

        from langgraph.checkpoint.s3dynamo import S3DynamoSaver

        return S3DynamoSaver(
            table=TABLE,
            bucket=BUCKET,
            dynamodb_client=boto3.client("dynamodb"),
            s3_client=boto3.client("s3"),
        )
    from langgraph_checkpoint_aws import DynamoDBSaver

    return DynamoDBSaver(
        table_name=TABLE, region_name="us-east-1", s3_offload_config={"bucket_name": BUCKET}
    )


def child(saver: str) -> dict[str, float]:
    start = time.perf_counter()
    import boto3  # noqa: F401

    boto3_done = time.perf_counter()
    from aws_mock import MOTO, use_fake_credentials

    use_fake_credentials()
    from moto import mock_aws

    MOTO.install()
    mock = mock_aws()
    mock.start()
    _create_resources(saver)
    moto_done = time.perf_counter()
    moto_wall = MOTO.snapshot()[1]

    built = _build_saver(saver)  # includes importing the saver's module
    built.get_tuple({"configurable": {"thread_id": "nobody"}})
    end = time.perf_counter()
    answer_wall = MOTO.snapshot()[1] - moto_wall
    mock.stop()
    return {
        "boto3": boto3_done - start,
        "moto": moto_done - boto3_done,
        "moto_answer": answer_wall,
        "saver": end - moto_done - answer_wall,
    }


def measure(saver: str, runs: int) -> dict[str, float]:
    """Median of `runs` fresh interpreters, in milliseconds."""
    samples: list[dict[str, float]] = []
    for _ in range(runs):
        started = time.perf_counter()
        out = subprocess.run(
            [sys.executable, str(Path(__file__)), saver],
            check=True,
            capture_output=True,
            text=True,
            cwd=Path(__file__).parent,
        ).stdout
        sample = json.loads(out.strip().splitlines()[-1])
        sample["process"] = time.perf_counter() - started
        samples.append(sample)
    return {key: 1000 * statistics.median(s[key] for s in samples) for key in samples[0]}


if __name__ == "__main__":
    print(json.dumps(child(sys.argv[1])))
