"""The ``practice-loop`` command line.

Exit status: 0 when everything asked for succeeded; 1 when a run produced a wrong answer or a
verification failed; 2 for a usage error (a missing file, a store that is not ours).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

from . import __version__
from .kernel import SealedPracticeTrace, TraceVerification, replay_divergence
from .render import render_trace
from .runner import RunSummary, run_file, run_lines
from .store import DEFAULT_STORE, StoreError, TraceStore

SAMPLE = "sample.jsonl"

BUILT_IN_COMMANDS = frozenset({"run", "verify", "show"})
# Commands of their own modules, imported only when named (or for help): ``run`` should not
# pay for loading the prover, the fuzz campaign or the Workbench. Module, then the function
# that adds its commands to the parser.
EXTENSION_COMMANDS = {
    "vectors": ("vectors", "add_subcommand"),
    "gate": ("gate", "add_subcommand"),
    "workbench": ("workbench", "add_subcommand"),
    "fuzz": ("fuzz", "add_subcommand"),
    "contracts": ("crosshair_lane", "add_subcommands"),
    "policy-diff": ("crosshair_lane", "add_subcommands"),
    "prove-policy": ("prove_policy", "add_subcommand"),
    "compile-kinds": ("kind_compiler", "add_subcommand"),
}


def _progress(summary: RunSummary) -> None:
    if summary.cases % 250 == 0:
        print(
            f"\r{summary.cases} cases: {summary.answered} answered, "
            f"{sum(summary.refused.values())} refused, {len(summary.wrong_ids)} wrong",
            end="",
            file=sys.stderr,
            flush=True,
        )


def _print_summary(summary: RunSummary, as_json: bool) -> None:
    if as_json:
        print(json.dumps(summary.to_json(), indent=2, sort_keys=True))
        return
    print(f"cases: {summary.cases}")
    print(
        f"answered: {summary.answered} (directly {summary.answered_direct}, "
        f"through practice {summary.answered_practice})"
    )
    print(f"refused: {sum(summary.refused.values())}")
    for reason, count in sorted(summary.refused.items(), key=lambda item: (-item[1], item[0])):
        print(f"  {count:6d}  {reason}")
    print(f"wrong: {len(summary.wrong_ids)}")
    print(f"wrong_ids: {summary.wrong_ids}")
    for line in summary.skipped:
        print(f"skipped line {line.line_number}: {line.reason}")


def _run(args: argparse.Namespace) -> int:
    show_progress = sys.stderr.isatty() and not args.quiet
    with TraceStore(args.store) as store:
        if args.file is None:
            sample = resources.files("practice_loop") / "data" / SAMPLE
            summary = run_lines(
                sample.read_bytes().splitlines(),
                source=SAMPLE,
                store=store,
                progress=_progress if show_progress else None,
            )
        else:
            if not args.file.is_file():
                print(f"practice-loop: no such file: {args.file}", file=sys.stderr)
                return 2
            summary = run_file(args.file, store, _progress if show_progress else None)
    if show_progress:
        print(file=sys.stderr)
    for line in summary.skipped:
        print(f"practice-loop: line {line.line_number} skipped: {line.reason}", file=sys.stderr)
    _print_summary(summary, args.json)
    return 1 if summary.wrong_ids else 0


def _verify(args: argparse.Namespace) -> int:
    failures = 0
    with TraceStore(args.store) as store:
        trace_ids = store.trace_ids()
        for trace_id in trace_ids:
            read = store.read_trace(trace_id)
            if type(read) is TraceVerification:
                failures += 1
                for failure in read.failures:
                    print(f"{trace_id}: {failure.code.value} at {failure.stage} {failure.detail}")
                continue
            divergence = replay_divergence(read)
            if divergence is not None:
                failures += 1
                print(f"{trace_id}: {divergence.code.value} at {divergence.stage}")
        stored = set(trace_ids)
        missing = [
            row.case_id
            for row in store.cases()
            if row.trace_id is not None and row.trace_id not in stored
        ]
    for case_id in missing:
        print(f"case {case_id}: its trace is missing from the store")
    print(
        f"verified {len(trace_ids)} traces: {len(trace_ids) - failures} valid, "
        f"{failures} failed, {len(missing)} missing"
    )
    return 1 if failures or missing else 0


def _show(args: argparse.Namespace) -> int:
    with TraceStore(args.store) as store:
        read = store.read_trace(args.trace_id)
    if type(read) is not SealedPracticeTrace:
        for failure in read.failures:
            print(f"{args.trace_id}: {failure.code.value} at {failure.stage} {failure.detail}")
        return 1
    print(render_trace(read))
    return 0


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line; with ``command`` one of the built-in ones (``run``, ``verify``,
    ``show``), the extension modules are not imported."""
    parser = argparse.ArgumentParser(
        prog="practice-loop",
        description="CORE's Residual-Gated Practice Loop (ADR-0226).",
    )
    parser.add_argument("--version", action="version", version=f"practice-loop {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    store_help = f"the SQLite trace store (default {DEFAULT_STORE})"

    run = commands.add_parser("run", help="run every case of a JSON-lines file and store its trace")
    run.add_argument(
        "file",
        nargs="?",
        type=Path,
        help="JSON lines with question (and answer ending in '#### N'); "
        "default: the sample shipped with the project",
    )
    run.add_argument("--store", type=Path, default=DEFAULT_STORE, help=store_help)
    run.add_argument("--json", action="store_true", help="print the summary as JSON")
    run.add_argument("--quiet", action="store_true", help="no progress line")
    run.set_defaults(handler=_run)

    verify = commands.add_parser("verify", help="re-verify and replay every stored trace")
    verify.add_argument("--store", type=Path, default=DEFAULT_STORE, help=store_help)
    verify.set_defaults(handler=_verify)

    show = commands.add_parser("show", help="print one stored trace readably")
    show.add_argument("trace_id")
    show.add_argument("--store", type=Path, default=DEFAULT_STORE, help=store_help)
    show.set_defaults(handler=_show)

    if command not in BUILT_IN_COMMANDS:
        wanted = {EXTENSION_COMMANDS[command]} if command in EXTENSION_COMMANDS else None
        for module, adder in dict.fromkeys(EXTENSION_COMMANDS.values()):
            if wanted is None or (module, adder) in wanted:
                getattr(importlib.import_module(f".{module}", __package__), adder)(commands)
    return parser


def _command_named(argv: Sequence[str]) -> str | None:
    """The command ``argv`` names, when its first argument is one (options come after it)."""
    if argv and (argv[0] in BUILT_IN_COMMANDS or argv[0] in EXTENSION_COMMANDS):
        return argv[0]
    return None


def main(argv: Sequence[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else list(argv)
    args = build_parser(_command_named(arguments)).parse_args(arguments)
    try:
        return args.handler(args)
    except StoreError as error:
        print(f"practice-loop: {error}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader stopped early (| head): not an error of ours
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
