"""Issue 17's targets, read from what a run measured: the kill matrix of ``practice-loop
mutants`` and, when given, the score of ``practice-loop mutation-score``. Reported against
their targets, never asserted (machines here are shared and noisy; CI's verdict is the
commands' own exit status).

    python benchmarks/bench_mutants.py [KILL_MATRIX_JSON] [--score SCORE_JSON] [--json OUT]

Defaults: ``mutants-report/kill-matrix.json`` and ``mutation-score/score.json`` when present.

Targets: every catalogue mutant killed; median seconds to kill at most 15 and the whole
catalogue at most 20 minutes on 2 cores; the kernel mutation score at least 95%.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

TARGETS = {
    "catalogue_killed_percent": 100.0,
    "median_seconds_to_kill": 15.0,
    "catalogue_wall_minutes": 20.0,
    "kernel_score_percent": 95.0,
}


def _read(path: Path, schema: str) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise SystemExit(f"bench_mutants: {path}: {error}") from None
    if not isinstance(data, dict) or data.get("schema") != schema:
        raise SystemExit(f"bench_mutants: {path} is not a {schema} report")
    return data


def measure(matrix: dict[str, Any], score: dict[str, Any] | None) -> dict[str, Any]:
    totals = matrix["totals"]
    killed = totals["killed"] + totals["timed_out"]
    figures: dict[str, Any] = {
        "catalogue_complete": matrix.get("complete"),
        "catalogue_mutants": totals["mutants"],
        "catalogue_killed_percent": round(100 * killed / totals["mutants"], 2),
        "median_seconds_to_kill": totals["median_seconds_to_kill"],
        "worst_seconds_to_kill": totals["worst_seconds_to_kill"],
        "catalogue_wall_minutes": round(totals["wall_seconds"] / 60, 2),
        "jobs": totals["jobs"],
        "commit": matrix["context"]["commit"],
    }
    if score is not None:
        figures |= {
            "kernel_score_percent": score["totals"]["score"],
            "kernel_judged": score["totals"]["judged"],
            "kernel_selection": score["selection"]["description"],
        }
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "matrix", nargs="?", type=Path, default=Path("mutants-report/kill-matrix.json")
    )
    parser.add_argument("--score", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None, metavar="OUT")
    args = parser.parse_args(argv)
    score_path = args.score or Path("mutation-score/score.json")
    score = (
        _read(score_path, "mutation_score.v1")
        if args.score is not None or score_path.is_file()
        else None
    )
    figures = measure(_read(args.matrix, "kill_matrix.v1"), score)
    for name, value in figures.items():
        target = TARGETS.get(name)
        if target is None:
            print(f"{name}: {value}")
            continue
        at_most = name in ("median_seconds_to_kill", "catalogue_wall_minutes")
        met = value is not None and (value <= target if at_most else value >= target)
        bound = "at most" if at_most else "at least"
        print(f"{name}: {value} (target {bound} {target:g}: {'met' if met else 'NOT met'})")
    if figures["jobs"] != 2:
        print(f"note: measured with {figures['jobs']} jobs; the targets are for 2 cores")
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
