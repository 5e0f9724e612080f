"""Prohibited states of ADR-0228 §16-§17 that the mutant catalogue (docs/mutants/adr-0228.toml)
showed no other test of their obligation to reject: each test here fails under the mutant that
names its obligation, and passes on the code as it is."""

from __future__ import annotations

import dataclasses

import pytest

from practice_loop.harness.catalogue.forging import opened
from practice_loop.harness.examples import direction_unbound
from practice_loop.kernel import (
    BudgetCharge,
    CandidateAttempt,
    CandidateReplayStatus,
    Defect,
    GeometricSearchRun,
    OperatorManifestRow,
    OperatorSetManifest,
    RecordError,
    RunDisposition,
    SearchRunRefusal,
    record_attempts,
)
from practice_strategies import build_chain

CHAIN = build_chain(direction_unbound().frame)


def _row(
    name: str = "missing_role_candidate", *, version: str | None = None
) -> OperatorManifestRow:
    return OperatorManifestRow(
        operator_name=name,
        operator_version=version or f"{name}.v1",
        allowed_residual_kinds=("missing_role",),
        allowed_residual_codes=("direction_unbound",),
        allowed_candidate_organs=("unary_delta_transition",),
        max_attempts_per_run=3,
        budget_charge=BudgetCharge(1, 1),
        depth=1,
        max_parallelism=1,
        schema_versions=(("problem_frame", "problem_frame.v1"),),
        policy_versions=(("compute_budget", "compute_budget.v1"),),
        input_obligations=("single_grounded_cue", "evidence_spans_justified"),
        output_candidate_shape="role_binding_delta",
        ordering_key=("attempt_index",),
        forbidden_side_effects=("mutation", "io", "clock", "randomness"),
        replay_obligations=("contract_replay", "proof_replay"),
    )


def _attempt(
    row: OperatorManifestRow,
    index: int,
    steps_before: int,
    *,
    version: str | None = None,
    status: CandidateReplayStatus = CandidateReplayStatus.REPLAY_PENDING,
) -> CandidateAttempt:
    return CandidateAttempt.sealed(
        attempt_index=index,
        parent_attempt_id=None,
        operator_id=row.operator_name,
        operator_version=version or row.operator_version,
        input_digest="a" * 64,
        candidate_digest=f"{index:064x}",
        budget_charge=row.budget_charge,
        depth=row.depth,
        step_index=steps_before,
        replay_status=status,
        replay_blockers=(),
        evidence_spans=(),
        explanation="pending",
    )


def _refused(outcome: object, reason: str) -> SearchRunRefusal:
    assert type(outcome) is SearchRunRefusal, outcome
    assert outcome.reason_codes == (reason,)
    assert outcome.run_disposition is RunDisposition.INVALID_INPUT
    return outcome


@pytest.mark.obligation("ADR-0228/17.8", "LOCAL-0004/record_attempts_checks")
def test_attempt_whose_step_index_skips_the_earlier_charge_is_out_of_order():
    """ADR-0228 §8, §17.8: attempts come in one deterministic order, each step_index the steps
    charged before it; a second attempt claiming step 0 again is attempt_order_invalid."""
    row = _row()
    manifest = OperatorSetManifest("candidate_operators.v1", (row,))
    first, second = _attempt(row, 0, 0), _attempt(row, 1, 0)
    _refused(
        record_attempts(opened(CHAIN, manifest), manifest, (first, second)), "attempt_order_invalid"
    )
    # Control: the same attempts with the cumulative step index are recorded, in order.
    run = record_attempts(opened(CHAIN, manifest), manifest, (first, _attempt(row, 1, 1)))
    assert type(run) is GeometricSearchRun
    assert [a.attempt_index for a in run.candidate_attempts] == [0, 1]


@pytest.mark.obligation("ADR-0228/16.10", "LOCAL-0004/record_attempts_checks")
def test_attempt_from_an_undeclared_version_of_a_declared_operator_refuses_the_run():
    """ADR-0228 §16 row 10: the operator declaration is (name, version); an attempt from a
    version the manifest does not declare cannot be reproduced and refuses the whole run."""
    row = _row()
    manifest = OperatorSetManifest("candidate_operators.v1", (row,))
    stranger = _attempt(row, 0, 0, version="missing_role_candidate.v2")
    outcome = record_attempts(opened(CHAIN, manifest), manifest, (stranger,))
    _refused(outcome, "attempt_operator_undeclared")


@pytest.mark.obligation("ADR-0228/16.13", "ADR-0228/17.17")
def test_a_pending_run_record_cannot_carry_a_closed_attempt():
    """ADR-0228 §7, §12, §16 row 13: closure is external evidence only; a
    candidate_replay_pending run whose attempts include a replay_closed one cannot be sealed."""
    row = _row()
    manifest = OperatorSetManifest("candidate_operators.v1", (row,))
    run = record_attempts(
        opened(CHAIN, manifest), manifest, (_attempt(row, 0, 0), _attempt(row, 1, 1))
    )
    assert type(run) is GeometricSearchRun
    assert run.run_disposition is RunDisposition.CANDIDATE_REPLAY_PENDING
    closed = _attempt(row, 1, 1, status=CandidateReplayStatus.REPLAY_CLOSED)
    fields = {field.name: getattr(run, field.name) for field in dataclasses.fields(run)}
    del fields["run_id"]
    fields["candidate_attempts"] = (run.candidate_attempts[0], closed)
    with pytest.raises(RecordError) as raised:
        GeometricSearchRun.sealed(**fields)
    assert raised.value.found.field == "run_disposition"
    assert raised.value.found.defect is Defect.INCONSISTENT_FIELDS
