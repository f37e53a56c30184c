# The agent's function with and without SnapStart. Plans only, against a mocked AWS
# provider: no credentials and no network.

mock_provider "aws" {
  # Mocked computed values are known at plan time, so plans can be asserted on.
  override_during = plan
  source          = "./tests/mocks"
}

variables {
  bucket_name = "agent-checkpoints-test"
  # Any existing file: the function only hashes it, and the mocked provider uploads nothing.
  package_path = "main.tf"
}

run "off_by_default" {
  command = plan

  assert {
    condition     = aws_lambda_function.agent.publish == false
    error_message = "without snapstart the function must not be published"
  }

  assert {
    condition     = length(aws_lambda_function.agent.snap_start) == 0
    error_message = "without snapstart the function must have no snap_start block"
  }

  assert {
    condition     = length(aws_lambda_alias.live) == 0
    error_message = "without snapstart there must be no alias"
  }
}

run "off_invokes_the_unqualified_function" {
  command = plan

  override_resource {
    target          = aws_lambda_function.agent
    override_during = plan
    values = {
      version = "$LATEST"
      arn     = "arn:aws:lambda:us-east-1:123456789012:function:s3dynamo-agent"
    }
  }

  assert {
    condition     = output.function_arn == "arn:aws:lambda:us-east-1:123456789012:function:s3dynamo-agent"
    error_message = "without snapstart function_arn must be the function's unqualified ARN"
  }
}

run "on_publishes_and_snapshots" {
  command = plan

  variables {
    snapstart = true
  }

  assert {
    condition     = aws_lambda_function.agent.publish == true
    error_message = "with snapstart the function must be published"
  }

  assert {
    condition     = [for s in aws_lambda_function.agent.snap_start : s.apply_on] == ["PublishedVersions"]
    error_message = "with snapstart the function must have snap_start { apply_on = \"PublishedVersions\" }"
  }

  assert {
    condition     = length(aws_lambda_alias.live) == 1 && aws_lambda_alias.live[0].name == "live"
    error_message = "with snapstart there must be one alias, \"live\""
  }

  assert {
    condition     = length(aws_lambda_function.retention) == 1 && aws_lambda_function.retention["s3dynamo-agent-retention"].publish != true && length(aws_lambda_function.retention["s3dynamo-agent-retention"].snap_start) == 0
    error_message = "snapstart must leave the retention function as it was"
  }
}

run "on_invokes_the_alias_of_the_published_version" {
  command = plan

  variables {
    snapstart = true
  }

  # Mocked computed values, fixed so the assertions can name them.
  override_resource {
    target          = aws_lambda_function.agent
    override_during = plan
    values = {
      version = "7"
      arn     = "arn:aws:lambda:us-east-1:123456789012:function:s3dynamo-agent"
    }
  }

  override_resource {
    target          = aws_lambda_alias.live
    override_during = plan
    values = {
      arn = "arn:aws:lambda:us-east-1:123456789012:function:s3dynamo-agent:live"
    }
  }

  assert {
    condition     = aws_lambda_alias.live[0].function_version == "7" && aws_lambda_alias.live[0].function_name == aws_lambda_function.agent.function_name
    error_message = "the alias must point at the version the function published"
  }

  assert {
    condition     = output.function_arn == "arn:aws:lambda:us-east-1:123456789012:function:s3dynamo-agent:live"
    error_message = "with snapstart function_arn must be the alias's ARN, not the function's"
  }

  assert {
    condition     = output.function_version == "7"
    error_message = "function_version must be the published version"
  }
}
