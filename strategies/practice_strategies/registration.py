"""``st.from_type(T)`` for every record type the kernel exports, valid by construction.

Every value comes out of a stage: a whole valid chain is drawn (``chains``, ``eligible_chains``,
``problem_frames``) and the record is the one its own stage produced from it, so it inspects
clean and binds to the records around it. Nothing here builds a record field by field.

* Frame parts (facts, cues, targets, hazards, bindings, proposals) are read out of drawn frames.
* Chain records (assessment, blockers, residuals, gate, budget, search input) come from
  ``build_chain`` under each run configuration the kernel authorizes (``RUN_CONFIGURATIONS``).
* Run, operator, replay and answer records come from ``practice_case`` (the loop) or from
  ``open_search_run`` / ``record_attempts`` over a valid chain.
* The static tables (``COMPUTE_BUDGET_V1``, ``SEARCH_GATE_V1``,
  ``MISSING_ROLE_CANDIDATE_POLICY``, the two operator sets) are the only values of their types
  any stage accepts, so those types draw from them.
* Refusal records a valid case never produces (``ReplayRefusal``, ``StageRefusal``) are the
  stage's own answer to individually valid records bound to the wrong case, or to a record
  altered with ``tampering.tampered``.

Each type's strategy is ``st.one_of`` a table of named *sources* (``record_sources(T)``), each
as narrow as one recipe: ``chains(ELIGIBLE_MISSING_ROLE)``, ``BLOCKER_RECIPES[ROLE_CONFLICT]``
and so on. Hypothesis draws the branches far from uniformly, so tests that need every recipe
(``tests/quality/test_vocabulary_reach.py``) iterate the table instead of sampling the union.

Registration happens through the ``hypothesis`` entry point declared in ``pyproject.toml``
(``practice_loop.harness.hypothesis_hook``, which calls ``register_record_strategies`` once the
kernel is imported), so ``st.from_type(ComputeBudgetDecision)`` works in any test without
importing this package. Closed enums need nothing: Hypothesis resolves an ``Enum`` to
``st.sampled_from`` of its members by itself, and a union alias such as ``SearchRunOutcome`` to
``st.one_of`` of its members' registered strategies.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st

from practice_loop.kernel import (
    CANDIDATE_OPERATOR_SET,
    COMPUTE_BUDGET_V1,
    EMPTY_OPERATOR_SET,
    GEOMETRIC_SEARCH_RUN_POLICY_VERSION,
    GEOMETRIC_SEARCH_RUN_V2_POLICY_VERSION,
    MAX_SAFE_INT,
    MISSING_ROLE_CANDIDATE_POLICY,
    SEARCH_GATE_V1,
    AnswerRefusal,
    AssessmentStatus,
    Blocker,
    BlockerCode,
    BudgetCharge,
    BudgetConsumed,
    BudgetLimits,
    BudgetPolicyRow,
    CandidateAttempt,
    CandidateOperatorInput,
    CandidateOperatorPolicy,
    CandidateOperatorRefusal,
    CandidateOperatorResult,
    CandidateReconstruction,
    ComputeBudgetDecision,
    ComputeBudgetPolicy,
    ContractAssessment,
    ContractResidual,
    EligibleReasonRow,
    FrameHazard,
    GateReason,
    GateReasonStatus,
    GeometricSearchInput,
    GeometricSearchRun,
    GroundedUnaryDeltaCue,
    HazardCode,
    ObligationOutcome,
    OpenedSearchRun,
    OperatorManifestRow,
    OperatorSetManifest,
    ProblemFrame,
    ProofGatedAnswer,
    ProofRecord,
    QuantityFact,
    QuestionTarget,
    ReplayRefusal,
    ReplayResult,
    Role,
    RoleBinding,
    RoleBindingDelta,
    SealedPracticeTrace,
    SearchGateDecision,
    SearchGatePolicy,
    SearchRunRefusal,
    SourceSpan,
    StageRefusal,
    StateChangeProposal,
    assess,
    candidate_operator_input,
    check_proof,
    practice_case,
    project_residuals,
    record_attempts,
    replay_candidate,
)

from .chains import FRAME_RECIPES, Chain, build_chain, chains, run_outcome
from .frames import ALL_ROLES, problem_frames
from .primitives import spans
from .tampering import other_digest, tampered

_NO_HAZARD = {"hazard_count": 0}
_ONE_PROPOSAL = {**_NO_HAZARD, "proposal_count": 1, "with_target": True}

# Knobs of ``problem_frames`` whose frames ``assess`` refuses with (at least) each blocker code,
# in the order of docs/adr/0005's contract. ``FRAME_RECIPES`` is the same idea per gate reason.
BLOCKER_RECIPES: dict[BlockerCode, dict[str, Any]] = {
    **{
        BlockerCode(f"hazard_{hazard.value}"): {"hazard_count": 1, "hazard_codes": {hazard}}
        for hazard in HazardCode
    },
    BlockerCode.PROPOSAL_MISSING: {**_NO_HAZARD, "proposal_count": 0},
    BlockerCode.PROPOSAL_AMBIGUOUS: {**_NO_HAZARD, "proposal_count": 2},
    BlockerCode.RELATION_UNSUPPORTED: {**_ONE_PROPOSAL, "relation_type": "state_change.binary"},
    BlockerCode.INITIAL_UNBOUND: {**_ONE_PROPOSAL, "bound_roles": ALL_ROLES - {Role.INITIAL}},
    BlockerCode.DELTA_UNBOUND: {**_ONE_PROPOSAL, "bound_roles": ALL_ROLES - {Role.DELTA}},
    BlockerCode.DIRECTION_UNBOUND: {**_ONE_PROPOSAL, "bound_roles": ALL_ROLES - {Role.DIRECTION}},
    BlockerCode.TARGET_UNBOUND: {
        **_NO_HAZARD,
        "proposal_count": 1,
        "with_target": False,
        "bound_roles": ALL_ROLES - {Role.TARGET},
    },
    # One fact: initial and delta both name it.
    BlockerCode.ROLE_CONFLICT: {**_ONE_PROPOSAL, "bound_roles": ALL_ROLES, "fact_count": 1},
    BlockerCode.ENTITY_MISMATCH: {
        **_ONE_PROPOSAL,
        "bound_roles": ALL_ROLES,
        "units_agree": True,
        "entities_agree": False,
    },
    BlockerCode.UNIT_MISMATCH: {**_ONE_PROPOSAL, "bound_roles": ALL_ROLES, "units_agree": False},
}

# Fact values above half the safe range (docs/adr/0003: 2**53 - 1): an increase always breaks
# ``result_within_safe_range`` and a decrease is as often negative as not.
LARGE_VALUES: dict[str, Any] = {"min_value": MAX_SAFE_INT // 2 + 1, "max_value": MAX_SAFE_INT}

# The (run policy, operator set) pairs ``open_search_run`` authorizes (docs/adr/0004): the inert
# v1 shell over the empty set, and v2 over the empty set or the candidate operator set (the
# loop's configuration). v1 over a non-empty set is ``operator_set_not_authorized``.
RUN_CONFIGURATIONS: tuple[tuple[str, OperatorSetManifest], ...] = (
    (GEOMETRIC_SEARCH_RUN_POLICY_VERSION, EMPTY_OPERATOR_SET),
    (GEOMETRIC_SEARCH_RUN_V2_POLICY_VERSION, EMPTY_OPERATOR_SET),
    (GEOMETRIC_SEARCH_RUN_V2_POLICY_VERSION, CANDIDATE_OPERATOR_SET),
)


Sources = dict[str, st.SearchStrategy[Any]]


def _by_value(keys: Any) -> list[Any]:
    return sorted(keys, key=lambda key: key.value)


_ELIGIBLE_REASONS = _by_value(r for r in FRAME_RECIPES if r.value.startswith("eligible_"))
_DENIED_REASONS = _by_value(r for r in FRAME_RECIPES if r not in _ELIGIBLE_REASONS)
_SEARCHED_REASONS = _by_value(r for r in FRAME_RECIPES if r is not GateReason.ASSESSMENT_RUNNABLE)
_MISSING_ROLE = GateReason.ELIGIBLE_MISSING_ROLE
_RUNNABLE = GateReason.ASSESSMENT_RUNNABLE


def _label(configuration: tuple[str, OperatorSetManifest]) -> str:
    return f"{configuration[0]}+{configuration[1].operator_set_version}"


# --------------------------------------------------------------------------------------------
# Building blocks


def configured_chains(
    run_policy_version: str,
    operator_set: OperatorSetManifest,
    reason: GateReason | None = None,
    **knobs: Any,
) -> st.SearchStrategy[Chain]:
    """``chains(reason, **knobs)`` rebuilt under one of ``RUN_CONFIGURATIONS``."""
    return chains(reason, **knobs).map(
        lambda chain: build_chain(
            chain.frame, operator_set=operator_set, run_policy_version=run_policy_version
        )
    )


def _practice(frame: ProblemFrame) -> SealedPracticeTrace:
    trace = practice_case(frame)
    # A frame the strategies draw is always judged, so the loop always seals a trace.
    assert type(trace) is SealedPracticeTrace, trace
    return trace


def traces(
    reason: GateReason | None = None, **knobs: Any
) -> st.SearchStrategy[SealedPracticeTrace]:
    """The sealed trace ``practice_case`` gives for the frame of ``chains(reason, **knobs)``."""
    return chains(reason, **knobs).map(lambda chain: _practice(chain.frame))


def _only(record_type: type, value: Any) -> Any:
    assert type(value) is record_type, value
    return value


def _mapped(sources: Sources, read: Callable[[Any], Any], prefix: str = "") -> Sources:
    return {prefix + name: source.map(read) for name, source in sources.items()}


def _elements(sources: Sources, read: Callable[[Any], tuple[Any, ...]], prefix: str) -> Sources:
    """One element of the (non-empty) tuple ``read`` gives for each drawn value."""
    return {
        prefix + name: source.map(read).filter(len).flatmap(st.sampled_from)
        for name, source in sources.items()
    }


def _kept(sources: Sources, record_type: type, prefix: str) -> Sources:
    """The values of ``sources`` that are of ``record_type`` (a stage answered either way)."""
    return {
        prefix + name: source.filter(lambda value: type(value) is record_type)
        for name, source in sources.items()
    }


def _assessed(frame: ProblemFrame) -> ContractAssessment:
    return _only(ContractAssessment, assess(frame))


def _projected(frame: ProblemFrame) -> tuple[ContractResidual, ...]:
    assessment = _assessed(frame)
    if assessment.status is AssessmentStatus.RUNNABLE:
        return ()
    residuals = project_residuals(assessment)
    assert type(residuals) is tuple, residuals
    return residuals


def _closed_empty_run(chain: Chain) -> GeometricSearchRun:
    """The final run of an eligible chain over the empty operator set: v1's inert shell, or a
    v2 opened run recorded with no attempt."""
    outcome = run_outcome(chain)
    if type(outcome) is OpenedSearchRun:
        outcome = record_attempts(outcome, chain.operator_set, ())
    return _only(GeometricSearchRun, outcome)


def _operator_input(chain: Chain) -> CandidateOperatorInput:
    opened = _only(OpenedSearchRun, run_outcome(chain))
    return candidate_operator_input(
        assessment=chain.assessment,
        residual=chain.residuals[0],
        gate_decision=chain.gate,
        budget_decision=chain.budget,
        opened_run=opened,
    )


def _budget_limits(chain: Chain) -> BudgetLimits:
    budget = chain.budget
    return BudgetLimits(
        budget.max_candidates, budget.max_depth, budget.max_steps, budget.max_parallelism
    )


# --------------------------------------------------------------------------------------------
# The source tables the record types are read from


def frame_sources() -> Sources:
    """Every knob drawn, a recipe per gate reason, and a recipe per blocker code."""
    return {
        "problem_frames()": problem_frames(),
        **{
            f"FRAME_RECIPES[{reason.name}]": problem_frames(**FRAME_RECIPES[reason])
            for reason in _by_value(FRAME_RECIPES)
        },
        **{
            f"BLOCKER_RECIPES[{code.name}]": problem_frames(**BLOCKER_RECIPES[code])
            for code in _by_value(BLOCKER_RECIPES)
        },
    }


def chain_sources() -> Sources:
    """``chains(reason)`` per gate reason, and ``build_chain`` over the other frame sources."""
    return {
        **{f"chains({reason.name})": chains(reason) for reason in _by_value(FRAME_RECIPES)},
        **_mapped(
            {
                name: frames
                for name, frames in frame_sources().items()
                if not name.startswith("FRAME_RECIPES")
            },
            build_chain,
            prefix="build_chain: ",
        ),
    }


def practice_sources() -> Sources:
    """Traces that go all the way: one cue on a lone unbound direction, so the operator builds
    a candidate, the run records it and the replay adapter judges it."""
    return {
        "traces(ELIGIBLE_MISSING_ROLE, cue_count=1)": traces(_MISSING_ROLE, cue_count=1),
        "traces(ELIGIBLE_MISSING_ROLE, cue_count=1, **LARGE_VALUES)": traces(
            _MISSING_ROLE, cue_count=1, **LARGE_VALUES
        ),
    }


def trace_sources() -> Sources:
    """The loop over every frame source, the practice path, and values past the safe range."""
    return {
        **{f"traces({reason.name})": traces(reason) for reason in _by_value(FRAME_RECIPES)},
        **_mapped(
            {
                name: frames
                for name, frames in frame_sources().items()
                if not name.startswith("FRAME_RECIPES")
            },
            _practice,
            prefix="practice_case: ",
        ),
        **practice_sources(),
        "traces(ASSESSMENT_RUNNABLE, **LARGE_VALUES)": traces(_RUNNABLE, **LARGE_VALUES),
    }


def _operator_refusal_sources() -> Sources:
    """Runs that open and operators that refuse: another residual kind, another missing role,
    no cue or two cues."""
    return {
        **{
            f"traces({reason.name})": traces(reason)
            for reason in _ELIGIBLE_REASONS
            if reason is not _MISSING_ROLE
        },
        "traces(ELIGIBLE_MISSING_ROLE, cue_count=0)": traces(_MISSING_ROLE, cue_count=0),
        "traces(ELIGIBLE_MISSING_ROLE, cue_count=2)": traces(_MISSING_ROLE, cue_count=2),
        **{
            f"traces(ELIGIBLE_MISSING_ROLE, bound_roles=ALL_ROLES - {{{role.name}}})": traces(
                _MISSING_ROLE, bound_roles=ALL_ROLES - {role}
            )
            for role in (Role.INITIAL, Role.DELTA)
        },
    }


def _configured(eligible: bool, *, with_operators: bool | None = None) -> Sources:
    """Chains per gate reason under each configuration (``with_operators`` None: any)."""
    reasons = _ELIGIBLE_REASONS if eligible else _DENIED_REASONS
    return {
        f"{_label(configuration)} chains({reason.name})": configured_chains(*configuration, reason)
        for configuration in RUN_CONFIGURATIONS
        if with_operators is None or bool(configuration[1].operators) == with_operators
        for reason in reasons
    }


# --------------------------------------------------------------------------------------------
# One table of sources per record type


def _blocker_sources() -> Sources:
    def blocker_of(code: BlockerCode) -> st.SearchStrategy[Blocker]:
        def pick(frame: ProblemFrame) -> Blocker:
            found = [b for b in _assessed(frame).blockers if b.code is code]
            assert found, f"BLOCKER_RECIPES[{code.name}] gave a frame without {code.value}"
            return found[0]

        return problem_frames(**BLOCKER_RECIPES[code]).map(pick)

    return {
        f"BLOCKER_RECIPES[{code.name}]": blocker_of(code) for code in _by_value(BLOCKER_RECIPES)
    }


def _proof_sources() -> Sources:
    def direct(**knobs: Any) -> st.SearchStrategy[ProofRecord]:
        return chains(_RUNNABLE, **knobs).map(
            lambda chain: _only(ProofRecord, check_proof(chain.frame, chain.assessment))
        )

    replayed = {
        f"replay proof: {name}": source.map(
            lambda trace: _only(ReplayResult, trace.replays[0]).replay_proof
        ).filter(lambda proof: proof is not None)
        for name, source in practice_sources().items()
    }
    return {
        "check_proof: chains(ASSESSMENT_RUNNABLE)": direct(),
        "check_proof: chains(ASSESSMENT_RUNNABLE, **LARGE_VALUES)": direct(**LARGE_VALUES),
        **replayed,
    }


def _run_sources() -> Sources:
    looped = {
        f"traces({reason.name})": traces(reason)
        for reason in _ELIGIBLE_REASONS
        if reason is not _MISSING_ROLE
    } | {f"traces({_MISSING_ROLE.name})": traces(_MISSING_ROLE), **practice_sources()}
    return {
        **_mapped(_configured(eligible=True, with_operators=False), _closed_empty_run),
        **_mapped(
            looped,
            lambda trace: _only(GeometricSearchRun, trace.run_outcome),
            prefix="run of ",
        ),
    }


def _run_refusal_sources() -> Sources:
    # A runnable case never searches: the loop's run refusals are the denied, refused ones.
    looped = {
        f"traces({reason.name})": traces(reason)
        for reason in _DENIED_REASONS
        if reason is not _RUNNABLE
    }
    return _mapped(
        {
            **_mapped(_configured(eligible=False, with_operators=False), run_outcome),
            **_mapped(looped, lambda trace: trace.run_outcome, prefix="run of "),
        },
        lambda outcome: _only(SearchRunRefusal, outcome),
    )


def _operator_results() -> Sources:
    return _mapped(
        practice_sources(),
        lambda trace: _only(CandidateOperatorResult, trace.operator_outcomes[0]),
        prefix="operator result of ",
    )


def _replay_refusal_sources() -> Sources:
    """The adapter's answer to a valid reconstruction replayed against another case's frame
    (``frame_mismatch``), or to a reconstruction whose own seal was altered
    (``reconstruction_malformed``, no digest named)."""
    practice = practice_sources()["traces(ELIGIBLE_MISSING_ROLE, cue_count=1)"]

    def reconstruction_of(trace: SealedPracticeTrace) -> Any:
        return _only(CandidateOperatorResult, trace.operator_outcomes[0]).reconstruction

    @st.composite
    def against_another_case(draw: st.DrawFn) -> ReplayRefusal:
        trace = draw(practice)
        other = draw(chains().filter(lambda chain: chain.frame != trace.frame))
        outcome = replay_candidate(other.frame, other.assessment, reconstruction_of(trace))
        return _only(ReplayRefusal, outcome)

    def with_altered_seal(trace: SealedPracticeTrace) -> ReplayRefusal:
        reconstruction = reconstruction_of(trace)
        altered = tampered(
            reconstruction,
            candidate_reconstruction_digest=other_digest(
                reconstruction.candidate_reconstruction_digest
            ),
        )
        outcome = replay_candidate(trace.frame, trace.original_assessment, altered)
        return _only(ReplayRefusal, outcome)

    return {
        "replayed against another case": against_another_case(),
        "reconstruction with an altered seal": practice.map(with_altered_seal),
    }


def _stage_refusal_sources() -> Sources:
    """Each stage's refusal of a record that is valid but not one it may judge: a runnable
    assessment to project, a refused one to prove, and a frame whose facts were made a list."""
    refused = st.sampled_from(_SEARCHED_REASONS).flatmap(chains)
    return _mapped(
        {
            "project_residuals: chains(ASSESSMENT_RUNNABLE)": chains(_RUNNABLE).map(
                lambda chain: project_residuals(chain.assessment)
            ),
            "check_proof: refused chains()": refused.map(
                lambda chain: check_proof(chain.frame, chain.assessment)
            ),
            "assess: problem_frames() with facts as a list": problem_frames().map(
                lambda frame: assess(tampered(frame, facts=list(frame.facts)))
            ),
        },
        lambda refusal: _only(StageRefusal, refusal),
    )


def _one(name: str, strategy: st.SearchStrategy[Any]) -> Callable[[], Sources]:
    return lambda: {name: strategy}


_SOURCES: dict[type, Callable[[], Sources]] = {
    # identity
    SourceSpan: lambda: {
        "spans()": spans(),
        **_elements(
            {"problem_frames()": problem_frames()}, lambda f: f.all_spans(), prefix="spans of "
        ),
    },
    StageRefusal: _stage_refusal_sources,
    # frame
    QuantityFact: lambda: _elements(
        {"problem_frames()": problem_frames()}, lambda f: f.facts, prefix="facts of "
    ),
    GroundedUnaryDeltaCue: lambda: _elements(
        {f"problem_frames(cue_count={n})": problem_frames(cue_count=n) for n in (1, 2)},
        lambda f: f.cues,
        prefix="cues of ",
    ),
    QuestionTarget: lambda: _mapped(
        {"problem_frames(with_target=True)": problem_frames(with_target=True)},
        lambda f: f.target,
        prefix="target of ",
    ),
    FrameHazard: lambda: _elements(
        {f"problem_frames(hazard_count={n})": problem_frames(hazard_count=n) for n in (1, 2)},
        lambda f: f.hazards,
        prefix="hazards of ",
    ),
    RoleBinding: lambda: _elements(
        {
            "problem_frames(proposal_count=1, with_target=True)": problem_frames(
                proposal_count=1, with_target=True
            )
        },
        lambda f: f.proposals[0].bindings,
        prefix="bindings of ",
    ),
    StateChangeProposal: lambda: _elements(
        {
            **{
                f"problem_frames(proposal_count={n})": problem_frames(proposal_count=n)
                for n in (1, 2)
            },
            "BLOCKER_RECIPES[RELATION_UNSUPPORTED]": problem_frames(
                **BLOCKER_RECIPES[BlockerCode.RELATION_UNSUPPORTED]
            ),
        },
        lambda f: f.proposals,
        prefix="proposals of ",
    ),
    ProblemFrame: frame_sources,
    # assessment
    Blocker: _blocker_sources,
    ContractAssessment: lambda: _mapped(frame_sources(), _assessed, prefix="assess: "),
    # proof
    ProofRecord: _proof_sources,
    ObligationOutcome: lambda: _elements(
        _proof_sources(), lambda proof: proof.obligations, prefix="obligations of "
    ),
    # residual
    ContractResidual: lambda: _elements(
        {
            name: frames
            for name, frames in frame_sources().items()
            if name != f"FRAME_RECIPES[{_RUNNABLE.name}]"
        },
        _projected,
        prefix="residuals of ",
    ),
    # gate and budget
    SearchGateDecision: lambda: _mapped(chain_sources(), lambda c: c.gate, prefix="gate of "),
    ComputeBudgetDecision: lambda: _mapped(
        chain_sources(), lambda c: c.budget, prefix="budget of "
    ),
    BudgetLimits: lambda: _mapped(chain_sources(), _budget_limits, prefix="limits of "),
    BudgetPolicyRow: lambda: {
        f"row for chains({reason.name})": chains(reason).map(
            lambda chain: _only(BudgetPolicyRow, COMPUTE_BUDGET_V1.row_for(chain.gate.reason_code))
        )
        for reason in _ELIGIBLE_REASONS
    },
    ComputeBudgetPolicy: _one("COMPUTE_BUDGET_V1", st.just(COMPUTE_BUDGET_V1)),
    SearchGatePolicy: _one("SEARCH_GATE_V1", st.just(SEARCH_GATE_V1)),
    GateReasonStatus: _one("SEARCH_GATE_V1 rows", st.sampled_from(SEARCH_GATE_V1.reason_statuses)),
    EligibleReasonRow: _one(
        "SEARCH_GATE_V1 rows", st.sampled_from(SEARCH_GATE_V1.eligible_reasons)
    ),
    # search run
    GeometricSearchInput: lambda: {
        f"{_label(configuration)} chains()": configured_chains(*configuration).map(
            lambda chain: _only(GeometricSearchInput, chain.search_input)
        )
        for configuration in RUN_CONFIGURATIONS
    },
    OpenedSearchRun: lambda: {
        name: source.map(lambda chain: _only(OpenedSearchRun, run_outcome(chain)))
        for name, source in _configured(eligible=True).items()
        if GEOMETRIC_SEARCH_RUN_V2_POLICY_VERSION in name
    },
    GeometricSearchRun: _run_sources,
    SearchRunRefusal: _run_refusal_sources,
    BudgetConsumed: lambda: _mapped(_run_sources(), lambda run: run.budget_consumed),
    CandidateAttempt: lambda: _mapped(_operator_results(), lambda r: r.candidate_attempt),
    BudgetCharge: lambda: _mapped(_operator_results(), lambda r: r.candidate_attempt.budget_charge),
    OperatorManifestRow: _one(
        "CANDIDATE_OPERATOR_SET rows", st.sampled_from(CANDIDATE_OPERATOR_SET.operators)
    ),
    OperatorSetManifest: _one(
        "EMPTY_OPERATOR_SET or CANDIDATE_OPERATOR_SET",
        st.sampled_from((EMPTY_OPERATOR_SET, CANDIDATE_OPERATOR_SET)),
    ),
    # operators
    CandidateOperatorInput: lambda: _mapped(
        _configured(eligible=True, with_operators=True), _operator_input
    ),
    CandidateOperatorPolicy: _one(
        "MISSING_ROLE_CANDIDATE_POLICY", st.just(MISSING_ROLE_CANDIDATE_POLICY)
    ),
    CandidateOperatorResult: _operator_results,
    CandidateOperatorRefusal: lambda: _mapped(
        _operator_refusal_sources(),
        lambda trace: _only(CandidateOperatorRefusal, trace.operator_outcomes[0]),
        prefix="operator refusal of ",
    ),
    CandidateReconstruction: lambda: _mapped(_operator_results(), lambda r: r.reconstruction),
    RoleBindingDelta: lambda: _mapped(
        _operator_results(), lambda r: r.reconstruction.candidate_payload
    ),
    # replay
    ReplayResult: lambda: _mapped(
        practice_sources(),
        lambda trace: _only(ReplayResult, trace.replays[0]),
        prefix="replay of ",
    ),
    ReplayRefusal: _replay_refusal_sources,
    # answer
    ProofGatedAnswer: lambda: _kept(
        _mapped(
            {
                "traces(ASSESSMENT_RUNNABLE)": traces(_RUNNABLE),
                "traces(ELIGIBLE_MISSING_ROLE, cue_count=1, units_agree=True)": traces(
                    _MISSING_ROLE, cue_count=1, units_agree=True
                ),
            },
            lambda trace: trace.outcome,
        ),
        ProofGatedAnswer,
        prefix="answer of ",
    ),
    AnswerRefusal: lambda: _kept(
        _mapped(
            {
                **{f"traces({reason.name})": traces(reason) for reason in _SEARCHED_REASONS},
                # a runnable case is refused when its direct proof is (direct_proof_refused)
                "traces(ASSESSMENT_RUNNABLE, **LARGE_VALUES)": traces(_RUNNABLE, **LARGE_VALUES),
            },
            lambda trace: trace.outcome,
        ),
        AnswerRefusal,
        prefix="refusal of ",
    ),
    # trace
    SealedPracticeTrace: trace_sources,
}

RECORD_TYPES: tuple[type, ...] = tuple(_SOURCES)
"""Every record type with a strategy here, in kernel module order."""


@functools.cache
def _sources_of(record_type: type) -> Sources:
    try:
        build = _SOURCES[record_type]
    except KeyError:
        raise TypeError(f"no record strategy for {record_type!r}") from None
    return build()


def record_sources(record_type: type) -> Sources:
    """The named sources ``record_strategy(record_type)`` is ``one_of``, each one recipe."""
    return dict(_sources_of(record_type))


@functools.cache
def record_strategy(record_type: type) -> st.SearchStrategy[Any]:
    """The strategy registered for ``record_type`` (what ``st.from_type`` resolves to)."""
    sources = _sources_of(record_type)
    return st.one_of(*(sources[name] for name in sorted(sources)))


def _resolve(record_type: type) -> st.SearchStrategy[Any]:
    # Registered as a function, so nothing is built (or drawn) while Hypothesis initializes.
    return record_strategy(record_type)


_REGISTERED: set[type] = set()


def register_record_strategies() -> None:
    """Register a strategy for every type in ``RECORD_TYPES``; calling it again does nothing."""
    for record_type in RECORD_TYPES:
        if record_type not in _REGISTERED:
            st.register_type_strategy(record_type, _resolve)
            _REGISTERED.add(record_type)


def registered_types() -> frozenset[type]:
    """The record types this process has registered (through the entry point or directly)."""
    return frozenset(_REGISTERED)


__all__ = [
    "BLOCKER_RECIPES",
    "LARGE_VALUES",
    "RECORD_TYPES",
    "RUN_CONFIGURATIONS",
    "chain_sources",
    "configured_chains",
    "frame_sources",
    "practice_sources",
    "record_sources",
    "record_strategy",
    "register_record_strategies",
    "registered_types",
    "trace_sources",
    "traces",
]
