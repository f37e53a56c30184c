"""Data subjects: what erasing one user costs as a deployment grows, what exporting one
costs, and what declaring subjects adds to a put.

    .venv/bin/python benchmarks/erasure.py          # writes benchmarks/erasure_results.md
    .venv/bin/python benchmarks/erasure.py --sizes 1000 10000 --subjects 1:1 10:10

A deployment of N threads is sealed (keys and a naming secret) and declares
`subject_field="user_id"` and `subject_label=1`, its key table a table of its own. Most
of its threads belong to users of ten threads each, as in `catalog.py`: one checkpoint
per thread as LangGraph's server writes it (metadata with user_id, assistant_id,
graph_id, source, step, run_id; one message of about 400 bytes of English-like text),
and one Store item per user in ("users", uid, "memories"). The subjects erased are users
of their own beside them, one per shape THREADS:ITEMS (`--subjects`): so many threads of
that kind, and so many Store items in their ("users", uid, "memories"); their threads are
counted in N. Each deployment is built afresh, with `saver.put` of one checkpoint per
thread (no graph runs), and `S3DynamoStore.from_saver(saver).put` for the items.

Every deployment, table and key table, is the in-memory table sized as DynamoDB bills
(`tests/support/sized.py`): requests are counted by DynamoDB's names, exactly; read units
from the items each read returns, and write units here (`BilledTable`) from each item
written, before and after, as `billing.py` computes them for moto: 1 per started KB of
the larger, twice in a transaction, each item of a batch on its own (a transaction's
condition checks are not counted). The bucket is the in-memory object store, its
requests counted by kind (put, get, list, delete, ...).

Measured, in each deployment:

1. `export_subject(uid)` then `erase_subject(uid)` of each subject, by a process of the
   deployment that has not read the subject (a maintenance process: the first of its
   calls, an erasure of a user who has nothing, is left out of the figures).
2. The budget of a put with subjects on and off (a deployment of the same threads that
   declares `catalog_fields="user_id"`, the catalog field `subject_field` declares, and
   no subjects): a put of a new thread and of a thread's next checkpoint by a process
   that wrote the subject already (warm), the first put of a user in a process (cold:
   a user the deployment knows, and a new one), and Store puts, warm and cold. The
   process made one put of another user before, so its own first requests are left out.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import random
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "src"))
sys.path.insert(0, str(HERE.parent))  # tests.support.sized: reads sized as DynamoDB bills them

from billing import DYNAMODB_RRU, DYNAMODB_WRU, S3_GET_CLASS, S3_PUT_CLASS  # noqa: E402
from langgraph.checkpoint.base import empty_checkpoint  # noqa: E402
from langgraph.checkpoint.base.id import uuid6  # noqa: E402
from tests.support.sized import SizedTable  # noqa: E402
from textgen import prose  # noqa: E402

from langgraph.checkpoint.s3dynamo import S3DynamoSaver  # noqa: E402
from langgraph.checkpoint.s3dynamo.backends.memory import MemoryObjects  # noqa: E402
from langgraph.checkpoint.s3dynamo.table import (  # noqa: E402
    Check,
    Item,
    ItemKey,
    Write,
    item_size,
    key_of,
)
from langgraph.store.s3dynamo import S3DynamoStore  # noqa: E402

PER_USER = 10
MESSAGE_BYTES = 400
SIZES = (1_000, 10_000, 100_000)
# (threads, Store items) of each subject erased.
SHAPES = ((1, 1), (1, 10), (10, 1), (10, 10), (100, 1), (100, 10))
KEYS = {"k1": os.urandom(32)}
SECRET = os.urandom(16)
SUBJECTS = {"subject_field": "user_id", "subject_label": 1}
# The parts of a measurement, as the report names them.
PARTS = ("index", "key table", "objects")


class BilledTable(SizedTable):
    """The sized in-memory table, with write units too: each item written by the larger
    of its size before and after, 1 per started KB, twice in a transaction; each item of
    a batch on its own (`billing.py`'s rules for moto)."""

    def __init__(self, *, exists: bool = True) -> None:
        super().__init__(exists=exists)
        self.wru = 0.0
        self.written = 0  # bytes of the items as written (nothing for a delete)

    def _size(self, key: ItemKey) -> int:
        with self._lock:
            found = self._find(key)
            return item_size(found) if found is not None else 0

    def _billed(self, keys: Sequence[ItemKey], before: Sequence[int], factor: int) -> None:
        for key, was in zip(keys, before, strict=True):
            now = self._size(key)
            self.written += now
            self.wru += factor * max(1, math.ceil(max(was, now) / 1024))

    def write(self, write: Write, **kwargs: Any) -> Any:
        before = self._size(write.key)
        try:
            return super().write(write, **kwargs)
        finally:
            self._billed([write.key], [before], 1)

    def transact(self, writes: Sequence[Write]) -> None:
        keys = [w.key for w in writes if not isinstance(w, Check)]
        before = [self._size(k) for k in keys]
        try:
            super().transact(writes)
        finally:
            self._billed(keys, before, 2)

    def batch(self, puts: Sequence[Item] = (), deletes: Sequence[ItemKey] = ()) -> None:
        keys = [key_of(i) for i in puts] + list(deletes)
        before = [self._size(k) for k in keys]
        super().batch(puts, deletes)
        self._billed(keys, before, 1)


class Deployment:
    """One deployment's storage, and its processes."""

    def __init__(self, subjects: bool) -> None:
        self.index = BilledTable()
        self.keys = BilledTable()
        self.objects = MemoryObjects()
        self.subjects = subjects

    def process(self) -> tuple[S3DynamoSaver, Any]:
        """A saver and its Store, as a new process of the deployment makes them."""
        if self.subjects:
            kwargs: dict[str, Any] = {**SUBJECTS, "key_index": self.keys}
        else:
            kwargs = {"catalog_fields": "user_id"}
        saver = S3DynamoSaver(
            index=self.index, object_store=self.objects, keys=KEYS, secret=SECRET, **kwargs
        )
        return saver, S3DynamoStore.from_saver(saver)

    def measure(self, run: Callable[[], Any]) -> dict[str, Any]:
        """The requests of `run()` by part and kind, the units and the wall time."""
        tables = (self.index, self.keys)
        for counted in (*tables, self.objects):
            counted.calls.clear()
        rru, wru = [t.rru for t in tables], [t.wru for t in tables]
        written = [t.written for t in tables]
        began = time.perf_counter()
        result = run()
        took = (time.perf_counter() - began) * 1000
        calls = (self.index.calls, self.keys.calls, self.objects.calls)
        return {
            "result": result,
            "requests": {p: dict(sorted(c.items())) for p, c in zip(PARTS, calls, strict=True)},
            "rru": [t.rru - r for t, r in zip(tables, rru, strict=True)],
            "wru": [t.wru - w for t, w in zip(tables, wru, strict=True)],
            "written": [t.written - w for t, w in zip(tables, written, strict=True)],
            "ms": took,
        }


def message(seed: str) -> str:
    return prose(random.Random(seed), MESSAGE_BYTES)


def put_thread(saver: Any, tid: str, user: str, run: int, parent: Any = None) -> Any:
    """One checkpoint of thread `tid` as LangGraph's server writes it; its config."""
    cp = empty_checkpoint()
    cp["id"] = str(uuid6())
    cp["channel_values"] = {"messages": message(f"{tid}/{run}")}
    cp["channel_versions"] = {"messages": f"{run + 1:032d}.0"}
    metadata = {
        "user_id": user,
        "assistant_id": "assistant-1",
        "graph_id": "agent",
        "source": "loop",
        "step": run + 1,
        "run_id": f"run-{tid}-{run}",
    }
    config = parent or {"configurable": {"thread_id": tid, "checkpoint_ns": ""}}
    return saver.put(config, cp, metadata, dict(cp["channel_versions"]))


def put_memory(store: Any, user: str, key: str) -> None:
    value = {"kind": "memory", "text": message(f"{user}/{key}")}
    store.put(("users", user, "memories"), key, value)


def subject_of(threads: int, items: int) -> str:
    return f"subject-{threads}t-{items}i"


def fill(deployment: Deployment, size: int, shapes: Sequence[tuple[int, int]]) -> float:
    """`size` threads: the subjects' (`shapes`), the rest users' of ten; how long it took."""
    began = time.perf_counter()
    saver, store = deployment.process()
    saver.setup()
    regular = size - sum(t for t, _ in shapes)
    for i in range(regular):
        user = f"user-{i // PER_USER}"
        put_thread(saver, f"thread-{i}", user, 0)
        if i % PER_USER == 0:
            put_memory(store, user, "m0")
    for threads, items in shapes:
        user = subject_of(threads, items)
        for n in range(threads):
            put_thread(saver, f"{user}-{n}", user, 0)
        for n in range(items):
            put_memory(store, user, f"m{n}")
    return time.perf_counter() - began


def erasures(deployment: Deployment, shapes: Sequence[tuple[int, int]]) -> dict[str, Any]:
    """Export, then erase, each subject, from a maintenance process."""
    saver, _ = deployment.process()
    saver.erase_subject("nobody")  # the process's first requests: the deployment read
    out: dict[str, Any] = {}
    for threads, items in shapes:
        user = subject_of(threads, items)
        export = deployment.measure(lambda: len(list(saver.export_subject(user))))  # noqa: B023
        assert export["result"] == threads + items, (user, export["result"])
        erase = deployment.measure(lambda: saver.erase_subject(user))  # noqa: B023
        done = erase["result"]
        assert (done["threads"], done["items"]) == (threads, items), (user, done)
        out[f"{threads}:{items}"] = {"export": export, "erase": erase}
    return out


def budgets(deployment: Deployment) -> dict[str, dict[str, Any]]:
    """The requests of each kind of put (module docstring, 2.) in a new process."""
    saver, store = deployment.process()
    put_thread(saver, "budget-warm-up", "budget-warm-up", 0)  # the process's first requests
    put_memory(store, "budget-warm-up", "m0")
    m = deployment.measure
    out = {
        "put, a new user (cold)": m(lambda: put_thread(saver, "budget-new", "budget-new", 0)),
        "put, a known user's first in the process (cold)": m(
            lambda: put_thread(saver, "budget-1", "user-1", 0)
        ),
        "put, a new thread (warm)": m(lambda: put_thread(saver, "budget-2", "user-1", 0)),
    }
    config = out["put, a new thread (warm)"]["result"]
    out["put, a thread's next checkpoint (warm)"] = m(
        lambda: put_thread(saver, "budget-2", "user-1", 1, parent=config)
    )
    out["Store put, a known user's first in the process (cold)"] = m(
        lambda: put_memory(store, "user-2", "budget-1")
    )
    out["Store put, a new key (warm)"] = m(lambda: put_memory(store, "user-2", "budget-2"))
    out["Store put, an item replaced (warm)"] = m(lambda: put_memory(store, "user-2", "budget-2"))
    return out


def run(sizes: Sequence[int], shapes: Sequence[tuple[int, int]]) -> dict[int, dict[str, Any]]:
    out: dict[int, dict[str, Any]] = {}
    for size in sizes:
        on = Deployment(subjects=True)
        row: dict[str, Any] = {"threads": size, "fill_s": fill(on, size, shapes)}
        row["subjects"] = erasures(on, shapes)
        row["on"] = budgets(on)
        del on
        gc.collect()
        off = Deployment(subjects=False)
        row["fill_off_s"] = fill(off, size, shapes)
        row["off"] = budgets(off)
        del off
        gc.collect()
        out[size] = row
        for name, m in row["subjects"].items():
            erase, export = m["erase"], m["export"]
            print(
                f"{size}: {name} erase {_total(erase)} requests, {erase['ms']:.0f} ms; "
                f"export {_total(export)} requests, {export['ms']:.0f} ms"
            )
        print(f"{size}: filled in {row['fill_s']:.0f} s and {row['fill_off_s']:.0f} s", flush=True)
    return out


# ------------------------------------------------------------------ the report


def _kinds(m: dict[str, Any], part: str) -> str:
    reqs = m["requests"][part]
    text = ", ".join(f"{n:,} {op}" for op, n in reqs.items()) or "none"
    return f"{text} (**{sum(reqs.values()):,}**)" if len(reqs) > 1 else text


def _total(m: dict[str, Any]) -> int:
    return sum(sum(m["requests"][p].values()) for p in PARTS)


def _by_kind(m: dict[str, Any]) -> dict[tuple[str, str], int]:
    return {(p, op): n for p in PARTS for op, n in m["requests"][p].items()}


def fit(points: Sequence[tuple[int, int, int]]) -> tuple[Fraction, Fraction, Fraction] | None:
    """(a, b, c) with y = a + b * threads + c * items through every (threads, items, y),
    if the points fix them and lie on it exactly; else None."""
    rows = [(Fraction(1), Fraction(t), Fraction(i)) for t, i, _ in points]
    ys = [Fraction(y) for _, _, y in points]
    m = [[sum(r[j] * r[k] for r in rows) for k in range(3)] for j in range(3)]
    v = [sum(r[j] * y for r, y in zip(rows, ys, strict=True)) for j in range(3)]
    for col in range(3):  # Gauss-Jordan on the normal equations, exact
        pivot = next((r for r in range(col, 3) if m[r][col] != 0), None)
        if pivot is None:
            return None
        m[col], m[pivot], v[col], v[pivot] = m[pivot], m[col], v[pivot], v[col]
        for r in range(3):
            if r != col and m[r][col] != 0:
                f = m[r][col] / m[col][col]
                m[r] = [a - f * b for a, b in zip(m[r], m[col], strict=True)]
                v[r] -= f * v[col]
    a, b, c = (v[k] / m[k][k] for k in range(3))
    if any(a + b * r[1] + c * r[2] != y for r, y in zip(rows, ys, strict=True)):
        return None
    return a, b, c


Fit = tuple[str, Fraction, Fraction, Fraction]


def _fits(rows: dict[int, dict[str, Any]], call: str) -> list[Fit]:
    """The requests of `call` per subject as fixed + per thread + per item: in all, then
    by kind ([] where the subjects measured do not fix them, or do not lie on a line)."""
    size = max(rows)
    shapes = {s: shape(s) for s in rows[size]["subjects"]}
    kinds = sorted({k for s in shapes for k in _by_kind(rows[size]["subjects"][s][call])})
    terms: list[Fit] = []
    for part, op in [("all", "requests"), *kinds]:
        points = []
        for s, (t, i) in shapes.items():
            m = rows[size]["subjects"][s][call]
            y = _total(m) if part == "all" else _by_kind(m).get((part, op), 0)
            points.append((t, i, y))
        found = fit(points)
        if found is None:
            return []
        terms.append((f"{op} ({part})" if part != "all" else "requests", *found))
    return terms


def _linear(rows: dict[int, dict[str, Any]], call: str) -> list[str]:
    terms = _fits(rows, call)
    if not terms:
        return []
    (_, a, b, c), *each_kind = terms

    def listed(k: int) -> str:
        named = [f"{_num(t[k])} {t[0]}" for t in each_kind if t[k]]  # type: ignore[misc]
        return ", ".join(named) or "nothing"

    return [
        f"Every `{call}_subject` here sends exactly **{_num(a)} + {_num(b)} per thread + "
        f"{_num(c)} per Store item** requests (solved from the {len(rows[max(rows)]['subjects'])} "
        f"subjects, and exact for each): fixed, {listed(1)}; per thread, {listed(2)}; per "
        f"Store item, {listed(3)}. Each subject here has one Store namespace: what a "
        "namespace costs is in the fixed part.",
    ]


def _num(x: Fraction | float) -> str:
    return f"{int(x):,}" if x == int(x) else f"{float(x):,.2f}"


def _diff(on: dict[str, Any], off: dict[str, Any]) -> str:
    a, b = _by_kind(on), _by_kind(off)
    out = []
    for key in sorted(a.keys() | b.keys()):
        d = a.get(key, 0) - b.get(key, 0)
        if d:
            out.append(f"{d:+d} {key[1]} ({key[0]})")
    return ", ".join(out) or "none"


def _section(rows: dict[int, dict[str, Any]], call: str, title: str) -> list[str]:
    sizes = sorted(rows)
    shapes = list(rows[sizes[-1]]["subjects"])
    lines = [f"## {title}", ""]
    head = " | ".join(f"{s:,} threads" for s in sizes)
    lines += [
        "Requests (index, key table and bucket together) and wall time of one call, by "
        "subject (threads : Store items), in each deployment:",
        "",
        f"| subject | requests: {head} | wall ms: {head} |",
        "|---|" + "---|" * (2 * len(sizes)),
    ]
    for s in shapes:
        ms = [rows[size]["subjects"][s][call] for size in sizes]
        cells = [s, *(f"{_total(m):,}" for m in ms), *(f"{m['ms']:,.1f}" for m in ms)]
        lines.append("| " + " | ".join(cells) + " |")
    differ = [
        (s, size)
        for s in shapes
        for size in sizes
        if rows[size]["subjects"][s][call]["requests"]
        != rows[sizes[-1]]["subjects"][s][call]["requests"]
        or _units(rows[size]["subjects"][s][call]) != _units(rows[sizes[-1]]["subjects"][s][call])
    ]
    lines += [""]
    if not differ:
        lines.append(
            "The requests of each subject, kind by kind and part by part, and their read and "
            "write units, are **the same in every deployment size** "
            f"({', '.join(f'{s:,}' for s in sizes)} threads): the table below holds for each."
        )
    else:
        named = ", ".join(f"{s} at {size:,}" for s, size in differ)
        lines.append(f"**Not the same in every deployment size**: {named} (rows below by size).")
    lines += [
        "",
        "| subject | index | key table | bucket | RU index; key table | WU index; key table |",
        "|---|---|---|---|---|---|",
    ]
    for s in shapes:
        for size in sorted({sizes[-1], *(z for t, z in differ if t == s)}, reverse=True):
            m = rows[size]["subjects"][s][call]
            label = s if not differ else f"{s} at {size:,}"
            cells = [label, *(_kinds(m, p) for p in PARTS)]
            rru, wru = _units(m)
            cells += [rru, wru]
            lines.append("| " + " | ".join(cells) + " |")
    lines += ["", *_linear(rows, call)]
    return lines


def _same_everywhere(rows: dict[int, dict[str, Any]], call: str) -> bool:
    big = rows[max(rows)]["subjects"]
    return all(
        r["subjects"][s][call]["requests"] == big[s][call]["requests"]
        for r in rows.values()
        for s in big
    )


def _reading(rows: dict[int, dict[str, Any]]) -> list[str]:
    """One paragraph on the figures above, each number taken from them."""
    sizes = sorted(rows)
    big = rows[sizes[-1]]
    heaviest = max(big["subjects"], key=lambda s: _total(big["subjects"][s]["erase"]))
    first, last = (rows[z]["subjects"][heaviest]["erase"] for z in (sizes[0], sizes[-1]))
    span = f"{sizes[0]:,} to {sizes[-1]:,} threads" if len(sizes) > 1 else f"{sizes[0]:,} threads"
    text = [
        "## Reading",
        "",
        f"In deployments of {span}, "
        + (
            "an erasure's requests depend on the subject alone: each subject's were the "
            "same, kind by kind, at every size"
            if _same_everywhere(rows, "erase")
            else "an erasure's requests were **not** the same at every size (tables above)"
        )
        + f"; the largest here ({heaviest}) sent {_total(last):,} requests and took "
        f"{first['ms']:,.0f} ms at {sizes[0]:,} threads and {last['ms']:,.0f} ms at "
        f"{sizes[-1]:,} (in memory).",
    ]
    terms = {t[0]: t for t in _fits(rows, "erase")}
    if "requests" in terms:
        _, a, b, c = terms["requests"]
        lightest_shape = min(big["subjects"], key=lambda s: _total(big["subjects"][s]["erase"]))
        lightest = big["subjects"][lightest_shape]["erase"]
        text[-1] += (
            f" What grows is the subject: {_num(b)} requests a thread (each thread goes by "
            "`delete_thread`'s removal protocol: its two reads, six batches of a few items "
            "each (tombstone, mark, record, mark again, catalog entries, their "
            "back-references) and a listing of the bucket, even with nothing there) and "
            f"{_num(c)} a Store item (a DeleteItem each), on a fixed {_num(a)} (the fence read "
            "by the plan and again, set, noted and left erased; the catalog and the links "
            "listed by the plan and again after the fence; the namespace read, its directory "
            "entry and link removed; the key destroyed and the record kept). At on-demand "
            f"list prices (`billing.py`) an erasure of {heaviest} costs "
            f"${_dollars(last) * 1000:,.2f} per 1,000, ${_dollars(last, 'objects') * 1000:,.2f} "
            f"of it the bucket's {sum(last['requests']['objects'].values()):,} listings; one "
            f"of {lightest_shape} ${_dollars(lightest) * 1000:,.3f} per 1,000."
        )
    eterms = {t[0]: t for t in _fits(rows, "export")}
    if "requests" in eterms:
        _, a, b, c = eterms["requests"]
        text[-1] += (
            f" An export sends {_num(a)} + {_num(b)} a thread + {_num(c)} a Store item "
            "requests, the subject's key read once."
        )
    on, off = big["on"], big["off"]
    warm = [c for c in on if "(warm)" in c and not c.startswith("Store")]
    if warm and all(on[c]["requests"] == off[c]["requests"] for c in warm):
        c = warm[0]
        text[-1] += (
            " With subjects on, a warm put sends what it sends without them "
            f"({_kinds(on[c], 'index')}); its write units are {sum(on[c]['wru']):g} against "
            f"{sum(off[c]['wru']):g}, as it writes {sum(on[c]['written']):,} bytes against "
            f"{sum(off[c]['written']):,} (each sealed blob names the subject's key)."
        )
    cold = [c for c in on if "(cold)" in c and not c.startswith("Store")]
    if cold:
        text[-1] += (
            " A user's first put in a process adds, "
            + "; ".join(
                f"{c.split(', ', 1)[1].removesuffix(' (cold)')}: {_diff(on[c], off[c])}"
                for c in cold
            )
            + "."
        )
    store = [c for c in on if c.startswith("Store") and "(warm)" in c]
    if store:
        c = store[0]
        text[-1] += (
            f" A Store put of a subject's namespace is {_kinds(on[c], 'index')} where "
            f"without subjects it is {_kinds(off[c], 'index')}: {sum(on[c]['wru']):g} write "
            f"units against {sum(off[c]['wru']):g}, warm or cold, since it carries the "
            "subject's fence in a transaction (the item naming the namespace the subject's "
            "goes with the directory entry's renewals only)."
        )
    return text


def _dollars(m: dict[str, Any], only: str | None = None) -> float:
    """What one call's requests cost at on-demand list prices (`billing.py`); with
    `only="objects"`, the bucket's share."""
    dollars = 0.0
    if only is None:
        dollars += sum(m["rru"]) * DYNAMODB_RRU + sum(m["wru"]) * DYNAMODB_WRU
    for kind, n in m["requests"]["objects"].items():
        if kind in ("put", "list"):
            dollars += n * S3_PUT_CLASS
        elif kind != "delete":  # get, stat (HEAD), head; DeleteObjects is free
            dollars += n * S3_GET_CLASS
    return dollars


def _units(m: dict[str, Any]) -> tuple[str, str]:
    return (
        f"{m['rru'][0]:,g}; {m['rru'][1]:,g}",
        f"{m['wru'][0]:,g}; {m['wru'][1]:,g}",
    )


def report(rows: dict[int, dict[str, Any]], argv: str, notes: dict[str, str]) -> str:
    sizes = sorted(rows)
    largest = sizes[-1]
    big = rows[largest]
    lines = [
        "# Data subjects: erasing and exporting one user as a deployment grows, and the "
        "put's budget",
        "",
        f"From `.venv/bin/python benchmarks/erasure.py{argv}` ({notes['date']}; "
        f"{notes['machine']}; {notes['took']} in all). The module docstring says what "
        "runs where. Deployments of "
        f"{', '.join(f'{s:,}' for s in sizes)} threads, each built afresh, sealed, "
        '`subject_field="user_id"`, `subject_label=1`, the key table a table of its own: '
        f"users of {PER_USER} threads (one checkpoint each, LangGraph-server metadata, a "
        f"message of about {MESSAGE_BYTES} bytes) and one Store item each, and beside them "
        "the subjects measured, one per shape: so many threads, so many Store items in "
        '("users", uid, "memories"). Requests are exact, counted by DynamoDB\'s names on '
        "the in-memory table and key table and by kind on the in-memory bucket; read "
        "units (RU) and write units (WU) as DynamoDB bills them (`tests/support/sized.py`, "
        "and `BilledTable` in the script: 1 WU per started KB of the larger of an item "
        "before and after, twice in a transaction, a transaction's condition checks not "
        "counted, as `billing.py`). Wall times are of one call in this process, on "
        "in-memory ports (no network): indicative only.",
        "",
        "Each subject's `export_subject`, then its `erase_subject`, ran in a process of the "
        "deployment that had not read it (its first call, an erasure of a user with "
        "nothing, left out).",
        "",
        *_section(rows, "erase", "`erase_subject`"),
        "",
        *_section(rows, "export", "`export_subject`"),
        "",
        "## A put's budget, subjects on and off",
        "",
        f"In the {largest:,}-thread deployments, by a new process that made one put (and "
        "one Store put) of another user first. On: the deployment above. Off: one of the "
        'same threads and items that declares `catalog_fields="user_id"` (the catalog '
        "field `subject_field` declares: its cost is catalog.py's) and no subjects. No "
        "put below sent a request to the bucket.",
        "",
        "| put | on: index | on: key table | off: index | on - off | WU on; off | "
        "bytes written on; off |",
        "|---|---|---|---|---|---|---|",
    ]
    for case in big["on"]:
        on, off = big["on"][case], big["off"][case]
        cells = [case, _kinds(on, "index"), _kinds(on, "key table"), _kinds(off, "index")]
        cells += [_diff(on, off), f"{sum(on['wru']):g}; {sum(off['wru']):g}"]
        cells += [f"{sum(on['written']):,}; {sum(off['written']):,}"]
        lines.append("| " + " | ".join(cells) + " |")
    steady = all(
        r[k][c]["requests"] == big[k][c]["requests"] and r[k][c]["wru"] == big[k][c]["wru"]
        for r in rows.values()
        for k in ("on", "off")
        for c in big[k]
    )
    assert not any(
        v["requests"]["objects"]
        for r in rows.values()
        for k in ("on", "off")
        for v in r[k].values()
    )
    lines += [
        "",
        "The requests and write units of each put are "
        + ("**the same**" if steady else "**not** the same")
        + f" in the deployments of {', '.join(f'{s:,}' for s in sizes)} threads.",
        "",
        *_reading(rows),
        "",
        "## Building the deployments",
        "",
        "Direct puts, one checkpoint per thread, and one Store put per user:",
        "",
        "| threads | subjects on | off |",
        "|---|---|---|",
    ]
    for size in sizes:
        lines.append(
            f"| {size:,} | {rows[size]['fill_s']:,.0f} s | {rows[size]['fill_off_s']:,.0f} s |"
        )
    return "\n".join(lines) + "\n"


def machine() -> str:
    cores = subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip()
    return f"{cores} cores, load average {_load()}"


def _load() -> str:
    loadavg = Path("/proc/loadavg")
    return " ".join(loadavg.read_text().split()[:3]) if loadavg.exists() else "unknown"


def shape(text: str) -> tuple[int, int]:
    threads, _, items = text.partition(":")
    return int(threads), int(items or 0)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument(
        "--subjects",
        type=shape,
        nargs="+",
        default=list(SHAPES),
        help="the subjects erased, as THREADS:ITEMS (default: 1:1 1:10 10:1 10:10 100:1 100:10)",
    )
    parser.add_argument("--out", type=Path, default=HERE / "erasure_results.md")
    parser.add_argument("--json", type=Path, help="also write the measurements as JSON here")
    args = parser.parse_args(argv)
    shapes = list(dict.fromkeys(args.subjects))
    least = sum(t for t, _ in shapes)
    if min(args.sizes) < least:
        parser.error(f"a deployment holds the subjects' {least} threads: --sizes of at least that")
    began, load = time.perf_counter(), _load()
    rows = run(sorted(set(args.sizes)), shapes)
    took = time.perf_counter() - began
    notes = {
        "date": time.strftime("%Y-%m-%d"),
        "machine": f"{machine()} at the end, {load} at the start",
        "took": f"{took / 60:.1f} min" if took >= 120 else f"{took:.0f} s",
    }
    argv_text = "".join(f" {a}" for a in (sys.argv[1:] if argv is None else argv))
    args.out.write_text(report(rows, argv_text, notes))
    if args.json:
        args.json.write_text(json.dumps({str(k): v for k, v in rows.items()}, default=str))
    print(f"wrote {args.out} in {took:.0f} s")


if __name__ == "__main__":
    main()
