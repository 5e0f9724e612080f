"""``st.from_type`` for every kernel record, through the ``hypothesis`` entry point.

``practice_strategies.registration`` registers one strategy per record type the kernel
exports; ``pyproject.toml`` declares its ``_hypothesis_setup_hook`` under the ``hypothesis``
entry-point group, so any test can ask for ``st.from_type(ComputeBudgetDecision)`` without
importing the strategies. Every drawn value must be exactly its type and well formed
(docs/adr/0003: ``inspect_record`` accepts it, and rebuilding it from its JSON form, which
validates every nested record afresh, gives it back).
"""

from __future__ import annotations

import enum
import importlib.metadata
import os
import subprocess
import sys
import textwrap
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, find, given, settings
from hypothesis import strategies as st

import practice_loop.kernel as kernel
from practice_loop.kernel.record import Record, inspect_record, record_from_json
from practice_strategies import registration, share

ENTRY_POINT_VALUE = "practice_strategies.registration:_hypothesis_setup_hook"


def _exported(kind: type) -> list[type]:
    found = [getattr(kernel, name) for name in kernel.__all__]
    return sorted(
        (value for value in found if isinstance(value, type) and issubclass(value, kind)),
        key=lambda value: value.__name__,
    )


EXPORTED_RECORDS = _exported(Record)
EXPORTED_ENUMS = _exported(enum.Enum)
UNION_ALIASES = {
    "SearchRunOutcome": (kernel.SearchRunRefusal, kernel.GeometricSearchRun),
    "CandidateOperatorOutcome": (kernel.CandidateOperatorResult, kernel.CandidateOperatorRefusal),
    "ReplayOutcome": (kernel.ReplayResult, kernel.ReplayRefusal),
    "AnswerOutcome": (kernel.ProofGatedAnswer, kernel.AnswerRefusal),
}

# A fixed, seeded sample: the same values on every run and under every profile.
SURVEY = settings(
    database=None,
    derandomize=True,
    deadline=None,
    phases=[Phase.generate],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


def _drawn(strategy: st.SearchStrategy[Any], examples: int) -> list[Any]:
    values: list[Any] = []

    @settings(SURVEY, max_examples=examples)
    @given(strategy)
    def collect(value: Any) -> None:
        values.append(value)

    collect()
    return values


def test_every_exported_record_type_has_a_registered_strategy() -> None:
    """A record newly exported from ``practice_loop.kernel`` needs a strategy here."""
    registered = registration.registered_types()
    missing = [t.__name__ for t in EXPORTED_RECORDS if t not in registered]
    assert not missing, f"no registered strategy for: {', '.join(missing)}"
    assert len(EXPORTED_RECORDS) >= 30  # the scan found the records, not an empty list


def test_every_registered_type_is_an_exported_record() -> None:
    """No strategy is kept for a type the kernel no longer exports."""
    stale = [t.__name__ for t in registration.RECORD_TYPES if t not in EXPORTED_RECORDS]
    assert not stale, f"strategies for types the kernel does not export: {', '.join(stale)}"


@pytest.mark.parametrize("record_type", EXPORTED_RECORDS, ids=lambda t: t.__name__)
@share(8)
@given(data=st.data())
def test_from_type_draws_valid_records_of_exactly_that_type(
    record_type: type, data: st.DataObject
) -> None:
    """docs/adr/0003: every drawn record inspects clean; its JSON form rebuilds to itself."""
    value = data.draw(st.from_type(record_type))
    assert type(value) is record_type
    assert inspect_record(value, record_type) is None
    assert record_from_json(record_type, value.to_json()) == value


@pytest.mark.parametrize(
    ("alias", "member"),
    [(alias, member) for alias in sorted(UNION_ALIASES) for member in UNION_ALIASES[alias]],
    ids=lambda value: getattr(value, "__name__", value),
)
def test_outcome_unions_resolve_to_both_registered_members(alias: str, member: type) -> None:
    """A union alias needs no registration of its own: it draws each member's records.
    (``find`` searches a fixed, seeded budget: Hypothesis picks union branches unevenly.)"""
    found = find(
        st.from_type(getattr(kernel, alias)),
        lambda value: type(value) is member,
        settings=settings(SURVEY, max_examples=200),
    )
    assert inspect_record(found, member) is None


def test_closed_enums_resolve_to_every_member_without_registration() -> None:
    """Hypothesis resolves an exported enum to its members by itself; we register none."""
    assert not registration.registered_types() & set(EXPORTED_ENUMS)
    problems = []
    for enum_type in EXPORTED_ENUMS:
        values = _drawn(st.from_type(enum_type), examples=10 * len(enum_type))
        if any(type(v) is not enum_type for v in values):
            problems.append(f"{enum_type.__name__}: drew a non-member")
        unreached = sorted(m.name for m in set(enum_type) - set(values))
        if unreached:
            problems.append(f"{enum_type.__name__}: never drew {', '.join(unreached)}")
    assert not problems, "; ".join(problems)


def test_the_entry_point_is_declared_and_loads_the_hook() -> None:
    """``pyproject.toml`` declares the hook in the ``hypothesis`` entry-point group."""
    ours = [
        entry
        for entry in importlib.metadata.entry_points(group="hypothesis")
        if entry.name == "practice_strategies"
    ]
    assert [entry.value for entry in ours] == [ENTRY_POINT_VALUE]
    assert ours[0].load() is registration._hypothesis_setup_hook


def test_the_hook_is_idempotent() -> None:
    """Calling the hook again registers nothing new and leaves resolution working."""
    before = registration.registered_types()
    assert before == set(registration.RECORD_TYPES)
    registration._hypothesis_setup_hook()
    registration._hypothesis_setup_hook()
    assert registration.registered_types() == before
    (value,) = _drawn(st.from_type(kernel.ComputeBudgetDecision), examples=1)
    assert inspect_record(value, kernel.ComputeBudgetDecision) is None


FRESH_INTERPRETER = textwrap.dedent(
    """
    import sys

    from hypothesis import given, settings, strategies as st

    from practice_loop.kernel import ComputeBudgetDecision
    from practice_loop.kernel.record import inspect_record

    print("loaded" if "practice_strategies.registration" in sys.modules else "not loaded")
    if "practice_strategies.registration" in sys.modules:
        @settings(max_examples=10, database=None, derandomize=True, deadline=None)
        @given(st.from_type(ComputeBudgetDecision))
        def check(budget):
            assert type(budget) is ComputeBudgetDecision
            assert inspect_record(budget, ComputeBudgetDecision) is None

        check()
        print("drawn")
    """
)


@pytest.mark.parametrize(
    ("no_plugins", "expected"), [(False, ["loaded", "drawn"]), (True, ["not loaded"])]
)
def test_a_fresh_interpreter_resolves_records_through_the_entry_point(
    tmp_path: Any, no_plugins: bool, expected: list[str]
) -> None:
    """Without importing ``practice_strategies``, ``import hypothesis`` runs the hook (and
    ``HYPOTHESIS_NO_PLUGINS`` is what turns it off, so it is the entry point doing it)."""
    env = {k: v for k, v in os.environ.items() if k != "HYPOTHESIS_NO_PLUGINS"}
    if no_plugins:
        env["HYPOTHESIS_NO_PLUGINS"] = "1"
    done = subprocess.run(
        [sys.executable, "-c", FRESH_INTERPRETER],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == expected
