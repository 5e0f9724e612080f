"""``practice-loop fuzz``: a bounded, parallel, reproducible fuzz campaign (issues 7, 19).

The default engine (``--engine adaptive``, issue 19) keeps one long-lived worker per core
(``fuzz_adaptive``, ``fuzz_worker``): each collects the Hypothesis tests once and gives its
time to the properties still finding new behaviour. The tests that failed, hung or crashed
there, and those the workers cannot run in-process, then get one pytest round (the
confirmation round below) that replays each failure from the example database and shrinks
it once; its records are the report's findings, as with the other engine. The report adds
the search's per-property table, its SVG charts and every worker's seed.

The round-robin engine (``--engine rounds``, issue 7) runs rounds of the property and
state-machine suite (``python -m pytest -n N -p
practice_loop.harness.fuzz_plugin``, Hypothesis tests only) under the ``nightly`` profile, each with
fresh seeds and twice the examples of the round before (up to the profile's own), until its
share of the time budget is spent; then the CrossHair lane (``python -m practice_loop
contracts``) for the rest. A round still running at its deadline is stopped as Ctrl-C would
stop it, and the tests it was running count as cut off, not passed. Reports go to ``--out``:
``fuzz-report.json``, ``fuzz-report.md``, ``fuzz-junit.xml`` and each round's pytest log;
``--write-regressions`` adds one ``git apply`` patch per test file pinning every minimal
failing example. docs/nightly-fuzzing.md explains the cycle.

Exit status: 0 when nothing failed; 1 when a test failed, hung or crashed, CrossHair found a
counterexample, or a fault kept the campaign from its work (reports written either way); 2 for
a usage error; 130 when interrupted (Ctrl-C), after writing the reports.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import importlib.util
import os
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from .fuzz_adaptive import AdaptiveSummary, LiveTable, WorkerLoss, WorkerRefused, run_search
from .fuzz_charts import write_charts
from .fuzz_database import (
    DATABASE_ENV,
    DEFAULT_DATABASE,
    READ_ONLY_ENV,
    REPLAY_ENV,
    DatabaseError,
    DatabaseKind,
    DatabaseSpec,
    check_reachable,
    environment_for,
    parse_database_spec,
    writable,
)
from .fuzz_report import (
    FINDINGS,
    CampaignReport,
    Fault,
    LaneStatus,
    LaneSummary,
    RecordError,
    RoundEnding,
    RoundSummary,
    RunOutcome,
    TestRun,
    read_round,
    write_json,
    write_junit,
    write_markdown,
    write_regressions,
)
from .report_context import run_context

DEFAULT_OUT = Path("fuzz-report")
DEFAULT_PROFILE = "nightly"
DEFAULT_MINUTES = 10.0
DEFAULT_TEST_TIMEOUT = 300.0
DEFAULT_CROSSHAIR_SHARE = 0.1
DEFAULT_FIRST_EXAMPLES = 25
CROSSHAIR_MODULE = "practice_loop.harness.crosshair_lane"
# `practice-loop contracts` (issue 6): exit 3 when its total bound cut it off; at most 64 jobs.
CROSSHAIR_CUT_OFF = 3
CROSSHAIR_MAX_JOBS = 64
# Seconds a stopped round (SIGINT, as Ctrl-C) gets to end before its processes are killed.
STOP_GRACE_SECONDS = 3.0
# Seconds kept back at the end of the budget for starting the lane and writing the reports.
CLOSING_SECONDS = 2.0
POLL_SECONDS = 0.2
ENGINES = ("adaptive", "rounds")
# The end of the search kept for the confirmation round, when a test needs it: this share
# of the search's time, within these bounds, and never more than half of it; more for each
# worker the search lost (confirmation_reserve).
CONFIRM_SHARE = 0.2
CONFIRM_MIN_SECONDS = 12.0
CONFIRM_MAX_SECONDS = 120.0
PYTEST_USAGE_ERROR = 4
PYTEST_NO_TESTS = 5
_PYTEST_CLEAN = (0, 1)  # all passed / some failed: pytest itself worked


class UsageProblem(ValueError):
    """A campaign that cannot start as asked (exit status 2)."""


def add_subcommand(subparsers: Any) -> argparse.ArgumentParser:
    fuzz = subparsers.add_parser(
        "fuzz",
        help="run a time-boxed fuzz campaign over the property and state-machine suite",
        description="Fuzz the Hypothesis suite for a fixed time on every core with fresh "
        "seeds and a persistent example database, then run the CrossHair lane; write JSON, "
        "Markdown and JUnit XML reports with a reproduction command for each failure. Exit "
        "status: 0 nothing failed and every selected test ran; 1 a finding, or a fault kept "
        "the campaign from its work (both in the report); 2 a usage error; 130 interrupted "
        "(the reports of what ran are kept).",
    )
    fuzz.add_argument(
        "--minutes",
        type=float,
        default=DEFAULT_MINUTES,
        metavar="M",
        help="the budget in wall-clock minutes, rounds and CrossHair together "
        f"(default {DEFAULT_MINUTES:g})",
    )
    fuzz.add_argument(
        "-j",
        "--jobs",
        default="auto",
        metavar="N",
        help="pytest-xdist workers: a number, 'auto' (default: every core) or 0 for one process",
    )
    fuzz.add_argument(
        "--engine",
        choices=ENGINES,
        default=ENGINES[0],
        help="adaptive (default): long-lived workers that spend time where properties find "
        "new behaviour, then one pytest round for what failed; rounds: pytest rounds of "
        "every test in turn, each with twice the examples of the last",
    )
    fuzz.add_argument(
        "--profile",
        default=DEFAULT_PROFILE,
        help=f"the Hypothesis profile (default {DEFAULT_PROFILE}); never a derandomized one",
    )
    fuzz.add_argument(
        "tests",
        nargs="*",
        help="test paths or node ids (default: the project's testpaths); only Hypothesis tests run",
    )
    fuzz.add_argument("-k", dest="keyword", metavar="EXPR", help="pytest's -k selection")
    fuzz.add_argument(
        "--database",
        default=DEFAULT_DATABASE,
        metavar="SPEC",
        help=f"example database: a directory (default {DEFAULT_DATABASE}) or redis://HOST:PORT",
    )
    fuzz.add_argument(
        "--read-only",
        action="store_true",
        help="replay --database without writing to it",
    )
    fuzz.add_argument(
        "--replay",
        metavar="SPEC",
        help="another database replayed read-only alongside: a directory, redis://HOST:PORT "
        "or gh:OWNER/REPO[/ARTIFACT], the newest artifact of the nightly workflow (default "
        "artifact fuzz-example-database; GITHUB_TOKEN for a private repository)",
    )
    fuzz.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        metavar="DIR",
        help=f"the report folder (default {DEFAULT_OUT}/)",
    )
    fuzz.add_argument(
        "--write-regressions",
        action="store_true",
        help="write a patch per test file pinning each minimal failing example",
    )
    fuzz.add_argument(
        "--test-timeout",
        type=float,
        default=DEFAULT_TEST_TIMEOUT,
        metavar="SECONDS",
        help=f"hard timeout of one test (default {DEFAULT_TEST_TIMEOUT:g}); a test past it "
        "is reported as hung",
    )
    fuzz.add_argument(
        "--crosshair-share",
        type=float,
        default=DEFAULT_CROSSHAIR_SHARE,
        metavar="FRACTION",
        help=f"the budget's share for the CrossHair lane (default {DEFAULT_CROSSHAIR_SHARE}); "
        "0 runs no lane",
    )
    fuzz.add_argument(
        "--first-examples",
        type=int,
        default=DEFAULT_FIRST_EXAMPLES,
        metavar="K",
        help=f"max_examples of the first round, doubled each round up to the profile's "
        f"(default {DEFAULT_FIRST_EXAMPLES})",
    )
    fuzz.set_defaults(handler=run_fuzz)
    return fuzz


@dataclasses.dataclass(frozen=True, slots=True)
class CampaignPlan:
    """A validated campaign: everything the options said, checked once."""

    budget_seconds: float
    workers: int
    cores: int
    profile: str
    tests: tuple[str, ...]
    keyword: str | None
    database: DatabaseSpec
    read_only: bool
    replay: DatabaseSpec | None
    out: Path
    write_regressions: bool
    test_timeout: float
    crosshair_share: float
    first_examples: int
    engine: str = ENGINES[0]

    def __post_init__(self) -> None:
        # Issue 7: every bound a campaign relies on is checked before anything runs.
        if not self.budget_seconds > 0:
            raise UsageProblem(f"--minutes must be positive, not {self.budget_seconds / 60:g}")
        if self.workers < 0:
            raise UsageProblem(f"--jobs must be 0 or more, not {self.workers}")
        if not self.test_timeout > 0:
            raise UsageProblem(f"--test-timeout must be positive, not {self.test_timeout:g}")
        if not 0 <= self.crosshair_share < 1:
            raise UsageProblem(f"--crosshair-share must be in [0, 1), not {self.crosshair_share:g}")
        if self.first_examples < 1:
            raise UsageProblem(f"--first-examples must be at least 1, not {self.first_examples}")
        if not self.profile:
            raise UsageProblem("--profile is empty")
        if self.engine not in ENGINES:
            raise UsageProblem(f"--engine must be one of {', '.join(ENGINES)}, not {self.engine!r}")


def available_cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def plan_from_args(args: argparse.Namespace) -> CampaignPlan:
    cores = available_cores()
    absent = [name for name in ("pytest", "hypothesis") if importlib.util.find_spec(name) is None]
    if absent:
        names = " and ".join(absent)
        raise UsageProblem(f"{names} not installed: pip install 'practice-loop[test]'")
    if args.jobs == "auto":
        workers = cores
    elif args.jobs.isdigit():
        workers = int(args.jobs)
    else:
        raise UsageProblem(f"--jobs takes a number or 'auto', not {args.jobs!r}")
    if workers > 0 and importlib.util.find_spec("xdist") is None:
        raise UsageProblem(
            "pytest-xdist is not installed: pass -j 0 or pip install 'practice-loop[test]'"
        )
    missing = [t for t in args.tests if not Path(t.partition("::")[0]).exists()]
    if missing:
        raise UsageProblem(f"no such test path: {', '.join(missing)}")
    try:
        database = writable(parse_database_spec(args.database))
        replay = parse_database_spec(args.replay) if args.replay is not None else None
    except DatabaseError as error:
        raise UsageProblem(f"example database: {error}") from error
    return CampaignPlan(
        budget_seconds=args.minutes * 60,
        workers=workers,
        cores=cores,
        profile=args.profile,
        tests=tuple(args.tests),
        keyword=args.keyword,
        database=_absolute(database),
        read_only=args.read_only,
        replay=_absolute(replay) if replay is not None else None,
        out=args.out,
        write_regressions=args.write_regressions,
        test_timeout=args.test_timeout,
        crosshair_share=args.crosshair_share,
        first_examples=args.first_examples,
        engine=args.engine,
    )


def _absolute(spec: DatabaseSpec) -> DatabaseSpec:
    """Every pytest process finds a directory database at the same place."""
    if spec.kind is DatabaseKind.DIRECTORY:
        return dataclasses.replace(spec, location=str(Path(spec.location).resolve()))
    return spec


def round_command(
    plan: CampaignPlan, record_dir: Path, number: int, max_examples: int
) -> list[str]:
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "practice_loop.harness.fuzz_plugin",
        "-p",
        "no:randomly",  # it would reseed every test: rounds must draw fresh seeds
        "-p",
        "no:cacheprovider",
        f"--hypothesis-profile={plan.profile}",
        f"--fuzz-record={record_dir}",
        f"--fuzz-round={number}",
        f"--fuzz-max-examples={max_examples}",
        f"--fuzz-timeout={plan.test_timeout:g}",
    ]
    if plan.workers > 0:
        command += ["-n", str(plan.workers)]
    if plan.keyword is not None:
        command += ["-k", plan.keyword]
    return command + list(plan.tests)


def round_environment(plan: CampaignPlan) -> dict[str, str]:
    environ = {
        key: value
        for key, value in os.environ.items()
        if key not in (DATABASE_ENV, READ_ONLY_ENV, REPLAY_ENV)
    }
    environ.update(environment_for(plan.database, read_only=plan.read_only, replay=plan.replay))
    # Our profile, even where CI=true would select the derandomized `ci` one.
    environ["HYPOTHESIS_PROFILE"] = plan.profile
    return environ


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _group_cpu_seconds(group: int, leader: int) -> float:
    """CPU time so far of the live processes of ``group`` other than its leader (Linux
    ``/proc``; 0 elsewhere): workers about to be killed, which no one will reap for us."""
    total = 0.0
    ticks = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:
            continue
        # After the command name: state, ppid, pgrp, ..., utime and stime are fields 12 and 13.
        if int(stat.parent.name) != leader and int(fields[2]) == group:
            total += (int(fields[11]) + int(fields[12])) / ticks
    return total


def _stop(process: subprocess.Popen[bytes]) -> float:
    """Stop a round as Ctrl-C would (its whole process group), then kill what remains; the
    CPU seconds of the processes killed that ``RUSAGE_CHILDREN`` will never see."""
    try:
        os.killpg(process.pid, signal.SIGINT)
        process.wait(timeout=STOP_GRACE_SECONDS)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        pass
    unreaped = _group_cpu_seconds(process.pid, process.pid)
    try:  # whatever outlived the grace, workers of a controller already gone included
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()
    return unreaped


class Progress:
    """One status line: rewritten in place on a terminal, every 30 s in a CI log."""

    def __init__(self, stream: IO[str], budget: float) -> None:
        self.stream = stream
        self.budget = budget
        self.tty = stream.isatty()
        self._last = 0.0

    def due(self) -> bool:
        return time.monotonic() - self._last >= (1.0 if self.tty else 30.0)

    def show(self, elapsed: float, round_number: int, examples: int, findings: int) -> None:
        self._last = time.monotonic()
        stage = f"round {round_number}" if round_number else "search"
        line = (
            f"fuzz: {elapsed:6.0f}/{self.budget:.0f} s  {stage}  "
            f"examples {examples:,}  failures {findings}"
        )
        if self.tty:
            print(f"\r{line}", end="", file=self.stream, flush=True)
        else:
            print(line, file=self.stream, flush=True)

    def done(self) -> None:
        if self.tty:
            print(file=self.stream, flush=True)


@dataclasses.dataclass
class _Campaign:
    plan: CampaignPlan
    started: float
    started_at: str
    rounds: list[RoundSummary] = dataclasses.field(default_factory=list)
    runs: list[TestRun] = dataclasses.field(default_factory=list)
    faults: list[tuple[Fault, str]] = dataclasses.field(default_factory=list)
    rounds_seconds: float = 0.0
    cpu_seconds: float = 0.0
    adaptive: AdaptiveSummary | None = None
    charts: tuple[str, ...] = ()

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def examples(self) -> int:
        searched = self.adaptive.examples if self.adaptive is not None else 0
        return searched + sum(run.examples for run in self.runs)

    def findings(self) -> int:
        return sum(1 for run in self.runs if run.outcome in FINDINGS)


def _run_rounds(
    campaign: _Campaign,
    deadline: float,
    progress: Progress,
    rounds_dir: Path,
    *,
    plan: CampaignPlan | None = None,
    max_rounds: int | None = None,
) -> bool:
    """Rounds of ``plan`` (the campaign's own by default) until ``deadline`` (monotonic) or
    ``max_rounds``. False when the campaign must stop (a usage error raised as
    ``UsageProblem``, a fault recorded, or Ctrl-C recorded)."""
    plan = campaign.plan if plan is None else plan
    environ = round_environment(plan)
    max_examples = plan.first_examples
    number = 0
    while time.monotonic() < deadline and (max_rounds is None or number < max_rounds):
        number += 1
        record_dir = rounds_dir / f"round-{number:03d}"
        log_path = rounds_dir / f"round-{number:03d}.log"
        record_dir.mkdir(parents=True, exist_ok=True)
        command = round_command(plan, record_dir, number, max_examples)
        round_start = time.monotonic()
        cpu_before = _children_cpu()
        killed_cpu = 0.0
        ending = RoundEnding.COMPLETED
        with open(log_path, "wb") as log:
            log.write(("$ " + shlex.join(command) + "\n").encode())
            log.flush()
            process = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, env=environ, start_new_session=True
            )
            try:
                while process.poll() is None:
                    if time.monotonic() >= deadline:
                        ending = RoundEnding.CUT_OFF
                        break
                    if progress.due():
                        examples = campaign.examples() + _live_examples(record_dir, number)
                        progress.show(campaign.elapsed(), number, examples, campaign.findings())
                    time.sleep(POLL_SECONDS)
            except KeyboardInterrupt:
                ending = RoundEnding.INTERRUPTED
            finally:
                if process.poll() is None:
                    killed_cpu = _stop(process)
        status = process.returncode
        seconds = time.monotonic() - round_start
        campaign.rounds_seconds += seconds
        campaign.cpu_seconds += _children_cpu() - cpu_before + killed_cpu
        stopped = ending is not RoundEnding.COMPLETED
        try:
            runs = read_round(record_dir, number, stopped=stopped)
        except RecordError as error:
            campaign.faults.append((Fault.RECORDS_UNREADABLE, f"round {number}: {error}"))
            return False
        if not stopped and status not in _PYTEST_CLEAN:
            if status in (PYTEST_USAGE_ERROR, PYTEST_NO_TESTS) and not runs:
                tail = log_path.read_text(errors="replace").strip().splitlines()[-15:]
                problem = (
                    "the selection holds no Hypothesis test"
                    if status == PYTEST_NO_TESTS
                    else "pytest refused the round"
                )
                raise UsageProblem(f"{problem} (log {log_path}):\n" + "\n".join(tail))
            ending = RoundEnding.PYTEST_ERROR
        campaign.runs.extend(runs)
        campaign.rounds.append(
            RoundSummary(
                number,
                max_examples,
                round_start - campaign.started,
                seconds,
                ending,
                status,
                str(log_path),
            )
        )
        if ending is RoundEnding.INTERRUPTED:
            campaign.faults.append((Fault.INTERRUPTED, f"Ctrl-C during round {number}"))
            return False
        if ending is RoundEnding.PYTEST_ERROR:
            campaign.faults.append(
                (
                    Fault.PYTEST_ERROR,
                    f"round {number}: pytest exited with status {status}; see {log_path}",
                )
            )
            return False
        broken = [run.nodeid for run in runs if run.outcome is RunOutcome.DATABASE_FAULT]
        if broken:
            campaign.faults.append(
                (
                    Fault.DATABASE_FAULT,
                    f"round {number}: the example database {plan.database} failed in "
                    + ", ".join(broken[:3]),
                )
            )
            return False
        max_examples *= 2
    return True


def _live_examples(record_dir: Path, number: int) -> int:
    """Examples of the round in progress so far, for the progress line."""
    try:
        return sum(run.examples for run in read_round(record_dir, number, stopped=True))
    except (OSError, RecordError):
        return 0


def _run_crosshair(campaign: _Campaign, end: float, out: Path) -> LaneSummary:
    plan = campaign.plan
    if plan.crosshair_share == 0:
        return LaneSummary(LaneStatus.NOT_RUN, "--crosshair-share 0: no lane asked for")
    if importlib.util.find_spec(CROSSHAIR_MODULE) is None:
        reason = f"{CROSSHAIR_MODULE} is not in this tree"
        campaign.faults.append((Fault.CROSSHAIR_INCOMPLETE, reason))
        return LaneSummary(LaneStatus.NOT_RUN, reason)
    seconds = int(end - time.monotonic() - CLOSING_SECONDS)
    if seconds < 1:
        reason = "no time left in the budget"
        campaign.faults.append((Fault.CROSSHAIR_INCOMPLETE, reason))
        return LaneSummary(LaneStatus.NOT_RUN, reason)
    jobs = min(max(plan.workers, 1), CROSSHAIR_MAX_JOBS)
    command = [sys.executable, "-m", "practice_loop", "contracts"]
    command += ["--seconds", str(seconds), "--jobs", str(jobs)]
    log_path = out / "crosshair.log"
    started = time.monotonic()
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            status = process.wait(timeout=seconds + STOP_GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            _stop(process)
            status = None
        except KeyboardInterrupt:
            _stop(process)
            campaign.faults.append((Fault.INTERRUPTED, "Ctrl-C during the CrossHair lane"))
            return LaneSummary(
                LaneStatus.NOT_RUN,
                "interrupted",
                time.monotonic() - started,
                shlex.join(command),
                str(log_path),
            )
    took = time.monotonic() - started
    shown = shlex.join(command)
    if status == 0:
        return LaneSummary(LaneStatus.PASSED, "no counterexample", took, shown, str(log_path))
    if status == 1:
        return LaneSummary(
            LaneStatus.COUNTEREXAMPLE, f"counterexample: see {log_path}", took, shown, str(log_path)
        )
    if status is None:
        lane, reason = LaneStatus.CUT_OFF, f"ran past its {seconds} s and was stopped"
    elif status == CROSSHAIR_CUT_OFF:
        lane = LaneStatus.CUT_OFF
        reason = f"its {seconds} s ended before every condition was analysed; see {log_path}"
    else:
        lane = LaneStatus.NOT_RUN
        reason = f"exited with status {status}: {_last_line(log_path)}"
    campaign.faults.append((Fault.CROSSHAIR_INCOMPLETE, reason))
    return LaneSummary(lane, reason, took, shown, str(log_path))


def _last_line(path: Path) -> str:
    lines = [line for line in path.read_text(errors="replace").splitlines() if line.strip()]
    return lines[-1] if lines else "(no output)"


def run_campaign(plan: CampaignPlan, stream: IO[str] = sys.stderr) -> tuple[CampaignReport, int]:
    """Run the campaign ``plan`` describes; the report and the exit status. Raises
    ``UsageProblem`` when pytest refuses the selection or the profile."""
    started = time.monotonic()
    campaign = _Campaign(
        plan, started, datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    )
    end = started + plan.budget_seconds
    has_lane = plan.crosshair_share > 0 and importlib.util.find_spec(CROSSHAIR_MODULE) is not None
    if has_lane:
        rounds_deadline = started + plan.budget_seconds * (1 - plan.crosshair_share)
    else:  # the last round is stopped early enough for its grace to end with the budget
        rounds_deadline = end - STOP_GRACE_SECONDS / 2
    out = plan.out
    rounds_dir = out / "rounds"
    if rounds_dir.exists():
        shutil.rmtree(rounds_dir)  # records of an earlier campaign must not be merged into this one
    rounds_dir.mkdir(parents=True)
    progress = Progress(stream, plan.budget_seconds)
    lane = LaneSummary(LaneStatus.NOT_RUN, "the rounds did not finish")
    try:
        check_reachable(plan.database)
        if plan.replay is not None:
            check_reachable(plan.replay)
    except DatabaseError as error:
        campaign.faults.append((Fault.DATABASE_UNREACHABLE, str(error)))
    else:
        try:
            if plan.engine == "adaptive":
                searched = _run_adaptive(campaign, rounds_deadline, progress, out, stream)
            else:
                searched = _run_rounds(campaign, rounds_deadline, progress, rounds_dir)
            if searched:
                progress.show(
                    campaign.elapsed(),
                    len(campaign.rounds),
                    campaign.examples(),
                    campaign.findings(),
                )
                lane = _run_crosshair(campaign, end, out)
        except KeyboardInterrupt:  # between rounds; a round in flight stops itself above
            campaign.faults.append((Fault.INTERRUPTED, "Ctrl-C"))
    progress.done()
    finished = [
        r for r in campaign.runs if r.outcome not in (RunOutcome.CUT_OFF, RunOutcome.NOT_STARTED)
    ]
    searched_examples = campaign.adaptive.examples if campaign.adaptive is not None else 0
    if not finished and not searched_examples and not campaign.faults:
        campaign.faults.append(
            (
                Fault.NOTHING_COMPLETED,
                "no test ran to its end within the budget; give it more minutes",
            )
        )
    report = CampaignReport(
        profile=plan.profile,
        workers=plan.workers,
        cores=plan.cores,
        budget_seconds=plan.budget_seconds,
        elapsed_seconds=time.monotonic() - started,
        rounds_seconds=campaign.rounds_seconds,
        database=str(plan.database),
        read_only=plan.read_only,
        replay=str(plan.replay) if plan.replay is not None else None,
        selection=plan.tests,
        test_timeout=plan.test_timeout,
        rounds=tuple(campaign.rounds),
        runs=tuple(campaign.runs),
        crosshair=lane,
        cpu_seconds=campaign.cpu_seconds,
        faults=tuple(campaign.faults),
        started_at=campaign.started_at,
        context=run_context(Path.cwd(), "crosshair-tool", "hypothesis-crosshair", "atheris"),
        engine=plan.engine,
        adaptive=campaign.adaptive,
        charts=campaign.charts,
    )
    return report, report.exit_status


def confirmation_reserve(
    search_seconds: float,
    losses: Sequence[WorkerLoss],
    test_timeout: float,
    start_seconds: float,
) -> float:
    """The seconds kept at the end of the search for the confirmation round, given the
    workers it lost so far: a share of the search's time within its bounds, plus, for each
    loss, what the round pays again when that test ends its pytest-xdist worker (its timeout
    if it hung, then a new worker's start, measured on the search's own workers), never more
    than CONFIRM_MAX_SECONDS or half the search. Without that part, a campaign that found a
    hang and a crash cut its round off while the hung test was still running, and the report
    said "cut off" where the search had said "hung"."""
    losses_cost = sum(
        start_seconds + (test_timeout if loss.outcome == RunOutcome.HUNG.value else 0.0)
        for loss in losses
    )
    share = max(CONFIRM_MIN_SECONDS, CONFIRM_SHARE * search_seconds)
    return min(share + losses_cost, CONFIRM_MAX_SECONDS, search_seconds / 2)


def _run_adaptive(
    campaign: _Campaign, deadline: float, progress: Progress, out: Path, stream: IO[str]
) -> bool:
    """The adaptive search until ``deadline``, then the confirmation round for the tests
    that need one (its end of the search is kept for it only when one does). False when
    the campaign must stop (Ctrl-C, or a fault recorded)."""
    plan = campaign.plan
    workers_dir = out / "workers"
    if workers_dir.exists():
        shutil.rmtree(workers_dir)  # an earlier campaign's records are not this one's
    search_seconds = deadline - time.monotonic()

    def reserve(losses: Sequence[WorkerLoss], start_seconds: float) -> float:
        return confirmation_reserve(search_seconds, losses, plan.test_timeout, start_seconds)

    cpu_before = _children_cpu()
    try:
        summary = run_search(
            workers=max(plan.workers, 1),
            end=deadline,
            out=workers_dir,
            environ=round_environment(plan),
            profile=plan.profile,
            test_timeout=plan.test_timeout,
            keyword=plan.keyword,
            tests=plan.tests,
            table=LiveTable(stream, plan.budget_seconds),
            reserve=reserve,
        )
    except WorkerRefused as refused:
        raise UsageProblem(str(refused)) from None
    campaign.rounds_seconds += summary.seconds
    campaign.cpu_seconds += _children_cpu() - cpu_before
    campaign.adaptive = summary
    campaign.charts = tuple(str(path) for path in write_charts(summary, out / "charts"))
    campaign.faults.extend((Fault(kind), detail) for kind, detail in summary.faults)
    if summary.interrupted:
        campaign.faults.append((Fault.INTERRUPTED, "Ctrl-C during the adaptive search"))
        return False
    if not summary.collected and not summary.unfuzzable:
        raise UsageProblem("the selection holds no Hypothesis test")
    if summary.faults:
        return False
    if not summary.to_confirm:
        return True
    confirming = dataclasses.replace(plan, tests=summary.to_confirm, keyword=None)
    progress.show(campaign.elapsed(), 0, summary.examples, len(summary.findings))
    return _run_rounds(campaign, deadline, progress, out / "rounds", plan=confirming, max_rounds=1)


def _print_summary(report: CampaignReport, written: list[Path], stream: IO[str]) -> None:
    data = report.to_json()
    totals = data["totals"]
    print(
        f"fuzz: {report.status.value}: {totals['findings']} finding(s); {totals['rounds']} rounds, "
        f"{totals['test_runs']} test runs, {totals['examples']:,} examples"
        + (
            f" and {totals['search_examples']:,} in the adaptive search"
            if report.adaptive is not None
            else ""
        )
        + " in "
        f"{report.elapsed_seconds:.1f} s (budget {report.budget_seconds:.0f} s); "
        f"{totals['tests_never_run']} selected test(s) never ran to their end; "
        f"cores busy {report.busy_share:.0%}; CrossHair {report.crosshair.status.value}",
        file=stream,
    )
    for fault, detail in report.faults:
        print(f"fuzz: fault {fault.value}: {detail}", file=stream)
    if report.adaptive is not None:
        commands = data["adaptive"]["replay_commands"]
        for finding in report.adaptive.findings:
            print(f"fuzz: search found {finding.origin} in {finding.nodeid}", file=stream)
            print(f"  replay: {commands[finding.nodeid]}", file=stream)
        for loss in report.adaptive.losses:
            print(f"fuzz: search: {loss.nodeid} {loss.outcome} its worker", file=stream)
    for test in data["tests"]:
        for failure in test["failures"]:
            print(
                f"fuzz: {failure['outcome']}: {test['nodeid']} "
                f"(rounds {', '.join(map(str, failure['rounds']))}, seed {failure['seed']})",
                file=stream,
            )
            for example in failure["examples"]:
                if example["command"]:
                    print(f"  reproduce: {example['command']}", file=stream)
            if not failure["examples"]:
                print(f"  rerun: {failure['rerun_command']}", file=stream)
    print("fuzz: reports: " + ", ".join(str(p) for p in written), file=stream)


def run_fuzz(args: argparse.Namespace) -> int:
    try:
        plan = plan_from_args(args)
        report, status = run_campaign(plan)
    except UsageProblem as problem:
        print(f"practice-loop fuzz: {problem}", file=sys.stderr)
        return 2
    written = [
        write_json(report, plan.out),
        write_markdown(report, plan.out),
        write_junit(report, plan.out),
    ]
    if plan.write_regressions:
        for patch in write_regressions(report, Path.cwd(), plan.out):
            if patch.unresolved_names:
                print(
                    f"fuzz: the regression patch for {patch.path} uses names the module does "
                    f"not bind: {', '.join(patch.unresolved_names)}",
                    file=sys.stderr,
                )
            for regression, refusal in patch.refused:
                print(
                    f"fuzz: no regression for {regression.nodeid}: {refusal.value}", file=sys.stderr
                )
        written.append(plan.out / "regressions")
    _print_summary(report, written, sys.stderr)
    return status
