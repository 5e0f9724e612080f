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
import types
import typing
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar

from .answer import ANSWER_SCHEMA_VERSION, AnswerRefusal, ProofGatedAnswer, decide_answer
from .assessment import UNARY_DELTA_ORGAN_VERSION, AssessmentStatus, ContractAssessment
from .budget import COMPUTE_BUDGET_IN_FORCE, ComputeBudgetDecision
from .checks import (
    Defect,
    FieldCheck,
    RecordDefect,
    RecordError,
    code,
    digest,
    exactly,
    optional,
    text,
    tuple_of,
    version_pairs,
)
from .frame import ProblemFrame, problem_frame_digest
from .gate import SEARCH_GATE_IN_FORCE, SearchGateDecision
from .identity import CanonicalizationError, decode_canonical
from .operators import (
    CANDIDATE_OPERATOR_POLICY_VERSION,
    CANDIDATE_OPERATOR_SET,
    CANDIDATE_OPERATOR_SET_ID,
    CandidateOperatorRefusal,
    CandidateOperatorResult,
    CandidateReconstruction,
    candidate_operator_input,
)
from .proof import PROOF_SCHEMA_VERSION, ProofRecord
from .record import (
    DecodeError,
    Record,
    checked_canonical_bytes,
    inspect_record,
    nested,
    record_from_json,
    trust_scope,
)
from .replay import REPLAY_SCHEMA_VERSION, ReplayRefusal, ReplayResult
from .residual import ContractResidual
from .search_run import (
    GEOMETRIC_SEARCH_RUN_V2_POLICY_VERSION,
    RUN_COPIED_FIELDS,
    CandidateAttempt,
    GeometricSearchInput,
    GeometricSearchRun,
    OpenedSearchRun,
    SearchRunRefusal,
)

TRACE_SCHEMA_VERSION = "sealed_practice_trace.v1"

# ADR-0226 §7F: the schema and implementation versions a replay needs, names ascending; the
# policies are the versions in force.
TRACE_VERSIONS = (
    ("answer", ANSWER_SCHEMA_VERSION),
    ("candidate_operator", CANDIDATE_OPERATOR_POLICY_VERSION),
    ("compute_budget", COMPUTE_BUDGET_IN_FORCE.version),
    ("geometric_search_run", GEOMETRIC_SEARCH_RUN_V2_POLICY_VERSION),
    ("proof", PROOF_SCHEMA_VERSION),
    ("replay", REPLAY_SCHEMA_VERSION),
    ("search_gate", SEARCH_GATE_IN_FORCE.version),
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

    trace_id: Annotated[str, digest]
    schema_version: Annotated[str, exactly(TRACE_SCHEMA_VERSION)]
    versions: Annotated[tuple[tuple[str, str], ...], version_pairs]
    frame: Annotated[ProblemFrame, nested(ProblemFrame)]
    original_assessment: Annotated[ContractAssessment, nested(ContractAssessment)]
    direct_proof: Annotated[ProofRecord | None, optional(nested(ProofRecord))]
    residuals: Annotated[tuple[ContractResidual, ...], tuple_of(nested(ContractResidual))]
    gate_decision: Annotated[SearchGateDecision | None, optional(nested(SearchGateDecision))]
    budget_decision: Annotated[
        ComputeBudgetDecision | None, optional(nested(ComputeBudgetDecision))
    ]
    search_input: Annotated[GeometricSearchInput | None, optional(nested(GeometricSearchInput))]
    opened_run: Annotated[OpenedSearchRun | None, optional(nested(OpenedSearchRun))]
    operator_outcomes: Annotated[
        tuple[CandidateOperatorResult | CandidateOperatorRefusal, ...],
        tuple_of(_either(CandidateOperatorResult, CandidateOperatorRefusal)),
    ]
    run_outcome: Annotated[
        GeometricSearchRun | SearchRunRefusal | None,
        optional(_either(GeometricSearchRun, SearchRunRefusal)),
    ]
    replays: Annotated[
        tuple[ReplayResult | ReplayRefusal, ...], tuple_of(_either(ReplayResult, ReplayRefusal))
    ]
    outcome: Annotated[ProofGatedAnswer | AnswerRefusal, _either(ProofGatedAnswer, AnswerRefusal)]
    stage_digests: Annotated[tuple[tuple[str, str], ...], tuple_of(_stage_pair, non_empty=True)]
    explanation: Annotated[str, text]

    ID_FIELD: ClassVar = "trace_id"

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


def stage_records(fields: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    """Each present stage's record under its stage name, in stage order (absent stages are
    left out), read from a trace's fields: the stages ``stage_digests`` indexes
    (docs/adr/0007)."""
    stages: list[tuple[str, Any]] = [
        ("frame", fields["frame"]),
        ("assessment", fields["original_assessment"]),
        ("proof", fields["direct_proof"]),
        *(("residual", residual) for residual in fields["residuals"]),
        ("gate", fields["gate_decision"]),
        ("budget", fields["budget_decision"]),
        ("search_input", fields["search_input"]),
        ("opened_run", fields["opened_run"]),
        *(("operator", outcome) for outcome in fields["operator_outcomes"]),
        ("run", fields["run_outcome"]),
        *(("replay", replay) for replay in fields["replays"]),
        ("outcome", fields["outcome"]),
    ]
    return tuple((stage, record) for stage, record in stages if record is not None)


def stage_digests(fields: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """Each present stage's own identity, in stage order (absent stages are left out)."""
    return tuple((stage, _identity_of(record)) for stage, record in stage_records(fields))


def _fields_of(trace: SealedPracticeTrace) -> dict[str, Any]:
    return {field.name: getattr(trace, field.name) for field in dataclasses.fields(trace)}


def stage_records_of(trace: SealedPracticeTrace) -> tuple[tuple[str, Any], ...]:
    """``stage_records`` of a trace's own fields."""
    return stage_records(_fields_of(trace))


def stage_digests_of(trace: SealedPracticeTrace) -> tuple[tuple[str, str], ...]:
    """``stage_digests`` of a trace's own fields."""
    return stage_digests(_fields_of(trace))


# Stages a case may not reach: absent, never filled in (ADR-0226 §7G).
_ABSENT_STAGES: Mapping[str, Any] = types.MappingProxyType(
    {
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
)


def seal_practice_trace(**records: Any) -> SealedPracticeTrace:
    """Seal the records of one case; raises ``RecordError`` if they do not form a trace."""
    fields = {
        "schema_version": TRACE_SCHEMA_VERSION,
        "versions": TRACE_VERSIONS,
        **_ABSENT_STAGES,
        **records,
        "explanation": getattr(records.get("outcome"), "explanation", ""),
    }
    return SealedPracticeTrace.sealed(**fields, stage_digests=stage_digests(fields))


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
    # A version a record carries is not the one the trace declares for it (issue 15).
    VERSION_MISMATCH = "version_mismatch"
    # The replay reproduces every identity but not the prose (issue 15, ``replay_divergence``).
    EXPLANATION_DIVERGED = "explanation_diverged"


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
    return _failure_of(found)


def _failure_of(found: RecordDefect) -> TraceFailure:
    """The trace failure a defect of the trace record means; verifying a trace and loading
    one from bytes classify the same defect the same way (docs/adr/0007)."""
    if found.record != "SealedPracticeTrace":
        return TraceFailure(TraceFailureCode.RECORD_MALFORMED, found.record, found.describe())
    if found.field == "trace_id" and found.defect is Defect.IDENTITY_MISMATCH:
        return TraceFailure(TraceFailureCode.TRACE_ID_MISMATCH, "trace", found.describe())
    if found.field == "stage_digests":
        return TraceFailure(TraceFailureCode.STAGE_DIGEST_MISMATCH, "trace", found.describe())
    if found.field in ("schema_version", "versions"):
        return TraceFailure(TraceFailureCode.VERSION_UNSUPPORTED, found.field, found.describe())
    return TraceFailure(TraceFailureCode.RECORD_MALFORMED, found.field, found.describe())


def _stages_present_as_status_requires(trace: SealedPracticeTrace) -> bool:
    """A runnable case has its proof and no search; a refused case has every search stage up
    to the run, and operator evidence exactly when the run was opened (ADR-0226 §6, §7G)."""
    searched = (trace.gate_decision, trace.budget_decision, trace.search_input, trace.run_outcome)
    if trace.original_assessment.status is AssessmentStatus.RUNNABLE:
        return (
            trace.direct_proof is not None
            and not trace.residuals
            and all(stage is None for stage in (*searched, trace.opened_run))
            and not trace.operator_outcomes
            and not trace.replays
        )
    if trace.direct_proof is not None or any(stage is None for stage in searched):
        return False
    results = [o for o in trace.operator_outcomes if type(o) is CandidateOperatorResult]
    if trace.opened_run is None:
        return type(trace.run_outcome) is SearchRunRefusal and not (
            trace.operator_outcomes or trace.replays
        )
    return (
        type(trace.run_outcome) is GeometricSearchRun
        and len(trace.operator_outcomes) == 1
        and len(trace.replays) == len(results)
    )


def _search_input_binds(trace: SealedPracticeTrace) -> bool:
    bound, gate, budget = trace.search_input, trace.gate_decision, trace.budget_decision
    if bound is None or gate is None or budget is None:
        return bound is None
    return (
        bound.problem_frame_digest,
        bound.contract_assessment_id,
        bound.residual_ids,
        bound.gate_decision_id,
        bound.gate_policy_version,
        bound.gate_input_digest,
        bound.budget_id,
        bound.budget_policy_version,
        bound.operator_set_id,
        bound.operator_set_version,
    ) == (
        problem_frame_digest(trace.frame),
        trace.original_assessment.assessment_id,
        tuple(residual.residual_id for residual in trace.residuals),
        gate.decision_id,
        gate.policy_version,
        gate.input_digest,
        budget.budget_id,
        budget.policy_version,
        CANDIDATE_OPERATOR_SET_ID,
        CANDIDATE_OPERATOR_SET.operator_set_version,
    )


def _run_binds(trace: SealedPracticeTrace) -> bool:
    run, opened, bound = trace.run_outcome, trace.opened_run, trace.search_input
    results = [o for o in trace.operator_outcomes if type(o) is CandidateOperatorResult]
    if type(run) is SearchRunRefusal:
        return bound is not None and run.input_digest == bound.input_digest()
    if type(run) is not GeometricSearchRun:
        return run is None
    return (
        opened is not None
        and bound is not None
        and opened.input_digest == bound.input_digest()
        and run.opened_run_id == opened.run_id
        and all(getattr(run, name) == getattr(opened, name) for name in RUN_COPIED_FIELDS)
        and _without_prose(run.candidate_attempts)
        == _without_prose(tuple(result.candidate_attempt for result in results))
    )


def _without_prose(records: tuple[Any, ...]) -> tuple[bytes, ...]:
    # Cross-identity checks compare what the seal covers: prose may differ (docs/adr/0003).
    return tuple(record.canonical_bytes(drop_explanations=True) for record in records)


def _operators_bind(trace: SealedPracticeTrace) -> bool:
    opened, gate, budget = trace.opened_run, trace.gate_decision, trace.budget_decision
    if not trace.operator_outcomes:
        return True
    if opened is None or gate is None or budget is None or not trace.residuals:
        return False
    expected_input = candidate_operator_input(
        assessment=trace.original_assessment,
        residual=trace.residuals[0],
        gate_decision=gate,
        budget_decision=budget,
        opened_run=opened,
    )
    for outcome in trace.operator_outcomes:
        if type(outcome) is CandidateOperatorResult:
            if (outcome.input_digest, outcome.geometric_search_run_id) != (
                expected_input.input_digest,
                opened.run_id,
            ):
                return False
        elif outcome.input_digest not in (None, expected_input.input_digest) or (
            outcome.geometric_search_run_id not in (None, opened.run_id)
        ):
            return False
    return True


def _replays_bind(trace: SealedPracticeTrace) -> bool:
    results = [o for o in trace.operator_outcomes if type(o) is CandidateOperatorResult]
    made = {(r.attempt_id, r.candidate_digest, r.candidate_reconstruction_digest) for r in results}
    reconstructions = {key[2] for key in made}
    frame_digest = problem_frame_digest(trace.frame)
    for replay in trace.replays:
        if type(replay) is ReplayResult:
            key = (
                replay.attempt_id,
                replay.candidate_digest,
                replay.candidate_reconstruction_digest,
            )
            if key not in made or (
                replay.problem_frame_digest,
                replay.original_contract_assessment_id,
            ) != (frame_digest, trace.original_assessment.assessment_id):
                return False
        elif replay.candidate_reconstruction_digest not in (None, *reconstructions):
            return False
    return True


def _identity_of_outcome(outcome: ProofGatedAnswer | AnswerRefusal) -> str:
    return outcome.answer_id if type(outcome) is ProofGatedAnswer else outcome.answer_refusal_id  # type: ignore[union-attr]


def _cross_identity_failures(trace: SealedPracticeTrace) -> list[TraceFailure]:
    """Every binding between stages, checked against the records themselves; the outcome is
    the answer stage's own decision over the trace's evidence (docs/adr/0007)."""
    frame_digest = problem_frame_digest(trace.frame)
    assessment = trace.original_assessment
    gate, budget, proof = trace.gate_decision, trace.budget_decision, trace.direct_proof
    decided = decide_answer(trace.frame, assessment, direct_proof=proof, replays=trace.replays)
    checks: list[tuple[str, bool]] = [
        ("stages", _stages_present_as_status_requires(trace)),
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
            or (gate.problem_frame_digest, gate.contract_assessment_id, gate.residual_ids)
            == (
                frame_digest,
                assessment.assessment_id,
                tuple(r.residual_id for r in trace.residuals),
            ),
        ),
        (
            "budget",
            budget is None
            or (
                gate is not None
                and (budget.gate_decision_id, budget.gate_policy_version, budget.gate_input_digest)
                == (gate.decision_id, gate.policy_version, gate.input_digest)
            ),
        ),
        ("search_input", _search_input_binds(trace)),
        ("operator", _operators_bind(trace)),
        ("run", _run_binds(trace)),
        ("replay", _replays_bind(trace)),
        ("outcome", _identity_of_outcome(trace.outcome) == _identity_of_outcome(decided)),
    ]
    return [
        TraceFailure(TraceFailureCode.CROSS_IDENTITY_MISMATCH, stage, "")
        for stage, holds in checks
        if not holds
    ]


# The versions a trace declares (``versions``, by name) and the record fields that carry them
# (docs/adr/0007 step 2, issue 15): each field must hold exactly the version the trace
# declares under that name. ``VERSION_PAIR_FIELDS`` hold ``(name, version)`` pairs, and each
# pair whose name the trace declares is tied the same way. Every other version field of a
# record a trace can hold names something the trace does not declare (a record schema, the
# operator's own version, the operator set's) and is pinned by that record's own checks or by
# an identity: ``UNDECLARED_VERSION_FIELDS`` lists them, so that a version field added later
# is either tied or listed (tests/cover/test_trace.py walks every record kind).
VERSION_TIES: types.MappingProxyType[type, tuple[tuple[str, str], ...]] = types.MappingProxyType(
    {
        ContractAssessment: (("organ_version", "unary_delta_transition"),),
        ProofRecord: (("schema_version", "proof"),),
        SearchGateDecision: (("policy_version", "search_gate"),),
        ComputeBudgetDecision: (
            ("policy_version", "compute_budget"),
            ("gate_policy_version", "search_gate"),
        ),
        GeometricSearchInput: (
            ("gate_policy_version", "search_gate"),
            ("budget_policy_version", "compute_budget"),
            ("run_policy_version", "geometric_search_run"),
        ),
        OpenedSearchRun: (("run_policy_version", "geometric_search_run"),),
        GeometricSearchRun: (("run_policy_version", "geometric_search_run"),),
        SearchRunRefusal: (("run_policy_version", "geometric_search_run"),),
        CandidateOperatorResult: (("operator_policy_version", "candidate_operator"),),
        CandidateOperatorRefusal: (("operator_policy_version", "candidate_operator"),),
        ReplayResult: (("schema_version", "replay"),),
        ReplayRefusal: (("schema_version", "replay"),),
        ProofGatedAnswer: (("schema_version", "answer"),),
        AnswerRefusal: (("schema_version", "answer"),),
    }
)
VERSION_PAIR_FIELDS: types.MappingProxyType[type, tuple[str, ...]] = types.MappingProxyType(
    {CandidateReconstruction: ("operator_provenance", "schema_versions", "policy_versions")}
)
UNDECLARED_VERSION_FIELDS: frozenset[tuple[type, str]] = frozenset(
    {
        (ProblemFrame, "schema_version"),
        (ContractAssessment, "schema_version"),
        (ContractResidual, "schema_version"),
        (GeometricSearchInput, "operator_set_version"),
        (GeometricSearchInput, "schema_version"),
        (OpenedSearchRun, "operator_set_version"),
        (OpenedSearchRun, "schema_version"),
        (GeometricSearchRun, "operator_set_version"),
        (GeometricSearchRun, "schema_version"),
        (CandidateOperatorResult, "operator_version"),
        (CandidateAttempt, "operator_version"),
        (CandidateReconstruction, "operator_version"),
    }
)


def _kinds_in(hint: Any) -> frozenset[type]:
    """The record kinds an annotation can hold (in a union, a tuple, at any depth)."""
    found: set[type] = set()
    pending = [hint]
    while pending:
        part = pending.pop()
        if isinstance(part, type) and issubclass(part, Record):
            found.add(part)
        pending.extend(typing.get_args(part))
    return frozenset(found)


def _fields_toward_ties() -> types.MappingProxyType[type, tuple[str, ...]]:
    """For each record kind a trace can hold, the fields through which a record carrying a
    tied version can be reached, worked out once from the annotations: the walk below reads
    only those (no frame, span or fact holds a version the trace declares)."""
    held: dict[type, dict[str, frozenset[type]]] = {}
    pending: list[type] = [SealedPracticeTrace]
    while pending:
        kind = pending.pop()
        if kind in held:
            continue
        hints = typing.get_type_hints(kind)
        fields = {field.name: _kinds_in(hints[field.name]) for field in dataclasses.fields(kind)}
        held[kind] = {name: kinds for name, kinds in fields.items() if kinds}
        pending.extend(inner for kinds in held[kind].values() for inner in kinds)
    leading = set(VERSION_TIES) | set(VERSION_PAIR_FIELDS)
    grown = True
    while grown:
        before = len(leading)
        leading |= {k for k, fields in held.items() if any(v & leading for v in fields.values())}
        grown = len(leading) != before
    return types.MappingProxyType(
        {
            kind: tuple(name for name, kinds in fields.items() if kinds & leading)
            for kind, fields in held.items()
        }
    )


_TOWARD_TIES = _fields_toward_ties()


def _carried_versions(record: Record, declared: dict[str, str]) -> list[tuple[str, str, str]]:
    """``(field, name, version)`` for every declared version that ``record`` or a record
    nested in it carries, in field order, depth first. Reads a validated record only."""
    carried: list[tuple[str, str, str]] = []
    pending: list[tuple[object, str]] = [(record, type(record).__name__)]
    while pending:
        value, where = pending.pop()
        kind = type(value)
        for field, name in VERSION_TIES.get(kind, ()):
            carried.append((f"{where}.{field}", name, getattr(value, field)))
        for field in VERSION_PAIR_FIELDS.get(kind, ()):
            for name, pinned in getattr(value, field):
                if name in declared:
                    carried.append((f"{where}.{field}[{name}]", name, pinned))
        nested: list[tuple[object, str]] = []
        for field in _TOWARD_TIES.get(kind, ()):
            item = getattr(value, field)
            if type(item) is tuple:
                nested += [(each, f"{where}.{field}[{i}]") for i, each in enumerate(item)]
            elif item is not None:
                nested.append((item, f"{where}.{field}"))
        pending.extend(reversed(nested))
    return carried


def _version_failures(trace: SealedPracticeTrace) -> list[TraceFailure]:
    """docs/adr/0007 step 2 (issue 15): one failure per stage whose records carry a version
    other than the one the trace declares under that name, in stage order."""
    declared = dict(trace.versions)
    failures = []
    for stage, record in stage_records_of(trace):
        wrong = [
            f"{where} is {carried!r}, declared {declared[name]!r}"
            for where, name, carried in _carried_versions(record, declared)
            if carried != declared[name]
        ]
        if wrong:
            detail = "; ".join(wrong)
            failures.append(TraceFailure(TraceFailureCode.VERSION_MISMATCH, stage, detail[:200]))
    return failures


@trust_scope()
def verify_sealed_trace(trace: SealedPracticeTrace) -> TraceVerification:
    """Recompute every identity and every cross-identity of a trace (docs/adr/0007).

    Replaying the case from its frame, the stronger check, is ``loop.replay_divergence``.
    """
    # Step 1: the record, every nested record, the stage index and the trace id.
    failure = _structural_failure(trace)
    if failure is not None:
        return TraceVerification(None, (failure,))
    # Step 2: declared versions this code judges (ADR-0226 §9: a new policy is a new run)...
    if trace.versions != TRACE_VERSIONS:
        failure = TraceFailure(TraceFailureCode.VERSION_UNSUPPORTED, "versions", "")
        return TraceVerification(trace.trace_id, (failure,))
    # ...that are the versions the records were decided under (issue 15).
    mismatched = _version_failures(trace)
    if mismatched:
        return TraceVerification(trace.trace_id, tuple(mismatched))
    # Step 3: the cross-identity table.
    return TraceVerification(trace.trace_id, tuple(_cross_identity_failures(trace)))


# --------------------------------------------------------------------------------------------
# Loading


@trust_scope()
def sealed_trace_bytes(trace: SealedPracticeTrace) -> bytes:
    """The canonical bytes a store keeps for a trace (every field, prose included).

    Only a trace that inspects clean is encoded; its fields already passed checks at least as
    strict as the hashable profile, so the profile walk is not repeated (docs/adr/0003).
    Raises ``RecordError`` for anything else.
    """
    return checked_canonical_bytes(trace, SealedPracticeTrace)


@trust_scope()
def load_sealed_trace(data: bytes) -> SealedPracticeTrace | TraceVerification:
    """Decode stored bytes into a trace (docs/adr/0003, docs/adr/0007): canonical JSON only,
    rebuilt into typed records that validate on construction, and re-encoded to exactly the
    stored bytes. Anything else is a typed failure."""
    try:
        payload = decode_canonical(data)
        trace = record_from_json(SealedPracticeTrace, payload)
    except RecordError as error:
        return TraceVerification(None, (_failure_of(error.found),))
    except (CanonicalizationError, DecodeError) as error:
        failure = TraceFailure(TraceFailureCode.UNDECODABLE, "$", str(error)[:200])
        return TraceVerification(None, (failure,))
    if trace.canonical_bytes() != data:
        failure = TraceFailure(TraceFailureCode.UNDECODABLE, "$", "re-encoding differs")
        return TraceVerification(None, (failure,))
    return trace
