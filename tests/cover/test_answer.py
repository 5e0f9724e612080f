"""``decide_answer`` and the ``ProofGatedAnswer`` record (ADR-0226 §6, §7E, §8.6-8).

Every refusal is checked with its exact reason codes. Forged replays are built the way an
attacker would: ``ReplayResult.sealed`` over ``fields_for_sealing`` of a genuine replay, so the
record is self-consistent and only ``decide_answer``'s own re-run of contract and proof can
catch it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from practice_loop.harness.examples import direction_unbound, proof_refused, runnable_increase
from practice_loop.kernel import (
    ANSWER_SCHEMA_VERSION,
    AnswerPath,
    AnswerRefusal,
    AssessmentStatus,
    CandidateReconstruction,
    ContractAssessment,
    Defect,
    Direction,
    GateReason,
    GroundedUnaryDeltaCue,
    ObligationOutcome,
    ProofGatedAnswer,
    ProofRecord,
    ProofStatus,
    QuestionTarget,
    RecordError,
    ReplayDisposition,
    ReplayRefusal,
    ReplayResult,
    Role,
    RoleBindingDelta,
    StateChangeProposal,
    assess,
    canonical_json,
    check_proof,
    decide_answer,
    practice_case,
    problem_frame_digest,
    replay_candidate,
)
from practice_loop.kernel.answer import _only_one_binding_added
from practice_loop.kernel.operators import candidate_digest_of
from practice_strategies import (
    FRAME_RECIPES,
    Impostor,
    fields_for_sealing,
    other_digest,
    problem_frames,
    tampered,
)

ELIGIBLE_ONE_CUE = {**FRAME_RECIPES[GateReason.ELIGIBLE_MISSING_ROLE], "cue_count": 1}
RUNNABLE = FRAME_RECIPES[GateReason.ASSESSMENT_RUNNABLE]

# The direction_unbound example: 12 apples, 5 eaten; its one replay closes at 7.
DU_FRAME = direction_unbound().frame
DU_TRACE = practice_case(DU_FRAME)
DU_ASSESSMENT = DU_TRACE.original_assessment
(DU_REPLAY,) = DU_TRACE.replays
DU_RECONSTRUCTION = DU_TRACE.operator_outcomes[0].reconstruction

# The runnable_increase example: 7 stickers, 4 bought; its direct proof closes at 11.
RI_FRAME = runnable_increase().frame
RI_ASSESSMENT = assess(RI_FRAME)
RI_PROOF = check_proof(RI_FRAME, RI_ASSESSMENT)

# A ReplayRefusal: the adapter could not validate a tampered reconstruction.
REPLAY_REFUSAL = replay_candidate(
    DU_FRAME, DU_ASSESSMENT, tampered(DU_RECONSTRUCTION, attempt_index=3)
)
assert type(REPLAY_REFUSAL) is ReplayRefusal


def _refused(outcome: object, *codes: str) -> AnswerRefusal:
    assert type(outcome) is AnswerRefusal, outcome
    assert outcome.reason_codes == codes
    return outcome


def _blockers(assessment: ContractAssessment) -> tuple[str, ...]:
    return tuple(blocker.code.value for blocker in assessment.blockers)


def _with_proposal(frame, bindings) -> object:
    (proposal,) = frame.proposals
    return dataclasses.replace(
        frame, proposals=(StateChangeProposal(proposal.relation_type, tuple(bindings)),)
    )


def _reconstruction_for(frame, assessment, cue: GroundedUnaryDeltaCue) -> CandidateReconstruction:
    """A reconstruction binding ``cue``'s direction, rebound to ``frame``: the shipped
    example's envelope with the payload, spans and both digests recomputed."""
    payload = RoleBindingDelta(
        kind=DU_RECONSTRUCTION.candidate_payload.kind,
        candidate_organ=DU_RECONSTRUCTION.candidate_organ,
        relation_type=DU_RECONSTRUCTION.candidate_payload.relation_type,
        role=Role.DIRECTION,
        source=DU_RECONSTRUCTION.candidate_payload.source,
        direction=cue.direction,
        cue_span=cue.span,
    )
    frame_digest = problem_frame_digest(frame)
    spans = (cue.span,)
    return CandidateReconstruction.sealed(
        **fields_for_sealing(
            DU_RECONSTRUCTION,
            candidate_payload=payload,
            evidence_spans=spans,
            problem_frame_digest=frame_digest,
            original_contract_assessment_id=assessment.assessment_id,
            candidate_digest=candidate_digest_of(
                frame_digest, DU_RECONSTRUCTION.candidate_organ, payload, spans
            ),
        )
    )


# ------------------------------------------------------------------------------------------
# The two ways an answer exists


@pytest.mark.obligation("LOCAL-0008/answer_direct", "LOCAL-0008/answer_practice")
def test_the_shipped_examples_answer_through_each_path():
    """ADR-0226 §6: direction_unbound answers 7 through practice; runnable_increase 11
    directly."""
    practice = decide_answer(DU_FRAME, DU_ASSESSMENT, replays=(DU_REPLAY,))
    assert type(practice) is ProofGatedAnswer
    assert (practice.path, practice.value, practice.unit) == (AnswerPath.PRACTICE, 7, "apple")
    assert practice.replay_ids == (DU_REPLAY.replay_id,)
    assert practice.proof_id == DU_REPLAY.replay_proof.proof_id
    direct = decide_answer(RI_FRAME, RI_ASSESSMENT, direct_proof=RI_PROOF)
    assert type(direct) is ProofGatedAnswer
    assert (direct.path, direct.value, direct.unit) == (AnswerPath.DIRECT, 11, "sticker")
    assert direct.replay_ids == () and direct.proof_id == RI_PROOF.proof_id


# ------------------------------------------------------------------------------------------
# input_malformed

garbage = st.one_of(
    st.none(),
    st.integers(),
    st.text(max_size=5),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    st.sampled_from([DU_REPLAY, RI_PROOF, DU_ASSESSMENT]),
    st.builds(Impostor),
)


@pytest.mark.obligation("ADR-0226/9.9", "LOCAL-0008/answer_only_place")
@given(garbage)
def test_garbage_frame_is_input_malformed(value):
    """ARCHITECTURE §2: a value that is not a well-formed frame is a typed refusal."""
    refusal = _refused(decide_answer(value, DU_ASSESSMENT), "input_malformed")
    assert refusal.original_contract_assessment_id == DU_ASSESSMENT.assessment_id


@pytest.mark.obligation(
    "ADR-0226/9.9",
    "LOCAL-0008/answer_only_place",
    "LOCAL-0003/unvalidated_identity",
)
@given(garbage.filter(lambda v: v is not DU_ASSESSMENT))
def test_garbage_assessment_is_input_malformed_and_names_nothing(value):
    """ARCHITECTURE §2: a refusal carries only the identities it could validate."""
    refusal = _refused(decide_answer(DU_FRAME, value), "input_malformed")
    assert refusal.problem_frame_digest is None
    assert refusal.original_contract_assessment_id is None


@pytest.mark.obligation("ADR-0226/9.9", "LOCAL-0008/answer_only_place")
@given(garbage.filter(lambda v: v is not RI_PROOF and v is not None))
def test_garbage_direct_proof_is_input_malformed(value):
    """ARCHITECTURE §2: a direct proof that is not a well-formed ProofRecord is refused."""
    _refused(decide_answer(RI_FRAME, RI_ASSESSMENT, direct_proof=value), "input_malformed")


@pytest.mark.obligation("ADR-0226/9.9", "LOCAL-0008/answer_only_place")
@given(garbage.filter(lambda v: v is not DU_REPLAY))
def test_garbage_inside_replays_is_input_malformed(value):
    """ARCHITECTURE §2: every replay must be a well-formed ReplayResult or ReplayRefusal."""
    _refused(decide_answer(DU_FRAME, DU_ASSESSMENT, replays=(DU_REPLAY, value)), "input_malformed")


@pytest.mark.obligation("ADR-0226/9.9", "LOCAL-0008/answer_only_place")
@pytest.mark.parametrize("replays", [[DU_REPLAY], DU_REPLAY, None, "replays", Impostor()])
def test_replays_that_are_not_a_tuple_are_input_malformed(replays):
    """docs/adr/0003: sequences are exact tuples; a list of genuine replays is refused, and so
    is a value whose class claims to equal every class (tuple among them)."""
    _refused(decide_answer(DU_FRAME, DU_ASSESSMENT, replays=replays), "input_malformed")


@pytest.mark.obligation("LOCAL-0003/stages_reinspect", "LOCAL-0008/answer_only_place")
def test_tampered_records_are_input_malformed():
    """docs/adr/0003: a record altered after construction no longer validates."""
    broken = {
        "frame": tampered(DU_FRAME, source_text="another text"),
        "assessment": tampered(DU_ASSESSMENT, status=AssessmentStatus.RUNNABLE),
        "proof": tampered(RI_PROOF, derived_value=12),
        "replay": tampered(DU_REPLAY, disposition=ReplayDisposition.CONTRACT_REFUSED),
    }
    _refused(decide_answer(broken["frame"], DU_ASSESSMENT), "input_malformed")
    _refused(decide_answer(DU_FRAME, broken["assessment"]), "input_malformed")
    _refused(
        decide_answer(RI_FRAME, RI_ASSESSMENT, direct_proof=broken["proof"]), "input_malformed"
    )
    _refused(decide_answer(DU_FRAME, DU_ASSESSMENT, replays=(broken["replay"],)), "input_malformed")


# ------------------------------------------------------------------------------------------
# evidence_mismatch


@pytest.mark.obligation("LOCAL-0008/answer_only_place")
def test_assessment_of_another_frame_is_evidence_mismatch():
    """ADR-0226 §10 evidence fidelity: the assessment must judge the very frame given."""
    _refused(decide_answer(DU_FRAME, RI_ASSESSMENT, direct_proof=RI_PROOF), "evidence_mismatch")
    _refused(decide_answer(RI_FRAME, DU_ASSESSMENT, replays=(DU_REPLAY,)), "evidence_mismatch")


@pytest.mark.obligation("LOCAL-0008/answer_only_place", "ADR-0226/8.6")
@pytest.mark.parametrize(
    "field", ["problem_frame_digest", "original_contract_assessment_id"], ids=str
)
@pytest.mark.parametrize("other", ["0" * 64, "f" * 64, "next"], ids=["lowest", "highest", "next"])
def test_replay_bound_to_another_case_is_evidence_mismatch(field, other):
    """ADR-0226 §7E: a replay judged against another frame or assessment is not evidence
    here, whichever side of the true digest the other one sorts on."""
    digest = getattr(DU_REPLAY, field)
    other = other_digest(digest) if other == "next" else other
    forged = ReplayResult.sealed(**fields_for_sealing(DU_REPLAY, **{field: other}))
    _refused(decide_answer(DU_FRAME, DU_ASSESSMENT, replays=(forged,)), "evidence_mismatch")


@pytest.mark.obligation("LOCAL-0008/answer_only_place", "ADR-0226/8.6")
@given(problem_frames(**ELIGIBLE_ONE_CUE))
def test_genuine_replay_of_another_frame_is_evidence_mismatch(frame):
    """ADR-0226 §7E: a genuine replay of one case cannot support an answer to another."""
    assume(problem_frame_digest(frame) != problem_frame_digest(DU_FRAME))
    outcome = decide_answer(frame, assess(frame), replays=(DU_REPLAY,))
    _refused(outcome, "evidence_mismatch")


@pytest.mark.obligation("ADR-0226/8.1", "ADR-0226/13.4", "LOCAL-0008/answer_only_place")
def test_assessment_the_organ_does_not_give_is_evidence_mismatch():
    """ADR-0226 §8.1: only the organ's own judgement of this frame counts. A refused record
    resealed with its blockers doubled, and a runnable one forged for a refused frame, name
    the right frame digest but do not reproduce."""
    doubled = ContractAssessment.sealed(
        **fields_for_sealing(DU_ASSESSMENT, blockers=DU_ASSESSMENT.blockers * 2)
    )
    _refused(decide_answer(DU_FRAME, doubled, replays=(DU_REPLAY,)), "evidence_mismatch")
    runnable = ContractAssessment.sealed(
        **fields_for_sealing(DU_ASSESSMENT, status=AssessmentStatus.RUNNABLE, blockers=())
    )
    _refused(decide_answer(DU_FRAME, runnable), "evidence_mismatch")
    # Resealed with the blockers repeated k times: forged ids on both sides of the true one.
    sides = set()
    for k in range(2, 16):
        forged = ContractAssessment.sealed(
            **fields_for_sealing(DU_ASSESSMENT, blockers=DU_ASSESSMENT.blockers * k)
        )
        _refused(decide_answer(DU_FRAME, forged), "evidence_mismatch")
        sides.add(forged.assessment_id < DU_ASSESSMENT.assessment_id)
    assert sides == {True, False}


@pytest.mark.obligation("LOCAL-0008/answer_direct")
def test_direct_proof_with_a_refused_assessment_is_evidence_mismatch():
    """ADR-0226 §6: a refused assessment has no direct proof; one handed in is mismatched."""
    proof_of_this_frame = ProofRecord.sealed(
        **fields_for_sealing(
            RI_PROOF,
            problem_frame_digest=DU_ASSESSMENT.problem_frame_digest,
            contract_assessment_id=DU_ASSESSMENT.assessment_id,
        )
    )
    for proof in (RI_PROOF, proof_of_this_frame):
        outcome = decide_answer(DU_FRAME, DU_ASSESSMENT, direct_proof=proof, replays=(DU_REPLAY,))
        _refused(outcome, "evidence_mismatch")


@pytest.mark.obligation("ADR-0226/8.6", "LOCAL-0008/answer_direct")
def test_direct_proof_the_organ_does_not_give_is_evidence_mismatch():
    """ADR-0226 §8.6: the direct proof is re-run; a forged closed proof for this assessment
    (another value, resealed) does not reproduce, whichever side of the true proof id its id
    sorts on."""
    sides = set()
    for value in (v for v in range(31) if v != RI_PROOF.derived_value):
        forged = ProofRecord.sealed(**fields_for_sealing(RI_PROOF, derived_value=value))
        _refused(decide_answer(RI_FRAME, RI_ASSESSMENT, direct_proof=forged), "evidence_mismatch")
        sides.add(forged.proof_id < RI_PROOF.proof_id)
    assert sides == {True, False}


# ------------------------------------------------------------------------------------------
# The direct path


@pytest.mark.obligation("ADR-0226/8.4", "LOCAL-0008/answer_direct")
@pytest.mark.parametrize("replay", [REPLAY_REFUSAL, "rebound_result"])
def test_replays_on_a_runnable_assessment_are_search_on_runnable(replay):
    """ADR-0226 §6, §8.4: a runnable case takes the existing path and is never searched."""
    if replay == "rebound_result":
        replay = ReplayResult.sealed(
            **fields_for_sealing(
                DU_REPLAY,
                problem_frame_digest=RI_ASSESSMENT.problem_frame_digest,
                original_contract_assessment_id=RI_ASSESSMENT.assessment_id,
            )
        )
    outcome = decide_answer(RI_FRAME, RI_ASSESSMENT, direct_proof=RI_PROOF, replays=(replay,))
    _refused(outcome, "search_on_runnable")


@pytest.mark.obligation("ADR-0226/8.6", "ADR-0226/9.15", "LOCAL-0008/answer_direct")
def test_runnable_without_proof_is_direct_proof_missing():
    """ADR-0226 §8.6: a runnable contract is not an answer until its proof closes."""
    refusal = _refused(decide_answer(RI_FRAME, RI_ASSESSMENT), "direct_proof_missing")
    assert refusal.problem_frame_digest == RI_ASSESSMENT.problem_frame_digest
    assert refusal.original_contract_assessment_id == RI_ASSESSMENT.assessment_id


@pytest.mark.obligation("ADR-0226/8.6", "LOCAL-0008/answer_direct")
def test_the_proof_refused_example_is_direct_proof_refused():
    """ADR-0226 §8.6: 3 marbles, 8 lost; the contract closes but the count would go negative."""
    frame = proof_refused().frame
    assessment = assess(frame)
    outcome = decide_answer(frame, assessment, direct_proof=check_proof(frame, assessment))
    _refused(outcome, "direct_proof_refused", "result_non_negative")


@pytest.mark.obligation("ADR-0226/8.6", "LOCAL-0008/answer_direct")
@given(problem_frames(**RUNNABLE))
def test_direct_outcome_is_what_the_values_entail(frame):
    """ADR-0226 §6, §8.6: closed proof gives initial ± delta; a refused proof names each
    failed obligation after direct_proof_refused."""
    assessment = assess(frame)
    outcome = decide_answer(frame, assessment, direct_proof=check_proof(frame, assessment))
    proposal = frame.proposals[0]
    initial = frame.fact(proposal.binding(Role.INITIAL).fact_id).value
    delta = frame.fact(proposal.binding(Role.DELTA).fact_id).value
    increase = proposal.binding(Role.DIRECTION).direction is Direction.INCREASE
    value = initial + delta if increase else initial - delta
    if value < 0:
        _refused(outcome, "direct_proof_refused", "result_non_negative")
    else:
        assert type(outcome) is ProofGatedAnswer
        assert (outcome.path, outcome.value) == (AnswerPath.DIRECT, value)


# ------------------------------------------------------------------------------------------
# original_refusal_stands


@pytest.mark.obligation(
    "ADR-0226/8.8",
    "ADR-0226/13.6",
    "ADR-0228/16.12",
    "LOCAL-0008/answer_practice",
    "LOCAL-0006/refusal_distinct",
)
@given(problem_frames(**ELIGIBLE_ONE_CUE))
def test_only_unclosed_replays_leave_the_original_refusal_standing(frame):
    """ADR-0226 §8.8: contract_refused, proof_refused and adapter refusals are no closure."""
    assessment = assess(frame)
    replay = replay_candidate(
        frame, assessment, _reconstruction_for(frame, assessment, frame.cues[0])
    )
    assume(replay.disposition is not ReplayDisposition.CONTRACT_AND_PROOF_CLOSED)
    for replays in ((replay,), (replay, REPLAY_REFUSAL), (replay, replay)):
        outcome = decide_answer(frame, assessment, replays=replays)
        _refused(outcome, "original_refusal_stands", *_blockers(assessment))


@pytest.mark.obligation(
    "ADR-0226/8.7",
    "ADR-0226/8.8",
    "ADR-0226/13.7",
    "LOCAL-0008/answer_practice",
    "LOCAL-0006/refusal_distinct",
)
@pytest.mark.parametrize("replays", [(), (REPLAY_REFUSAL,), (REPLAY_REFUSAL, REPLAY_REFUSAL)])
def test_no_replay_or_only_adapter_refusals_leave_the_refusal_standing(replays):
    """ADR-0226 §8.7-8: exhaustion and adapter refusals are not refutation, nor closure."""
    outcome = decide_answer(DU_FRAME, DU_ASSESSMENT, replays=replays)
    _refused(outcome, "original_refusal_stands", "direction_unbound")


# ------------------------------------------------------------------------------------------
# replay_not_reproducible: self-consistent forged replays


def _forged_verdict(frame) -> tuple[ContractAssessment, ProofRecord]:
    """A runnable assessment and a closed proof of ``frame`` that the organ did not give."""
    assessment = ContractAssessment.sealed(
        **fields_for_sealing(
            DU_REPLAY.replay_assessment,
            problem_frame_digest=problem_frame_digest(frame),
            status=AssessmentStatus.RUNNABLE,
            blockers=(),
        )
    )
    proof = ProofRecord.sealed(
        **fields_for_sealing(
            DU_REPLAY.replay_proof,
            problem_frame_digest=problem_frame_digest(frame),
            contract_assessment_id=assessment.assessment_id,
        )
    )
    return assessment, proof


def _replay_over(candidate_frame, verdict=None, **binding) -> ReplayResult:
    """A closed-looking ReplayResult over ``candidate_frame``; with no ``verdict`` the organ's
    own assessment and proof of that frame are used, so the record is genuine but for its
    candidate."""
    if verdict is None:
        assessment = assess(candidate_frame)
        verdict = (assessment, check_proof(candidate_frame, assessment))
    return ReplayResult.sealed(
        **fields_for_sealing(
            DU_REPLAY,
            candidate_frame=candidate_frame,
            replay_assessment=verdict[0],
            replay_proof=verdict[1],
            **binding,
        )
    )


@pytest.mark.obligation("ADR-0226/8.6", "LOCAL-0008/answer_practice")
def test_candidate_adding_a_binding_to_another_role_is_not_reproducible():
    """ADR-0226 §7E, §8.6: the frame lacks direction and target; a forged replay adds the
    target (not the direction) and claims closure with a runnable assessment and closed proof
    it forged. (The direction_unbound frame cannot carry this forgery: its other roles are
    bound and a second binding of a role is refused by construction, DUPLICATE_ENTRY.)"""
    bindings = DU_FRAME.proposals[0].bindings
    frame = _with_proposal(DU_FRAME, [b for b in bindings if b.role is not Role.TARGET])
    assessment = assess(frame)
    assert _blockers(assessment) == ("direction_unbound", "target_unbound")
    forged = _replay_over(
        DU_FRAME,
        _forged_verdict(DU_FRAME),
        problem_frame_digest=assessment.problem_frame_digest,
        original_contract_assessment_id=assessment.assessment_id,
    )
    assert forged.disposition is ReplayDisposition.CONTRACT_AND_PROOF_CLOSED
    outcome = decide_answer(frame, assessment, replays=(forged,))
    _refused(outcome, "replay_not_reproducible", "direction_unbound", "target_unbound")


@pytest.mark.obligation("ADR-0226/8.6", "LOCAL-0008/answer_practice")
def test_candidate_that_differs_elsewhere_is_not_reproducible():
    """ADR-0226 §7E: the candidate must be the original plus one binding. Here it also
    changes the initial fact (12 to 20); the organ's own verdict of that frame closes at 15,
    so only the frame comparison stands between it and a wrong answer."""
    candidate = DU_REPLAY.candidate_frame
    facts = (dataclasses.replace(candidate.facts[0], value=20), *candidate.facts[1:])
    forged = _replay_over(dataclasses.replace(candidate, facts=facts))
    assert forged.replay_proof.derived_value == 15
    outcome = decide_answer(DU_FRAME, DU_ASSESSMENT, replays=(forged,))
    _refused(outcome, "replay_not_reproducible", "direction_unbound")


@pytest.mark.obligation("ADR-0226/8.6", "LOCAL-0008/answer_practice")
def test_closure_the_organ_does_not_give_is_not_reproducible():
    """ADR-0226 §8.6: the target is counted in pears, so the genuine replay is
    contract_refused(unit_mismatch); a forged runnable assessment and closed proof over the
    very same candidate frame do not reproduce."""
    target = DU_FRAME.target
    frame = dataclasses.replace(DU_FRAME, target=QuestionTarget(target.entity, "pear", target.span))
    trace = practice_case(frame)
    (genuine,) = trace.replays
    assert genuine.disposition is ReplayDisposition.CONTRACT_REFUSED
    forged = _replay_over(
        genuine.candidate_frame,
        _forged_verdict(genuine.candidate_frame),
        problem_frame_digest=genuine.problem_frame_digest,
        original_contract_assessment_id=genuine.original_contract_assessment_id,
    )
    outcome = decide_answer(frame, trace.original_assessment, replays=(forged,))
    _refused(outcome, "replay_not_reproducible", "direction_unbound")


@pytest.mark.obligation("ADR-0226/8.6", "LOCAL-0008/answer_practice")
def test_proof_the_organ_does_not_give_is_not_reproducible():
    """ADR-0226 §8.6: 12 apples, 50 eaten: the genuine replay's proof refuses; a forged closed
    proof (value 0) over the organ's own runnable assessment does not reproduce."""
    facts = (DU_FRAME.facts[0], dataclasses.replace(DU_FRAME.facts[1], value=50))
    frame = dataclasses.replace(DU_FRAME, facts=facts)
    trace = practice_case(frame)
    (genuine,) = trace.replays
    assert genuine.disposition is ReplayDisposition.CONTRACT_CLOSED_BUT_PROOF_REFUSED
    closed = tuple(ObligationOutcome(o.obligation, True) for o in genuine.replay_proof.obligations)
    proof = ProofRecord.sealed(
        **fields_for_sealing(
            genuine.replay_proof,
            status=ProofStatus.CLOSED,
            obligations=closed,
            derived_value=0,
            derived_unit="apple",
        )
    )
    forged = ReplayResult.sealed(
        **fields_for_sealing(
            genuine,
            replay_proof=proof,
            disposition=ReplayDisposition.CONTRACT_AND_PROOF_CLOSED,
            replay_blockers=(),
        )
    )
    outcome = decide_answer(frame, trace.original_assessment, replays=(forged,))
    _refused(outcome, "replay_not_reproducible", "direction_unbound")


def _rebind_direction(frame, direction: Direction, spans) -> object:
    """``frame``'s candidate (the direction_unbound candidate over ``frame``'s cues) with the
    added direction binding replaced."""
    candidate = dataclasses.replace(DU_REPLAY.candidate_frame, cues=frame.cues)
    bindings = [
        dataclasses.replace(b, direction=direction, evidence_spans=spans)
        if b.role is Role.DIRECTION
        else b
        for b in candidate.proposals[0].bindings
    ]
    return _with_proposal(candidate, bindings)


CUE = DU_FRAME.cues[0]
UNGROUNDED = {
    # The one cue is "were eaten" (decrease); the forged binding reads it as increase: 17.
    "opposite_direction": (DU_FRAME, Direction.INCREASE, (CUE.span,), 17),
    # The right direction, but cited on the initial fact's span instead of the cue's: 7.
    "span_not_a_cue": (DU_FRAME, Direction.DECREASE, (DU_FRAME.facts[0].span,), 7),
    # A frame with no grounded cue at all has nothing a direction could come from: 7.
    "frame_without_cue": (
        dataclasses.replace(DU_FRAME, cues=()),
        Direction.DECREASE,
        (CUE.span,),
        7,
    ),
}


@pytest.mark.obligation("ADR-0226/8.6", "ADR-0226/13.8", "LOCAL-0008/answer_practice")
@pytest.mark.parametrize("name", sorted(UNGROUNDED))
def test_candidate_direction_not_grounded_in_a_frame_cue_is_not_reproducible(name):
    """ADR-0231 §6, ADR-0226 §8.6 and §10 wrong-zero, docs/adr/0008: the added binding must be
    a direction typed and spanned exactly as one of the frame's own grounded cues. Each
    forgery here is the original plus one direction binding, and the organ's own assessment
    and proof of it close; only that rule keeps it from becoming an answer."""
    frame, direction, spans, value = UNGROUNDED[name]
    assessment = assess(frame)
    forged = _replay_over(
        _rebind_direction(frame, direction, spans),
        problem_frame_digest=assessment.problem_frame_digest,
        original_contract_assessment_id=assessment.assessment_id,
    )
    assert forged.disposition is ReplayDisposition.CONTRACT_AND_PROOF_CLOSED
    assert forged.replay_proof.derived_value == value
    outcome = decide_answer(frame, assessment, replays=(forged,))
    _refused(outcome, "replay_not_reproducible", "direction_unbound")


@pytest.mark.obligation("ADR-0226/8.6", "LOCAL-0008/answer_practice")
def test_a_forged_replay_beside_a_genuine_one_is_not_reproducible():
    """ADR-0226 §7E: every closed replay is re-checked, not only the first."""
    candidate = DU_REPLAY.candidate_frame
    facts = (dataclasses.replace(candidate.facts[0], value=20), *candidate.facts[1:])
    forged = _replay_over(dataclasses.replace(candidate, facts=facts))
    for replays in ((DU_REPLAY, forged), (forged, DU_REPLAY)):
        outcome = decide_answer(DU_FRAME, DU_ASSESSMENT, replays=replays)
        _refused(outcome, "replay_not_reproducible", "direction_unbound")


# ------------------------------------------------------------------------------------------
# candidates_disagree and agreement


def _two_cue_replays(frame):
    """Both cues of a two-cue frame, each replayed by the genuine adapter.

    The operator refuses a frame with two cues (typed_cue_ambiguous), so no public stage
    builds these candidates; they are built here with ``CandidateReconstruction.sealed`` and
    ``candidate_digest_of``. ``replay_candidate`` accepts any cue the frame holds, so each
    replay is the adapter's own verdict, not a forged one.
    """
    assessment = assess(frame)
    replays = tuple(
        replay_candidate(frame, assessment, _reconstruction_for(frame, assessment, cue))
        for cue in frame.cues
    )
    assert all(type(replay) is ReplayResult for replay in replays), replays
    return assessment, replays


@pytest.mark.obligation("ADR-0226/9.14", "LOCAL-0008/answer_practice")
def test_closed_candidates_with_different_values_disagree():
    """ADR-0226 §7E: "were eaten" (decrease, 7) and a second cue "Then" read as increase (17)
    both close; with no uniqueness rule the refusal stands as candidates_disagree."""
    source = DU_FRAME.source_text
    then = dataclasses.replace(DU_FRAME.cues[0].span, text="Then", start=19, end=23)
    assert source[19:23] == "Then"
    frame = dataclasses.replace(
        DU_FRAME, cues=(*DU_FRAME.cues, GroundedUnaryDeltaCue(Direction.INCREASE, then))
    )
    assessment, replays = _two_cue_replays(frame)
    values = [replay.replay_proof.derived_value for replay in replays]
    assert values == [7, 17]
    outcome = decide_answer(frame, assessment, replays=replays)
    _refused(outcome, "candidates_disagree", "direction_unbound")


@pytest.mark.obligation("ADR-0226/9.14", "LOCAL-0008/answer_practice")
@given(problem_frames(**{**ELIGIBLE_ONE_CUE, "cue_count": 2, "units_agree": True}))
def test_opposite_closed_candidates_always_disagree(frame):
    """ADR-0226 §7E: whenever increase and decrease both close with delta > 0, the answer is
    refused as candidates_disagree, whatever order the replays come in."""
    first, second = frame.cues
    frame = dataclasses.replace(
        frame,
        cues=(
            dataclasses.replace(first, direction=Direction.INCREASE),
            dataclasses.replace(second, direction=Direction.DECREASE),
        ),
    )
    # The recipe binds fact q0 as initial and q1 as delta; make initial >= delta.
    initial, delta, *rest = frame.facts
    assume(delta.value > 0)
    initial = dataclasses.replace(initial, value=initial.value + delta.value)
    frame = dataclasses.replace(frame, facts=(initial, delta, *rest))
    assessment, replays = _two_cue_replays(frame)
    values = {replay.replay_proof.derived_value for replay in replays}
    assert values == {initial.value + delta.value, initial.value - delta.value}
    for ordered in (replays, replays[::-1]):
        outcome = decide_answer(frame, assessment, replays=ordered)
        _refused(outcome, "candidates_disagree", *_blockers(assessment))


@pytest.mark.obligation("LOCAL-0008/answer_practice", "LOCAL-0008/answer_record")
def test_agreeing_closed_candidates_answer_once_naming_every_replay():
    """ADR-0226 §7E: closed candidates that agree license one answer citing all of them."""
    outcome = decide_answer(DU_FRAME, DU_ASSESSMENT, replays=(DU_REPLAY, REPLAY_REFUSAL, DU_REPLAY))
    assert type(outcome) is ProofGatedAnswer and outcome.value == 7
    assert outcome.replay_ids == (DU_REPLAY.replay_id, DU_REPLAY.replay_id)


# ------------------------------------------------------------------------------------------
# The ProofGatedAnswer record

ANSWER = decide_answer(DU_FRAME, DU_ASSESSMENT, replays=(DU_REPLAY,))
DIRECT = decide_answer(RI_FRAME, RI_ASSESSMENT, direct_proof=RI_PROOF)


@pytest.mark.obligation("LOCAL-0008/answer_record")
@pytest.mark.parametrize(
    "record, changes",
    [
        (ANSWER, {"path": AnswerPath.DIRECT}),
        (ANSWER, {"replay_ids": ()}),
        (DIRECT, {"path": AnswerPath.PRACTICE}),
        (DIRECT, {"replay_ids": (DU_REPLAY.replay_id,)}),
    ],
    ids=["practice_as_direct", "practice_without_replays", "direct_as_practice", "direct_replays"],
)
def test_direct_exactly_when_no_replay_ids(record, changes):
    """docs/adr/0008: a direct answer has no replay; a practice answer has at least one."""
    with pytest.raises(RecordError) as raised:
        ProofGatedAnswer.sealed(**fields_for_sealing(record, **changes))
    assert raised.value.found.field == "replay_ids"
    assert raised.value.found.defect is Defect.INCONSISTENT_FIELDS


def _answer_id_by_hand(answer: ProofGatedAnswer) -> str:
    payload = {
        "answer_id": "",
        "schema_version": ANSWER_SCHEMA_VERSION,
        "problem_frame_digest": answer.problem_frame_digest,
        "original_contract_assessment_id": answer.original_contract_assessment_id,
        "path": answer.path.value,
        "value": answer.value,
        "unit": answer.unit,
        "proof_id": answer.proof_id,
        "replay_ids": list(answer.replay_ids),
    }
    raw = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


@pytest.mark.obligation("LOCAL-0008/answer_record", "LOCAL-0003/blanked_self_seal")
@given(problem_frames(**RUNNABLE), st.text())
def test_answer_id_hashes_every_field_but_prose(frame, note):
    """docs/adr/0003 blanked self-seal: answer_id is the SHA-256 of every field but the
    explanation, itself blanked; prose never changes it."""
    assessment = assess(frame)
    outcome = decide_answer(frame, assessment, direct_proof=check_proof(frame, assessment))
    assume(type(outcome) is ProofGatedAnswer)
    for answer in (outcome, ANSWER):
        assert answer.answer_id == _answer_id_by_hand(answer)
        rewritten = ProofGatedAnswer.sealed(**fields_for_sealing(answer, explanation=note))
        assert rewritten.answer_id == answer.answer_id


@pytest.mark.obligation("LOCAL-0008/answer_record")
@pytest.mark.parametrize("answer", [ANSWER, DIRECT], ids=["practice", "direct"])
def test_every_identity_field_changes_the_answer_id(answer):
    """docs/adr/0003: each load-bearing field takes part in the identity."""
    changes = {
        "problem_frame_digest": other_digest(answer.problem_frame_digest),
        "original_contract_assessment_id": other_digest(answer.original_contract_assessment_id),
        "value": answer.value + 1,
        "unit": answer.unit + "s",
        "proof_id": other_digest(answer.proof_id),
    }
    for name, value in changes.items():
        changed = ProofGatedAnswer.sealed(**fields_for_sealing(answer, **{name: value}))
        assert changed.answer_id != answer.answer_id, name
        assert changed.answer_id == _answer_id_by_hand(changed)


@pytest.mark.obligation("LOCAL-0008/answer_record", "LOCAL-0003/records_validate")
@pytest.mark.parametrize(
    "changes, field, defect",
    [
        ({"value": -1}, "value", Defect.NEGATIVE_VALUE),
        ({"value": True}, "value", Defect.BOOL_NOT_INT),
        ({"unit": ""}, "unit", Defect.TEXT_EMPTY),
        ({"path": "direct"}, "path", Defect.UNKNOWN_ENUM_VALUE),
        ({"replay_ids": [DU_REPLAY.replay_id]}, "replay_ids", Defect.SEQUENCE_NOT_TUPLE),
        ({"schema_version": "proof_gated_answer.v2"}, "schema_version", Defect.VERSION_UNSUPPORTED),
    ],
)
def test_answer_record_refuses_malformed_fields(changes, field, defect):
    """docs/adr/0003: an answer record cannot be built with a negative, boolean or untyped
    value, an empty unit, a bare-string path or a list of replay ids."""
    with pytest.raises(RecordError) as raised:
        ProofGatedAnswer.sealed(**fields_for_sealing(ANSWER, **changes))
    assert (raised.value.found.field, raised.value.found.defect) == (field, defect)


@pytest.mark.obligation("LOCAL-0008/answer_record", "LOCAL-0003/blanked_self_seal")
def test_refusal_id_ignores_prose_and_binds_the_case():
    """docs/adr/0003: an AnswerRefusal self-seals every field but its explanation."""
    refusal = _refused(decide_answer(RI_FRAME, RI_ASSESSMENT), "direct_proof_missing")
    payload = {
        "answer_refusal_id": "",
        "schema_version": ANSWER_SCHEMA_VERSION,
        "problem_frame_digest": refusal.problem_frame_digest,
        "original_contract_assessment_id": refusal.original_contract_assessment_id,
        "reason_codes": list(refusal.reason_codes),
    }
    raw = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert refusal.answer_refusal_id == hashlib.sha256(raw.encode("utf-8")).hexdigest()
    assert AnswerRefusal.sealed(**fields_for_sealing(refusal, explanation="")) == tampered(
        refusal, explanation=""
    )


@pytest.mark.obligation("LOCAL-0008/answer_only_place")
def test_deciding_leaves_every_input_untouched():
    """ADR-0226 §3.4, §7E: the answer stage consumes records and never rewrites them."""
    inputs = (DU_FRAME, DU_ASSESSMENT, DU_REPLAY, RI_FRAME, RI_ASSESSMENT, RI_PROOF)
    before = [canonical_json(record.to_json()) for record in inputs]
    decide_answer(DU_FRAME, DU_ASSESSMENT, replays=(DU_REPLAY,))
    decide_answer(RI_FRAME, RI_ASSESSMENT, direct_proof=RI_PROOF)
    assert [canonical_json(record.to_json()) for record in inputs] == before


def test_a_candidate_frame_adds_exactly_the_missing_direction_and_nothing_else():
    """ADR-0231 §6: the replay's candidate is the original frame with one binding added, the
    missing direction. One that changes the relation type, adds two roles, or whose original
    already binds a direction, is not (each would also be refused downstream; this check
    comes first, and the kernel mutation score found it untested, docs/adr/0015)."""
    candidate = DU_TRACE.replays[0].candidate_frame
    assert _only_one_binding_added(DU_FRAME, candidate)
    (proposal,) = candidate.proposals
    # Relation types sorting before and after the original's: a change either way is refused.
    for relation_type in ("state_change.other", "state_change.unary_delta_other"):
        retyped = dataclasses.replace(
            candidate,
            proposals=(dataclasses.replace(proposal, relation_type=relation_type),),
        )
        assert not _only_one_binding_added(DU_FRAME, retyped), relation_type

    def without(*roles: Role) -> Any:
        kept = tuple(b for b in proposal.bindings if b.role not in roles)
        return dataclasses.replace(
            candidate, proposals=(dataclasses.replace(proposal, bindings=kept),)
        )

    # An original that binds the direction already, and a candidate that adds another role.
    bound = without(Role.DELTA)
    assert bound.proposals[0].binding(Role.DIRECTION) is not None
    assert not _only_one_binding_added(bound, candidate)
    # An original missing two roles, and a candidate adding both.
    assert not _only_one_binding_added(without(Role.DELTA, Role.DIRECTION), candidate)
    # A candidate that adds the direction and drops the target: one binding new, none more.
    assert not _only_one_binding_added(DU_FRAME, without(Role.TARGET))
    # One binding more than the original, but two new: the delta rebound to another fact.
    rebound = tuple(
        dataclasses.replace(b, fact_id=DU_FRAME.facts[0].fact_id) if b.role is Role.DELTA else b
        for b in proposal.bindings
    )
    two_new = dataclasses.replace(
        candidate, proposals=(dataclasses.replace(proposal, bindings=rebound),)
    )
    assert not _only_one_binding_added(DU_FRAME, two_new)


def _proposals(frame, count: int) -> Any:
    return dataclasses.replace(frame, proposals=frame.proposals[:1] * count)


@pytest.mark.obligation("ADR-0226/8.6", "LOCAL-0008/answer_practice")
@pytest.mark.parametrize(
    "original_count, candidate_count", [(0, 1), (2, 1), (1, 0), (1, 2), (2, 2), (0, 0)]
)
def test_only_a_single_proposal_on_both_sides_can_gain_a_binding(original_count, candidate_count):
    """docs/adr/0008: the candidate adds one binding to the original's *single* proposal. An
    original with none or two (proposal_missing, proposal_ambiguous), or a candidate with none
    or two, is no such frame, whatever the rest; each count is checked on its own side."""
    original = _proposals(DU_FRAME, original_count)
    candidate = _proposals(DU_REPLAY.candidate_frame, candidate_count)
    assert not _only_one_binding_added(original, candidate)


@pytest.mark.obligation("ADR-0226/8.6", "LOCAL-0008/answer_practice")
def test_a_candidate_that_drops_the_second_proposal_is_not_reproducible():
    """ADR-0226 §7E: the original holds two proposals (proposal_ambiguous); a genuine-looking
    replay keeps the first, adds its direction and drops the second. The organ's own
    assessment and proof of that candidate close at 7, so only the one-proposal rule keeps an
    ambiguous frame from being answered."""
    frame = _proposals(DU_FRAME, 2)
    assessment = assess(frame)
    assert _blockers(assessment) == ("proposal_ambiguous",)
    forged = _replay_over(
        DU_REPLAY.candidate_frame,
        problem_frame_digest=assessment.problem_frame_digest,
        original_contract_assessment_id=assessment.assessment_id,
    )
    assert forged.disposition is ReplayDisposition.CONTRACT_AND_PROOF_CLOSED
    assert forged.replay_proof.derived_value == 7
    outcome = decide_answer(frame, assessment, replays=(forged,))
    _refused(outcome, "replay_not_reproducible", "proposal_ambiguous")


@pytest.mark.obligation("LOCAL-0008/answer_practice", "LOCAL-0008/answer_record")
def test_agreeing_replays_with_different_proofs_cite_the_first_in_the_order_given():
    """docs/adr/0008: "were eaten" and a second decrease cue "Then" both close at 7, each
    through its own binding and so its own proof. The answer cites the first closed replay's
    proof and lists the replays in the order given; reversed, it cites the other proof."""
    then = dataclasses.replace(DU_FRAME.cues[0].span, text="Then", start=19, end=23)
    assert DU_FRAME.source_text[19:23] == "Then"
    frame = dataclasses.replace(
        DU_FRAME, cues=(*DU_FRAME.cues, GroundedUnaryDeltaCue(Direction.DECREASE, then))
    )
    assessment, replays = _two_cue_replays(frame)
    proofs = [replay.replay_proof for replay in replays]
    assert [proof.derived_value for proof in proofs] == [7, 7]
    assert proofs[0].proof_id != proofs[1].proof_id
    answers = [
        decide_answer(frame, assessment, replays=(REPLAY_REFUSAL, *ordered))
        for ordered in (replays, replays[::-1])
    ]
    for answer, ordered in zip(answers, (replays, replays[::-1]), strict=True):
        assert type(answer) is ProofGatedAnswer and (answer.value, answer.unit) == (7, "apple")
        assert answer.proof_id == ordered[0].replay_proof.proof_id
        assert answer.replay_ids == tuple(replay.replay_id for replay in ordered)
    assert answers[0].answer_id != answers[1].answer_id


@pytest.mark.obligation("ADR-0226/8.6", "LOCAL-0008/answer_practice")
def test_a_closed_proof_of_another_value_over_the_genuine_assessment_is_not_reproducible():
    """ADR-0226 §8.6: the shipped replay, its genuine runnable assessment kept, with its proof
    rewritten to close at another value. Each record is consistent (closed, bound to that
    assessment) and the organ's own proof of the candidate closes too, at 7; only comparing
    the two proofs' identities shows that the replay's evidence is not the organ's. Thirty
    values give forged proof ids on both sides of the genuine one."""
    genuine = DU_REPLAY.replay_proof
    sides = set()
    for value in (v for v in range(31) if v != genuine.derived_value):
        proof = ProofRecord.sealed(**fields_for_sealing(genuine, derived_value=value))
        forged = ReplayResult.sealed(**fields_for_sealing(DU_REPLAY, replay_proof=proof))
        assert forged.disposition is ReplayDisposition.CONTRACT_AND_PROOF_CLOSED
        assert forged.replay_assessment == DU_REPLAY.replay_assessment
        outcome = decide_answer(DU_FRAME, DU_ASSESSMENT, replays=(forged,))
        _refused(outcome, "replay_not_reproducible", "direction_unbound")
        sides.add(proof.proof_id < genuine.proof_id)
    assert sides == {True, False}
