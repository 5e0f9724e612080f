"""Benchmark the fuzz campaign (issue 7): examples per second per property under the nightly
profile, the share of the cores the campaign keeps busy (target: at least 90% with ``-n`` equal
to the core count), and how close to its budget it stops (target: within 5%). Figures are
reported, never asserted (machines here are shared and noisy).

    python benchmarks/bench_fuzz.py [--minutes M] [-j N] [--out DIR]

Runs ``practice-loop fuzz`` with a throwaway database and no CrossHair lane, then reads its
``fuzz-report.json``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=2.0)
    parser.add_argument("-j", "--jobs", default="auto")
    parser.add_argument("--out", type=Path, default=None, help="keep the reports here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        out = args.out or Path(scratch) / "reports"
        command = [
            sys.executable, "-m", "practice_loop", "fuzz", "--minutes", str(args.minutes),
            "-j", args.jobs, "--crosshair-share", "0", "--database", f"{scratch}/db",
            "--out", str(out),
        ]  # fmt: skip
        started = time.monotonic()
        status = subprocess.run(command, check=False).returncode
        wall = time.monotonic() - started
        report = json.loads((out / "fuzz-report.json").read_text())
    budget = report["budget_seconds"]
    totals = report["totals"]
    print(f"\ncampaign exit {status}; {totals['rounds']} rounds, {totals['examples']:,} examples")
    print(
        f"stopped after {report['elapsed_seconds']:.1f} s of a {budget:.0f} s budget "
        f"({report['elapsed_seconds'] / budget - 1:+.1%}; {wall:.1f} s with start-up)"
    )
    print(
        f"cores kept busy: {totals['busy_share']:.1%} ({totals['cpu_seconds']:.0f} CPU s over "
        f"{report['rounds_seconds']:.0f} s x {report['cores']} cores, {report['workers']} workers)"
    )
    print("\nexamples/s  examples  test")
    tests = sorted(report["tests"], key=lambda t: -(t["examples_per_second"] or 0))
    for test in tests:
        rate = test["examples_per_second"]
        shown = f"{rate:10.1f}" if rate is not None else "         -"
        print(f"{shown}  {test['examples']:8d}  {test['nodeid']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
