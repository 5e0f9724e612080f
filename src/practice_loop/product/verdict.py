"""What a sealed trace comes to and the path it took, for a reader who wants the verdict first
(issue 20): ``verdict_of(trace)``, shown at the top of ``practice-loop show`` and of every
Workbench trace page.

It reads the trace and decides nothing: each stage's state follows the decision that stage
recorded, and which stages a case goes through follows ADR-0226 §6 as the loop runs it
(docs/adr/0008): a runnable assessment goes to its direct proof and the answer, never to
search; a refused one goes through residuals, gate, budget and the run, and to the operator
and replay only when the run opened; a replay exists only for a proposed candidate.

A stage is ``not_on_path`` when the case's path never has it, and ``missing`` only when the
path needs it and the trace does not hold it (ADR-0226 §7G: missing evidence is shown as
missing, never filled in). The *decisive* stage of a refusal is the first, in the loop's
order, whose own decision stopped the case; the stages after it only follow it.
"""

from __future__ import annotations

import dataclasses
import enum

from ..kernel import (
    AnswerPath,
    AnswerRefusal,
    AssessmentStatus,
    CandidateOperatorResult,
    ComputeBudgetStatus,
    GeometricSearchRun,
    ProofGatedAnswer,
    ProofStatus,
    ReplayDisposition,
    ReplayResult,
    SealedPracticeTrace,
    SearchGateStatus,
)


class VerdictOutcome(enum.Enum):
    ANSWERED_DIRECT = "answered_direct"
    ANSWERED_PRACTICE = "answered_practice"
    REFUSED = "refused"


class StageState(enum.Enum):
    PASSED = "passed"  # its decision let the case go on
    REFUSED = "refused"  # a refusal the loop goes on from, or one that follows the decisive stop
    DECISIVE = "decisive"  # the stop that settled the case's refusal
    NOT_ON_PATH = "not_on_path"  # the case's path never has this stage
    MISSING = "missing"  # the path needs this stage and the trace does not hold it


@dataclasses.dataclass(frozen=True, slots=True)
class StageView:
    """One stage of the flow: its key (a section of the trace page), its title, its state
    and one line saying what it decided or why it is absent."""

    key: str
    title: str
    state: StageState
    summary: str


@dataclasses.dataclass(frozen=True, slots=True)
class BudgetUse:
    """One structural ceiling of the budget and what the run consumed of it (``None`` when
    no run consumed the budget: nothing is filled in)."""

    limit: str
    granted: int
    used: int | None


@dataclasses.dataclass(frozen=True, slots=True)
class Verdict:
    outcome: VerdictOutcome
    answer: str | None  # the value and its unit, for an answered case
    decisive: StageView | None  # for a refused case, the stage whose decision settled it
    refusal_reasons: tuple[str, ...]  # the answer refusal's own reason codes
    replay: str  # the replay status in one phrase
    budget: tuple[BudgetUse, ...]  # empty when the case's path has no budget
    stages: tuple[StageView, ...]  # every stage of ADR-0226 §6, in the loop's order


_STAGES = (
    ("frame", "Frame"),
    ("assessment", "Assessment"),
    ("direct-proof", "Direct proof"),
    ("residuals", "Residuals"),
    ("gate", "Search gate"),
    ("budget", "Budget"),
    ("run", "Search run"),
    ("candidates", "Operator"),
    ("replays", "Replay"),
    ("outcome", "Answer"),
    ("seal", "Seal"),
)
_TITLES = dict(_STAGES)
_LIMITS = (
    ("candidates", "max_candidates", "candidates_considered"),
    ("depth", "max_depth", "depth_reached"),
    ("steps", "max_steps", "steps_used"),
    ("parallelism", "max_parallelism", "parallelism_used"),
)
_NOT_RUNNABLE_PATH = "a runnable assessment goes to its direct proof, never to search"
_NOT_REFUSED_PATH = "a refused assessment goes to practice, not to a direct proof"
_NOT_OPENED = "the run was not opened, so no operator was called"
_NO_CANDIDATE = "the operator proposed no candidate, so there is nothing to replay"


def verdict_of(trace: SealedPracticeTrace) -> Verdict:
    views = _stage_views(trace)
    decisive = next((v for v in views if v.state is StageState.DECISIVE), None)
    outcome = trace.outcome
    if type(outcome) is ProofGatedAnswer:
        practice = outcome.path is AnswerPath.PRACTICE
        return Verdict(
            VerdictOutcome.ANSWERED_PRACTICE if practice else VerdictOutcome.ANSWERED_DIRECT,
            f"{outcome.value} {outcome.unit}",
            None,
            (),
            _replay_phrase(views),
            _budget_uses(trace),
            views,
        )
    assert type(outcome) is AnswerRefusal
    return Verdict(
        VerdictOutcome.REFUSED,
        None,
        decisive,
        tuple(outcome.reason_codes),
        _replay_phrase(views),
        _budget_uses(trace),
        views,
    )


def _stage_views(trace: SealedPracticeTrace) -> tuple[StageView, ...]:
    states: list[tuple[str, StageState, str]] = []
    stopped = False

    def add(key: str, state: StageState, summary: str) -> None:
        nonlocal stopped
        if state is StageState.DECISIVE:
            if stopped:  # only the first stop settles the case; later ones follow it
                state = StageState.REFUSED
            stopped = True
        states.append((key, state, summary))

    frame = trace.frame
    add("frame", StageState.PASSED, f"{len(frame.facts)} facts, {len(frame.cues)} cues")
    assessment = trace.original_assessment
    runnable = assessment.status is AssessmentStatus.RUNNABLE
    blockers = ", ".join(b.code.value for b in assessment.blockers)
    if runnable:
        add("assessment", StageState.PASSED, "runnable")
    else:
        add("assessment", StageState.REFUSED, f"refused: {blockers or 'no blocker named'}")
    proof = trace.direct_proof
    if not runnable:
        add("direct-proof", StageState.NOT_ON_PATH, _NOT_REFUSED_PATH)
    elif proof is None:
        add("direct-proof", StageState.MISSING, "a runnable assessment needs its proof")
    elif proof.status is ProofStatus.CLOSED:
        add(
            "direct-proof", StageState.PASSED, f"closed: {proof.derived_value} {proof.derived_unit}"
        )
    else:
        failing = ", ".join(o.obligation.value for o in proof.obligations if not o.holds)
        add("direct-proof", StageState.DECISIVE, f"refused: {failing or 'no obligation named'}")
    if runnable:
        for key in ("residuals", "gate", "budget", "run", "candidates", "replays"):
            add(key, StageState.NOT_ON_PATH, _NOT_RUNNABLE_PATH)
    else:
        _practice_views(trace, add)
    answer = trace.outcome
    if type(answer) is ProofGatedAnswer:
        add("outcome", StageState.PASSED, f"{answer.value} {answer.unit} ({answer.path.value})")
    else:
        assert type(answer) is AnswerRefusal
        add("outcome", StageState.DECISIVE, "refused: " + ", ".join(answer.reason_codes))
    add("seal", StageState.PASSED, "sealed: every stage's identity is in the trace id")
    return tuple(StageView(key, _TITLES[key], state, summary) for key, state, summary in states)


def _practice_views(trace: SealedPracticeTrace, add) -> None:  # noqa: ANN001 (the closure above)
    """The states of the practice stages of a refused assessment (ADR-0226 §6)."""
    if trace.residuals:
        kinds = ", ".join(dict.fromkeys(r.kind.value for r in trace.residuals))
        add("residuals", StageState.PASSED, f"{len(trace.residuals)} residual(s): {kinds}")
    else:
        add("residuals", StageState.MISSING, "a refused assessment projects its residuals")
    allowed_budget = ComputeBudgetStatus.BUDGET_ALLOWED
    decisions = (
        ("gate", trace.gate_decision, SearchGateStatus.ELIGIBLE, "the gate follows residuals"),
        ("budget", trace.budget_decision, allowed_budget, "the budget follows the gate"),
    )
    for key, decision, allowing, needed in decisions:
        if decision is None:
            add(key, StageState.MISSING, needed)
            continue
        said = f"{decision.status.value.lower()}: {decision.reason_code}"
        add(key, StageState.PASSED if decision.status is allowing else StageState.DECISIVE, said)
    run = trace.run_outcome
    if run is None:
        add("run", StageState.MISSING, "every budget decision goes to the search run")
    elif type(run) is GeometricSearchRun:
        # Recorded before replay, the run stays candidate_replay_pending: closure is the
        # replay's record, not a rewrite of the run (docs/adr/0008).
        pending = (
            "; it stays pending by design, closure is the replay's record"
            if run.run_disposition.value == "candidate_replay_pending"
            else ""
        )
        add(
            "run",
            StageState.PASSED,
            f"opened, {len(run.candidate_attempts)} attempt(s): {run.run_disposition.value}"
            + pending,
        )
    else:
        add("run", StageState.DECISIVE, "refused: " + ", ".join(run.reason_codes))
    opened = type(run) is GeometricSearchRun
    outcomes = trace.operator_outcomes
    if not opened:
        add("candidates", StageState.NOT_ON_PATH, _NOT_OPENED)
        add("replays", StageState.NOT_ON_PATH, _NOT_OPENED)
        return
    refusals = [o for o in outcomes if type(o) is not CandidateOperatorResult]
    proposed = [o for o in outcomes if type(o) is CandidateOperatorResult]
    if not outcomes:
        add("candidates", StageState.MISSING, "an opened run calls its operator")
    elif refusals:
        codes = ", ".join(dict.fromkeys(c for o in refusals for c in o.reason_codes))
        add("candidates", StageState.DECISIVE, f"refused: {codes}")
    else:
        proposals = "; ".join(
            f"{o.reconstruction.candidate_payload.role.value} = "
            f"{o.reconstruction.candidate_payload.direction.value}"
            for o in proposed
        )
        add("candidates", StageState.PASSED, f"proposed {proposals}")
    if not proposed:
        add("replays", StageState.NOT_ON_PATH, _NO_CANDIDATE)
        return
    if not trace.replays:
        add("replays", StageState.MISSING, "a proposed candidate is replayed")
        return
    for replay in trace.replays:  # the first replay that did not close settles the case
        if type(replay) is not ReplayResult:
            add("replays", StageState.DECISIVE, "refused: " + ", ".join(replay.reason_codes))
            return
        if replay.disposition is not ReplayDisposition.CONTRACT_AND_PROOF_CLOSED:
            blockers = ", ".join(replay.replay_blockers) or "no blocker named"
            add("replays", StageState.DECISIVE, f"{replay.disposition.value}: {blockers}")
            return
    add("replays", StageState.PASSED, ReplayDisposition.CONTRACT_AND_PROOF_CLOSED.value)


def _replay_phrase(views: tuple[StageView, ...]) -> str:
    replay = next(view for view in views if view.key == "replays")
    if replay.state is StageState.NOT_ON_PATH:
        return f"none: {replay.summary}"
    if replay.state is StageState.MISSING:
        return f"missing: {replay.summary}"
    return replay.summary


def _budget_uses(trace: SealedPracticeTrace) -> tuple[BudgetUse, ...]:
    budget = trace.budget_decision
    if budget is None:
        return ()
    run = trace.run_outcome
    consumed = run.budget_consumed if type(run) is GeometricSearchRun else None
    return tuple(
        BudgetUse(
            name,
            getattr(budget, granted),
            getattr(consumed, used) if consumed is not None else None,
        )
        for name, granted, used in _LIMITS
    )


def verdict_lines(verdict: Verdict) -> list[str]:
    """The verdict as the first lines of ``practice-loop show`` (whose first line, not this,
    says that the seal was verified: a verdict is only ever shown of a verified trace)."""
    if verdict.outcome is VerdictOutcome.REFUSED:
        lines = ["verdict: refused"]
        if verdict.decisive is not None:
            cause = verdict.decisive
            lines.append(f"decided at: {cause.title.lower()}: {cause.summary}")
        lines.append("answer refusal: " + ", ".join(verdict.refusal_reasons))
    else:
        how = (
            "directly" if verdict.outcome is VerdictOutcome.ANSWERED_DIRECT else "through practice"
        )
        lines = [f"verdict: answered {how}: {verdict.answer}"]
    lines.append(f"replay: {verdict.replay}")
    if verdict.budget:
        lines.append(
            "budget (used/granted): "
            + ", ".join(
                f"{use.limit} {'-' if use.used is None else use.used}/{use.granted}"
                for use in verdict.budget
            )
        )
    else:
        lines.append("budget: not on this path")
    taken = [v for v in verdict.stages if v.state is not StageState.NOT_ON_PATH]
    lines.append("path: " + " > ".join(f"{v.title.lower()} {_MARKS[v.state]}" for v in taken))
    skipped = [v for v in verdict.stages if v.state is StageState.NOT_ON_PATH]
    if skipped:
        lines.append("not on this path: " + ", ".join(v.title.lower() for v in skipped))
    return lines


_MARKS = {
    StageState.PASSED: "ok",
    StageState.REFUSED: "refused",
    StageState.DECISIVE: "STOPPED",
    StageState.MISSING: "MISSING",
}
