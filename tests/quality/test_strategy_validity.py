"""The valid strategies only make inputs the kernel accepts, and every recipe keeps its word.

These are tests of ``practice_strategies`` itself: a strategy that quietly produced a
malformed frame, or a recipe that stopped giving its gate reason or blocker, would make every
property built on it test something else than it says (docs/strategies.md).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from practice_loop.kernel import (
    ComputeBudgetDecision,
    ComputeBudgetStatus,
    ContractAssessment,
    ContractResidual,
    Defect,
    GateReason,
    GeometricSearchInput,
    GeometricSearchRun,
    OpenedSearchRun,
    OperatorSetManifest,
    ProblemFrame,
    SearchGateDecision,
    SearchGateStatus,
    SearchRunRefusal,
    SourceSpan,
    assess,
    is_digest,
    is_version,
    verify_sealed_trace,
)
from practice_loop.kernel import checks as kernel_checks
from practice_loop.kernel.record import inspect_record
from practice_strategies import (
    FRAME_RECIPES,
    Chain,
    chains,
    codes,
    digests,
    eligible_chains,
    hostile_characters,
    labels,
    malformed_digests,
    malformed_versions,
    problem_frames,
    run_outcome,
    share,
    source_texts,
    span_sequences,
    span_texts,
    spans,
    spans_in,
    texts_with_lone_surrogate,
    versions,
)
from practice_strategies.registration import (
    BLOCKER_RECIPES,
    RUN_CONFIGURATIONS,
    configured_chains,
    traces,
)


def _by_value(table: dict[Any, Any]) -> list[Any]:
    return sorted(table, key=lambda key: key.value)


# ------------------------------------------------------------------------------------------
# Primitives


@share(4)
@given(digests)
def test_digests_are_full_lowercase_sha256_hex(value: str) -> None:
    """docs/adr/0003: 64 characters of ``0-9a-f``."""
    assert is_digest(value)


@share(4)
@given(malformed_digests)
def test_malformed_digests_are_not_digests(value: str) -> None:
    assert not is_digest(value)


@share(4)
@given(versions)
def test_versions_are_well_formed(value: str) -> None:
    assert is_version(value)


@share(4)
@given(malformed_versions)
def test_malformed_versions_are_not_versions(value: str) -> None:
    assert not is_version(value)


@share(4)
@given(codes)
def test_codes_are_closed_codes(value: str) -> None:
    """A reason, blocker or obligation code: lowercase snake case (docs/adr/0003)."""
    assert kernel_checks.code(value) is None


@share(4)
@given(st.one_of(labels, span_texts, source_texts))
def test_texts_are_non_empty_and_hashable(value: str) -> None:
    """Valid text is hostile but never empty and never holds a lone surrogate."""
    assert kernel_checks.label(value) is None
    value.encode("utf-8")


@share(4)
@given(hostile_characters)
def test_hostile_characters_encode_as_utf8(value: str) -> None:
    value.encode("utf-8")


@share(4)
@given(texts_with_lone_surrogate)
def test_texts_with_a_lone_surrogate_are_refused_as_text(value: str) -> None:
    assert kernel_checks.text(value) is Defect.TEXT_LONE_SURROGATE


@share(4)
@given(spans())
def test_spans_are_well_formed(span: SourceSpan) -> None:
    assert inspect_record(span, SourceSpan) is None


@share(4)
@given(span_sequences(min_size=1))
def test_span_sequences_are_tuples_of_well_formed_spans(sequence: tuple[SourceSpan, ...]) -> None:
    assert type(sequence) is tuple and sequence
    assert all(inspect_record(span, SourceSpan) is None for span in sequence)


@share(4)
@given(source_texts, st.data())
def test_spans_in_a_source_are_exact_slices_of_it(source: str, data: st.DataObject) -> None:
    """docs/adr/0003: a span is ``source[start:end]``, offsets in code points."""
    span = data.draw(spans_in(source))
    assert inspect_record(span, SourceSpan) is None
    assert source[span.start : span.end] == span.text


# ------------------------------------------------------------------------------------------
# Frames: judged, never refused as malformed

FRAME_SOURCES: dict[str, st.SearchStrategy[ProblemFrame]] = {
    "problem_frames()": problem_frames(),
    **{
        f"FRAME_RECIPES[{reason.name}]": problem_frames(**FRAME_RECIPES[reason])
        for reason in _by_value(FRAME_RECIPES)
    },
}


@pytest.mark.parametrize("source", sorted(FRAME_SOURCES))
@share(8)
@given(data=st.data())
def test_drawn_frames_are_judged_not_refused_as_malformed(source: str, data: st.DataObject) -> None:
    """docs/adr/0005: a well-formed frame gets an assessment, never ``frame_malformed``."""
    frame = data.draw(FRAME_SOURCES[source])
    assert inspect_record(frame, ProblemFrame) is None
    assert type(assess(frame)) is ContractAssessment


@pytest.mark.parametrize("code", _by_value(BLOCKER_RECIPES), ids=lambda c: c.name)
@share(8)
@given(data=st.data())
def test_each_blocker_recipe_gives_its_blocker(code: Any, data: st.DataObject) -> None:
    """``BLOCKER_RECIPES[code]`` frames are judged (docs/adr/0005), and refused with ``code``
    among their blockers."""
    frame = data.draw(problem_frames(**BLOCKER_RECIPES[code]))
    assert inspect_record(frame, ProblemFrame) is None
    assessment = assess(frame)
    assert type(assessment) is ContractAssessment
    assert code in [blocker.code for blocker in assessment.blockers]


# ------------------------------------------------------------------------------------------
# Chains: every record inspects clean, and the recipe's reason is the gate's

_CHAIN_RECORDS: tuple[tuple[str, type], ...] = (
    ("frame", ProblemFrame),
    ("assessment", ContractAssessment),
    ("gate", SearchGateDecision),
    ("budget", ComputeBudgetDecision),
    ("search_input", GeometricSearchInput),
    ("operator_set", OperatorSetManifest),
)


def _assert_clean(chain: Chain) -> None:
    for name, record_type in _CHAIN_RECORDS:
        found = inspect_record(getattr(chain, name), record_type)
        assert found is None, f"{name}: {found}"
    for residual in chain.residuals:
        assert inspect_record(residual, ContractResidual) is None
    # Each record is bound to the one before it.
    gate, budget, bound = chain.gate, chain.budget, chain.search_input
    assert gate.contract_assessment_id == chain.assessment.assessment_id
    assert gate.residual_ids == tuple(r.residual_id for r in chain.residuals)
    assert budget.gate_decision_id == gate.decision_id
    assert (bound.gate_decision_id, bound.budget_id) == (gate.decision_id, budget.budget_id)


@pytest.mark.parametrize("reason", _by_value(FRAME_RECIPES), ids=lambda r: r.name)
@share(8)
@given(data=st.data())
def test_chains_give_their_reason_with_every_record_clean(
    reason: GateReason, data: st.DataObject
) -> None:
    """ADR-0226 §7B, docs/adr/0002: ``chains(reason)`` is a whole valid chain whose gate
    gives ``reason``; the search run that follows it is a clean record too."""
    chain = data.draw(chains(reason))
    _assert_clean(chain)
    assert chain.gate.reason_code == reason.value
    outcome = run_outcome(chain)
    assert inspect_record(outcome, type(outcome)) is None
    eligible = chain.gate.status is SearchGateStatus.ELIGIBLE
    assert type(outcome) is (GeometricSearchRun if eligible else SearchRunRefusal)


@share(4)
@given(eligible_chains())
def test_eligible_chains_are_allowed_a_budget(chain: Chain) -> None:
    """ADR-0227 §8: every eligible reason ``search_gate.v1`` gives has an allowed row."""
    _assert_clean(chain)
    assert chain.gate.status is SearchGateStatus.ELIGIBLE
    assert chain.budget.status is ComputeBudgetStatus.BUDGET_ALLOWED


@pytest.mark.parametrize(
    "configuration",
    RUN_CONFIGURATIONS,
    ids=lambda c: f"{c[0]}+{c[1].operator_set_version}",
)
@share(3)
@given(data=st.data())
def test_configured_chains_open_or_refuse_as_their_configuration_says(
    configuration: Any, data: st.DataObject
) -> None:
    """docs/adr/0004: under each authorized configuration, an eligible chain opens (v2) or
    is the inert shell (v1); every other chain is refused; every record is clean."""
    chain = data.draw(configured_chains(*configuration))
    _assert_clean(chain)
    outcome = run_outcome(chain)
    assert inspect_record(outcome, type(outcome)) is None
    if chain.gate.status is not SearchGateStatus.ELIGIBLE:
        assert type(outcome) is SearchRunRefusal
    elif configuration[0].endswith(".v1"):
        assert type(outcome) is GeometricSearchRun
    else:
        assert type(outcome) is OpenedSearchRun


@share(4)
@given(traces())
def test_traces_are_sealed_and_verify(trace: Any) -> None:
    """docs/adr/0007: the loop over a drawn frame seals a trace that verifies."""
    assert verify_sealed_trace(trace).valid
