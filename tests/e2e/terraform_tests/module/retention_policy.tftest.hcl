# Which document the retention policy carries: the delete strategy's (keys, stamps and
# deletes) unless a strategy keeps each idle thread's latest checkpoints, which opens their
# metadata. The documents themselves are checked against the requests the code sends
# (tests/e2e/test_lambda_example.py); here only the choice, applied to a mocked provider.

mock_provider "aws" {
  # Every policy document renders valid JSON, so that applying to the mock accepts it.
  mock_data "aws_iam_policy_document" {
    defaults = { json = "{}" }
  }
  override_data {
    target = data.aws_iam_policy_document.retention
    values = { json = "{\"Sid\":\"delete\"}" }
  }
  override_data {
    target = data.aws_iam_policy_document.retention_keep_latest
    values = { json = "{\"Sid\":\"keep_latest\"}" }
  }
}

variables {
  table_name  = "agent-checkpoints"
  bucket_name = "agent-checkpoints-test"
}

run "delete_strategy" {
  command = apply

  variables {
    retention = "30d"
  }

  assert {
    condition     = aws_iam_policy.retention.policy == "{\"Sid\":\"delete\"}"
    error_message = "retention with the delete strategy must carry the retention document"
  }
}

run "retention_keep_latest" {
  command = apply

  variables {
    retention          = "30d"
    retention_strategy = "keep_latest"
  }

  assert {
    condition     = aws_iam_policy.retention.policy == "{\"Sid\":\"keep_latest\"}"
    error_message = "retention_strategy keep_latest must carry the retention_keep_latest document"
  }
}

run "checkpointer_ttl_keep_latest" {
  command = apply

  variables {
    checkpointer_ttl = {
      strategy    = "keep_latest"
      default_ttl = 1440
    }
  }

  assert {
    condition     = aws_iam_policy.retention.policy == "{\"Sid\":\"keep_latest\"}"
    error_message = "checkpointer_ttl with keep_latest must carry the retention_keep_latest document"
  }
}

run "checkpointer_ttl_delete" {
  command = apply

  variables {
    checkpointer_ttl = {
      default_ttl = 1440
    }
  }

  assert {
    condition     = aws_iam_policy.retention.policy == "{\"Sid\":\"delete\"}"
    error_message = "checkpointer_ttl without a strategy deletes, and must carry the retention document"
  }
}
