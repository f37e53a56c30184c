"""The Lambda zip's figures, as scripts/lambda_package.sh measures them, and the table of
examples/lambda_agent/README.md written from them, so the two cannot part.

    python3.12 -I scripts/lambda_figures.py measure STAGE ZIP ARCH BEFORE UNZIPPED_SOURCE \\
        UNZIPPED ZIPPED_SOURCE ZIPPED > build/lambda_agent.figures.json   (the script)
    python scripts/lambda_figures.py write X86_64.json ARM64.json [VECTORS.json]
                                                        (make lambda-figures)
    python scripts/lambda_figures.py check BUILD.json                     (the e2e test)
    python scripts/lambda_figures.py constraints ARCH > pins.txt   (LAMBDA_CONSTRAINTS)

`measure` adds to the byte counts the script passes what the staged directory holds
(files, `.py`, `.pyc`, `.so`, the largest top-level entries), the share of this
package's own files (`own`: they change with its code and README), and what it was built
from: the Python that compiled the bytecode and the name and version of every package
installed. `write` keeps both builds' figures (and, given, the x86_64 build with the
`vectors` extra's numpy) in examples/lambda_agent/figures.json and replaces the README's
table, between its two marker lines, with their rendering. `check`
compares a build's figures with the recorded ones: with the same Python and packages,
everything but this package's own share must be the same, byte for byte ("installed,
before trimming" aside: pip's records in it name the build directory); other versions
are reported, to write the README again. `constraints ARCH` prints the recorded versions
as pip constraints, for a build of exactly those (LAMBDA_CONSTRAINTS). Only the standard
library: `measure` runs in the isolated Python 3.12 that builds the zip.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
import textwrap
import zipfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "examples" / "lambda_agent" / "README.md"
RECORDED = ROOT / "examples" / "lambda_agent" / "figures.json"
BEGIN = "<!-- zip figures: written by scripts/lambda_figures.py (make lambda-figures) -->"
END = "<!-- end of zip figures -->"
# Byte counts, in the order the script passes them.
SIZES = ("before", "unzipped_source", "unzipped", "zipped_source", "zipped")
# Named in the sentence above the table (every package is in figures.json).
NAMED = ("langgraph", "langchain-core", "cryptography", "zstandard", "pydantic-core")
REGENERATE = "make lambda-figures (both builds, then the table)"


# This package's own files, as the zip holds them (relative paths).
OWN = (
    "langgraph/checkpoint/s3dynamo/",
    "langgraph/store/s3dynamo/",
    "langgraph/cache/s3dynamo/",
    "langgraph_checkpoint_s3dynamo-",
)
# Figures compared between two builds of the same Python and packages, less `own`.
COMPARED = ("unzipped_source", "unzipped", "zipped_source", "zipped", "files", "py", "pyc", "so")


def _own(name: str) -> bool:
    return name.startswith(OWN)


def _in_zip(info: zipfile.ZipInfo) -> int:
    """What one entry takes in a zip: its data, local header and central directory entry
    (as scripts/lambda_package.sh counts the .pyc entries)."""
    return (
        info.compress_size + 76 + 2 * len(info.filename) + 2 * len(info.extra) + len(info.comment)
    )


def measure(stage: str, zip_path: str, arch: str, *sizes: str) -> dict[str, Any]:
    files = [os.path.join(d, f) for d, _, names in os.walk(stage) for f in names]
    packages = {}
    for entry in sorted(os.listdir(stage)):
        metadata = os.path.join(stage, entry, "METADATA")
        if entry.endswith(".dist-info") and os.path.exists(metadata):
            fields = dict(
                line.split(": ", 1)
                for line in Path(metadata).read_text(encoding="utf-8").splitlines()[:20]
                if ": " in line
            )
            packages[fields["Name"].lower().replace("_", "-")] = fields["Version"]
    tops: dict[str, int] = {}
    for path in files:
        top = os.path.relpath(path, stage).split(os.sep)[0]
        if not top.endswith(".dist-info"):
            tops[top] = tops.get(top, 0) + os.path.getsize(path)
    own = [f for f in files if _own(os.path.relpath(f, stage).replace(os.sep, "/"))]
    with zipfile.ZipFile(zip_path) as zf:
        own_entries = [i for i in zf.infolist() if _own(i.filename)]
    return {
        "arch": arch,
        "date": dt.date.today().isoformat(),
        "python": sys.version.split()[0],
        "packages": packages,
        **{name: int(value) for name, value in zip(SIZES, sizes, strict=True)},
        "files": len(files),
        "py": sum(f.endswith(".py") for f in files),
        "pyc": sum(f.endswith(".pyc") for f in files),
        "so": sum(f.endswith(".so") or ".so." in f for f in files),
        "largest": sorted(tops.items(), key=lambda kv: -kv[1])[:4],
        "own": {
            "unzipped": sum(os.path.getsize(f) for f in own),
            "unzipped_source": sum(os.path.getsize(f) for f in own if not f.endswith(".pyc")),
            "zipped": sum(_in_zip(i) for i in own_entries),
            "zipped_source": sum(
                _in_zip(i) for i in own_entries if not i.filename.endswith(".pyc")
            ),
            "files": len(own),
            "py": sum(f.endswith(".py") for f in own),
            "pyc": sum(f.endswith(".pyc") for f in own),
            "so": 0,
        },
    }


def _bytes(n: int) -> str:
    return f"{n:,} ({n / 1048576:.1f} MiB)"


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


def render(x86: dict[str, Any], arm: dict[str, Any], vectors: dict[str, Any] | None = None) -> str:
    """The README's lines between the markers, from both builds' figures (and the
    `vectors` build's, if any)."""
    assert (x86["arch"], arm["arch"]) == ("x86_64", "arm64")
    named = ", ".join(f"{n} {x86['packages'][n]}" for n in NAMED if n in x86["packages"])

    def row(label: str, key: str, bold: bool = False) -> str:
        a, b = _bytes(x86[key]), _bytes(arm[key])
        return f"| {label} | **{a}** | **{b}** |" if bold else f"| {label} | {a} | {b} |"

    def counts(f: dict[str, Any]) -> str:
        return f"{f['files']:,} files: {f['py']:,} `.py`, {f['pyc']:,} `.pyc`, {f['so']} `.so`"

    largest = ", ".join(f"{name} {_mb(n)}" for name, n in x86["largest"])
    own = x86["own"]

    def wrapped(text: str) -> str:
        # Code spans kept on one line: their spaces are not places to break.
        spans = text.split("`")
        kept = "`".join(part.replace(" ", "\0") if i % 2 else part for i, part in enumerate(spans))
        filled = textwrap.fill(kept, 88, break_long_words=False, break_on_hyphens=False)
        return filled.replace("\0", " ")

    return "\n".join(
        [
            wrapped(
                f"Measured with `{REGENERATE.split(' (')[0]}` on {x86['date']}: `make "
                "lambda-package` and `make lambda-package ARCH=arm64`, which print these "
                "figures and keep them beside the zip, then this table written from them. The "
                f"bytecode was compiled by Python {x86['python']}; the packages were the "
                f"versions PyPI gave then ({len(x86['packages'])} of them, each in "
                f"[figures.json](figures.json); among them {named}):"
            ),
            "",
            "| | x86_64, bytes | arm64, bytes |",
            "|---|---|---|",
            row("installed, before trimming", "before"),
            row("unzipped, after trimming, without bytecode", "unzipped_source"),
            row("unzipped, with bytecode", "unzipped"),
            f"| files in it | {counts(x86)} | {counts(arm)} |",
            row("the zip without its bytecode", "zipped_source"),
            row("**the zip** (`build/lambda_agent.zip`, `build/lambda_agent_arm64.zip`)",
                "zipped", bold=True),
            "",
            wrapped(
                f"On x86_64 the bytecode adds {_mb(x86['zipped'] - x86['zipped_source'])} to "
                f"the zip and {_mb(x86['unzipped'] - x86['unzipped_source'])} unzipped; "
                f"trimming removes {_mb(x86['before'] - x86['unzipped_source'])}. The largest "
                f"pieces left: {largest}. This package's own files, built from the "
                f"repository that day (they change with its code), are {own['files']} of "
                f"them and {own['zipped']:,} bytes of the zip."
            ),
            *([] if vectors is None else ["", _vectors_line(x86, vectors)]),
        ]
    )  # fmt: skip


def _vectors_line(x86: dict[str, Any], vectors: dict[str, Any]) -> str:
    numpy = sum(n for name, n in vectors["largest"] if name.startswith("numpy"))
    return textwrap.fill(
        "With the `vectors` extra (`make lambda-package EXTRAS=vectors`, x86_64, numpy "
        f"{vectors['packages'].get('numpy', '?')}): the zip is {_bytes(vectors['zipped'])}, "
        f"{_mb(vectors['zipped'] - x86['zipped'])} more, and {_bytes(vectors['unzipped'])} "
        f"unzipped, of which numpy and its libraries are {_mb(numpy)}. Lambda takes a zip "
        "of up to 50 MB uploaded directly and 250 MB unzipped.",
        88,
        break_long_words=False,
        break_on_hyphens=False,
    )


def write(x86_path: str, arm_path: str, vectors_path: str | None = None) -> None:
    x86, arm = (json.loads(Path(p).read_text()) for p in (x86_path, arm_path))
    vectors = json.loads(Path(vectors_path).read_text()) if vectors_path else None
    recorded = {"x86_64": x86, "arm64": arm, **({"x86_64 vectors": vectors} if vectors else {})}
    RECORDED.write_text(json.dumps(recorded, indent=2) + "\n")
    text = README.read_text(encoding="utf-8")
    head, rest = text.split(BEGIN + "\n", 1)
    _, tail = rest.split(END, 1)
    table = render(x86, arm, vectors)
    README.write_text(f"{head}{BEGIN}\n{table}\n{END}{tail}", encoding="utf-8")
    print(f"wrote {RECORDED.relative_to(ROOT)} and the table of {README.relative_to(ROOT)}")


def recorded_table() -> tuple[str, str]:
    """(the README's lines between the markers, their rendering from figures.json)."""
    text = README.read_text(encoding="utf-8")
    inside = text.split(BEGIN + "\n", 1)[1].split("\n" + END, 1)[0]
    figures = json.loads(RECORDED.read_text())
    return inside, render(figures["x86_64"], figures["arm64"], figures.get("x86_64 vectors"))


def differences(built: dict[str, Any]) -> list[str]:
    """What differs between a build's figures and the recorded ones of its architecture:
    first what it was built from; with the same Python and packages, every figure that
    does not count this package's own files or pip's records (`COMPARED`, less `own`)."""
    recorded = json.loads(RECORDED.read_text())[built["arch"]]
    inputs = []
    if built["python"] != recorded["python"]:
        inputs.append(f"Python {built['python']} (recorded: {recorded['python']})")
    for name in sorted(set(built["packages"]) | set(recorded["packages"])):
        now, then = built["packages"].get(name), recorded["packages"].get(name)
        if now != then:
            inputs.append(f"{name} {now or '(none)'} (recorded: {then or '(none)'})")
    if inputs:
        return [f"built from other versions: {', '.join(inputs)}"]
    return [
        f"{k} less this package's own: built {built[k] - built['own'][k]}, recorded "
        f"{recorded[k] - recorded['own'][k]}"
        for k in COMPARED
        if built[k] - built["own"][k] != recorded[k] - recorded["own"][k]
    ]


def constraints(arch: str) -> str:
    """The recorded packages of an architecture's build as pip constraints (this package
    aside: it is built from the repository): a build under them is of the versions the
    README's figures name, whatever PyPI has released since."""
    packages = json.loads(RECORDED.read_text())[arch]["packages"]
    return "".join(
        f"{name}=={version}\n"
        for name, version in sorted(packages.items())
        if name != "langgraph-checkpoint-s3dynamo"
    )


def check(built_path: str) -> int:
    problems = differences(json.loads(Path(built_path).read_text()))
    for problem in problems:
        print(f"the README's zip figures do not match this build: {problem}")
    if problems:
        print(f"write them again: {REGENERATE}")
    return 1 if problems else 0


if __name__ == "__main__":
    command, *args = sys.argv[1:]
    if command == "measure":
        print(json.dumps(measure(*args), indent=2))
    elif command == "write":
        write(*args)
    elif command == "constraints":
        print(constraints(*args), end="")
    elif command == "check":
        sys.exit(check(*args))
    else:
        sys.exit(f"unknown command {command!r}: measure, write, constraints or check")
