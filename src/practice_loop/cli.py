"""The ``practice-loop`` command line.

Exit status (the same for every command, README and ``--help``):

- 0: everything asked for was done and held;
- 1: a run gave a wrong answer, or a verification failed;
- 2: a usage, input or store error (a missing or foreign store, a bad line skipped, a file
  that is not there), reported with its typed reason;
- 3: an internal error: one line on stderr naming the file that holds the details;
- 130: interrupted (Ctrl-C), after printing what was committed or checked.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import re
import sys
import tempfile
import traceback
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

from . import __version__
from .kernel import SealedPracticeTrace
from .product.progress import Progress
from .product.runner import RunSummary, count_lines, run_file, run_lines
from .product.store import (
    DEFAULT_STORE,
    DEFAULT_WAIT_SECONDS,
    CaseRow,
    MalformedRow,
    ReadOnlyTraceStore,
    StoreError,
    TraceStore,
)
from .product.verification import Finding, printable

SAMPLE = "sample.jsonl"

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 3
EXIT_INTERRUPTED = 130

EXIT_CODES_HELP = (
    "exit status: 0 all good; 1 a wrong answer or a failed verification; 2 a usage, input or "
    "store error; 3 an internal error (the details' file is named); 130 interrupted"
)

BUILT_IN_COMMANDS = frozenset({"run", "verify", "show"})
# Commands of their own modules, imported only when named (or for help): ``run`` should not
# pay for loading the prover, the fuzz campaign or the Workbench. Module, then the function
# that adds its commands to the parser.
EXTENSION_COMMANDS = {
    "vectors": ("harness.vectors", "add_subcommand"),
    "gate": ("harness.obligation_gate", "add_subcommand"),
    "workbench": ("workbench.server", "add_subcommand"),
    "fuzz": ("harness.fuzz", "add_subcommand"),
    "fuzz-bytes": ("harness.byte_fuzz", "add_subcommand"),
    "contracts": ("harness.crosshair_lane", "add_subcommands"),
    "policy-diff": ("harness.crosshair_lane", "add_subcommands"),
    "prove-policy": ("harness.prove_policy", "add_subcommand"),
    "mutants": ("harness.mutants", "add_subcommand"),
    "mutation-score": ("harness.mutation_score", "add_subcommand"),
}
# The top-level modules the `test` extra (pyproject.toml) brings: a command that imports one
# where it is not installed says which extra to install, never a traceback.
TEST_EXTRA_MODULES = frozenset(
    {
        "atheris",
        "build",
        "check_jsonschema",
        "cosmic_ray",
        "coverage",
        "crosshair",
        "hypothesis",
        "hypothesis_crosshair_provider",
        "junitparser",
        "playwright",
        "pytest",
        "pytest_cov",
        "redis",
        "rfc8785",
        "setuptools",
        "xdist",
        "xmlschema",
    }
)
INSTALL_TEST_EXTRA = "pip install 'practice-loop[test]'"
_TRACE_ID = re.compile(r"[0-9a-f]{64}")


def _error(message: str) -> None:
    print(f"practice-loop: {message}", file=sys.stderr)


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
    print(f"unjudged: {sum(summary.unjudged.values())}")
    for reason, count in sorted(summary.unjudged.items(), key=lambda item: (-item[1], item[0])):
        print(f"  {count:6d}  {reason}")
    print(f"wrong: {len(summary.wrong_ids)}")
    print(f"wrong_ids: {summary.wrong_ids}")
    print(f"skipped lines: {len(summary.skipped)}")


def _run(args: argparse.Namespace) -> int:
    if args.file is not None:
        if args.file.is_dir():
            _error(f"{args.file}: is a directory, not a JSON-lines file")
            return EXIT_USAGE
        if not args.file.is_file():
            _error(f"{args.file}: no such file")
            return EXIT_USAGE
        try:
            total = count_lines(args.file)
        except OSError as error:
            _error(f"{args.file}: cannot be read ({error.strerror or error})")
            return EXIT_USAGE
    progress = Progress("run", quiet=args.quiet)

    def show(summary: RunSummary) -> None:
        detail = f"{summary.answered} answered, {len(summary.wrong_ids)} wrong"
        progress.update(summary.lines, total, detail)

    with TraceStore(args.store, wait=args.wait) as store:
        if args.file is None:
            lines = (resources.files("practice_loop") / "data" / SAMPLE).read_bytes().splitlines()
            total = len(lines)
            summary = run_lines(lines, source=SAMPLE, store=store, progress=show)
        else:
            summary = run_file(args.file, store, show)
    if not summary.interrupted and summary.stopped is None:
        show(dataclasses.replace(summary, lines=total))
    progress.finish()
    for line in summary.skipped:
        case = f" (case {printable(line.case_id)})" if line.case_id else ""
        _error(f"line {line.line_number} skipped: {line.reason}{case}")
    if args.trace_ids and not args.json:
        for case_id, trace_id in summary.traces:
            print(f"{printable(case_id)}\t{trace_id or '-'}")
    _print_summary(summary, args.json)
    if summary.interrupted:
        stored = f"the {summary.cases} cases above are stored"
        _error(f"interrupted after line {summary.lines}: {stored}")
        return EXIT_INTERRUPTED
    if summary.stopped is not None:
        _error(f"stopped after line {summary.lines}: {summary.stopped}")
        return EXIT_USAGE
    if summary.wrong_ids:
        return EXIT_FAILED
    return EXIT_USAGE if summary.skipped else EXIT_OK


def _verify(args: argparse.Namespace) -> int:
    from .product.verification import verify_store

    progress = Progress("verify", quiet=args.quiet)
    with ReadOnlyTraceStore(args.store, wait=args.wait) as store:
        result = verify_store(store, progress.update)
    progress.finish()
    if args.json:
        print(json.dumps(result.to_json(), indent=2, sort_keys=True))
    else:
        for finding in result.findings:
            print(finding.line())
        print(
            f"verified {result.cases} cases and {result.traces} traces: "
            f"{result.failed_cases} cases failed, {result.orphaned} traces orphaned"
        )
    if result.interrupted:
        _error(f"interrupted after {result.cases} cases: the store is not verified")
        return EXIT_INTERRUPTED
    return EXIT_OK if result.valid else EXIT_FAILED


def _show(args: argparse.Namespace) -> int:
    from .product.render import render_trace
    from .product.verification import check_case, check_trace

    with ReadOnlyTraceStore(args.store, wait=args.wait) as store:
        case = store.case(args.id)
        if type(case) is MalformedRow:
            return _print_unverified(args, None, check_case(case, None))
        if type(case) is CaseRow and case.trace_id is None:
            found = check_case(case, None)
            if found:
                return _print_unverified(args, None, found)
            _error(f"case {printable(case.case_id)} has no trace: {case.outcome} {case.reason}")
            return EXIT_USAGE
        if type(case) is CaseRow:
            trace_id = case.trace_id
        elif _TRACE_ID.fullmatch(args.id):
            trace_id = args.id
        else:
            kinds = "neither a stored case id nor a trace id (64 lowercase hex)"
            _error(f"{printable(args.id)}: {kinds}")
            return EXIT_USAGE
        assert trace_id is not None
        if store.stored_body(trace_id) is None:
            if type(case) is CaseRow:  # the row names a trace the store does not hold
                return _print_unverified(args, trace_id, check_case(case, None))
            _error(f"{trace_id}: no such trace in {args.store}")
            return EXIT_USAGE
        checked = check_trace(store, trace_id)
        rows = store.cases_of_trace(trace_id)
    if type(checked) is not SealedPracticeTrace:
        return _print_unverified(args, trace_id, checked)
    if args.json:
        shown = {
            "trace_id": trace_id,
            "verified": True,
            "cases": [row.case_id for row in rows],
            "trace": checked.to_json(),
        }
        print(json.dumps(shown, indent=2, sort_keys=True, ensure_ascii=False))
    else:
        print(render_trace(checked))
    return EXIT_OK


def _print_unverified(args: argparse.Namespace, trace_id: str | None, found: list[Finding]) -> int:
    """The findings that keep a trace from being shown; exit 1."""
    if args.json:
        failures = [finding.to_json() for finding in found]
        print(json.dumps({"trace_id": trace_id, "verified": False, "failures": failures}))
    else:
        for finding in found:
            print(finding.line())
        subject = f"trace {trace_id}" if trace_id else f"case {printable(args.id)}"
        print(f"{subject}: not verified, not shown")
    return EXIT_FAILED


def store_arguments(parser: argparse.ArgumentParser, *, help_text: str) -> None:
    """``--store`` and ``--wait``, the same for every command that opens a store."""
    parser.add_argument(
        "--store", type=Path, default=DEFAULT_STORE, help=f"{help_text} (default {DEFAULT_STORE})"
    )
    parser.add_argument(
        "--wait",
        type=_seconds,
        default=DEFAULT_WAIT_SECONDS,
        metavar="SECONDS",
        help="how long to wait for a store another process is writing, wall clock "
        "(default %(default)g)",
    )


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 <= value <= 86400:
        raise argparse.ArgumentTypeError("seconds must be between 0 and 86400")
    return value


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line; with ``command`` one of the built-in ones (``run``, ``verify``,
    ``show``), the extension modules are not imported."""
    parser = argparse.ArgumentParser(
        prog="practice-loop",
        description="CORE's Residual-Gated Practice Loop (ADR-0226).",
        epilog=EXIT_CODES_HELP,
    )
    parser.add_argument("--version", action="version", version=f"practice-loop {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    def command_parser(name: str, summary: str, description: str) -> argparse.ArgumentParser:
        return commands.add_parser(
            name,
            help=summary,
            description=description,
            epilog=EXIT_CODES_HELP,
        )

    run = command_parser(
        "run",
        "run every case of a JSON-lines file and store its trace",
        "Read each line (question, optionally answer ending in '#### N'), run the loop, store "
        "every sealed trace and print the summary. A bad line is skipped with its number and "
        "reason (exit 2 at the end); a case whose gold answer cannot be read is unjudged.",
    )
    run.add_argument(
        "file",
        nargs="?",
        type=Path,
        help="JSON lines with question (and answer ending in '#### N'); "
        "default: the sample shipped with the project",
    )
    store_arguments(run, help_text="the SQLite trace store; created if no file is there")
    run.add_argument("--json", action="store_true", help="print the summary as JSON")
    run.add_argument("--trace-ids", action="store_true", help="print each case's trace id")
    run.add_argument("--quiet", action="store_true", help="no progress line")
    run.set_defaults(handler=_run)

    verify = command_parser(
        "verify",
        "re-verify every stored case and trace, byte for byte",
        "Re-run every stored case from its question and compare the row and the trace's "
        "bytes, prose included, with what is stored; name each failure with its typed "
        "reason and stage. The store is opened read-only and must exist.",
    )
    store_arguments(verify, help_text="the SQLite trace store (must exist)")
    verify.add_argument("--json", action="store_true", help="print the result as JSON")
    verify.add_argument("--quiet", action="store_true", help="no progress line")
    verify.set_defaults(handler=_verify)

    show = command_parser(
        "show",
        "print one stored trace readably, after the full check",
        "Print one trace (by case id or trace id) after the same full check as verify; a "
        "trace that fails is reported, never shown.",
    )
    show.add_argument("id", metavar="ID", help="a case id, or a trace id (64 lowercase hex)")
    store_arguments(show, help_text="the SQLite trace store (must exist)")
    show.add_argument("--json", action="store_true", help="print the verified trace as JSON")
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


def _internal_error(error: BaseException) -> int:
    """One line for the user; the traceback goes to a file, whose name the line gives."""
    with tempfile.NamedTemporaryFile(
        "w", prefix="practice-loop-error-", suffix=".log", delete=False
    ) as log:
        traceback.print_exception(error, file=log)
    _error(f"internal error: {type(error).__name__}: {error} (details in {log.name})")
    return EXIT_INTERNAL


def main(argv: Sequence[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else list(argv)
    try:
        args = build_parser(_command_named(arguments)).parse_args(arguments)
        return args.handler(args)
    except StoreError as error:
        _error(str(error))
        return EXIT_USAGE
    except KeyboardInterrupt:
        _error("interrupted")
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # the reader stopped early (| head): not an error of ours
        sys.stderr.close()
        return EXIT_OK
    except SystemExit:
        raise
    except ModuleNotFoundError as error:
        if (error.name or "").partition(".")[0] not in TEST_EXTRA_MODULES:
            return _internal_error(error)
        command = _command_named(arguments) or "practice-loop"
        _error(f"{command} needs the 'test' extra ({error}): {INSTALL_TEST_EXTRA}")
        return EXIT_USAGE
    except Exception as error:  # noqa: BLE001 (the last line of defence: never a traceback)
        return _internal_error(error)


if __name__ == "__main__":
    sys.exit(main())
