# --------------------------------------------------------------------------------------
# Optional (var.dashboard): one CloudWatch dashboard of what the saver does, from the
# embedded-metric-format lines its functions print per invocation
# (langgraph.checkpoint.s3dynamo.telemetry, as examples/lambda_agent publishes them),
# beside the table's own DynamoDB metrics and the bucket's S3 request metrics.
# --------------------------------------------------------------------------------------

data "aws_region" "dashboard" {
  count = var.dashboard == null ? 0 : 1
}

locals {
  dashboard_name = var.dashboard == null ? null : coalesce(var.dashboard.name, "${var.table_name}-s3dynamo")
  dashboard_ns   = try(var.dashboard.namespace, "s3dynamo")
  # The saver's own figures, one line per metric, for the function's `service` dimension.
  saver_metric = { for name in [
    "DynamoDBRequests", "S3Requests", "KMSRequests", "BytesReadStored", "BytesReadLogical",
    "BytesWrittenStored", "BytesWrittenLogical", "CacheHits", "Waves", "Retries", "Throttles",
  ] : name => [local.dashboard_ns, name, "service", try(var.dashboard.service, "")] }
  table_dims  = ["TableName", aws_dynamodb_table.this.name]
  bucket_dims = ["BucketName", aws_s3_bucket.this.id, "FilterId", "EntireBucket"]

  dashboard_widgets = [
    ["s3dynamo: requests by service", "Sum", [for m in ["DynamoDBRequests", "S3Requests", "KMSRequests"] : local.saver_metric[m]]],
    ["s3dynamo: bytes stored and logical", "Sum", [for m in ["BytesWrittenStored", "BytesWrittenLogical", "BytesReadStored", "BytesReadLogical"] : local.saver_metric[m]]],
    ["s3dynamo: cache hits, waves, retries, throttles", "Sum", [for m in ["CacheHits", "Waves", "Retries", "Throttles"] : local.saver_metric[m]]],
    ["DynamoDB: consumed capacity units", "Sum", [
      concat(["AWS/DynamoDB", "ConsumedReadCapacityUnits"], local.table_dims),
      concat(["AWS/DynamoDB", "ConsumedWriteCapacityUnits"], local.table_dims),
    ]],
    ["DynamoDB: throttle events and errors", "Sum", [
      concat(["AWS/DynamoDB", "ReadThrottleEvents"], local.table_dims),
      concat(["AWS/DynamoDB", "WriteThrottleEvents"], local.table_dims),
      concat(["AWS/DynamoDB", "SystemErrors", "Operation", "Query"], local.table_dims),
      concat(["AWS/DynamoDB", "SystemErrors", "Operation", "TransactWriteItems"], local.table_dims),
    ]],
    ["DynamoDB: latency of the saver's requests (ms)", "Average", [
      for op in ["Query", "TransactWriteItems", "UpdateItem", "BatchWriteItem"] :
      concat(["AWS/DynamoDB", "SuccessfulRequestLatency", "Operation", op], local.table_dims)
    ]],
    ["S3: requests", "Sum", [
      for m in ["GetRequests", "PutRequests", "DeleteRequests", "ListRequests", "4xxErrors", "5xxErrors"] :
      concat(["AWS/S3", m], local.bucket_dims)
    ]],
    ["S3: first byte latency (ms)", "Average", [concat(["AWS/S3", "FirstByteLatency"], local.bucket_dims)]],
  ]
}

# S3 publishes request metrics only for a bucket with a metrics configuration; they are
# billed as CloudWatch custom metrics. With a key prefix, only the saver's objects count.
resource "aws_s3_bucket_metric" "dashboard" {
  count  = var.dashboard == null ? 0 : 1
  bucket = aws_s3_bucket.this.id
  name   = "EntireBucket"

  dynamic "filter" {
    for_each = var.key_prefix == "" ? [] : [var.key_prefix]
    content {
      prefix = filter.value
    }
  }
}

resource "aws_cloudwatch_dashboard" "this" {
  count          = var.dashboard == null ? 0 : 1
  dashboard_name = local.dashboard_name
  dashboard_body = jsonencode({
    widgets = [
      for i, w in local.dashboard_widgets : {
        type   = "metric"
        x      = (i % 2) * 12
        y      = floor(i / 2) * 6
        width  = 12
        height = 6
        properties = {
          title   = w[0]
          stat    = w[1]
          period  = 300
          region  = data.aws_region.dashboard[0].name
          view    = "timeSeries"
          metrics = w[2]
        }
      }
    ]
  })
}
