"""The sealed practice trace (our ADR-0230, docs/adr/0007).

A trace holds every record one pass of the loop produced, in stage order, the digest of each
stage, and a self-sealed ``trace_id``. The seal is tamper evidence and replay identity, not
proof that any candidate is right (ADR-0226 §7F, §8.9). ``verify_sealed_trace`` recomputes
every identity and cross-identity and reports typed failures; nothing in any identity is a
timestamp, path, host or random value.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Any, ClassVar

from .answer import ANSWER_SCHEMA_VERSION, AnswerRefusal, ProofGatedAnswer
from .assessment import UNARY_DELTA_ORGAN_VERSION, ContractAssessment
from .budget import COMPUTE_BUDGET_POLICY_VERSION, ComputeBudgetDecision
from .frame import ProblemFrame, problem_frame_digest
from .gate import SEARCH_GATE_POLICY_VERSION, SearchGateDecision
from .identity import (
    CanonicalizationError,
    Defect,
    FieldCheck,
    Record,
    RecordError,
    code,
    decode_canonical,
    digest,
    exactly,
    inspect_record,
    nested,
    optional,
    record_from_json,
    text,
    tuple_of,
    version_pairs,
)
from .operators import (
    CANDIDATE_OPERATOR_POLICY_VERSION,
    CandidateOperatorRefusal,
    CandidateOperatorResult,
)
from .proof import PROOF_SCHEMA_VERSION, ProofRecord
from .replay import REPLAY_SCHEMA_VERSION, ReplayRefusal, ReplayResult
from .residual import ContractResidual
from .search_run import (
    GEOMETRIC_SEARCH_RUN_V2_POLICY_VERSION,
    GeometricSearchInput,
    GeometricSearchRun,
    OpenedSearchRun,
    SearchRunRefusal,
)

TRACE_SCHEMA_VERSION = "sealed_practice_trace.v1"

# ADR-0226 §7F: the schema and implementation versions a replay needs, names ascending.
TRACE_VERSIONS = (
    ("answer", ANSWER_SCHEMA_VERSION),
    ("candidate_operator", CANDIDATE_OPERATOR_POLICY_VERSION),
    ("compute_budget", COMPUTE_BUDGET_POLICY_VERSION),
    ("geometric_search_run", GEOMETRIC_SEARCH_RUN_V2_POLICY_VERSION),
    ("proof", PROOF_SCHEMA_VERSION),
    ("replay", REPLAY_SCHEMA_VERSION),
    ("search_gate", SEARCH_GATE_POLICY_VERSION),
    ("unary_delta_transition", UNARY_DELTA_ORGAN_VERSION),
)


def _either(*record_types: type) -> FieldCheck:
    """A field that holds one of several record types, validated in full."""

    def check(value: object) -> Defect | None:
        for record_type in record_types:
            if type(value) is record_type:
                found = inspect_record(value, record_type)
                return None if found is None else found.defect
        return Defect.WRONG_RECORD_TYPE

    return check


def _stage_pair(value: object) -> Defect | None:
    if type(value) is not tuple or len(value) != 2:
        return Defect.WRONG_TYPE
    return code(value[0]) or digest(value[1])


@dataclasses.dataclass(frozen=True, slots=True)
class SealedPracticeTrace(Record):
    """Every record of one case, in stage order, sealed.

    Stages the case never reached are ``None`` or empty, never filled in: a runnable case has
    no residuals, gate, budget or run; a refused case whose run was refused has no operator
    outcome or replay.
    """

    trace_id: str
    schema_version: str
    versions: tuple[tuple[str, str], ...]
    frame: ProblemFrame
    original_assessment: ContractAssessment
    direct_proof: ProofRecord | None
    residuals: tuple[ContractResidual, ...]
    gate_decision: SearchGateDecision | None
    budget_decision: ComputeBudgetDecision | None
    search_input: GeometricSearchInput | None
    opened_run: OpenedSearchRun | None
    operator_outcomes: tuple[CandidateOperatorResult | CandidateOperatorRefusal, ...]
    run_outcome: GeometricSearchRun | SearchRunRefusal | None
    replays: tuple[ReplayResult | ReplayRefusal, ...]
    outcome: ProofGatedAnswer | AnswerRefusal
    stage_digests: tuple[tuple[str, str], ...]
    explanation: str

    ID_FIELD: ClassVar = "trace_id"
    SCHEMA: ClassVar = (
        ("trace_id", digest),
        ("schema_version", exactly(TRACE_SCHEMA_VERSION)),
        ("versions", version_pairs),
        ("frame", nested(ProblemFrame)),
        ("original_assessment", nested(ContractAssessment)),
        ("direct_proof", optional(nested(ProofRecord))),
        ("residuals", tuple_of(nested(ContractResidual))),
        ("gate_decision", optional(nested(SearchGateDecision))),
        ("budget_decision", optional(nested(ComputeBudgetDecision))),
        ("search_input", optional(nested(GeometricSearchInput))),
        ("opened_run", optional(nested(OpenedSearchRun))),
        ("operator_outcomes", tuple_of(_either(CandidateOperatorResult, CandidateOperatorRefusal))),
        ("run_outcome", optional(_either(GeometricSearchRun, SearchRunRefusal))),
        ("replays", tuple_of(_either(ReplayResult, ReplayRefusal))),
        ("outcome", _either(ProofGatedAnswer, AnswerRefusal)),
        ("stage_digests", tuple_of(_stage_pair, non_empty=True)),
        ("explanation", text),
    )

    def _cross_check(self) -> tuple[str, Defect] | None:
        if self.stage_digests != stage_digests_of(self):
            return "stage_digests", Defect.IDENTITY_MISMATCH
        return None


def _identity_of(record: Any) -> str:
    if type(record) is ProblemFrame:
        return problem_frame_digest(record)
    if type(record) is GeometricSearchInput:
        return record.input_digest()
    return getattr(record, type(record).ID_FIELD)


def stage_digests_of(trace: SealedPracticeTrace) -> tuple[tuple[str, str], ...]:
    """Each present stage's own identity, in stage order (absent stages are left out)."""
    stages: list[tuple[str, Any]] = [
        ("frame", trace.frame),
        ("assessment", trace.original_assessment),
        ("proof", trace.direct_proof),
        *(("residual", residual) for residual in trace.residuals),
        ("gate", trace.gate_decision),
        ("budget", trace.budget_decision),
        ("search_input", trace.search_input),
        ("opened_run", trace.opened_run),
        *(("operator", outcome) for outcome in trace.operator_outcomes),
        ("run", trace.run_outcome),
        *(("replay", replay) for replay in trace.replays),
        ("outcome", trace.outcome),
    ]
    return tuple((stage, _identity_of(record)) for stage, record in stages if record is not None)


# Stages a case may not reach: absent, never filled in (ADR-0226 §7G).
_ABSENT_STAGES: dict[str, Any] = {
    "direct_proof": None,
    "residuals": (),
    "gate_decision": None,
    "budget_decision": None,
    "search_input": None,
    "opened_run": None,
    "operator_outcomes": (),
    "run_outcome": None,
    "replays": (),
}


def seal_practice_trace(**records: Any) -> SealedPracticeTrace:
    """Seal the records of one case; raises ``RecordError`` if they do not form a trace."""
    fields = {
        "schema_version": TRACE_SCHEMA_VERSION,
        "versions": TRACE_VERSIONS,
        **_ABSENT_STAGES,
        **records,
        "explanation": getattr(records.get("outcome"), "explanation", ""),
    }
    unsealed = object.__new__(SealedPracticeTrace)
    for name, value in fields.items():
        object.__setattr__(unsealed, name, value)
    return SealedPracticeTrace.sealed(**fields, stage_digests=stage_digests_of(unsealed))


# --------------------------------------------------------------------------------------------
# Verification


class TraceFailureCode(enum.Enum):
    NOT_A_TRACE = "not_a_trace"
    UNDECODABLE = "undecodable"
    RECORD_MALFORMED = "record_malformed"
    TRACE_ID_MISMATCH = "trace_id_mismatch"
    STAGE_DIGEST_MISMATCH = "stage_digest_mismatch"
    VERSION_UNSUPPORTED = "version_unsupported"
    CROSS_IDENTITY_MISMATCH = "cross_identity_mismatch"
    REPLAY_DIVERGED = "replay_diverged"


@dataclasses.dataclass(frozen=True, slots=True)
class TraceFailure:
    code: TraceFailureCode
    stage: str
    detail: str


@dataclasses.dataclass(frozen=True, slots=True)
class TraceVerification:
    """``valid`` exactly when there is no failure; failures name the stage they concern."""

    trace_id: str | None
    failures: tuple[TraceFailure, ...]

    @property
    def valid(self) -> bool:
        return not self.failures


def _structural_failure(trace: object) -> TraceFailure | None:
    found = inspect_record(trace, SealedPracticeTrace)
    if found is None:
        return None
    if found.defect is Defect.WRONG_RECORD_TYPE and found.field == "$":
        return TraceFailure(TraceFailureCode.NOT_A_TRACE, "$", found.describe())
    if found.field == "trace_id" and found.defect is Defect.IDENTITY_MISMATCH:
        return TraceFailure(TraceFailureCode.TRACE_ID_MISMATCH, "trace", found.describe())
    if found.field == "stage_digests":
        return TraceFailure(TraceFailureCode.STAGE_DIGEST_MISMATCH, "trace", found.describe())
    if found.field in ("schema_version", "versions"):
        return TraceFailure(TraceFailureCode.VERSION_UNSUPPORTED, found.field, found.describe())
    return TraceFailure(TraceFailureCode.RECORD_MALFORMED, found.field, found.describe())


def _cross_identity_failures(trace: SealedPracticeTrace) -> list[TraceFailure]:
    """Every binding between stages, checked against the records themselves."""
    frame_digest = problem_frame_digest(trace.frame)
    assessment = trace.original_assessment
    gate, budget, search_input = trace.gate_decision, trace.budget_decision, trace.search_input
    opened, run = trace.opened_run, trace.run_outcome
    results = [o for o in trace.operator_outcomes if type(o) is CandidateOperatorResult]
    reconstructions = {r.candidate_reconstruction_digest for r in results}
    replayed = [r for r in trace.replays if type(r) is ReplayResult]
    outcome = trace.outcome
    proof = trace.direct_proof
    checks: list[tuple[str, bool]] = [
        ("assessment", assessment.problem_frame_digest == frame_digest),
        (
            "proof",
            proof is None
            or (proof.problem_frame_digest, proof.contract_assessment_id)
            == (frame_digest, assessment.assessment_id),
        ),
        (
            "residual",
            all(
                (r.problem_frame_digest, r.contract_assessment_id, r.blocker_index)
                == (frame_digest, assessment.assessment_id, index)
                for index, r in enumerate(trace.residuals)
            ),
        ),
        (
            "gate",
            gate is None
            or (gate.contract_assessment_id, gate.residual_ids)
            == (assessment.assessment_id, tuple(r.residual_id for r in trace.residuals)),
        ),
        (
            "budget",
            budget is None or (gate is not None and budget.gate_decision_id == gate.decision_id),
        ),
        (
            "search_input",
            search_input is None
            or (
                gate is not None
                and budget is not None
                and (search_input.gate_decision_id, search_input.budget_id)
                == (gate.decision_id, budget.budget_id)
            ),
        ),
        (
            "opened_run",
            opened is None
            or (search_input is not None and opened.input_digest == search_input.input_digest()),
        ),
        (
            "operator",
            all(
                opened is not None
                and r.geometric_search_run_id == opened.run_id
                and r.reconstruction.problem_frame_digest == frame_digest
                for r in results
            ),
        ),
        (
            "run",
            run is None
            or (
                type(run) is GeometricSearchRun
                and opened is not None
                and run.opened_run_id == opened.run_id
                and run.candidate_attempts == tuple(r.candidate_attempt for r in results)
            )
            or (
                type(run) is SearchRunRefusal
                and search_input is not None
                and run.input_digest == search_input.input_digest()
            ),
        ),
        (
            "replay",
            all(
                r.candidate_reconstruction_digest in reconstructions
                and (r.problem_frame_digest, r.original_contract_assessment_id)
                == (frame_digest, assessment.assessment_id)
                for r in replayed
            ),
        ),
        (
            "outcome",
            (outcome.problem_frame_digest, outcome.original_contract_assessment_id)
            == (frame_digest, assessment.assessment_id),
        ),
    ]
    return [
        TraceFailure(TraceFailureCode.CROSS_IDENTITY_MISMATCH, stage, "")
        for stage, holds in checks
        if not holds
    ]


def verify_sealed_trace(trace: SealedPracticeTrace) -> TraceVerification:
    """Recompute every identity and every cross-identity of a trace (docs/adr/0007).

    Replaying the case from its frame, the stronger check, is ``loop.replay_divergence``.
    """
    failure = _structural_failure(trace)
    if failure is not None:
        return TraceVerification(None, (failure,))
    if trace.versions != TRACE_VERSIONS:
        failure = TraceFailure(TraceFailureCode.VERSION_UNSUPPORTED, "versions", "")
        return TraceVerification(trace.trace_id, (failure,))
    return TraceVerification(trace.trace_id, tuple(_cross_identity_failures(trace)))


# --------------------------------------------------------------------------------------------
# Loading


def load_sealed_trace(data: bytes) -> SealedPracticeTrace | TraceVerification:
    """Decode stored bytes into a trace: canonical JSON only, rebuilt into typed records, and
    re-encoded to the same bytes (docs/adr/0003). Anything else is a typed failure."""
    try:
        payload = decode_canonical(data)
        trace = record_from_json(SealedPracticeTrace, payload)
    except (CanonicalizationError, RecordError, TypeError, ValueError) as error:
        failure = TraceFailure(TraceFailureCode.UNDECODABLE, "$", str(error)[:200])
        return TraceVerification(None, (failure,))
    return trace
