"""One labelled violation catalogue, split by stage (standard library and kernel only).

Each ``Entry`` names one violation: an id, the ADR clause it breaks, flags, the kernel
function it attacks (``stage``), a forge function over a chain, and the exact typed outcome
it must cause. The strategies (``practice_strategies.corruptions``) draw valid chains for
the entries that name ``chains`` and apply them; the golden vectors
(``practice_loop.harness.vectors``) apply the entries that name a ``group`` to the shipped
chains and freeze the result in ``refusals.json``. Add an entry once, in the module of its
stage; ``docs/strategies.md`` says how.
"""

from __future__ import annotations

from . import answer, assessment, budget, canonical, gate, operators, records, replay, run, trace
from .entry import Entry, Expected, observe, stage_of
from .forging import Attack, OperatorContext, perform

_DRAWN = (
    *run.ENTRIES,
    *run.RECORD_ENTRIES,
    *operators.ENTRIES,
    *canonical.ENCODED_ENTRIES,
    *canonical.DECODED_ENTRIES,
    *canonical.ENTRIES,
)
_RECIPES = (
    *assessment.RECIPES,
    *gate.RECIPES,
    *budget.RECIPES,
    *run.RECIPES,
    *operators.RECIPES,
    *replay.RECIPES,
    *answer.RECIPES,
    *trace.RECIPES,
    *records.RECIPES,
)
# Every entry once: a drawn entry that is also a vector appears as the vector.
_FROZEN = {entry.id for entry in _RECIPES}
ENTRIES: tuple[Entry, ...] = (*(e for e in _DRAWN if e.id not in _FROZEN), *_RECIPES)
# The groups of refusals.json, in file order, with what each holds.
GROUPS = (
    ("stage_refusal", "StageRefusal: assessment, proof, residual and loop (docs/adr/0003)"),
    (
        "search_gate",
        "search_gate.v1 denials: every GateReason whose status is not ELIGIBLE (docs/adr/0002)",
    ),
    ("compute_budget", "compute_budget.v1: every BudgetReason (ADR-0227 §8)"),
    ("search_run", "SearchRunRefusal: every RunRefusalReason (ADR-0228 §9, §16; docs/adr/0004)"),
    (
        "candidate_operator",
        "CandidateOperatorRefusal: every OperatorRefusalReason (ADR-0231 §7.3, §17)",
    ),
    ("replay", "ReplayRefusal: every ReplayRefusalReason (docs/adr/0006)"),
    ("answer", "AnswerRefusal: every AnswerRefusalReason (ADR-0226 §6, §7E, §8.6-8)"),
    (
        "trace_verification",
        "TraceFailureCode of a trace in memory: verify, then replay (docs/adr/0007)",
    ),
    (
        "record_defect",
        "RecordDefect: inspect_record over records altered after sealing (docs/adr/0003)",
    ),
)


def drawable() -> tuple[Entry, ...]:
    """The entries the strategies apply to drawn chains."""
    return tuple(entry for entry in ENTRIES if entry.chains is not None)


def in_group(group: str) -> tuple[Entry, ...]:
    """The entries frozen in ``refusals.json`` under ``group``, in file order."""
    return tuple(entry for entry in ENTRIES if entry.group == group)


__all__ = [
    "ENTRIES",
    "GROUPS",
    "Attack",
    "Entry",
    "Expected",
    "OperatorContext",
    "drawable",
    "in_group",
    "observe",
    "perform",
    "stage_of",
]
