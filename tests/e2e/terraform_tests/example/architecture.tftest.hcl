# Both functions on x86_64 by default or on arm64 (Graviton); anything else refused. Plans
# only, against a mocked AWS provider: no credentials and no network.

mock_provider "aws" {
  override_during = plan
  source          = "./tests/mocks"
}

variables {
  bucket_name = "agent-checkpoints-test"
  # Any existing file: the function only hashes it, and the mocked provider uploads nothing.
  package_path = "main.tf"
}

run "x86_64_by_default" {
  command = plan

  assert {
    condition     = aws_lambda_function.agent.architectures == tolist(["x86_64"])
    error_message = "the agent's function must run on x86_64 by default"
  }

  assert {
    condition     = [for f in aws_lambda_function.retention : f.architectures] == [tolist(["x86_64"])]
    error_message = "the retention function must run on x86_64 by default"
  }
}

run "arm64_runs_both_functions_on_graviton" {
  command = plan

  variables {
    architecture = "arm64"
  }

  assert {
    condition     = aws_lambda_function.agent.architectures == tolist(["arm64"])
    error_message = "with architecture = \"arm64\" the agent's function must run on arm64"
  }

  assert {
    condition     = [for f in aws_lambda_function.retention : f.architectures] == [tolist(["arm64"])]
    error_message = "with architecture = \"arm64\" the retention function must run on arm64"
  }

  assert {
    condition     = aws_lambda_function.agent.filename == "main.tf" && aws_lambda_function.agent.runtime == "python3.12"
    error_message = "the given package_path must be deployed, on the python3.12 runtime"
  }
}

run "other_architectures_are_refused" {
  command = plan

  variables {
    architecture = "aarch64"
  }

  expect_failures = [var.architecture]
}
