"""s3dynamo demo: run `make demo`, or `s3dynamo demo` once the package is installed.

The agent and the run live in `langgraph.checkpoint.s3dynamo.cli.demo` (so the installed
command can run it too): a support agent with a 147 kB order history and a refund
interrupt, on a moto server on 127.0.0.1, built with `S3DynamoSaver.from_env()`, driven
with `ainvoke` from two processes, sealed at rest, then inspected with the `s3dynamo`
command line. `python examples/demo.py --keep` leaves the server running afterwards.
"""

from __future__ import annotations

import sys

from langgraph.checkpoint.s3dynamo.cli.demo import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
