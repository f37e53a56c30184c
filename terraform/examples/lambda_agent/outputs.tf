output "function_name" {
  description = "Name of the agent's Lambda function."
  value       = aws_lambda_function.agent.function_name
}

output "function_arn" {
  description = "ARN to invoke the agent with: with snapstart, the ARN of the alias \"live\" (SnapStart applies to published versions only); without, the function's unqualified ARN."
  value       = var.snapstart ? aws_lambda_alias.live[0].arn : aws_lambda_function.agent.arn
}

output "function_version" {
  description = "The version the alias \"live\" points at, with snapstart; \"$LATEST\" without."
  value       = aws_lambda_function.agent.version
}

output "role_name" {
  description = "Name of the function's execution role."
  value       = aws_iam_role.agent.name
}

output "table_name" {
  description = "Name of the DynamoDB checkpoint table."
  value       = module.checkpoints.table_name
}

output "bucket_name" {
  description = "Name of the S3 bucket holding checkpoint values."
  value       = module.checkpoints.bucket_name
}

output "environment" {
  description = "The saver's non-secret settings, as the function receives them."
  value       = module.checkpoints.environment
}

output "maintenance_policy_arn" {
  description = "Attach to an operator's or a scheduled job's role for list(None), prune, reencrypt and garbage collection."
  value       = module.checkpoints.maintenance_policy_arn
}

output "retention_function_name" {
  description = "Name of the scheduled retention function (null without retention)."
  value       = one([for f in aws_lambda_function.retention : f.function_name])
}
