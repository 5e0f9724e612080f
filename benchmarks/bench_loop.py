"""Benchmark the practice loop (issue 3): kernel cost against its hashing floor, and run
throughput with the store. Ratios and rates are measured in one run, on one core; they are
reported, never asserted (machines here are shared and noisy).

    python benchmarks/bench_loop.py [--gsm8k PATH] [--repeat N] [--json OUT]

1. ``practice_case`` per case, median over the shipped sample, each case repeated;
2. the floor, what any implementation must at least do for that case: encode every record once
   (``canonical_json`` of the whole trace's JSON form, one call) and hash each distinct payload
   the loop hashes once (SHA-256 of the identity payload of every record with an id, and of
   the content the frame digest, the run input digest and the operator set id cover; their
   bytes are made beforehand). Only encoding and hashing are timed;
3. their ratio (issue 16 target: at most 1.5x);
4. a lower bound on that ratio for any kernel whose records validate on construction: the floor
   plus what merely building the trace's distinct records costs (setting each field once on a
   bare object) plus calling each field's declared check once, nested records already trusted
   (so each check is shallow). No stage logic, cross-field rule, identity encoding or trust
   bookkeeping is in it, so the real kernel can only cost more;
5. what the kernel's encoder alone costs for the same trace: every distinct record's canonical
   bytes made once, nested records' bytes reused (the floor is handed those bytes ready-made);
6. ``practice-loop run`` over the GSM8K training file into a fresh store, cases per second of
   wall time and of this process's CPU time (target: at least 500 on one core).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import tempfile
import time
from importlib import resources
from pathlib import Path

from practice_loop.kernel import (
    GeometricSearchInput,
    OperatorSetManifest,
    ProblemFrame,
    SealedPracticeTrace,
    canonical_json,
    practice_case,
)
from practice_loop.kernel.record import Record, _record_bytes
from practice_loop.kernel.trust import _CURRENT_TRUST, trust_scope
from practice_loop.product.reader import ReaderRefusal, read_question
from practice_loop.product.runner import run_file
from practice_loop.product.store import TraceStore

DEFAULT_GSM8K = Path(__file__).resolve().parents[1].parent / "shared/data/gsm8k/train.jsonl"


def _hashed_payloads(trace: SealedPracticeTrace) -> list[bytes]:
    """The canonical bytes of each distinct payload the loop hashes for this trace."""
    payloads = []
    for record in _distinct_records(trace):
        if type(record).ID_FIELD is not None:
            payloads.append(canonical_json(record.identity_payload()))
        elif type(record) in _CONTENT_HASHED:
            payloads.append(canonical_json(record.to_json(drop_explanations=True)))
    return payloads


# Records without an id whose content the loop hashes (ADR-0228 §6, §10).
_CONTENT_HASHED = (ProblemFrame, GeometricSearchInput, OperatorSetManifest)


def _distinct_records(trace: SealedPracticeTrace) -> list[Record]:
    found: dict[int, Record] = {}
    pending: list[object] = [trace]
    while pending:
        value = pending.pop()
        if isinstance(value, Record) and id(value) not in found:
            found[id(value)] = value
            pending.extend(getattr(value, name) for name in type(value)._FIELDS)
        elif type(value) is tuple:
            pending.extend(value)
    return list(found.values())


def _validation_minimum(trace: SealedPracticeTrace, repeat: int) -> float:
    """Median seconds to set every field of the trace's distinct records on bare objects and
    to run each field's check once, nested records trusted (item 4 of the docstring)."""
    records = _distinct_records(trace)
    built = [(type(r), [(name, getattr(r, name)) for name in type(r)._FIELDS]) for r in records]
    checked = [(r, type(r).SCHEMA) for r in records]
    setattr_ = object.__setattr__

    def build_and_check() -> None:
        for kind, fields in built:
            bare = object.__new__(kind)
            for name, value in fields:
                setattr_(bare, name, value)
        for record, schema in checked:
            for name, check in schema:
                check(getattr(record, name))

    with trust_scope():
        trust = _CURRENT_TRUST.get()
        assert trust is not None
        for record in records:
            trust.records[id(record)] = record
        return _median_seconds(build_and_check, repeat)


def _encoding_alone(trace: SealedPracticeTrace, repeat: int) -> float:
    """Median seconds for the kernel's encoder to make every distinct record's bytes once,
    children before parents, in a fresh call where each record is already trusted."""
    records = _distinct_records(trace)[::-1]  # discovered parents first: reversed, children first

    def encode_all() -> None:
        with trust_scope():
            trust = _CURRENT_TRUST.get()
            assert trust is not None
            for record in records:
                trust.records[id(record)] = record
            for record in records:
                _record_bytes(record, trust)

    return _median_seconds(encode_all, repeat)


def _median_seconds(action, repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        action()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def kernel_against_floor(repeat: int) -> dict[str, float]:
    sample = resources.files("practice_loop") / "data" / "sample.jsonl"
    questions = [json.loads(line)["question"] for line in sample.read_text("utf-8").splitlines()]
    questions = [q for q in questions if type(read_question(q)) is not ReaderRefusal]
    case_times, floor_times, minimum_times, encoding_times = [], [], [], []
    for question in questions:
        trace = practice_case(read_question(question))
        assert type(trace) is SealedPracticeTrace
        payloads = _hashed_payloads(trace)
        whole = trace.to_json()

        def floor(payloads=payloads, whole=whole) -> None:
            canonical_json(whole)
            for payload in payloads:
                hashlib.sha256(payload).hexdigest()

        # A fresh, equal frame object for every repetition: nothing is remembered between
        # repetitions, so each one pays for the whole case.
        fresh = iter([read_question(question) for _ in range(repeat)])
        case_times.append(_median_seconds(lambda fresh=fresh: practice_case(next(fresh)), repeat))
        floor_times.append(_median_seconds(floor, repeat))
        minimum_times.append(_validation_minimum(trace, repeat))
        encoding_times.append(_encoding_alone(trace, repeat))
    case_ms = statistics.median(case_times) * 1000
    floor_ms = statistics.median(floor_times) * 1000
    minimum_ms = statistics.median(minimum_times) * 1000
    return {
        "sample_cases": len(questions),
        "practice_case_median_ms": round(case_ms, 4),
        "canonical_sha256_floor_median_ms": round(floor_ms, 4),
        "ratio": round(case_ms / floor_ms, 2),
        "build_and_check_fields_median_ms": round(minimum_ms, 4),
        "ratio_lower_bound_with_validation": round((floor_ms + minimum_ms) / floor_ms, 2),
        "kernel_encoding_alone_median_ms": round(statistics.median(encoding_times) * 1000, 4),
    }


def run_throughput(gsm8k: Path) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as folder:
        with TraceStore(Path(folder) / "bench.sqlite") as store:
            start, start_cpu = time.perf_counter(), time.process_time()
            summary = run_file(gsm8k, store)
            seconds = time.perf_counter() - start
            cpu_seconds = time.process_time() - start_cpu
    # Wall time counts whatever else the machine runs; this process's CPU time is what one
    # core spent on the run, the figure that stays comparable on a shared machine.
    return {
        "gsm8k_cases": summary.cases,
        "run_seconds": round(seconds, 2),
        "cases_per_second": round(summary.cases / seconds, 1),
        "run_cpu_seconds": round(cpu_seconds, 2),
        "cases_per_cpu_second": round(summary.cases / cpu_seconds, 1),
        "wrong": len(summary.wrong_ids),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gsm8k", type=Path, default=DEFAULT_GSM8K)
    parser.add_argument("--repeat", type=int, default=21)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    figures = kernel_against_floor(args.repeat)
    if args.gsm8k.is_file():
        figures |= run_throughput(args.gsm8k)
    else:
        print(f"GSM8K file not found at {args.gsm8k}: run throughput skipped")
    for key, value in figures.items():
        print(f"{key}: {value}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
