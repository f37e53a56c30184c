terraform {
  # 1.9: the checkpointer_ttl validation refers to another variable (retention).
  required_version = ">= 1.9"

  required_providers {
    aws = {
      source = "hashicorp/aws"
      # 5.98: point_in_time_recovery's recovery_period_in_days (the key table's window).
      version = ">= 5.98"
    }
  }
}

provider "aws" {
  region = var.region
}
