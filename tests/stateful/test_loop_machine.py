"""The practice loop driven as a state machine (ADR-0226 §8, §9; our ADR-0230, docs/adr/0007).

Rules run cases into a bundle of sealed traces, tamper with them (each tampering has the exact
failure it must cause), store and reload their bytes, and rewrite their prose. Invariants
hold over every trace the machine produced: it still verifies, its bytes and its frame never
changed, and it has no answer without a closed proof or a ``contract_and_proof_closed`` replay.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, invariant, rule

from practice_loop.kernel import (
    ANSWER_SCHEMA_VERSION,
    AnswerPath,
    AnswerRefusal,
    GateReason,
    ProblemFrame,
    ProofGatedAnswer,
    ProofStatus,
    ReplayDisposition,
    ReplayResult,
    SealedPracticeTrace,
    TraceFailure,
    TraceFailureCode,
    TraceVerification,
    canonical_json,
    load_sealed_trace,
    practice_case,
    replay_divergence,
    verify_sealed_trace,
)
from practice_loop.kernel.trace import TRACE_VERSIONS, stage_digests_of
from practice_strategies import FRAME_RECIPES, oracle, other_digest, problem_frames, resealed
from practice_strategies import tampered as tampered_record

pytestmark = pytest.mark.obligation(
    "ADR-0226/8.6",
    "ADR-0226/8.9",
    "ADR-0226/9.8",
    "ADR-0226/9.16",
    "LOCAL-0013/trust_scoped",
    "LOCAL-0007/verify_structure",
    "LOCAL-0007/cross_identity_table",
    "LOCAL-0007/replay_divergence",
    "LOCAL-0007/loading",
)

F = TraceFailureCode

any_frames = st.one_of(
    problem_frames(),
    problem_frames(**{**FRAME_RECIPES[GateReason.ELIGIBLE_MISSING_ROLE], "cue_count": 1}),
    problem_frames(**FRAME_RECIPES[GateReason.ASSESSMENT_RUNNABLE]),
)


@dataclasses.dataclass(frozen=True)
class Case:
    """A case as the machine produced it, with the bytes it must keep."""

    frame: ProblemFrame
    frame_bytes: bytes
    trace: SealedPracticeTrace
    trace_bytes: bytes


def _identity_field(record: Any) -> str:
    return type(record).ID_FIELD


def _reseal_trace(trace: SealedPracticeTrace, **changes: Any) -> SealedPracticeTrace:
    changed = tampered_record(trace, **changes)
    return resealed(changed, stage_digests=stage_digests_of(changed))


def _forged_refusal(trace: SealedPracticeTrace) -> AnswerRefusal:
    return AnswerRefusal.sealed(
        schema_version=ANSWER_SCHEMA_VERSION,
        problem_frame_digest=trace.outcome.problem_frame_digest,
        original_contract_assessment_id=trace.outcome.original_contract_assessment_id,
        reason_codes=("forged_refusal",),
        explanation="forged",
    )


# name -> (tampering, the failure verify_sealed_trace must report: (code, stage) or None
# when only replay can tell). Every tampering applies to every trace shape.
Tampering = Callable[[SealedPracticeTrace], SealedPracticeTrace]
TAMPERINGS: dict[str, tuple[Tampering, tuple[TraceFailureCode, str]]] = {
    "trace_id": (
        lambda t: tampered_record(t, trace_id=other_digest(t.trace_id)),
        (F.TRACE_ID_MISMATCH, "trace"),
    ),
    "outcome_id": (
        lambda t: tampered_record(
            t,
            outcome=tampered_record(
                t.outcome,
                **{_identity_field(t.outcome): other_digest(t.outcome.compute_id())},
            ),
        ),
        (F.RECORD_MALFORMED, "outcome"),
    ),
    "stage_index_reversed": (
        lambda t: tampered_record(t, stage_digests=t.stage_digests[::-1]),
        (F.STAGE_DIGEST_MISMATCH, "trace"),
    ),
    "versions_resealed": (
        lambda t: resealed(t, versions=(("answer", "proof_gated_answer.v2"), *TRACE_VERSIONS[1:])),
        (F.VERSION_UNSUPPORTED, "versions"),
    ),
    "outcome_forged_and_resealed": (
        lambda t: _reseal_trace(t, outcome=_forged_refusal(t)),
        (F.CROSS_IDENTITY_MISMATCH, "outcome"),
    ),
}


class LoopMachine(RuleBasedStateMachine):
    traces = Bundle("traces")

    def __init__(self) -> None:
        super().__init__()
        self.cases: list[Case] = []

    @rule(target=traces, frame=any_frames)
    def run_case(self, frame: ProblemFrame) -> SealedPracticeTrace:
        """ADR-0226 §6, §9: a well-formed frame gives a sealed trace that replays exactly."""
        frame_bytes = canonical_json(frame.to_json())
        trace = practice_case(frame)
        assert type(trace) is SealedPracticeTrace, trace
        assert replay_divergence(trace) is None
        self.cases.append(Case(frame, frame_bytes, trace, canonical_json(trace.to_json())))
        return trace

    @rule(trace=traces, name=st.sampled_from(sorted(TAMPERINGS)))
    def tamper(self, trace: SealedPracticeTrace, name: str) -> None:
        """0007: each tampering is flagged with its exact failure, and is never both valid
        and replay-clean."""
        tampering, (code, stage) = TAMPERINGS[name]
        forged = tampering(trace)
        verification = verify_sealed_trace(forged)
        assert [(f.code, f.stage) for f in verification.failures][:1] == [(code, stage)]
        assert not verification.valid

    @rule(trace=traces)
    def alter_in_place(self, trace: SealedPracticeTrace) -> None:
        """0013 trust scoped to one call: a produced record altered in place (its assessment's
        organ version) makes the trace record_malformed even though it verified before; undoing the
        change makes it valid again. (That a later case on the same frame is unaffected while
        the change stands is test_loop's test_a_result_altered_in_place_...)"""
        assessment = trace.original_assessment
        genuine = assessment.organ_version
        object.__setattr__(assessment, "organ_version", "unary_delta_transition.v2")
        try:
            failures = verify_sealed_trace(trace).failures
            assert [(f.code, f.stage) for f in failures] == [
                (F.RECORD_MALFORMED, "original_assessment")
            ]
        finally:
            object.__setattr__(assessment, "organ_version", genuine)
        assert verify_sealed_trace(trace).valid

    @rule(trace=traces, other=traces)
    def swap_frame(self, trace: SealedPracticeTrace, other: SealedPracticeTrace) -> None:
        """0007 step 3, ADR-0226 §9: another case's frame under this trace's records, all ids
        resealed, fails the assessment row; replaying reproduces that frame's digest, so the
        divergence is named at the assessment, the first record that does not follow."""
        if oracle.problem_frame_digest(trace.frame) == oracle.problem_frame_digest(other.frame):
            return
        forged = _reseal_trace(trace, frame=other.frame)
        failures = verify_sealed_trace(forged).failures
        assert TraceFailure(F.CROSS_IDENTITY_MISMATCH, "assessment", "") in failures
        assert replay_divergence(forged) == TraceFailure(
            F.REPLAY_DIVERGED, "assessment", "replayed trace differs"
        )

    @rule(trace=traces)
    def forged_outcome_diverges(self, trace: SealedPracticeTrace) -> None:
        """ADR-0226 §9: a forged outcome, resealed, is named by replay_divergence."""
        forged = _reseal_trace(trace, outcome=_forged_refusal(trace))
        assert replay_divergence(forged) == TraceFailure(
            F.REPLAY_DIVERGED, "outcome", "replayed trace differs"
        )

    @rule(trace=traces)
    def store_and_reload(self, trace: SealedPracticeTrace) -> None:
        """0003, 0007 loading: the stored bytes load back to an equal trace, byte for byte."""
        data = canonical_json(trace.to_json())
        loaded = load_sealed_trace(data)
        assert type(loaded) is SealedPracticeTrace
        assert loaded == trace and canonical_json(loaded.to_json()) == data
        damaged = load_sealed_trace(data + b" ")
        assert type(damaged) is TraceVerification and not damaged.valid

    @rule(trace=traces, note=st.text(max_size=8))
    def rewrite_prose(self, trace: SealedPracticeTrace, note: str) -> None:
        """0003: prose is not identity; rewriting the trace's and its outcome's explanation
        leaves it valid under the same trace_id."""
        rewritten = tampered_record(
            trace, explanation=note, outcome=tampered_record(trace.outcome, explanation=note)
        )
        assert verify_sealed_trace(rewritten) == TraceVerification(trace.trace_id, ())

    @invariant()
    def produced_traces_and_frames_are_untouched_and_verify(self) -> None:
        """ADR-0226 §10: upstream records and sealed traces are never mutated by any stage
        or by tampering with copies; every produced trace still verifies."""
        for case in self.cases:
            assert canonical_json(case.frame.to_json()) == case.frame_bytes
            assert canonical_json(case.trace.to_json()) == case.trace_bytes
            assert case.trace.frame == case.frame
            assert verify_sealed_trace(case.trace) == TraceVerification(case.trace.trace_id, ())

    @invariant()
    def no_answer_without_closure(self) -> None:
        """ADR-0226 §7E, §8.6: an answer cites a closed direct proof or only closed replays."""
        for case in self.cases:
            trace, outcome = case.trace, case.trace.outcome
            if type(outcome) is not ProofGatedAnswer:
                continue
            if outcome.path is AnswerPath.DIRECT:
                assert trace.direct_proof.status is ProofStatus.CLOSED
                assert outcome.proof_id == trace.direct_proof.proof_id
                continue
            closed = {
                replay.replay_id
                for replay in trace.replays
                if type(replay) is ReplayResult
                and replay.disposition is ReplayDisposition.CONTRACT_AND_PROOF_CLOSED
            }
            assert outcome.replay_ids and set(outcome.replay_ids) <= closed


TestLoop = LoopMachine.TestCase
TestLoop.settings = settings(
    max_examples=max(5, settings().max_examples // 3), stateful_step_count=10
)
