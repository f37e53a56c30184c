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

variable "architecture" {
  description = "Instruction set of both functions: \"x86_64\" or \"arm64\" (Graviton, a lower price per GB-second; see benchmarks/README.md). The zip must be built for it: `make lambda-package` builds x86_64, `make lambda-package ARCH=arm64` builds build/lambda_agent_arm64.zip, the default package_path for arm64."
  type        = string
  default     = "x86_64"
  nullable    = false

  validation {
    condition     = contains(["x86_64", "arm64"], var.architecture)
    error_message = "architecture must be \"x86_64\" or \"arm64\" (Lambda's two instruction sets); build the zip for it with `make lambda-package ARCH=<architecture>`."
  }
}

variable "package_path" {
  description = "The zip built by `make lambda-package` for var.architecture; null: build/lambda_agent.zip (x86_64) or build/lambda_agent_arm64.zip (arm64)."
  type        = string
  default     = null
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
  description = "Idle time after which a conversation is removed whole (S3DYNAMO_RETENTION): \"30d\", \"12h\", or days. Null (with no checkpointer_ttl) keeps every conversation and creates no retention job."
  type        = string
  default     = "30d"
}

variable "retention_strategy" {
  description = "What happens to a conversation idle for longer than `retention` (S3DYNAMO_RETENTION_STRATEGY): \"delete\" removes it whole, \"keep_latest\" keeps its latest checkpoint in each namespace and drops the rest."
  type        = string
  default     = "delete"
  nullable    = false
  # The module checks it.
}

variable "retention_keep_last" {
  description = "With retention_strategy \"keep_latest\": how many checkpoints each namespace of an idle conversation keeps, newest first (S3DYNAMO_RETENTION_KEEP_LAST); 1 keeps only the latest."
  type        = number
  default     = 1
  nullable    = false
  # The module checks it.
}

variable "checkpointer_ttl" {
  description = <<-EOT
    Retention in LangGraph Platform's terms, as langgraph.json's `checkpointer.ttl`: `strategy`
    ("delete" or "keep_latest"), `default_ttl` (minutes) and `sweep_interval_minutes`, and the
    saver's `keep_last` (checkpoints kept per namespace by keep_latest). The
    functions get it as S3DYNAMO_TTL; with `sweep_interval_minutes` the retention job runs every
    that many minutes instead of on `retention_schedule`. Replaces `retention`, which must then
    be null (it defaults to "30d" here).
  EOT
  type = object({
    strategy               = optional(string, "delete")
    default_ttl            = number
    sweep_interval_minutes = optional(number)
    keep_last              = optional(number)
  })
  default = null

  # The module checks the strategy and default_ttl; these two are the example's own.
  validation {
    condition     = try(var.checkpointer_ttl.sweep_interval_minutes, null) == null ? true : var.checkpointer_ttl.sweep_interval_minutes >= 1 && floor(var.checkpointer_ttl.sweep_interval_minutes) == var.checkpointer_ttl.sweep_interval_minutes
    error_message = "checkpointer_ttl.sweep_interval_minutes must be a whole number of minutes, 1 or more (it becomes an EventBridge rate()), or left out."
  }

  validation {
    condition     = var.checkpointer_ttl == null || var.retention == null
    error_message = "Set checkpointer_ttl or retention, not both; retention defaults to \"30d\" in this example. To use checkpointer_ttl (langgraph.json's checkpointer.ttl, default_ttl in minutes), set retention = null. To keep retention (a duration such as \"30d\", with retention_strategy), drop checkpointer_ttl."
  }
}

variable "retention_schedule" {
  description = "When the retention job runs (an EventBridge schedule expression). checkpointer_ttl.sweep_interval_minutes, when given, replaces it."
  type        = string
  default     = "rate(1 day)"
}

variable "collection_schedule" {
  description = "When the agent's function deletes the objects that crashed or refused writes left (the \"collect\" action of app.py: the upload journal's intents older than an hour whose objects nothing references; never a listing of the bucket), as an EventBridge schedule expression. null: never (run `s3dynamo gc` yourself)."
  type        = string
  default     = "rate(1 day)"
}

variable "snapstart" {
  description = <<-EOT
    Lambda SnapStart for the agent's function. Each apply that changes the function publishes a
    new version; Lambda runs its init phase then and snapshots it, and new execution
    environments resume from that snapshot instead of importing the code again. SnapStart
    applies to published versions only, so callers invoke the alias "live", which Terraform
    points at the version it published last (the function_arn output is then the alias's
    ARN). Costs and changes: for Python, Lambda charges for caching each published version's
    snapshot and for every restore; each apply that publishes waits for the snapshot; and
    published versions stay until deleted. False leaves the function unpublished and invoked
    unqualified ($LATEST), as before. The retention function is not affected.
  EOT
  type        = bool
  default     = false
  nullable    = false
}

variable "dashboard" {
  description = "Create a CloudWatch dashboard of the agent's storage figures (the embedded-metric-format line app.py prints per invocation) beside the table's DynamoDB and the bucket's S3 request metrics (the module's `dashboard`)."
  type        = bool
  default     = false
}
