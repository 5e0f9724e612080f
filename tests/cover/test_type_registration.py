"""``st.from_type`` for every kernel record, through the ``hypothesis`` entry point.

``practice_strategies.registration`` registers one strategy per record type the kernel
exports; ``pyproject.toml`` declares ``practice_loop.harness.hypothesis_hook:setup`` under the
``hypothesis`` entry-point group (it registers them once the kernel is imported), so any test
can ask for ``st.from_type(ComputeBudgetDecision)`` without importing the strategies. Every
drawn value must be exactly its type and well formed (docs/adr/0003: ``inspect_record``
accepts it, and rebuilding it from its JSON form, which validates every nested record afresh,
gives it back).
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
from practice_loop.harness import hypothesis_hook
from practice_loop.kernel.record import Record, inspect_record, record_from_json
from practice_strategies import registration, share

ENTRY_POINT_VALUE = "practice_loop.harness.hypothesis_hook:setup"


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
    # A record's strategy builds its whole chain through the kernel: slow to generate, which
    # is not a fault of the strategy. Nothing here filters enough to need more (issue 18).
    suppress_health_check=[HealthCheck.too_slow],
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
    assert ours[0].load() is hypothesis_hook.setup


def test_the_hook_is_idempotent() -> None:
    """Calling the hook again (the kernel imported: it registers at once) registers nothing
    new and leaves resolution working."""
    before = registration.registered_types()
    assert before == set(registration.RECORD_TYPES)
    hypothesis_hook.setup()
    hypothesis_hook.setup()
    assert registration.registered_types() == before
    (value,) = _drawn(st.from_type(kernel.ComputeBudgetDecision), examples=1)
    assert inspect_record(value, kernel.ComputeBudgetDecision) is None


FRESH_INTERPRETER = textwrap.dedent(
    """
    import sys

    KERNEL_FIRST = sys.argv[1] == "kernel-first"
    if KERNEL_FIRST:
        import practice_loop.kernel
    import hypothesis
    from hypothesis import given, settings, strategies as st

    # The hook imports neither the kernel nor the strategies: `import hypothesis` stays cheap.
    print("kernel" if "practice_loop.kernel" in sys.modules else "no kernel")
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


def _fresh(tmp_path: Any, order: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", FRESH_INTERPRETER, order],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("no_plugins", "order", "expected"),
    [
        (False, "hypothesis-first", ["no kernel", "loaded", "drawn"]),
        (False, "kernel-first", ["kernel", "loaded", "drawn"]),
        (True, "hypothesis-first", ["no kernel", "not loaded"]),
    ],
)
def test_a_fresh_interpreter_resolves_records_through_the_entry_point(
    tmp_path: Any, no_plugins: bool, order: str, expected: list[str]
) -> None:
    """Without importing ``practice_strategies``, ``import hypothesis`` runs the hook, which
    registers the records once the kernel is imported, before or after Hypothesis (and
    ``HYPOTHESIS_NO_PLUGINS`` is what turns it off, so it is the entry point doing it)."""
    env = {k: v for k, v in os.environ.items() if k != "HYPOTHESIS_NO_PLUGINS"}
    if no_plugins:
        env["HYPOTHESIS_NO_PLUGINS"] = "1"
    done = _fresh(tmp_path, order, env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == expected


def test_a_broken_strategies_package_warns_and_never_breaks_import_hypothesis(tmp_path: Any):
    """Issue 18: Hypothesis calls entry points unguarded. With a `practice_strategies` that
    raises on import first on the path, `import hypothesis` and the kernel still load; the
    hook warns, naming the error, and only `st.from_type` of a record is lost."""
    broken = tmp_path / "shadow" / "practice_strategies"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text('raise RuntimeError("broken on purpose")\n')
    env = {k: v for k, v in os.environ.items() if k != "HYPOTHESIS_NO_PLUGINS"}
    env["PYTHONPATH"] = os.pathsep.join([str(broken.parent), env.get("PYTHONPATH", "")])
    done = _fresh(tmp_path, "hypothesis-first", env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["no kernel", "not loaded"]
    assert "RuntimeWarning: practice_strategies could not register" in done.stderr
    assert "RuntimeError: broken on purpose" in done.stderr
