"""The first candidate operator, missing_role_candidate.v1: ADR-0231 §6-§14, §17, §18.

Every identity is recomputed with ``practice_strategies.oracle`` (ADR-0231 §18, additional
controls), never with the kernel's hashing helpers. Obligations §18.20-22 (no reachable
search/repair/replay/serve call, no dynamic/ambient identity, no reverse dependency) are
structural and proved by ``tests/architecture/test_imports.py``
(``test_operator_depends_only_on_value_types``, ``test_no_module_imports_the_operator_upstream``
and the forbidden-builtin/stdlib-only checks); they are not repeated here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import practice_loop.kernel as kernel
from practice_loop.harness.catalogue.forging import UNREGISTERED_OPERATOR_SET_VERSION
from practice_loop.harness.examples import direction_unbound
from practice_loop.kernel import (
    CANDIDATE_OPERATOR_POLICY_VERSION,
    CANDIDATE_OPERATOR_SET,
    CANDIDATE_OPERATOR_SET_ID,
    CANDIDATE_OPERATOR_SET_V1,
    COMPUTE_BUDGET_IN_FORCE,
    EMPTY_OPERATOR_SET,
    GEOMETRIC_SEARCH_RUN_V2_POLICY_VERSION,
    MISSING_ROLE_CANDIDATE_POLICY,
    SEARCH_GATE_IN_FORCE,
    BudgetCharge,
    CandidateAttempt,
    CandidateOperatorInput,
    CandidateOperatorPolicy,
    CandidateOperatorRefusal,
    CandidateOperatorResult,
    CandidateReconstruction,
    CandidateReplayStatus,
    ComputeBudgetDecision,
    ComputeBudgetStatus,
    ContractAssessment,
    ContractResidual,
    Defect,
    GateReason,
    GeometricSearchRun,
    OpenedSearchRun,
    OperatorRefusalReason,
    OperatorSetManifest,
    ProblemFrame,
    RecordError,
    Role,
    RoleBindingDelta,
    RunDisposition,
    RunExhaustionCode,
    SearchGateDecision,
    SearchGateStatus,
    SourceSpan,
    candidate_operator_input,
    canonical_json,
    decide_compute_budget,
    decode_canonical,
    open_search_run,
    operator_set_id,
    propose_candidate,
    record_attempts,
)
from practice_loop.kernel.operators import (
    CANDIDATE_OPERATOR_SETS,
    POLICY_VERSIONS,
    SCHEMA_VERSIONS,
)
from practice_loop.kernel.record import inspect_record, record_from_json
from practice_loop.kernel.search_run import search_input_for
from practice_strategies import (
    ALL_ROLES,
    FRAME_RECIPES,
    Impostor,
    build_chain,
    fields_for_sealing,
    neighbouring_digest,
    oracle,
    other_digest,
    problem_frames,
    resealed,
    share,
    tampered,
)
from practice_strategies.vocabulary import FORBIDDEN_OUTPUT_FIELDS

R = OperatorRefusalReason
RECIPE = FRAME_RECIPES[GateReason.ELIGIBLE_MISSING_ROLE]
ROW = CANDIDATE_OPERATOR_SET.operators[0]


# ------------------------------------------------------------------------------------------
# A valid operator context, and ways to corrupt it


@dataclasses.dataclass(frozen=True)
class Context:
    """Every record the operator consumes, each produced by its own stage (or forged)."""

    frame: ProblemFrame
    assessment: ContractAssessment
    residual: ContractResidual
    gate: SearchGateDecision
    budget: ComputeBudgetDecision
    opened: OpenedSearchRun
    operator_input: CandidateOperatorInput

    def arguments(self) -> dict[str, Any]:
        return {
            "operator_input": self.operator_input,
            "frame": self.frame,
            "assessment": self.assessment,
            "residual": self.residual,
            "gate_decision": self.gate,
            "budget_decision": self.budget,
            "opened_run": self.opened,
            "operator_set": CANDIDATE_OPERATOR_SET,
            "policy": MISSING_ROLE_CANDIDATE_POLICY,
        }


def _input_for(
    assessment, residual, gate, budget, opened, attempt_index: int = 0
) -> CandidateOperatorInput:
    return candidate_operator_input(
        assessment=assessment,
        residual=residual,
        gate_decision=gate,
        budget_decision=budget,
        opened_run=opened,
        attempt_index=attempt_index,
    )


def context_of(frame: ProblemFrame) -> Context:
    """The chain of ``frame`` under the candidate operator set and a v2 run."""
    chain = build_chain(
        frame,
        operator_set=CANDIDATE_OPERATOR_SET,
        run_policy_version=GEOMETRIC_SEARCH_RUN_V2_POLICY_VERSION,
    )
    opened = open_search_run(chain.search_input, chain.gate, chain.budget, CANDIDATE_OPERATOR_SET)
    assert type(opened) is OpenedSearchRun, opened
    assert len(chain.residuals) == 1
    residual = chain.residuals[0]
    operator_input = _input_for(chain.assessment, residual, chain.gate, chain.budget, opened)
    return Context(
        chain.frame, chain.assessment, residual, chain.gate, chain.budget, opened, operator_input
    )


def contexts(cue_count: int = 1, **knobs: Any) -> st.SearchStrategy[Context]:
    """Contexts whose one residual is direction_unbound (the recipe binds every other role)."""
    return problem_frames(**{**RECIPE, "cue_count": cue_count, **knobs}).map(context_of)


def propose(ctx: Context, **overrides: Any):
    arguments = ctx.arguments()
    arguments.update(overrides)
    return propose_candidate(arguments.pop("operator_input"), **arguments)


def forged(
    ctx: Context,
    *,
    residual: ContractResidual | None = None,
    gate: dict[str, Any] | None = None,
    budget: dict[str, Any] | None = None,
    run: dict[str, Any] | None = None,
    decide_budget: bool = False,
    attempt_index: int = 0,
) -> Context:
    """The context with some records changed and every record after them rebound to them:
    each forged record is well formed and self-seals, gate -> budget -> run -> input all
    name each other, so only the operator's own semantic checks can tell."""
    residual = residual or ctx.residual
    new_gate = tampered(ctx.gate, **{"residual_ids": (residual.residual_id,), **(gate or {})})
    new_gate = resealed(new_gate, input_digest=oracle.gate_input_digest(new_gate))
    assert inspect_record(new_gate, SearchGateDecision) is None
    if decide_budget:
        new_budget = decide_compute_budget(new_gate)
    else:
        binding = {
            "gate_decision_id": new_gate.decision_id,
            "gate_input_digest": new_gate.input_digest,
        }
        new_budget = resealed(ctx.budget, **{**binding, **(budget or {})})
    assert inspect_record(new_budget, ComputeBudgetDecision) is None
    binding = {
        "residual_ids": new_gate.residual_ids,
        "gate_decision_id": new_gate.decision_id,
        "budget_id": new_budget.budget_id,
    }
    opened = OpenedSearchRun.sealed(**fields_for_sealing(ctx.opened, **{**binding, **(run or {})}))
    operator_input = _input_for(
        ctx.assessment, residual, new_gate, new_budget, opened, attempt_index
    )
    return dataclasses.replace(
        ctx,
        residual=residual,
        gate=new_gate,
        budget=new_budget,
        opened=opened,
        operator_input=operator_input,
    )


def forged_residual(ctx: Context, **changes: Any) -> Context:
    """The residual changed together with the assessment blocker it projects, so that it
    stays a faithful projection (the operator checks that first), and everything after the
    assessment rebound to it."""
    blocker = ctx.assessment.blockers[ctx.residual.blocker_index]
    mirrored = {name: changes[name] for name in ("evidence_spans", "role") if name in changes}
    assessment = resealed(ctx.assessment, blockers=(tampered(blocker, **mirrored),))
    residual = resealed(ctx.residual, contract_assessment_id=assessment.assessment_id, **changes)
    rebound = {"contract_assessment_id": assessment.assessment_id}
    return forged(
        dataclasses.replace(ctx, assessment=assessment),
        residual=residual,
        gate=rebound,
        run=rebound,
    )


def _assert_refused(outcome: object, reason: OperatorRefusalReason) -> CandidateOperatorRefusal:
    assert type(outcome) is CandidateOperatorRefusal, outcome
    assert outcome.reason_codes == (reason.value,)
    assert outcome.operator_policy_version == CANDIDATE_OPERATOR_POLICY_VERSION
    assert outcome.operator_name == "missing_role_candidate"
    assert outcome.operator_refusal_id == oracle.operator_refusal_id(outcome)
    # ADR-0231 §8.3, §17: no partial candidate; nothing is consumed.
    for name in ("candidate_attempt", "reconstruction", "candidate_digest", "attempt_id"):
        assert not hasattr(outcome, name)
    return outcome


def _assert_result(outcome: object) -> CandidateOperatorResult:
    assert type(outcome) is CandidateOperatorResult, outcome
    return outcome


def _bytes(record: Any) -> bytes:
    return canonical_json(record.to_json())


# ------------------------------------------------------------------------------------------
# §18.1-2: exports, the one-row operator set and its identity


# §18.1 (exact exports) is pinned once, for the whole façade, in test_public_api.py.


def _assert_the_authorized_row(row) -> None:
    """ADR-0231 §6: the closed constraints of missing_role_candidate.v1, which every set that
    holds it keeps (widening any of them needs a new ADR)."""
    assert (row.operator_name, row.operator_version) == (
        "missing_role_candidate",
        "missing_role_candidate.v1",
    )
    assert row.allowed_residual_kinds == ("missing_role",)
    assert row.allowed_residual_codes == ("direction_unbound",)
    assert row.allowed_candidate_organs == ("unary_delta_transition",)
    assert row.max_attempts_per_run == 1
    assert row.budget_charge == BudgetCharge(candidates=1, steps=1)
    assert (row.depth, row.max_parallelism) == (1, 1)
    assert row.schema_versions == SCHEMA_VERSIONS


@pytest.mark.obligation(
    "ADR-0231/18.1",
    "ADR-0231/18.only_v1_operator",
    "LOCAL-0008/policy_and_table",
)
def test_operator_set_is_exactly_the_one_authorized_row():
    """ADR-0231 §18.1, §6, §10 and §18 'only missing_role_candidate.v1 is present': one row,
    with the closed v1 constraints and nothing else."""
    # ADR-0231 §10's table, candidate_operators.v1, registered with exactly that value.
    assert CANDIDATE_OPERATOR_SET_V1.operator_set_version == "candidate_operators.v1"
    (v1_row,) = CANDIDATE_OPERATOR_SET_V1.operators
    _assert_the_authorized_row(v1_row)
    assert v1_row.policy_versions == (
        ("candidate_operator", "candidate_operator.v1"),
        ("compute_budget", "compute_budget.v1"),
        ("geometric_search_run", "geometric_search_run.v2"),
        ("search_gate", "search_gate.v1"),
    )
    assert CANDIDATE_OPERATOR_SETS["candidate_operators.v1"] == CANDIDATE_OPERATOR_SET_V1
    # The set in force (v1, or a proven successor put in force) is registered, holds that one
    # row and nothing else, and pins the budget and gate versions in force.
    version = CANDIDATE_OPERATOR_SET.operator_set_version
    assert CANDIDATE_OPERATOR_SETS[version] is CANDIDATE_OPERATOR_SET
    assert CANDIDATE_OPERATOR_SET.operators == (ROW,)
    _assert_the_authorized_row(ROW)
    assert ROW.policy_versions == POLICY_VERSIONS
    assert POLICY_VERSIONS == (
        ("candidate_operator", "candidate_operator.v1"),
        ("compute_budget", COMPUTE_BUDGET_IN_FORCE.version),
        ("geometric_search_run", "geometric_search_run.v2"),
        ("search_gate", SEARCH_GATE_IN_FORCE.version),
    )


@pytest.mark.obligation("LOCAL-0008/policy_and_table")
def test_policy_is_the_one_the_adr_names():
    """ADR-0231 §4, §6, §7.1: candidate_operator.v1 for residual_missing_role, direction only."""
    policy = MISSING_ROLE_CANDIDATE_POLICY
    assert policy.operator_policy_version == CANDIDATE_OPERATOR_POLICY_VERSION
    assert CANDIDATE_OPERATOR_POLICY_VERSION == "candidate_operator.v1"
    assert policy.operator_family == "residual_missing_role"
    assert (policy.operator_name, policy.operator_version) == (
        ROW.operator_name,
        ROW.operator_version,
    )
    assert policy.allowed_residual_kinds == ROW.allowed_residual_kinds
    assert policy.allowed_residual_codes == ROW.allowed_residual_codes
    assert policy.allowed_candidate_organs == ROW.allowed_candidate_organs
    assert policy.max_attempts_per_run == ROW.max_attempts_per_run == 1
    assert policy.budget_charge == ROW.budget_charge
    assert (policy.depth, policy.max_parallelism) == (1, 1)


@pytest.mark.obligation("ADR-0231/18.2", "ADR-0231/18.independent_hashes")
def test_operator_set_id_is_deterministic_and_reproduces():
    """ADR-0231 §18.2, §10, §14: the operator-set id is the canonical digest of the table."""
    assert operator_set_id(CANDIDATE_OPERATOR_SET) == operator_set_id(CANDIDATE_OPERATOR_SET)
    assert CANDIDATE_OPERATOR_SET_ID == operator_set_id(CANDIDATE_OPERATOR_SET)
    assert CANDIDATE_OPERATOR_SET_ID == oracle.operator_set_id(CANDIDATE_OPERATOR_SET)
    copy = dataclasses.replace(ROW)
    assert copy is not ROW
    rebuilt = OperatorSetManifest(CANDIDATE_OPERATOR_SET.operator_set_version, (copy,))
    assert operator_set_id(rebuilt) == CANDIDATE_OPERATOR_SET_ID


# One change per row field. ``max_parallelism`` is the only field left out: a row must be
# serial (ADR-0228 §11), so no other value of it is representable.
ROW_CHANGES: dict[str, Any] = {
    "operator_name": "other_candidate",
    "operator_version": "missing_role_candidate.v2",
    "allowed_residual_kinds": ("missing_role", "missing_relation"),
    "allowed_residual_codes": ("direction_unbound", "initial_unbound"),
    "allowed_candidate_organs": ("other_organ",),
    "max_attempts_per_run": 2,
    "budget_charge": BudgetCharge(1, 2),
    "depth": 2,
    "schema_versions": SCHEMA_VERSIONS[:-1],
    "policy_versions": POLICY_VERSIONS[1:],
    "input_obligations": ROW.input_obligations[::-1],
    "output_candidate_shape": "other_shape",
    "ordering_key": ("attempt_index", "operator_name"),
    "forbidden_side_effects": ROW.forbidden_side_effects[:-1],
    "replay_obligations": ("contract_replay",),
}


def _changed_set(field: str) -> OperatorSetManifest:
    return OperatorSetManifest(
        CANDIDATE_OPERATOR_SET.operator_set_version,
        (dataclasses.replace(ROW, **{field: ROW_CHANGES[field]}),),
    )


@pytest.mark.obligation("LOCAL-0004/operator_manifest")
def test_row_changes_cover_every_row_field():
    """ADR-0231 §10: every row field participates (the table below names each one)."""
    names = {field.name for field in dataclasses.fields(ROW)}
    assert set(ROW_CHANGES) | {"max_parallelism"} == names


@pytest.mark.obligation("ADR-0231/18.2", "ADR-0226/9.18", "LOCAL-0004/operator_manifest")
@pytest.mark.parametrize("field", sorted(ROW_CHANGES))
def test_changing_any_row_field_changes_operator_set_id(field):
    """ADR-0231 §10, §18.2: changing the table changes operator_set_id, and so the run
    identity an operator binds to."""
    changed = _changed_set(field)
    assert operator_set_id(changed) == oracle.operator_set_id(changed)
    assert operator_set_id(changed) != CANDIDATE_OPERATOR_SET_ID
    ctx = context_of(direction_unbound().frame)
    search_input = search_input_for(
        ctx.gate, ctx.budget, changed, GEOMETRIC_SEARCH_RUN_V2_POLICY_VERSION
    )
    opened = open_search_run(search_input, ctx.gate, ctx.budget, changed)
    assert type(opened) is OpenedSearchRun
    assert opened.run_id != ctx.opened.run_id


@pytest.mark.obligation("ADR-0226/9.18", "LOCAL-0004/operator_manifest")
def test_changing_the_set_version_or_adding_a_row_changes_operator_set_id():
    """ADR-0231 §10: the version and the row list are part of the identity; no hidden
    fallback row can be added without changing it."""
    other_row = dataclasses.replace(ROW, operator_name="other_candidate")
    variants = [
        OperatorSetManifest(UNREGISTERED_OPERATOR_SET_VERSION, CANDIDATE_OPERATOR_SET.operators),
        OperatorSetManifest(CANDIDATE_OPERATOR_SET.operator_set_version, (ROW, other_row)),
        OperatorSetManifest(CANDIDATE_OPERATOR_SET.operator_set_version, (other_row, ROW)),
    ]
    ids = {operator_set_id(v) for v in variants} | {CANDIDATE_OPERATOR_SET_ID}
    assert len(ids) == 4
    assert all(operator_set_id(v) == oracle.operator_set_id(v) for v in variants)


# ------------------------------------------------------------------------------------------
# §18.3: the input identity


@pytest.mark.obligation(
    "ADR-0231/18.3",
    "ADR-0231/18.independent_hashes",
    "LOCAL-0008/input_digest",
)
@given(contexts())
def test_input_digest_is_deterministic_and_reproduces(ctx):
    """ADR-0231 §18.3, §7.2, §14: input_digest hashes every structural input field but
    itself, and binds exactly the supplied records."""
    again = _input_for(ctx.assessment, ctx.residual, ctx.gate, ctx.budget, ctx.opened)
    operator_input = ctx.operator_input
    assert _bytes(again) == _bytes(operator_input)
    assert operator_input.input_digest == oracle.operator_input_digest(operator_input)
    assert operator_input.problem_frame_digest == oracle.problem_frame_digest(ctx.frame)
    assert operator_input.original_contract_assessment_id == ctx.assessment.assessment_id
    assert operator_input.residual_id == ctx.residual.residual_id
    assert operator_input.residual_kind == "missing_role"
    assert operator_input.search_gate_decision_id == ctx.gate.decision_id
    assert operator_input.compute_budget_id == ctx.budget.budget_id
    assert operator_input.geometric_search_run_id == ctx.opened.run_id
    assert operator_input.operator_set_id == CANDIDATE_OPERATOR_SET_ID
    assert operator_input.operator_set_version == CANDIDATE_OPERATOR_SET.operator_set_version
    assert operator_input.attempt_index == 0
    for pairs in (operator_input.schema_versions, operator_input.policy_versions):
        names = [name for name, _ in pairs]
        assert names == sorted(set(names))


INPUT_CHANGES: dict[str, Any] = {
    "operator_policy_version": "candidate_operator.v2",
    "operator_name": "other_candidate",
    "operator_version": "missing_role_candidate.v2",
    "problem_frame_digest": "1" * 64,
    "original_contract_assessment_id": "2" * 64,
    "residual_id": "3" * 64,
    "residual_kind": "missing_relation",
    "search_gate_decision_id": "4" * 64,
    "compute_budget_id": "5" * 64,
    "geometric_search_run_id": "6" * 64,
    "operator_set_id": "7" * 64,
    # Any version but the set in force's: one no kernel registers.
    "operator_set_version": UNREGISTERED_OPERATOR_SET_VERSION,
    "attempt_index": 3,
    "schema_versions": SCHEMA_VERSIONS[1:],
    "policy_versions": POLICY_VERSIONS[:-1],
}


@pytest.mark.obligation("ADR-0231/18.3", "LOCAL-0008/input_digest")
@share(2)  # a secondary property: half the profile
@given(contexts())
def test_every_input_field_enters_input_digest(ctx):
    """ADR-0231 §14: each listed field participates; input_digest itself does not."""
    names = {field.name for field in dataclasses.fields(CandidateOperatorInput)}
    assert set(INPUT_CHANGES) | {"input_digest"} == names
    digests = {ctx.operator_input.input_digest}
    for field, value in INPUT_CHANGES.items():
        changed = CandidateOperatorInput.sealed(
            **fields_for_sealing(ctx.operator_input, **{field: value})
        )
        assert changed.input_digest == oracle.operator_input_digest(changed)
        digests.add(changed.input_digest)
    assert len(digests) == len(INPUT_CHANGES) + 1


# ------------------------------------------------------------------------------------------
# §18.4-6: the one result, its two digests, and what the reconstruction binds


@pytest.mark.obligation("ADR-0231/18.4", "LOCAL-0008/payload")
def test_shipped_example_proposes_the_cue_direction():
    """ADR-0231 §6, §8.1, §18.4: the hand-built example binds direction=decrease from the one
    grounded cue 'were eaten', citing the residual's four spans in order."""
    frame = direction_unbound().frame
    ctx = context_of(frame)
    result = _assert_result(propose(ctx))
    payload = result.reconstruction.candidate_payload
    assert payload == RoleBindingDelta(
        kind="role_binding_delta",
        candidate_organ="unary_delta_transition",
        relation_type="state_change.unary_delta",
        role=Role.DIRECTION,
        source="GroundedUnaryDeltaCue.direction",
        direction=kernel.Direction.DECREASE,
        cue_span=SourceSpan("were eaten", 40, 50, 1),
    )
    assert [span.text for span in result.evidence_spans] == [
        "12 apples",
        "5 of his apples",
        "How many apples",
        "were eaten",
    ]
    assert result.reason_codes == ("candidate_constructed",)
    assert result.operator_result_id == oracle.operator_result_id(result)


@pytest.mark.obligation(
    "ADR-0231/18.4",
    "ADR-0231/18.attempt_stays_pending",
    "ADR-0231/18.independent_hashes",
    "LOCAL-0008/payload",
    "LOCAL-0008/evidence_and_digests",
)
@given(contexts())
def test_valid_context_gives_one_result(ctx):
    """ADR-0231 §18.4, §6, §8, §13, §14: one result; the payload is the cue's direction and
    exact span; the evidence is the residual's spans, order and duplicates kept; the attempt
    is charged (1, 1) at depth 1 and stays replay_pending; every id reproduces."""
    result = _assert_result(propose(ctx))
    cue = ctx.frame.cues[0]
    spans = ctx.residual.evidence_spans
    assert result.reason_codes == ("candidate_constructed",)
    assert result.operator_policy_version == "candidate_operator.v1"
    assert (result.operator_name, result.operator_version) == (
        "missing_role_candidate",
        "missing_role_candidate.v1",
    )
    assert result.candidate_organ == "unary_delta_transition"
    assert result.input_digest == ctx.operator_input.input_digest
    assert result.geometric_search_run_id == ctx.opened.run_id
    assert result.evidence_spans == spans
    assert cue.span in spans

    payload = result.reconstruction.candidate_payload
    assert payload.role is Role.DIRECTION
    assert payload.direction is cue.direction
    assert payload.cue_span == cue.span
    assert (payload.kind, payload.relation_type, payload.source) == (
        "role_binding_delta",
        "state_change.unary_delta",
        "GroundedUnaryDeltaCue.direction",
    )

    attempt = result.candidate_attempt
    assert attempt.attempt_index == result.attempt_index == 0
    assert attempt.parent_attempt_id is None
    assert (attempt.operator_id, attempt.operator_version) == (
        "missing_role_candidate",
        "missing_role_candidate.v1",
    )
    assert attempt.input_digest == ctx.operator_input.input_digest
    assert attempt.candidate_digest == result.candidate_digest
    assert attempt.budget_charge == BudgetCharge(1, 1)
    assert (attempt.depth, attempt.step_index) == (1, 0)
    assert attempt.replay_status is CandidateReplayStatus.REPLAY_PENDING
    assert attempt.replay_blockers == ()
    assert attempt.evidence_spans == spans

    assert attempt.attempt_id == result.attempt_id == oracle.attempt_id(attempt)
    rebuilt = result.reconstruction
    assert result.candidate_digest == rebuilt.candidate_digest == oracle.candidate_digest(rebuilt)
    assert (
        result.candidate_reconstruction_digest
        == rebuilt.candidate_reconstruction_digest
        == oracle.candidate_reconstruction_digest(rebuilt)
    )
    assert result.operator_result_id == oracle.operator_result_id(result)


@pytest.mark.obligation("ADR-0231/18.5", "LOCAL-0008/evidence_and_digests")
@given(contexts())
def test_candidate_digest_is_not_the_reconstruction_digest(ctx):
    """ADR-0231 §18.5, §9: the two digests differ; candidate_digest is content only, so the
    same candidate proposed in another run keeps it while the envelope digest changes."""
    result = _assert_result(propose(ctx))
    assert result.candidate_digest != result.candidate_reconstruction_digest
    # Another lawful run over the same residual: a budget with one step fewer.
    budget = resealed(ctx.budget, max_steps=ctx.budget.max_steps - 1)
    search_input = search_input_for(
        ctx.gate, budget, CANDIDATE_OPERATOR_SET, GEOMETRIC_SEARCH_RUN_V2_POLICY_VERSION
    )
    opened = open_search_run(search_input, ctx.gate, budget, CANDIDATE_OPERATOR_SET)
    assert type(opened) is OpenedSearchRun
    operator_input = _input_for(ctx.assessment, ctx.residual, ctx.gate, budget, opened)
    elsewhere = _assert_result(
        propose(ctx, operator_input=operator_input, budget_decision=budget, opened_run=opened)
    )
    assert elsewhere.candidate_digest == result.candidate_digest
    assert elsewhere.candidate_reconstruction_digest != result.candidate_reconstruction_digest
    assert elsewhere.attempt_id != result.attempt_id
    assert elsewhere.operator_result_id != result.operator_result_id


@pytest.mark.obligation("ADR-0231/18.6")
@given(contexts())
def test_reconstruction_binds_run_attempt_residual_and_operator(ctx):
    """ADR-0231 §18.6, §8.1, §9: the reconstruction names this run, attempt, residual,
    operator set, operator name/version and candidate."""
    result = _assert_result(propose(ctx))
    rebuilt = result.reconstruction
    assert rebuilt.geometric_search_run_id == ctx.opened.run_id
    assert rebuilt.attempt_id == result.candidate_attempt.attempt_id
    assert rebuilt.attempt_index == 0
    assert rebuilt.operator_set_id == CANDIDATE_OPERATOR_SET_ID
    assert (rebuilt.operator_name, rebuilt.operator_version) == (
        "missing_role_candidate",
        "missing_role_candidate.v1",
    )
    assert rebuilt.source_residual_id == ctx.residual.residual_id
    assert rebuilt.problem_frame_digest == oracle.problem_frame_digest(ctx.frame)
    assert rebuilt.original_contract_assessment_id == ctx.assessment.assessment_id
    assert rebuilt.candidate_digest == result.candidate_digest
    assert rebuilt.evidence_spans == ctx.residual.evidence_spans
    assert rebuilt.schema_versions == SCHEMA_VERSIONS
    assert rebuilt.policy_versions == POLICY_VERSIONS
    assert ("missing_role_candidate", "missing_role_candidate.v1") in rebuilt.operator_provenance


def _rebuilt(reconstruction: CandidateReconstruction, **changes: Any) -> CandidateReconstruction:
    """The reconstruction with ``changes``, its candidate digest recomputed by the oracle."""
    draft = tampered(reconstruction, **changes)
    return CandidateReconstruction.sealed(
        **fields_for_sealing(draft, candidate_digest=oracle.candidate_digest(draft))
    )


def _flip(payload: RoleBindingDelta) -> RoleBindingDelta:
    other = [d for d in kernel.Direction if d is not payload.direction][0]
    return dataclasses.replace(payload, direction=other)


RECONSTRUCTION_CHANGES: dict[str, Callable[[CandidateReconstruction], dict[str, Any]]] = {
    "run": lambda r: {"geometric_search_run_id": other_digest(r.geometric_search_run_id)},
    "attempt_id": lambda r: {"attempt_id": other_digest(r.attempt_id)},
    "attempt_index": lambda r: {"attempt_index": r.attempt_index + 1},
    "operator_set": lambda r: {"operator_set_id": other_digest(r.operator_set_id)},
    "operator_name": lambda r: {"operator_name": "other_candidate"},
    "operator_version": lambda r: {"operator_version": "missing_role_candidate.v2"},
    "residual": lambda r: {"source_residual_id": other_digest(r.source_residual_id)},
    "assessment": lambda r: {
        "original_contract_assessment_id": other_digest(r.original_contract_assessment_id)
    },
    "frame": lambda r: {"problem_frame_digest": other_digest(r.problem_frame_digest)},
    "candidate": lambda r: {"candidate_payload": _flip(r.candidate_payload)},
    "spans": lambda r: {"evidence_spans": r.evidence_spans + r.evidence_spans[:1]},
    "schema_versions": lambda r: {"schema_versions": r.schema_versions[1:]},
    "policy_versions": lambda r: {"policy_versions": r.policy_versions[1:]},
    "provenance": lambda r: {"operator_provenance": r.operator_provenance[:-1]},
}


@pytest.mark.obligation("ADR-0231/18.6")
@pytest.mark.parametrize("label", sorted(RECONSTRUCTION_CHANGES))
@share(10)
@given(ctx=contexts())
def test_changing_any_binding_changes_the_reconstruction_digest(label, ctx):
    """ADR-0231 §18.6, §9: run, attempt, residual, operator set, operator name/version,
    candidate, spans and versions all enter candidate_reconstruction_digest."""
    original = _assert_result(propose(ctx)).reconstruction
    changed = _rebuilt(original, **RECONSTRUCTION_CHANGES[label](original))
    assert changed.candidate_reconstruction_digest != original.candidate_reconstruction_digest
    assert changed.candidate_reconstruction_digest == oracle.candidate_reconstruction_digest(
        changed
    )
    content_changed = label in {"candidate", "spans", "frame"}
    assert (changed.candidate_digest != original.candidate_digest) is content_changed


@pytest.mark.obligation("ADR-0231/17.19", "ADR-0228/16.10", "LOCAL-0008/outputs")
@given(contexts())
def test_reconstruction_and_result_refuse_unbound_identities(ctx):
    """ADR-0231 §9, §17 'cannot reproduce canonical identity': a candidate_digest that does
    not reproduce, or a result whose attempt/reconstruction name another run or candidate,
    cannot be constructed."""
    result = _assert_result(propose(ctx))
    rebuilt = result.reconstruction
    with pytest.raises(RecordError) as raised:
        CandidateReconstruction.sealed(
            **fields_for_sealing(rebuilt, candidate_digest=other_digest(rebuilt.candidate_digest))
        )
    assert raised.value.found.field == "candidate_digest"
    assert raised.value.found.defect is Defect.IDENTITY_MISMATCH
    for field in ("geometric_search_run_id", "attempt_id", "candidate_digest", "input_digest"):
        with pytest.raises(RecordError) as raised:
            CandidateOperatorResult.sealed(
                **fields_for_sealing(result, **{field: other_digest(getattr(result, field))})
            )
        assert raised.value.found.defect is Defect.INCONSISTENT_FIELDS


def _reconstruction_beside(
    rebuilt: CandidateReconstruction, field: str, *, after: bool
) -> CandidateReconstruction:
    """A valid reconstruction like ``rebuilt`` whose ``field`` sorts just after (or before)
    its own. A candidate digest is a hash, so it is moved by changing the frame digest it
    hashes, one neighbour at a time, until the new one lands on the side asked for."""
    if field == "attempt_index":
        return _rebuilt(rebuilt, attempt_index=rebuilt.attempt_index + (1 if after else -1))
    if field == "attempt_id":
        return _rebuilt(rebuilt, attempt_id=neighbouring_digest(rebuilt.attempt_id, after=after))
    frame_digest = rebuilt.problem_frame_digest
    while True:
        frame_digest = neighbouring_digest(frame_digest, after=True)
        moved = _rebuilt(rebuilt, problem_frame_digest=frame_digest)
        if (moved.candidate_digest > rebuilt.candidate_digest) is after:
            return moved


def _attempt_beside(result: CandidateOperatorResult, field: str, *, after: bool) -> dict:
    """The result's fields with its attempt alone naming another attempt id, index or
    candidate, sorting just after (or before) what the result and its reconstruction name;
    the result and the reconstruction follow the attempt's new id wherever the field is not
    the id itself."""
    if field == "attempt_id":
        others = neighbouring_digest(result.attempt_id, after=not after)
        rebuilt = _rebuilt(result.reconstruction, attempt_id=others)
        return fields_for_sealing(
            result,
            attempt_id=others,
            candidate_reconstruction_digest=rebuilt.candidate_reconstruction_digest,
            reconstruction=rebuilt,
        )
    step = 1 if after else -1
    moved = (
        {"attempt_index": result.attempt_index + step}
        if field == "attempt_index"
        else {"candidate_digest": neighbouring_digest(result.candidate_digest, after=after)}
    )
    attempt = CandidateAttempt.sealed(**fields_for_sealing(result.candidate_attempt, **moved))
    rebuilt = _rebuilt(result.reconstruction, attempt_id=attempt.attempt_id)
    return fields_for_sealing(
        result,
        attempt_id=attempt.attempt_id,
        candidate_reconstruction_digest=rebuilt.candidate_reconstruction_digest,
        candidate_attempt=attempt,
        reconstruction=rebuilt,
    )


def _reconstruction_beside_in(result: CandidateOperatorResult, field: str, *, after: bool) -> dict:
    """The result's fields with its reconstruction alone naming another attempt id, index or
    candidate, sorting just after (or before) what the result and its attempt name."""
    rebuilt = _reconstruction_beside(result.reconstruction, field, after=after)
    assert getattr(rebuilt, field) != getattr(result, field)
    return fields_for_sealing(
        result,
        candidate_reconstruction_digest=rebuilt.candidate_reconstruction_digest,
        reconstruction=rebuilt,
    )


@pytest.mark.obligation("ADR-0231/17.19", "ADR-0228/16.10", "LOCAL-0008/outputs")
@pytest.mark.parametrize("side", ["before", "after"])
@pytest.mark.parametrize("field", ["attempt_id", "attempt_index", "candidate_digest"])
@pytest.mark.parametrize("odd", ["attempt", "reconstruction"])
@share(3)
@given(ctx=contexts())
def test_a_result_refuses_an_attempt_or_reconstruction_naming_another(odd, field, side, ctx):
    """Two of the attempt, the result and the reconstruction agree; the third (the attempt or
    the reconstruction) names another attempt id, index or candidate, once on each side of
    theirs. Each of the three bindings is a chain (attempt == result == reconstruction), so
    only a change to one end finds a check that orders the link at that end (the kernel
    mutation score's survivors at operators.py ``==`` made ``<=`` and ``>=``, docs/adr/0015)."""
    result = _reindexed(_assert_result(propose(ctx)), 5)
    beside = _attempt_beside if odd == "attempt" else _reconstruction_beside_in
    with pytest.raises(RecordError) as raised:
        CandidateOperatorResult.sealed(**beside(result, field, after=side == "after"))
    assert raised.value.found.field == "candidate_attempt"
    assert raised.value.found.defect is Defect.INCONSISTENT_FIELDS


# ------------------------------------------------------------------------------------------
# §18.7-14 and §7.3: every refusal, with its exact reason


def _with_input(ctx: Context, **changes: Any):
    return propose(ctx, operator_input=resealed(ctx.operator_input, **changes))


def _with_tampered_input(ctx: Context, **changes: Any):
    return propose(ctx, operator_input=tampered(ctx.operator_input, **changes))


def _denied_in_force(status: SearchGateStatus) -> dict[str, Any]:
    """A gate denial with ``status`` that the gate in force can decide: how a denial is classed
    is its policy's choice (docs/adr/0002), and a forged gate must stay a valid record. The
    last such reason in rule order (under search_gate.v1, multiple residuals for INELIGIBLE
    and a residual without evidence for BLOCKED)."""
    reasons = [row.reason for row in SEARCH_GATE_IN_FORCE.reason_statuses if row.status is status]
    return {"status": status, "reason_code": reasons[-1].value}


def _zero_budget(status: ComputeBudgetStatus, reason: str) -> dict[str, Any]:
    limits = dict.fromkeys(("max_candidates", "max_depth", "max_steps", "max_parallelism"), 0)
    return {"status": status, "reason_code": reason, **limits}


def _consistently_opened(ctx: Context, manifest: OperatorSetManifest):
    """A run lawfully opened with another manifest, the input built from that run."""
    search_input = search_input_for(
        ctx.gate, ctx.budget, manifest, GEOMETRIC_SEARCH_RUN_V2_POLICY_VERSION
    )
    opened = open_search_run(search_input, ctx.gate, ctx.budget, manifest)
    assert type(opened) is OpenedSearchRun
    operator_input = _input_for(ctx.assessment, ctx.residual, ctx.gate, ctx.budget, opened)
    return propose(ctx, operator_input=operator_input, opened_run=opened, operator_set=manifest)


def _depth_zero_run(ctx: Context):
    """max_depth == 0 is a budget a v2 run lawfully opens under (docs/adr/0004)."""
    budget = resealed(ctx.budget, max_depth=0)
    search_input = search_input_for(
        ctx.gate, budget, CANDIDATE_OPERATOR_SET, GEOMETRIC_SEARCH_RUN_V2_POLICY_VERSION
    )
    opened = open_search_run(search_input, ctx.gate, budget, CANDIDATE_OPERATOR_SET)
    assert type(opened) is OpenedSearchRun
    operator_input = _input_for(ctx.assessment, ctx.residual, ctx.gate, budget, opened)
    return propose(ctx, operator_input=operator_input, budget_decision=budget, opened_run=opened)


def _span_outside_source(ctx: Context) -> Context:
    first = ctx.residual.evidence_spans[0]
    shift = len(ctx.frame.source_text)
    outside = SourceSpan(first.text, first.start + shift, first.end + shift, first.sentence_index)
    return forged_residual(ctx, evidence_spans=ctx.residual.evidence_spans + (outside,))


def _malformed_span(ctx: Context):
    first = ctx.residual.evidence_spans[0]
    broken = tampered(first, text=first.text + "x")
    spans = (broken,) + ctx.residual.evidence_spans[1:]
    return propose(ctx, residual=tampered(ctx.residual, evidence_spans=spans))


def _of_another_frame(ctx: Context, first: str) -> Context:
    """Every record from ``first`` on, in the order the operator chains their frame digests
    (assessment, residual, gate, run), naming one other frame; the frame and the input still
    name the true one. Exactly one link of that chain is broken, so a link compared by order
    instead of equality passes the forgery on one side."""
    true = ctx.assessment.problem_frame_digest
    other = {"problem_frame_digest": other_digest(true)}
    chained = ("assessment", "residual", "gate", "run")
    moved = {name: other if name in chained[chained.index(first) :] else {} for name in chained}
    assessment = resealed(ctx.assessment, **moved["assessment"])
    bound = {"contract_assessment_id": assessment.assessment_id}
    forgery = forged(
        dataclasses.replace(ctx, assessment=assessment),
        residual=resealed(ctx.residual, **bound, **moved["residual"]),
        gate={**bound, **moved["gate"]},
        run={**bound, **moved["run"]},
    )
    true_input = resealed(forgery.operator_input, problem_frame_digest=true)
    return dataclasses.replace(forgery, operator_input=true_input)


def _of_another_assessment(ctx: Context, first: str) -> Context:
    """Every record from ``first`` on (residual, gate, run) naming one other assessment; the
    input and the assessment still name each other: one link of that chain broken."""
    other = {"contract_assessment_id": other_digest(ctx.assessment.assessment_id)}
    chained = ("residual", "gate", "run")
    moved = {name: other if name in chained[chained.index(first) :] else {} for name in chained}
    forgery = forged(
        ctx,
        residual=resealed(ctx.residual, **moved["residual"]),
        gate=moved["gate"],
        run=moved["run"],
    )
    assert forgery.operator_input.original_contract_assessment_id == ctx.assessment.assessment_id
    return forgery


def _run_of_another_operator_set(ctx: Context) -> Context:
    forgery = forged(ctx, run={"operator_set_id": other_digest(CANDIDATE_OPERATOR_SET_ID)})
    true_input = resealed(forgery.operator_input, operator_set_id=CANDIDATE_OPERATOR_SET_ID)
    return dataclasses.replace(forgery, operator_input=true_input)


def _cue_not_justified(ctx: Context):
    cue_span = ctx.frame.cues[0].span
    kept = tuple(span for span in ctx.residual.evidence_spans if span != cue_span)
    assume(kept)
    return propose(forged_residual(ctx, evidence_spans=kept))


def _other_frame(ctx: Context):
    other = direction_unbound().frame
    assume(other != ctx.frame)
    return propose(ctx, frame=other)


# Each entry: the corruption and the exact reason it gets. The order of the checks is
# ADR-0231 §7.3 with the identity bindings of §7.2 first; where a corruption could be read
# as two failures, the entry's label says which check fires first.
REFUSALS: dict[str, tuple[Callable[[Context], object], OperatorRefusalReason]] = {
    # §7.3.1: the policy, passed in or named by the input.
    "policy_changed": (
        lambda c: propose(
            c, policy=dataclasses.replace(MISSING_ROLE_CANDIDATE_POLICY, max_attempts_per_run=2)
        ),
        R.POLICY_UNSUPPORTED,
    ),
    "policy_codes_widened": (
        lambda c: propose(
            c,
            policy=dataclasses.replace(
                MISSING_ROLE_CANDIDATE_POLICY,
                allowed_residual_codes=("direction_unbound", "initial_unbound"),
            ),
        ),
        R.POLICY_UNSUPPORTED,
    ),
    "input_policy_version": (
        lambda c: _with_input(c, operator_policy_version="candidate_operator.v2"),
        R.POLICY_UNSUPPORTED,
    ),
    # §7.3.2-3
    "input_operator_name": (
        lambda c: _with_input(c, operator_name="other_candidate"),
        R.OPERATOR_UNSUPPORTED,
    ),
    "input_operator_version": (
        lambda c: _with_input(c, operator_version="missing_role_candidate.v2"),
        R.OPERATOR_UNSUPPORTED,
    ),
    # §7.2: the input must name exactly these records.
    "input_frame_digest": (
        lambda c: _with_input(
            c, problem_frame_digest=other_digest(c.operator_input.problem_frame_digest)
        ),
        R.IDENTITY_MISMATCH,
    ),
    "input_assessment_id": (
        lambda c: _with_input(
            c, original_contract_assessment_id=other_digest(c.assessment.assessment_id)
        ),
        R.IDENTITY_MISMATCH,
    ),
    "input_residual_id": (
        lambda c: _with_input(c, residual_id=other_digest(c.residual.residual_id)),
        R.IDENTITY_MISMATCH,
    ),
    "input_gate_id": (
        lambda c: _with_input(c, search_gate_decision_id=other_digest(c.gate.decision_id)),
        R.IDENTITY_MISMATCH,
    ),
    "input_budget_id": (
        lambda c: _with_input(c, compute_budget_id=other_digest(c.budget.budget_id)),
        R.IDENTITY_MISMATCH,
    ),
    "input_run_id": (
        lambda c: _with_input(c, geometric_search_run_id=other_digest(c.opened.run_id)),
        R.IDENTITY_MISMATCH,
    ),
    "frame_of_another_question": (_other_frame, R.IDENTITY_MISMATCH),
    # §7.3.4 / §18.7: the input claims another kind (its identities still bind).
    "input_residual_kind": (
        lambda c: _with_input(c, residual_kind="missing_relation"),
        R.RESIDUAL_KIND_UNSUPPORTED,
    ),
    # §7.3.5: the gate names another organ.
    "gate_other_organ": (
        lambda c: propose(forged(c, gate={"candidate_organ": "other_organ"})),
        R.CANDIDATE_ORGAN_UNSUPPORTED,
    ),
    # §7.3.7-8 / §18.8: an ineligible gate, every later record rebound to it.
    "gate_ineligible": (
        lambda c: propose(
            forged(
                c,
                gate=_denied_in_force(SearchGateStatus.INELIGIBLE),
            )
        ),
        R.GATE_NOT_ELIGIBLE,
    ),
    "gate_ineligible_budget_decided": (
        # The budget stage's own answer to that gate (BUDGET_BLOCKED, zero limits): the gate
        # check (§7.3.7) comes before the budget check (§7.3.9).
        lambda c: propose(
            forged(
                c,
                gate=_denied_in_force(SearchGateStatus.INELIGIBLE),
                decide_budget=True,
            )
        ),
        R.GATE_NOT_ELIGIBLE,
    ),
    "gate_blocked": (
        lambda c: propose(
            forged(
                c,
                gate=_denied_in_force(SearchGateStatus.BLOCKED),
            )
        ),
        R.GATE_NOT_ELIGIBLE,
    ),
    "gate_unassessable": (
        lambda c: propose(
            forged(
                c,
                gate={
                    "status": SearchGateStatus.UNASSESSABLE,
                    "reason_code": "gate_unassessable_no_residual",
                },
            )
        ),
        R.GATE_NOT_ELIGIBLE,
    ),
    "gate_eligible_for_another_kind": (
        lambda c: propose(forged(c, gate={"reason_code": "eligible_missing_relation"})),
        R.GATE_NOT_ELIGIBLE,
    ),
    "gate_resealed_not_rebound": (
        # Without rebinding, the input still names the old gate: identity fires first.
        lambda c: propose(
            c,
            gate_decision=resealed(
                c.gate,
                status=SearchGateStatus.INELIGIBLE,
                reason_code="gate_ineligible_multiple_residuals",
            ),
        ),
        R.IDENTITY_MISMATCH,
    ),
    # §7.3.9-10 / §18.9: blocked, zero and unassessable budgets, rebound.
    "budget_blocked": (
        lambda c: propose(
            forged(
                c,
                budget=_zero_budget(
                    ComputeBudgetStatus.BUDGET_BLOCKED, "budget_blocked_gate_ineligible"
                ),
            )
        ),
        R.BUDGET_NOT_ALLOWED,
    ),
    "budget_zero": (
        lambda c: propose(
            forged(c, budget=_zero_budget(ComputeBudgetStatus.BUDGET_ZERO, "budget_zero_test"))
        ),
        R.BUDGET_NOT_ALLOWED,
    ),
    "budget_unassessable": (
        lambda c: propose(
            forged(
                c,
                budget=_zero_budget(
                    ComputeBudgetStatus.BUDGET_UNASSESSABLE,
                    "budget_unassessable_unknown_reason_code",
                ),
            )
        ),
        R.BUDGET_NOT_ALLOWED,
    ),
    "budget_allowed_for_another_kind": (
        lambda c: propose(forged(c, budget={"reason_code": "budget_allowed_missing_relation"})),
        R.BUDGET_NOT_ALLOWED,
    ),
    "budget_resealed_not_rebound": (
        # A zero budget the run and input do not name: identity fires first.
        lambda c: propose(
            c,
            budget_decision=resealed(
                c.budget, **_zero_budget(ComputeBudgetStatus.BUDGET_ZERO, "budget_zero_test")
            ),
        ),
        R.IDENTITY_MISMATCH,
    ),
    # §7.3.11-13 / §18.11
    "budget_names_another_gate": (
        lambda c: propose(forged(c, budget={"gate_decision_id": other_digest(c.gate.decision_id)})),
        R.GATE_BUDGET_MISMATCH,
    ),
    "run_names_another_gate": (
        lambda c: propose(forged(c, run={"gate_decision_id": other_digest(c.gate.decision_id)})),
        R.RUN_MISMATCH,
    ),
    "run_names_another_budget": (
        lambda c: propose(forged(c, run={"budget_id": other_digest(c.budget.budget_id)})),
        R.RUN_MISMATCH,
    ),
    "run_names_another_frame": (
        lambda c: propose(
            forged(c, run={"problem_frame_digest": other_digest(c.opened.problem_frame_digest)})
        ),
        R.IDENTITY_MISMATCH,
    ),
    # Each link of a chain of bindings broken alone, on one side of the value every earlier
    # record names: a chained check that orders one link passes the forgery on that side.
    "gate_names_another_residual": (
        lambda c: propose(
            forged(
                c,
                gate={"residual_ids": (other_digest(c.residual.residual_id),)},
                run={"residual_ids": (c.residual.residual_id,)},
            )
        ),
        R.IDENTITY_MISMATCH,
    ),
    **{
        f"frame_digest_other_from_{first}_on": (
            lambda c, first=first: propose(_of_another_frame(c, first)),
            R.IDENTITY_MISMATCH,
        )
        for first in ("assessment", "residual", "gate")
    },
    **{
        f"assessment_id_other_from_{first}_on": (
            lambda c, first=first: propose(_of_another_assessment(c, first)),
            R.IDENTITY_MISMATCH,
        )
        for first in ("residual", "gate", "run")
    },
    "run_names_other_residuals": (
        lambda c: propose(forged(c, run={"residual_ids": (other_digest(c.residual.residual_id),)})),
        R.IDENTITY_MISMATCH,
    ),
    "run_resealed_not_rebound": (
        lambda c: propose(
            c, opened_run=resealed(c.opened, budget_id=other_digest(c.opened.budget_id))
        ),
        R.IDENTITY_MISMATCH,
    ),
    # §7.3.14-15 / §18.12
    "operator_set_row_changed": (
        lambda c: propose(c, operator_set=_changed_set("input_obligations")),
        R.OPERATOR_SET_MISMATCH,
    ),
    "operator_set_empty": (
        lambda c: propose(c, operator_set=EMPTY_OPERATOR_SET),
        R.OPERATOR_SET_MISMATCH,
    ),
    "operator_set_opened_consistently": (
        # Run, input and manifest agree with each other, but the manifest is not the table.
        lambda c: _consistently_opened(c, _changed_set("max_attempts_per_run")),
        R.OPERATOR_SET_MISMATCH,
    ),
    "run_operator_set_id": (
        lambda c: propose(
            forged(c, run={"operator_set_id": other_digest(CANDIDATE_OPERATOR_SET_ID)})
        ),
        R.OPERATOR_SET_MISMATCH,
    ),
    "run_operator_set_version": (
        lambda c: propose(
            forged(c, run={"operator_set_version": UNREGISTERED_OPERATOR_SET_VERSION})
        ),
        R.OPERATOR_SET_MISMATCH,
    ),
    "run_operator_set_id_input_true": (
        # The run alone names another set; the input still names the true one.
        lambda c: propose(_run_of_another_operator_set(c)),
        R.OPERATOR_SET_MISMATCH,
    ),
    "input_operator_set_version": (
        lambda c: _with_input(c, operator_set_version=UNREGISTERED_OPERATOR_SET_VERSION),
        R.OPERATOR_SET_MISMATCH,
    ),
    # §7.3.16-18 / §18.10
    "attempt_index_negative_resealed": (
        lambda c: _with_input(c, attempt_index=-1),
        R.ATTEMPT_INDEX_NEGATIVE,
    ),
    "attempt_index_negative_tampered": (
        lambda c: _with_tampered_input(c, attempt_index=-(2**53 - 1)),
        R.ATTEMPT_INDEX_NEGATIVE,
    ),
    "attempt_index_beyond_policy": (
        lambda c: propose(
            c,
            operator_input=_input_for(c.assessment, c.residual, c.gate, c.budget, c.opened, 1),
        ),
        R.ATTEMPT_INDEX_BEYOND_POLICY,
    ),
    "attempt_index_beyond_budget": (
        # max_candidates is 5 for missing_role (ADR-0227 §8); §7.3.17 precedes §7.3.18.
        lambda c: propose(
            c,
            operator_input=_input_for(c.assessment, c.residual, c.gate, c.budget, c.opened, 5),
        ),
        R.ATTEMPT_INDEX_BEYOND_BUDGET,
    ),
    "attempt_index_huge": (
        lambda c: _with_input(c, attempt_index=2**53 - 1),
        R.ATTEMPT_INDEX_BEYOND_BUDGET,
    ),
    "budget_max_candidates_zero": (
        lambda c: propose(forged(c, budget={"max_candidates": 0})),
        R.ATTEMPT_INDEX_BEYOND_BUDGET,
    ),
    # §7.3.19-20
    "budget_max_depth_zero": (_depth_zero_run, R.CHARGE_EXCEEDS_BUDGET),
    "budget_max_steps_zero": (
        lambda c: propose(forged(c, budget={"max_steps": 0})),
        R.CHARGE_EXCEEDS_BUDGET,
    ),
    "budget_parallelism_two": (
        lambda c: propose(forged(c, budget={"max_parallelism": 2})),
        R.PARALLELISM_NOT_ONE,
    ),
    "budget_parallelism_zero": (
        lambda c: propose(forged(c, budget={"max_parallelism": 0})),
        R.PARALLELISM_NOT_ONE,
    ),
    # §17 'missing residual fields' / §18.13
    "residual_without_evidence": (
        lambda c: propose(forged_residual(c, evidence_spans=())),
        R.RESIDUAL_FIELD_MISSING,
    ),
    "residual_without_role": (
        lambda c: propose(forged_residual(c, role=None)),
        R.RESIDUAL_FIELD_MISSING,
    ),
    "residual_resealed_not_rebound": (
        lambda c: propose(c, residual=resealed(c.residual, role=None)),
        R.IDENTITY_MISMATCH,
    ),
    # §7.3.21, §13 / §18.14
    "residual_span_malformed": (_malformed_span, R.RECORD_MALFORMED),
    "residual_span_outside_source": (
        lambda c: propose(_span_outside_source(c)),
        R.EVIDENCE_SPANS_INVALID,
    ),
    # §7.3.22
    "schema_versions_descending_tampered": (
        lambda c: _with_tampered_input(c, schema_versions=SCHEMA_VERSIONS[::-1]),
        R.VERSIONS_NOT_CANONICAL,
    ),
    "schema_versions_descending_resealed": (
        lambda c: _with_input(c, schema_versions=SCHEMA_VERSIONS[::-1]),
        R.VERSIONS_NOT_CANONICAL,
    ),
    "policy_versions_duplicate_resealed": (
        lambda c: _with_input(c, policy_versions=POLICY_VERSIONS[:1] + POLICY_VERSIONS),
        R.VERSIONS_NOT_CANONICAL,
    ),
    "policy_versions_descending_tampered": (
        lambda c: _with_tampered_input(c, policy_versions=POLICY_VERSIONS[::-1]),
        R.VERSIONS_NOT_CANONICAL,
    ),
    "schema_versions_canonical_but_other": (
        lambda c: _with_input(c, schema_versions=SCHEMA_VERSIONS[1:]),
        R.IDENTITY_MISMATCH,
    ),
    # Input integrity.
    "input_digest_forged": (
        lambda c: _with_tampered_input(c, input_digest=other_digest(c.operator_input.input_digest)),
        R.IDENTITY_MISMATCH,
    ),
    "input_field_tampered": (
        lambda c: _with_tampered_input(c, residual_kind="missing_relation"),
        R.IDENTITY_MISMATCH,
    ),
    "input_digest_malformed": (
        lambda c: _with_tampered_input(c, input_digest="NOT-A-DIGEST"),
        R.INPUT_MALFORMED,
    ),
    "attempt_index_bool": (
        lambda c: _with_tampered_input(c, attempt_index=False),
        R.INPUT_MALFORMED,
    ),
    "frame_tampered": (
        lambda c: propose(c, frame=tampered(c.frame, cues=list(c.frame.cues))),
        R.RECORD_MALFORMED,
    ),
    "policy_tampered": (
        lambda c: propose(c, policy=tampered(MISSING_ROLE_CANDIDATE_POLICY, depth=0)),
        R.RECORD_MALFORMED,
    ),
    # §6: the typed cue must already be evidence of the residual.
    "cue_not_justified": (_cue_not_justified, R.CUE_NOT_JUSTIFIED),
}


# Sixty-odd cases: each gets a tenth of the profile (at least 5 examples, see ``share``).
@pytest.mark.obligation(
    "ADR-0231/17.1",
    "ADR-0231/17.2",
    "ADR-0231/17.3",
    "ADR-0231/17.5",
    "ADR-0231/17.6",
    "ADR-0231/17.7",
    "ADR-0231/17.8",
    "ADR-0231/17.9",
    "ADR-0231/17.10",
    "ADR-0231/17.11",
    "ADR-0231/17.13",
    "ADR-0231/17.14",
    "ADR-0231/17.15",
    "ADR-0231/17.16",
    "ADR-0231/17.17",
    "ADR-0231/17.18",
    "ADR-0231/18.7",
    "ADR-0231/18.8",
    "ADR-0231/18.9",
    "ADR-0231/18.10",
    "ADR-0231/18.11",
    "ADR-0231/18.12",
    "ADR-0231/18.13",
    "ADR-0231/18.14",
    "ADR-0231/18.independent_hashes",
    "LOCAL-0008/preconditions",
    "LOCAL-0008/cue_rules",
)
@pytest.mark.parametrize("side", ["before", "after"])
@pytest.mark.parametrize("label", sorted(REFUSALS))
@share(10)
@given(ctx=contexts())
def test_every_precondition_refuses_with_its_reason(label, side, ctx):
    """ADR-0231 §7.3 (1-22), §17, §18.7-14: each corruption is a typed refusal with its
    exact reason; no partial candidate; the refusal id reproduces. Each forged id is drawn
    once just before and once just after the true one, so no check that orders ids where
    it should compare them passes."""
    corrupt, reason = REFUSALS[label]
    after = side == "after"
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(globals(), "other_digest", lambda d: neighbouring_digest(d, after=after))
        outcome = corrupt(ctx)
    _assert_refused(outcome, reason)


@pytest.mark.obligation("LOCAL-0008/preconditions")
@share(2)  # a secondary property: half the profile
@given(ctx=contexts())
def test_forging_alone_does_not_refuse(ctx):
    """Control for the table above: rebinding gate -> budget -> run -> input without a
    semantic change (or with a harmless one) still gives a result, so each forged refusal
    is caused by its change and not by the forging."""
    _assert_result(propose(forged(ctx)))
    _assert_result(propose(forged(ctx, budget={"max_steps": ctx.budget.max_steps - 1})))
    spans = ctx.residual.evidence_spans
    _assert_result(propose(forged_residual(ctx, evidence_spans=spans + spans[:1])))


OTHER_KINDS = [
    GateReason.ELIGIBLE_MISSING_RELATION,
    GateReason.ELIGIBLE_MISSING_PROPOSAL,
    GateReason.ELIGIBLE_TARGET_UNBOUND,
]


@pytest.mark.obligation("ADR-0231/17.3", "ADR-0231/18.7", "ADR-0226/9.12")
@pytest.mark.parametrize("gate_reason", OTHER_KINDS, ids=lambda r: r.value)
@share(3)
@given(data=st.data())
def test_other_residual_kinds_refuse(gate_reason, data):
    """ADR-0231 §18.7, §7.3.4: a lawful chain for another eligible kind (gate eligible,
    budget allowed, run opened) refuses on its kind, the first precondition it fails."""
    ctx = data.draw(problem_frames(**FRAME_RECIPES[gate_reason]).map(context_of))
    assert ctx.gate.status is SearchGateStatus.ELIGIBLE
    assert ctx.budget.status is ComputeBudgetStatus.BUDGET_ALLOWED
    refusal = _assert_refused(propose(ctx), R.RESIDUAL_KIND_UNSUPPORTED)
    assert refusal.residual_id == ctx.residual.residual_id


@pytest.mark.obligation("ADR-0231/17.4", "ADR-0231/18.other_codes_refuse")
@pytest.mark.parametrize("role", [Role.INITIAL, Role.DELTA], ids=lambda r: r.value)
@share(2)
@given(data=st.data())
def test_other_missing_role_codes_refuse(role, data):
    """ADR-0231 §6, §7.3.6 and §18 'residual codes other than direction_unbound refuse':
    initial_unbound and delta_unbound are missing_role residuals the gate makes eligible,
    and v1 still refuses them."""
    frames = problem_frames(
        hazard_count=0,
        proposal_count=1,
        with_target=True,
        bound_roles=ALL_ROLES - {role},
        cue_count=1,
    )
    ctx = data.draw(frames.map(context_of))
    assert ctx.residual.residual_code == f"{role.value}_unbound"
    assert ctx.gate.reason_code == "eligible_missing_role"
    _assert_refused(propose(ctx), R.RESIDUAL_CODE_UNSUPPORTED)


@given(contexts(cue_count=0))
def test_a_policy_allowing_no_organ_and_a_refusal_naming_no_reason_are_malformed(ctx):
    """ADR-0231 §7.1 and §8: a policy names the organs a candidate may touch and a refusal
    names its reasons, so neither tuple may be empty: each is refused on construction as
    SEQUENCE_EMPTY, naming its field (the full kernel run found both checks unasserted)."""
    refusal = _assert_refused(propose(ctx), R.CUE_MISSING)
    with pytest.raises(RecordError) as caught:
        CandidateOperatorRefusal.sealed(**fields_for_sealing(refusal, reason_codes=()))
    expected = kernel.RecordDefect(
        "CandidateOperatorRefusal", "reason_codes", Defect.SEQUENCE_EMPTY
    )
    assert caught.value.found == expected
    with pytest.raises(RecordError) as caught:
        dataclasses.replace(MISSING_ROLE_CANDIDATE_POLICY, allowed_candidate_organs=())
    field = "allowed_candidate_organs"
    expected = kernel.RecordDefect("CandidateOperatorPolicy", field, Defect.SEQUENCE_EMPTY)
    assert caught.value.found == expected


@pytest.mark.obligation("ADR-0231/17.12", "LOCAL-0008/cue_rules")
@given(contexts(cue_count=0))
def test_typed_cue_missing_refuses_and_consumes_nothing(ctx):
    """ADR-0231 §6, §17: no grounded cue; the operator never infers a direction from prose.
    The refusal is not an attempt: the run records none and charges nothing."""
    _assert_refused(propose(ctx), R.CUE_MISSING)
    run = record_attempts(ctx.opened, CANDIDATE_OPERATOR_SET, ())
    assert type(run) is GeometricSearchRun
    assert run.candidate_attempts == ()
    assert run.exhaustion_code is RunExhaustionCode.OPERATOR_SPACE_DEPLETED
    assert run.budget_consumed.candidates_considered == 0


@pytest.mark.obligation("ADR-0231/17.12", "LOCAL-0008/cue_rules")
@given(st.integers(2, 3).flatmap(lambda n: contexts(cue_count=n)))
def test_typed_cue_ambiguous_refuses(ctx):
    """ADR-0231 §6, §17: more than one grounded cue is ambiguous; no cue is chosen."""
    _assert_refused(propose(ctx), R.CUE_AMBIGUOUS)


@pytest.mark.obligation("LOCAL-0008/preconditions")
def test_every_refusal_reason_is_exercised():
    """ADR-0231 §17, §18: the reasons are distinct closed codes, and every one of them is
    reached by a test in this file (the table above or the chain-based tests below)."""
    values = {reason.value for reason in OperatorRefusalReason}
    assert len(values) == len(OperatorRefusalReason)
    exercised = {reason for _, reason in REFUSALS.values()}
    exercised |= {R.RESIDUAL_KIND_UNSUPPORTED, R.RESIDUAL_CODE_UNSUPPORTED}
    exercised |= {R.CUE_MISSING, R.CUE_AMBIGUOUS, R.INPUT_MALFORMED}
    assert exercised == set(OperatorRefusalReason)


# ------------------------------------------------------------------------------------------
# Bad input never raises; refusals name only what validated


ARGUMENTS = (
    "operator_input",
    "frame",
    "assessment",
    "residual",
    "gate_decision",
    "budget_decision",
    "opened_run",
    "operator_set",
    "policy",
)
RECORD_TYPES = {
    "operator_input": CandidateOperatorInput,
    "frame": ProblemFrame,
    "assessment": ContractAssessment,
    "residual": ContractResidual,
    "gate_decision": SearchGateDecision,
    "budget_decision": ComputeBudgetDecision,
    "opened_run": OpenedSearchRun,
    "operator_set": OperatorSetManifest,
    "policy": CandidateOperatorPolicy,
}

garbage = st.one_of(
    st.none(),
    st.integers(),
    st.text(),
    st.binary(max_size=8),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=4), st.integers(), max_size=3),
    st.floats(allow_nan=True),
    st.booleans(),
    st.just(object()),
    st.sampled_from(sorted(RECORD_TYPES)).map(lambda name: object.__new__(RECORD_TYPES[name])),
    st.builds(Impostor),
)


def _assert_identities(refusal: CandidateOperatorRefusal, ctx: Context, broken: str) -> None:
    """ADR-0231 §8.3: an optional identity is present exactly when its record validated."""
    assert refusal.input_digest == (
        None if broken == "operator_input" else ctx.operator_input.input_digest
    )
    assert refusal.geometric_search_run_id == (
        None if broken == "opened_run" else ctx.opened.run_id
    )
    assert refusal.residual_id == (None if broken == "residual" else ctx.residual.residual_id)


@pytest.mark.obligation("ADR-0226/9.9")
@given(ctx=contexts(), argument=st.sampled_from(ARGUMENTS), junk=garbage)
def test_garbage_in_any_argument_never_raises(ctx, argument, junk):
    """ADR-0231 §7.3, §16.2 'no hidden fallback', §17: garbage (None, numbers, text, dicts,
    foreign objects, records with empty slots) is a typed refusal, never an exception."""
    outcome = propose(ctx, **{argument: junk})
    reason = R.INPUT_MALFORMED if argument == "operator_input" else R.RECORD_MALFORMED
    _assert_identities(_assert_refused(outcome, reason), ctx, argument)


@pytest.mark.obligation("LOCAL-0008/preconditions")
@pytest.mark.parametrize("argument", ARGUMENTS)
@share(5)
@given(ctx=contexts())
def test_a_record_in_the_wrong_place_refuses(argument, ctx):
    """ADR-0231 §7.2: each argument must be exactly its record type; a valid record of
    another type in its place is malformed input."""
    wrong = ctx.frame if argument != "frame" else ctx.assessment
    outcome = propose(ctx, **{argument: wrong})
    reason = R.INPUT_MALFORMED if argument == "operator_input" else R.RECORD_MALFORMED
    _assert_identities(_assert_refused(outcome, reason), ctx, argument)


@pytest.mark.obligation("LOCAL-0008/outputs", "LOCAL-0003/unvalidated_identity")
@given(ctx=contexts())
def test_refusal_names_only_validated_identities(ctx):
    """ADR-0231 §8.3: a tampered input, run or residual is not named; the others are."""
    forged_input = tampered(ctx.operator_input, attempt_index=1)
    refusal = _assert_refused(propose(ctx, operator_input=forged_input), R.IDENTITY_MISMATCH)
    _assert_identities(refusal, ctx, "operator_input")
    forged_run = tampered(ctx.opened, max_candidates=ctx.opened.max_candidates + 1)
    refusal = _assert_refused(propose(ctx, opened_run=forged_run), R.RECORD_MALFORMED)
    _assert_identities(refusal, ctx, "opened_run")
    forged_residual_ = tampered(ctx.residual, role=None)
    refusal = _assert_refused(propose(ctx, residual=forged_residual_), R.RECORD_MALFORMED)
    _assert_identities(refusal, ctx, "residual")
    # A semantic refusal over intact records names all three.
    refusal = _assert_refused(
        propose(ctx, operator_set=EMPTY_OPERATOR_SET), R.OPERATOR_SET_MISMATCH
    )
    _assert_identities(refusal, ctx, "")


# ------------------------------------------------------------------------------------------
# §18.15-17: spans and explanations


@pytest.mark.obligation("ADR-0231/18.15", "LOCAL-0008/evidence_and_digests")
@given(contexts(fact_count=1))
def test_duplicate_evidence_spans_are_preserved(ctx):
    """ADR-0231 §13, §18.15: with one fact bound as both initial and delta, the residual
    cites its span twice; the candidate keeps both entries, in order."""
    spans = ctx.residual.evidence_spans
    assert len(set(spans)) < len(spans)
    result = _assert_result(propose(ctx))
    for carried in (
        result.evidence_spans,
        result.candidate_attempt.evidence_spans,
        result.reconstruction.evidence_spans,
    ):
        assert carried == spans


@pytest.mark.obligation("ADR-0231/18.15", "LOCAL-0008/evidence_and_digests")
@given(contexts())
def test_cue_span_equal_to_a_bound_span_is_kept_twice(ctx):
    """ADR-0231 §13, §18.15: a cue grounded on the same words as a bound fact appears in the
    evidence twice (bound spans, then cue spans), and the candidate keeps both."""
    frame = ctx.frame
    cue = dataclasses.replace(frame.cues[0], span=frame.facts[0].span)
    ctx = context_of(dataclasses.replace(frame, cues=(cue,)))
    spans = ctx.residual.evidence_spans
    assert spans.count(cue.span) >= 2
    result = _assert_result(propose(ctx))
    assert result.evidence_spans == spans
    assert result.reconstruction.candidate_payload.cue_span == cue.span


def _respanned(result: CandidateOperatorResult, spans: tuple[SourceSpan, ...]):
    """The same result with ``spans`` and nothing else changed, every id resealed."""
    draft = tampered(result.reconstruction, evidence_spans=spans)
    candidate = oracle.candidate_digest(draft)
    attempt = CandidateAttempt.sealed(
        **fields_for_sealing(
            result.candidate_attempt, evidence_spans=spans, candidate_digest=candidate
        )
    )
    rebuilt = CandidateReconstruction.sealed(
        **fields_for_sealing(draft, candidate_digest=candidate, attempt_id=attempt.attempt_id)
    )
    return CandidateOperatorResult.sealed(
        **fields_for_sealing(
            result,
            evidence_spans=spans,
            candidate_digest=candidate,
            attempt_id=attempt.attempt_id,
            candidate_reconstruction_digest=rebuilt.candidate_reconstruction_digest,
            candidate_attempt=attempt,
            reconstruction=rebuilt,
        )
    )


def _reindexed(result: CandidateOperatorResult, index: int) -> CandidateOperatorResult:
    """The same result with its attempt, reconstruction and itself at ``index``, resealed;
    each holds its own int object equal to ``index`` (as decoding a stored trace gives them)."""
    attempt = CandidateAttempt.sealed(
        **fields_for_sealing(result.candidate_attempt, attempt_index=int(str(index)))
    )
    rebuilt = CandidateReconstruction.sealed(
        **fields_for_sealing(
            result.reconstruction, attempt_index=int(str(index)), attempt_id=attempt.attempt_id
        )
    )
    return CandidateOperatorResult.sealed(
        **fields_for_sealing(
            result,
            attempt_index=int(str(index)),
            attempt_id=attempt.attempt_id,
            candidate_reconstruction_digest=rebuilt.candidate_reconstruction_digest,
            candidate_attempt=attempt,
            reconstruction=rebuilt,
        )
    )


@share(5)
@given(contexts(), st.integers(257, 10**6))
def test_the_attempt_index_binds_by_value_not_by_object(ctx, index):
    """The result, its attempt and its reconstruction name one attempt index; three equal
    indexes that are three int objects (as decoding a stored trace gives them, beyond the
    small ints CPython shares) bind all the same (the kernel mutation score's survivor
    ``==`` made ``is``, docs/adr/0015)."""
    reindexed = _reindexed(_assert_result(propose(ctx)), index)
    assert type(reindexed) is CandidateOperatorResult, reindexed
    assert reindexed.attempt_index is not reindexed.candidate_attempt.attempt_index
    assert reindexed.attempt_index is not reindexed.reconstruction.attempt_index
    assert inspect_record(reindexed, CandidateOperatorResult) is None


@pytest.mark.obligation("ADR-0231/18.16")
@given(contexts())
def test_span_order_and_duplicates_change_every_identity(ctx):
    """ADR-0231 §13, §18.16: reordering (or duplicating) evidence spans changes
    candidate_digest, candidate_reconstruction_digest, attempt_id and operator_result_id."""
    spans = ctx.residual.evidence_spans
    assume(spans != spans[::-1])
    result = _assert_result(propose(ctx))
    for variant in (spans[::-1], spans + spans[-1:]):
        changed = _respanned(result, variant)
        assert changed.candidate_digest != result.candidate_digest
        assert changed.candidate_reconstruction_digest != result.candidate_reconstruction_digest
        assert changed.attempt_id != result.attempt_id
        assert changed.operator_result_id != result.operator_result_id
        assert changed.operator_result_id == oracle.operator_result_id(changed)
    # Through the operator itself: a residual citing the same spans reversed gives a
    # candidate whose content digest differs only by span order.
    reversed_result = _assert_result(propose(forged_residual(ctx, evidence_spans=spans[::-1])))
    assert reversed_result.evidence_spans == spans[::-1]
    assert reversed_result.candidate_digest != result.candidate_digest
    assert reversed_result.candidate_digest == _respanned(result, spans[::-1]).candidate_digest


notes = st.text(st.characters(codec="utf-8"), max_size=40)


@pytest.mark.obligation("ADR-0231/18.17")
@given(ctx=contexts(), note=notes)
def test_explanations_never_change_any_id(ctx, note):
    """ADR-0231 §14, §18.17: prose is excluded from every id, at every depth."""
    result = _assert_result(propose(ctx))
    attempt = result.candidate_attempt
    chatty_attempt = tampered(attempt, explanation=note)
    assert chatty_attempt.compute_id() == attempt.attempt_id == oracle.attempt_id(chatty_attempt)
    chatty = tampered(result, explanation=note, candidate_attempt=chatty_attempt)
    assert inspect_record(chatty, CandidateOperatorResult) is None
    assert chatty.compute_id() == result.operator_result_id == oracle.operator_result_id(chatty)
    refusal = _assert_refused(
        propose(ctx, operator_set=EMPTY_OPERATOR_SET), R.OPERATOR_SET_MISMATCH
    )
    chatty_refusal = tampered(refusal, explanation=note)
    assert inspect_record(chatty_refusal, CandidateOperatorRefusal) is None
    assert chatty_refusal.compute_id() == refusal.operator_refusal_id
    assert oracle.operator_refusal_id(chatty_refusal) == refusal.operator_refusal_id


# ------------------------------------------------------------------------------------------
# §18.18-19: no forbidden field


def _keys(value: Any) -> set[str]:
    if isinstance(value, dict):
        found = set(value)
        for item in value.values():
            found |= _keys(item)
        return found
    if isinstance(value, list):
        return set().union(*(_keys(item) for item in value)) if value else set()
    return set()


@pytest.mark.obligation("ADR-0231/18.18", "ADR-0231/18.19")
def test_no_output_type_declares_a_forbidden_field():
    """ADR-0231 §8.4, §18.18-19: no answer, final_answer, served_output, score, rank,
    priority, selected, best (or any other §8.4 name) on any operator record."""
    for record_type in (
        CandidateOperatorResult,
        CandidateOperatorRefusal,
        CandidateReconstruction,
        RoleBindingDelta,
        CandidateAttempt,
        CandidateOperatorInput,
        CandidateOperatorPolicy,
    ):
        names = {field.name for field in dataclasses.fields(record_type)}
        assert not names & FORBIDDEN_OUTPUT_FIELDS, record_type.__name__


@pytest.mark.obligation("ADR-0231/18.18", "ADR-0231/18.19")
@share(2)  # a secondary property: half the profile
@given(ctx=contexts())
def test_no_output_carries_a_forbidden_key_at_any_depth(ctx):
    """ADR-0231 §8.4, §18.18-19: the JSON of results and refusals, nested records included."""
    result = _assert_result(propose(ctx))
    refusal = _assert_refused(
        propose(ctx, operator_set=EMPTY_OPERATOR_SET), R.OPERATOR_SET_MISMATCH
    )
    for outcome in (result, refusal):
        assert not _keys(outcome.to_json()) & FORBIDDEN_OUTPUT_FIELDS


# ------------------------------------------------------------------------------------------
# §18.23-24: not closure; recordable in the run


@pytest.mark.obligation(
    "ADR-0231/18.23",
    "ADR-0231/18.attempt_stays_pending",
    "ADR-0228/17.17",
    "LOCAL-0008/outputs",
)
@given(ctx=contexts())
def test_result_alone_is_not_closure(ctx):
    """ADR-0231 §12, §17, §18.23: the attempt stays replay_pending, and a result cannot be
    constructed around a closed (or refused) attempt even when every id binds."""
    result = _assert_result(propose(ctx))
    assert result.candidate_attempt.replay_status is CandidateReplayStatus.REPLAY_PENDING
    for status, blockers in (
        (CandidateReplayStatus.REPLAY_CLOSED, ()),
        (CandidateReplayStatus.REPLAY_REFUSED, ("contract_replay_refused",)),
        (CandidateReplayStatus.REPLAY_PENDING, ()),  # control: this one must build
    ):
        attempt = CandidateAttempt.sealed(
            **fields_for_sealing(
                result.candidate_attempt, replay_status=status, replay_blockers=blockers
            )
        )
        rebuilt = CandidateReconstruction.sealed(
            **fields_for_sealing(result.reconstruction, attempt_id=attempt.attempt_id)
        )
        fields = fields_for_sealing(
            result,
            attempt_id=attempt.attempt_id,
            candidate_reconstruction_digest=rebuilt.candidate_reconstruction_digest,
            candidate_attempt=attempt,
            reconstruction=rebuilt,
        )
        if status is CandidateReplayStatus.REPLAY_PENDING:
            assert type(CandidateOperatorResult.sealed(**fields)) is CandidateOperatorResult
            continue
        with pytest.raises(RecordError) as raised:
            CandidateOperatorResult.sealed(**fields)
        assert raised.value.found.field == "candidate_attempt"
        assert raised.value.found.defect is Defect.INCONSISTENT_FIELDS
        closed = tampered(result, candidate_attempt=attempt)
        assert inspect_record(closed, CandidateOperatorResult) is not None


@pytest.mark.obligation(
    "ADR-0231/18.24",
    "ADR-0226/9.13",
    "ADR-0226/9.17",
    "LOCAL-0008/run_binding",
)
@given(ctx=contexts())
def test_result_is_recordable_and_the_run_admits_no_second_attempt(ctx):
    """ADR-0231 §11, §12, §18.24; ADR-0228 §8-§9: the attempt records into the opened run as
    candidate_replay_pending with the fixed charge consumed; a second proposal refuses."""
    result = _assert_result(propose(ctx))
    run = record_attempts(ctx.opened, CANDIDATE_OPERATOR_SET, (result.candidate_attempt,))
    assert type(run) is GeometricSearchRun, run
    assert run.run_disposition is RunDisposition.CANDIDATE_REPLAY_PENDING
    assert run.exhaustion_code is None
    assert run.candidate_attempts == (result.candidate_attempt,)
    assert run.opened_run_id == ctx.opened.run_id == result.geometric_search_run_id
    consumed = run.budget_consumed
    assert (
        consumed.candidates_considered,
        consumed.depth_reached,
        consumed.steps_used,
        consumed.parallelism_used,
        consumed.exhausted,
    ) == (1, 1, 1, 1, False)
    assert run.run_id == oracle.run_id(run)
    second = _input_for(ctx.assessment, ctx.residual, ctx.gate, ctx.budget, ctx.opened, 1)
    _assert_refused(propose(ctx, operator_input=second), R.ATTEMPT_INDEX_BEYOND_POLICY)


# ------------------------------------------------------------------------------------------
# Records altered in place after a first, successful use


def _fresh_copies(ctx: Context) -> dict[str, Any]:
    """Equal copies of every argument that share no record object with ``ctx`` where it
    matters, so that altering one in place touches nothing else."""
    residual = tampered(
        ctx.residual,
        evidence_spans=tuple(tampered(span) for span in ctx.residual.evidence_spans),
    )
    frame = tampered(ctx.frame, facts=tuple(tampered(fact) for fact in ctx.frame.facts))
    return {
        "operator_input": tampered(ctx.operator_input),
        "frame": frame,
        "assessment": ctx.assessment,
        "residual": residual,
        "gate_decision": tampered(ctx.gate),
        "budget_decision": tampered(ctx.budget),
        "opened_run": tampered(ctx.opened),
        "operator_set": OperatorSetManifest(
            CANDIDATE_OPERATOR_SET.operator_set_version, (dataclasses.replace(ROW),)
        ),
        "policy": dataclasses.replace(MISSING_ROLE_CANDIDATE_POLICY),
    }


def _set(record: Any, field: str, value: Any) -> None:
    object.__setattr__(record, field, value)


def _other_direction(frame: ProblemFrame) -> kernel.Direction:
    return [d for d in kernel.Direction if d is not frame.cues[0].direction][0]


# Each entry alters one argument in place (``object.__setattr__``, as the Record docstring
# warns a caller may) and names the reason the second proposal must give.
IN_PLACE: dict[str, tuple[Callable[[dict[str, Any]], None], OperatorRefusalReason]] = {
    "input_attempt_index": (
        lambda a: _set(a["operator_input"], "attempt_index", 1),
        R.IDENTITY_MISMATCH,
    ),
    "frame_cues": (lambda a: _set(a["frame"], "cues", ()), R.IDENTITY_MISMATCH),
    "frame_cue_direction": (
        lambda a: _set(
            a["frame"],
            "cues",
            (dataclasses.replace(a["frame"].cues[0], direction=_other_direction(a["frame"])),),
        ),
        R.IDENTITY_MISMATCH,
    ),
    "frame_nested_fact": (
        lambda a: _set(a["frame"].facts[0], "value", a["frame"].facts[0].value + 1),
        R.IDENTITY_MISMATCH,
    ),
    "residual_role": (lambda a: _set(a["residual"], "role", None), R.RECORD_MALFORMED),
    "residual_nested_span": (
        lambda a: _set(
            a["residual"].evidence_spans[0],
            "sentence_index",
            a["residual"].evidence_spans[0].sentence_index + 1,
        ),
        R.RECORD_MALFORMED,
    ),
    "gate_status": (
        lambda a: _set(a["gate_decision"], "status", SearchGateStatus.INELIGIBLE),
        R.RECORD_MALFORMED,
    ),
    "budget_steps": (
        lambda a: _set(a["budget_decision"], "max_steps", a["budget_decision"].max_steps + 1),
        R.RECORD_MALFORMED,
    ),
    "run_ceiling": (
        lambda a: _set(a["opened_run"], "max_candidates", a["opened_run"].max_candidates + 1),
        R.RECORD_MALFORMED,
    ),
    "operator_set_nested_row": (
        lambda a: _set(a["operator_set"].operators[0], "depth", 2),
        R.OPERATOR_SET_MISMATCH,
    ),
    "policy_depth": (lambda a: _set(a["policy"], "depth", 2), R.POLICY_UNSUPPORTED),
}


@pytest.mark.obligation("LOCAL-0013/trust_scoped")
@pytest.mark.parametrize("label", sorted(IN_PLACE))
@share(5)
@given(ctx=contexts())
def test_records_altered_in_place_after_use_are_refused(label, ctx):
    """ADR-0231 §7.2, §17 and the Record contract (record.py): a record that validated
    once and is then altered in place, at any depth, is judged again; nothing the first
    proposal learned about it is trusted."""
    arguments = _fresh_copies(ctx)
    first = propose_candidate(**arguments)
    _assert_result(first)
    alter, reason = IN_PLACE[label]
    alter(arguments)
    _assert_refused(propose_candidate(**arguments), reason)


@pytest.mark.obligation("LOCAL-0013/trust_scoped")
def test_a_frame_altered_in_place_is_judged_by_its_new_content():
    """ADR-0231 §6, §7.2, §9: the candidate's direction must be the cue of the frame its
    problem_frame_digest names. The shipped frame is used once, then its one cue is flipped
    to ``increase`` in place: its digest is now another (the oracle says so), so the
    assessment no longer names it and the operator must refuse with identity_mismatch. It
    must never propose ``increase`` under the digest of the ``decrease`` frame."""
    ctx = context_of(direction_unbound().frame)
    arguments = _fresh_copies(ctx)
    frame = arguments["frame"]
    original_digest = oracle.problem_frame_digest(frame)
    assert _assert_result(
        propose_candidate(**arguments)
    ).reconstruction.candidate_payload.direction is (kernel.Direction.DECREASE)
    _set(frame, "cues", (dataclasses.replace(frame.cues[0], direction=kernel.Direction.INCREASE),))
    assert oracle.problem_frame_digest(frame) != original_digest
    outcome = propose_candidate(**arguments)
    # After the operator has re-inspected the altered frame, its digest is still its own.
    assert kernel.problem_frame_digest(frame) == oracle.problem_frame_digest(frame)
    _assert_refused(outcome, R.IDENTITY_MISMATCH)


# ------------------------------------------------------------------------------------------
# Determinism and non-mutation


@pytest.mark.obligation("ADR-0226/9.4")
@share(2)  # a secondary property: half the profile
@given(ctx=st.sampled_from((0, 1, 1, 2)).flatmap(lambda n: contexts(cue_count=n)))
def test_outcomes_are_deterministic_and_inputs_untouched(ctx):
    """ADR-0231 §14, §3.2: the same inputs give the same bytes; no input is changed."""
    records = [
        ctx.operator_input,
        ctx.frame,
        ctx.assessment,
        ctx.residual,
        ctx.gate,
        ctx.budget,
        ctx.opened,
        CANDIDATE_OPERATOR_SET,
        MISSING_ROLE_CANDIDATE_POLICY,
    ]
    before = [_bytes(record) for record in records]
    for corrupt in (None, REFUSALS["operator_set_empty"][0]):
        first = propose(ctx) if corrupt is None else corrupt(ctx)
        second = propose(ctx) if corrupt is None else corrupt(ctx)
        assert _bytes(first) == _bytes(second)
    assert [_bytes(record) for record in records] == before


def _read_back(record: Any) -> Any:
    """``record`` decoded from its own canonical bytes: equal content, and each digest a new
    string object, as when a caller reads a stage's records back from a trace or a store."""
    return record_from_json(type(record), decode_canonical(record.canonical_bytes()))


@pytest.mark.obligation("ADR-0226/9.4")
@share(2)  # a secondary property: half the profile
@given(ctx=contexts(cue_count=1))
def test_records_read_back_from_their_bytes_give_the_same_outcome(ctx):
    """ADR-0231 §14: the outcome is a function of the records' content. The same chain read
    back from canonical bytes, so that no identity string is the object its producer made,
    must give the same candidate: a precondition that compared identities by object (``is``)
    would refuse it as an identity mismatch."""
    read_back = Context(*(_read_back(getattr(ctx, f.name)) for f in dataclasses.fields(ctx)))
    assert read_back.gate.problem_frame_digest is not ctx.opened.problem_frame_digest
    expected = _assert_result(propose(ctx))
    assert _bytes(_assert_result(propose(read_back))) == _bytes(expected)


@pytest.mark.obligation("LOCAL-0008/preconditions")
@given(ctx=contexts())
def test_a_residual_that_is_not_its_blockers_projection_is_refused(ctx):
    """docs/adr/0008: the residual must carry its blocker's code, role and spans exactly;
    a residual whose spans no longer match the assessment is an identity mismatch."""
    spans = ctx.residual.evidence_spans
    residual = resealed(ctx.residual, evidence_spans=spans + spans[:1])
    _assert_refused(propose(forged(ctx, residual=residual)), R.IDENTITY_MISMATCH)


@pytest.mark.obligation("LOCAL-0008/preconditions")
@pytest.mark.parametrize("past_the_end", [0, 1, 300])
@share(2)
@given(ctx=contexts())
def test_a_residual_naming_a_blocker_past_the_assessments_last_is_refused(ctx, past_the_end):
    """docs/adr/0008: a residual whose blocker index is at or beyond the end of the
    assessment's blockers projects no blocker: an identity mismatch, never an IndexError (the
    kernel mutation score's survivor `>=` made `is`, which indexed past the end for every
    index but the length itself, docs/adr/0015)."""
    index = len(ctx.assessment.blockers) + past_the_end
    residual = resealed(ctx.residual, blocker_index=index)
    _assert_refused(propose(forged(ctx, residual=residual)), R.IDENTITY_MISMATCH)


@pytest.mark.parametrize(
    ("charge", "fits"),
    [((1, 1), True), ((3, 1), False), ((1, 3), False), ((2, 2), True)],
)
def test_the_first_attempt_is_charged_in_full(charge, fits):
    """ADR-0231 §7.3.17-20: attempt 0 is charged the policy's whole (candidates, steps), and
    a charge beyond the budget refuses even the first attempt (the kernel mutation score's
    survivor `(index + 1)` made `(index ** 1)`, which charged attempt 0 nothing,
    docs/adr/0015). Budget (max_candidates 2, depth 1, max_steps 2, parallelism 1)."""
    from practice_loop.kernel.operators import attempt_charge_failure

    found = attempt_charge_failure(0, (2, 1, 2, 1), charge, (1, 1, 1))
    assert (found is None) is fits
    if not fits:
        assert found is R.CHARGE_EXCEEDS_BUDGET
    # The second attempt, where a policy allows two, is charged for both: 2 x 2 > 3.
    assert attempt_charge_failure(1, (3, 1, 3, 1), (2, 1), (1, 2, 1)) is R.CHARGE_EXCEEDS_BUDGET


@pytest.mark.parametrize("policy_parallelism", [0, 1, 2])
@pytest.mark.parametrize("budget_parallelism", [0, 1, 2])
def test_the_charge_admits_only_a_parallelism_of_one_on_both_sides(
    budget_parallelism, policy_parallelism
):
    """ADR-0231 §7.3.20: the budget and the policy must both allow exactly one worker; equal
    parallelisms other than 1 (both 0, both 2) refuse too, which a check ordering the last
    link of `budget == policy == 1` would pass."""
    from practice_loop.kernel.operators import attempt_charge_failure

    found = attempt_charge_failure(
        0, (2, 1, 2, budget_parallelism), (1, 1), (1, 1, policy_parallelism)
    )
    one = budget_parallelism == policy_parallelism == 1
    assert found is (None if one else R.PARALLELISM_NOT_ONE)
