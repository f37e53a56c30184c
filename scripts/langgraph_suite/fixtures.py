# ---- appended by s3dynamo's scripts/langgraph_suite/run.py ----------------------------
# Every checkpointer fixture yields one S3DynamoSaver with default settings (sealed,
# concurrent-run detection on), on moto in process, with a fresh table and bucket.
import pytest

from langgraph.cache.s3dynamo import S3DynamoCache as _S3DynamoCache
from langgraph.checkpoint.s3dynamo.testing import moto_saver as _s3dynamo_moto_saver
from langgraph.store.s3dynamo import S3DynamoStore as _S3DynamoStore

# moto loads its service modules at a process's first request, and some of them draw from
# `uuid.uuid4` as they load. Under a test that fixes `uuid.uuid4` to make its ids
# repeatable (`deterministic_uuids`), a first request made inside the test would shift
# them; one made here, as the conftest loads, leaves every test a process that has used
# moto before. (The saver itself never draws from `uuid.uuid4`.)
with _s3dynamo_moto_saver() as _saver:
    _saver.setup()


@pytest.fixture(scope="function", params=["s3dynamo"])
def sync_checkpointer(request):
    with _s3dynamo_moto_saver() as saver:
        yield saver


@pytest.fixture(scope="function", params=["s3dynamo"])
async def async_checkpointer(request):
    with _s3dynamo_moto_saver() as saver:
        yield saver


# The store and cache fixtures yield S3DynamoStore and S3DynamoCache on a saver of their
# own (moto in process), so LangGraph's graph tests that take them run on ours.
@pytest.fixture(scope="function", params=["s3dynamo-store"])
def sync_store(request):
    with _s3dynamo_moto_saver() as saver:
        yield _S3DynamoStore.from_saver(saver)


@pytest.fixture(scope="function", params=["s3dynamo-store"])
async def async_store(request):
    with _s3dynamo_moto_saver() as saver:
        yield _S3DynamoStore.from_saver(saver)


@pytest.fixture(scope="function", params=["s3dynamo-cache"])
def cache(request):
    with _s3dynamo_moto_saver() as saver:
        yield _S3DynamoCache.from_saver(saver)
