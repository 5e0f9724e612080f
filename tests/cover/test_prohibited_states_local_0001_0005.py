"""Tests that kill the prohibited-state mutants of docs/mutants/local-0001-0005.toml which the
tests already naming their obligations let through (issue 17: tests that fail when they
should). Each names the rule of docs/adr/0002, 0003 or 0004 it proves and asserts the exact
value the rule fixes."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given, settings

from practice_loop.kernel import (
    EMPTY_OPERATOR_SET,
    GEOMETRIC_SEARCH_RUN_V2_POLICY_VERSION,
    AssessmentStatus,
    BudgetCharge,
    CandidateAttempt,
    CandidateReplayStatus,
    Defect,
    Direction,
    GateReason,
    GeometricSearchRun,
    GroundedUnaryDeltaCue,
    OpenedSearchRun,
    OperatorManifestRow,
    OperatorSetManifest,
    RecordError,
    Role,
    RunDisposition,
    RunExhaustionCode,
    SearchGateStatus,
    SearchRunRefusal,
    SourceSpan,
    Stage,
    StageRefusal,
    assess,
    canonical_json,
    check_proof,
    decide_compute_budget,
    decide_search_gate,
    open_search_run,
    operator_set_id,
    record_attempts,
)
from practice_loop.kernel.budget import BudgetLimits, BudgetPolicyRow, ComputeBudgetStatus
from practice_loop.kernel.frame import (
    MAX_EVIDENCE_CHARS,
    MAX_SOURCE_LENGTH,
    PROBLEM_FRAME_SCHEMA_VERSION,
    UNARY_DELTA_ORGAN,
    FrameHazard,
    HazardCode,
    ProblemFrame,
)
from practice_loop.kernel.record import checked_canonical_bytes
from practice_loop.kernel.refusal import refuse
from practice_loop.kernel.search_run import (
    REFUSAL_TABLE,
    RunRefusalReason,
    admit_within_ceiling,
    refusal_disposition,
)
from practice_strategies import (
    FRAME_RECIPES,
    Chain,
    build_chain,
    chains,
    eligible_chains,
    other_digest,
    tampered,
)
from practice_strategies.frames import problem_frames

FEW = settings(max_examples=5)


@pytest.mark.obligation("LOCAL-0002/rule_3")
@FEW
@given(runnable=chains(GateReason.ASSESSMENT_RUNNABLE), refused=eligible_chains())
def test_runnable_assessment_with_residuals_is_a_context_mismatch(
    runnable: Chain, refused: Chain
) -> None:
    """docs/adr/0002 rule 3: for a runnable assessment the only complete context is (); any
    residual given with it is not its projection, so the gate answers
    gate_unassessable_residual_context_mismatch (UNASSESSABLE), never rule 4's BLOCKED."""
    assert runnable.assessment.status is AssessmentStatus.RUNNABLE
    decision = decide_search_gate(runnable.assessment, refused.residuals)
    assert decision.reason_code == "gate_unassessable_residual_context_mismatch"
    assert decision.status is SearchGateStatus.UNASSESSABLE
    assert decision.residual_ids == tuple(r.residual_id for r in refused.residuals)


@pytest.mark.obligation("LOCAL-0002/rule_4")
@FEW
@given(chain=chains(GateReason.ASSESSMENT_RUNNABLE))
def test_runnable_assessment_is_blocked(chain: Chain) -> None:
    """docs/adr/0002 rule 4: a runnable assessment with the empty context is BLOCKED with
    gate_blocked_assessment_runnable: there is nothing to search, and it is a denial."""
    decision = decide_search_gate(chain.assessment, ())
    assert decision.reason_code == "gate_blocked_assessment_runnable"
    assert decision.status is SearchGateStatus.BLOCKED
    assert decision.allowed is False
    assert decision.residual_ids == ()


@pytest.mark.obligation("LOCAL-0002/rule_7")
@FEW
@given(
    frame=problem_frames(
        hazard_count=0,
        proposal_count=1,
        with_target=True,
        bound_roles={Role.INITIAL, Role.DELTA},
    )
)
def test_two_classified_residuals_are_ineligible(frame) -> None:
    """docs/adr/0002 rule 7: more than one residual, even exactly two and both of searchable
    kinds (direction_unbound, target_unbound), makes the context INELIGIBLE with
    gate_ineligible_multiple_residuals."""
    chain = build_chain(frame)
    assert [r.residual_code for r in chain.residuals] == ["direction_unbound", "target_unbound"]
    decision = decide_search_gate(chain.assessment, chain.residuals)
    assert decision.reason_code == "gate_ineligible_multiple_residuals"
    assert decision.status is SearchGateStatus.INELIGIBLE
    assert decision.residual_ids == tuple(r.residual_id for r in chain.residuals)


@pytest.mark.obligation("LOCAL-0003/unvalidated_identity")
@FEW
@given(chain=eligible_chains())
def test_budget_over_unreproducible_gate_names_no_gate(chain: Chain) -> None:
    """docs/adr/0003 "Unvalidated upstream identity": a budget over a gate whose decision_id
    does not reproduce records the gate's str-typed identities as "" (ADR-0227 §5), never
    the ids the gate claims."""
    gate = tampered(chain.gate, decision_id=other_digest(chain.gate.decision_id))
    budget = decide_compute_budget(gate)
    assert budget.reason_code == "budget_unassessable_gate_identity_mismatch"
    assert (budget.gate_decision_id, budget.gate_policy_version, budget.gate_input_digest) == (
        "",
        "",
        "",
    )
    assert budget.evidence_spans == ()


def _row(name: str) -> OperatorManifestRow:
    return OperatorManifestRow(
        operator_name=name,
        operator_version=f"{name}.v1",
        allowed_residual_kinds=("missing_role",),
        allowed_residual_codes=("direction_unbound",),
        allowed_candidate_organs=("unary_delta_transition",),
        max_attempts_per_run=1,
        budget_charge=BudgetCharge(1, 1),
        depth=1,
        max_parallelism=1,
        schema_versions=(("problem_frame", "problem_frame.v1"),),
        policy_versions=(("compute_budget", "compute_budget.v1"),),
        input_obligations=("single_grounded_cue",),
        output_candidate_shape="role_binding_delta",
        ordering_key=("attempt_index",),
        forbidden_side_effects=("mutation", "io"),
        replay_obligations=("contract_replay", "proof_replay"),
    )


@pytest.mark.obligation("LOCAL-0004/operator_manifest")
def test_operator_set_id_hashes_the_rows_in_order() -> None:
    """docs/adr/0004 "Operator set": operator_set_id is the digest of the whole manifest in
    order, so the same two rows in the other order are another operator set."""
    first, second = _row("alpha_candidate"), _row("beta_candidate")
    forward = OperatorSetManifest("candidate_operators.v1", (first, second))
    backward = OperatorSetManifest("candidate_operators.v1", (second, first))
    assert operator_set_id(forward) != operator_set_id(backward)
    assert operator_set_id(forward) == forward.content_digest(drop_explanations=True)
    assert operator_set_id(backward) == backward.content_digest(drop_explanations=True)


@pytest.mark.obligation("LOCAL-0003/rfc8785")
def test_non_ascii_text_is_written_as_jcs_writes_it() -> None:
    """docs/adr/0003 "RFC 8785": for ASCII keys our bytes are the JCS bytes, and JCS (RFC 8785
    §3.2.2.2) writes every character outside the control range as itself in UTF-8, escaping
    only the quote, the backslash and control characters (short forms where JSON has them,
    else lowercase \\u00xx)."""
    payload = {"b": "\u00e9\u20ac\U0001f600\u2028", "a": "q\"\\\n\t\x01\x7f"}
    expected = '{"a":"q\\"\\\\\\n\\t\\u0001\x7f","b":"\u00e9\u20ac\U0001f600\u2028"}'
    assert canonical_json(payload) == expected.encode("utf-8")


@pytest.mark.obligation("LOCAL-0003/value_encoding")
def test_enums_are_encoded_by_value_in_bytes_and_identities() -> None:
    """docs/adr/0003 "Encoding values": an enum is its value string, a record the object of
    its fields and a span text/start/end/sentence_index, in the bytes a stage hashes as in
    the record's JSON form."""
    cue = GroundedUnaryDeltaCue(Direction.INCREASE, SourceSpan("more", 5, 9, 0))
    assert checked_canonical_bytes(cue, GroundedUnaryDeltaCue) == (
        b'{"direction":"increase","span":{"end":9,"sentence_index":0,"start":5,"text":"more"}}'
    )
    refusal = refuse(Stage.RESIDUAL, "assessment_runnable")
    payload = refusal.identity_payload()
    assert payload["stage"] == "residual"
    assert refusal.refusal_id == hashlib.sha256(canonical_json(payload)).hexdigest()


@pytest.mark.obligation("LOCAL-0003/span_rules")
@pytest.mark.parametrize("start", [0, 3])
def test_empty_span_is_not_well_formed(start: int) -> None:
    """docs/adr/0003 "Encoding values": a span is well formed only when 0 <= start < end; an
    empty span (start == end, empty text) is span_empty_or_inverted, even though its length
    agrees with its offsets."""
    with pytest.raises(RecordError) as raised:
        SourceSpan("", start, start, 0)
    assert raised.value.found.defect is Defect.SPAN_EMPTY_OR_INVERTED
    assert raised.value.found.field == "end"


@pytest.mark.obligation("LOCAL-0003/stages_reinspect")
@FEW
@given(chain=chains(GateReason.ASSESSMENT_RUNNABLE))
def test_proof_reinspects_a_frame_altered_after_construction(chain: Chain) -> None:
    """docs/adr/0003 "Stages re-inspect": a frame of the right type altered with
    object.__setattr__ is re-inspected by the proof stage and refused as frame_malformed with
    its defect, not proved and not compared as if it were well formed."""
    altered = tampered(chain.frame, schema_version="problem_frame.v2")
    refusal = check_proof(altered, chain.assessment)
    assert type(refusal) is StageRefusal
    assert refusal.stage is Stage.PROOF
    assert refusal.reason_codes == ("frame_malformed", "version_unsupported")
    assert refusal.subject_digest is None


@pytest.mark.obligation("LOCAL-0004/v2_open_then_record")
@FEW
@given(frame=problem_frames(**FRAME_RECIPES[GateReason.ELIGIBLE_MISSING_ROLE]))
def test_v2_over_the_empty_set_opens_then_records_no_attempt(frame) -> None:
    """docs/adr/0004 "v2 opens, then records": under geometric_search_run.v2 even the empty
    operator set opens a run (no attempts, its own sealed run_id), and record_attempts then
    yields the final run naming it, exhausted_no_candidate / operator_set_empty."""
    chain = build_chain(frame, run_policy_version=GEOMETRIC_SEARCH_RUN_V2_POLICY_VERSION)
    assert chain.search_input is not None
    opened = open_search_run(chain.search_input, chain.gate, chain.budget, EMPTY_OPERATOR_SET)
    assert type(opened) is OpenedSearchRun
    assert opened.run_id == opened.compute_id()
    final = record_attempts(opened, EMPTY_OPERATOR_SET, ())
    assert type(final) is GeometricSearchRun
    assert final.opened_run_id == opened.run_id
    assert final.run_policy_version == GEOMETRIC_SEARCH_RUN_V2_POLICY_VERSION
    assert final.candidate_attempts == ()
    assert final.run_disposition is RunDisposition.EXHAUSTED_NO_CANDIDATE
    assert final.exhaustion_code is RunExhaustionCode.OPERATOR_SET_EMPTY


@pytest.mark.obligation("LOCAL-0004/admission")
def test_an_attempt_at_exactly_max_depth_is_admitted() -> None:
    """docs/adr/0004 "Admission": an attempt is stopped by depth only when depth > max_depth;
    one at exactly max_depth fits, and the first deeper one stops the run with
    max_depth_reached, every earlier attempt kept."""
    ceiling = (5, 2, 10)  # max_candidates, max_depth, max_steps
    assert admit_within_ceiling(((1, 1, 1), (1, 1, 2)), ceiling) == (2, None)
    assert admit_within_ceiling(((1, 1, 2), (1, 1, 3), (1, 1, 1)), ceiling) == (
        1,
        RunExhaustionCode.MAX_DEPTH_REACHED,
    )


def _attempt(row: OperatorManifestRow, status: CandidateReplayStatus) -> CandidateAttempt:
    return CandidateAttempt.sealed(
        attempt_index=0,
        parent_attempt_id=None,
        operator_id=row.operator_name,
        operator_version=row.operator_version,
        input_digest="a" * 64,
        candidate_digest="c" * 64,
        budget_charge=row.budget_charge,
        depth=row.depth,
        step_index=0,
        replay_status=status,
        replay_blockers=("contract_refused",) if status is REPLAY_REFUSED else (),
        evidence_spans=(),
        explanation=status.value,
    )


REPLAY_REFUSED = CandidateReplayStatus.REPLAY_REFUSED


@pytest.mark.obligation("LOCAL-0004/reserved_dispositions")
@FEW
@given(frame=problem_frames(**FRAME_RECIPES[GateReason.ELIGIBLE_MISSING_ROLE]))
def test_record_attempts_refuses_attempts_that_are_not_pending(frame) -> None:
    """docs/adr/0004 "Reserved dispositions": candidate_replay_closed and _refused stay
    reserved; record_attempts accepts replay_pending attempts only and refuses the whole run
    (attempt_not_pending, invalid_input) for a closed or refused one."""
    row = _row("missing_role_candidate")
    manifest = OperatorSetManifest("candidate_operators.v1", (row,))
    chain = build_chain(
        frame, operator_set=manifest, run_policy_version=GEOMETRIC_SEARCH_RUN_V2_POLICY_VERSION
    )
    assert chain.search_input is not None
    opened = open_search_run(chain.search_input, chain.gate, chain.budget, manifest)
    assert type(opened) is OpenedSearchRun
    pending = record_attempts(
        opened, manifest, (_attempt(row, CandidateReplayStatus.REPLAY_PENDING),)
    )
    assert type(pending) is GeometricSearchRun
    assert pending.run_disposition is RunDisposition.CANDIDATE_REPLAY_PENDING
    for status in (CandidateReplayStatus.REPLAY_CLOSED, REPLAY_REFUSED):
        refusal = record_attempts(opened, manifest, (_attempt(row, status),))
        assert type(refusal) is SearchRunRefusal
        assert refusal.reason_codes == ("attempt_not_pending",)
        assert refusal.run_disposition is RunDisposition.INVALID_INPUT


@pytest.mark.obligation("LOCAL-0004/refusal_table")
def test_each_refusal_reason_has_its_one_disposition() -> None:
    """docs/adr/0004 "Initialization order": REFUSAL_TABLE maps required_record_absent to
    not_started, gate_not_eligible to blocked_by_gate, budget_not_allowed and
    budget_ceiling_zero to blocked_by_budget, and every other reason to invalid_input."""
    special = {
        RunRefusalReason.REQUIRED_RECORD_ABSENT: RunDisposition.NOT_STARTED,
        RunRefusalReason.GATE_NOT_ELIGIBLE: RunDisposition.BLOCKED_BY_GATE,
        RunRefusalReason.BUDGET_NOT_ALLOWED: RunDisposition.BLOCKED_BY_BUDGET,
        RunRefusalReason.BUDGET_CEILING_ZERO: RunDisposition.BLOCKED_BY_BUDGET,
    }
    for reason in RunRefusalReason:
        expected = special.get(reason, RunDisposition.INVALID_INPUT)
        assert refusal_disposition(reason) is expected, reason
        assert REFUSAL_TABLE[reason] is expected, reason


def _evidence_frame(span_count: int) -> ProblemFrame:
    source = "a" * MAX_SOURCE_LENGTH
    span = SourceSpan(source, 0, len(source), 0)
    hazard = FrameHazard(HazardCode.MULTIPLE_CHANGES, (span,) * span_count)
    return ProblemFrame(
        PROBLEM_FRAME_SCHEMA_VERSION, UNARY_DELTA_ORGAN, source, (), (), (), None, (hazard,)
    )


@pytest.mark.obligation("LOCAL-0005/frame_caps")
def test_span_text_beyond_the_evidence_cap_is_refused() -> None:
    """docs/adr/0005 "Frame": the frame's span text is capped at MAX_EVIDENCE_CHARS (20,000)
    over all its spans, whatever their number: two full-source spans fit, a third is
    sequence_too_long."""
    assert 2 * MAX_SOURCE_LENGTH == MAX_EVIDENCE_CHARS
    assert len(_evidence_frame(2).all_spans()) == 2
    with pytest.raises(RecordError) as raised:
        _evidence_frame(3)
    assert (raised.value.found.field, raised.value.found.defect) == ("$", Defect.SEQUENCE_TOO_LONG)


@pytest.mark.obligation("LOCAL-0005/runnable_iff_no_blocker")
@FEW
@given(chain=chains(GateReason.ASSESSMENT_RUNNABLE))
def test_a_frame_altered_after_construction_is_refused_not_judged(chain: Chain) -> None:
    """docs/adr/0005 "Contract": a malformed frame is not judged. A runnable frame altered with
    object.__setattr__ is re-inspected by assess and refused (frame_malformed with its
    defect), never given an assessment."""
    altered = tampered(chain.frame, schema_version="problem_frame.v2")
    refusal = assess(altered)
    assert type(refusal) is StageRefusal
    assert refusal.stage is Stage.ASSESSMENT
    assert refusal.reason_codes == ("frame_malformed", "version_unsupported")


@pytest.mark.obligation("LOCAL-0005/budget_codes")
def test_a_zero_row_must_grant_nothing() -> None:
    """docs/adr/0005 "Budget reason codes": BUDGET_ZERO comes only from a row whose limits are
    all zero; a BUDGET_ZERO row that grants any limit is inconsistent_fields on its limits."""
    zero = BudgetPolicyRow(
        "eligible_missing_role",
        ComputeBudgetStatus.BUDGET_ZERO,
        "budget_zero_missing_role",
        BudgetLimits(0, 0, 0, 0),
    )
    assert zero.limits.all_zero()
    with pytest.raises(RecordError) as raised:
        BudgetPolicyRow(
            "eligible_missing_role",
            ComputeBudgetStatus.BUDGET_ZERO,
            "budget_zero_missing_role",
            BudgetLimits(1, 0, 1, 1),
        )
    assert (raised.value.found.field, raised.value.found.defect) == (
        "limits",
        Defect.INCONSISTENT_FIELDS,
    )
