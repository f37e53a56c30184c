# The key table: none without data subjects; with them, a table of pk/sk strings, on
# demand, deletion-protected, point-in-time recovery on with its own short window, the data
# table's KMS key; the environment names it. Applied to a mocked provider: no
# credentials and no network.

mock_provider "aws" {
  mock_data "aws_iam_policy_document" {
    defaults = { json = "{}" }
  }
}

variables {
  table_name  = "agent-checkpoints"
  bucket_name = "agent-checkpoints-test"
}

run "no_subjects_no_key_table" {
  command = apply

  assert {
    condition     = length(aws_dynamodb_table.keys) == 0
    error_message = "without subject_field or subject_label there must be no key table"
  }

  assert {
    condition     = output.key_table_name == null && output.key_table_arn == null
    error_message = "key_table_name and key_table_arn must be null without a key table"
  }

  assert {
    condition     = length([for name in keys(output.environment) : name if startswith(name, "S3DYNAMO_SUBJECT") || name == "S3DYNAMO_KEY_TABLE"]) == 0
    error_message = "without subjects the environment must not name subjects or a key table"
  }
}

run "subject_field_makes_the_key_table" {
  command = apply

  variables {
    subject_field     = "user_id"
    table_kms_key_arn = "arn:aws:kms:eu-west-1:123456789012:key/table-key"
  }

  assert {
    condition     = aws_dynamodb_table.keys[0].name == "agent-checkpoints-keys"
    error_message = "the key table is named <table_name>-keys by default, as the saver's default"
  }

  assert {
    condition = (
      aws_dynamodb_table.keys[0].hash_key == "pk"
      && aws_dynamodb_table.keys[0].range_key == "sk"
      && aws_dynamodb_table.keys[0].attribute == toset([{ name = "pk", type = "S" }, { name = "sk", type = "S" }])
      && length(aws_dynamodb_table.keys[0].global_secondary_index) == 0
    )
    error_message = "the key table's keys are pk (S) and sk (S), with no index"
  }

  assert {
    condition     = aws_dynamodb_table.keys[0].billing_mode == "PAY_PER_REQUEST"
    error_message = "the key table is on demand, like the data table"
  }

  assert {
    condition     = aws_dynamodb_table.keys[0].deletion_protection_enabled == true
    error_message = "the key table is deletion-protected by default"
  }

  assert {
    condition     = aws_dynamodb_table.keys[0].point_in_time_recovery[0].enabled == true && aws_dynamodb_table.keys[0].point_in_time_recovery[0].recovery_period_in_days == 7
    error_message = "the key table has point-in-time recovery, 7 days by default"
  }

  assert {
    condition = (
      aws_dynamodb_table.keys[0].server_side_encryption[0].enabled == true
      && aws_dynamodb_table.keys[0].server_side_encryption[0].kms_key_arn == "arn:aws:kms:eu-west-1:123456789012:key/table-key"
    )
    error_message = "the key table is encrypted with the data table's KMS key"
  }

  assert {
    condition     = output.key_table_name == "agent-checkpoints-keys" && output.key_table_arn == aws_dynamodb_table.keys[0].arn
    error_message = "key_table_name and key_table_arn must name the key table"
  }

  assert {
    condition = (
      output.environment["S3DYNAMO_SUBJECT_FIELD"] == "user_id"
      && output.environment["S3DYNAMO_KEY_TABLE"] == "agent-checkpoints-keys"
      && !contains(keys(output.environment), "S3DYNAMO_SUBJECT_LABEL")
    )
    error_message = "the environment must declare the subject field and name the key table"
  }
}

run "subject_label_alone_with_a_name_and_a_window" {
  command = apply

  variables {
    subject_label                 = 1
    key_table_name                = "agent-subject-keys"
    key_table_recovery_days       = 3
    key_table_deletion_protection = false
  }

  assert {
    condition = (
      aws_dynamodb_table.keys[0].name == "agent-subject-keys"
      && aws_dynamodb_table.keys[0].point_in_time_recovery[0].recovery_period_in_days == 3
      && aws_dynamodb_table.keys[0].deletion_protection_enabled == false
    )
    error_message = "key_table_name, key_table_recovery_days and key_table_deletion_protection must reach the key table"
  }

  assert {
    condition = (
      output.environment["S3DYNAMO_SUBJECT_LABEL"] == "1"
      && output.environment["S3DYNAMO_KEY_TABLE"] == "agent-subject-keys"
      && !contains(keys(output.environment), "S3DYNAMO_SUBJECT_FIELD")
    )
    error_message = "subject_label alone must reach the saver as S3DYNAMO_SUBJECT_LABEL, with the key table's name"
  }

  assert {
    condition     = aws_dynamodb_table.this.deletion_protection_enabled == true
    error_message = "the key table's deletion protection is its own: the data table's stays on"
  }
}

run "recovery_window_outside_1_to_35_fails" {
  command = plan

  variables {
    subject_field           = "user_id"
    key_table_recovery_days = 36
  }

  expect_failures = [var.key_table_recovery_days]
}

run "empty_subject_field_fails" {
  command = plan

  variables {
    subject_field = " "
  }

  expect_failures = [var.subject_field]
}

run "negative_subject_label_fails" {
  command = plan

  variables {
    subject_label = -1
  }

  expect_failures = [var.subject_label]
}
