"""moto server answering one request at a time, for tests over HTTP on loopback.

moto's TransactWriteItems deep-copies its tables to roll back a refused condition, and a
request that changes a table meanwhile breaks that copy or the rollback (see
`testing.serialize_moto`, which does the same for moto in process). moto's own server
entry point runs its app on a threaded werkzeug server with no such guard, so the
saver's parallel requests (waves, parallel graph tasks, two runs on one thread) could
corrupt its tables. This runs the same app behind one lock: connections stay
concurrent, moto handles one request at a time. DynamoDB itself needs none of this.

Usage: python -m langgraph.checkpoint.s3dynamo.moto_serve HOST PORT
(or the file's path, with any Python that has moto[server]: it imports nothing else).
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Iterable
from typing import Any


def serve(host: str, port: int) -> None:
    from moto.moto_server.werkzeug_app import (
        DomainDispatcherApplication,
        MotoRequestHandler,
        create_backend_app,
    )
    from werkzeug.serving import run_simple

    os.environ.setdefault("MOTO_PORT", str(port))  # as moto's own entry point does
    app = DomainDispatcherApplication(create_backend_app)
    lock = threading.Lock()

    def one_at_a_time(
        environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        with lock:
            # The body is produced inside the lock too: moto may build it lazily.
            return list(app(environ, start_response))

    run_simple(host, port, one_at_a_time, threaded=True, request_handler=MotoRequestHandler)


if __name__ == "__main__":
    serve(sys.argv[1], int(sys.argv[2]))
