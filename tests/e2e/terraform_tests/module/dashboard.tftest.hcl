# The optional dashboard: nothing by default; when asked for, the saver's figures under the
# namespace and service the functions publish with, beside the table's and the bucket's own
# metrics (the bucket's request metrics switched on for it). Applied to a mocked provider.

mock_provider "aws" {
  mock_data "aws_iam_policy_document" {
    defaults = { json = "{}" }
  }
  mock_data "aws_region" {
    defaults = { name = "eu-west-1" }
  }
  mock_resource "aws_s3_bucket" {
    defaults = { id = "agent-checkpoints-test" }
  }
}

variables {
  table_name  = "agent-checkpoints"
  bucket_name = "agent-checkpoints-test"
}

run "off_by_default" {
  command = apply

  assert {
    condition     = length(aws_cloudwatch_dashboard.this) == 0 && length(aws_s3_bucket_metric.dashboard) == 0
    error_message = "no dashboard and no bucket metrics configuration unless asked for"
  }

  assert {
    condition     = output.dashboard_name == null
    error_message = "dashboard_name must be null without a dashboard"
  }
}

run "dashboard_of_the_saver_beside_dynamodb_and_s3" {
  command = apply

  variables {
    dashboard  = { service = "refunds" }
    key_prefix = "checkpoints/"
  }

  assert {
    condition     = output.dashboard_name == "agent-checkpoints-s3dynamo"
    error_message = "the dashboard is named after the table by default"
  }

  assert {
    condition = contains(concat([
      for w in jsondecode(aws_cloudwatch_dashboard.this[0].dashboard_body).widgets : w.properties.metrics
    ]...), ["s3dynamo", "Throttles", "service", "refunds"])
    error_message = "the saver's Throttles metric, for the function's service, must be on the dashboard"
  }

  assert {
    condition = contains(concat([
      for w in jsondecode(aws_cloudwatch_dashboard.this[0].dashboard_body).widgets : w.properties.metrics
    ]...), ["AWS/DynamoDB", "ConsumedWriteCapacityUnits", "TableName", "agent-checkpoints"])
    error_message = "the table's consumed write capacity must be on the dashboard"
  }

  assert {
    condition = contains(concat([
      for w in jsondecode(aws_cloudwatch_dashboard.this[0].dashboard_body).widgets : w.properties.metrics
    ]...), ["AWS/S3", "GetRequests", "BucketName", "agent-checkpoints-test", "FilterId", "EntireBucket"])
    error_message = "the bucket's GET requests, under the metrics configuration's filter, must be on the dashboard"
  }

  assert {
    condition     = aws_s3_bucket_metric.dashboard[0].name == "EntireBucket" && aws_s3_bucket_metric.dashboard[0].filter[0].prefix == "checkpoints/"
    error_message = "the bucket's request metrics must count the saver's prefix only"
  }
}
