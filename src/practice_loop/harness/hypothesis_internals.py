"""Every private name of Hypothesis the harness relies on, in one module (issue 18).

The fuzz plugin seeds a test, replays one failure and counts examples per phase through
attributes and a statistics format that Hypothesis does not publish, and reads each minimal
failing test case from Hypothesis's observability callbacks (documented, but experimental
and under ``hypothesis.internal``). They are named only here;
``tests/cover/test_hypothesis_internals.py`` checks each against the installed Hypothesis
through its public decorators, so a release that moves one fails that test by name instead
of quietly changing what a campaign does. The floor and the pin are in ``pyproject.toml``,
``constraints/floor.txt`` and ``constraints/ci.txt``.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import unittest
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, Verbosity, is_hypothesis_test, settings
from hypothesis.configuration import storage_directory
from hypothesis.database import ExampleDatabase
from hypothesis.internal import observability
from hypothesis.stateful import get_state_machine_test
from hypothesis.statistics import collector

# What the public decorators write on a test: ``@seed(n)`` and ``@reproduce_failure(v, b)``.
SEED_ATTRIBUTE = "_hypothesis_internal_use_seed"
REPRODUCTION_ATTRIBUTE = "_hypothesis_internal_use_reproduce_failure"
# What ``@settings`` writes on a test, and what the pytest plugin adds to a parametrized
# item's inner test so that its database key is the item's own.
SETTINGS_ATTRIBUTE = "_hypothesis_internal_use_settings"
ADD_DIGEST_ATTRIBUTE = "_hypothesis_internal_add_digest"
# The sub-key of a test's database key where examples go that a run replays but never takes
# for already shrunk (``fuzz_one_input`` saves there too); the primary key holds only
# shrunk failures, which a run replays without shrinking them again.
SECONDARY_SUFFIX = b".secondary"
# What a ``RuleBasedStateMachine.TestCase``'s test method points back to its machine with.
STATE_MACHINE_ATTRIBUTE = "_hypothesis_state_machine_class"
# Phases whose test cases are examples run; shrinking and explaining re-run a known failure.
SEARCH_PHASES = ("explicit", "reuse", "generate", "target")
ALL_PHASES = (*SEARCH_PHASES, "shrink", "explain")
_NOT_SET = object()
# The first release whose GitHubArtifactDatabase reads the zips actions/upload-artifact
# writes (they hold no directory entries; older releases fail with a KeyError).
READS_ARTIFACT_ZIPS = (6, 156, 2)
# How an observation names the final replay of a minimal failing test case: "example" up to
# 6.158, "test case" from 6.159 (the release that renamed examples in its output).
MINIMAL_FAILING_WORDINGS = ("minimal failing example", "minimal failing test case")


def target_of(obj: Any) -> Any:
    """What carries ``@seed``/``@reproduce_failure`` for a collected test object: the
    ``@given`` function, or the state machine class behind a ``TestCase``; else ``None``."""
    function = getattr(obj, "__func__", obj)
    machine = getattr(function, STATE_MACHINE_ATTRIBUTE, None)
    if machine is not None:
        return machine
    return function if function is not None and is_hypothesis_test(function) else None


def fuzz_target_of(item: Any) -> Callable[[bytes], bytes | None] | str | None:
    """What runs a collected test once on a fuzz input (``fuzz_one_input``); a sentence
    saying why it cannot be run outside pytest (it takes fixtures); ``None`` when it is not a
    Hypothesis test.

    A parametrized test's fuzz target is made with the item's parameters bound: its
    ``inner_test`` (which Hypothesis lets a runner replace) is, for the moment the target is
    made, the test with them, wrapped so that its database key is the one pytest's own run
    of the item uses (Hypothesis's pytest plugin adds the node id to it). So a failure
    ``fuzz_one_input`` saves is replayed by ``pytest NODEID``. A state machine's target is
    the test Hypothesis builds for it (``get_state_machine_test``, what HypoFuzz calls)."""
    target = target_of(getattr(item, "obj", None))
    if target is None:
        return None
    if isinstance(target, type):  # built from the machine alone, without the TestCase
        return get_state_machine_test(target).hypothesis.fuzz_one_input
    params = dict(getattr(getattr(item, "callspec", None), "params", {}))
    fixtures = [name for name in getattr(item, "fixturenames", ()) if name not in params]
    if fixtures:
        return "it takes pytest fixtures (" + ", ".join(fixtures) + ")"
    handle = target.hypothesis
    if not params:
        return handle.fuzz_one_input
    inner = handle.inner_test

    @functools.wraps(inner)
    def with_parameters(*args: Any, **kwargs: Any) -> Any:
        return inner(*args, **params, **kwargs)

    with_parameters._hypothesis_internal_add_digest = item.nodeid.encode()  # type: ignore[attr-defined]
    # The target binds no argument of its own, so for the moment it is made the test's
    # signature is shown without the bound parameters (it checks the arguments against it).
    signature = inspect.signature(target)
    unbound = signature.replace(
        parameters=[p for name, p in signature.parameters.items() if name not in params]
    )
    handle.inner_test = with_parameters
    target.__signature__ = unbound
    try:
        return handle._get_fuzz_target()  # the property caches one target per function
    finally:
        handle.inner_test = inner
        target.__signature__ = signature


class SavesToSecondary(ExampleDatabase):
    """A database that reads as ``inner`` does but writes every example to its key's
    secondary corpus: a failure found or replayed in the worker without shrinking must not
    stand in the primary corpus, where pytest's next run would replay it as already shrunk
    and report it unshrunk."""

    def __init__(self, inner: ExampleDatabase) -> None:
        super().__init__()
        self._inner = inner

    @staticmethod
    def _secondary(key: bytes) -> bytes:
        return key if key.endswith(SECONDARY_SUFFIX) else key + SECONDARY_SUFFIX

    def save(self, key: bytes, value: bytes) -> None:
        self._inner.save(self._secondary(key), value)

    def fetch(self, key: bytes) -> Iterable[bytes]:
        return self._inner.fetch(key)

    def delete(self, key: bytes, value: bytes) -> None:
        self._inner.delete(key, value)  # Hypothesis's own housekeeping: one no longer failing

    def move(self, src: bytes, dest: bytes, value: bytes) -> None:
        self._inner.delete(src, value)
        self.save(dest, value)


# What an in-process run of a test does: its own search, or a replay of its database.
InProcessRun = Callable[[Phase, int, int], tuple[int, int]]


def in_process_run_of(item: Any) -> InProcessRun | None:
    """What runs a collected test inside this process, one Hypothesis phase at a time, with
    no shrinking and no health check: ``run(Phase.generate, examples, seed)`` is the test's
    own search for ``examples`` test cases from ``seed``; ``run(Phase.reuse, 0, 0)`` replays
    what its database holds for it (a failure an earlier campaign found). Either returns how
    many test cases ran and how many of those were valid (not filtered out); a failure is
    raised as the test raised it. The test is called as pytest calls it: a parametrized item
    with its parameters, under the database key pytest's run of the item uses (so a failing
    example it saves is the one ``pytest NODEID`` replays, in the secondary corpus so that
    run shrinks it); a state machine through ``get_state_machine_test``. ``None`` when the
    test takes fixtures or is not a Hypothesis test."""
    target = target_of(getattr(item, "obj", None))
    if target is None:
        return None
    params = dict(getattr(getattr(item, "callspec", None), "params", {}))
    if isinstance(target, type):
        function: Any = get_state_machine_test(target)
        params = {}
    else:
        if any(name not in params for name in getattr(item, "fixturenames", ())):
            return None
        function = target
    base = getattr(function, SETTINGS_ATTRIBUTE, None) or settings.default
    inner = function.hypothesis.inner_test
    digest = item.nodeid.encode() if params else getattr(inner, ADD_DIGEST_ATTRIBUTE, None)

    def run(phase: Phase, examples: int, seed: int) -> tuple[int, int]:
        chosen = settings(
            base,
            database=None if base.database is None else SavesToSecondary(base.database),
            max_examples=max(examples, 1),
            phases=(phase,),
            deadline=None,
            derandomize=False,
            suppress_health_check=list(HealthCheck),
            report_multiple_bugs=False,
            verbosity=Verbosity.quiet,
        )
        counted: list[dict[str, Any]] = []
        with contextlib.ExitStack() as stack:
            stack.enter_context(_attribute_set(function, SETTINGS_ATTRIBUTE, chosen))
            stack.enter_context(seeded(function, seed))
            if digest is not None:
                stack.enter_context(_attribute_set(inner, ADD_DIGEST_ATTRIBUTE, digest))
            stack.enter_context(statistics_to(counted.append))
            try:
                function(**params)
            except unittest.SkipTest:  # a replay with nothing to replay runs no test case
                return 0, 0
        counts = phase_counts(counted).get(phase.name, {})
        return sum(counts.values()), counts.get("valid", 0)

    return run


def own_seed(target: Any) -> int | None:
    """The test's own ``@seed``, if it has one."""
    return getattr(target, SEED_ATTRIBUTE, None)


@contextmanager
def _attribute_set(target: Any, name: str, value: object) -> Iterator[None]:
    previous = vars(target).get(name, _NOT_SET)
    setattr(target, name, value)
    try:
        yield
    finally:
        if previous is _NOT_SET:
            delattr(target, name)
        else:
            setattr(target, name, previous)


def seeded(target: Any, seed: int) -> Any:
    """Run ``target`` as if decorated ``@seed(seed)``, for the block only."""
    return _attribute_set(target, SEED_ATTRIBUTE, seed)


def reproducing(target: Any, reproduction: tuple[str, str]) -> Any:
    """Run ``target`` as if decorated ``@reproduce_failure(version, blob)``, for the block."""
    return _attribute_set(target, REPRODUCTION_ATTRIBUTE, reproduction)


@contextmanager
def statistics_to(callback: Callable[[dict[str, Any]], None]) -> Iterator[None]:
    """Hand every test's statistics to ``callback`` inside the block, and to whatever
    collector was there before (pytest's own ``--hypothesis-show-statistics``)."""
    outer = collector.value

    def both(stats: dict[str, Any]) -> None:
        callback(dict(stats))
        if outer is not None:
            outer(stats)

    with collector.with_value(both):
        yield


def phase_counts(statistics: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Per phase, the test cases that were valid, invalid or failing."""
    counts: dict[str, dict[str, int]] = {}
    for stats in statistics:
        for phase in ALL_PHASES:
            cases = stats.get(f"{phase}-phase", {}).get("test-cases", [])
            if not cases:
                continue
            phase_counts = counts.setdefault(phase, {"valid": 0, "invalid": 0, "failing": 0})
            for case in cases:
                status = case.get("status")
                key = (
                    "valid"
                    if status == "valid"
                    else "failing"
                    if status == "interesting"
                    else "invalid"
                )
                phase_counts[key] += 1
    return counts


def found_in(statistics: list[dict[str, Any]]) -> str | None:
    """The first phase that found a failure: ``reuse`` means replayed from the database."""
    for stats in statistics:
        for phase in SEARCH_PHASES:
            if stats.get(f"{phase}-phase", {}).get("distinct-failures", 0):
                return phase
    return None


@contextmanager
def minimal_failures_to(callback: Callable[[str, str | None], None]) -> Iterator[None]:
    """Hand ``callback`` the representation and ``@reproduce_failure`` decorator of each
    minimal failing test case Hypothesis reports inside the block, in this thread. A failing
    explicit example is not one (Hypothesis observes it as given up).

    While observability is on, Hypothesis prints every example's arguments: a fuzz round
    would run half as many examples (``benchmarks/bench_observability.py``). So it is
    switched on only when a test's search has ended, which is when Hypothesis hands out the
    search's statistics, before it replays each minimal failing test case; from then on the
    block is observed, so a block serves one test (the fuzz plugin opens one per test).
    Observability's line coverage collection is off for the block: it would slow the replay
    and fight pytest-cov."""

    def observe(observation: Any) -> None:
        if (
            observation.type == "test_case"
            and observation.status == "failed"
            and observation.how_generated in MINIMAL_FAILING_WORDINGS
        ):
            callback(observation.representation, observation.metadata.reproduction_decorator)

    observing: list[bool] = []
    outer = collector.value

    def search_ended(stats: dict[str, Any]) -> None:
        if outer is not None:
            outer(stats)
        if not observing:
            observability.add_observability_callback(observe)
            observing.append(True)

    collect_coverage = observability.OBSERVABILITY_COLLECT_COVERAGE
    observability.OBSERVABILITY_COLLECT_COVERAGE = False
    try:
        with collector.with_value(search_ended):
            yield
    finally:
        if observing:
            observability.remove_observability_callback(observe)
        observability.OBSERVABILITY_COLLECT_COVERAGE = collect_coverage


def storage_path(*names: str) -> Path:
    """Hypothesis's storage directory (``.hypothesis/`` where it was imported, unless set)
    joined with ``names``; a ``Path`` up to 6.14x, an object holding one since."""
    found = storage_directory(*names, intent_to_write=False)
    return Path(getattr(found, "path", found))


def reads_artifact_zips() -> bool:
    """Whether the installed Hypothesis can replay a GitHub Actions artifact."""
    import hypothesis

    release = tuple(int(part) for part in hypothesis.__version__.split(".")[:3])
    return release >= READS_ARTIFACT_ZIPS
