"""Benchmark decoding hostile bytes (issue 15): ``decode_canonical`` and ``load_sealed_trace``
must be linear in their input. Each family of adversarial inputs is timed at sizes doubling
from 8 KiB to 4 MiB, in one run, on one core; figures are reported, never asserted (machines
here are shared and noisy).

    python benchmarks/bench_decode.py [--max-kib N] [--old-seconds S] [--json OUT]

For every family and size it prints the CPU time per byte (best of a few calls) and the
slope: the ratio of the time at this size to the time at half of it; then, per family, the
cost of one doubling fitted over all sizes (``2 ** k`` for time ~ size ** k). A linear cost
keeps the slope near 2 and the time per byte flat; a quadratic one doubles the slope to 4.
The outcome column shows what each input is refused as (or that it decodes).

``_nesting_depth`` is the pre-parse scan ``decode_canonical`` runs first. The table also times
the scan as it was before issue 15 (copied below as ``_old_nesting_depth``, a backtracking
string pattern), on the same inputs, so both are measured in the same process; the old scan
stops at the first size of a family that takes longer than ``--old-seconds``, since its cost
grows fourfold per doubling (about 1000 s at 400 KiB).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import time
from collections.abc import Callable
from pathlib import Path

from practice_loop.kernel import CanonicalizationError, decode_canonical, load_sealed_trace
from practice_loop.kernel.identity import _nesting_depth

# The scan as of commit 45e68ef, verbatim: an unclosed string made it rescan to the end of
# the text from every escaped quote.
_OLD_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_OLD_BRACKETS = re.compile(r"[\[\]{}]")


def _old_nesting_depth(text: str) -> int:
    depth = deepest = 0
    for bracket in _OLD_BRACKETS.findall(_OLD_JSON_STRING.sub("", text)):
        depth += 1 if bracket in "[{" else -1
        deepest = max(deepest, depth)
    return deepest


def _repeat(unit: bytes, size: int, head: bytes = b"", tail: bytes = b"") -> bytes:
    count = max(1, (size - len(head) - len(tail)) // len(unit))
    return head + unit * count + tail


# 31 levels, inside the one list that holds them all: exactly MAX_DEPTH (32).
_GROUP = b"[" * 31 + b"]" * 31

# name -> (what it is, size in bytes -> input)
FAMILIES: dict[str, tuple[str, Callable[[int], bytes]]] = {
    "unclosed_escaped_quotes": (
        'an unclosed string of escaped quotes: "\\"\\"\\"...',
        lambda n: _repeat(b'\\"', n, head=b'"'),
    ),
    "escaped_quotes_outside": (
        'escaped quotes from the first byte: \\"\\"\\"... (every quote opens an unclosed string)',
        lambda n: _repeat(b'\\"', n),
    ),
    "unclosed_backslashes": (
        'an unclosed string of backslashes: "\\\\\\\\...',
        lambda n: _repeat(b"\\", n, head=b'"'),
    ),
    "closed_backslashes": (
        'a closed string of escaped backslashes: "\\\\\\\\...\\\\"',
        lambda n: _repeat(b"\\\\", n, head=b'"', tail=b'"'),
    ),
    "unclosed_then_brackets": (
        'an unclosed quote before open brackets: "[[[[...',
        lambda n: _repeat(b"[", n, head=b'"'),
    ),
    "deep_capped_brackets": (
        "lists nested exactly 32 deep, side by side: [[[...]]],[[[...]]],...",
        lambda n: b"[" + b",".join([_GROUP] * max(1, (n - 2) // (len(_GROUP) + 1))) + b"]",
    ),
    "too_deep_brackets": (
        "open brackets only: [[[[... (depth_exceeded before parsing)",
        lambda n: _repeat(b"[", n),
    ),
    "empty_lists": (
        "a list of empty lists: [[],[],...]",
        lambda n: _repeat(b"[],", n, head=b"[", tail=b"[]]"),
    ),
    "brackets_in_a_string": (
        'brackets inside one closed string: "[[[...]]]"',
        lambda n: _repeat(b"[]", n, head=b'"', tail=b'"'),
    ),
    "long_valid_string": (
        'one long closed string: "aaaa..." (size_exceeded past 100 000 characters)',
        lambda n: _repeat(b"a", n, head=b'"', tail=b'"'),
    ),
    "empty_strings": (
        'a list of empty strings: ["","",...]',
        lambda n: _repeat(b'"",', n, head=b"[", tail=b'""]'),
    ),
    "unicode_escapes": (
        'a string of \\u escapes: "\\u00e9\\u00e9..." (not canonical)',
        lambda n: _repeat(b"\\u00e9", n, head=b'"', tail=b'"'),
    ),
    "huge_int": ("one int literal of n digits: 9999...", lambda n: _repeat(b"9", n)),
    "many_ints": ("a list of small ints: [1,1,1,...]", lambda n: _repeat(b"1,", n, b"[", b"1]")),
}


def _best_seconds(action: Callable[[], object], budget: float) -> float:
    """The least CPU time of at least three calls, more while the time spent stays under
    ``budget``. CPU time of this process, not wall time: other work on a shared machine
    then disturbs the figures much less."""
    best = float("inf")
    spent = 0.0
    calls = 0
    while calls < 3 or spent < budget:
        start = time.process_time()
        action()
        elapsed = time.process_time() - start
        best = min(best, elapsed)
        spent += elapsed
        calls += 1
        if elapsed > budget:
            break
    return best


def _decode(data: bytes) -> str:
    try:
        decode_canonical(data)
    except CanonicalizationError as error:
        return error.reason.value
    return "decoded"


def _load(data: bytes) -> str:
    loaded = load_sealed_trace(data)
    failures = getattr(loaded, "failures", ())
    return failures[0].code.value if failures else "loaded"


def measure(max_kib: int, old_seconds: float, budget: float) -> list[dict[str, object]]:
    sizes = []
    size = 8 * 1024
    while size <= max_kib * 1024:
        sizes.append(size)
        size *= 2
    rows: list[dict[str, object]] = []
    for family, (_, build) in FAMILIES.items():
        previous: dict[str, float] = {}
        old_stopped = False
        for size in sizes:
            data = build(size)
            text = data.decode("utf-8")
            timings: dict[str, float | None] = {
                "nesting_depth": _best_seconds(lambda: _nesting_depth(text), budget),
                "decode_canonical": _best_seconds(lambda: _decode(data), budget),
                "load_sealed_trace": _best_seconds(lambda: _load(data), budget),
                "old_nesting_depth": None,
            }
            if not old_stopped:
                seconds = _best_seconds(lambda: _old_nesting_depth(text), budget)
                timings["old_nesting_depth"] = seconds
                old_stopped = seconds > old_seconds
            row: dict[str, object] = {
                "family": family,
                "bytes": len(data),
                "depth": _nesting_depth(text),
                "decode": _decode(data),
                "load": _load(data),
            }
            for name, seconds in timings.items():
                if seconds is None:
                    continue
                row[f"{name}_s"] = seconds
                row[f"{name}_ns_per_byte"] = seconds / len(data) * 1e9
                if name in previous:
                    row[f"{name}_slope"] = seconds / previous[name]
                previous[name] = seconds
            for name in [n for n in previous if timings.get(n) is None]:
                del previous[name]
            rows.append(row)
    return rows


_COLUMNS = ("nesting_depth", "old_nesting_depth", "decode_canonical", "load_sealed_trace")


def _cell(row: dict[str, object], name: str) -> str:
    if f"{name}_s" not in row:
        return f"{'-':>10} {'-':>6}"
    per_byte = f"{row[f'{name}_ns_per_byte']:.1f}"
    slope = row.get(f"{name}_slope")
    return f"{per_byte:>10} {'' if slope is None else f'{slope:.2f}':>6}"


def fitted_doubling(rows: list[dict[str, object]], name: str) -> float | None:
    """``2 ** k`` for the least-squares ``k`` of log time against log size over ``rows``:
    the factor one doubling costs, fitted over every size at once (steadier than any one
    ratio): 2 when linear, 4 when quadratic."""
    timed = [(row["bytes"], row[f"{name}_s"]) for row in rows if f"{name}_s" in row]
    points = [
        (math.log2(size), math.log2(seconds))  # type: ignore[arg-type]
        for size, seconds in timed
        if seconds > 0  # type: ignore[operator]
    ]
    if len(points) < 2:
        return None
    mean_x = sum(x for x, _ in points) / len(points)
    mean_y = sum(y for _, y in points) / len(points)
    spread = sum((x - mean_x) ** 2 for x, _ in points)
    k = sum((x - mean_x) * (y - mean_y) for x, y in points) / spread
    return float(2**k)


def report(rows: list[dict[str, object]]) -> dict[str, dict[str, float | None]]:
    print("CPU time per byte in ns; slope = t(2n) / t(n): 2 when linear, 4 when quadratic")
    header = f"{'bytes':>9} " + " ".join(f"{name:>17}" for name in _COLUMNS)
    units = f"{'':>9} " + " ".join(f"{'ns/B':>10} {'slope':>6}" for _ in _COLUMNS)
    fitted: dict[str, dict[str, float | None]] = {}
    for family, (description, _) in FAMILIES.items():
        mine = [row for row in rows if row["family"] == family]
        print(f"\n{family}: {description}")
        print(f"{header}  outcome (depth, decode_canonical, load_sealed_trace)")
        print(units)
        for row in mine:
            cells = " ".join(_cell(row, name) for name in _COLUMNS)
            outcome = f"{row['depth']}, {row['decode']}, {row['load']}"
            print(f"{row['bytes']:>9} {cells}  {outcome}")
        fitted[family] = {name: fitted_doubling(mine, name) for name in _COLUMNS}
        shown = "   ".join(
            f"{name} {'-' if value is None else f'{value:.2f}'}"
            for name, value in fitted[family].items()
        )
        print(f"  fitted cost of one doubling: {shown}")
    print("\nfitted cost of one doubling, worst family first (2 = linear, 4 = quadratic):")
    for name in _COLUMNS:
        ranked = sorted(
            ((value, family) for family, by in fitted.items() if (value := by[name]) is not None),
            reverse=True,
        )
        shown = ", ".join(f"{value:.2f} {family}" for value, family in ranked[:3])
        print(f"  {name}: {shown}")
    return fitted


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-kib", type=int, default=4096, help="largest size, in KiB")
    parser.add_argument(
        "--old-seconds",
        type=float,
        default=2.0,
        help="stop timing the old scan on a family once one call takes longer than this",
    )
    parser.add_argument(
        "--budget", type=float, default=0.2, help="seconds spent per measurement, at least"
    )
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    rows = measure(args.max_kib, args.old_seconds, args.budget)
    fitted = report(rows)
    if args.json:
        figures = {"rows": rows, "fitted_doubling": fitted}
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
