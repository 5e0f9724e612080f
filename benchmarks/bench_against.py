"""Side by side against another checkout (issue 16): ``practice-loop run`` throughput and
``practice_case`` per case, this tree and ``--baseline`` alternately, in fresh processes.

    python benchmarks/bench_against.py --baseline DIR [--gsm8k PATH] [--rounds N] [--json OUT]

``DIR`` is another checkout of this repository (for example ``git worktree add /tmp/before
<commit>``); its ``src`` is put first on ``PYTHONPATH`` for its runs. Each round runs both
trees once, baseline first then this one, so both see the same machine load; the report gives
each round and the medians, with the ratio of this tree to the baseline. With ``valgrind``
installed, ``--instructions`` also counts instructions per case for both (deterministic on a
shared machine, unlike time). Nothing is asserted: the machines here are shared and noisy.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
DEFAULT_GSM8K = HERE.parent / "shared/data/gsm8k/train.jsonl"

# Run in a child process with one tree's ``src`` first on the path: the run's cases per CPU
# second, and practice_case's median milliseconds per case over the file's first questions.
_PROBE = r"""
import json, statistics, sys, tempfile, time
from pathlib import Path
try:
    from practice_loop.product.reader import read_question
    from practice_loop.product.runner import run_file
    from practice_loop.product.store import TraceStore
except ImportError:  # a checkout from before the product package
    from practice_loop.reader import read_question
    from practice_loop.runner import run_file
    from practice_loop.store import TraceStore
from practice_loop.kernel import practice_case
gsm8k, lines = Path(sys.argv[1]), int(sys.argv[2])
questions = [json.loads(line)["question"] for line in gsm8k.read_text("utf-8").splitlines()]
with tempfile.TemporaryDirectory() as folder:
    with TraceStore(Path(folder) / "bench.sqlite") as store:
        start = time.process_time()
        summary = run_file(gsm8k, store)
        cpu = time.process_time() - start
frames = [read_question(question) for question in questions[:lines]]
times = []
for frame in frames:
    start = time.perf_counter()
    practice_case(frame)
    times.append(time.perf_counter() - start)
print(json.dumps({"cases": summary.cases, "cases_per_cpu_second": summary.cases / cpu,
                  "practice_case_ms": statistics.median(times) * 1000}))
"""

# Instructions for ``count`` cases of the run: the difference of two runs of the same warm-up,
# one also running the cases.
_INSTRUCTIONS = r"""
import sys, tempfile
from pathlib import Path
try:
    from practice_loop.product.runner import run_lines
    from practice_loop.product.store import TraceStore
except ImportError:
    from practice_loop.runner import run_lines
    from practice_loop.store import TraceStore
lines = Path(sys.argv[1]).read_bytes().splitlines(keepends=True)
count = int(sys.argv[2])
with tempfile.TemporaryDirectory() as folder:
    with TraceStore(Path(folder) / "bench.sqlite") as store:
        run_lines(lines[:50], source="warm", store=store)
        if len(sys.argv) > 3:
            run_lines(lines[1000 : 1000 + count], source="work", store=store)
"""


def _environment(tree: Path) -> dict[str, str]:
    environment = dict(os.environ, PYTHONHASHSEED="0")
    environment["PYTHONPATH"] = os.pathsep.join([str(tree / "src"), str(tree / "strategies")])
    return environment


def _probe(tree: Path, gsm8k: Path, lines: int) -> dict[str, float]:
    result = subprocess.run(
        [sys.executable, "-c", _PROBE, str(gsm8k), str(lines)],
        capture_output=True, text=True, env=_environment(tree), cwd=tempfile.gettempdir(),
    )
    if result.returncode != 0:
        raise SystemExit(f"the probe failed under {tree}:\n{result.stderr[-2000:]}")
    return json.loads(result.stdout)


def _instructions(tree: Path, gsm8k: Path, count: int) -> int:
    def collected(*extra: str) -> int:
        with tempfile.TemporaryDirectory() as folder:
            result = subprocess.run(
                ["valgrind", "--tool=callgrind", f"--callgrind-out-file={folder}/out",
                 sys.executable, "-c", _INSTRUCTIONS, str(gsm8k), str(count), *extra],
                capture_output=True, text=True, env=_environment(tree), cwd=folder,
            )
        found = re.search(r"Collected : (\d+)", result.stderr)
        if result.returncode != 0 or found is None:
            raise SystemExit(f"callgrind failed under {tree}:\n{result.stderr[-2000:]}")
        return int(found.group(1))

    return (collected("work") - collected()) // count


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, required=True, help="another checkout")
    parser.add_argument("--gsm8k", type=Path, default=DEFAULT_GSM8K)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--lines", type=int, default=500, help="questions timed one by one")
    parser.add_argument("--instructions", type=int, metavar="N", help="also count, over N cases")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    if not (args.baseline / "src" / "practice_loop").is_dir():
        parser.error(f"--baseline {args.baseline} is not a checkout of this repository")
    if not args.gsm8k.is_file():
        parser.error(f"GSM8K file not found at {args.gsm8k}")
    rounds = []
    for number in range(1, args.rounds + 1):
        before = _probe(args.baseline, args.gsm8k, args.lines)
        after = _probe(HERE, args.gsm8k, args.lines)
        rounds.append({"baseline": before, "this": after})
        print(
            f"round {number}: run {before['cases_per_cpu_second']:.0f} -> "
            f"{after['cases_per_cpu_second']:.0f} cases/CPU-s; practice_case "
            f"{before['practice_case_ms']:.3f} -> {after['practice_case_ms']:.3f} ms"
        )
    figures: dict[str, object] = {"rounds": rounds}
    for key in ("cases_per_cpu_second", "practice_case_ms"):
        ratios = [r["this"][key] / r["baseline"][key] for r in rounds]
        figures[key] = {
            "baseline_median": statistics.median(r["baseline"][key] for r in rounds),
            "this_median": statistics.median(r["this"][key] for r in rounds),
            "ratio_median": statistics.median(ratios),
        }
        print(f"{key}: {figures[key]}")
    if args.instructions:
        if shutil.which("valgrind") is None:
            print("valgrind not found: instructions not counted")
        else:
            before = _instructions(args.baseline, args.gsm8k, args.instructions)
            after = _instructions(HERE, args.gsm8k, args.instructions)
            figures["instructions_per_case"] = {"baseline": before, "this": after}
            print(f"instructions per run case: {before} -> {after} ({after / before:.3f}x)")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
