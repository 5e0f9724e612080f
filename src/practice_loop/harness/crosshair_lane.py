"""The CrossHair lane (issue 6, docs/contracts.md): symbolic checks of the kernel's contracts.

The kernel states its decision rules as PEP 316 docstring conditions (``pre:``/``post:``) on
pure functions. ``run_lane`` runs ``crosshair check`` over the contracted modules, one
process per module, under a per-condition bound (CrossHair's own, in CPU seconds) and a total
bound (wall clock, ours). Every condition is accounted for: confirmed over all paths,
searched to its bound without a counterexample, vacuous (CrossHair met no input satisfying
the preconditions), a counterexample, malformed, or not completed because the total bound
cut its module off. A cut-off run is never reported as a pass.

``diff_behavior`` wraps ``crosshair diffbehavior``: the inputs on which two versions of a
decision function (``compute_budget.v1`` and a candidate) answer differently.

This is shell code: it starts subprocesses and reads source files; the kernel does neither.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import enum
import importlib.util
import os
import re
import subprocess
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from importlib.machinery import PathFinder
from pathlib import Path
from typing import Any

# The kernel modules that carry contracts, most expensive first (so that two workers
# finish together).
KERNEL_CONTRACT_MODULES = (
    "practice_loop.kernel.search_run",
    "practice_loop.kernel.operators",
    "practice_loop.kernel.gate",
    "practice_loop.kernel.frame",
    "practice_loop.kernel.budget",
    "practice_loop.kernel.replay",
    "practice_loop.kernel.proof",
    "practice_loop.kernel.residual",
)

_CONDITION_LINE = re.compile(r"^\s*(pre|post)\s*:\s*(.+?)\s*$")
_REPORT_LINE = re.compile(
    r"^(?P<path>.+?):(?P<line>\d+): (?P<level>error|info|warning): (?P<msg>.*)$"
)


class ConditionStatus(enum.Enum):
    CONFIRMED = "confirmed over all paths"
    SEARCHED = "no counterexample within the per-condition bound"
    VACUOUS = "no input met the preconditions"
    COUNTEREXAMPLE = "counterexample"
    MALFORMED = "malformed condition"
    NOT_COMPLETED = "not completed: the total bound cut the module off"


_FAILING = frozenset({ConditionStatus.COUNTEREXAMPLE, ConditionStatus.MALFORMED})
_INFO_STATUS = {
    "Confirmed over all paths.": ConditionStatus.CONFIRMED,
    "Not confirmed.": ConditionStatus.SEARCHED,
    "Unable to meet precondition.": ConditionStatus.VACUOUS,
}


class LaneOutcome(enum.Enum):
    """The lane's verdict; ``exit_code`` is what ``practice-loop contracts`` returns."""

    HELD = "held"
    COUNTEREXAMPLE = "counterexample"
    INCOMPLETE = "incomplete"
    UNAVAILABLE = "unavailable"

    @property
    def exit_code(self) -> int:
        return {"held": 0, "counterexample": 1, "unavailable": 2, "incomplete": 3}[self.value]


@dataclasses.dataclass(frozen=True, slots=True)
class ConditionReport:
    """One contract condition (or, for an exception CrossHair raised out of a function, the
    line it was raised at) and what the lane learned about it."""

    module: str
    function: str
    path: str
    line: int
    condition: str
    status: ConditionStatus
    message: str

    def __post_init__(self) -> None:
        if type(self.status) is not ConditionStatus or self.line < 1:
            raise ValueError(f"malformed condition report: {self!r}")
        if (self.status in _FAILING) != bool(self.message):
            raise ValueError("a failing condition, and only one, carries CrossHair's message")

    def describe(self) -> str:
        where = f"{self.module}.{self.function} ({Path(self.path).name}:{self.line})"
        text = f" `{self.condition}`" if self.condition else ""
        detail = f": {self.message}" if self.message else ""
        return f"{where}{text}: {self.status.value}{detail}"


@dataclasses.dataclass(frozen=True, slots=True)
class LaneResult:
    """What one run of the lane found. ``counterexamples`` are readable lines naming the
    function, the condition and CrossHair's counterexample; ``not_completed`` names every
    condition the total bound left unanalysed."""

    outcome: LaneOutcome
    conditions: tuple[ConditionReport, ...]
    counterexamples: tuple[str, ...]
    not_completed: tuple[str, ...]
    bound_hit: bool
    output: str
    detail: str = ""

    def __post_init__(self) -> None:
        if type(self.outcome) is not LaneOutcome:
            raise ValueError(f"outcome must be a LaneOutcome, not {self.outcome!r}")
        failing = bool(self.counterexamples)
        if failing != (self.outcome is LaneOutcome.COUNTEREXAMPLE):
            raise ValueError("counterexamples exist exactly when the outcome is counterexample")
        if self.outcome is LaneOutcome.INCOMPLETE and not self.not_completed:
            raise ValueError("an incomplete run names what it did not complete")
        if self.outcome is LaneOutcome.HELD and (self.not_completed or not self.conditions):
            raise ValueError("a run holds only when every condition was analysed")
        if self.outcome is LaneOutcome.HELD and self.count(ConditionStatus.VACUOUS):
            raise ValueError("a run holds only when every condition was checked on some input")

    @property
    def passed(self) -> bool:
        return self.outcome is LaneOutcome.HELD

    def count(self, status: ConditionStatus) -> int:
        return sum(1 for report in self.conditions if report.status is status)


def crosshair_available() -> bool:
    return importlib.util.find_spec("crosshair") is not None


@dataclasses.dataclass(frozen=True, slots=True)
class _Condition:
    function: str
    line: int
    text: str


@dataclasses.dataclass(frozen=True, slots=True)
class _Module:
    name: str
    path: Path
    conditions: tuple[_Condition, ...]
    # (first line, last line, qualified name) of every function, to name a reported line.
    functions: tuple[tuple[int, int, str], ...]

    def function_at(self, line: int) -> str:
        enclosing = [(first, name) for first, last, name in self.functions if first <= line <= last]
        return max(enclosing)[1] if enclosing else "<module>"


def _module_source(name: str, search_path: Sequence[Path]) -> Path:
    spec = (
        PathFinder.find_spec(name, [str(path) for path in search_path])
        if search_path and "." not in name
        else importlib.util.find_spec(name)
    )
    if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
        raise LookupError(f"no Python source for module {name}")
    return Path(spec.origin)


def _read_module(name: str, search_path: Sequence[Path]) -> _Module:
    """The module's postconditions (what CrossHair reports on), read from its docstrings."""
    path = _module_source(name, search_path)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    conditions: list[_Condition] = []
    functions: list[tuple[int, int, str]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                qualified = f"{prefix}{child.name}"
                functions.append((child.lineno, child.end_lineno or child.lineno, qualified))
                first = child.body[0] if child.body else None
                if (
                    isinstance(first, ast.Expr)
                    and isinstance(first.value, ast.Constant)
                    and type(first.value.value) is str
                ):
                    for offset, text in enumerate(first.value.value.splitlines()):
                        found = _CONDITION_LINE.match(text)
                        if found and found.group(1) == "post":
                            line = first.value.lineno + offset
                            conditions.append(_Condition(qualified, line, found.group(2)))

    visit(tree, "")
    return _Module(name, path, tuple(conditions), tuple(functions))


@dataclasses.dataclass(frozen=True, slots=True)
class _ModuleRun:
    module: _Module
    output: str
    reports: tuple[ConditionReport, ...]
    cut_off: bool


def _crosshair_check(
    module: _Module,
    per_condition_seconds: float,
    per_path_seconds: float | None,
    deadline: float,
    env: dict[str, str],
) -> _ModuleRun:
    remaining = deadline - time.monotonic()
    output, cut_off = "", True
    if remaining > 0:
        command = [
            sys.executable,
            "-m",
            "crosshair",
            "check",
            "--analysis_kind=PEP316",
            "--report_all",
            f"--per_condition_timeout={per_condition_seconds}",
            module.name,
        ]
        if per_path_seconds is not None:
            command.insert(-1, f"--per_path_timeout={per_path_seconds}")
        try:
            done = subprocess.run(
                command, capture_output=True, text=True, env=env, timeout=remaining, check=False
            )
            output, cut_off = done.stdout + done.stderr, False
        except subprocess.TimeoutExpired as expired:
            # The child was killed; what it printed before (unbuffered) still counts.
            output = _text(expired.stdout) + _text(expired.stderr)
    return _ModuleRun(module, output, _reports(module, output, cut_off), cut_off)


def _text(value: str | bytes | None) -> str:
    if value is None:
        return ""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def _reports(module: _Module, output: str, cut_off: bool) -> tuple[ConditionReport, ...]:
    by_line = {condition.line: condition for condition in module.conditions}
    reports: dict[tuple[str, int], ConditionReport] = {}
    own = str(module.path.resolve())
    for raw in output.splitlines():
        found = _REPORT_LINE.match(raw)
        if found is None:
            continue
        path = str(Path(found["path"]).resolve())
        line, message, level = int(found["line"]), found["msg"], found["level"]
        if level == "error":
            status = (
                ConditionStatus.COUNTEREXAMPLE
                if " when calling " in message
                else ConditionStatus.MALFORMED
            )
        elif message in _INFO_STATUS:
            status, message = _INFO_STATUS[message], ""
        else:
            continue
        # A report elsewhere (an exception raised in a callee) is kept under its own file.
        known = by_line.get(line) if path == own else None
        previous = reports.get((path, line))
        if previous is not None and previous.status in _FAILING:
            continue
        function = module.function_at(line) if path == own else f"(raised in {path})"
        reports[(path, line)] = ConditionReport(
            module=module.name,
            function=known.function if known else function,
            path=path,
            line=line,
            condition=known.text if known else "",
            status=status,
            message=message,
        )
    vacuous = {
        report.function for report in reports.values() if report.status is ConditionStatus.VACUOUS
    }
    for condition in module.conditions:
        if (own, condition.line) not in reports:
            # CrossHair names an unmeetable precondition's line: the function's postconditions
            # went unchecked for that reason. Any other silence is a run cut off (by the
            # total bound, or CrossHair stopping on the module).
            reports[(own, condition.line)] = ConditionReport(
                module=module.name,
                function=condition.function,
                path=own,
                line=condition.line,
                condition=condition.text,
                status=ConditionStatus.VACUOUS
                if condition.function in vacuous
                else ConditionStatus.NOT_COMPLETED,
                message="",
            )
    return tuple(reports[key] for key in sorted(reports))


def run_lane(
    max_seconds: float,
    per_condition_seconds: float,
    *,
    modules: Sequence[str] = KERNEL_CONTRACT_MODULES,
    search_path: Sequence[Path] = (),
    per_path_seconds: float | None = None,
    jobs: int = 2,
) -> LaneResult:
    """Check every contract of ``modules`` with CrossHair within ``max_seconds`` of wall
    clock in all, each condition searched for at most ``per_condition_seconds`` of CPU.

    ``search_path`` is put in front of ``PYTHONPATH`` for CrossHair (and used to find a
    top-level module's source), so a module outside the project can be checked.
    """
    if max_seconds <= 0 or per_condition_seconds <= 0 or jobs < 1:
        raise ValueError("the bounds must be positive and jobs at least 1")
    if not crosshair_available():
        return LaneResult(
            LaneOutcome.UNAVAILABLE,
            (),
            (),
            (),
            False,
            "",
            "crosshair is not installed: pip install 'practice-loop[test]'",
        )
    parsed = [_read_module(name, search_path) for name in modules]
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env["PYTHONPATH"] = os.pathsep.join(
        [str(path) for path in search_path] + [p for p in [env.get("PYTHONPATH", "")] if p]
    )
    deadline = time.monotonic() + max_seconds
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        runs = list(
            pool.map(
                lambda module: _crosshair_check(
                    module, per_condition_seconds, per_path_seconds, deadline, env
                ),
                parsed,
            )
        )
    conditions = tuple(report for run in runs for report in run.reports)
    counterexamples = tuple(r.describe() for r in conditions if r.status in _FAILING)
    not_completed = tuple(
        r.describe() for r in conditions if r.status is ConditionStatus.NOT_COMPLETED
    )
    bound_hit = any(run.cut_off for run in runs)
    # A vacuous condition was checked on no input at all: not a pass (issue 16 met one, a
    # function whose record argument CrossHair could no longer build within its bound).
    not_completed += tuple(
        f"{r.describe()} (vacuous: no input met the preconditions)"
        for r in conditions
        if r.status is ConditionStatus.VACUOUS
    )
    if counterexamples:
        outcome = LaneOutcome.COUNTEREXAMPLE
    elif not_completed or not conditions:
        outcome = LaneOutcome.INCOMPLETE
        if not not_completed:
            not_completed = tuple(f"{name}: no contract found" for name in modules)
    else:
        outcome = LaneOutcome.HELD
    output = "".join(f"== crosshair check {run.module.name}\n{run.output}" for run in runs)
    return LaneResult(outcome, conditions, counterexamples, not_completed, bound_hit, output)


def summary_lines(result: LaneResult, max_seconds: float, per_condition: float) -> list[str]:
    """The lane's report as ``practice-loop contracts`` prints it."""
    if result.outcome is LaneOutcome.UNAVAILABLE:
        return [f"contracts: {result.detail}"]
    modules = len({report.module for report in result.conditions})
    lines = [
        f"contracts: {len(result.conditions)} conditions in {modules} modules "
        f"(per condition {per_condition:g}s CPU, total {max_seconds:g}s): "
        f"{result.count(ConditionStatus.CONFIRMED)} confirmed over all paths, "
        f"{result.count(ConditionStatus.SEARCHED)} searched without counterexample, "
        f"{result.count(ConditionStatus.VACUOUS)} vacuous, "
        f"{len(result.counterexamples)} failing, {len(result.not_completed)} not completed"
    ]
    lines += [f"COUNTEREXAMPLE {line}" for line in result.counterexamples]
    lines += [
        f"VACUOUS {report.describe()}"
        for report in result.conditions
        if report.status is ConditionStatus.VACUOUS
    ]
    if result.not_completed:
        cause = "the total bound was hit" if result.bound_hit else "CrossHair did not report"
        lines.append(f"INCOMPLETE ({cause}); not analysed:")
        lines += [f"  {line}" for line in result.not_completed]
    lines.append(f"contracts: {result.outcome.value}")
    return lines


# --------------------------------------------------------------------------------------------
# Policy comparison (crosshair diffbehavior)


class DiffOutcome(enum.Enum):
    NO_DIFFERENCE_FOUND = "no_difference_found"
    DIFFERENT = "different"
    UNAVAILABLE = "unavailable"
    FAILED = "failed"

    @property
    def exit_code(self) -> int:
        return {"no_difference_found": 0, "different": 1, "unavailable": 2, "failed": 2}[self.value]


@dataclasses.dataclass(frozen=True, slots=True)
class DiffResult:
    """What ``crosshair diffbehavior`` found between ``old`` and ``new`` within the bound:
    each difference is the input and both answers, as CrossHair printed them."""

    outcome: DiffOutcome
    old: str
    new: str
    differences: tuple[str, ...]
    output: str

    def __post_init__(self) -> None:
        if type(self.outcome) is not DiffOutcome:
            raise ValueError(f"outcome must be a DiffOutcome, not {self.outcome!r}")
        if bool(self.differences) != (self.outcome is DiffOutcome.DIFFERENT):
            raise ValueError("differences exist exactly when the outcome is different")


_DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+")


def diff_behavior(
    old: str,
    new: str,
    max_seconds: float,
    *,
    search_path: Sequence[Path] = (),
) -> DiffResult:
    """The inputs on which ``old`` and ``new`` (dotted ``module.function`` names with the same
    signature) return different values or raise differently, searched for ``max_seconds``
    of CPU (the process is stopped at twice that in wall clock)."""
    for name in (old, new):
        if not _DOTTED.fullmatch(name):
            raise ValueError(f"not a dotted module.function name: {name!r}")
    if max_seconds <= 0:
        raise ValueError("max_seconds must be positive")
    if not crosshair_available():
        missing = "crosshair is not installed: pip install 'practice-loop[test]'"
        return DiffResult(DiffOutcome.UNAVAILABLE, old, new, (), missing)
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env["PYTHONPATH"] = os.pathsep.join(
        [str(path) for path in search_path] + [p for p in [env.get("PYTHONPATH", "")] if p]
    )
    command = [
        sys.executable,
        "-m",
        "crosshair",
        "diffbehavior",
        f"--per_condition_timeout={max_seconds}",
        old,
        new,
    ]
    try:
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            env=env,
            timeout=2 * max_seconds + 30,
            check=False,
        )
        output, code = done.stdout + done.stderr, done.returncode
    except subprocess.TimeoutExpired as expired:
        output, code = _text(expired.stdout) + _text(expired.stderr), None
    differences = _differences(output)
    if differences:
        return DiffResult(DiffOutcome.DIFFERENT, old, new, differences, output)
    if code == 0:
        return DiffResult(DiffOutcome.NO_DIFFERENCE_FOUND, old, new, (), output)
    return DiffResult(DiffOutcome.FAILED, old, new, (), output)


def _differences(output: str) -> tuple[str, ...]:
    """Each ``Given: ...`` block of diffbehavior's report, with the two answers under it."""
    blocks: list[list[str]] = []
    for line in output.splitlines():
        if line.startswith("Given:"):
            blocks.append([line])
        elif blocks and line.startswith(" ") and line.strip():
            blocks[-1].append(line)
    return tuple("\n".join(block) for block in blocks)


# --------------------------------------------------------------------------------------------
# Command line: ``practice-loop contracts`` and ``practice-loop policy-diff``

DEFAULT_MAX_SECONDS = 600.0
DEFAULT_PER_CONDITION_SECONDS = 4.0
DEFAULT_DIFF_SECONDS = 30.0


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be positive: {text!r}")
    return value


def _run_contracts(args: argparse.Namespace) -> int:
    result = run_lane(args.seconds, args.per_condition_seconds, jobs=args.jobs)
    if args.show_output and result.output:
        print(result.output)
    stream = sys.stderr if result.outcome is LaneOutcome.UNAVAILABLE else sys.stdout
    for line in summary_lines(result, args.seconds, args.per_condition_seconds):
        print(line, file=stream)
    return result.outcome.exit_code


def _run_policy_diff(args: argparse.Namespace) -> int:
    try:
        result = diff_behavior(args.old_function, args.new_function, args.seconds)
    except ValueError as error:
        print(f"practice-loop policy-diff: {error}", file=sys.stderr)
        return 2
    if result.outcome is DiffOutcome.DIFFERENT:
        print(f"{args.old_function} and {args.new_function} differ on:")
        for difference in result.differences:
            print(difference)
    elif result.outcome is DiffOutcome.NO_DIFFERENCE_FOUND:
        print(f"no difference found within {args.seconds:g} CPU seconds")
    else:
        detail = result.output.strip() or result.outcome.value
        print(f"practice-loop policy-diff: {detail}", file=sys.stderr)
    return result.outcome.exit_code


def add_subcommands(subparsers: Any) -> None:
    """Add ``contracts`` and ``policy-diff`` to the command line's subparsers."""
    contracts = subparsers.add_parser(
        "contracts",
        help="check the kernel's contracts symbolically with CrossHair",
        description="Run crosshair check over the kernel's contracted modules "
        "(docs/contracts.md). Exit status: 0 every condition was analysed within the bounds and "
        "none failed; 1: a counterexample or a malformed condition (printed); 2: usage "
        "error or crosshair not installed; 3: the total bound cut the run off before every "
        "condition was analysed (they are listed).",
    )
    contracts.add_argument(
        "--seconds",
        type=_positive,
        default=DEFAULT_MAX_SECONDS,
        metavar="S",
        help=f"the whole lane's bound, in wall-clock seconds (default {DEFAULT_MAX_SECONDS:g})",
    )
    contracts.add_argument(
        "--per-condition-seconds",
        type=_positive,
        default=DEFAULT_PER_CONDITION_SECONDS,
        metavar="S",
        help="CrossHair's bound for each condition, in CPU seconds "
        f"(default {DEFAULT_PER_CONDITION_SECONDS:g})",
    )
    contracts.add_argument(
        "-j", "--jobs", type=int, default=2, choices=range(1, 65), metavar="N",
        help="modules checked at once, each in its own process (default 2)",
    )  # fmt: skip
    contracts.add_argument(
        "--show-output", action="store_true", help="also print CrossHair's own report"
    )
    contracts.set_defaults(handler=_run_contracts)

    policy_diff = subparsers.add_parser(
        "policy-diff",
        help="find inputs on which two versions of a decision function differ",
        description="Run crosshair diffbehavior between two functions of the same signature "
        "(dotted module.function names), e.g. practice_loop.kernel.budget.compute_budget_v1 "
        "and a candidate table's function. Exit status: 0 no difference found within the "
        "bound; "
        "1: differing inputs found (printed); 2: usage error or crosshair not installed.",
    )
    policy_diff.add_argument("old_function", metavar="OLD_FUNCTION")
    policy_diff.add_argument("new_function", metavar="NEW_FUNCTION")
    policy_diff.add_argument(
        "--seconds",
        type=_positive,
        default=DEFAULT_DIFF_SECONDS,
        metavar="S",
        help=f"CrossHair's search bound, in CPU seconds (default {DEFAULT_DIFF_SECONDS:g})",
    )
    policy_diff.set_defaults(handler=_run_policy_diff)
