output "table_name" {
  description = "Name of the DynamoDB checkpoint table."
  value       = aws_dynamodb_table.this.name
}

output "table_arn" {
  description = "ARN of the DynamoDB checkpoint table."
  value       = aws_dynamodb_table.this.arn
}

output "key_table_name" {
  description = "Name of the DynamoDB key table (data subjects' keys); null without subject_field or subject_label."
  value       = try(aws_dynamodb_table.keys[0].name, null)
}

output "key_table_arn" {
  description = "ARN of the DynamoDB key table; null without subject_field or subject_label."
  value       = try(aws_dynamodb_table.keys[0].arn, null)
}

output "bucket_name" {
  description = "Name of the S3 bucket holding channel values."
  value       = aws_s3_bucket.this.id
}

output "bucket_arn" {
  description = "ARN of the S3 bucket holding channel values."
  value       = aws_s3_bucket.this.arn
}

output "key_prefix" {
  description = "Prefix of every object key the saver writes."
  value       = var.key_prefix
}

output "policy_arn" {
  description = "ARN of the saver's least-privilege IAM policy, for roles not listed in lambda_role_names."
  value       = aws_iam_policy.saver.arn
}

output "maintenance_policy_arn" {
  description = "ARN of the maintenance IAM policy (table Scan, run-index Query), for roles not listed in maintenance_role_names."
  value       = aws_iam_policy.maintenance.arn
}

output "retention_policy_arn" {
  description = "ARN of the retention IAM policy (the scheduled expire_idle_threads() job), for roles not listed in retention_role_names."
  value       = aws_iam_policy.retention.arn
}

output "memory_policy_arn" {
  description = "ARN of the long-term memory IAM policy (S3DynamoStore, S3DynamoCache), for roles not listed in memory_role_names."
  value       = aws_iam_policy.memory.arn
}

output "environment" {
  description = "Environment variables for the saver, ready to merge into a Lambda function's environment."
  # With sealing_kms_key_arn the key setting is here too; otherwise add S3DYNAMO_KEYS and
  # S3DYNAMO_SECRET (secrets, so not an output), or the saver refuses to start.
  value = merge(
    {
      S3DYNAMO_TABLE  = aws_dynamodb_table.this.name
      S3DYNAMO_BUCKET = aws_s3_bucket.this.id
      S3DYNAMO_PREFIX = var.key_prefix
    },
    var.sealing_kms_key_arn == null ? {} : { S3DYNAMO_KMS_KEY_ID = var.sealing_kms_key_arn },
    # Data subjects: their declaration, and the key table by name (also when it is the
    # saver's default, "<table>-keys").
    var.subject_field == null ? {} : { S3DYNAMO_SUBJECT_FIELD = var.subject_field },
    var.subject_label == null ? {} : { S3DYNAMO_SUBJECT_LABEL = tostring(var.subject_label) },
    local.subjects ? { S3DYNAMO_KEY_TABLE = aws_dynamodb_table.keys[0].name } : {},
    var.retention == null ? {} : { S3DYNAMO_RETENTION = var.retention },
    # Only when it differs from the saver's default ("delete"), so an environment set up
    # with `retention` alone stays as it was.
    var.retention == null || var.retention_strategy == "delete" ? {} : {
      S3DYNAMO_RETENTION_STRATEGY = var.retention_strategy
    },
    var.retention == null || var.retention_keep_last == 1 ? {} : {
      S3DYNAMO_RETENTION_KEEP_LAST = tostring(var.retention_keep_last)
    },
    # checkpointer_ttl goes in whole, as S3DYNAMO_TTL, rather than converted into
    # S3DYNAMO_RETENTION="<default_ttl>m" and S3DYNAMO_RETENTION_STRATEGY: the saver reads
    # the Platform's object with the Platform's names and units, nothing is converted here,
    # and sweep_interval_minutes, which those two variables cannot carry, reaches it too.
    # Attributes left out (null) are dropped rather than written as JSON null.
    var.checkpointer_ttl == null ? {} : {
      S3DYNAMO_TTL = jsonencode({ for name, value in var.checkpointer_ttl : name => value if value != null })
    },
  )
}

output "dashboard_name" {
  description = "Name of the CloudWatch dashboard (null unless `dashboard` is set)."
  value       = try(aws_cloudwatch_dashboard.this[0].dashboard_name, null)
}
