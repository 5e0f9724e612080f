"""The pytest side of ``practice-loop fuzz`` (issue 7): ``-p practice_loop.harness.fuzz_plugin``.

In a campaign round (``--fuzz-record=DIR``), in every process that runs tests:

- keeps only Hypothesis tests (properties and state machines); plain tests are deselected;
- loads a round profile derived from the profile in force: ``--fuzz-max-examples``, and the
  example database the campaign chose (``practice_loop.harness.fuzz_database``'s environment). A
  derandomized profile is refused: a campaign needs fresh randomness;
- gives every test a fresh seed of its own (as ``@seed`` would, so the database is still
  replayed first) and records it;
- arms a hard timeout per test (``--fuzz-timeout``): ``faulthandler`` dumps every thread's
  stack into the process's ``.hang`` file and ends the process, which pytest-xdist reports as
  a crashed worker and replaces; the campaign reports the test as hung, never as passed;
- appends one ``start`` line before and one ``finish`` line after each test to its own
  ``DIR/<worker>-<pid>.jsonl``: examples run per phase (Hypothesis's run statistics), the
  outcome, and per failure the minimal example and the ``@reproduce_failure`` blob, read
  from Hypothesis's observation of each minimal failing test case (the failing exception's
  notes only where there is none: a failing explicit example), with where they came from;
- on the pytest-xdist controller, appends a ``crash`` line for each test whose worker died.

``--fuzz-reproduce=VERSION:BLOB`` replays one recorded failure exactly, as a temporary
``@reproduce_failure(VERSION, BLOB)`` on the selected test would, without editing it.
"""

from __future__ import annotations

import contextlib
import faulthandler
import json
import os
import random
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import hypothesis
import pytest
from hypothesis import settings

from .fuzz_database import DatabaseError, database_from_environment
from .fuzz_report import (
    FailureExample,
    FailureSource,
    failure_from_observation,
    failures_from_notes,
)
from .hypothesis_internals import (
    SEARCH_PHASES,
    found_in,
    minimal_failures_to,
    own_seed,
    phase_counts,
    reproducing,
    seeded,
    statistics_to,
    target_of,
)

PLUGIN_NAME = "practice_loop.fuzz_recorder"
RECORD_SUFFIX = ".jsonl"
HANG_SUFFIX = ".hang"
_fresh_seeds = random.SystemRandom()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("practice-loop fuzz", "fuzz campaign rounds (practice-loop fuzz)")
    group.addoption("--fuzz-record", metavar="DIR", help="record this round's tests into DIR")
    group.addoption("--fuzz-round", type=int, default=0, metavar="N", help="the round number")
    group.addoption(
        "--fuzz-max-examples",
        type=int,
        metavar="K",
        help="max_examples of the round profile (at most the profile's own)",
    )
    group.addoption(
        "--fuzz-timeout",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="end the process when one test runs longer (0: no timeout)",
    )
    group.addoption(
        "--fuzz-seed",
        type=int,
        metavar="SEED",
        help="run every selected test from this seed, as @seed(SEED) would",
    )
    group.addoption(
        "--fuzz-reproduce",
        metavar="VERSION:BLOB",
        help="replay one recorded failure, as @reproduce_failure(VERSION, BLOB) would",
    )


@pytest.hookimpl(trylast=True)  # after Hypothesis has loaded --hypothesis-profile
def pytest_configure(config: pytest.Config) -> None:
    record = config.getoption("fuzz_record")
    reproduce = config.getoption("fuzz_reproduce")
    seed = config.getoption("fuzz_seed")
    max_examples = config.getoption("fuzz_max_examples")
    if record is None and reproduce is None and seed is None and max_examples is None:
        return
    blob: tuple[str, bytes] | None = None
    if reproduce is not None:
        version, separator, text = reproduce.partition(":")
        if not (separator and version and text):
            raise pytest.UsageError(f"--fuzz-reproduce={reproduce!r}: expected VERSION:BLOB")
        blob = (version, text.encode("ascii"))
    if record is not None or max_examples is not None:
        load_campaign_profile(max_examples, campaign=record is not None)
    plugin = FuzzRecorder(
        config,
        Path(record) if record is not None else None,
        round_number=config.getoption("fuzz_round"),
        timeout=config.getoption("fuzz_timeout"),
        reproduce=blob,
        seed=seed,
    )
    config.pluginmanager.register(plugin, PLUGIN_NAME)


def load_campaign_profile(max_examples: int | None, *, campaign: bool) -> None:
    """Load the profile in force with the campaign's example database (and, with
    ``max_examples``, a round's); a campaign refuses a derandomized profile."""
    name = settings.get_current_profile_name()
    if campaign and settings.default.derandomize:
        # Issue 7: a derandomized profile (Hypothesis's automatic `ci`, or ours) repeats the
        # same examples every round; a campaign must draw fresh ones.
        raise pytest.UsageError(
            f"profile {name!r} is derandomized; a fuzz campaign needs fresh randomness "
            "(use --profile nightly)"
        )
    try:
        database = database_from_environment(os.environ)
    except DatabaseError as error:
        raise pytest.UsageError(f"example database: {error}") from error
    # Every failure carries its @reproduce_failure blob: the report's reproduction command.
    changes: dict[str, Any] = {"database": database, "print_blob": True}
    if max_examples is not None:
        if max_examples < 1:
            raise pytest.UsageError(f"--fuzz-max-examples={max_examples}: at least 1")
        # Rounds deepen up to the profile's own max_examples, never past it.
        changes["max_examples"] = min(max_examples, settings.default.max_examples)
    round_profile = f"{name}-fuzz-round"
    settings.register_profile(round_profile, parent=settings.get_profile(name), **changes)
    settings.load_profile(round_profile)


def _hypothesis_target(item: pytest.Item) -> Any:
    return target_of(getattr(item, "obj", None))


def _worker_name() -> str:
    return os.environ.get("PYTEST_XDIST_WORKER", "main")


def _exceptions_in(error: BaseException) -> Iterator[BaseException]:
    yield error
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            yield from _exceptions_in(inner)


def _is_database_fault(error: BaseException) -> bool:
    """A Redis error escaping a test is the database failing, not the code under test."""
    redis_exceptions = sys.modules.get("redis.exceptions")
    if redis_exceptions is None:
        return False
    return any(isinstance(e, redis_exceptions.RedisError) for e in _exceptions_in(error))


class FuzzRecorder:
    def __init__(
        self,
        config: pytest.Config,
        record_dir: Path | None,
        *,
        round_number: int,
        timeout: float,
        reproduce: tuple[str, bytes] | None,
        seed: int | None,
    ) -> None:
        self.config = config
        self.record_dir = record_dir
        self.round_number = round_number
        self.timeout = timeout
        self.reproduce = reproduce
        self.fixed_seed = seed
        self._stem = f"{_worker_name()}-{os.getpid()}"
        self._records: IO[str] | None = None
        self._hang: IO[str] | None = None
        self._statistics: list[dict[str, Any]] = []
        self._observed: list[FailureExample] = []
        self._failures: list[FailureExample] = []
        self._failures_from: FailureSource | None = None
        self._outcome = "passed"
        self._error: str | None = None
        self._database_fault = False
        self._seed: int | None = None

    # -- writing ---------------------------------------------------------------------------

    def _write(self, record: dict[str, Any]) -> None:
        assert self.record_dir is not None
        if self._records is None:
            self.record_dir.mkdir(parents=True, exist_ok=True)
            self._records = open(self.record_dir / f"{self._stem}{RECORD_SUFFIX}", "a")
        self._records.write(json.dumps(record, sort_keys=True) + "\n")
        self._records.flush()  # a worker may be ended at any moment: keep every line

    def _hang_file(self) -> IO[str]:
        assert self.record_dir is not None
        if self._hang is None:
            self.record_dir.mkdir(parents=True, exist_ok=True)
            self._hang = open(self.record_dir / f"{self._stem}{HANG_SUFFIX}", "w")
        return self._hang

    # -- collection ------------------------------------------------------------------------

    @pytest.hookimpl(trylast=True)  # after -k and -m have deselected their share
    def pytest_collection_modifyitems(
        self, session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        if self.record_dir is None:
            return
        kept = [item for item in items if _hypothesis_target(item) is not None]
        dropped = [item for item in items if _hypothesis_target(item) is None]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = kept
        # So that a test the round never reached is reported as not started, not forgotten.
        self._write(
            {
                "event": "collected",
                "nodeids": [item.nodeid for item in kept],
                "round": self.round_number,
                "t": time.time(),
            }
        )

    # -- one test --------------------------------------------------------------------------

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None):
        if self.record_dir is None:
            return (yield)
        self._statistics, self._observed, self._failures = [], [], []
        self._failures_from = None
        self._outcome, self._error, self._database_fault = "passed", None, False
        self._seed = self._seed_for(item)
        self._write(
            {
                "event": "start",
                "nodeid": item.nodeid,
                "round": self.round_number,
                "seed": self._seed,
                "t": time.time(),
            }
        )
        started = time.perf_counter()
        if self.timeout > 0:
            faulthandler.dump_traceback_later(self.timeout, exit=True, file=self._hang_file())
        try:
            result = yield
        finally:
            if self.timeout > 0:
                faulthandler.cancel_dump_traceback_later()
        # Only a test that ran to its end gets a finish line: one interrupted (Ctrl-C, or the
        # campaign ending its round) counts as cut off, never as passed.
        phases = phase_counts(self._statistics)
        self._write(
            {
                "event": "finish",
                "nodeid": item.nodeid,
                "round": self.round_number,
                "t": time.time(),
                "seconds": time.perf_counter() - started,
                "outcome": self._outcome,
                "seed": self._seed,
                "examples": sum(sum(phases.get(phase, {}).values()) for phase in SEARCH_PHASES),
                "phases": phases,
                "found_in": found_in(self._statistics),
                "failures": [failure.to_json() for failure in self._failures],
                "failures_from": None if self._failures_from is None else self._failures_from.value,
                "error": self._error,
                "database_fault": self._database_fault,
                "hypothesis": hypothesis.__version__,
            }
        )
        return result

    @pytest.hookimpl(wrapper=True, trylast=True)  # innermost: inside Hypothesis's own wrapper
    def pytest_runtest_call(self, item: pytest.Item):
        target = _hypothesis_target(item)
        if target is None:
            return (yield)
        with contextlib.ExitStack() as stack:
            stack.enter_context(statistics_to(self._statistics.append))
            if self.record_dir is not None:
                stack.enter_context(minimal_failures_to(self._observe))
            if self.reproduce is not None:
                with reproducing(target, self.reproduce):
                    return (yield)
            seed = self._seed if self.record_dir is not None else self._seed_for(item)
            if seed is None or seed == own_seed(target):
                return (yield)
            with seeded(target, seed):
                return (yield)

    def _observe(self, representation: str, decorator: str | None) -> None:
        self._observed.append(failure_from_observation(representation, decorator))

    def _seed_for(self, item: pytest.Item) -> int | None:
        """The test's own ``@seed`` if it has one, else ``--fuzz-seed``, else (in a round) a
        fresh one; ``None`` leaves Hypothesis to seed the test."""
        target = _hypothesis_target(item)
        if target is None:
            return None
        own = own_seed(target)
        if own is not None:
            return own
        if self.fixed_seed is not None:
            return self.fixed_seed
        return _fresh_seeds.getrandbits(64) if self.record_dir is not None else None

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]):
        report = yield
        if self.record_dir is None or not report.failed:
            return report
        self._outcome = "failed" if report.when == "call" else "error"
        error = call.excinfo.value if call.excinfo is not None else None
        if error is None:
            self._error = report.longreprtext[-2000:]
            return report
        self._database_fault = self._database_fault or _is_database_fault(error)
        self._error = f"{type(error).__name__}: {error}"[:2000]
        if self._observed:
            self._failures, self._failures_from = self._observed, FailureSource.OBSERVABILITY
            return report
        for inner in _exceptions_in(error):
            self._failures.extend(failures_from_notes(getattr(inner, "__notes__", ())))
        if self._failures:
            self._failures_from = FailureSource.NOTES
        return report

    # -- the controller --------------------------------------------------------------------

    @pytest.hookimpl(optionalhook=True)
    def pytest_handlecrashitem(self, crashitem: str, report: Any, sched: Any) -> None:
        if self.record_dir is not None:
            self._write(
                {
                    "event": "crash",
                    "nodeid": crashitem,
                    "round": self.round_number,
                    "t": time.time(),
                }
            )

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        for handle in (self._records, self._hang):
            if handle is not None:
                handle.close()
