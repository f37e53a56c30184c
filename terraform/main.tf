# Infrastructure for langgraph-checkpoint-s3dynamo.
#
# The table layout below must match src/langgraph/checkpoint/s3dynamo/format/schema.py exactly;
# tests/e2e/test_terraform.py parses this file and fails if the two disagree.

locals {
  # Every object the saver touches lives under this pattern (the prefix is taken literally).
  object_arn_pattern = "${aws_s3_bucket.this.arn}/${var.key_prefix}*"
  policy_name_prefix = "s3dynamo-${substr(var.table_name, 0, 80)}-"
  # Whether the retention job keeps each idle thread's latest checkpoints (it then reads).
  keep_latest = (
    var.retention_strategy == "keep_latest"
    || try(var.checkpointer_ttl.strategy, null) == "keep_latest"
  )
  # Whether data subjects are declared, as the saver decides it (Settings.subjects): the
  # key table exists only then.
  subjects       = var.subject_field != null || var.subject_label != null
  key_table_name = coalesce(var.key_table_name, "${var.table_name}-keys")
}

# --------------------------------------------------------------------------------------
# DynamoDB: the checkpoint index (schema.table_definition)
# --------------------------------------------------------------------------------------

resource "aws_dynamodb_table" "this" {
  name         = var.table_name
  billing_mode = "PAY_PER_REQUEST"
  hash_key     = "pk"
  range_key    = "sk"

  attribute {
    name = "pk"
    type = "S"
  }

  attribute {
    name = "sk"
    type = "S"
  }

  attribute {
    name = "rk"
    type = "S"
  }

  attribute {
    name = "ik"
    type = "S"
  }

  # Sparse: only checkpoint items carry `rk` (a keyed hash of the run id).
  global_secondary_index {
    name            = "runs"
    hash_key        = "rk"
    range_key       = "sk"
    projection_type = "KEYS_ONLY"
  }

  # Sparse: head items (and, with concurrent-run detection off, checkpoint items) carry
  # `ik`, the day of the thread's last write and a shard; the retention sweep Queries the
  # days that expired instead of scanning the table (docs/OPERATIONS.md, "Retention").
  global_secondary_index {
    name            = "idle"
    hash_key        = "ik"
    range_key       = "pk"
    projection_type = "KEYS_ONLY"
  }

  server_side_encryption {
    enabled     = true
    kms_key_arn = var.table_kms_key_arn
  }

  point_in_time_recovery {
    enabled = var.point_in_time_recovery
  }

  deletion_protection_enabled = var.deletion_protection

  tags = var.tags
}

# --------------------------------------------------------------------------------------
# DynamoDB: the key table, with data subjects only (keys/subjects.py). Each subject's key,
# wrapped by the deployment's keyring, and the erasure records; a table of its own, so
# that the data table's backups hold no subject key: an erasure destroys the key here,
# and a restored backup of the data table stays unreadable for that subject. The library
# reads it with GetItem and Query and writes it with PutItem: no index, no stream, no TTL.
# --------------------------------------------------------------------------------------

resource "aws_dynamodb_table" "keys" {
  count = local.subjects ? 1 : 0

  name         = local.key_table_name
  billing_mode = "PAY_PER_REQUEST"
  hash_key     = "pk"
  range_key    = "sk"

  attribute {
    name = "pk"
    type = "S"
  }

  attribute {
    name = "sk"
    type = "S"
  }

  server_side_encryption {
    enabled     = true
    kms_key_arn = var.table_kms_key_arn
  }

  # Always on: losing this table loses every subject's data. The window is short because
  # an erased key stays in this table's own backups until they age out.
  point_in_time_recovery {
    enabled                 = true
    recovery_period_in_days = var.key_table_recovery_days
  }

  deletion_protection_enabled = var.key_table_deletion_protection

  tags = var.tags

  lifecycle {
    precondition {
      condition     = length(local.key_table_name) <= 255
      error_message = "The key table's name, \"${local.key_table_name}\", is longer than DynamoDB's 255 characters: set key_table_name."
    }
  }
}

# --------------------------------------------------------------------------------------
# S3: sealed channel values. Objects are immutable; the library deletes what it no longer
# references, so there is deliberately no expiration rule and no versioning. It writes each
# object with one PutObject (no multipart uploads), so there is no multipart-abort rule either.
# --------------------------------------------------------------------------------------

resource "aws_s3_bucket" "this" {
  #checkov:skip=CKV_AWS_21:Objects are immutable and written once; deletes are deliberate (delete_thread, prune, garbage collection) and must remove the data, which versioning would keep. The index table has point-in-time recovery.
  #checkov:skip=CKV2_AWS_61:No lifecycle rule is safe: expiring an object that a live checkpoint references corrupts that thread, the library deletes what nothing references, and it makes no multipart uploads that an abort rule would clean up.
  #checkov:skip=CKV_AWS_144:Checkpoints are the working state of agents, bound to the region of their index table; a replica without a replicated table could not be read. Durability within the region is S3's.
  #checkov:skip=CKV2_AWS_62:Nothing consumes object events; the DynamoDB item, not the object, is the commit point of a checkpoint.
  #checkov:skip=CKV_AWS_18:Server access logs would need a second bucket this module does not own; object contents are sealed and key names are keyed hashes. Audit with CloudTrail S3 data events, or add aws_s3_bucket_logging next to the module.
  bucket = var.bucket_name
  tags   = var.tags
}

resource "aws_s3_bucket_public_access_block" "this" {
  bucket = aws_s3_bucket.this.id

  block_public_acls       = true
  block_public_policy     = true
  ignore_public_acls      = true
  restrict_public_buckets = true
}

resource "aws_s3_bucket_ownership_controls" "this" {
  bucket = aws_s3_bucket.this.id

  rule {
    object_ownership = "BucketOwnerEnforced"
  }
}

resource "aws_s3_bucket_server_side_encryption_configuration" "this" {
  bucket = aws_s3_bucket.this.id

  rule {
    apply_server_side_encryption_by_default {
      sse_algorithm     = var.kms_key_arn == null ? "AES256" : "aws:kms"
      kms_master_key_id = var.kms_key_arn
    }
    bucket_key_enabled = var.kms_key_arn != null
  }
}

data "aws_iam_policy_document" "bucket" {
  statement {
    sid       = "DenyInsecureTransport"
    effect    = "Deny"
    actions   = ["s3:*"]
    resources = [aws_s3_bucket.this.arn, "${aws_s3_bucket.this.arn}/*"]

    principals {
      type        = "*"
      identifiers = ["*"]
    }

    condition {
      test     = "Bool"
      variable = "aws:SecureTransport"
      values   = ["false"]
    }
  }

  statement {
    sid       = "DenyOutdatedTLS"
    effect    = "Deny"
    actions   = ["s3:*"]
    resources = [aws_s3_bucket.this.arn, "${aws_s3_bucket.this.arn}/*"]

    principals {
      type        = "*"
      identifiers = ["*"]
    }

    condition {
      test     = "NumericLessThan"
      variable = "s3:TlsVersion"
      values   = ["1.2"]
    }
  }
}

resource "aws_s3_bucket_policy" "this" {
  bucket = aws_s3_bucket.this.id
  policy = data.aws_iam_policy_document.bucket.json

  # S3 rejects concurrent configuration changes to one bucket; apply the policy last.
  depends_on = [aws_s3_bucket_public_access_block.this, aws_s3_bucket_ownership_controls.this]
}

# --------------------------------------------------------------------------------------
# IAM. Three policies, each granting exactly the requests the library makes for its job; the
# sets are not written by hand but recorded: tests/e2e/test_lambda_example.py runs the example
# agent and the maintenance operations against moto, maps every request to its IAM action
# and fails unless the statements below grant exactly those.
#
#   saver        the agent at run time: checkpoints, writes, reads, history, delete_thread
#   maintenance  list(None), copy_thread, prune, delete_for_runs, reencrypt, garbage
#                collection and delete_thread, for an operator or a scheduled job
#   retention    expire_idle_threads(), for the scheduled retention job: it reads keys and
#                stamps and deletes, so it gets no object reads or writes and no KMS key.
#                With the keep_latest strategy it also opens each idle thread's latest
#                checkpoint's metadata (retention_keep_latest): the sealing key. It also
#                removes Store items and node-cache entries past their TTL (by key, opening
#                nothing).
#   memory       the agent's long-term memory at run time: S3DynamoStore and S3DynamoCache
#                (items, namespace directory, large values as objects), beside the saver's.
#
# With data subjects (subject_field, subject_label) the saver also reads and checks their
# fences in the table and reads and makes their keys in the key table; maintenance reads
# them too, and erases a subject (its fence read, its key destroyed, its erasure
# recorded and listed); keep_latest retention reads the keys, and the Store writes as the
# saver does (tests/e2e/test_lambda_example.py records these too).
#
# None grants Create*/Delete* on the table or bucket: the saver's setup() is for
# development and must not run in production.
# --------------------------------------------------------------------------------------

# Shared by the three policies below: every job lists a thread's own key prefix to find its
# objects (delete_thread, garbage collection, retention).
data "aws_iam_policy_document" "object_listing" {
  statement {
    sid       = "CheckpointListing"
    effect    = "Allow"
    actions   = ["s3:ListBucket"]
    resources = [aws_s3_bucket.this.arn]

    # With an empty prefix the whole (dedicated) bucket is in scope. A condition on s3:prefix
    # would then deny listings that send no prefix at all, so it is omitted.
    dynamic "condition" {
      for_each = var.key_prefix == "" ? [] : [var.key_prefix]
      content {
        test     = "StringLike"
        variable = "s3:prefix"
        values   = ["${condition.value}*"]
      }
    }
  }
}

# The bucket's own KMS key (SSE-KMS), used by S3 on behalf of the jobs that read and write
# objects; no statement when the bucket uses S3-managed keys.
data "aws_iam_policy_document" "bucket_kms" {
  dynamic "statement" {
    for_each = var.kms_key_arn == null ? [] : [var.kms_key_arn]
    content {
      sid       = "BucketKmsKey"
      effect    = "Allow"
      actions   = ["kms:Decrypt", "kms:GenerateDataKey"]
      resources = [statement.value]

      condition {
        test     = "StringLike"
        variable = "kms:ViaService"
        values   = ["s3.*.amazonaws.com"]
      }
    }
  }
}

data "aws_iam_policy_document" "saver" {
  source_policy_documents = [
    data.aws_iam_policy_document.object_listing.json,
    data.aws_iam_policy_document.bucket_kms.json,
  ]

  statement {
    sid    = "CheckpointTable"
    effect = "Allow"
    actions = [
      # delete_thread reads the borrowings behind a thread's loans to copies; a search of
      # the thread catalog, the heads of the threads it found.
      "dynamodb:BatchGetItem",
      "dynamodb:BatchWriteItem",
      # A commit deletes its put's upload intent in the same transaction.
      "dynamodb:DeleteItem",
      # A put that uploads objects writes its upload intent first.
      "dynamodb:PutItem",
      "dynamodb:Query",
      "dynamodb:UpdateItem",
    ]
    resources = [aws_dynamodb_table.this.arn]
  }

  statement {
    sid       = "CheckpointObjects"
    effect    = "Allow"
    actions   = ["s3:DeleteObject", "s3:GetObject", "s3:PutObject"]
    resources = [local.object_arn_pattern]
  }

  # Data subjects: a commit of a subject's data checks the subject's fence (an item of
  # the table) in its transaction, and a process reads the fence before its first write
  # of the subject.
  dynamic "statement" {
    for_each = local.subjects ? [aws_dynamodb_table.this.arn] : []
    content {
      sid       = "SubjectFences"
      effect    = "Allow"
      actions   = ["dynamodb:ConditionCheckItem", "dynamodb:GetItem"]
      resources = [statement.value]
    }
  }

  # A subject's first write makes its key (a PutItem, only where none is); opening what
  # is sealed under it reads the key once per process.
  dynamic "statement" {
    for_each = aws_dynamodb_table.keys[*].arn
    content {
      sid       = "SubjectKeys"
      effect    = "Allow"
      actions   = ["dynamodb:GetItem", "dynamodb:PutItem"]
      resources = [statement.value]
    }
  }

  # The saver's own keys (S3DYNAMO_KMS_KEY_ID): one Decrypt per cold start unwraps the
  # keyring kept in the table. Creating and rotating it is maintenance.
  dynamic "statement" {
    for_each = var.sealing_kms_key_arn == null ? [] : [var.sealing_kms_key_arn]
    content {
      sid       = "SealingKey"
      effect    = "Allow"
      actions   = ["kms:Decrypt"]
      resources = [statement.value]

      condition {
        test     = "StringEquals"
        variable = "kms:EncryptionContext:s3dynamo:table"
        values   = [var.table_name]
      }
    }
  }
}

data "aws_iam_policy_document" "maintenance" {
  source_policy_documents = [
    data.aws_iam_policy_document.object_listing.json,
    data.aws_iam_policy_document.bucket_kms.json,
  ]

  statement {
    sid    = "CheckpointTable"
    effect = "Allow"
    actions = [
      # reencrypt() reads a thread's catalog entries through their back-references; a
      # delete or collection, the borrowings behind a lender's loans.
      "dynamodb:BatchGetItem",
      "dynamodb:BatchWriteItem",
      # The full garbage collection deletes each leftover writes record (of a checkpoint
      # never committed) only while it is unchanged since read.
      "dynamodb:DeleteItem",
      # rotate_key() and reencrypt() rewrite the keyring and deployment records.
      "dynamodb:PutItem",
      "dynamodb:Query",
      # list(None), reencrypt() and garbage collection over all threads read the whole
      # table; a KMS deployment's first keyring, its own partitions (never over data).
      "dynamodb:Scan",
      "dynamodb:UpdateItem",
    ]
    resources = [aws_dynamodb_table.this.arn]
  }

  statement {
    sid     = "CheckpointRunIndex"
    effect  = "Allow"
    actions = ["dynamodb:Query"]
    # delete_for_runs finds a run's checkpoints through this global_secondary_index.
    resources = ["${aws_dynamodb_table.this.arn}/index/runs"]
  }

  statement {
    sid       = "CheckpointObjects"
    effect    = "Allow"
    actions   = ["s3:DeleteObject", "s3:GetObject", "s3:PutObject"]
    resources = [local.object_arn_pattern]
  }

  # Data subjects: copy_thread and reencrypt() open what is sealed under a subject's key,
  # read once per process from the key table, and reencrypt() wraps every key again
  # under the active keyring key (a Scan of the key table). An erasure (erase-subject)
  # reads the subject's fence and destroys its key; its record goes in the key table,
  # whose records `s3dynamo erasures` lists.
  dynamic "statement" {
    for_each = local.subjects ? [aws_dynamodb_table.this.arn] : []
    content {
      sid       = "SubjectFences"
      effect    = "Allow"
      actions   = ["dynamodb:GetItem"]
      resources = [statement.value]
    }
  }

  dynamic "statement" {
    for_each = aws_dynamodb_table.keys[*].arn
    content {
      sid       = "SubjectKeys"
      effect    = "Allow"
      actions   = ["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Query", "dynamodb:Scan"]
      resources = [statement.value]
    }
  }

  # The saver's own keys: rotate_key() (and the first use, which creates the keyring)
  # asks KMS for a data key; reencrypt() unwraps the keyring.
  dynamic "statement" {
    for_each = var.sealing_kms_key_arn == null ? [] : [var.sealing_kms_key_arn]
    content {
      sid       = "SealingKey"
      effect    = "Allow"
      actions   = ["kms:Decrypt", "kms:GenerateDataKey"]
      resources = [statement.value]

      condition {
        test     = "StringEquals"
        variable = "kms:EncryptionContext:s3dynamo:table"
        values   = [var.table_name]
      }
    }
  }
}

data "aws_iam_policy_document" "retention" {
  source_policy_documents = [data.aws_iam_policy_document.object_listing.json]

  statement {
    sid    = "CheckpointTable"
    effect = "Allow"
    actions = [
      # The borrowings behind a removed thread's loans to copies, where it lends.
      "dynamodb:BatchGetItem",
      # Tombstones on heads, record and control-item deletes.
      "dynamodb:BatchWriteItem",
      # The sweep's cursor, and consistent reads of each thread found before it goes; the
      # Store's and the cache's directories and namespaces, for their expired items.
      "dynamodb:Query",
      # The first sweep (and `expire --full`) reads the whole table (keys and stamps).
      "dynamodb:Scan",
      # The sweep's cursor: the last day swept, and the threads being removed.
      "dynamodb:PutItem",
      # The thread's lease, taken while it is removed; an index key moved up.
      "dynamodb:UpdateItem",
      # Expired Store items and cache entries (each while still expired), and the
      # directory entries of namespaces they leave empty (read with a Query, marked
      # with an UpdateItem).
      "dynamodb:DeleteItem",
    ]
    resources = [aws_dynamodb_table.this.arn]
  }

  statement {
    sid     = "IdleIndex"
    effect  = "Allow"
    actions = ["dynamodb:Query"]
    # Later sweeps find idle threads through this global_secondary_index.
    resources = ["${aws_dynamodb_table.this.arn}/index/idle"]
  }

  statement {
    sid       = "CheckpointObjects"
    effect    = "Allow"
    actions   = ["s3:DeleteObject"]
    resources = [local.object_arn_pattern]
  }

  # A removal's tombstones are sealed under the naming key, which a KMS deployment's
  # keyring holds: one Decrypt unwraps it (keep_latest also opens checkpoints' metadata).
  dynamic "statement" {
    for_each = var.sealing_kms_key_arn == null ? [] : [var.sealing_kms_key_arn]
    content {
      sid       = "SealingKey"
      effect    = "Allow"
      actions   = ["kms:Decrypt"]
      resources = [statement.value]

      condition {
        test     = "StringEquals"
        variable = "kms:EncryptionContext:s3dynamo:table"
        values   = [var.table_name]
      }
    }
  }
}

# Long-term memory (S3DynamoStore, S3DynamoCache) at run time, for an agent that uses them
# beside the saver: put is one UpdateItem (the first into a namespace in a process reads
# its directory entry, a GetItem; a new namespace's is one TransactWriteItems of the item,
# the entry and its ancestors' descendants marks, which are Puts), with its search
# indexes' entries (filter tokens, a vector log entry) and an upload intent's delete in
# a BatchWriteItem; get a BatchGetItem, search and list_namespaces Queries (and a
# BatchGetItem of what the indexes name), delete a DeleteItem and conditional
# UpdateItems, a search's compaction a conditional PutItem of the vector manifest; values
# past inline_max and vector segments are objects under the namespace's key prefix.
data "aws_iam_policy_document" "memory" {
  source_policy_documents = [data.aws_iam_policy_document.bucket_kms.json]

  statement {
    sid    = "MemoryTable"
    effect = "Allow"
    actions = [
      "dynamodb:BatchGetItem",
      "dynamodb:BatchWriteItem",
      "dynamodb:DeleteItem",
      "dynamodb:GetItem",
      # The first use records the deployment (keys and naming secret checked); a put
      # writes descendants marks and upload intents, a compaction the vector manifest.
      "dynamodb:PutItem",
      "dynamodb:Query",
      "dynamodb:UpdateItem",
    ]
    resources = [aws_dynamodb_table.this.arn]
  }

  statement {
    sid       = "MemoryObjects"
    effect    = "Allow"
    actions   = ["s3:DeleteObject", "s3:GetObject", "s3:PutObject"]
    resources = [local.object_arn_pattern]
  }

  # Data subjects (subject_label): a put into a subject's namespace checks the subject's
  # fence in its transaction and makes the subject's key on its first write; reads of
  # what is sealed under a subject's key read the key once per process.
  dynamic "statement" {
    for_each = local.subjects ? [aws_dynamodb_table.this.arn] : []
    content {
      sid       = "SubjectFences"
      effect    = "Allow"
      actions   = ["dynamodb:ConditionCheckItem"]
      resources = [statement.value]
    }
  }

  dynamic "statement" {
    for_each = aws_dynamodb_table.keys[*].arn
    content {
      sid       = "SubjectKeys"
      effect    = "Allow"
      actions   = ["dynamodb:GetItem", "dynamodb:PutItem"]
      resources = [statement.value]
    }
  }

  dynamic "statement" {
    for_each = var.sealing_kms_key_arn == null ? [] : [var.sealing_kms_key_arn]
    content {
      sid       = "SealingKey"
      effect    = "Allow"
      actions   = ["kms:Decrypt"]
      resources = [statement.value]

      condition {
        test     = "StringEquals"
        variable = "kms:EncryptionContext:s3dynamo:table"
        values   = [var.table_name]
      }
    }
  }
}

# keep_latest keeps each idle thread's latest checkpoint and the ancestors DeltaChannel
# rebuilds it from, which that checkpoint's metadata names: the sweep opens the metadata,
# sealed in the table record (never in an object), so with the saver's own KMS key it
# unwraps the keyring once. Granted only when a strategy asks for keep_latest.
data "aws_iam_policy_document" "retention_keep_latest" {
  source_policy_documents = [data.aws_iam_policy_document.retention.json]

  # Data subjects: the metadata of a subject's checkpoint is sealed under the subject's
  # key, read once per process from the key table.
  dynamic "statement" {
    for_each = aws_dynamodb_table.keys[*].arn
    content {
      sid       = "SubjectKeys"
      effect    = "Allow"
      actions   = ["dynamodb:GetItem"]
      resources = [statement.value]
    }
  }

}

resource "aws_iam_policy" "saver" {
  name        = var.policy_name
  name_prefix = var.policy_name == null ? local.policy_name_prefix : null
  # Only names that already force replacement appear here: a new description replaces the policy.
  description = "Runtime access for langgraph-checkpoint-s3dynamo to table ${var.table_name} and bucket ${var.bucket_name}"
  policy      = data.aws_iam_policy_document.saver.json
  tags        = var.tags
}

resource "aws_iam_role_policy_attachment" "saver" {
  for_each = toset(var.lambda_role_names)

  role       = each.value
  policy_arn = aws_iam_policy.saver.arn
}

resource "aws_iam_policy" "maintenance" {
  name        = var.maintenance_policy_name
  name_prefix = var.maintenance_policy_name == null ? "${local.policy_name_prefix}maint-" : null
  description = "Maintenance access for langgraph-checkpoint-s3dynamo to table ${var.table_name} and bucket ${var.bucket_name}"
  policy      = data.aws_iam_policy_document.maintenance.json
  tags        = var.tags
}

resource "aws_iam_role_policy_attachment" "maintenance" {
  for_each = toset(var.maintenance_role_names)

  role       = each.value
  policy_arn = aws_iam_policy.maintenance.arn
}

resource "aws_iam_policy" "retention" {
  name        = var.retention_policy_name
  name_prefix = var.retention_policy_name == null ? "${local.policy_name_prefix}ret-" : null
  description = "Retention access for langgraph-checkpoint-s3dynamo to table ${var.table_name} and bucket ${var.bucket_name}"
  policy = (
    local.keep_latest
    ? data.aws_iam_policy_document.retention_keep_latest.json
    : data.aws_iam_policy_document.retention.json
  )
  tags = var.tags
}

resource "aws_iam_role_policy_attachment" "retention" {
  for_each = toset(var.retention_role_names)

  role       = each.value
  policy_arn = aws_iam_policy.retention.arn
}

resource "aws_iam_policy" "memory" {
  name        = var.memory_policy_name
  name_prefix = var.memory_policy_name == null ? "${local.policy_name_prefix}mem-" : null
  description = "Long-term memory access for langgraph-checkpoint-s3dynamo to table ${var.table_name} and bucket ${var.bucket_name}"
  policy      = data.aws_iam_policy_document.memory.json
  tags        = var.tags
}

resource "aws_iam_role_policy_attachment" "memory" {
  for_each = toset(var.memory_role_names)

  role       = each.value
  policy_arn = aws_iam_policy.memory.arn
}
