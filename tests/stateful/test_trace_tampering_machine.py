"""The loop driven stage by stage, with tampered records mixed in (ADR-0226 §6, §8, §9;
ADR-0228 §9, §16; ADR-0231 §17; docs/adr/0003, 0006, 0007).

Unlike ``test_loop_machine`` (which runs whole cases with ``practice_case``), this machine
calls each stage itself, in ``loop.py``'s order, one or a few stages per step, so cases sit
half-done in a bundle while other rules act on them. Rules hand each stage a tampered input
(``tampered``: no validation; ``resealed``: own identity recomputed) and require the stage's
exact typed refusal, never an exception; seal finished cases; and tamper sealed traces field
by field, in a copy and in their stored bytes, requiring a typed failure from
``verify_sealed_trace`` or ``load_sealed_trace``. Invariants after every step: no run exceeds
or misreports its budget, no answer without closure, every record a stage produced is
byte-identical to what it was, every identity is the oracle's, and every sealed trace
verifies and replays to its own trace_id.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterator
from typing import Any

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, consumes, invariant, rule

from practice_loop.harness.catalogue.forging import UNREGISTERED_GATE_VERSION
from practice_loop.kernel import (
    CANDIDATE_OPERATOR_SET,
    EMPTY_OPERATOR_SET,
    GEOMETRIC_SEARCH_RUN_V2_POLICY_VERSION,
    AnswerPath,
    AnswerRefusal,
    AssessmentStatus,
    CandidateOperatorInput,
    CandidateOperatorRefusal,
    CandidateOperatorResult,
    CandidateReconstruction,
    CandidateReplayStatus,
    ComputeBudgetDecision,
    ComputeBudgetStatus,
    ContractAssessment,
    ContractResidual,
    GateReason,
    GeometricSearchInput,
    GeometricSearchRun,
    OpenedSearchRun,
    ProblemFrame,
    ProofGatedAnswer,
    ProofRecord,
    ProofStatus,
    ReplayDisposition,
    ReplayRefusal,
    ReplayResult,
    RunDisposition,
    SealedPracticeTrace,
    SearchGateDecision,
    SearchGateStatus,
    SearchRunRefusal,
    SourceSpan,
    Stage,
    StageRefusal,
    TraceFailure,
    TraceFailureCode,
    TraceVerification,
    assess,
    candidate_operator_input,
    canonical_json,
    check_proof,
    decide_answer,
    decide_compute_budget,
    decide_search_gate,
    load_sealed_trace,
    open_search_run,
    practice_case,
    problem_frame_digest,
    project_residuals,
    propose_candidate,
    record_attempts,
    replay_candidate,
    replay_divergence,
    seal_practice_trace,
    sealed_trace_bytes,
    search_input_for,
    verify_sealed_trace,
)
from practice_loop.kernel.trace import TRACE_VERSIONS
from practice_strategies import FRAME_RECIPES, oracle, other_digest, problem_frames, resealed
from practice_strategies import tampered as copy_with

F = TraceFailureCode
V2 = GEOMETRIC_SEARCH_RUN_V2_POLICY_VERSION
ELIGIBLE_ONE_CUE = {**FRAME_RECIPES[GateReason.ELIGIBLE_MISSING_ROLE], "cue_count": 1}
LIMITS = ("max_candidates", "max_depth", "max_steps", "max_parallelism")

# The one-cue missing-direction recipe (operator result, attempt, replay, practice answer or
# refusal) twice, so that the later stages are reached in most runs.
any_frames = st.one_of(
    problem_frames(),
    problem_frames(**ELIGIBLE_ONE_CUE, max_value=12),
    problem_frames(**ELIGIBLE_ONE_CUE),
    problem_frames(**FRAME_RECIPES[GateReason.ASSESSMENT_RUNNABLE], max_value=12),
    problem_frames(**FRAME_RECIPES[GateReason.ELIGIBLE_MISSING_RELATION]),
    problem_frames(**FRAME_RECIPES[GateReason.MULTIPLE_RESIDUALS]),
)


# ------------------------------------------------------------------------------------------
# The oracle, extended to the records it does not cover (0003's blanked self-seal over every
# dataclass field but prose, at every depth), and a walk over every nested record.


def _kernel_identity(record: Any) -> str:
    if type(record) is ProblemFrame:
        return problem_frame_digest(record)
    if type(record) is GeometricSearchInput:
        return record.input_digest()
    return getattr(record, type(record).ID_FIELD)


def _walk(value: Any, path: str = "$") -> Iterator[tuple[str, Any]]:
    """Every record nested in ``value``; a frame's parts carry no identity of their own."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        yield path, value
        if type(value) in (ProblemFrame, SourceSpan):
            return
        for field in dataclasses.fields(value):
            yield from _walk(getattr(value, field.name), f"{path}.{field.name}")
    elif type(value) is tuple:
        for index, item in enumerate(value):
            yield from _walk(item, f"{path}[{index}]")


def _assert_oracle_agrees(value: Any) -> None:
    for path, record in _walk(value):
        recompute = oracle.IDENTITY_BY_KIND.get(type(record).__name__)
        if recompute is not None:
            assert _kernel_identity(record) == recompute(record), path
        if type(record) is SearchGateDecision:
            assert record.input_digest == oracle.gate_input_digest(record), path
        if type(record) is CandidateReconstruction:
            assert record.candidate_digest == oracle.candidate_digest(record), path


def _oracle_stage_digests(trace: SealedPracticeTrace) -> tuple[tuple[str, str], ...]:
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
    return tuple(
        (stage, oracle.identity_of(record)) for stage, record in stages if record is not None
    )


# ------------------------------------------------------------------------------------------
# A case in progress, advanced one stage at a time in loop.py's order


STAGES = (
    "framed",
    "assessed",
    "projected",
    "gated",
    "budgeted",
    "opened",
    "proposed",
    "replayed",
    "decided",
)


@dataclasses.dataclass(frozen=True)
class Case:
    """The records one case has so far; ``stage`` is the last stage run."""

    stage: str
    frame: ProblemFrame
    assessment: ContractAssessment | None = None
    direct_proof: ProofRecord | None = None
    residuals: tuple[ContractResidual, ...] = ()
    gate: SearchGateDecision | None = None
    budget: ComputeBudgetDecision | None = None
    search_input: GeometricSearchInput | None = None
    opened: OpenedSearchRun | None = None
    operator_input: CandidateOperatorInput | None = None
    operator_outcomes: tuple[Any, ...] = ()
    run: GeometricSearchRun | SearchRunRefusal | None = None
    replays: tuple[Any, ...] = ()
    outcome: ProofGatedAnswer | AnswerRefusal | None = None

    def at(self, stage: str) -> bool:
        return STAGES.index(self.stage) >= STAGES.index(stage)

    @property
    def refused(self) -> bool:
        return self.assessment is not None and self.assessment.status is AssessmentStatus.REFUSED

    @property
    def results(self) -> tuple[CandidateOperatorResult, ...]:
        return tuple(o for o in self.operator_outcomes if type(o) is CandidateOperatorResult)

    def records(self) -> list[Any]:
        single = (
            self.frame,
            self.assessment,
            self.direct_proof,
            self.gate,
            self.budget,
            self.search_input,
            self.opened,
            self.operator_input,
            self.run,
            self.outcome,
        )
        found = [r for r in single if r is not None]
        return found + [*self.residuals, *self.operator_outcomes, *self.replays]

    def trace_records(self) -> dict[str, Any]:
        assert self.stage == "decided"
        records: dict[str, Any] = {
            "frame": self.frame,
            "original_assessment": self.assessment,
            "outcome": self.outcome,
        }
        if not self.refused:
            return {**records, "direct_proof": self.direct_proof}
        records |= {
            "residuals": self.residuals,
            "gate_decision": self.gate,
            "budget_decision": self.budget,
            "search_input": self.search_input,
            "run_outcome": self.run,
        }
        if self.opened is None:
            return records
        return records | {
            "opened_run": self.opened,
            "operator_outcomes": self.operator_outcomes,
            "replays": self.replays,
        }


def _advance(case: Case) -> Case:
    """Run the next stage (loop.py's calls, in order) and return the case with its record."""
    go = dataclasses.replace
    frame, assessment = case.frame, case.assessment
    if case.stage == "framed":
        assessment = assess(frame)
        assert type(assessment) is ContractAssessment, assessment
        return go(case, stage="assessed", assessment=assessment)
    if case.stage == "assessed":
        if not case.refused:
            # A runnable assessment has nothing to project; it goes to its proof.
            refusal = project_residuals(assessment)
            assert type(refusal) is StageRefusal
            assert (refusal.stage, refusal.reason_codes) == (
                Stage.RESIDUAL,
                ("assessment_runnable",),
            )
            proof = check_proof(frame, assessment)
            assert type(proof) is ProofRecord, proof
            return go(case, stage="projected", direct_proof=proof)
        residuals = project_residuals(assessment)
        assert type(residuals) is tuple and residuals
        return go(case, stage="projected", residuals=residuals)
    if not case.refused and case.stage == "projected":
        # The existing path: no search (ADR-0226 §6); a gate asked anyway blocks it.
        gate = decide_search_gate(assessment, ())
        assert (gate.status, gate.reason_code) == (
            SearchGateStatus.BLOCKED,
            GateReason.ASSESSMENT_RUNNABLE.value,
        )
        budget = decide_compute_budget(gate)
        assert budget.status is ComputeBudgetStatus.BUDGET_BLOCKED
        outcome = decide_answer(frame, assessment, direct_proof=case.direct_proof)
        return go(case, stage="decided", outcome=outcome)
    if case.stage == "projected":
        return go(case, stage="gated", gate=decide_search_gate(assessment, case.residuals))
    if case.stage == "gated":
        return go(case, stage="budgeted", budget=decide_compute_budget(case.gate))
    if case.stage == "budgeted":
        search_input = search_input_for(case.gate, case.budget, CANDIDATE_OPERATOR_SET, V2)
        opened = open_search_run(search_input, case.gate, case.budget, CANDIDATE_OPERATOR_SET)
        if type(opened) is OpenedSearchRun:
            return go(case, stage="opened", search_input=search_input, opened=opened)
        assert type(opened) is SearchRunRefusal, opened
        return go(case, stage="opened", search_input=search_input, run=opened)
    if case.stage == "opened":
        if case.opened is None:
            return go(case, stage="proposed")
        context = _operator_context(case)
        operator_input = candidate_operator_input(**context)
        outcome = propose_candidate(operator_input, frame=frame, **context)
        attempts = (outcome.candidate_attempt,) if type(outcome) is CandidateOperatorResult else ()
        run = record_attempts(case.opened, CANDIDATE_OPERATOR_SET, attempts)
        return go(
            case,
            stage="proposed",
            operator_input=operator_input,
            operator_outcomes=(outcome,),
            run=run,
        )
    if case.stage == "proposed":
        replays = tuple(
            replay_candidate(frame, assessment, result.reconstruction) for result in case.results
        )
        return go(case, stage="replayed", replays=replays)
    if case.stage == "replayed":
        return go(
            case, stage="decided", outcome=decide_answer(frame, assessment, replays=case.replays)
        )
    return case


def _operator_context(case: Case) -> dict[str, Any]:
    return {
        "assessment": case.assessment,
        "residual": case.residuals[0],
        "gate_decision": case.gate,
        "budget_decision": case.budget,
        "opened_run": case.opened,
    }


# ------------------------------------------------------------------------------------------
# Tampered stage inputs, each with the exact typed refusal the stage must give


def _codes(result: Any) -> tuple[Any, ...]:
    """What identifies a refusal of each shape: its type, and its status or codes."""
    kind = type(result)
    if kind is StageRefusal:
        return (kind, result.stage, result.reason_codes)
    if kind is SearchGateDecision:
        return (kind, result.status, result.reason_code)
    if kind is ComputeBudgetDecision:
        assert all(getattr(result, name) == 0 for name in LIMITS)  # fail closed: no resource
        return (kind, result.status, result.reason_code)
    if kind is SearchRunRefusal:
        return (kind, result.run_disposition, result.reason_codes)
    if kind is AnswerRefusal:
        return (kind, result.reason_codes[:1])
    return (kind, getattr(result, "reason_codes", None))


def _forged_id(record: Any) -> Any:
    """``record`` with another well-formed identity, not recomputed."""
    field = type(record).ID_FIELD
    return copy_with(record, **{field: other_digest(getattr(record, field))})


def _outside_span(case: Case) -> SourceSpan:
    return SourceSpan(case.frame.source_text[:1], 0, 1, 0)


def _search_input(case: Case) -> GeometricSearchInput:
    return search_input_for(case.gate, case.budget, CANDIDATE_OPERATOR_SET, V2)


def _operator_input(case: Case) -> CandidateOperatorInput:
    return case.operator_input or candidate_operator_input(**_operator_context(case))


def _propose(case: Case, operator_input: Any = None, **changes: Any) -> Any:
    context = {**_operator_context(case), **changes}
    return propose_candidate(operator_input or _operator_input(case), frame=case.frame, **context)


def _open(case: Case, **changes: Any) -> Any:
    given = {
        "search_input": _search_input(case),
        "gate_decision": case.gate,
        "budget_decision": case.budget,
        "operator_set": CANDIDATE_OPERATOR_SET,
        **changes,
    }
    return open_search_run(**given)


S, G, B = Stage, SearchGateStatus, ComputeBudgetStatus
GR = GateReason
UNASSESSABLE = ComputeBudgetStatus.BUDGET_UNASSESSABLE
INVALID = RunDisposition.INVALID_INPUT


@dataclasses.dataclass(frozen=True)
class Tampering:
    """A stage called on a tampered input; ``expected`` is ``_codes`` of its refusal."""

    applies: Callable[[Case], bool]
    call: Callable[[Case], Any]
    expected: Callable[[Case], tuple[Any, ...]]


def _has_result(case: Case) -> bool:
    return case.at("proposed") and bool(case.results)


def _has_replay_result(case: Case) -> bool:
    return case.at("replayed") and any(type(r) is ReplayResult for r in case.replays)


def _always(case: Case) -> bool:
    return True


def _assessed(case: Case) -> bool:
    return case.at("assessed")


def _refused_projected(case: Case) -> bool:
    return case.at("projected") and case.refused


def _gated(case: Case) -> bool:
    return case.at("gated") and case.refused


def _budgeted(case: Case) -> bool:
    return case.at("budgeted") and case.refused


def _opened(case: Case) -> bool:
    return case.at("opened") and case.opened is not None


def _direct(case: Case) -> bool:
    return case.at("projected") and not case.refused


def _first_replay_result(case: Case) -> ReplayResult:
    return next(r for r in case.replays if type(r) is ReplayResult)


TAMPERINGS: dict[str, Tampering] = {
    # assess / check_proof: the frame (docs/adr/0005: frame_malformed, with the defect)
    "frame_text_not_text": Tampering(
        _always,
        lambda c: assess(copy_with(c.frame, source_text=None)),
        lambda c: (StageRefusal, S.ASSESSMENT, ("frame_malformed", "wrong_type")),
    ),
    "frame_facts_a_list": Tampering(
        _always,
        lambda c: assess(copy_with(c.frame, facts=list(c.frame.facts))),
        lambda c: (StageRefusal, S.ASSESSMENT, ("frame_malformed", "sequence_not_tuple")),
    ),
    "frame_as_json": Tampering(
        _always,
        lambda c: assess(c.frame.to_json()),
        lambda c: (StageRefusal, S.ASSESSMENT, ("frame_malformed", "wrong_record_type")),
    ),
    "proof_of_a_broken_frame": Tampering(
        _assessed,
        lambda c: check_proof(copy_with(c.frame, cues=None), c.assessment),
        lambda c: (StageRefusal, S.PROOF, ("frame_malformed", "sequence_not_tuple")),
    ),
    # project_residuals / check_proof / gate / answer: the assessment
    "residuals_of_a_forged_assessment": Tampering(
        _assessed,
        lambda c: project_residuals(_forged_id(c.assessment)),
        lambda c: (StageRefusal, S.RESIDUAL, ("assessment_malformed", "identity_mismatch")),
    ),
    "proof_of_a_forged_assessment": Tampering(
        _assessed,
        lambda c: check_proof(c.frame, _forged_id(c.assessment)),
        lambda c: (StageRefusal, S.PROOF, ("assessment_malformed", "identity_mismatch")),
    ),
    "proof_of_another_frames_assessment": Tampering(
        _assessed,
        lambda c: check_proof(
            c.frame,
            resealed(
                c.assessment,
                problem_frame_digest=other_digest(c.assessment.problem_frame_digest),
            ),
        ),
        lambda c: (StageRefusal, S.PROOF, ("assessment_frame_mismatch",)),
    ),
    "proof_of_a_forged_runnable_assessment": Tampering(
        lambda c: c.at("assessed") and c.refused,
        lambda c: check_proof(
            c.frame, resealed(c.assessment, status=AssessmentStatus.RUNNABLE, blockers=())
        ),
        lambda c: (StageRefusal, S.PROOF, ("assessment_not_reproducible",)),
    ),
    "gate_of_a_forged_assessment": Tampering(
        _assessed,
        lambda c: decide_search_gate(_forged_id(c.assessment), c.residuals),
        lambda c: (SearchGateDecision, G.UNASSESSABLE, GR.ASSESSMENT_MALFORMED.value),
    ),
    "answer_on_a_forged_assessment": Tampering(
        _assessed,
        lambda c: decide_answer(c.frame, _forged_id(c.assessment)),
        lambda c: (AnswerRefusal, ("input_malformed",)),
    ),
    # decide_search_gate: the residual context
    "gate_of_a_forged_residual": Tampering(
        _refused_projected,
        lambda c: decide_search_gate(c.assessment, (_forged_id(c.residuals[0]), *c.residuals[1:])),
        lambda c: (SearchGateDecision, G.UNASSESSABLE, GR.RESIDUALS_MALFORMED.value),
    ),
    "gate_of_a_resealed_residual_with_a_span_added": Tampering(
        _refused_projected,
        lambda c: decide_search_gate(
            c.assessment,
            (
                resealed(
                    c.residuals[0],
                    evidence_spans=(*c.residuals[0].evidence_spans, _outside_span(c)),
                ),
                *c.residuals[1:],
            ),
        ),
        lambda c: (SearchGateDecision, G.UNASSESSABLE, GR.RESIDUAL_CONTEXT_MISMATCH.value),
    ),
    "gate_of_residuals_in_a_list": Tampering(
        _refused_projected,
        lambda c: decide_search_gate(c.assessment, list(c.residuals)),
        lambda c: (SearchGateDecision, G.UNASSESSABLE, GR.RESIDUALS_MALFORMED.value),
    ),
    "gate_without_the_residuals": Tampering(
        _refused_projected,
        lambda c: decide_search_gate(c.assessment, ()),
        lambda c: (SearchGateDecision, G.UNASSESSABLE, GR.RESIDUAL_CONTEXT_MISMATCH.value),
    ),
    # decide_compute_budget: the gate (ADR-0227 §8: unassessable, all limits zero)
    "budget_of_a_forged_gate": Tampering(
        _gated,
        lambda c: decide_compute_budget(_forged_id(c.gate)),
        lambda c: (
            ComputeBudgetDecision,
            UNASSESSABLE,
            "budget_unassessable_gate_identity_mismatch",
        ),
    ),
    "budget_of_a_gate_under_another_policy": Tampering(
        _gated,
        # A gate version no kernel registers (an adopted search_gate.v2 may be registered).
        lambda c: decide_compute_budget(
            copy_with(c.gate, policy_version=UNREGISTERED_GATE_VERSION)
        ),
        lambda c: (
            ComputeBudgetDecision,
            UNASSESSABLE,
            "budget_unassessable_gate_policy_unsupported",
        ),
    ),
    "budget_of_a_gate_with_a_malformed_reason": Tampering(
        _gated,
        lambda c: decide_compute_budget(copy_with(c.gate, reason_code="Not A Code")),
        lambda c: (ComputeBudgetDecision, UNASSESSABLE, "budget_unassessable_gate_malformed"),
    ),
    # open_search_run: budget, input and operator set (ADR-0228 §9, §16)
    "run_of_a_forged_budget": Tampering(
        _budgeted,
        lambda c: _open(c, budget_decision=_forged_id(c.budget)),
        lambda c: (SearchRunRefusal, INVALID, ("budget_id_mismatch",)),
    ),
    "run_of_a_negative_limit": Tampering(
        _budgeted,
        lambda c: _open(c, budget_decision=copy_with(c.budget, max_steps=-1)),
        lambda c: (SearchRunRefusal, INVALID, ("budget_limit_negative",)),
    ),
    "run_of_a_resealed_bigger_budget": Tampering(
        _budgeted,
        lambda c: _open(c, budget_decision=resealed(c.budget, max_steps=c.budget.max_steps + 1)),
        lambda c: (
            SearchRunRefusal,
            INVALID,
            (
                "input_budget_mismatch"
                if c.budget.status is B.BUDGET_ALLOWED
                else "budget_malformed",
            ),
        ),
    ),
    "run_under_an_unknown_run_policy": Tampering(
        _budgeted,
        lambda c: _open(
            c,
            search_input=copy_with(_search_input(c), run_policy_version="geometric_search_run.v9"),
        ),
        lambda c: (SearchRunRefusal, INVALID, ("run_policy_version_unsupported",)),
    ),
    "run_over_another_operator_set": Tampering(
        _budgeted,
        lambda c: _open(c, operator_set=EMPTY_OPERATOR_SET),
        lambda c: (SearchRunRefusal, INVALID, ("operator_set_mismatch",)),
    ),
    "run_of_a_search_input_naming_another_frame": Tampering(
        _budgeted,
        lambda c: _open(
            c,
            search_input=copy_with(
                _search_input(c),
                problem_frame_digest=other_digest(c.gate.problem_frame_digest),
            ),
        ),
        lambda c: (SearchRunRefusal, INVALID, ("problem_frame_mismatch",)),
    ),
    # propose_candidate and record_attempts: the opened run (ADR-0231 §17, docs/adr/0004)
    "operator_on_a_forged_run": Tampering(
        _opened,
        lambda c: _propose(c, opened_run=_forged_id(c.opened)),
        lambda c: (CandidateOperatorRefusal, ("record_malformed",)),
    ),
    "operator_input_with_a_negative_index": Tampering(
        _opened,
        lambda c: _propose(c, copy_with(_operator_input(c), attempt_index=-1)),
        lambda c: (CandidateOperatorRefusal, ("attempt_index_negative",)),
    ),
    "operator_input_with_a_forged_digest": Tampering(
        _opened,
        lambda c: _propose(c, _forged_id(_operator_input(c))),
        lambda c: (CandidateOperatorRefusal, ("identity_mismatch",)),
    ),
    "operator_on_a_forged_residual": Tampering(
        _opened,
        lambda c: _propose(c, residual=_forged_id(c.residuals[0])),
        lambda c: (CandidateOperatorRefusal, ("record_malformed",)),
    ),
    "record_on_a_broken_opened_run": Tampering(
        _opened,
        lambda c: record_attempts(
            copy_with(c.opened, max_candidates=0), CANDIDATE_OPERATOR_SET, ()
        ),
        lambda c: (SearchRunRefusal, INVALID, ("opened_run_malformed",)),
    ),
    "record_over_another_operator_set": Tampering(
        _opened,
        lambda c: record_attempts(c.opened, EMPTY_OPERATOR_SET, ()),
        lambda c: (SearchRunRefusal, INVALID, ("operator_set_mismatch",)),
    ),
    # record_attempts: the operator's attempt (ADR-0228 §8, §16)
    "record_a_forged_attempt": Tampering(
        _has_result,
        lambda c: record_attempts(
            c.opened, CANDIDATE_OPERATOR_SET, (_forged_id(c.results[0].candidate_attempt),)
        ),
        lambda c: (SearchRunRefusal, INVALID, ("attempts_malformed",)),
    ),
    "record_an_attempt_claiming_closure": Tampering(
        _has_result,
        lambda c: record_attempts(
            c.opened,
            CANDIDATE_OPERATOR_SET,
            (
                resealed(
                    c.results[0].candidate_attempt,
                    replay_status=CandidateReplayStatus.REPLAY_CLOSED,
                ),
            ),
        ),
        lambda c: (SearchRunRefusal, INVALID, ("attempt_not_pending",)),
    ),
    "record_the_attempt_twice": Tampering(
        _has_result,
        lambda c: record_attempts(
            c.opened, CANDIDATE_OPERATOR_SET, (c.results[0].candidate_attempt,) * 2
        ),
        lambda c: (SearchRunRefusal, INVALID, ("attempt_limit_exceeded",)),
    ),
    # replay_candidate: the reconstruction and the records it names (docs/adr/0006)
    "replay_a_forged_reconstruction": Tampering(
        _has_result,
        lambda c: replay_candidate(
            c.frame,
            c.assessment,
            copy_with(
                c.results[0].reconstruction,
                candidate_digest=other_digest(c.results[0].candidate_digest),
            ),
        ),
        lambda c: (ReplayRefusal, ("reconstruction_malformed",)),
    ),
    "replay_against_another_assessment": Tampering(
        _has_result,
        lambda c: replay_candidate(
            c.frame,
            resealed(c.assessment, blockers=c.assessment.blockers[:0]),
            c.results[0].reconstruction,
        ),
        lambda c: (ReplayRefusal, ("assessment_mismatch",)),
    ),
    "replay_on_a_broken_frame": Tampering(
        _has_result,
        lambda c: replay_candidate(
            copy_with(c.frame, source_text=None), c.assessment, c.results[0].reconstruction
        ),
        lambda c: (ReplayRefusal, ("frame_malformed",)),
    ),
    # decide_answer: the replays and proofs it is handed (ADR-0226 §8.6)
    "answer_from_a_forged_replay": Tampering(
        lambda c: c.at("replayed") and bool(c.replays),
        lambda c: decide_answer(c.frame, c.assessment, replays=(_forged_id(c.replays[0]),)),
        lambda c: (AnswerRefusal, ("input_malformed",)),
    ),
    "answer_from_replays_in_a_list": Tampering(
        lambda c: c.at("replayed") and bool(c.replays),
        lambda c: decide_answer(c.frame, c.assessment, replays=list(c.replays)),
        lambda c: (AnswerRefusal, ("input_malformed",)),
    ),
    "answer_from_a_replay_of_another_frame": Tampering(
        _has_replay_result,
        lambda c: decide_answer(
            c.frame,
            c.assessment,
            replays=(
                resealed(
                    _first_replay_result(c),
                    problem_frame_digest=other_digest(_first_replay_result(c).problem_frame_digest),
                ),
            ),
        ),
        lambda c: (AnswerRefusal, ("evidence_mismatch",)),
    ),
    "answer_from_a_forged_direct_proof": Tampering(
        _direct,
        lambda c: decide_answer(c.frame, c.assessment, direct_proof=_forged_id(c.direct_proof)),
        lambda c: (AnswerRefusal, ("input_malformed",)),
    ),
    "answer_without_the_direct_proof": Tampering(
        _direct,
        lambda c: decide_answer(c.frame, c.assessment),
        lambda c: (AnswerRefusal, ("direct_proof_missing",)),
    ),
    "answer_from_a_resealed_direct_proof": Tampering(
        _direct,
        lambda c: decide_answer(
            c.frame,
            c.assessment,
            direct_proof=resealed(
                c.direct_proof,
                contract_assessment_id=other_digest(c.direct_proof.contract_assessment_id),
            ),
        ),
        lambda c: (AnswerRefusal, ("evidence_mismatch",)),
    ),
}


def _refuse_every_tampering(case: Case) -> None:
    """Every tampering that applies to the stages ``case`` has reached, each with its exact
    typed refusal; an exception fails the step."""
    names = sorted(name for name, t in TAMPERINGS.items() if t.applies(case))
    assert names  # a frame alone can always be tampered with
    for name in names:
        tampering = TAMPERINGS[name]
        assert _codes(tampering.call(case)) == tampering.expected(case), name


# ------------------------------------------------------------------------------------------
# Sealed traces tampered field by field


TRACE_FIELDS = tuple(field.name for field in dataclasses.fields(SealedPracticeTrace))
RECORD_FIELDS = (
    "frame",
    "original_assessment",
    "direct_proof",
    "residuals",
    "gate_decision",
    "budget_decision",
    "search_input",
    "opened_run",
    "operator_outcomes",
    "run_outcome",
    "replays",
    "outcome",
)
# The stage (``stage_digests_of``) whose record each trace field holds; the trace's own prose
# is named by ``trace``.
STAGE_OF_FIELD = dict(
    zip(
        (*RECORD_FIELDS, "explanation"),
        (
            "frame",
            "assessment",
            "proof",
            "residual",
            "gate",
            "budget",
            "search_input",
            "opened_run",
            "operator",
            "run",
            "replay",
            "outcome",
            "trace",
        ),
        strict=True,
    )
)


def _prose_divergence_at(trace: SealedPracticeTrace, path: tuple) -> TraceFailure:
    """What replaying ``trace`` must give when the one explanation at ``path`` (keys of its
    JSON form) is all that differs from the trace its frame seals (issue 15): the stage that
    holds it, and the explanation's place in that stage's record."""
    if path == ("explanation",):
        shown = "SealedPracticeTrace.explanation"
    else:
        record, keys = getattr(trace, path[0]), path[1:]
        if type(record) is tuple:
            record, keys = record[keys[0]], keys[1:]
        shown = type(record).__name__ + "".join(
            f"[{key}]" if type(key) is int else f".{key}" for key in keys
        )
    detail = f"{shown} differs from the replayed trace's"
    return TraceFailure(F.EXPLANATION_DIVERGED, STAGE_OF_FIELD[path[0]], detail)


def _wrong_type(trace: SealedPracticeTrace, field: str) -> tuple[Any, tuple[F, str]]:
    """A value of another type in ``field`` and the structural failure it must cause."""
    special = {
        "trace_id": (F.RECORD_MALFORMED, "trace_id"),
        "schema_version": (F.VERSION_UNSUPPORTED, "schema_version"),
        "versions": (F.VERSION_UNSUPPORTED, "versions"),
        "stage_digests": (F.STAGE_DIGEST_MISMATCH, "trace"),
    }
    return 0, special.get(field, (F.RECORD_MALFORMED, field))


def _broken_inside(trace: SealedPracticeTrace, field: str) -> tuple[Any, tuple[F, str]] | None:
    """The record in ``field`` (the first, for a sequence) with a forged identity, or another
    well-formed value where the field holds no record; ``None`` where nothing is there."""
    value = getattr(trace, field)
    if field == "trace_id":
        return other_digest(value), (F.TRACE_ID_MISMATCH, "trace")
    if field == "schema_version":
        return "sealed_practice_trace.v2", (F.VERSION_UNSUPPORTED, "schema_version")
    if field == "versions":
        return TRACE_VERSIONS[::-1], (F.VERSION_UNSUPPORTED, "versions")
    if field == "stage_digests":
        return value[::-1], (F.STAGE_DIGEST_MISMATCH, "trace")
    if field == "explanation":
        return None
    if field == "frame":
        return copy_with(value, facts=list(value.facts)), (F.RECORD_MALFORMED, field)
    if field == "search_input":
        if value is None:
            return None
        return copy_with(value, residual_ids=list(value.residual_ids)), (F.RECORD_MALFORMED, field)
    if type(value) is tuple:
        if not value:
            return None
        return (_forged_id(value[0]), *value[1:]), (F.RECORD_MALFORMED, field)
    if value is None:
        return None
    return _forged_id(value), (F.RECORD_MALFORMED, field)


def _json_leaves(value: Any, path: tuple = ()) -> Iterator[tuple[tuple, Any]]:
    """Every scalar and every list of decoded JSON, with its path."""
    if type(value) is dict:
        for key in sorted(value):
            yield from _json_leaves(value[key], (*path, key))
    elif type(value) is list:
        yield path, value
        for index, item in enumerate(value):
            yield from _json_leaves(item, (*path, index))
    else:
        yield path, value


def _changed(value: Any) -> Any:
    """Another JSON value of the same shape as ``value`` (never equal to it)."""
    if type(value) is bool:
        return not value
    if type(value) is int:
        return value + 1
    if type(value) is str:
        return value + "x"
    if value is None:
        return 0
    if len(value) > 1 and value[::-1] != value:
        return value[::-1]
    # Reversing equal items changes nothing: repeat the first instead (a longer list).
    return [*value, value[0]] if value else [None]


def _set_at(payload: Any, path: tuple, value: Any) -> None:
    for key in path[:-1]:
        payload = payload[key]
    payload[path[-1]] = value


# ------------------------------------------------------------------------------------------
# The machine


class TraceTamperingMachine(RuleBasedStateMachine):
    cases = Bundle("cases")
    traces = Bundle("traces")

    def __init__(self) -> None:
        super().__init__()
        self.produced: dict[int, tuple[Any, bytes]] = {}
        self.all_cases: list[Case] = []
        self.sealed: list[SealedPracticeTrace] = []

    def _keep(self, *records: Any) -> None:
        for record in records:
            if id(record) not in self.produced:
                self.produced[id(record)] = (record, canonical_json(record.to_json()))

    def _note(self, case: Case) -> Case:
        self.all_cases.append(case)
        self._keep(*case.records())
        return case

    @rule(target=cases, frame=any_frames)
    def start(self, frame: ProblemFrame) -> Case:
        """ADR-0226 §6: a case begins with its frame and nothing else."""
        return self._note(Case("framed", frame))

    @rule(target=cases, case=consumes(cases), stages=st.integers(1, 6))
    def advance(self, case: Case, stages: int) -> Case:
        """ADR-0226 §6, loop.py: the next stages, each called on the records before it."""
        for _ in range(stages):
            case = self._note(_advance(case))
        return case

    @rule(target=traces, case=consumes(cases))
    def seal(self, case: Case) -> SealedPracticeTrace:
        """0007, ADR-0226 §9: the stages run one by one (every stage also handed each of its
        tampered inputs first, as in the rule below) seal exactly the trace the composed loop
        seals; it verifies, replays and loads back from its stored bytes."""
        while case.stage != "decided":
            case = self._note(_advance(case))
        _refuse_every_tampering(case)
        trace = seal_practice_trace(**case.trace_records())
        composed = practice_case(case.frame)
        assert type(composed) is SealedPracticeTrace, composed
        assert canonical_json(trace.to_json()) == canonical_json(composed.to_json())
        assert verify_sealed_trace(trace) == TraceVerification(trace.trace_id, ())
        assert replay_divergence(trace) is None
        assert load_sealed_trace(sealed_trace_bytes(trace)) == trace
        self._keep(trace)
        self.sealed.append(trace)
        return trace

    @rule(case=cases)
    def hand_each_stage_a_tampered_input(self, case: Case) -> None:
        """ADR-0228 §16, ADR-0231 §17, docs/adr/0003 ("stages re-inspect"), 0006, 0008: every
        stage the case has reached, handed a tampered or resealed record in place of one of
        its genuine inputs, answers with its own typed refusal and exact reason (all limits
        zero for a budget), never with an exception or a result."""
        _refuse_every_tampering(case)

    @rule(trace=traces, field=st.sampled_from(TRACE_FIELDS), wrong_type=st.booleans())
    def break_a_field_of_a_copy(
        self, trace: SealedPracticeTrace, field: str, wrong_type: bool
    ) -> None:
        """0007 step 1: a copy of the trace (``tampered``: ``object.__setattr__`` on a new
        object) with one field of another type, or holding a record whose identity is forged
        (another version, a reversed stage index, another trace_id), fails verification with
        the one structural failure that names the field; the trace itself is untouched."""
        broken = _wrong_type(trace, field) if wrong_type else _broken_inside(trace, field)
        if broken is None:
            return
        value, (code, stage) = broken
        verification = verify_sealed_trace(copy_with(trace, **{field: value}))
        assert not verification.valid
        assert [(f.code, f.stage) for f in verification.failures] == [(code, stage)]
        assert verification.trace_id is None  # a trace that is not well formed names no id

    @rule(
        trace=traces,
        other=traces,
        field=st.sampled_from(RECORD_FIELDS + ("explanation",)),
        reseal=st.booleans(),
    )
    def swap_a_field_with_another_trace(
        self, trace: SealedPracticeTrace, other: SealedPracticeTrace, field: str, reseal: bool
    ) -> None:
        """0007 steps 1 and 3, ADR-0226 §9: a copy holding another trace's field is valid only
        when that field's content equals this one's but for prose. Otherwise, left as it
        is, the stage index (or, where no stage identity moved, the seal) no longer matches;
        with the index and seal recomputed, a cross-identity row fails and replaying the
        trace's frame diverges from it."""
        value = getattr(other, field)
        changes = {field: value}
        same = field == "explanation" or oracle.plain_form(value) == oracle.plain_form(
            getattr(trace, field)
        )
        forged = copy_with(trace, **changes)
        if reseal:
            forged = copy_with(forged, stage_digests=_oracle_stage_digests(forged))
            forged = copy_with(forged, trace_id=oracle.self_sealed_id(forged))
        verification = verify_sealed_trace(forged)
        if same:
            assert verification == TraceVerification(trace.trace_id, ())
            # Replay compares the bytes, prose included (issue 15): the copy replays clean
            # exactly when the field's prose is this trace's too, and otherwise names the
            # field's stage as explanation_diverged.
            divergence = replay_divergence(forged)
            if sealed_trace_bytes(forged) == sealed_trace_bytes(trace):
                assert divergence is None
            else:
                assert divergence is not None
                assert (divergence.code, divergence.stage) == (
                    F.EXPLANATION_DIVERGED,
                    STAGE_OF_FIELD[field],
                )
            return
        assert not verification.valid
        codes = [(f.code, f.stage) for f in verification.failures]
        if not reseal:
            moved = _oracle_stage_digests(forged) != trace.stage_digests
            expected = F.STAGE_DIGEST_MISMATCH if moved else F.TRACE_ID_MISMATCH
            assert codes == [(expected, "trace")] and verification.trace_id is None
            return
        assert verification.trace_id == forged.trace_id
        assert codes and all(code is F.CROSS_IDENTITY_MISMATCH for code, _ in codes)
        assert replay_divergence(forged) is not None

    @rule(trace=traces, data=st.data())
    def change_one_value_in_the_stored_bytes(
        self, trace: SealedPracticeTrace, data: st.DataObject
    ) -> None:
        """0003 and 0007 loading: the stored bytes (``sealed_trace_bytes``) with one value
        changed anywhere (a scalar changed, a list reordered or extended), re-encoded
        canonically, load as one typed failure and never as a trace; unless the value was
        prose, which loads as a trace with the same trace_id that verifies, and whose replay
        (issue 15: the bytes, prose included) names that prose as explanation_diverged."""
        payload = json.loads(sealed_trace_bytes(trace))
        leaves = list(_json_leaves(payload))
        path, value = leaves[data.draw(st.integers(0, len(leaves) - 1), label="leaf")]
        _set_at(payload, path, _changed(value))
        loaded = load_sealed_trace(oracle.canonical_bytes(payload))
        if path[-1] == "explanation":
            assert type(loaded) is SealedPracticeTrace
            assert loaded.trace_id == trace.trace_id
            assert verify_sealed_trace(loaded) == TraceVerification(trace.trace_id, ())
            assert replay_divergence(loaded) == _prose_divergence_at(loaded, path)
            return
        assert type(loaded) is TraceVerification, path
        assert not loaded.valid and loaded.trace_id is None
        (failure,) = loaded.failures
        # Loading names a defect of the trace record as verification does (docs/adr/0007).
        assert failure.code in (
            F.UNDECODABLE,
            F.RECORD_MALFORMED,
            F.TRACE_ID_MISMATCH,
            F.STAGE_DIGEST_MISMATCH,
            F.VERSION_UNSUPPORTED,
        ), path

    # --------------------------------------------------------------------------------------
    # Invariants

    @invariant()
    def no_run_exceeds_or_misreports_its_budget(self) -> None:
        """ADR-0228 §9: every run exists only under an eligible gate and an allowed budget,
        copies that budget's ceiling, and its accounting is the sum of its attempts, within
        every ceiling; a refused run has no accounting and no attempt."""
        runs = [(case.run, case.opened, case.budget, case.gate) for case in self.all_cases]
        runs += [
            (t.run_outcome, t.opened_run, t.budget_decision, t.gate_decision) for t in self.sealed
        ]
        for run, opened, budget, gate in runs:
            if type(run) is not GeometricSearchRun:
                assert opened is None or run is None
                continue
            assert gate.status is SearchGateStatus.ELIGIBLE
            assert budget.status is ComputeBudgetStatus.BUDGET_ALLOWED
            consumed, attempts = run.budget_consumed, run.candidate_attempts
            ceiling = [getattr(budget, name) for name in LIMITS]
            assert [getattr(consumed, name) for name in LIMITS] == ceiling
            assert [getattr(opened, name) for name in LIMITS] == ceiling
            assert consumed.candidates_considered == len(attempts) <= consumed.max_candidates
            assert consumed.depth_reached == max((a.depth for a in attempts), default=0)
            assert consumed.depth_reached <= consumed.max_depth
            assert consumed.steps_used == sum(a.budget_charge.steps for a in attempts)
            assert consumed.steps_used <= consumed.max_steps
            assert consumed.parallelism_used == (1 if attempts else 0) <= consumed.max_parallelism
            assert all(a.replay_status is CandidateReplayStatus.REPLAY_PENDING for a in attempts)

    @invariant()
    def no_answer_without_closure(self) -> None:
        """ADR-0226 §7E, §8.6: an answer exists only on a runnable assessment with a closed
        direct proof, or on replays that closed contract and proof, and carries their value."""
        holders = [
            (c.outcome, c.assessment, c.direct_proof, c.replays)
            for c in self.all_cases
            if c.outcome is not None
        ]
        holders += [
            (t.outcome, t.original_assessment, t.direct_proof, t.replays) for t in self.sealed
        ]
        for outcome, assessment, proof, replays in holders:
            if type(outcome) is not ProofGatedAnswer:
                continue
            if outcome.path is AnswerPath.DIRECT:
                assert assessment.status is AssessmentStatus.RUNNABLE
                assert proof.status is ProofStatus.CLOSED and outcome.proof_id == proof.proof_id
                assert outcome.value == proof.derived_value and not replays
                continue
            assert assessment.status is AssessmentStatus.REFUSED and proof is None
            closed = {
                r.replay_id: r
                for r in replays
                if type(r) is ReplayResult
                and r.disposition is ReplayDisposition.CONTRACT_AND_PROOF_CLOSED
            }
            assert outcome.replay_ids and set(outcome.replay_ids) <= set(closed)
            for replay_id in outcome.replay_ids:
                replay_proof = closed[replay_id].replay_proof
                assert replay_proof.status is ProofStatus.CLOSED
                assert replay_proof.derived_value == outcome.value

    @invariant()
    def produced_records_are_byte_identical(self) -> None:
        """ADR-0226 §10 (evidence fidelity), docs/adr/0006 (isolation): no stage, and no
        tampering of a copy, changed any record a stage produced, nested ones included."""
        for record, snapshot in self.produced.values():
            assert canonical_json(record.to_json()) == snapshot

    @invariant()
    def every_identity_is_the_oracles(self) -> None:
        """ADR-0228 §10, ADR-0231 §14, 0003, 0007: every identity of every produced record,
        at every depth, and every trace's stage index, equal the oracle's recomputation."""
        for record, _ in self.produced.values():
            _assert_oracle_agrees(record)
        for trace in self.sealed:
            assert trace.stage_digests == _oracle_stage_digests(trace)

    @invariant()
    def sealed_traces_verify_and_replay(self) -> None:
        """0007, ADR-0226 §9: every sealed trace still verifies, and replaying its frame
        reproduces its trace_id."""
        for trace in self.sealed:
            assert verify_sealed_trace(trace) == TraceVerification(trace.trace_id, ())
            assert replay_divergence(trace) is None


TestTraceTampering = TraceTamperingMachine.TestCase
TestTraceTampering.settings = settings(
    max_examples=max(5, settings().max_examples // 10), stateful_step_count=25
)
