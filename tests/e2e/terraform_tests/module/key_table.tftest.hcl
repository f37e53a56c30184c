# The key table: none without data subjects; with them, a table of pk/sk strings, on
# demand, deletion-protected, point-in-time recovery on with its own short window, the data
# table's KMS key; the environment names it, and the policies grant on it what subjects
# need. Applied to a mocked provider: no credentials and no network. Which actions the
# code sends is checked against moto (tests/e2e/test_lambda_example.py); here, that the
# module wires them to the right table only when subjects are declared.

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

  assert {
    condition = length([
      for document in [
        data.aws_iam_policy_document.saver,
        data.aws_iam_policy_document.maintenance,
        data.aws_iam_policy_document.retention_keep_latest,
        data.aws_iam_policy_document.memory,
      ] : document if anytrue([for s in document.statement : startswith(coalesce(s.sid, "-"), "Subject")])
    ]) == 0
    error_message = "without subjects no policy may carry a Subject* statement"
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

  # The saver: its fences in the data table, its keys in the key table; nothing else on it.
  assert {
    condition = {
      for s in data.aws_iam_policy_document.saver.statement : s.sid => { actions = s.actions, resources = s.resources }
      if startswith(coalesce(s.sid, "-"), "Subject")
      } == {
      SubjectFences = {
        actions   = toset(["dynamodb:ConditionCheckItem", "dynamodb:GetItem"])
        resources = toset([aws_dynamodb_table.this.arn])
      }
      SubjectKeys = {
        actions   = toset(["dynamodb:GetItem", "dynamodb:PutItem"])
        resources = toset([aws_dynamodb_table.keys[0].arn])
      }
    }
    error_message = "the saver policy must grant ConditionCheckItem and GetItem on the data table, GetItem and PutItem on the key table"
  }

  # Maintenance: the fences read and the keys read, destroyed and recorded (erasures);
  # keep_latest retention reads the keys.
  assert {
    condition = {
      for s in data.aws_iam_policy_document.maintenance.statement : s.sid => { actions = s.actions, resources = s.resources }
      if startswith(coalesce(s.sid, "-"), "Subject")
      } == {
      SubjectFences = {
        actions   = toset(["dynamodb:GetItem"])
        resources = toset([aws_dynamodb_table.this.arn])
      }
      SubjectKeys = {
        actions   = toset(["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Query", "dynamodb:Scan"])
        resources = toset([aws_dynamodb_table.keys[0].arn])
      }
    }
    error_message = "the maintenance policy must grant GetItem on the data table, GetItem, PutItem, Query and Scan on the key table"
  }

  assert {
    condition = (
      [for s in data.aws_iam_policy_document.retention_keep_latest.statement : { actions = s.actions, resources = s.resources } if s.sid == "SubjectKeys"]
      == [{ actions = toset(["dynamodb:GetItem"]), resources = toset([aws_dynamodb_table.keys[0].arn]) }]
    )
    error_message = "the keep_latest retention policy must grant GetItem on the key table alone"
  }

  # The Store: its puts check the fences and make keys, its reads read the keys.
  assert {
    condition = {
      for s in data.aws_iam_policy_document.memory.statement : s.sid => { actions = s.actions, resources = s.resources }
      if startswith(coalesce(s.sid, "-"), "Subject")
      } == {
      SubjectFences = {
        actions   = toset(["dynamodb:ConditionCheckItem"])
        resources = toset([aws_dynamodb_table.this.arn])
      }
      SubjectKeys = {
        actions   = toset(["dynamodb:GetItem", "dynamodb:PutItem"])
        resources = toset([aws_dynamodb_table.keys[0].arn])
      }
    }
    error_message = "the memory policy must grant ConditionCheckItem on the data table, GetItem and PutItem on the key table"
  }

  assert {
    condition     = !anytrue([for s in data.aws_iam_policy_document.retention.statement : contains(s.resources, aws_dynamodb_table.keys[0].arn)])
    error_message = "the retention (delete) policy opens nothing under a subject's key"
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
