"""``ProblemFrame`` and its values: cross checks with exact defects, and the frame digest.

Clauses: ADR-0226 §7A and §10 (exact evidence spans survive unchanged), ADR-0228 §6 and §10
(the frame digest hashes every field, spans in order, duplicates kept), ADR-0231 §13 (span
order and duplicates change the identities they take part in), and our span/enum decisions in
ARCHITECTURE §2.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from practice_loop.harness.examples import shipped_examples
from practice_loop.kernel import (
    PROBLEM_FRAME_SCHEMA_VERSION,
    UNARY_DELTA_ORGAN,
    UNARY_DELTA_RELATION,
    Defect,
    Direction,
    FrameHazard,
    GroundedUnaryDeltaCue,
    HazardCode,
    ProblemFrame,
    QuantityFact,
    QuestionTarget,
    RecordDefect,
    RecordError,
    Role,
    RoleBinding,
    SourceSpan,
    StateChangeProposal,
    canonical_json,
    problem_frame_digest,
)
from practice_loop.kernel.record import inspect_record
from practice_strategies import (
    ALL_ROLES,
    malformed_versions,
    oracle,
    problem_frames,
    spans,
    spans_in,
    tampered,
    versions,
)

replace = dataclasses.replace

EMPTY_FRAME = ProblemFrame(
    PROBLEM_FRAME_SCHEMA_VERSION, UNARY_DELTA_ORGAN, "Ann had 3 apples.", (), (), (), None, ()
)

# Frames with one proposal binding at least initial (so bindings exist to alter).
frames_with_binding = problem_frames(proposal_count=1, bound_roles=ALL_ROLES)


def defect_of(build) -> RecordDefect:  # type: ignore[no-untyped-def]
    with pytest.raises(RecordError) as caught:
        build()
    return caught.value.found


def with_first_binding(frame: ProblemFrame, **changes: object) -> ProblemFrame:
    """The frame with its first proposal's first binding changed (validated on construction)."""
    proposal = frame.proposals[0]
    first = replace(proposal.bindings[0], **changes)
    bindings = (first, *proposal.bindings[1:])
    return replace(frame, proposals=(replace(proposal, bindings=bindings),))


# ------------------------------------------------------------------------------------------
# Well-formed frames


@pytest.mark.obligation("LOCAL-0005/frame_cross_checks")
@given(problem_frames())
def test_generated_frames_are_well_formed_and_spans_exact(frame: ProblemFrame) -> None:
    """ADR-0226 §10 evidence fidelity: every span in a frame is the source at its offsets."""
    assert inspect_record(frame, ProblemFrame) is None
    for span in frame.all_spans():
        assert frame.source_text[span.start : span.end] == span.text


@pytest.mark.obligation("LOCAL-0003/value_encoding")
@given(problem_frames())
def test_frame_digest_matches_oracle_and_is_deterministic(frame: ProblemFrame) -> None:
    """ADR-0228 §6/§10: SHA-256 of canonical JSON over every field; a rebuilt copy agrees."""
    assert problem_frame_digest(frame) == oracle.problem_frame_digest(frame)
    assert canonical_json(frame.to_json()) == oracle.canonical_bytes(oracle.frame_payload(frame))
    rebuilt = replace(frame)
    assert rebuilt == frame
    assert problem_frame_digest(rebuilt) == problem_frame_digest(frame)


# ------------------------------------------------------------------------------------------
# Span order and duplicates take part in the frame identity


@given(frames_with_binding, st.data())
def test_swapping_two_binding_spans_changes_the_digest(
    frame: ProblemFrame, data: st.DataObject
) -> None:
    """ADR-0231 §13: reordering evidence spans changes every identity they take part in."""
    first = data.draw(spans_in(frame.source_text), label="first")
    second = data.draw(
        spans_in(frame.source_text).filter(lambda span: span != first), label="second"
    )
    forward = with_first_binding(frame, evidence_spans=(first, second))
    backward = with_first_binding(frame, evidence_spans=(second, first))
    assert forward.proposals[0].bindings[0].evidence_spans == (first, second)
    assert problem_frame_digest(forward) != problem_frame_digest(backward)
    assert problem_frame_digest(backward) == oracle.problem_frame_digest(backward)


@given(problem_frames(proposal_count=1, bound_roles=ALL_ROLES, hazard_count=1), st.data())
def test_duplicating_a_span_changes_the_digest(frame: ProblemFrame, data: st.DataObject) -> None:
    """ADR-0231 §13 / ADR-0228 §10: duplicate spans are kept and change the identity."""
    span = data.draw(spans_in(frame.source_text))
    once = with_first_binding(frame, evidence_spans=(span,))
    twice = with_first_binding(frame, evidence_spans=(span, span))
    assert twice.proposals[0].bindings[0].evidence_spans == (span, span)
    assert problem_frame_digest(once) != problem_frame_digest(twice)
    assert problem_frame_digest(twice) == oracle.problem_frame_digest(twice)
    hazard = frame.hazards[0]
    once = replace(frame, hazards=(replace(hazard, evidence_spans=(span,)),))
    twice = replace(frame, hazards=(replace(hazard, evidence_spans=(span, span)),))
    assert twice.hazards[0].evidence_spans == (span, span)
    assert problem_frame_digest(once) != problem_frame_digest(twice)


@given(problem_frames(cue_count=2))
def test_reordering_cues_changes_the_digest_unless_equal(frame: ProblemFrame) -> None:
    """ADR-0228 §6: the frame is hashed in the order the reader produced it."""
    swapped = replace(frame, cues=frame.cues[::-1])
    same = frame.cues[0] == frame.cues[1]
    assert (problem_frame_digest(swapped) == problem_frame_digest(frame)) is same


# ------------------------------------------------------------------------------------------
# ProblemFrame cross checks


@pytest.mark.obligation("LOCAL-0005/frame_cross_checks")
@given(problem_frames(fact_count=2))
def test_duplicate_fact_ids_are_refused(frame: ProblemFrame) -> None:
    """ARCHITECTURE §2 (frame): fact ids are unique, else DUPLICATE_ENTRY on facts."""
    first, second = frame.facts
    facts = (first, replace(second, fact_id=first.fact_id))
    found = defect_of(lambda: replace(frame, facts=facts))
    assert found == RecordDefect("ProblemFrame", "facts", Defect.DUPLICATE_ENTRY)


@pytest.mark.obligation("LOCAL-0005/frame_cross_checks")
@given(problem_frames(proposal_count=1, bound_roles={Role.INITIAL}, fact_count=2))
def test_binding_naming_an_unknown_fact_is_refused(frame: ProblemFrame) -> None:
    """ARCHITECTURE §2 (frame): every binding names a fact that exists, else REFERENCE_UNKNOWN."""
    found = defect_of(lambda: with_first_binding(frame, fact_id="q_missing"))
    assert found == RecordDefect("ProblemFrame", "proposals", Defect.REFERENCE_UNKNOWN)


@pytest.mark.obligation("LOCAL-0005/frame_cross_checks")
@given(problem_frames(proposal_count=1, with_target=False), st.data())
def test_target_binding_without_frame_target_is_refused(
    frame: ProblemFrame, data: st.DataObject
) -> None:
    """ARCHITECTURE §2 (frame): a target binding needs a question target (REFERENCE_UNKNOWN)."""
    proposal = frame.proposals[0]
    span = data.draw(spans_in(frame.source_text))
    target_binding = RoleBinding(Role.TARGET, None, None, (span,))
    bound = replace(proposal, bindings=(*proposal.bindings, target_binding))
    found = defect_of(lambda: replace(frame, proposals=(bound,)))
    assert found == RecordDefect("ProblemFrame", "proposals", Defect.REFERENCE_UNKNOWN)


@pytest.mark.obligation("LOCAL-0005/frame_cross_checks", "ADR-0226/13.11")
@given(problem_frames(fact_count=2), st.data())
def test_span_not_equal_to_source_slice_is_refused(
    frame: ProblemFrame, data: st.DataObject
) -> None:
    """ADR-0226 §10: a span must be exactly source_text[start:end], else SPAN_NOT_IN_SOURCE."""
    original = frame.facts[0].span
    where = data.draw(st.sampled_from(["fact", "cue", "target", "hazard", "binding"]))
    shifted = data.draw(st.booleans())
    if shifted:  # the same text placed past the end of the source
        start = len(frame.source_text) + data.draw(st.integers(0, 5))
        bad = SourceSpan(original.text, start, start + len(original.text), 0)
    else:  # the right offsets holding other text of the same length
        other = "".join("a" if char != "a" else "b" for char in original.text)
        bad = SourceSpan(other, original.start, original.end, original.sentence_index)
    if where == "fact":
        fact = replace(frame.facts[0], span=bad)
        build = lambda: replace(frame, facts=(fact, *frame.facts[1:]))  # noqa: E731
    elif where == "cue":
        build = lambda: replace(  # noqa: E731
            frame, cues=(*frame.cues, GroundedUnaryDeltaCue(Direction.INCREASE, bad))
        )
    elif where == "target":
        entity = frame.facts[0].entity
        build = lambda: replace(frame, target=QuestionTarget(entity, "u", bad))  # noqa: E731
    elif where == "hazard":
        hazard = FrameHazard(HazardCode.RATE_OR_RATIO, (original, bad))
        build = lambda: replace(frame, hazards=(*frame.hazards, hazard))  # noqa: E731
    else:
        direction = RoleBinding(Role.DIRECTION, None, Direction.DECREASE, (original, bad))
        proposal = StateChangeProposal(UNARY_DELTA_RELATION, (direction,))
        build = lambda: replace(frame, proposals=(proposal,))  # noqa: E731
    found = defect_of(build)
    assert found == RecordDefect("ProblemFrame", "source_text", Defect.SPAN_NOT_IN_SOURCE)


@pytest.mark.obligation("ADR-0226/9.10")
@given(versions.filter(lambda v: v != PROBLEM_FRAME_SCHEMA_VERSION))
def test_unsupported_schema_version_is_refused(version: str) -> None:
    """ARCHITECTURE §2 (versions): a well-formed but other schema version is VERSION_UNSUPPORTED."""
    found = defect_of(lambda: replace(EMPTY_FRAME, schema_version=version))
    assert found == RecordDefect("ProblemFrame", "schema_version", Defect.VERSION_UNSUPPORTED)


@pytest.mark.obligation("ADR-0226/9.9")
@given(malformed_versions)
def test_malformed_schema_version_is_refused(version: str) -> None:
    """ARCHITECTURE §2 (versions): a string that is no version at all is VERSION_MALFORMED."""
    found = defect_of(lambda: replace(EMPTY_FRAME, schema_version=version))
    assert found == RecordDefect("ProblemFrame", "schema_version", Defect.VERSION_MALFORMED)


@pytest.mark.obligation("LOCAL-0005/frame_schema", "LOCAL-0003/records_validate")
@pytest.mark.parametrize(
    ("changes", "field", "defect"),
    [
        ({"schema_version": "problem_frame.v2"}, "schema_version", Defect.VERSION_UNSUPPORTED),
        ({"schema_version": "problem_frame"}, "schema_version", Defect.VERSION_MALFORMED),
        ({"schema_version": None}, "schema_version", Defect.WRONG_TYPE),
        ({"organ": "other_organ.v1"}, "organ", Defect.VERSION_UNSUPPORTED),
        ({"source_text": b"text"}, "source_text", Defect.WRONG_TYPE),
        ({"source_text": "a\ud800"}, "source_text", Defect.TEXT_LONE_SURROGATE),
        ({"facts": []}, "facts", Defect.SEQUENCE_NOT_TUPLE),
        ({"cues": None}, "cues", Defect.SEQUENCE_NOT_TUPLE),
        ({"target": "target"}, "target", Defect.WRONG_RECORD_TYPE),
        ({"hazards": ("rate_or_ratio",)}, "hazards", Defect.WRONG_RECORD_TYPE),
    ],
)
def test_frame_field_defects_are_exact(changes: dict, field: str, defect: Defect) -> None:
    """ARCHITECTURE §2: each malformed frame field gives its own closed defect."""
    found = defect_of(lambda: replace(EMPTY_FRAME, **changes))
    assert found == RecordDefect("ProblemFrame", field, defect)


# ------------------------------------------------------------------------------------------
# Values of the organ


@pytest.mark.obligation("LOCAL-0005/frame_schema")
@given(spans())
def test_role_binding_fields_follow_the_role(span: SourceSpan) -> None:
    """ARCHITECTURE §2 (frame): exactly the field a role needs is set, else INCONSISTENT_FIELDS."""
    evidence = (span,)
    good = [
        RoleBinding(Role.INITIAL, "q0", None, evidence),
        RoleBinding(Role.DELTA, "q1", None, evidence),
        RoleBinding(Role.DIRECTION, None, Direction.INCREASE, evidence),
        RoleBinding(Role.TARGET, None, None, evidence),
    ]
    assert [binding.role for binding in good] == list(Role)
    cases = [
        (Role.INITIAL, None, None, "fact_id"),
        (Role.DELTA, None, None, "fact_id"),
        (Role.INITIAL, "q0", Direction.DECREASE, "direction"),
        (Role.DELTA, "q1", Direction.INCREASE, "direction"),
        (Role.DIRECTION, "q0", Direction.INCREASE, "fact_id"),
        (Role.DIRECTION, None, None, "direction"),
        (Role.TARGET, "q0", None, "fact_id"),
        (Role.TARGET, None, Direction.INCREASE, "direction"),
    ]
    for role, fact_id, direction, field in cases:
        found = defect_of(lambda: RoleBinding(role, fact_id, direction, evidence))  # noqa: B023
        assert found == RecordDefect("RoleBinding", field, Defect.INCONSISTENT_FIELDS), role


@pytest.mark.obligation("LOCAL-0005/frame_schema")
@given(spans())
def test_role_binding_needs_evidence(span: SourceSpan) -> None:
    """ADR-0231 §13: a binding carries its evidence; an empty evidence tuple is SEQUENCE_EMPTY."""
    found = defect_of(lambda: RoleBinding(Role.INITIAL, "q0", None, ()))
    assert found == RecordDefect("RoleBinding", "evidence_spans", Defect.SEQUENCE_EMPTY)
    found = defect_of(lambda: RoleBinding(Role.INITIAL, "q0", None, [span]))
    assert found == RecordDefect("RoleBinding", "evidence_spans", Defect.SEQUENCE_NOT_TUPLE)


@pytest.mark.obligation("LOCAL-0005/frame_schema")
@given(st.sampled_from(list(Role)), spans())
def test_duplicate_roles_in_a_proposal_are_refused(role: Role, span: SourceSpan) -> None:
    """ARCHITECTURE §2 (frame): each role at most once per proposal, else DUPLICATE_ENTRY."""
    fact_id = "q0" if role in (Role.INITIAL, Role.DELTA) else None
    direction = Direction.INCREASE if role is Role.DIRECTION else None
    binding = RoleBinding(role, fact_id, direction, (span,))
    found = defect_of(lambda: StateChangeProposal(UNARY_DELTA_RELATION, (binding, binding)))
    assert found == RecordDefect("StateChangeProposal", "bindings", Defect.DUPLICATE_ENTRY)


@pytest.mark.obligation("LOCAL-0005/frame_schema")
@given(spans())
def test_bare_strings_are_not_enum_members(span: SourceSpan) -> None:
    """ARCHITECTURE §2 (enums): a bare string for an enum field is UNKNOWN_ENUM_VALUE."""
    cases = [
        (lambda: RoleBinding("initial", "q0", None, (span,)), "RoleBinding", "role"),
        (
            lambda: RoleBinding(Role.DIRECTION, None, "increase", (span,)),
            "RoleBinding",
            "direction",
        ),
        (lambda: GroundedUnaryDeltaCue("decrease", span), "GroundedUnaryDeltaCue", "direction"),
        (lambda: FrameHazard("rate_or_ratio", (span,)), "FrameHazard", "code"),
    ]
    for build, record, field in cases:
        assert defect_of(build) == RecordDefect(record, field, Defect.UNKNOWN_ENUM_VALUE)
    wrong = defect_of(lambda: GroundedUnaryDeltaCue(1, span))
    assert wrong == RecordDefect("GroundedUnaryDeltaCue", "direction", Defect.WRONG_TYPE)


@pytest.mark.obligation("LOCAL-0005/frame_schema")
@given(spans())
def test_quantity_fact_value_defects(span: SourceSpan) -> None:
    """ARCHITECTURE §2: a quantity is an exact non-negative int with a non-empty unit."""
    cases = [
        ({"value": True}, "value", Defect.BOOL_NOT_INT),
        ({"value": 1.5}, "value", Defect.FLOAT_NOT_INT),
        ({"value": -1}, "value", Defect.NEGATIVE_VALUE),
        ({"value": 2**53}, "value", Defect.INT_OUT_OF_RANGE),
        ({"unit": ""}, "unit", Defect.TEXT_EMPTY),
        ({"entity": None}, "entity", Defect.WRONG_TYPE),
        ({"fact_id": "Q 1"}, "fact_id", Defect.CODE_MALFORMED),
        ({"span": "span"}, "span", Defect.WRONG_RECORD_TYPE),
    ]
    base = {"fact_id": "q0", "value": 3, "unit": "apple", "entity": "Ann", "span": span}
    assert inspect_record(QuantityFact(**base), QuantityFact) is None
    for changes, field, defect in cases:
        found = defect_of(lambda: QuantityFact(**{**base, **changes}))  # noqa: B023
        assert found == RecordDefect("QuantityFact", field, defect)


@pytest.mark.obligation("LOCAL-0003/stages_reinspect")
@given(problem_frames(fact_count=2))
def test_tampered_nested_value_is_caught_through_the_frame(frame: ProblemFrame) -> None:
    """identity.Record: a nested record altered after construction is caught by its parent."""
    fact = tampered(frame.facts[0], value=-5)
    altered = tampered(frame, facts=(fact, *frame.facts[1:]))
    found = inspect_record(altered, ProblemFrame)
    assert found == RecordDefect("ProblemFrame", "facts", Defect.NEGATIVE_VALUE)
    assert inspect_record(frame, ProblemFrame) is None


def test_items_beyond_the_cap_are_refused_even_without_spans():
    """docs/adr/0005 frame caps: spanless hazards count as items, so a frame can never hold
    more blockers than every later stage can seal (found by the golden vectors: 4,000
    spanless hazards made ``assess`` raise instead of refusing)."""
    from practice_loop.kernel import (
        PROBLEM_FRAME_SCHEMA_VERSION,
        UNARY_DELTA_ORGAN,
        assess,
        practice_case,
    )
    from practice_loop.kernel.frame import MAX_FRAME_ITEMS, FrameHazard, HazardCode, ProblemFrame

    def frame(count: int):
        hazard = FrameHazard(HazardCode.MULTIPLE_CHANGES, ())
        fields = (PROBLEM_FRAME_SCHEMA_VERSION, UNARY_DELTA_ORGAN, "Hi.", (), (), (), None)
        return ProblemFrame(*fields, (hazard,) * count)

    at_cap = frame(MAX_FRAME_ITEMS)
    assert type(assess(at_cap)).__name__ == "ContractAssessment"
    assert type(practice_case(at_cap)).__name__ == "SealedPracticeTrace"
    with pytest.raises(RecordError) as raised:
        frame(MAX_FRAME_ITEMS + 1)
    assert (raised.value.found.field, raised.value.found.defect) == (
        "$",
        Defect.SEQUENCE_TOO_LONG,
    )


@pytest.mark.obligation("LOCAL-0005/frame_caps")
@pytest.mark.parametrize(("hazards", "accepted"), [(255, True), (256, False)])
def test_a_proposal_counts_as_an_item_beside_its_bindings(hazards, accepted):
    """docs/adr/0005: at most 256 items, a proposal one of them (with each of its bindings):
    255 spanless hazards and one empty proposal are exactly the cap, 256 and one are over."""
    from practice_loop.kernel import PROBLEM_FRAME_SCHEMA_VERSION, UNARY_DELTA_ORGAN
    from practice_loop.kernel.frame import (
        FrameHazard,
        HazardCode,
        ProblemFrame,
        StateChangeProposal,
    )

    proposal = StateChangeProposal("state_change.unary_delta", ())
    hazard = FrameHazard(HazardCode.MULTIPLE_CHANGES, ())
    fields = (PROBLEM_FRAME_SCHEMA_VERSION, UNARY_DELTA_ORGAN, "Hi.", (), (), (proposal,), None)
    if accepted:
        ProblemFrame(*fields, (hazard,) * hazards)
        return
    with pytest.raises(RecordError) as raised:
        ProblemFrame(*fields, (hazard,) * hazards)
    assert (raised.value.found.field, raised.value.found.defect) == ("$", Defect.SEQUENCE_TOO_LONG)


@pytest.mark.obligation("LOCAL-0005/frame_caps")
@pytest.mark.parametrize(("extra", "accepted"), [(0, True), (1, False), (500, False)])
def test_source_text_over_its_cap_is_text_too_long(extra, accepted):
    """docs/adr/0005 "Frame": source text of at most 10,000 characters. One more is refused as
    the frame's own defect, though the field check's far wider text bound (100,000) passes it
    (the full kernel score's survivor: the cap's `>` made `is`, never true, docs/adr/0015)."""
    from practice_loop.kernel.frame import MAX_SOURCE_LENGTH

    source = "a" * (MAX_SOURCE_LENGTH + extra)
    fields = (PROBLEM_FRAME_SCHEMA_VERSION, UNARY_DELTA_ORGAN, source, (), (), (), None, ())
    if accepted:
        assert ProblemFrame(*fields).source_text == source
        return
    with pytest.raises(RecordError) as raised:
        ProblemFrame(*fields)
    assert raised.value.found == RecordDefect("ProblemFrame", "source_text", Defect.TEXT_TOO_LONG)


# (facts, cues, spanless hazards, bindings of the one proposal, accepted): every kind of item
# counts once, and each proposal once beside its bindings; totals of 256 (the cap) and 257, and
# 257 distinct facts alone, over the cap, not duplicates (their count is past CPython's cached
# small ints, where a length compared by identity would call them so).
ITEM_COUNTS = [
    (255, 0, 0, 0, True),
    (257, 0, 0, 0, False),
    (2, 0, 253, 0, True),
    (2, 0, 254, 0, False),
    (0, 2, 254, 0, False),
    (1, 0, 252, 2, True),
    (1, 0, 254, 1, False),
]


@pytest.mark.obligation("LOCAL-0005/frame_caps")
@pytest.mark.parametrize(("facts", "cues", "hazards", "bindings", "accepted"), ITEM_COUNTS)
def test_every_kind_of_item_counts_toward_the_cap(facts, cues, hazards, bindings, accepted):
    from practice_loop.kernel import PROBLEM_FRAME_SCHEMA_VERSION, UNARY_DELTA_ORGAN
    from practice_loop.kernel.frame import (
        Direction,
        FrameHazard,
        GroundedUnaryDeltaCue,
        HazardCode,
        ProblemFrame,
        QuantityFact,
        Role,
        RoleBinding,
        StateChangeProposal,
    )

    span = SourceSpan("H", 0, 1, 0)
    kinds = [
        RoleBinding(Role.DIRECTION, None, Direction.INCREASE, (span,)),
        RoleBinding(Role.INITIAL, "q1", None, (span,)),
    ]
    fields = (
        PROBLEM_FRAME_SCHEMA_VERSION,
        UNARY_DELTA_ORGAN,
        "Hi.",
        tuple(QuantityFact(f"q{n}", n, "pen", "Ann", span) for n in range(1, facts + 1)),
        (GroundedUnaryDeltaCue(Direction.INCREASE, span),) * cues,
        (StateChangeProposal("state_change.unary_delta", tuple(kinds[:bindings])),),
        None,
        (FrameHazard(HazardCode.MULTIPLE_CHANGES, ()),) * hazards,
    )
    if accepted:
        ProblemFrame(*fields)
        return
    with pytest.raises(RecordError) as raised:
        ProblemFrame(*fields)
    assert (raised.value.found.field, raised.value.found.defect) == ("$", Defect.SEQUENCE_TOO_LONG)


def test_a_fact_is_found_by_its_exact_id_in_any_order():
    """A frame's fact is the one whose id is the one asked for, wherever it stands; an id no
    fact has finds none (the kernel mutation score's survivor `==` made `>=`, which only
    held while ids came sorted, docs/adr/0015)."""
    (example,) = [e for e in shipped_examples() if e.name == "runnable_increase"]
    frame = dataclasses.replace(example.frame, facts=tuple(reversed(example.frame.facts)))
    for fact in frame.facts:
        assert frame.fact(fact.fact_id) is fact
    assert frame.fact("a0") is None and frame.fact("z9") is None
