"""The public façade: exact exports, and no output field that the ADRs forbid."""

from __future__ import annotations

import dataclasses
import enum

import pytest

import practice_loop
import practice_loop.kernel as kernel
from practice_strategies.vocabulary import FORBIDDEN_RUN_FIELDS

EXPECTED_KERNEL_EXPORTS = {
    # identity, checks, span, refusal
    "MAX_SAFE_INT",
    "CanonicalReason",
    "CanonicalizationError",
    "Defect",
    "RecordDefect",
    "RecordError",
    "SourceSpan",
    "Stage",
    "StageRefusal",
    "canonical_json",
    "decode_canonical",
    "is_digest",
    "is_version",
    "sha256_digest",
    # record: one call's trust (docs/adr/0013)
    "trust_scope",
    # frame
    "PROBLEM_FRAME_SCHEMA_VERSION",
    "UNARY_DELTA_ORGAN",
    "UNARY_DELTA_RELATION",
    "Direction",
    "FrameHazard",
    "GroundedUnaryDeltaCue",
    "HazardCode",
    "ProblemFrame",
    "QuantityFact",
    "QuestionTarget",
    "Role",
    "RoleBinding",
    "StateChangeProposal",
    "problem_frame_digest",
    # assessment
    "AssessmentStatus",
    "Blocker",
    "BlockerCode",
    "ContractAssessment",
    "assess",
    # proof
    "Obligation",
    "ObligationOutcome",
    "ProofRecord",
    "ProofStatus",
    "check_proof",
    # residual
    "ContractResidual",
    "ResidualKind",
    "project_residuals",
    # gate
    "SEARCH_GATE_POLICY_VERSION",
    "SEARCH_GATE_V1",
    "SEARCH_GATE_IN_FORCE",
    "EligibleReasonRow",
    "GateReason",
    "GateReasonStatus",
    "SearchGateDecision",
    "SearchGatePolicy",
    "SearchGateStatus",
    "decide_search_gate",
    # budget
    "COMPUTE_BUDGET_POLICY_VERSION",
    "COMPUTE_BUDGET_V1",
    "COMPUTE_BUDGET_IN_FORCE",
    "BudgetLimits",
    "BudgetPolicyRow",
    "BudgetReason",
    "ComputeBudgetDecision",
    "ComputeBudgetPolicy",
    "ComputeBudgetStatus",
    "decide_compute_budget",
    # search_run
    "EMPTY_OPERATOR_SET",
    "GEOMETRIC_SEARCH_RUN_POLICY_VERSION",
    "GEOMETRIC_SEARCH_RUN_V2_POLICY_VERSION",
    "BudgetCharge",
    "BudgetConsumed",
    "CandidateAttempt",
    "CandidateReplayStatus",
    "GeometricSearchInput",
    "GeometricSearchRun",
    "OpenedSearchRun",
    "OperatorManifestRow",
    "OperatorSetManifest",
    "RunDisposition",
    "RunExhaustionCode",
    "RunRefusalReason",
    "SearchRunOutcome",
    "SearchRunRefusal",
    "open_search_run",
    "operator_set_id",
    "record_attempts",
    "search_input_for",
    # operators
    "CANDIDATE_OPERATOR_POLICY_VERSION",
    "CANDIDATE_OPERATOR_SET",
    "CANDIDATE_OPERATOR_SET_V1",
    "CANDIDATE_OPERATOR_SETS",
    "CANDIDATE_OPERATOR_SET_ID",
    "MISSING_ROLE_CANDIDATE_POLICY",
    "CandidateOperatorInput",
    "CandidateOperatorOutcome",
    "CandidateOperatorPolicy",
    "CandidateOperatorRefusal",
    "CandidateOperatorResult",
    "CandidateReconstruction",
    "OperatorRefusalReason",
    "RoleBindingDelta",
    "candidate_operator_input",
    "propose_candidate",
    # replay
    "REPLAY_SCHEMA_VERSION",
    "ReplayDisposition",
    "ReplayOutcome",
    "ReplayRefusal",
    "ReplayRefusalReason",
    "ReplayResult",
    "apply_candidate",
    "replay_candidate",
    # answer
    "ANSWER_SCHEMA_VERSION",
    "AnswerOutcome",
    "AnswerPath",
    "AnswerRefusal",
    "AnswerRefusalReason",
    "ProofGatedAnswer",
    "decide_answer",
    # trace
    "TRACE_SCHEMA_VERSION",
    "SealedPracticeTrace",
    "TraceFailure",
    "TraceFailureCode",
    "TraceVerification",
    "load_sealed_trace",
    "seal_practice_trace",
    "sealed_trace_bytes",
    "verify_sealed_trace",
    # loop
    "practice_case",
    "replay_divergence",
}

# ADR-0228 §1, §7 and §17.11; ADR-0231 §8.4; ADR-0227 §3.
FORBIDDEN_FIELD_NAMES = FORBIDDEN_RUN_FIELDS

# Records downstream of the assessment: none may carry an answer or authority field.
# ProofRecord is the organ's own proof stage and is checked separately below.
ENVELOPE_RECORDS = [
    kernel.ContractResidual,
    kernel.SearchGateDecision,
    kernel.ComputeBudgetDecision,
    kernel.GeometricSearchInput,
    kernel.GeometricSearchRun,
    kernel.OpenedSearchRun,
    kernel.SearchRunRefusal,
    kernel.CandidateAttempt,
    kernel.BudgetCharge,
    kernel.BudgetConsumed,
    kernel.OperatorManifestRow,
    kernel.OperatorSetManifest,
    kernel.StageRefusal,
    kernel.CandidateOperatorPolicy,
    kernel.CandidateOperatorInput,
    kernel.RoleBindingDelta,
    kernel.CandidateReconstruction,
    kernel.CandidateOperatorResult,
    kernel.CandidateOperatorRefusal,
    kernel.ReplayRefusal,
]


@pytest.mark.obligation("ADR-0228/17.1", "ADR-0231/18.1")
def test_kernel_exports_are_exact():
    """ADR-0228 §17.1: the public API is exactly what the ADRs allow, no more, no less."""
    assert set(kernel.__all__) == EXPECTED_KERNEL_EXPORTS
    assert len(kernel.__all__) == len(set(kernel.__all__))
    for name in kernel.__all__:
        assert hasattr(kernel, name), name


def test_package_facade_is_minimal():
    """The top-level package re-exports nothing of the kernel."""
    assert practice_loop.__all__ == ["__version__"]


@pytest.mark.obligation("ADR-0228/17.1")
def test_search_run_exports_are_inert():
    """ADR-0228 §17.1: the run's exports are values, closed enums, and pure functions."""
    run_exports = [
        "BudgetCharge",
        "BudgetConsumed",
        "CandidateAttempt",
        "GeometricSearchInput",
        "GeometricSearchRun",
        "OpenedSearchRun",
        "SearchRunRefusal",
        "OperatorManifestRow",
        "OperatorSetManifest",
    ]
    for name in run_exports:
        record = getattr(kernel, name)
        assert dataclasses.is_dataclass(record)
        params = record.__dataclass_params__
        assert params.frozen, name
        # The class itself must declare its slots: ``Record``'s empty ``__slots__`` is inherited.
        assert "__slots__" in vars(record), name
    for name in [
        "RunDisposition",
        "RunExhaustionCode",
        "CandidateReplayStatus",
        "RunRefusalReason",
    ]:
        assert issubclass(getattr(kernel, name), enum.Enum)


@pytest.mark.obligation(
    "ADR-0228/17.11",
    "ADR-0231/18.18",
    "ADR-0231/18.19",
    "ADR-0226/8.2",
    "ADR-0226/8.3",
    "ADR-0226/8.5",
    "ADR-0227/13.2",
)
def test_no_envelope_record_has_a_forbidden_field():
    """ADR-0228 §17.11, ADR-0231 §18.18-19: no answer, proof, verdict, score... fields."""
    for record in ENVELOPE_RECORDS:
        names = {field.name for field in dataclasses.fields(record)}
        assert not names & FORBIDDEN_FIELD_NAMES, (record.__name__, names & FORBIDDEN_FIELD_NAMES)


@pytest.mark.obligation("ADR-0226/13.5")
def test_proof_record_carries_no_answer_or_authority_field():
    """ADR-0226 §7E: proof reports obligations; the answer is a later, separate stage."""
    names = {field.name for field in dataclasses.fields(kernel.ProofRecord)}
    assert not names & (FORBIDDEN_FIELD_NAMES - {"proof"})


@pytest.mark.obligation("ADR-0226/13.5")
def test_replay_result_carries_evidence_not_an_answer():
    """ADR-0226 §7E: replay reports a disposition over evidence; the answer is a later stage."""
    names = {field.name for field in dataclasses.fields(kernel.ReplayResult)}
    assert not names & (FORBIDDEN_FIELD_NAMES - {"proof"})
    assert {d.value for d in kernel.ReplayDisposition} == {
        "contract_refused",
        "contract_closed_but_proof_refused",
        "contract_and_proof_closed",
    }


def test_closed_vocabularies_are_exactly_the_adrs():
    """ADR-0227 §5, ADR-0228 §7-§8: the closed enums hold exactly the specified values."""
    assert {s.value for s in kernel.ComputeBudgetStatus} == {
        "BUDGET_ALLOWED",
        "BUDGET_BLOCKED",
        "BUDGET_ZERO",
        "BUDGET_UNASSESSABLE",
    }
    assert {s.value for s in kernel.SearchGateStatus} == {
        "ELIGIBLE",
        "INELIGIBLE",
        "BLOCKED",
        "UNASSESSABLE",
    }
    assert [d.value for d in kernel.RunDisposition] == [
        "not_started",
        "blocked_by_budget",
        "blocked_by_gate",
        "invalid_input",
        "exhausted_no_candidate",
        "candidate_replay_pending",
        "candidate_replay_closed",
        "candidate_replay_refused",
    ]
    assert [c.value for c in kernel.RunExhaustionCode] == [
        "operator_set_empty",
        "operator_space_depleted",
        "max_candidates_reached",
        "max_depth_reached",
        "max_steps_reached",
    ]
    assert [s.value for s in kernel.CandidateReplayStatus] == [
        "replay_pending",
        "replay_closed",
        "replay_refused",
    ]
    assert {k.value for k in kernel.ResidualKind} == {
        "missing_role",
        "missing_relation",
        "missing_proposal",
        "target_unbound",
        "unclassified",
    }


def test_policy_versions_are_pinned():
    """ADR-0227 §6, ADR-0228 §4: the exact version strings."""
    assert kernel.COMPUTE_BUDGET_POLICY_VERSION == "compute_budget.v1"
    assert kernel.GEOMETRIC_SEARCH_RUN_POLICY_VERSION == "geometric_search_run.v1"
    assert kernel.SEARCH_GATE_POLICY_VERSION == "search_gate.v1"
