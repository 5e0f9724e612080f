"""The labelled corruption catalogue: one named violation per entry, and its exact refusal.

In the spirit of Wycheproof's labelled vectors (ARCHITECTURE §3), each ``Corruption`` takes a
valid chain (drawn from ``valid_chains()``), applies one violation, and states the typed
outcome it must cause: the reason code and disposition of a run refusal, the reason of an
operator, replay or answer refusal, the ``CanonicalReason`` of a canonicalization refusal,
the ``Defect`` of a record, or the failure code of a trace load. A few rows of ADR-0228 §16
are not refusals (an empty operator set, a ceiling stop, a replay that is missing, refuses or
closes); their entries state the typed outcome those rows require instead.

``build(chain)`` returns an ``Attack``: the kernel function and the exact arguments it gets,
so that a test can check the arguments are left unchanged; ``perform`` calls it and returns
the outcome, turning only the kernel's own typed exceptions (``CanonicalizationError``,
``RecordError``) into values; ``observe`` reads an outcome's typed label in the form of
``Expected``. Any other exception escapes, and is a failure.

Clauses are named ``"ADR-0228 §16 row 3"``, ``"ADR-0228 §9 check 4"``, ``"ADR-0231 §17 row
5"``, ``"ADR-0231 §7.3 item 12"``, ``"ARCHITECTURE §2 hashable values"`` or ``"ARCHITECTURE §2
loading a persisted record"`` (and a few others for our own decisions); ``clause`` is the one
an entry is filed under, ``also`` the others it equally violates. ``by_clause(prefix)``
selects on either.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from hypothesis import strategies as st

from practice_loop.kernel import (
    CANDIDATE_OPERATOR_SET,
    CANDIDATE_OPERATOR_SET_ID,
    EMPTY_OPERATOR_SET,
    GEOMETRIC_SEARCH_RUN_V2_POLICY_VERSION,
    MAX_SAFE_INT,
    MISSING_ROLE_CANDIDATE_POLICY,
    AnswerRefusal,
    AnswerRefusalReason,
    BudgetCharge,
    CandidateAttempt,
    CandidateOperatorInput,
    CandidateOperatorRefusal,
    CandidateOperatorResult,
    CandidateReplayStatus,
    CanonicalizationError,
    CanonicalReason,
    ComputeBudgetDecision,
    ComputeBudgetStatus,
    Defect,
    Direction,
    GateReason,
    GeometricSearchRun,
    OpenedSearchRun,
    OperatorManifestRow,
    OperatorRefusalReason,
    OperatorSetManifest,
    RecordDefect,
    RecordError,
    ReplayDisposition,
    ReplayRefusal,
    ReplayRefusalReason,
    ReplayResult,
    Role,
    RunDisposition,
    RunExhaustionCode,
    RunRefusalReason,
    SealedPracticeTrace,
    SearchGateDecision,
    SearchGateStatus,
    SearchRunRefusal,
    SourceSpan,
    TraceFailureCode,
    TraceVerification,
    candidate_operator_input,
    canonical_json,
    decide_answer,
    decide_compute_budget,
    decide_search_gate,
    decode_canonical,
    load_sealed_trace,
    open_search_run,
    practice_case,
    propose_candidate,
    record_attempts,
    replay_candidate,
)
from practice_loop.kernel.identity import MAX_DEPTH, MAX_NODES, MAX_TEXT_LENGTH, inspect_record
from practice_loop.kernel.operators import POLICY_VERSIONS, SCHEMA_VERSIONS
from practice_loop.kernel.search_run import search_input_for
from practice_loop.kernel.trace import sealed_trace_bytes

from . import oracle
from .chains import FRAME_RECIPES, Chain, build_chain, chains, eligible_chains
from .frames import ALL_ROLES, problem_frames
from .tampering import fields_for_sealing, other_digest, resealed, tampered

D = RunDisposition
R = RunRefusalReason
O = OperatorRefusalReason  # noqa: E741 - the operator's reasons, as R is the run's
C = CanonicalReason
V2 = GEOMETRIC_SEARCH_RUN_V2_POLICY_VERSION


# ------------------------------------------------------------------------------------------
# The catalogue's vocabulary


@dataclasses.dataclass(frozen=True)
class Expected:
    """A typed outcome: its type, and its closed codes in order.

    For a run refusal ``(disposition, reason)``; for a run ``(disposition, exhaustion_code)``;
    for an operator, replay or answer refusal its reason (an answer refusal's trailing
    original blocker codes are not part of the label); for a canonicalization refusal its
    ``CanonicalReason``; for a record defect its ``Defect``; for a trace load every
    ``TraceFailureCode``.
    """

    kind: type
    codes: tuple[enum.Enum | None, ...]

    def __str__(self) -> str:
        shown = ", ".join(
            "None" if c is None else f"{type(c).__name__}.{c.name}" for c in self.codes
        )
        return f"{self.kind.__name__}({shown})"


@dataclasses.dataclass(frozen=True)
class Attack:
    """One call into the kernel: the function, its exact arguments, and (for
    ``record_attempts``) the attempts offered, so that a test can compare what was kept."""

    function: Callable[..., object]
    arguments: Mapping[str, object]
    proposed: tuple[CandidateAttempt, ...] = ()

    def __call__(self) -> object:
        return self.function(**self.arguments)


@dataclasses.dataclass(frozen=True)
class Corruption:
    """One labelled violation (see the module docstring)."""

    id: str
    stage: str
    clause: str
    comment: str
    expected: Expected
    valid_chains: Callable[[], st.SearchStrategy[Chain]]
    build: Callable[[Chain], Attack]
    also: tuple[str, ...] = ()

    @property
    def clauses(self) -> tuple[str, ...]:
        return (self.clause, *self.also)

    def label(self) -> str:
        return f"{self.id} [{'; '.join(self.clauses)}]"

    def apply(self, chain: Chain) -> object:
        return perform(self.build(chain))


def perform(attack: Attack) -> object:
    """Run the attack. The kernel's typed exceptions are returned as values (they are the
    refusals of ``canonical_json``, ``decode_canonical`` and record constructors); anything
    else propagates."""
    try:
        return attack()
    except (CanonicalizationError, RecordError) as error:
        return error


def observe(outcome: object) -> Expected:
    """The typed label of ``outcome``, in the form of ``Expected``. A code outside the closed
    vocabulary raises ``ValueError``."""
    kind = type(outcome)
    if kind is SearchRunRefusal:
        return Expected(
            kind,
            (outcome.run_disposition, *(RunRefusalReason(c) for c in outcome.reason_codes)),
        )
    if kind is GeometricSearchRun:
        return Expected(kind, (outcome.run_disposition, outcome.exhaustion_code))
    if kind is CandidateOperatorRefusal:
        return Expected(kind, tuple(OperatorRefusalReason(c) for c in outcome.reason_codes))
    if kind is ReplayRefusal:
        return Expected(kind, tuple(ReplayRefusalReason(c) for c in outcome.reason_codes))
    if kind is AnswerRefusal:
        return Expected(kind, (AnswerRefusalReason(outcome.reason_codes[0]),))
    if kind is CanonicalizationError:
        return Expected(kind, (outcome.reason,))
    if kind is RecordError:
        return Expected(kind, (outcome.found.defect,))
    if kind is RecordDefect:
        return Expected(kind, (outcome.defect,))
    if kind is TraceVerification:
        return Expected(kind, tuple(failure.code for failure in outcome.failures))
    return Expected(kind, ())


def stage_of(function: Callable[..., object]) -> str:
    """``module.name`` of a kernel function, as entries name their ``stage``."""
    return f"{function.__module__.rsplit('.', 1)[-1]}.{function.__qualname__}"


def _run_refused(disposition: RunDisposition, reason: RunRefusalReason) -> Expected:
    return Expected(SearchRunRefusal, (disposition, reason))


def _run(disposition: RunDisposition, code: RunExhaustionCode | None) -> Expected:
    return Expected(GeometricSearchRun, (disposition, code))


def _operator_refused(reason: OperatorRefusalReason) -> Expected:
    return Expected(CandidateOperatorRefusal, (reason,))


def _canonical(reason: CanonicalReason) -> Expected:
    return Expected(CanonicalizationError, (reason,))


# ------------------------------------------------------------------------------------------
# Valid chains the entries start from


def _v2(frames: st.SearchStrategy, operator_set: OperatorSetManifest = CANDIDATE_OPERATOR_SET):
    return frames.map(
        lambda frame: build_chain(frame, operator_set=operator_set, run_policy_version=V2)
    )


_MISSING_ROLE = FRAME_RECIPES[GateReason.ELIGIBLE_MISSING_ROLE]
_ELIGIBLE = sorted((r for r in FRAME_RECIPES if r.value.startswith("eligible_")), key=str)


def operator_chains(cue_count: int = 1, **knobs: Any) -> st.SearchStrategy[Chain]:
    """v2 chains over the candidate operator set whose one residual is ``direction_unbound``
    (the recipe binds every other role) and whose frame holds ``cue_count`` cues."""
    return _v2(problem_frames(**{**_MISSING_ROLE, "cue_count": cue_count, **knobs}))


def _other_kind_chains() -> st.SearchStrategy[Chain]:
    others = [r for r in _ELIGIBLE if r is not GateReason.ELIGIBLE_MISSING_ROLE]
    return st.sampled_from(others).flatmap(
        lambda reason: _v2(problem_frames(**{**FRAME_RECIPES[reason], "cue_count": 1}))
    )


def _other_code_chains() -> st.SearchStrategy[Chain]:
    """missing_role residuals the gate makes eligible, with a code v1 does not accept."""
    return st.sampled_from([Role.INITIAL, Role.DELTA]).flatmap(
        lambda role: _v2(
            problem_frames(
                hazard_count=0,
                proposal_count=1,
                with_target=True,
                bound_roles=ALL_ROLES - {role},
                cue_count=1,
            )
        )
    )


def _denied_chains(*reasons: GateReason) -> Callable[[], st.SearchStrategy[Chain]]:
    return lambda: st.one_of(*(chains(reason) for reason in reasons))


def _replayed(chain: Chain) -> ReplayResult | ReplayRefusal:
    result = _result(_context(chain))
    return replay_candidate(chain.frame, chain.assessment, result.reconstruction)


def _replay_closes(chain: Chain) -> bool:
    replay = _replayed(chain)
    return (
        type(replay) is ReplayResult
        and replay.disposition is ReplayDisposition.CONTRACT_AND_PROOF_CLOSED
    )


def _cue_span_is_not_all_evidence(chain: Chain) -> bool:
    cue = chain.frame.cues[0].span
    return any(span != cue for span in chain.residuals[0].evidence_spans)


# ------------------------------------------------------------------------------------------
# The search run (ADR-0228): open_search_run over a chain, with some records replaced


def _open(chain: Chain, **replacing: object) -> Attack:
    arguments = {
        "search_input": chain.search_input,
        "gate_decision": chain.gate,
        "budget_decision": chain.budget,
        "operator_set": chain.operator_set,
    }
    arguments.update(replacing)
    return Attack(open_search_run, arguments)


def _with_budget(chain: Chain, budget: object) -> Attack:
    """The chain with another budget, the run input rebuilt to name it (so that only the
    budget's own content can be refused)."""
    search_input = search_input_for(
        chain.gate, budget, chain.operator_set, chain.search_input.run_policy_version
    )
    return _open(chain, search_input=search_input, budget_decision=budget)


def _with_input(chain: Chain, **changes: object) -> Attack:
    return _open(chain, search_input=tampered(chain.search_input, **changes))


_ZERO_LIMITS = dict.fromkeys(("max_candidates", "max_depth", "max_steps", "max_parallelism"), 0)


def _budget_status(status: ComputeBudgetStatus, reason_code: str) -> Callable[[Chain], Attack]:
    return lambda c: _with_budget(
        c, resealed(c.budget, status=status, reason_code=reason_code, **_ZERO_LIMITS)
    )


def _unassessable_gate(chain: Chain) -> Attack:
    """The gate's own answer to the assessment with its residuals withheld (an incomplete
    context is unassessable), the budget's own answer to that gate, and an input naming both."""
    gate = decide_search_gate(chain.assessment, ())
    assert gate.status is SearchGateStatus.UNASSESSABLE, gate
    budget = decide_compute_budget(gate)
    search_input = search_input_for(gate, budget, chain.operator_set)
    return _open(chain, search_input=search_input, gate_decision=gate, budget_decision=budget)


def _row(
    name: str = "missing_role_candidate", *, steps: int = 1, depth: int = 1, attempts: int = 1
) -> OperatorManifestRow:
    return OperatorManifestRow(
        operator_name=name,
        operator_version=f"{name}.v1",
        allowed_residual_kinds=("missing_role",),
        allowed_residual_codes=("direction_unbound",),
        allowed_candidate_organs=("unary_delta_transition",),
        max_attempts_per_run=attempts,
        budget_charge=BudgetCharge(1, steps),
        depth=depth,
        max_parallelism=1,
        schema_versions=(("problem_frame", "problem_frame.v1"),),
        policy_versions=(("compute_budget", "compute_budget.v1"),),
        input_obligations=("single_grounded_cue",),
        output_candidate_shape="role_binding_delta",
        ordering_key=("attempt_index",),
        forbidden_side_effects=("mutation", "io"),
        replay_obligations=("contract_replay", "proof_replay"),
    )


def _manifest(*rows: OperatorManifestRow) -> OperatorSetManifest:
    return OperatorSetManifest("candidate_operators.v1", rows or (_row(),))


# ------------------------------------------------------------------------------------------
# Recording attempts (ADR-0228 §9, §16 rows 8-13; docs/adr/0004)


def _opened(chain: Chain, manifest: OperatorSetManifest) -> OpenedSearchRun:
    search_input = search_input_for(chain.gate, chain.budget, manifest, V2)
    opened = open_search_run(search_input, chain.gate, chain.budget, manifest)
    assert type(opened) is OpenedSearchRun, opened
    return opened


def _attempt(
    row: OperatorManifestRow,
    index: int,
    steps_before: int,
    *,
    parent: CandidateAttempt | None = None,
    status: CandidateReplayStatus = CandidateReplayStatus.REPLAY_PENDING,
) -> CandidateAttempt:
    refused = status is CandidateReplayStatus.REPLAY_REFUSED
    return CandidateAttempt.sealed(
        attempt_index=index,
        parent_attempt_id=None if parent is None else parent.attempt_id,
        operator_id=row.operator_name,
        operator_version=row.operator_version,
        input_digest="a" * 64,
        candidate_digest=f"{index:064x}",
        budget_charge=row.budget_charge,
        depth=row.depth,
        step_index=steps_before,
        replay_status=status,
        replay_blockers=("contract_refused",) if refused else (),
        evidence_spans=(),
        explanation="offered by the catalogue",
    )


def _serial(row: OperatorManifestRow, count: int) -> tuple[CandidateAttempt, ...]:
    steps = row.budget_charge.steps
    return tuple(_attempt(row, index, index * steps) for index in range(count))


def _record(
    chain: Chain,
    manifest: OperatorSetManifest,
    attempts: object,
    *,
    recorded_with: OperatorSetManifest | None = None,
    opened: object = None,
) -> Attack:
    run = _opened(chain, manifest) if opened is None else opened
    proposed = attempts if type(attempts) is tuple else ()
    return Attack(
        record_attempts,
        {
            "opened_run": run,
            "operator_set": manifest if recorded_with is None else recorded_with,
            "attempts": attempts,
        },
        proposed,  # type: ignore[arg-type]
    )


def _beyond_candidates(chain: Chain) -> Attack:
    row = _row(attempts=chain.budget.max_candidates + 1)
    return _record(chain, _manifest(row), _serial(row, chain.budget.max_candidates + 1))


def _beyond_steps(chain: Chain) -> Attack:
    # Each charge fits on its own; together they pass max_steps before max_candidates.
    steps = chain.budget.max_steps // 2 + 1
    row = _row(steps=steps, attempts=3)
    return _record(chain, _manifest(row), _serial(row, 3))


def _beyond_depth(chain: Chain) -> Attack:
    depth = chain.budget.max_depth + 1
    rows = tuple(_row(f"level_{level}_op", depth=level) for level in range(1, depth + 1))
    attempts: list[CandidateAttempt] = []
    for index, row in enumerate(rows):
        attempts.append(_attempt(row, index, index, parent=attempts[-1] if attempts else None))
    return _record(chain, _manifest(*rows), tuple(attempts))


def _skip_past_a_stop(chain: Chain) -> Attack:
    """A one-step attempt, then one charged all of max_steps (it cannot fit after the
    first), then a one-step attempt that would fit if the second were skipped: the run must
    stop at the second, never skip it and admit the third (ADR-0228 §9, §16 row 9)."""
    small = _row("small_op", attempts=2)
    big = _row("big_op", steps=chain.budget.max_steps)
    steps = chain.budget.max_steps
    attempts = (_attempt(small, 0, 0), _attempt(big, 1, 1), _attempt(small, 2, 1 + steps))
    return _record(chain, _manifest(small, big), attempts)


def _first_does_not_fit(chain: Chain) -> Attack:
    row = _row(steps=chain.budget.max_steps + 1)
    return _record(chain, _manifest(row), _serial(row, 1))


def _empty_set_v2(chain: Chain) -> Attack:
    return _record(chain, EMPTY_OPERATOR_SET, ())


def _with_status(attempt: CandidateAttempt, status: CandidateReplayStatus) -> CandidateAttempt:
    refused = status is CandidateReplayStatus.REPLAY_REFUSED
    return CandidateAttempt.sealed(
        **fields_for_sealing(
            attempt,
            replay_status=status,
            replay_blockers=("contract_refused",) if refused else (),
        )
    )


# ------------------------------------------------------------------------------------------
# The candidate operator (ADR-0231): a context, ways to forge it, and proposing over it


@dataclasses.dataclass(frozen=True)
class OperatorContext:
    """Every record ``propose_candidate`` consumes, each produced by its own stage (or forged
    and rebound by ``_forged``)."""

    chain: Chain
    assessment: Any
    residual: Any
    gate: SearchGateDecision
    budget: ComputeBudgetDecision
    opened: OpenedSearchRun
    operator_input: CandidateOperatorInput

    def arguments(self, **replacing: object) -> dict[str, object]:
        arguments = {
            "operator_input": self.operator_input,
            "frame": self.chain.frame,
            "assessment": self.assessment,
            "residual": self.residual,
            "gate_decision": self.gate,
            "budget_decision": self.budget,
            "opened_run": self.opened,
            "operator_set": CANDIDATE_OPERATOR_SET,
            "policy": MISSING_ROLE_CANDIDATE_POLICY,
        }
        arguments.update(replacing)
        return arguments


def _input_for(assessment, residual, gate, budget, opened, attempt_index: int = 0):
    return candidate_operator_input(
        assessment=assessment,
        residual=residual,
        gate_decision=gate,
        budget_decision=budget,
        opened_run=opened,
        attempt_index=attempt_index,
    )


def _context(chain: Chain) -> OperatorContext:
    opened = open_search_run(chain.search_input, chain.gate, chain.budget, chain.operator_set)
    assert type(opened) is OpenedSearchRun, opened
    residual = chain.residuals[0]
    operator_input = _input_for(chain.assessment, residual, chain.gate, chain.budget, opened)
    return OperatorContext(
        chain, chain.assessment, residual, chain.gate, chain.budget, opened, operator_input
    )


def _propose(ctx: OperatorContext, **replacing: object) -> Attack:
    arguments = ctx.arguments(**replacing)
    return Attack(propose_candidate, arguments)


def _result(ctx: OperatorContext) -> CandidateOperatorResult:
    result = propose_candidate(**ctx.arguments())
    assert type(result) is CandidateOperatorResult, result
    return result


def _forged(
    ctx: OperatorContext,
    *,
    residual: Any = None,
    gate: dict[str, Any] | None = None,
    budget: dict[str, Any] | None = None,
    run: dict[str, Any] | None = None,
    decide_budget: bool = False,
) -> OperatorContext:
    """Some records changed and every record after them rebound: each forged record is well
    formed and self-seals, gate -> budget -> run -> input all name each other, so that only
    the operator's own semantic checks can tell."""
    residual = residual or ctx.residual
    new_gate = tampered(ctx.gate, residual_ids=(residual.residual_id,), **(gate or {}))
    new_gate = resealed(new_gate, input_digest=oracle.gate_input_digest(new_gate))
    if decide_budget:
        new_budget = decide_compute_budget(new_gate)
    else:
        binding = {
            "gate_decision_id": new_gate.decision_id,
            "gate_input_digest": new_gate.input_digest,
        }
        new_budget = resealed(ctx.budget, **{**binding, **(budget or {})})
    binding = {
        "residual_ids": new_gate.residual_ids,
        "gate_decision_id": new_gate.decision_id,
        "budget_id": new_budget.budget_id,
    }
    opened = OpenedSearchRun.sealed(**fields_for_sealing(ctx.opened, **{**binding, **(run or {})}))
    operator_input = _input_for(ctx.assessment, residual, new_gate, new_budget, opened)
    return dataclasses.replace(
        ctx,
        residual=residual,
        gate=new_gate,
        budget=new_budget,
        opened=opened,
        operator_input=operator_input,
    )


def _forged_residual(ctx: OperatorContext, **changes: Any) -> OperatorContext:
    """The residual changed together with the blocker it projects (so it stays a faithful
    projection), and everything after the assessment rebound to it."""
    blocker = ctx.assessment.blockers[ctx.residual.blocker_index]
    mirrored = {name: changes[name] for name in ("evidence_spans", "role") if name in changes}
    assessment = resealed(ctx.assessment, blockers=(tampered(blocker, **mirrored),))
    residual = resealed(ctx.residual, contract_assessment_id=assessment.assessment_id, **changes)
    rebound = {"contract_assessment_id": assessment.assessment_id}
    return _forged(
        dataclasses.replace(ctx, assessment=assessment),
        residual=residual,
        gate=rebound,
        run=rebound,
    )


def _op(change: Callable[[OperatorContext], Attack]) -> Callable[[Chain], Attack]:
    return lambda chain: change(_context(chain))


def _op_input(**changes: Any) -> Callable[[Chain], Attack]:
    """The operator input re-sealed with ``changes`` (its digest reproduces)."""
    return _op(lambda c: _propose(c, operator_input=resealed(c.operator_input, **changes)))


def _op_input_tampered(**changes: Any) -> Callable[[Chain], Attack]:
    """The operator input altered after sealing (its digest no longer reproduces)."""
    return _op(lambda c: _propose(c, operator_input=tampered(c.operator_input, **changes)))


def _op_forged(**forging: Any) -> Callable[[Chain], Attack]:
    return _op(lambda c: _propose(c, **_forged(c, **forging).arguments()))


def _op_attempt_index(index_of: Callable[[OperatorContext], int]) -> Callable[[Chain], Attack]:
    def build(c: OperatorContext) -> Attack:
        index = index_of(c)
        operator_input = _input_for(c.assessment, c.residual, c.gate, c.budget, c.opened, index)
        return _propose(c, operator_input=operator_input)

    return _op(build)


def _zero_budget(status: ComputeBudgetStatus, reason: str) -> dict[str, Any]:
    return {"status": status, "reason_code": reason, **_ZERO_LIMITS}


def _gate_as(status: SearchGateStatus, reason: GateReason) -> dict[str, Any]:
    return {"status": status, "reason_code": reason.value}


def _depth_zero_run(c: OperatorContext) -> Attack:
    """An allowed budget with ``max_depth = 0`` opens a v2 run lawfully (docs/adr/0004)."""
    budget = resealed(c.budget, max_depth=0)
    search_input = search_input_for(c.gate, budget, CANDIDATE_OPERATOR_SET, V2)
    opened = open_search_run(search_input, c.gate, budget, CANDIDATE_OPERATOR_SET)
    assert type(opened) is OpenedSearchRun, opened
    operator_input = _input_for(c.assessment, c.residual, c.gate, budget, opened)
    return _propose(c, operator_input=operator_input, budget_decision=budget, opened_run=opened)


def _malformed_span(c: OperatorContext) -> Attack:
    first = c.residual.evidence_spans[0]
    broken = tampered(first, text=first.text + "x")
    return _propose(
        c, residual=tampered(c.residual, evidence_spans=(broken,) + c.residual.evidence_spans[1:])
    )


def _cue_not_justified(c: OperatorContext) -> Attack:
    cue = c.chain.frame.cues[0].span
    kept = tuple(span for span in c.residual.evidence_spans if span != cue)
    return _propose(_forged_residual(c, evidence_spans=kept))


def _flipped_frame(c: OperatorContext) -> Attack:
    """Another lawful frame: the same, its one cue pointing the other way."""
    frame = c.chain.frame
    cue = frame.cues[0]
    other = next(d for d in Direction if d is not cue.direction)
    flipped = dataclasses.replace(frame, cues=(dataclasses.replace(cue, direction=other),))
    return _propose(c, frame=flipped)


def _frame_with_float(c: OperatorContext) -> Attack:
    frame = c.chain.frame
    fact = frame.facts[0]
    facts = (tampered(fact, value=float(fact.value)),) + frame.facts[1:]
    return _propose(c, frame=tampered(frame, facts=facts))


def _consistently_opened(c: OperatorContext, manifest: OperatorSetManifest) -> Attack:
    """A run lawfully opened with another manifest, and an input built from that run."""
    search_input = search_input_for(c.gate, c.budget, manifest, V2)
    opened = open_search_run(search_input, c.gate, c.budget, manifest)
    assert type(opened) is OpenedSearchRun, opened
    operator_input = _input_for(c.assessment, c.residual, c.gate, c.budget, opened)
    return _propose(c, operator_input=operator_input, opened_run=opened, operator_set=manifest)


# ------------------------------------------------------------------------------------------
# Replay, answer and recording downstream of one operator result (ADR-0228 §16 rows 10-13)


def _replay_forged_digest(chain: Chain) -> Attack:
    rebuilt = _result(_context(chain)).reconstruction
    forged = tampered(rebuilt, candidate_digest=other_digest(rebuilt.candidate_digest))
    return Attack(
        replay_candidate,
        {"frame": chain.frame, "original_assessment": chain.assessment, "reconstruction": forged},
    )


def _answer(chain: Chain, replays: tuple[object, ...]) -> Attack:
    return Attack(
        decide_answer, {"frame": chain.frame, "assessment": chain.assessment, "replays": replays}
    )


def _answer_after_replay(chain: Chain) -> Attack:
    replay = _replayed(chain)
    assert not (
        type(replay) is ReplayResult
        and replay.disposition is ReplayDisposition.CONTRACT_AND_PROOF_CLOSED
    ), replay
    return _answer(chain, (replay,))


def _record_result(chain: Chain, status: CandidateReplayStatus | None = None) -> Attack:
    ctx = _context(chain)
    attempt = _result(ctx).candidate_attempt
    if status is not None:
        attempt = _with_status(attempt, status)
    return _record(chain, CANDIDATE_OPERATOR_SET, (attempt,), opened=ctx.opened)


# ------------------------------------------------------------------------------------------
# Hostile values (ARCHITECTURE §2): in a chain record's JSON form, and in its raw bytes


class _Text(str):
    """A ``str`` subclass: the profile refuses subclasses, which may override what
    ``json.dumps`` reads."""


class _Small(enum.IntEnum):
    ONE = 1


def _form(chain: Chain, **changes: object) -> dict[Any, object]:
    """The budget's JSON form (a fresh copy) with ``changes``."""
    return {**chain.budget.to_json(), **changes}


def _nested(value: object, depth: int) -> object:
    for _ in range(depth):
        value = [value]
    return value


def _cycle(chain: Chain) -> dict[str, object]:
    spans: list[object] = list(chain.budget.to_json()["evidence_spans"])
    spans.append(spans)
    return _form(chain, evidence_spans=spans)


def _wide(chain: Chain) -> dict[str, object]:
    form = chain.search_input.to_json()
    form["residual_ids"] = form["residual_ids"] * MAX_NODES
    return form


def _canonical_bytes(chain: Chain) -> bytes:
    return canonical_json(chain.budget.to_json())


def _dumped(form: object, **options: Any) -> bytes:
    keywords = {"sort_keys": True, "separators": (",", ":"), "ensure_ascii": False, **options}
    return json.dumps(form, **keywords).encode("utf-8")


def _spliced(data: bytes, field: str, raw: bytes) -> bytes:
    """``data`` with the value of the top-level text field ``field`` replaced by ``raw``."""
    pattern = re.compile(b'"' + field.encode() + b'":"(?:[^"\\\\]|\\\\.)*"')
    found = pattern.findall(data)
    assert len(found) == 1, (field, found)
    return pattern.sub(lambda _: b'"' + field.encode() + b'":' + raw, data)


def _int_field(data: bytes, field: str, raw: bytes) -> bytes:
    """``data`` with the first value of the int field ``field`` replaced by ``raw``: inside
    a JSON string every quote is escaped, so ``"field":digits`` can only be a key."""
    pattern = re.compile(b'"' + field.encode() + b'":-?[0-9]+')
    assert pattern.search(data) is not None, field
    return pattern.sub(lambda _: b'"' + field.encode() + b'":' + raw, data, count=1)


def _trace_bytes(chain: Chain) -> bytes:
    trace = practice_case(chain.frame)
    assert type(trace) is SealedPracticeTrace, trace
    return sealed_trace_bytes(trace)


def _load(data_of: Callable[[bytes], bytes]) -> Callable[[Chain], Attack]:
    return lambda c: Attack(load_sealed_trace, {"data": data_of(_trace_bytes(c))})


def _forged_trace_id(data: bytes) -> bytes:
    found = re.search(b'"trace_id":"([0-9a-f]{64})"', data)
    assert found is not None
    trace_id = found.group(1).decode()
    return data.replace(trace_id.encode(), other_digest(trace_id).encode())


def _inspect(record_of: Callable[[Chain], object], record_type: type) -> Callable[[Chain], Attack]:
    return lambda c: Attack(inspect_record, {"value": record_of(c), "record_type": record_type})


def _span_with(**changes: object) -> Callable[[Chain], Attack]:
    def build(chain: Chain) -> Attack:
        span = chain.gate.evidence_spans[0]
        arguments = {
            "text": span.text,
            "start": span.start,
            "end": span.end,
            "sentence_index": span.sentence_index,
            **changes,
        }
        return Attack(SourceSpan, arguments)

    return build


# ------------------------------------------------------------------------------------------
# The catalogue

_OPEN = "search_run.open_search_run"
_RECORD = "search_run.record_attempts"
_PROPOSE = "operators.propose_candidate"
_ENCODE = "identity.canonical_json"
_DECODE = "identity.decode_canonical"
_INSPECT = "identity.inspect_record"
_LOAD = "trace.load_sealed_trace"

S16 = "ADR-0228 §16 row {}"
S9 = "ADR-0228 §9 check {}"
S17 = "ADR-0231 §17 row {}"
S73 = "ADR-0231 §7.3 item {}"
HASHABLE = "ARCHITECTURE §2 hashable values"
LOADING = "ARCHITECTURE §2 loading a persisted record"


def _entry(
    id: str,
    stage: str,
    clause: str,
    comment: str,
    expected: Expected,
    valid_chains: Callable[[], st.SearchStrategy[Chain]],
    build: Callable[[Chain], Attack],
    *also: str,
) -> Corruption:
    return Corruption(id, stage, clause, comment, expected, valid_chains, build, also)


def _s16(row: int) -> str:
    return S16.format(row)


def _s9(check: int) -> str:
    return S9.format(check)


def _s17(row: int) -> str:
    return S17.format(row)


def _s73(item: int) -> str:
    return S73.format(item)


_RUN_ENTRIES = (
    # §16 row 1 / §9 check 9: a denied gate never starts a run.
    *(
        _entry(
            f"ADR-0228/16.1-gate-{label}",
            _OPEN,
            _s16(1),
            f"the gate's own {label.replace('-', ' ')} decision is handed to the run",
            _run_refused(D.BLOCKED_BY_GATE, R.GATE_NOT_ELIGIBLE),
            _denied_chains(reason),
            _open,
            _s9(9),
        )
        for label, reason in (
            ("ineligible-multiple-residuals", GateReason.MULTIPLE_RESIDUALS),
            ("ineligible-unclassified-residual", GateReason.UNCLASSIFIED_RESIDUAL),
            ("blocked-assessment-runnable", GateReason.ASSESSMENT_RUNNABLE),
            ("blocked-residual-without-evidence", GateReason.RESIDUAL_WITHOUT_EVIDENCE),
        )
    ),
    _entry(
        "ADR-0228/16.1-gate-unassessable",
        _OPEN,
        _s16(1),
        "residuals withheld from the gate: its unassessable answer, and the budget's, go in",
        _run_refused(D.BLOCKED_BY_GATE, R.GATE_NOT_ELIGIBLE),
        eligible_chains,
        _unassessable_gate,
        _s9(9),
    ),
    # §16 row 2 / §9 checks 1-2: a blocked, zero or unassessable budget.
    *(
        _entry(
            f"ADR-0228/16.2-budget-{status.value.lower().removeprefix('budget_')}",
            _OPEN,
            _s16(2),
            f"the budget re-sealed as {status.value} with every limit zero, the input rebound",
            _run_refused(D.BLOCKED_BY_BUDGET, R.BUDGET_NOT_ALLOWED),
            eligible_chains,
            _budget_status(status, reason),
            _s9(1),
        )
        for status, reason in (
            (ComputeBudgetStatus.BUDGET_BLOCKED, "budget_blocked_gate_ineligible"),
            (ComputeBudgetStatus.BUDGET_ZERO, "budget_zero_test"),
            (ComputeBudgetStatus.BUDGET_UNASSESSABLE, "budget_unassessable_unknown_reason_code"),
        )
    ),
    *(
        _entry(
            f"ADR-0228/16.2-allowed-budget-{field.replace('_', '-')}-zero",
            _OPEN,
            _s9(2),
            f"an allowed budget whose {field} is zero",
            _run_refused(D.BLOCKED_BY_BUDGET, R.BUDGET_CEILING_ZERO),
            eligible_chains,
            lambda c, field=field: _with_budget(c, resealed(c.budget, **{field: 0})),
            _s16(2),
        )
        for field in ("max_candidates", "max_steps")
    ),
    # §16 row 3 / §9 checks 5-7: gate and budget must reproduce and name each other.
    _entry(
        "ADR-0228/16.3-budget-names-another-gate",
        _OPEN,
        _s16(3),
        "the budget re-sealed naming another gate decision",
        _run_refused(D.INVALID_INPUT, R.BUDGET_GATE_DECISION_MISMATCH),
        eligible_chains,
        lambda c: _with_budget(
            c, resealed(c.budget, gate_decision_id=other_digest(c.gate.decision_id))
        ),
        _s9(6),
    ),
    _entry(
        "ADR-0228/16.3-budget-names-another-gate-policy",
        _OPEN,
        _s16(3),
        "the budget re-sealed naming another gate policy version",
        _run_refused(D.INVALID_INPUT, R.BUDGET_GATE_POLICY_MISMATCH),
        eligible_chains,
        lambda c: _with_budget(c, resealed(c.budget, gate_policy_version="search_gate.v2")),
        _s9(7),
    ),
    _entry(
        "ADR-0228/16.3-budget-names-another-gate-input",
        _OPEN,
        _s16(3),
        "the budget re-sealed naming another gate input digest",
        _run_refused(D.INVALID_INPUT, R.BUDGET_GATE_INPUT_MISMATCH),
        eligible_chains,
        lambda c: _with_budget(
            c, resealed(c.budget, gate_input_digest=other_digest(c.gate.input_digest))
        ),
        _s9(7),
    ),
    _entry(
        "ADR-0228/16.3-budget-id-does-not-reproduce",
        _OPEN,
        _s16(3),
        "a budget limit changed after sealing: budget_id no longer reproduces",
        _run_refused(D.INVALID_INPUT, R.BUDGET_ID_MISMATCH),
        eligible_chains,
        lambda c: _open(c, budget_decision=tampered(c.budget, max_steps=c.budget.max_steps + 1)),
        _s9(5),
    ),
    _entry(
        "ADR-0228/16.3-gate-id-does-not-reproduce",
        _OPEN,
        _s16(3),
        "the gate's input digest changed after sealing",
        _run_refused(D.INVALID_INPUT, R.GATE_IDENTITY_MISMATCH),
        eligible_chains,
        lambda c: _open(
            c, gate_decision=tampered(c.gate, input_digest=other_digest(c.gate.input_digest))
        ),
    ),
    _entry(
        "ADR-0228/16.3-input-names-another-gate",
        _OPEN,
        _s16(3),
        "the run input names another gate decision",
        _run_refused(D.INVALID_INPUT, R.INPUT_GATE_MISMATCH),
        eligible_chains,
        lambda c: _with_input(c, gate_decision_id=other_digest(c.gate.decision_id)),
    ),
    _entry(
        "ADR-0228/16.3-input-names-another-gate-input",
        _OPEN,
        _s16(3),
        "the run input names another gate input digest",
        _run_refused(D.INVALID_INPUT, R.INPUT_GATE_MISMATCH),
        eligible_chains,
        lambda c: _with_input(c, gate_input_digest=other_digest(c.gate.input_digest)),
    ),
    _entry(
        "ADR-0228/16.3-input-names-another-budget",
        _OPEN,
        _s16(3),
        "the run input names another budget",
        _run_refused(D.INVALID_INPUT, R.INPUT_BUDGET_MISMATCH),
        eligible_chains,
        lambda c: _with_input(c, budget_id=other_digest(c.budget.budget_id)),
    ),
    # §16 row 4 / §9 check 8: frame, assessment and residual identities.
    _entry(
        "ADR-0228/16.4-input-names-another-frame",
        _OPEN,
        _s16(4),
        "the run input names another problem frame",
        _run_refused(D.INVALID_INPUT, R.PROBLEM_FRAME_MISMATCH),
        eligible_chains,
        lambda c: _with_input(
            c, problem_frame_digest=other_digest(c.search_input.problem_frame_digest)
        ),
    ),
    _entry(
        "ADR-0228/16.4-input-names-another-assessment",
        _OPEN,
        _s16(4),
        "the run input names another contract assessment",
        _run_refused(D.INVALID_INPUT, R.ASSESSMENT_MISMATCH),
        eligible_chains,
        lambda c: _with_input(
            c, contract_assessment_id=other_digest(c.search_input.contract_assessment_id)
        ),
    ),
    *(
        _entry(
            f"ADR-0228/16.4-residual-ids-{label}",
            _OPEN,
            _s16(4),
            f"the run input's residual sequence {label} (ADR-0228 §6: never by the run)",
            _run_refused(D.INVALID_INPUT, R.RESIDUAL_IDS_MISMATCH),
            eligible_chains,
            lambda c, change=change: _with_input(
                c, residual_ids=change(c.search_input.residual_ids)
            ),
            _s9(8),
        )
        for label, change in (
            ("extended", lambda ids: ids + (other_digest(ids[0]),)),
            ("duplicated", lambda ids: ids + ids),
            ("dropped", lambda ids: ids[1:]),
            ("replaced", lambda ids: (other_digest(ids[0]),) + ids[1:]),
        )
    ),
    # §16 row 5 / §9 check 10: unsupported versions.
    _entry(
        "ADR-0228/16.5-schema-version-unsupported",
        _OPEN,
        _s16(5),
        "the run input asks for another run schema",
        _run_refused(D.INVALID_INPUT, R.SCHEMA_VERSION_UNSUPPORTED),
        eligible_chains,
        lambda c: _with_input(c, schema_version="geometric_search_run_schema.v2"),
    ),
    _entry(
        "ADR-0228/16.5-gate-policy-version-unsupported",
        _OPEN,
        _s16(5),
        "the gate re-sealed under a policy version the run does not support",
        _run_refused(D.INVALID_INPUT, R.GATE_POLICY_VERSION_UNSUPPORTED),
        eligible_chains,
        lambda c: _open(c, gate_decision=resealed(c.gate, policy_version="search_gate.v2")),
    ),
    _entry(
        "ADR-0228/16.5-budget-policy-version-unsupported",
        _OPEN,
        _s16(5),
        "the budget re-sealed under a policy version the run does not support",
        _run_refused(D.INVALID_INPUT, R.BUDGET_POLICY_VERSION_UNSUPPORTED),
        eligible_chains,
        lambda c: _open(c, budget_decision=resealed(c.budget, policy_version="compute_budget.v2")),
        _s9(10),
    ),
    _entry(
        "ADR-0228/16.5-operator-set-version-unsupported",
        _OPEN,
        _s16(5),
        "an empty operator set under a version the run does not support",
        _run_refused(D.INVALID_INPUT, R.OPERATOR_SET_VERSION_UNSUPPORTED),
        eligible_chains,
        lambda c: _open(c, operator_set=OperatorSetManifest("operator_set.other.v1", ())),
    ),
    _entry(
        "ADR-0228/16.5-run-policy-version-unsupported",
        _OPEN,
        _s16(5),
        "the run input asks for a run policy version that does not exist",
        _run_refused(D.INVALID_INPUT, R.RUN_POLICY_VERSION_UNSUPPORTED),
        eligible_chains,
        lambda c: _with_input(c, run_policy_version="geometric_search_run.v9"),
        _s9(10),
    ),
    _entry(
        "ADR-0228/16.5-run-policy-version-not-text",
        _OPEN,
        _s16(5),
        "the run input's policy version is an int, never compared as a version",
        _run_refused(D.INVALID_INPUT, R.RUN_POLICY_VERSION_UNSUPPORTED),
        eligible_chains,
        lambda c: _with_input(c, run_policy_version=1),
        _s9(10),
        HASHABLE,
    ),
    # §16 row 6 / §9 check 3: negative limits.
    *(
        _entry(
            f"ADR-0228/16.6-negative-{field.replace('_', '-')}",
            _OPEN,
            _s16(6),
            f"the budget re-sealed with a negative {field}",
            _run_refused(D.INVALID_INPUT, R.BUDGET_LIMIT_NEGATIVE),
            eligible_chains,
            lambda c, field=field: _with_budget(c, resealed(c.budget, **{field: -1})),
            _s9(3),
        )
        for field in ("max_candidates", "max_depth", "max_steps", "max_parallelism")
    ),
    _entry(
        "ADR-0228/16.6-most-negative-limit",
        _OPEN,
        _s16(6),
        "a limit of -(2**53 - 1), the most negative safe int",
        _run_refused(D.INVALID_INPUT, R.BUDGET_LIMIT_NEGATIVE),
        eligible_chains,
        lambda c: _with_budget(c, resealed(c.budget, max_steps=-MAX_SAFE_INT)),
        _s9(3),
    ),
    # §16 row 7 / §9 check 4 / §11: v1 is serial.
    *(
        _entry(
            f"ADR-0228/16.7-parallelism-{value}",
            _OPEN,
            _s16(7),
            f"an allowed budget re-sealed with max_parallelism {value}",
            _run_refused(D.INVALID_INPUT, R.BUDGET_PARALLELISM_NOT_ONE),
            eligible_chains,
            lambda c, value=value: _with_budget(c, resealed(c.budget, max_parallelism=value)),
            _s9(4),
        )
        for value in (0, 2, 64)
    ),
    # §9 check 11: any required identity malformed or absent.
    *(
        _entry(
            f"ADR-0228/9.11-{argument.replace('_', '-')}-absent",
            _OPEN,
            _s9(11),
            f"no {argument} at all",
            _run_refused(D.NOT_STARTED, R.REQUIRED_RECORD_ABSENT),
            eligible_chains,
            lambda c, argument=argument: _open(c, **{argument: None}),
        )
        for argument in ("search_input", "gate_decision", "budget_decision", "operator_set")
    ),
    _entry(
        "ADR-0228/9.11-input-digest-malformed",
        _OPEN,
        _s9(11),
        "the run input's budget id is not a digest",
        _run_refused(D.INVALID_INPUT, R.INPUT_MALFORMED),
        eligible_chains,
        lambda c: _with_input(c, budget_id=c.budget.budget_id.upper()),
    ),
    _entry(
        "ADR-0228/9.11-input-residual-ids-list",
        _OPEN,
        _s9(11),
        "the run input's residual ids as a list, not a tuple",
        _run_refused(D.INVALID_INPUT, R.INPUT_MALFORMED),
        eligible_chains,
        lambda c: _with_input(c, residual_ids=list(c.search_input.residual_ids)),
    ),
    _entry(
        "ADR-0228/9.11-input-of-another-type",
        _OPEN,
        _s9(11),
        "the gate decision handed over as the run input",
        _run_refused(D.INVALID_INPUT, R.INPUT_MALFORMED),
        eligible_chains,
        lambda c: _open(c, search_input=c.gate),
    ),
    _entry(
        "ADR-0228/9.11-gate-status-a-bare-string",
        _OPEN,
        _s9(11),
        "the gate's status replaced by the string 'ELIGIBLE'",
        _run_refused(D.INVALID_INPUT, R.GATE_MALFORMED),
        eligible_chains,
        lambda c: _open(c, gate_decision=tampered(c.gate, status="ELIGIBLE")),
    ),
    _entry(
        "ADR-0228/9.11-budget-of-another-type",
        _OPEN,
        _s9(11),
        "the gate decision handed over as the budget",
        _run_refused(D.INVALID_INPUT, R.BUDGET_MALFORMED),
        eligible_chains,
        lambda c: _open(c, budget_decision=c.gate),
    ),
    # ADR-0228 §4, §6, §18: the operator set is closed, versioned and empty under v1.
    _entry(
        "ADR-0228/4-operator-set-not-authorized-under-v1",
        _OPEN,
        "ADR-0228 §4",
        "a one-row operator set bound by a v1 run input: v1 is the inert shell only",
        _run_refused(D.INVALID_INPUT, R.OPERATOR_SET_NOT_AUTHORIZED),
        eligible_chains,
        lambda c: _open(
            c,
            search_input=search_input_for(c.gate, c.budget, _manifest()),
            operator_set=_manifest(),
        ),
        "ADR-0228 §18",
    ),
    _entry(
        "ADR-0228/6-operator-set-operators-a-list",
        _OPEN,
        "ADR-0228 §6",
        "the operator set's rows as a list: not a closed, ordered allowlist",
        _run_refused(D.INVALID_INPUT, R.OPERATOR_SET_MALFORMED),
        eligible_chains,
        lambda c: _open(c, operator_set=tampered(_manifest(), operators=[])),
    ),
    _entry(
        "ADR-0228/6-empty-version-over-a-full-set",
        _OPEN,
        "ADR-0228 §6",
        "a one-row set that claims the empty set's version",
        _run_refused(D.INVALID_INPUT, R.OPERATOR_SET_MALFORMED),
        eligible_chains,
        lambda c: _open(
            c, operator_set=tampered(_manifest(), operator_set_version="operator_set.empty.v1")
        ),
    ),
    _entry(
        "ADR-0228/6-input-names-another-operator-set",
        _OPEN,
        "ADR-0228 §6",
        "the run input names another operator set id",
        _run_refused(D.INVALID_INPUT, R.OPERATOR_SET_MISMATCH),
        eligible_chains,
        lambda c: _with_input(c, operator_set_id=other_digest(c.search_input.operator_set_id)),
    ),
)


_RECORD_ENTRIES = (
    # §16 row 8 / §13: an empty operator set is deterministic exhaustion, nothing consumed.
    _entry(
        "ADR-0228/16.8-empty-operator-set-v1",
        _OPEN,
        _s16(8),
        "the valid v1 chain itself: its operator set is empty",
        _run(D.EXHAUSTED_NO_CANDIDATE, RunExhaustionCode.OPERATOR_SET_EMPTY),
        eligible_chains,
        _open,
        "ADR-0228 §13",
    ),
    _entry(
        "ADR-0228/16.8-empty-operator-set-v2",
        _RECORD,
        _s16(8),
        "a v2 run opened over the empty set, recorded with no attempt",
        _run(D.EXHAUSTED_NO_CANDIDATE, RunExhaustionCode.OPERATOR_SET_EMPTY),
        eligible_chains,
        _empty_set_v2,
        "ADR-0228 §13",
    ),
    # §16 row 9 / §9: stop before the attempt whose charge would not fit; keep the others.
    _entry(
        "ADR-0228/16.9-max-candidates",
        _RECORD,
        _s16(9),
        "one attempt more than max_candidates, each charged one step",
        _run(D.CANDIDATE_REPLAY_PENDING, RunExhaustionCode.MAX_CANDIDATES_REACHED),
        eligible_chains,
        _beyond_candidates,
        "ADR-0228 §13",
    ),
    _entry(
        "ADR-0228/16.9-max-steps",
        _RECORD,
        _s16(9),
        "three attempts each charged just over half of max_steps",
        _run(D.CANDIDATE_REPLAY_PENDING, RunExhaustionCode.MAX_STEPS_REACHED),
        eligible_chains,
        _beyond_steps,
        "ADR-0228 §13",
    ),
    _entry(
        "ADR-0228/16.9-max-depth",
        _RECORD,
        _s16(9),
        "a lineage one level deeper than max_depth",
        _run(D.CANDIDATE_REPLAY_PENDING, RunExhaustionCode.MAX_DEPTH_REACHED),
        eligible_chains,
        _beyond_depth,
        "ADR-0228 §13",
    ),
    _entry(
        "ADR-0228/16.9-no-skipping-past-a-stop",
        _RECORD,
        _s16(9),
        "after an attempt that does not fit comes one that would: the run still stops",
        _run(D.CANDIDATE_REPLAY_PENDING, RunExhaustionCode.MAX_STEPS_REACHED),
        eligible_chains,
        _skip_past_a_stop,
        "ADR-0228 §13",
    ),
    _entry(
        "ADR-0228/16.9-first-attempt-does-not-fit",
        _RECORD,
        _s16(9),
        "a single attempt charged one step more than max_steps",
        _run(D.EXHAUSTED_NO_CANDIDATE, RunExhaustionCode.MAX_STEPS_REACHED),
        eligible_chains,
        _first_does_not_fit,
        "ADR-0228 §13",
    ),
    # §16 row 10: an operator declaration or candidate that cannot be reproduced.
    _entry(
        "ADR-0228/16.10-operator-undeclared",
        _RECORD,
        _s16(10),
        "an attempt by an operator the manifest does not declare",
        _run_refused(D.INVALID_INPUT, R.ATTEMPT_OPERATOR_UNDECLARED),
        eligible_chains,
        lambda c: _record(c, _manifest(), (_attempt(_row("other_op"), 0, 0),)),
    ),
    _entry(
        "ADR-0228/16.10-charge-undeclared",
        _RECORD,
        _s16(10),
        "an attempt charged two steps by an operator declared at one",
        _run_refused(D.INVALID_INPUT, R.ATTEMPT_CHARGE_UNDECLARED),
        eligible_chains,
        lambda c: _record(c, _manifest(), (_attempt(_row(steps=2), 0, 0),)),
    ),
    _entry(
        "ADR-0228/16.10-attempts-beyond-declaration",
        _RECORD,
        _s16(10),
        "two attempts by an operator declared at one per run",
        _run_refused(D.INVALID_INPUT, R.ATTEMPT_LIMIT_EXCEEDED),
        eligible_chains,
        lambda c: _record(c, _manifest(), _serial(_row(), 2)),
    ),
    _entry(
        "ADR-0228/16.10-attempt-order-invalid",
        _RECORD,
        _s16(10),
        "a first attempt that claims index 1",
        _run_refused(D.INVALID_INPUT, R.ATTEMPT_ORDER_INVALID),
        eligible_chains,
        lambda c: _record(c, _manifest(), (_attempt(_row(), 1, 0),)),
        "ADR-0228 §10",
    ),
    _entry(
        "ADR-0228/16.10-attempt-lineage-invalid",
        _RECORD,
        _s16(10),
        "a depth-2 attempt whose parent was never recorded",
        _run_refused(D.INVALID_INPUT, R.ATTEMPT_LINEAGE_INVALID),
        eligible_chains,
        lambda c: _record(
            c,
            _manifest(_row("root_op"), _row("child_op", depth=2)),
            (_attempt(_row("child_op", depth=2), 0, 0, parent=_attempt(_row("root_op"), 0, 0)),),
        ),
        "ADR-0228 §10",
    ),
    _entry(
        "ADR-0228/16.10-attempts-a-list",
        _RECORD,
        _s16(10),
        "the attempts handed over as a list",
        _run_refused(D.INVALID_INPUT, R.ATTEMPTS_MALFORMED),
        eligible_chains,
        lambda c: _record(c, _manifest(), [_attempt(_row(), 0, 0)]),
    ),
    _entry(
        "ADR-0228/16.10-opened-run-forged",
        _RECORD,
        _s16(10),
        "the opened run's ceiling widened after sealing",
        _run_refused(D.INVALID_INPUT, R.OPENED_RUN_MALFORMED),
        eligible_chains,
        lambda c: _record(
            c,
            _manifest(),
            (),
            opened=tampered(_opened(c, _manifest()), max_candidates=c.budget.max_candidates + 1),
        ),
        "ADR-0228 §10",
    ),
    _entry(
        "ADR-0228/16.10-recorded-with-another-manifest",
        _RECORD,
        _s16(10),
        "attempts recorded under another manifest than the run opened with",
        _run_refused(D.INVALID_INPUT, R.OPERATOR_SET_MISMATCH),
        eligible_chains,
        lambda c: _record(c, _manifest(), (), recorded_with=_manifest(_row(attempts=2))),
    ),
    _entry(
        "ADR-0228/16.10-candidate-digest-does-not-reproduce",
        "replay.replay_candidate",
        _s16(10),
        "the operator's reconstruction with its candidate digest forged",
        Expected(ReplayRefusal, (ReplayRefusalReason.RECONSTRUCTION_MALFORMED,)),
        operator_chains,
        _replay_forged_digest,
    ),
    # §16 row 11: replay missing -> pending; the original refusal stands.
    _entry(
        "ADR-0228/16.11-run-without-replay-stays-pending",
        _RECORD,
        _s16(11),
        "the operator's attempt recorded, no replay run",
        _run(D.CANDIDATE_REPLAY_PENDING, None),
        operator_chains,
        _record_result,
    ),
    _entry(
        "ADR-0228/16.11-answer-without-replay",
        "answer.decide_answer",
        _s16(11),
        "an answer asked for with a candidate proposed but never replayed",
        Expected(AnswerRefusal, (AnswerRefusalReason.ORIGINAL_REFUSAL_STANDS,)),
        operator_chains,
        lambda c: _answer(c, ()),
    ),
    # §16 row 12: replay refuses every candidate -> the original refusal stands.
    _entry(
        "ADR-0228/16.12-answer-after-replay-refuses",
        "answer.decide_answer",
        _s16(12),
        "an answer asked for over the one replay, which did not close",
        Expected(AnswerRefusal, (AnswerRefusalReason.ORIGINAL_REFUSAL_STANDS,)),
        lambda: operator_chains().filter(lambda c: not _replay_closes(c)),
        _answer_after_replay,
    ),
    _entry(
        "ADR-0228/16.12-refused-attempt-not-recordable",
        _RECORD,
        _s16(12),
        "the operator's attempt re-sealed as replay_refused and offered to the run",
        _run_refused(D.INVALID_INPUT, R.ATTEMPT_NOT_PENDING),
        operator_chains,
        lambda c: _record_result(c, CandidateReplayStatus.REPLAY_REFUSED),
        "ADR-0228 §12",
    ),
    # §16 row 13: replay closure is recorded externally; the run emits no answer.
    _entry(
        "ADR-0228/16.13-closed-attempt-not-recordable",
        _RECORD,
        _s16(13),
        "a candidate whose replay closes: its attempt re-sealed as replay_closed",
        _run_refused(D.INVALID_INPUT, R.ATTEMPT_NOT_PENDING),
        lambda: operator_chains().filter(_replay_closes),
        lambda c: _record_result(c, CandidateReplayStatus.REPLAY_CLOSED),
        "ADR-0228 §12",
    ),
    _entry(
        "ADR-0228/16.13-run-stays-pending-after-closure",
        _RECORD,
        _s16(13),
        "a candidate whose replay closes: the run records it pending, and no answer",
        _run(D.CANDIDATE_REPLAY_PENDING, None),
        lambda: operator_chains().filter(_replay_closes),
        _record_result,
        "ADR-0228 §12",
    ),
)


def _operator(
    id: str,
    clause: str,
    comment: str,
    reason: OperatorRefusalReason,
    build: Callable[[Chain], Attack],
    *also: str,
    valid_chains: Callable[[], st.SearchStrategy[Chain]] = operator_chains,
) -> Corruption:
    return _entry(
        f"ADR-0231/{id}",
        _PROPOSE,
        clause,
        comment,
        _operator_refused(reason),
        valid_chains,
        build,
        *also,
    )


_OPERATOR_ENTRIES = (
    _operator(
        "17.1-policy-widened",
        _s17(1),
        "a policy allowing two attempts per run",
        O.POLICY_UNSUPPORTED,
        _op(
            lambda c: _propose(
                c,
                policy=dataclasses.replace(MISSING_ROLE_CANDIDATE_POLICY, max_attempts_per_run=2),
            )
        ),
        _s73(1),
    ),
    _operator(
        "17.1-policy-codes-widened",
        _s17(1),
        "a policy that also accepts initial_unbound",
        O.POLICY_UNSUPPORTED,
        _op(
            lambda c: _propose(
                c,
                policy=dataclasses.replace(
                    MISSING_ROLE_CANDIDATE_POLICY,
                    allowed_residual_codes=("direction_unbound", "initial_unbound"),
                ),
            )
        ),
        _s73(1),
    ),
    _operator(
        "17.1-input-policy-version",
        _s17(1),
        "the input asks for candidate_operator.v2",
        O.POLICY_UNSUPPORTED,
        _op_input(operator_policy_version="candidate_operator.v2"),
        _s73(1),
    ),
    _operator(
        "17.2-input-operator-name",
        _s17(2),
        "the input names another operator",
        O.OPERATOR_UNSUPPORTED,
        _op_input(operator_name="other_candidate"),
        _s73(2),
    ),
    _operator(
        "17.2-input-operator-version",
        _s17(2),
        "the input names missing_role_candidate.v2",
        O.OPERATOR_UNSUPPORTED,
        _op_input(operator_version="missing_role_candidate.v2"),
        _s73(3),
    ),
    _operator(
        "17.3-residual-of-another-kind",
        _s17(3),
        "a lawful chain for another eligible residual kind",
        O.RESIDUAL_KIND_UNSUPPORTED,
        _op(_propose),
        _s73(4),
        valid_chains=_other_kind_chains,
    ),
    _operator(
        "17.3-input-claims-another-kind",
        _s17(3),
        "the input re-sealed claiming missing_relation",
        O.RESIDUAL_KIND_UNSUPPORTED,
        _op_input(residual_kind="missing_relation"),
        _s73(4),
    ),
    _operator(
        "17.4-residual-code-not-direction",
        _s17(4),
        "a lawful missing_role chain whose code is initial_unbound or delta_unbound",
        O.RESIDUAL_CODE_UNSUPPORTED,
        _op(_propose),
        _s73(6),
        valid_chains=_other_code_chains,
    ),
    _operator(
        "17.5-gate-names-another-organ",
        _s17(5),
        "the gate forged naming another organ, everything after rebound",
        O.CANDIDATE_ORGAN_UNSUPPORTED,
        _op_forged(gate={"candidate_organ": "other_organ"}),
        _s73(5),
    ),
    *(
        _operator(
            f"17.6-gate-{status.value.lower()}",
            _s17(6),
            f"the gate forged {status.value}, everything after rebound",
            O.GATE_NOT_ELIGIBLE,
            _op_forged(gate=_gate_as(status, reason)),
            _s73(7),
        )
        for status, reason in (
            (SearchGateStatus.INELIGIBLE, GateReason.MULTIPLE_RESIDUALS),
            (SearchGateStatus.BLOCKED, GateReason.RESIDUAL_WITHOUT_EVIDENCE),
            (SearchGateStatus.UNASSESSABLE, GateReason.NO_RESIDUAL),
        )
    ),
    _operator(
        "17.6-gate-ineligible-budget-decided",
        _s17(6),
        "an ineligible forged gate with the budget stage's own answer to it",
        O.GATE_NOT_ELIGIBLE,
        _op_forged(
            gate=_gate_as(SearchGateStatus.INELIGIBLE, GateReason.MULTIPLE_RESIDUALS),
            decide_budget=True,
        ),
        _s73(7),
    ),
    _operator(
        "17.6-gate-eligible-for-another-kind",
        _s17(6),
        "an eligible gate whose reason is eligible_missing_relation",
        O.GATE_NOT_ELIGIBLE,
        _op_forged(gate={"reason_code": GateReason.ELIGIBLE_MISSING_RELATION.value}),
        _s73(8),
    ),
    *(
        _operator(
            f"17.7-budget-{status.value.lower().removeprefix('budget_')}",
            _s17(7),
            f"the budget forged {status.value} with zero limits, everything after rebound",
            O.BUDGET_NOT_ALLOWED,
            _op_forged(budget=_zero_budget(status, reason)),
            _s73(9),
        )
        for status, reason in (
            (ComputeBudgetStatus.BUDGET_BLOCKED, "budget_blocked_gate_ineligible"),
            (ComputeBudgetStatus.BUDGET_ZERO, "budget_zero_test"),
            (ComputeBudgetStatus.BUDGET_UNASSESSABLE, "budget_unassessable_unknown_reason_code"),
        )
    ),
    _operator(
        "17.7-budget-allowed-for-another-kind",
        _s17(7),
        "an allowed budget whose reason is budget_allowed_missing_relation",
        O.BUDGET_NOT_ALLOWED,
        _op_forged(budget={"reason_code": "budget_allowed_missing_relation"}),
        _s73(10),
    ),
    _operator(
        "17.8-input-names-another-run",
        _s17(8),
        "the input re-sealed naming another run",
        O.IDENTITY_MISMATCH,
        _op(
            lambda c: _propose(
                c,
                operator_input=resealed(
                    c.operator_input, geometric_search_run_id=other_digest(c.opened.run_id)
                ),
            )
        ),
    ),
    _operator(
        "17.8-run-resealed-not-rebound",
        _s17(8),
        "the run re-sealed naming another budget, the input still naming the old run",
        O.IDENTITY_MISMATCH,
        _op(
            lambda c: _propose(
                c, opened_run=resealed(c.opened, budget_id=other_digest(c.opened.budget_id))
            )
        ),
    ),
    _operator(
        "17.8-run-names-another-frame",
        _s17(8),
        "the run forged naming another problem frame",
        O.IDENTITY_MISMATCH,
        _op(
            lambda c: _propose(
                _forged(
                    c, run={"problem_frame_digest": other_digest(c.opened.problem_frame_digest)}
                )
            )
        ),
    ),
    _operator(
        "17.8-run-names-another-gate",
        _s17(8),
        "the run forged naming another gate decision",
        O.RUN_MISMATCH,
        _op(
            lambda c: _propose(
                _forged(c, run={"gate_decision_id": other_digest(c.gate.decision_id)})
            )
        ),
        _s73(12),
    ),
    _operator(
        "17.9-run-names-another-budget",
        _s17(9),
        "the run forged naming another budget",
        O.RUN_MISMATCH,
        _op(lambda c: _propose(_forged(c, run={"budget_id": other_digest(c.budget.budget_id)}))),
        _s73(13),
    ),
    _operator(
        "17.10-budget-names-another-gate",
        _s17(10),
        "the budget forged naming another gate decision",
        O.GATE_BUDGET_MISMATCH,
        _op(
            lambda c: _propose(
                _forged(c, budget={"gate_decision_id": other_digest(c.gate.decision_id)})
            )
        ),
        _s73(11),
    ),
    _operator(
        "17.11-residual-without-role",
        _s17(11),
        "the residual (and its blocker) forged without a role",
        O.RESIDUAL_FIELD_MISSING,
        _op(lambda c: _propose(_forged_residual(c, role=None))),
    ),
    _operator(
        "17.11-residual-without-evidence",
        _s17(11),
        "the residual (and its blocker) forged without evidence spans",
        O.RESIDUAL_FIELD_MISSING,
        _op(lambda c: _propose(_forged_residual(c, evidence_spans=()))),
    ),
    _operator(
        "17.12-typed-cue-missing",
        _s17(12),
        "a lawful chain whose frame holds no grounded cue",
        O.CUE_MISSING,
        _op(_propose),
        valid_chains=lambda: operator_chains(cue_count=0),
    ),
    _operator(
        "17.12-typed-cue-ambiguous",
        _s17(12),
        "a lawful chain whose frame holds two or three grounded cues",
        O.CUE_AMBIGUOUS,
        _op(_propose),
        valid_chains=lambda: st.integers(2, 3).flatmap(lambda n: operator_chains(cue_count=n)),
    ),
    _operator(
        "17.12-typed-cue-not-justified",
        _s17(12),
        "the residual (and its blocker) forged without the cue's span",
        O.CUE_NOT_JUSTIFIED,
        _op(_cue_not_justified),
        "ADR-0231 §13",
        valid_chains=lambda: operator_chains().filter(_cue_span_is_not_all_evidence),
    ),
    _operator(
        "17.13-residual-span-malformed",
        _s17(13),
        "a residual span altered after sealing: its text one character too long",
        O.RECORD_MALFORMED,
        _op(_malformed_span),
        _s73(21),
    ),
    _operator(
        "17.13-residual-span-outside-source",
        _s17(13),
        "a well-formed residual span past the end of the source text",
        O.EVIDENCE_SPANS_INVALID,
        _op(lambda c: _propose(_forged_residual_outside(c))),
        _s73(21),
    ),
    _operator(
        "17.14-attempt-index-at-max-candidates",
        _s17(14),
        "an input for attempt index max_candidates",
        O.ATTEMPT_INDEX_BEYOND_BUDGET,
        _op_attempt_index(lambda c: c.budget.max_candidates),
        _s73(17),
    ),
    _operator(
        "17.14-attempt-index-largest-safe-int",
        _s17(14),
        "an input for attempt index 2**53 - 1",
        O.ATTEMPT_INDEX_BEYOND_BUDGET,
        _op_attempt_index(lambda c: MAX_SAFE_INT),
        _s73(17),
    ),
    _operator(
        "17.14-budget-max-candidates-zero",
        _s17(14),
        "an allowed budget forged with max_candidates 0",
        O.ATTEMPT_INDEX_BEYOND_BUDGET,
        _op_forged(budget={"max_candidates": 0}),
        _s73(17),
    ),
    _operator(
        "7.3.16-attempt-index-negative",
        _s73(16),
        "an input re-sealed for attempt index -1",
        O.ATTEMPT_INDEX_NEGATIVE,
        _op_input(attempt_index=-1),
        _s17(14),
    ),
    _operator(
        "17.15-attempt-index-beyond-policy",
        _s17(15),
        "an input for attempt index 1: one attempt per run",
        O.ATTEMPT_INDEX_BEYOND_POLICY,
        _op_attempt_index(lambda c: 1),
        _s73(18),
    ),
    _operator(
        "17.16-budget-max-steps-zero",
        _s17(16),
        "an allowed budget forged with max_steps 0",
        O.CHARGE_EXCEEDS_BUDGET,
        _op_forged(budget={"max_steps": 0}),
        _s73(19),
    ),
    _operator(
        "17.16-budget-max-depth-zero",
        _s17(16),
        "an allowed budget with max_depth 0 and the run it lawfully opens",
        O.CHARGE_EXCEEDS_BUDGET,
        _op(_depth_zero_run),
        _s73(19),
    ),
    *(
        _operator(
            f"17.17-parallelism-{value}",
            _s17(17),
            f"an allowed budget forged with max_parallelism {value}",
            O.PARALLELISM_NOT_ONE,
            _op_forged(budget={"max_parallelism": value}),
            _s73(20),
        )
        for value in (0, 2)
    ),
    _operator(
        "17.18-operator-set-empty",
        _s17(18),
        "the empty operator set handed to the operator",
        O.OPERATOR_SET_MISMATCH,
        _op(lambda c: _propose(c, operator_set=EMPTY_OPERATOR_SET)),
        _s73(14),
    ),
    _operator(
        "17.18-operator-set-row-changed",
        _s17(18),
        "the table with its row's input obligations reversed",
        O.OPERATOR_SET_MISMATCH,
        _op(
            lambda c: _propose(
                c,
                operator_set=OperatorSetManifest(
                    CANDIDATE_OPERATOR_SET.operator_set_version,
                    (
                        dataclasses.replace(
                            CANDIDATE_OPERATOR_SET.operators[0],
                            input_obligations=CANDIDATE_OPERATOR_SET.operators[0].input_obligations[
                                ::-1
                            ],
                        ),
                    ),
                ),
            )
        ),
        _s73(14),
    ),
    _operator(
        "17.18-operator-set-opened-consistently",
        _s17(18),
        "run, input and manifest agree, but the manifest is not the v1 table",
        O.OPERATOR_SET_MISMATCH,
        _op(lambda c: _consistently_opened(c, _manifest(_row(attempts=2)))),
        _s73(14),
    ),
    _operator(
        "17.18-run-operator-set-id",
        _s17(18),
        "the run forged naming another operator set id",
        O.OPERATOR_SET_MISMATCH,
        _op_forged(run={"operator_set_id": other_digest(CANDIDATE_OPERATOR_SET_ID)}),
        _s73(14),
    ),
    _operator(
        "17.18-run-operator-set-version",
        _s17(18),
        "the run forged naming candidate_operators.v2",
        O.OPERATOR_SET_MISMATCH,
        _op_forged(run={"operator_set_version": "candidate_operators.v2"}),
        _s73(15),
    ),
    _operator(
        "17.19-input-digest-forged",
        _s17(19),
        "the input's own digest changed after sealing",
        O.IDENTITY_MISMATCH,
        _op_input_tampered(input_digest="0" * 64),
    ),
    _operator(
        "17.19-input-field-changed-after-sealing",
        _s17(19),
        "the input's residual kind changed after sealing: its digest no longer reproduces",
        O.IDENTITY_MISMATCH,
        _op_input_tampered(residual_kind="missing_relation"),
    ),
    _operator(
        "17.19-frame-is-another",
        _s17(19),
        "a lawful frame whose cue points the other way: not the frame the digests name",
        O.IDENTITY_MISMATCH,
        _op(_flipped_frame),
    ),
    _operator(
        "17.19-schema-versions-canonical-but-other",
        _s17(19),
        "the input re-sealed binding one schema version fewer",
        O.IDENTITY_MISMATCH,
        _op_input(schema_versions=SCHEMA_VERSIONS[1:]),
    ),
    _operator(
        "17.19-frame-holds-a-float",
        _s17(19),
        "a fact value turned into a float after construction: the frame cannot be hashed",
        O.RECORD_MALFORMED,
        _op(_frame_with_float),
        HASHABLE,
    ),
    *(
        _operator(
            f"7.3.22-{label}",
            _s73(22),
            f"the input's {label.replace('-', ' ')}",
            O.VERSIONS_NOT_CANONICAL,
            build,
        )
        for label, build in (
            ("schema-versions-descending", _op_input(schema_versions=SCHEMA_VERSIONS[::-1])),
            (
                "policy-versions-duplicated",
                _op_input(policy_versions=POLICY_VERSIONS[:1] + POLICY_VERSIONS),
            ),
            (
                "policy-versions-descending-after-sealing",
                _op_input_tampered(policy_versions=POLICY_VERSIONS[::-1]),
            ),
        )
    ),
    _operator(
        "7.2-input-attempt-index-bool",
        "ADR-0231 §7.2",
        "the input's attempt index replaced by False: a bool is not an int",
        O.INPUT_MALFORMED,
        _op_input_tampered(attempt_index=False),
        HASHABLE,
    ),
    _operator(
        "7.2-input-digest-malformed",
        "ADR-0231 §7.2",
        "the input's digest replaced by a string that is not a digest",
        O.INPUT_MALFORMED,
        _op_input_tampered(input_digest="NOT-A-DIGEST"),
    ),
    _operator(
        "7.2-policy-altered",
        "ADR-0231 §7.2",
        "the policy altered after construction to depth 0",
        O.RECORD_MALFORMED,
        _op(lambda c: _propose(c, policy=tampered(MISSING_ROLE_CANDIDATE_POLICY, depth=0))),
    ),
)


def _forged_residual_outside(c: OperatorContext) -> OperatorContext:
    first = c.residual.evidence_spans[0]
    shift = len(c.chain.frame.source_text)
    outside = SourceSpan(first.text, first.start + shift, first.end + shift, first.sentence_index)
    return _forged_residual(c, evidence_spans=c.residual.evidence_spans + (outside,))


def _encoded(id: str, comment: str, reason: CanonicalReason, payload_of) -> Corruption:
    return _entry(
        f"canonical/{id}",
        _ENCODE,
        HASHABLE,
        comment,
        _canonical(reason),
        eligible_chains,
        lambda c: Attack(canonical_json, {"payload": payload_of(c)}),
    )


def _decoded(id: str, comment: str, reason: CanonicalReason, data_of) -> Corruption:
    return _entry(
        f"loader/{id}",
        _DECODE,
        LOADING,
        comment,
        _canonical(reason),
        eligible_chains,
        lambda c: Attack(decode_canonical, {"data": data_of(c)}),
    )


def _steps(chain: Chain) -> int:
    return chain.budget.max_steps


_CANONICAL_ENTRIES = (
    _encoded(
        "float",
        "a budget limit as a float",
        C.FLOAT_NOT_ALLOWED,
        lambda c: _form(c, max_steps=float(_steps(c))),
    ),
    _encoded(
        "nan",
        "a budget limit as NaN",
        C.NON_FINITE_FLOAT,
        lambda c: _form(c, max_steps=float("nan")),
    ),
    _encoded(
        "infinity",
        "a budget limit as -infinity",
        C.NON_FINITE_FLOAT,
        lambda c: _form(c, max_steps=float("-inf")),
    ),
    _encoded(
        "int-above-safe-range",
        "a budget limit raised past 2**53 - 1",
        C.INT_OUT_OF_RANGE,
        lambda c: _form(c, max_steps=MAX_SAFE_INT + _steps(c)),
    ),
    _encoded(
        "int-below-safe-range",
        "a budget limit lowered past -(2**53 - 1)",
        C.INT_OUT_OF_RANGE,
        lambda c: _form(c, max_steps=-MAX_SAFE_INT - _steps(c)),
    ),
    _encoded(
        "int-key",
        "an int key beside the budget's own",
        C.KEY_NOT_STR,
        lambda c: {**_form(c), _steps(c): "limit"},
    ),
    _encoded(
        "str-subclass-key",
        "a budget key re-typed as a str subclass",
        C.KEY_NOT_STR,
        lambda c: {
            (_Text(key) if key == "max_steps" else key): value for key, value in _form(c).items()
        },
    ),
    _encoded(
        "str-subclass-value",
        "the reason code re-typed as a str subclass",
        C.SUBCLASS_NOT_ALLOWED,
        lambda c: _form(c, reason_code=_Text(c.budget.reason_code)),
    ),
    _encoded(
        "int-enum-value",
        "a budget limit as an IntEnum member",
        C.SUBCLASS_NOT_ALLOWED,
        lambda c: _form(c, max_parallelism=_Small.ONE),
    ),
    _encoded(
        "bytes-value",
        "the explanation as UTF-8 bytes",
        C.UNSUPPORTED_TYPE,
        lambda c: _form(c, explanation=c.budget.explanation.encode("utf-8")),
    ),
    _encoded(
        "lone-surrogate-value",
        "a lone surrogate appended to the explanation",
        C.LONE_SURROGATE,
        lambda c: _form(c, explanation=c.budget.explanation + "\ud800"),
    ),
    _encoded(
        "lone-surrogate-key",
        "a key holding a lone surrogate",
        C.LONE_SURROGATE,
        lambda c: {**_form(c), "note\udc00": 1},
    ),
    _encoded(
        "depth-beyond-cap",
        "the evidence spans nested MAX_DEPTH lists deeper",
        C.DEPTH_EXCEEDED,
        lambda c: _form(c, evidence_spans=_nested(c.budget.to_json()["evidence_spans"], MAX_DEPTH)),
    ),
    _encoded(
        "self-containing",
        "the evidence span list made to contain itself",
        C.DEPTH_EXCEEDED,
        _cycle,
    ),
    _encoded(
        "nodes-beyond-cap",
        "the run input's residual ids repeated MAX_NODES times",
        C.SIZE_EXCEEDED,
        _wide,
    ),
    _encoded(
        "text-beyond-cap",
        "an explanation one character over MAX_TEXT_LENGTH",
        C.SIZE_EXCEEDED,
        lambda c: _form(c, explanation="x" * (MAX_TEXT_LENGTH + 1)),
    ),
)

_LOADER_ENTRIES = (
    _decoded(
        "float",
        "a budget limit written as N.0",
        C.FLOAT_NOT_ALLOWED,
        lambda c: _int_field(_canonical_bytes(c), "max_steps", b"%d.0" % _steps(c)),
    ),
    _decoded(
        "exponent",
        "a budget limit written with an exponent",
        C.FLOAT_NOT_ALLOWED,
        lambda c: _int_field(_canonical_bytes(c), "max_steps", b"%de0" % _steps(c)),
    ),
    _decoded(
        "nan",
        "a budget limit written as NaN",
        C.NON_FINITE_FLOAT,
        lambda c: _int_field(_canonical_bytes(c), "max_steps", b"NaN"),
    ),
    _decoded(
        "infinity",
        "a budget limit written as -Infinity",
        C.NON_FINITE_FLOAT,
        lambda c: _int_field(_canonical_bytes(c), "max_steps", b"-Infinity"),
    ),
    _decoded(
        "int-above-safe-range",
        "a budget limit written as 2**53 + max_steps",
        C.INT_OUT_OF_RANGE,
        lambda c: _int_field(_canonical_bytes(c), "max_steps", b"%d" % (2**53 + _steps(c))),
    ),
    _decoded(
        "int-below-safe-range",
        "a budget limit written as -(2**53)",
        C.INT_OUT_OF_RANGE,
        lambda c: _int_field(_canonical_bytes(c), "max_steps", b"%d" % -(2**53)),
    ),
    _decoded(
        "huge-int-literal",
        "a budget limit written with 5,000 digits",
        C.INT_OUT_OF_RANGE,
        lambda c: _int_field(_canonical_bytes(c), "max_steps", b"9" * 5000),
    ),
    _decoded(
        "lone-surrogate-escape",
        "the explanation holding an escaped lone surrogate",
        C.LONE_SURROGATE,
        lambda c: _spliced(_canonical_bytes(c), "explanation", b'"\\ud800"'),
    ),
    _decoded(
        "encoded-surrogate",
        "the explanation holding a surrogate encoded as UTF-8 bytes",
        C.INVALID_UTF8,
        lambda c: _spliced(_canonical_bytes(c), "explanation", b'"\xed\xa0\x80"'),
    ),
    _decoded(
        "invalid-utf8",
        "the explanation holding the byte 0xff",
        C.INVALID_UTF8,
        lambda c: _spliced(_canonical_bytes(c), "explanation", b'"\xff"'),
    ),
    _decoded(
        "duplicate-key",
        "a second max_steps key ahead of the first",
        C.DUPLICATE_KEY,
        lambda c: b'{"max_steps":0,' + _canonical_bytes(c)[1:],
    ),
    _decoded(
        "depth-beyond-cap",
        "the record wrapped in MAX_DEPTH arrays",
        C.DEPTH_EXCEEDED,
        lambda c: b"[" * MAX_DEPTH + _canonical_bytes(c) + b"]" * MAX_DEPTH,
    ),
    _decoded(
        "size-beyond-cap",
        "an explanation of 8 MiB",
        C.SIZE_EXCEEDED,
        lambda c: _spliced(_canonical_bytes(c), "explanation", b'"' + b"x" * (8 << 20) + b'"'),
    ),
    _decoded(
        "spacing",
        "the record written with json.dumps's default separators",
        C.NOT_CANONICAL,
        lambda c: _dumped(c.budget.to_json(), separators=(", ", ": ")),
    ),
    _decoded(
        "key-order",
        "the record written with its keys in reverse order",
        C.NOT_CANONICAL,
        lambda c: _dumped(dict(sorted(c.budget.to_json().items(), reverse=True)), sort_keys=False),
    ),
    _decoded(
        "ascii-escapes",
        "the record written with non-ASCII text escaped",
        C.NOT_CANONICAL,
        lambda c: _dumped(_form(c, explanation="\u00e9\U0001f600"), ensure_ascii=True),
    ),
    _decoded(
        "truncated",
        "the record's bytes without the closing brace",
        C.INVALID_JSON,
        lambda c: _canonical_bytes(c)[:-1],
    ),
    _decoded(
        "text-not-bytes",
        "the record's canonical text as str, not bytes",
        C.UNSUPPORTED_TYPE,
        lambda c: _canonical_bytes(c).decode("utf-8"),
    ),
)

_RECORD_LEVEL_ENTRIES = (
    _entry(
        "canonical/bool-for-int-record",
        _INSPECT,
        HASHABLE,
        "a budget limit replaced by True after sealing",
        Expected(RecordDefect, (Defect.BOOL_NOT_INT,)),
        eligible_chains,
        _inspect(lambda c: tampered(c.budget, max_steps=True), ComputeBudgetDecision),
    ),
    _entry(
        "canonical/float-for-int-record",
        _INSPECT,
        HASHABLE,
        "a budget limit replaced by its float after sealing",
        Expected(RecordDefect, (Defect.FLOAT_NOT_INT,)),
        eligible_chains,
        _inspect(lambda c: tampered(c.budget, max_steps=float(_steps(c))), ComputeBudgetDecision),
    ),
    _entry(
        "canonical/int-beyond-safe-range-record",
        _INSPECT,
        HASHABLE,
        "a budget limit raised to 2**53 after sealing",
        Expected(RecordDefect, (Defect.INT_OUT_OF_RANGE,)),
        eligible_chains,
        _inspect(lambda c: tampered(c.budget, max_steps=2**53), ComputeBudgetDecision),
    ),
    _entry(
        "canonical/str-subclass-record",
        _INSPECT,
        HASHABLE,
        "the budget's reason code re-typed as a str subclass after sealing",
        Expected(RecordDefect, (Defect.WRONG_TYPE,)),
        eligible_chains,
        _inspect(
            lambda c: tampered(c.budget, reason_code=_Text(c.budget.reason_code)),
            ComputeBudgetDecision,
        ),
    ),
    _entry(
        "canonical/lone-surrogate-record",
        _INSPECT,
        HASHABLE,
        "a lone surrogate appended to the budget's explanation after sealing",
        Expected(RecordDefect, (Defect.TEXT_LONE_SURROGATE,)),
        eligible_chains,
        _inspect(
            lambda c: tampered(c.budget, explanation=c.budget.explanation + "\udfff"),
            ComputeBudgetDecision,
        ),
    ),
    _entry(
        "canonical/bool-for-int-span",
        "identity.SourceSpan",
        HASHABLE,
        "a gate evidence span rebuilt with start=True",
        Expected(RecordError, (Defect.BOOL_NOT_INT,)),
        eligible_chains,
        _span_with(start=True),
        "ARCHITECTURE §2 span encoding",
    ),
    _entry(
        "canonical/lone-surrogate-span",
        "identity.SourceSpan",
        HASHABLE,
        "a gate evidence span rebuilt with a lone surrogate for its last character",
        Expected(RecordError, (Defect.TEXT_LONE_SURROGATE,)),
        eligible_chains,
        lambda c: _span_with(text=c.gate.evidence_spans[0].text[:-1] + "\udbff")(c),
        "ARCHITECTURE §2 span encoding",
    ),
    _entry(
        "canonical/bool-for-int-run",
        _OPEN,
        HASHABLE,
        "a budget limit replaced by True after sealing, handed to the run",
        _run_refused(D.INVALID_INPUT, R.BUDGET_MALFORMED),
        eligible_chains,
        lambda c: _open(c, budget_decision=tampered(c.budget, max_steps=True)),
        _s9(11),
    ),
    _entry(
        "canonical/float-for-int-run",
        _OPEN,
        HASHABLE,
        "a negative budget limit as a float: not read as a negative limit",
        _run_refused(D.INVALID_INPUT, R.BUDGET_MALFORMED),
        eligible_chains,
        lambda c: _open(c, budget_decision=tampered(c.budget, max_depth=-1.0)),
        _s9(11),
    ),
    *(
        _entry(
            f"loader/trace-{label}",
            _LOAD,
            LOADING,
            f"a stored trace whose first span start is {label.replace('-', ' ')}",
            Expected(TraceVerification, (TraceFailureCode.UNDECODABLE,)),
            eligible_chains,
            _load(lambda data, raw=raw: _int_field(data, "start", raw)),
            HASHABLE,
        )
        for label, raw in (
            ("bool-for-int", b"true"),
            ("float", b"0.0"),
            ("int-beyond-safe-range", b"9007199254740992"),
        )
    ),
    _entry(
        "loader/trace-not-canonical",
        _LOAD,
        LOADING,
        "a stored trace re-written with a trailing newline",
        Expected(TraceVerification, (TraceFailureCode.UNDECODABLE,)),
        eligible_chains,
        _load(lambda data: data + b"\n"),
    ),
    _entry(
        "loader/trace-id-forged",
        _LOAD,
        LOADING,
        "a stored trace whose trace_id is another digest",
        Expected(TraceVerification, (TraceFailureCode.TRACE_ID_MISMATCH,)),
        eligible_chains,
        _load(_forged_trace_id),
    ),
)


CATALOGUE: tuple[Corruption, ...] = (
    *_RUN_ENTRIES,
    *_RECORD_ENTRIES,
    *_OPERATOR_ENTRIES,
    *_CANONICAL_ENTRIES,
    *_LOADER_ENTRIES,
    *_RECORD_LEVEL_ENTRIES,
)


def by_clause(prefix: str) -> tuple[Corruption, ...]:
    """Entries filed under, or also violating, a clause that is ``prefix`` or starts with
    ``prefix`` followed by a space (so ``"ADR-0228 §16 row 1"`` is not ``row 10``)."""
    return tuple(
        entry
        for entry in CATALOGUE
        if any(clause == prefix or clause.startswith(prefix + " ") for clause in entry.clauses)
    )


def by_stage(stage: str) -> tuple[Corruption, ...]:
    return tuple(entry for entry in CATALOGUE if entry.stage == stage)


def by_id(identifier: str) -> Corruption:
    (entry,) = (entry for entry in CATALOGUE if entry.id == identifier)
    return entry


__all__ = [
    "CATALOGUE",
    "Attack",
    "Corruption",
    "Expected",
    "OperatorContext",
    "by_clause",
    "by_id",
    "by_stage",
    "observe",
    "operator_chains",
    "perform",
    "stage_of",
]
