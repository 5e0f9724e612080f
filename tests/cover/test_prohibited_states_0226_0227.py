"""Prohibited states of ADR-0226 §8-§13 and ADR-0227 §8-§13 that no other test pinned down.

Each test here was written for a mutant of ``docs/mutants/adr-0226-0227.toml`` (issue 17) that
the tests of its obligation let through: it states the rule the mutant breaks and asserts the
exact typed answer the kernel gives instead (ADR-0228 §17, ADR-0231 §18: tests that
meaningfully fail for each prohibited state).
"""

from __future__ import annotations

import contextlib
import dataclasses
import sqlite3
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from practice_loop.kernel import (
    CANDIDATE_OPERATOR_SET,
    PROBLEM_FRAME_SCHEMA_VERSION,
    UNARY_DELTA_ORGAN,
    AssessmentStatus,
    Blocker,
    BlockerCode,
    CandidateAttempt,
    CandidateOperatorResult,
    CandidateReplayStatus,
    ComputeBudgetStatus,
    ContractAssessment,
    Defect,
    FrameHazard,
    GateReason,
    HazardCode,
    OpenedSearchRun,
    ProblemFrame,
    RecordDefect,
    RecordError,
    Role,
    SealedPracticeTrace,
    SearchGateDecision,
    SearchGateStatus,
    SearchRunRefusal,
    SourceSpan,
    decide_compute_budget,
    decide_search_gate,
    practice_case,
    project_residuals,
    record_attempts,
)
from practice_loop.product.store import (
    CaseRow,
    ReadOnlyTraceStore,
    StoreError,
    StoreProblem,
    TraceStore,
)
from practice_strategies import (
    FRAME_RECIPES,
    Chain,
    chains,
    eligible_chains,
    fields_for_sealing,
    problem_frames,
    share,
)

ELIGIBLE_ONE_CUE = {**FRAME_RECIPES[GateReason.ELIGIBLE_MISSING_ROLE], "cue_count": 1}
SPAN = SourceSpan("seven", 4, 9, 0)
V1_GATE_REASONS = (
    "eligible_missing_role",
    "eligible_missing_relation",
    "eligible_missing_proposal",
    "eligible_target_unbound",
)


# --------------------------------------------------------------------------------------------
# ADR-0226 §8.1, §8.3: only the assessment's status says runnable; the gate never does


@pytest.mark.obligation("ADR-0226/8.1", "ADR-0226/8.3")
@share(8)
@given(chain=chains())
def test_a_refusal_with_nothing_to_project_is_never_runnable_to_the_gate(chain: Chain) -> None:
    """ADR-0226 §8.1, §8.3: a refused assessment that carries no blocker (and so projects no
    residual) is still refused: the gate may not read it as runnable or solved. Its answer is
    UNASSESSABLE with gate_unassessable_no_residual, never gate_blocked_assessment_runnable."""
    fields = fields_for_sealing(chain.assessment, status=AssessmentStatus.REFUSED, blockers=())
    refused = ContractAssessment.sealed(**fields)
    gate = decide_search_gate(refused, ())
    assert gate.status is SearchGateStatus.UNASSESSABLE
    assert gate.reason_code == "gate_unassessable_no_residual"
    assert gate.contract_assessment_id == refused.assessment_id
    assert gate.residual_ids == ()


# --------------------------------------------------------------------------------------------
# ADR-0226 §8.2: residuals handed to the gate decide nothing


@pytest.mark.obligation("ADR-0226/8.2")
@share(8)
@given(chain=chains(GateReason.MULTIPLE_RESIDUALS))
def test_a_context_that_is_not_the_projection_decides_nothing(chain: Chain) -> None:
    """ADR-0226 §8.2: a residual explains a refusal and decides nothing, so a context that is
    not exactly the assessment's projection (here one residual of several, which alone could
    look searchable) is gate_unassessable_residual_context_mismatch, whatever it holds."""
    assert len(chain.residuals) > 1
    for context in ((chain.residuals[0],), (chain.residuals[-1],), chain.residuals[::-1]):
        gate = decide_search_gate(chain.assessment, context)
        assert gate.status is SearchGateStatus.UNASSESSABLE
        assert gate.reason_code == "gate_unassessable_residual_context_mismatch"
        assert decide_compute_budget(gate).status is ComputeBudgetStatus.BUDGET_BLOCKED


# --------------------------------------------------------------------------------------------
# ADR-0226 §8.5: the run promotes nothing


@pytest.mark.obligation("ADR-0226/8.5")
@share(8)
@given(frame=problem_frames(**ELIGIBLE_ONE_CUE))
def test_the_run_records_no_attempt_already_marked_closed(frame) -> None:
    """ADR-0226 §8.5: the run may not promote a result. An attempt handed to it as
    replay_closed (or replay_refused), before any replay judged it, is refused with
    attempt_not_pending; nothing of it is recorded."""
    trace = practice_case(frame)
    assert type(trace) is SealedPracticeTrace
    opened = trace.opened_run
    assert type(opened) is OpenedSearchRun
    (result,) = trace.operator_outcomes
    assert type(result) is CandidateOperatorResult
    pending = result.candidate_attempt
    assert pending.replay_status is CandidateReplayStatus.REPLAY_PENDING
    for status, blockers in (
        (CandidateReplayStatus.REPLAY_CLOSED, ()),
        (CandidateReplayStatus.REPLAY_REFUSED, ("unit_mismatch",)),
    ):
        promoted = CandidateAttempt.sealed(
            **fields_for_sealing(pending, replay_status=status, replay_blockers=blockers)
        )
        outcome = record_attempts(opened, CANDIDATE_OPERATOR_SET, (promoted,))
        assert type(outcome) is SearchRunRefusal
        assert outcome.reason_codes == ("attempt_not_pending",)


# --------------------------------------------------------------------------------------------
# ADR-0227 §8 last row: a reason the table does not name exactly has no row


@pytest.mark.obligation("ADR-0227/8.eligible_unknown_code")
@share(8)
@given(chain=eligible_chains())
def test_a_reason_that_only_starts_like_a_row_is_unknown(chain: Chain) -> None:
    """ADR-0227 §8 last row: rows are keyed by the exact gate reason code. An ELIGIBLE gate
    whose code merely begins with a known one (eligible_missing_role_twice, ...) has no row:
    BUDGET_UNASSESSABLE, budget_unassessable_unknown_reason_code, every limit zero."""
    for known in V1_GATE_REASONS:
        code = f"{known}_twice"
        gate = SearchGateDecision.sealed(**fields_for_sealing(chain.gate, reason_code=code))
        assert gate.status is SearchGateStatus.ELIGIBLE and gate.find_defect() is None
        budget = decide_compute_budget(gate)
        assert budget.status is ComputeBudgetStatus.BUDGET_UNASSESSABLE
        assert budget.reason_code == "budget_unassessable_unknown_reason_code"
        limits = (budget.max_candidates, budget.max_depth, budget.max_steps)
        assert limits + (budget.max_parallelism,) == (0, 0, 0, 0)


# --------------------------------------------------------------------------------------------
# ADR-0226 §8.11: the display surface cannot write, whatever state the store file is in


@pytest.mark.obligation("ADR-0226/8.11")
def test_a_store_another_connection_holds_open_is_still_opened_read_only(tmp_path: Path) -> None:
    """ADR-0226 §8.11: the display surface only reads. While another connection holds the
    WAL store open (its -wal and -shm files exist, so the reader does not fall back to
    immutable=1), SQLite itself still refuses a write through the read-only connection:
    READ_ONLY, and the case is not stored."""
    path = tmp_path / "store.sqlite"
    with TraceStore(path) as store:
        store.put_case(CaseRow("one", "test", "question", None, None, "refused", "r_x", None), None)
    row = CaseRow("new", "test", "question", None, None, "refused", "reader_x", None)
    with contextlib.closing(sqlite3.connect(path)) as holder:
        holder.execute("SELECT count(*) FROM cases").fetchone()
        assert Path(f"{path}-shm").exists()
        with ReadOnlyTraceStore(path) as reader:
            with pytest.raises(StoreError, match="cannot be written") as refused:
                reader.put_case(row, None)
            assert [case.case_id for case in reader.cases()] == ["one"]
    assert refused.value.problem is StoreProblem.READ_ONLY


# --------------------------------------------------------------------------------------------
# ADR-0226 §9.1: the residual order is the assessment's blocker order


ORDERED_BLOCKERS = (
    Blocker(BlockerCode.HAZARD_RATE_OR_RATIO, None, (SPAN,)),
    Blocker(BlockerCode.INITIAL_UNBOUND, Role.INITIAL, (SPAN,)),
    Blocker(BlockerCode.DELTA_UNBOUND, Role.DELTA, (SPAN,)),
    Blocker(BlockerCode.TARGET_UNBOUND, Role.TARGET, ()),
    Blocker(BlockerCode.DIRECTION_UNBOUND, Role.DIRECTION, (SPAN, SPAN)),
)


@pytest.mark.obligation("ADR-0226/9.1")
@share(8)
@given(chain=chains(), order=st.permutations(ORDERED_BLOCKERS))
def test_residual_order_is_the_blocker_order_not_a_sorted_one(
    chain: Chain, order: list[Blocker]
) -> None:
    """ADR-0226 §9.1: the same inputs give the same residual order, and that order is the
    assessment's own: residual i projects blocker i, whatever order the codes would sort in
    (initial_unbound before delta_unbound, as the organ lists them)."""
    fields = fields_for_sealing(
        chain.assessment, status=AssessmentStatus.REFUSED, blockers=tuple(order)
    )
    residuals = project_residuals(ContractAssessment.sealed(**fields))
    assert type(residuals) is tuple
    assert [r.residual_code for r in residuals] == [b.code.value for b in order]
    assert [r.blocker_index for r in residuals] == list(range(len(order)))
    assert [r.evidence_spans for r in residuals] == [b.evidence_spans for b in order]


# --------------------------------------------------------------------------------------------
# ADR-0226 §9.12: a residual kind the loop does not support is named as such


@pytest.mark.obligation("ADR-0226/9.12")
@share(8)
@given(
    chain=chains(),
    searchable=st.sampled_from(ORDERED_BLOCKERS[1:]),
    hazard_first=st.booleans(),
)
def test_an_unsupported_kind_among_several_residuals_is_named(
    chain: Chain, searchable: Blocker, hazard_first: bool
) -> None:
    """ADR-0226 §9.12: a context holding a residual of a kind the loop does not support fails
    closed with that typed reason, gate_ineligible_unclassified_residual, even when it also
    holds a searchable residual (the unsupported kind is checked before the count)."""
    hazard = ORDERED_BLOCKERS[0]
    blockers = (hazard, searchable) if hazard_first else (searchable, hazard)
    fields = fields_for_sealing(
        chain.assessment, status=AssessmentStatus.REFUSED, blockers=blockers
    )
    assessment = ContractAssessment.sealed(**fields)
    residuals = project_residuals(assessment)
    assert type(residuals) is tuple and len(residuals) == 2
    gate = decide_search_gate(assessment, residuals)
    assert gate.status is SearchGateStatus.INELIGIBLE
    assert gate.reason_code == "gate_ineligible_unclassified_residual"


# --------------------------------------------------------------------------------------------
# ADR-0226 §9.17: nothing is retried until it succeeds


@pytest.mark.obligation("ADR-0226/9.17")
@share(8)
@given(frame=problem_frames(**ELIGIBLE_ONE_CUE))
def test_the_run_refuses_a_second_attempt_of_a_one_attempt_operator(frame) -> None:
    """ADR-0226 §9.17: no retry. The operator declares one attempt per run; a run handed the
    same attempt again, or a retry of it at the next index, refuses the whole run with
    attempt_limit_exceeded rather than recording a second try."""
    trace = practice_case(frame)
    assert type(trace) is SealedPracticeTrace
    opened = trace.opened_run
    assert type(opened) is OpenedSearchRun
    (result,) = trace.operator_outcomes
    assert type(result) is CandidateOperatorResult
    first = result.candidate_attempt
    retry = CandidateAttempt.sealed(
        **fields_for_sealing(
            first,
            attempt_index=first.attempt_index + 1,
            step_index=first.step_index + first.budget_charge.steps,
        )
    )
    for attempts in ((first, first), (first, retry)):
        outcome = record_attempts(opened, CANDIDATE_OPERATOR_SET, attempts)
        assert type(outcome) is SearchRunRefusal
        assert outcome.reason_codes == ("attempt_limit_exceeded",)


# --------------------------------------------------------------------------------------------
# ADR-0226 §13.11: no hidden normalization of evidence


@pytest.mark.obligation("ADR-0226/13.11")
@pytest.mark.parametrize("text", ["ANN", "ann", "aNn", "APPLES", "Apples"])
def test_a_span_that_matches_the_source_only_up_to_case_is_refused(text: str) -> None:
    """ADR-0226 §13.11: nothing authorizes hidden normalization. A span must be the source's
    exact characters at its offsets: one that matches only after case folding (or any other
    normalization) is refused on construction, SPAN_NOT_IN_SOURCE, never accepted."""
    source = "Ann had 3 apples."
    start = source.casefold().index(text.casefold())
    assert source[start : start + len(text)] != text
    frame = ProblemFrame(
        PROBLEM_FRAME_SCHEMA_VERSION, UNARY_DELTA_ORGAN, source, (), (), (), None, ()
    )
    span = SourceSpan(text, start, start + len(text), 0)
    with pytest.raises(RecordError) as refused:
        dataclasses.replace(frame, hazards=(FrameHazard(HazardCode.RATE_OR_RATIO, (span,)),))
    assert refused.value.found == RecordDefect(
        "ProblemFrame", "source_text", Defect.SPAN_NOT_IN_SOURCE
    )
