"""Properties that only hold across stages: the whole loop, frame to sealed trace.

Each per-stage file proves its own stage (its ids against the oracle, its prose excluded, its
spans kept). These properties follow values *between* stages: a reworded record handed to the
next stage, a span edit in the frame seen by every record after it, every identity nested
anywhere in a sealed trace, the answers a whole pass gives to word problems whose answer we
know, and the run's accounting against the budget it was granted.

Clauses: ADR-0226 §4, §7E, §8.6, §9, §10; ADR-0227 §7; ADR-0228 §8, §9, §10; ADR-0231 §9,
§12, §13, §14; docs/adr/0002, 0003, 0005, 0006, 0007. Identities are recomputed from
``practice_strategies.oracle`` and, for the records the oracle does not cover (replay,
answer, trace), by the blanked self-seal rule of 0003 written out below over plain
``dataclasses`` attribute reads; none is read back from the kernel's own hashing.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from practice_loop.harness.examples import shipped_examples
from practice_loop.kernel import (
    CANDIDATE_OPERATOR_SET,
    EMPTY_OPERATOR_SET,
    GEOMETRIC_SEARCH_RUN_POLICY_VERSION,
    GEOMETRIC_SEARCH_RUN_V2_POLICY_VERSION,
    AnswerPath,
    AnswerRefusal,
    AssessmentStatus,
    CandidateOperatorRefusal,
    CandidateOperatorResult,
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
    ProofStatus,
    ReplayDisposition,
    ReplayRefusal,
    ReplayResult,
    Role,
    RunDisposition,
    RunExhaustionCode,
    SealedPracticeTrace,
    SearchGateDecision,
    SearchGateStatus,
    SearchRunRefusal,
    SourceSpan,
    StateChangeProposal,
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
from practice_loop.kernel.frame import MAX_FRAME_SPANS
from practice_loop.product.reader import read_question
from practice_strategies import (
    FRAME_RECIPES,
    build_chain,
    chains,
    fields_for_sealing,
    oracle,
    problem_frames,
    run_outcome,
    share,
    spans_in,
    tampered,
)

ELIGIBLE_ONE_CUE = {**FRAME_RECIPES[GateReason.ELIGIBLE_MISSING_ROLE], "cue_count": 1}
REASONS = sorted(FRAME_RECIPES, key=lambda reason: reason.value)
LIMITS = ("max_candidates", "max_depth", "max_steps", "max_parallelism")


def _example_frame(name: str) -> ProblemFrame:
    (example,) = [e for e in shipped_examples() if e.name == name]
    return example.frame


def _frame_at_the_span_cap() -> ProblemFrame:
    """direction_unbound with its initial binding citing its span again until the frame holds
    exactly ``MAX_FRAME_SPANS`` spans: the candidate (one more span) cannot be a frame, so the
    adapter answers with a ``ReplayRefusal`` (docs/adr/0006, candidate_not_applicable)."""
    frame = _example_frame("direction_unbound")
    (proposal,) = frame.proposals
    initial, *rest = proposal.bindings
    extra = MAX_FRAME_SPANS - len(frame.all_spans())
    padded = dataclasses.replace(
        initial, evidence_spans=initial.evidence_spans + initial.evidence_spans[:1] * extra
    )
    bindings = (padded, *rest)
    return dataclasses.replace(
        frame, proposals=(StateChangeProposal(proposal.relation_type, bindings),)
    )


SPAN_CAP_FRAME = _frame_at_the_span_cap()

# Every frame-reachable gate reason (FRAME_RECIPES), the one-cue missing-direction recipe that
# reaches the operator, the run's attempt, a replay and (when the values allow) a practice
# answer, the runnable recipe (direct proof and answer), and unconstrained frames. Small
# values make decreases past zero (proof refused) common.
loop_frames = st.one_of(
    *(problem_frames(**FRAME_RECIPES[reason]) for reason in REASONS),
    problem_frames(**ELIGIBLE_ONE_CUE),
    problem_frames(**ELIGIBLE_ONE_CUE, max_value=12),
    problem_frames(**FRAME_RECIPES[GateReason.ASSESSMENT_RUNNABLE], max_value=12),
    problem_frames(),
)
# The same with the one frame whose candidate the adapter refuses (its trace is large: only
# the lighter properties draw it; the heavy ones check it in the fixed-frame test).
loop_frames_and_cap = loop_frames | st.just(SPAN_CAP_FRAME)


def _trace(frame: ProblemFrame) -> SealedPracticeTrace:
    trace = practice_case(frame)
    assert type(trace) is SealedPracticeTrace, trace
    return trace


# ------------------------------------------------------------------------------------------
# The independent identity rules (0003): a record's form is every dataclass field, enums by
# value, tuples as lists, nested records as their own forms; prose ("explanation") is left out
# at every depth for identities. A blanked self-seal hashes that form with its own id "".


def _kernel_identity(record: Any) -> str:
    if type(record) is ProblemFrame:
        return problem_frame_digest(record)
    if type(record) is GeometricSearchInput:
        return record.input_digest()
    return getattr(record, type(record).ID_FIELD)


def _walk(value: Any, path: str = "$", depth: int = 0) -> Iterator[tuple[str, int, Any]]:
    """Every record nested anywhere in ``value``, with its path and its depth in records (the
    trace is depth 0). A frame is one record here: its parts (facts, cues, bindings, spans)
    carry neither an identity nor prose of their own."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        yield path, depth, value
        if type(value) in (ProblemFrame, SourceSpan):
            return
        for field in dataclasses.fields(value):
            yield from _walk(getattr(value, field.name), f"{path}.{field.name}", depth + 1)
    elif type(value) is tuple:
        for index, item in enumerate(value):
            yield from _walk(item, f"{path}[{index}]", depth)


def _identities(value: Any) -> list[tuple[str, str, str]]:
    """(path, record type, identity) of every record that has an identity, in tree order."""
    return [
        (path, type(record).__name__, _kernel_identity(record))
        for path, _, record in _walk(value)
        if type(record).__name__ in oracle.IDENTITY_BY_KIND
    ]


def _oracle_stage_digests(trace: SealedPracticeTrace) -> tuple[tuple[str, str], ...]:
    """0007 stage order, each present stage's identity from the oracle."""
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


def _assert_oracle_agrees(value: Any) -> None:
    for path, _, record in _walk(value):
        recompute = oracle.IDENTITY_BY_KIND.get(type(record).__name__)
        if recompute is not None:
            assert _kernel_identity(record) == recompute(record), path


# ------------------------------------------------------------------------------------------
# Explanation stability across the whole chain


def _rebuilt(value: Any, reword: Callable[[int, Any], bool], prefix: str, depth: int = 0) -> Any:
    """``value`` rebuilt bottom-up through the kernel's constructors: every record whose
    (depth, record) ``reword`` selects gets ``prefix`` before its explanation, and every record
    with an identity is sealed again (``fields_for_sealing`` + ``.sealed()``), so each id is
    recomputed from its rebuilt parts; the trace's stage index is recomputed by the oracle."""
    if type(value) is tuple:
        return tuple(_rebuilt(item, reword, prefix, depth) for item in value)
    if not (dataclasses.is_dataclass(value) and not isinstance(value, type)):
        return value
    if type(value) in (ProblemFrame, SourceSpan):
        return value  # no prose and no identity field anywhere inside
    changes = {
        field.name: _rebuilt(getattr(value, field.name), reword, prefix, depth + 1)
        for field in dataclasses.fields(value)
    }
    if "explanation" in changes and reword(depth, value):
        changes["explanation"] = prefix + value.explanation
    record_type = type(value)
    id_field = getattr(record_type, "ID_FIELD", None)
    if id_field is None:
        return record_type(**changes)
    del changes[id_field]
    if record_type is SealedPracticeTrace:
        changes["stage_digests"] = _oracle_stage_digests(tampered(value, **changes))
    return record_type.sealed(**fields_for_sealing(value, **changes))


def _prose_sites(trace: SealedPracticeTrace) -> list[tuple[int, type]]:
    """Each (depth, record type) of the trace that carries an explanation."""
    sites = {
        (depth, type(record))
        for _, depth, record in _walk(trace)
        if any(field.name == "explanation" for field in dataclasses.fields(record))
    }
    return sorted(sites, key=lambda site: (site[0], site[1].__name__))


def _assert_rewording_changes_no_identity(trace: SealedPracticeTrace, prefix: str) -> None:
    before = _identities(trace)
    lean = trace.to_json(drop_explanations=True)
    sites = _prose_sites(trace)
    assert (0, SealedPracticeTrace) in sites and (1, ContractAssessment) in sites
    choices: list[Callable[[int, Any], bool]] = [
        (lambda depth, record, site=site: (depth, type(record)) == site) for site in sites
    ]
    choices.append(lambda depth, record: True)
    for choice in choices:
        rebuilt = _rebuilt(trace, choice, prefix)
        assert rebuilt.to_json() != trace.to_json()  # the prose did change
        assert _identities(rebuilt) == before
        assert rebuilt.to_json(drop_explanations=True) == lean
        _assert_oracle_agrees(rebuilt)
        assert verify_sealed_trace(rebuilt) == TraceVerification(trace.trace_id, ())
    # The last choice reworded everything: it loads under the same trace_id, and replaying
    # it reproduces every identity but not the bytes, so the first stage with prose, the
    # assessment, is named (replay compares the bytes, prose included: issue 15).
    assert replay_divergence(rebuilt) == TraceFailure(
        TraceFailureCode.EXPLANATION_DIVERGED,
        "assessment",
        "ContractAssessment.explanation differs from the replayed trace's",
    )
    loaded = load_sealed_trace(sealed_trace_bytes(rebuilt))
    assert type(loaded) is SealedPracticeTrace and loaded.trace_id == trace.trace_id


@share(6)
@given(frame=loop_frames, prefix=st.text(min_size=1, max_size=12))
def test_rewording_any_record_at_any_depth_changes_no_identity_in_the_trace(frame, prefix):
    """0003 ("rewording any explanation changes no identity"), 0007 (trace_id seals every
    field but prose, at every depth), ADR-0227 §7 and ADR-0231 §9, §14 (explanation excluded):
    for every record kind at every depth of a sealed trace (the trace itself, each stage
    record, and the records nested in them: replay assessments and proofs, the attempt in an
    operator result and in the run), rebuilding the trace with that record reworded and every
    id resealed from its parts leaves every identity anywhere (record ids, frame digest,
    input digests, budget_id, run and attempt ids, candidate and reconstruction digests,
    replay and answer ids, stage digests, trace_id) exactly as it was, and the reworded trace
    verifies under it; rewording everything at once, it also loads under it, and its replay
    names the first reworded stage as explanation_diverged (issue 15)."""
    _assert_rewording_changes_no_identity(_trace(frame), prefix)


def _reworded(record: Any, prefix: str) -> Any:
    """A stage's record with its prose (and the prose of the records the stage itself made
    inside it) reworded, sealed again through the kernel. A run's attempts are the
    operator's records: they are reworded with the operator result, and the run records
    them as the operator gave them."""
    changes: dict[str, Any] = {"explanation": prefix + record.explanation}
    if type(record) is CandidateOperatorResult:
        changes["candidate_attempt"] = _reworded(record.candidate_attempt, prefix)
    elif type(record) is ReplayResult:
        changes["replay_assessment"] = _reworded(record.replay_assessment, prefix)
        if record.replay_proof is not None:
            changes["replay_proof"] = _reworded(record.replay_proof, prefix)
    return type(record).sealed(**fields_for_sealing(record, **changes))


Reword = Callable[[str, Any], Any]


def _drive(frame: ProblemFrame, reword: Reword) -> SealedPracticeTrace:
    """The loop of ``loop.py``, stage by stage, each stage's record passed through ``reword``
    before the next stage consumes it."""
    assessment = reword("assessment", assess(frame))
    if assessment.status is AssessmentStatus.RUNNABLE:
        proof = reword("direct_proof", check_proof(frame, assessment))
        outcome = reword("outcome", decide_answer(frame, assessment, direct_proof=proof))
        return seal_practice_trace(
            frame=frame, original_assessment=assessment, direct_proof=proof, outcome=outcome
        )
    residuals = tuple(reword("residual", residual) for residual in project_residuals(assessment))
    gate = reword("gate", decide_search_gate(assessment, residuals))
    budget = reword("budget", decide_compute_budget(gate))
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
        refused = reword("run", opened)
        outcome = reword("outcome", decide_answer(frame, assessment))
        return seal_practice_trace(**upstream, run_outcome=refused, outcome=outcome)
    opened = reword("opened_run", opened)
    context = {
        "assessment": assessment,
        "residual": residuals[0],
        "gate_decision": gate,
        "budget_decision": budget,
        "opened_run": opened,
    }
    operator_input = candidate_operator_input(**context)
    operator = reword("operator", propose_candidate(operator_input, frame=frame, **context))
    results = (operator,) if type(operator) is CandidateOperatorResult else ()
    attempts = tuple(result.candidate_attempt for result in results)
    run = reword("run", record_attempts(opened, CANDIDATE_OPERATOR_SET, attempts))
    replays = tuple(
        reword("replay", replay_candidate(frame, assessment, result.reconstruction))
        for result in results
    )
    outcome = reword("outcome", decide_answer(frame, assessment, replays=replays))
    return seal_practice_trace(
        **upstream,
        opened_run=opened,
        operator_outcomes=(operator,),
        run_outcome=run,
        replays=replays,
        outcome=outcome,
    )


DRIVEN_STAGES = (
    "assessment",
    "direct_proof",
    "residual",
    "gate",
    "budget",
    "opened_run",
    "operator",
    "run",
    "replay",
    "outcome",
)


@share(6)
@given(frame=loop_frames, prefix=st.text(min_size=1, max_size=12))
def test_a_stage_given_reworded_upstream_records_produces_the_same_identities(frame, prefix):
    """ADR-0226 §9 (same evidence, same trace hash), 0003 (prose is not identity), ADR-0231
    §14: driving the loop stage by stage and rewording one stage's record before the next
    stages consume it (the assessment the projection, gate, proof, replay and answer read; the
    residuals; the gate the budget reads; the budget the run reads; the opened run the operator
    binds; the operator result whose attempt the run records; the run; the replay the answer
    reads; the outcome) gives a trace with exactly the genuine trace's identities and
    non-prose content. Without rewording, the stage-by-stage drive is the loop itself."""
    genuine = _trace(frame)
    driven = _drive(frame, lambda stage, record: record)
    assert canonical_json(driven.to_json()) == canonical_json(genuine.to_json())
    reached = {stage for stage, _ in genuine.stage_digests}
    for target in DRIVEN_STAGES:
        seen: list[str] = []

        def reword(stage: str, record: Any, target: str = target, seen: list = seen) -> Any:
            if stage != target:
                return record
            seen.append(stage)
            return _reworded(record, prefix)

        rebuilt = _drive(frame, reword)
        assert bool(seen) == ({"direct_proof": "proof"}.get(target, target) in reached), target
        assert rebuilt.trace_id == genuine.trace_id, target
        assert _identities(rebuilt) == _identities(genuine), target
        assert rebuilt.to_json(drop_explanations=True) == genuine.to_json(drop_explanations=True)
        if seen:
            assert rebuilt.to_json() != genuine.to_json(), target
        assert verify_sealed_trace(rebuilt) == TraceVerification(genuine.trace_id, ())


def _resealed_with(trace: SealedPracticeTrace, **changes: Any) -> SealedPracticeTrace:
    """The trace's records, ``changes`` applied, sealed again by ``seal_practice_trace``."""
    kept = ("trace_id", "schema_version", "versions", "stage_digests", "explanation")
    records = {
        field.name: getattr(trace, field.name)
        for field in dataclasses.fields(trace)
        if field.name not in kept
    }
    return seal_practice_trace(**{**records, **changes})


def test_a_run_whose_attempts_carry_other_prose_still_verifies():
    """0003 ("rewording any explanation changes no identity"), 0007 (verification recomputes
    identities and cross-identities; the run row: "attempts are the results' attempts, in
    order"): the run's attempt reworded and every id resealed leaves attempt_id, run_id and
    trace_id unchanged, so the trace must verify under the same trace_id; a verdict may not
    depend on prose the seal does not cover."""
    trace = _trace(_example_frame("direction_unbound"))
    run = trace.run_outcome
    (attempt,) = run.candidate_attempts
    reworded = _reworded(attempt, "reworded: ")
    assert reworded.attempt_id == attempt.attempt_id == oracle.attempt_id(reworded)
    new_run = GeometricSearchRun.sealed(**fields_for_sealing(run, candidate_attempts=(reworded,)))
    assert new_run.run_id == run.run_id == oracle.run_id(new_run)
    rewritten = _resealed_with(trace, run_outcome=new_run)
    assert rewritten.trace_id == trace.trace_id == oracle.self_sealed_id(rewritten)
    assert rewritten.to_json(drop_explanations=True) == trace.to_json(drop_explanations=True)
    assert verify_sealed_trace(rewritten) == TraceVerification(trace.trace_id, ())


# ------------------------------------------------------------------------------------------
# Span order, duplicates and removal


@st.composite
def _edited_spans(
    draw: st.DrawFn, spans: tuple[SourceSpan, ...], source: str, non_empty: bool
) -> tuple[SourceSpan, ...]:
    """``spans`` changed in one way: a drawn exact slice inserted, one entry duplicated in
    place, one removed (never leaving a non-empty field empty), or two unequal entries
    swapped. The result always differs from ``spans``."""
    operations = ["insert"]
    if spans:
        operations.append("duplicate")
    if len(spans) > (1 if non_empty else 0):
        operations.append("remove")
    if len(set(spans)) > 1:
        operations.append("swap")
    operation = draw(st.sampled_from(operations))
    edited = list(spans)
    if operation == "insert":
        edited.insert(draw(st.integers(0, len(spans))), draw(spans_in(source)))
    elif operation == "duplicate":
        index = draw(st.integers(0, len(spans) - 1))
        edited.insert(index, spans[index])
    elif operation == "remove":
        del edited[draw(st.integers(0, len(spans) - 1))]
    else:
        pairs = [(i, j) for i, j in itertools.combinations(range(len(spans)), 2)]
        i, j = draw(st.sampled_from([(i, j) for i, j in pairs if spans[i] != spans[j]]))
        edited[i], edited[j] = edited[j], edited[i]
    assert tuple(edited) != spans
    return tuple(edited)


@st.composite
def _span_edited_frames(draw: st.DrawFn) -> tuple[ProblemFrame, ProblemFrame, str]:
    """(frame, the frame with one span sequence edited, which sequence). The sequences are a
    binding's evidence, a hazard's evidence, or the order of two unequal cues."""
    recipe = draw(
        st.sampled_from(
            [
                ELIGIBLE_ONE_CUE,
                {**FRAME_RECIPES[GateReason.ELIGIBLE_MISSING_ROLE], "cue_count": 2},
                FRAME_RECIPES[GateReason.ASSESSMENT_RUNNABLE],
                FRAME_RECIPES[GateReason.UNCLASSIFIED_RESIDUAL],
                FRAME_RECIPES[GateReason.MULTIPLE_RESIDUALS],
                FRAME_RECIPES[GateReason.ELIGIBLE_MISSING_RELATION],
                FRAME_RECIPES[GateReason.ELIGIBLE_TARGET_UNBOUND],
            ]
        )
    )
    frame = draw(problem_frames(**recipe))
    sites = [
        ("binding", p, b) for p, x in enumerate(frame.proposals) for b in range(len(x.bindings))
    ]
    sites += [("hazard", h, 0) for h in range(len(frame.hazards))]
    if len(set(frame.cues)) > 1:
        sites.append(("cues", 0, 0))
    kind, first, second = draw(st.sampled_from(sites))
    source = frame.source_text
    if kind == "binding":
        proposal = frame.proposals[first]
        binding = proposal.bindings[second]
        spans = draw(_edited_spans(binding.evidence_spans, source, non_empty=True))
        bindings = list(proposal.bindings)
        bindings[second] = dataclasses.replace(binding, evidence_spans=spans)
        proposals = list(frame.proposals)
        proposals[first] = StateChangeProposal(proposal.relation_type, tuple(bindings))
        edited = dataclasses.replace(frame, proposals=tuple(proposals))
    elif kind == "hazard":
        hazard = frame.hazards[first]
        spans = draw(_edited_spans(hazard.evidence_spans, source, non_empty=False))
        hazards = list(frame.hazards)
        hazards[first] = dataclasses.replace(hazard, evidence_spans=spans)
        edited = dataclasses.replace(frame, hazards=tuple(hazards))
    else:
        edited = dataclasses.replace(frame, cues=frame.cues[::-1])
    return frame, edited, kind


def _expected_blockers(frame: ProblemFrame) -> list[tuple[str, tuple[SourceSpan, ...]]]:
    """docs/adr/0005 "Contract", written out again: each blocker's code and evidence spans,
    in order, from the frame alone."""
    blockers = [(f"hazard_{h.code.value}", h.evidence_spans) for h in frame.hazards]
    fact_spans = tuple(fact.span for fact in frame.facts)
    if len(frame.proposals) != 1:
        code = "proposal_missing" if not frame.proposals else "proposal_ambiguous"
        return [*blockers, (code, fact_spans)]
    (proposal,) = frame.proposals
    bound = tuple(span for binding in proposal.bindings for span in binding.evidence_spans)
    if proposal.relation_type != "state_change.unary_delta":
        return [*blockers, ("relation_unsupported", bound)]
    roles = {binding.role for binding in proposal.bindings}
    cue_spans = tuple(cue.span for cue in frame.cues)
    for role in (Role.INITIAL, Role.DELTA, Role.DIRECTION, Role.TARGET):
        if role not in roles:
            spans = bound + (cue_spans if role is Role.DIRECTION else ())
            blockers.append((f"{role.value}_unbound", spans))
    if blockers:
        return blockers
    by_role = {binding.role: binding for binding in proposal.bindings}
    initial = frame.fact(by_role[Role.INITIAL].fact_id)
    delta = frame.fact(by_role[Role.DELTA].fact_id)
    spans = (initial.span, delta.span, frame.target.span)
    if initial.fact_id == delta.fact_id:
        blockers.append(("role_conflict", spans))
    if not initial.entity == delta.entity == frame.target.entity:
        blockers.append(("entity_mismatch", spans))
    if not initial.unit == delta.unit == frame.target.unit:
        blockers.append(("unit_mismatch", spans))
    return blockers


def _assert_spans_flow_unchanged(trace: SealedPracticeTrace) -> None:
    """Every stage hands its evidence on exactly as it received it: order kept, duplicates
    kept, nothing added or dropped (ADR-0228 §8, ADR-0231 §13, docs/adr/0001, 0002)."""
    frame, assessment = trace.frame, trace.original_assessment
    assert [(b.code.value, b.evidence_spans) for b in assessment.blockers] == _expected_blockers(
        frame
    )
    if assessment.status is AssessmentStatus.REFUSED:
        assert [r.evidence_spans for r in trace.residuals] == [
            b.evidence_spans for b in assessment.blockers
        ]
    if trace.gate_decision is not None:
        carried = tuple(span for r in trace.residuals for span in r.evidence_spans)
        assert trace.gate_decision.evidence_spans == carried
        assert trace.budget_decision.evidence_spans == carried
    for outcome in trace.operator_outcomes:
        if type(outcome) is CandidateOperatorResult:
            spans = trace.residuals[0].evidence_spans
            assert outcome.evidence_spans == spans
            assert outcome.candidate_attempt.evidence_spans == spans
            assert outcome.reconstruction.evidence_spans == spans
    for replay in trace.replays:
        if type(replay) is ReplayResult:
            # The candidate frame is the frame with one binding added: every other span
            # sequence is the frame's own, and the new binding cites the cue's span alone.
            (before,), (after,) = frame.proposals, replay.candidate_frame.proposals
            kept = [b for b in after.bindings if b.role is not Role.DIRECTION]
            assert kept == list(before.bindings)
            (added,) = [b for b in after.bindings if b.role is Role.DIRECTION]
            assert added.evidence_spans == (frame.cues[0].span,)
            assert dataclasses.replace(replay.candidate_frame, proposals=frame.proposals) == frame


@share(2)
@given(_span_edited_frames())
def test_a_span_edit_in_the_frame_changes_every_identity_and_flows_unchanged(edit):
    """ADR-0228 §10, ADR-0231 §13, 0003 ("reordering or duplicating any span changes every
    identity that contains it"), docs/adr/0005 (the frame digest keeps order and
    duplicates): inserting, duplicating, removing or swapping one span in a binding's or a
    hazard's evidence, or swapping two cues, takes the case down the same stages, and every
    stage's identity differs from the unedited case's (frame digest, assessment, residuals,
    gate, budget, search input, opened run, operator outcome, run, replay, outcome), as does
    the trace_id. In both cases the spans reach every record exactly as the frame gave them."""
    frame, edited, _ = edit
    before, after = _trace(frame), _trace(edited)
    assert after.frame == edited and before.frame == frame
    assert [s for s, _ in after.stage_digests] == [s for s, _ in before.stage_digests]
    for (stage, old), (_, new) in zip(before.stage_digests, after.stage_digests, strict=True):
        assert old != new, stage
    assert after.trace_id != before.trace_id
    for trace in (before, after):
        _assert_spans_flow_unchanged(trace)
        assert trace.stage_digests == _oracle_stage_digests(trace)


@st.composite
def _eligible_with_result(draw: st.DrawFn) -> SealedPracticeTrace:
    trace = _trace(draw(problem_frames(**ELIGIBLE_ONE_CUE)))
    assert type(trace.operator_outcomes[0]) is CandidateOperatorResult
    return trace


@share(3)
@given(trace=_eligible_with_result(), data=st.data())
def test_a_span_edit_in_a_record_is_seen_by_every_stage_after_it(trace, data):
    """ADR-0227 §7.11, ADR-0228 §10, ADR-0231 §9, §13, docs/adr/0002: the same edits made to
    the evidence a record carries, the record sealed again: a residual's new id is no longer
    the projection of the assessment, so the gate is unassessable (context mismatch), the
    budget blocked with no resource, and no run opens. A gate's new id reaches the budget
    (its evidence exactly the edited spans), the run input, the opened run, the operator
    input, the attempt and the reconstruction, all with new identities; the candidate digest,
    which hashes candidate content only, stays the same."""
    frame, assessment = trace.frame, trace.original_assessment
    (residual,) = trace.residuals
    edited = data.draw(_edited_spans(residual.evidence_spans, frame.source_text, non_empty=False))
    forged = ContractResidual.sealed(**fields_for_sealing(residual, evidence_spans=edited))
    assert forged.residual_id != residual.residual_id == oracle.residual_id(residual)
    assert forged.residual_id == oracle.residual_id(forged)
    gate = decide_search_gate(assessment, (forged,))
    assert gate.status is SearchGateStatus.UNASSESSABLE
    assert gate.reason_code == GateReason.RESIDUAL_CONTEXT_MISMATCH.value
    assert gate.residual_ids == (forged.residual_id,) and gate.evidence_spans == edited
    budget = decide_compute_budget(gate)
    assert budget.status is ComputeBudgetStatus.BUDGET_BLOCKED
    assert all(getattr(budget, name) == 0 for name in LIMITS)
    assert budget.evidence_spans == edited
    search_input = search_input_for(
        gate, budget, CANDIDATE_OPERATOR_SET, GEOMETRIC_SEARCH_RUN_V2_POLICY_VERSION
    )
    refused = open_search_run(search_input, gate, budget, CANDIDATE_OPERATOR_SET)
    assert type(refused) is SearchRunRefusal
    assert refused.run_disposition is RunDisposition.BLOCKED_BY_GATE

    genuine = trace.gate_decision
    spans = data.draw(_edited_spans(genuine.evidence_spans, frame.source_text, non_empty=True))
    moved = SearchGateDecision.sealed(**fields_for_sealing(genuine, evidence_spans=spans))
    assert moved.decision_id != genuine.decision_id
    assert moved.decision_id == oracle.gate_decision_id(moved)
    budget = decide_compute_budget(moved)
    assert budget.status is ComputeBudgetStatus.BUDGET_ALLOWED and budget.evidence_spans == spans
    assert (
        budget.budget_id
        != trace.budget_decision.budget_id
        == oracle.budget_id(trace.budget_decision)
    )
    assert budget.budget_id == oracle.budget_id(budget)
    search_input = search_input_for(
        moved, budget, CANDIDATE_OPERATOR_SET, GEOMETRIC_SEARCH_RUN_V2_POLICY_VERSION
    )
    assert search_input.input_digest() != trace.search_input.input_digest()
    opened = open_search_run(search_input, moved, budget, CANDIDATE_OPERATOR_SET)
    assert type(opened) is OpenedSearchRun
    assert opened.run_id != trace.opened_run.run_id
    assert opened.run_id == oracle.opened_run_id(opened)
    context = {
        "assessment": assessment,
        "residual": residual,
        "gate_decision": moved,
        "budget_decision": budget,
        "opened_run": opened,
    }
    result = propose_candidate(candidate_operator_input(**context), frame=frame, **context)
    assert type(result) is CandidateOperatorResult
    (old,) = trace.operator_outcomes
    assert result.input_digest != old.input_digest
    assert result.attempt_id != old.attempt_id
    assert result.candidate_reconstruction_digest != old.candidate_reconstruction_digest
    assert result.operator_result_id != old.operator_result_id
    assert result.candidate_digest == old.candidate_digest
    assert result.evidence_spans == old.evidence_spans == residual.evidence_spans
    _assert_oracle_agrees(result)


# ------------------------------------------------------------------------------------------
# Oracle agreement, nested records included


def _operator_input_from_trace(trace: SealedPracticeTrace) -> SimpleNamespace:
    """ADR-0231 §7.2's input fields, each read from the trace record that owns it."""
    (residual,) = trace.residuals[:1]
    opened = trace.opened_run
    # The versions the input binds are the ones the closed manifest's one row declares.
    (row,) = CANDIDATE_OPERATOR_SET.operators
    return SimpleNamespace(
        operator_policy_version="candidate_operator.v1",
        operator_name="missing_role_candidate",
        operator_version="missing_role_candidate.v1",
        problem_frame_digest=oracle.problem_frame_digest(trace.frame),
        original_contract_assessment_id=oracle.assessment_id(trace.original_assessment),
        residual_id=oracle.residual_id(residual),
        residual_kind=residual.kind.value,
        search_gate_decision_id=oracle.gate_decision_id(trace.gate_decision),
        compute_budget_id=oracle.budget_id(trace.budget_decision),
        geometric_search_run_id=oracle.opened_run_id(opened),
        operator_set_id=oracle.operator_set_id(CANDIDATE_OPERATOR_SET),
        operator_set_version=CANDIDATE_OPERATOR_SET.operator_set_version,
        attempt_index=0,
        schema_versions=row.schema_versions,
        policy_versions=row.policy_versions,
    )


@share(2)
@given(loop_frames_and_cap)
def test_every_identity_anywhere_in_a_sealed_trace_is_the_oracles(frame):
    """ADR-0228 §10, ADR-0231 §14, 0003, 0007: every identity of every record of a sealed
    trace, at every depth (the frame, the candidate frame inside a replay, the replay's
    assessment and proof, the attempt inside the operator result and inside the run, the
    reconstruction's two digests, replay and answer ids, the trace_id), equals the oracle's
    recomputation; every cross-stage reference equals the oracle's identity of the record it
    names (the operator input digest rebuilt from the trace's own upstream records); the stage
    index is the oracle's; and the stored bytes are the independent encoding, prose included."""
    trace = _trace(frame)
    _assert_oracle_agrees(trace)
    assert trace.stage_digests == _oracle_stage_digests(trace)
    assert sealed_trace_bytes(trace) == oracle.canonical_bytes(oracle.plain_form(trace, prose=True))
    frame_digest = oracle.problem_frame_digest(trace.frame)
    assessment_id = oracle.assessment_id(trace.original_assessment)
    assert trace.original_assessment.problem_frame_digest == frame_digest
    residual_ids = tuple(oracle.residual_id(r) for r in trace.residuals)
    gate, budget, bound = trace.gate_decision, trace.budget_decision, trace.search_input
    if gate is not None:
        assert gate.input_digest == oracle.gate_input_digest(gate)
        assert (gate.problem_frame_digest, gate.contract_assessment_id, gate.residual_ids) == (
            frame_digest,
            assessment_id,
            residual_ids,
        )
        assert budget.gate_decision_id == oracle.gate_decision_id(gate)
        assert budget.gate_input_digest == oracle.gate_input_digest(gate)
        assert (bound.gate_decision_id, bound.budget_id, bound.residual_ids) == (
            oracle.gate_decision_id(gate),
            oracle.budget_id(budget),
            residual_ids,
        )
        run = trace.run_outcome
        assert run.input_digest == oracle.search_input_digest(bound)
    if trace.opened_run is not None:
        operator_input = oracle.operator_input_digest(_operator_input_from_trace(trace))
        assert trace.opened_run.operator_set_id == oracle.operator_set_id(CANDIDATE_OPERATOR_SET)
        assert trace.opened_run.input_digest == oracle.search_input_digest(bound)
        assert trace.run_outcome.opened_run_id == oracle.opened_run_id(trace.opened_run)
        results = [o for o in trace.operator_outcomes if type(o) is CandidateOperatorResult]
        for result in results:
            rebuilt = result.reconstruction
            assert result.input_digest == operator_input
            assert result.candidate_digest == oracle.candidate_digest(rebuilt)
            assert result.candidate_attempt.candidate_digest == oracle.candidate_digest(rebuilt)
            assert rebuilt.attempt_id == oracle.attempt_id(result.candidate_attempt)
            assert rebuilt.geometric_search_run_id == oracle.opened_run_id(trace.opened_run)
            assert rebuilt.source_residual_id == residual_ids[0]
        attempts = trace.run_outcome.candidate_attempts
        assert [oracle.attempt_id(a) for a in attempts] == [r.attempt_id for r in results]
        for outcome in trace.operator_outcomes:
            if type(outcome) is CandidateOperatorRefusal and outcome.input_digest is not None:
                assert outcome.input_digest == operator_input
    for replay in trace.replays:
        if type(replay) is ReplayResult:
            candidate_digest = oracle.problem_frame_digest(replay.candidate_frame)
            assert replay.replay_assessment.problem_frame_digest == candidate_digest
            if replay.replay_proof is not None:
                assert replay.replay_proof.contract_assessment_id == oracle.assessment_id(
                    replay.replay_assessment
                )
    outcome = trace.outcome
    if type(outcome) is ProofGatedAnswer:
        closed = {
            oracle.self_sealed_id(r): r
            for r in trace.replays
            if type(r) is ReplayResult
            and r.disposition is ReplayDisposition.CONTRACT_AND_PROOF_CLOSED
        }
        assert set(outcome.replay_ids) <= set(closed)
        if outcome.path is AnswerPath.DIRECT:
            assert outcome.proof_id == oracle.proof_id(trace.direct_proof)
        else:
            first = closed[outcome.replay_ids[0]]
            assert outcome.proof_id == oracle.proof_id(first.replay_proof)


# ------------------------------------------------------------------------------------------
# Wrong-zero: generated word problems with a known answer

NAMES = ("Tom", "Mia", "Sam", "Lena", "Omar", "Ava")
OTHERS = ("Ben", "Zoe")
PRONOUN = {"Tom": "he", "Mia": "she", "Sam": "he", "Lena": "she", "Omar": "he", "Ava": "she"}
POSSESSIVE = {"he": "his", "she": "her"}
UNITS = ("apples", "stickers", "marbles", "cookies", "pencils", "shells")
INCREASE = ("buys", "bought", "finds", "found", "gets", "receives", "collects", "wins", "picks")
DECREASE = ("eats", "ate", "loses", "lost", "sells", "sold", "uses", "gives away", "donates")
PARTICIPLES = ("eaten", "lost", "stolen", "sold", "given away", "broken", "taken")
CONTAINERS = {"bag": "bags", "box": "boxes", "jar": "jars", "basket": "baskets", "pack": "packs"}
WORDS = {
    0: "zero",
    1: "one",
    2: "two",
    3: "three",
    4: "four",
    5: "five",
    6: "six",
    7: "seven",
    8: "eight",
    9: "nine",
    10: "ten",
    11: "eleven",
    12: "twelve",
}
ASK = (
    "How many {unit} does {who} have?",
    "How many {unit} does {who} have now?",
    "How many {unit} does {who} have left?",
    "How many {unit} did {who} have left?",
)
TAILS = {1: ("", " at the market", " from the store"), -1: ("", " at the fair", " at the market")}


@dataclasses.dataclass(frozen=True)
class WordProblem:
    family: str
    text: str
    gold: int


def _count(value: int, as_word: bool) -> str:
    return WORDS[value] if as_word and value in WORDS else f"{value:,}"


@st.composite
def word_problems(draw: st.DrawFn) -> WordProblem:
    """GSM8K-style questions in several families, each with the answer it truly has (which
    may be negative: a question no count can answer, so only refusal is right). Families
    inside the reader's grammar (one active change, answered directly; a passive, container
    or "added" change, answered through practice) sit beside near misses whose naive reading
    is wrong: a change of someone else, of another unit, two changes, a rate, a question
    about the change itself, money."""
    name = draw(st.sampled_from(NAMES))
    pronoun = PRONOUN[name]
    owner = POSSESSIVE[pronoun]
    unit = draw(st.sampled_from(UNITS))
    small = draw(st.booleans())
    top = 12 if small else 5000
    initial, delta, third = (draw(st.integers(0, top)) for _ in range(3))
    as_word = small and draw(st.booleans())
    a, b, c = (_count(v, as_word) for v in (initial, delta, third))
    subject = draw(st.sampled_from((name, pronoun.capitalize())))
    who = draw(st.sampled_from((name, pronoun)))
    ask = draw(st.sampled_from(ASK)).format(unit=unit, who=who)
    sign = draw(st.sampled_from((1, -1)))
    verb = draw(st.sampled_from(INCREASE if sign > 0 else DECREASE))
    tail = draw(st.sampled_from(TAILS[sign]))
    more = draw(st.sampled_from(("", "more "))) if sign > 0 else ""
    opener = draw(st.sampled_from(("", "Then ", "Later, ")))
    start = f"{name} has {a} {unit}."
    family = draw(
        st.sampled_from(
            (
                "active",
                "container",
                "passive",
                "added",
                "two_changes",
                "someone_else",
                "other_unit",
                "rate",
                "asks_the_change",
                "money",
            )
        )
    )
    if family == "active":
        text = f"{start} {opener}{subject} {verb} {b} {more}{unit}{tail}. {ask}"
        return WordProblem(family, text, initial + sign * delta)
    if family == "container":
        box = draw(st.sampled_from(sorted(CONTAINERS)))
        text = f"{start} {opener}{subject} {verb} a {box} of {b} {unit}. {ask}"
        return WordProblem(family, text, initial + sign * delta)
    if family == "passive":
        gone = draw(st.sampled_from(PARTICIPLES))
        were = "was" if delta == 1 else "were"
        text = f"{start} {opener}{b} of {owner} {unit} {were} {gone}. {ask}"
        return WordProblem(family, text, initial - delta)
    if family == "added":
        place = draw(st.sampled_from(("basket", "box", "jar")))
        text = (
            f"{name} has {a} {unit} in {owner} {place}. {opener}{b} more {unit} were added to "
            f"{owner} {place}. {ask}"
        )
        return WordProblem(family, text, initial + delta)
    if family == "two_changes":
        verb2 = draw(st.sampled_from(DECREASE))
        joined = draw(st.booleans())
        second = f" and {verb2} {c} {unit}." if joined else f". Then {pronoun} {verb2} {c} {unit}."
        text = f"{start} {subject} {verb} {b} {more}{unit}{second} {ask}"
        return WordProblem(family, text, initial + sign * delta - third)
    if family == "someone_else":
        # Only an increase: "Ben eats 3 apples" could be read as eating the owner's apples.
        other, gain = draw(st.sampled_from(OTHERS)), draw(st.sampled_from(INCREASE))
        text = f"{start} {other} {gain} {b} {unit}. How many {unit} does {name} have?"
        return WordProblem(family, text, initial)
    if family == "other_unit":
        other_unit = draw(st.sampled_from([u for u in UNITS if u != unit]))
        text = f"{start} {subject} {verb} {b} {other_unit}. How many {unit} does {name} have?"
        return WordProblem(family, text, initial)
    if family == "rate":
        box = draw(st.sampled_from(sorted(CONTAINERS)))
        text = (
            f"{name} has {a} {CONTAINERS[box]}. Each {box} has {b} {unit}. "
            f"How many {unit} does {name} have?"
        )
        return WordProblem(family, text, initial * delta)
    if family == "asks_the_change":
        verb = draw(st.sampled_from(("buys", "finds", "collects")))
        base = {"buys": "buy", "finds": "find", "collects": "collect"}[verb]
        text = f"{start} {subject} {verb} {b} {unit}. How many {unit} did {name} {base}?"
        return WordProblem(family, text, delta)
    spent = draw(st.sampled_from(("spends", "spent", "loses", "earns", "gets")))
    money_sign = 1 if spent in ("earns", "gets") else -1
    question = "How much money does {who} have" + ("?" if money_sign > 0 else " left?")
    text = f"{name} has ${initial}. {subject} {spent} ${delta}. " + question.format(who=who)
    return WordProblem("money", text, initial + money_sign * delta)


def _answer(problem: WordProblem) -> ProofGatedAnswer | None:
    """The loop's answer to the question, or ``None`` when it refuses (reader or loop)."""
    frame = read_question(problem.text)
    if type(frame) is not ProblemFrame:
        return None
    trace = _trace(frame)
    assert verify_sealed_trace(trace).valid
    outcome = trace.outcome
    return outcome if type(outcome) is ProofGatedAnswer else None


@given(word_problems())
def test_every_answer_to_a_word_problem_is_its_true_answer(problem):
    """ADR-0226 §4, §10 (wrong-zero, ``wrong_ids == []``), §8.8: whatever the text, read and
    run through the whole loop, the case is refused or answered with the question's true
    answer; a question whose true result would be negative is never answered."""
    answer = _answer(problem)
    if answer is not None:
        assert problem.gold >= 0, problem
        assert answer.value == problem.gold, problem


def _problem_batch() -> list[WordProblem]:
    """A fixed grid of problems, every family, both directions, both answer paths."""
    batch = []
    for index, (name, unit, (initial, delta)) in enumerate(
        itertools.product(NAMES[:3], UNITS[:2], [(7, 3), (3, 7), (12, 12), (1200, 45), (0, 5)])
    ):
        pronoun = PRONOUN[name]
        owner = POSSESSIVE[pronoun]
        ask = ASK[index % len(ASK)].format(unit=unit, who=name)
        up, down = INCREASE[index % len(INCREASE)], DECREASE[index % len(DECREASE)]
        gone = PARTICIPLES[index % len(PARTICIPLES)]
        a, b = f"{initial:,}", f"{delta:,}"
        start = f"{name} has {a} {unit}."
        batch += [
            WordProblem(
                "active", f"{start} {pronoun.capitalize()} {up} {b} {unit}. {ask}", initial + delta
            ),
            WordProblem("active", f"{start} {name} {down} {b} {unit}. {ask}", initial - delta),
            WordProblem(
                "passive", f"{start} {b} of {owner} {unit} were {gone}. {ask}", initial - delta
            ),
            WordProblem(
                "container", f"{start} {name} {up} a box of {b} {unit}. {ask}", initial + delta
            ),
            WordProblem(
                "two_changes",
                f"{start} {name} {up} {b} {unit}. Then {pronoun} {down} 2 {unit}. {ask}",
                initial + delta - 2,
            ),
            WordProblem(
                "someone_else",
                f"{start} Ben {up} {b} {unit}. How many {unit} does {name} have?",
                initial,
            ),
            WordProblem(
                "other_unit",
                f"{start} {name} {up} {b} pears. How many {unit} does {name} have?",
                initial,
            ),
        ]
    return batch


def test_a_batch_of_word_problems_has_no_wrong_ids():
    """ADR-0226 §10 (evaluated lanes keep ``wrong_ids == []``), §4: over a fixed batch of
    word problems with known answers, no case is answered wrongly; the grammar's direct shape
    and its practice shape each answer (the target is not reached by refusing everything)."""
    wrong_ids, answered = [], {AnswerPath.DIRECT: 0, AnswerPath.PRACTICE: 0}
    for case_id, problem in enumerate(_problem_batch()):
        answer = _answer(problem)
        if answer is None:
            continue
        answered[answer.path] += 1
        if problem.gold < 0 or answer.value != problem.gold:
            wrong_ids.append((case_id, problem, answer.value))
    assert wrong_ids == []
    assert answered[AnswerPath.DIRECT] > 0 and answered[AnswerPath.PRACTICE] > 0


# ------------------------------------------------------------------------------------------
# Budget accounting (ADR-0228 §9) and the replay boundary (ADR-0228 §8, ADR-0231 §9, §12)


def _assert_accounting(
    run: GeometricSearchRun, budget: ComputeBudgetDecision, gate: SearchGateDecision
) -> None:
    """ADR-0228 §9, line by line, against the budget that was granted."""
    consumed, attempts = run.budget_consumed, run.candidate_attempts
    # A run exists only over an eligible gate and an allowed, non-zero, serial budget.
    assert gate.status is SearchGateStatus.ELIGIBLE
    assert budget.status is ComputeBudgetStatus.BUDGET_ALLOWED
    assert budget.max_candidates > 0 and budget.max_steps > 0 and budget.max_parallelism == 1
    # The max_* values are copied exactly from the validated budget decision.
    assert [getattr(consumed, name) for name in LIMITS] == [
        getattr(budget, name) for name in LIMITS
    ]
    assert consumed.candidates_considered == len(attempts)
    assert consumed.candidates_considered == sum(a.budget_charge.candidates for a in attempts)
    assert consumed.candidates_considered <= consumed.max_candidates
    assert consumed.depth_reached == max((a.depth for a in attempts), default=0)
    assert consumed.depth_reached <= consumed.max_depth
    assert consumed.steps_used == sum(a.budget_charge.steps for a in attempts)
    assert consumed.steps_used <= consumed.max_steps
    assert consumed.parallelism_used in (0, 1)
    assert consumed.parallelism_used <= consumed.max_parallelism == 1
    # Every attempt: one candidate unit, a positive charge, steps charged in order.
    assert all(a.budget_charge.candidates == 1 and a.budget_charge.steps > 0 for a in attempts)
    assert [a.step_index for a in attempts] == list(
        itertools.accumulate((a.budget_charge.steps for a in attempts), initial=0)
    )[:-1]
    # What is left of each limit is never negative (no refunds, no partial charges).
    for used, limit in (
        (consumed.candidates_considered, consumed.max_candidates),
        (consumed.depth_reached, consumed.max_depth),
        (consumed.steps_used, consumed.max_steps),
        (consumed.parallelism_used, consumed.max_parallelism),
    ):
        assert limit - used >= 0
    # exhausted only when a ceiling stopped an otherwise admissible attempt; an empty or
    # depleted operator space claims no consumption.
    budget_codes = {
        RunExhaustionCode.MAX_CANDIDATES_REACHED,
        RunExhaustionCode.MAX_DEPTH_REACHED,
        RunExhaustionCode.MAX_STEPS_REACHED,
    }
    assert consumed.exhausted == (run.exhaustion_code in budget_codes)
    if run.exhaustion_code in (
        RunExhaustionCode.OPERATOR_SET_EMPTY,
        RunExhaustionCode.OPERATOR_SPACE_DEPLETED,
    ):
        assert not attempts and consumed.steps_used == consumed.candidates_considered == 0
        assert run.run_disposition is RunDisposition.EXHAUSTED_NO_CANDIDATE


@share(2)
@given(loop_frames_and_cap)
def test_every_run_of_the_loop_keeps_the_budget_accounting_equations(frame):
    """ADR-0228 §9 (and ADR-0227 §9): a run (opened or recorded) exists only under an
    eligible gate and an allowed, non-zero, serial budget, copies its ceiling from that
    budget exactly, and its accounting satisfies every §9 equation; a refused run carries no
    attempt and consumes nothing; an operator that refuses leaves the run depleted with
    nothing consumed (exhausted false)."""
    trace = _trace(frame)
    run, opened = trace.run_outcome, trace.opened_run
    if run is None:
        assert trace.original_assessment.status is AssessmentStatus.RUNNABLE
        return
    if type(run) is SearchRunRefusal:
        assert opened is None and trace.operator_outcomes == () and trace.replays == ()
        assert not hasattr(run, "budget_consumed") and not hasattr(run, "candidate_attempts")
        return
    assert [getattr(opened, name) for name in LIMITS] == [
        getattr(trace.budget_decision, name) for name in LIMITS
    ]
    _assert_accounting(run, trace.budget_decision, trace.gate_decision)
    if all(type(o) is CandidateOperatorRefusal for o in trace.operator_outcomes):
        assert run.exhaustion_code is RunExhaustionCode.OPERATOR_SPACE_DEPLETED
        assert not run.budget_consumed.exhausted


@share(2)
@given(chains())
def test_every_inert_run_keeps_the_budget_accounting_equations(chain):
    """ADR-0228 §9, §13: under ``geometric_search_run.v1`` and the empty operator set, every
    frame-reachable gate reason either refuses the run (no run, nothing consumed) or gives
    the inert run whose accounting is zero against the granted ceiling."""
    run = run_outcome(chain)
    assert run.run_policy_version in (GEOMETRIC_SEARCH_RUN_POLICY_VERSION, "")
    if type(run) is SearchRunRefusal:
        assert not (
            chain.gate.status is SearchGateStatus.ELIGIBLE
            and chain.budget.status is ComputeBudgetStatus.BUDGET_ALLOWED
        )
        return
    assert chain.operator_set == EMPTY_OPERATOR_SET
    _assert_accounting(run, chain.budget, chain.gate)
    assert run.exhaustion_code is RunExhaustionCode.OPERATOR_SET_EMPTY


@share(2)
@given(problem_frames(**ELIGIBLE_ONE_CUE, max_value=12) | st.just(SPAN_CAP_FRAME))
def test_attempts_stay_replay_pending_and_candidate_digests_never_collapse(frame):
    """ADR-0228 §8, §12, ADR-0231 §9, §12, §17, docs/adr/0006 (isolation): the operator's
    attempt is replay_pending with no blockers, in the result and in the run, whatever the
    replay then says; the run keeps candidate_replay_pending; the replay is a new record
    naming the same attempt and candidate; and the candidate digest (content) never equals
    the candidate reconstruction digest (envelope) in the result, the reconstruction, the
    attempt or the replay."""
    trace = _trace(frame)
    (result,) = trace.operator_outcomes
    assert type(result) is CandidateOperatorResult
    run = trace.run_outcome
    assert run.run_disposition is RunDisposition.CANDIDATE_REPLAY_PENDING
    for attempt in (result.candidate_attempt, *run.candidate_attempts):
        assert attempt.replay_status is CandidateReplayStatus.REPLAY_PENDING
        assert attempt.replay_blockers == ()
    assert run.candidate_attempts == (result.candidate_attempt,)
    rebuilt = result.reconstruction
    assert result.candidate_digest != result.candidate_reconstruction_digest
    assert rebuilt.candidate_digest != rebuilt.candidate_reconstruction_digest
    assert oracle.candidate_digest(rebuilt) != oracle.candidate_reconstruction_digest(rebuilt)
    assert result.candidate_attempt.candidate_digest == rebuilt.candidate_digest
    assert result.candidate_attempt.candidate_digest != rebuilt.candidate_reconstruction_digest
    (replay,) = trace.replays
    if type(replay) is ReplayResult:
        assert (replay.attempt_id, replay.candidate_digest) == (
            result.attempt_id,
            result.candidate_digest,
        )
        assert replay.candidate_reconstruction_digest == result.candidate_reconstruction_digest
        assert replay.candidate_digest != replay.candidate_reconstruction_digest
        closed = replay.disposition is ReplayDisposition.CONTRACT_AND_PROOF_CLOSED
        assert closed == (
            replay.replay_proof is not None and replay.replay_proof.status is ProofStatus.CLOSED
        )
        assert (type(trace.outcome) is ProofGatedAnswer) == closed
    else:
        assert type(replay) is ReplayRefusal
        assert replay.candidate_reconstruction_digest == result.candidate_reconstruction_digest
        assert type(trace.outcome) is AnswerRefusal


def test_the_span_cap_frame_reaches_a_replay_refusal():
    """docs/adr/0006 (candidate_not_applicable): the loop_frames strategy's fixed frame
    reaches the adapter's refusal, so the properties above cover ReplayRefusal too."""
    trace = _trace(SPAN_CAP_FRAME)
    (replay,) = trace.replays
    assert type(replay) is ReplayRefusal
    assert replay.reason_codes == ("candidate_not_applicable",)
    assert replay.replay_refusal_id == oracle.self_sealed_id(replay)


FIXED_FRAMES = {e.name: e.frame for e in shipped_examples()} | {"span_cap": SPAN_CAP_FRAME}


@pytest.mark.parametrize("name", sorted(FIXED_FRAMES))
def test_the_fixed_frames_agree_with_the_oracle_and_reword_cleanly(name):
    """0003, 0006, 0007: the hand-written examples, one per path, and the span-cap frame
    (the only path to a ReplayRefusal) pass the oracle and rewording checks of the
    properties above, every record kind at every depth, and every stage reworded in turn."""
    trace = _trace(FIXED_FRAMES[name])
    _assert_oracle_agrees(trace)
    assert trace.stage_digests == _oracle_stage_digests(trace)
    _assert_rewording_changes_no_identity(trace, "reworded: ")
    driven = _drive(trace.frame, lambda stage, record: _reworded(record, "again: "))
    assert driven.trace_id == trace.trace_id
    assert verify_sealed_trace(driven) == TraceVerification(trace.trace_id, ())
    assert build_chain(trace.frame).assessment == trace.original_assessment
