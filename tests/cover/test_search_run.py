"""The geometric search run envelope: ADR-0228 §6-§13, §16, §17, and docs/adr/0004."""

from __future__ import annotations

import dataclasses
import hashlib
import json

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from practice_loop.harness.examples import direction_unbound
from practice_loop.kernel import (
    COMPUTE_BUDGET_V1,
    EMPTY_OPERATOR_SET,
    GEOMETRIC_SEARCH_RUN_POLICY_VERSION,
    GEOMETRIC_SEARCH_RUN_V2_POLICY_VERSION,
    SEARCH_GATE_IN_FORCE,
    BudgetCharge,
    BudgetConsumed,
    CandidateAttempt,
    CandidateReplayStatus,
    ComputeBudgetStatus,
    Defect,
    GateReason,
    GeometricSearchRun,
    OpenedSearchRun,
    OperatorManifestRow,
    OperatorSetManifest,
    RecordError,
    RunDisposition,
    RunExhaustionCode,
    RunRefusalReason,
    SearchRunRefusal,
    canonical_json,
    open_search_run,
    operator_set_id,
    record_attempts,
)
from practice_loop.kernel.search_run import REFUSAL_TABLE, search_input_for
from practice_strategies import (
    Chain,
    Impostor,
    RaisingImpostor,
    build_chain,
    chains,
    digests,
    eligible_chains,
    fields_for_sealing,
    oracle,
    resealed,
    run_outcome,
    share,
    span_sequences,
    tampered,
)

# isort: split
# After the kernel: importing the catalogue first imports the kernel from inside it, and the
# record strategies' registration (hypothesis_hook), which needs the catalogue, then fails.
from practice_loop.harness.catalogue.forging import (
    UNREGISTERED_BUDGET_VERSION,
    UNREGISTERED_GATE_VERSION,
)

R = RunRefusalReason
D = RunDisposition


def _field_names(record_type: type) -> list[str]:
    return [field.name for field in dataclasses.fields(record_type)]


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
        input_obligations=("single_grounded_cue", "evidence_spans_justified"),
        output_candidate_shape="role_binding_delta",
        ordering_key=("attempt_index",),
        forbidden_side_effects=("mutation", "io", "clock", "randomness"),
        replay_obligations=("contract_replay", "proof_replay"),
    )


def _manifest(*rows: OperatorManifestRow) -> OperatorSetManifest:
    return OperatorSetManifest("candidate_operators.v1", rows or (_row(),))


def _opened(chain: Chain, manifest: OperatorSetManifest) -> OpenedSearchRun:
    search_input = search_input_for(
        chain.gate, chain.budget, manifest, GEOMETRIC_SEARCH_RUN_V2_POLICY_VERSION
    )
    opened = open_search_run(search_input, chain.gate, chain.budget, manifest)
    assert type(opened) is OpenedSearchRun, opened
    return opened


def _attempt(
    row: OperatorManifestRow,
    index: int,
    steps_before: int,
    *,
    parent: CandidateAttempt | None = None,
    spans=(),
    candidate: str = "c" * 64,
    explanation: str = "pending",
) -> CandidateAttempt:
    return CandidateAttempt.sealed(
        attempt_index=index,
        parent_attempt_id=None if parent is None else parent.attempt_id,
        operator_id=row.operator_name,
        operator_version=row.operator_version,
        input_digest="a" * 64,
        candidate_digest=candidate,
        budget_charge=row.budget_charge,
        depth=row.depth,
        step_index=steps_before,
        replay_status=CandidateReplayStatus.REPLAY_PENDING,
        replay_blockers=(),
        evidence_spans=tuple(spans),
        explanation=explanation,
    )


def _serial(row: OperatorManifestRow, count: int) -> tuple[CandidateAttempt, ...]:
    return tuple(
        _attempt(row, index, index * row.budget_charge.steps, candidate=f"{index:064x}")
        for index in range(count)
    )


def _refusal_of(chain: Chain, **overrides) -> SearchRunRefusal:
    args = {
        "search_input": chain.search_input,
        "gate_decision": chain.gate,
        "budget_decision": chain.budget,
        "operator_set": chain.operator_set,
    }
    args.update(overrides)
    outcome = open_search_run(**args)
    assert type(outcome) is SearchRunRefusal, outcome
    return outcome


def _assert_refused(refusal: SearchRunRefusal, reason: RunRefusalReason) -> None:
    assert refusal.reason_codes == (reason.value,)
    assert refusal.run_disposition is REFUSAL_TABLE[reason]
    assert refusal.run_disposition.value in {
        "not_started",
        "blocked_by_budget",
        "blocked_by_gate",
        "invalid_input",
    }
    assert refusal.outcome_id == oracle.outcome_id(refusal)
    assert not hasattr(refusal, "run_id") and not hasattr(refusal, "candidate_attempts")


# ------------------------------------------------------------------------------------------
# The inert v1 run


@pytest.mark.obligation(
    "ADR-0228/16.8",
    "ADR-0228/17.7",
    "ADR-0228/17.independent_hashes",
    "LOCAL-0004/v1_inert",
    "LOCAL-0004/outcome_table",
)
def test_inert_run_of_the_shipped_example_reproduces_exactly():
    """ADR-0228 §13: the zero-attempt terminal run, every identity recomputed by hand. The
    budget is decided under compute_budget.v1, given explicitly, so that its ceiling is the
    ADR-0227 §8 row written out below; the gate is the one in force's."""
    chain = build_chain(direction_unbound().frame, policy=COMPUTE_BUDGET_V1)
    run = run_outcome(chain)
    assert type(run) is GeometricSearchRun
    budget = chain.budget
    assert budget.policy_version == "compute_budget.v1"
    assert chain.gate.policy_version == SEARCH_GATE_IN_FORCE.version
    expected_input = {
        "problem_frame_digest": chain.assessment.problem_frame_digest,
        "contract_assessment_id": chain.assessment.assessment_id,
        "residual_ids": [chain.residuals[0].residual_id],
        "gate_decision_id": chain.gate.decision_id,
        "gate_policy_version": SEARCH_GATE_IN_FORCE.version,
        "gate_input_digest": chain.gate.input_digest,
        "budget_id": budget.budget_id,
        "budget_policy_version": "compute_budget.v1",
        "operator_set_id": hashlib.sha256(
            b'{"operator_set_version":"operator_set.empty.v1","operators":[]}'
        ).hexdigest(),
        "operator_set_version": "operator_set.empty.v1",
        "run_policy_version": "geometric_search_run.v1",
        "schema_version": "geometric_search_run_schema.v1",
    }

    def sha(payload: object) -> str:
        raw = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(raw.encode("utf-8")).hexdigest()

    input_digest = sha(expected_input)
    expected_run = {
        "run_id": "",
        "run_policy_version": "geometric_search_run.v1",
        "schema_version": "geometric_search_run_schema.v1",
        "problem_frame_digest": expected_input["problem_frame_digest"],
        "contract_assessment_id": expected_input["contract_assessment_id"],
        "residual_ids": expected_input["residual_ids"],
        "gate_decision_id": expected_input["gate_decision_id"],
        "budget_id": budget.budget_id,
        "operator_set_id": expected_input["operator_set_id"],
        "operator_set_version": "operator_set.empty.v1",
        "input_digest": input_digest,
        "candidate_attempts": [],
        "budget_consumed": {
            "candidates_considered": 0,
            "max_candidates": 5,
            "depth_reached": 0,
            "max_depth": 2,
            "steps_used": 0,
            "max_steps": 10,
            "parallelism_used": 0,
            "max_parallelism": 1,
            "exhausted": False,
        },
        "run_disposition": "exhausted_no_candidate",
        "exhaustion_code": "operator_set_empty",
    }
    assert run.input_digest == input_digest
    assert run.operator_set_id == expected_input["operator_set_id"]
    assert run.run_id == sha(expected_run)
    assert run.candidate_attempts == ()
    assert run.opened_run_id is None


@pytest.mark.obligation("ADR-0228/16.8", "ADR-0228/17.7", "LOCAL-0004/v1_inert")
@given(eligible_chains())
def test_inert_run_for_every_eligible_chain(chain):
    """ADR-0228 §13 and §17.7: no attempts, no false consumption, ceiling copied exactly."""
    run = run_outcome(chain)
    assert type(run) is GeometricSearchRun
    consumed = run.budget_consumed
    assert run.candidate_attempts == ()
    assert (consumed.candidates_considered, consumed.depth_reached, consumed.steps_used) == (
        0,
        0,
        0,
    )
    assert consumed.parallelism_used == 0 and consumed.exhausted is False
    budget = chain.budget
    assert (
        consumed.max_candidates,
        consumed.max_depth,
        consumed.max_steps,
        consumed.max_parallelism,
    ) == (budget.max_candidates, budget.max_depth, budget.max_steps, budget.max_parallelism)
    assert run.run_disposition is D.EXHAUSTED_NO_CANDIDATE
    assert run.exhaustion_code is RunExhaustionCode.OPERATOR_SET_EMPTY
    assert run.input_digest == oracle.search_input_digest(chain.search_input)
    assert run.operator_set_id == oracle.operator_set_id(EMPTY_OPERATOR_SET)
    assert run.run_id == oracle.run_id(run)


@pytest.mark.obligation("ADR-0226/9.4", "ADR-0226/9.17", "ADR-0226/13.10", "ADR-0228/17.8")
@given(eligible_chains())
def test_inert_run_is_deterministic_and_leaves_inputs_untouched(chain):
    """ADR-0228 §10: byte-equivalent inputs reproduce every identity and byte."""
    before = [canonical_json(r.to_json()) for r in (chain.gate, chain.budget, chain.search_input)]
    first, second = run_outcome(chain), run_outcome(chain)
    assert canonical_json(first.to_json()) == canonical_json(second.to_json())
    after = [canonical_json(r.to_json()) for r in (chain.gate, chain.budget, chain.search_input)]
    assert before == after


# ------------------------------------------------------------------------------------------
# Initialization refusals: ADR-0228 §9 and every row of §16


@pytest.mark.obligation("ADR-0228/16.1", "ADR-0226/8.4")
@given(
    chains(GateReason.MULTIPLE_RESIDUALS)
    | chains(GateReason.ASSESSMENT_RUNNABLE)
    | chains(GateReason.UNCLASSIFIED_RESIDUAL)
    | chains(GateReason.RESIDUAL_WITHOUT_EVIDENCE)
)
def test_denied_gate_is_blocked_by_gate(chain):
    """ADR-0228 §16 row 1: a blocked or ineligible gate gives blocked_by_gate and no run."""
    refusal = _refusal_of(chain)
    _assert_refused(refusal, R.GATE_NOT_ELIGIBLE)
    assert refusal.gate_decision_id == chain.gate.decision_id
    assert refusal.budget_id == chain.budget.budget_id
    assert refusal.input_digest == oracle.search_input_digest(chain.search_input)


def _rebind(chain: Chain, budget) -> Chain:
    """The same chain with another budget, the run input rebuilt to name it."""
    search_input = search_input_for(chain.gate, budget, chain.operator_set)
    return Chain(
        chain.frame,
        chain.assessment,
        chain.residuals,
        chain.gate,
        budget,
        search_input,
        chain.operator_set,
    )


@pytest.mark.obligation(
    "ADR-0228/16.2",
    "ADR-0228/17.2",
    "ADR-0226/8.4",
    "LOCAL-0004/initialization_order",
)
@pytest.mark.parametrize(
    "status",
    [
        ComputeBudgetStatus.BUDGET_BLOCKED,
        ComputeBudgetStatus.BUDGET_ZERO,
        ComputeBudgetStatus.BUDGET_UNASSESSABLE,
    ],
)
@share(5)
@given(chain=eligible_chains())
def test_budget_not_allowed_is_blocked_by_budget(status, chain):
    """ADR-0228 §9 and §16 row 2: blocked, zero and unassessable budgets never start a run."""
    budget = resealed(
        chain.budget,
        status=status,
        reason_code="budget_zero_test",
        max_candidates=0,
        max_depth=0,
        max_steps=0,
        max_parallelism=0,
    )
    _assert_refused(_refusal_of(_rebind(chain, budget)), R.BUDGET_NOT_ALLOWED)


@pytest.mark.obligation("ADR-0228/16.2", "ADR-0228/17.2")
@pytest.mark.parametrize("field", ["max_candidates", "max_steps"])
@share(5)
@given(chain=eligible_chains())
def test_zero_ceiling_is_blocked_by_budget(field, chain):
    """ADR-0228 §9: max_candidates == 0 or max_steps == 0 refuses initialization."""
    budget = resealed(chain.budget, **{field: 0})
    _assert_refused(_refusal_of(_rebind(chain, budget)), R.BUDGET_CEILING_ZERO)


@pytest.mark.obligation("ADR-0228/16.6", "ADR-0228/17.5", "LOCAL-0004/initialization_order")
@pytest.mark.parametrize("field", ["max_candidates", "max_depth", "max_steps", "max_parallelism"])
@share(5)
@given(chain=eligible_chains(), value=st.integers(-(2**53 - 1), -1))
def test_negative_limit_is_invalid_input(field, chain, value):
    """ADR-0228 §16 row 6: any negative structural limit; no run."""
    budget = resealed(chain.budget, **{field: value})
    _assert_refused(_refusal_of(_rebind(chain, budget)), R.BUDGET_LIMIT_NEGATIVE)


@pytest.mark.obligation("ADR-0228/16.7", "ADR-0228/17.6")
@given(chain=eligible_chains(), parallelism=st.integers(2, 64))
def test_parallelism_other_than_one_is_invalid_input(chain, parallelism):
    """ADR-0228 §11 and §16 row 7: max_parallelism != 1 refuses even an allowed budget."""
    budget = resealed(chain.budget, max_parallelism=parallelism)
    _assert_refused(_refusal_of(_rebind(chain, budget)), R.BUDGET_PARALLELISM_NOT_ONE)


# Each value differs from the gate's own (no gate is decided under an unregistered version).
GATE_CROSS_IDENTITIES = [
    ("gate_decision_id", "f" * 64, R.BUDGET_GATE_DECISION_MISMATCH),
    ("gate_policy_version", UNREGISTERED_GATE_VERSION, R.BUDGET_GATE_POLICY_MISMATCH),
    ("gate_input_digest", "e" * 64, R.BUDGET_GATE_INPUT_MISMATCH),
]


@pytest.mark.obligation("ADR-0228/16.3", "ADR-0228/17.3", "ADR-0226/9.11")
@pytest.mark.parametrize("field, value, reason", GATE_CROSS_IDENTITIES)
@share(5)
@given(chain=eligible_chains())
def test_budget_gate_cross_identity_mismatch(field, value, reason, chain):
    """ADR-0228 §9 and §16 row 3: the budget must name this gate, its policy and its input."""
    budget = resealed(chain.budget, **{field: value})
    _assert_refused(_refusal_of(_rebind(chain, budget)), reason)


@pytest.mark.obligation("ADR-0228/16.3", "ADR-0228/17.3", "ADR-0226/9.11")
@given(chain=eligible_chains())
def test_budget_id_that_does_not_reproduce(chain):
    """ADR-0227 §9, ADR-0228 §9: a budget_id that its payload does not reproduce."""
    budget = tampered(chain.budget, max_steps=chain.budget.max_steps + 1)
    _assert_refused(_refusal_of(chain, budget_decision=budget), R.BUDGET_ID_MISMATCH)


@pytest.mark.obligation(
    "ADR-0228/16.3",
    "ADR-0228/16.5",
    "ADR-0228/17.3",
    "ADR-0228/17.4",
    "ADR-0226/9.10",
    "ADR-0226/9.11",
)
@given(chain=eligible_chains())
def test_gate_identity_and_version(chain):
    """ADR-0228 §9: the gate must reproduce and be of a supported policy version."""
    forged = tampered(chain.gate, input_digest="0" * 64)
    _assert_refused(_refusal_of(chain, gate_decision=forged), R.GATE_IDENTITY_MISMATCH)
    newer = resealed(chain.gate, policy_version=UNREGISTERED_GATE_VERSION)
    _assert_refused(_refusal_of(chain, gate_decision=newer), R.GATE_POLICY_VERSION_UNSUPPORTED)
    broken = tampered(chain.gate, status="ELIGIBLE")
    _assert_refused(_refusal_of(chain, gate_decision=broken), R.GATE_MALFORMED)


@pytest.mark.obligation("ADR-0228/16.5", "ADR-0228/17.4", "ADR-0226/9.10")
@given(chain=eligible_chains())
def test_unsupported_budget_policy_version(chain):
    """ADR-0228 §16 row 5: an unsupported budget policy version."""
    budget = resealed(chain.budget, policy_version=UNREGISTERED_BUDGET_VERSION)
    _assert_refused(_refusal_of(chain, budget_decision=budget), R.BUDGET_POLICY_VERSION_UNSUPPORTED)


# The gate and budget versions are unregistered ones, so never the records' own.
INPUT_CORRUPTIONS = [
    ("run_policy_version", "geometric_search_run.v9", R.RUN_POLICY_VERSION_UNSUPPORTED),
    ("schema_version", "geometric_search_run_schema.v2", R.SCHEMA_VERSION_UNSUPPORTED),
    ("gate_decision_id", "1" * 64, R.INPUT_GATE_MISMATCH),
    ("gate_policy_version", UNREGISTERED_GATE_VERSION, R.INPUT_GATE_MISMATCH),
    ("gate_input_digest", "2" * 64, R.INPUT_GATE_MISMATCH),
    ("budget_id", "3" * 64, R.INPUT_BUDGET_MISMATCH),
    ("budget_policy_version", UNREGISTERED_BUDGET_VERSION, R.INPUT_BUDGET_MISMATCH),
    ("problem_frame_digest", "4" * 64, R.PROBLEM_FRAME_MISMATCH),
    ("contract_assessment_id", "5" * 64, R.ASSESSMENT_MISMATCH),
    ("operator_set_id", "6" * 64, R.OPERATOR_SET_MISMATCH),
    ("operator_set_version", "candidate_operators.v1", R.OPERATOR_SET_MISMATCH),
    ("residual_ids", (), R.RESIDUAL_IDS_MISMATCH),
    ("budget_id", "NOT-A-DIGEST", R.INPUT_MALFORMED),
    ("residual_ids", ["7" * 64], R.INPUT_MALFORMED),
    ("run_policy_version", 1, R.RUN_POLICY_VERSION_UNSUPPORTED),
    ("run_policy_version", RaisingImpostor(), R.RUN_POLICY_VERSION_UNSUPPORTED),
    ("schema_version", RaisingImpostor(), R.SCHEMA_VERSION_UNSUPPORTED),
]


@share(5)
@given(chain=eligible_chains())
def test_arguments_whose_class_claims_every_class_are_malformed_and_never_read(chain):
    """ADR-0228 §16: an input, a budget or an attempt tuple that is not of its kind is that
    argument's malformed refusal, though its class claims to be the kind and it holds what
    the kind would hold (a supported run version, a negative limit): nothing is read of it."""
    impostor = Impostor(run_policy_version=chain.search_input.run_policy_version)
    refusal = _refusal_of(chain, search_input=impostor)
    _assert_refused(refusal, R.INPUT_MALFORMED)
    assert refusal.run_policy_version == ""
    _assert_refused(
        _refusal_of(chain, budget_decision=Impostor(max_candidates=-1)), R.BUDGET_MALFORMED
    )
    manifest = _manifest()
    outcome = record_attempts(_opened(chain, manifest), manifest, Impostor())
    assert type(outcome) is SearchRunRefusal
    assert outcome.reason_codes[0] == R.ATTEMPTS_MALFORMED.value


@pytest.mark.obligation(
    "ADR-0228/16.3",
    "ADR-0228/16.4",
    "ADR-0228/16.5",
    "ADR-0228/17.3",
    "ADR-0228/17.4",
    "LOCAL-0004/initialization_order",
)
@pytest.mark.parametrize("field, value, reason", INPUT_CORRUPTIONS)
@share(5)
@given(chain=eligible_chains())
def test_run_input_corruptions(field, value, reason, chain):
    """ADR-0228 §6, §9 and §16 rows 3-5: input identities must match the records exactly."""
    _assert_refused(
        _refusal_of(chain, search_input=tampered(chain.search_input, **{field: value})), reason
    )


@pytest.mark.obligation("ADR-0228/16.4")
@given(chain=eligible_chains(), extra=digests)
def test_residual_sequence_is_not_reordered_or_extended(chain, extra):
    """ADR-0228 §6: no residual may be added, removed, deduplicated or reordered."""
    ids = chain.search_input.residual_ids
    for changed in (ids + (extra,), ids + ids, ids[::-1] + (extra,)):
        refusal = _refusal_of(
            chain, search_input=tampered(chain.search_input, residual_ids=changed)
        )
        _assert_refused(refusal, R.RESIDUAL_IDS_MISMATCH)


@pytest.mark.obligation(
    "ADR-0228/16.5",
    "ADR-0228/17.4",
    "LOCAL-0004/v1_inert",
    "LOCAL-0004/operator_manifest",
)
@given(chain=eligible_chains())
def test_operator_set_checks(chain):
    """ADR-0228 §4, §6, §16 row 5: closed, supported, and only empty under v1."""
    unsupported = OperatorSetManifest("operator_set.other.v1", ())
    _assert_refused(
        _refusal_of(chain, operator_set=unsupported), R.OPERATOR_SET_VERSION_UNSUPPORTED
    )
    manifest = _manifest()
    bound = search_input_for(chain.gate, chain.budget, manifest)
    refusal = _refusal_of(chain, search_input=bound, operator_set=manifest)
    _assert_refused(refusal, R.OPERATOR_SET_NOT_AUTHORIZED)
    _assert_refused(
        _refusal_of(chain, operator_set=tampered(manifest, operators=[])), R.OPERATOR_SET_MALFORMED
    )
    empty_named_full = tampered(manifest, operator_set_version="operator_set.empty.v1")
    _assert_refused(_refusal_of(chain, operator_set=empty_named_full), R.OPERATOR_SET_MALFORMED)


@pytest.mark.obligation(
    "ADR-0226/9.9",
    "LOCAL-0004/initialization_order",
    "LOCAL-0004/refusal_table",
)
@pytest.mark.parametrize(
    "argument", ["search_input", "gate_decision", "budget_decision", "operator_set"]
)
@share(5)
@given(chain=eligible_chains())
def test_absent_record_is_not_started(argument, chain):
    """ADR-0228 §9 (absent identity): no run starts; the refusal is not_started."""
    _assert_refused(_refusal_of(chain, **{argument: None}), R.REQUIRED_RECORD_ABSENT)


garbage = st.one_of(
    st.integers(),
    st.text(),
    st.lists(st.integers()),
    st.dictionaries(st.text(), st.integers()),
    st.floats(allow_nan=True),
    st.booleans(),
    st.builds(Impostor),
)


@pytest.mark.obligation("ADR-0226/9.9", "LOCAL-0003/stages_reinspect")
@given(
    chain=eligible_chains(),
    argument=st.sampled_from(["search_input", "gate_decision", "budget_decision", "operator_set"]),
    junk=garbage,
)
def test_garbage_never_raises(chain, argument, junk):
    """Issue 2 'Bad input': no exception escapes; the answer is a typed invalid_input."""
    refusal = _refusal_of(chain, **{argument: junk})
    assert refusal.run_disposition is D.INVALID_INPUT
    assert refusal.reason_codes[0] in {reason.value for reason in RunRefusalReason}


@pytest.mark.obligation("LOCAL-0004/refusal_content", "LOCAL-0003/unvalidated_identity")
@given(chain=eligible_chains())
def test_refusal_identities_are_only_the_validated_ones(chain):
    """ADR-0228 §7: optional identities are set only when validated without guessing."""
    refusal = _refusal_of(chain, gate_decision=tampered(chain.gate, input_digest="0" * 64))
    assert refusal.gate_decision_id is None
    assert refusal.budget_id == chain.budget.budget_id
    assert refusal.input_digest == oracle.search_input_digest(chain.search_input)


@pytest.mark.obligation("LOCAL-0004/refusal_table")
def test_refusal_table_covers_every_reason_with_a_refusal_disposition():
    """ADR-0228 §7: the refusal branch carries only the four initialization dispositions."""
    assert set(REFUSAL_TABLE) == set(RunRefusalReason)
    assert {d.value for d in REFUSAL_TABLE.values()} == {
        "not_started",
        "blocked_by_budget",
        "blocked_by_gate",
        "invalid_input",
    }


# ------------------------------------------------------------------------------------------
# The v2 lifecycle: opened run, recorded attempts, accounting


@pytest.mark.obligation("LOCAL-0004/v2_open_then_record")
@given(eligible_chains())
def test_opened_run_identity(chain):
    """docs/adr/0004: a v2 run opens with zero attempts and a self-sealed run_id."""
    manifest = _manifest()
    opened = _opened(chain, manifest)
    assert opened.run_id == oracle.opened_run_id(opened)
    assert opened.operator_set_id == operator_set_id(manifest) == oracle.operator_set_id(manifest)
    assert opened.max_candidates == chain.budget.max_candidates


@pytest.mark.obligation("LOCAL-0004/outcome_table")
@given(eligible_chains())
def test_no_attempt_is_operator_space_depleted(chain):
    """ADR-0228 §9, §13: an empty operator space is exhaustion, not budget consumption."""
    manifest = _manifest()
    run = record_attempts(_opened(chain, manifest), manifest, ())
    assert type(run) is GeometricSearchRun
    assert run.run_disposition is D.EXHAUSTED_NO_CANDIDATE
    assert run.exhaustion_code is RunExhaustionCode.OPERATOR_SPACE_DEPLETED
    assert run.budget_consumed.exhausted is False


@pytest.mark.obligation(
    "ADR-0228/16.11",
    "ADR-0228/17.9",
    "ADR-0228/17.17",
    "LOCAL-0004/v2_open_then_record",
    "LOCAL-0004/outcome_table",
)
@given(chain=eligible_chains(), spans=span_sequences(min_size=1))
def test_one_attempt_is_recorded_pending(chain, spans):
    """ADR-0228 §8, §9; ADR-0231 §11: one attempt, fixed charge, depth 1, replay pending."""
    manifest = _manifest()
    opened = _opened(chain, manifest)
    attempt = _attempt(manifest.operators[0], 0, 0, spans=spans)
    run = record_attempts(opened, manifest, (attempt,))
    assert type(run) is GeometricSearchRun
    assert run.candidate_attempts == (attempt,)
    assert run.candidate_attempts[0].evidence_spans == spans  # order and duplicates kept
    assert run.run_disposition is D.CANDIDATE_REPLAY_PENDING and run.exhaustion_code is None
    consumed = run.budget_consumed
    assert (
        consumed.candidates_considered,
        consumed.depth_reached,
        consumed.steps_used,
        consumed.parallelism_used,
        consumed.exhausted,
    ) == (1, 1, 1, 1, False)
    assert run.opened_run_id == opened.run_id
    assert run.run_id == oracle.run_id(run)
    assert attempt.attempt_id == oracle.attempt_id(attempt)


@pytest.mark.obligation(
    "ADR-0228/17.12",
    "ADR-0228/17.independent_hashes",
    "LOCAL-0003/attempt_id_payload",
)
def test_attempt_id_hashes_exactly_the_listed_fields():
    """ADR-0228 §10: attempt_id over the twelve listed fields, nothing else."""
    attempt = _attempt(_row(), 0, 0)
    payload = {
        "attempt_index": 0,
        "parent_attempt_id": None,
        "operator_id": "missing_role_candidate",
        "operator_version": "missing_role_candidate.v1",
        "input_digest": "a" * 64,
        "candidate_digest": "c" * 64,
        "budget_charge": {"candidates": 1, "steps": 1},
        "depth": 1,
        "step_index": 0,
        "replay_status": "replay_pending",
        "replay_blockers": [],
        "evidence_spans": [],
    }
    raw = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert attempt.attempt_id == hashlib.sha256(raw.encode("utf-8")).hexdigest()


@pytest.mark.obligation(
    "ADR-0228/16.9",
    "ADR-0228/17.8",
    "ADR-0228/17.9",
    "ADR-0228/17.10",
    "ADR-0226/9.13",
    "LOCAL-0004/admission",
    "LOCAL-0004/outcome_table",
    "LOCAL-0004/exhaustion_flag",
)
@given(chain=eligible_chains(), steps=st.integers(1, 12), proposed=st.integers(0, 8))
def test_charges_fit_before_materialization(chain, steps, proposed):
    """ADR-0228 §9, §16 row 9: stop before the attempt whose charge would not fit; keep the
    prior ones; typed exhaustion; every accounting equation holds."""
    row = _row(steps=steps, attempts=8)
    manifest = _manifest(row)
    run = record_attempts(_opened(chain, manifest), manifest, _serial(row, proposed))
    assert type(run) is GeometricSearchRun
    limit = chain.budget
    fits = 0
    while (
        fits < proposed
        and fits + 1 <= limit.max_candidates
        and (fits + 1) * steps <= limit.max_steps
    ):
        fits += 1
    assert len(run.candidate_attempts) == fits
    consumed = run.budget_consumed
    assert consumed.candidates_considered == fits
    assert consumed.steps_used == fits * steps <= limit.max_steps
    assert consumed.depth_reached == (1 if fits else 0)
    assert consumed.parallelism_used == (1 if fits else 0)
    stopped = fits < proposed
    assert consumed.exhausted is stopped
    if stopped:
        expected = (
            RunExhaustionCode.MAX_CANDIDATES_REACHED
            if fits + 1 > limit.max_candidates
            else RunExhaustionCode.MAX_STEPS_REACHED
        )
        assert run.exhaustion_code is expected
    else:
        assert run.exhaustion_code in (None, RunExhaustionCode.OPERATOR_SPACE_DEPLETED)
    assert run.run_disposition is (D.CANDIDATE_REPLAY_PENDING if fits else D.EXHAUSTED_NO_CANDIDATE)
    assert run.run_id == oracle.run_id(run)


@pytest.mark.obligation("ADR-0228/16.9", "ADR-0226/9.13", "LOCAL-0004/admission")
@given(chains(GateReason.ELIGIBLE_MISSING_ROLE))
def test_depth_ceiling(chain):
    """ADR-0228 §9: an attempt deeper than max_depth is not admitted (max_depth_reached)."""
    rows = (_row("root_op", depth=1), _row("child_op", depth=2), _row("grandchild_op", depth=3))
    manifest = _manifest(*rows)
    root = _attempt(rows[0], 0, 0)
    child = _attempt(rows[1], 1, 1, parent=root)
    grandchild = _attempt(rows[2], 2, 2, parent=child)
    run = record_attempts(_opened(chain, manifest), manifest, (root, child, grandchild))
    assert type(run) is GeometricSearchRun
    assert run.candidate_attempts == (root, child)  # max_depth is 2 for missing_role
    assert run.exhaustion_code is RunExhaustionCode.MAX_DEPTH_REACHED
    assert run.budget_consumed.depth_reached == 2 and run.budget_consumed.exhausted


ATTEMPT_FAULTS = {
    "attempt_not_pending": lambda row: (tampered_status(_attempt(row, 0, 0)),),
    "attempt_operator_undeclared": lambda row: (_attempt(_row("other_op"), 0, 0),),
    "attempt_charge_undeclared": lambda row: (_attempt(_row(steps=2), 0, 0),),
    "attempt_limit_exceeded": lambda row: _serial(row, 2),
    "attempt_order_invalid": lambda row: (_attempt(row, 1, 0),),
    "attempts_malformed": lambda row: [_attempt(row, 0, 0)],
}


def tampered_status(attempt: CandidateAttempt) -> CandidateAttempt:
    return CandidateAttempt.sealed(
        **{
            **{
                name: getattr(attempt, name)
                for name in _field_names(CandidateAttempt)
                if name != "attempt_id"
            },
            "replay_status": CandidateReplayStatus.REPLAY_REFUSED,
            "replay_blockers": ("direction_unbound",),
        }
    )


@pytest.mark.obligation(
    "ADR-0228/16.10",
    "ADR-0228/17.8",
    "LOCAL-0004/record_attempts_checks",
    "LOCAL-0004/reserved_dispositions",
)
@pytest.mark.parametrize("reason", sorted(ATTEMPT_FAULTS))
@share(5)
@given(chain=eligible_chains())
def test_attempts_that_cannot_be_reproduced_refuse_the_run(reason, chain):
    """ADR-0228 §16 row 10: an undeclared operator, charge or order stops fail-closed."""
    manifest = _manifest()
    outcome = record_attempts(
        _opened(chain, manifest), manifest, ATTEMPT_FAULTS[reason](manifest.operators[0])
    )
    assert type(outcome) is SearchRunRefusal
    assert outcome.reason_codes == (reason,)
    assert outcome.run_disposition is D.INVALID_INPUT


@pytest.mark.obligation("ADR-0228/17.8", "LOCAL-0004/record_attempts_checks")
@given(chain=eligible_chains())
def test_lineage_must_name_an_earlier_attempt(chain):
    """docs/adr/0004: a parent is an earlier attempt one level up."""
    rows = (_row("root_op", depth=1), _row("child_op", depth=2))
    manifest = _manifest(*rows)
    orphan = _attempt(rows[1], 0, 0, parent=_attempt(rows[0], 0, 0))
    outcome = record_attempts(_opened(chain, manifest), manifest, (orphan,))
    assert type(outcome) is SearchRunRefusal
    assert outcome.reason_codes == ("attempt_lineage_invalid",)


@pytest.mark.obligation("LOCAL-0004/record_attempts_checks")
def test_a_lineage_deeper_than_the_shared_small_ints_is_in_order():
    """docs/adr/0004: depths compare by value. A chain of 300 attempts, each the child of the
    one before, reaches depths past 256, which CPython does not share between int objects;
    it is in order, and one depth off is not (the CI sample's survivor `!=` made `is not` in
    lineage_defect, docs/adr/0015)."""
    from practice_loop.kernel.search_run import lineage_defect

    row = _row()
    attempts: list[CandidateAttempt] = []
    for index in range(300):
        parent = attempts[-1] if attempts else None
        shallow = _attempt(row, index, index, parent=parent, candidate=f"{index:064x}")
        attempts.append(
            CandidateAttempt.sealed(**fields_for_sealing(shallow, depth=int(str(index + 1))))
        )
    assert lineage_defect(tuple(attempts)) is None
    last = attempts[-1]
    off = CandidateAttempt.sealed(**fields_for_sealing(last, depth=last.depth + 1))
    assert lineage_defect((*attempts[:-1], off)) is RunRefusalReason.ATTEMPT_LINEAGE_INVALID


@pytest.mark.obligation("LOCAL-0004/record_attempts_checks")
@given(chain=eligible_chains())
def test_record_attempts_checks_its_run_and_manifest(chain):
    """docs/adr/0004: the manifest must be the one the run opened with; the run must seal."""
    manifest = _manifest()
    opened = _opened(chain, manifest)
    other = _manifest(_row(attempts=2))
    outcome = record_attempts(opened, other, ())
    assert type(outcome) is SearchRunRefusal and outcome.reason_codes == ("operator_set_mismatch",)
    # Sealed afresh, naming the manifest's own id but another version, sorting before or after.
    for version in ("a.v1", "z.v1"):
        other_version = resealed(opened, operator_set_version=version)
        outcome = record_attempts(other_version, manifest, ())
        assert type(outcome) is SearchRunRefusal
        assert outcome.reason_codes == ("operator_set_mismatch",), version
    forged = tampered(opened, max_candidates=50)
    outcome = record_attempts(forged, manifest, ())
    assert type(outcome) is SearchRunRefusal and outcome.reason_codes == ("opened_run_malformed",)


# ------------------------------------------------------------------------------------------
# Identity: explanation stability, span-order sensitivity


@pytest.mark.obligation("ADR-0228/17.12")
@given(chain=eligible_chains(), note=st.text())
def test_explanations_never_enter_run_identity(chain, note):
    """ADR-0228 §10, §17.12: prose is excluded from input_digest, attempt_id and run_id."""
    manifest = _manifest()
    opened = _opened(chain, manifest)
    plain = record_attempts(opened, manifest, (_attempt(manifest.operators[0], 0, 0),))
    chatty = record_attempts(
        opened, manifest, (_attempt(manifest.operators[0], 0, 0, explanation=note),)
    )
    assert plain.run_id == chatty.run_id
    assert plain.candidate_attempts[0].attempt_id == chatty.candidate_attempts[0].attempt_id
    assert tampered(plain, explanation=note).compute_id() == plain.run_id


@pytest.mark.obligation("ADR-0228/17.13")
@given(chain=eligible_chains(), spans=span_sequences(min_size=2))
def test_span_order_and_duplicates_change_identity(chain, spans):
    """ADR-0228 §10, §17.13: reordering or duplicating spans changes attempt_id and run_id."""
    assume(spans != spans[::-1])
    manifest = _manifest()
    opened = _opened(chain, manifest)
    row = manifest.operators[0]
    variants = [spans, spans[::-1], spans + spans[:1]]
    runs = [record_attempts(opened, manifest, (_attempt(row, 0, 0, spans=v),)) for v in variants]
    assert len({run.candidate_attempts[0].attempt_id for run in runs}) == 3
    assert len({run.run_id for run in runs}) == 3


# ------------------------------------------------------------------------------------------
# Record invariants


def _inert_run() -> GeometricSearchRun:
    run = run_outcome(build_chain(direction_unbound().frame))
    assert type(run) is GeometricSearchRun
    return run


@pytest.mark.obligation("LOCAL-0004/exhaustion_flag", "LOCAL-0004/outcome_table")
@pytest.mark.parametrize(
    "changes",
    [
        {"run_disposition": RunDisposition.INVALID_INPUT},
        {"opened_run_id": "a" * 64},
        {"exhaustion_code": None},
        {"budget_consumed": BudgetConsumed(1, 5, 1, 2, 1, 10, 1, 1, False)},
        {"budget_consumed": BudgetConsumed(0, 5, 0, 2, 0, 10, 0, 1, True)},
        {"run_disposition": RunDisposition.CANDIDATE_REPLAY_PENDING},
        {"exhaustion_code": RunExhaustionCode.MAX_STEPS_REACHED},
        {"exhaustion_code": RunExhaustionCode.OPERATOR_SPACE_DEPLETED},
        {
            "exhaustion_code": RunExhaustionCode.MAX_CANDIDATES_REACHED,
            "budget_consumed": BudgetConsumed(0, 5, 0, 2, 0, 10, 0, 1, True),
        },
    ],
)
def test_run_record_refuses_inconsistent_states(changes):
    """ADR-0228 §7, §9: type-state pairs, exhaustion codes and accounting are enforced."""
    run = _inert_run()
    fields = {name: getattr(run, name) for name in _field_names(GeometricSearchRun)}
    fields.update(changes)
    del fields["run_id"]
    with pytest.raises(RecordError) as raised:
        GeometricSearchRun.sealed(**fields)
    assert raised.value.found.defect is Defect.INCONSISTENT_FIELDS


@pytest.mark.obligation("LOCAL-0004/v2_open_then_record", "LOCAL-0004/outcome_table")
@share(3)
@given(chain=eligible_chains())
def test_a_v2_run_without_the_run_it_was_opened_as_is_refused(chain):
    """docs/adr/0004: a v2 run is recorded only over an opened run, and names it; v1 alone
    names none. The check compares two bools, so `==` made `>=` would pass a v2 run naming
    none (the case the inert v1 run above cannot reach)."""
    manifest = _manifest()
    run = record_attempts(
        _opened(chain, manifest), manifest, (_attempt(manifest.operators[0], 0, 0),)
    )
    assert type(run) is GeometricSearchRun and run.opened_run_id is not None
    with pytest.raises(RecordError) as raised:
        GeometricSearchRun.sealed(**fields_for_sealing(run, opened_run_id=None))
    assert (raised.value.found.field, raised.value.found.defect) == (
        "opened_run_id",
        Defect.INCONSISTENT_FIELDS,
    )


@pytest.mark.obligation("LOCAL-0004/outcome_table")
@share(5)
@given(chain=eligible_chains())
def test_a_replay_refused_run_is_one_whose_every_attempt_was_refused(chain):
    """docs/adr/0004: the reserved disposition ``candidate_replay_refused`` fits exactly a run
    whose attempts are all replay-refused; over a pending attempt it is inconsistent (the
    kernel mutation score's survivor `==` made `>`, which refused the one run it fits,
    docs/adr/0015)."""
    manifest = _manifest()
    attempt = _attempt(manifest.operators[0], 0, 0)
    run = record_attempts(_opened(chain, manifest), manifest, (attempt,))
    assert type(run) is GeometricSearchRun
    fields = {name: getattr(run, name) for name in _field_names(GeometricSearchRun)}
    del fields["run_id"]
    fields["run_disposition"] = RunDisposition.CANDIDATE_REPLAY_REFUSED
    every_attempt_refused = {**fields, "candidate_attempts": (tampered_status(attempt),)}
    refused = GeometricSearchRun.sealed(**every_attempt_refused)
    assert refused.run_disposition is RunDisposition.CANDIDATE_REPLAY_REFUSED
    with pytest.raises(RecordError) as raised:
        GeometricSearchRun.sealed(**fields)  # its attempt still pending
    assert (raised.value.found.field, raised.value.found.defect) == (
        "run_disposition",
        Defect.INCONSISTENT_FIELDS,
    )


@pytest.mark.obligation("LOCAL-0004/admission")
def test_the_accounting_counts_attempts_not_only_their_candidate_charges():
    """ADR-0228 §9: candidates_considered is both the number of attempts and the sum of their
    candidate charges, so one attempt charged two candidates balances no accounting (the
    kernel mutation score's survivor `==` made `>=` in the first equation, docs/adr/0015)."""
    from practice_loop.kernel.search_run import accounting_balances

    assert accounting_balances(BudgetConsumed(1, 5, 1, 2, 1, 10, 1, 1, False), ((1, 1, 1),))
    two_for_one = BudgetConsumed(2, 5, 1, 2, 1, 10, 1, 1, False)
    assert not accounting_balances(two_for_one, ((2, 1, 1),))


@pytest.mark.obligation("LOCAL-0004/admission")
@pytest.mark.parametrize(
    ("ceiling", "charges"),
    # A ceiling of 0 with an attempt is no record at all (parallelism used past it).
    [(0, ()), (1, ()), (1, ((1, 1, 1),)), (2, ()), (2, ((1, 1, 1),))],
)
def test_the_accounting_balances_only_under_a_parallelism_ceiling_of_one(ceiling, charges):
    """ADR-0228 §9 and §11: whatever was used, the ceiling on parallelism is exactly 1, so
    neither 0 nor 2 balances (the last link of `used <= ceiling == 1`, which `<=` or `>=` for
    its `==` would pass on one side)."""
    from practice_loop.kernel.search_run import accounting_balances

    used = 1 if charges else 0
    consumed = BudgetConsumed(used, 5, used, 2, used, 10, used, ceiling, False)
    assert accounting_balances(consumed, charges) is (ceiling == 1)


def test_the_accounting_compares_counts_by_value_not_by_object():
    """ADR-0228 §9's equations hold between equal counts that are distinct objects: a policy
    may grant depths and steps past CPython's cached small ints (up to 256), and a decoded
    record holds its own int objects. The kernel mutation score's survivors `==` made `is` in
    the depth equation and in the count of attempts (docs/adr/0015)."""
    from practice_loop.kernel.search_run import accounting_balances

    depth, steps = int("300"), int("700")
    consumed = BudgetConsumed(1, 5, depth, int("400"), steps, int("900"), 1, 1, False)
    charges = ((1, int("700"), int("300")),)
    assert consumed.depth_reached is not charges[0][2] and consumed.steps_used is not charges[0][1]
    assert accounting_balances(consumed, charges)
    assert not accounting_balances(consumed, ((1, int("700"), int("299")),))
    # 300 attempts of one candidate each: the count of attempts and the sum of their charges
    # are ints built apart from the record's, so `==` made `is` in either equation fails here.
    many = int("300")
    consumed = BudgetConsumed(many, int("400"), 1, 2, many, int("900"), 1, 1, False)
    assert accounting_balances(consumed, ((1, 1, 1),) * 300)
    assert not accounting_balances(consumed, ((1, 1, 1),) * 299)


@pytest.mark.obligation("LOCAL-0004/v1_inert")
@pytest.mark.parametrize(
    "version", [GEOMETRIC_SEARCH_RUN_POLICY_VERSION, GEOMETRIC_SEARCH_RUN_V2_POLICY_VERSION]
)
def test_the_run_policy_version_is_read_by_value_not_by_object(version):
    """ADR-0228 §13, §16: the run's policy version chooses the inert v1 shell or an opened v2
    run by its value. A version decoded from bytes is an equal string that is not the
    kernel's constant; it opens the same run (the kernel mutation score's survivor `==` made
    `is`, docs/adr/0015)."""
    copy = "".join(list(version))
    assert copy == version and copy is not version
    frame = direction_unbound().frame
    v2 = version == GEOMETRIC_SEARCH_RUN_V2_POLICY_VERSION
    operator_set = _manifest() if v2 else EMPTY_OPERATOR_SET
    expected, opened = (
        run_outcome(build_chain(frame, operator_set=operator_set, run_policy_version=chosen))
        for chosen in (version, copy)
    )
    assert type(expected) is (OpenedSearchRun if v2 else GeometricSearchRun)
    assert type(opened) is type(expected) and opened == expected


@pytest.mark.obligation("LOCAL-0004/v1_inert")
def test_v1_run_may_not_carry_attempts():
    """ADR-0228 §4, §18: the v1 shell records no attempt."""
    run = _inert_run()
    attempt = _attempt(_row(), 0, 0)
    fields = {name: getattr(run, name) for name in _field_names(GeometricSearchRun)}
    fields.update(
        candidate_attempts=(attempt,),
        budget_consumed=BudgetConsumed(1, 5, 1, 2, 1, 10, 1, 1, False),
        run_disposition=RunDisposition.CANDIDATE_REPLAY_PENDING,
        exhaustion_code=None,
    )
    del fields["run_id"]
    with pytest.raises(RecordError):
        GeometricSearchRun.sealed(**fields)


@pytest.mark.obligation("LOCAL-0004/refusal_table")
def test_refusal_record_refuses_run_dispositions():
    """ADR-0228 §7: a refusal cannot masquerade as a run."""
    with pytest.raises(RecordError) as raised:
        SearchRunRefusal.sealed(
            run_policy_version="geometric_search_run.v1",
            input_digest=None,
            gate_decision_id=None,
            budget_id=None,
            run_disposition=RunDisposition.EXHAUSTED_NO_CANDIDATE,
            reason_codes=("gate_not_eligible",),
            explanation="",
        )
    assert raised.value.found.defect is Defect.INCONSISTENT_FIELDS


@pytest.mark.obligation("ADR-0228/17.9")
@pytest.mark.parametrize("charge", [(2, 1), (1, 0), (0, 1), (True, 1), (1, -1)])
def test_budget_charge_is_one_candidate_and_positive_steps(charge):
    """ADR-0228 §8: exactly one candidate, a positive number of steps."""
    with pytest.raises(RecordError):
        BudgetCharge(*charge)
