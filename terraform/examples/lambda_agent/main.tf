# The example agent (examples/lambda_agent/app.py) on AWS Lambda, checkpointed by s3dynamo:
# the module's table and bucket, the function from the zip `make lambda-package` builds, an
# execution role with the saver's policy and nothing else but writing its own log group, and
# a customer managed KMS key for the function's environment (which holds the sealing keys)
# and its logs.

data "aws_caller_identity" "current" {}
data "aws_partition" "current" {}

locals {
  log_group_name = "/aws/lambda/${var.name}"
  log_group_arn  = "arn:${data.aws_partition.current.partition}:logs:${var.region}:${data.aws_caller_identity.current.account_id}:log-group:${local.log_group_name}"
}

module "checkpoints" {
  source = "../.."

  table_name          = var.table_name
  bucket_name         = var.bucket_name
  key_prefix          = var.key_prefix
  deletion_protection = var.deletion_protection
  tags                = var.tags
}

# --------------------------------------------------------------------------------------
# KMS: encrypts the function's environment variables (S3DYNAMO_KEYS, S3DYNAMO_SECRET) at
# rest and its log group. The saver itself makes no KMS request.
# --------------------------------------------------------------------------------------

data "aws_iam_policy_document" "key" {
  # The key policy every KMS key needs so the account's IAM policies can manage it; in a key
  # policy "*" as resource means this key only.
  #checkov:skip=CKV_AWS_109:A key policy's "*" resource is the key itself; this is the default key policy that delegates to IAM in this account.
  #checkov:skip=CKV_AWS_111:A key policy's "*" resource is the key itself; this is the default key policy that delegates to IAM in this account.
  #checkov:skip=CKV_AWS_356:A key policy's "*" resource is the key itself; this is the default key policy that delegates to IAM in this account.
  statement {
    sid       = "AccountAdministration"
    effect    = "Allow"
    actions   = ["kms:*"]
    resources = ["*"]

    principals {
      type        = "AWS"
      identifiers = ["arn:${data.aws_partition.current.partition}:iam::${data.aws_caller_identity.current.account_id}:root"]
    }
  }

  statement {
    sid       = "FunctionLogGroup"
    effect    = "Allow"
    actions   = ["kms:Decrypt*", "kms:Describe*", "kms:Encrypt*", "kms:GenerateDataKey*", "kms:ReEncrypt*"]
    resources = ["*"]

    principals {
      type        = "Service"
      identifiers = ["logs.${var.region}.amazonaws.com"]
    }

    condition {
      test     = "ArnEquals"
      variable = "kms:EncryptionContext:aws:logs:arn"
      values   = [local.log_group_arn]
    }
  }
}

resource "aws_kms_key" "agent" {
  description             = "Environment and logs of the ${var.name} Lambda function"
  enable_key_rotation     = true
  deletion_window_in_days = 30
  policy                  = data.aws_iam_policy_document.key.json
  tags                    = var.tags
}

resource "aws_kms_alias" "agent" {
  name          = "alias/${var.name}"
  target_key_id = aws_kms_key.agent.key_id
}

# --------------------------------------------------------------------------------------
# The execution role: the saver's runtime policy from the module, and writing to the
# function's own log group. Nothing else (no AWSLambdaBasicExecutionRole: it allows every
# log group in the account).
# --------------------------------------------------------------------------------------

data "aws_iam_policy_document" "assume" {
  statement {
    effect  = "Allow"
    actions = ["sts:AssumeRole"]

    principals {
      type        = "Service"
      identifiers = ["lambda.amazonaws.com"]
    }

    condition {
      test     = "StringEquals"
      variable = "aws:SourceAccount"
      values   = [data.aws_caller_identity.current.account_id]
    }
  }
}

resource "aws_iam_role" "agent" {
  name               = var.name
  assume_role_policy = data.aws_iam_policy_document.assume.json
  tags               = var.tags
}

resource "aws_iam_role_policy_attachment" "checkpoints" {
  role       = aws_iam_role.agent.name
  policy_arn = module.checkpoints.policy_arn
}

data "aws_iam_policy_document" "logs" {
  statement {
    effect    = "Allow"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = ["${local.log_group_arn}:*"]
  }
}

resource "aws_iam_role_policy" "logs" {
  name   = "logs"
  role   = aws_iam_role.agent.id
  policy = data.aws_iam_policy_document.logs.json
}

resource "aws_cloudwatch_log_group" "agent" {
  name              = local.log_group_name
  retention_in_days = var.log_retention_days
  kms_key_id        = aws_kms_key.agent.arn
  tags              = var.tags
}

# --------------------------------------------------------------------------------------
# The function
# --------------------------------------------------------------------------------------

resource "aws_lambda_function" "agent" {
  #checkov:skip=CKV_AWS_117:The function reaches only DynamoDB and S3 over TLS with IAM-signed requests and needs no private network resource; a VPC would add NAT or endpoints and no control the IAM policy and bucket policy do not give.
  #checkov:skip=CKV_AWS_116:Invoked synchronously (request/response); a dead-letter queue applies only to asynchronous invocations, and a failed request is reported to its caller.
  #checkov:skip=CKV_AWS_115:Concurrency is an account-level capacity decision; set var.reserved_concurrency to reserve or cap it (null by default, since accounts with a low limit cannot reserve any).
  #checkov:skip=CKV_AWS_50:X-Ray tracing would need X-Ray write permissions on the role, which is deliberately limited to the saver's policy and its own log group.
  #checkov:skip=CKV_AWS_272:The zip is built from this repository by make lambda-package and deployed by Terraform directly; code signing needs an AWS Signer profile and a signed artifact in S3, which a deployment pipeline adds.
  function_name = var.name
  role          = aws_iam_role.agent.arn
  runtime       = "python3.12"
  architectures = ["x86_64"]
  handler       = "app.handler"
  filename      = var.package_path
  # Changes when the zip does, so a new build is deployed.
  source_code_hash               = filebase64sha256(var.package_path)
  memory_size                    = var.memory_size
  timeout                        = var.timeout
  reserved_concurrent_executions = var.reserved_concurrency
  kms_key_arn                    = aws_kms_key.agent.arn

  environment {
    # The sealing keys come from sensitive variables for now: the saver reads its keyring
    # from S3DYNAMO_KEYS and S3DYNAMO_SECRET only.
    variables = merge(module.checkpoints.environment, {
      S3DYNAMO_KEYS   = var.sealing_keys
      S3DYNAMO_SECRET = var.naming_secret
    })
  }

  logging_config {
    log_format = "JSON"
    log_group  = aws_cloudwatch_log_group.agent.name
  }

  tags = var.tags

  depends_on = [aws_iam_role_policy.logs, aws_iam_role_policy_attachment.checkpoints]
}
