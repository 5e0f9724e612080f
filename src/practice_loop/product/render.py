"""A readable text rendering of one verified sealed trace (``practice-loop show``).

It opens with the verdict (``verdict.verdict_lines``: outcome, the decisive cause of a
refusal, seal, replay, budget and the path), then shows what the trace holds and nothing
else: a stage the case never reached is printed as absent, never filled in (ADR-0226 §7G).
Question text is printed with its controls and invisible characters escaped
(``verification.printable``), so it cannot reorder or hide itself on a terminal.
"""

from __future__ import annotations

from ..kernel import (
    AnswerRefusal,
    CandidateOperatorResult,
    GeometricSearchRun,
    ProofGatedAnswer,
    ReplayResult,
    SealedPracticeTrace,
    SourceSpan,
    problem_frame_digest,
)
from .verdict import verdict_lines, verdict_of
from .verification import printable


def _span(span: SourceSpan) -> str:
    return f"{span.text!r} [{span.start}:{span.end}]"


def _frame_lines(trace: SealedPracticeTrace) -> list[str]:
    frame = trace.frame
    lines = [f"question: {printable(frame.source_text)}", f"frame {problem_frame_digest(frame)}"]
    for fact in frame.facts:
        lines.append(
            f"  fact {fact.fact_id} = {fact.value} {fact.unit} ({fact.entity}) {_span(fact.span)}"
        )
    for cue in frame.cues:
        lines.append(f"  cue {cue.direction.value} {_span(cue.span)}")
    for proposal in frame.proposals:
        roles = ", ".join(
            f"{b.role.value}={b.fact_id or (b.direction.value if b.direction else 'target')}"
            for b in proposal.bindings
        )
        lines.append(f"  proposal {proposal.relation_type}: {roles or 'no binding'}")
    if frame.target is not None:
        lines.append(
            f"  target {frame.target.unit} of {frame.target.entity} {_span(frame.target.span)}"
        )
    for hazard in frame.hazards:
        spans = ", ".join(_span(span) for span in hazard.evidence_spans)
        lines.append(f"  hazard {hazard.code.value} {spans}")
    return lines


def render_trace(trace: SealedPracticeTrace) -> str:
    absent = "(absent: this case never reached the stage)"
    assessment = trace.original_assessment
    blockers = ", ".join(b.code.value for b in assessment.blockers) or "none"
    lines = [
        f"trace {trace.trace_id} (seal verified)",
        *verdict_lines(verdict_of(trace)),
        "",
        *_frame_lines(trace),
    ]
    lines.append(
        f"assessment {assessment.assessment_id}: {assessment.status.value}; blockers: {blockers}"
    )
    if trace.direct_proof is not None:
        proof = trace.direct_proof
        lines.append(f"proof {proof.proof_id}: {proof.status.value} {proof.explanation}")
    for residual in trace.residuals:
        lines.append(
            f"residual {residual.residual_id}: {residual.kind.value} ({residual.residual_code})"
        )
    gate, budget = trace.gate_decision, trace.budget_decision
    lines.append(
        f"gate {gate.decision_id}: {gate.status.value} {gate.reason_code}"
        if gate
        else f"gate {absent}"
    )
    if budget is not None:
        lines.append(
            f"budget {budget.budget_id}: {budget.status.value} {budget.reason_code}; "
            f"candidates {budget.max_candidates}, depth {budget.max_depth}, "
            f"steps {budget.max_steps}, parallelism {budget.max_parallelism}"
        )
    else:
        lines.append(f"budget {absent}")
    run = trace.run_outcome
    if type(run) is GeometricSearchRun:
        used = run.budget_consumed
        lines.append(
            f"run {run.run_id}: {run.run_disposition.value}"
            f"{' ' + run.exhaustion_code.value if run.exhaustion_code else ''}; "
            f"candidates {used.candidates_considered}/{used.max_candidates}, "
            f"depth {used.depth_reached}/{used.max_depth}, steps {used.steps_used}/{used.max_steps}"
        )
    elif run is not None:
        lines.append(
            f"run refused {run.outcome_id}: {run.run_disposition.value} "
            f"{', '.join(run.reason_codes)}"
        )
    else:
        lines.append(f"run {absent}")
    for outcome in trace.operator_outcomes:
        if type(outcome) is CandidateOperatorResult:
            payload = outcome.reconstruction.candidate_payload
            lines.append(
                f"candidate {outcome.candidate_digest}: "
                f"{payload.role.value}={payload.direction.value} from cue {_span(payload.cue_span)}"
            )
        else:
            lines.append(f"operator refused: {', '.join(outcome.reason_codes)}")
    for replay in trace.replays:
        if type(replay) is ReplayResult:
            detail = ", ".join(replay.replay_blockers) or "all obligations hold"
            lines.append(f"replay {replay.replay_id}: {replay.disposition.value} ({detail})")
        else:
            lines.append(f"replay refused: {', '.join(replay.reason_codes)}")
    outcome = trace.outcome
    if type(outcome) is ProofGatedAnswer:
        lines.append(
            f"answer {outcome.answer_id}: {outcome.value} {outcome.unit} ({outcome.path.value})"
        )
    else:
        assert type(outcome) is AnswerRefusal
        lines.append(f"refused {outcome.answer_refusal_id}: {', '.join(outcome.reason_codes)}")
    return "\n".join(lines)
