"""One long-lived worker of ``practice-loop fuzz`` (issue 19, docs/nightly-fuzzing.md).

``python -m practice_loop.harness.fuzz_worker --record FILE --worker K --of N --seed S
--seconds T [-k EXPR] [TESTS...]`` collects the Hypothesis tests once (pytest's own
collection, in this process), keeps every N-th from the K-th, and runs them through
Hypothesis's fuzzing entry point (``fuzz_one_input``) until its time is spent:

- **Time goes where behaviour is still being found.** The worker runs short slices of one
  property at a time. Most slices go to properties in proportion to how often their inputs
  reached code no input had reached before (new branch arcs under coverage.py's C tracer,
  over the project's own files), decayed so that only recent discovery counts. Every property
  first runs one slice, and then every fifth slice goes to the next property in turn (a
  shuffled cycle), so no property ever starves.
- **Inputs** are fresh random bytes or mutations of the inputs that found new behaviour
  (each kept in the canonical, pruned form Hypothesis hands back). Besides the usual byte
  edits, two mutations aim at numeric comparisons, which coverage alone cannot climb (a
  window ``a <= x < b`` is one arc, reached or not): an integer literal of the package's own
  source (its dictionary, as fuzzers read one from comparison operands) written big-endian
  over a few bytes, and a small addition to a 1-, 2- or 4-byte big-endian number. Hypothesis
  draws a bounded integer as that many bytes above its minimum, so either can land a drawn
  value on a boundary of the code under test; its own generation (the ``rounds`` engine)
  draws such literals from the source too.
- **Tracing costs** about half the speed of a kernel-heavy property, so only a share of
  inputs is traced: all of them while a property keeps finding behaviour, half as many
  after each slice that found nothing, never fewer than one in ten.
- **A failure is recorded once per origin** (exception type and the line it was raised at),
  with its input. ``fuzz_one_input`` writes it into the campaign's example database, where
  an ordinary pytest run of the test replays and shrinks it: the campaign does that once,
  in its confirmation round. The input is also kept under this worker's own key, and a
  failure found by an earlier campaign is replayed once at start, reported as known, and
  never shrunk here.
- A hung input ends the process through ``faulthandler`` (stacks in ``--hang``); the
  campaign reads which property was running from the last ``slice`` line.

Every line of ``--record`` is one JSON object: ``collected``, ``slice``, ``status`` (what
changed since the last one), ``finding``, ``end``, and ``refused`` or ``internal_error``
when the worker itself cannot go on. Exit status: 0 the time was spent (findings or not);
2 the selection or the profile was refused; 70 the worker's own code failed (never a test's
doing: a test's exception is a finding); 130 stopped by SIGINT after writing ``end``; any
other status is a test that hung (1, with the stacks in ``--hang``) or crashed the process.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import faulthandler
import json
import math
import os
import random
import signal
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any

import pytest
from hypothesis import Phase, settings
from hypothesis.errors import Unsatisfiable

from .fuzz_database import DatabaseError, database_from_environment
from .hypothesis_internals import InProcessRun, fuzz_target_of, in_process_run_of

SLICE_SECONDS = 0.2
STATUS_SECONDS = 1.0
# The share of slices given in turn to every property, whatever discovery says: the floor.
FLOOR_SHARE = 0.2
FLOOR_EVERY = round(1 / FLOOR_SHARE)  # every fifth slice
# Discoveries count for less as the property's own run time passes: halved every 30 s.
HALF_LIFE_SECONDS = 30.0
FRESH_SHARE = 0.3  # of inputs drawn as fresh random bytes even when there is a corpus
MAX_CORPUS = 64
ARITH_MAX = 35  # the largest step of the arithmetic mutation (AFL's ARITH_MAX)
# Literals that are not worth a dictionary entry: every byte edit reaches them anyway.
DICTIONARY_MIN = 2
DICTIONARY_MAX = 2**32
TRACE_FLOOR = 0.1  # the least share of a property's inputs run under the tracer
# The share of a property's slices given to Hypothesis's own generation rather than to
# fuzz_one_input: it draws from the source's literals, weights boundaries and mutates within
# its run, which random bytes do not (benchmarks/bench_fuzz.py compare measured both).
GENERATE_SHARE = 0.5
GENERATED_PER_SLICE = (1, 2_000)  # the least and most test cases one generation slice asks
# Hypothesis reads at most this many bytes of a fuzz input (hypothesis.core.BUFFER_SIZE).
MAX_INPUT = 8 * 1024
KEY_PREFIX = b"practice-loop.fuzz."
INTERNAL_ERROR = 70  # EX_SOFTWARE


@dataclasses.dataclass
class Property:
    """One fuzzed test and what the worker has learnt of it."""

    nodeid: str
    run: Callable[[bytes], bytes | None]
    # The test run in this process one phase at a time (its search, or its database replayed)
    in_process: InProcessRun | None = None
    corpus: list[bytes] = dataclasses.field(default_factory=list)
    examples: int = 0
    valid: int = 0
    seconds: float = 0.0
    discoveries: int = 0
    last_discovery: float | None = None  # campaign seconds
    recent: float = 0.0  # discoveries, decayed with the property's own run time
    origins: set[str] = dataclasses.field(default_factory=set)
    changed: bool = False
    traced: float = 1.0  # the share of its inputs run under the tracer
    generated_per_second: float = 50.0  # measured on its generation slices

    @property
    def key(self) -> bytes:
        return KEY_PREFIX + self.nodeid.encode("utf-8") + b".failures"

    def summary(self) -> dict[str, Any]:
        return {
            "examples": self.examples,
            "valid": self.valid,
            "seconds": round(self.seconds, 3),
            "discoveries": self.discoveries,
            "last_discovery": self.last_discovery,
            "findings": len(self.origins),
        }


class ArcCounter:
    """How many distinct branch arcs of the project's files have run in this process: the
    coverage.py C tracer, read through its collector (``tests/cover/test_fuzz_worker.py``
    checks that the count grows when new code runs, so a release that moves it fails)."""

    def __init__(self, roots: Sequence[Path]) -> None:
        import coverage

        self._coverage = coverage.Coverage(
            branch=True, data_file=None, source=[str(root) for root in roots]
        )
        self._coverage.start()  # so that its collector exists before the first count
        self._coverage.stop()

    def start(self) -> None:
        self._coverage.start()  # a few microseconds: cheap enough to do per input

    def stop(self) -> None:
        self._coverage.stop()

    def count(self) -> int:
        return sum(map(len, self._coverage._collector.data.values()))


def origin_of(error: BaseException) -> str:
    """Where a failure comes from: its type and the innermost line of its traceback."""
    frames = traceback.extract_tb(error.__traceback__)
    where = f"{Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else "?"
    return f"{type(error).__name__} at {where}"


def source_integers(package: Path) -> tuple[int, ...]:
    """The integer literals of the package's source, its harness excepted (the campaign's own
    machinery is not under test): the dictionary of the numeric mutations. A file that does
    not parse adds nothing: it cannot run either."""
    found: set[int] = set()
    for path in sorted(package.rglob("*.py")):
        if "harness" in path.relative_to(package).parts:
            continue
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and type(node.value) is int:
                if DICTIONARY_MIN <= abs(node.value) < DICTIONARY_MAX:
                    found.add(abs(node.value))
    return tuple(sorted(found))


def step_a_number(data: bytearray, rnd: random.Random) -> None:
    """Add or take up to ARITH_MAX from the 1-, 2- or 4-byte big-endian number at a random
    place of ``data`` (wrapping within its width; past the end, missing bytes read as 0)."""
    width = rnd.choice((1, 2, 4))
    start = rnd.randrange(len(data))
    number = int.from_bytes(data[start : start + width].ljust(width, b"\0"), "big")
    number += rnd.choice((-1, 1)) * rnd.randint(1, ARITH_MAX)
    data[start : start + width] = (number % 256**width).to_bytes(width, "big")


def write_a_literal(data: bytearray, rnd: random.Random, dictionary: Sequence[int]) -> None:
    """Write a literal of ``dictionary``, or one of its neighbours, big-endian at a random
    place of ``data``, at its own width or one byte wider (a draw whose range needs more)."""
    number = rnd.choice(dictionary) + rnd.choice((-1, 0, 0, 0, 1))
    width = max(1, (number.bit_length() + 7) // 8) + rnd.choice((0, 0, 1))
    start = rnd.randrange(len(data))
    data[start : start + width] = number.to_bytes(width, "big")


def mutated(corpus: Sequence[bytes], rnd: random.Random, dictionary: Sequence[int] = ()) -> bytes:
    """A fresh random input, or one of the corpus changed in one of the usual ways, or with
    a number in it moved to a literal of ``dictionary`` or by a small step."""
    if not corpus or rnd.random() < FRESH_SHARE:
        return rnd.randbytes(rnd.choice((64, 512, 2048, MAX_INPUT)))
    data = bytearray(rnd.choice(corpus))
    choice = rnd.randrange(8 if dictionary else 7)
    if choice == 0 or not data:  # extend: the pruned form ends where the test stopped reading
        data += rnd.randbytes(rnd.choice((8, 64, 512)))
    elif choice == 1:  # flip a few bytes
        for _ in range(rnd.randint(1, 8)):
            data[rnd.randrange(len(data))] = rnd.randrange(256)
    elif choice == 2:  # replace a chunk with random bytes
        start = rnd.randrange(len(data))
        size = rnd.randint(1, 32)
        data[start : start + size] = rnd.randbytes(size)
    elif choice == 3:  # delete a chunk
        start = rnd.randrange(len(data))
        del data[start : start + rnd.randint(1, 32)]
    elif choice == 4:  # splice with another input
        other = rnd.choice(corpus)
        data = data[: rnd.randint(0, len(data))] + other[rnd.randint(0, len(other)) :]
    elif choice == 5:  # repeat a chunk
        start = rnd.randrange(len(data))
        data[start:start] = data[start : start + rnd.randint(1, 32)]
    elif choice == 6:
        step_a_number(data, rnd)
    else:
        write_a_literal(data, rnd, dictionary)
    return bytes(data[:MAX_INPUT])


class Worker:
    def __init__(
        self,
        properties: list[Property],
        record: IO[str],
        *,
        seed: int,
        deadline: float,
        started: float,
        arcs: ArcCounter,
        database: Any,
        test_timeout: float,
        hang: IO[str] | None,
        dictionary: Sequence[int] = (),
    ) -> None:
        self.properties = properties
        self.dictionary = tuple(dictionary)
        self.record = record
        self.rnd = random.Random(seed)
        self.deadline = deadline
        self.started = started
        self.arcs = arcs
        self.database = database
        self.test_timeout = test_timeout
        self.hang = hang
        self._last_status = 0.0
        self._last_slice: str | None = None
        # The floor is a schedule, not a chance: every property's first slice comes before any
        # weighting, then every FLOOR_EVERY-th slice goes to the next property of a shuffled
        # cycle. Uniform draws left a third of 137 properties without one example in 150 s.
        self._first_slices = self.rnd.sample(properties, len(properties))
        self._floor_cycle: list[Property] = []
        self._slices = 0

    def write(self, event: str, **fields: Any) -> None:
        fields["event"] = event
        fields["t"] = round(time.monotonic() - self.started, 3)
        self.record.write(json.dumps(fields, sort_keys=True) + "\n")
        self.record.flush()  # the worker may be killed at any moment: keep every line

    def _arm(self) -> None:
        if self.hang is not None:
            faulthandler.dump_traceback_later(self.test_timeout, exit=True, file=self.hang)

    def replay_known(self) -> None:
        """Each failure an earlier campaign kept for a property, replayed once and reported
        as known: the fuzz inputs kept under the worker's key, then what the test's own
        database holds (a failure Hypothesis's generation found, or pytest shrank), never
        shrunk here."""
        for prop in self.properties:
            try:
                known = sorted(self.database.fetch(prop.key), key=len)
            except Exception as error:  # noqa: BLE001 (a broken database is reported)
                self.write("database_fault", nodeid=prop.nodeid, detail=str(error)[:300])
                continue
            for data in known:
                self._slice_of(prop)
                self._run_one(prop, data, known=True)
            if prop.in_process is not None:
                self._slice_of(prop)
                try:
                    prop.in_process(Phase.reuse, 0, 0)
                except Unsatisfiable:
                    pass
                except (Exception, SystemExit) as error:  # noqa: BLE001 (a known finding)
                    self._found(prop, error, b"", known=True, how="database")

    def _slice_of(self, prop: Property) -> None:
        if self._last_slice != prop.nodeid:
            self.write("slice", nodeid=prop.nodeid)
            self._last_slice = prop.nodeid
        self._arm()

    def _run_one(
        self, prop: Property, data: bytes, *, known: bool = False, traced: bool = False
    ) -> bool:
        """Run one input; whether it reached new arcs (only a traced input can)."""
        begun = time.perf_counter()
        if traced:
            before = self.arcs.count()
            self.arcs.start()
        try:
            kept = prop.run(data)
        except (Exception, SystemExit) as error:  # noqa: BLE001 (every failure is a finding)
            if traced:
                self.arcs.stop()
            prop.examples += 1
            prop.seconds += time.perf_counter() - begun
            prop.changed = True
            self._found(prop, error, data, known=known, how="fuzz_one_input")
            return False
        if traced:
            self.arcs.stop()
        prop.examples += 1
        prop.seconds += time.perf_counter() - begun
        prop.changed = True
        if kept is None:
            return False
        prop.valid += 1
        if not traced or self.arcs.count() <= before:
            return False
        prop.discoveries += 1
        prop.recent += 1.0
        prop.last_discovery = round(time.monotonic() - self.started, 3)
        if len(prop.corpus) >= MAX_CORPUS:
            prop.corpus.pop(self.rnd.randrange(len(prop.corpus)))
        prop.corpus.append(bytes(kept))
        return True

    def _found(
        self, prop: Property, error: BaseException, data: bytes, *, known: bool, how: str
    ) -> None:
        """Record a failure once per origin, with how it was found (``fuzz_one_input``,
        ``generated``, or ``database`` for a replay of the test's own database); a new fuzz
        input is also kept under the worker's key (Hypothesis keeps the others)."""
        origin = origin_of(error)
        if origin in prop.origins:
            return
        prop.origins.add(origin)
        if not known and how == "fuzz_one_input":
            self._keep(prop, data)
        self.write(
            "finding",
            nodeid=prop.nodeid,
            origin=origin,
            known=known,
            error=f"{type(error).__name__}: {error}"[:500],
            input=data.hex(),
            how=how,
        )

    def _keep(self, prop: Property, data: bytes) -> None:
        try:
            self.database.save(prop.key, data)
        except Exception as error:  # noqa: BLE001 (a broken database is reported)
            self.write("database_fault", nodeid=prop.nodeid, detail=str(error)[:300])

    def choose(self) -> Property:
        if self._first_slices:
            return self._first_slices.pop()
        self._slices += 1
        if self._slices % FLOOR_EVERY == 0:
            if not self._floor_cycle:
                self._floor_cycle = self.rnd.sample(self.properties, len(self.properties))
            return self._floor_cycle.pop()
        weights = [prop.recent for prop in self.properties]
        if not any(weights):
            return self.rnd.choice(self.properties)
        return self.rnd.choices(self.properties, weights)[0]

    def run(self) -> None:
        self.replay_known()
        while time.monotonic() < self.deadline:
            prop = self.choose()
            self._slice_of(prop)
            spent_before = prop.seconds
            end = min(time.monotonic() + SLICE_SECONDS, self.deadline)
            if prop.in_process is not None and self.rnd.random() < GENERATE_SHARE:
                self._generation_slice(prop, end)
            else:
                found = False
                while time.monotonic() < end:
                    traced = self.rnd.random() < prop.traced
                    data = mutated(prop.corpus, self.rnd, self.dictionary)
                    found |= self._run_one(prop, data, traced=traced)
                prop.traced = 1.0 if found else max(TRACE_FLOOR, prop.traced / 2)
            prop.recent *= math.pow(0.5, (prop.seconds - spent_before) / HALF_LIFE_SECONDS)
            if time.monotonic() - self._last_status >= STATUS_SECONDS:
                self.status()

    def _generation_slice(self, prop: Property, end: float) -> None:
        """One run of the test's own search, sized to the slice by the property's measured
        rate, always traced (one start and stop of the tracer for the whole run). A failure
        is a finding as any other; its example is in the database under the test's own key,
        where the confirmation round's pytest run replays it."""
        assert prop.in_process is not None
        least, most = GENERATED_PER_SLICE
        wanted = max(0.0, end - time.monotonic()) * prop.generated_per_second
        asked = int(min(most, max(least, wanted)))
        before = self.arcs.count()
        begun = time.perf_counter()
        ran = valid = asked  # what a failing run ran is not reported: at most this
        self.arcs.start()
        try:
            ran, valid = prop.in_process(Phase.generate, asked, self.rnd.getrandbits(64))
        except Unsatisfiable:  # every drawn case was filtered out: nothing to learn
            valid = 0
        except (Exception, SystemExit) as error:  # noqa: BLE001 (every failure is a finding)
            self._found(prop, error, b"", known=False, how="generated")
        finally:
            self.arcs.stop()
        spent = time.perf_counter() - begun
        prop.examples += ran
        prop.valid += valid
        prop.seconds += spent
        prop.changed = True
        if ran and spent > 0:
            prop.generated_per_second = 0.5 * prop.generated_per_second + 0.5 * ran / spent
        if self.arcs.count() > before:
            prop.discoveries += 1
            prop.recent += 1.0
            prop.last_discovery = round(time.monotonic() - self.started, 3)

    def status(self) -> None:
        self._last_status = time.monotonic()
        changed = {p.nodeid: p.summary() for p in self.properties if p.changed}
        for prop in self.properties:
            prop.changed = False
        self.write("status", arcs=self.arcs.count(), properties=changed)

    def end(self, reason: str) -> None:
        if self.hang is not None:
            faulthandler.cancel_dump_traceback_later()
        self.write(
            "end",
            reason=reason,
            arcs=self.arcs.count(),
            properties={p.nodeid: p.summary() for p in self.properties},
        )


# -- collection ------------------------------------------------------------------------------


class _Collector:
    """A pytest plugin: loads the campaign's profile before any test module is imported (so
    every test's settings carry the campaign's database), then keeps the collected items."""

    def __init__(self) -> None:
        self.items: list[pytest.Item] = []
        self.problem: str | None = None

    @pytest.hookimpl(trylast=True)  # after Hypothesis has loaded --hypothesis-profile
    def pytest_configure(self, config: pytest.Config) -> None:
        from .fuzz_plugin import load_campaign_profile

        try:
            load_campaign_profile(None, campaign=True)
        except pytest.UsageError as error:  # pytest prints it; the campaign must say it too
            self.problem = str(error)
            raise

    @pytest.hookimpl(trylast=True)  # after -k has deselected its share
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        self.items = list(items)


def collect(
    tests: Sequence[str], keyword: str | None, profile: str
) -> tuple[list[Property], list[tuple[str, str]]]:
    """The fuzzable Hypothesis tests of the selection, in node id order, and the Hypothesis
    tests that cannot be run in this process, each with why (they go to the campaign's
    confirmation round, under pytest)."""
    collector = _Collector()
    arguments = ["--collect-only", "-q", "-p", "no:randomly", "-p", "no:cacheprovider"]
    arguments.append(f"--hypothesis-profile={profile}")
    if keyword is not None:
        arguments += ["-k", keyword]
    status = pytest.main([*arguments, *tests], plugins=[collector])
    if status not in (0, pytest.ExitCode.NO_TESTS_COLLECTED):
        raise UsageRefused(collector.problem or f"pytest refused the selection (status {status})")
    properties, unfuzzable = [], []
    for item in sorted(collector.items, key=lambda item: item.nodeid):
        found = fuzz_target_of(item)
        if found is None:
            continue
        if isinstance(found, str):
            unfuzzable.append((item.nodeid, found))
        else:
            properties.append(Property(item.nodeid, found, in_process_run_of(item)))
    return properties, unfuzzable


class UsageRefused(ValueError):
    """The worker cannot start as asked (exit status 2)."""


def project_roots() -> list[Path]:
    """The files whose arcs count as behaviour: the package, the strategies and the tests of
    the checkout the worker runs in (whichever of them exist)."""
    here = Path.cwd()
    package = Path(__file__).resolve().parents[1]
    roots = [package, here / "strategies", here / "tests", here]
    return list(dict.fromkeys(root for root in roots if root.is_dir()))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="practice_loop.harness.fuzz_worker")
    parser.add_argument("--record", type=Path, required=True)
    parser.add_argument("--hang", type=Path)
    parser.add_argument("--worker", type=int, default=0)
    parser.add_argument("--of", type=int, default=1)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--seconds", type=float, required=True)
    parser.add_argument("--test-timeout", type=float, default=300.0)
    parser.add_argument("--profile", default="nightly")
    parser.add_argument("--exclude", action="append", default=[], metavar="NODEID")
    parser.add_argument("-k", dest="keyword")
    parser.add_argument("tests", nargs="*")
    args = parser.parse_args(argv)
    started = time.monotonic()
    args.record.parent.mkdir(parents=True, exist_ok=True)
    with open(args.record, "a", encoding="utf-8") as record:
        try:
            properties, unfuzzable = collect(args.tests, args.keyword, args.profile)
        except UsageRefused as refused:
            record.write(json.dumps({"event": "refused", "detail": str(refused)}) + "\n")
            return 2
        if settings.default.derandomize:
            detail = f"profile {args.profile!r} is derandomized; a campaign needs fresh inputs"
            record.write(json.dumps({"event": "refused", "detail": detail}) + "\n")
            return 2
        excluded = set(args.exclude)
        mine = [
            prop
            for index, prop in enumerate(properties)
            if index % args.of == args.worker and prop.nodeid not in excluded
        ]
        try:
            database = database_from_environment(os.environ)
        except DatabaseError as error:
            record.write(json.dumps({"event": "refused", "detail": str(error)}) + "\n")
            return 2
        arcs = ArcCounter(project_roots())
        hang = open(args.hang, "w", encoding="utf-8") if args.hang is not None else None
        worker = Worker(
            mine,
            record,
            seed=args.seed,
            deadline=started + args.seconds,
            started=started,
            arcs=arcs,
            database=database,
            test_timeout=args.test_timeout,
            hang=hang,
            dictionary=source_integers(Path(__file__).resolve().parents[1]),
        )
        worker.write(
            "collected",
            nodeids=[prop.nodeid for prop in mine],
            unfuzzable=[list(pair) for pair in unfuzzable if args.worker == 0],
            seed=args.seed,
            worker=args.worker,
        )
        signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            if mine:
                worker.run()
        except KeyboardInterrupt:
            worker.end("interrupted")
            return 130
        except Exception:  # noqa: BLE001 (the worker's own failure, reported as such)
            worker.write("internal_error", detail=traceback.format_exc()[-2000:])
            return INTERNAL_ERROR
        worker.end("time")
    return 0


if __name__ == "__main__":
    sys.exit(main())
