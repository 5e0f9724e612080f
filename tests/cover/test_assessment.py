"""``assess()``: the sole runnable/refused authority, and ``ContractAssessment``.

Clauses: ADR-0226 §8.1 (ContractAssessment is the sole runnable/refused authority), §9
(determinism, fail-closed typed refusal), ADR-0228 §10 (explanation excluded from ids), ADR-0231
§6 and §13 (a missing direction carries the grounded cue spans), ARCHITECTURE §2 (a stage never
raises and never mutates its input).
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from practice_loop.harness.examples import shipped_examples
from practice_loop.kernel import (
    UNARY_DELTA_RELATION,
    AssessmentStatus,
    Blocker,
    BlockerCode,
    ContractAssessment,
    Defect,
    GateReason,
    HazardCode,
    ProblemFrame,
    RecordDefect,
    RecordError,
    Role,
    SourceSpan,
    Stage,
    StageRefusal,
    assess,
    canonical_json,
    problem_frame_digest,
)
from practice_strategies import (
    FRAME_RECIPES,
    digests,
    oracle,
    problem_frames,
    span_sequences,
    tampered,
)

replace = dataclasses.replace

HAZARD_BLOCKER = {
    HazardCode.MULTIPLE_CHANGES: BlockerCode.HAZARD_MULTIPLE_CHANGES,
    HazardCode.RATE_OR_RATIO: BlockerCode.HAZARD_RATE_OR_RATIO,
    HazardCode.FRACTION_OR_PERCENT: BlockerCode.HAZARD_FRACTION_OR_PERCENT,
    HazardCode.NON_INTEGER_QUANTITY: BlockerCode.HAZARD_NON_INTEGER_QUANTITY,
    HazardCode.MULTIPLE_ENTITIES: BlockerCode.HAZARD_MULTIPLE_ENTITIES,
    HazardCode.UNSUPPORTED_OPERATION: BlockerCode.HAZARD_UNSUPPORTED_OPERATION,
}
UNBOUND_BLOCKER = (
    (Role.INITIAL, BlockerCode.INITIAL_UNBOUND),
    (Role.DELTA, BlockerCode.DELTA_UNBOUND),
    (Role.DIRECTION, BlockerCode.DIRECTION_UNBOUND),
    (Role.TARGET, BlockerCode.TARGET_UNBOUND),
)

BlockerTriple = tuple[BlockerCode, "Role | None", tuple[SourceSpan, ...]]


def expected_blockers(frame: ProblemFrame) -> list[BlockerTriple]:
    """Our model of the organ contract, in its fixed order: hazards; proposal missing or
    ambiguous or unsupported (each ends the list); unbound roles in role order (a missing
    direction also carries every cue span); units, only when everything else holds."""
    found: list[BlockerTriple] = [
        (HAZARD_BLOCKER[hazard.code], None, hazard.evidence_spans) for hazard in frame.hazards
    ]
    fact_spans = tuple(fact.span for fact in frame.facts)
    if not frame.proposals:
        return [*found, (BlockerCode.PROPOSAL_MISSING, None, fact_spans)]
    if len(frame.proposals) > 1:
        return [*found, (BlockerCode.PROPOSAL_AMBIGUOUS, None, fact_spans)]
    proposal = frame.proposals[0]
    bound = tuple(span for binding in proposal.bindings for span in binding.evidence_spans)
    if proposal.relation_type != UNARY_DELTA_RELATION:
        return [*found, (BlockerCode.RELATION_UNSUPPORTED, None, bound)]
    roles = {binding.role: binding for binding in proposal.bindings}
    cue_spans = tuple(cue.span for cue in frame.cues)
    for role, blocker_code in UNBOUND_BLOCKER:
        if role not in roles:
            extra = cue_spans if role is Role.DIRECTION else ()
            found.append((blocker_code, role, bound + extra))
    if found:
        return found
    initial = frame.fact(roles[Role.INITIAL].fact_id)  # type: ignore[arg-type]
    delta = frame.fact(roles[Role.DELTA].fact_id)  # type: ignore[arg-type]
    assert initial is not None and delta is not None and frame.target is not None
    spans = (initial.span, delta.span, frame.target.span)
    if initial.fact_id == delta.fact_id:
        found.append((BlockerCode.ROLE_CONFLICT, None, spans))
    if not initial.entity == delta.entity == frame.target.entity:
        found.append((BlockerCode.ENTITY_MISMATCH, None, spans))
    if not initial.unit == delta.unit == frame.target.unit:
        found.append((BlockerCode.UNIT_MISMATCH, None, spans))
    return found


def triples(assessment: ContractAssessment) -> list[BlockerTriple]:
    return [(b.code, b.role, b.evidence_spans) for b in assessment.blockers]


def assessed(frame: ProblemFrame) -> ContractAssessment:
    result = assess(frame)
    assert type(result) is ContractAssessment, result
    return result


@st.composite
def frames_any_relation(draw: st.DrawFn) -> ProblemFrame:
    """Free frames (either relation) half the time, a gate recipe's frame otherwise, so that
    runnable frames and unit mismatches are as common as missing roles."""
    recipe = draw(st.sampled_from([None, *sorted(FRAME_RECIPES, key=lambda r: r.value)]))
    if recipe is not None and draw(st.booleans()):
        return draw(problem_frames(**FRAME_RECIPES[recipe]))
    # Unsupported relations on either side of the supported one, so no ordering passes for
    # the equality the contract asks (a mutant comparing with `<` missed the later one).
    relation = draw(
        st.sampled_from(
            [UNARY_DELTA_RELATION, "state_change.binary_merge", "state_change.zero_sum"]
        )
    )
    return draw(problem_frames(relation_type=relation))


# ------------------------------------------------------------------------------------------
# The organ's judgement


@pytest.mark.obligation(
    "ADR-0226/8.1",
    "LOCAL-0005/blocker_order",
    "LOCAL-0005/runnable_iff_no_blocker",
)
@given(frames_any_relation())
def test_blockers_follow_the_contract_in_fixed_order(frame: ProblemFrame) -> None:
    """ADR-0226 §8.1/§9: every blocker of the contract in one stable order; runnable iff none."""
    assessment = assessed(frame)
    assert triples(assessment) == expected_blockers(frame)
    runnable = assessment.status is AssessmentStatus.RUNNABLE
    assert runnable is (assessment.blockers == ())
    assert assessment.problem_frame_digest == problem_frame_digest(frame)


@pytest.mark.obligation("LOCAL-0005/direction_cue_spans")
@given(problem_frames(proposal_count=1, bound_roles={Role.INITIAL, Role.DELTA}, cue_count=2))
def test_missing_direction_carries_cue_spans_after_bound_spans(frame: ProblemFrame) -> None:
    """ADR-0231 §6/§13: an unbound direction cites every grounded cue span, after bound spans."""
    assessment = assessed(frame)
    (direction,) = [b for b in assessment.blockers if b.code is BlockerCode.DIRECTION_UNBOUND]
    bound = tuple(s for b in frame.proposals[0].bindings for s in b.evidence_spans)
    assert direction.role is Role.DIRECTION
    assert direction.evidence_spans == bound + (frame.cues[0].span, frame.cues[1].span)
    for blocker in assessment.blockers:
        if blocker.code is not BlockerCode.DIRECTION_UNBOUND and blocker.role is not None:
            assert blocker.evidence_spans == bound


RECIPE_BLOCKERS = {
    GateReason.ELIGIBLE_MISSING_ROLE: (BlockerCode.DIRECTION_UNBOUND,),
    GateReason.ELIGIBLE_MISSING_RELATION: (BlockerCode.UNIT_MISMATCH,),
    GateReason.ELIGIBLE_MISSING_PROPOSAL: (BlockerCode.PROPOSAL_MISSING,),
    GateReason.ELIGIBLE_TARGET_UNBOUND: (BlockerCode.TARGET_UNBOUND,),
    GateReason.ASSESSMENT_RUNNABLE: (),
    GateReason.MULTIPLE_RESIDUALS: (
        BlockerCode.DELTA_UNBOUND,
        BlockerCode.DIRECTION_UNBOUND,
        BlockerCode.TARGET_UNBOUND,
    ),
    GateReason.RESIDUAL_WITHOUT_EVIDENCE: (BlockerCode.PROPOSAL_MISSING,),
}


def test_every_recipe_has_an_expectation() -> None:
    """practice_strategies.FRAME_RECIPES: each recipe is covered below (hazards separately)."""
    assert set(RECIPE_BLOCKERS) | {GateReason.UNCLASSIFIED_RESIDUAL} == set(FRAME_RECIPES)


@pytest.mark.obligation("LOCAL-0005/blocker_order")
@given(st.sampled_from(sorted(RECIPE_BLOCKERS, key=lambda r: r.value)), st.data())
def test_each_recipe_gives_its_blocker_codes(reason: GateReason, data: st.DataObject) -> None:
    """ADR-0226 §7A: each frame recipe reaches exactly its blocker codes."""
    frame = data.draw(problem_frames(**FRAME_RECIPES[reason]))
    assessment = assessed(frame)
    assert tuple(b.code for b in assessment.blockers) == RECIPE_BLOCKERS[reason]
    runnable = reason is GateReason.ASSESSMENT_RUNNABLE
    assert assessment.status is (
        AssessmentStatus.RUNNABLE if runnable else AssessmentStatus.REFUSED
    )
    if reason is GateReason.RESIDUAL_WITHOUT_EVIDENCE:
        assert assessment.blockers[0].evidence_spans == ()


@pytest.mark.obligation("LOCAL-0005/blocker_order")
@given(problem_frames(**FRAME_RECIPES[GateReason.UNCLASSIFIED_RESIDUAL]))
def test_hazard_recipe_leads_with_the_hazard_blocker(frame: ProblemFrame) -> None:
    """ADR-0226 §7B: a hazard blocks first, carrying the hazard's own evidence spans."""
    assessment = assessed(frame)
    assert assessment.status is AssessmentStatus.REFUSED
    first = assessment.blockers[0]
    assert first.code is HAZARD_BLOCKER[frame.hazards[0].code]
    assert first.role is None
    assert first.evidence_spans == frame.hazards[0].evidence_spans


# ------------------------------------------------------------------------------------------
# Identity and determinism


@pytest.mark.obligation("LOCAL-0003/blanked_self_seal")
@given(frames_any_relation(), st.text(st.characters(codec="utf-8"), max_size=30))
def test_assessment_id_matches_oracle_and_ignores_explanation(
    frame: ProblemFrame, prose: str
) -> None:
    """ADR-0228 §10 / our self-seal: the id hashes every field but prose, its own id blanked."""
    assessment = assessed(frame)
    assert assessment.assessment_id == oracle.assessment_id(assessment)
    for new in ("x", prose):
        altered = tampered(assessment, explanation=new)
        assert altered.compute_id() == assessment.assessment_id
        assert altered.find_defect() is None


@pytest.mark.obligation("ADR-0226/9.5")
@given(frames_any_relation())
def test_assessing_twice_gives_equal_bytes_and_leaves_the_frame(frame: ProblemFrame) -> None:
    """ADR-0226 §9 / ARCHITECTURE §2: same frame, same bytes; the input frame is not mutated."""
    before = frame.to_json()
    digest = problem_frame_digest(frame)
    first, second = assessed(frame), assessed(frame)
    assert first == second
    assert canonical_json(first.to_json()) == canonical_json(second.to_json())
    assert assessed(replace(frame)) == first
    assert frame.to_json() == before
    assert problem_frame_digest(frame) == digest


@given(problem_frames(proposal_count=1, bound_roles={Role.INITIAL}), st.data())
def test_blocker_span_order_changes_the_assessment_id(
    frame: ProblemFrame, data: st.DataObject
) -> None:
    """ADR-0231 §13: evidence-span order takes part in the identity of the assessment."""
    assessment = assessed(frame)
    spans = data.draw(span_sequences(min_size=2, max_size=4))
    reordered = spans[::-1]
    first = replace(assessment.blockers[0], evidence_spans=spans)
    second = replace(assessment.blockers[0], evidence_spans=reordered)
    one = ContractAssessment.sealed(**{**_fields(assessment), "blockers": (first,)})
    two = ContractAssessment.sealed(**{**_fields(assessment), "blockers": (second,)})
    assert (one.assessment_id == two.assessment_id) is (spans == reordered)


def _fields(assessment: ContractAssessment) -> dict[str, object]:
    fields = {f.name: getattr(assessment, f.name) for f in dataclasses.fields(assessment)}
    del fields["assessment_id"]
    return fields


# ------------------------------------------------------------------------------------------
# Fail-closed refusal: assess never raises


def assert_frame_malformed(result: object, defect: Defect) -> None:
    assert type(result) is StageRefusal, result
    assert result.stage is Stage.ASSESSMENT
    assert result.reason_codes == ("frame_malformed", defect.value)
    assert result.subject_digest is None
    assert result.refusal_id == oracle.refusal_id(result)


@pytest.mark.obligation("ADR-0226/9.9", "LOCAL-0005/runnable_iff_no_blocker")
@pytest.mark.parametrize("value", [None, {}, {"schema_version": "problem_frame.v1"}, 0, "frame"])
def test_non_frames_are_refused(value: object) -> None:
    """ADR-0226 §9 / ARCHITECTURE §2: malformed input is a typed refusal, never an exception."""
    assert_frame_malformed(assess(value), Defect.WRONG_RECORD_TYPE)  # type: ignore[arg-type]


def tamper_first_fact(frame: ProblemFrame, **changes: object) -> ProblemFrame:
    fact = tampered(frame.facts[0], **changes)
    return tampered(frame, facts=(fact, *frame.facts[1:]))


TAMPERINGS = [
    ("fact value True", lambda f: tamper_first_fact(f, value=True), Defect.BOOL_NOT_INT),
    ("fact value 1.5", lambda f: tamper_first_fact(f, value=1.5), Defect.FLOAT_NOT_INT),
    ("fact value -1", lambda f: tamper_first_fact(f, value=-1), Defect.NEGATIVE_VALUE),
    (
        "fact value 2**53",
        lambda f: tamper_first_fact(f, value=2**53),
        Defect.INT_OUT_OF_RANGE,
    ),
    (
        "span start >= end",
        lambda f: tamper_first_fact(f, span=tampered(f.facts[0].span, end=f.facts[0].span.start)),
        Defect.SPAN_EMPTY_OR_INVERTED,
    ),
    (
        "span start negative",
        lambda f: tamper_first_fact(f, span=tampered(f.facts[0].span, start=-1)),
        Defect.SPAN_START_NEGATIVE,
    ),
    (
        "span outside source",
        lambda f: tampered(f, source_text=f.source_text[: f.facts[0].span.start]),
        Defect.SPAN_NOT_IN_SOURCE,
    ),
    (
        "duplicate fact id",
        lambda f: tampered(f, facts=(f.facts[0], f.facts[0])),
        Defect.DUPLICATE_ENTRY,
    ),
    ("facts as list", lambda f: tampered(f, facts=list(f.facts)), Defect.SEQUENCE_NOT_TUPLE),
    (
        "schema version",
        lambda f: tampered(f, schema_version="problem_frame.v9"),
        Defect.VERSION_UNSUPPORTED,
    ),
    (
        "fact id unknown",
        lambda f: tamper_first_fact(f, fact_id="q_renamed"),
        Defect.REFERENCE_UNKNOWN,
    ),
    ("target not a record", lambda f: tampered(f, target="t"), Defect.WRONG_RECORD_TYPE),
]


@pytest.mark.obligation("ADR-0226/9.9", "LOCAL-0003/stages_reinspect")
@given(
    problem_frames(proposal_count=1, bound_roles={Role.INITIAL}, fact_count=2),
    st.sampled_from(TAMPERINGS),
)
def test_tampered_frames_are_refused_with_exact_defect(frame: ProblemFrame, case: tuple) -> None:
    """ADR-0226 §9: a frame altered after construction is refused with its exact defect."""
    _, alter, defect = case
    altered = alter(frame)
    assert_frame_malformed(assess(altered), defect)


@pytest.mark.obligation("ADR-0226/9.9")
@given(st.one_of(st.none(), st.integers(), st.text(), st.binary(), st.lists(st.integers())))
def test_assess_never_raises_on_garbage(value: object) -> None:
    """ARCHITECTURE §2: a stage never raises on bad input."""
    assert_frame_malformed(assess(value), Defect.WRONG_RECORD_TYPE)  # type: ignore[arg-type]


@pytest.mark.obligation("LOCAL-0003/stages_reinspect")
def test_emptied_frame_is_refused_not_raised() -> None:
    """identity.inspect_record: a frame with emptied slots is refused as WRONG_TYPE."""
    assert_frame_malformed(assess(object.__new__(ProblemFrame)), Defect.WRONG_TYPE)


# ------------------------------------------------------------------------------------------
# ContractAssessment construction


@pytest.mark.obligation("ADR-0226/13.4", "LOCAL-0005/runnable_iff_no_blocker")
@given(problem_frames(**FRAME_RECIPES[GateReason.ELIGIBLE_MISSING_ROLE]))
def test_runnable_with_blockers_is_refused(frame: ProblemFrame) -> None:
    """ARCHITECTURE §2: runnable exactly when no blocker; RUNNABLE with one is inconsistent."""
    assessment = assessed(frame)
    with pytest.raises(RecordError) as caught:
        ContractAssessment.sealed(**{**_fields(assessment), "status": AssessmentStatus.RUNNABLE})
    assert caught.value.found == RecordDefect(
        "ContractAssessment", "blockers", Defect.INCONSISTENT_FIELDS
    )


@pytest.mark.obligation("LOCAL-0003/records_validate", "LOCAL-0003/sealing")
@given(st.sampled_from(AssessmentStatus), digests, digests)
def test_wrong_assessment_id_is_refused(
    status: AssessmentStatus, frame_digest: str, wrong: str
) -> None:
    """Our self-seal decision: an assessment whose id is not its own digest cannot be built."""
    fields: dict[str, object] = {
        "schema_version": "contract_assessment.v1",
        "organ": "unary_delta_transition",
        "organ_version": "unary_delta_transition.v1",
        "problem_frame_digest": frame_digest,
        "status": status,
        "blockers": (),
        "explanation": "",
    }
    good = ContractAssessment.sealed(**fields)
    if wrong == good.assessment_id:
        wrong = "0" * 64
    with pytest.raises(RecordError) as caught:
        ContractAssessment(assessment_id=wrong, **fields)
    assert caught.value.found == RecordDefect(
        "ContractAssessment", "assessment_id", Defect.IDENTITY_MISMATCH
    )
    assert ContractAssessment(assessment_id=good.assessment_id, **fields) == good


def test_refused_without_blockers_is_representable() -> None:
    """ContractAssessment docstring: a refused assessment with no blocker can be built."""
    record = ContractAssessment.sealed(
        schema_version="contract_assessment.v1",
        organ="unary_delta_transition",
        organ_version="unary_delta_transition.v1",
        problem_frame_digest="a" * 64,
        status=AssessmentStatus.REFUSED,
        blockers=(),
        explanation="",
    )
    assert record.assessment_id == oracle.assessment_id(record)


@pytest.mark.obligation("LOCAL-0003/records_validate")
@pytest.mark.parametrize(
    ("field", "value", "defect"),
    [
        ("schema_version", "contract_assessment.v2", Defect.VERSION_UNSUPPORTED),
        ("organ_version", "unary_delta_transition.v0", Defect.VERSION_MALFORMED),
        ("problem_frame_digest", "A" * 64, Defect.DIGEST_MALFORMED),
        ("status", "runnable", Defect.UNKNOWN_ENUM_VALUE),
        ("blockers", [], Defect.SEQUENCE_NOT_TUPLE),
        ("explanation", None, Defect.WRONG_TYPE),
    ],
)
def test_assessment_field_defects(field: str, value: object, defect: Defect) -> None:
    """ARCHITECTURE §2: each malformed assessment field gives its own closed defect."""
    fields: dict[str, object] = {
        "schema_version": "contract_assessment.v1",
        "organ": "unary_delta_transition",
        "organ_version": "unary_delta_transition.v1",
        "problem_frame_digest": "a" * 64,
        "status": AssessmentStatus.REFUSED,
        "blockers": (),
        "explanation": "",
    }
    fields[field] = value
    with pytest.raises(RecordError) as caught:
        ContractAssessment(assessment_id="b" * 64, **fields)
    assert caught.value.found == RecordDefect("ContractAssessment", field, defect)


@pytest.mark.obligation("LOCAL-0003/records_validate")
def test_blocker_code_must_be_a_member() -> None:
    """ARCHITECTURE §2 (enums): a blocker's code is a BlockerCode member, not a bare string."""
    with pytest.raises(RecordError) as caught:
        Blocker("unit_mismatch", None, ())
    assert caught.value.found == RecordDefect("Blocker", "code", Defect.UNKNOWN_ENUM_VALUE)


@pytest.mark.obligation("LOCAL-0005/blocker_order")
@pytest.mark.parametrize("other", ["Aaron", "Zed", "aardvark", "zebra"])
@pytest.mark.parametrize("where", ["first_fact", "second_fact", "question"])
@pytest.mark.parametrize(
    ("field", "code"),
    [("entity", BlockerCode.ENTITY_MISMATCH), ("unit", BlockerCode.UNIT_MISMATCH)],
)
def test_every_fact_and_the_question_share_entity_and_unit(field, code, where, other):
    """docs/adr/0005: the two facts and the question name one entity and one unit; any one of
    the three that differs, sorting before or after the others, is refused (the kernel
    mutation score's survivor `a == b == c` made `a >= b == c`, docs/adr/0015)."""
    (example,) = [e for e in shipped_examples() if e.name == "runnable_increase"]
    frame = example.frame
    if where == "question":
        changed = replace(frame, target=replace(frame.target, **{field: other}))
    else:
        index = 0 if where == "first_fact" else 1
        facts = list(frame.facts)
        facts[index] = replace(facts[index], **{field: other})
        changed = replace(frame, facts=tuple(facts))
    assert [b.code for b in assess(changed).blockers] == [code]


@pytest.mark.obligation("LOCAL-0005/blocker_order")
def test_one_state_of_one_entity():
    """docs/adr/0005: initial and delta are two facts, and facts and question share the
    entity; otherwise the contract refuses (role_conflict, entity_mismatch)."""
    (example,) = [e for e in shipped_examples() if e.name == "runnable_increase"]
    frame = example.frame
    assert assess(frame).status is AssessmentStatus.RUNNABLE
    other = replace(frame, facts=(frame.facts[0], replace(frame.facts[1], entity="Ann")))
    assert [b.code for b in assess(other).blockers] == [BlockerCode.ENTITY_MISMATCH]
    proposal = frame.proposals[0]
    same_fact = replace(
        proposal,
        bindings=tuple(
            replace(b, fact_id="q1") if b.role is Role.DELTA else b for b in proposal.bindings
        ),
    )
    doubled = replace(frame, proposals=(same_fact,))
    assert [b.code for b in assess(doubled).blockers] == [BlockerCode.ROLE_CONFLICT]
    # Two facts whichever way their ids sort: the initial's id after the delta's is no conflict.
    swap = {"q1": "q2", "q2": "q1"}
    swapped = replace(
        proposal,
        bindings=tuple(
            replace(b, fact_id=swap[b.fact_id]) if b.fact_id in swap else b
            for b in proposal.bindings
        ),
    )
    assert swapped.binding(Role.INITIAL).fact_id > swapped.binding(Role.DELTA).fact_id
    assert assess(replace(frame, proposals=(swapped,))).status is AssessmentStatus.RUNNABLE
