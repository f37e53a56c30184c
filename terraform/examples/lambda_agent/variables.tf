variable "region" {
  description = "AWS region for every resource of the example."
  type        = string
  default     = "us-east-1"
}

variable "name" {
  description = "Name of the Lambda function; also names its role, log group and KMS key alias."
  type        = string
  default     = "s3dynamo-agent"

  validation {
    condition     = can(regex("^[A-Za-z0-9_-]{1,56}$", var.name))
    error_message = "name must be 1-56 characters of A-Z, a-z, 0-9, '_' or '-'."
  }
}

variable "table_name" {
  description = "Name of the DynamoDB checkpoint table."
  type        = string
  default     = "s3dynamo-agent-checkpoints"
}

variable "bucket_name" {
  description = "Name of the S3 bucket for checkpoint values (globally unique)."
  type        = string
}

variable "key_prefix" {
  description = "Prefix of every object key the saver writes."
  type        = string
  default     = "checkpoints/"
}

variable "deletion_protection" {
  description = "DynamoDB deletion protection on the checkpoint table."
  type        = bool
  default     = true
}

variable "package_path" {
  description = "The zip built by `make lambda-package`."
  type        = string
  default     = "../../../build/lambda_agent.zip"
}

variable "memory_size" {
  description = "Lambda memory in MB (CPU grows with it)."
  type        = number
  default     = 1024
}

variable "timeout" {
  description = "Lambda timeout in seconds."
  type        = number
  default     = 30
}

variable "reserved_concurrency" {
  description = "Reserved concurrent executions for the function; null leaves it unreserved."
  type        = number
  default     = null
}

variable "log_retention_days" {
  description = "Retention of the function's CloudWatch log group."
  type        = number
  default     = 365
}

variable "tags" {
  description = "Tags for every resource."
  type        = map(string)
  default     = {}
}

variable "retention" {
  description = "Idle time after which a conversation is removed whole (S3DYNAMO_RETENTION): \"30d\", \"12h\", or days. Null keeps every conversation and creates no retention job."
  type        = string
  default     = "30d"
}

variable "retention_schedule" {
  description = "When the retention job runs (an EventBridge schedule expression)."
  type        = string
  default     = "rate(1 day)"
}
