output "table_name" {
  description = "Name of the DynamoDB checkpoint table."
  value       = aws_dynamodb_table.this.name
}

output "table_arn" {
  description = "ARN of the DynamoDB checkpoint table."
  value       = aws_dynamodb_table.this.arn
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
    var.retention == null ? {} : { S3DYNAMO_RETENTION = var.retention },
  )
}
