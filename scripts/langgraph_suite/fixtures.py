# ---- appended by s3dynamo's scripts/langgraph_suite/run.py ----------------------------
# Every checkpointer fixture yields one S3DynamoSaver with default settings (sealed,
# concurrent-run detection on), on moto in process, with a fresh table and bucket.
import pytest

from langgraph.checkpoint.s3dynamo.testing import moto_saver as _s3dynamo_moto_saver


@pytest.fixture(scope="function", params=["s3dynamo"])
def sync_checkpointer(request):
    with _s3dynamo_moto_saver() as saver:
        yield saver


@pytest.fixture(scope="function", params=["s3dynamo"])
async def async_checkpointer(request):
    with _s3dynamo_moto_saver() as saver:
        yield saver
