"""Benchmark what reading failures from Hypothesis's observations costs a fuzz round (issue 18):
examples per second of three properties over the project's strategies, in one process, run in
turn three ways: plain; inside the fuzz plugin's block (``minimal_failures_to``), which turns
observability on only once a test's search has ended; and with observability on from the
start (line coverage off, as in the block), where Hypothesis prints every example's
arguments. The ratios say why the block waits. Figures are reported, never asserted
(machines here are shared and noisy).

    python benchmarks/bench_observability.py [--examples N] [--repeats R]
"""

from __future__ import annotations

import argparse
import time

from hypothesis import HealthCheck, given, settings
from hypothesis.internal import observability

from practice_loop.harness.hypothesis_internals import minimal_failures_to
from practice_loop.kernel import practice_case
from practice_strategies import chains, problem_frames, traces


def _properties(examples: int) -> dict[str, object]:
    fixed = settings(
        max_examples=examples,
        database=None,
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.too_slow],  # large records are slow by design
    )

    @fixed
    @given(problem_frames())
    def frames_run(frame):
        practice_case(frame)

    @fixed
    @given(chains())
    def chains_drawn(chain):
        assert chain is not None

    @fixed
    @given(traces())
    def traces_drawn(trace):
        assert trace.trace_id

    return {"practice_case(frame)": frames_run, "chains()": chains_drawn, "traces()": traces_drawn}


def _seconds(test, how: str) -> float:
    started = time.perf_counter()
    if how == "block":
        with minimal_failures_to(lambda *_: None):
            test()
    elif how == "eager":  # coverage collection off, as in the block: only the printing costs
        collect_coverage = observability.OBSERVABILITY_COLLECT_COVERAGE
        observability.OBSERVABILITY_COLLECT_COVERAGE = False
        try:
            with observability.with_observability_callback(lambda _: None):
                test()
        finally:
            observability.OBSERVABILITY_COLLECT_COVERAGE = collect_coverage
    else:
        test()
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=200, help="examples per property run")
    parser.add_argument("--repeats", type=int, default=5, help="runs of each kind, in turn")
    args = parser.parse_args()
    print(f"{'property':22} {'plain ex/s':>10} {'block/plain':>12} {'eager/plain':>12}")
    for name, test in _properties(args.examples).items():
        seconds: dict[str, list[float]] = {"plain": [], "block": [], "eager": []}
        for _ in range(args.repeats):  # in turn, so drift in the machine's load hits each
            for how, runs in seconds.items():
                runs.append(_seconds(test, how))
        best = {how: min(runs) for how, runs in seconds.items()}
        print(
            f"{name:22} {args.examples / best['plain']:10.1f}"
            f" {best['plain'] / best['block']:12.2f} {best['plain'] / best['eager']:12.2f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
