"""``practice-loop gate``: the traceability matrix and the obligation gate for reviewers.

Either runs the test suite in a child process with the obligation plugin (``python -m pytest
-p practice_loop.harness.gate_plugin --obligation-gate --obligation-matrix=OUT``, with ``-n``
when pytest-xdist is installed), or, with ``--from-json RESULTS``, re-applies the
gate to the ``matrix.json`` of a finished run against the registry as it is now. Either way it
writes ``matrix.md`` and ``matrix.json`` into ``--out`` (default ``gate-report/``).

Exit status: 0 when every gated obligation is covered by passing tests (and no test failed)
and, with ``--mutants``, every catalogued mutant of it was killed and it has one where due;
1 otherwise, naming each offending obligation; 2 on a usage error (a missing or invalid
registry or results file, an unknown ADR, pytest refusing its arguments or a marker).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from .mutants import DEFAULT_CATALOGUE, CatalogueError, kills_from_matrix, load_catalogue
from .obligations import (
    DEFAULT_REGISTRY,
    MATRIX_JSON,
    MATRIX_MARKDOWN,
    MatrixError,
    RegistryError,
    evaluate,
    load_registry,
    results_from_matrix,
    verdict_lines,
    write_matrix,
)
from .report_context import run_context

DEFAULT_OUT = Path("gate-report")
PYTEST_USAGE_ERROR = 4


def add_subcommand(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``gate`` to the command line's subparsers; the handler is :func:`run_gate`."""
    gate = subparsers.add_parser(
        "gate",
        help="check that every ADR obligation is proven by a passing test",
        description="Run the test suite with the obligation plugin (or re-read a finished "
        "run's matrix.json) and fail when an obligation of docs/obligations.toml has no "
        "test, or a test naming it did not pass. Exit status: 0 every gated obligation is "
        "covered by passing tests (and, with --mutants, every mutant of it killed); 1 "
        "otherwise, naming each offending obligation; 2 a usage error (a missing or invalid "
        "registry or results file, an unknown ADR, pytest refusing its arguments).",
    )
    gate.add_argument(
        "--from-json",
        type=Path,
        metavar="RESULTS",
        help="re-apply the gate to this matrix.json instead of running the tests",
    )
    gate.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        metavar="DIR",
        help=f"where to write {MATRIX_MARKDOWN} and {MATRIX_JSON} (default {DEFAULT_OUT}/)",
    )
    gate.add_argument(
        "--adr",
        metavar="ADR",
        help="gate only this ADR's obligations, e.g. ADR-0231 (the matrix still lists all)",
    )
    gate.add_argument(
        "--mutants",
        type=Path,
        metavar="KILL_MATRIX",
        help="also require every catalogued mutant of an obligation killed, and one where due, "
        "from this kill-matrix.json of practice-loop mutants (the mutant half of the gate)",
    )
    gate.add_argument(
        "--catalogue",
        type=Path,
        default=DEFAULT_CATALOGUE,
        metavar="PATH",
        help=f"the mutant catalogue the kill matrix was made of (default {DEFAULT_CATALOGUE})",
    )
    gate.add_argument(
        "--registry",
        type=Path,
        default=DEFAULT_REGISTRY,
        metavar="PATH",
        help=f"the obligation registry (default {DEFAULT_REGISTRY})",
    )
    gate.add_argument(
        "-j",
        "--jobs",
        default="auto",
        metavar="N",
        help="pytest-xdist workers: a number, 'auto' (default) or 0 to run in one process",
    )
    gate.add_argument(
        "tests",
        nargs="*",
        help="test paths to run (default: the project's testpaths); not with --from-json",
    )
    gate.set_defaults(handler=run_gate)
    return gate


def _usage(message: str) -> int:
    print(f"practice-loop gate: {message}", file=sys.stderr)
    return 2


def pytest_command(
    out: Path, registry: Path, *, workers: str, adr: str | None, tests: list[str]
) -> list[str]:
    """The child pytest command line the gate runs."""
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "practice_loop.harness.gate_plugin",
        "--obligation-gate",
        f"--obligation-matrix={out.resolve()}",
        f"--obligation-registry={registry.resolve()}",
    ]
    if workers != "0" and importlib.util.find_spec("xdist") is not None:
        command += ["-n", workers]
    if adr is not None:
        command.append(f"--obligation-adr={adr}")
    return command + tests


def run_gate(args: argparse.Namespace) -> int:
    if not args.registry.exists():
        return _usage(
            f"{args.registry}: no such file. The gate reads the obligation registry of a "
            "checkout of practice-loop (an installed package has none): run it at the "
            "checkout's root, or pass --registry PATH"
        )
    try:
        registry = load_registry(args.registry)
    except RegistryError as error:
        return _usage(str(error))
    if args.adr is not None and args.adr not in registry.adrs:
        return _usage(f"unknown ADR {args.adr!r}; the registry holds {', '.join(registry.adrs)}")
    kills = None
    if args.mutants is not None:
        try:
            catalogue = load_catalogue(args.catalogue, registry)
            kills = kills_from_matrix(
                json.loads(args.mutants.read_text(encoding="utf-8")), catalogue
            )
        except CatalogueError as error:
            return _usage(str(error))
        except (OSError, UnicodeDecodeError, ValueError) as error:
            return _usage(f"{args.mutants}: not a usable kill matrix: {error}")
    if args.jobs != "auto" and not args.jobs.isdigit():
        return _usage(f"--jobs takes a number or 'auto', not {args.jobs!r}")
    out: Path = args.out
    exitstatus: int | None = None
    if args.from_json is not None:
        if args.tests:
            return _usage("--from-json re-reads a finished run; it takes no test paths")
        source = args.from_json
    else:
        out.mkdir(parents=True, exist_ok=True)
        for stale in (MATRIX_JSON, MATRIX_MARKDOWN):
            (out / stale).unlink(missing_ok=True)
        command = pytest_command(
            out, args.registry, workers=args.jobs, adr=args.adr, tests=list(args.tests)
        )
        print("practice-loop gate: python " + " ".join(command[1:]), file=sys.stderr, flush=True)
        exitstatus = subprocess.run(command, check=False).returncode
        source = out / MATRIX_JSON
        if not source.is_file():
            if exitstatus == PYTEST_USAGE_ERROR:
                return _usage("pytest refused the run (usage error above); no matrix written")
            print(
                f"practice-loop gate: pytest exited with status {exitstatus} and wrote no "
                "matrix; the gate fails",
                file=sys.stderr,
            )
            return 1
    try:
        data = json.loads(source.read_text(encoding="utf-8"))
        results, meta = results_from_matrix(data)
    except (OSError, UnicodeDecodeError, ValueError) as error:
        kind = "not a results file" if isinstance(error, MatrixError) else "cannot read"
        return _usage(f"{source}: {kind}: {error}")
    if exitstatus is None:
        recorded = meta.get("pytest_exitstatus")
        exitstatus = recorded if type(recorded) is int else None
    verdict = evaluate(registry, results, args.adr, kills)
    json_path, md_path = write_matrix(
        out,
        registry,
        results,
        verdict,
        enforced=True,
        context=run_context(Path.cwd()),
        exitstatus=exitstatus,
    )
    for line in verdict_lines(verdict):
        print(line)
    clean_run = exitstatus in (None, 0, 1)
    if not clean_run:
        print(f"  the test run itself ended with pytest exit status {exitstatus}")
    print(f"matrix: {md_path} and {json_path}")
    return 0 if verdict.passed and clean_run else 1
