"""``practice_case(frame)``: the Residual-Gated Practice Loop, composed (ADR-0226 §6).

The loop calls each stage in order and seals what they produced. It decides nothing: every
branch below follows a decision some stage already made (runnable or refused by the
assessment; opened or refused by the run; result or refusal by the operator), and the only
answer is the one ``answer.decide_answer`` gives.
"""

from __future__ import annotations

from .answer import decide_answer
from .assessment import AssessmentStatus, ContractAssessment, assess
from .budget import COMPUTE_BUDGET_IN_FORCE, decide_compute_budget
from .checks import RecordError
from .frame import ProblemFrame, problem_frame_digest
from .gate import SEARCH_GATE_IN_FORCE, decide_search_gate
from .operators import (
    CANDIDATE_OPERATOR_SET,
    MISSING_ROLE_CANDIDATE_POLICY,
    CandidateOperatorResult,
    candidate_operator_input,
    propose_candidate,
)
from .proof import check_proof
from .record import admit_pinned, inspect_record, pin, trust_scope
from .refusal import Stage, StageRefusal, refuse
from .replay import replay_candidate
from .residual import project_residuals
from .search_run import (
    GEOMETRIC_SEARCH_RUN_V2_POLICY_VERSION,
    OpenedSearchRun,
    open_search_run,
    record_attempts,
    search_input_for,
)
from .trace import (
    SealedPracticeTrace,
    TraceFailure,
    TraceFailureCode,
    seal_practice_trace,
    sealed_trace_bytes,
    stage_records_of,
)

# The constants every case hands to its stages, validated once here; each call checks that
# they are still exactly what was validated before trusting them (docs/adr/0013).
_CONSTANTS = tuple(
    pin(constant)
    for constant in (
        SEARCH_GATE_IN_FORCE,
        COMPUTE_BUDGET_IN_FORCE,
        CANDIDATE_OPERATOR_SET,
        MISSING_ROLE_CANDIDATE_POLICY,
    )
)


@trust_scope()
def practice_case(frame: ProblemFrame) -> SealedPracticeTrace | StageRefusal:
    """Run one case through every stage and seal the trace.

    A frame the organ cannot even judge (malformed) is the assessment's ``StageRefusal``;
    every other frame gives a sealed trace, answered or refused. Should the records ever fail
    to seal, the case is refused (``trace_unsealable``), never answered without its trace.
    """
    for constant in _CONSTANTS:
        admit_pinned(constant)
    records = _stage_records(frame)
    if type(records) is StageRefusal:
        return records
    try:
        return seal_practice_trace(**records)  # type: ignore[arg-type]
    except RecordError as error:
        return refuse(
            Stage.LOOP,
            "trace_unsealable",
            subject_digest=problem_frame_digest(frame),
            found=error.found,
        )


def _stage_records(frame: ProblemFrame) -> dict[str, object] | StageRefusal:
    assessment = assess(frame)
    if type(assessment) is not ContractAssessment:
        return assessment
    if assessment.status is AssessmentStatus.RUNNABLE:
        proof = check_proof(frame, assessment)
        return {
            "frame": frame,
            "original_assessment": assessment,
            "direct_proof": proof,
            "outcome": decide_answer(frame, assessment, direct_proof=proof),
        }
    residuals = project_residuals(assessment)
    assert type(residuals) is tuple  # a validated refused assessment always projects
    gate = decide_search_gate(assessment, residuals, SEARCH_GATE_IN_FORCE)
    budget = decide_compute_budget(gate, COMPUTE_BUDGET_IN_FORCE)
    search_input = search_input_for(
        gate, budget, CANDIDATE_OPERATOR_SET, GEOMETRIC_SEARCH_RUN_V2_POLICY_VERSION
    )
    opened = open_search_run(search_input, gate, budget, CANDIDATE_OPERATOR_SET)
    upstream = {
        "frame": frame,
        "original_assessment": assessment,
        "residuals": residuals,
        "gate_decision": gate,
        "budget_decision": budget,
        "search_input": search_input,
    }
    if type(opened) is not OpenedSearchRun:
        return {**upstream, "run_outcome": opened, "outcome": decide_answer(frame, assessment)}
    operator_input = candidate_operator_input(
        assessment=assessment,
        residual=residuals[0],
        gate_decision=gate,
        budget_decision=budget,
        opened_run=opened,
    )
    operator_outcome = propose_candidate(
        operator_input,
        frame=frame,
        assessment=assessment,
        residual=residuals[0],
        gate_decision=gate,
        budget_decision=budget,
        opened_run=opened,
    )
    produced = type(operator_outcome) is CandidateOperatorResult
    attempts = (operator_outcome.candidate_attempt,) if produced else ()  # type: ignore[union-attr]
    replays = (
        (replay_candidate(frame, assessment, operator_outcome.reconstruction),)  # type: ignore[union-attr]
        if produced
        else ()
    )
    return {
        **upstream,
        "opened_run": opened,
        "operator_outcomes": (operator_outcome,),
        "run_outcome": record_attempts(opened, CANDIDATE_OPERATOR_SET, attempts),
        "replays": replays,
        "outcome": decide_answer(frame, assessment, replays=replays),
    }


@trust_scope()
def replay_divergence(trace: SealedPracticeTrace) -> TraceFailure | None:
    """Re-run the case from the trace's own frame; ``None`` only when the replay reproduces
    the trace byte for byte, prose included (ADR-0226 §9, docs/adr/0007).

    The first stage whose identity differs is ``replay_diverged``. When every identity
    agrees, what can still differ is prose (ADR-0227 §7, ADR-0231 §14 keep it out of every
    identity), and every explanation is derived from the sealed fields, so edited prose is
    ``explanation_diverged`` at the first stage whose prose differs (``trace`` for the
    trace's own explanation).
    """
    replayed = practice_case(trace.frame)
    if type(replayed) is SealedPracticeTrace and replayed.trace_id == trace.trace_id:
        return _prose_divergence(trace, replayed)
    expected = replayed.stage_digests if type(replayed) is SealedPracticeTrace else ()
    stage = "trace"
    for index, pair in enumerate(trace.stage_digests):
        if index >= len(expected) or expected[index] != pair:
            stage = pair[0]
            break
    else:
        if len(expected) > len(trace.stage_digests):
            stage = expected[len(trace.stage_digests)][0]
    return TraceFailure(TraceFailureCode.REPLAY_DIVERGED, stage, "replayed trace differs")


def _prose_divergence(
    trace: SealedPracticeTrace, replayed: SealedPracticeTrace
) -> TraceFailure | None:
    """The replay has the trace's ``trace_id``: compare the full bytes (issue 15)."""
    found = inspect_record(trace, SealedPracticeTrace)
    if found is not None:
        # Not a trace whose bytes exist; its id says nothing of its content (verify first).
        detail = f"the trace does not inspect clean ({found.describe()})"
        return TraceFailure(TraceFailureCode.REPLAY_DIVERGED, "trace", detail[:200])
    if sealed_trace_bytes(trace) == sealed_trace_bytes(replayed):
        return None
    # Equal trace ids seal equal fields but prose, at every depth (so the same stages, in
    # the same order): what differs is an explanation.
    for (stage, record), (_, again) in zip(
        stage_records_of(trace), stage_records_of(replayed), strict=False
    ):
        where = type(record).__name__
        path = _first_prose_difference(record.to_json(), again.to_json(), where)
        if path is not None:
            detail = f"{path} differs from the replayed trace's"
            return TraceFailure(TraceFailureCode.EXPLANATION_DIVERGED, stage, detail[:200])
    if trace.explanation != replayed.explanation:
        detail = "SealedPracticeTrace.explanation differs from the replayed trace's"
        return TraceFailure(TraceFailureCode.EXPLANATION_DIVERGED, "trace", detail)
    # Unreachable while trace_id seals every field but prose; named as what it would be.
    return TraceFailure(TraceFailureCode.REPLAY_DIVERGED, "trace", "replayed trace differs")


def _first_prose_difference(given: object, again: object, where: str) -> str | None:
    """The path of the first ``explanation`` (keys in canonical order, depth first) whose
    text differs between two JSON forms of the same shape, or ``None``."""
    pending: list[tuple[object, object, str]] = [(given, again, where)]
    while pending:
        mine, theirs, at = pending.pop()
        if type(mine) is dict and type(theirs) is dict:
            for key in sorted(mine, reverse=True):  # popped in ascending order
                pending.append((mine[key], theirs.get(key), f"{at}.{key}"))
        elif type(mine) is list and type(theirs) is list and len(mine) == len(theirs):
            pending.extend((mine[i], theirs[i], f"{at}[{i}]") for i in reversed(range(len(mine))))
        elif at.endswith(".explanation") and mine != theirs:
            return at
    return None
