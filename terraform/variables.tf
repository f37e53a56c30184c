variable "table_name" {
  description = "Name of the DynamoDB table that holds the checkpoint index."
  type        = string

  validation {
    condition     = can(regex("^[A-Za-z0-9_.-]{3,255}$", var.table_name))
    error_message = "table_name must be 3-255 characters of A-Z, a-z, 0-9, '_', '-' or '.'."
  }
}

variable "bucket_name" {
  description = "Name of the S3 bucket that holds the sealed channel values. Globally unique."
  type        = string

  validation {
    condition     = can(regex("^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$", var.bucket_name))
    error_message = "bucket_name must be a valid S3 bucket name (3-63 characters of a-z, 0-9, '.', '-')."
  }
}

variable "key_prefix" {
  description = <<-EOT
    Prefix of every S3 object key the saver writes (S3DYNAMO_PREFIX). Taken literally: use a
    trailing "/" (for example "checkpoints/") to get a folder. The IAM policy grants object access
    to "<bucket>/<key_prefix>*" only. Empty means the whole bucket.
  EOT
  type        = string
  default     = ""

  validation {
    condition     = !startswith(var.key_prefix, "/") && !can(regex("[*?]", var.key_prefix))
    error_message = "key_prefix must not start with '/' and must not contain the IAM wildcards '*' or '?'."
  }
}

variable "tags" {
  description = "Tags applied to every resource this module creates."
  type        = map(string)
  default     = {}
}

variable "point_in_time_recovery" {
  description = "Enable DynamoDB point-in-time recovery on the table."
  type        = bool
  default     = true
}

variable "deletion_protection" {
  description = "Enable DynamoDB deletion protection on the table. Disable it before destroying."
  type        = bool
  default     = true
}

variable "lambda_role_names" {
  description = <<-EOT
    Names (not ARNs) of IAM roles, typically Lambda execution roles, to attach the saver's
    least-privilege policy to. The names must be known at plan time; otherwise leave this empty
    and attach the `policy_arn` output yourself.
  EOT
  type        = list(string)
  default     = []
}

variable "kms_key_arn" {
  description = <<-EOT
    Optional ARN of a customer managed KMS key for the bucket's default encryption (SSE-KMS with
    an S3 Bucket Key). When null the bucket uses SSE-S3 (AES256). The saver's policy is granted
    kms:Decrypt and kms:GenerateDataKey on this key, via S3 only.
  EOT
  type        = string
  default     = null

  validation {
    condition     = var.kms_key_arn == null || can(regex("^arn:aws[a-z-]*:kms:[a-z0-9-]+:[0-9]{12}:key/.+$", var.kms_key_arn))
    error_message = "kms_key_arn must be null or a KMS key ARN (arn:aws:kms:<region>:<account>:key/<id>), not an alias."
  }
}

variable "sealing_kms_key_arn" {
  description = <<-EOF
    Optional ARN of the KMS key the saver's own sealing keys come from (S3DYNAMO_KMS_KEY_ID): KMS
    makes the data keys and the naming secret, kept wrapped in the table. The saver's policy gets
    kms:Decrypt on it, the maintenance policy kms:Decrypt and kms:GenerateDataKey (creating and
    rotating the keyring), both only for this table's encryption context. When null, configure
    S3DYNAMO_KEYS and S3DYNAMO_SECRET instead.
  EOF
  type        = string
  default     = null

  validation {
    condition     = var.sealing_kms_key_arn == null || can(regex("^arn:aws[a-z-]*:kms:[a-z0-9-]+:[0-9]{12}:key/.+$", var.sealing_kms_key_arn))
    error_message = "sealing_kms_key_arn must be null or a KMS key ARN (arn:aws:kms:<region>:<account>:key/<id>), not an alias."
  }
}

variable "table_kms_key_arn" {
  description = <<-EOT
    Optional ARN of a customer managed KMS key for the table's server-side encryption. When null
    the table is encrypted with the AWS managed key (alias/aws/dynamodb).
  EOT
  type        = string
  default     = null

  validation {
    condition     = var.table_kms_key_arn == null || can(regex("^arn:aws[a-z-]*:kms:[a-z0-9-]+:[0-9]{12}:key/.+$", var.table_kms_key_arn))
    error_message = "table_kms_key_arn must be null or a KMS key ARN (arn:aws:kms:<region>:<account>:key/<id>), not an alias."
  }
}

variable "subject_field" {
  description = <<-EOT
    The metadata field naming whose data a thread is, a data subject such as "user_id"
    (S3DYNAMO_SUBJECT_FIELD): each subject's data is sealed under a key of its own, kept in the
    key table. Setting it or subject_label creates the key table and grants the policies what
    subjects need. Null (the default): no subjects, no key table.
  EOT
  type        = string
  default     = null

  validation {
    condition     = var.subject_field == null || try(length(trimspace(var.subject_field)) > 0, false)
    error_message = "subject_field must name a metadata field, such as \"user_id\", or be null."
  }
}

variable "subject_label" {
  description = <<-EOT
    The position in a Store namespace naming its data subject (S3DYNAMO_SUBJECT_LABEL): 1 in
    ("users", uid, "memories"). Like subject_field, it creates the key table. Null: none.
  EOT
  type        = number
  default     = null

  validation {
    condition     = var.subject_label == null || try(var.subject_label >= 0 && floor(var.subject_label) == var.subject_label, false)
    error_message = "subject_label must be a whole number, 0 or more (a position in the namespace), or null."
  }
}

variable "key_table_name" {
  description = <<-EOT
    Name of the key table (S3DYNAMO_KEY_TABLE), made only with subject_field or subject_label.
    When null, "<table_name>-keys", the saver's own default.
  EOT
  type        = string
  default     = null

  validation {
    condition     = var.key_table_name == null || can(regex("^[A-Za-z0-9_.-]{3,255}$", var.key_table_name))
    error_message = "key_table_name must be 3-255 characters of A-Z, a-z, 0-9, '_', '-' or '.'."
  }
}

variable "key_table_recovery_days" {
  description = <<-EOT
    The key table's point-in-time recovery window, in days (1 to 35; recovery itself is always
    on). An erased subject's key stays restorable from this table's backups for this long, so
    keep it short.
  EOT
  type        = number
  default     = 7
  nullable    = false

  validation {
    condition     = var.key_table_recovery_days >= 1 && var.key_table_recovery_days <= 35 && floor(var.key_table_recovery_days) == var.key_table_recovery_days
    error_message = "key_table_recovery_days must be a whole number of days from 1 to 35 (DynamoDB's range)."
  }
}

variable "key_table_deletion_protection" {
  description = <<-EOT
    DynamoDB deletion protection on the key table, apart from the data table's
    (deletion_protection), so that turning that one off does not expose the keys. Losing the key
    table loses every subject's data. Disable it before destroying.
  EOT
  type        = bool
  default     = true
  nullable    = false
}

variable "policy_name" {
  description = "Name of the IAM policy for the saver. When null a unique name starting with \"s3dynamo-\" is generated."
  type        = string
  default     = null
}

variable "maintenance_role_names" {
  description = <<-EOT
    Names (not ARNs) of IAM roles to attach the maintenance policy to: list(None), copy_thread,
    prune, delete_for_runs, reencrypt and garbage collection (table Scan, run-index Query). Give it
    to an operator or a scheduled job, not to the agent's function. Same plan-time rule as
    lambda_role_names.
  EOT
  type        = list(string)
  default     = []
}

variable "maintenance_policy_name" {
  description = "Name of the maintenance IAM policy. When null a unique name starting with \"s3dynamo-\" is generated."
  type        = string
  default     = null
}

variable "retention" {
  description = <<-EOT
    Idle time after which a thread expires (S3DYNAMO_RETENTION): "30d", "12h", or a number of
    days; retention_strategy says what then happens to it (by default it is removed whole).
    Null keeps every thread. Expiry happens when a job calls expire_idle_threads() (the example
    schedules one daily); see docs/OPERATIONS.md. For LangGraph Platform's names and units,
    use checkpointer_ttl instead.
  EOT
  type        = string
  default     = null

  validation {
    condition     = var.retention == null || can(regex("^[0-9]+(\\.[0-9]+)?[dhms]?$", var.retention))
    error_message = "retention must be a number of days or a number with a unit: 30d, 12h, 90m, 3600s."
  }
}

variable "retention_strategy" {
  description = <<-EOT
    What happens to a thread idle for longer than `retention` (S3DYNAMO_RETENTION_STRATEGY):
    "delete" removes it whole, "keep_latest" keeps its latest checkpoint in each namespace and
    drops the rest. Applies to `retention` only; `checkpointer_ttl` carries its own strategy.
  EOT
  type        = string
  default     = "delete"
  nullable    = false

  validation {
    condition     = contains(["delete", "keep_latest"], var.retention_strategy)
    error_message = "retention_strategy must be \"delete\" or \"keep_latest\"."
  }

  validation {
    condition     = var.retention_strategy == "delete" || var.retention != null
    error_message = "retention_strategy applies to retention only: set retention as well, or, with checkpointer_ttl, give the strategy inside it."
  }
}

variable "retention_keep_last" {
  description = <<-EOT
    With retention_strategy "keep_latest": how many checkpoints each namespace of an idle thread
    keeps, newest first (S3DYNAMO_RETENTION_KEEP_LAST); 1 keeps only the latest.
  EOT
  type        = number
  default     = 1
  nullable    = false

  validation {
    condition     = var.retention_keep_last >= 1 && floor(var.retention_keep_last) == var.retention_keep_last
    error_message = "retention_keep_last must be a whole number of checkpoints, 1 or more."
  }

  validation {
    condition     = var.retention_keep_last == 1 || var.retention_strategy == "keep_latest"
    error_message = "retention_keep_last counts what keep_latest keeps: set retention_strategy = \"keep_latest\" with it (with checkpointer_ttl, give keep_last inside it)."
  }
}

variable "checkpointer_ttl" {
  description = <<-EOT
    Retention in LangGraph Platform's terms, as langgraph.json's `checkpointer.ttl`: `strategy`
    ("delete" or "keep_latest"), `default_ttl` (minutes) and `sweep_interval_minutes`, and this
    saver's `keep_last` (checkpoints kept per namespace by keep_latest). It reaches the saver as
    S3DYNAMO_TTL, the object as JSON. An alternative to `retention` and `retention_strategy`, not
    an addition: set one or the other. Null sets nothing.
  EOT
  type = object({
    strategy               = optional(string, "delete")
    default_ttl            = number
    sweep_interval_minutes = optional(number)
    keep_last              = optional(number)
  })
  default = null

  validation {
    condition     = try(var.checkpointer_ttl.keep_last, null) == null ? true : var.checkpointer_ttl.keep_last >= 1 && floor(var.checkpointer_ttl.keep_last) == var.checkpointer_ttl.keep_last && var.checkpointer_ttl.strategy == "keep_latest"
    error_message = "checkpointer_ttl.keep_last must be a whole number, 1 or more, with strategy \"keep_latest\" (it counts what keep_latest keeps), or left out."
  }

  validation {
    condition     = var.checkpointer_ttl == null ? true : contains(["delete", "keep_latest"], var.checkpointer_ttl.strategy)
    error_message = "checkpointer_ttl.strategy must be \"delete\" or \"keep_latest\"."
  }

  validation {
    condition     = var.checkpointer_ttl == null ? true : try(var.checkpointer_ttl.default_ttl > 0, false)
    error_message = "checkpointer_ttl.default_ttl must be a positive number of minutes."
  }

  validation {
    condition     = try(var.checkpointer_ttl.sweep_interval_minutes, null) == null ? true : var.checkpointer_ttl.sweep_interval_minutes > 0
    error_message = "checkpointer_ttl.sweep_interval_minutes must be a positive number of minutes, or left out."
  }

  validation {
    condition     = var.checkpointer_ttl == null || var.retention == null
    error_message = "Set checkpointer_ttl or retention, not both. checkpointer_ttl takes langgraph.json's checkpointer.ttl (default_ttl in minutes); retention takes a duration such as \"30d\", with retention_strategy. To use checkpointer_ttl, leave retention null."
  }
}

variable "retention_role_names" {
  description = <<-EOT
    Names (not ARNs) of IAM roles to attach the retention policy to: the scheduled job that
    calls expire_idle_threads() (Query of the table and of its idle index, its first run's
    table Scan, PutItem of its cursor, UpdateItem, BatchWriteItem; listing and deleting
    objects; no reads of values and no KMS).
  EOT
  type        = list(string)
  default     = []
}

variable "retention_policy_name" {
  description = "Name of the retention IAM policy. When null a unique name starting with \"s3dynamo-\" is generated."
  type        = string
  default     = null
}

variable "memory_role_names" {
  description = <<-EOT
    Names (not ARNs) of IAM roles to attach the long-term memory policy to: the agent's
    function when it uses S3DynamoStore or S3DynamoCache (give it the saver policy too). Same
    plan-time rule as lambda_role_names.
  EOT
  type        = list(string)
  default     = []
}

variable "memory_policy_name" {
  description = "Name of the long-term memory IAM policy. When null a unique name starting with \"s3dynamo-\" is generated."
  type        = string
  default     = null
}

variable "dashboard" {
  description = <<-EOT
    A CloudWatch dashboard of the saver's own figures (requests by service, bytes stored and
    logical, cache hits, waves, retries, throttles: the embedded-metric-format lines a function
    prints with telemetry.collect(), as examples/lambda_agent does) beside the table's DynamoDB
    metrics and the bucket's S3 request metrics. null (the default) creates nothing. `namespace`
    and `service` are the ones the functions publish under (POWERTOOLS_METRICS_NAMESPACE and
    POWERTOOLS_SERVICE_NAME in the example); `name` defaults to "<table_name>-s3dynamo". It also
    adds a request-metrics configuration to the bucket, which S3 needs to publish request metrics
    (billed as CloudWatch custom metrics).
  EOT
  type = object({
    name      = optional(string)
    namespace = optional(string, "s3dynamo")
    service   = optional(string, "lambda_agent")
  })
  default = null
}
