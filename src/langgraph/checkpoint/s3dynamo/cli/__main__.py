"""`python -m langgraph.checkpoint.s3dynamo.cli`: the same as the `s3dynamo` command."""

from langgraph.checkpoint.s3dynamo.cli import main

main()
