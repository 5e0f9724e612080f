"""``check_proof``: the organ's arithmetic proof obligations over a runnable assessment.

Clauses: ADR-0226 §7E (proof runs only over the organ's own runnable judgement of the exact
frame; a contract that closes can still fail its proof), §8.6 (only contract plus proof replay
closes), §9 (determinism, fail-closed typed refusal), ADR-0228 §10 (ids exclude explanation),
ARCHITECTURE §2 (proof: result = initial +/- delta, integer, non-negative, units agree).
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from practice_loop.kernel import (
    MAX_SAFE_INT,
    AssessmentStatus,
    ContractAssessment,
    Defect,
    Direction,
    GateReason,
    Obligation,
    ObligationOutcome,
    ProblemFrame,
    ProofRecord,
    ProofStatus,
    RecordDefect,
    RecordError,
    Role,
    Stage,
    StageRefusal,
    assess,
    canonical_json,
    check_proof,
    problem_frame_digest,
)
from practice_strategies import FRAME_RECIPES, oracle, problem_frames, resealed, tampered

replace = dataclasses.replace

runnable_frames = problem_frames(**FRAME_RECIPES[GateReason.ASSESSMENT_RUNNABLE])
refused_frames = problem_frames(**FRAME_RECIPES[GateReason.ELIGIBLE_MISSING_ROLE])


def assessed(frame: ProblemFrame) -> ContractAssessment:
    result = assess(frame)
    assert type(result) is ContractAssessment, result
    return result


def with_arithmetic(
    frame: ProblemFrame, initial: int, delta: int, direction: Direction
) -> ProblemFrame:
    """A runnable-recipe frame with its initial (fact 0) and delta (fact 1) values and its
    bound direction replaced; built through the constructors, so still well formed."""
    facts = (
        replace(frame.facts[0], value=initial),
        replace(frame.facts[1], value=delta),
        *frame.facts[2:],
    )
    proposal = frame.proposals[0]
    bindings = tuple(
        replace(binding, direction=direction) if binding.role is Role.DIRECTION else binding
        for binding in proposal.bindings
    )
    return replace(frame, facts=facts, proposals=(replace(proposal, bindings=bindings),))


def bound_values(frame: ProblemFrame) -> tuple[int, int, Direction]:
    proposal = frame.proposals[0]
    initial = frame.fact(proposal.binding(Role.INITIAL).fact_id)  # type: ignore[union-attr,arg-type]
    delta = frame.fact(proposal.binding(Role.DELTA).fact_id)  # type: ignore[union-attr,arg-type]
    direction = proposal.binding(Role.DIRECTION).direction  # type: ignore[union-attr]
    assert initial is not None and delta is not None and direction is not None
    return initial.value, delta.value, direction


def proved(frame: ProblemFrame) -> ProofRecord:
    result = check_proof(frame, assessed(frame))
    assert type(result) is ProofRecord, result
    return result


def outcomes(proof: ProofRecord) -> dict[Obligation, bool]:
    return {outcome.obligation: outcome.holds for outcome in proof.obligations}


# ------------------------------------------------------------------------------------------
# Closed and refused proofs


@pytest.mark.obligation("LOCAL-0005/proof_obligations")
@given(runnable_frames)
def test_runnable_frame_proof_matches_the_arithmetic(frame: ProblemFrame) -> None:
    """ARCHITECTURE §2 (proof): result = initial +/- delta; closed iff it is a count >= 0."""
    initial, delta, direction = bound_values(frame)
    result = initial + delta if direction is Direction.INCREASE else initial - delta
    proof = proved(frame)
    assert [outcome.obligation for outcome in proof.obligations] == list(Obligation)
    assert outcomes(proof)[Obligation.UNITS_AGREE] is True
    assert outcomes(proof)[Obligation.RESULT_NON_NEGATIVE] is (result >= 0)
    if result >= 0:
        assert proof.status is ProofStatus.CLOSED
        assert proof.derived_value == result
        assert proof.derived_unit == frame.target.unit  # type: ignore[union-attr]
    else:
        assert proof.status is ProofStatus.REFUSED
        assert proof.derived_value is None
        assert proof.derived_unit is None


@pytest.mark.obligation("LOCAL-0005/proof_obligations")
@given(runnable_frames, st.integers(0, 10_000), st.integers(0, 10_000), st.sampled_from(Direction))
def test_closed_proof_derives_initial_plus_or_minus_delta(
    frame: ProblemFrame, initial: int, delta: int, direction: Direction
) -> None:
    """ADR-0226 §7E: a closed proof's value is exactly initial + delta or initial - delta."""
    if direction is Direction.DECREASE:
        initial, delta = max(initial, delta), min(initial, delta)
    proof = proved(with_arithmetic(frame, initial, delta, direction))
    zero = proved(with_arithmetic(frame, initial, initial, Direction.DECREASE))
    assert (zero.status, zero.derived_value) == (ProofStatus.CLOSED, 0)  # x - x closes at 0
    expected = initial + delta if direction is Direction.INCREASE else initial - delta
    assert proof.status is ProofStatus.CLOSED
    assert all(outcome.holds for outcome in proof.obligations)
    assert proof.derived_value == expected


@pytest.mark.obligation("LOCAL-0005/proof_obligations")
@given(runnable_frames, st.integers(0, 10_000), st.integers(1, 10_000))
def test_decrease_past_zero_refuses_result_non_negative(
    frame: ProblemFrame, initial: int, extra: int
) -> None:
    """ARCHITECTURE §2 (proof): a count cannot go negative; the contract closed, the proof not."""
    frame = with_arithmetic(frame, initial, initial + extra, Direction.DECREASE)
    assert assessed(frame).status is AssessmentStatus.RUNNABLE
    proof = proved(frame)
    assert proof.status is ProofStatus.REFUSED
    assert outcomes(proof) == {
        Obligation.UNITS_AGREE: True,
        Obligation.RESULT_NON_NEGATIVE: False,
        Obligation.RESULT_WITHIN_SAFE_RANGE: True,
    }
    assert proof.derived_value is None and proof.derived_unit is None


@pytest.mark.obligation("LOCAL-0005/proof_obligations")
@given(runnable_frames, st.integers(0, 1000), st.integers(1, 1000))
def test_safe_range_bound_on_the_result(frame: ProblemFrame, slack: int, extra: int) -> None:
    """ARCHITECTURE §2 (hashable ints): 2**53 - 1 closes; anything beyond refuses the proof."""
    at_bound = proved(with_arithmetic(frame, MAX_SAFE_INT - slack, slack, Direction.INCREASE))
    assert at_bound.status is ProofStatus.CLOSED
    assert at_bound.derived_value == MAX_SAFE_INT
    past = proved(with_arithmetic(frame, MAX_SAFE_INT - slack, slack + extra, Direction.INCREASE))
    assert past.status is ProofStatus.REFUSED
    assert outcomes(past) == {
        Obligation.UNITS_AGREE: True,
        Obligation.RESULT_NON_NEGATIVE: True,
        Obligation.RESULT_WITHIN_SAFE_RANGE: False,
    }
    assert past.derived_value is None


# ------------------------------------------------------------------------------------------
# Identity and determinism


@pytest.mark.obligation("LOCAL-0003/blanked_self_seal")
@given(runnable_frames)
def test_proof_id_matches_oracle_and_ignores_explanation(frame: ProblemFrame) -> None:
    """ADR-0228 §10 / our self-seal: proof_id hashes every field but prose, id blanked."""
    assessment = assessed(frame)
    proof = proved(frame)
    assert proof.proof_id == oracle.proof_id(proof)
    assert proof.problem_frame_digest == problem_frame_digest(frame)
    assert proof.contract_assessment_id == assessment.assessment_id
    assert tampered(proof, explanation="x").compute_id() == proof.proof_id
    # The assessment's prose is outside its id, so proof still reproduces it.
    reworded = tampered(assessment, explanation="reworded")
    assert check_proof(frame, reworded) == proof


@pytest.mark.obligation("ADR-0226/9.5")
@given(runnable_frames)
def test_proof_is_deterministic_and_read_only(frame: ProblemFrame) -> None:
    """ADR-0226 §9 / ARCHITECTURE §2: same input, same bytes; inputs are not mutated."""
    assessment = assessed(frame)
    before = (frame.to_json(), assessment.to_json())
    first, second = check_proof(frame, assessment), check_proof(frame, assessment)
    assert first == second
    assert canonical_json(first.to_json()) == canonical_json(second.to_json())
    assert (frame.to_json(), assessment.to_json()) == before


# ------------------------------------------------------------------------------------------
# Refusals, each with its exact reason


def assert_refused(result: object, codes: tuple[str, ...], subject: str | None) -> None:
    assert type(result) is StageRefusal, result
    assert result.stage is Stage.PROOF
    assert result.reason_codes == codes
    assert result.subject_digest == subject
    assert result.refusal_id == oracle.refusal_id(result)


@pytest.mark.obligation("ADR-0226/9.9", "LOCAL-0005/proof_refusals")
@given(runnable_frames)
def test_malformed_frame_or_assessment_is_refused(frame: ProblemFrame) -> None:
    """ADR-0226 §9: a malformed frame (checked first) or assessment is a typed refusal."""
    digest = problem_frame_digest(frame)
    assessment = assessed(frame)
    assert_refused(check_proof(None, assessment), ("frame_malformed", "wrong_record_type"), None)
    fact = tampered(frame.facts[0], value=True)
    bad = tampered(frame, facts=(fact, *frame.facts[1:]))
    assert_refused(check_proof(bad, assessment), ("frame_malformed", "bool_not_int"), None)
    assert_refused(check_proof(bad, None), ("frame_malformed", "bool_not_int"), None)
    cases = [
        (None, Defect.WRONG_RECORD_TYPE),
        (assessment.to_json(), Defect.WRONG_RECORD_TYPE),
        (tampered(assessment, status="runnable"), Defect.UNKNOWN_ENUM_VALUE),
        (tampered(assessment, assessment_id="0" * 64), Defect.IDENTITY_MISMATCH),
        (tampered(assessment, problem_frame_digest="x"), Defect.DIGEST_MALFORMED),
    ]
    for value, defect in cases:
        result = check_proof(frame, value)  # type: ignore[arg-type]
        assert_refused(result, ("assessment_malformed", defect.value), digest)


@pytest.mark.obligation("LOCAL-0005/proof_refusals")
@given(runnable_frames, runnable_frames)
def test_assessment_of_another_frame_is_refused(frame: ProblemFrame, other: ProblemFrame) -> None:
    """ADR-0226 §7E: proof runs over the assessment of the very frame it is given."""
    if problem_frame_digest(other) == problem_frame_digest(frame):
        other = replace(other, source_text=other.source_text + "!")
    result = check_proof(frame, assessed(other))
    assert_refused(result, ("assessment_frame_mismatch",), problem_frame_digest(frame))


@pytest.mark.obligation("ADR-0226/8.1", "ADR-0226/13.4", "LOCAL-0005/proof_refusals")
@given(refused_frames)
def test_refused_or_forged_runnable_assessment_is_refused(frame: ProblemFrame) -> None:
    """ADR-0226 §7E/§8.1: no proof over a refused contract nor a resealed "runnable" forgery."""
    digest = problem_frame_digest(frame)
    refused = assessed(frame)
    assert_refused(check_proof(frame, refused), ("assessment_not_runnable",), digest)
    forged = resealed(refused, status=AssessmentStatus.RUNNABLE, blockers=())
    assert forged.find_defect() is None  # well formed, matching frame digest
    assert_refused(check_proof(frame, forged), ("assessment_not_reproducible",), digest)


@pytest.mark.obligation("ADR-0226/9.9", "LOCAL-0005/proof_refusals")
@given(
    st.one_of(st.none(), st.integers(), st.text(), st.dictionaries(st.text(), st.integers())),
    st.one_of(st.none(), st.integers(), st.text(), st.lists(st.integers())),
)
def test_check_proof_never_raises_on_garbage(frame: object, assessment: object) -> None:
    """ARCHITECTURE §2: a stage never raises on bad input; garbage is frame_malformed."""
    result = check_proof(frame, assessment)  # type: ignore[arg-type]
    assert_refused(result, ("frame_malformed", "wrong_record_type"), None)


# ------------------------------------------------------------------------------------------
# ProofRecord construction


@pytest.mark.obligation("LOCAL-0005/proof_obligations")
@pytest.mark.parametrize(
    ("status", "holds", "derived_value", "derived_unit", "field"),
    [
        (ProofStatus.CLOSED, False, None, None, "status"),
        (ProofStatus.REFUSED, True, 3, "apple", "status"),
        (ProofStatus.CLOSED, True, None, "apple", "derived_value"),
        (ProofStatus.CLOSED, True, 3, None, "derived_value"),
        (ProofStatus.REFUSED, False, 3, None, "derived_value"),
        # A refused proof that names a unit but no value: each half is checked on its own.
        (ProofStatus.REFUSED, False, None, "apple", "derived_value"),
    ],
)
def test_proof_record_status_must_match_obligations(
    status: ProofStatus,
    holds: bool,
    derived_value: int | None,
    derived_unit: str | None,
    field: str,
) -> None:
    """ARCHITECTURE §2 (proof): closed iff every obligation holds; a value only when closed."""
    obligations = tuple(
        ObligationOutcome(obligation, holds or obligation is not Obligation.RESULT_NON_NEGATIVE)
        for obligation in Obligation
    )
    with pytest.raises(RecordError) as caught:
        _proof_record(status, obligations, derived_value, derived_unit)
    assert caught.value.found == RecordDefect("ProofRecord", field, Defect.INCONSISTENT_FIELDS)


def _proof_record(
    status: ProofStatus,
    obligations: tuple[ObligationOutcome, ...],
    derived_value: int | None,
    derived_unit: str | None,
) -> ProofRecord:
    return ProofRecord.sealed(
        schema_version="unary_delta_proof.v1",
        problem_frame_digest="a" * 64,
        contract_assessment_id="b" * 64,
        status=status,
        obligations=obligations,
        derived_value=derived_value,
        derived_unit=derived_unit,
        explanation="",
    )


@pytest.mark.obligation("LOCAL-0005/proof_obligations")
@given(st.lists(st.sampled_from(Obligation), max_size=5))
@example(list(Obligation))
@example(list(Obligation)[::-1])
@example([])
def test_proof_record_lists_every_obligation_once_in_order(drawn: list[Obligation]) -> None:
    """proof.Obligation: every obligation once, in order; a proof that skips one is no proof."""
    obligations = tuple(ObligationOutcome(obligation, True) for obligation in drawn)
    if tuple(drawn) == tuple(Obligation):
        record = _proof_record(ProofStatus.CLOSED, obligations, 3, "apple")
        assert record.proof_id == oracle.proof_id(record)
        return
    with pytest.raises(RecordError) as caught:
        _proof_record(ProofStatus.CLOSED, obligations, 3, "apple")
    found = caught.value.found
    if not drawn:  # an empty tuple fails its field check before any cross check
        assert found == RecordDefect("ProofRecord", "obligations", Defect.SEQUENCE_EMPTY)
    else:
        assert found == RecordDefect("ProofRecord", "obligations", Defect.INCONSISTENT_FIELDS)


@pytest.mark.obligation("LOCAL-0003/bool_fields")
def test_obligation_outcome_holds_must_be_a_bool() -> None:
    """ARCHITECTURE §2: bool only where the schema says bool, and exactly a bool there."""
    with pytest.raises(RecordError) as caught:
        ObligationOutcome(Obligation.UNITS_AGREE, 1)  # type: ignore[arg-type]
    assert caught.value.found == RecordDefect("ObligationOutcome", "holds", Defect.WRONG_TYPE)


def _labelled_frame() -> ProblemFrame:
    from practice_loop.kernel import (
        PROBLEM_FRAME_SCHEMA_VERSION,
        UNARY_DELTA_ORGAN,
        UNARY_DELTA_RELATION,
        QuantityFact,
        QuestionTarget,
        RoleBinding,
        SourceSpan,
        StateChangeProposal,
    )

    source = "Ann had 5 apples. She ate 2. How many apples now?"
    five = SourceSpan("5", 8, 9, 0)
    two = SourceSpan("2", 26, 27, 1)
    ate = SourceSpan("ate", 22, 25, 1)
    target = SourceSpan("How many apples", 29, 44, 2)
    facts = (
        QuantityFact("q0", 5, "apple", "Ann", five),
        QuantityFact("q1", 2, "apple", "Ann", two),
    )
    bindings = (
        RoleBinding(Role.INITIAL, "q0", None, (five,)),
        RoleBinding(Role.DELTA, "q1", None, (two,)),
        RoleBinding(Role.DIRECTION, None, Direction.DECREASE, (ate,)),
        RoleBinding(Role.TARGET, None, None, (target,)),
    )
    return ProblemFrame(
        PROBLEM_FRAME_SCHEMA_VERSION,
        UNARY_DELTA_ORGAN,
        source,
        facts,
        (),
        (StateChangeProposal(UNARY_DELTA_RELATION, bindings),),
        QuestionTarget("Ann", "apple", target),
        (),
    )


@pytest.mark.obligation("LOCAL-0005/proof_obligations")
@pytest.mark.parametrize(
    ("direction", "explanation"),
    [(Direction.DECREASE, "closed: 5 - 2 = 3"), (Direction.INCREASE, "closed: 5 + 2 = 7")],
)
def test_a_closed_proof_explains_its_arithmetic(direction: Direction, explanation: str) -> None:
    """The explanation is prose outside every identity, but it is what a reviewer reads
    (Workbench, ``show``), so its sign follows the direction the proof applied."""
    proof = proved(with_arithmetic(_labelled_frame(), 5, 2, direction))
    assert proof.explanation == explanation


@pytest.mark.obligation("LOCAL-0005/proof_obligations")
def test_a_refused_proof_explains_which_obligations_failed() -> None:
    proof = proved(with_arithmetic(_labelled_frame(), 1, 2, Direction.DECREASE))
    assert proof.status is ProofStatus.REFUSED
    assert proof.explanation == "refused: result_non_negative"


@pytest.mark.obligation("LOCAL-0005/proof_obligations")
def test_labelled_example_five_minus_two_is_three() -> None:
    """ADR-0226 §7E: "Ann had 5 apples. She ate 2." closes with 3 apple."""
    proof = proved(_labelled_frame())
    assert proof.status is ProofStatus.CLOSED
    assert (proof.derived_value, proof.derived_unit) == (3, "apple")
    assert proof.proof_id == oracle.proof_id(proof)
