"""Run the kernel stages built so far over one frame and collect every record they emit.

This is shell code: it sequences stage calls and decides nothing. A refused assessment goes
to residuals, gate, budget and the inert v1 search run of ADR-0228 §13 over the empty
operator set (operators arrive with part 2); a runnable one goes to proof.
"""

from __future__ import annotations

from dataclasses import dataclass

from .kernel import (
    EMPTY_OPERATOR_SET,
    AssessmentStatus,
    ContractAssessment,
    ProblemFrame,
    RecordError,
    assess,
    check_proof,
    decide_compute_budget,
    decide_search_gate,
    open_search_run,
    project_residuals,
    search_input_for,
)
from .kernel.identity import Record


@dataclass(frozen=True, slots=True)
class StageRecord:
    stage: str
    record: Record

    def to_json(self) -> dict[str, object]:
        return {
            "stage": self.stage,
            "record_type": type(self.record).__name__,
            "record": self.record.to_json(),
        }


def run_stages(frame: ProblemFrame) -> list[StageRecord]:
    records = [StageRecord("frame", frame)]
    assessment = assess(frame)
    records.append(StageRecord("assessment", assessment))
    if type(assessment) is not ContractAssessment:
        return records
    if assessment.status is AssessmentStatus.RUNNABLE:
        records.append(StageRecord("proof", check_proof(frame, assessment)))
        return records
    residuals = project_residuals(assessment)
    if type(residuals) is not tuple:
        records.append(StageRecord("residuals", residuals))
        return records
    records.extend(StageRecord("residual", residual) for residual in residuals)
    gate = decide_search_gate(assessment, residuals)
    records.append(StageRecord("gate", gate))
    budget = decide_compute_budget(gate)
    records.append(StageRecord("budget", budget))
    try:
        inert_input = search_input_for(gate, budget, EMPTY_OPERATOR_SET)
    except RecordError:
        return records  # the gate names no assessment: there is nothing to bind a run to
    records.append(StageRecord("search_run", open_search_run(inert_input, gate, budget)))
    return records
