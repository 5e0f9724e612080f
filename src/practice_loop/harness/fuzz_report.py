"""What a fuzz campaign found (issue 7): the records its rounds wrote, merged into one report,
written as JSON, Markdown and JUnit XML, and each minimal failure turned into a regression patch.

The records are the JSON lines ``practice_loop.harness.fuzz_plugin`` appends per test process; a
test that started and never finished is classified here (hung, crashed, or cut off by the
campaign), never counted as passed.
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
import difflib
import enum
import json
import re
import shlex
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from .fuzz_adaptive import AdaptiveSummary
from .fuzz_database import DATABASE_ENV
from .report_context import context_line

REPORT_SCHEMA = "practice-loop.fuzz-report.v2"
REPORT_JSON = "fuzz-report.json"
REPORT_MARKDOWN = "fuzz-report.md"
REPORT_JUNIT = "fuzz-junit.xml"
REGRESSIONS_DIR = "regressions"

# The heading of the note that carries a failing example. A failure is read from Hypothesis's
# observations (``failure_from_observation``); the exception's notes are the fallback, for a
# failing explicit example (observed as given up) and for a release whose observations have
# moved. Every wording is read: "Falsifying [explicit] example" up to 6.158; from 6.159 (the
# "test case" terminology) "Failing test case" and "Failing explicit example".
_FAILING_HEADING = re.compile(
    r"\A(?:Falsifying (?:explicit )?example|Failing (?:test case|explicit example)):[ \t]*\n?"
)
# What a state machine's heading says instead of a call (by Hypothesis 6.170; bare up to at
# least 6.165): its steps follow, one per note.
_STATE_MACHINE_HEADING = "<state machine>"
_BLOB = re.compile(r"@reproduce_failure\('(?P<version>[^']+)', b'(?P<blob>[A-Za-z0-9+/=]*)'\)")
_HANG_MARK = "Timeout ("


class RecordRefusal(enum.Enum):
    MALFORMED_LINE = "malformed_line"
    UNKNOWN_EVENT = "unknown_event"


class RecordError(ValueError):
    """A record file that ``practice_loop.harness.fuzz_plugin`` did not write."""

    def __init__(self, reason: RecordRefusal, detail: str) -> None:
        self.reason = reason
        super().__init__(f"{reason.value}: {detail}")


class RunOutcome(enum.Enum):
    """How one test ended in one round."""

    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"  # its setup or teardown failed
    SKIPPED = "skipped"
    HUNG = "hung"  # ran past the hard timeout; its stacks are in the report
    CRASHED = "crashed"  # its process died while it ran
    CUT_OFF = "cut_off"  # still running when the campaign stopped its round
    NOT_STARTED = "not_started"  # selected, but the round ended before it began
    DATABASE_FAULT = "database_fault"  # the example database failed, not the code under test


FINDINGS = frozenset({RunOutcome.FAILED, RunOutcome.ERROR, RunOutcome.HUNG, RunOutcome.CRASHED})
_RECORDED_OUTCOMES = {"passed", "failed", "error", "skipped"}
_EVENTS = ("collected", "start", "finish", "crash")
_NOT_RUN = (RunOutcome.CUT_OFF, RunOutcome.NOT_STARTED)


class RoundEnding(enum.Enum):
    COMPLETED = "completed"
    CUT_OFF = "cut_off"  # the time budget ended it
    INTERRUPTED = "interrupted"  # Ctrl-C
    PYTEST_ERROR = "pytest_error"  # pytest itself failed (internal error, usage error)


class LaneStatus(enum.Enum):
    PASSED = "passed"
    COUNTEREXAMPLE = "counterexample"
    NOT_RUN = "not_run"
    CUT_OFF = "cut_off"


class CampaignStatus(enum.Enum):
    PASSED = "passed"
    FAILED = "failed"  # a finding: a failing, hung or crashed test, or a counterexample
    INCOMPLETE = "incomplete"  # a fault kept the campaign from doing what it was asked
    INTERRUPTED = "interrupted"


class Fault(enum.Enum):
    """Why a campaign did not do all the work it was asked to do."""

    DATABASE_UNREACHABLE = "database_unreachable"
    DATABASE_FAULT = "database_fault"
    PYTEST_ERROR = "pytest_error"
    RECORDS_UNREADABLE = "records_unreadable"
    NOTHING_COMPLETED = "nothing_completed"
    CROSSHAIR_INCOMPLETE = "crosshair_incomplete"  # not run, or cut off before it finished
    INTERRUPTED = "interrupted"
    WORKER_FAULT = "worker_fault"  # an adaptive worker failed on its own, not by a test


EXIT_STATUS = {
    CampaignStatus.PASSED: 0,
    CampaignStatus.FAILED: 1,
    CampaignStatus.INCOMPLETE: 1,
    CampaignStatus.INTERRUPTED: 130,  # the shell's status for a run ended by SIGINT
}


def _require(condition: bool, detail: str) -> None:
    if not condition:
        raise ValueError(detail)


@dataclasses.dataclass(frozen=True, slots=True)
class FailureExample:
    """One minimal failing example as Hypothesis reported it, with its replay blob."""

    example: str
    version: str | None = None
    blob: str | None = None

    def __post_init__(self) -> None:
        _require(bool(self.example.strip()), "a failing example has text")
        _require((self.version is None) == (self.blob is None), "a blob needs its version")

    @property
    def reproduce_failure(self) -> str | None:
        if self.blob is None:
            return None
        return f"@reproduce_failure({self.version!r}, b{self.blob!r})"

    def to_json(self) -> dict[str, str | None]:
        return {"example": self.example, "version": self.version, "blob": self.blob}


class FailureSource(enum.Enum):
    """Where a test's recorded failures were read."""

    OBSERVABILITY = "observability"  # Hypothesis's observation of each minimal failing case
    NOTES = "notes"  # the fallback: the failing exception's notes


def failure_from_observation(representation: str, decorator: str | None) -> FailureExample:
    """One minimal failing test case as Hypothesis observed it: its representation (a
    state machine's steps, one per line) and its ``@reproduce_failure`` decorator."""
    blob = _BLOB.fullmatch(decorator or "")
    if blob is None:
        return FailureExample(representation)
    return FailureExample(representation, blob["version"], blob["blob"])


def failures_from_notes(notes: Iterable[object]) -> list[FailureExample]:
    """The failing examples in one exception's ``__notes__``: each failing example's heading
    (``Falsifying example`` or, from Hypothesis 6.159, ``Failing test case``) with the
    ``@reproduce_failure`` blob that follows it."""
    found: list[FailureExample] = []
    example: str | None = None
    program: list[str] | None = None  # a state machine's example arrives one step per note
    for note in notes:
        if not isinstance(note, str):
            continue
        head = _FAILING_HEADING.match(note)
        if head is not None:
            if example:
                found.append(FailureExample(example))
            example = note[head.end() :].strip()
            if example == _STATE_MACHINE_HEADING:
                example = ""
            program = None if example else []
            continue
        blob = _BLOB.search(note)
        if blob is not None:
            if example:
                found.append(FailureExample(example, blob["version"], blob["blob"]))
            example, program = None, None
        elif program is not None and _is_statement(note):
            program.append(note)
            example = "\n".join(program)
        else:
            program = None
    if example:
        found.append(FailureExample(example))
    return found


def _is_statement(note: str) -> bool:
    if not note.strip() or note[0].isspace():
        return False
    try:
        ast.parse(note, mode="exec")
    except SyntaxError:
        return False
    return True


@dataclasses.dataclass(frozen=True, slots=True)
class TestRun:
    """One test in one round."""

    __test__ = False  # a record, not a test class for pytest to collect

    nodeid: str
    round: int
    outcome: RunOutcome
    seconds: float = 0.0
    examples: int = 0
    seed: int | None = None
    found_in: str | None = None
    failures: tuple[FailureExample, ...] = ()
    failures_from: FailureSource | None = None
    error: str | None = None
    stacks: str | None = None  # the hard timeout's dump of every thread

    def __post_init__(self) -> None:
        _require(type(self.outcome) is RunOutcome, f"outcome {self.outcome!r}")
        _require(
            self.failures_from is None or type(self.failures_from) is FailureSource,
            f"failures_from {self.failures_from!r}",
        )
        _require(bool(self.nodeid) and self.round >= 1, "a run names its test and round")
        _require(self.examples >= 0 and self.seconds >= 0, "counts are never negative")

    def to_json(self) -> dict[str, Any]:
        return {
            "nodeid": self.nodeid,
            "round": self.round,
            "outcome": self.outcome.value,
            "seconds": round(self.seconds, 3),
            "examples": self.examples,
            "seed": self.seed,
            "found_in": self.found_in,
            "failures": [failure.to_json() for failure in self.failures],
            "failures_from": None if self.failures_from is None else self.failures_from.value,
            "error": self.error,
            "stacks": self.stacks,
        }


def _read_lines(path: Path) -> list[dict[str, Any]]:
    text = path.read_text(encoding="utf-8", errors="replace")
    lines = text.split("\n")
    # A process ended mid-write leaves one unterminated last line: it is not a record.
    complete = lines[:-1]
    records = []
    for number, line in enumerate(complete, start=1):
        if not line:
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise RecordError(RecordRefusal.MALFORMED_LINE, f"{path}:{number}: {error}") from None
        if not isinstance(record, dict) or record.get("event") not in _EVENTS:
            raise RecordError(RecordRefusal.UNKNOWN_EVENT, f"{path}:{number}")
        records.append(record)
    return records


def read_round(record_dir: Path, round_number: int, *, stopped: bool) -> list[TestRun]:
    """Every test run of one round. ``stopped``: the campaign ended the round itself, so a
    test still running then was cut off, not crashed."""
    runs: list[TestRun] = []
    crashed: set[str] = set()
    collected: dict[str, None] = {}
    started: set[str] = set()
    unfinished: list[tuple[str, int | None, Path]] = []
    for path in sorted(record_dir.glob("*.jsonl")) if record_dir.is_dir() else []:
        open_tests: dict[str, int | None] = {}  # started, not finished: node id -> seed
        for record in _read_lines(path):
            nodeid = str(record.get("nodeid"))
            if record["event"] == "collected":
                collected.update(dict.fromkeys(map(str, record.get("nodeids", []))))
            elif record["event"] == "crash":
                crashed.add(nodeid)
            elif record["event"] == "start":
                open_tests[nodeid] = record.get("seed")
                started.add(nodeid)
            else:
                open_tests.pop(nodeid, None)
                runs.append(_finished_run(record, round_number))
        unfinished.extend((nodeid, seed, path) for nodeid, seed in open_tests.items())
    for nodeid, seed, path in unfinished:
        hang = path.with_suffix(".hang")
        stacks = hang.read_text(errors="replace") if hang.is_file() else ""
        if _HANG_MARK in stacks:
            outcome = RunOutcome.HUNG
        elif nodeid in crashed or not stopped:
            outcome = RunOutcome.CRASHED
        else:
            outcome = RunOutcome.CUT_OFF
        runs.append(
            TestRun(nodeid, round_number, outcome, seed=seed, stacks=stacks.strip() or None)
        )
    runs += [
        TestRun(nodeid, round_number, RunOutcome.NOT_STARTED)
        for nodeid in collected
        if nodeid not in started
    ]
    return runs


def _finished_run(record: dict[str, Any], round_number: int) -> TestRun:
    outcome = str(record.get("outcome"))
    if outcome not in _RECORDED_OUTCOMES:
        raise RecordError(RecordRefusal.MALFORMED_LINE, f"outcome {outcome!r}")
    if record.get("database_fault"):
        kind = RunOutcome.DATABASE_FAULT
    else:
        kind = RunOutcome(outcome)
    failures = tuple(
        FailureExample(f["example"], f.get("version"), f.get("blob"))
        for f in record.get("failures", [])
    )
    source = record.get("failures_from")
    if source is not None and source not in {member.value for member in FailureSource}:
        raise RecordError(RecordRefusal.MALFORMED_LINE, f"failures_from {source!r}")
    return TestRun(
        nodeid=str(record["nodeid"]),
        round=round_number,
        outcome=kind,
        seconds=float(record.get("seconds", 0.0)),
        examples=int(record.get("examples", 0)),
        seed=record.get("seed"),
        found_in=record.get("found_in"),
        failures=failures,
        failures_from=None if source is None else FailureSource(source),
        error=record.get("error"),
    )


# ---------------------------------------------------------------------------------------------
# Reproduction commands


def reproduce_command(nodeid: str, profile: str, failure: FailureExample) -> str | None:
    """A command that replays exactly this minimal example and fails on its own: no database,
    no search, one example (``--fuzz-reproduce`` applies the ``@reproduce_failure`` blob)."""
    if failure.blob is None:
        return None
    return shlex.join(
        [
            "python",
            "-m",
            "pytest",
            nodeid,
            "-p",
            "practice_loop.harness.fuzz_plugin",
            f"--hypothesis-profile={profile}",
            f"--fuzz-reproduce={failure.version}:{failure.blob}",
        ]
    )


def rerun_command(
    nodeid: str, profile: str, run: TestRun, max_examples: int, timeout: float
) -> str:
    """A command that repeats the round's search for one test from its seed, with the same
    examples cap and hard timeout (for hung and crashed tests, which leave no blob)."""
    command = ["python", "-m", "pytest", nodeid, "-p", "practice_loop.harness.fuzz_plugin"]
    command += [f"--hypothesis-profile={profile}", f"--fuzz-max-examples={max_examples}"]
    if run.seed is not None:
        command.append(f"--fuzz-seed={run.seed}")
    if timeout > 0:
        command.append(f"--fuzz-timeout={timeout:g}")
    return shlex.join(command)


def replay_from_database_command(nodeid: str, profile: str, database: str) -> str:
    """A command that replays, from the campaign's example database, the failure an adaptive
    worker saved for one test (``fuzz_one_input`` writes it where pytest's run of the test
    looks), then shrinks it and prints the minimal example."""
    command = [f"{DATABASE_ENV}={database}", "python", "-m", "pytest", nodeid]
    command += ["-p", "practice_loop.harness.fuzz_plugin", f"--hypothesis-profile={profile}"]
    return shlex.join(command + ["--fuzz-max-examples=1"])


# ---------------------------------------------------------------------------------------------
# The campaign's report


@dataclasses.dataclass(frozen=True, slots=True)
class RoundSummary:
    number: int
    max_examples: int
    started: float  # seconds after the campaign started
    seconds: float
    ending: RoundEnding
    pytest_status: int | None
    log: str

    def __post_init__(self) -> None:
        _require(type(self.ending) is RoundEnding, f"ending {self.ending!r}")
        _require(self.number >= 1 and self.max_examples >= 1, "rounds count from 1")


@dataclasses.dataclass(frozen=True, slots=True)
class LaneSummary:
    status: LaneStatus
    reason: str
    seconds: float = 0.0
    command: str | None = None
    log: str | None = None

    def __post_init__(self) -> None:
        _require(type(self.status) is LaneStatus, f"status {self.status!r}")


@dataclasses.dataclass(frozen=True, slots=True)
class CampaignReport:
    profile: str
    workers: int
    cores: int
    budget_seconds: float
    elapsed_seconds: float
    rounds_seconds: float
    database: str
    read_only: bool
    replay: str | None
    selection: tuple[str, ...]
    test_timeout: float
    rounds: tuple[RoundSummary, ...]
    runs: tuple[TestRun, ...]
    crosshair: LaneSummary
    cpu_seconds: float
    faults: tuple[tuple[Fault, str], ...]
    started_at: str
    context: dict[str, str]  # the commit and the tools' versions (report_context)
    engine: str = "rounds"
    adaptive: AdaptiveSummary | None = None  # the adaptive engine's search
    charts: tuple[str, ...] = ()  # its SVG charts

    def __post_init__(self) -> None:
        _require(self.workers >= 0 and self.cores >= 1, "workers and cores")
        _require(all(type(f) is Fault for f, _ in self.faults), "faults are Fault values")

    @property
    def findings(self) -> tuple[TestRun, ...]:
        return tuple(run for run in self.runs if run.outcome in FINDINGS)

    @property
    def status(self) -> CampaignStatus:
        if any(fault is Fault.INTERRUPTED for fault, _ in self.faults):
            return CampaignStatus.INTERRUPTED
        searched = self.adaptive is not None and (self.adaptive.findings or self.adaptive.losses)
        if self.findings or searched or self.crosshair.status is LaneStatus.COUNTEREXAMPLE:
            return CampaignStatus.FAILED
        if self.faults:
            return CampaignStatus.INCOMPLETE
        return CampaignStatus.PASSED

    @property
    def exit_status(self) -> int:
        return EXIT_STATUS[self.status]

    @property
    def busy_share(self) -> float:
        """CPU time of the test processes over the cores' time during the rounds."""
        available = self.rounds_seconds * self.cores
        return self.cpu_seconds / available if available > 0 else 0.0

    def max_examples_of(self, round_number: int) -> int:
        return next(r.max_examples for r in self.rounds if r.number == round_number)

    def per_test(self) -> list[dict[str, Any]]:
        by_test: dict[str, list[TestRun]] = {}
        for run in self.runs:
            by_test.setdefault(run.nodeid, []).append(run)
        tests = []
        for nodeid, runs in sorted(by_test.items()):
            finished = [r for r in runs if r.outcome not in _NOT_RUN]
            examples = sum(r.examples for r in finished)
            seconds = sum(r.seconds for r in finished)
            tests.append(
                {
                    "nodeid": nodeid,
                    "runs": len(finished),
                    "cut_off": sum(1 for r in runs if r.outcome is RunOutcome.CUT_OFF),
                    "not_started": sum(1 for r in runs if r.outcome is RunOutcome.NOT_STARTED),
                    "examples": examples,
                    "seconds": round(seconds, 3),
                    "examples_per_second": round(examples / seconds, 1) if seconds > 0 else None,
                    "seeds": [r.seed for r in runs if r.seed is not None],
                    "outcomes": {
                        o.value: n
                        for o in RunOutcome
                        if (n := sum(1 for r in runs if r.outcome is o))
                    },
                    "failures": [self._failure_json(group) for group in _distinct(runs)],
                }
            )
        return tests

    def _failure_json(self, group: list[TestRun]) -> dict[str, Any]:
        run = group[0]
        examples = [
            {
                "minimal_example": failure.example,
                "reproduce_failure": failure.reproduce_failure,
                "command": reproduce_command(run.nodeid, self.profile, failure),
            }
            for failure in run.failures
        ]
        return {
            "round": run.round,
            "outcome": run.outcome.value,
            "seed": run.seed,
            "rounds": [r.round for r in group],
            "seeds": [r.seed for r in group],
            "found_in": run.found_in,
            "error": run.error,
            "stacks": run.stacks,
            "examples": examples,
            "examples_from": None if run.failures_from is None else run.failures_from.value,
            "rerun_command": rerun_command(
                run.nodeid,
                self.profile,
                run,
                self.max_examples_of(run.round),
                self.test_timeout,
            ),
        }

    def to_json(self) -> dict[str, Any]:
        finished = [r for r in self.runs if r.outcome not in _NOT_RUN]
        tests = self.per_test()
        return {
            "schema": REPORT_SCHEMA,
            "engine": self.engine,
            "status": self.status.value,
            "exit_status": self.exit_status,
            "started_at": self.started_at,
            "context": dict(self.context),
            "profile": self.profile,
            "workers": self.workers,
            "cores": self.cores,
            "budget_seconds": self.budget_seconds,
            "elapsed_seconds": round(self.elapsed_seconds, 3),
            "rounds_seconds": round(self.rounds_seconds, 3),
            "database": {"spec": self.database, "read_only": self.read_only, "replay": self.replay},
            "selection": list(self.selection),
            "test_timeout_seconds": self.test_timeout,
            "totals": {
                "rounds": len(self.rounds),
                "test_runs": len(finished),
                "tests_never_run": sum(1 for test in tests if test["runs"] == 0),
                "examples": sum(r.examples for r in finished),
                "findings": sum(len(test["failures"]) for test in tests),
                "cpu_seconds": round(self.cpu_seconds, 3),
                "busy_share": round(self.busy_share, 4),
                "search_examples": self.adaptive.examples if self.adaptive is not None else 0,
                "search_findings": len(self.adaptive.findings) if self.adaptive else 0,
                "search_losses": len(self.adaptive.losses) if self.adaptive else 0,
            },
            "adaptive": None
            if self.adaptive is None
            else {
                **self.adaptive.to_json(),
                "charts": list(self.charts),
                "replay_commands": {
                    finding.nodeid: replay_from_database_command(
                        finding.nodeid, self.profile, self.database
                    )
                    for finding in self.adaptive.findings
                },
            },
            "rounds": [
                {
                    "number": r.number,
                    "max_examples": r.max_examples,
                    "started": round(r.started, 3),
                    "seconds": round(r.seconds, 3),
                    "ending": r.ending.value,
                    "pytest_status": r.pytest_status,
                    "log": r.log,
                }
                for r in self.rounds
            ],
            "tests": tests,
            "crosshair": {
                "status": self.crosshair.status.value,
                "reason": self.crosshair.reason,
                "seconds": round(self.crosshair.seconds, 3),
                "command": self.crosshair.command,
                "log": self.crosshair.log,
            },
            "faults": [{"fault": fault.value, "detail": detail} for fault, detail in self.faults],
        }


def _distinct(runs: Iterable[TestRun]) -> list[list[TestRun]]:
    """The findings among ``runs``, one group per distinct failure (its outcome and minimal
    examples, or its error), in the order first seen."""
    groups: dict[tuple[object, ...], list[TestRun]] = {}
    for run in runs:
        if run.outcome in FINDINGS:
            shape = tuple(f.example for f in run.failures) or (run.error,)
            groups.setdefault((run.outcome, shape), []).append(run)
    return list(groups.values())


# ---------------------------------------------------------------------------------------------
# Writers


def write_json(report: CampaignReport, out: Path) -> Path:
    path = out / REPORT_JSON
    path.write_text(json.dumps(report.to_json(), indent=2, sort_keys=True) + "\n")
    return path


def _found_by(finding: Any) -> str:
    if finding.how == "generated":
        return "Hypothesis's generation"
    if finding.how == "database":
        return "the test's database, replayed"
    return f"fuzz input of {len(finding.input_hex) // 2} bytes"


def _md(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def write_markdown(report: CampaignReport, out: Path) -> Path:
    data = report.to_json()
    totals = data["totals"]
    lines = [
        "# Fuzz campaign",
        "",
        f"**{report.status.value.upper()}** (exit {report.exit_status}): "
        f"{totals['findings']} finding(s) in {totals['rounds']} round(s), "
        f"{totals['test_runs']} test runs, {totals['examples']:,} examples"
        + (
            f" (and {totals['search_examples']:,} in the adaptive search)"
            if report.adaptive is not None
            else ""
        )
        + ", "
        f"{totals['tests_never_run']} selected test(s) never ran to their end, "
        f"{report.elapsed_seconds:.0f} s of a {report.budget_seconds:.0f} s budget.",
        "",
        f"- profile `{report.profile}`, {report.workers} worker(s) on {report.cores} core(s), "
        f"cores kept busy {report.busy_share:.0%}",
        f"- made with {context_line(report.context)}",
        f"- example database `{report.database}`"
        + (" (read-only)" if report.read_only else "")
        + (f", replaying `{report.replay}` read-only" if report.replay else ""),
        f"- CrossHair lane: {report.crosshair.status.value} ({_md(report.crosshair.reason)})",
    ]
    for fault, detail in report.faults:
        lines.append(f"- fault `{fault.value}`: {_md(detail)}")
    if report.adaptive is not None:
        lines += _adaptive_markdown(report, data["adaptive"], out)
    lines += ["", "## Findings", ""]
    if not report.findings:
        lines.append("None.")
    for test in data["tests"]:
        for failure in test["failures"]:
            lines += [
                f"### `{test['nodeid']}`: {failure['outcome']}",
                "",
                f"- rounds {', '.join(map(str, failure['rounds']))}; seed {failure['seed']}"
                + (
                    ", replayed from the example database" if failure["found_in"] == "reuse" else ""
                ),
            ]
            if failure["error"]:
                lines.append(f"- error: `{_md(failure['error'][:300])}`")
            for example in failure["examples"]:
                lines += ["", "```python", example["minimal_example"], "```"]
                if example["command"]:
                    lines += [
                        "",
                        "Reproduce (fails on its own):",
                        "",
                        "```sh",
                        example["command"],
                        "```",
                    ]
            if not failure["examples"]:
                lines += [
                    "",
                    "Repeat the round's search:",
                    "",
                    "```sh",
                    failure["rerun_command"],
                    "```",
                ]
            if failure["stacks"]:
                lines += ["", "<details><summary>stacks at the timeout</summary>", "", "```"]
                lines += [failure["stacks"], "```", "</details>"]
            lines.append("")
    lines += [
        "",
        "## Examples per second",
        "",
        "| test | runs | examples | examples/s |",
        "|---|---|---|---|",
    ]
    for test in data["tests"]:
        rate = test["examples_per_second"]
        lines.append(
            f"| `{_md(test['nodeid'])}` | {test['runs']} | {test['examples']} | "
            f"{rate if rate is not None else '-'} |"
        )
    path = out / REPORT_MARKDOWN
    path.write_text("\n".join(lines) + "\n")
    return path


ADAPTIVE_ROWS = 40


def _adaptive_markdown(report: CampaignReport, data: dict[str, Any], out: Path) -> list[str]:
    """The adaptive search: what it found, its charts, its workers and its busiest rows."""
    summary = report.adaptive
    assert summary is not None
    lines = [
        "",
        "## Adaptive search",
        "",
        f"{len(summary.collected)} properties on {len(summary.workers)} worker(s) for "
        f"{summary.seconds:.0f} s: {summary.examples:,} examples, {len(summary.findings)} "
        f"failure(s), {len(summary.losses)} hung or crashed test(s)"
        + (", interrupted" if summary.interrupted else "")
        + ". The confirmation round below replays each failure from the example database "
        "and shrinks it once.",
        "",
    ]
    for chart in report.charts:
        path = Path(chart)
        shown = path.relative_to(out) if path.is_relative_to(out) else path
        lines += [f"![{path.stem}]({shown.as_posix()})", ""]
    lines += ["| worker | seeds (first, then each restart) |", "|---|---|"]
    lines += [f"| {w.index} | {', '.join(map(str, w.seeds))} |" for w in summary.workers]
    if summary.findings:
        lines += ["", "| property | failure | at s | found by | replay from the database |"]
        lines.append("|---|---|---|---|---|")
        for finding in summary.findings:
            command = data["replay_commands"][finding.nodeid]
            known = " (known)" if finding.known else ""
            lines.append(
                f"| `{_md(finding.nodeid)}` | {_md(finding.origin)}{known} | "
                f"{finding.seconds:.1f} | {_found_by(finding)} | `{_md(command)}` |"
            )
    for loss in summary.losses:
        lines.append(f"- `{_md(loss.nodeid)}` {loss.outcome} its worker: {_md(loss.detail)}")
    for nodeid, why in summary.unfuzzable:
        lines.append(f"- `{_md(nodeid)}` runs only in the confirmation round: {_md(why)}")
    rows = sorted(summary.properties, key=lambda p: (-p.discoveries, -p.examples))
    lines += [
        "",
        f"| property (the {ADAPTIVE_ROWS} with the most discoveries) | examples | valid | "
        "examples/s | s | discoveries | new in the last minute | findings |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for prop in rows[:ADAPTIVE_ROWS]:
        rate = f"{prop.examples / prop.seconds:.0f}" if prop.seconds > 0 else "-"
        lines.append(
            f"| `{_md(prop.nodeid)}` | {prop.examples} | {prop.valid} | {rate} | "
            f"{prop.seconds:.1f} | {prop.discoveries} | {prop.recent_discoveries} | "
            f"{prop.findings} |"
        )
    return lines


def junit_names(nodeid: str) -> tuple[str, str]:
    """A test's ``classname`` and ``name`` as pytest's own JUnit XML spells them: the file's
    dotted path and any classes, then the function with its parameters."""
    path, bracket, parameters = nodeid.partition("[")
    names = path.split("::")
    names[0] = re.sub(r"\.py$", "", names[0].replace("/", "."))
    return ".".join(names[:-1]), names[-1] + bracket + parameters


def write_junit(report: CampaignReport, out: Path) -> Path:
    """``fuzz-junit.xml``, valid against the junit-10.xsd pytest's JUnit XML follows, with
    pytest's test names: one test case per test, the CrossHair lane and each fault."""
    from junitparser import Error, Failure, JUnitXml, Skipped, TestCase, TestSuite

    data = report.to_json()
    suite = TestSuite("practice-loop fuzz")
    suite.time = round(report.elapsed_seconds, 3)
    suite.timestamp = report.started_at
    for name, value in (
        ("profile", report.profile),
        ("database", report.database),
        ("status", report.status.value),
        ("busy_share", f"{report.busy_share:.4f}"),
    ):
        suite.add_property(name, str(value))
    for test in data["tests"]:
        classname, name = junit_names(test["nodeid"])
        case = TestCase(name, classname=classname, time=round(test["seconds"], 3))
        results: list[Any] = []
        for failure in test["failures"]:
            kind = Failure if failure["outcome"] == "failed" else Error
            body = [failure["error"] or "", *(e["minimal_example"] for e in failure["examples"])]
            body += [e["command"] or "" for e in failure["examples"]] or [failure["rerun_command"]]
            if failure["stacks"]:
                body.append(failure["stacks"])
            result = kind(f"{failure['outcome']} in round {failure['round']}")
            result.text = "\n\n".join(part for part in body if part)
            results.append(result)
        if not test["runs"]:
            results.append(Skipped("never ran to its end within the time budget"))
        case.result = results
        # Per-test figures go in its output: junit-10.xsd has no properties in a test case.
        seeds = " ".join(map(str, test["seeds"]))
        case.system_out = f"examples: {test['examples']}\nseeds: {seeds}"
        suite.add_testcase(case)
    lane = TestCase("contracts", classname="crosshair")
    if report.crosshair.status is LaneStatus.COUNTEREXAMPLE:
        lane.result = [Failure(report.crosshair.reason)]
    elif report.crosshair.status is not LaneStatus.PASSED:
        lane.result = [Skipped(f"{report.crosshair.status.value}: {report.crosshair.reason}")]
    suite.add_testcase(lane)
    for fault, detail in report.faults:
        case = TestCase(fault.value, classname="campaign")
        case.result = [Error(detail)]
        suite.add_testcase(case)
    suite.update_statistics()
    # The counts stay on the suite: junit-10.xsd allows no `skipped` on <testsuites>, which
    # junitparser's own statistics of the whole file would add.
    document = JUnitXml("practice-loop fuzz")
    document.add_testsuite(suite)
    path = out / REPORT_JUNIT
    document.write(str(path), pretty=True)
    return path


# ---------------------------------------------------------------------------------------------
# Regression patches


class PatchRefusal(enum.Enum):
    NOT_A_FILE = "not_a_file"
    TEST_NOT_FOUND = "test_not_found"
    NOT_A_CALL = "not_a_call"
    NO_GIVEN = "no_given"


@dataclasses.dataclass(frozen=True, slots=True)
class Regression:
    """One minimal example to pin as a regression on the test that found it."""

    nodeid: str
    example: str


@dataclasses.dataclass(frozen=True, slots=True)
class RegressionPatch:
    """A unified diff that ``git apply`` takes, for one test file."""

    path: str
    diff: str
    regressions: tuple[Regression, ...]
    unresolved_names: tuple[str, ...]  # names the examples use that the module does not bind
    refused: tuple[tuple[Regression, PatchRefusal], ...]


def _module_names(tree: ast.Module) -> set[str]:
    names = set(dir(builtins))
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
    return names


def _free_names(code: str, mode: str) -> set[str]:
    tree = ast.parse(code, mode=mode)
    bound = {
        n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }
    loaded = {
        n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
    }
    return loaded - bound


def _find_definition(tree: ast.Module, parts: Sequence[str]) -> ast.AST | None:
    scope: Sequence[ast.stmt] = tree.body
    found: ast.AST | None = None
    for part in parts:
        found = next(
            (
                node
                for node in scope
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                and node.name == part
            ),
            None,
        )
        if found is None:
            return None
        scope = found.body  # type: ignore[attr-defined]
    return found


def _is_given(decorator: ast.expr) -> bool:
    call = decorator.func if isinstance(decorator, ast.Call) else decorator
    return (isinstance(call, ast.Name) and call.id == "given") or (
        isinstance(call, ast.Attribute) and call.attr == "given"
    )


def _indent(text: str, prefix: str) -> list[str]:
    return [prefix + line if line.strip() else line for line in text.splitlines()]


def _example_decorator(regression: Regression, indent: str) -> list[str] | PatchRefusal:
    try:
        call = ast.parse(regression.example, mode="eval").body
    except SyntaxError:
        return PatchRefusal.NOT_A_CALL
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)):
        return PatchRefusal.NOT_A_CALL
    # Hypothesis prints the example as a call of the test; the same arguments, given to
    # @example, pin it. Keep its text (and its comments) after the test's name.
    text = "example" + regression.example[len(call.func.id) :]
    return _indent(text, indent)


def _machine_regression(
    regression: Regression, machine: ast.ClassDef, name: str
) -> list[str] | PatchRefusal:
    try:
        ast.parse(regression.example, mode="exec")
    except SyntaxError:
        return PatchRefusal.NOT_A_CALL
    invariants = [
        node.name
        for node in machine.body
        if isinstance(node, ast.FunctionDef)
        and any(
            isinstance(d, ast.Call)
            and getattr(d.func, "id", getattr(d.func, "attr", "")) == "invariant"
            for d in node.decorator_list
        )
    ]
    body: list[str] = []
    for step in regression.example.splitlines():
        body.append(step)
        if step.strip() and not step.startswith("state.teardown("):
            body.extend(f"state.{invariant}()" for invariant in invariants)
    lines = [
        "",
        "",
        f"def {name}():",
        '    """Regression from a fuzz campaign (issue 7): the minimal failing program of',
        f'    {machine.name}, every invariant checked after each step."""',
    ]
    return lines + _indent("\n".join(body), "    ")


def _add_example_import(tree: ast.Module, lines: list[str]) -> None:
    for node in tree.body:
        if (
            isinstance(node, ast.ImportFrom)
            and node.module == "hypothesis"
            and node.level == 0
            and node.lineno == node.end_lineno
            and all(a.asname is None for a in node.names)
        ):
            names = sorted({a.name for a in node.names} | {"example"}, key=str.lower)
            lines[node.lineno - 1] = f"from hypothesis import {', '.join(names)}"
            return
    imports = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    at = imports[-1].end_lineno if imports else 0
    lines.insert(at or 0, "from hypothesis import example")


def _slug(text: str) -> str:
    return re.sub(r"[^0-9a-zA-Z]+", "_", text).strip("_").lower()


def regression_patch(root: Path, path: str, regressions: Sequence[Regression]) -> RegressionPatch:
    """Pin each regression on its test in the file ``path`` (relative to ``root``): an
    ``@example(...)`` under the ``@given`` of a property, a step-by-step test function for a
    state machine's failing program."""
    source_path = root / path
    refused: list[tuple[Regression, PatchRefusal]] = []
    if not source_path.is_file():
        return RegressionPatch(
            path,
            "",
            tuple(regressions),
            (),
            tuple((r, PatchRefusal.NOT_A_FILE) for r in regressions),
        )
    before = source_path.read_text(encoding="utf-8")
    tree = ast.parse(before)
    lines = before.splitlines()
    insertions: list[tuple[int, list[str]]] = []  # (index to insert before, lines)
    appended: list[str] = []
    names = _module_names(tree)
    unresolved: set[str] = set()
    uses_example = False
    for number, regression in enumerate(dict.fromkeys(regressions), start=1):
        parts = re.sub(r"\[.*\]$", "", regression.nodeid.partition("::")[2]).split("::")
        definition = _find_definition(tree, parts)
        machine_name = None
        if isinstance(definition, ast.FunctionDef) and definition.name == "runTest":
            definition = None
        if definition is None or isinstance(definition, ast.ClassDef):
            # A state machine test: `TestX = XMachine.TestCase`, collected as TestX::runTest.
            machine_name = regression.example.partition("state = ")[2].partition("(")[0]
            definition = _find_definition(tree, [machine_name]) if machine_name else None
        if definition is None:
            refused.append((regression, PatchRefusal.TEST_NOT_FOUND))
            continue
        if isinstance(definition, ast.ClassDef):
            name = f"test_regression_{_slug(definition.name)}_{number}"
            added = _machine_regression(regression, definition, name)
            mode = "exec"
        else:
            given = [d for d in definition.decorator_list if _is_given(d)]  # type: ignore[union-attr]
            if not given:
                refused.append((regression, PatchRefusal.NO_GIVEN))
                continue
            # The decorator's expression starts one column right of its "@".
            added = _example_decorator(regression, " " * (given[0].col_offset - 1))
            mode = "eval"
        if isinstance(added, PatchRefusal):
            refused.append((regression, added))
            continue
        code = regression.example
        if mode == "eval":
            unresolved |= _free_names(code, "eval") - names - {code.partition("(")[0]}
            added[0] = added[0].replace("example", "@example", 1)
            insertions.append((given[0].end_lineno, added))
            uses_example = True
        else:
            unresolved |= _free_names(code, "exec") - names
            appended += added
    for index, added in sorted(insertions, key=lambda item: item[0], reverse=True):
        lines[index:index] = added
    lines += appended
    if uses_example and "example" not in names:
        _add_example_import(tree, lines)
    after = "\n".join(lines) + "\n"
    diff = "".join(
        difflib.unified_diff(
            before.splitlines(keepends=True),
            after.splitlines(keepends=True),
            fromfile=f"a/{path}",
            tofile=f"b/{path}",
        )
    )
    return RegressionPatch(
        path, diff, tuple(regressions), tuple(sorted(unresolved)), tuple(refused)
    )


def write_regressions(report: CampaignReport, root: Path, out: Path) -> list[RegressionPatch]:
    """One patch per test file, for every distinct minimal example the campaign found."""
    by_file: dict[str, list[Regression]] = {}
    for run in report.findings:
        for failure in run.failures:
            path = run.nodeid.partition("::")[0]
            by_file.setdefault(path, []).append(Regression(run.nodeid, failure.example))
    patches = []
    folder = out / REGRESSIONS_DIR
    for path, regressions in sorted(by_file.items()):
        patch = regression_patch(root, path, regressions)
        patches.append(patch)
        if patch.diff:
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"{_slug(path)}.patch").write_text(patch.diff)
    return patches
