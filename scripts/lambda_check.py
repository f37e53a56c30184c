"""Checks of a Lambda zip that scripts/lambda_package.sh builds; run by it.

    python3.12 -I scripts/lambda_check.py listing ZIP ARCH
    python3.12 -I -S -B scripts/lambda_check.py imports TASK RUNTIME

`listing` imports nothing from the zip, so it runs for any architecture: every extension
module is an ELF object for ARCH, and every `.py` has a `.pyc` beside it (in `__pycache__`)
for this interpreter's bytecode version, hash-based and unchecked, of that very source.

`imports` is the runtime's view: TASK (the unzipped zip) then RUNTIME (boto3, as the
Lambda runtime provides it) on `sys.path`, nothing else. While `app` is imported and its
saver and graph built, the import system's one path from source to code
(`SourceLoader.source_to_code`) is watched, and an audit hook records every file opened and
every `compile()`. It fails if the import system compiled a file of TASK, or if a module
imported from TASK did not open its `.pyc`; files of TASK that libraries read or compile
themselves are named (anyio parses its own `__init__.py` into an AST). Must run with
`-I -S -B`: no site-packages, no bytecode writes.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import zipfile

# e_machine of the ELF header (offset 18, little-endian) for Lambda's two architectures.
ELF_MACHINES = {"x86_64": 62, "arm64": 183}
TAG = sys.implementation.cache_tag  # cpython-312


def listing(zip_path: str, arch: str) -> None:
    expected = ELF_MACHINES[arch]
    with zipfile.ZipFile(zip_path) as zf:
        names = set(zf.namelist())
        shared = [n for n in names if n.endswith(".so") or ".so." in n]
        for name in shared:
            head = zf.read(name)[:20]
            machine = int.from_bytes(head[18:20], "little")
            if head[:4] != b"\x7fELF" or machine != expected:
                sys.exit(
                    f"error: {name} is not an ELF object for {arch} (e_machine {expected}); "
                    f"its header says {head[:4]!r}, e_machine {machine}. pip must install "
                    f"the wheels for {arch} (--platform)"
                )
        sources = [n for n in names if n.endswith(".py")]
        unchecked = 0b01  # flags word of a hash-based .pyc whose source is not checked
        for name in sources:
            folder, _, file = name.rpartition("/")
            cached = f"{folder}/__pycache__/{file[:-3]}.{TAG}.pyc".lstrip("/")
            if cached not in names:
                sys.exit(f"error: {name} has no bytecode {cached}: compileall must run with {TAG}")
            head = zf.read(cached)[:16]
            magic, flags = head[:4], int.from_bytes(head[4:8], "little")
            if magic != importlib.util.MAGIC_NUMBER or flags != unchecked:
                sys.exit(
                    f"error: {cached} has magic {magic!r} and flags {flags}; expected "
                    f"{importlib.util.MAGIC_NUMBER!r} ({TAG}) and {unchecked} (unchecked "
                    "hash): compile with --invalidation-mode unchecked-hash"
                )
            if head[8:16] != importlib.util.source_hash(zf.read(name)):
                sys.exit(f"error: {cached} was compiled from another version of {name}")
        stray = [n for n in names if n.endswith(".pyc") and f"{TAG}." not in n]
        if stray:
            sys.exit(f"error: bytecode of another Python in the zip: {stray[:5]}")
    print(
        f"listing check passed: {len(shared)} extension modules, all ELF for {arch}; "
        f"{len(sources)} .py files, each with its {TAG} unchecked-hash .pyc"
    )


def imports(task: str, runtime: str) -> None:
    assert sys.flags.isolated and sys.flags.no_site and sys.flags.dont_write_bytecode, (
        "run with python -I -S -B"
    )
    task = os.path.realpath(task) + os.sep
    compiled: list[str] = []
    opened: set[str] = set()

    def audit(event: str, args: tuple[object, ...]) -> None:
        if event == "compile" and isinstance(args[1], str):
            compiled.append(args[1])
        elif event == "open" and isinstance(args[0], str):
            opened.add(os.path.realpath(args[0]))

    sys.addaudithook(audit)
    # What SourceFileLoader.get_code calls when it finds no valid .pyc, and only then.
    import importlib._bootstrap_external as external

    from_source: list[str] = []
    to_code = external.SourceLoader.source_to_code

    def source_to_code(self: object, data: bytes, path: str, **kwargs: object) -> object:
        from_source.append(path)
        return to_code(self, data, path, **kwargs)  # type: ignore[arg-type]

    external.SourceLoader.source_to_code = source_to_code  # type: ignore[method-assign,assignment]
    sys.path[:0] = [task.rstrip(os.sep), runtime]
    before = sorted(_files(task))

    import app  # the init phase: imports, the saver built and primed

    saver = getattr(app, "_saver", None)
    if importlib.util.find_spec("langgraph.checkpoint.s3dynamo") is not None:
        import zstandard
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        from langgraph.checkpoint.s3dynamo import S3DynamoSaver

        assert isinstance(saver, S3DynamoSaver), saver
        assert zstandard.backend == "cext", zstandard.backend
        key, nonce = AESGCM.generate_key(256), os.urandom(12)
        data = zstandard.ZstdCompressor().compress(b"x" * 1000)
        sealed = AESGCM(key).encrypt(nonce, data, None)
        assert zstandard.ZstdDecompressor().decompress(AESGCM(key).decrypt(nonce, sealed, None))
    app.get_graph()
    assert callable(app.handler)
    if importlib.util.find_spec("numpy") is not None:
        # The vectors extra: the store ranks with numpy when it imports (its first search).
        from langgraph.checkpoint.s3dynamo.memory import vectors

        row = vectors.Row("k", "v", 1, "text", vectors.encode([0.6, 0.8]))
        segment = vectors.Pack(vectors.pack([row]), "check")
        assert vectors._numpy() is not None, "numpy is in the zip but does not import"
        assert abs(float(segment.scores([0.6, 0.8])[0]) - 1.0) < 0.01

    from_task = [m for m in list(sys.modules.values()) if _origin(m).startswith(task)]
    sources = [m for m in from_task if _origin(m).endswith(".py")]
    assert any(m.__name__ == "app" for m in sources), "app was not imported from the zip"
    bad = [f for f in from_source if os.path.realpath(f).startswith(task)]
    if bad:
        sys.exit(f"error: the import compiled {len(bad)} source files of the zip: {bad[:5]}")
    missed = [
        m.__name__ for m in sources if os.path.realpath(m.__spec__.cached or "") not in opened
    ]
    if missed:
        sys.exit(f"error: modules imported without their .pyc: {missed[:5]}")
    # Not the import system: libraries that read or parse their own source at import.
    by_libraries = sorted(
        {os.path.relpath(f, task) for f in compiled + list(opened) if _in(f, task, ".py")}
    )
    if sorted(_files(task)) != before:
        sys.exit("error: the import wrote files into the task directory")
    libraries = f"; read or parsed by the library itself: {', '.join(by_libraries)}"
    print(
        f"import check passed: {len(from_task)} modules from the zip ({len(sources)} from "
        f"bytecode, {len(from_task) - len(sources)} extension modules); the import compiled "
        "none from source" + (libraries if by_libraries else "")
    )


def _in(path: str, root: str, suffix: str) -> bool:
    path = os.path.realpath(path)
    return path.startswith(root) and path.endswith(suffix)


def _origin(module: object) -> str:
    spec = getattr(module, "__spec__", None)
    origin = getattr(spec, "origin", None)
    return os.path.realpath(origin) if isinstance(origin, str) and os.sep in origin else ""


def _files(root: str) -> set[str]:
    return {os.path.join(d, f) for d, _, files in os.walk(root) for f in files}


if __name__ == "__main__":
    command, *rest = sys.argv[1:]
    {"listing": listing, "imports": imports}[command](*rest)
