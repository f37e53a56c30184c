"""The names AWS takes, checked before any request: a region (`region_name`, and
`region_of`, which finds it where the AWS tools look).

A region is read as a key of S3DYNAMO_KEYS is: spaces around it are dropped (a variable
copied with its trailing space), quotes are refused (they would be part of the value).
Each error names the variable or argument that held the value, what came and the fix.
Pure: no client is built here.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from langgraph.checkpoint.s3dynamo.arguments import text
from langgraph.checkpoint.s3dynamo.errors import InvalidConfigError

# What botocore accepts as a region (a DNS label, not only digits), which AWS's own
# region names (eu-west-1, us-gov-west-1, cn-north-1) and local servers' ("local") are.
REGION = re.compile(r"(?![0-9]+$)(?!-)[a-zA-Z0-9-]{1,63}(?<!-)")
QUOTES = ("'", '"')
AN_AWS_REGION = "an AWS region, such as 'eu-west-1'"
# The region variables, in the order AWS tools read them after the saver's own setting.
REGION_VARIABLES = ("AWS_REGION", "AWS_DEFAULT_REGION")


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
