"""Reading terraform/ without an HCL library, and running the terraform toolchain
(each skipped, with the reason, where the tool or the provider is not installed)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MAIN_TF = ROOT / "terraform" / "main.tf"

# A quoted string (with escapes) or a comment; used to drop comments but keep strings.
_STRING_OR_COMMENT = re.compile(r'"(?:\\.|[^"\\])*"|#[^\n]*|//[^\n]*|/\*.*?\*/', re.DOTALL)
# A quoted string or a brace; strings are matched whole so braces inside them are skipped.
_STRING_OR_BRACE = re.compile(r'"(?:\\.|[^"\\])*"|[{}]')
# `name = value` on one line. [ \t] rather than \s so an empty value never eats the next line.
_ASSIGNMENT = re.compile(r"^[ \t]*(\w+)[ \t]*=(?!=)[ \t]*(.*?)[ \t]*$", re.MULTILINE)


# --------------------------------------------------------------------------------------
# The extractor
# --------------------------------------------------------------------------------------


def strip_comments(text: str) -> str:
    return _STRING_OR_COMMENT.sub(lambda m: m.group() if m.group().startswith('"') else "", text)


def blocks(text: str, header: str) -> list[str]:
    """Bodies (between the braces) of every block whose header matches the regex `header`."""
    bodies = []
    for match in re.finditer(rf"^[ \t]*{header}[ \t]*\{{", text, re.MULTILINE):
        depth = 1
        for token in _STRING_OR_BRACE.finditer(text, match.end()):
            depth += {"{": 1, "}": -1}.get(token.group(), 0)
            if depth == 0:
                bodies.append(text[match.end() : token.start()])
                break
        else:
            raise AssertionError(f"terraform/main.tf: no closing brace for {match.group()!r}")
    return bodies


def top_level(body: str) -> str:
    """`body` with every nested `{ ... }` removed, leaving only its own assignments."""
    kept, depth, start = [], 0, 0
    for token in _STRING_OR_BRACE.finditer(body):
        if token.group() == "{":
            if depth == 0:
                kept.append(body[start : token.start()])
            depth += 1
        elif token.group() == "}":
            depth -= 1
            if depth == 0:
                start = token.end()
    kept.append(body[start:])
    return "".join(kept)


def assignments(body: str) -> dict[str, str]:
    """`name = value` at the top level of a block body; quoted values are unquoted."""
    found: dict[str, str] = {}
    for name, value in _ASSIGNMENT.findall(top_level(body)):
        assert name not in found, f"terraform/main.tf: {name!r} is assigned twice in one block"
        literal = re.fullmatch(r'"([^"\\$]*)"', value)
        found[name] = literal.group(1) if literal else value
    return found


TERRAFORM_DIR = ROOT / "terraform"
EXAMPLE_DIR = TERRAFORM_DIR / "examples" / "lambda_agent"
# `terraform test` files (*.tftest.hcl) for the module and for the example, kept out of
# terraform/ and copied next to the configuration they test when they run.
TERRAFORM_TESTS_DIR = ROOT / "tests" / "e2e" / "terraform_tests"
# A local provider mirror, so `terraform init` needs no registry: S3DYNAMO_TF_PLUGIN_DIR,
# else /opt/tf-plugins. It must hold registry.terraform.io/hashicorp/aws.
PLUGIN_DIR = Path(os.environ.get("S3DYNAMO_TF_PLUGIN_DIR", "/opt/tf-plugins"))
TERRAFORM = os.environ.get("S3DYNAMO_TERRAFORM") or shutil.which("terraform")
# checkov lives in its own virtual environment (`make checkov` creates it).
CHECKOV = os.environ.get("S3DYNAMO_CHECKOV") or str(ROOT / ".venv-checkov" / "bin" / "checkov")

needs_terraform = pytest.mark.skipif(
    TERRAFORM is None, reason="no terraform binary on PATH (or in S3DYNAMO_TERRAFORM)"
)
needs_provider = pytest.mark.skipif(
    not (PLUGIN_DIR / "registry.terraform.io" / "hashicorp" / "aws").is_dir(),
    reason=f"no hashicorp/aws provider mirror in {PLUGIN_DIR} (set S3DYNAMO_TF_PLUGIN_DIR)",
)


def terraform(args: list[str], cwd: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    assert TERRAFORM is not None
    cli_config = tmp_path / "terraformrc"
    cli_config.touch()
    env = {
        **os.environ,
        "TF_CLI_CONFIG_FILE": str(cli_config),  # an empty one: no ~/.terraformrc warning
        "TF_IN_AUTOMATION": "1",
        "CHECKPOINT_DISABLE": "1",  # no version check over the network
        "TF_INPUT": "0",
    }
    return subprocess.run(
        [TERRAFORM, *args, "-no-color"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def terraform_version(tmp_path: Path) -> tuple[int, ...]:
    """The terraform binary's version, as numbers: (1, 11, 4)."""
    done = terraform(["version", "-json"], ROOT, tmp_path)
    assert done.returncode == 0, f"terraform version failed:\n{done.stdout}{done.stderr}"
    version: str = json.loads(done.stdout)["terraform_version"]
    return tuple(int(part) for part in re.findall(r"\d+", version.split("-")[0]))


def copy_with_tests(tmp_path: Path) -> Path:
    """terraform/ copied into tmp_path (so .terraform/ and lock files land there, not in the
    repository), with each root's `terraform test` files in its `tests/` folder."""
    copy = tmp_path / "terraform"
    shutil.copytree(TERRAFORM_DIR, copy, ignore=shutil.ignore_patterns(".terraform*"))
    for root, target in (
        ("module", copy),
        ("example", copy / EXAMPLE_DIR.relative_to(TERRAFORM_DIR)),
    ):
        shutil.copytree(TERRAFORM_TESTS_DIR / root, target / "tests")
    return copy
