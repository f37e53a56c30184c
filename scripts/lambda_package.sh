#!/usr/bin/env bash
# Build build/lambda_agent.zip: examples/lambda_agent/app.py, this package (built from
# the repository) and its dependencies, for the AWS Lambda Python 3.12 runtime on x86_64.
#
# Usage: scripts/lambda_package.sh        (or: make lambda-package)
#
# Wheels come from PyPI as manylinux2014_x86_64 / cp312 binaries, whatever machine builds
# the zip. What the runtime does not need is trimmed (see examples/lambda_agent/README.md):
#   boto3, botocore, s3transfer, jmespath, dateutil, six, urllib3  the runtime ships them
#   __pycache__, *.pyc                                            rebuilt by the runtime
#   *.dist-info/RECORD, INSTALLER, REQUESTED, direct_url.json      pip's install records
#   six.py                                                        the runtime ships it
#   zstandard/backend_cffi.py, zstandard/_cffi.*.so               the C backend is used
#   *.pyi, *-stubs/, bin/                                         type stubs, console scripts
#   debug sections of *.so (strip --strip-debug)                  not needed to run
# Then the zip is checked: unzipped into a temporary directory and imported by an isolated
# Python 3.12 (`python -I`, nothing of this repository on its path) that sees only the
# unzipped files and boto3 from a separate directory, standing in for the runtime's copy.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$ROOT/build
STAGE=$BUILD/lambda_agent
ZIP=$BUILD/lambda_agent.zip
PYTHON=${PYTHON:-python3}
# Installing into --target directories: the builder's own packages are irrelevant.
export PIP_ROOT_USER_ACTION=ignore
PLATFORM=(--platform manylinux2014_x86_64 --python-version 3.12 --only-binary=:all:)
# Provided by the Lambda Python runtime: not packaged (boto3 and what only it needs).
RUNTIME_PROVIDED=(boto3 botocore s3transfer jmespath dateutil six urllib3)

rm -rf "$STAGE" "$ZIP" "$BUILD/lambda_wheel"
mkdir -p "$STAGE" "$BUILD/lambda_wheel"
CHECK=$(mktemp -d)
trap 'rm -rf "$CHECK"' EXIT

echo "building the s3dynamo wheel from $ROOT"
"$PYTHON" -m pip wheel --quiet --no-deps --wheel-dir "$BUILD/lambda_wheel" "$ROOT" 2> >(grep -v 'is ignored' >&2)
WHEEL=$(ls "$BUILD"/lambda_wheel/langgraph_checkpoint_s3dynamo-*.whl)

echo "installing it with its dependencies for Python 3.12 / manylinux2014_x86_64"
# langgraph: the example's graph API; the package itself needs only langgraph-checkpoint.
"$PYTHON" -m pip install --quiet --no-compile --no-warn-conflicts --target "$STAGE" "${PLATFORM[@]}" \
  "$WHEEL" "langgraph>=1.2" 2> >(grep -v 'is ignored' >&2)
cp "$ROOT/examples/lambda_agent/app.py" "$STAGE/app.py"

size() { du -sb "$1" | cut -f1; }
before=$(size "$STAGE")

echo "trimming what the Lambda runtime does not need"
for name in "${RUNTIME_PROVIDED[@]}"; do
  rm -rf "${STAGE:?}/$name"
  find "$STAGE" -maxdepth 1 -type d -iname "${name}-*.dist-info" -exec rm -rf {} +
done
# python_dateutil's dist-info is named after the distribution, not the module.
find "$STAGE" -maxdepth 1 -type d -iname "python_dateutil-*.dist-info" -exec rm -rf {} +
find "$STAGE" -type d -name __pycache__ -prune -exec rm -rf {} +
find "$STAGE" -name '*.pyc' -delete
find "$STAGE" -path '*.dist-info/*' \
  \( -name RECORD -o -name INSTALLER -o -name REQUESTED -o -name direct_url.json \) -delete
rm -f "$STAGE/six.py"
# zstandard ships a C backend and a cffi one; it imports the C backend by default
# (PYTHON_ZSTANDARD_IMPORT_POLICY unset), so the cffi module is dead weight.
rm -f "$STAGE/zstandard/backend_cffi.py" "$STAGE"/zstandard/_cffi.*.so
# Type stubs are for type checkers; console scripts are not run by a Lambda.
find "$STAGE" -name '*.pyi' -delete
find "$STAGE" -maxdepth 1 -type d -name '*-stubs' -exec rm -rf {} +
rm -rf "$STAGE/bin"
# Debug sections only (DWARF): the code, symbols and relocations stay as built.
if command -v strip >/dev/null; then
  find "$STAGE" -name '*.so' -exec strip --strip-debug {} +
else
  echo "note: no strip on PATH, extension modules keep their debug sections"
fi

unzipped=$(size "$STAGE")
(cd "$STAGE" && find . -type f | LC_ALL=C sort | zip -q -X -9 "$ZIP" -@)
zipped=$(stat -c %s "$ZIP")

echo "checking that the zip imports in an isolated Python 3.12"
is_312() { [[ -n $1 ]] && "$1" -c 'import sys; assert sys.version_info[:2] == (3, 12)' 2>/dev/null; }
if [[ -z ${CHECK_PYTHON:-} ]]; then
  # python3.12 on PATH, else one installed by pyenv (its shim fails when not selected).
  for candidate in "$(command -v python3.12 || true)" \
                   "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.12*/bin/python3.12; do
    if is_312 "$candidate"; then CHECK_PYTHON=$candidate; break; fi
  done
fi
if ! is_312 "${CHECK_PYTHON:-}"; then
  echo "error: no Python 3.12 to check the zip with; set CHECK_PYTHON=/path/to/python3.12" >&2
  exit 1
fi
mkdir -p "$CHECK/task" "$CHECK/runtime"
unzip -q "$ZIP" -d "$CHECK/task"
# boto3 as the runtime provides it: in its own directory, after the task's files on the path.
"$PYTHON" -m pip install --quiet --no-compile --no-warn-conflicts --target "$CHECK/runtime" \
  "${PLATFORM[@]}" boto3 2> >(grep -v 'is ignored' >&2)
# -I -S: no site-packages at all, no PYTHONPATH, no current directory; the two directories are put on
# sys.path by hand, in the order of the runtime (/var/task before the runtime's own).
LAMBDA_PATH="$CHECK/task:$CHECK/runtime" "$CHECK_PYTHON" -I -S -c '
import os, sys
sys.path[:0] = os.environ["LAMBDA_PATH"].split(":")
import app, zstandard, cryptography.hazmat.bindings._rust
from langgraph.checkpoint.s3dynamo import S3DynamoSaver
assert zstandard.backend == "cext", zstandard.backend
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
key, nonce = AESGCM.generate_key(256), os.urandom(12)
sealed = AESGCM(key).encrypt(nonce, zstandard.ZstdCompressor().compress(b"x" * 1000), None)
assert zstandard.ZstdDecompressor().decompress(AESGCM(key).decrypt(nonce, sealed, None)) == b"x" * 1000
task = os.environ["LAMBDA_PATH"].split(":")[0]
for module in (app, zstandard, S3DynamoSaver):
    path = getattr(module, "__file__", None) or sys.modules[module.__module__].__file__
    assert path.startswith(task), f"{module} imported from {path}, not from the zip"
# As the Terraform example configures the function: table, bucket, the KMS key id.
os.environ.update(
    S3DYNAMO_TABLE="t", S3DYNAMO_BUCKET="b", S3DYNAMO_KMS_KEY_ID="alias/check",
    AWS_DEFAULT_REGION="us-east-1", AWS_ACCESS_KEY_ID="check", AWS_SECRET_ACCESS_KEY="check",
)
app.get_graph()  # builds the saver and compiles the graph; makes no request
app._saver.store.index, app._saver.store.objects  # botocore clients, no request either
assert callable(app.handler) and callable(app.expire)
print("import check passed: app.handler, app.expire, s3dynamo and its botocore clients, "
      "zstandard (C backend), cryptography")
'
rm -rf "$BUILD/lambda_wheel"

mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }
echo "installed before trimming: $before bytes ($(mib "$before"))"
echo "unzipped: $unzipped bytes ($(mib "$unzipped")), $(find "$STAGE" -type f | wc -l) files"
echo "zipped:   $zipped bytes ($(mib "$zipped")): $ZIP"
