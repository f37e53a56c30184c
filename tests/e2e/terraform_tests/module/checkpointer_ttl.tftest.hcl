# The module's `environment` output for each way of configuring retention, and the
# validation that keeps checkpointer_ttl and retention apart. Plans only, against a mocked
# AWS provider: no credentials and no network.

mock_provider "aws" {}

variables {
  table_name  = "agent-checkpoints"
  bucket_name = "agent-checkpoints-test"
}

run "retention_alone_is_unchanged" {
  command = plan

  variables {
    retention = "30d"
  }

  assert {
    condition     = output.environment["S3DYNAMO_RETENTION"] == "30d"
    error_message = "retention must reach the saver as S3DYNAMO_RETENTION"
  }

  assert {
    condition     = !contains(keys(output.environment), "S3DYNAMO_RETENTION_STRATEGY") && !contains(keys(output.environment), "S3DYNAMO_TTL")
    error_message = "retention alone must add nothing but S3DYNAMO_RETENTION"
  }
}

run "retention_with_keep_latest" {
  command = plan

  variables {
    retention          = "12h"
    retention_strategy = "keep_latest"
  }

  assert {
    condition     = output.environment["S3DYNAMO_RETENTION"] == "12h" && output.environment["S3DYNAMO_RETENTION_STRATEGY"] == "keep_latest"
    error_message = "retention_strategy must reach the saver as S3DYNAMO_RETENTION_STRATEGY"
  }
}

run "checkpointer_ttl_becomes_S3DYNAMO_TTL" {
  command = plan

  variables {
    checkpointer_ttl = {
      strategy               = "keep_latest"
      default_ttl            = 43200
      sweep_interval_minutes = 60
    }
  }

  assert {
    condition     = jsondecode(output.environment["S3DYNAMO_TTL"]) == { strategy = "keep_latest", default_ttl = 43200, sweep_interval_minutes = 60 }
    error_message = "S3DYNAMO_TTL must be langgraph.json's checkpointer.ttl, as JSON: ${output.environment["S3DYNAMO_TTL"]}"
  }

  assert {
    condition     = !contains(keys(output.environment), "S3DYNAMO_RETENTION") && !contains(keys(output.environment), "S3DYNAMO_RETENTION_STRATEGY")
    error_message = "checkpointer_ttl must not set the retention variables as well"
  }
}

run "checkpointer_ttl_defaults_and_omissions" {
  command = plan

  variables {
    checkpointer_ttl = {
      default_ttl = 90
    }
  }

  assert {
    condition     = output.environment["S3DYNAMO_TTL"] == "{\"default_ttl\":90,\"strategy\":\"delete\"}"
    error_message = "strategy defaults to delete and a missing sweep interval is left out: ${output.environment["S3DYNAMO_TTL"]}"
  }
}

run "checkpointer_ttl_and_retention_together_fail" {
  command = plan

  variables {
    retention        = "30d"
    checkpointer_ttl = { default_ttl = 43200 }
  }

  expect_failures = [var.checkpointer_ttl]
}

run "unknown_strategy_fails" {
  command = plan

  variables {
    checkpointer_ttl = { strategy = "archive", default_ttl = 43200 }
  }

  expect_failures = [var.checkpointer_ttl]
}

run "non_positive_default_ttl_fails" {
  command = plan

  variables {
    checkpointer_ttl = { default_ttl = 0 }
  }

  expect_failures = [var.checkpointer_ttl]
}

run "non_positive_sweep_interval_fails" {
  command = plan

  variables {
    checkpointer_ttl = { default_ttl = 60, sweep_interval_minutes = -5 }
  }

  expect_failures = [var.checkpointer_ttl]
}

run "retention_strategy_without_retention_fails" {
  command = plan

  variables {
    retention_strategy = "keep_latest"
  }

  expect_failures = [var.retention_strategy]
}

run "retention_with_keep_last" {
  command = plan

  variables {
    retention           = "12h"
    retention_strategy  = "keep_latest"
    retention_keep_last = 5
  }

  assert {
    condition     = output.environment["S3DYNAMO_RETENTION_STRATEGY"] == "keep_latest" && output.environment["S3DYNAMO_RETENTION_KEEP_LAST"] == "5"
    error_message = "retention_keep_last must reach the saver as S3DYNAMO_RETENTION_KEEP_LAST"
  }
}

run "keep_last_1_adds_nothing" {
  command = plan

  variables {
    retention          = "12h"
    retention_strategy = "keep_latest"
  }

  assert {
    condition     = !contains(keys(output.environment), "S3DYNAMO_RETENTION_KEEP_LAST")
    error_message = "the default keep_last (1) must add no variable"
  }
}

run "keep_last_with_delete_fails" {
  command = plan

  variables {
    retention           = "12h"
    retention_keep_last = 3
  }

  expect_failures = [var.retention_keep_last]
}

run "keep_last_below_1_fails" {
  command = plan

  variables {
    retention           = "12h"
    retention_strategy  = "keep_latest"
    retention_keep_last = 0
  }

  expect_failures = [var.retention_keep_last]
}

run "checkpointer_ttl_keep_last_goes_in_S3DYNAMO_TTL" {
  command = plan

  variables {
    checkpointer_ttl = { strategy = "keep_latest", default_ttl = 43200, keep_last = 3 }
  }

  assert {
    condition     = jsondecode(output.environment["S3DYNAMO_TTL"]) == { strategy = "keep_latest", default_ttl = 43200, keep_last = 3 }
    error_message = "keep_last must reach the saver inside S3DYNAMO_TTL: ${output.environment["S3DYNAMO_TTL"]}"
  }
}

run "checkpointer_ttl_keep_last_with_delete_fails" {
  command = plan

  variables {
    checkpointer_ttl = { default_ttl = 43200, keep_last = 3 }
  }

  expect_failures = [var.checkpointer_ttl]
}
