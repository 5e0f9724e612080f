"""The ``practice-loop`` command line."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from . import __version__
from .examples import shipped_examples
from .kernel import problem_frame_digest
from .stages import run_stages


def _demo(args: argparse.Namespace) -> int:
    """Run the stages built so far on the shipped examples; one JSON object per record."""
    examples = shipped_examples()
    chosen = [example for example in examples if not args.example or example.name in args.example]
    unknown = set(args.example or ()) - {example.name for example in examples}
    if unknown:
        names = ", ".join(example.name for example in examples)
        print(
            f"practice-loop: unknown example {sorted(unknown)}; choose from {names}",
            file=sys.stderr,
        )
        return 2
    for example in chosen:
        for stage_record in run_stages(example.frame):
            line = {
                "example": example.name,
                "problem_frame_digest": problem_frame_digest(example.frame),
                **stage_record.to_json(),
            }
            print(json.dumps(line, ensure_ascii=False, sort_keys=True, indent=args.indent))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="practice-loop",
        description="CORE's Residual-Gated Practice Loop (ADR-0226).",
    )
    parser.add_argument("--version", action="version", version=f"practice-loop {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser(
        "demo", help="run the kernel stages on the shipped examples and print each record as JSON"
    )
    demo.add_argument(
        "--example", action="append", metavar="NAME", help="only this example (repeatable)"
    )
    demo.add_argument("--indent", type=int, default=None, help="pretty-print with this indent")
    demo.set_defaults(handler=_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.handler(args)
    except BrokenPipeError:  # the reader stopped early (| head): not an error of ours
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
