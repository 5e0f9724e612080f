"""The private names of Hypothesis the fuzz plugin relies on (issue 18), each checked against
the installed release through Hypothesis's public API: when a release moves one, these fail
by name (``practice_loop/harness/hypothesis_internals.py`` is the one place to change)."""

from __future__ import annotations

import hypothesis
import pytest
from hypothesis import example, given, reproduce_failure, seed, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, rule

from practice_loop.harness import hypothesis_internals as internals
from practice_loop.harness.fuzz_report import failure_from_observation

QUIET = settings(database=None, deadline=None, max_examples=20, derandomize=False)


def _drawn_under(seed_value: int | None) -> list[int]:
    drawn: list[int] = []

    @QUIET
    @given(st.integers())
    def probe(x: int) -> None:
        drawn.append(x)

    if seed_value is None:
        probe()
    else:
        with internals.seeded(internals.target_of(probe), seed_value):
            probe()
    return drawn


def test_the_seed_attribute_is_what_seed_writes_and_what_hypothesis_reads():
    @seed(1234)
    @given(st.integers())
    def decorated(x: int) -> None:
        pass

    assert internals.own_seed(internals.target_of(decorated)) == 1234
    # Hypothesis reads it: the same seed draws the same examples, another seed others.
    assert _drawn_under(7) == _drawn_under(7)
    assert _drawn_under(7) != _drawn_under(8)


def test_seeding_for_a_block_leaves_the_test_as_it_was():
    @given(st.integers())
    def plain(x: int) -> None:
        pass

    @seed(5)
    @given(st.integers())
    def own(x: int) -> None:
        pass

    for test, before in ((plain, None), (own, 5)):
        target = internals.target_of(test)
        with internals.seeded(target, 99):
            assert internals.own_seed(target) == 99
        assert internals.own_seed(target) == before


def test_the_reproduction_attribute_is_what_reproduce_failure_writes():
    @reproduce_failure(hypothesis.__version__, "AAAA")
    @given(st.integers())
    def decorated(x: int) -> None:
        pass

    reproduction = (hypothesis.__version__, "AAAA")
    assert getattr(decorated, internals.REPRODUCTION_ATTRIBUTE) == reproduction

    @given(st.integers())
    def plain(x: int) -> None:
        pass

    before = dict(vars(plain))
    with internals.reproducing(internals.target_of(plain), reproduction):
        assert getattr(plain, internals.REPRODUCTION_ATTRIBUTE) == reproduction
    assert vars(plain) == before  # as it was, whether Hypothesis had set a default or not


def test_the_settings_attribute_is_what_settings_writes_and_the_digest_one_is_read():
    """``generation_run_of`` swaps a test's settings for one run and adds the item's digest
    to its database key, as the pytest plugin does for a parametrized item."""

    @settings(max_examples=3, database=None)
    @given(st.integers())
    def decorated(x: int) -> None:
        pass

    assert getattr(decorated, internals.SETTINGS_ATTRIBUTE).max_examples == 3
    from hypothesis.internal.reflection import function_digest

    inner = decorated.hypothesis.inner_test
    plain = function_digest(inner)
    setattr(inner, internals.ADD_DIGEST_ATTRIBUTE, b"t.py::x[1]")
    assert function_digest(inner) != plain


def test_a_state_machines_test_case_leads_back_to_its_machine():
    class Machine(RuleBasedStateMachine):
        @rule()
        def step(self) -> None:
            pass

    assert internals.target_of(Machine.TestCase.runTest) is Machine
    assert internals.target_of(lambda: None) is None  # not a Hypothesis test


def test_statistics_are_collected_in_the_format_the_counts_read():
    """Hypothesis's per-test statistics, as its collector hands them out: examples per phase
    by status, and the phase that found a failure."""
    collected: list[dict] = []

    @QUIET
    @given(st.integers(min_value=0, max_value=1000))
    def passes(x: int) -> None:
        pass

    @settings(database=None, deadline=None, max_examples=200, derandomize=True)
    @given(st.integers(min_value=0, max_value=1000))
    def fails(x: int) -> None:
        assert x < 10

    with internals.statistics_to(collected.append):
        passes()
        with pytest.raises(AssertionError):
            fails()
    assert len(collected) == 2
    counts = internals.phase_counts(collected[:1])
    assert counts["generate"]["valid"] > 0 and counts["generate"]["failing"] == 0
    assert internals.found_in(collected[:1]) is None
    assert internals.phase_counts(collected[1:])["generate"]["failing"] >= 1
    assert internals.found_in(collected[1:]) == "generate"


def test_each_minimal_failing_test_case_is_observed_with_the_decorator_that_replays_it():
    """Hypothesis's observation of each minimal failing test case: its representation, in
    one of the known wordings, and a ``@reproduce_failure`` decorator that replays it; a
    failing explicit example is not one; the block leaves observability as it was."""
    seen: list[tuple[str, str | None]] = []

    @settings(database=None, deadline=None, max_examples=500, derandomize=True)
    @given(st.integers())
    def two_bugs(x: int) -> None:
        if x > 10:
            raise ValueError(x)
        if x < -10:
            raise KeyError(x)

    @settings(database=None, deadline=None)
    @example(5)
    @given(st.integers())
    def explicit(x: int) -> None:
        assert x != 5

    enabled = internals.observability.observability_enabled()
    collects = internals.observability.OBSERVABILITY_COLLECT_COVERAGE
    with internals.minimal_failures_to(lambda *observed: seen.append(observed)):
        with pytest.raises(ExceptionGroup):
            two_bugs()
        with pytest.raises(AssertionError):
            explicit()
    assert internals.observability.observability_enabled() == enabled
    assert internals.observability.OBSERVABILITY_COLLECT_COVERAGE == collects
    assert sorted(text for text, _ in seen) == [
        "two_bugs(\n    x=-11,\n)",
        "two_bugs(\n    x=11,\n)",
    ]
    for text, decorator in seen:
        failure = failure_from_observation(text, decorator)
        assert failure.version == hypothesis.__version__ and failure.blob, decorator
        replayed = reproduce_failure(failure.version, failure.blob.encode())(two_bugs)
        with pytest.raises(ValueError if "x=11" in text else KeyError):
            replayed()


def test_observability_is_on_only_for_the_replay_after_the_search():
    """The search runs unobserved (observing makes Hypothesis print every example); the
    replay of the minimal failing test case is observed. A block serves one test: once a
    search in it has ended, the rest of the block is observed."""
    observed_calls: list[bool] = []

    @settings(database=None, deadline=None, max_examples=50, derandomize=True)
    @given(st.integers(min_value=0, max_value=1000))
    def passes(x: int) -> None:
        observed_calls.append(internals.observability.observability_enabled())

    @settings(database=None, deadline=None, max_examples=50, derandomize=True)
    @given(st.integers(min_value=0, max_value=1000))
    def fails(x: int) -> None:
        observed_calls.append(internals.observability.observability_enabled())
        assert x < 10

    if internals.observability.observability_enabled():
        pytest.skip("observability is on for the whole run (HYPOTHESIS_EXPERIMENTAL_...)")
    with internals.minimal_failures_to(lambda *_: None):  # one block per test, as a round's
        passes()
    assert len(observed_calls) == 50 and not any(observed_calls)
    observed_calls.clear()
    with internals.minimal_failures_to(lambda *_: None):
        with pytest.raises(AssertionError):
            fails()
    assert observed_calls[-1] is True  # the replay
    assert not any(observed_calls[:-1])  # the search and the shrink


def test_no_other_module_names_a_private_hypothesis_name():
    """The adapter is the only place: no other module of the package or the strategies
    spells a private attribute, imports ``hypothesis.internal`` or the statistics collector."""
    from pathlib import Path

    root = Path(internals.__file__).resolve().parents[3]
    if not (root / "src").is_dir():
        pytest.skip("needs a checkout: the package is installed, not under src/")
    private = ("_hypothesis_internal", "_hypothesis_state_machine", "hypothesis.internal",
               "hypothesis.statistics")  # fmt: skip
    offenders = [
        f"{path.relative_to(root)}: {name}"
        for folder in (root / "src", root / "strategies")
        for path in sorted(folder.rglob("*.py"))
        if path.resolve() != Path(internals.__file__).resolve()
        for name in private
        if name in path.read_text(encoding="utf-8")
    ]
    assert not offenders, offenders
