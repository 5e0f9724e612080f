"""Shipped example frames, one per path through the stages built so far.

Each frame is written out by hand, as the text reader (part 2) will write them: spans are
located in the question by their exact words, so every offset is checked by construction.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..kernel import (
    Direction,
    FrameHazard,
    GroundedUnaryDeltaCue,
    HazardCode,
    ProblemFrame,
    QuantityFact,
    QuestionTarget,
    Role,
    RoleBinding,
    SourceSpan,
    StateChangeProposal,
)
from ..kernel.frame import PROBLEM_FRAME_SCHEMA_VERSION, UNARY_DELTA_ORGAN, UNARY_DELTA_RELATION


def span_of(source: str, phrase: str, occurrence: int = 0) -> SourceSpan:
    """The span of the ``occurrence``-th appearance of ``phrase``; sentences end at . ? !"""
    start = -1
    for _ in range(occurrence + 1):
        start = source.index(phrase, start + 1)
    sentence_index = sum(source[:start].count(mark) for mark in ".?!")
    return SourceSpan(phrase, start, start + len(phrase), sentence_index)


def _fact(
    source: str, fact_id: str, words: str, value: int, unit: str, entity: str
) -> QuantityFact:
    return QuantityFact(fact_id, value, unit, entity, span_of(source, words))


def _bind(
    role: Role, span: SourceSpan, *, fact_id: str | None = None, direction: Direction | None = None
) -> RoleBinding:
    return RoleBinding(role, fact_id, direction, (span,))


def _frame(
    source: str,
    facts: tuple[QuantityFact, ...],
    bindings: tuple[RoleBinding, ...],
    *,
    cues: tuple[GroundedUnaryDeltaCue, ...] = (),
    target: QuestionTarget | None,
    hazards: tuple[FrameHazard, ...] = (),
) -> ProblemFrame:
    proposals = (StateChangeProposal(UNARY_DELTA_RELATION, bindings),) if bindings else ()
    return ProblemFrame(
        PROBLEM_FRAME_SCHEMA_VERSION,
        UNARY_DELTA_ORGAN,
        source,
        facts,
        cues,
        proposals,
        target,
        hazards,
    )


@dataclass(frozen=True, slots=True)
class Example:
    name: str
    comment: str
    frame: ProblemFrame


def _single_change(
    source: str,
    entity: str,
    unit: str,
    initial: tuple[str, int],
    delta: tuple[str, int],
    question: str,
    cue: tuple[str, Direction],
    *,
    bind_direction: bool,
) -> ProblemFrame:
    """One entity, one change: initial and delta facts, a cue, a question target, and the
    proposal binding every role but, when ``bind_direction`` is false, the direction."""
    initial_fact = _fact(source, "q1", initial[0], initial[1], unit, entity)
    delta_fact = _fact(source, "q2", delta[0], delta[1], unit, entity)
    target = QuestionTarget(entity, unit, span_of(source, question))
    grounded = GroundedUnaryDeltaCue(cue[1], span_of(source, cue[0]))
    bindings = [
        _bind(Role.INITIAL, initial_fact.span, fact_id="q1"),
        _bind(Role.DELTA, delta_fact.span, fact_id="q2"),
    ]
    if bind_direction:
        bindings.append(_bind(Role.DIRECTION, grounded.span, direction=cue[1]))
    bindings.append(_bind(Role.TARGET, target.span))
    facts = (initial_fact, delta_fact)
    return _frame(source, facts, tuple(bindings), cues=(grounded,), target=target)


def direction_unbound() -> Example:
    source = (
        "Tom had 12 apples. Then 5 of his apples were eaten by a horse. "
        "How many apples does Tom have now?"
    )
    frame = _single_change(
        source,
        "Tom",
        "apple",
        ("12 apples", 12),
        ("5 of his apples", 5),
        "How many apples",
        ("were eaten", Direction.DECREASE),
        bind_direction=False,
    )
    return Example("direction_unbound", "one grounded cue, direction left unbound: eligible", frame)


def runnable_increase() -> Example:
    source = "Mia has 7 stickers. She buys 4 more stickers. How many stickers does Mia have now?"
    frame = _single_change(
        source,
        "Mia",
        "sticker",
        ("7 stickers", 7),
        ("4 more stickers", 4),
        "How many stickers",
        ("buys", Direction.INCREASE),
        bind_direction=True,
    )
    return Example("runnable_increase", "every role bound: runnable, proof closes", frame)


def proof_refused() -> Example:
    source = "Sam has 3 marbles. He loses 8 marbles. How many marbles does Sam have now?"
    frame = _single_change(
        source,
        "Sam",
        "marble",
        ("3 marbles", 3),
        ("8 marbles", 8),
        "How many marbles",
        ("loses", Direction.DECREASE),
        bind_direction=True,
    )
    return Example(
        "proof_refused", "contract closes, count would go negative: proof refuses", frame
    )


def two_residuals() -> Example:
    source = "Ana had 9 shells. 4 shells washed away. Ana found more."
    initial = _fact(source, "q1", "9 shells", 9, "shell", "Ana")
    delta = _fact(source, "q2", "4 shells", 4, "shell", "Ana")
    cue = GroundedUnaryDeltaCue(Direction.DECREASE, span_of(source, "washed away"))
    bindings = (
        _bind(Role.INITIAL, initial.span, fact_id="q1"),
        _bind(Role.DELTA, delta.span, fact_id="q2"),
    )
    hazard = FrameHazard(HazardCode.MULTIPLE_CHANGES, (span_of(source, "found more"),))
    frame = _frame(source, (initial, delta), bindings, cues=(cue,), target=None, hazards=(hazard,))
    return Example("two_residuals", "hazard, unbound direction and target: ineligible", frame)


def shipped_examples() -> tuple[Example, ...]:
    return (direction_unbound(), runnable_increase(), proof_refused(), two_residuals())
