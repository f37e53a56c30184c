"""Measuring one phase of a workload, and the per-operation figures reported for it."""

from __future__ import annotations

import gc
import time
from collections import Counter
from dataclasses import dataclass

from aws_mock import MOTO, RequestMeter, Stored
from billing import request_dollars, storage_dollars
from workloads import Phase


@dataclass
class Measure:
    ops: int
    requests: Counter[str]
    serial_latency: float  # seconds, sum of modelled latencies of all requests
    wall: float  # seconds
    cpu: float  # process CPU seconds minus moto's share
    moto_cpu: float
    moto_wall: float
    units: Counter[str]  # DynamoDB read and write request units (see billing.py)


def measure(phase: Phase, meter: RequestMeter) -> Measure:
    gc.collect()  # don't bill one phase for the garbage of the previous one
    # Everything alive now (moto's whole state for every saver run so far, LangGraph's
    # modules) is left out of the phase's garbage collections: a full collection scans
    # every tracked object in the process, and a saver in production does not share its
    # process with a fake AWS. What the phase allocates is still collected as usual.
    gc.freeze()
    try:
        counts0, latency0 = meter.snapshot()
        units0, overhead0 = meter.billing.snapshot()
        moto_cpu0, moto_wall0 = MOTO.snapshot()
        cpu0, wall0 = time.process_time(), time.perf_counter()
        done = 0
        for op in phase.ops:
            op()
            done += 1
            if phase.partial:  # it stopped at its time budget: so would the next
                break
        wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    finally:
        gc.unfreeze()
    counts, latency = meter.snapshot()
    units, overhead = meter.billing.snapshot()
    moto_cpu, moto_wall = MOTO.snapshot()
    # The billing hooks' own time (sizing items) is the benchmark's, not the saver's.
    overhead -= overhead0
    return Measure(
        ops=done,
        requests=counts - counts0,
        serial_latency=latency - latency0,
        wall=wall - overhead,
        cpu=cpu - (moto_cpu - moto_cpu0) - overhead,
        moto_cpu=moto_cpu - moto_cpu0,
        moto_wall=moto_wall - moto_wall0,
        units=units - units0,
    )


@dataclass
class Row:
    """One saver on one workload phase; `None` where a figure does not apply."""

    saver: str
    workload: str
    kind: str  # "invoke" or "read"
    plain: Measure
    is_aws: bool
    with_latency: Measure | None = None
    # Not re-run with latency slept (too slow); computed from the plain run instead.
    latency_estimated: bool = False
    stored_bytes: int | None = None
    stored: Stored | None = None  # AWS savers: where the bytes are, for the storage bill
    # The phase stopped early; its figures are lower bounds. Says how far it got.
    partial: str | None = None

    def per_op(self, seconds: float) -> float:
        return 1000 * seconds / self.plain.ops

    @property
    def requests_per_op(self) -> float | None:
        return sum(self.plain.requests.values()) / self.plain.ops if self.is_aws else None

    @property
    def serial_latency_ms(self) -> float | None:
        return self.per_op(self.plain.serial_latency) if self.is_aws else None

    @property
    def wall_ms(self) -> float:
        return self.per_op(self.plain.wall)

    @property
    def wall_latency_ms(self) -> float | None:
        """Wall time with the latency model standing in for AWS: the run with latencies
        slept, less the time moto itself took to answer (which AWS does not add on top of
        its latency; moto's TransactWriteItems alone deep-copies the whole table)."""
        if self.latency_estimated:
            # Sequential reads: no overlap, so the latencies simply add up.
            plain = self.plain
            return self.per_op(plain.wall - plain.moto_wall + plain.serial_latency)
        if self.with_latency is None:
            return None
        run = self.with_latency
        return 1000 * (run.wall - run.moto_wall) / run.ops

    @property
    def cpu_ms(self) -> float:
        return self.per_op(self.plain.cpu)

    @property
    def moto_ms(self) -> float | None:
        return self.per_op(self.plain.moto_wall) if self.is_aws else None

    @property
    def dollars_per_1000_ops(self) -> float | None:
        """Requests and request units at list prices, per 1,000 invokes (or reads)."""
        if not self.is_aws:
            return None
        return 1000 * request_dollars(self.plain.requests, self.plain.units) / self.plain.ops

    @property
    def storage_dollars_per_month(self) -> float | None:
        """Keeping what this phase left stored for one month."""
        if self.stored is None:
            return None
        return storage_dollars(self.stored.ddb_bytes, self.stored.ddb_items, self.stored.s3_bytes)

    def units_per_op(self, unit: str) -> float | None:
        return self.plain.units[unit] / self.plain.ops if self.is_aws else None

    def request_mix(self) -> str:
        """E.g. `dynamodb.PutItem 12, s3.PutObject 3` per operation, largest first."""
        per_op = [
            (name, count / self.plain.ops) for name, count in self.plain.requests.most_common()
        ]
        return ", ".join(f"{name.split('.', 1)[1]} {n:.3g}" for name, n in per_op)
