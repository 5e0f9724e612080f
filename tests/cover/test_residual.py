"""``project_residuals`` and ``ContractResidual``: the read-only projection of a refusal.

Clauses: ADR-0226 §7A (one residual per blocker, blocker codes and exact evidence spans
preserved, no judgement), §7B (an unclassified residual is never implicitly searchable), §9
(ordering reproducible, fail-closed typed refusal), ADR-0228 §10 (explanation excluded from ids,
duplicate spans preserved), ADR-0231 §13 (span order and duplicates kept), and our typing table
(ARCHITECTURE §2: missing_role, missing_relation, missing_proposal, target_unbound,
unclassified).
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from practice_loop.kernel import (
    UNARY_DELTA_RELATION,
    AssessmentStatus,
    Blocker,
    BlockerCode,
    ContractAssessment,
    ContractResidual,
    Defect,
    GateReason,
    ProblemFrame,
    RecordDefect,
    RecordError,
    ResidualKind,
    Role,
    SourceSpan,
    Stage,
    StageRefusal,
    assess,
    canonical_json,
    project_residuals,
)
from practice_loop.kernel.residual import RESIDUAL_KIND_BY_BLOCKER, residual_kind_for
from practice_strategies import (
    FRAME_RECIPES,
    Impostor,
    digests,
    oracle,
    problem_frames,
    span_sequences,
    tampered,
)

replace = dataclasses.replace

# Our typing table, written out independently of the kernel's (ARCHITECTURE §2, residual row).
EXPECTED_KIND = {
    BlockerCode.HAZARD_MULTIPLE_CHANGES: ResidualKind.UNCLASSIFIED,
    BlockerCode.HAZARD_RATE_OR_RATIO: ResidualKind.UNCLASSIFIED,
    BlockerCode.HAZARD_FRACTION_OR_PERCENT: ResidualKind.UNCLASSIFIED,
    BlockerCode.HAZARD_NON_INTEGER_QUANTITY: ResidualKind.UNCLASSIFIED,
    BlockerCode.HAZARD_MULTIPLE_ENTITIES: ResidualKind.UNCLASSIFIED,
    BlockerCode.HAZARD_UNSUPPORTED_OPERATION: ResidualKind.UNCLASSIFIED,
    BlockerCode.PROPOSAL_MISSING: ResidualKind.MISSING_PROPOSAL,
    BlockerCode.PROPOSAL_AMBIGUOUS: ResidualKind.UNCLASSIFIED,
    BlockerCode.RELATION_UNSUPPORTED: ResidualKind.UNCLASSIFIED,
    BlockerCode.INITIAL_UNBOUND: ResidualKind.MISSING_ROLE,
    BlockerCode.DELTA_UNBOUND: ResidualKind.MISSING_ROLE,
    BlockerCode.DIRECTION_UNBOUND: ResidualKind.MISSING_ROLE,
    BlockerCode.TARGET_UNBOUND: ResidualKind.TARGET_UNBOUND,
    BlockerCode.ROLE_CONFLICT: ResidualKind.UNCLASSIFIED,
    BlockerCode.ENTITY_MISMATCH: ResidualKind.MISSING_RELATION,
    BlockerCode.UNIT_MISMATCH: ResidualKind.MISSING_RELATION,
}

BLOCKER_ROLE = {
    BlockerCode.INITIAL_UNBOUND: Role.INITIAL,
    BlockerCode.DELTA_UNBOUND: Role.DELTA,
    BlockerCode.DIRECTION_UNBOUND: Role.DIRECTION,
    BlockerCode.TARGET_UNBOUND: Role.TARGET,
}


def assessed(frame: ProblemFrame) -> ContractAssessment:
    result = assess(frame)
    assert type(result) is ContractAssessment, result
    return result


def projected(assessment: ContractAssessment) -> tuple[ContractResidual, ...]:
    result = project_residuals(assessment)
    assert type(result) is tuple, result
    return result


def refused_assessment(blockers: tuple[Blocker, ...], frame_digest: str) -> ContractAssessment:
    """A refused assessment with the given blockers, as another producer could emit it."""
    return ContractAssessment.sealed(
        schema_version="contract_assessment.v1",
        organ="unary_delta_transition",
        organ_version="unary_delta_transition.v1",
        problem_frame_digest=frame_digest,
        status=AssessmentStatus.REFUSED,
        blockers=blockers,
        explanation="refused",
    )


@st.composite
def refused_frames(draw: st.DrawFn) -> ProblemFrame:
    """Refused frames of every shape: free frames (either relation) or a refusing recipe."""
    refusing = sorted(
        (r for r in FRAME_RECIPES if r is not GateReason.ASSESSMENT_RUNNABLE),
        key=lambda r: r.value,
    )
    recipe = draw(st.sampled_from([None, *refusing]))
    if recipe is not None:
        return draw(problem_frames(**FRAME_RECIPES[recipe]))
    relation = draw(st.sampled_from([UNARY_DELTA_RELATION, "state_change.binary_merge"]))
    frame = draw(problem_frames(relation_type=relation))
    # A free frame can happen to be runnable (every role bound, no hazard): that one is not
    # a refused frame, so a frame without a proposal, always refused, stands in for it.
    return frame if assessed(frame).blockers else draw(problem_frames(proposal_count=0))


@st.composite
def blockers(draw: st.DrawFn) -> Blocker:
    """Any blocker code with any evidence, duplicates and order kept as drawn."""
    blocker_code = draw(st.sampled_from(BlockerCode))
    role = BLOCKER_ROLE.get(blocker_code)
    return Blocker(blocker_code, role, draw(span_sequences(max_size=4)))


# ------------------------------------------------------------------------------------------
# The projection


@pytest.mark.obligation("LOCAL-0001/one_per_blocker", "ADR-0226/8.2")
@given(refused_frames())
def test_one_residual_per_blocker_in_order(frame: ProblemFrame) -> None:
    """ADR-0226 §7A: one residual per blocker, in order, code and exact spans unchanged."""
    assessment = assessed(frame)
    residuals = projected(assessment)
    assert len(residuals) == len(assessment.blockers)
    for index, (residual, blocker) in enumerate(zip(residuals, assessment.blockers, strict=True)):
        assert residual.blocker_index == index
        assert residual.residual_code == blocker.code.value
        assert residual.role is blocker.role
        assert residual.evidence_spans == blocker.evidence_spans
        assert residual.kind is EXPECTED_KIND[blocker.code]
        assert residual.problem_frame_digest == assessment.problem_frame_digest
        assert residual.contract_assessment_id == assessment.assessment_id
        assert residual.candidate_organ == assessment.organ


@pytest.mark.obligation("LOCAL-0001/one_per_blocker", "LOCAL-0001/residual_id", "ADR-0226/13.11")
@given(st.lists(blockers(), min_size=1, max_size=4), digests)
def test_projection_preserves_spans_exactly_with_duplicates(
    drawn: list[Blocker], frame_digest: str
) -> None:
    """ADR-0228 §10 / ADR-0231 §13: duplicate spans are kept; order is never changed."""
    assessment = refused_assessment(tuple(drawn), frame_digest)
    residuals = projected(assessment)
    assert [r.evidence_spans for r in residuals] == [b.evidence_spans for b in drawn]
    assert [r.blocker_index for r in residuals] == list(range(len(drawn)))
    for residual in residuals:
        assert residual.residual_id == oracle.residual_id(residual)


@pytest.mark.obligation("LOCAL-0001/residual_id")
@given(span_sequences(min_size=2, max_size=4), digests)
def test_span_order_and_duplicates_change_residual_id(
    spans: tuple[SourceSpan, ...], frame_digest: str
) -> None:
    """ADR-0231 §13: reordering or duplicating evidence spans changes the residual id."""

    def residual_for(evidence: tuple[SourceSpan, ...]) -> ContractResidual:
        blocker = Blocker(BlockerCode.DIRECTION_UNBOUND, Role.DIRECTION, evidence)
        (residual,) = projected(refused_assessment((blocker,), frame_digest))
        return residual

    base = residual_for(spans)
    assert (residual_for(spans[::-1]).residual_id == base.residual_id) is (spans == spans[::-1])
    assert residual_for(spans + spans[:1]).residual_id != base.residual_id


@pytest.mark.obligation("LOCAL-0001/kind_table")
def test_typing_table_is_exactly_ours() -> None:
    """ARCHITECTURE §2 / docs/adr/0001: the typing table names exactly six blocker codes."""
    classified = {code: kind for code, kind in EXPECTED_KIND.items()}
    classified = {c: k for c, k in classified.items() if k is not ResidualKind.UNCLASSIFIED}
    assert RESIDUAL_KIND_BY_BLOCKER == classified
    assert set(EXPECTED_KIND) == set(BlockerCode)


@pytest.mark.obligation("LOCAL-0001/kind_table")
@pytest.mark.parametrize("blocker_code", list(BlockerCode), ids=lambda c: c.value)
def test_every_blocker_code_projects_to_its_kind(blocker_code: BlockerCode) -> None:
    """ADR-0226 §7B: a blocker outside the typing table projects as UNCLASSIFIED."""
    span = SourceSpan("x", 0, 1, 0)
    blocker = Blocker(blocker_code, BLOCKER_ROLE.get(blocker_code), (span, span))
    (residual,) = projected(refused_assessment((blocker,), "a" * 64))
    assert residual.kind is EXPECTED_KIND[blocker_code]
    assert residual.residual_code == blocker_code.value
    assert residual.evidence_spans == (span, span)


class _PassesForAMember:
    """Hashes and compares equal like the member it names, without being it."""

    def __init__(self, member: BlockerCode) -> None:
        self.member = member

    def __hash__(self) -> int:
        return hash(self.member)

    def __eq__(self, other: object) -> bool:
        return True


@pytest.mark.obligation("LOCAL-0001/kind_table")
@pytest.mark.parametrize("blocker_code", list(RESIDUAL_KIND_BY_BLOCKER), ids=lambda c: c.value)
def test_only_the_member_itself_has_its_kind(blocker_code: BlockerCode) -> None:
    """docs/adr/0001: the table is read by identity; its value or an object that passes for the
    member in a dict is unclassified, never a searchable kind."""
    assert residual_kind_for(blocker_code) is RESIDUAL_KIND_BY_BLOCKER[blocker_code]
    impostor = _PassesForAMember(blocker_code)
    assert RESIDUAL_KIND_BY_BLOCKER.get(impostor) is RESIDUAL_KIND_BY_BLOCKER[blocker_code]
    assert residual_kind_for(impostor) is ResidualKind.UNCLASSIFIED  # type: ignore[arg-type]
    assert residual_kind_for(blocker_code.value) is ResidualKind.UNCLASSIFIED  # type: ignore[arg-type]


@pytest.mark.obligation("LOCAL-0001/refusals", "ADR-0226/8.2")
def test_refused_without_blockers_projects_nothing() -> None:
    """ADR-0226 §7A: the projection decides nothing; no blocker, no residual (gate's call)."""
    assert project_residuals(refused_assessment((), "a" * 64)) == ()


# ------------------------------------------------------------------------------------------
# Identity and determinism


@pytest.mark.obligation("LOCAL-0001/residual_id", "LOCAL-0003/blanked_self_seal")
@given(refused_frames())
def test_residual_ids_match_oracle_and_ignore_explanation(frame: ProblemFrame) -> None:
    """ADR-0228 §10: residual_id hashes every field but prose (own or the assessment's)."""
    assessment = assessed(frame)
    residuals = projected(assessment)
    for residual in residuals:
        assert residual.residual_id == oracle.residual_id(residual)
        assert tampered(residual, explanation="x").compute_id() == residual.residual_id
        assert tampered(residual, explanation="x").find_defect() is None
    reworded = tampered(assessment, explanation="reworded")
    assert projected(reworded) == residuals


@pytest.mark.obligation("ADR-0226/9.1", "ADR-0226/8.2")
@given(refused_frames())
def test_projection_is_deterministic_and_read_only(frame: ProblemFrame) -> None:
    """ADR-0226 §7A/§9: the same assessment gives the same bytes; the input is not mutated."""
    assessment = assessed(frame)
    before = assessment.to_json()
    first, second = projected(assessment), projected(assessment)
    assert first == second
    assert [canonical_json(r.to_json()) for r in first] == [
        canonical_json(r.to_json()) for r in second
    ]
    assert assessment.to_json() == before


# ------------------------------------------------------------------------------------------
# Refusals


def assert_refused(result: object, codes: tuple[str, ...], subject: str | None) -> None:
    assert type(result) is StageRefusal, result
    assert result.stage is Stage.RESIDUAL
    assert result.reason_codes == codes
    assert result.subject_digest == subject
    assert result.refusal_id == oracle.refusal_id(result)


@pytest.mark.obligation("LOCAL-0001/refusals")
@given(problem_frames(**FRAME_RECIPES[GateReason.ASSESSMENT_RUNNABLE]))
def test_runnable_assessment_is_refused(frame: ProblemFrame) -> None:
    """ADR-0226 §7A: residuals project refused assessments only; runnable has nothing."""
    assessment = assessed(frame)
    result = project_residuals(assessment)
    assert_refused(result, ("assessment_runnable",), assessment.assessment_id)


@pytest.mark.obligation("LOCAL-0001/refusals", "ADR-0226/9.9")
@given(refused_frames())
def test_malformed_assessment_is_refused_with_exact_defect(frame: ProblemFrame) -> None:
    """ADR-0226 §9: a malformed assessment gives assessment_malformed and its exact defect."""
    assessment = assessed(frame)
    span = SourceSpan("x", 0, 1, 0)
    bad_span = tampered(span, end=0)
    cases = [
        (None, Defect.WRONG_RECORD_TYPE),
        (assessment.to_json(), Defect.WRONG_RECORD_TYPE),
        (tampered(assessment, status="refused"), Defect.UNKNOWN_ENUM_VALUE),
        (tampered(assessment, assessment_id="0" * 64), Defect.IDENTITY_MISMATCH),
        (tampered(assessment, blockers=list(assessment.blockers)), Defect.SEQUENCE_NOT_TUPLE),
        (
            tampered(assessment, blockers=(Blocker(BlockerCode.UNIT_MISMATCH, None, (span,)),)),
            Defect.IDENTITY_MISMATCH,
        ),
        (
            tampered(
                assessment,
                blockers=(tampered(Blocker(BlockerCode.UNIT_MISMATCH, None, ()), code="x"),),
            ),
            Defect.UNKNOWN_ENUM_VALUE,
        ),
        (
            tampered(
                assessment,
                blockers=(Blocker(BlockerCode.UNIT_MISMATCH, None, (span,)),),
                status=AssessmentStatus.RUNNABLE,
            ),
            Defect.INCONSISTENT_FIELDS,
        ),
        (
            tampered(
                assessment,
                blockers=(
                    tampered(
                        Blocker(BlockerCode.UNIT_MISMATCH, None, ()), evidence_spans=(bad_span,)
                    ),
                ),
            ),
            Defect.SPAN_EMPTY_OR_INVERTED,
        ),
    ]
    for value, defect in cases:
        result = project_residuals(value)  # type: ignore[arg-type]
        assert_refused(result, ("assessment_malformed", defect.value), None)


@pytest.mark.obligation("LOCAL-0001/function")
@given(st.one_of(st.none(), st.integers(), st.text(), st.lists(st.integers())))
def test_project_residuals_never_raises_on_garbage(value: object) -> None:
    """ARCHITECTURE §2: a stage never raises on bad input."""
    assert_refused(
        project_residuals(value),  # type: ignore[arg-type]
        ("assessment_malformed", "wrong_record_type"),
        None,
    )


# ------------------------------------------------------------------------------------------
# ContractResidual construction


def residual_fields(blocker_code: BlockerCode, kind: ResidualKind) -> dict[str, object]:
    return {
        "schema_version": "contract_residual.v1",
        "problem_frame_digest": "a" * 64,
        "contract_assessment_id": "b" * 64,
        "candidate_organ": "unary_delta_transition",
        "blocker_index": 0,
        "kind": kind,
        "residual_code": blocker_code.value,
        "role": BLOCKER_ROLE.get(blocker_code),
        "evidence_spans": (SourceSpan("x", 0, 1, 0),),
        "explanation": "",
    }


@pytest.mark.obligation("LOCAL-0001/kind_table")
@given(st.sampled_from(BlockerCode), st.sampled_from(ResidualKind))
def test_kind_must_agree_with_code(blocker_code: BlockerCode, kind: ResidualKind) -> None:
    """Our typing table: a residual whose kind disagrees with its code is INCONSISTENT_FIELDS."""
    fields = residual_fields(blocker_code, kind)
    if kind is EXPECTED_KIND[blocker_code]:
        residual = ContractResidual.sealed(**fields)
        assert residual.residual_id == oracle.residual_id(residual)
    else:
        with pytest.raises(RecordError) as caught:
            ContractResidual.sealed(**fields)
        assert caught.value.found == RecordDefect(
            "ContractResidual", "kind", Defect.INCONSISTENT_FIELDS
        )


@pytest.mark.obligation("LOCAL-0003/records_validate")
@pytest.mark.parametrize(
    ("field", "value", "defect"),
    [
        ("residual_code", "made_up_code", Defect.UNKNOWN_ENUM_VALUE),
        ("residual_code", BlockerCode.UNIT_MISMATCH, Defect.WRONG_TYPE),
        ("residual_code", Impostor(), Defect.WRONG_TYPE),
        ("blocker_index", -1, Defect.NEGATIVE_VALUE),
        ("blocker_index", True, Defect.BOOL_NOT_INT),
        ("kind", "missing_relation", Defect.UNKNOWN_ENUM_VALUE),
        ("candidate_organ", "other_organ.v1", Defect.VERSION_UNSUPPORTED),
        ("evidence_spans", [SourceSpan("x", 0, 1, 0)], Defect.SEQUENCE_NOT_TUPLE),
        ("schema_version", "contract_residual.v2", Defect.VERSION_UNSUPPORTED),
    ],
)
def test_residual_field_defects(field: str, value: object, defect: Defect) -> None:
    """ARCHITECTURE §2: each malformed residual field gives its own closed defect."""
    fields = residual_fields(BlockerCode.UNIT_MISMATCH, ResidualKind.MISSING_RELATION)
    fields[field] = value
    with pytest.raises(RecordError) as caught:
        ContractResidual.sealed(**fields)
    assert caught.value.found == RecordDefect("ContractResidual", field, defect)


@pytest.mark.obligation("LOCAL-0001/residual_id", "LOCAL-0003/sealing")
def test_wrong_residual_id_is_refused() -> None:
    """Our self-seal decision: a residual whose id is not its own digest cannot be built."""
    fields = residual_fields(BlockerCode.UNIT_MISMATCH, ResidualKind.MISSING_RELATION)
    good = ContractResidual.sealed(**fields)
    with pytest.raises(RecordError) as caught:
        ContractResidual(residual_id="0" * 64, **fields)
    assert caught.value.found == RecordDefect(
        "ContractResidual", "residual_id", Defect.IDENTITY_MISMATCH
    )
    assert ContractResidual(residual_id=good.residual_id, **fields) == good
