# Garbage collection in the example: the agent's own function, invoked on a schedule with
# {"action": "collect"}. Plans only, against a mocked AWS provider: no credentials and no
# network.

mock_provider "aws" {
  # Mocked computed values are known at plan time, so plans can be asserted on.
  override_during = plan
  source          = "./tests/mocks"
}

variables {
  bucket_name = "agent-checkpoints-test"
  # Any existing file: the function only hashes it, and the mocked provider uploads nothing.
  package_path = "main.tf"
}

run "collection_runs_daily_on_the_agents_function" {
  command = plan

  assert {
    condition     = aws_cloudwatch_event_rule.collection[0].schedule_expression == "rate(1 day)"
    error_message = "the collection must run daily by default"
  }

  assert {
    condition     = jsondecode(aws_cloudwatch_event_target.collection[0].input) == { action = "collect" }
    error_message = "the schedule must send app.py's collect action"
  }

  assert {
    condition     = aws_cloudwatch_event_target.collection[0].arn == aws_lambda_function.agent.arn
    error_message = "the collection must run on the agent's function, under its role"
  }

  assert {
    condition     = aws_lambda_permission.collection[0].function_name == aws_lambda_function.agent.function_name && aws_lambda_permission.collection[0].principal == "events.amazonaws.com"
    error_message = "EventBridge must be allowed to invoke the agent's function"
  }
}

run "no_schedule_no_collection" {
  command = plan

  variables {
    collection_schedule = null
  }

  assert {
    condition     = length(aws_cloudwatch_event_rule.collection) == 0 && length(aws_cloudwatch_event_target.collection) == 0 && length(aws_lambda_permission.collection) == 0
    error_message = "collection_schedule = null must schedule nothing"
  }
}
