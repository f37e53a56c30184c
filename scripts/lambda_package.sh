#!/usr/bin/env bash
# Build the Lambda zip of examples/lambda_agent/app.py with this package (built from the
# repository) and its dependencies, for the AWS Lambda Python 3.12 runtime.
#
# Usage: scripts/lambda_package.sh [x86_64|arm64]   (or: make lambda-package [ARCH=arm64])
#   x86_64 (default) -> build/lambda_agent.zip        manylinux2014_x86_64 wheels
#   arm64            -> build/lambda_agent_arm64.zip  manylinux2014_aarch64 wheels (Graviton)
#
# Wheels come from PyPI as cp312 binaries for the architecture, whatever machine builds the
# zip. What the runtime does not need is trimmed (see examples/lambda_agent/README.md):
#   boto3, botocore, s3transfer, jmespath, dateutil, six, urllib3  the runtime ships them
#   *.dist-info/RECORD, INSTALLER, REQUESTED, direct_url.json      pip's install records
#   six.py                                                        the runtime ships it
#   zstandard/backend_cffi.py, zstandard/_cffi.*.so               the C backend is used
#   *.pyi, *-stubs/, bin/                                         type stubs, console scripts
#   debug sections of *.so (strip --strip-debug; not *.libs/)     not needed to run
# Then every .py is compiled by Python 3.12, the runtime's version, into unchecked-hash
# bytecode: /var/task is read-only, so without it the runtime compiles every module it
# imports from source on every cold start (issue 34: about 1.1 s).
#
# The zip is checked: by its listing (scripts/lambda_check.py listing: each .so built for the
# architecture, each .py with its valid .pyc), and, where this machine runs the
# architecture, by importing it in an isolated Python 3.12 (`-I -S -B`) that sees only the
# unzipped files and boto3 from a separate directory (the runtime's copy), proving that the
# import loads the bytecode and compiles no source of the zip.
#
# The figures it prints go to build/lambda_agent[_arm64].figures.json too, with the Python
# and the package versions measured; `make lambda-figures` writes the example README's
# table from the two (scripts/lambda_figures.py).
#
# Environment: CHECK_PYTHON (a Python 3.12; else python3.12 on PATH or pyenv's 3.12),
# BUILD_DIR (default build/), LAMBDA_EXTRAS (the package's extras to install, e.g.
# "vectors" for numpy: build/lambda_agent_vectors.zip), and for benchmarks/cold_start.py: LAMBDA_REQUIREMENTS (what
# to install instead of this package and langgraph), LAMBDA_HANDLER (instead of app.py),
# LAMBDA_ZIP (the zip's path), LAMBDA_CONSTRAINTS (a pip constraints file: the e2e tier
# pins the versions the README's figures were measured with, `lambda_figures.py constraints`).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
ARCH=${1:-x86_64}
case $ARCH in
  x86_64) WHEEL_PLATFORM=manylinux2014_x86_64; MACHINE=x86_64; SUFFIX="" ;;
  arm64 | aarch64) ARCH=arm64; WHEEL_PLATFORM=manylinux2014_aarch64; MACHINE=aarch64; SUFFIX=_arm64 ;;
  *) echo "error: architecture must be x86_64 or arm64 (Lambda's two), got '$ARCH'" >&2; exit 2 ;;
esac
BUILD=${BUILD_DIR:-$ROOT/build}
EXTRAS=${LAMBDA_EXTRAS:-}
ZIP=${LAMBDA_ZIP:-$BUILD/lambda_agent$SUFFIX${EXTRAS:+_${EXTRAS//,/_}}.zip}
STAGE=${ZIP%.zip}
HANDLER=${LAMBDA_HANDLER:-$ROOT/examples/lambda_agent/app.py}
PYTHON=${PYTHON:-python3}
# Installing into --target directories: the builder's own packages are irrelevant.
export PIP_ROOT_USER_ACTION=ignore
PLATFORM=(--platform "$WHEEL_PLATFORM" --python-version 3.12 --only-binary=:all:)
if [[ -n ${LAMBDA_CONSTRAINTS:-} ]]; then PLATFORM+=(--constraint "$LAMBDA_CONSTRAINTS"); fi
# Provided by the Lambda Python runtime: not packaged (boto3 and what only it needs).
RUNTIME_PROVIDED=(boto3 botocore s3transfer jmespath dateutil six urllib3)
pip_quiet() { "$PYTHON" -m pip "$@" 2> >(grep -v 'is ignored' >&2); }

# The bytecode is only valid for the Python version that compiles it: the runtime's, 3.12.
is_312() { [[ -n $1 ]] && "$1" -c 'import sys; assert sys.version_info[:2] == (3, 12)' 2>/dev/null; }
if [[ -z ${CHECK_PYTHON:-} ]]; then
  # python3.12 on PATH, else one installed by pyenv (its shim fails when not selected).
  for candidate in "$(command -v python3.12 || true)" \
                   "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.12*/bin/python3.12; do
    if is_312 "$candidate"; then CHECK_PYTHON=$candidate; break; fi
  done
fi
if ! is_312 "${CHECK_PYTHON:-}"; then
  echo "error: no Python 3.12 found (python3.12 on PATH, \$PYENV_ROOT/versions/3.12*," \
       "CHECK_PYTHON=${CHECK_PYTHON:-unset}). The Lambda runtime is Python 3.12 and" \
       "bytecode is valid only for the version that compiled it, so the zip cannot be" \
       "built without one: install it (e.g. 'pyenv install 3.12') or set" \
       "CHECK_PYTHON=/path/to/python3.12" >&2
  exit 1
fi
echo "runtime Python: $("$CHECK_PYTHON" -c 'import sys; print(sys.version.split()[0])') ($CHECK_PYTHON)"

rm -rf "$STAGE" "$ZIP" "$BUILD/lambda_wheel"
mkdir -p "$STAGE" "$(dirname "$ZIP")"
CHECK=$(mktemp -d)
trap 'chmod -R u+w "$CHECK" 2>/dev/null; rm -rf "$CHECK"' EXIT

if [[ -n ${LAMBDA_REQUIREMENTS:-} ]]; then
  read -r -a REQUIREMENTS <<< "$LAMBDA_REQUIREMENTS"
else
  echo "building the s3dynamo wheel from $ROOT"
  mkdir -p "$BUILD/lambda_wheel"
  pip_quiet wheel --quiet --no-deps --wheel-dir "$BUILD/lambda_wheel" "$ROOT"
  # langgraph: the example's graph API; the package itself needs only langgraph-checkpoint.
  WHEEL=$(ls "$BUILD"/lambda_wheel/langgraph_checkpoint_s3dynamo-*.whl)
  REQUIREMENTS=("$WHEEL${EXTRAS:+[$EXTRAS]}" "langgraph>=1.2")
fi

echo "installing ${REQUIREMENTS[*]##*/} with dependencies for Python 3.12 / $WHEEL_PLATFORM"
pip_quiet install --quiet --no-compile --no-warn-conflicts --target "$STAGE" "${PLATFORM[@]}" \
  "${REQUIREMENTS[@]}"
rm -rf "$BUILD/lambda_wheel"
cp "$HANDLER" "$STAGE/app.py"

# Bytes of the regular files under a directory: what a zip holds, whatever filesystem the
# build directory is on (a directory's own size differs from one to another).
size() { find "$1" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }'; }
before=$(size "$STAGE")

echo "trimming what the Lambda runtime does not need"
for name in "${RUNTIME_PROVIDED[@]}"; do
  rm -rf "${STAGE:?}/$name"
  find "$STAGE" -maxdepth 1 -type d -iname "${name}-*.dist-info" -exec rm -rf {} +
done
# python_dateutil's dist-info is named after the distribution, not the module.
find "$STAGE" -maxdepth 1 -type d -iname "python_dateutil-*.dist-info" -exec rm -rf {} +
# Bytecode is compiled below, by the runtime's Python; none other may stay.
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
# Debug sections only (DWARF): the code, symbols and relocations stay as built. GNU strip
# reads x86_64 objects; llvm-strip reads both architectures.
STRIP=""
if [[ $ARCH == x86_64 ]] && command -v strip >/dev/null; then STRIP=strip
elif command -v llvm-strip >/dev/null; then STRIP=llvm-strip
elif command -v aarch64-linux-gnu-strip >/dev/null; then STRIP=aarch64-linux-gnu-strip
fi
if [[ -n $STRIP ]]; then
  # Not the libraries auditwheel vendors into <package>.libs/ (numpy's OpenBLAS): patchelf
  # rewrote their headers, and strip leaves them unloadable ("ELF load command
  # address/offset not page-aligned").
  find "$STAGE" -name '*.so' -not -path '*.libs/*' -exec "$STRIP" --strip-debug {} +
else
  echo "note: no strip for $ARCH on PATH (strip, llvm-strip), extension modules keep their debug sections"
fi

unzipped_source=$(size "$STAGE")

echo "compiling every .py to unchecked-hash bytecode with Python 3.12"
# co_filename as Lambda unzips the code (/var/task), not this machine's build path; the
# runtime also fixes it to where the .py is found. The same sources give the same bytes:
# one process compiling in one order (marshal marks an object shared by its reference
# count, which what was compiled before in the process changes, so workers sharing the
# files out at random give other bytes), and a fixed hash seed (a set of constants is
# marshalled in its iteration order). -s -P of -I, and an empty environment for -E.
if ! compiled=$(env -i PATH="$PATH" PYTHONHASHSEED=0 "$CHECK_PYTHON" -s -P -m compileall -q -j 1 \
                --invalidation-mode unchecked-hash -s "$STAGE" -p /var/task "$STAGE" 2>&1); then
  echo "$compiled" >&2
  echo "error: Python 3.12 could not compile the files above; the runtime could not import them" >&2
  exit 1
fi

unzipped=$(size "$STAGE")
(cd "$STAGE" && find . -type f | LC_ALL=C sort | zip -q -X -9 "$ZIP" -@)
zipped=$(stat -c %s "$ZIP")
# The same zip without its .pyc entries, byte for byte: each entry is compressed on its
# own, so that is the zip's size less theirs (data, local header and central directory).
zipped_source=$("$CHECK_PYTHON" -I -c '
import sys, zipfile
zf = zipfile.ZipFile(sys.argv[1])
pyc = [i for i in zf.infolist() if i.filename.endswith(".pyc")]
print(sum(i.compress_size + 76 + 2 * len(i.filename) + 2 * len(i.extra) + len(i.comment) for i in pyc))
' "$ZIP")
zipped_source=$((zipped - zipped_source))

echo "checking the zip's listing"
"$CHECK_PYTHON" -I "$ROOT/scripts/lambda_check.py" listing "$ZIP" "$ARCH"

if [[ $(uname -m) == "$MACHINE" ]]; then
  echo "checking that the zip imports from its bytecode in an isolated, read-only Python 3.12"
  mkdir -p "$CHECK/task" "$CHECK/runtime"
  unzip -q "$ZIP" -d "$CHECK/task"
  # boto3 as the runtime provides it: its own directory, after the task's files on the
  # path, compiled as the runtime's copy is.
  pip_quiet install --quiet --no-compile --no-warn-conflicts --target "$CHECK/runtime" \
    "${PLATFORM[@]}" boto3
  "$CHECK_PYTHON" -I -m compileall -q -j 0 "$CHECK/runtime" >/dev/null
  # /var/task is read-only (-B also keeps Python from writing bytecode there).
  chmod -R a-w "$CHECK/task"
  # As the Terraform example configures the function: table, bucket, the KMS key id.
  env -i PATH="$PATH" S3DYNAMO_TABLE=t S3DYNAMO_BUCKET=b S3DYNAMO_KMS_KEY_ID=alias/check \
    AWS_REGION=us-east-1 AWS_DEFAULT_REGION=us-east-1 AWS_ACCESS_KEY_ID=check \
    AWS_SECRET_ACCESS_KEY=check \
    "$CHECK_PYTHON" -I -S -B "$ROOT/scripts/lambda_check.py" imports "$CHECK/task" "$CHECK/runtime"
else
  echo "note: this machine is $(uname -m), not $MACHINE: the zip's import is not checked" \
       "here, only its listing (run the import check on an $MACHINE machine)"
fi

mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }
echo "what it holds (unzipped, largest first):"
(cd "$STAGE" && du -sb -- * | sort -rn | head -12 |
  awk '{ printf "  %10d  %s\n", $1, $2 }')
echo "  $(find "$STAGE" -type f | wc -l) files: $(find "$STAGE" -name '*.py' | wc -l) .py," \
     "$(find "$STAGE" -name '*.pyc' | wc -l) .pyc, $(find "$STAGE" -name '*.so' | wc -l) .so"
echo "installed before trimming: $before bytes ($(mib "$before"))"
echo "unzipped: $unzipped bytes ($(mib "$unzipped")); without bytecode $unzipped_source ($(mib "$unzipped_source"))"
echo "zipped:   $zipped bytes ($(mib "$zipped")); without bytecode $zipped_source ($(mib "$zipped_source"))"
# The figures above, with the Python and every package they were measured with, for
# examples/lambda_agent/README.md (scripts/lambda_figures.py writes its table from them).
"$CHECK_PYTHON" -I "$ROOT/scripts/lambda_figures.py" measure "$STAGE" "$ZIP" "$ARCH" \
  "$before" "$unzipped_source" "$unzipped" "$zipped_source" "$zipped" > "$STAGE.figures.json"
echo "figures: $STAGE.figures.json"
echo "built for Lambda python3.12 / $ARCH: $ZIP"
