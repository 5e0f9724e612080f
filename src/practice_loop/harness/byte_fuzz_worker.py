"""One target of ``practice-loop fuzz-bytes`` under libFuzzer, in a process of its own:
``python -m practice_loop.harness.byte_fuzz_worker TARGET [libFuzzer arguments]``.

Kept apart from ``byte_fuzz`` so that atheris instruments the project's modules (and the
standard-library parsers they hand bytes to) as they are imported, before anything else
loads them: instrumenting every loaded function afterwards takes far longer than a short run.
"""

from __future__ import annotations

import sys

import atheris

# What a surface's code runs: the project, and the standard-library decoders it calls.
INSTRUMENTED = ["practice_loop", "json", "sqlite3", "tempfile"]


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.splitlines()[1].strip(), file=sys.stderr)
        return 2
    with atheris.instrument_imports(include=INSTRUMENTED):
        from practice_loop.harness.byte_fuzz import TARGETS
    if argv[0] not in TARGETS:
        print(f"unknown target {argv[0]!r}: one of {', '.join(TARGETS)}", file=sys.stderr)
        return 2
    atheris.Setup([sys.argv[0], *argv[1:]], TARGETS[argv[0]].check)
    atheris.Fuzz()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
