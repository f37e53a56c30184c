# Retention in the example: the environment both functions get, and the retention job's
# schedule. Plans only, against a mocked AWS provider: no credentials and no network.

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

run "default_retention_is_unchanged" {
  command = plan

  assert {
    condition     = aws_lambda_function.agent.environment[0].variables["S3DYNAMO_RETENTION"] == "30d"
    error_message = "the example's default retention must still reach the functions as S3DYNAMO_RETENTION=30d"
  }

  assert {
    condition     = !contains(keys(aws_lambda_function.agent.environment[0].variables), "S3DYNAMO_TTL") && !contains(keys(aws_lambda_function.agent.environment[0].variables), "S3DYNAMO_RETENTION_STRATEGY")
    error_message = "the default must add nothing but S3DYNAMO_RETENTION"
  }

  assert {
    condition     = aws_cloudwatch_event_rule.retention["s3dynamo-agent-retention"].schedule_expression == "rate(1 day)"
    error_message = "the retention job must keep its daily schedule"
  }
}

run "retention_strategy_reaches_both_functions" {
  command = plan

  variables {
    retention_strategy = "keep_latest"
  }

  assert {
    condition     = aws_lambda_function.agent.environment[0].variables["S3DYNAMO_RETENTION_STRATEGY"] == "keep_latest" && aws_lambda_function.retention["s3dynamo-agent-retention"].environment[0].variables["S3DYNAMO_RETENTION_STRATEGY"] == "keep_latest"
    error_message = "retention_strategy must reach both functions as S3DYNAMO_RETENTION_STRATEGY"
  }
}

run "retention_keep_last_reaches_both_functions" {
  command = plan

  variables {
    retention_strategy  = "keep_latest"
    retention_keep_last = 3
  }

  assert {
    condition     = aws_lambda_function.agent.environment[0].variables["S3DYNAMO_RETENTION_KEEP_LAST"] == "3" && aws_lambda_function.retention["s3dynamo-agent-retention"].environment[0].variables["S3DYNAMO_RETENTION_KEEP_LAST"] == "3"
    error_message = "retention_keep_last must reach both functions as S3DYNAMO_RETENTION_KEEP_LAST"
  }
}

run "checkpointer_ttl_sets_S3DYNAMO_TTL_and_the_schedule" {
  command = plan

  variables {
    retention = null
    checkpointer_ttl = {
      strategy               = "keep_latest"
      default_ttl            = 43200
      sweep_interval_minutes = 60
    }
  }

  assert {
    condition     = jsondecode(aws_lambda_function.agent.environment[0].variables["S3DYNAMO_TTL"]) == { strategy = "keep_latest", default_ttl = 43200, sweep_interval_minutes = 60 }
    error_message = "the agent's function must get langgraph.json's checkpointer.ttl as S3DYNAMO_TTL"
  }

  assert {
    condition     = aws_lambda_function.retention["s3dynamo-agent-retention"].environment[0].variables["S3DYNAMO_TTL"] == aws_lambda_function.agent.environment[0].variables["S3DYNAMO_TTL"]
    error_message = "the retention job must get the same S3DYNAMO_TTL as the agent"
  }

  assert {
    condition     = !contains(keys(aws_lambda_function.agent.environment[0].variables), "S3DYNAMO_RETENTION")
    error_message = "checkpointer_ttl must not set S3DYNAMO_RETENTION as well"
  }

  assert {
    condition     = aws_cloudwatch_event_rule.retention["s3dynamo-agent-retention"].schedule_expression == "rate(60 minutes)"
    error_message = "the schedule must follow sweep_interval_minutes"
  }
}

run "one_minute_sweeps_use_the_singular_unit" {
  command = plan

  variables {
    retention        = null
    checkpointer_ttl = { default_ttl = 90, sweep_interval_minutes = 1 }
  }

  assert {
    condition     = aws_cloudwatch_event_rule.retention["s3dynamo-agent-retention"].schedule_expression == "rate(1 minute)"
    error_message = "EventBridge takes rate(1 minute), not rate(1 minutes)"
  }
}

run "checkpointer_ttl_without_interval_keeps_the_schedule" {
  command = plan

  variables {
    retention        = null
    checkpointer_ttl = { default_ttl = 43200 }
  }

  assert {
    condition     = length(aws_lambda_function.retention) == 1 && aws_cloudwatch_event_rule.retention["s3dynamo-agent-retention"].schedule_expression == "rate(1 day)"
    error_message = "checkpointer_ttl alone must create the retention job on retention_schedule"
  }
}

run "no_retention_no_job" {
  command = plan

  variables {
    retention = null
  }

  assert {
    condition     = length(aws_lambda_function.retention) == 0 && length(aws_cloudwatch_event_rule.retention) == 0
    error_message = "with neither retention nor checkpointer_ttl there must be no retention job"
  }
}

run "checkpointer_ttl_with_the_default_retention_fails" {
  command = plan

  variables {
    checkpointer_ttl = { default_ttl = 43200 }
  }

  expect_failures = [var.checkpointer_ttl]
}

run "fractional_sweep_interval_fails" {
  command = plan

  variables {
    retention        = null
    checkpointer_ttl = { default_ttl = 43200, sweep_interval_minutes = 1.5 }
  }

  expect_failures = [var.checkpointer_ttl]
}
