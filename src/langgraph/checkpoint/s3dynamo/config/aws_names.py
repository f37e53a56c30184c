"""The names AWS takes, checked before any request: a region (`region_name`, and
`region_of`, which finds it where the AWS tools look), a bucket and a table
(`bucket_problem`, `table_problem`: the rules S3 and DynamoDB apply when one is created).

A region is read as a key of S3DYNAMO_KEYS is: spaces around it are dropped (a variable
copied with its trailing space), quotes are refused (they would be part of the value).
Each error names the variable or argument that held the value, what came and the fix.
Pure: no client is built here.
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Mapping

from langgraph.checkpoint.s3dynamo.config.arguments import text
from langgraph.checkpoint.s3dynamo.errors import InvalidConfigError

# What botocore accepts as a region (a DNS label, not only digits), which AWS's own
# region names (eu-west-1, us-gov-west-1, cn-north-1) and local servers' ("local") are.
REGION = re.compile(r"(?![0-9]+$)(?!-)[a-zA-Z0-9-]{1,63}(?<!-)")
QUOTES = ("'", '"')
AN_AWS_REGION = "an AWS region, such as 'eu-west-1'"
# The region variables, in the order AWS tools read them after the saver's own setting.
REGION_VARIABLES = ("AWS_REGION", "AWS_DEFAULT_REGION")

BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
# Names S3 keeps for its own kinds of bucket (general purpose bucket naming rules).
BUCKET_RESERVED_PREFIXES = ("xn--", "sthree-", "amzn-s3-demo-")
BUCKET_RESERVED_SUFFIXES = ("-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3")
BUCKET_RULES = (
    "S3 bucket names are 3 to 63 characters of lowercase letters, digits, dots and hyphens, "
    "beginning and ending with a letter or digit, with no '..', not shaped like an IP "
    f"address, not beginning with {', '.join(BUCKET_RESERVED_PREFIXES)} and not ending with "
    f"{', '.join(BUCKET_RESERVED_SUFFIXES)}"
)
TABLE = re.compile(r"[a-zA-Z0-9_.-]{3,255}")
TABLE_ARN = re.compile(r"arn:aws[a-z-]*:dynamodb:[a-z0-9-]+:\d{12}:table/(?P<name>.+)")
TABLE_RULES = "DynamoDB table names are 3 to 255 characters of letters, digits, '_', '.' and '-'"


def region_name(name: str, value: object) -> str:
    """The region `value` of the setting or variable `name`, without the spaces around
    it; anything botocore would refuse is an error naming `name`, what came and the fix."""
    region = text(name, value, what=AN_AWS_REGION).strip()
    if REGION.fullmatch(region):
        return region
    if region[:1] in QUOTES or region[-1:] in QUOTES:
        fix = "remove the quotes: they are part of the value, not of the region's name"
    elif not region:
        fix = "set it to the region of the deployment's table and bucket, or unset it"
    else:
        fix = "set it to the region of the deployment's table and bucket"
    raise InvalidConfigError(
        f"{name} is {value!r}, not an AWS region name: expected letters, digits and "
        f"hyphens, such as 'eu-west-1' (spaces around it are ignored); {fix}. Nothing was sent"
    )


def region_of(given: str | None, env: Mapping[str, str] | None = None) -> str | None:
    """The region a client is built for: `given` (the saver's setting, checked where it
    was made), else AWS_REGION, else AWS_DEFAULT_REGION, each checked by name; None when
    none is set (botocore then reads the AWS config file's profile)."""
    if given is not None:
        return given
    env = os.environ if env is None else env
    for variable in REGION_VARIABLES:
        if raw := env.get(variable):
            return region_name(variable, raw)
    return None


def bucket_problem(bucket: str) -> str | None:
    """What S3 would refuse in `bucket` as the name of a new bucket, or None."""
    shaped = BUCKET.fullmatch(bucket) and ".." not in bucket
    reserved = bucket.startswith(BUCKET_RESERVED_PREFIXES) or bucket.endswith(
        BUCKET_RESERVED_SUFFIXES
    )
    if shaped and not reserved and not _ip_address(bucket):
        return None
    return f"bucket {bucket!r} is no name S3 gives a new bucket: {BUCKET_RULES}"


def table_problem(table: str) -> str | None:
    """What DynamoDB would refuse in `table` (a name, or a table's ARN) as the name of a
    new table, or None."""
    arn = TABLE_ARN.fullmatch(table)
    if TABLE.fullmatch(arn.group("name") if arn else table):
        return None
    return f"table {table!r} is no name DynamoDB gives a new table: {TABLE_RULES}"


def _ip_address(name: str) -> bool:
    try:
        ipaddress.IPv4Address(name)
    except ValueError:
        return False
    return True
