"""The replay adapter (our ADR-0229, docs/adr/0006; ADR-0226 §7E, ADR-0228 §12)."""

from __future__ import annotations

import dataclasses
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from practice_loop.harness.examples import direction_unbound, runnable_increase
from practice_loop.kernel import (
    CANDIDATE_OPERATOR_SET,
    GEOMETRIC_SEARCH_RUN_V2_POLICY_VERSION,
    AssessmentStatus,
    CandidateOperatorResult,
    CandidateReconstruction,
    Defect,
    Direction,
    GateReason,
    RecordDefect,
    RecordError,
    ReplayDisposition,
    ReplayRefusal,
    ReplayResult,
    Role,
    RoleBindingDelta,
    candidate_operator_input,
    canonical_json,
    open_search_run,
    problem_frame_digest,
    propose_candidate,
    replay_candidate,
)
from practice_loop.kernel.operators import candidate_digest_of
from practice_loop.kernel.record import record_from_json
from practice_loop.kernel.replay import apply_candidate
from practice_strategies import (
    FRAME_RECIPES,
    Impostor,
    build_chain,
    fields_for_sealing,
    neighbouring_digest,
    problem_frames,
    resealed,
    tampered,
)

ELIGIBLE_ONE_CUE = {**FRAME_RECIPES[GateReason.ELIGIBLE_MISSING_ROLE], "cue_count": 1}


@dataclasses.dataclass(frozen=True)
class Proposed:
    chain: object
    result: CandidateOperatorResult


def propose(frame) -> Proposed:
    chain = build_chain(
        frame,
        operator_set=CANDIDATE_OPERATOR_SET,
        run_policy_version=GEOMETRIC_SEARCH_RUN_V2_POLICY_VERSION,
    )
    opened = open_search_run(chain.search_input, chain.gate, chain.budget, CANDIDATE_OPERATOR_SET)
    residual = chain.residuals[0]
    operator_input = candidate_operator_input(
        assessment=chain.assessment,
        residual=residual,
        gate_decision=chain.gate,
        budget_decision=chain.budget,
        opened_run=opened,
    )
    result = propose_candidate(
        operator_input,
        frame=chain.frame,
        assessment=chain.assessment,
        residual=residual,
        gate_decision=chain.gate,
        budget_decision=chain.budget,
        opened_run=opened,
    )
    assert type(result) is CandidateOperatorResult, result
    return Proposed(chain, result)


proposals = problem_frames(**ELIGIBLE_ONE_CUE).map(propose)


def _expected(frame) -> tuple[ReplayDisposition, int | None]:
    """The verdict computed here from the frame's values, not by the kernel."""
    proposal = frame.proposals[0]
    initial = frame.fact(proposal.binding(Role.INITIAL).fact_id)
    delta = frame.fact(proposal.binding(Role.DELTA).fact_id)
    if not initial.unit == delta.unit == frame.target.unit:
        return ReplayDisposition.CONTRACT_REFUSED, None
    sign = 1 if frame.cues[0].direction is Direction.INCREASE else -1
    value = initial.value + sign * delta.value
    if value < 0:
        return ReplayDisposition.CONTRACT_CLOSED_BUT_PROOF_REFUSED, None
    return ReplayDisposition.CONTRACT_AND_PROOF_CLOSED, value


@pytest.mark.obligation("LOCAL-0006/dispositions", "ADR-0226/8.6")
@given(proposals)
def test_replay_reaches_the_verdict_the_values_entail(proposed):
    """ADR-0226 §7E: same contract, same proof obligations, three dispositions."""
    chain, result = proposed.chain, proposed.result
    outcome = replay_candidate(chain.frame, chain.assessment, result.reconstruction)
    assert type(outcome) is ReplayResult
    disposition, value = _expected(chain.frame)
    assert outcome.disposition is disposition
    if disposition is ReplayDisposition.CONTRACT_AND_PROOF_CLOSED:
        assert outcome.replay_blockers == ()
        assert outcome.replay_proof.derived_value == value
    elif disposition is ReplayDisposition.CONTRACT_REFUSED:
        assert outcome.replay_proof is None
        assert outcome.replay_blockers == ("unit_mismatch",)
    else:
        assert outcome.replay_blockers == ("result_non_negative",)
    assert outcome.candidate_reconstruction_digest == result.candidate_reconstruction_digest
    assert outcome.attempt_id == result.attempt_id


@pytest.mark.obligation("LOCAL-0006/isolation", "LOCAL-0006/apply_candidate")
@given(proposals)
def test_replay_works_on_a_copy(proposed):
    """ADR-0226 §7E, ADR-0228 §14: the original frame and assessment stay untouched; the
    candidate frame differs from the original only by the one direction binding."""
    chain, result = proposed.chain, proposed.result
    before = [canonical_json(r.to_json()) for r in (chain.frame, chain.assessment, result)]
    outcome = replay_candidate(chain.frame, chain.assessment, result.reconstruction)
    after = [canonical_json(r.to_json()) for r in (chain.frame, chain.assessment, result)]
    assert before == after
    candidate = outcome.candidate_frame
    assert problem_frame_digest(candidate) != problem_frame_digest(chain.frame)
    assert outcome.problem_frame_digest == problem_frame_digest(chain.frame)
    added = candidate.proposals[0].binding(Role.DIRECTION)
    assert added.direction is chain.frame.cues[0].direction
    assert added.evidence_spans == (chain.frame.cues[0].span,)
    assert dataclasses.replace(candidate, proposals=chain.frame.proposals) == chain.frame
    assert chain.assessment.status is AssessmentStatus.REFUSED


@pytest.mark.obligation("ADR-0226/9.5")
@given(proposals, st.text())
def test_replay_identity_is_deterministic_and_ignores_prose(proposed, note):
    """ADR-0226 §9: same candidate, same bytes; prose never enters the replay id."""
    chain, result = proposed.chain, proposed.result
    first = replay_candidate(chain.frame, chain.assessment, result.reconstruction)
    second = replay_candidate(chain.frame, chain.assessment, result.reconstruction)
    assert canonical_json(first.to_json()) == canonical_json(second.to_json())
    assert tampered(first, explanation=note).compute_id() == first.replay_id


@pytest.mark.obligation("LOCAL-0006/apply_candidate")
def test_the_shipped_example_closes_through_replay():
    """The direction_unbound example: 12 apples, 5 eaten, closes at 7."""
    proposed = propose(direction_unbound().frame)
    outcome = replay_candidate(
        proposed.chain.frame, proposed.chain.assessment, proposed.result.reconstruction
    )
    assert outcome.disposition is ReplayDisposition.CONTRACT_AND_PROOF_CLOSED
    assert outcome.replay_proof.derived_value == 7


# ------------------------------------------------------------------------------------------
# Adapter refusals: invalid input is never a semantic verdict


EXAMPLE = propose(direction_unbound().frame)
RECONSTRUCTION = EXAMPLE.result.reconstruction


def _reconstruction_with(payload: RoleBindingDelta) -> CandidateReconstruction:
    """A self-consistent reconstruction carrying another payload (both digests resealed)."""
    content = candidate_digest_of(
        RECONSTRUCTION.problem_frame_digest,
        RECONSTRUCTION.candidate_organ,
        payload,
        RECONSTRUCTION.evidence_spans,
    )
    return CandidateReconstruction.sealed(
        **fields_for_sealing(RECONSTRUCTION, candidate_payload=payload, candidate_digest=content)
    )


def _runnable_chain():
    return build_chain(runnable_increase().frame)


REFUSALS = {
    "frame_malformed": lambda: (
        tampered(EXAMPLE.chain.frame, source_text=None),
        EXAMPLE.chain.assessment,
        RECONSTRUCTION,
    ),
    "assessment_malformed": lambda: (EXAMPLE.chain.frame, "refused", RECONSTRUCTION),
    "reconstruction_malformed": lambda: (
        EXAMPLE.chain.frame,
        EXAMPLE.chain.assessment,
        tampered(RECONSTRUCTION, attempt_index=3),
    ),
    "frame_mismatch": lambda: (
        _runnable_chain().frame,
        EXAMPLE.chain.assessment,
        RECONSTRUCTION,
    ),
    "assessment_mismatch": lambda: (
        EXAMPLE.chain.frame,
        resealed(EXAMPLE.chain.assessment, blockers=EXAMPLE.chain.assessment.blockers * 2),
        RECONSTRUCTION,
    ),
    "cue_not_in_frame": lambda: (
        EXAMPLE.chain.frame,
        EXAMPLE.chain.assessment,
        _reconstruction_with(
            dataclasses.replace(RECONSTRUCTION.candidate_payload, direction=Direction.INCREASE)
        ),
    ),
}


@pytest.mark.obligation("LOCAL-0006/validation_order", "LOCAL-0006/refusal_distinct")
@pytest.mark.parametrize("reason", sorted(REFUSALS))
def test_invalid_input_is_an_adapter_refusal(reason):
    """docs/adr/0006: what cannot be validated gets a typed refusal, not a verdict."""
    outcome = replay_candidate(*REFUSALS[reason]())
    assert type(outcome) is ReplayRefusal
    assert outcome.reason_codes == (reason,)


@pytest.mark.obligation("LOCAL-0006/validation_order", "LOCAL-0006/refusal_distinct")
def test_an_original_other_than_the_one_the_candidate_names_is_a_mismatch():
    """docs/adr/0006: the original must be the assessment the reconstruction names; forged
    originals whose ids fall on both sides of the named one, so no ordering stands in for
    equality (one that sorted after would reach the reproduction check, another reason)."""
    genuine = EXAMPLE.chain.assessment
    forgeries = [resealed(genuine, blockers=genuine.blockers * k) for k in range(2, 12)]
    assert {f.assessment_id < genuine.assessment_id for f in forgeries} == {True, False}
    for forged in forgeries:
        outcome = replay_candidate(EXAMPLE.chain.frame, forged, RECONSTRUCTION)
        assert type(outcome) is ReplayRefusal
        assert outcome.reason_codes == ("assessment_mismatch",)


@pytest.mark.obligation("LOCAL-0006/validation_order", "LOCAL-0006/refusal_distinct")
@pytest.mark.parametrize("after", [False, True], ids=["before", "after"])
def test_a_reconstruction_naming_a_neighbouring_frame_is_a_mismatch(after):
    """docs/adr/0006: the reconstruction must name this frame; a self-consistent forgery that
    names the digest just before or just after it is refused on both sides, so no ordering
    stands in for equality."""
    named = neighbouring_digest(RECONSTRUCTION.problem_frame_digest, after=after)
    content = candidate_digest_of(
        named,
        RECONSTRUCTION.candidate_organ,
        RECONSTRUCTION.candidate_payload,
        RECONSTRUCTION.evidence_spans,
    )
    forged = CandidateReconstruction.sealed(
        **fields_for_sealing(RECONSTRUCTION, problem_frame_digest=named, candidate_digest=content)
    )
    outcome = replay_candidate(EXAMPLE.chain.frame, EXAMPLE.chain.assessment, forged)
    assert type(outcome) is ReplayRefusal
    assert outcome.reason_codes == ("frame_mismatch",)


@pytest.mark.obligation("LOCAL-0006/validation_order", "LOCAL-0006/dispositions")
def test_a_reconstruction_read_back_from_its_bytes_replays_as_the_original():
    """Replay compares evidence by value, never by object: a reconstruction rebuilt from its
    canonical bytes (its ids and cue span new objects, equal to the frame's) replays to the
    very result the original does."""
    decoded = json.loads(RECONSTRUCTION.canonical_bytes())
    copy = record_from_json(CandidateReconstruction, decoded)
    frame, assessment = EXAMPLE.chain.frame, EXAMPLE.chain.assessment
    assert copy == RECONSTRUCTION
    assert copy.original_contract_assessment_id is not assessment.assessment_id
    assert all(copy.candidate_payload.cue_span is not cue.span for cue in frame.cues)
    original = replay_candidate(frame, assessment, RECONSTRUCTION)
    assert type(original) is ReplayResult
    assert replay_candidate(frame, assessment, copy) == original


@pytest.mark.obligation("LOCAL-0006/refusal_distinct")
def test_a_replay_refusal_names_at_least_one_reason():
    """docs/adr/0006: an adapter refusal says why; one with no reason is malformed."""
    refusal = replay_candidate(*REFUSALS["frame_mismatch"]())
    assert type(refusal) is ReplayRefusal
    with pytest.raises(RecordError) as caught:
        ReplayRefusal.sealed(**fields_for_sealing(refusal, reason_codes=()))
    expected = RecordDefect("ReplayRefusal", "reason_codes", Defect.SEQUENCE_EMPTY)
    assert caught.value.found == expected


@pytest.mark.obligation("LOCAL-0006/validation_order")
def test_a_runnable_original_is_not_replayed():
    """ADR-0226 §6: a runnable assessment takes the existing path, never search."""
    chain = _runnable_chain()
    reconstruction = CandidateReconstruction.sealed(
        **fields_for_sealing(
            RECONSTRUCTION,
            problem_frame_digest=chain.assessment.problem_frame_digest,
            original_contract_assessment_id=chain.assessment.assessment_id,
            candidate_digest=candidate_digest_of(
                chain.assessment.problem_frame_digest,
                RECONSTRUCTION.candidate_organ,
                RECONSTRUCTION.candidate_payload,
                RECONSTRUCTION.evidence_spans,
            ),
        )
    )
    outcome = replay_candidate(chain.frame, chain.assessment, reconstruction)
    assert type(outcome) is ReplayRefusal
    assert outcome.reason_codes == ("assessment_not_refused",)


@pytest.mark.obligation("LOCAL-0006/validation_order", "ADR-0226/8.1")
def test_a_forged_refused_assessment_is_not_reproducible():
    """The original assessment must be the organ's own judgement of this frame; forged ids
    on both sides of the genuine one, so no ordering of ids stands in for their equality."""
    genuine = EXAMPLE.chain.assessment
    forgeries = [resealed(genuine, blockers=genuine.blockers * k) for k in range(2, 12)]
    assert {f.assessment_id < genuine.assessment_id for f in forgeries} == {True, False}
    for forged in forgeries:
        reconstruction = CandidateReconstruction.sealed(
            **fields_for_sealing(
                RECONSTRUCTION, original_contract_assessment_id=forged.assessment_id
            )
        )
        outcome = replay_candidate(EXAMPLE.chain.frame, forged, reconstruction)
        assert outcome.reason_codes == ("assessment_not_reproducible",)


garbage = st.one_of(
    st.none(),
    st.integers(),
    st.text(),
    st.dictionaries(st.text(), st.integers()),
    st.builds(Impostor),
)


@pytest.mark.obligation("LOCAL-0006/function", "ADR-0226/9.9")
@given(garbage, st.integers(0, 2))
def test_garbage_never_raises(value, position):
    args = [EXAMPLE.chain.frame, EXAMPLE.chain.assessment, RECONSTRUCTION]
    args[position] = value
    outcome = replay_candidate(*args)
    assert type(outcome) is ReplayRefusal
    assert outcome.reason_codes[0] in {
        "frame_malformed",
        "assessment_malformed",
        "reconstruction_malformed",
    }


@pytest.mark.obligation("LOCAL-0006/result_invariant")
def test_result_record_refuses_a_disposition_its_evidence_does_not_entail():
    """docs/adr/0006: a replay result cannot claim closure its proof does not show."""
    outcome = replay_candidate(EXAMPLE.chain.frame, EXAMPLE.chain.assessment, RECONSTRUCTION)
    for changes in (
        {"disposition": ReplayDisposition.CONTRACT_REFUSED},
        {"replay_blockers": ("result_non_negative",)},
        {"replay_proof": None},
    ):
        with pytest.raises(RecordError) as raised:
            ReplayResult.sealed(**fields_for_sealing(outcome, **changes))
        assert raised.value.found.defect is Defect.INCONSISTENT_FIELDS


@pytest.mark.obligation("LOCAL-0006/result_invariant")
@pytest.mark.parametrize("other", ["0" * 64, "f" * 64], ids=["sorting_before", "sorting_after"])
def test_a_result_whose_records_name_another_frame_or_assessment_is_refused(other):
    """docs/adr/0006: the replay's assessment judged the candidate frame, and its proof is
    bound to that assessment, by exact identity: another id is refused whichever way it sorts."""
    outcome = replay_candidate(EXAMPLE.chain.frame, EXAMPLE.chain.assessment, RECONSTRUCTION)
    for field, changes in (
        (
            "replay_assessment",
            {"replay_assessment": resealed(outcome.replay_assessment, problem_frame_digest=other)},
        ),
        (
            "disposition",
            {"replay_proof": resealed(outcome.replay_proof, contract_assessment_id=other)},
        ),
    ):
        with pytest.raises(RecordError) as raised:
            ReplayResult.sealed(**fields_for_sealing(outcome, **changes))
        assert (raised.value.found.field, raised.value.found.defect) == (
            field,
            Defect.INCONSISTENT_FIELDS,
        )


def _proof_refused_replay() -> ReplayResult:
    """The shipped example with 3 apples instead of 12: eating 5 leaves fewer than none."""
    frame = direction_unbound().frame
    initial = dataclasses.replace(frame.facts[0], value=3)
    proposed = propose(dataclasses.replace(frame, facts=(initial, *frame.facts[1:])))
    outcome = replay_candidate(
        proposed.chain.frame, proposed.chain.assessment, proposed.result.reconstruction
    )
    assert type(outcome) is ReplayResult
    assert outcome.disposition is ReplayDisposition.CONTRACT_CLOSED_BUT_PROOF_REFUSED
    return outcome


@pytest.mark.obligation("LOCAL-0006/result_invariant")
def test_a_result_claiming_other_blockers_than_its_evidence_shows_is_refused():
    """The blockers a result carries are exactly those its evidence entails: fewer, more or
    others, sorting before or after them, are refused."""
    outcome = _proof_refused_replay()
    assert outcome.replay_blockers == ("result_non_negative",)
    for blockers in ((), ("a",), ("z",), ("result_non_negative", "result_non_negative")):
        with pytest.raises(RecordError) as raised:
            ReplayResult.sealed(**fields_for_sealing(outcome, replay_blockers=blockers))
        assert raised.value.found.field == "disposition", blockers


@pytest.mark.obligation("LOCAL-0006/apply_candidate")
def test_a_payload_applies_only_to_a_frame_with_one_proposal_of_its_relation():
    """docs/adr/0006, Applying: no proposal, two, or one of another relation (sorting before
    or after the payload's) is ``None``, never a frame."""
    frame = EXAMPLE.chain.frame
    payload = RECONSTRUCTION.candidate_payload
    (proposal,) = frame.proposals
    assert apply_candidate(frame, payload) is not None
    assert apply_candidate(dataclasses.replace(frame, proposals=()), payload) is None
    both = dataclasses.replace(frame, proposals=(proposal, proposal))
    assert apply_candidate(both, payload) is None
    for relation in ("a.relation", "z.relation"):
        other = dataclasses.replace(proposal, relation_type=relation)
        assert apply_candidate(dataclasses.replace(frame, proposals=(other,)), payload) is None


@pytest.mark.obligation("LOCAL-0006/result_invariant")
def test_a_result_explains_its_disposition_and_blockers():
    closed = replay_candidate(EXAMPLE.chain.frame, EXAMPLE.chain.assessment, RECONSTRUCTION)
    assert closed.explanation == "contract_and_proof_closed"
    outcome = _proof_refused_replay()
    assert outcome.explanation == "contract_closed_but_proof_refused: result_non_negative"


def _rebound(frame, assessment) -> CandidateReconstruction:
    """The example's reconstruction, rebound to another frame and its assessment."""
    digest = problem_frame_digest(frame)
    return CandidateReconstruction.sealed(
        **fields_for_sealing(
            RECONSTRUCTION,
            problem_frame_digest=digest,
            original_contract_assessment_id=assessment.assessment_id,
            candidate_digest=candidate_digest_of(
                digest,
                RECONSTRUCTION.candidate_organ,
                RECONSTRUCTION.candidate_payload,
                RECONSTRUCTION.evidence_spans,
            ),
        )
    )


def _with_evidence(spans) -> CandidateReconstruction:
    return CandidateReconstruction.sealed(
        **fields_for_sealing(
            RECONSTRUCTION,
            evidence_spans=spans,
            candidate_digest=candidate_digest_of(
                RECONSTRUCTION.problem_frame_digest,
                RECONSTRUCTION.candidate_organ,
                RECONSTRUCTION.candidate_payload,
                spans,
            ),
        )
    )


@pytest.mark.obligation("LOCAL-0006/validation_order")
def test_evidence_outside_the_frame_is_refused():
    """docs/adr/0006 row 8: every evidence span is exactly the frame's text at its offsets."""
    first = RECONSTRUCTION.evidence_spans[0]
    moved = dataclasses.replace(first, start=first.start + 1, end=first.end + 1)
    outcome = replay_candidate(
        EXAMPLE.chain.frame, EXAMPLE.chain.assessment, _with_evidence((moved,))
    )
    assert outcome.reason_codes == ("evidence_not_in_frame",)


@pytest.mark.obligation("LOCAL-0006/validation_order")
def test_a_cue_the_evidence_does_not_cite_is_refused():
    """docs/adr/0006 row 10, ADR-0231 §13: the cited cue must be among the evidence."""
    cue_span = RECONSTRUCTION.candidate_payload.cue_span
    kept = tuple(span for span in RECONSTRUCTION.evidence_spans if span != cue_span)
    outcome = replay_candidate(EXAMPLE.chain.frame, EXAMPLE.chain.assessment, _with_evidence(kept))
    assert outcome.reason_codes == ("cue_not_in_evidence",)


@pytest.mark.obligation("LOCAL-0006/validation_order", "LOCAL-0006/apply_candidate")
def test_a_payload_that_does_not_apply_is_refused():
    """docs/adr/0006 row 11: no proposal to bind into is not a verdict, it is a refusal."""
    frame = dataclasses.replace(EXAMPLE.chain.frame, proposals=())
    chain = build_chain(frame)
    outcome = replay_candidate(frame, chain.assessment, _rebound(frame, chain.assessment))
    assert outcome.reason_codes == ("candidate_not_applicable",)
