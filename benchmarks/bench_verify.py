"""Benchmark ``verify`` against ``run`` over the same store (issue 15: at most 1.5x).

    python benchmarks/bench_verify.py [--gsm8k PATH] [--lines N] [--rounds R] [--json OUT]

Each round runs the file into a fresh store (``run_file``, what ``practice-loop run`` does)
and then verifies that store in full (``verify_store``, what ``practice-loop verify`` does:
every case re-run from its question, its row and its trace's bytes compared), in this one
process, back to back, so the ratio is measured under the same machine load. Wall and CPU
seconds are reported for each round, with the median ratio; nothing is asserted (the machines
here are shared and noisy).
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import tempfile
import time
from pathlib import Path

from practice_loop.product.runner import run_lines
from practice_loop.product.store import ReadOnlyTraceStore, TraceStore
from practice_loop.product.verification import verify_store

DEFAULT_GSM8K = Path(__file__).resolve().parents[1].parent / "shared/data/gsm8k/train.jsonl"


def _timed(action) -> tuple[object, float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    result = action()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gsm8k", type=Path, default=DEFAULT_GSM8K)
    parser.add_argument("--lines", type=int, default=None, help="first N lines only")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args()
    with args.gsm8k.open("rb") as handle:
        lines = list(itertools.islice(handle, args.lines))
    rounds = []
    for _ in range(args.rounds):
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "bench.sqlite"
            with TraceStore(path) as store:
                summary, run_wall, run_cpu = _timed(
                    lambda store=store: run_lines(lines, source=args.gsm8k.name, store=store)
                )
            with ReadOnlyTraceStore(path) as store:
                verified, verify_wall, verify_cpu = _timed(lambda store=store: verify_store(store))
        assert verified.valid and verified.cases == summary.cases  # type: ignore[attr-defined]
        rounds.append(
            {
                "cases": summary.cases,  # type: ignore[attr-defined]
                "run_wall_s": round(run_wall, 3),
                "run_cpu_s": round(run_cpu, 3),
                "verify_wall_s": round(verify_wall, 3),
                "verify_cpu_s": round(verify_cpu, 3),
                "ratio_wall": round(verify_wall / run_wall, 3),
                "ratio_cpu": round(verify_cpu / run_cpu, 3),
            }
        )
    print(
        f"{'round':>5} {'cases':>6} {'run s':>8} {'verify s':>9} {'ratio (wall)':>13} "
        f"{'ratio (cpu)':>12}"
    )
    for index, row in enumerate(rounds, start=1):
        print(
            f"{index:>5} {row['cases']:>6} {row['run_wall_s']:>8.2f} {row['verify_wall_s']:>9.2f} "
            f"{row['ratio_wall']:>13.2f} {row['ratio_cpu']:>12.2f}"
        )
    report = {
        "rounds": rounds,
        "median_ratio_wall": statistics.median(row["ratio_wall"] for row in rounds),
        "median_ratio_cpu": statistics.median(row["ratio_cpu"] for row in rounds),
        "target": "verify at most 1.5x run",
    }
    print(
        f"median verify/run: {report['median_ratio_wall']:.2f} (wall), "
        f"{report['median_ratio_cpu']:.2f} (cpu); target at most 1.5"
    )
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
