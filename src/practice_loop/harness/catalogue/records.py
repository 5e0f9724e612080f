"""Record defects (docs/adr/0003 "Records validate themselves"): inspect_record."""

from __future__ import annotations

import dataclasses
from typing import Any

from ...kernel import (
    AnswerRefusal,
    BudgetCharge,
    CandidateOperatorInput,
    ComputeBudgetDecision,
    ContractAssessment,
    FrameHazard,
    HazardCode,
    ProblemFrame,
    QuantityFact,
    RoleBinding,
    SearchGateDecision,
    SourceSpan,
    StateChangeProposal,
)
from ...kernel.checks import MAX_SEQUENCE
from ...kernel.frame import MAX_FRAME_ITEMS
from ...kernel.identity import MAX_TEXT_LENGTH
from ...kernel.operators import SCHEMA_VERSIONS
from .entry import Recipes
from .forging import UNREGISTERED_GATE_VERSION, inspected, other_digest, tampered
from .shipped import DU, RI, TWO

# The entries: a table, one entry a few lines (kept out of `ruff format`).
# fmt: off
RECIPES = Recipes("record_defect", "docs/adr/0003")

_INSPECT = "identity.inspect_record"


def _span(c: Any) -> SourceSpan:
    return c[DU].frame.facts[0].span


def _fact(c: Any) -> QuantityFact:
    return c[DU].frame.facts[0]


def _frame_with(c: Any, **changes: Any) -> ProblemFrame:
    return tampered(c[DU].frame, **changes)


def _moved_fact_frame(c: Any) -> ProblemFrame:
    fact = _fact(c)
    span = fact.span
    moved = SourceSpan(span.text, span.start + 1, span.end + 1, span.sentence_index)
    return _frame_with(c, facts=(dataclasses.replace(fact, span=moved), *c[DU].frame.facts[1:]))


def _unknown_fact_frame(c: Any) -> ProblemFrame:
    proposal = c[DU].frame.proposals[0]
    first = proposal.bindings[0]
    unknown = RoleBinding(first.role, "q9", None, first.evidence_spans)
    bindings = (unknown, *proposal.bindings[1:])
    return _frame_with(c, proposals=(StateChangeProposal(proposal.relation_type, bindings),))


for _name, _comment, _kind, _value_of in (
    ("defect-wrong-record-type", "the gate decision inspected as a budget decision",
        ComputeBudgetDecision, lambda c: c[DU].gate),
    ("defect-span-text-none", "a span's text replaced by None", SourceSpan,
        lambda c: tampered(_span(c), text=None)),
    ("defect-span-start-true", "a span's start replaced by True", SourceSpan,
        lambda c: tampered(_span(c), start=True)),
    ("defect-budget-float-limit", "a budget limit replaced by 10.0", ComputeBudgetDecision,
        lambda c: tampered(c[DU].budget, max_steps=10.0)),
    ("defect-budget-limit-2-53", "a budget limit replaced by 2**53", ComputeBudgetDecision,
        lambda c: tampered(c[DU].budget, max_steps=2**53)),
    ("defect-fact-negative", "a fact's value replaced by -1", QuantityFact,
        lambda c: tampered(_fact(c), value=-1)),
    ("defect-charge-zero-steps", "a budget charge of zero steps", BudgetCharge,
        lambda c: tampered(BudgetCharge(1, 1), steps=0)),
    ("defect-gate-id-63-chars", "the gate's id cut to 63 characters", SearchGateDecision,
        lambda c: tampered(c[DU].gate, decision_id=c[DU].gate.decision_id[:63])),
    ("defect-budget-policy-not-a-version", "the budget's policy version 'Compute-Budget'",
        ComputeBudgetDecision,
        lambda c: tampered(c[DU].budget, policy_version="Compute-Budget")),
    ("defect-gate-policy-v2", f"the gate's policy version {UNREGISTERED_GATE_VERSION}",
        SearchGateDecision,
        lambda c: tampered(c[DU].gate, policy_version=UNREGISTERED_GATE_VERSION)),
    ("defect-gate-reason-not-a-code", "the gate's reason code 'Eligible Missing Role'",
        SearchGateDecision,
        lambda c: tampered(c[DU].gate, reason_code="Eligible Missing Role")),
    ("defect-gate-status-a-string", "the gate's status the string 'ELIGIBLE'", SearchGateDecision,
        lambda c: tampered(c[DU].gate, status="ELIGIBLE")),
    ("defect-fact-unit-empty", "a fact's unit replaced by ''", QuantityFact,
        lambda c: tampered(_fact(c), unit="")),
    ("defect-gate-explanation-too-long", "the gate's explanation one past MAX_TEXT_LENGTH",
        SearchGateDecision,
        lambda c: tampered(c[DU].gate, explanation="x" * (MAX_TEXT_LENGTH + 1))),
    ("defect-gate-explanation-lone-surrogate", "a lone surrogate appended to the explanation",
        SearchGateDecision,
        lambda c: tampered(c[DU].gate, explanation=c[DU].gate.explanation + "\ud800")),
    ("defect-gate-residual-ids-a-list", "the gate's residual ids as a list", SearchGateDecision,
        lambda c: tampered(c[DU].gate, residual_ids=list(c[DU].gate.residual_ids))),
    ("defect-gate-residual-ids-too-many", "the gate's residual ids repeated past MAX_SEQUENCE",
        SearchGateDecision,
        lambda c: tampered(c[DU].gate, residual_ids=c[DU].gate.residual_ids * (MAX_SEQUENCE + 1))),
    ("defect-answer-refusal-no-codes", "an answer refusal with no reason code", AnswerRefusal,
        lambda c: tampered(c[TWO].trace.outcome, reason_codes=())),
    ("defect-input-versions-descending", "an operator input's schema versions descending",
        CandidateOperatorInput,
        lambda c: tampered(c[DU].operator_input(), schema_versions=SCHEMA_VERSIONS[::-1])),
    ("defect-span-start-negative", "a span's start replaced by -1", SourceSpan,
        lambda c: tampered(_span(c), start=-1)),
    ("defect-span-empty", "a span's end set to its start", SourceSpan,
        lambda c: tampered(_span(c), end=_span(c).start)),
    ("defect-span-text-longer", "a span's text one character longer than its offsets", SourceSpan,
        lambda c: tampered(_span(c), text=_span(c).text + "x")),
    ("defect-span-sentence-negative", "a span's sentence index -1", SourceSpan,
        lambda c: tampered(_span(c), sentence_index=-1)),
    ("defect-frame-span-moved", "a fact's well-formed span moved one character", ProblemFrame,
        _moved_fact_frame),
    ("defect-frame-unknown-fact", "a binding naming fact q9, which the frame lacks", ProblemFrame,
        _unknown_fact_frame),
    ("defect-frame-fact-twice", "the frame's first fact given twice", ProblemFrame,
        lambda c: _frame_with(c, facts=c[DU].frame.facts + c[DU].frame.facts[:1])),
    ("defect-assessment-runnable-with-blockers", "a runnable assessment carrying blockers",
        ContractAssessment,
        lambda c: tampered(c[RI].assessment, blockers=c[DU].assessment.blockers)),
    ("defect-frame-items-beyond-cap",
        "one spanless hazard more than MAX_FRAME_ITEMS: the span caps do not count it, the "
        "item cap does, so no frame holds more blockers than a trace can seal (docs/adr/0005)",
        ProblemFrame,
        lambda c: tampered(
            c[RI].frame,
            hazards=(FrameHazard(HazardCode.RATE_OR_RATIO, ()),) * (MAX_FRAME_ITEMS + 1),
        )),
    ("defect-gate-id-replaced", "the gate's id replaced by another digest", SearchGateDecision,
        lambda c: tampered(c[DU].gate, decision_id=other_digest(c[DU].gate.decision_id))),
):
    RECIPES.add(_name, _comment, "Tampered", _INSPECT, inspected(_value_of, _kind), DU)
# fmt: on
