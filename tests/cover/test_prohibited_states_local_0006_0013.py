"""Prohibited states of docs/adr/0006, 0007, 0008, 0012 and 0013 that the other tests of those
obligations did not reach (issue 17: tests that fail when they should). Each test names the
clause it proves and asserts an exact value or refusal on behaviour."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import threading

import pytest

from practice_loop.cli import main
from practice_loop.harness.examples import (
    _single_change,
    direction_unbound,
    runnable_increase,
)
from practice_loop.kernel import (
    CANDIDATE_OPERATOR_SET,
    CANDIDATE_OPERATOR_SET_V1,
    MISSING_ROLE_CANDIDATE_POLICY,
    AnswerRefusal,
    BudgetCharge,
    CandidateAttempt,
    CandidateOperatorResult,
    CandidateReconstruction,
    Defect,
    Direction,
    FrameHazard,
    HazardCode,
    ProofGatedAnswer,
    RecordError,
    ReplayDisposition,
    ReplayRefusal,
    ReplayResult,
    Role,
    TraceFailureCode,
    TraceVerification,
    canonical_json,
    check_proof,
    decide_answer,
    decide_search_gate,
    load_sealed_trace,
    practice_case,
    problem_frame_digest,
    replay_candidate,
    seal_practice_trace,
    sealed_trace_bytes,
    verify_sealed_trace,
)
from practice_loop.kernel.operators import candidate_digest_of
from practice_loop.kernel.replay import apply_candidate
from practice_loop.product.runner import GoldAnswer, Unjudged, gold_answer
from practice_loop.product.store import ReadOnlyTraceStore
from practice_strategies import build_chain, fields_for_sealing, resealed

EXAMPLE_TRACE = practice_case(direction_unbound().frame)
EXAMPLE_FRAME = EXAMPLE_TRACE.frame
EXAMPLE_ASSESSMENT = EXAMPLE_TRACE.original_assessment
(EXAMPLE_RESULT,) = EXAMPLE_TRACE.operator_outcomes
RECONSTRUCTION = EXAMPLE_RESULT.reconstruction
PAYLOAD = RECONSTRUCTION.candidate_payload


def _rebound(frame, assessment) -> CandidateReconstruction:
    """The example's reconstruction, rebound to another frame and assessment (both digests
    resealed), as any caller of the adapter could hand it."""
    frame_digest = problem_frame_digest(frame)
    return CandidateReconstruction.sealed(
        **fields_for_sealing(
            RECONSTRUCTION,
            problem_frame_digest=frame_digest,
            original_contract_assessment_id=assessment.assessment_id,
            candidate_digest=candidate_digest_of(
                frame_digest,
                RECONSTRUCTION.candidate_organ,
                RECONSTRUCTION.candidate_payload,
                RECONSTRUCTION.evidence_spans,
            ),
        )
    )


# --------------------------------------------------------------------------------------------
# docs/adr/0006: the replay adapter


@pytest.mark.obligation("LOCAL-0006/validation_order")
def test_a_runnable_original_is_not_refused_before_it_is_reproduced():
    """docs/adr/0006 rows 6 then 7: a runnable original that is not this frame's judgement is
    ``assessment_not_refused``, the earlier row, never ``assessment_not_reproducible``."""
    runnable = build_chain(runnable_increase().frame).assessment
    reconstruction = _rebound(EXAMPLE_FRAME, runnable)
    outcome = replay_candidate(EXAMPLE_FRAME, runnable, reconstruction)
    assert type(outcome) is ReplayRefusal
    assert outcome.reason_codes == ("assessment_not_refused",)


def _direction_bound_example():
    """The direction_unbound example written with its direction bound from the cue, as
    ``harness/examples.py`` writes a frame (docs/adr/0006: the two must hash the same)."""
    return _single_change(
        EXAMPLE_FRAME.source_text,
        "Tom",
        "apple",
        ("12 apples", 12),
        ("5 of his apples", 5),
        "How many apples",
        ("were eaten", Direction.DECREASE),
        bind_direction=True,
    )


@pytest.mark.obligation("LOCAL-0006/apply_candidate")
def test_the_candidate_frame_is_the_frame_written_with_the_binding():
    """docs/adr/0006, Applying: the binding is sorted into role order, so the candidate frame
    equals, and hashes as, the same frame written with that direction bound."""
    candidate = apply_candidate(EXAMPLE_FRAME, PAYLOAD)
    written = _direction_bound_example()
    assert [b.role for b in candidate.proposals[0].bindings] == [
        Role.INITIAL,
        Role.DELTA,
        Role.DIRECTION,
        Role.TARGET,
    ]
    assert candidate == written
    assert problem_frame_digest(candidate) == problem_frame_digest(written)


@pytest.mark.obligation("LOCAL-0006/apply_candidate")
def test_the_added_binding_cites_the_cue_span_only_among_several_cues():
    """docs/adr/0006, Applying: the added binding's evidence is the cue span and nothing else,
    however many cues the frame holds."""
    other = dataclasses.replace(EXAMPLE_FRAME.cues[0], direction=Direction.INCREASE)
    first_word = EXAMPLE_FRAME.source_text.index("Then")
    other = dataclasses.replace(
        other,
        span=dataclasses.replace(
            other.span, text="Then", start=first_word, end=first_word + 4, sentence_index=1
        ),
    )
    frame = dataclasses.replace(EXAMPLE_FRAME, cues=(*EXAMPLE_FRAME.cues, other))
    candidate = apply_candidate(frame, PAYLOAD)
    added = candidate.proposals[0].binding(Role.DIRECTION)
    assert added.evidence_spans == (PAYLOAD.cue_span,)
    assert candidate.cues == frame.cues


@pytest.mark.obligation("LOCAL-0006/apply_candidate")
def test_a_payload_for_a_role_already_bound_does_not_apply():
    """docs/adr/0006, Applying: the payload's role must be unbound; a bound direction is never
    replaced (the result is ``None``, row 11)."""
    frame = _direction_bound_example()
    assert apply_candidate(frame, PAYLOAD) is None
    flipped = dataclasses.replace(PAYLOAD, direction=Direction.INCREASE)
    assert apply_candidate(frame, flipped) is None


@pytest.mark.obligation("LOCAL-0006/dispositions")
def test_replay_blockers_keep_the_new_assessments_order():
    """docs/adr/0006, Re-judging: a refused replay assessment gives its blocker codes in the
    assessment's own order (the frame's hazards as the frame lists them), not sorted."""
    then = EXAMPLE_FRAME.source_text.index("Then")
    span = dataclasses.replace(
        EXAMPLE_FRAME.facts[1].span, text="Then", start=then, end=then + 4, sentence_index=1
    )
    frame = dataclasses.replace(
        EXAMPLE_FRAME,
        hazards=(
            FrameHazard(HazardCode.RATE_OR_RATIO, (span,)),
            FrameHazard(HazardCode.MULTIPLE_CHANGES, (span,)),
        ),
    )
    assessment = build_chain(frame).assessment
    outcome = replay_candidate(frame, assessment, _rebound(frame, assessment))
    assert type(outcome) is ReplayResult
    assert outcome.disposition is ReplayDisposition.CONTRACT_REFUSED
    assert outcome.replay_blockers == ("hazard_rate_or_ratio", "hazard_multiple_changes")


(EXAMPLE_REPLAY,) = EXAMPLE_TRACE.replays


@pytest.mark.obligation("LOCAL-0006/result_invariant")
def test_a_result_whose_assessment_is_of_another_frame_does_not_construct():
    """docs/adr/0006, ReplayResult: the replay assessment must name the candidate frame."""
    with pytest.raises(RecordError) as raised:
        ReplayResult.sealed(**fields_for_sealing(EXAMPLE_REPLAY, candidate_frame=EXAMPLE_FRAME))
    assert raised.value.found.field == "replay_assessment"
    assert raised.value.found.defect is Defect.INCONSISTENT_FIELDS


@pytest.mark.obligation("LOCAL-0006/result_invariant")
def test_a_result_with_a_proof_of_another_assessment_does_not_construct():
    """docs/adr/0006, ReplayResult: after a runnable contract the proof must be bound to that
    assessment's id; a closed proof of another case entails nothing here."""
    chain = build_chain(runnable_increase().frame)
    foreign = check_proof(chain.frame, chain.assessment)
    assert foreign.contract_assessment_id != EXAMPLE_REPLAY.replay_assessment.assessment_id
    with pytest.raises(RecordError) as raised:
        ReplayResult.sealed(**fields_for_sealing(EXAMPLE_REPLAY, replay_proof=foreign))
    assert raised.value.found.field == "disposition"
    assert raised.value.found.defect is Defect.INCONSISTENT_FIELDS


# --------------------------------------------------------------------------------------------
# docs/adr/0007: the sealed practice trace


@pytest.mark.obligation("LOCAL-0007/absent_stages")
def test_a_runnable_trace_with_a_search_stage_filled_in_fails_verification():
    """docs/adr/0007, Absent stages stay absent: a runnable case never reached the gate, so a
    trace holding one (even a gate decision that names its assessment) fails at ``stages``."""
    runnable = practice_case(runnable_increase().frame)
    gate = decide_search_gate(runnable.original_assessment, ())
    assert gate.contract_assessment_id == runnable.original_assessment.assessment_id
    filled = seal_practice_trace(
        frame=runnable.frame,
        original_assessment=runnable.original_assessment,
        direct_proof=runnable.direct_proof,
        gate_decision=gate,
        outcome=runnable.outcome,
    )
    failures = verify_sealed_trace(filled).failures
    assert [(f.code, f.stage) for f in failures] == [
        (TraceFailureCode.CROSS_IDENTITY_MISMATCH, "stages")
    ]


@pytest.mark.obligation("LOCAL-0007/verify_structure", "LOCAL-0007/loading")
def test_a_nested_record_that_does_not_rebuild_is_record_malformed_at_that_record():
    """docs/adr/0007, Verification step 1 and Loading: a defect of a nested record is
    ``record_malformed`` naming that record, not a defect of the trace's own id."""
    payload = EXAMPLE_TRACE.to_json()
    payload["original_assessment"]["assessment_id"] = "0" * 64
    loaded = load_sealed_trace(canonical_json(payload))
    assert type(loaded) is TraceVerification
    (failure,) = loaded.failures
    assert (failure.code, failure.stage) == (
        TraceFailureCode.RECORD_MALFORMED,
        "ContractAssessment",
    )
    assert "assessment_id" in failure.detail


# --------------------------------------------------------------------------------------------
# docs/adr/0008: the operator, the loop, the proof-gated answer


@pytest.mark.obligation("LOCAL-0008/policy_and_table")
def test_the_manifest_row_carries_exactly_the_declarations_the_adr_names():
    """docs/adr/0008, Policy and table: the one row of ``candidate_operators.v1`` declares the
    fixed kinds, organs, codes, charge, depth, input obligations, shape, ordering, forbidden
    side effects and replay obligations, and the policy's eleven forbidden authority paths."""
    # The ADR's table is v1's, named explicitly: a proven successor may be the set in force.
    assert CANDIDATE_OPERATOR_SET_V1.operator_set_version == "candidate_operators.v1"
    (row,) = CANDIDATE_OPERATOR_SET_V1.operators
    assert (row.operator_name, row.operator_version) == (
        "missing_role_candidate",
        "missing_role_candidate.v1",
    )
    assert row.allowed_residual_kinds == ("missing_role",)
    assert row.allowed_residual_codes == ("direction_unbound",)
    assert row.allowed_candidate_organs == ("unary_delta_transition",)
    assert (row.max_attempts_per_run, row.depth, row.max_parallelism) == (1, 1, 1)
    assert (row.budget_charge.candidates, row.budget_charge.steps) == (1, 1)
    assert row.input_obligations == (
        "single_grounded_unary_delta_cue",
        "cue_span_justified_by_residual",
        "identities_reproduce",
    )
    assert row.output_candidate_shape == "role_binding_delta"
    assert row.ordering_key == ("attempt_index",)
    assert row.forbidden_side_effects == (
        "filesystem",
        "network",
        "clock",
        "randomness",
        "environment",
        "subprocess",
        "mutation",
    )
    assert row.replay_obligations == ("contract_replay", "proof_replay")
    assert len(row.schema_versions) == 5 and len(row.policy_versions) == 4
    # The set in force holds that same one row, up to the versions it pins (ADR-0231 §10).
    (in_force,) = CANDIDATE_OPERATOR_SET.operators
    assert dataclasses.replace(in_force, policy_versions=row.policy_versions) == row
    policy = MISSING_ROLE_CANDIDATE_POLICY
    assert policy.determinism_requirements == (
        "canonical_identity",
        "closed_operator_set",
        "serial_only",
    )
    assert len(policy.forbidden_authority_paths) == 11


@pytest.mark.obligation("LOCAL-0008/payload")
@pytest.mark.parametrize("role", [Role.INITIAL, Role.DELTA, Role.TARGET])
def test_the_payload_binds_the_direction_role_only(role):
    """docs/adr/0008, Payload: the record accepts only the ``direction`` role."""
    with pytest.raises(RecordError) as raised:
        dataclasses.replace(PAYLOAD, role=role)
    assert (raised.value.found.field, raised.value.found.defect) == (
        "role",
        Defect.INCONSISTENT_FIELDS,
    )
    assert PAYLOAD.role is Role.DIRECTION
    assert PAYLOAD.direction is EXAMPLE_FRAME.cues[0].direction
    assert PAYLOAD.cue_span == EXAMPLE_FRAME.cues[0].span


@pytest.mark.obligation("LOCAL-0008/outputs")
def test_a_result_whose_attempt_names_another_input_does_not_construct():
    """docs/adr/0008, Outputs: the attempt, the reconstruction and the result must agree, the
    attempt's input digest included; an attempt made from another input is refused even
    when every id around it is resealed to match."""
    attempt = EXAMPLE_RESULT.candidate_attempt
    other = CandidateAttempt.sealed(**fields_for_sealing(attempt, input_digest="1" * 64))
    rebuilt = CandidateReconstruction.sealed(
        **fields_for_sealing(RECONSTRUCTION, attempt_id=other.attempt_id)
    )
    with pytest.raises(RecordError) as raised:
        CandidateOperatorResult.sealed(
            **fields_for_sealing(
                EXAMPLE_RESULT,
                candidate_attempt=other,
                attempt_id=other.attempt_id,
                reconstruction=rebuilt,
                candidate_reconstruction_digest=rebuilt.candidate_reconstruction_digest,
            )
        )
    assert (raised.value.found.field, raised.value.found.defect) == (
        "candidate_attempt",
        Defect.INCONSISTENT_FIELDS,
    )


RUNNABLE_TRACE = practice_case(runnable_increase().frame)


@pytest.mark.obligation("LOCAL-0008/answer_only_place")
def test_search_on_a_runnable_case_is_named_before_a_missing_proof():
    """docs/adr/0008, the proof-gated answer: first failure wins, and on the direct path
    ``search_on_runnable`` comes before ``direct_proof_missing``."""
    refusal = replay_candidate(EXAMPLE_FRAME, "not an assessment", RECONSTRUCTION)
    assert type(refusal) is ReplayRefusal
    outcome = decide_answer(
        RUNNABLE_TRACE.frame, RUNNABLE_TRACE.original_assessment, replays=(refusal,)
    )
    assert type(outcome) is AnswerRefusal
    assert outcome.reason_codes == ("search_on_runnable",)


@pytest.mark.obligation("LOCAL-0008/answer_direct")
def test_a_direct_proof_that_is_not_the_reproduced_one_is_evidence_mismatch():
    """docs/adr/0008, Direct path: ``check_proof`` must reproduce the given ``proof_id``; a
    well-formed proof bound elsewhere with the same value is ``evidence_mismatch``."""
    proof = RUNNABLE_TRACE.direct_proof
    forged = resealed(proof, contract_assessment_id="2" * 64)
    assert forged.proof_id != proof.proof_id and forged.derived_value == proof.derived_value
    outcome = decide_answer(
        RUNNABLE_TRACE.frame, RUNNABLE_TRACE.original_assessment, direct_proof=forged
    )
    assert type(outcome) is AnswerRefusal
    assert outcome.reason_codes == ("evidence_mismatch",)
    answered = decide_answer(
        RUNNABLE_TRACE.frame, RUNNABLE_TRACE.original_assessment, direct_proof=proof
    )
    assert type(answered) is ProofGatedAnswer and answered.value == 11


# --------------------------------------------------------------------------------------------
# docs/adr/0012: stores opened, never conjured; lines as data; exit codes


@pytest.mark.obligation("LOCAL-0012/at_rest_one_file")
def test_a_store_a_killed_writer_left_is_read_read_only(tmp_path):
    """docs/adr/0012, At rest: a writer killed mid-run, inside a transaction, leaves its side
    files; a read-only reader still opens the store and reads the last committed state."""
    path = tmp_path / "store.sqlite"
    program = f"""
import os, signal
from practice_loop.harness.examples import shipped_examples
from practice_loop.kernel import practice_case
from practice_loop.product.store import CaseRow, TraceStore
trace = practice_case(shipped_examples()[0].frame)
store = TraceStore({str(path)!r})
store.put_case(CaseRow("c", "t", "q", None, trace.trace_id, "refused", None, None), trace)
store._db.execute("PRAGMA cache_size=1")
store._db.execute("BEGIN IMMEDIATE")
for index in range(500):
    store._db.execute("INSERT INTO meta VALUES (?, 'x')", (f"k{{index}}",))
os.kill(os.getpid(), signal.SIGKILL)
"""
    subprocess.run([sys.executable, "-c", program], check=False, timeout=60)
    assert path.exists()
    with ReadOnlyTraceStore(path) as store:
        assert [row.case_id for row in store.cases()] == ["c"]
        assert store.count("meta") == 1


@pytest.mark.obligation("LOCAL-0012/lines_as_data")
def test_the_largest_safe_gold_integer_is_judged_and_the_next_is_unjudged():
    """docs/adr/0012, Lines as data: the gold bound is the canonical profile's ±(2**53 - 1)."""
    assert gold_answer("#### 9,007,199,254,740,991") == GoldAnswer("9007199254740991", None)
    assert gold_answer("#### -9007199254740991").value == "-9007199254740991"
    assert gold_answer("#### 9007199254740992") == GoldAnswer(None, Unjudged.GOLD_OUT_OF_RANGE)


SAMPLE_LINE = (
    b'{"id": "s01", "question": "Mia has 7 stickers. She buys 4 more stickers. '
    b'How many stickers does Mia have now?", "answer": "#### 11"}'
)


@pytest.mark.obligation("LOCAL-0012/exit_codes")
@pytest.mark.parametrize(
    "lines, status",
    [
        ([SAMPLE_LINE], 0),
        ([SAMPLE_LINE, b'{"id": "bad"'], 2),
        ([SAMPLE_LINE.replace(b"#### 11", b"#### 12"), b'{"id": "bad"'], 1),
    ],
    ids=["good", "skipped", "wrong_outranks_skipped"],
)
def test_run_exit_status_is_0_good_2_skipped_1_wrong(tmp_path, capsys, lines, status):
    """docs/adr/0012, Exit codes: 0 all good; 2 a run that skipped a line; 1 a wrong answer,
    which outranks a skipped line."""
    source = tmp_path / "lines.jsonl"
    source.write_bytes(b"\n".join(lines) + b"\n")
    store = tmp_path / "s.sqlite"
    assert main(["run", str(source), "--store", str(store), "--quiet"]) == status
    assert "Traceback" not in capsys.readouterr().err


@pytest.mark.obligation("LOCAL-0012/exit_codes")
def test_a_store_error_is_exit_2_in_one_line_not_an_internal_error(tmp_path, capsys):
    """docs/adr/0012, Exit codes: a store that is not ours is exit 2 with its message; no
    internal-error log is written for it."""
    foreign = tmp_path / "s.sqlite"
    foreign.write_bytes(b"id,question\n")
    assert main(["verify", "--store", str(foreign), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "not an SQLite database" in err
    assert "internal error" not in err and "Traceback" not in err


# --------------------------------------------------------------------------------------------
# docs/adr/0013: fields declared once; threads


@pytest.mark.obligation("LOCAL-0013/fields_declared_once")
def test_a_subclass_of_a_kind_that_is_not_declared_itself_cannot_be_built():
    """docs/adr/0013, Fields declared once: a kind that is not itself a frozen, slotted
    dataclass cannot be constructed, even by inheriting a declared kind's fields."""

    class Loose(BudgetCharge):
        pass

    with pytest.raises(TypeError, match="frozen and slotted"):
        Loose(candidates=1, steps=1)
    assert BudgetCharge(candidates=1, steps=1).candidates == 1


@pytest.mark.obligation("LOCAL-0013/threads")
def test_decorated_calls_on_many_threads_without_a_scope_give_one_threads_bytes():
    """docs/adr/0013, Threads: ``practice_case`` and ``sealed_trace_bytes`` each open their own
    call's trust; called at once on several threads, outside any scope, they never see or
    close another thread's trust and give exactly the bytes a single thread gives."""
    frames = [direction_unbound().frame, runnable_increase().frame]
    expected = [sealed_trace_bytes(practice_case(frame)) for frame in frames]
    barrier = threading.Barrier(4)
    results: dict[int, list[bytes]] = {}
    errors: list[BaseException] = []

    def work(index: int) -> None:
        barrier.wait()
        got = []
        try:
            for _ in range(8):
                got.extend(sealed_trace_bytes(practice_case(frame)) for frame in frames)
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)
        results[index] = got

    threads = [threading.Thread(target=work, args=(index,)) for index in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert all(results[index] == expected * 8 for index in range(4))
