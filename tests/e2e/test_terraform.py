"""terraform/main.tf must declare exactly the DynamoDB table that schema.py describes, and the
Terraform code must pass the real toolchain: `terraform fmt`, `terraform validate` on the
module and on the example root configuration, `terraform test` (the files in
tests/e2e/terraform_tests/, planned against a mocked AWS provider: SnapStart and the
architecture in the example,
checkpointer_ttl and retention in the module and the example, the key table of data
subjects in the module), and checkov (each skipped,
with the reason, where the tool is not installed).

The schema tests need no terraform binary, provider or HCL library: a small extractor reads only the
blocks these tests look at (`resource "..." "..." { ... }`, nested `attribute { ... }` and
`global_secondary_index { ... }` blocks, and `name = value` lines). It understands comments and
quoted strings, which is all main.tf uses; it does not understand heredocs.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.support.terraform import (
    CHECKOV,
    EXAMPLE_DIR,
    MAIN_TF,
    PLUGIN_DIR,
    ROOT,
    TERRAFORM_DIR,
    TERRAFORM_TESTS_DIR,
    assignments,
    blocks,
    copy_with_tests,
    needs_provider,
    needs_terraform,
    strip_comments,
    terraform,
    terraform_version,
)

SCHEMA_PY = ROOT / "src" / "langgraph" / "checkpoint" / "s3dynamo" / "format" / "schema.py"


def test_extractor_skips_braces_in_strings_and_comments() -> None:
    text = strip_comments(
        'resource "t" "a" {\n'
        '  key = "pk" # not } a brace\n'
        '  arn = "${x.arn}/{weird}"\n'
        "  /* { */\n"
        "  inner {\n"
        '    key = "nested"\n'
        "  }\n"
        "  tags = {}\n"
        "}\n"
    )
    [body] = blocks(text, r'resource\s+"t"\s+"\w+"')
    assert assignments(body) == {"key": "pk", "arn": '"${x.arn}/{weird}"', "tags": ""}
    assert [assignments(b) for b in blocks(body, "inner")] == [{"key": "nested"}]


# --------------------------------------------------------------------------------------
# The two sides
# --------------------------------------------------------------------------------------


def load_schema() -> ModuleType:
    # Loaded by path, so the test needs neither an installed package nor the saver's imports:
    # schema.py depends on nothing but `typing`.
    spec = importlib.util.spec_from_file_location("s3dynamo_schema_under_test", SCHEMA_PY)
    assert spec is not None and spec.loader is not None, f"cannot load {SCHEMA_PY}"
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    definition: dict[str, Any] = load_schema().table_definition("x")
    return definition


@pytest.fixture(scope="module")
def main_tf() -> str:
    return strip_comments(MAIN_TF.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def table(main_tf: str) -> str:
    found = blocks(main_tf, r'resource\s+"aws_dynamodb_table"\s+"this"')
    assert len(found) == 1, f"terraform/main.tf declares {len(found)} data tables, not 1"
    return found[0]


@pytest.fixture(scope="module")
def key_table(main_tf: str) -> str:
    found = blocks(main_tf, r'resource\s+"aws_dynamodb_table"\s+"keys"')
    assert len(found) == 1, f"terraform/main.tf declares {len(found)} key tables, not 1"
    return found[0]


def test_only_the_data_table_and_the_key_table(main_tf: str) -> None:
    names = re.findall(r'^[ \t]*resource\s+"aws_dynamodb_table"\s+"(\w+)"', main_tf, re.MULTILINE)
    assert sorted(names) == ["keys", "this"], names


def agree(what: str, in_schema: object, in_terraform: object) -> None:
    assert in_terraform == in_schema, (
        f"{what} disagree: schema.py says {in_schema!r}, terraform/main.tf says {in_terraform!r}"
    )


def hash_and_range(key_schema: list[dict[str, str]]) -> tuple[str | None, str | None]:
    by_type = {key["KeyType"]: key["AttributeName"] for key in key_schema}
    return by_type.get("HASH"), by_type.get("RANGE")


# --------------------------------------------------------------------------------------
# DynamoDB table
# --------------------------------------------------------------------------------------


def test_billing_mode(schema: dict[str, Any], table: str) -> None:
    agree("billing modes", schema["BillingMode"], assignments(table).get("billing_mode"))
    assert schema["BillingMode"] == "PAY_PER_REQUEST", "schema.py is no longer on-demand"


def test_primary_key(schema: dict[str, Any], table: str) -> None:
    tf = assignments(table)
    agree(
        "table (hash, range) keys",
        hash_and_range(schema["KeySchema"]),
        (tf.get("hash_key"), tf.get("range_key")),
    )


def test_attributes(schema: dict[str, Any], table: str) -> None:
    in_terraform = [assignments(body) for body in blocks(table, "attribute")]
    names = [attribute.get("name") for attribute in in_terraform]
    assert len(names) == len(set(names)), f"terraform/main.tf repeats an attribute: {names}"
    agree(
        "attribute definitions {name: type}",
        {a["AttributeName"]: a["AttributeType"] for a in schema["AttributeDefinitions"]},
        {attribute.get("name"): attribute.get("type") for attribute in in_terraform},
    )


def test_global_secondary_indexes(schema: dict[str, Any], table: str) -> None:
    in_schema = {
        index["IndexName"]: {
            "keys": hash_and_range(index["KeySchema"]),
            "projection": index["Projection"]["ProjectionType"],
            "non_key_attributes": sorted(index["Projection"].get("NonKeyAttributes", [])),
        }
        for index in schema.get("GlobalSecondaryIndexes", [])
    }
    in_terraform = {}
    for body in blocks(table, "global_secondary_index"):
        tf = assignments(body)
        non_key = re.findall(r'"([^"]*)"', tf.get("non_key_attributes", ""))
        in_terraform[tf.get("name")] = {
            "keys": (tf.get("hash_key"), tf.get("range_key")),
            "projection": tf.get("projection_type"),
            "non_key_attributes": sorted(non_key),
        }
    agree("global secondary index names", sorted(in_schema), sorted(in_terraform))
    for name, index in in_schema.items():
        agree(f"global secondary index {name!r}", index, in_terraform[name])


def test_policy_grants_each_index(schema: dict[str, Any], main_tf: str) -> None:
    for index in schema.get("GlobalSecondaryIndexes", []):
        name = index["IndexName"]
        assert f"/index/{name}" in main_tf, (
            f"schema.py has index {name!r} but terraform/main.tf's IAM policy grants nothing "
            f'on "<table arn>/index/{name}"'
        )


# --------------------------------------------------------------------------------------
# The key table (data subjects' keys): the data table's primary key, nothing else
# --------------------------------------------------------------------------------------


def test_key_table_has_the_data_tables_primary_key_and_no_index(
    schema: dict[str, Any], key_table: str
) -> None:
    # The saver addresses it as it does the data table (pk, sk strings); it queries no index.
    tf = assignments(key_table)
    agree(
        "key table (hash, range) keys",
        hash_and_range(schema["KeySchema"]),
        (tf.get("hash_key"), tf.get("range_key")),
    )
    keys = {key["AttributeName"] for key in schema["KeySchema"]}
    agree(
        "key table attribute definitions {name: type}",
        {
            a["AttributeName"]: a["AttributeType"]
            for a in schema["AttributeDefinitions"]
            if a["AttributeName"] in keys
        },
        {a.get("name"): a.get("type") for a in map(assignments, blocks(key_table, "attribute"))},
    )
    assert not blocks(key_table, "global_secondary_index"), "the key table needs no index"
    agree("key table billing modes", schema["BillingMode"], tf.get("billing_mode"))


def test_key_table_is_made_with_subjects_only_and_kept(key_table: str) -> None:
    tf = assignments(key_table)
    assert tf.get("count") == "local.subjects ? 1 : 0", tf.get("count")
    assert tf.get("deletion_protection_enabled") == "var.key_table_deletion_protection"
    [recovery] = [assignments(b) for b in blocks(key_table, "point_in_time_recovery")]
    assert recovery == {
        "enabled": "true",
        "recovery_period_in_days": "var.key_table_recovery_days",
    }, recovery
    [encryption] = [assignments(b) for b in blocks(key_table, "server_side_encryption")]
    assert encryption == {"enabled": "true", "kms_key_arn": "var.table_kms_key_arn"}, encryption


# --------------------------------------------------------------------------------------
# S3 bucket
# --------------------------------------------------------------------------------------


def test_bucket_blocks_all_public_access(main_tf: str) -> None:
    buckets = re.findall(r'^[ \t]*resource\s+"aws_s3_bucket"\s+"(\w+)"', main_tf, re.MULTILINE)
    assert buckets, "terraform/main.tf declares no aws_s3_bucket"
    access_blocks = [
        assignments(body)
        for body in blocks(main_tf, r'resource\s+"aws_s3_bucket_public_access_block"\s+"\w+"')
    ]
    settings = (
        "block_public_acls",
        "block_public_policy",
        "ignore_public_acls",
        "restrict_public_buckets",
    )
    for bucket in buckets:
        mine = [
            block
            for block in access_blocks
            if re.fullmatch(rf"aws_s3_bucket\.{bucket}\.(id|bucket)", block.get("bucket", ""))
        ]
        assert len(mine) == 1, (
            f"terraform/main.tf: aws_s3_bucket.{bucket} has {len(mine)} "
            "aws_s3_bucket_public_access_block, not 1"
        )
        wrong = {name: mine[0].get(name) for name in settings if mine[0].get(name) != "true"}
        assert not wrong, (
            f"terraform/main.tf: public access block of aws_s3_bucket.{bucket} must set all "
            f"four settings to true; these are not: {wrong}"
        )


# --------------------------------------------------------------------------------------
# The real toolchain: terraform fmt, init + validate, and checkov
# --------------------------------------------------------------------------------------


@needs_terraform
@pytest.mark.parametrize(
    "directory", [TERRAFORM_DIR, TERRAFORM_TESTS_DIR], ids=["terraform", "terraform_tests"]
)
def test_terraform_fmt(directory: Path, tmp_path: Path) -> None:
    done = terraform(["fmt", "-check", "-recursive", "-diff"], directory, tmp_path)
    assert done.returncode == 0, f"terraform fmt -check failed:\n{done.stdout}{done.stderr}"


@needs_terraform
@needs_provider
@pytest.mark.parametrize("root", ["module", "example"])
def test_terraform_validate(root: str, tmp_path: Path) -> None:
    # A copy, so .terraform/ and the lock file land in tmp_path, not in the repository.
    copy = tmp_path / "terraform"
    shutil.copytree(TERRAFORM_DIR, copy, ignore=shutil.ignore_patterns(".terraform*"))
    cwd = copy if root == "module" else copy / EXAMPLE_DIR.relative_to(TERRAFORM_DIR)
    init = terraform(
        ["init", "-backend=false", f"-plugin-dir={PLUGIN_DIR}", "-input=false"], cwd, tmp_path
    )
    assert init.returncode == 0, f"terraform init failed:\n{init.stdout}{init.stderr}"
    done = terraform(["validate"], cwd, tmp_path)
    assert done.returncode == 0, f"terraform validate failed:\n{done.stdout}{done.stderr}"
    assert "The configuration is valid" in done.stdout, done.stdout


# `override_during = plan` (mocked values known at plan time) is Terraform 1.11.
TERRAFORM_TEST_VERSION = (1, 11)


def init_for_test(root: str, tmp_path: Path) -> Path:
    """A copy of terraform/ with the test files in place, `terraform init` done offline;
    returns the root configuration's directory in it."""
    if terraform_version(tmp_path) < TERRAFORM_TEST_VERSION:
        pytest.skip(
            "the terraform test files use override_during, which needs terraform "
            f">= {'.'.join(map(str, TERRAFORM_TEST_VERSION))}"
        )
    copy = copy_with_tests(tmp_path)
    cwd = copy if root == "module" else copy / EXAMPLE_DIR.relative_to(TERRAFORM_DIR)
    init = terraform(
        ["init", "-backend=false", f"-plugin-dir={PLUGIN_DIR}", "-input=false"], cwd, tmp_path
    )
    assert init.returncode == 0, f"terraform init failed:\n{init.stdout}{init.stderr}"
    return cwd


@needs_terraform
@needs_provider
@pytest.mark.parametrize("root", ["module", "example"])
def test_terraform_test(root: str, tmp_path: Path) -> None:
    # Plans against `mock_provider "aws"`: no credentials, no request leaves the machine.
    cwd = init_for_test(root, tmp_path)
    done = terraform(["test"], cwd, tmp_path)
    assert done.returncode == 0, f"terraform test failed:\n{done.stdout}{done.stderr}"
    assert re.search(r"Success! [1-9]\d* passed, 0 failed", done.stdout), done.stdout
    # Every file in tests/e2e/terraform_tests/<root>/ ran.
    for hcl in (TERRAFORM_TESTS_DIR / root).glob("*.tftest.hcl"):
        assert f"tests/{hcl.name}... pass" in done.stdout, done.stdout


@needs_terraform
@needs_provider
def test_checkpointer_ttl_with_retention_says_which_to_use(tmp_path: Path) -> None:
    # The example sets retention = "30d" by default; giving checkpointer_ttl alone must fail
    # with a message that names the fix. expect_failures cannot check a message, so this run
    # expects none and the test reads the error terraform prints.
    cwd = init_for_test("example", tmp_path)
    (cwd / "tests" / "conflict.tftest.hcl").write_text(
        'mock_provider "aws" {}\n'
        "\n"
        'run "checkpointer_ttl_with_the_default_retention" {\n'
        "  command = plan\n"
        "  variables {\n"
        '    bucket_name      = "agent-checkpoints-test"\n'
        '    package_path     = "main.tf"\n'
        "    checkpointer_ttl = { default_ttl = 43200 }\n"
        "  }\n"
        "}\n"
    )
    done = terraform(["test", "-filter=tests/conflict.tftest.hcl"], cwd, tmp_path)
    output = " ".join((done.stdout + done.stderr).split())
    assert done.returncode != 0, output
    assert "Set checkpointer_ttl or retention, not both" in output, output
    assert "set retention = null" in output, output


DEFAULT_ZIP_TEST = """
mock_provider "aws" {
  override_during = plan
  source          = "./tests/mocks"
}

run "arm64_default_zip" {
  command = plan
  variables {
    bucket_name  = "agent-checkpoints-test"
    architecture = "arm64"
  }
  assert {
    condition     = endswith(aws_lambda_function.agent.filename, "build/lambda_agent_arm64.zip")
    error_message = "arm64 must deploy build/lambda_agent_arm64.zip"
  }
}

run "x86_64_default_zip" {
  command = plan
  variables {
    bucket_name = "agent-checkpoints-test"
  }
  assert {
    condition     = endswith(aws_lambda_function.agent.filename, "build/lambda_agent.zip")
    error_message = "x86_64 must deploy build/lambda_agent.zip"
  }
}
"""


@needs_terraform
@needs_provider
def test_arm64_deploys_the_arm64_zip_and_names_the_command_that_builds_it(
    tmp_path: Path,
) -> None:
    # Without package_path the example deploys what `make lambda-package ARCH=arm64` builds
    # (build/lambda_agent_arm64.zip from the repository's root); a wrong value names it.
    cwd = init_for_test("example", tmp_path)
    build = cwd.parents[2] / "build"
    build.mkdir()
    (build / "lambda_agent_arm64.zip").write_bytes(b"arm64 zip")
    (build / "lambda_agent.zip").write_bytes(b"x86_64 zip")
    (cwd / "tests" / "default_zip.tftest.hcl").write_text(DEFAULT_ZIP_TEST)
    done = terraform(["test", "-filter=tests/default_zip.tftest.hcl"], cwd, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed, 0 failed" in done.stdout, done.stdout

    (cwd / "tests" / "default_zip.tftest.hcl").unlink()
    (cwd / "tests" / "wrong.tftest.hcl").write_text(
        'mock_provider "aws" {}\n'
        "\n"
        'run "aarch64" {\n'
        "  command = plan\n"
        "  variables {\n"
        '    bucket_name  = "agent-checkpoints-test"\n'
        '    package_path = "main.tf"\n'
        '    architecture = "aarch64"\n'
        "  }\n"
        "}\n"
    )
    done = terraform(["test", "-filter=tests/wrong.tftest.hcl"], cwd, tmp_path)
    output = " ".join((done.stdout + done.stderr).split())
    assert done.returncode != 0, output
    assert 'architecture must be "x86_64" or "arm64"' in output, output
    assert "make lambda-package ARCH=<architecture>" in output, output


@pytest.mark.skipif(
    not Path(CHECKOV).is_file(),
    reason=f"no checkov at {CHECKOV}: `make checkov` installs it into .venv-checkov",
)
def test_checkov_passes(tmp_path: Path) -> None:
    # --skip-download: checkov makes no network request (no guidelines download).
    done = subprocess.run(
        [
            CHECKOV,
            "--compact",
            "--skip-download",
            "--output",
            "json",
            "--quiet",
            "--framework",
            "terraform",
            "-d",
            str(TERRAFORM_DIR),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    report = json.loads(done.stdout)
    reports = report if isinstance(report, list) else [report]
    failed = [c for r in reports for c in r.get("results", {}).get("failed_checks", [])]
    assert not failed, [(c["check_id"], c["resource"], c["file_path"]) for c in failed]
    assert done.returncode == 0, done.stderr[-2000:]
    # Every skip carries a reason, inline next to the resource.
    skipped = [c for r in reports for c in r.get("results", {}).get("skipped_checks", [])]
    for check in skipped:
        reason = (check.get("check_result") or {}).get("suppress_comment", "")
        assert len(reason) > 40, f"{check['check_id']} on {check['resource']}: reason {reason!r}"


def test_the_readme_lists_every_input_and_output() -> None:
    """terraform/README.md's Inputs table names every variable of variables.tf, and its
    Outputs every output of outputs.tf (no terraform needed)."""
    readme = (TERRAFORM_DIR / "README.md").read_text()
    inputs = set(re.findall(r"^\| `(\w+)`", readme, re.MULTILINE))
    declared = set(
        re.findall(r'^variable "(\w+)"', (TERRAFORM_DIR / "variables.tf").read_text(), re.M)
    )
    assert declared - inputs == set()
    outputs = readme.split("## Outputs", 1)[1].split("\n## ", 1)[0]
    made = set(
        re.findall(r'^output "(\w+)"', (TERRAFORM_DIR / "outputs.tf").read_text(), re.MULTILINE)
    )
    assert {o for o in made if f"`{o}`" not in outputs} == set()
