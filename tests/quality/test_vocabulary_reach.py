"""Every closed-vocabulary value is reached from valid inputs, or documented as unreachable.

A strategy that never produces some reason code leaves every property over that code
untested without anyone noticing. The registered strategies are each ``st.one_of`` a table of
narrow, named sources (``registration.record_sources``: a recipe per gate reason under each
authorized run configuration, a recipe per blocker code, the loop over each, and
``problem_frames()`` with every knob drawn). Hypothesis picks branches far from uniformly, so
instead of sampling the unions this test iterates the tables in a fixed order and draws a
fixed, seeded sample from each source (``derandomize=True``: the same examples under every
profile). Each value seen is counted with ``event()`` (``--hypothesis-show-statistics``) and
collected independently, and every record drawn, at any depth, must inspect clean. Then, for
every closed set: each value is reached unless an ``UNREACHABLE_*`` constant below names it
with the clause that keeps valid inputs from it; no value so named is reached (the note would
be stale); and the record type that carries the set reaches, from its own sources, every
value that is reachable at all.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from hypothesis import HealthCheck, Phase, event, given, settings
from hypothesis import strategies as st

from practice_loop.kernel import (
    COMPUTE_BUDGET_V1,
    AnswerPath,
    AnswerRefusal,
    AnswerRefusalReason,
    AssessmentStatus,
    Blocker,
    BlockerCode,
    BudgetReason,
    CandidateAttempt,
    CandidateOperatorRefusal,
    CandidateReplayStatus,
    ComputeBudgetDecision,
    ComputeBudgetStatus,
    ContractAssessment,
    ContractResidual,
    GateReason,
    GeometricSearchRun,
    Obligation,
    OperatorRefusalReason,
    ProofGatedAnswer,
    ProofRecord,
    ProofStatus,
    ReplayDisposition,
    ReplayResult,
    ResidualKind,
    RunDisposition,
    RunExhaustionCode,
    RunRefusalReason,
    SealedPracticeTrace,
    SearchGateDecision,
    SearchGateStatus,
    SearchRunRefusal,
)
from practice_loop.kernel.record import Record, inspect_record
from practice_strategies import registration

# ------------------------------------------------------------------------------------------
# What valid inputs cannot reach, and why. "Valid inputs" are whole chains under the run
# configurations the kernel authorizes (``RUN_CONFIGURATIONS``) and the loop over drawn frames:
# every record produced by its own stage from the records before it, nothing altered.

# docs/adr/0002 rules 1-3 and 5: a malformed assessment or residual tuple, a tuple that is not
# the assessment's projection, or a refused assessment without blockers, which ``assess`` never
# emits (docs/adr/0005: runnable exactly when there is no blocker). Rule 0 ("Policy as a
# value"): every chain is decided under the registered ``search_gate.v1``.
UNREACHABLE_GATE_REASONS = frozenset(
    {
        GateReason.POLICY_UNSUPPORTED,
        GateReason.ASSESSMENT_MALFORMED,
        GateReason.RESIDUALS_MALFORMED,
        GateReason.RESIDUAL_CONTEXT_MISMATCH,
        GateReason.NO_RESIDUAL,
    }
)
# Only the five reasons above carry it (``gate.GATE_STATUS_BY_REASON``).
UNREACHABLE_GATE_STATUSES = frozenset({SearchGateStatus.UNASSESSABLE})

# ADR-0227 §8 and docs/adr/0005: ``compute_budget.v1`` has no zero row, so BUDGET_ZERO is not
# producible; BUDGET_UNASSESSABLE needs an eligible reason without a row, a malformed gate, or
# an unregistered policy, and every eligible reason ``search_gate.v1`` gives has a row.
UNREACHABLE_BUDGET_STATUSES = frozenset(
    {ComputeBudgetStatus.BUDGET_ZERO, ComputeBudgetStatus.BUDGET_UNASSESSABLE}
)
UNREACHABLE_BUDGET_REASON_CODES = frozenset(
    {
        # follows an UNASSESSABLE gate (above)
        BudgetReason.BLOCKED_GATE_UNASSESSABLE.value,
        # the unassessable row and the fail-closed reasons of ADR-0227 §8, §13
        BudgetReason.UNKNOWN_REASON_CODE.value,
        BudgetReason.GATE_MALFORMED.value,
        BudgetReason.GATE_POLICY_UNSUPPORTED.value,
        BudgetReason.GATE_IDENTITY_MISMATCH.value,
        BudgetReason.POLICY_UNSUPPORTED.value,
    }
)

# ADR-0228 §16 and docs/adr/0004. A chain holds every record (no ``not_started``); every record
# is intact and bound to the others (no ``invalid_input``); ``compute_budget.v1`` allows every
# eligible reason at least one candidate and one step (no ``blocked_by_budget``). The two
# closure dispositions are reserved: ``record_attempts`` admits only ``replay_pending``
# attempts, and the loop records the run before replay (docs/adr/0004, docs/adr/0008).
UNREACHABLE_RUN_DISPOSITIONS = frozenset(
    {
        RunDisposition.NOT_STARTED,
        RunDisposition.BLOCKED_BY_BUDGET,
        RunDisposition.INVALID_INPUT,
        RunDisposition.CANDIDATE_REPLAY_CLOSED,
        RunDisposition.CANDIDATE_REPLAY_REFUSED,
    }
)
_R = RunRefusalReason
UNREACHABLE_RUN_REFUSAL_REASONS = frozenset(
    {
        # not_started: a record is absent (docs/adr/0004 initialization step 1)
        _R.REQUIRED_RECORD_ABSENT,
        # invalid_input: steps 2-6, a record malformed, unsupported or not bound to the others
        _R.RUN_POLICY_VERSION_UNSUPPORTED,
        _R.SCHEMA_VERSION_UNSUPPORTED,
        _R.INPUT_MALFORMED,
        _R.GATE_MALFORMED,
        _R.GATE_POLICY_VERSION_UNSUPPORTED,
        _R.GATE_IDENTITY_MISMATCH,
        _R.BUDGET_LIMIT_NEGATIVE,
        _R.BUDGET_MALFORMED,
        _R.BUDGET_POLICY_VERSION_UNSUPPORTED,
        _R.BUDGET_ID_MISMATCH,
        _R.BUDGET_GATE_DECISION_MISMATCH,
        _R.BUDGET_GATE_POLICY_MISMATCH,
        _R.BUDGET_GATE_INPUT_MISMATCH,
        _R.INPUT_GATE_MISMATCH,
        _R.INPUT_BUDGET_MISMATCH,
        _R.RESIDUAL_IDS_MISMATCH,
        _R.PROBLEM_FRAME_MISMATCH,
        _R.ASSESSMENT_MISMATCH,
        _R.OPERATOR_SET_MALFORMED,
        _R.OPERATOR_SET_VERSION_UNSUPPORTED,
        _R.OPERATOR_SET_MISMATCH,
        # v1 over a non-empty set is not an authorized configuration (ADR-0228 §4, §18)
        _R.OPERATOR_SET_NOT_AUTHORIZED,
        # blocked_by_budget and the parallelism pin: every compute_budget.v1 row that an
        # eligible gate reaches is allowed, with candidates and steps >= 1 and parallelism 1
        # (ADR-0227 §8)
        _R.BUDGET_NOT_ALLOWED,
        _R.BUDGET_CEILING_ZERO,
        _R.BUDGET_PARALLELISM_NOT_ONE,
        # record_attempts integrity (docs/adr/0004): the loop records exactly the operator's
        # own attempt, against the opened run and the set it was opened with
        _R.OPENED_RUN_MALFORMED,
        _R.ATTEMPTS_MALFORMED,
        _R.ATTEMPT_ORDER_INVALID,
        _R.ATTEMPT_LINEAGE_INVALID,
        _R.ATTEMPT_NOT_PENDING,
        _R.ATTEMPT_OPERATOR_UNDECLARED,
        _R.ATTEMPT_CHARGE_UNDECLARED,
        _R.ATTEMPT_LIMIT_EXCEEDED,
    }
)
# ADR-0231 §6 and ADR-0227 §8: the one operator makes at most one attempt (charge (1, 1), depth
# 1, one attempt per run) and every allowed row grants at least 3 candidates, depth 1 and 5
# steps, so no ceiling ever stops a run.
UNREACHABLE_EXHAUSTION_CODES = frozenset(
    {
        RunExhaustionCode.MAX_CANDIDATES_REACHED,
        RunExhaustionCode.MAX_DEPTH_REACHED,
        RunExhaustionCode.MAX_STEPS_REACHED,
    }
)
# ADR-0231 §17 and docs/adr/0004: a result's attempt stays replay_pending, and record_attempts
# admits no other status.
UNREACHABLE_ATTEMPT_STATUSES = frozenset(
    {CandidateReplayStatus.REPLAY_CLOSED, CandidateReplayStatus.REPLAY_REFUSED}
)

_O = OperatorRefusalReason
# docs/adr/0008 (preconditions 1-8): the loop hands the operator the records of one case,
# bound to each other, under the registered policy and set, at attempt 0, with the residual
# the gate and run name. Only the kind, code and cue rules can fail (precondition 4 and 9);
# and a cue is always among a direction_unbound residual's spans (docs/adr/0005 step 4), so
# typed_cue_not_justified cannot either.
UNREACHABLE_OPERATOR_REFUSAL_REASONS = frozenset(
    {
        _O.INPUT_MALFORMED,
        _O.RECORD_MALFORMED,
        _O.POLICY_UNSUPPORTED,
        _O.OPERATOR_UNSUPPORTED,
        _O.CANDIDATE_ORGAN_UNSUPPORTED,
        _O.GATE_NOT_ELIGIBLE,
        _O.BUDGET_NOT_ALLOWED,
        _O.GATE_BUDGET_MISMATCH,
        _O.RUN_MISMATCH,
        _O.OPERATOR_SET_MISMATCH,
        _O.ATTEMPT_INDEX_NEGATIVE,
        _O.ATTEMPT_INDEX_BEYOND_BUDGET,
        _O.ATTEMPT_INDEX_BEYOND_POLICY,
        _O.CHARGE_EXCEEDS_BUDGET,
        _O.PARALLELISM_NOT_ONE,
        _O.EVIDENCE_SPANS_INVALID,
        _O.VERSIONS_NOT_CANONICAL,
        _O.IDENTITY_MISMATCH,
        # the gate blocks a residual without evidence first (docs/adr/0002 rule 8)
        _O.RESIDUAL_FIELD_MISSING,
        _O.CUE_NOT_JUSTIFIED,
    }
)

# docs/adr/0008 (the answer): the loop passes one case's own records, a proof exactly on the
# runnable path and replays exactly on the practice path, each replay from the adapter over
# the same frame; and one run makes one candidate (ADR-0231 §6), so none can disagree.
UNREACHABLE_ANSWER_REFUSAL_REASONS = frozenset(
    {
        AnswerRefusalReason.INPUT_MALFORMED,
        AnswerRefusalReason.EVIDENCE_MISMATCH,
        AnswerRefusalReason.SEARCH_ON_RUNNABLE,
        AnswerRefusalReason.DIRECT_PROOF_MISSING,
        AnswerRefusalReason.REPLAY_NOT_REPRODUCIBLE,
        AnswerRefusalReason.CANDIDATES_DISAGREE,
    }
)

# docs/adr/0005 (proof): units_agree repeats the contract's unit_mismatch check, so it cannot
# fail once the assessment is reproduced as runnable.
UNREACHABLE_FAILED_OBLIGATIONS = frozenset({Obligation.UNITS_AGREE})


# ------------------------------------------------------------------------------------------
# The closed sets, and where their values are read


@dataclasses.dataclass(frozen=True)
class Vocabulary:
    name: str
    members: frozenset[Any]
    unreachable: frozenset[Any]
    # The record types that carry the set; their registered strategies must reach it alone.
    holders: tuple[type, ...]
    read: Callable[[Any], Iterable[Any]]


def _first_code(enum_type: Any) -> Callable[[Any], Iterable[Any]]:
    return lambda record: (enum_type(record.reason_codes[0]),)


BUDGET_REASON_CODES = frozenset(
    {reason.value for reason in BudgetReason} | {row.reason_code for row in COMPUTE_BUDGET_V1.rows}
)

VOCABULARIES: tuple[Vocabulary, ...] = (
    Vocabulary(
        "BlockerCode",
        frozenset(BlockerCode),
        frozenset(),
        (Blocker,),
        lambda b: (b.code,),
    ),
    Vocabulary(
        "ResidualKind",
        frozenset(ResidualKind),
        frozenset(),
        (ContractResidual,),
        lambda r: (r.kind,),
    ),
    Vocabulary(
        "AssessmentStatus",
        frozenset(AssessmentStatus),
        frozenset(),
        (ContractAssessment,),
        lambda a: (a.status,),
    ),
    Vocabulary(
        "GateReason",
        frozenset(GateReason),
        UNREACHABLE_GATE_REASONS,
        (SearchGateDecision,),
        lambda g: (GateReason(g.reason_code),),
    ),
    Vocabulary(
        "SearchGateStatus",
        frozenset(SearchGateStatus),
        UNREACHABLE_GATE_STATUSES,
        (SearchGateDecision,),
        lambda g: (g.status,),
    ),
    Vocabulary(
        "ComputeBudgetStatus",
        frozenset(ComputeBudgetStatus),
        UNREACHABLE_BUDGET_STATUSES,
        (ComputeBudgetDecision,),
        lambda b: (b.status,),
    ),
    Vocabulary(
        "budget reason code",
        BUDGET_REASON_CODES,
        UNREACHABLE_BUDGET_REASON_CODES,
        (ComputeBudgetDecision,),
        lambda b: (b.reason_code,),
    ),
    Vocabulary(
        "RunDisposition",
        frozenset(RunDisposition),
        UNREACHABLE_RUN_DISPOSITIONS,
        (GeometricSearchRun, SearchRunRefusal),
        lambda r: (r.run_disposition,),
    ),
    Vocabulary(
        "RunRefusalReason",
        frozenset(RunRefusalReason),
        UNREACHABLE_RUN_REFUSAL_REASONS,
        (SearchRunRefusal,),
        lambda r: (RunRefusalReason(code) for code in r.reason_codes),
    ),
    Vocabulary(
        "RunExhaustionCode",
        frozenset(RunExhaustionCode),
        UNREACHABLE_EXHAUSTION_CODES,
        (GeometricSearchRun,),
        lambda r: () if r.exhaustion_code is None else (r.exhaustion_code,),
    ),
    Vocabulary(
        "CandidateReplayStatus",
        frozenset(CandidateReplayStatus),
        UNREACHABLE_ATTEMPT_STATUSES,
        (CandidateAttempt,),
        lambda a: (a.replay_status,),
    ),
    Vocabulary(
        "OperatorRefusalReason",
        frozenset(OperatorRefusalReason),
        UNREACHABLE_OPERATOR_REFUSAL_REASONS,
        (CandidateOperatorRefusal,),
        _first_code(OperatorRefusalReason),
    ),
    Vocabulary(
        "ReplayDisposition",
        frozenset(ReplayDisposition),
        frozenset(),
        (ReplayResult,),
        lambda r: (r.disposition,),
    ),
    Vocabulary(
        "AnswerPath",
        frozenset(AnswerPath),
        frozenset(),
        (ProofGatedAnswer,),
        lambda a: (a.path,),
    ),
    Vocabulary(
        "AnswerRefusalReason",
        frozenset(AnswerRefusalReason),
        UNREACHABLE_ANSWER_REFUSAL_REASONS,
        (AnswerRefusal,),
        _first_code(AnswerRefusalReason),
    ),
    Vocabulary(
        "ProofStatus",
        frozenset(ProofStatus),
        frozenset(),
        (ProofRecord,),
        lambda p: (p.status,),
    ),
    Vocabulary(
        "failed Obligation",
        frozenset(Obligation),
        UNREACHABLE_FAILED_OBLIGATIONS,
        (ProofRecord,),
        lambda p: (o.obligation for o in p.obligations if not o.holds),
    ),
)


def _records(value: Any) -> Iterator[Any]:
    """``value`` and every dataclass nested in it, at any depth."""
    pending = [value]
    while pending:
        item = pending.pop()
        if type(item) is tuple or type(item) is list:
            pending.extend(item)
        elif dataclasses.is_dataclass(item) and not isinstance(item, type):
            yield item
            pending.extend(getattr(item, field.name) for field in dataclasses.fields(item))


def observe(value: Any) -> dict[str, set[Any]]:
    seen: dict[str, set[Any]] = defaultdict(set)
    for record in _records(value):
        for vocabulary in VOCABULARIES:
            if type(record) in vocabulary.holders:
                seen[vocabulary.name].update(vocabulary.read(record))
    return seen


# ------------------------------------------------------------------------------------------
# The survey

SAMPLE = settings(
    database=None,
    derandomize=True,
    deadline=None,
    phases=[Phase.generate],
    # Drawing a chain runs the kernel's stages: slow to generate, which says nothing of the
    # strategies. Nothing here filters enough to need more (checked, issue 18).
    suppress_health_check=[HealthCheck.too_slow],
)

# Fixed counts, not the profile's, so the sample is the same under dev, ci and nightly. A
# source is one recipe, so a few examples reach what it can; a type with few sources gets more
# per source, since those sources mix outcomes (cue counts, directions, values).
EXAMPLES_PER_SOURCE = 4
EXAMPLES_PER_TYPE = 48


def _sample(strategy: st.SearchStrategy[Any], examples: int) -> dict[str, set[Any]]:
    seen: dict[str, set[Any]] = defaultdict(set)

    @settings(SAMPLE, max_examples=examples)
    @given(strategy)
    def collect(value: Any) -> None:
        # Valid by construction: every record drawn, at any depth, inspects clean.
        for record in _records(value):
            if isinstance(record, Record):
                assert inspect_record(record, type(record)) is None, record
        for vocabulary, values in observe(value).items():
            for found in values:
                event(f"{vocabulary}: {getattr(found, 'name', found)}")
            seen[vocabulary] |= values

    collect()
    return seen


def survey(record_types: Iterable[type]) -> dict[type, dict[str, set[Any]]]:
    """Every value each record type's registered sources reach, source by source in order."""
    by_type: dict[type, dict[str, set[Any]]] = {}
    for record_type in sorted(set(record_types), key=lambda t: t.__name__):
        sources = registration.record_sources(record_type)
        examples = max(EXAMPLES_PER_SOURCE, -(-EXAMPLES_PER_TYPE // len(sources)))
        seen: dict[str, set[Any]] = defaultdict(set)
        for name in sorted(sources):
            for vocabulary, values in _sample(sources[name], examples).items():
                seen[vocabulary] |= values
        by_type[record_type] = seen
    return by_type


def _names(values: Iterable[Any]) -> str:
    return ", ".join(sorted(str(getattr(value, "name", value)) for value in values))


def test_every_closed_value_is_reached_or_documented_unreachable() -> None:
    """Every value of every closed set is produced by some valid input, or is named in an
    ``UNREACHABLE_*`` constant with its clause; none so named is ever produced; and each
    carrying type's registered strategy reaches every reachable value by itself. The loop's
    traces (every record of a case) are surveyed too."""
    carriers = {t for vocabulary in VOCABULARIES for t in vocabulary.holders}
    by_type = survey(carriers | {SealedPracticeTrace})
    problems = []
    for vocabulary in VOCABULARIES:
        stray = vocabulary.unreachable - vocabulary.members
        if stray:
            problems.append(f"{vocabulary.name}: documented but not in the set: {_names(stray)}")
        seen = set().union(*(found[vocabulary.name] for found in by_type.values()))
        unreached = vocabulary.members - vocabulary.unreachable - seen
        if unreached:
            problems.append(f"{vocabulary.name}: no valid input reached {_names(unreached)}")
        stale = vocabulary.unreachable & seen
        if stale:
            problems.append(f"{vocabulary.name}: reached {_names(stale)}, documented unreachable")
        own = set().union(*(by_type[t][vocabulary.name] for t in vocabulary.holders))
        missed = (vocabulary.members - vocabulary.unreachable - own) - unreached
        if missed:
            carrier = " | ".join(t.__name__ for t in vocabulary.holders)
            problems.append(
                f"{vocabulary.name}: st.from_type({carrier}) never drew {_names(missed)}"
            )
    assert not problems, "\n".join(problems)
