"""Problem frames for the ``unary_delta_transition`` organ, valid by construction.

Every span is drawn as an exact slice of the drawn source text, so frames are well formed
whatever the text holds. Knobs choose which roles are bound, how many proposals there are,
whether a target exists, whether units and entities agree, and how many cues and hazards
(of which codes) appear; together they reach every blocker, every residual kind and every
gate reason (``registration.BLOCKER_RECIPES`` gives one setting per blocker code).
"""

from __future__ import annotations

from collections.abc import Collection

from hypothesis import strategies as st

from practice_loop.kernel import (
    PROBLEM_FRAME_SCHEMA_VERSION,
    UNARY_DELTA_ORGAN,
    UNARY_DELTA_RELATION,
    Direction,
    FrameHazard,
    GroundedUnaryDeltaCue,
    HazardCode,
    ProblemFrame,
    QuantityFact,
    QuestionTarget,
    Role,
    RoleBinding,
    StateChangeProposal,
)

from .primitives import labels, source_texts, spans_in

ALL_ROLES = frozenset(Role)


@st.composite
def problem_frames(
    draw: st.DrawFn,
    *,
    bound_roles: Collection[Role] | None = None,
    proposal_count: int | None = None,
    with_target: bool | None = None,
    units_agree: bool | None = None,
    entities_agree: bool = True,
    cue_count: int | None = None,
    hazard_count: int | None = None,
    fact_count: int | None = None,
    hazard_codes: Collection[HazardCode] | None = None,
    relation_type: str = UNARY_DELTA_RELATION,
    min_value: int = 0,
    max_value: int = 10_000,
) -> ProblemFrame:
    """A well-formed frame; each knob left as ``None`` is drawn.

    ``entities_agree=False`` gives fact 1 another entity than fact 0 and the target (as
    ``units_agree=False`` does for units); ``hazard_codes`` limits the codes hazards are
    drawn from; ``min_value`` raises the floor of fact values (``registration.LARGE_VALUES``
    makes every increase overflow the safe range). Their defaults leave every draw as it was
    before they existed.
    """
    source = draw(source_texts)
    if with_target is None:
        with_target = draw(st.booleans())
    if bound_roles is None:
        bound_roles = draw(st.sets(st.sampled_from(sorted(Role, key=lambda r: r.value))))
    bound = set(bound_roles)
    if not with_target:
        bound.discard(Role.TARGET)
    if proposal_count is None:
        proposal_count = draw(st.sampled_from((0, 1, 1, 1, 2)))
    if units_agree is None:
        units_agree = draw(st.booleans())
    if fact_count is None:
        fact_count = draw(st.integers(2, 4))
    unit = draw(labels)
    entity = draw(labels)
    facts = []
    for index in range(fact_count):
        fact_unit = unit if units_agree or index != 1 else draw(labels.filter(lambda u: u != unit))
        value = draw(st.integers(min_value, max_value))
        fact_entity = (
            entity if entities_agree or index != 1 else draw(labels.filter(lambda e: e != entity))
        )
        facts.append(
            QuantityFact(
                f"q{index}",
                value,
                fact_unit,
                fact_entity,
                draw(spans_in(source)),
            )
        )
    target = QuestionTarget(entity, unit, draw(spans_in(source))) if with_target else None
    if cue_count is None:
        cue_count = draw(st.integers(0, 2))
    cues = tuple(
        GroundedUnaryDeltaCue(draw(st.sampled_from(Direction)), draw(spans_in(source)))
        for _ in range(cue_count)
    )
    if hazard_count is None:
        hazard_count = draw(st.sampled_from((0, 0, 0, 1, 2)))
    hazard_choices = (
        st.sampled_from(HazardCode)
        if hazard_codes is None
        else st.sampled_from(sorted(hazard_codes, key=lambda c: c.value))
    )
    hazards = tuple(
        FrameHazard(
            draw(hazard_choices),
            tuple(draw(st.lists(spans_in(source), max_size=2))),
        )
        for _ in range(hazard_count)
    )
    proposals = tuple(
        StateChangeProposal(relation_type, _bindings(draw, source, bound, facts, target))
        for _ in range(proposal_count)
    )
    return ProblemFrame(
        PROBLEM_FRAME_SCHEMA_VERSION,
        UNARY_DELTA_ORGAN,
        source,
        tuple(facts),
        cues,
        proposals,
        target,
        hazards,
    )


def _bindings(
    draw: st.DrawFn,
    source: str,
    bound: set[Role],
    facts: list[QuantityFact],
    target: QuestionTarget | None,
) -> tuple[RoleBinding, ...]:
    """Bindings in role order; ``initial`` is fact 0 and ``delta`` fact 1 when facts allow."""
    bindings = []
    for role in (Role.INITIAL, Role.DELTA, Role.DIRECTION, Role.TARGET):
        if role not in bound:
            continue
        if role in (Role.INITIAL, Role.DELTA):
            index = 0 if role is Role.INITIAL else min(1, len(facts) - 1)
            if not facts:
                continue
            fact = facts[index]
            bindings.append(RoleBinding(role, fact.fact_id, None, (fact.span,)))
        elif role is Role.DIRECTION:
            direction = draw(st.sampled_from(Direction))
            bindings.append(RoleBinding(role, None, direction, (draw(spans_in(source)),)))
        elif target is not None:
            bindings.append(RoleBinding(role, None, None, (target.span,)))
    return tuple(bindings)
