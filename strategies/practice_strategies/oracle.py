"""An independent oracle for every kernel identity.

Each function rebuilds a payload from the field lists the ADRs give and hashes it with its own
copy of the canonical-JSON rule (ADR-0228 §10). Nothing here imports the kernel's hashing or
encoding helpers: it reads record attributes and nothing else, so a drift in the kernel's
encoder shows up as a disagreement with this module.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable
from enum import Enum
from typing import Any


def canonical_bytes(payload: Any) -> bytes:
    """ADR-0228 §10, written out again."""
    return json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode(
        "utf-8"
    )


def digest_of(payload: Any) -> str:
    return hashlib.sha256(canonical_bytes(payload)).hexdigest()


def _value(value: Any) -> Any:
    return value.value if isinstance(value, Enum) else value


def span_payload(span: Any) -> dict[str, Any]:
    # ADR-0227 §7.11: text, start, end, sentence_index.
    return {
        "text": span.text,
        "start": span.start,
        "end": span.end,
        "sentence_index": span.sentence_index,
    }


def spans_payload(spans: Any) -> list[dict[str, Any]]:
    return [span_payload(span) for span in spans]


# ------------------------------------------------------------------------------------------
# Frame and our own records (docs/adr/0001-0003): every field but prose, own id blanked.


def frame_payload(frame: Any) -> dict[str, Any]:
    def binding(b: Any) -> dict[str, Any]:
        return {
            "role": _value(b.role),
            "fact_id": b.fact_id,
            "direction": _value(b.direction),
            "evidence_spans": spans_payload(b.evidence_spans),
        }

    target = frame.target
    return {
        "schema_version": frame.schema_version,
        "organ": frame.organ,
        "source_text": frame.source_text,
        "facts": [
            {
                "fact_id": f.fact_id,
                "value": f.value,
                "unit": f.unit,
                "entity": f.entity,
                "span": span_payload(f.span),
            }
            for f in frame.facts
        ],
        "cues": [
            {"direction": _value(c.direction), "span": span_payload(c.span)} for c in frame.cues
        ],
        "proposals": [
            {"relation_type": p.relation_type, "bindings": [binding(b) for b in p.bindings]}
            for p in frame.proposals
        ],
        "target": None
        if target is None
        else {"entity": target.entity, "unit": target.unit, "span": span_payload(target.span)},
        "hazards": [
            {"code": _value(h.code), "evidence_spans": spans_payload(h.evidence_spans)}
            for h in frame.hazards
        ],
    }


def problem_frame_digest(frame: Any) -> str:
    return digest_of(frame_payload(frame))


def assessment_id(assessment: Any) -> str:
    return digest_of(
        {
            "assessment_id": "",
            "schema_version": assessment.schema_version,
            "organ": assessment.organ,
            "organ_version": assessment.organ_version,
            "problem_frame_digest": assessment.problem_frame_digest,
            "status": _value(assessment.status),
            "blockers": [
                {
                    "code": _value(b.code),
                    "role": _value(b.role),
                    "evidence_spans": spans_payload(b.evidence_spans),
                }
                for b in assessment.blockers
            ],
        }
    )


def residual_id(residual: Any) -> str:
    return digest_of(
        {
            "residual_id": "",
            "schema_version": residual.schema_version,
            "problem_frame_digest": residual.problem_frame_digest,
            "contract_assessment_id": residual.contract_assessment_id,
            "candidate_organ": residual.candidate_organ,
            "blocker_index": residual.blocker_index,
            "kind": _value(residual.kind),
            "residual_code": residual.residual_code,
            "role": _value(residual.role),
            "evidence_spans": spans_payload(residual.evidence_spans),
        }
    )


def proof_id(proof: Any) -> str:
    return digest_of(
        {
            "proof_id": "",
            "schema_version": proof.schema_version,
            "problem_frame_digest": proof.problem_frame_digest,
            "contract_assessment_id": proof.contract_assessment_id,
            "status": _value(proof.status),
            "obligations": [
                {"obligation": _value(o.obligation), "holds": o.holds} for o in proof.obligations
            ],
            "derived_value": proof.derived_value,
            "derived_unit": proof.derived_unit,
        }
    )


def refusal_id(refusal: Any) -> str:
    return digest_of(
        {
            "refusal_id": "",
            "stage": _value(refusal.stage),
            "subject_digest": refusal.subject_digest,
            "reason_codes": list(refusal.reason_codes),
        }
    )


def gate_input_digest(gate: Any) -> str:
    """docs/adr/0002: the residual context, from the fields the decision carries."""
    return digest_of(
        {
            "schema_version": "search_gate_input.v1",
            "problem_frame_digest": gate.problem_frame_digest,
            "contract_assessment_id": gate.contract_assessment_id,
            "residual_ids": list(gate.residual_ids),
        }
    )


def gate_decision_id(gate: Any) -> str:
    return digest_of(
        {
            "decision_id": "",
            "policy_version": gate.policy_version,
            "input_digest": gate.input_digest,
            "status": _value(gate.status),
            "reason_code": gate.reason_code,
            "problem_frame_digest": gate.problem_frame_digest,
            "contract_assessment_id": gate.contract_assessment_id,
            "residual_ids": list(gate.residual_ids),
            "candidate_organ": gate.candidate_organ,
            "evidence_spans": spans_payload(gate.evidence_spans),
        }
    )


# ------------------------------------------------------------------------------------------
# ADR-0227 §7


BUDGET_ID_FIELDS = (
    "policy_version",
    "gate_decision_id",
    "gate_policy_version",
    "gate_input_digest",
    "status",
    "reason_code",
    "max_candidates",
    "max_depth",
    "max_steps",
    "max_parallelism",
    "evidence_spans",
)


def budget_payload(budget: Any) -> dict[str, Any]:
    payload = {name: _value(getattr(budget, name)) for name in BUDGET_ID_FIELDS[:-1]}
    payload["evidence_spans"] = spans_payload(budget.evidence_spans)
    return payload


def budget_id(budget: Any) -> str:
    return digest_of(budget_payload(budget))


# ------------------------------------------------------------------------------------------
# ADR-0228 §6, §7, §10


SEARCH_INPUT_FIELDS = (
    "problem_frame_digest",
    "contract_assessment_id",
    "residual_ids",
    "gate_decision_id",
    "gate_policy_version",
    "gate_input_digest",
    "budget_id",
    "budget_policy_version",
    "operator_set_id",
    "operator_set_version",
    "run_policy_version",
    "schema_version",
)


def search_input_digest(search_input: Any) -> str:
    payload = {name: getattr(search_input, name) for name in SEARCH_INPUT_FIELDS}
    payload["residual_ids"] = list(payload["residual_ids"])
    return digest_of(payload)


def _charge(charge: Any) -> dict[str, int]:
    return {"candidates": charge.candidates, "steps": charge.steps}


ATTEMPT_ID_FIELDS = (
    "attempt_index",
    "parent_attempt_id",
    "operator_id",
    "operator_version",
    "input_digest",
    "candidate_digest",
    "budget_charge",
    "depth",
    "step_index",
    "replay_status",
    "replay_blockers",
    "evidence_spans",
)


def attempt_payload(attempt: Any) -> dict[str, Any]:
    payload = {name: _value(getattr(attempt, name)) for name in ATTEMPT_ID_FIELDS}
    payload["budget_charge"] = _charge(attempt.budget_charge)
    payload["replay_blockers"] = list(attempt.replay_blockers)
    payload["evidence_spans"] = spans_payload(attempt.evidence_spans)
    return payload


def attempt_id(attempt: Any) -> str:
    return digest_of(attempt_payload(attempt))


CONSUMED_FIELDS = (
    "candidates_considered",
    "max_candidates",
    "depth_reached",
    "max_depth",
    "steps_used",
    "max_steps",
    "parallelism_used",
    "max_parallelism",
    "exhausted",
)


def run_payload(run: Any) -> dict[str, Any]:
    """ADR-0228 §7 fields, run_id blanked, explanation out; v2 adds ``opened_run_id``."""
    payload: dict[str, Any] = {
        "run_id": "",
        "run_policy_version": run.run_policy_version,
        "schema_version": run.schema_version,
        "problem_frame_digest": run.problem_frame_digest,
        "contract_assessment_id": run.contract_assessment_id,
        "residual_ids": list(run.residual_ids),
        "gate_decision_id": run.gate_decision_id,
        "budget_id": run.budget_id,
        "operator_set_id": run.operator_set_id,
        "operator_set_version": run.operator_set_version,
        "input_digest": run.input_digest,
        "candidate_attempts": [
            {"attempt_id": a.attempt_id, **attempt_payload(a)} for a in run.candidate_attempts
        ],
        "budget_consumed": {name: getattr(run.budget_consumed, name) for name in CONSUMED_FIELDS},
        "run_disposition": _value(run.run_disposition),
        "exhaustion_code": _value(run.exhaustion_code),
    }
    if run.run_policy_version != "geometric_search_run.v1":
        payload["opened_run_id"] = run.opened_run_id
    return payload


def run_id(run: Any) -> str:
    return digest_of(run_payload(run))


def opened_run_id(opened: Any) -> str:
    names = (
        "run_policy_version",
        "schema_version",
        "problem_frame_digest",
        "contract_assessment_id",
        "gate_decision_id",
        "budget_id",
        "operator_set_id",
        "operator_set_version",
        "input_digest",
        "max_candidates",
        "max_depth",
        "max_steps",
        "max_parallelism",
    )
    payload = {name: getattr(opened, name) for name in names}
    payload["residual_ids"] = list(opened.residual_ids)
    payload["run_id"] = ""
    return digest_of(payload)


def outcome_id(refusal: Any) -> str:
    return digest_of(
        {
            "outcome_id": "",
            "run_policy_version": refusal.run_policy_version,
            "input_digest": refusal.input_digest,
            "gate_decision_id": refusal.gate_decision_id,
            "budget_id": refusal.budget_id,
            "run_disposition": _value(refusal.run_disposition),
            "reason_codes": list(refusal.reason_codes),
        }
    )


def operator_set_id(manifest: Any) -> str:
    def row(r: Any) -> dict[str, Any]:
        return {
            "operator_name": r.operator_name,
            "operator_version": r.operator_version,
            "allowed_residual_kinds": list(r.allowed_residual_kinds),
            "allowed_residual_codes": list(r.allowed_residual_codes),
            "allowed_candidate_organs": list(r.allowed_candidate_organs),
            "max_attempts_per_run": r.max_attempts_per_run,
            "budget_charge": _charge(r.budget_charge),
            "depth": r.depth,
            "max_parallelism": r.max_parallelism,
            "schema_versions": [list(pair) for pair in r.schema_versions],
            "policy_versions": [list(pair) for pair in r.policy_versions],
            "input_obligations": list(r.input_obligations),
            "output_candidate_shape": r.output_candidate_shape,
            "ordering_key": list(r.ordering_key),
            "forbidden_side_effects": list(r.forbidden_side_effects),
            "replay_obligations": list(r.replay_obligations),
        }

    return digest_of(
        {
            "operator_set_version": manifest.operator_set_version,
            "operators": [row(r) for r in manifest.operators],
        }
    )


# ------------------------------------------------------------------------------------------
# ADR-0231 §7.2, §8, §9, §14: the candidate operator's identities


def _pairs(pairs: Any) -> list[list[str]]:
    return [list(pair) for pair in pairs]


OPERATOR_INPUT_FIELDS = (
    "operator_policy_version",
    "operator_name",
    "operator_version",
    "problem_frame_digest",
    "original_contract_assessment_id",
    "residual_id",
    "residual_kind",
    "search_gate_decision_id",
    "compute_budget_id",
    "geometric_search_run_id",
    "operator_set_id",
    "operator_set_version",
    "attempt_index",
    "schema_versions",
    "policy_versions",
)


def operator_input_digest(operator_input: Any) -> str:
    """ADR-0231 §14: every structural input field but ``input_digest`` itself (left out,
    not blanked)."""
    payload = {name: getattr(operator_input, name) for name in OPERATOR_INPUT_FIELDS}
    payload["schema_versions"] = _pairs(operator_input.schema_versions)
    payload["policy_versions"] = _pairs(operator_input.policy_versions)
    return digest_of(payload)


def role_binding_delta_payload(payload: Any) -> dict[str, Any]:
    """ADR-0231 §8.1: the organ-specific candidate payload, enums by value."""
    return {
        "kind": payload.kind,
        "candidate_organ": payload.candidate_organ,
        "relation_type": payload.relation_type,
        "role": _value(payload.role),
        "source": payload.source,
        "direction": _value(payload.direction),
        "cue_span": span_payload(payload.cue_span),
    }


def candidate_digest(reconstruction: Any) -> str:
    """ADR-0231 §9: candidate content only (frame digest, organ, payload, ordered spans)."""
    return digest_of(
        {
            "problem_frame_digest": reconstruction.problem_frame_digest,
            "candidate_organ": reconstruction.candidate_organ,
            "candidate_payload": role_binding_delta_payload(reconstruction.candidate_payload),
            "evidence_spans": spans_payload(reconstruction.evidence_spans),
        }
    )


def reconstruction_payload(reconstruction: Any) -> dict[str, Any]:
    """Every ``CandidateReconstruction`` field (it has no prose), as JSON."""
    return {
        "candidate_digest": reconstruction.candidate_digest,
        "candidate_reconstruction_digest": reconstruction.candidate_reconstruction_digest,
        "candidate_organ": reconstruction.candidate_organ,
        "candidate_payload": role_binding_delta_payload(reconstruction.candidate_payload),
        "evidence_spans": spans_payload(reconstruction.evidence_spans),
        "operator_name": reconstruction.operator_name,
        "operator_version": reconstruction.operator_version,
        "operator_provenance": _pairs(reconstruction.operator_provenance),
        "source_residual_id": reconstruction.source_residual_id,
        "problem_frame_digest": reconstruction.problem_frame_digest,
        "original_contract_assessment_id": reconstruction.original_contract_assessment_id,
        "geometric_search_run_id": reconstruction.geometric_search_run_id,
        "attempt_id": reconstruction.attempt_id,
        "attempt_index": reconstruction.attempt_index,
        "operator_set_id": reconstruction.operator_set_id,
        "schema_versions": _pairs(reconstruction.schema_versions),
        "policy_versions": _pairs(reconstruction.policy_versions),
    }


def candidate_reconstruction_digest(reconstruction: Any) -> str:
    """ADR-0231 §9: the whole envelope self-sealed, its own digest blanked."""
    payload = reconstruction_payload(reconstruction)
    payload["candidate_reconstruction_digest"] = ""
    return digest_of(payload)


def operator_result_id(result: Any) -> str:
    """ADR-0231 §8.2, §14: every field but prose, itself blanked; the nested attempt and
    reconstruction as objects of all their fields, prose left out at every depth."""
    attempt = result.candidate_attempt
    return digest_of(
        {
            "operator_result_id": "",
            "operator_policy_version": result.operator_policy_version,
            "input_digest": result.input_digest,
            "geometric_search_run_id": result.geometric_search_run_id,
            "attempt_id": result.attempt_id,
            "attempt_index": result.attempt_index,
            "candidate_digest": result.candidate_digest,
            "candidate_reconstruction_digest": result.candidate_reconstruction_digest,
            "candidate_organ": result.candidate_organ,
            "operator_name": result.operator_name,
            "operator_version": result.operator_version,
            "reason_codes": list(result.reason_codes),
            "evidence_spans": spans_payload(result.evidence_spans),
            "candidate_attempt": {"attempt_id": attempt.attempt_id, **attempt_payload(attempt)},
            "reconstruction": reconstruction_payload(result.reconstruction),
        }
    )


def operator_refusal_id(refusal: Any) -> str:
    """ADR-0231 §8.3, §14: every field but prose, itself blanked."""
    return digest_of(
        {
            "operator_refusal_id": "",
            "operator_policy_version": refusal.operator_policy_version,
            "input_digest": refusal.input_digest,
            "geometric_search_run_id": refusal.geometric_search_run_id,
            "residual_id": refusal.residual_id,
            "operator_name": refusal.operator_name,
            "reason_codes": list(refusal.reason_codes),
        }
    )


def plain_form(value: Any, *, prose: bool = False) -> Any:
    """A record's JSON form read field by field (dataclass fields, enums by value, tuples as
    lists), without prose at any depth unless ``prose``."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            field.name: plain_form(getattr(value, field.name), prose=prose)
            for field in dataclasses.fields(value)
            if prose or field.name != "explanation"
        }
    if isinstance(value, Enum):
        return value.value
    if type(value) in (tuple, list):
        return [plain_form(item, prose=prose) for item in value]
    return value


def self_sealed_id(record: Any) -> str:
    """docs/adr/0003's rule for records whose id seals every field but prose: the id field
    blanked (replay, answer and trace records, docs/adr/0006-0008)."""
    payload = plain_form(record)
    payload[type(record).ID_FIELD] = ""
    return digest_of(payload)


# Each record kind's identity, by class name (the oracle imports no kernel module).
IDENTITY_BY_KIND: dict[str, Callable[[Any], str]] = {
    "ProblemFrame": problem_frame_digest,
    "ContractAssessment": assessment_id,
    "ProofRecord": proof_id,
    "ContractResidual": residual_id,
    "SearchGateDecision": gate_decision_id,
    "ComputeBudgetDecision": budget_id,
    "GeometricSearchInput": search_input_digest,
    "OpenedSearchRun": opened_run_id,
    "CandidateOperatorInput": operator_input_digest,
    "CandidateAttempt": attempt_id,
    "CandidateReconstruction": candidate_reconstruction_digest,
    "CandidateOperatorResult": operator_result_id,
    "CandidateOperatorRefusal": operator_refusal_id,
    "GeometricSearchRun": run_id,
    "SearchRunRefusal": outcome_id,
    "StageRefusal": refusal_id,
    "ReplayResult": self_sealed_id,
    "ReplayRefusal": self_sealed_id,
    "ProofGatedAnswer": self_sealed_id,
    "AnswerRefusal": self_sealed_id,
    "SealedPracticeTrace": self_sealed_id,
}


def identity_of(record: Any) -> str:
    return IDENTITY_BY_KIND[type(record).__name__](record)
